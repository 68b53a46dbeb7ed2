"""Every Kubernetes object a stack declares, by identity, so that no two of them fight over one object.

Two declarations of one object (same API group, kind, namespace and name on the same API server) make
``pulumi up`` and a GitOps sync fight: each apply overwrites the other, and deleting one cluster deletes the
object the other still needs. The objects here are built by the same ``render_*`` functions the components
use (a test compares them with what the program registers), so there is no second list of names to drift.

Where objects go (their *destination*): each standalone cluster and each hosted cluster (``<name>-hosted``)
is its own API server; the management-side objects of a hosted cluster (Namespace, Secrets, HostedCluster,
classic NodePools) go to its management cluster (``managementCluster``, by name: :func:`management`), so
hosted clusters on different management clusters never collide, and those on one management cluster (in one
stack or across the stacks of a tree) are judged together. Identical objects declared twice (the
Namespace several hosted clusters share) are legitimate: the first cluster declares it, the others do not.
Different objects with one identity are refused with both places named.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from nodefleet.render.gitops import with_deletion_protection
from nodefleet.render.hosted import (
    autonode_pool_annotations,
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_karpenter_node_pool,
    render_legacy_ec2_node_class,
    render_namespace,
    render_openshift_ec2_node_class,
    render_secret,
)
from nodefleet.render.karpenter import (
    node_pool_annotations,
    render_operator_ec2_node_class,
    render_self_managed_ec2_node_class,
)
from nodefleet.render.machinesets import (
    render_boot_image_settings,
    render_machine_config_pool,
    render_machine_set,
)
from nodefleet.render_layout import render_targets
from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER, HostedCluster, SecretRef
from nodefleet.stackfile.model import (
    CONFIG_KEY,
    ConfigError,
    Fleet,
    ResolvedCluster,
    ResolvedHostedCluster,
    stack_file,
    validate_fleet,
)

#: The destination of the management-side objects of hosted clusters that name no management cluster.
MANAGEMENT = "management cluster 'management'"


def management(name: str) -> str:
    """The destination of the management-side objects of a hosted cluster on management cluster ``name``."""
    return f"management cluster '{name}'"


def on_management_cluster(destination: str) -> bool:
    """Whether ``destination`` is a management cluster's (:func:`management`)."""
    return destination.startswith("management cluster '")


@dataclass(frozen=True)
class ObjectKey:
    """What the API server identifies an object by, and which API server."""

    destination: str
    group: str
    kind: str
    namespace: str
    name: str

    def shown(self) -> str:
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        group = f" ({self.group})" if self.group else ""
        return f"{self.kind} {where}{group} on {self.destination}"


@dataclass(frozen=True)
class StackObject:
    """One object a stack declares, with the configuration entry that produced it."""

    key: ObjectKey
    #: The config path of the entry, e.g. ``nodefleet:fleet.clusters[1].nodePools[0]``.
    place: str
    #: The cluster whose entry it is.
    cluster: str
    manifest: dict[str, Any] = field(compare=False)
    #: The stack and stack file, for messages across stacks.
    stack: str = ""
    source: str = ""
    #: What else must be equal for two declarations to be one object (a Secret's value source).
    extra: str = ""
    #: The render folder (provider) the program declares it through.
    target: str = ""

    def where(self, *, with_stack: bool = False) -> str:
        text = f"{self.place} (cluster '{self.cluster}')"
        return f"stack '{self.stack}' ({self.source}) {text}" if with_stack else text

    def same_content(self, other: StackObject) -> bool:
        return self.manifest == other.manifest and self.extra == other.extra


def object_key(destination: str, manifest: dict[str, Any]) -> ObjectKey:
    api = str(manifest.get("apiVersion", ""))
    meta = manifest.get("metadata") or {}
    return ObjectKey(
        destination,
        api.rpartition("/")[0] if "/" in api else "",
        str(manifest.get("kind", "")),
        str(meta.get("namespace") or ""),
        str(meta.get("name", "")),
    )


def stack_objects(fleet: Fleet, source: str = "") -> list[StackObject]:
    """Every Kubernetes object ``fleet`` declares, in the order the program declares them."""
    return list(_objects(fleet, source))


@dataclass(frozen=True)
class _Entries:
    """Builds the :class:`StackObject`\\ s of one cluster's config entry."""

    stack: str
    source: str
    cluster: str
    #: The management cluster of a hosted cluster's entry.
    management_cluster: str = ""

    #: A hosted cluster's own API server, as the wiring names it (``HostedCluster.hosted_destination``).
    hosted_destination: str = ""
    #: Render mode: objects whose deletion destroys capacity carry the GitOps tools' no-deletion annotations.
    gitops: bool = False

    def __call__(
        self, target: str | None, place: str, manifest: dict[str, Any], extra: str = ""
    ) -> StackObject:
        """``target``: the render folder of the cluster the object lives in; None for the management cluster."""
        if target is None:
            destination = management(self.management_cluster)
        elif self.hosted_destination:
            destination = f"cluster {self.hosted_destination}"
        else:
            destination = f"cluster {target}"
        if self.gitops:
            manifest = with_deletion_protection(manifest, copy_values=False)
        return StackObject(
            object_key(destination, manifest),
            place,
            self.cluster,
            manifest,
            self.stack,
            self.source,
            extra,
            self.cluster if target is None else target,
        )


def _objects(fleet: Fleet, source: str) -> Iterator[StackObject]:
    apply = fleet.config.output.mode == "apply"
    for i, resolved in enumerate(fleet.clusters):
        base = f"{CONFIG_KEY}.clusters[{i}]"
        if isinstance(resolved, ResolvedCluster):
            entries = _Entries(fleet.stack, source, resolved.config.name, gitops=not apply)
            yield from _standalone(resolved, base, entries)
        else:
            mgmt = resolved.config.management_cluster
            entries = _Entries(
                fleet.stack, source, resolved.config.name, mgmt, resolved.config.hosted_destination, not apply
            )
            yield from _hosted(resolved, base, apply, entries)


def _standalone(resolved: ResolvedCluster, base: str, obj: _Entries) -> Iterator[StackObject]:
    cfg = resolved.config
    (here,) = render_targets(cfg.name, hosted=False)
    for j, pool in enumerate(cfg.pools):
        yield obj(here, f"{base}.pools[{j}]", render_machine_config_pool(cfg, pool.name))
    for j, ms in enumerate(resolved.machine_sets):
        yield obj(here, f"{base}.machineSets[{j}]", render_machine_set(cfg, ms, resolved.catalog_reference))
    yield obj(here, f"{base}.bootImageManagement", render_boot_image_settings(resolved))
    if cfg.karpenter:
        for j, nc in enumerate(cfg.karpenter.node_classes):
            manifest = render_self_managed_ec2_node_class(cfg, nc, resolved.karpenter_images[nc.name])
            yield obj(here, f"{base}.karpenter.nodeClasses[{j}]", manifest)
        for j, np in enumerate(cfg.karpenter.node_pools):
            manifest = render_karpenter_node_pool(np, annotations=node_pool_annotations(cfg))
            yield obj(here, f"{base}.karpenter.nodePools[{j}]", manifest)
    if cfg.karpenter_operator:
        for j, oc in enumerate(cfg.karpenter_operator.node_classes):
            yield obj(
                here, f"{base}.karpenterOperator.nodeClasses[{j}]", render_operator_ec2_node_class(cfg, oc)
            )
        for j, np in enumerate(cfg.karpenter_operator.node_pools):
            manifest = render_karpenter_node_pool(np, annotations=node_pool_annotations(cfg))
            yield obj(here, f"{base}.karpenterOperator.nodePools[{j}]", manifest)


def _hosted(resolved: ResolvedHostedCluster, base: str, apply: bool, obj: _Entries) -> Iterator[StackObject]:
    hc = resolved.config
    _, here = render_targets(hc.name, hosted=True)
    if hc.create_namespace:
        yield obj(None, f"{base}.namespace", render_namespace(hc, gitops=not apply))
    if apply:
        for ref, key in hc.secret_refs():
            if ref.from_config:
                extra = f"{key}=nodefleet:{ref.from_config}"
                yield obj(None, f"{base}.{_secret_field(hc, ref)}", render_secret(hc, ref, key), extra)
    yield obj(None, base, render_hosted_cluster(hc))
    for j, np in enumerate(hc.node_pools):
        yield obj(None, f"{base}.nodePools[{j}]", render_hypershift_node_pool(hc, np))
    auto = hc.auto_node
    if auto is None:
        return
    for j, nc in enumerate(auto.node_classes):
        render = render_openshift_ec2_node_class if auto.mode == "autonode" else render_legacy_ec2_node_class
        yield obj(here, f"{base}.autoNode.nodeClasses[{j}]", render(hc, nc))
    for j, pool in enumerate(auto.node_pools):
        manifest = render_karpenter_node_pool(pool, annotations=autonode_pool_annotations(hc))
        yield obj(here, f"{base}.autoNode.nodePools[{j}]", manifest)


def _secret_field(hc: HostedCluster, ref: SecretRef) -> str:
    if ref is hc.pull_secret:
        return "pullSecret"
    if ref is hc.ssh_key:
        return "sshKey"
    aescbc = hc.secret_encryption.aescbc if hc.secret_encryption else None
    if aescbc is not None and ref is aescbc.backup_key:
        return "secretEncryption.aescbc.backupKey"
    return "secretEncryption.aescbc.activeKey"


#: How to resolve a collision, by kind (the generic advice otherwise).
_FIXES = {
    "Namespace": "declare it from one place only: set createNamespace: false on the other cluster",
    "Secret": "give the Secrets different names, or let both clusters use one Secret: the same name and "
    "fromConfig, with deleteWithCluster: false (so deleting one cluster does not delete it for the other)",
    "HostedCluster": "rename one of the clusters, or put it in another namespace",
    "NodePool": "rename one of the NodePools (the name is its object's name), or put the hosted clusters in "
    "different namespaces",
    "MachineConfiguration": "declare the cluster once",
}


def _fix(key: ObjectKey) -> str:
    if key.kind == "NodePool" and key.group == "karpenter.sh":
        return "rename one of the NodePools (Karpenter NodePools are cluster-scoped)"
    return _FIXES.get(key.kind, "rename one of them")


@dataclass(frozen=True)
class ObjectPlan:
    """What a stack emits: each object once; the identical second declarations it leaves out; problems."""

    emitted: list[StackObject]
    shared: list[StackObject]
    problems: list[str]

    def left_out(self, cluster: str) -> frozenset[tuple[str, str, str]]:
        """(kind, namespace, name) of the objects ``cluster`` must not declare: an earlier cluster does."""
        return frozenset(
            (o.key.kind, o.key.namespace, o.key.name) for o in self.shared if o.cluster == cluster
        )


def plan_objects(objects: Iterable[StackObject], *, across_stacks: bool = False) -> ObjectPlan:
    """Each identity once: identical duplicates are shared, different ones are problems naming both places."""
    first: dict[ObjectKey, StackObject] = {}
    emitted: list[StackObject] = []
    shared: list[StackObject] = []
    problems: list[str] = []
    for o in objects:
        seen = first.get(o.key)
        if seen is None:
            first[o.key] = o
            emitted.append(o)
        elif seen.same_content(o):
            shared.append(o)
        else:
            problems.append(
                f"{o.where(with_stack=across_stacks)}: declares {o.key.shown()}, which "
                f"{seen.where(with_stack=across_stacks)} also declares with different content; apply and GitOps "
                f"syncs would overwrite one with the other. {_fix(o.key)[0].upper()}{_fix(o.key)[1:]}"
            )
    return ObjectPlan(emitted, shared, problems)


def load_fleet(
    raw: Any,
    stack: str,
    project_dir: Path,
    source: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Fleet:
    """The ``nodefleet:fleet`` value of ``stack``, validated (:func:`nodefleet.stackfile.model.validate_fleet`)
    and with its objects planned: two clusters of the stack that declare one object differently, or whose
    control planes HyperShift would put in one namespace, are refused. Raises ``ConfigError``, one problem a
    line, each naming the stack file.
    """
    fleet = validate_fleet(raw, stack, project_dir, source, environ=environ)
    where = source or stack_file(stack)
    problems = fleet_plan(fleet, where).problems
    if problems:
        raise ConfigError("\n".join(f"{where}: {p}" for p in problems))
    return fleet


#: Inside :func:`remembered_plans`, the plans already made, per fleet object (held, so that its id stays its own)
#: and source: a fleet's plan is read by its validation, the tree's collisions and the shared namespaces.
_PLANS: dict[int, tuple[Fleet, dict[str, ObjectPlan]]] | None = None


@contextmanager
def remembered_plans() -> Iterator[None]:
    """Within the block, each fleet object's plan is made once (a command over a whole fleet reads it three
    times); the plans are let go after it."""
    global _PLANS
    outer = _PLANS
    if outer is None:
        _PLANS = {}
    try:
        yield
    finally:
        _PLANS = outer


def fleet_plan(fleet: Fleet, source: str = "", *, any_source: bool = False) -> ObjectPlan:
    """:func:`_fleet_plan`, made once per fleet object and ``source`` (the stack file its messages name) inside
    :func:`remembered_plans`; ``any_source``: a plan made for any source will do (for what reads only the
    objects, not the messages)."""
    if _PLANS is None:
        return _fleet_plan(fleet, source)
    held = _PLANS.get(id(fleet))
    if held is None or held[0] is not fleet:
        held = _PLANS[id(fleet)] = (fleet, {})
    plans = held[1]
    if source in plans:
        return plans[source]
    if any_source and plans:
        return next(iter(plans.values()))
    plan = plans[source] = _fleet_plan(fleet, source)
    return plan


def _fleet_plan(fleet: Fleet, source: str = "") -> ObjectPlan:
    """What the stack emits. In render mode every management-side folder carries the Namespace its hosted
    cluster lives in, even when another cluster of the stack declares it too: each folder is applied by its own
    Argo CD Application or Flux Kustomization, in any order, and must not wait for another to create it (the
    rendered Namespace is never deleted or pruned, so several folders may carry it). In apply mode one
    declaration serves every cluster on the management cluster."""
    objects = stack_objects(fleet, source)
    plan = plan_objects(objects)
    if fleet.config.output.mode == "render":
        carried = [o for o in plan.shared if o.key.kind == "Namespace" and o.key.group == ""]
        if carried:
            emitted = {id(o) for o in [*plan.emitted, *carried]}
            plan = ObjectPlan(
                [o for o in objects if id(o) in emitted],
                [o for o in plan.shared if id(o) not in emitted],
                plan.problems,
            )
    problems = control_plane_problems(_hosted_entries(fleet, source))
    return ObjectPlan(plan.emitted, plan.shared, [*plan.problems, *problems]) if problems else plan


def _hosted_entries(fleet: Fleet, source: str) -> list[tuple[StackObject, str]]:
    """Each hosted cluster as (an entry naming it, its namespace), keyed by the control-plane namespace
    HyperShift derives from it (``<namespace>-<name>``) on the management cluster."""
    entries = []
    for i, resolved in enumerate(fleet.clusters):
        if isinstance(resolved, ResolvedHostedCluster):
            hc = resolved.config
            key = ObjectKey(
                management(hc.management_cluster), "", "Namespace", "", hc.control_plane_namespace
            )
            place = f"{CONFIG_KEY}.clusters[{i}]"
            entries.append((StackObject(key, place, hc.name, {}, fleet.stack, source), hc.namespace))
    return entries


def control_plane_problems(
    entries: Sequence[tuple[StackObject, str]], *, across_stacks: bool = False
) -> list[str]:
    """Hosted clusters whose control planes HyperShift would put in one namespace, or whose namespace is another
    cluster's control-plane namespace (``clusters`` + ``a-prod`` and ``clusters-a`` + ``prod`` both make
    ``clusters-a-prod``). One control-plane namespace holds one control plane; deleting a cluster deletes it."""
    problems: list[str] = []
    first: dict[tuple[str, str], StackObject] = {}
    for entry, _ in entries:
        seen = first.setdefault((entry.key.destination, entry.key.name), entry)
        if seen is not entry:
            problems.append(
                f"{entry.where(with_stack=across_stacks)}: HyperShift would put its control plane in namespace "
                f"'{entry.key.name}' (<namespace>-<name>), which is also the control-plane namespace of "
                f"{seen.where(with_stack=across_stacks)}; two control planes cannot share one namespace. Rename one "
                "of the clusters, or put it in another namespace"
            )
    for entry, namespace in entries:
        owner = first.get((entry.key.destination, namespace))
        if owner is not None:
            problems.append(
                f"{entry.where(with_stack=across_stacks)}: its namespace '{namespace}' is the namespace HyperShift "
                f"creates for the control plane of {owner.where(with_stack=across_stacks)} (<namespace>-<name>), and "
                "deletes with that cluster, HostedCluster and all. Put the cluster in another namespace"
            )
    return problems


def tree_problems(fleets: Sequence[tuple[Fleet, str]]) -> list[str]:
    """Collisions between stacks rendered into one GitOps tree, each naming both stacks and places.

    Within one tree a standalone cluster's folder name is one cluster, a hosted cluster's own objects go to
    its own API server (``HostedCluster.hosted_destination``), and the management-side objects of every hosted
    cluster go to its management cluster by name (``managementCluster``; hosted clusters naming none share the
    default one). Objects two stacks declare identically (a shared Namespace) do not conflict; different ones
    do.
    """
    objects: list[StackObject] = []
    hosted: list[tuple[StackObject, str]] = []
    for fleet, source in fleets:
        objects += fleet_plan(fleet, source).emitted
        hosted += _hosted_entries(fleet, source)
    problems = _shared_folder_problems(fleets) + plan_objects(objects, across_stacks=True).problems
    return problems + control_plane_problems(hosted, across_stacks=True)


def management_problems(fleets: Sequence[tuple[Fleet, str]]) -> list[str]:
    """Collisions on the management clusters across every stack of a fleet, whatever tree each renders into and
    in either mode: a management cluster is one API server, named once in the fleet's registry, so two stacks'
    declarations of one object there fight whether their folders share a tree or not (each naming both places).
    The control-plane namespaces HyperShift derives are judged there too. Namespaces, which stacks share by
    design and which neither mode ever deletes, are left to the judgment of each tree (:func:`tree_problems`)."""
    objects: list[StackObject] = []
    hosted: list[tuple[StackObject, str]] = []
    for fleet, source in fleets:
        objects += [
            o
            for o in fleet_plan(fleet, source).emitted
            if on_management_cluster(o.key.destination)
            and not (o.key.kind == "Namespace" and o.key.group == "")
        ]
        hosted += _hosted_entries(fleet, source)
    return plan_objects(objects, across_stacks=True).problems + control_plane_problems(
        hosted, across_stacks=True
    )


def shared_namespaces(fleets: Sequence[tuple[Fleet, str]]) -> list[str]:
    """The Namespaces more than one stack of a tree declares on one management cluster, one line each naming
    the stacks: each stack's folder renders it, so several Flux Kustomizations apply it, never pruning it
    (:func:`nodefleet.render.hosted.render_namespace`), and the Argo CD Applications create it instead of
    applying it (:data:`nodefleet.render.wiring.ARGOCD_EXCLUDE`); neither tool deletes it, as apply mode never
    does."""
    by_key: dict[ObjectKey, list[str]] = {}
    for fleet, _ in fleets:
        for o in fleet_plan(fleet, any_source=True).emitted:
            if o.key.kind == "Namespace" and o.key.group == "" and fleet.stack not in by_key.get(o.key, []):
                by_key.setdefault(o.key, []).append(fleet.stack)
    lines = []
    for key, stacks in sorted(by_key.items(), key=lambda kv: (kv[0].destination, kv[0].name)):
        if len(stacks) > 1:
            lines.append(
                f"Namespace {key.name} on {key.destination} is rendered by stacks {', '.join(sorted(stacks))}: "
                "each of their Flux Kustomizations applies it and none prunes it (kustomize.toolkit.fluxcd.io/prune: "
                "disabled); no Argo CD Application applies it, each creates it when missing (CreateNamespace=true), "
                "untracked; so removing one stack leaves it and the other stacks' HostedClusters in place"
            )
    return lines


def _shared_folder_problems(fleets: Sequence[tuple[Fleet, str]]) -> list[str]:
    """Two stacks whose render directories coincide and that have a cluster of one name would write one render
    folder: each render would prune the other's files (``nodefleet render`` refuses the second when it comes to
    write; this says so for both, before either is rendered)."""
    owner: dict[tuple[Path, str], tuple[Fleet, str, int]] = {}
    problems: list[str] = []
    for fleet, source in fleets:
        for i, cluster in enumerate(fleet.config.clusters):
            for folder in render_targets(cluster.name, isinstance(cluster, HostedCluster)):
                first = owner.setdefault((fleet.render_dir.path, folder), (fleet, source, i))
                other, other_source, j = first
                if other is fleet:
                    continue
                problems.append(
                    f"stack '{fleet.stack}' ({source}) {CONFIG_KEY}.clusters[{i}] (cluster '{cluster.name}'): renders "
                    f"into {fleet.render_directory}/{folder}, which stack '{other.stack}' ({other_source}) "
                    f"{CONFIG_KEY}.clusters[{j}] (cluster '{other.config.clusters[j].name}') renders into too; two "
                    "stacks cannot share a render folder (each render would remove the other's files). Put "
                    "{stack} in output.directory of one of them (e.g. rendered/{stack}), or rename one cluster"
                )
    return problems


def rendered_tree_problems(mine: Sequence[StackObject], rendered: Sequence[StackObject]) -> list[str]:
    """Collisions between a stack's objects (with their rendered content: :func:`with_rendered_content`) and
    what other stacks rendered into the same tree (:func:`rendered_objects`)."""
    return plan_objects([*mine, *rendered], across_stacks=True).problems


def rendered_objects(
    stack: str,
    source: str,
    files: Iterable[tuple[str, str, dict[str, Any]]],
    destinations: Mapping[str, str] | None = None,
) -> list[StackObject]:
    """The objects another stack's last render left in a GitOps tree, each named by its file.

    For a stack whose file is not at hand (rendered with ``--config-file`` from outside ``stacks/``): what it
    rendered is what the tree syncs. ``files`` are (render folder, path shown, manifest); a folder holding a
    HostedCluster is a management-side folder, whose objects go to the default management cluster, and any
    other folder is a cluster of its name, unless ``destinations`` (render folder -> destination, from the
    folder's Argo CD file: :func:`folder_destination`) says otherwise.
    """
    files = list(files)
    sides = {target for target, _, manifest in files if manifest.get("kind") == "HostedCluster"}
    default = {
        t: management(DEFAULT_MANAGEMENT_CLUSTER) if t in sides else f"cluster {t}" for t, _, _ in files
    }
    on = {**default, **(destinations or {})}
    return [
        StackObject(
            object_key(on[target], manifest),
            path,
            target,
            manifest,
            stack,
            source,
            target=target,
        )
        for target, path, manifest in files
    ]


def with_rendered_content(
    objects: Iterable[StackObject], manifests: dict[tuple[str, str, str, str, str], dict[str, Any]]
) -> list[StackObject]:
    """``objects`` with the manifests a render writes for them (keyed by render folder, group, kind, namespace,
    name), so that they compare with rendered files: the components add annotations (controller-owned
    fields, the Karpenter version) the ``render_*`` functions alone do not."""
    out = []
    for o in objects:
        written = manifests.get((o.target, o.key.group, o.key.kind, o.key.namespace, o.key.name))
        out.append(o if written is None else replace(o, manifest=written))
    return out


def folder_destination(folder_file: Mapping[str, Any]) -> str | None:
    """The destination of a render folder's objects, as its Argo CD file (``nodefleet render``) records it: a
    management side goes to its management cluster, any other folder to the cluster the file names; None for a
    file that says neither (written before folders recorded where they go)."""
    labels = folder_file.get("labels") or {}
    destination = folder_file.get("destination") or {}
    side = labels.get("nodefleet.io/side")
    if side == "management" and labels.get("nodefleet.io/management-cluster"):
        return management(str(labels["nodefleet.io/management-cluster"]))
    if side in ("hosted", "standalone") and isinstance(destination, Mapping) and destination.get("name"):
        return f"cluster {destination['name']}"
    return None
