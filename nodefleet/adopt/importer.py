"""An import, whole: the live objects in, the stack document and what it means out, or a refusal.

:func:`adopt` sorts the objects by cluster, builds the stack document (:mod:`nodefleet.adopt.hosted`,
:mod:`nodefleet.adopt.standalone`), validates it as any stack file is validated, renders it with nodefleet's
own renderers and holds the render against the live objects (:mod:`nodefleet.adopt.fidelity`). The caller
writes the document only when :attr:`Adoption.refused` is false: nothing is half-written.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nodefleet import kinds as k
from nodefleet.adopt.documents import ADOPTED_KINDS, AdoptError, LiveObject, check_objects
from nodefleet.adopt.fidelity import Fidelity, compare, normalized
from nodefleet.adopt.hosted import HostedSources, hosted_entry
from nodefleet.adopt.report import Adopted, Inferred, LeftAlone, Report
from nodefleet.adopt.standalone import StandaloneSources, standalone_entry
from nodefleet.adopt.standalone_karpenter import KarpenterOptions
from nodefleet.apiserver.schema import validate_object
from nodefleet.apiserver.store import load_index
from nodefleet.bootimages.catalog import (
    BootImageCatalog,
    CatalogError,
    load_catalog,
    resolve_catalog_reference,
)
from nodefleet.render.objects import StackObject, fleet_plan, load_fleet
from nodefleet.render_layout import render_targets
from nodefleet.stackfile.adopt import adopt_list
from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER
from nodefleet.stackfile.model import CONFIG_KEY, ConfigError

__all__ = [
    "CLUSTER_PLACEHOLDER",
    "Adoption",
    "ImportOptions",
    "adopt",
    "already_declared",
    "per_cluster",
    "stack_text",
]

#: In ``--stack``: one stack per cluster, named by it (``--stack {cluster}``, ``--stack team-a-{cluster}``).
CLUSTER_PLACEHOLDER = "{cluster}"

_BUILT_IN_POOLS = frozenset({"master", "worker", "arbiter"})


@dataclass(frozen=True)
class ImportOptions:
    """What the sources cannot say, given by the user."""

    stack: str
    project_dir: Path
    #: ``--release``: the release, where no source holds it.
    release: str | None = None
    #: ``--management-cluster``: the registry name of the management cluster the hosted clusters live on.
    management_cluster: str | None = None
    #: ``--catalog``: the boot image catalog of a standalone cluster, inside the project.
    catalog: str | None = None
    #: ``--adopt-defaults``: accept the fields nodefleet's render adds that the live objects lack.
    adopt_defaults: bool = False
    #: ``--karpenter-version``, ``--karpenter-node-role``, ``--cluster-domain``: a standalone cluster's
    #: self-managed Karpenter, where no object holds them.
    karpenter: KarpenterOptions = field(default_factory=KarpenterOptions)


@dataclass
class Adoption:
    document: dict[str, Any]
    report: Report
    fidelity: Fidelity = field(default_factory=Fidelity)
    adopt_defaults: bool = False
    #: Where each adopted object came from (:attr:`LiveObject.source`), by how the report names it.
    origins: dict[str, str] = field(default_factory=dict)

    @property
    def sources(self) -> set[str]:
        """The :attr:`LiveObject.source` of every object this stack adopted."""
        return {self.origins[a.obj] for a in self.report.adopted if a.obj in self.origins}

    @property
    def refused(self) -> bool:
        return bool(self.fidelity.changes) or (bool(self.fidelity.additions) and not self.adopt_defaults)

    @property
    def secrets_to_set(self) -> list[tuple[str, str]]:
        """(key, what) of the stack secrets the stack reads that no live object holds: the MCS CA bundle of a
        cluster running self-managed Karpenter (in the S3 payloads, which an import does not read)."""
        return [
            (
                str(c["karpenter"].get("caBundleKey", "mcsCaBundle")),
                f"the MCS CA bundle of cluster {c['name']}",
            )
            for c in self.clusters
            if isinstance(c.get("karpenter"), Mapping)
        ]

    @property
    def clusters(self) -> list[dict[str, Any]]:
        fleet: dict[str, Any] = self.document["config"][CONFIG_KEY]
        clusters: list[dict[str, Any]] = fleet["clusters"]
        return clusters


def _is(obj: LiveObject, kind: k.Kind) -> bool:
    return obj.api_version == kind.api_version and obj.kind == kind.kind


def adopt(objects: Sequence[LiveObject], options: ImportOptions) -> Adoption:
    """The stack that declares ``objects``, and how its render compares with them. :class:`AdoptError` for
    sources that cannot make a stack at all (the message names the object and what to do)."""
    checked = check_objects(objects)
    for o in checked:
        _refuse_malformed(o)
    live = [
        LiveObject(normalized(o.manifest), o.source) if (o.group, o.kind) in ADOPTED_KINDS else o
        for o in checked
    ]
    if not live:
        raise AdoptError(
            "the sources hold no Kubernetes object; give at least one --from-file with objects in it"
        )
    report = Report()
    hosted = [o for o in live if _is(o, k.HOSTED_CLUSTER)]
    node_pools = [o for o in live if _is(o, k.HYPERSHIFT_NODE_POOL)]
    inside = [
        o
        for o in live
        if _is(o, k.OPENSHIFT_EC2_NODE_CLASS) or _is(o, k.KARPENTER_NODE_POOL) or _is(o, k.EC2_NODE_CLASS)
    ]
    machine_sets = [o for o in live if _is(o, k.MACHINE_SET)]
    standalone_kinds = [
        o
        for o in live
        if _is(o, k.MACHINE_SET)
        or _is(o, k.MACHINE_CONFIG_POOL)
        or _is(o, k.MACHINE_CONFIGURATION)
        or (o.group == "config.openshift.io")
        or (o.group == "machineconfiguration.openshift.io" and o.kind == "MachineConfig")
    ]
    used: set[tuple[str, str, str, str]] = set()
    clusters: list[dict[str, Any]] = []
    if hosted and machine_sets:
        raise AdoptError(
            f"{machine_sets[0].shown()}: the sources hold a standalone cluster's MachineSets and hosted clusters "
            f"({hosted[0].shown()}); import each into its own stack"
        )
    if hosted or node_pools:
        clusters += _hosted(hosted, node_pools, inside, live, options, report, used)
    elif inside and not machine_sets:
        raise AdoptError(
            f"{inside[0].shown()}: a Karpenter object without a HostedCluster or MachineSets in the sources; import "
            "an AutoNode hosted cluster's node classes and pools together with its HostedCluster, and a standalone "
            "cluster's Karpenter together with its MachineSets (`oc -n openshift-machine-api get machinesets -o "
            "yaml`)"
        )
    if machine_sets or (standalone_kinds and not hosted):
        clusters.append(_standalone(live, options, report, used, index=len(clusters)))
    said = {a.obj for a in report.left_alone}
    for o in live:
        if o.identity not in used and o.shown() not in said:
            report.left_alone.append(LeftAlone(o.shown(), _why_left(o)))
    document = {"config": {CONFIG_KEY: {"clusters": clusters}}}
    try:
        fleet = load_fleet(
            document["config"][CONFIG_KEY],
            options.stack,
            options.project_dir,
            f"the imported stack {options.stack}",
        )
    except ConfigError as e:
        raise AdoptError(
            f"{e}\nThe live objects hold a value nodefleet's model refuses (above, by its stack-file path); nothing "
            "was written. Correct the live object, or report the value if the model should take it"
        ) from None
    adopted = [o for o in live if o.identity in used]
    rendered = fleet_plan(fleet).emitted
    fidelity = compare(adopted, rendered)
    _record_adoption(document, rendered, adopted)
    origins = {o.shown(): o.source for o in adopted}
    return Adoption(document, report, fidelity, options.adopt_defaults, origins)


def _record_adoption(
    document: dict[str, Any], rendered: Sequence[StackObject], adopted: Sequence[LiveObject]
) -> None:
    """``output.adopt``: the live objects the stack declares, which an apply-mode ``pulumi up`` adopts instead of
    creating (:mod:`nodefleet.stackfile.adopt`). It goes first in the fleet, where a reader looks for the mode."""
    ids = [(o.target, o.key.group, o.key.kind, o.key.namespace, o.key.name) for o in rendered]
    adopt = adopt_list(ids, (o.identity for o in adopted))
    if adopt:
        fleet = document["config"][CONFIG_KEY]
        document["config"][CONFIG_KEY] = {"output": {"adopt": adopt}, **fleet}


def _adopt_section(document: Mapping[str, Any]) -> dict[str, list[str]]:
    adopt: dict[str, list[str]] = document["config"][CONFIG_KEY].get("output", {}).get("adopt", {})
    return adopt


#: What the API server says of a value of the wrong type: such an object cannot have come from it.
_TYPE_ERRORS = ("must be of type", "cannot be handled as", "cannot unmarshal")


def _refuse_malformed(o: LiveObject) -> None:
    """Refuse an object whose fields have types its CRD does not allow (a hand-edited dump, a template not
    filled in): the API server would refuse it, so it is not what runs. Only types are judged here; the CRD's
    rules may differ between the version nodefleet ships and the cluster's."""
    crd = load_index().for_object(o.api_version, o.kind) if (o.group, o.kind) in ADOPTED_KINDS else None
    if crd is None:
        return
    wrong = [
        f
        for f in validate_object(o.manifest, crd)
        if f.blocking and f.rule is None and any(t in f.message for t in _TYPE_ERRORS)
    ]
    if wrong:
        raise AdoptError(
            f"{o.shown()}: the API server would refuse it ({'; '.join(str(f) for f in wrong[:3])}), so it is not "
            "what runs; export it again from the cluster (`oc get ... -o yaml`)"
        )


def _shape_guarded(o: LiveObject, build: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``build()``, with a field of a shape no schema checks (a MachineSet's providerSpec) named as such."""
    try:
        return build()
    except (AttributeError, TypeError, KeyError, IndexError) as e:
        raise AdoptError(
            f"{o.shown()} (or an object that goes with it): a field holds a value of a shape nodefleet does not "
            f"expect ({type(e).__name__}); compare it with the object the API server returns (`oc get ... -o yaml`)"
        ) from None


def _why_left(o: LiveObject) -> str:
    if o.kind == "Secret" and o.group == "":
        return "a Secret: nodefleet references Secrets by name and never copies their data"
    if o.group in ("karpenter.sh", "machine.openshift.io") and o.kind in ("NodeClaim", "Machine"):
        return f"a {o.kind}: written by its controller, not declared"
    return f"nodefleet declares no {o.kind} ({o.api_version or 'v1'})"


def _hosted(
    hosted: list[LiveObject],
    node_pools: list[LiveObject],
    inside: list[LiveObject],
    live: list[LiveObject],
    options: ImportOptions,
    report: Report,
    used: set[tuple[str, str, str, str]],
) -> list[dict[str, Any]]:
    by_cluster: dict[tuple[str, str], list[LiveObject]] = {(h.namespace, h.name): [] for h in hosted}
    for np in node_pools:
        owner = (np.namespace, str(np.spec.get("clusterName", "")))
        if owner not in by_cluster:
            raise AdoptError(
                f"{np.shown()}: belongs to HostedCluster {owner[0]}/{owner[1]} (spec.clusterName), which the "
                "sources do not hold; add it (`oc get hostedcluster -n <namespace> <name> -o yaml`)"
            )
        by_cluster[owner].append(np)
    inside_of: dict[tuple[str, str], list[LiveObject]] = {key: [] for key in by_cluster}
    for o in inside:
        namespace, _, name = str(o.annotations.get(k.ANNOTATION_HOSTED_CLUSTER) or "").partition("/")
        if (namespace, name) in inside_of:
            inside_of[(namespace, name)].append(o)
        elif len(hosted) == 1:
            inside_of[(hosted[0].namespace, hosted[0].name)].append(o)
        else:
            raise AdoptError(
                f"{o.shown()}: lives inside a hosted cluster, and with {len(hosted)} HostedClusters in the sources "
                "nothing says whose; import each hosted cluster together with its own Karpenter objects"
            )
    namespaces = {o.name: o for o in live if o.kind == "Namespace" and o.group == ""}
    secrets = [o for o in live if o.kind == "Secret" and o.group == ""]
    entries = []
    management = (
        options.management_cluster if options.management_cluster != DEFAULT_MANAGEMENT_CLUSTER else None
    )
    for i, hc in enumerate(sorted(hosted, key=lambda h: (h.namespace, h.name))):
        key = (hc.namespace, hc.name)
        names = _secret_names(hc)
        mine = [s for s in secrets if s.namespace == hc.namespace and s.name in names]
        src = HostedSources(hc, by_cluster[key], inside_of[key], namespaces.get(hc.namespace), mine)

        def build(src: HostedSources = src, i: int = i) -> dict[str, Any]:
            return hosted_entry(src, i, report, release=options.release, management_cluster=management)

        entries.append(_shape_guarded(hc, build))
        used.update(o.identity for o in [hc, *by_cluster[key], *mine])
        used.update(
            o.identity
            for o in inside_of[key]
            if not (
                o.name == "default" and o.kind in (k.OPENSHIFT_EC2_NODE_CLASS.kind, k.EC2_NODE_CLASS.kind)
            )
        )
        if src.namespace is not None:
            used.add(src.namespace.identity)
    return entries


def _secret_names(hc: LiveObject) -> set[str]:
    spec = hc.spec
    refs = [spec.get("pullSecret"), spec.get("sshKey")]
    enc = spec.get("secretEncryption")
    if isinstance(enc, Mapping) and isinstance(enc.get("aescbc"), Mapping):
        refs += [enc["aescbc"].get("activeKey"), enc["aescbc"].get("backupKey")]
    return {str(r["name"]) for r in refs if isinstance(r, Mapping) and r.get("name")}


def _standalone(
    live: list[LiveObject],
    options: ImportOptions,
    report: Report,
    used: set[tuple[str, str, str, str]],
    *,
    index: int,
) -> dict[str, Any]:
    machine_sets = [o for o in live if _is(o, k.MACHINE_SET) and o.namespace == k.MACHINE_API_NAMESPACE]
    pools = [o for o in live if _is(o, k.MACHINE_CONFIG_POOL) and o.name not in _BUILT_IN_POOLS]
    configs = [
        o
        for o in live
        if o.group == "machineconfiguration.openshift.io"
        and o.kind == "MachineConfig"
        and o.labels.get(k.LABEL_MC_ROLE) in {p.name for p in pools}
    ]
    configuration = next((o for o in live if _is(o, k.MACHINE_CONFIGURATION) and o.name == "cluster"), None)
    version = next((o for o in live if o.kind == "ClusterVersion" and o.name == "version"), None)
    infrastructure = next((o for o in live if o.kind == "Infrastructure" and o.name == "cluster"), None)
    if options.catalog is None:
        raise AdoptError(
            "a standalone cluster's MachineSets are pinned or judged by a boot image catalog, and no source names "
            "one: pass --catalog with a catalog inside the project (save the cluster's own with `oc -n "
            "openshift-machine-config-operator get configmap coreos-bootimages -o yaml > catalogs/<name>.yaml`)"
        )
    classes = [o for o in live if _is(o, k.EC2_NODE_CLASS)]
    karpenter_pools = [o for o in live if _is(o, k.KARPENTER_NODE_POOL)]
    for obj in live:
        if _is(obj, k.OPENSHIFT_EC2_NODE_CLASS):
            raise AdoptError(
                f"{obj.shown()}: an AutoNode class (HyperShift) among a standalone cluster's objects; import a hosted "
                "cluster's Karpenter objects with its HostedCluster"
            )
    src = StandaloneSources(
        machine_sets, pools, configs, configuration, version, infrastructure, classes, karpenter_pools
    )
    catalog = options.catalog
    boot_images = _catalog(catalog, options.project_dir) if classes or karpenter_pools else None
    entry = _shape_guarded(
        machine_sets[0] if machine_sets else (configuration or live[0]),
        lambda: standalone_entry(
            src,
            index,
            report,
            catalog=catalog,
            release=options.release,
            karpenter=options.karpenter,
            boot_images=boot_images,
        ),
    )
    used.update(o.identity for o in [*machine_sets, *pools])
    used.update(o.identity for o in [*classes, *karpenter_pools] if o.name != "default")
    if configuration is not None:
        used.add(configuration.identity)
    for o in (version, infrastructure):
        if o is not None:
            used.add(o.identity)
    used.update(o.identity for o in configs)
    return entry


def _catalog(reference: str, project_dir: Path) -> BootImageCatalog:
    """The boot image catalog ``--catalog`` names, which says which architecture and OS stream a Karpenter
    class's AMI is."""
    try:
        return load_catalog(resolve_catalog_reference(reference, project_dir), reference)
    except (CatalogError, OSError, ValueError) as e:
        raise AdoptError(f"--catalog {reference}: {e}") from None


def per_cluster(adoption: Adoption, template: str) -> list[tuple[str, Adoption]]:
    """The adoption as one stack per cluster, each named by ``template`` with :data:`CLUSTER_PLACEHOLDER`
    replaced by the cluster's name; each keeps the differences and report lines of its own objects."""
    places = {a.obj: a.place for a in adoption.report.adopted}
    out = []
    for i, cluster in enumerate(adoption.clusters):
        prefix = f"{CONFIG_KEY}.clusters[{i}]"

        def mine(place: str, prefix: str = prefix) -> bool:
            return place == prefix or place.startswith((f"{prefix}.", f"{prefix}["))

        fidelity = Fidelity(
            [d for d in adoption.fidelity.differences if mine(places.get(d.obj, ""))],
            [b for b in adoption.fidelity.bookkeeping if mine(places.get(b.rpartition(": ")[0], ""))],
        )
        report = Report(
            [Adopted(a.obj, a.place) for a in adoption.report.adopted if mine(a.place)],
            [],
            [Inferred(n.place, n.value, n.why) for n in adoption.report.inferred if mine(n.place)],
        )
        targets = render_targets(str(cluster["name"]), cluster.get("kind") == "hosted")
        mine_adopted = {t: e for t, e in _adopt_section(adoption.document).items() if t in targets}
        fleet: dict[str, Any] = {"output": {"adopt": mine_adopted}} if mine_adopted else {}
        document = {"config": {CONFIG_KEY: {**fleet, "clusters": [cluster]}}}
        name = template.replace(CLUSTER_PLACEHOLDER, str(cluster["name"]))
        origins = {a.obj: adoption.origins[a.obj] for a in report.adopted if a.obj in adoption.origins}
        out.append((name, Adoption(document, report, fidelity, adoption.adopt_defaults, origins)))
    return out


def already_declared(adoption: Adoption, others: Mapping[str, Any]) -> str | None:
    """Which other stack (name -> its ``nodefleet:fleet`` value) already declares a cluster of the import:
    the same infrastructure ID, or the same hosted cluster on the same management cluster."""
    mine = adoption.clusters
    for stack, raw in sorted(others.items()):
        theirs = raw.get("clusters") if isinstance(raw, Mapping) else None
        for i, other in enumerate(theirs if isinstance(theirs, list) else []):
            if not isinstance(other, Mapping):
                continue
            for cluster in mine:
                same_infra = other.get("infraId") == cluster.get("infraId")
                same_hosted = cluster.get("kind") == "hosted" and (
                    other.get("kind") == "hosted"
                    and other.get("name") == cluster.get("name")
                    and (other.get("namespace") or "clusters") == cluster.get("namespace")
                    and (other.get("managementCluster") or DEFAULT_MANAGEMENT_CLUSTER)
                    == (cluster.get("managementCluster") or DEFAULT_MANAGEMENT_CLUSTER)
                )
                if same_infra or same_hosted:
                    why = f"infraId {cluster.get('infraId')}" if same_infra else "the same HostedCluster"
                    return (
                        f"cluster '{cluster.get('name')}' is already declared by stack '{stack}' ({CONFIG_KEY}."
                        f"clusters[{i}] '{other.get('name')}', {why}); two stacks declaring one cluster would "
                        "overwrite each other's objects: keep it in that stack, or remove it there first"
                    )
    return None


def stack_text(adoption: Adoption, sources: Sequence[str]) -> str:
    """The stack file, with a header saying where it came from."""
    header = (
        "# Written by `nodefleet import` from "
        + ", ".join(sources)
        + ".\n# Its render reproduces the live objects field by field (docs/operations.md, 'Adopting existing"
        " clusters')"
    )
    additions = adoption.fidelity.additions
    if additions:
        header += ", except what --adopt-defaults accepted; applying it adds:\n"
        header += "".join(f"#   {d.describe()}\n" for d in additions)
    else:
        header += ".\n"
    body = yaml.safe_dump(adoption.document, sort_keys=False, default_flow_style=False, width=120)
    return header + body
