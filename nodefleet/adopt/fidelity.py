"""The fidelity contract: the render of an imported stack reproduces every live object, field by field.

Compared, on both sides after the API server's defaulting (the shipped CRD's ``default``\\ s, as a create or
an apply would store them): ``spec``, ``metadata.labels`` and ``metadata.annotations``, on the declaring side
only. Not compared: ``status``; what the API server or a controller writes (:data:`CONTROLLER_WRITTEN`, such as
the machine-api's capacity annotations or Karpenter's hash annotations); the fields nodefleet leaves to
controllers by design, the ones its ``ignore_changes`` and GitOps ignore rules name (an MCO-managed
MachineSet's AMI, a legacy EC2NodeClass's ``userData`` and ``amiSelectorTerms``, the ``userData``, AMI and
``amiFamily`` Red Hat's karpenter-operator writes on a standalone cluster's classes); on the
``MachineConfiguration`` singleton, which nodefleet patches, every field it does not declare. A key present on
one side only with Go's zero value (``{}``, ``[]``, ``""``, ``0``, ``false``, null) on the other means the same to
every controller reading it and is not a difference; nor is an object holding nothing but the CRD's defaults
for an empty one (``autoscaling: {scaling: ScaleUpAndScaleDown}``, stored for a client's ``autoscaling: {}``).

nodefleet's own record (``nodefleet.io/*`` annotations) and, in render mode, Argo CD's and Flux's no-deletion
annotations are metadata the tool adds: listed (:attr:`Fidelity.bookkeeping`), not differences. Every other
field the render adds that the live object lacks is an *addition* (a default nodefleet would add); every
field it changes or removes is a *change*. An import writes its stack only when there are neither, or when
the user accepted the additions (``--adopt-defaults``).
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodefleet import kinds as k
from nodefleet.adopt.documents import LiveObject
from nodefleet.apiserver.schema import defaulted, without_bare_defaults
from nodefleet.apiserver.store import load_index
from nodefleet.render.gitops import (
    ANNOTATION_ARGOCD_SYNC_OPTIONS,
    ANNOTATION_FLUX_PRUNE,
    parse_property_path,
)
from nodefleet.render.hosted import LEGACY_CONTROLLER_OWNED
from nodefleet.render.karpenter import OPERATOR_OWNED, USERDATA_MODE_OPERATOR
from nodefleet.render.objects import StackObject

__all__ = [
    "ABSENT",
    "CONTROLLER_WRITTEN",
    "Difference",
    "Fidelity",
    "compare",
    "normalized",
]


class _Absent:
    def __repr__(self) -> str:
        return "(absent)"


#: A field one side does not have.
ABSENT: Any = _Absent()

#: Metadata keys the API server, kubectl or a controller writes on live objects, by (group, kind); "*" for all.
CONTROLLER_WRITTEN: dict[tuple[str, str] | str, tuple[str, ...]] = {
    "*": (
        'metadata.annotations["kubectl.kubernetes.io/last-applied-configuration"]',
        'metadata.annotations["argocd.argoproj.io/tracking-id"]',
        'metadata.labels["kustomize.toolkit.fluxcd.io/name"]',
        'metadata.labels["kustomize.toolkit.fluxcd.io/namespace"]',
    ),
    # machine-api's MachineSet controller: the capacity it read from the instance type; the MachineAutoscaler's.
    ("machine.openshift.io", "MachineSet"): (
        'metadata.annotations["machine.openshift.io/GPU"]',
        'metadata.annotations["machine.openshift.io/memoryMb"]',
        'metadata.annotations["machine.openshift.io/vCPU"]',
        'metadata.annotations["autoscaling.openshift.io/machineautoscaler"]',
        'metadata.annotations["machine.openshift.io/cluster-api-autoscaler-node-group-min-size"]',
        'metadata.annotations["machine.openshift.io/cluster-api-autoscaler-node-group-max-size"]',
    ),
    # The MCO writes the rendered config a pool's nodes run.
    ("machineconfiguration.openshift.io", "MachineConfigPool"): ("spec.configuration",),
    # Karpenter's drift bookkeeping.
    ("karpenter.sh", "NodePool"): (
        'metadata.annotations["karpenter.sh/nodepool-hash"]',
        'metadata.annotations["karpenter.sh/nodepool-hash-version"]',
    ),
    ("karpenter.k8s.aws", "EC2NodeClass"): (
        'metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash"]',
        'metadata.annotations["karpenter.k8s.aws/ec2nodeclass-hash-version"]',
    ),
    # The API server (the namespace's finalizer), OpenShift's pod-security label syncer and SCC allocator.
    ("", "Namespace"): (
        "spec.finalizers",
        'metadata.labels["kubernetes.io/metadata.name"]',
        'metadata.labels["pod-security.kubernetes.io/audit"]',
        'metadata.labels["pod-security.kubernetes.io/audit-version"]',
        'metadata.labels["pod-security.kubernetes.io/warn"]',
        'metadata.labels["pod-security.kubernetes.io/warn-version"]',
        'metadata.annotations["openshift.io/sa.scc.mcs"]',
        'metadata.annotations["openshift.io/sa.scc.supplemental-groups"]',
        'metadata.annotations["openshift.io/sa.scc.uid-range"]',
    ),
}

#: The GitOps tools' no-deletion annotations nodefleet adds in render mode (nodefleet.render.gitops).
_GITOPS_ANNOTATIONS = (ANNOTATION_ARGOCD_SYNC_OPTIONS, ANNOTATION_FLUX_PRUNE)


@dataclass(frozen=True)
class Difference:
    """One field where the render differs from the live object."""

    obj: str
    path: str
    live: Any
    rendered: Any

    @property
    def addition(self) -> bool:
        """The render adds a field the live object does not have (a default nodefleet would add). An object
        the sources do not hold at all is not one: it may exist unseen, and declaring it would take it over."""
        return self.live is ABSENT and self.path != ""

    def describe(self) -> str:
        if self.path == "":
            return (
                f"{self.obj}: nodefleet would declare it and the sources hold no such object; add it to the "
                "sources if it exists, or create it first"
            )
        if self.addition:
            return f"{self.obj}: {self.path}: nodefleet would add {_shown(self.rendered)}"
        if self.rendered is ABSENT:
            return f"{self.obj}: {self.path}: nodefleet would remove {_shown(self.live)}"
        return f"{self.obj}: {self.path}: live {_shown(self.live)}, nodefleet would write {_shown(self.rendered)}"


def _shown(value: Any) -> str:
    text = repr(value) if isinstance(value, str) else str(value)
    return text if len(text) <= 160 else text[:150] + "…"


@dataclass
class Fidelity:
    differences: list[Difference] = field(default_factory=list)
    #: Objects and the metadata nodefleet adds for itself (nodefleet.io/*, GitOps no-deletion annotations).
    bookkeeping: list[str] = field(default_factory=list)

    @property
    def changes(self) -> list[Difference]:
        return [d for d in self.differences if not d.addition]

    @property
    def additions(self) -> list[Difference]:
        return [d for d in self.differences if d.addition]


def _zero(value: Any) -> bool:
    if value is None or value is ABSENT or value == "" or value is False:
        return True
    if isinstance(value, bool):
        return False
    if isinstance(value, int | float) and value == 0:
        return True
    if isinstance(value, Mapping):
        return all(_zero(v) for v in value.values())
    if isinstance(value, list):
        return not value
    return False


def _segment(key: str) -> str:
    if key.replace("_", "").replace("-", "").isalnum() and not key[:1].isdigit():
        return f".{key}"
    return '["' + key.replace('"', '\\"') + '"]'


#: Maps whose keys mean something by being there, whatever their value (``node-role.kubernetes.io/infra: ""``):
#: an entry present on one side only is a difference even when its value is empty.
_KEYED = frozenset({"labels", "annotations", "matchLabels", "nodeSelector", "tags"})


def _diff(
    obj: str,
    path: str,
    live: Any,
    rendered: Any,
    out: list[Difference],
    keyed: bool = False,
    atomic: bool = False,
) -> None:
    """``atomic``: inside a list's item. A list is replaced whole by an apply (an atomic list, and every list under
    ``x-kubernetes-preserve-unknown-fields``, such as a MachineSet's ``providerSpec.value.blockDevices``), so a
    zero value one side has and the other lacks is stored, or dropped, by Flux's or Argo CD's apply: a change
    of the object (its generation), however little it means to the controller reading it."""
    if isinstance(live, Mapping) and isinstance(rendered, Mapping):
        for key in [*live.keys(), *(k for k in rendered if k not in live)]:
            a = live.get(key, ABSENT)
            b = rendered.get(key, ABSENT)
            sub = f"{path}{_segment(str(key))}"
            if a is ABSENT or b is ABSENT:
                if not keyed and not atomic and _zero(a) and _zero(b):
                    continue
                out.append(Difference(obj, sub.lstrip("."), a, b))
            else:
                _diff(obj, sub, a, b, out, str(key) in _KEYED, atomic)
        return
    if isinstance(live, list) and isinstance(rendered, list) and len(live) == len(rendered):
        for i, (a, b) in enumerate(zip(live, rendered, strict=True)):
            _diff(obj, f"{path}[{i}]", a, b, out, atomic=True)
        return
    if isinstance(live, list) and isinstance(rendered, list) and len(live) > len(rendered) and rendered:
        # The render is the live list less its last items: name each item it would remove, not the whole list.
        prefix: list[Difference] = []
        for i, (a, b) in enumerate(zip(live, rendered, strict=False)):
            _diff(obj, f"{path}[{i}]", a, b, prefix, atomic=True)
        if not prefix:
            for i in range(len(rendered), len(live)):
                out.append(Difference(obj, f"{path}[{i}]".lstrip("."), live[i], ABSENT))
            return
    if live == rendered and type(live) is type(rendered):
        return
    if _zero(live) and _zero(rendered):
        return
    out.append(Difference(obj, path.lstrip("."), live, rendered))


def _drop(value: Any, path: str) -> None:
    """Remove the field at a Pulumi property path (absent is fine)."""
    parts = parse_property_path(path)
    for part in parts[:-1]:
        if isinstance(value, Mapping) and isinstance(part, str):
            value = value.get(part)
        elif isinstance(value, list) and isinstance(part, int) and part < len(value):
            value = value[part]
        else:
            return
    last = parts[-1]
    if isinstance(value, dict) and isinstance(last, str):
        value.pop(last, None)


def _pruned(value: Any) -> Any:
    """``value`` without empty mappings and lists and nulls (Go's zero values of structs, slices and pointers,
    which a controller reads as absent): pruned before defaulting, so that ``autoscaling: {}`` and no
    ``autoscaling`` are defaulted alike."""
    if isinstance(value, Mapping):
        out = {key: _pruned(v) for key, v in value.items()}
        return {key: v for key, v in out.items() if not (v is None or v == {} or v == [])}
    if isinstance(value, list):
        return [_pruned(v) for v in value]
    return value


def normalized(
    manifest: Mapping[str, Any], karpenter: str | None = None, *, bare_defaults: bool = True
) -> dict[str, Any]:
    """``manifest`` as the API server would store it (Go's empty values pruned, the shipped CRD's defaults
    filled in); an object of a kind nodefleet ships no CRD for only pruned. Without ``bare_defaults``, objects
    holding nothing but their defaults are dropped too, as the comparison sees them; an import reads the
    object with them, so that what the API server filled in is stated in the stack."""
    pruned: dict[str, Any] = _pruned(manifest)
    crd = load_index().for_object(
        str(manifest.get("apiVersion", "")), str(manifest.get("kind", "")), karpenter
    )
    if crd is None:
        return pruned
    meta = pruned.get("metadata")
    body: dict[str, Any] = defaulted(pruned, crd)
    if not bare_defaults:
        body = without_bare_defaults(body, crd.schema)
    if isinstance(meta, Mapping):
        body["metadata"] = copy.deepcopy(dict(meta))
    return body


def _declared(manifest: Mapping[str, Any], karpenter: str | None) -> dict[str, Any]:
    """The declaring side of an object: spec, labels and annotations, as the API server would store them."""
    body = normalized(manifest, karpenter, bare_defaults=False)
    meta = body.get("metadata") or {}
    out: dict[str, Any] = {
        "metadata": {
            "labels": dict(meta.get("labels") or {}),
            "annotations": dict(meta.get("annotations") or {}),
        }
    }
    for key, value in body.items():
        if key not in ("apiVersion", "kind", "metadata", "status"):
            out[key] = value
    return out


def _ignored(live: LiveObject, rendered: Mapping[str, Any]) -> list[str]:
    """Paths compared on neither side: written by others, or left to controllers by nodefleet's design."""
    paths = [*CONTROLLER_WRITTEN["*"], *CONTROLLER_WRITTEN.get((live.group, live.kind), ())]
    notes = (rendered.get("metadata") or {}).get("annotations") or {}
    if live.kind == k.MACHINE_SET.kind and notes.get(k.ANNOTATION_OWNER) == "mco":
        paths.append(
            k.AMI_PATH
        )  # the MCO boot image controller's (ignore_changes, Flux/Argo CD ignore rules)
    if live.kind == k.EC2_NODE_CLASS.kind and notes.get(k.ANNOTATION_USERDATA_MODE) == k.USERDATA_MODE_LEGACY:
        paths += list(LEGACY_CONTROLLER_OWNED)  # HyperShift rewrites both (ignore_changes)
    if live.kind == k.EC2_NODE_CLASS.kind and notes.get(k.ANNOTATION_USERDATA_MODE) == USERDATA_MODE_OPERATOR:
        # The karpenter-operator writes these on every class and its admission policies reject anyone else's.
        paths += [f"spec.{name}" for name in OPERATOR_OWNED]
    return paths


def compare_object(live: LiveObject, rendered: Mapping[str, Any], *, patch: bool = False) -> Fidelity:
    """The differences between one live object and its render; ``patch``: the render is a server-side-apply
    patch (the ``MachineConfiguration`` singleton), compared on the fields it declares only."""
    result = Fidelity()
    notes = (rendered.get("metadata") or {}).get("annotations") or {}
    karpenter = notes.get(k.ANNOTATION_KARPENTER)
    a = _declared(live.manifest, karpenter)
    b = _declared(rendered, karpenter)
    for path in _ignored(live, rendered):
        _drop(a, path)
        _drop(b, path)
    for side in (a, b):
        for key in [key for key in side["metadata"]["annotations"] if str(key).startswith("nodefleet.io/")]:
            del side["metadata"]["annotations"][key]
    mine = [key for key in notes if str(key).startswith("nodefleet.io/")]
    for key in _GITOPS_ANNOTATIONS:
        if key in b["metadata"]["annotations"] and key not in a["metadata"]["annotations"]:
            del b["metadata"]["annotations"][key]
            mine.append(key)
    if mine:
        result.bookkeeping.append(f"{live.shown()}: {', '.join(sorted(mine))}")
    if patch:
        a = {"spec": {key: (a.get("spec") or {}).get(key, ABSENT) for key in (b.get("spec") or {})}}
        b = {"spec": b.get("spec") or {}}
        a["spec"] = {key: value for key, value in a["spec"].items() if value is not ABSENT}
    _diff(live.shown(), "", a, b, result.differences)
    return result


def _key(group: str, kind: str, namespace: str, name: str) -> tuple[str, str, str, str]:
    return (group, kind, namespace, name)


def compare(live: Sequence[LiveObject], rendered: Sequence[StackObject]) -> Fidelity:
    """Every rendered object against the live object of its identity; a rendered object the sources do not
    hold is a difference too, never an addition (it may exist unseen)."""
    by_key = {o.identity: o for o in live}
    result = Fidelity()
    for o in rendered:
        manifest = o.manifest
        key = _key(o.key.group, o.key.kind, o.key.namespace, o.key.name)
        match = by_key.get(key)
        if match is None:
            result.differences.append(Difference(o.key.shown(), "", ABSENT, manifest))
            continue
        patch = o.key.kind == k.MACHINE_CONFIGURATION.kind
        found = compare_object(match, manifest, patch=patch)
        result.differences += found.differences
        result.bookkeeping += found.bookkeeping
    return result
