"""Where each render folder goes, and the GitOps wiring that sends it there: Argo CD and Flux for a fleet.

A stack renders one folder per target (:mod:`nodefleet.render_layout`): a standalone cluster's, a hosted
cluster's management side (``<cluster>``: HostedCluster, classic NodePools, Namespace) and its hosted side
(``<cluster>-hosted``: AutoNode classes and Karpenter NodePools). :func:`folders` says, for every folder of a
stack, which API server it is applied to and how Argo CD and Flux reach it:

- a standalone cluster: the Argo CD cluster and Flux kubeconfig Secret of its own name (``<cluster>``,
  ``<cluster>-kubeconfig``);
- a management side: the hosted cluster's ``managementCluster`` (``argocdCluster``, default its name;
  ``fluxKubeConfigSecret``, default ``<name>-kubeconfig``), so the folders of many hosted clusters go to one
  registered management cluster instead of one registration per folder;
- a hosted side: the hosted cluster's own API server (``HostedCluster.hosted_destination``: ``<cluster>-hosted``
  and HyperShift's ``<cluster>-admin-kubeconfig`` Secret on the default management cluster, else
  ``<management cluster>-<namespace>-<cluster>`` and ``<that>-kubeconfig``, unique across the fleet); it
  syncs after its management side (its objects need the HostedCluster there).

``nodefleet render`` writes this into every folder's :data:`nodefleet.render.gitops.ARGOCD_IGNORE_DIFFERENCES_FILE`
(:func:`folder_fields`), and ``nodefleet gitops`` generates, from the stack files, an Argo CD ApplicationSet
(:func:`argocd_application_set`) and Flux Kustomizations (:func:`flux_kustomizations`) for every folder.

Names: a stack name may hold ``_``, ``.`` and capitals and run to 100 characters, and Kubernetes names and
label values may not. :func:`dns_label` and :func:`label_value` keep a valid name as it is and otherwise
derive one deterministically, with a digest of the original so that two names never meet; the generators
refuse the fleet if two of their objects would still share a name.
"""

from __future__ import annotations

import copy
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from nodefleet.render.health import argocd_health_customizations, flux_health_check_exprs
from nodefleet.render_layout import manifest_path, render_targets
from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER
from nodefleet.stackfile.model import Fleet, ResolvedCluster
from nodefleet.stackfile.names import dns_label, label_value
from nodefleet.stackfile.waves import WAVE_LABEL, WAVES
from nodefleet.stackfile.waves import label_value as wave_label

__all__ = [
    "ARGOCD_EXCLUDE",
    "ARGOCD_OBJECT_BUDGET",
    "BARRIER_FOLDER",
    "BARRIER_README",
    "DEFAULT_WIRING_NAME",
    "ETCD_REQUEST_LIMIT",
    "FLUX_BARRIER_FAN_IN",
    "FLUX_DIRECT_GATE",
    "FLUX_RETRY_INTERVAL",
    "FLUX_SHARD_LABEL",
    "HOSTED_KUBECONFIG_KEY",
    "LABEL_BARRIER",
    "LABEL_MANAGEMENT_CLUSTER",
    "LABEL_SIDE",
    "LABEL_STACK",
    "SIDES",
    "Folder",
    "ManagementClusters",
    "Shard",
    "WiringError",
    "argocd_application_set",
    "argocd_application_sets",
    "argocd_health_config_map",
    "argocd_object_bytes",
    "argocd_status_bytes",
    "controller_shard",
    "dns_label",
    "flux_kustomizations",
    "folder_fields",
    "folders",
    "label_value",
    "rolling_steps",
    "secrets_not_written",
    "secrets_script",
]

LABEL_STACK = "nodefleet.io/stack"
#: ``standalone``, ``management`` or ``hosted``: which side of a cluster a folder is.
LABEL_SIDE = "nodefleet.io/side"
LABEL_MANAGEMENT_CLUSTER = "nodefleet.io/management-cluster"
#: Sides in the order they sync within a wave: a hosted side after every management side.
SIDES = ("standalone", "management", "hosted")


#: The name of the fleet's wiring: its ApplicationSet.

#: What Flux's GitRepository takes as ``spec.url`` (source-controller's CRD: ``pattern: ^(http|https|ssh)://.*$``);
#: Argo CD takes the scp form ``git@host:org/repo.git`` too, Flux refuses the object.
FLUX_URL = re.compile(r"^(http|https|ssh)://.*$")


def flux_url_problem(url: str) -> str | None:
    """Why Flux's GitRepository cannot take ``url``, with the form it takes; None when it can."""
    if FLUX_URL.match(url):
        return None
    scp = re.match(r"^([^@/:]+@)?([^/:]+):(?!//)(.+)$", url)
    form = (
        f"ssh://{scp[1] or ''}{scp[2]}/{scp[3]}"
        if scp
        else "https://host/org/repo.git or ssh://git@host/org/repo.git"
    )
    return (
        f"Flux's GitRepository takes only http://, https:// or ssh:// URLs (its CRD refuses the object otherwise); "
        f"write it as {form}"
    )


DEFAULT_WIRING_NAME = "nodefleet"
#: How soon Flux retries a Kustomization whose apply or health check failed (its ``interval`` otherwise: 10m).
FLUX_RETRY_INTERVAL = "1m"
#: The key of HyperShift's ``<cluster>-admin-kubeconfig`` Secret, which a hosted side's Flux Secret copies.
HOSTED_KUBECONFIG_KEY = "kubeconfig"
#: The key of the kubeconfig Secret Flux reads for a standalone cluster (Flux's own default when unset).
STANDALONE_KUBECONFIG_KEY = "value"


class WiringError(ValueError):
    """Wiring that cannot be generated as asked (the message names the stacks and the fix)."""


class ManagementClusterAccess(Protocol):
    """How the GitOps tools reach one management cluster (an entry of :mod:`nodefleet.fleet.registry`)."""

    @property
    def argocd_cluster(self) -> str: ...

    @property
    def flux_secret_name(self) -> str: ...

    @property
    def flux_secret_key(self) -> str: ...


class ManagementClusters(Protocol):
    """The fleet's management clusters by name (:class:`nodefleet.fleet.registry.Registry`)."""

    def get(self, name: str) -> ManagementClusterAccess: ...


@dataclass(frozen=True)
class _Implicit:
    """The one management cluster of a fleet without a registry: Argo CD cluster and Flux Secret by its name."""

    name: str = DEFAULT_MANAGEMENT_CLUSTER

    @property
    def argocd_cluster(self) -> str:
        return self.name

    @property
    def flux_secret_name(self) -> str:
        return f"{self.name}-kubeconfig"

    @property
    def flux_secret_key(self) -> str:
        return STANDALONE_KUBECONFIG_KEY


class _NoRegistry:
    def get(self, name: str) -> ManagementClusterAccess:
        return _Implicit(name)


@dataclass(frozen=True)
class Folder:
    """One render folder of a stack and where it goes."""

    stack: str
    #: The folder under the stack's render directory (the provider's target).
    target: str
    side: str
    #: The cluster entry it renders (``clusters[].name``).
    cluster: str
    wave: str
    #: The Argo CD cluster (a cluster Secret's name) an Application of this folder is sent to.
    argocd_cluster: str
    #: The Secret with the kubeconfig a Flux Kustomization of this folder applies through.
    flux_secret: str
    #: The management cluster (management and hosted sides; "" for a standalone cluster).
    management_cluster: str = ""
    #: The stack's render directory as the stack file gives it ({stack} replaced).
    render_directory: str = ""
    #: The key of :attr:`flux_secret` holding the kubeconfig.
    flux_secret_key: str = STANDALONE_KUBECONFIG_KEY
    #: The Namespace the folder renders (a management side whose cluster has ``createNamespace``; else "").
    namespace: str = ""

    @property
    def application(self) -> str:
        """The Argo CD Application's (and Flux Kustomization's) name: ``nodefleet-<stack>-<folder>``."""
        return dns_label(f"nodefleet-{self.stack}-{self.target}")

    def labels(self) -> dict[str, str]:
        out = {
            WAVE_LABEL: wave_label(self.wave),
            LABEL_STACK: label_value(self.stack),
            LABEL_SIDE: self.side,
        }
        if self.management_cluster:
            out[LABEL_MANAGEMENT_CLUSTER] = self.management_cluster
        return out


def folders(fleet: Fleet, management: ManagementClusters | None = None) -> list[Folder]:
    """Every render folder of ``fleet``, in the order of its clusters (a management side before its hosted side).

    ``management``: the fleet's registry, which says how each management cluster is reached (default: the one
    implicit management cluster of a fleet without a registry)."""
    clusters = management or _NoRegistry()
    out: list[Folder] = []
    wave = fleet.config.wave
    for resolved in fleet.clusters:
        name = resolved.config.name
        if isinstance(resolved, ResolvedCluster):
            (target,) = render_targets(name, hosted=False)
            out.append(
                Folder(fleet.stack, target, "standalone", name, wave, target, f"{target}-kubeconfig", "",
                       fleet.render_directory)
            )  # fmt: skip
            continue
        hc = resolved.config
        mc = clusters.get(hc.management_cluster)
        management_target, hosted = render_targets(name, hosted=True)
        out.append(
            Folder(fleet.stack, management_target, "management", name, wave, mc.argocd_cluster,
                   mc.flux_secret_name, hc.management_cluster, fleet.render_directory, mc.flux_secret_key,
                   hc.namespace if hc.create_namespace else "")
        )  # fmt: skip
        if hc.auto_node is None:
            continue  # nothing lives inside the hosted cluster: the provider writes no folder for it
        out.append(
            Folder(fleet.stack, hosted, "hosted", name, wave, hc.hosted_destination,
                   hc.hosted_kubeconfig_secret, hc.management_cluster, fleet.render_directory,
                   HOSTED_KUBECONFIG_KEY)
        )  # fmt: skip
    return out


def folder_fields(fleet: Fleet, management: ManagementClusters | None = None) -> dict[str, dict[str, Any]]:
    """Per render folder, what ``nodefleet render`` writes beside ``ignoreDifferences`` in its Argo CD file:
    the Application's name, its destination (the Argo CD cluster, and the Namespace the folder renders, which
    the Application creates instead of applying: :data:`ARGOCD_EXCLUDE`) and its labels (wave, stack, side,
    management cluster)."""
    return {
        f.target: {
            "application": f.application,
            "destination": {"name": f.argocd_cluster, **({"namespace": f.namespace} if f.namespace else {})},
            "labels": f.labels(),
        }
        for f in folders(fleet, management)
    }


def _unique(entries: Iterable[Folder], what: str, sources: Mapping[str, str]) -> None:
    """Refuse two folders that would be one Application or Kustomization, naming both stack files
    (``sources``: stack -> its file as the user reads it)."""
    seen: dict[str, Folder] = {}

    def where(f: Folder) -> str:
        return f"{sources[f.stack]} (stack '{f.stack}')" if f.stack in sources else f"stack '{f.stack}'"

    for f in entries:
        other = seen.setdefault(f.application, f)
        if other is not f:
            raise WiringError(
                f"{where(f)} folder {f.target} and {where(other)} folder {other.target} would both be the {what} "
                f"'{f.application}'; rename one of the stacks or clusters"
            )


def _order(all_folders: Sequence[Folder]) -> list[Folder]:
    return sorted(
        all_folders, key=lambda f: (WAVES.index(f.wave), SIDES.index(f.side) > 1, f.stack, f.target)
    )


#: The step groups of a wave, in the order they sync: a hosted side's objects need the HostedCluster its
#: management side creates.
STEP_SIDES: tuple[tuple[str, ...], ...] = (("standalone", "management"), ("hosted",))


def rolling_steps(all_folders: Sequence[Folder]) -> list[dict[str, Any]]:
    """RollingSync steps for the waves and sides the folders have, in wave order, the hosted sides of a wave
    after its standalone clusters and management sides. A step nothing matches is left out: Argo CD reports
    one (``InvalidRolloutConfig``: "Steps [...] have no applications matching their criteria")."""
    present = {(f.wave, f.side) for f in all_folders}
    steps: list[dict[str, Any]] = []
    for wave in WAVES:
        for sides in STEP_SIDES:
            if not any((wave, side) in present for side in sides):
                continue
            step: dict[str, Any] = {
                "matchExpressions": [
                    {"key": WAVE_LABEL, "operator": "In", "values": [wave_label(wave)]},
                    {"key": LABEL_SIDE, "operator": "In", "values": list(sides)},
                ]
            }
            if wave == "main":
                step["maxUpdate"] = "25%"
            steps.append(step)
    return steps


#: The render files no Argo CD Application applies: every Namespace (:func:`nodefleet.render_layout.manifest_path`,
#: a glob in Argo CD's ``directory.exclude``, whose ``*`` also matches ``/``). Several stacks' management folders
#: carry the Namespace their hosted clusters share (HyperShift's ``clusters``), so that each applies on its own,
#: and Argo CD tracks an object for one Application only (its ``argocd.argoproj.io/tracking-id``): every other
#: Application carrying it reports ``SharedResourceWarning`` and stays ``OutOfSync``, which holds a RollingSync
#: rollout. Instead the Application of a folder that renders a Namespace names it as its destination namespace
#: with ``CreateNamespace=true``: created when missing, before anything else of the sync, never tracked and so
#: never deleted (argo-cd v3.6 ``controller/sync_namespace.go``; gitops-engine ``autoCreateNamespace``). Flux
#: applies the Namespace from every folder: kustomize-controller has no owner to conflict with.
ARGOCD_EXCLUDE = manifest_path({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "*"}})


def argocd_application_set(
    all_folders: Sequence[Folder],
    *,
    repo_url: str,
    revision: str,
    paths: Mapping[tuple[str, str], str],
    name: str = DEFAULT_WIRING_NAME,
    namespace: str = "argocd",
    project: str = "default",
    sources: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """One Argo CD ApplicationSet with an Application per folder of the fleet.

    The git files generator names each folder's ``argocd-ignore-differences`` file exactly (``paths``:
    (stack, folder) -> the folder's path in the repository), so a folder is wired only when the fleet says
    so; the file gives the Application its name, destination (the Argo CD cluster, and the Namespace it creates:
    :data:`ARGOCD_EXCLUDE`), labels and ignoreDifferences. RollingSync runs
    a step per wave and side the fleet has (:func:`rolling_steps`), each when the one before is Healthy.

    Nothing is deleted as a side effect: ``syncPolicy.preserveResourcesOnDeletion`` keeps the ApplicationSet
    controller from putting ``resources-finalizer.argocd.argoproj.io`` on the Applications (argo-cd v3.6
    ``applicationset/utils``, ``RenderTemplateParams``), so an Application that goes (its stack removed or
    renamed, the ApplicationSet deleted) leaves what it applied in place; pruning stays off.
    """
    _unique(all_folders, "Application", sources or {})
    files = [{"path": f"{paths[(f.stack, f.target)]}/argocd-ignore-differences"} for f in _order(all_folders)]
    label_keys = (WAVE_LABEL, LABEL_STACK, LABEL_SIDE)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "syncPolicy": {"preserveResourcesOnDeletion": True},
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": rolling_steps(all_folders)}},
            "generators": [{"git": {"repoURL": repo_url, "revision": revision, "files": files}}],
            "template": {
                "metadata": {
                    "name": "{{ .application }}",
                    "labels": {key: f'{{{{ index .labels "{key}" }}}}' for key in label_keys},
                },
                "spec": {
                    "project": project,
                    "source": {
                        "repoURL": repo_url,
                        "targetRevision": revision,
                        "path": "{{ .path.path }}",
                        "directory": {"recurse": True, "exclude": ARGOCD_EXCLUDE},
                    },
                    # A folder without a Namespace of its own has none: nothing to create.
                    "destination": {
                        "name": "{{ .destination.name }}",
                        "namespace": '{{ dig "namespace" "" .destination }}',
                    },
                    "syncPolicy": {
                        "automated": {"selfHeal": True, "prune": False},
                        "syncOptions": [
                            "ServerSideApply=true",
                            "CreateNamespace=true",
                            "RespectIgnoreDifferences=true",
                        ],
                    },
                },
            },
            "templatePatch": "spec:\n  ignoreDifferences: {{ toJson .ignoreDifferences }}\n",
        },
    }


#: The largest ApplicationSet :func:`argocd_application_sets` writes, with its status as Argo CD fills it: 1 MiB,
#: below etcd's default request limit (``--max-request-bytes``, 1.5 MiB), which every write of the object's
#: status must pass, and far below the API server's 3 MiB request-entity limit users met (argo-cd #24689).
ARGOCD_OBJECT_BUDGET = 1024 * 1024
ETCD_REQUEST_LIMIT = 1536 * 1024
#: The longest ``message`` the ApplicationSet controller writes in a RollingSync status entry (argo-cd v3.6
#: ``applicationset/controllers``: about 100 characters), with room for a longer one.
_STATUS_MESSAGE = "m" * 200
_TIME = "2026-01-01T00:00:00Z"


def argocd_status_bytes(application: str) -> int:
    """The bytes one Application adds to its ApplicationSet's status, at the most Argo CD writes for it: its
    ``status.applicationStatus`` entry (RollingSync: name, step, status, message, the commit) and its
    ``status.resources`` entry (kind, name, sync status, health and its message), as JSON, the form the API
    server stores and sends to etcd."""
    import json

    entry = {
        "application": application,
        "lastTransitionTime": _TIME,
        "message": _STATUS_MESSAGE,
        "status": "Progressing",
        "step": "99",
        "targetRevisions": ["f" * 64],
    }
    resource = {
        "group": "argoproj.io",
        "health": {"lastTransitionTime": _TIME, "message": _STATUS_MESSAGE, "status": "Progressing"},
        "kind": "Application",
        "name": application,
        "namespace": "argocd-" + "n" * 56,
        "requiresPruning": True,
        "status": "OutOfSync",
        "syncWave": 0,
        "version": "v1alpha1",
    }
    return len(json.dumps(entry)) + len(json.dumps(resource)) + 2


def argocd_object_bytes(appset: Mapping[str, Any], applications: Iterable[str]) -> int:
    """The bytes of ``appset`` as the API server stores it once Argo CD has filled its status: its spec twice
    (``kubectl apply`` keeps a copy in the ``last-applied-configuration`` annotation), a status entry per
    Application (:func:`argocd_status_bytes`) and 8 KiB for metadata, managed fields and conditions."""
    import json

    spec = len(json.dumps(appset))
    return 2 * spec + sum(argocd_status_bytes(a) for a in applications) + 8 * 1024


@dataclass(frozen=True)
class Shard:
    """One ApplicationSet of a sharded Argo CD wiring: its name, the group it holds (a management cluster, a
    group the registry names, or ``standalone``) and its estimated size."""

    name: str
    group: str
    folders: tuple[Folder, ...]
    bytes: int


def argocd_application_sets(
    all_folders: Sequence[Folder],
    *,
    repo_url: str,
    revision: str,
    paths: Mapping[tuple[str, str], str],
    name: str = DEFAULT_WIRING_NAME,
    namespace: str = "argocd",
    project: str = "default",
    sources: Mapping[str, str] | None = None,
    group_of: Callable[[Folder], str] | None = None,
    shard: bool = False,
    budget: int = ARGOCD_OBJECT_BUDGET,
) -> tuple[list[dict[str, Any]], list[Shard]]:
    """The fleet's ApplicationSets, each under ``budget`` bytes with its status filled (:func:`argocd_object_bytes`).

    One ApplicationSet for the whole fleet while it fits (RollingSync then orders every wave across the fleet);
    otherwise, or with ``shard``, one per group (``group_of``: a folder's management cluster, or the group the
    registry names for it; standalone clusters together), named ``<name>-<group>``, each with the RollingSync
    steps of the waves and sides it has; a group that still does not fit is split into parts of whole stacks
    (``<name>-<group>-<i>``). A single stack too large for one ApplicationSet is refused, naming the limit."""
    ordered = _order(all_folders)
    group = group_of or (lambda f: f.management_cluster or "standalone")

    def build(appset_name: str, members: Sequence[Folder]) -> dict[str, Any]:
        return argocd_application_set(
            members, repo_url=repo_url, revision=revision, paths=paths, name=appset_name,
            namespace=namespace, project=project, sources=sources,
        )  # fmt: skip

    def size(appset: Mapping[str, Any], members: Sequence[Folder]) -> int:
        return argocd_object_bytes(appset, (f.application for f in members))

    if not shard:
        whole = build(name, ordered)
        total = size(whole, ordered)
        if total <= budget:
            return [whole], [Shard(name, "", tuple(ordered), total)]
    groups: dict[str, list[Folder]] = {}
    for f in ordered:
        groups.setdefault(group(f), []).append(f)
    docs: list[dict[str, Any]] = []
    shards: list[Shard] = []
    for key in sorted(groups):
        members = groups[key]
        base = dns_label(f"{name}-{key}")
        appset = build(base, members)
        total = size(appset, members)
        if total <= budget:
            docs.append(appset)
            shards.append(Shard(base, key, tuple(members), total))
            continue
        # Whole stacks per part: a hosted side stays with its management side.
        by_stack: dict[str, list[Folder]] = {}
        for f in members:
            by_stack.setdefault(f.stack, []).append(f)
        per_folder = max(1, total // len(members))
        capacity = max(1, (budget - 64 * 1024) // per_folder)
        parts: list[list[Folder]] = [[]]
        for stack_folders in by_stack.values():
            if parts[-1] and len(parts[-1]) + len(stack_folders) > capacity:
                parts.append([])
            parts[-1].extend(stack_folders)
        for i, part in enumerate(parts):
            part_name = dns_label(f"{name}-{key}-{i}")
            appset = build(part_name, _order(part))
            total = size(appset, part)
            if total > budget:
                raise WiringError(
                    f"the ApplicationSet {part_name} would reach {total:,} bytes with its status, above nodefleet's "
                    f"budget of {budget:,} bytes under etcd's request limit ({ETCD_REQUEST_LIMIT:,} bytes): stack "
                    f"'{part[0].stack}' alone has too many render folders for one ApplicationSet; split the stack"
                )
            docs.append(appset)
            shards.append(Shard(part_name, key, tuple(part), total))
    return docs, shards


def argocd_health_config_map(namespace: str = "argocd") -> dict[str, Any]:
    """The ``argocd-cm`` keys of the health checks (:mod:`nodefleet.render.health`), as a ConfigMap to merge into
    Argo CD's own: ``kubectl apply --server-side --field-manager=nodefleet -f`` adds these keys and leaves the
    others (docs/gitops.md, "What healthy means")."""
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": "argocd-cm",
            "namespace": namespace,
            "labels": {"app.kubernetes.io/name": "argocd-cm", "app.kubernetes.io/part-of": "argocd"},
        },
        "data": argocd_health_customizations(),
    }


#: Flux ``spec.ignore`` rules: the fields nodefleet leaves to a controller, by kind (docs/gitops.md).
FLUX_IGNORE_RULES: list[dict[str, Any]] = [
    {
        "paths": ["/spec/template/spec/providerSpec/value/ami"],
        "target": {
            "group": "machine.openshift.io",
            "kind": "MachineSet",
            "annotationSelector": "nodefleet.io/controller-owned",
        },
    },
    {
        "paths": ["/spec/userData", "/spec/amiSelectorTerms"],
        "target": {
            "group": "karpenter.k8s.aws",
            "kind": "EC2NodeClass",
            "annotationSelector": "nodefleet.io/controller-owned",
        },
    },
]


#: The most folders a Kustomization of the next wave ``dependsOn`` directly. A wave with more is gated by a
#: tree of barrier Kustomizations instead (:func:`flux_kustomizations`), so no object grows with the fleet.
FLUX_DIRECT_GATE = 10
#: The most ``dependsOn`` entries of one barrier Kustomization.
FLUX_BARRIER_FAN_IN = 100
#: The folder, in every render-mode stack's render directory, that a barrier Kustomization applies: it holds a
#: README and no manifest, so a barrier applies nothing (kustomize-controller generates an empty
#: kustomization for a folder without one: fluxcd/pkg ``kustomize`` ``findOrGenerateKustomization``).
BARRIER_FOLDER = ".nodefleet-barrier"
BARRIER_README = (
    "This folder holds no manifest on purpose.\n\n"
    "The Flux wiring `nodefleet gitops` writes gates each rollout wave of a large fleet with barrier\n"
    "Kustomizations that apply this folder: a barrier is Ready at a commit only once every Kustomization it\n"
    "depends on is Ready at that commit, and the next wave depends on the barrier instead of on every folder\n"
    'of the wave (docs/gitops.md, "How the wiring grows"). `nodefleet render` writes it; keep it in the tree.\n'
)
#: Labels of a barrier Kustomization: the wave it gates (:data:`WAVE_LABEL`) and this one.
LABEL_BARRIER = "nodefleet.io/barrier"
#: Flux's controller sharding label (kustomize-controller ``--watch-label-selector``).
FLUX_SHARD_LABEL = "sharding.fluxcd.io/key"


def controller_shard(group: str, replicas: int) -> str:
    """The controller shard of a management cluster group among ``replicas``: ``shard-<k>``, ``k`` from the
    SHA-256 of the group's name, so a group stays on its shard whatever else the fleet gains or loses."""
    import hashlib

    return f"shard-{int.from_bytes(hashlib.sha256(group.encode()).digest()[:8], 'big') % replicas}"


@dataclass(frozen=True)
class _Barrier:
    name: str
    wave: str
    #: The folders' or barriers' names it depends on.
    depends: tuple[str, ...]
    #: The stack whose render directory's :data:`BARRIER_FOLDER` it applies.
    stack: str
    #: The management cluster of every folder below it, "" when they are on several or none.
    management_cluster: str
    #: The Flux shard of the folders below it, "" when several or none.
    shard: str
    #: The management cluster group of every folder below it, "" when several.
    group: str


def _chunks(items: Sequence[Any], size: int) -> list[Sequence[Any]]:
    return [items[i : i + size] for i in range(0, len(items), size)]


def _barrier_tree(
    wave: str,
    members: Sequence[Folder],
    prefix: str,
    shard_of: Callable[[Folder], str],
    group_of: Callable[[Folder], str],
) -> list[_Barrier]:
    """The barriers gating ``wave`` (its folders ``members``), leaves first, the root last: a leaf per management
    cluster (standalone clusters together) and at most :data:`FLUX_BARRIER_FAN_IN` folders, then levels of at most
    as many barriers each, up to one."""
    groups: dict[str, list[Folder]] = {}
    for f in members:
        groups.setdefault(f.management_cluster, []).append(f)
    level: list[_Barrier] = []
    for group, folders_ in groups.items():
        for i, chunk in enumerate(_chunks(folders_, FLUX_BARRIER_FAN_IN)):
            shards = {shard_of(f) for f in chunk}
            level.append(
                _Barrier(
                    dns_label(f"{prefix}--wave-{wave}-{group or 'standalone'}-{i}"),
                    wave,
                    tuple(f.application for f in chunk),
                    chunk[0].stack,
                    group,
                    shards.pop() if len(shards) == 1 else "",
                    group_of(chunk[0]),
                )
            )
    out = list(level)
    depth = 1
    while len(level) > 1:
        upper = []
        for i, chunk in enumerate(_chunks(level, FLUX_BARRIER_FAN_IN)):
            mcs = {b.management_cluster for b in chunk}
            shards = {b.shard for b in chunk}
            groups_ = {b.group for b in chunk}
            upper.append(
                _Barrier(
                    dns_label(
                        f"{prefix}--wave-{wave}"
                        + (f"-{depth}-{i}" if len(level) > FLUX_BARRIER_FAN_IN else "")
                    ),
                    wave,
                    tuple(b.name for b in chunk),
                    chunk[0].stack,
                    mcs.pop() if len(mcs) == 1 else "",
                    shards.pop() if len(shards) == 1 else "",
                    groups_.pop() if len(groups_) == 1 else "",
                )
            )
        out += upper
        level = upper
        depth += 1
    return out


def flux_kustomizations(
    all_folders: Sequence[Folder],
    *,
    repo_url: str,
    revision: str,
    paths: Mapping[tuple[str, str], str],
    namespace: str = "flux-system",
    source: str = "nodefleet-rendered",
    sources: Mapping[str, str] | None = None,
    timeout: str = "30m",
    barrier_paths: Mapping[str, str] | None = None,
    shards: Callable[[Folder], str] | None = None,
    group_of: Callable[[Folder], str] | None = None,
) -> list[dict[str, Any]]:
    """The GitRepositories, one Kustomization per folder of the fleet, and the barriers that gate large waves.

    Each Kustomization applies through its folder's kubeconfig Secret (name and key), carries the folder's
    labels, has ``wait: true`` with the health of each kind spelt out (:func:`nodefleet.render.health.
    flux_health_check_exprs`: Ready only when what it applied is healthy), retries a failed apply after
    :data:`FLUX_RETRY_INTERVAL`, and waits for the wave before it; a hosted side also depends on its own
    management side. ``prune: false`` and ``deletionPolicy: Orphan``: neither a removed manifest nor a deleted
    Kustomization deletes what it applied.

    Waiting for the wave before: a wave of at most :data:`FLUX_DIRECT_GATE` folders is depended on folder by
    folder. A larger one gets a tree of barrier Kustomizations (a leaf per management cluster and at most
    :data:`FLUX_BARRIER_FAN_IN` folders, then levels of at most as many barriers, up to one root), each applying
    its stack's empty :data:`BARRIER_FOLDER` (``barrier_paths``: stack -> that folder's path in the repository)
    from the same GitRepository, and the next wave depends on the root alone. kustomize-controller reconciles a
    Kustomization only when each of its ``dependsOn`` is Ready for its current generation and, sharing its
    source, has applied the source's current revision (``checkDependencies``); so a barrier is Ready at a
    commit only once every folder below it is, and every object's ``dependsOn`` stays at most
    :data:`FLUX_BARRIER_FAN_IN` entries, whatever the fleet's size.

    Sources: kustomize-controller downloads and unpacks its source's whole artifact on every reconcile of every
    Kustomization, so one source for a large fleet costs it the fleet's size per folder. A fleet with barriers
    and folders in several management cluster groups (``group_of``: a folder's management cluster, or the group
    the registry names for it; standalone clusters together) gets a GitRepository per group,
    ``<source>-<group>``, whose artifact holds only that group's folders and the barrier folder
    (``spec.sparseCheckout``); its folders and the barriers below one group read it, so within a group every
    ``dependsOn`` still checks the revision. The barriers above several groups read ``source``, whose artifact
    holds the barrier folder alone; across groups a dependency is checked for ``Ready`` only (kustomize-controller
    compares revisions of a shared source only), and a folder depends also on its own group's barriers of the
    wave before, so the order within each group holds at every commit. A smaller fleet keeps one GitRepository,
    ``source``, with the whole branch.

    ``shards``: the Flux shard of a folder (:data:`FLUX_SHARD_LABEL`), None for an unsharded Flux.
    """
    if sources is None:
        sources = {}
    shard_of = shards or (lambda f: "")
    group = group_of or (lambda f: f.management_cluster or "standalone")
    ordered = _order(all_folders)
    by_wave: dict[str, list[Folder]] = {w: [] for w in WAVES}
    for f in ordered:
        by_wave[f.wave].append(f)
    prefix = source.removesuffix("-rendered")
    barriers: list[_Barrier] = []
    gate: dict[str, list[str]] = {}  # wave -> the names its folders depend on for the waves before it
    # wave -> group -> the leaf barriers of that group in the last wave before it that has the group's folders
    group_gate: dict[str, dict[str, list[str]]] = {}
    before: list[str] = []
    before_groups: dict[str, list[str]] = {}
    for wave in WAVES:
        gate[wave] = before
        group_gate[wave] = before_groups
        members = by_wave[wave]
        if not members:
            continue
        # A group's own gate is kept through the waves it has no folder in.
        before_groups = {g: v for g, v in before_groups.items() if g not in {group(f) for f in members}}
        if len(members) <= FLUX_DIRECT_GATE:
            before = [f.application for f in members]
            continue
        if barrier_paths is None:
            raise WiringError(
                f"wave {wave} has {len(members)} folders, and its barriers need each stack's "
                f"{BARRIER_FOLDER} folder's path"
            )
        tree = _barrier_tree(wave, members, prefix, shard_of, group)
        barriers += tree
        before = [tree[-1].name]
        if len(tree) > 1:
            for b in tree:
                if b.depends and b.depends[0] not in {t.name for t in tree}:  # a leaf: it depends on folders
                    before_groups.setdefault(b.group, []).append(b.name)
    _unique_names(ordered, barriers, sources)
    management_of = {(f.stack, f.cluster): f for f in ordered if f.side == "management"}
    groups = sorted({group(f) for f in ordered})
    per_group = bool(barriers) and len(groups) > 1
    source_of: dict[str, str] = {}  # group -> its GitRepository's name, when per group
    docs: list[dict[str, Any]] = []
    if not per_group:
        docs.append(_git_repository(source, namespace, repo_url, revision, None))
    else:
        assert barrier_paths is not None
        dirs: dict[str, set[str]] = {g: set() for g in ["", *groups]}  # group -> its source's folders
        for f in ordered:
            dirs[group(f)].add(paths[(f.stack, f.target)])
        for b in barriers:
            dirs[b.group].add(barrier_paths[b.stack])
        docs.append(_git_repository(source, namespace, repo_url, revision, sorted(dirs[""])))
        for g in groups:
            source_of[g] = dns_label(f"{source}-{g}")
            docs.append(_git_repository(source_of[g], namespace, repo_url, revision, sorted(dirs[g])))
        if len(set(source_of.values()) | {source}) < len(groups) + 1:
            raise WiringError(
                f"the GitRepositories of the management cluster groups ({', '.join(source_of.values())}) and the "
                f"wiring's {source} need distinct names; give the groups names that differ (the registry's shard:)"
            )
    # One copy for every Kustomization of the call: the same value, written once per document (20,000 copies of
    # it took seconds at 10,000 stacks).
    ignore = copy.deepcopy(FLUX_IGNORE_RULES)
    for f in ordered:
        depends = list(gate[f.wave])
        if per_group:
            depends += [d for d in group_gate[f.wave].get(group(f), []) if d not in depends]
        if f.side == "hosted":
            depends.insert(0, management_of[(f.stack, f.cluster)].application)
        spec: dict[str, Any] = {"interval": "10m", "retryInterval": FLUX_RETRY_INTERVAL}
        if depends:
            spec["dependsOn"] = [{"name": d} for d in depends]
        spec |= {
            "wait": True,
            "timeout": timeout,
            "healthCheckExprs": flux_health_check_exprs(),
            "sourceRef": {"kind": "GitRepository", "name": source_of.get(group(f), source)},
            "path": f"./{paths[(f.stack, f.target)]}",
            "prune": False,
            "deletionPolicy": "Orphan",
            "ignore": ignore,
            "kubeConfig": {"secretRef": {"name": f.flux_secret, "key": f.flux_secret_key}},
        }
        labels = f.labels()
        if shard_of(f):
            labels[FLUX_SHARD_LABEL] = shard_of(f)
        docs.append(
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": f.application, "namespace": namespace, "labels": labels},
                "spec": spec,
            }
        )
    for b in barriers:
        labels = {WAVE_LABEL: wave_label(b.wave), LABEL_BARRIER: "true"}
        if b.management_cluster:
            labels[LABEL_MANAGEMENT_CLUSTER] = b.management_cluster
        if b.shard:
            labels[FLUX_SHARD_LABEL] = b.shard
        assert barrier_paths is not None
        docs.append(
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": b.name, "namespace": namespace, "labels": labels},
                "spec": {
                    "interval": "10m",
                    "retryInterval": FLUX_RETRY_INTERVAL,
                    "dependsOn": [{"name": d} for d in b.depends],
                    # No kubeConfig: the folder holds no manifest, so nothing is applied anywhere.
                    "sourceRef": {"kind": "GitRepository", "name": source_of.get(b.group, source)},
                    "path": f"./{barrier_paths[b.stack]}",
                    "prune": False,
                    "deletionPolicy": "Orphan",
                },
            }
        )
    return docs


def _git_repository(
    name: str, namespace: str, repo_url: str, revision: str, dirs: Sequence[str] | None
) -> dict[str, Any]:
    """A GitRepository of the rendered branch; with ``dirs``, its artifact holds only those folders."""
    spec: dict[str, Any] = {"interval": "1m", "url": repo_url, "ref": {"branch": revision}}
    if dirs is not None:
        spec["sparseCheckout"] = list(dirs)
    return {
        "apiVersion": "source.toolkit.fluxcd.io/v1",
        "kind": "GitRepository",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def _unique_names(
    ordered: Sequence[Folder], barriers: Sequence[_Barrier], sources: Mapping[str, str]
) -> None:
    _unique(ordered, "Kustomization", sources)
    names = {f.application: f for f in ordered}
    for b in barriers:
        if b.name in names:
            f = names[b.name]
            where = f"{sources[f.stack]} (stack '{f.stack}')" if f.stack in sources else f"stack '{f.stack}'"
            raise WiringError(
                f"{where} folder {f.target} would be the Kustomization '{b.name}', the barrier of wave {b.wave}; "
                "rename the stack or cluster"
            )


def secrets_not_written(fleet: Fleet) -> dict[str, list[str]]:
    """Per management cluster, the Secrets the HostedClusters of ``fleet`` reference and nodefleet does not write:
    every one in render mode (their values would be in Git), those without ``fromConfig`` in apply mode, as
    ``<namespace>/<name> (<field> of <cluster>)``. They must exist before HyperShift can create the clusters
    (docs/gitops.md, "Credentials the wiring needs")."""
    out: dict[str, list[str]] = {}
    render = fleet.config.output.mode == "render"
    for resolved in fleet.clusters:
        if isinstance(resolved, ResolvedCluster):
            continue
        hc = resolved.config
        fields = {id(hc.pull_secret): "pullSecret"}
        if hc.ssh_key is not None:
            fields[id(hc.ssh_key)] = "sshKey"
        for ref, _ in hc.secret_refs():
            if ref.from_config and not render:
                continue  # apply mode writes it from the stack secret
            field = fields.get(id(ref), "secretEncryption.aescbc")
            entry = f"{hc.namespace}/{ref.name} ({field} of {hc.name})"
            out.setdefault(hc.management_cluster, [])
            if entry not in out[hc.management_cluster]:
                out[hc.management_cluster].append(entry)
    return out


def _shell_path(path: str) -> str:
    """``path`` quoted for the shell, ``~/`` as ``$HOME`` (kubectl does not expand it)."""
    if path.startswith("~/"):
        return '"$HOME"/' + shlex.quote(path[2:])
    return shlex.quote(path)


def _env_name(cluster: str) -> str:
    return "NODEFLEET_KUBECONFIG_" + re.sub(r"[^A-Z0-9]", "_", cluster.upper())


def secrets_script(
    all_folders: Sequence[Folder],
    kubeconfigs: Mapping[str, str | None],
    *,
    tool: str,
    flux_namespace: str,
    hosted_namespaces: Mapping[tuple[str, str], str],
    hub_kubeconfig: str | None = None,
    argocd_shard: Callable[[Folder], str] | None = None,
) -> str:
    """A shell script that creates the Secrets the wiring reads, from the clusters themselves; no value in it.

    ``kubeconfigs``: each management cluster's kubeconfig path from the registry (None: the script asks for it in
    ``NODEFLEET_KUBECONFIG_<NAME>``, as for a standalone cluster). ``hosted_namespaces``: (stack, cluster) -> the
    hosted cluster's namespace, where HyperShift keeps its ``<cluster>-admin-kubeconfig``. For Flux, each
    kubeconfig Secret is written flattened (the CA and credentials inline: Flux refuses file references) under the
    key the wiring reads; for Argo CD, ``argocd cluster add`` registers each destination under the name the wiring
    sends folders to. Idempotent: each Secret created, or replaced when it exists (never ``kubectl apply``, which
    would keep a second copy of the kubeconfig in its last-applied-configuration annotation; a replace also drops
    one an earlier script left), ``argocd cluster add --upsert``. A hosted cluster whose control plane is not up
    yet is named and skipped; the others go on, and the script exits 1 at the end."""
    flux = tool in ("flux", "both")
    argocd = tool in ("argocd", "both")
    q = shlex.quote
    lines = [
        "#!/usr/bin/env bash",
        "# Generated by `python -m nodefleet gitops`: creates the Secrets the wiring reads (docs/gitops.md,",
        "# \"Credentials the wiring needs\"), reading the clusters' own kubeconfigs and HyperShift's admin kubeconfig",
        "# Secrets. No secret value is in this file. Needs kubectl"
        + (", and an `argocd` CLI logged in to the Argo CD that runs the wiring." if argocd else "."),
        *(
            [
                "# The Flux Secrets go to the cluster of NODEFLEET_HUB_KUBECONFIG (default: the registry's "
                "gitops.kubeconfig,",
                "# else kubectl's own).",
            ]
            if flux
            else [
                "# Each cluster is registered in Argo CD with `argocd cluster add`, as the argocd CLI is logged in."
            ]
        ),
        "# A cluster the registry gives no kubeconfig is read from NODEFLEET_KUBECONFIG_<NAME>.",
        "set -euo pipefail",
        "pending=()",
        'hub_kubeconfig="${NODEFLEET_HUB_KUBECONFIG:-}"',
        *(
            [f'[ -n "$hub_kubeconfig" ] || hub_kubeconfig={_shell_path(hub_kubeconfig)}']
            if hub_kubeconfig
            else []
        ),
        'hub() { if [ -n "$hub_kubeconfig" ]; then kubectl --kubeconfig "$hub_kubeconfig" "$@"; else kubectl "$@"; fi; }',
        "work=$(mktemp -d)",
        "trap 'rm -rf \"$work\"' EXIT",
    ]

    def flux_secret(name: str, key: str, file: str) -> list[str]:
        # create or replace: the kubeconfig exists once, in the Secret's data (kubectl apply would copy it into
        # the last-applied-configuration annotation too).
        made = f'hub -n {q(flux_namespace)} create secret generic {q(name)} --from-file={q(key)}="{file}"'
        return [
            f"if hub -n {q(flux_namespace)} get secret {q(name)} >/dev/null 2>&1; then",
            f"  {made} --dry-run=client -o yaml | hub replace -f -",
            "else",
            f"  {made}",
            "fi",
        ]

    def argocd_cluster(name: str, file: str, folder: Folder) -> list[str]:
        shard = argocd_shard(folder).removeprefix("shard-") if argocd_shard else ""
        return [
            f'argocd cluster add "$(kubectl --kubeconfig "{file}" config current-context)" --kubeconfig "{file}" '
            f"--name {q(name)} --upsert --yes" + (f" --shard {shard}" if shard else "")
        ]

    done: set[str] = set()
    for f in all_folders:
        if f.side == "hosted":
            continue
        what = f.management_cluster or f.cluster
        if what in done:
            continue
        done.add(what)
        path = kubeconfigs.get(what) if f.management_cluster else None
        source = (
            _shell_path(path) if path else f'"${{{_env_name(what)}:?set it to the kubeconfig of {what}}}"'
        )
        kind = "management cluster" if f.management_cluster else "standalone cluster"
        lines += [
            "",
            f"# {kind} {what}",
            f'kubectl --kubeconfig {source} config view --raw --minify --flatten > "$work/{what}"',
        ]
        if flux:
            lines += flux_secret(f.flux_secret, f.flux_secret_key, f"$work/{what}")
        if argocd:
            lines += argocd_cluster(f.argocd_cluster, f"$work/{what}", f)
    for f in all_folders:
        if f.side != "hosted":
            continue
        namespace = hosted_namespaces[(f.stack, f.cluster)]
        file = f"$work/{f.argocd_cluster}"
        secret = f"{namespace}/{f.cluster}-admin-kubeconfig"
        # Before HyperShift has brought the control plane up, the Secret (or its namespace) is not there yet:
        # say which one and what to do, not only kubectl's NotFound.
        missing = (
            f"secrets.sh: HyperShift has not written {secret} (key {HOSTED_KUBECONFIG_KEY}) on management cluster "
            f"{f.management_cluster} yet; run this script again once hosted cluster {f.cluster}'s control plane is up"
        )
        lines += [
            "",
            f"# hosted cluster {f.cluster} (stack {f.stack}): HyperShift's admin kubeconfig, from management cluster "
            f"{f.management_cluster}",
            f'if ! kubectl --kubeconfig "$work/{f.management_cluster}" -n {q(namespace)} get secret '
            f"{q(f.cluster + '-admin-kubeconfig')} -o jsonpath='{{.data.{HOSTED_KUBECONFIG_KEY}}}' > \"{file}.b64\" "
            f'|| [ ! -s "{file}.b64" ]; then',
            # Named and skipped: one hosted cluster not up yet does not hold back the others.
            f"  echo {q(missing)} >&2",
            f"  pending+=({q(f.cluster)})",
            "else",
            f'  base64 -d < "{file}.b64" > "{file}"',
        ]
        body: list[str] = []
        if flux:
            body += flux_secret(f.flux_secret, f.flux_secret_key, file)
        if argocd:
            body += argocd_cluster(f.argocd_cluster, file, f)
        lines += [f"  {line}" for line in body] + ["fi"]
    lines += [
        "",
        'if [ "${#pending[@]}" -gt 0 ]; then',
        '  echo "secrets.sh: not registered yet: ${pending[*]}; run this script again once their control planes are '
        'up" >&2',
        "  exit 1",
        "fi",
    ]
    return "\n".join(lines) + "\n"
