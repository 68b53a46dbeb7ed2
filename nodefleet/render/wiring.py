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
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodefleet.render_layout import render_targets
from nodefleet.stackfile.model import Fleet, ResolvedCluster
from nodefleet.stackfile.names import dns_label, label_value
from nodefleet.stackfile.waves import WAVE_LABEL, WAVES
from nodefleet.stackfile.waves import label_value as wave_label

__all__ = [
    "LABEL_MANAGEMENT_CLUSTER",
    "LABEL_SIDE",
    "LABEL_STACK",
    "SIDES",
    "Folder",
    "WiringError",
    "argocd_application_set",
    "dns_label",
    "flux_kustomizations",
    "folder_fields",
    "folders",
    "label_value",
]

LABEL_STACK = "nodefleet.io/stack"
#: ``standalone``, ``management`` or ``hosted``: which side of a cluster a folder is.
LABEL_SIDE = "nodefleet.io/side"
LABEL_MANAGEMENT_CLUSTER = "nodefleet.io/management-cluster"
#: Sides in the order they sync within a wave: a hosted side after every management side.
SIDES = ("standalone", "management", "hosted")


class WiringError(ValueError):
    """Wiring that cannot be generated as asked (the message names the stacks and the fix)."""


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


def folders(fleet: Fleet) -> list[Folder]:
    """Every render folder of ``fleet``, in the order of its clusters (a management side before its hosted side)."""
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
        mc = hc.management_cluster
        management, hosted = render_targets(name, hosted=True)
        out.append(
            Folder(fleet.stack, management, "management", name, wave, mc.argocd_destination, mc.flux_secret,
                   mc.name, fleet.render_directory)
        )  # fmt: skip
        if hc.auto_node is None:
            continue  # nothing lives inside the hosted cluster: the provider writes no folder for it
        out.append(
            Folder(fleet.stack, hosted, "hosted", name, wave, hc.hosted_destination,
                   hc.hosted_kubeconfig_secret, mc.name, fleet.render_directory)
        )  # fmt: skip
    return out


def folder_fields(fleet: Fleet) -> dict[str, dict[str, Any]]:
    """Per render folder, what ``nodefleet render`` writes beside ``ignoreDifferences`` in its Argo CD file:
    the Application's name, its destination and its labels (wave, stack, side, management cluster)."""
    return {
        f.target: {
            "application": f.application,
            "destination": {"name": f.argocd_cluster},
            "labels": f.labels(),
        }
        for f in folders(fleet)
    }


def _unique(entries: Iterable[Folder], what: str) -> None:
    seen: dict[str, Folder] = {}
    for f in entries:
        other = seen.setdefault(f.application, f)
        if other is not f:
            raise WiringError(
                f"stack '{f.stack}' folder {f.target} and stack '{other.stack}' folder {other.target} would both "
                f"be the {what} '{f.application}'; rename one of the stacks or clusters"
            )


def _order(all_folders: Sequence[Folder]) -> list[Folder]:
    return sorted(
        all_folders, key=lambda f: (WAVES.index(f.wave), SIDES.index(f.side) > 1, f.stack, f.target)
    )


def argocd_application_set(
    all_folders: Sequence[Folder],
    *,
    repo_url: str,
    revision: str,
    paths: Mapping[tuple[str, str], str],
    name: str = "nodefleet",
    namespace: str = "argocd",
    project: str = "default",
) -> dict[str, Any]:
    """One Argo CD ApplicationSet with an Application per folder of the fleet.

    The git files generator names each folder's ``argocd-ignore-differences`` file exactly (``paths``:
    (stack, folder) -> the folder's path in the repository), so a folder is wired only when the fleet says
    so; the file gives the Application its name, destination, labels and ignoreDifferences. RollingSync runs
    two steps per wave: the standalone clusters and management sides, then the hosted sides, each step when
    the one before is Healthy (the hosted side's objects need the HostedCluster the management side creates).
    """
    _unique(all_folders, "Application")
    steps: list[dict[str, Any]] = []
    for wave in WAVES:
        for sides in (["standalone", "management"], ["hosted"]):
            step: dict[str, Any] = {
                "matchExpressions": [
                    {"key": WAVE_LABEL, "operator": "In", "values": [wave_label(wave)]},
                    {"key": LABEL_SIDE, "operator": "In", "values": sides},
                ]
            }
            if wave == "main":
                step["maxUpdate"] = "25%"
            steps.append(step)
    files = [{"path": f"{paths[(f.stack, f.target)]}/argocd-ignore-differences"} for f in _order(all_folders)]
    label_keys = (WAVE_LABEL, LABEL_STACK, LABEL_SIDE)
    return {
        "apiVersion": "argoproj.io/v1alpha1",
        "kind": "ApplicationSet",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "goTemplate": True,
            "goTemplateOptions": ["missingkey=error"],
            "strategy": {"type": "RollingSync", "rollingSync": {"steps": steps}},
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
                        "directory": {"recurse": True},
                    },
                    "destination": {"name": "{{ .destination.name }}"},
                    "syncPolicy": {
                        "automated": {"selfHeal": True, "prune": False},
                        "syncOptions": [
                            "ServerSideApply=true",
                            "CreateNamespace=false",
                            "RespectIgnoreDifferences=true",
                        ],
                    },
                },
            },
            "templatePatch": "spec:\n  ignoreDifferences: {{ toJson .ignoreDifferences }}\n",
        },
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


def flux_kustomizations(
    all_folders: Sequence[Folder],
    *,
    repo_url: str,
    revision: str,
    paths: Mapping[tuple[str, str], str],
    namespace: str = "flux-system",
    source: str = "nodefleet-rendered",
    timeout: str = "30m",
) -> list[dict[str, Any]]:
    """A GitRepository and one Kustomization per folder of the fleet.

    Each Kustomization applies through its folder's kubeconfig Secret, carries the folder's labels, has
    ``wait: true`` (Ready only when what it applied is healthy) and ``dependsOn`` every Kustomization of the
    wave before it; a hosted side also depends on its own management side.
    """
    _unique(all_folders, "Kustomization")
    ordered = _order(all_folders)
    by_wave: dict[str, list[Folder]] = {w: [] for w in WAVES}
    for f in ordered:
        by_wave[f.wave].append(f)
    previous: dict[str, list[Folder]] = {}
    before: list[Folder] = []
    for wave in WAVES:
        previous[wave] = before
        if by_wave[wave]:
            before = by_wave[wave]
    management_of = {(f.stack, f.cluster): f for f in ordered if f.side == "management"}
    docs: list[dict[str, Any]] = [
        {
            "apiVersion": "source.toolkit.fluxcd.io/v1",
            "kind": "GitRepository",
            "metadata": {"name": source, "namespace": namespace},
            "spec": {"interval": "1m", "url": repo_url, "ref": {"branch": revision}},
        }
    ]
    for f in ordered:
        depends = [g.application for g in previous[f.wave]]
        if f.side == "hosted":
            depends.insert(0, management_of[(f.stack, f.cluster)].application)
        spec: dict[str, Any] = {"interval": "10m"}
        if depends:
            spec["dependsOn"] = [{"name": d} for d in depends]
        spec |= {
            "wait": True,
            "timeout": timeout,
            "sourceRef": {"kind": "GitRepository", "name": source},
            "path": f"./{paths[(f.stack, f.target)]}",
            "prune": False,
            "ignore": copy.deepcopy(FLUX_IGNORE_RULES),
            "kubeConfig": {"secretRef": {"name": f.flux_secret}},
        }
        docs.append(
            {
                "apiVersion": "kustomize.toolkit.fluxcd.io/v1",
                "kind": "Kustomization",
                "metadata": {"name": f.application, "namespace": namespace, "labels": f.labels()},
                "spec": spec,
            }
        )
    return docs
