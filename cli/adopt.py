"""``import``: the stack file that declares clusters a team already runs, from their live objects.

Thin: reading the sources and writing the stack file are here; what the objects mean, the stack they make and
whether its render reproduces them are :mod:`nodefleet.adopt`. The stack file is written whole or not at all
(a temporary file renamed over it), never over an existing one without ``--force``, and then judged by the
same ``check`` a user runs: a live cluster that breaks a policy is imported and its violations reported (exit
1), never fixed by the import.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from cli.exits import EXIT_INVALID, InputError

DESCRIPTION = """\
Write the stack file that declares clusters a team already runs, from their live objects.

Sources (--from-file, repeatable, '-' for standard input) are YAML: `oc get ... -o yaml` output (List objects
too), `hypershift create cluster aws --render` output, or a GitOps repository's manifests. A hosted cluster is
its HostedCluster, its AWS NodePools and, with AutoNode, the OpenshiftEC2NodeClasses and karpenter.sh
NodePools of its hosted cluster; a standalone cluster is its MachineSets (openshift-machine-api), custom
MachineConfigPools, the MachineConfiguration `cluster` and its ClusterVersion and, where it runs Karpenter
(self-managed, booting through nodefleet's S3 Ignition pointer, or Red Hat's karpenter-operator), its
karpenter.sh NodePools and EC2NodeClasses.

The stack is written only when nodefleet's own render of it reproduces every adopted object field by field
(spec, labels, annotations; not status, not what controllers write, not the fields nodefleet leaves to
controllers). Any other difference refuses the import (exit 2) naming the object, the field and what runs,
and nothing is written. Fields nodefleet would add that the live objects lack are refused too, unless
--adopt-defaults accepts them (they are listed). Secrets are referenced by name, never copied.

After writing, the stack is checked as `python -m nodefleet check` checks it: a live cluster that violates a
policy is imported and its violations reported (exit 1), never fixed.
"""

EPILOG = """\
examples:
  oc get hostedcluster,nodepools -n clusters -o yaml > mgmt.yaml
  oc --kubeconfig prod-east.kubeconfig get openshiftec2nodeclasses,nodepools.karpenter.sh -o yaml > inside.yaml
  python -m nodefleet import --stack prod-east --from-file mgmt.yaml --from-file inside.yaml
  hypershift create cluster aws --render ... | python -m nodefleet import --stack dev --from-file -
  oc get machinesets -n openshift-machine-api -o yaml > ms.yaml
  oc get machineconfigpools,machineconfiguration,clusterversion,infrastructure -o yaml > cluster.yaml
  python -m nodefleet import --stack shop --from-file ms.yaml --from-file cluster.yaml \\
      --catalog catalogs/coreos-bootimages-4.16.yaml
  oc get nodepools.karpenter.sh,ec2nodeclasses -o yaml > karpenter.yaml
  python -m nodefleet import --stack edge --from-file ms.yaml --from-file cluster.yaml \
      --from-file karpenter.yaml --catalog catalogs/coreos-bootimages-5.0.yaml \
      --karpenter-version 1.15 --karpenter-node-role edge-m2x7c-karpenter-node"""


def add_parser(sub: Any) -> None:
    from cli.roots import add_roots

    s = sub.add_parser(
        "import",
        help="write the stack file that declares clusters a team already runs, from their live objects",
        description=DESCRIPTION,
        epilog=EPILOG,
    )
    s.add_argument(
        "--stack",
        required=True,
        help="the stack to write: <stacks-dir>/Pulumi.<stack>.yaml; with {cluster} in it, one stack per cluster, "
        "named by it (--stack {cluster}, --stack payments-{cluster})",
    )
    s.add_argument(
        "--stacks-dir",
        type=Path,
        metavar="DIR",
        help="the folder of the stack files (default: the project's stacks/); other stacks there are read to "
        "refuse a cluster one of them already declares",
    )
    s.add_argument(
        "--from-file",
        action="append",
        default=[],
        metavar="FILE",
        help="a YAML source of live objects; repeatable; '-' reads standard input",
    )
    live = s.add_argument_group(
        "a live API server (read only: list and get; one Secret, HyperShift's admin kubeconfig of an AutoNode "
        "hosted cluster, when no --hosted-kubeconfig is given)",
        "Give any of these to read a cluster: a management cluster's HostedClusters and NodePools, or, where it "
        "serves none and no --namespace/--cluster is given, a standalone cluster's MachineSets, pools and "
        "singletons.",
    )
    live.add_argument(
        "--kubeconfig", metavar="FILE", help="its kubeconfig (default: $KUBECONFIG, ~/.kube/config)"
    )
    live.add_argument("--context", help="the kubeconfig's context to use (default: its current context)")
    live.add_argument(
        "--namespace", help="only the HostedClusters of this namespace (default: every namespace)"
    )
    live.add_argument("--cluster", metavar="NAME", help="only this HostedCluster and its NodePools")
    live.add_argument(
        "--hosted-kubeconfig",
        metavar="FILE",
        help="the hosted cluster's kubeconfig, to read its AutoNode classes and Karpenter NodePools too (default: "
        "HyperShift's <name>-admin-kubeconfig Secret of each AutoNode HostedCluster, read in memory, never saved)",
    )
    s.add_argument(
        "--release",
        metavar="X.Y.Z",
        help="the release, where no source holds it (a standalone cluster without its ClusterVersion, a release "
        "image pinned by digest)",
    )
    s.add_argument(
        "--management-cluster",
        metavar="NAME",
        help="the registry name (nodefleet-fleet.yaml) of the management cluster the hosted clusters live on "
        "(default: the fleet's only one, 'management'); one the registry lacks is added to it (name, the hosted "
        "clusters' region, the --kubeconfig path)",
    )
    s.add_argument(
        "--catalog",
        metavar="FILE",
        help="a standalone cluster's boot image catalog, inside the project (its coreos-bootimages ConfigMap "
        "saved as a file)",
    )
    karpenter = s.add_argument_group(
        "self-managed Karpenter on a standalone cluster (EC2NodeClasses booting through nodefleet's S3 Ignition "
        "pointer), where no object holds these"
    )
    karpenter.add_argument(
        "--karpenter-version",
        metavar="X.Y",
        help="the Karpenter you installed (default: the one nodefleet recorded on its objects)",
    )
    karpenter.add_argument(
        "--karpenter-node-role",
        metavar="ROLE",
        help="the nodes' IAM role (the role of the classes' instance profile)",
    )
    karpenter.add_argument(
        "--cluster-domain",
        metavar="DOMAIN",
        help="<cluster>.<baseDomain>, where the sources hold no Infrastructure object",
    )
    s.add_argument(
        "--adopt-defaults",
        action="store_true",
        help="accept the fields nodefleet's render adds that the live objects lack (listed), instead of refusing",
    )
    s.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing stack file of that name, and replace the registry's entry of the management "
        "cluster",
    )
    add_roots(s)
    s.set_defaults(run=run)


def _read(name: str) -> str:
    from nodefleet.files import FileProblem, decode_text, read_text

    try:
        if name == "-":
            return decode_text(sys.stdin.buffer.read(), "standard input", what="source")
        return read_text(name, what="source")
    except FileProblem as e:
        raise InputError(str(e)) from None
    except OSError as e:
        raise InputError(f"{name}: cannot be read ({e.strerror or e}); give an existing YAML file") from None


def _live_objects(args: argparse.Namespace) -> list[Any]:
    from cli.adopt_live import LiveSource, read_inside, read_live
    from cli.kube import api_client, kubeconfig_shown
    from nodefleet.adopt.documents import LiveObject

    shown = f"kubeconfig {kubeconfig_shown(args.kubeconfig)}" + (
        f", context {args.context}" if args.context else ""
    )
    source = LiveSource(api_client(args.kubeconfig, shown, args.context), shown)
    hosted = None
    if args.hosted_kubeconfig is not None:
        inside = f"hosted cluster kubeconfig {kubeconfig_shown(args.hosted_kubeconfig)}"
        hosted = LiveSource(api_client(args.hosted_kubeconfig, inside), inside)
    found = read_live(source, namespace=args.namespace, cluster=args.cluster, hosted=hosted)
    if hosted is None:  # HyperShift's admin kubeconfig of each AutoNode cluster, for the objects inside it
        found += read_inside(source, [m for m in found if m.get("kind") == "HostedCluster"])
    return [LiveObject(manifest, _live_name(manifest)) for manifest in found]


def _live_name(manifest: dict[str, Any]) -> str:
    api = str(manifest.get("apiVersion", ""))
    group = api.rpartition("/")[0] or "core"
    kind = str(manifest.get("kind", "")).lower()
    return f"live {kind}{'es' if kind.endswith('s') else 's'}.{group}"


def _other_stacks(stacks_dir: Path) -> dict[str, Any]:
    from mockruntime.run import read_stack_config
    from nodefleet.stackfile.model import CONFIG_KEY
    from nodefleet.stackfile.yamlfile import YAMLFileError

    found: dict[str, Any] = {}
    for path in sorted(stacks_dir.glob("Pulumi.*.yaml")):
        try:
            config = read_stack_config(path)
        except (YAMLFileError, OSError) as e:
            print(f"  note     {path}: not read to look for the same cluster ({e})", file=sys.stderr)
            continue
        found[path.name.removeprefix("Pulumi.").removesuffix(".yaml")] = config.get(CONFIG_KEY)
    return found


def _shown(path: Path) -> Path:
    """``path`` relative to the working directory when it is below it (as a user would type it)."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve())
    except ValueError:
        return path


def _write(path: Path, text: str) -> None:
    """The whole file or nothing: written beside it, then renamed over it."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            out.write(text)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _target(stacks_dir: Path, stack: str, force: bool) -> Path:
    from nodefleet.stackfile.paths import PathError, check_stack_name

    try:
        check_stack_name(stack)
    except PathError as e:
        raise InputError(f"--stack: {e}") from None
    target = _shown(stacks_dir / f"Pulumi.{stack}.yaml")
    if target.exists() and not force:
        raise InputError(
            f"{target}: a stack file of that name exists; import never overwrites one: choose another --stack, or "
            "pass --force to replace it"
        )
    return target


def run(args: argparse.Namespace) -> int:
    from mockruntime.run import PROJECT_DIR
    from nodefleet.adopt.documents import AdoptError, read_documents
    from nodefleet.adopt.importer import (
        CLUSTER_PLACEHOLDER,
        ImportOptions,
        adopt,
        already_declared,
        per_cluster,
    )
    from nodefleet.adopt.standalone_karpenter import KarpenterOptions

    stacks_dir: Path = args.stacks_dir if args.stacks_dir is not None else PROJECT_DIR / "stacks"
    if not stacks_dir.is_dir():
        raise InputError(f"--stacks-dir {stacks_dir}: not a folder; give the folder of the stack files")
    grouped = CLUSTER_PLACEHOLDER in args.stack
    _target(stacks_dir, args.stack.replace(CLUSTER_PLACEHOLDER, "x"), True)  # the name's form, before reading
    if not grouped:
        _target(stacks_dir, args.stack, args.force)
    if args.from_file.count("-") > 1:
        raise InputError("--from-file -: standard input can be read once; give it once")
    live = any(getattr(args, a) is not None for a in ("kubeconfig", "context", "namespace", "cluster"))
    if not args.from_file and not live:
        raise InputError(
            "no source: give --from-file FILE (repeatable, '-' for standard input) or a live API server "
            "(--kubeconfig, --context, --namespace, --cluster)"
        )
    objects = []
    sources = ["standard input" if f == "-" else f for f in args.from_file]
    if live:
        sources.insert(0, "the API server")
    try:
        if live:
            objects += _live_objects(args)
        for name in args.from_file:
            shown = "standard input" if name == "-" else name
            objects += read_documents(_read(name), shown)
        options = ImportOptions(
            stack=args.stack.replace(CLUSTER_PLACEHOLDER, "cluster"),
            project_dir=PROJECT_DIR,
            release=args.release,
            management_cluster=args.management_cluster,
            catalog=args.catalog,
            adopt_defaults=args.adopt_defaults,
            karpenter=KarpenterOptions(
                version=args.karpenter_version,
                node_role=args.karpenter_node_role,
                cluster_domain=args.cluster_domain,
            ),
        )
        adoption = adopt(objects, options)
    except AdoptError as e:
        raise InputError(f"{e}\nnothing was written") from None
    except ValueError as e:  # nodefleet.files.FileProblem: the YAML of a source
        raise InputError(f"{e}\nnothing was written") from None
    stacks = per_cluster(adoption, args.stack) if grouped else [(args.stack, adoption)]
    targets = {name: _target(stacks_dir, name, args.force) for name, _ in stacks}
    if len(targets) < len(stacks):
        raise InputError(f"--stack {args.stack}: two clusters would get one stack name; nothing was written")
    others = {k: v for k, v in _other_stacks(stacks_dir).items() if k not in targets}
    for _, part in stacks:
        clash = already_declared(part, others)
        if clash:
            raise InputError(f"{clash}\nnothing was written")
    print(f"nodefleet import: stack{'s' if grouped else ''} '{args.stack}' from {', '.join(sources)}")
    registry = _registry_update(args, stacks_dir, adoption, others)
    if not _report(adoption, args.adopt_defaults):
        return EXIT_INVALID
    named = ["an API server"] if live else []
    named += ["standard input" if f == "-" else Path(f).name for f in args.from_file]
    headers = {name: _sources_of(part, args.from_file) if grouped else named for name, part in stacks}
    return _write_and_check(args, stacks_dir, stacks, targets, headers, registry)


def _sources_of(adoption: Any, files: list[str]) -> list[str]:
    """The sources, as a stack file's header names them, that held an object of ``adoption``: with one stack per
    cluster, each names only the files its own cluster came from."""
    held = adoption.sources
    named = ["an API server"] if any(s.startswith("live ") for s in held) else []
    for f in files:
        shown = "standard input" if f == "-" else f
        if any(s.startswith(f"{shown}, document ") for s in held):
            named.append("standard input" if f == "-" else Path(f).name)
    return named


def _supported_versions(args: argparse.Namespace) -> tuple[str, ...]:
    """The release lines the management cluster's HyperShift operator runs, for its new registry entry; a note
    and none when they cannot be read (the entry is written without them)."""
    from cli.adopt_live import LiveSource
    from cli.kube import api_client, kubeconfig_shown

    shown = f"kubeconfig {kubeconfig_shown(args.kubeconfig)}"
    found, why = LiveSource(api_client(args.kubeconfig, shown, args.context), shown).supported_versions()
    if found is None:
        print(
            f"  note     hypershift.supportedVersions not read ({why}): add them to the registry entry by hand"
        )
    return found or ()


def _registry_update(
    args: argparse.Namespace, stacks_dir: Path, adoption: Any, others: dict[str, Any]
) -> tuple[Path, str, str] | None:
    """The registry's new text when the adopted hosted clusters' management cluster is not in it (or the user
    forces its entry): its path, the text, what changed. None when nothing is to change. A result the registry
    refuses (a kubeconfig, Argo CD cluster or Flux Secret another entry has) is an :class:`InputError` now, before
    anything is written; so is a new registry that would leave out the one management cluster the folder's
    ``others`` stacks (name → their ``nodefleet:fleet``) are on without it."""
    import yaml
    from pydantic import ValidationError

    from nodefleet.adopt.documents import AdoptError
    from nodefleet.adopt.registry_entry import management_entry, registry_text
    from nodefleet.fleet.registry import (
        DEFAULT_MANAGEMENT_CLUSTER,
        RegistryError,
        RegistryFile,
        load_registry,
        registry_path,
    )
    from nodefleet.stackfile.model import describe_errors

    if not any(c.get("kind") == "hosted" for c in adoption.clusters):
        return None
    name = args.management_cluster or DEFAULT_MANAGEMENT_CLUSTER
    path = registry_path(stacks_dir)
    shown = _shown(path)
    try:
        registry = load_registry(stacks_dir, str(shown))
    except RegistryError as e:
        raise InputError(f"{e}\nnothing was written") from None
    declared = registry.exists and name in registry.names
    if (declared and not args.force) or (not registry.exists and name == DEFAULT_MANAGEMENT_CLUSTER):
        return None
    if not registry.exists:
        from nodefleet.stackfile.waves import management_clusters_of

        on_default = sorted(
            n for n, f in others.items() if DEFAULT_MANAGEMENT_CLUSTER in management_clusters_of(f)
        )
        if on_default:
            raise InputError(
                f"{shown}: the import would create it with management cluster '{name}' alone, and the hosted "
                f"clusters of stack{'s' if len(on_default) > 1 else ''} {', '.join(on_default)} are on "
                f"'{DEFAULT_MANAGEMENT_CLUSTER}', the one management cluster a fleet without {shown} has: they "
                f"would be on none it declares; declare '{DEFAULT_MANAGEMENT_CLUSTER}' there first "
                "(managementClusters: name, region, kubeconfig; docs/configuration.md, 'Management clusters') and "
                "import again; nothing was written"
            )
    kubeconfig = args.kubeconfig
    if kubeconfig is not None and not (kubeconfig.startswith("~/") or os.path.isabs(kubeconfig)):
        kubeconfig = os.path.abspath(kubeconfig)  # the registry takes a path every tool reads alike
    supported: tuple[str, ...] = ()
    if any(getattr(args, a) is not None for a in ("kubeconfig", "context", "namespace", "cluster")):
        supported = _supported_versions(args)
    try:
        entry = management_entry(name, adoption.clusters, kubeconfig, supported)
        existing = path.read_text(encoding="utf-8") if registry.exists else None
        text = registry_text(existing, entry, replace=declared)
    except AdoptError as e:
        raise InputError(f"{shown}: {e}\nnothing was written") from None
    try:
        RegistryFile.model_validate(yaml.safe_load(text))
    except ValidationError as e:
        problem = describe_errors(str(shown), e.errors(), root="", model=RegistryFile)
        raise InputError(
            f"{problem}\n(the entry import would add for management cluster '{name}'); correct "
            f"{shown} or give another --kubeconfig or --management-cluster; nothing was written"
        ) from None
    what = "updated" if declared else "added"
    return (
        path,
        text,
        f"{what} management cluster '{name}' ({', '.join(f'{k}: {v}' for k, v in entry.items() if k != 'name')})",
    )


def _report(adoption: Any, adopt_defaults: bool) -> bool:
    """Print what the import found; False (and the refusal on standard error) when it is refused."""
    for line in adoption.report.lines():
        print(line)
    fidelity = adoption.fidelity
    if fidelity.bookkeeping:
        keys = sorted({key for line in fidelity.bookkeeping for key in line.rpartition(": ")[2].split(", ")})
        print(
            f"  nodefleet adds its own annotations to {len(fidelity.bookkeeping)} object(s), which change no "
            f"behaviour: {', '.join(keys)}"
        )
    if adoption.refused:
        for d in fidelity.changes:
            print(f"error: {d.describe()}", file=sys.stderr)
        additions = fidelity.additions
        if additions and not adopt_defaults:
            for d in additions:
                print(f"error: {d.describe()}", file=sys.stderr)
        parts = []
        if fidelity.changes:
            parts.append(
                f"{len(fidelity.changes)} field(s) nodefleet would change or remove: the stack cannot express them "
                "yet; make the live objects expressible (or leave those objects out of the sources)"
            )
        if additions and not adopt_defaults:
            parts.append(
                f"{len(additions)} field(s) nodefleet would add: pass --adopt-defaults to accept them"
            )
        print(f"error: refused, nothing written: {'; '.join(parts)}", file=sys.stderr)
        return False
    if fidelity.additions:
        print("  accepted (--adopt-defaults): nodefleet will add")
        for d in fidelity.additions:
            print(f"    {d.describe()}")
    return True


def _write_and_check(
    args: argparse.Namespace,
    stacks_dir: Path,
    stacks: list[tuple[str, Any]],
    targets: dict[str, Path],
    named: dict[str, list[str]],
    registry: tuple[Path, str, str] | None = None,
) -> int:
    """Write the registry's new entry and every stack, then check them as `check` (one stack) or `fleet check`
    (several) does; a check that refuses them (exit 2 or 3) takes the written files back."""
    from cli import check
    from mockruntime.run import PROJECT_DIR
    from nodefleet.adopt.importer import stack_text

    previous = {name: (t.read_bytes() if t.exists() else None) for name, t in targets.items()}
    if registry is not None:
        path, text, what = registry
        previous[" registry"] = path.read_bytes() if path.exists() else None
        _write(path, text)
        print(f"  wrote {_shown(path)}: {what}; review it, then commit it")
    for name, part in stacks:
        _write(targets[name], stack_text(part, named[name]))
        print(f"  wrote {targets[name]}: {len(part.clusters)} cluster(s); review it, then commit it")
        for key, what in part.secrets_to_set:
            print(
                f"  next     set nodefleet:{key}, {what}, which no object an import reads holds: `pulumi config "
                f"set --secret nodefleet:{key} --stack {name} < ca.pem` (the certificateAuthorities source of the "
                "pointer in Secret openshift-machine-api/worker-user-data), before `pulumi preview`"
            )

    def take_back() -> None:
        undo = dict(targets)
        if registry is not None:
            undo[" registry"] = _shown(registry[0])
        for name, target in undo.items():
            before = previous[name]
            if before is None:
                target.unlink(missing_ok=True)
            else:
                _write(target, before.decode("utf-8"))
            print(f"  removed {target} again: the check refused it", file=sys.stderr)

    if len(stacks) > 1:
        main: Callable[[list[str]], int] = args.command_line
        # `fleet check` of the written stacks, run here: no second interpreter to start, and the stacks judged
        # once against the folder's others (each stack's check then forked from the fork server).
        fleet = ["fleet", "check", "--stacks", ",".join(targets), "--stacks-dir", str(stacks_dir.resolve())]
        sys.stdout.flush()
        code = main(fleet)
        if code >= EXIT_INVALID:
            take_back()
            return EXIT_INVALID
        return code
    (name,) = targets
    in_project = stacks_dir.resolve() == (PROJECT_DIR / "stacks").resolve()
    check_args = argparse.Namespace(
        stack=name if in_project else None,
        config_file=None if in_project else targets[name],
        json=False,
        policy_config=None,
        max_providers=None,
        root=[],
        catalog_root=[],
        debug=False,
        secrets_to_set=[key for _, part in stacks for key, _ in part.secrets_to_set],
    )
    try:
        return check.run(check_args)
    except InputError:
        take_back()  # the check refused the stack (a registry that lacks its management cluster)
        raise
