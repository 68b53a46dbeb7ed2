"""``crds``: the shipped CRDs. ``refresh`` replaces them from upstream files; ``coverage`` shows what is checked."""

from __future__ import annotations

import argparse
from pathlib import Path

from cli.exits import EXIT_OK, InputError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "crds", help="the CRDs nodefleet validates objects against: refresh them, show coverage"
    )
    crds = p.add_subparsers(dest="crds_command", required=True, metavar="{refresh,coverage}")

    r = crds.add_parser(
        "refresh",
        help="replace the shipped CRDs with upstream files from a directory, recording their source",
        description="Copies the CRD of every kind nodefleet writes from DIR (recognised by group and kind, "
        "not by file name) into nodefleet/crds/ and rewrites nodefleet/crds/SOURCES.yaml. The upstream "
        "source of each file comes from a Markdown table `| file | repository | path | commit |` "
        "(--sources, default: a SOURCES.md in DIR or its parent), else from --repository/--path-in-repo/"
        "--commit. Nothing is changed unless every kind is found with a recorded source.",
    )
    r.add_argument(
        "--from", dest="source", type=Path, required=True, help="directory of upstream CRD YAML files"
    )
    r.add_argument("--sources", type=Path, help="Markdown file with the provenance table")
    r.add_argument("--repository", help="upstream repository (owner/name) of files not in the table")
    r.add_argument("--path-in-repo", help="path in that repository")
    r.add_argument("--commit", help="commit of that repository")
    r.add_argument("--to", type=Path, help="destination (default: the shipped nodefleet/crds/)")
    r.set_defaults(run=_refresh)

    c = crds.add_parser("coverage", help="per CRD: rules evaluated, rules that cannot be, formats checked")
    c.add_argument("--dir", type=Path, help="CRD directory (default: the shipped nodefleet/crds/)")
    c.set_defaults(run=_coverage)


def _refresh(args: argparse.Namespace) -> int:
    from nodefleet.crdstore import CRD_DIR, CrdError, Source, read_provenance_table, refresh

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
    default = Source(args.repository, args.path_in_repo, args.commit) if all(given) else None
    try:
        report = refresh(source_dir, dest=args.to or CRD_DIR, provenance=provenance, default_source=default)
    except CrdError as exc:
        raise InputError(str(exc)) from None
    for crd in report.written:
        state = "unchanged" if crd.file in report.unchanged else "updated"
        source = crd.source.describe() if crd.source else "?"
        print(f"  {state:9} {crd.file}  {crd.kind} {', '.join(crd.versions)}  from {source}")
    for name in report.ignored:
        print(f"  ignored   {name} (not a CRD of a kind nodefleet writes)")
    print(
        f"nodefleet crds refresh: {len(report.written)} CRDs, {len(report.written) - len(report.unchanged)} updated"
    )
    return EXIT_OK


def _coverage(args: argparse.Namespace) -> int:
    from nodefleet.crd_cel import FUNCTIONS
    from nodefleet.crd_coverage import STANDARD, coverage
    from nodefleet.crdstore import CRD_DIR, CrdError, load_index

    try:
        index = load_index(args.dir or CRD_DIR)
    except CrdError as exc:
        raise InputError(str(exc)) from None
    rows = coverage(index)
    print(f"{'kind':24} {'apiVersion':36} {'rules':>5} {'oldSelf':>7} {'evaluate':>8} {'cannot':>6}  formats")
    total = [0, 0, 0, 0]
    called: set[str] = set()
    for row in rows:
        formats = ", ".join(sorted(row.formats_checked)) or "-"
        if row.formats_unchecked:
            formats += f" (not checked: {', '.join(sorted(row.formats_unchecked))})"
        print(
            f"{row.kind:24} {row.api_version:36} {row.rules:>5} {row.transition:>7} {row.evaluated:>8} "
            f"{len(row.cannot):>6}  {formats}"
        )
        for path, rule, why in row.cannot:
            print(f"    cannot evaluate {path}: `{rule}`: {why}")
        for i, n in enumerate((row.rules, row.transition, row.evaluated, len(row.cannot))):
            total[i] += n
        called |= set(row.functions)
    print(f"{'total':61} {total[0]:>5} {total[1]:>7} {total[2]:>8} {total[3]:>6}")
    kubernetes = sorted(name for name in called if name not in STANDARD)
    missing = [name for name in kubernetes if name not in FUNCTIONS]
    print(f"Kubernetes CEL library functions called: {', '.join(kubernetes) or 'none'}")
    print(f"  provided: {len(kubernetes) - len(missing)}, missing: {', '.join(missing) or 'none'}")
    return EXIT_OK
