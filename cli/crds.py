"""``crds``: the shipped CRDs. ``refresh`` replaces them from upstream files or Go modules; ``coverage`` shows
what is checked."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.exits import EXIT_OK, InputError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "crds", help="the CRDs nodefleet validates objects against: refresh them, show coverage"
    )
    crds = p.add_subparsers(dest="crds_command", required=True, metavar="{refresh,coverage}")

    r = crds.add_parser(
        "refresh",
        help="replace the shipped CRDs from upstream files, or a Karpenter CRD set from a Go module",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="--from DIR: copies the CRD of every kind with one shipped CRD (HostedCluster, HyperShift "
        "NodePool, OpenshiftEC2NodeClass, MachineSet, MachineConfigPool, MachineConfiguration) from DIR, recognised by "
        "group and kind, not file name, into nodefleet/crds/ and rewrites SOURCES.yaml. The upstream source of "
        "each file comes from a Markdown table `| file | repository | path | commit |` (--sources, default: a "
        "SOURCES.md in DIR or its parent), else from --repository/--path-in-repo/--commit. Nothing is changed "
        "unless every kind is found with a recorded source.\n\n"
        "--karpenter SET --module MODULE@VERSION: adds or replaces the Karpenter CRD set SET "
        "(<flavour>/<minor>: aws, hypershift or openshift, e.g. aws/1.16) with the NodePool, NodeClaim and "
        "EC2NodeClass CRDs of that Go module version, fetched and verified by `go mod download` (your Go's "
        "module proxy and checksum database) and recorded with module, version, path, go.sum hash and SHA-256.",
        epilog="examples:\n"
        "  python -m nodefleet crds refresh --from ../shared/data/crds\n"
        "  python -m nodefleet crds refresh --karpenter aws/1.16 \\\n"
        "      --module github.com/aws/karpenter-provider-aws@v1.16.0 --default\n"
        "  python -m nodefleet crds refresh --karpenter hypershift/1.15 --module github.com/openshift/hypershift@v0.1.90\n"
        "  python -m nodefleet crds refresh --remove aws/1.12",
    )
    what = r.add_mutually_exclusive_group(required=True)
    what.add_argument(
        "--from", dest="source", type=Path, metavar="DIR", help="directory of upstream CRD YAML files"
    )
    what.add_argument("--karpenter", metavar="SET", help="Karpenter CRD set to add or replace, e.g. aws/1.16")
    what.add_argument("--remove", metavar="SET", help="Karpenter CRD set to stop shipping")
    r.add_argument("--sources", type=Path, help="with --from: Markdown file with the provenance table")
    r.add_argument(
        "--repository", help="with --from: upstream repository (owner/name) of files not in the table"
    )
    r.add_argument("--path-in-repo", help="with --from: path in that repository")
    r.add_argument("--commit", help="with --from: commit of that repository")
    r.add_argument("--module", metavar="MODULE@VERSION", help="with --karpenter: the Go module version")
    r.add_argument(
        "--path-in-module",
        help="with --karpenter: directory of the CRDs in the module (known for the AWS provider and HyperShift)",
    )
    r.add_argument(
        "--default",
        action="store_true",
        help="with --karpenter: judge Karpenter objects without a nodefleet.io/karpenter annotation by this set",
    )
    r.add_argument("--note", help="with --karpenter: a sentence recorded with the set (e.g. why it applies)")
    r.add_argument(
        "--no-checksum-db",
        action="store_true",
        help="with --karpenter: do not consult the checksum database for this module (for a version the "
        "database you reach lacks); the set is recorded as unverified",
    )
    r.add_argument("--to", type=Path, help="destination (default: the shipped nodefleet/crds/)")
    r.set_defaults(run=_refresh)

    c = crds.add_parser(
        "coverage", help="per CRD and Karpenter set: rules evaluated, rules that cannot be, formats checked"
    )
    c.add_argument("--dir", type=Path, help="CRD directory (default: the shipped nodefleet/crds/)")
    c.add_argument(
        "--exercised",
        type=Path,
        metavar="LOGDIR",
        help="also count, per CRD, the rules that runs with NODEFLEET_RULE_LOG=LOGDIR evaluated (passing and "
        "failing), and list the rules they never evaluated (`make test` writes .tools/rule-log)",
    )
    c.set_defaults(run=_coverage)


def _refresh(args: argparse.Namespace) -> int:
    from nodefleet.apiserver.store import CRD_DIR, CrdError

    misplaced = {
        "--from": [("--module", args.module), ("--path-in-module", args.path_in_module)],
        "--karpenter": [("--sources", args.sources), ("--repository", args.repository)],
    }
    mode = "--from" if args.source else "--karpenter" if args.karpenter else "--remove"
    for option, value in misplaced.get(mode, []):
        if value:
            raise InputError(
                f"{option} does not go with {mode}; see `python -m nodefleet crds refresh --help`"
            )
    dest = args.to or CRD_DIR
    try:
        if args.source:
            return _refresh_from(args, dest)
        if args.karpenter:
            return _refresh_karpenter(args, dest)
        from nodefleet.apiserver.store import remove_karpenter

        remove_karpenter(args.remove, dest=dest)
        print(f"nodefleet crds refresh: Karpenter CRD set {args.remove} removed")
        return EXIT_OK
    except CrdError as exc:
        raise InputError(str(exc)) from None


def _refresh_from(args: argparse.Namespace, dest: Path) -> int:
    from nodefleet.apiserver.schema import crd_refusals
    from nodefleet.apiserver.store import Source, read_provenance_table, refresh

    source_dir: Path = args.source
    table = args.sources or next(
        (p for p in (source_dir / "SOURCES.md", source_dir.parent / "SOURCES.md") if p.is_file()), None
    )
    try:
        provenance = read_provenance_table(table) if table else {}
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--sources {table}: cannot be read ({exc.__class__.__name__})") from None
    given = [args.repository, args.path_in_repo, args.commit]
    if any(given) and not all(given):
        raise InputError("--repository, --path-in-repo and --commit go together; give all three or none")
    default = (
        Source(path=args.path_in_repo, repository=args.repository, commit=args.commit) if all(given) else None
    )
    report = refresh(
        source_dir, dest=dest, provenance=provenance, default_source=default, refusals=crd_refusals
    )
    for crd in report.written:
        state = "unchanged" if crd.file in report.unchanged else "updated"
        source = crd.sources[0].describe() if crd.sources else "?"
        print(f"  {state:9} {crd.file}  {crd.kind} {', '.join(crd.versions)}  from {source}")
    for name in report.ignored:
        print(
            f"  ignored   {name} (not a per-kind CRD nodefleet ships; Karpenter's come in sets: --karpenter)"
        )
    print(
        f"nodefleet crds refresh: {len(report.written)} CRDs, {len(report.written) - len(report.unchanged)} updated"
    )
    return EXIT_OK


def _refresh_karpenter(args: argparse.Namespace, dest: Path) -> int:
    from nodefleet.apiserver.schema import crd_refusals
    from nodefleet.apiserver.store import refresh_karpenter

    if not args.module:
        raise InputError(
            "--karpenter needs --module MODULE@VERSION, e.g. github.com/aws/karpenter-provider-aws@v1.16.0"
        )
    ks, written = refresh_karpenter(
        args.karpenter,
        args.module,
        dest=dest,
        path_in_module=args.path_in_module,
        make_default=args.default,
        note=args.note or "",
        checksum_db=not args.no_checksum_db,
        refusals=crd_refusals,
    )
    for member in ks.members:
        state = "added" if member.file in written else "shared"
        print(f"  {state:7} {member.file}  {member.kind}  from {ks.module}@{ks.version}:{member.path}")
    verified = (
        "verified against the checksum database" if ks.verified else "NOT checked against a checksum database"
    )
    print(f"nodefleet crds refresh: Karpenter CRD set {ks.describe()}, {ks.sum} ({verified})")
    return EXIT_OK


def _coverage(args: argparse.Namespace) -> int:
    from nodefleet.apiserver.cel import FUNCTIONS
    from nodefleet.apiserver.coverage import STANDARD, coverage
    from nodefleet.apiserver.store import CRD_DIR, CrdError, load_index

    try:
        index = load_index(args.dir or CRD_DIR)
    except CrdError as exc:
        raise InputError(str(exc)) from None
    log = None
    if args.exercised is not None:
        from nodefleet.apiserver import rule_log as crd_rule_log

        if not args.exercised.is_dir():
            raise InputError(
                f"--exercised {args.exercised}: no such directory; run the tests with "
                f"NODEFLEET_RULE_LOG={args.exercised} first"
            )
        log = crd_rule_log.read(args.exercised)
        if not log:
            raise InputError(
                f"--exercised {args.exercised}: no rule log (rules-*.jsonl) there; run the tests with "
                f"NODEFLEET_RULE_LOG={args.exercised} first"
            )
    rows = coverage(index, log)
    if log is not None:
        return _exercised(rows)
    print(
        f"{'kind':22} {'apiVersion':34} {'rules':>5} {'oldSelf':>7} {'evaluate':>8} {'cannot':>6}  "
        "Karpenter sets / formats"
    )
    total = [0, 0, 0, 0]
    called: set[str] = set()
    for row in rows:
        formats = ", ".join(sorted(row.formats_checked)) or "-"
        if row.formats_unchecked:
            formats += f" (not checked: {', '.join(sorted(row.formats_unchecked))})"
        sets = f"[{' '.join(row.sets)}] " if row.sets else ""
        print(
            f"{row.kind:22} {row.api_version:34} {row.rules:>5} {row.transition:>7} {row.evaluated:>8} "
            f"{len(row.cannot):>6}  {sets}{formats}"
        )
        for path, rule, why in row.cannot:
            print(f"    cannot evaluate {path}: `{rule}`: {why}")
        for i, n in enumerate((row.rules, row.transition, row.evaluated, len(row.cannot))):
            total[i] += n
        called |= set(row.functions)
    print(f"{'total (each shipped file once)':57} {total[0]:>5} {total[1]:>7} {total[2]:>8} {total[3]:>6}")
    if index.default_karpenter:
        print(
            f"Karpenter objects without a nodefleet.io/karpenter annotation: judged by {index.default_karpenter}"
        )
    kubernetes = sorted(name for name in called if name not in STANDARD)
    missing = [name for name in kubernetes if name not in FUNCTIONS]
    print(f"Kubernetes CEL library functions called: {', '.join(kubernetes) or 'none'}")
    print(f"  provided: {len(kubernetes) - len(missing)}, missing: {', '.join(missing) or 'none'}")
    return EXIT_OK


def _exercised(rows: list[Any]) -> int:
    print(f"{'CRD file':68} {'rules':>5} {'exercised':>9} {'passed':>6} {'failed':>6} {'both':>5}")
    total = [0, 0, 0, 0]
    for row in rows:
        both = row.passed + row.failed - row.exercised
        print(f"{row.file:68} {row.rules:>5} {row.exercised:>9} {row.passed:>6} {row.failed:>6} {both:>5}")
        for i, n in enumerate((row.rules, row.exercised, row.passed, row.failed)):
            total[i] += n
    share = 100 * total[1] / max(total[0], 1)
    print(f"{'total':68} {total[0]:>5} {total[1]:>9} {total[2]:>6} {total[3]:>6}  ({share:.1f}% exercised)")
    for row in rows:
        for path, rule in row.not_exercised:
            print(f"  not exercised: {row.file} {path}: `{rule.strip()}`")
    return EXIT_OK
