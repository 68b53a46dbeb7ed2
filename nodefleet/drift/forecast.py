"""Drift forecast: which nodes a change of a stack will replace, and why, before anything is applied.

Two snapshots of the Kubernetes objects a stack declares are compared: *before* (what was last rendered,
the stack's Pulumi state, or the base of a pull request) and *after* (what the program declares now). For
every Karpenter node class and NodePool, MachineSet and classic HyperShift NodePool the forecast says
whether nodes are replaced, why, how many nodes are at stake where that is known, and what paces it.

What each controller does with a change, and where it comes from:

* **Karpenter** (EC2NodeClass, NodePool): static drift, decided with :mod:`nodefleet.drift.rules` (the same
  model of Karpenter's ``Hash()`` the drift benchmark uses, verified against Karpenter 1.12-1.15's own code;
  the object's ``nodefleet.io/karpenter`` set names the minor). Where nodefleet leaves a field to HyperShift,
  the object Karpenter actually hashes is rebuilt with that module's HyperShift model: AutoNode's
  generated EC2NodeClass (:func:`nodefleet.drift.rules.hypershift_generated_ec2_node_class`) and the legacy
  class whose ``userData``/AMI HyperShift rewrites. The Ignition stub then carries the
  ``TargetConfigVersionHash`` of the class's effective release (its ``spec.version``, else the
  control plane's), so a release bump drifts and a token rotation does not change anything a stack
  declares. Replacement is paced by the NodePools' ``Drifted`` budgets. A change of Karpenter's hash
  *version* (``karpenter.sh/nodepool-hash-version``) comes with a Karpenter upgrade, not with a stack
  change: Karpenter re-stamps its NodeClaims instead of drifting them (kubernetes-sigs/karpenter
  ``designs/drift-hash-versioning.md``).
* **MachineSet** (machine-api): a MachineSet never rolls its existing machines. A template change (AMI,
  instance type, user-data secret, labels) applies only to machines created afterwards: a scale-up, the
  replacement of a deleted machine, a MachineHealthCheck remediation (OpenShift docs, "Modifying a compute
  machine set": "changes are applied only to compute machines that are created after you save the updated
  MachineSet CR"). The AMI of an MCO-managed MachineSet is not applied at all (``ignore_changes``, and in a
  GitOps tree the ``nodefleet.io/controller-owned`` annotation Argo CD and Flux are configured from; the
  boot image controller owns it). Deleting a MachineSet deletes its machines.
* **HyperShift NodePool** (classic): a new release or platform field replaces every machine
  (``upgradeType: Replace``, paced by ``maxSurge``/``maxUnavailable``) or updates them in place
  (``InPlace``: drain and reboot).
* **MachineConfigPool**: a new ``osImageStream`` rebuilds the pool's nodes in place (MCO drain and
  reboot, paced by the pool's ``maxUnavailable``).

Control-plane ordering: HyperShift compares a NodePool's release with the *last completed* control-plane
version in ``HostedCluster.status.version.history`` and, when the pool is newer, only sets
``SupportedVersionSkew=False`` and keeps operating (openshift/hypershift ``api/hypershift/v1beta1``
``NodePoolSupportedVersionSkewConditionType``). A change that moves the HostedCluster and its nodes in one
step therefore rolls nodes onto a release their control plane has not finished; the forecast says so.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodefleet import kinds as k
from nodefleet.bootimages.releases import parse_release_image
from nodefleet.bootimages.versions import OCPVersion, VersionError, parse_ocp
from nodefleet.drift.karpenter_hash import UnhashableValue
from nodefleet.drift.rules import (
    AMI_DRIFT,
    NODE_CLASS_DRIFT,
    NODE_POOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    drift_reasons,
    ec2_node_class_static_view,
    hypershift_config_hash,
    hypershift_generated_ec2_node_class,
    karpenter_minor,
    node_pool_static_view,
)
from nodefleet.files import load_json
from nodefleet.render.gitops import ControllerOwnedError, controller_owned, json_pointer
from nodefleet.render.ignition import TARGET_CONFIG_VERSION_HASH, hypershift_stub, merge_headers, user_data

__all__ = [
    "IN_PLACE",
    "MAY_REPLACE",
    "NEW",
    "NEW_MACHINES_ONLY",
    "NO_ROLLOUT",
    "REMOVES",
    "REPLACES",
    "UNKNOWN",
    "ControllerState",
    "Forecast",
    "Item",
    "Obj",
    "Snapshot",
    "forecast",
    "snapshot_from_state",
]

#: Every existing node of the item is replaced (Karpenter drift, a HyperShift NodePool rollout).
REPLACES = "replaces nodes"
#: Existing nodes are updated in place (drain and reboot): HyperShift InPlace, an MCO OS stream change.
IN_PLACE = "updates nodes in place"
#: A MachineSet template change: existing machines stay as they are, new machines get the new template.
NEW_MACHINES_ONLY = "new machines only"
NO_ROLLOUT = "no rollout"
#: Nodes are replaced or not depending on what only AWS can tell (what selector terms resolve to).
MAY_REPLACE = "may replace nodes"
#: The item is new: nothing exists to replace.
NEW = "new"
#: The item is gone from the program: its nodes are removed with it.
REMOVES = "removes nodes"
#: The API server refuses the update (a transition rule, an immutable field): nothing changes on the cluster,
#: no node rolls, and the sync or ``pulumi up`` fails until the change is made another way.
CANNOT_APPLY = "cannot be applied"
#: Who applies a stack's objects: Argo CD or Flux from a render (render mode), which update an object in place,
#: or Pulumi (apply mode), which replaces an object whose ``replace_on_changes`` path changed.
GITOPS = "gitops"
PULUMI = "pulumi"
#: Nothing to compare with (first run, or no render/state found).
UNKNOWN = "unknown"

#: The OpenShift Karpenter fork hashes only ``TargetConfigVersionHash`` from this release line on.
CARRY_SINCE = (4, 22)
_HELD_CA = "-----BEGIN CERTIFICATE-----\nheld: the ignition-server CA is not part of a stack\n-----END CERTIFICATE-----\n"
_PAYLOAD_AMI = "ami-payload-held"


@dataclass(frozen=True)
class ControllerState:
    """What controllers write into node classes that no stack declares.

    A forecast of a stack change holds these constant on both sides (the default): they move without any
    change of the stack (HyperShift rotates the Ignition token every 5.5 h), and a forecast answers "what
    does *this change* roll". The drift benchmark passes the rotating values to check the model against its
    measured month.
    """

    token: str = "held"
    ca_pem: str = _HELD_CA
    #: The AMI HyperShift stamps from the release payload. Unknown offline; a release bump may change it
    #: too, which never changes the verdict (the userData's config hash already moves).
    payload_ami: str = _PAYLOAD_AMI
    #: Whether the hosted control plane's Karpenter has the OpenShift fork carry. None: decided by the
    #: control plane's release (4.22+ payloads carry it; 4.19-4.21 and the upstream fallback image do not).
    karpenter_carry: bool | None = None


@dataclass(frozen=True)
class Obj:
    """One Kubernetes object of a snapshot: the render target (cluster folder) it goes to, and its manifest."""

    target: str
    manifest: Mapping[str, Any]
    #: Property paths Pulumi ignores on update (known from the program or the state).
    ignore_changes: tuple[str, ...] = ()

    @property
    def controller_owned(self) -> frozenset[str]:
        """JSON pointers of the fields a controller owns: Pulumi's ``ignore_changes`` and, in a rendered
        manifest, its ``nodefleet.io/controller-owned`` annotation (what Argo CD and Flux are given)."""
        pointers = set(controller_owned(self.manifest))
        for path in self.ignore_changes:
            try:
                pointers.add(json_pointer(path))
            except ControllerOwnedError:
                continue  # a wildcard in someone else's state: no field nodefleet reasons about
        return frozenset(pointers)

    @property
    def cluster(self) -> str:
        """The render folder name, e.g. ``prod-east-hosted``: one Argo CD / Flux destination."""
        return self.target.rstrip("/").rsplit("/", 1)[-1]

    @property
    def meta(self) -> Mapping[str, Any]:
        return self.manifest.get("metadata") or {}

    @property
    def spec(self) -> Mapping[str, Any]:
        return self.manifest.get("spec") or {}

    @property
    def annotations(self) -> Mapping[str, str]:
        return self.meta.get("annotations") or {}

    @property
    def key(self) -> tuple[str, str, str, str, str]:
        group = str(self.manifest.get("apiVersion", "")).split("/", 1)[0]
        return (
            self.cluster,
            group,
            str(self.manifest.get("kind", "")),
            str(self.meta.get("namespace") or ""),
            str(self.meta.get("name") or ""),
        )


@dataclass(frozen=True)
class Snapshot:
    """The objects of one stack at one point, and where they were read from (said in every report)."""

    source: str
    objects: tuple[Obj, ...]
    controller: ControllerState = field(default_factory=ControllerState)

    def by_key(self) -> dict[tuple[str, str, str, str, str], Obj]:
        return {o.key: o for o in self.objects}


@dataclass(frozen=True)
class Item:
    """The verdict for one node source."""

    cluster: str
    kind: str
    name: str
    verdict: str
    reasons: tuple[str, ...]
    #: Nodes at stake, in words ("3 machines", "unknown: no limits.nodes").
    nodes: str
    #: The same as a number where it is known.
    node_count: int | None
    #: What rate-limits the replacement (a Drifted budget, maxSurge/maxUnavailable, nothing).
    paced_by: str
    #: The object itself is deleted and created again, not updated: its API refuses the change in place
    #: (a Karpenter NodePool switching between static and dynamic), so Pulumi replaces it, deleting it first.
    replaces_object: bool = False

    @property
    def rolls(self) -> bool:
        """Whether existing nodes are replaced or rebooted because of the change (or may be: what AWS resolves
        a changed selector to decides)."""
        return self.verdict in (REPLACES, MAY_REPLACE, IN_PLACE, REMOVES)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cluster": self.cluster,
            "kind": self.kind,
            "name": self.name,
            "verdict": self.verdict,
            "rolls": self.rolls,
            "reasons": list(self.reasons),
            "nodes": self.nodes,
            "nodeCount": self.node_count,
            "pacedBy": self.paced_by,
            "replacesObject": self.replaces_object,
        }

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Item:
        """The item :meth:`as_dict` wrote (``fleet`` reads each stack's ``forecast --json`` back)."""
        return cls(
            d["cluster"],
            d["kind"],
            d["name"],
            d["verdict"],
            tuple(d["reasons"]),
            d["nodes"],
            d["nodeCount"],
            d["pacedBy"],
            bool(d.get("replacesObject", False)),
        )


@dataclass(frozen=True)
class Forecast:
    #: Where the previous objects came from; None when nothing was found (first run).
    before: str | None
    after: str
    items: tuple[Item, ...]
    #: Stack-level findings: control-plane upgrades, nodes moving with their control plane, standing drift.
    notes: tuple[str, ...] = ()

    @property
    def rollouts(self) -> tuple[Item, ...]:
        return tuple(i for i in self.items if i.rolls)

    def as_dict(self) -> dict[str, Any]:
        return {
            "before": self.before,
            "after": self.after,
            "items": [i.as_dict() for i in self.items],
            "notes": list(self.notes),
            "rollouts": len(self.rollouts),
        }


# --- what each kind is ----------------------------------------------------------------------------------

_NODE_CLASS = "node class"
_KINDS = {
    ("karpenter.k8s.aws", "EC2NodeClass"): "EC2NodeClass",
    ("karpenter.hypershift.openshift.io", "OpenshiftEC2NodeClass"): "OpenshiftEC2NodeClass",
    ("karpenter.sh", "NodePool"): "NodePool (Karpenter)",
    ("machine.openshift.io", "MachineSet"): "MachineSet",
    ("hypershift.openshift.io", "NodePool"): "NodePool (HyperShift)",
    ("machineconfiguration.openshift.io", "MachineConfigPool"): "MachineConfigPool",
}
_ORDER = list(_KINDS.values())


def _kind_label(obj: Obj) -> str | None:
    return _KINDS.get((obj.key[1], obj.key[2]))


def _group(kind: k.Kind) -> tuple[str, str]:
    return (kind.api_version.split("/", 1)[0], kind.kind)


# --- small helpers --------------------------------------------------------------------------------------


def _canon(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)


def changed_paths(before: Any, after: Any, prefix: str = "") -> list[str]:
    """Dotted paths whose values differ (maps recursed, lists compared whole, an absent map is empty)."""
    if isinstance(before, Mapping) and after is None:
        after = {}
    if isinstance(after, Mapping) and before is None:
        before = {}
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            out += changed_paths(before.get(key), after.get(key), f"{prefix}.{key}" if prefix else str(key))
        return out
    return [] if _canon(before) == _canon(after) else [prefix or "(root)"]


def _short(value: Any) -> str:
    text = "absent" if value is _ABSENT else _canon(value)
    return text if len(text) <= 40 else text[:37] + "…"


_ABSENT: Any = object()


def differences(before: Any, after: Any, prefix: str = "") -> list[str]:
    """What differs between two values, absent and empty told apart: ``tags: {} → absent``.

    :func:`changed_paths` takes an absent map for an empty one (what a reader of the YAML means); Karpenter's
    ``Hash()`` does not (hashstructure hashes a nil map and an empty one differently), so a verdict the
    drift model reaches on such a difference is named with this."""
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        out: list[str] = []
        for key in sorted(set(before) | set(after), key=str):
            path = f"{prefix}.{key}" if prefix else str(key)
            a, b = before.get(key, _ABSENT), after.get(key, _ABSENT)
            if a is _ABSENT and isinstance(b, Mapping) and b:
                out += [_leaf(p, _ABSENT, v) for p, v in _leaves(b, path)]
            elif b is _ABSENT and isinstance(a, Mapping) and a:
                out += [_leaf(p, v, _ABSENT) for p, v in _leaves(a, path)]
            elif a is _ABSENT or b is _ABSENT:
                out.append(_leaf(path, a, b))
            else:
                out += differences(a, b, path)
        return out
    if _canon(before) == _canon(after) and type(before) is type(after):
        return []
    return [f"{prefix or '(root)'}: {_short(before)} → {_short(after)}"]


def _leaf(path: str, before: Any, after: Any) -> str:
    return f"{path}: {_short(before)} → {_short(after)}"


def _leaves(value: Mapping[str, Any], prefix: str) -> list[tuple[str, Any]]:
    """The innermost values of a map present on one side only (empty maps and lists included)."""
    out: list[tuple[str, Any]] = []
    for key in sorted(value, key=str):
        path = f"{prefix}.{key}"
        item = value[key]
        out += _leaves(item, path) if isinstance(item, Mapping) and item else [(path, item)]
    return out


def _paths_text(paths: Sequence[str], limit: int = 4) -> str:
    shown = ", ".join(paths[:limit])
    return shown + (f" and {len(paths) - limit} more" if len(paths) > limit else "")


def _num(value: Any) -> Any:
    """Numbers as a person writes them: state and the mock runtime carry integers as floats."""
    return int(value) if isinstance(value, float) and value.is_integer() else value


def _ocp(text: str | None) -> OCPVersion | None:
    if not text:
        return None
    try:
        return parse_ocp(str(text))
    except VersionError:
        return None


# --- HostedClusters and effective node classes ----------------------------------------------------------


@dataclass(frozen=True)
class _ControlPlane:
    ref: str  # namespace/name
    release: str | None
    infra_id: str
    instance_profile: str
    resource_tags: dict[str, str]

    @property
    def carry(self) -> bool:
        """Whether this control plane's Karpenter has the fork carry (hashes only TargetConfigVersionHash)."""
        version = _ocp(self.release)
        return version is not None and version.minor_key() >= CARRY_SINCE


def _carry(plane: _ControlPlane | None, controller: ControllerState) -> bool:
    if controller.karpenter_carry is not None:
        return controller.karpenter_carry
    return plane.carry if plane else False


def _control_planes(snapshot: Snapshot) -> dict[str, _ControlPlane]:
    found: dict[str, _ControlPlane] = {}
    for obj in snapshot.objects:
        if (obj.key[1], obj.key[2]) != _group(k.HOSTED_CLUSTER):
            continue
        release = obj.annotations.get(k.ANNOTATION_RELEASE)
        if not release:
            image = (obj.spec.get("release") or {}).get("image")
            try:
                release = str(parse_release_image(str(image))) if image else None
            except VersionError:
                release = None
        tags = {
            str(t.get("key")): str(t.get("value"))
            for t in ((obj.spec.get("platform") or {}).get("aws") or {}).get("resourceTags") or []
            if isinstance(t, Mapping)
        }
        ref = f"{obj.meta.get('namespace') or ''}/{obj.meta.get('name') or ''}"
        found[ref] = _ControlPlane(
            ref=ref,
            release=release,
            infra_id=str(obj.spec.get("infraID") or ""),
            instance_profile=str(obj.annotations.get(k.ANNOTATION_KARPENTER_INSTANCE_PROFILE) or ""),
            resource_tags=tags,
        )
    return found


def _stub(ref: str, node_class: str, release: str, controller: ControllerState) -> str:
    namespace, _, name = ref.partition("/")
    return user_data(
        hypershift_stub(
            f"ignition-server-{namespace}-{name}.apps.management",
            token=controller.token,
            ca_pem=controller.ca_pem,
            node_pool=f"{namespace}-{name}/{node_class}-karpenter",
            config_hash=hypershift_config_hash(release=release),
        )
    )


@dataclass(frozen=True)
class _Effective:
    """The EC2NodeClass Karpenter hashes for a declared node class, and what it depends on."""

    manifest: dict[str, Any]
    release: str | None
    #: Karpenter hashes only TargetConfigVersionHash (OpenShift fork, 4.22+ payloads).
    carry: bool
    control_plane: _ControlPlane | None
    follows_control_plane: bool
    how: str


def _effective_class(obj: Obj, snapshot: Snapshot) -> _Effective:
    """What Karpenter sees for a declared node class: the class itself, or what HyperShift makes of it."""
    planes = _control_planes(snapshot)
    plane = planes.get(str(obj.annotations.get(k.ANNOTATION_HOSTED_CLUSTER) or ""))
    name = str(obj.meta.get("name") or "")
    if obj.key[2] == k.OPENSHIFT_EC2_NODE_CLASS.kind:
        pinned = obj.spec.get("version")
        release = str(pinned) if pinned else (plane.release if plane else None)
        ref = plane.ref if plane else "unknown/unknown"
        generated = hypershift_generated_ec2_node_class(
            obj.manifest,
            user_data=_stub(ref, name, release or "unknown", snapshot.controller),
            ami=snapshot.controller.payload_ami,
            instance_profile=plane.instance_profile if plane else "",
            infra_id=plane.infra_id if plane else "",
            resource_tags=plane.resource_tags if plane else None,
        )
        return _Effective(
            generated,
            release,
            _carry(plane, snapshot.controller),
            plane,
            not pinned,
            "generated by HyperShift from the OpenshiftEC2NodeClass",
        )
    mode = obj.annotations.get(k.ANNOTATION_USERDATA_MODE)
    if mode == k.USERDATA_MODE_LEGACY:
        release = plane.release if plane else obj.annotations.get(k.ANNOTATION_RELEASE)
        manifest = {**obj.manifest, "spec": dict(obj.spec)}
        # ignore_changes leaves both fields to HyperShift, which writes its stub and the payload's AMI.
        manifest["spec"]["userData"] = _stub(
            plane.ref if plane else "unknown/unknown",
            name,
            str(release or "unknown"),
            snapshot.controller,
        )
        manifest["spec"]["amiSelectorTerms"] = [{"id": snapshot.controller.payload_ami}]
        return _Effective(
            manifest,
            release,
            _carry(plane, snapshot.controller),
            plane,
            True,
            "userData and AMI rewritten by HyperShift",
        )
    # Self-managed (S3 pointer) or written by hand: Karpenter hashes exactly what is declared. Its image is
    # not known from the stack, so upstream hashing (the whole userData) is assumed; a pointer never rotates.
    return _Effective(dict(obj.manifest), obj.annotations.get(k.ANNOTATION_RELEASE), False, None, False, "")


def _user_data_reason(before: str, after: str) -> str:
    old_hash = merge_headers(before).get(TARGET_CONFIG_VERSION_HASH)
    new_hash = merge_headers(after).get(TARGET_CONFIG_VERSION_HASH)
    if old_hash and new_hash and old_hash != new_hash:
        return f"userData: {TARGET_CONFIG_VERSION_HASH} {old_hash} → {new_hash}"
    old_src = _merge_source(before)
    new_src = _merge_source(after)
    if old_src and new_src and old_src != new_src:
        return f"userData: Ignition pointer {old_src} → {new_src}"
    return "userData changed"


def _merge_source(text: str) -> str | None:
    try:
        config = load_json(text, "userData")
        return str(config["ignition"]["config"]["merge"][0]["source"])
    except (ValueError, KeyError, IndexError, TypeError):
        return None


# --- budgets and nodes at stake ------------------------------------------------------------------------


def scaled_count(value: Any, total: int, *, round_up: bool) -> int | None:
    """Kubernetes' ``intstr.GetScaledValueFromIntOrPercent``: a whole number as is, ``"N%"`` of ``total``
    rounded up or down; None for anything else. Karpenter reads a budget's ``nodes`` string as a number when
    it parses as one (``GetIntStrFromValue``)."""
    text = str(value).strip()
    if text.endswith("%") and text[:-1].isdigit():
        share = int(text[:-1]) * total
        return -(-share // 100) if round_up else share // 100
    return int(text) if text.isdigit() else None


def _nodes(n: int) -> str:
    return f"{n} node{'' if n == 1 else 's'}"


#: Karpenter's rounding of a percentage budget (kubernetes-sigs/karpenter pkg/apis/v1/nodepool.go,
#: ``Budget.GetAllowedDisruptions``: ``GetScaledValueFromIntOrPercent(..., numNodes, true)``).
KARPENTER_ROUNDING = "Karpenter rounds a percentage up"


def _budget_text(nodes: Any, count: int | None, bound: bool) -> tuple[str, int | None]:
    """One budget's ``nodes`` in nodes at a time, for a pool of ``count`` nodes (an upper bound if ``bound``)."""
    value = str(nodes)
    if not value.endswith("%"):
        n = scaled_count(value, 0, round_up=True)
        return (f"{_nodes(n)} at a time" if n is not None else f"{value} at a time"), n
    if count is None:
        if value == "0%":
            return "0% = 0 nodes at a time", 0
        return f"{value} of the pool's nodes at a time, at least 1 while it has any", None
    n = scaled_count(value, count, round_up=True)
    if n is None:
        return f"{value} at a time", None
    of = f"at most {count}" if bound else str(count)
    return f"{value} of {of} nodes = {'at most ' if bound and n else ''}{n} at a time", n


def _drift_budgets(pool: Mapping[str, Any], count: int | None = None, bound: bool = False) -> list[str]:
    """The budgets that pace Drifted replacement, each in nodes at a time where the pool's size is known."""
    out = []
    for budget in ((pool.get("spec") or {}).get("disruption") or {}).get("budgets") or []:
        reasons = budget.get("reasons")
        if reasons and "Drifted" not in reasons:
            continue
        text, _ = _budget_text(budget.get("nodes", "10%"), count, bound)
        if budget.get("schedule"):
            text = f"{text.removesuffix(' at a time')} during '{budget['schedule']}' for {budget.get('duration')}"
        out.append(text)
    if not out:
        text, _ = _budget_text("10%", count, bound)
        out = [f"{text} (Karpenter's default budget)"]
    if any("%" in t for t in out):
        out[-1] += f" ({KARPENTER_ROUNDING})"
    return out


def _pool_nodes(pool: Mapping[str, Any]) -> tuple[str, int | None]:
    """The nodes of a Karpenter NodePool, and how that number was come by."""
    spec = pool.get("spec") or {}
    replicas = _num(spec.get("replicas"))
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        return f"{_nodes(replicas)} (static pool: spec.replicas)", replicas
    limits = spec.get("limits") or {}
    if "nodes" in limits:
        try:
            n = int(str(limits["nodes"]))
            return (
                f"at most {n} (estimated from limits.nodes: a dynamic pool runs only the nodes pending pods "
                "need, up to that limit)",
                n,
            )
        except ValueError:
            pass
    bounds = ", ".join(f"{key} {value}" for key, value in sorted(limits.items()))
    return ("unknown: Karpenter launches on demand" + (f" (limits: {bounds})" if bounds else "")), None


def _pool_bound(pool: Mapping[str, Any]) -> bool:
    """Whether the pool's node count is an upper bound (a dynamic pool's limits.nodes), not the count."""
    return "replicas" not in (pool.get("spec") or {})


def _pools_of_class(obj: Obj, snapshot: Snapshot) -> list[Obj]:
    name = obj.meta.get("name")
    return [
        o
        for o in snapshot.objects
        if (o.key[1], o.key[2]) == _group(k.KARPENTER_NODE_POOL)
        and o.cluster == obj.cluster
        and ((o.spec.get("template") or {}).get("spec") or {}).get("nodeClassRef", {}).get("name") == name
    ]


def _class_nodes_and_pace(obj: Obj, snapshot: Snapshot) -> tuple[str, int | None, str]:
    pools = _pools_of_class(obj, snapshot)
    if not pools:
        return "unknown: no NodePool references this class", None, "nothing (no NodePool)"
    counts = [_pool_nodes(p.manifest) for p in pools]
    known = [n for _, n in counts]
    total = sum(n for n in known if n is not None) if all(n is not None for n in known) else None
    bound = any(_pool_bound(p.manifest) for p in pools)
    if total is None:
        nodes = "unknown: Karpenter launches on demand (no limits.nodes)"
    elif bound:
        nodes = (
            f"at most {total} (estimated from the limits.nodes of "
            f"{', '.join(str(p.meta.get('name')) for p in pools)}: dynamic pools run only the nodes pending "
            "pods need)"
        )
    else:
        nodes = f"{_nodes(total)} (static pools: spec.replicas)"
    pace = "; ".join(
        f"NodePool {p.meta.get('name')}: {', '.join(_drift_budgets(p.manifest, n, _pool_bound(p.manifest)))}"
        for p, (_, n) in zip(pools, counts, strict=True)
    )
    return nodes, total, pace


def _machine_set_nodes(spec: Mapping[str, Any]) -> tuple[str, int | None]:
    replicas = _num(spec.get("replicas"))
    if isinstance(replicas, int | float):
        return f"{int(replicas)} machine{'' if int(replicas) == 1 else 's'}", int(replicas)
    return "unknown (no replicas)", None


def _hypershift_nodes(spec: Mapping[str, Any]) -> tuple[str, int | None]:
    if spec.get("autoScaling"):
        scale = spec["autoScaling"]
        return f"{scale.get('min')}..{scale.get('max')} (autoScaling)", None
    return _machine_set_nodes(spec)


# --- per kind ------------------------------------------------------------------------------------------


def _node_class_item(before: Obj, after: Obj, old: Snapshot, new: Snapshot, label: str) -> Item:
    eff_old = _effective_class(before, old)
    eff_new = _effective_class(after, new)
    nodes, count, pace = _class_nodes_and_pace(after, new)
    # The Karpenter running after the change decides how userData is hashed; the one before stamped the nodes.
    try:
        reasons_raw = drift_reasons(
            eff_old.manifest,
            eff_new.manifest,
            carry=eff_new.carry,
            karpenter=karpenter_minor(after.manifest),
            launched_by=karpenter_minor(before.manifest),
        )
    except UnhashableValue as e:
        return _unhashable_item(after, label, e, nodes, count, pace)
    reasons: list[str] = []
    if NODE_CLASS_DRIFT in reasons_raw:
        view_old = ec2_node_class_static_view(eff_old.manifest["spec"], carry=eff_new.carry)
        view_new = ec2_node_class_static_view(eff_new.manifest["spec"], carry=eff_new.carry)
        for path in changed_paths(view_old, view_new):
            top = path.split(".", 1)[0]
            if top == "userData":
                text = _user_data_reason(
                    str(eff_old.manifest["spec"].get("userData", "")),
                    str(eff_new.manifest["spec"].get("userData", "")),
                )
                if eff_old.release != eff_new.release and eff_new.release:
                    text += f" (release {eff_old.release} → {eff_new.release})"
                if text not in reasons:
                    reasons.append(text)
            elif f"{top} changed" not in reasons and not any(r.startswith(top) for r in reasons):
                reasons.append(f"{path} changed")
        if not reasons:
            # No value changed as a reader sees it, yet the hash did: a map or list present on one side and
            # absent on the other (Go hashes an empty map and none apart), or a value Go decodes differently.
            found = differences(view_old, view_new, "spec")
            reasons.append(
                f"{_paths_text(found)} (Karpenter's hash tells these apart)"
                if found
                else "the hashed spec differs as Karpenter decodes it, though no field does as written"
            )
    if AMI_DRIFT in reasons_raw:
        old_terms = eff_old.manifest["spec"].get("amiSelectorTerms")
        new_terms = eff_new.manifest["spec"].get("amiSelectorTerms")
        reasons.append(f"AMI {_ami_text(old_terms)} → {_ami_text(new_terms)}")
    selectors, known = _selector_drift(before, eff_old.manifest, eff_new.manifest)
    if reasons_raw:
        how = f" ({eff_new.how})" if eff_new.how else ""
        return Item(
            after.cluster,
            label,
            str(after.meta.get("name")),
            REPLACES,
            (*reasons, f"Karpenter drift{how}", *selectors),
            nodes,
            count,
            pace,
        )
    if selectors:
        verdict = REPLACES if known else MAY_REPLACE
        return Item(after.cluster, label, str(after.meta.get("name")), verdict, selectors, nodes, count, pace)
    quiet = _quiet_changes(before.manifest, after.manifest)
    return Item(after.cluster, label, str(after.meta.get("name")), NO_ROLLOUT, quiet, nodes, count, pace)


def _term_values(terms: Any, field: str) -> frozenset[str] | None:
    """The ``field`` (id, name) of every selector term when each term names one and nothing else; None when
    a term selects by tags (or anything else only AWS can resolve)."""
    if not isinstance(terms, list) or not terms:
        return None
    out = set()
    for term in terms:
        if not isinstance(term, Mapping) or set(term) != {field} or not term.get(field):
            return None
        out.add(str(term[field]))
    return frozenset(out)


def _status_values(manifest: Mapping[str, Any], key: str, field: str) -> frozenset[str] | None:
    status = manifest.get("status")
    items = status.get(key) if isinstance(status, Mapping) else None
    if not isinstance(items, list) or not items:
        return None
    values = [str(i.get(field)) for i in items if isinstance(i, Mapping) and i.get(field)]
    return frozenset(values) if len(values) == len(items) else None


def _resolved(
    spec: Mapping[str, Any], manifest: Mapping[str, Any], terms: str, status_key: str
) -> tuple[frozenset[str] | None, str]:
    """The ids the old terms resolved to, and how that is known: terms naming ids, else the render's status."""
    ids = _term_values(spec.get(terms), "id")
    if ids is not None:
        return ids, f"{terms} by id"
    return _status_values(manifest, status_key, "id"), f"from the render's status.{status_key}"


def _listed(values: Iterable[str]) -> str:
    return ", ".join(sorted(values))


def _selector_drift(
    before: Obj, old: Mapping[str, Any], new: Mapping[str, Any]
) -> tuple[tuple[str, ...], bool]:
    """What a change of the subnet or security group selector terms does, and whether nodes are known to
    drift (else it depends on AWS).

    Karpenter hashes neither (``hash:"ignore"``): it resolves them into the class's status and, per node,
    compares the instance with it (aws/karpenter-provider-aws ``pkg/cloudprovider/drift.go``): a node in a
    subnet the status no longer lists drifts (``SubnetDrift``), and a node whose security groups are not
    exactly the status's set drifts (``SecurityGroupDrift``). What the terms resolve to is known here only
    where they name ids (and, for the old side, from a ``status`` the render carries); otherwise the answer
    depends on AWS, and is said so.
    """
    reasons: list[str] = []
    known = False
    old_spec, new_spec = old.get("spec") or {}, new.get("spec") or {}
    status_of = before.manifest  # a render exported from the cluster carries what Karpenter resolved
    if _canon(old_spec.get("subnetSelectorTerms")) != _canon(new_spec.get("subnetSelectorTerms")):
        was, source = _resolved(old_spec, status_of, "subnetSelectorTerms", "subnets")
        now = _term_values(new_spec.get("subnetSelectorTerms"), "id")
        if was is not None and now is not None:
            gone = was - now
            if gone:
                known = True
                reasons.append(
                    f"subnetSelectorTerms: subnets {_listed(gone)} no longer selected: the nodes in them are "
                    "replaced (SubnetDrift); nodes in " + (_listed(was & now) or "no other subnet") + " stay"
                )
        else:
            source = "" if was is None else f" (now {_listed(was)}, {source})"
            reasons.append(
                "subnetSelectorTerms changed: nodes in a subnet the new terms no longer select are replaced "
                f"(SubnetDrift), the others stay; which subnets they select only AWS can tell{source}: "
                "`aws ec2 describe-subnets` with the terms' filters, or the class's status.subnets after apply"
            )
    if _canon(old_spec.get("securityGroupSelectorTerms")) != _canon(
        new_spec.get("securityGroupSelectorTerms")
    ):
        was, source = _resolved(old_spec, status_of, "securityGroupSelectorTerms", "securityGroups")
        now = _term_values(new_spec.get("securityGroupSelectorTerms"), "id")
        if was is not None and now is not None:
            if was != now:
                known = True
                reasons.append(
                    f"securityGroupSelectorTerms: security groups {_listed(was)} → {_listed(now)}: every node "
                    "of the class is replaced (SecurityGroupDrift: a node's groups must be exactly the set the "
                    "terms select)"
                )
        else:
            source = "" if was is None else f" (now {_listed(was)}, {source})"
            reasons.append(
                "securityGroupSelectorTerms changed: if the new terms select another set of security groups, "
                "every node of the class is replaced (SecurityGroupDrift: a node's groups must be exactly the "
                f"set), else none; which groups they select only AWS can tell{source}: `aws ec2 "
                "describe-security-groups` with the terms' filters, or the class's status.securityGroups after apply"
            )
    return tuple(reasons), known


def _unhashable_item(
    after: Obj, label: str, e: UnhashableValue, nodes: str, count: int | None, pace: str
) -> Item:
    """A node source whose hash cannot be computed: a value Karpenter could not decode either (the API server
    refuses it first, and `check` names it), or a Go type the model does not cover. Unknown, never a guess."""
    return Item(
        after.cluster,
        label,
        str(after.meta.get("name")),
        UNKNOWN,
        (f"its drift hash cannot be computed: {e}; `check` names the field the API server refuses",),
        nodes,
        count,
        pace,
    )


def _ami_text(terms: Any) -> str:
    ids = [str(t["id"]) for t in terms or [] if isinstance(t, Mapping) and t.get("id")]
    return ",".join(ids) if ids else "selector"


def _requirements(spec: Mapping[str, Any]) -> Any:
    return ((spec.get("template") or {}).get("spec") or {}).get("requirements")


def _quiet_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> tuple[str, ...]:
    paths = changed_paths(before, after) or differences(before, after)
    if not paths:
        return ("unchanged",)
    return (f"changes outside what drifts nodes: {_paths_text(paths)}",)


def _provisioning_switch(before: Obj, after: Obj) -> str | None:
    """Why a NodePool switching between static (``spec.replicas``) and dynamic provisioning is replaced; None
    when it does not switch."""
    was, becomes = "replicas" in before.spec, "replicas" in after.spec
    if was == becomes:
        return None
    switch = (
        "switches from dynamic to static provisioning (spec.replicas added)"
        if becomes
        else "switches from static to dynamic provisioning (spec.replicas removed)"
    )
    then = (
        f"then the static pool launches {_pool_nodes(after.manifest)[0]}"
        if becomes
        else "then the dynamic pool launches nodes only for pending pods"
    )
    return (
        f"{switch}: the NodePool API refuses that in place (has(self.replicas) == has(oldSelf.replicas)), so the "
        "pool is deleted and created again (Pulumi replaces it, deleting it first) and Karpenter drains and "
        f"terminates every node of it; {then}"
    )


def _update_refusal(before: Obj, after: Obj) -> list[str]:
    """What the API server says when it refuses to update ``before`` to ``after`` where it would accept
    ``after`` as a new object (transition rules, immutable fields): crd-schema's verdict with the previous
    object; empty when the update is accepted, ``after`` is refused as a new object too (``check`` reports
    that), or the kind has no shipped CRD."""
    from nodefleet.apiserver.schema import validate_object
    from nodefleet.apiserver.store import KarpenterSetError, load_index

    try:
        crd = load_index().for_object(
            str(after.manifest.get("apiVersion", "")),
            str(after.manifest.get("kind", "")),
            after.annotations.get(k.ANNOTATION_KARPENTER),
        )
    except KarpenterSetError:
        return []
    if crd is None:
        return []
    as_update = [f for f in validate_object(after.manifest, crd, old=before.manifest) if f.blocking]
    if not as_update:
        return []
    if any(f.blocking for f in validate_object(after.manifest, crd)):
        return []  # refused as a new object too: `check` says why; the forecast judges the change itself
    return [str(f).split("\n")[0] for f in as_update]


def _refused_item(before: Obj, after: Obj, label: str, refusal: Sequence[str], why: str = "") -> Item:
    """An update the API server refuses: the object, and so its nodes, stay as they are."""
    nodes, count = (
        _pool_nodes(before.manifest)
        if label == "NodePool (Karpenter)"
        else ("unchanged: nothing is applied", None)
    )
    return Item(
        after.cluster,
        label,
        str(after.meta.get("name")),
        CANNOT_APPLY,
        (
            *([why] if why else []),
            *(f"the API server refuses the update: {r}" for r in refusal[:3]),
        ),
        nodes,
        count,
        "nothing: the object is not changed",
    )


def _karpenter_pool_item(before: Obj, after: Obj, new: Snapshot, deployer: str) -> Item:
    name = str(after.meta.get("name"))
    switch = _provisioning_switch(before, after)
    refusal = [] if switch and deployer == PULUMI else _update_refusal(before, after)
    if refusal:
        why = (
            f"{switch.split(':')[0]}: Argo CD and Flux update the pool in place, which the NodePool API refuses, "
            "so the sync fails and no node changes; delete the NodePool first (its nodes go with it), then sync"
            if switch
            else ""
        )
        return _refused_item(before, after, "NodePool (Karpenter)", refusal, why)
    if switch and deployer == PULUMI:
        # The old pool's nodes go, whatever its budgets said: they are deleted with it.
        nodes, count = _pool_nodes(before.manifest)
        return Item(
            after.cluster,
            "NodePool (Karpenter)",
            name,
            REPLACES,
            (switch,),
            nodes,
            count,
            "nothing: the pool's disruption budgets are deleted with it",
            replaces_object=True,
        )
    nodes, count = _pool_nodes(after.manifest)
    pace = ", ".join(_drift_budgets(after.manifest, count, _pool_bound(after.manifest)))
    try:
        reasons_raw = drift_reasons(
            before.manifest,
            after.manifest,
            karpenter=karpenter_minor(after.manifest),
            launched_by=karpenter_minor(before.manifest),
        )
    except UnhashableValue as e:
        return _unhashable_item(after, "NodePool (Karpenter)", e, nodes, count, pace)
    reasons: list[str] = []
    if NODE_POOL_DRIFTED in reasons_raw:
        old_view, new_view = node_pool_static_view(before.spec), node_pool_static_view(after.spec)
        paths = changed_paths(old_view, new_view, "spec.template") or differences(
            old_view, new_view, "spec.template"
        )
        reasons.append(
            f"NodePool template: {_paths_text(paths)}"
            if paths
            else "NodePool template: the hashed template differs as Karpenter decodes it, though no field "
            "does as written"
        )
    if REQUIREMENTS_DRIFTED in reasons_raw:
        reasons.append(
            "requirements narrowed: nodes that no longer match are drifted (only those; counted as a rollout)"
        )
    if reasons_raw:
        return Item(after.cluster, "NodePool (Karpenter)", name, REPLACES, tuple(reasons), nodes, count, pace)
    quiet = _quiet_changes(before.manifest, after.manifest)
    if _canon(_requirements(before.spec)) != _canon(_requirements(after.spec)):
        quiet = (
            *quiet,
            "requirements changed, yet every node launched under the old ones meets the new ones, so none "
            "drifts (Karpenter labels a node only with the custom keys its NodePool sets, and a node without a "
            "key meets NotIn and DoesNotExist on it)",
        )
    behaviour = [
        p
        for p in changed_paths(before.spec, after.spec, "spec")
        if p.split(".")[1] in ("disruption", "limits", "weight")
    ]
    if behaviour:
        quiet = (*quiet, "disruption, limits and weight are outside the template and never drift nodes")
    return Item(after.cluster, "NodePool (Karpenter)", name, NO_ROLLOUT, quiet, nodes, count, pace)


_MACHINE_SET_PACE = (
    "none: the machine-api never rolls a MachineSet; existing machines are replaced only when deleted "
    "(scale down and up, `oc delete machine`, MachineHealthCheck remediation)"
)


def _machine_set_item(before: Obj, after: Obj) -> Item:
    managed = (
        after.annotations.get(k.ANNOTATION_OWNER) == "mco"
        or json_pointer(k.AMI_PATH) in after.controller_owned
        or before.annotations.get(k.ANNOTATION_OWNER) == "mco"
    )
    old_t = dict(before.spec.get("template") or {})
    new_t = dict(after.spec.get("template") or {})
    paths = changed_paths(old_t, new_t, "spec.template")
    ami_path = "spec.template.spec.providerSpec.value.ami.id"
    notes: list[str] = []
    if managed and any(p.startswith("spec.template.spec.providerSpec.value.ami") for p in paths):
        notes.append(
            "AMI owned by the MCO boot image controller: Pulumi ignores it (ignore_changes) and so do "
            "Argo CD and Flux (the rendered nodefleet.io/controller-owned annotation), so the declared AMI "
            "is not applied and nothing rolls"
        )
        paths = [p for p in paths if not p.startswith("spec.template.spec.providerSpec.value.ami")]
    nodes, count = _machine_set_nodes(before.spec)
    name = str(after.meta.get("name"))
    if paths:
        reasons = []
        if ami_path in paths:
            reasons.append(
                f"AMI {_get(before.spec, ami_path)} → {_get(after.spec, ami_path)}"
                + _rhcos_change(before, after)
            )
        others = [p for p in paths if p != ami_path]
        if others:
            reasons.append(f"template: {_paths_text(others)}")
        reasons.append(
            f"{_running(count)} the old template; only machines created from now on get the new one"
        )
        return Item(
            after.cluster,
            "MachineSet",
            name,
            NEW_MACHINES_ONLY,
            (*notes, *reasons),
            nodes,
            count,
            _MACHINE_SET_PACE,
        )
    old_r, new_r = before.spec.get("replicas"), after.spec.get("replicas")
    if old_r != new_r:
        notes.append(f"scales {_num(old_r)} → {_num(new_r)} machines (no replacement)")
    quiet = notes or list(_quiet_changes(before.manifest, after.manifest))
    return Item(after.cluster, "MachineSet", name, NO_ROLLOUT, tuple(quiet), nodes, count, _MACHINE_SET_PACE)


def _rhcos_change(before: Obj, after: Obj) -> str:
    old = before.annotations.get(k.ANNOTATION_RHCOS)
    new = after.annotations.get(k.ANNOTATION_RHCOS)
    return f" (RHCOS {old} → {new})" if old and new and old != new else ""


def _get(spec: Mapping[str, Any], dotted: str) -> Any:
    value: Any = {"spec": spec}
    for part in dotted.split("."):
        value = value.get(part) if isinstance(value, Mapping) else None
    return value


def _hypershift_pool_item(before: Obj, after: Obj) -> Item:
    old_s, new_s = before.spec, after.spec
    management = new_s.get("management") or {}
    in_place = management.get("upgradeType") == "InPlace"
    nodes, count = _hypershift_nodes(old_s)
    pace = _hypershift_pace(management, count)
    reasons = []
    old_img = (old_s.get("release") or {}).get("image")
    new_img = (new_s.get("release") or {}).get("image")
    if old_img != new_img:
        reasons.append(f"release {_release_text(old_img)} → {_release_text(new_img)}")
    platform = changed_paths(old_s.get("platform"), new_s.get("platform"), "spec.platform")
    if platform:
        reasons.append(f"machine template: {_paths_text(platform)}")
    name = str(after.meta.get("name"))
    if reasons:
        verdict = IN_PLACE if in_place and not platform else REPLACES
        return Item(after.cluster, "NodePool (HyperShift)", name, verdict, tuple(reasons), nodes, count, pace)
    quiet: list[str] = []
    old_r, new_r = old_s.get("replicas"), new_s.get("replicas")
    if old_r != new_r:
        quiet.append(f"scales {_num(old_r)} → {_num(new_r)} (no replacement)")
    return Item(
        after.cluster,
        "NodePool (HyperShift)",
        name,
        NO_ROLLOUT,
        tuple(quiet) or _quiet_changes(before.manifest, after.manifest),
        nodes,
        count,
        pace,
    )


def _hypershift_pace(management: Mapping[str, Any], count: int | None) -> str:
    """How fast a HyperShift NodePool rolls, in nodes where its size is known.

    Replace is a Cluster API MachineDeployment rolling update: ``maxSurge`` rounds up, ``maxUnavailable``
    down, and both 0 means 1 unavailable (cluster-api ``mdutil.ResolveFenceposts``). InPlace drains and
    reboots ``maxUnavailable`` nodes at a time, rounded down and at least 1 (hypershift
    ``getInPlaceMaxUnavailable``).
    """
    if management.get("upgradeType") == "InPlace":
        value = _num((management.get("inPlace") or {}).get("maxUnavailable", 1))
        text = f"HyperShift InPlace: nodes drained and rebooted (maxUnavailable {value})"
        n = scaled_count(value, count, round_up=False) if count is not None else None
        if n is None or count is None:
            return text
        return f"{text}: {value} of {_nodes(count)} = {max(n, 1)} at a time (rounded down, at least 1)"
    rolling = (management.get("replace") or {}).get("rollingUpdate") or {}
    surge_v, unavailable_v = _num(rolling.get("maxSurge", 1)), _num(rolling.get("maxUnavailable", 0))
    text = f"HyperShift Replace: maxSurge {surge_v}, maxUnavailable {unavailable_v}"
    if count is None:
        return text
    surge = scaled_count(surge_v, count, round_up=True)
    unavailable = scaled_count(unavailable_v, count, round_up=False)
    if surge is None or unavailable is None:
        return text
    if surge == 0 and unavailable == 0:
        unavailable = 1
    return (
        f"{text} of {_nodes(count)} = {surge + unavailable} replaced at a time ({surge} extra, {unavailable} "
        "unavailable; maxSurge rounds up, maxUnavailable down)"
    )


def _mcp_nodes(pool: Obj, snapshot: Snapshot) -> tuple[str, int | None]:
    """A MachineConfigPool's nodes, estimated from the MachineSets of the stack labelled for its role."""
    role = f"node-role.kubernetes.io/{pool.meta.get('name')}"
    sets = [
        o
        for o in snapshot.objects
        if _kind_label(o) == "MachineSet"
        and o.cluster == pool.cluster
        and role
        in ((((o.spec.get("template") or {}).get("spec") or {}).get("metadata") or {}).get("labels") or {})
    ]
    counts = [_machine_set_nodes(o.spec)[1] for o in sets]
    if not sets or any(c is None for c in counts):
        return "every node of the pool (no MachineSet of this stack declares how many)", None
    total = sum(c for c in counts if c is not None)
    return (
        f"{_nodes(total)} (estimated from the replicas of the MachineSets labelled {role}; nodes added to the "
        "pool otherwise are not counted)",
        total,
    )


def _mcp_pace(pool: Obj, count: int | None) -> str:
    """The MCO updates ``maxUnavailable`` nodes of a pool at a time: default 1, a percentage rounded down,
    at least 1 (machine-config-operator pkg/controller/node/node_controller.go, ``maxUnavailable``)."""
    value = _num(pool.spec.get("maxUnavailable", 1))
    if count is None:
        return (
            f"the pool's maxUnavailable {value} (the MCO rounds a percentage down, at least 1 node at a time)"
        )
    n = scaled_count(value, count, round_up=False)
    if n is None:
        return f"the pool's maxUnavailable {value}"
    return f"maxUnavailable {value} of {_nodes(count)} = {max(n, 1)} at a time (rounded down, at least 1)"


def _release_text(image: Any) -> str:
    if not image:
        return "(none)"
    try:
        return str(parse_release_image(str(image)))
    except VersionError:
        return str(image)


def _pool_item(before: Obj, after: Obj, snapshot: Snapshot) -> Item:
    old = (before.spec.get("osImageStream") or {}).get("name") or "inherited"
    new = (after.spec.get("osImageStream") or {}).get("name") or "inherited"
    name = str(after.meta.get("name"))
    nodes, count = _mcp_nodes(after, snapshot)
    pace = _mcp_pace(after, count)
    if old != new:
        return Item(
            after.cluster,
            "MachineConfigPool",
            name,
            IN_PLACE,
            (f"osImageStream {old} → {new}: the MCO rebuilds every node of the pool on the new OS",),
            nodes,
            count,
            pace,
        )
    return Item(
        after.cluster,
        "MachineConfigPool",
        name,
        NO_ROLLOUT,
        _quiet_changes(before.manifest, after.manifest),
        nodes,
        count,
        pace,
    )


def _compare(before: Obj, after: Obj, old: Snapshot, new: Snapshot, deployer: str = GITOPS) -> Item | None:
    label = _kind_label(after)
    if label == "NodePool (Karpenter)":
        return _karpenter_pool_item(before, after, new, deployer)
    if label is not None:
        refusal = _update_refusal(before, after)
        if refusal:
            return _refused_item(before, after, label, refusal)
    if label in ("EC2NodeClass", "OpenshiftEC2NodeClass"):
        return _node_class_item(before, after, old, new, label)
    if label == "MachineSet":
        return _machine_set_item(before, after)
    if label == "NodePool (HyperShift)":
        return _hypershift_pool_item(before, after)
    if label == "MachineConfigPool":
        return _pool_item(before, after, new)
    return None


def _added(obj: Obj, snapshot: Snapshot) -> Item:
    label = _kind_label(obj) or obj.key[2]
    name = str(obj.meta.get("name"))
    if label in ("EC2NodeClass", "OpenshiftEC2NodeClass"):
        nodes, count, pace = _class_nodes_and_pace(obj, snapshot)
        return Item(obj.cluster, label, name, NEW, ("new node class: no nodes yet",), nodes, count, pace)
    if label == "NodePool (Karpenter)":
        nodes, count = _pool_nodes(obj.manifest)
        return Item(
            obj.cluster, label, name, NEW, ("new NodePool: nodes launch on demand",), nodes, count, ""
        )
    if label == "MachineSet":
        nodes, count = _machine_set_nodes(obj.spec)
        return Item(obj.cluster, label, name, NEW, (f"creates {nodes}",), nodes, count, _MACHINE_SET_PACE)
    if label == "MachineConfigPool":
        why = "new pool: no nodes until a MachineSet or node class boots into it"
        return Item(obj.cluster, label, name, NEW, (why,), "none yet", 0, "")
    nodes, count = _hypershift_nodes(obj.spec)
    return Item(obj.cluster, label, name, NEW, ("new: creates its nodes",), nodes, count, "")


def _removed(obj: Obj, snapshot: Snapshot) -> Item:
    label = _kind_label(obj) or obj.key[2]
    name = str(obj.meta.get("name"))
    if label in ("EC2NodeClass", "OpenshiftEC2NodeClass"):
        nodes, count, pace = _class_nodes_and_pace(obj, snapshot)
        why = "node class removed: Karpenter terminates the nodes it launched from it"
        return Item(obj.cluster, label, name, REMOVES, (why,), nodes, count, pace)
    if label == "NodePool (Karpenter)":
        nodes, count = _pool_nodes(obj.manifest)
        why = "NodePool removed: Karpenter drains and terminates all of its nodes (budgets do not apply)"
        return Item(obj.cluster, label, name, REMOVES, (why,), nodes, count, "nothing")
    if label == "MachineSet":
        nodes, count = _machine_set_nodes(obj.spec)
        why = "MachineSet removed: its machines are deleted with it (nodes drained)"
        return Item(obj.cluster, label, name, REMOVES, (why,), nodes, count, "nothing")
    if label == "MachineConfigPool":
        why = "pool removed: its nodes fall back to worker (MCO reboots them into the worker config)"
        nodes, count = _mcp_nodes(obj, snapshot)
        return Item(obj.cluster, label, name, IN_PLACE, (why,), nodes, count, "")
    nodes, count = _hypershift_nodes(obj.spec)
    return Item(
        obj.cluster, label, name, REMOVES, ("NodePool removed: its machines are deleted",), nodes, count, ""
    )


# --- the stack-level notes -----------------------------------------------------------------------------


def _control_plane_notes(old: Snapshot, new: Snapshot, items: Iterable[Item]) -> list[str]:
    notes = []
    old_planes, new_planes = _control_planes(old), _control_planes(new)
    rolled = {(i.cluster, i.kind, i.name) for i in items if i.rolls}
    for ref, plane in sorted(new_planes.items()):
        before = old_planes.get(ref)
        if before and before.release != plane.release:
            notes.append(f"HostedCluster {ref}: control plane upgrade {before.release} → {plane.release}")
            moving = _nodes_moving_with(plane, new, old, rolled)
            if moving:
                notes.append(
                    f"HostedCluster {ref}: {', '.join(sorted(moving))} move to {plane.release} in the same change as "
                    "the control plane. HyperShift compares nodes with the control plane's last *completed* "
                    "version (status.version.history) and, while the control plane upgrades, only reports "
                    "SupportedVersionSkew=False and rolls them anyway: nodes may run "
                    f"{plane.release} before their control plane does"
                    + (
                        " (node classes that follow the control plane are held back by HyperShift releases "
                        "with openshift/hypershift#9234, not by older ones)"
                        if any(m.startswith("node class") for m in moving)
                        else ""
                    )
                    + ". Stage it: "
                    f"`python -m nodefleet upgrade --stack <stack> --cluster {ref.split('/', 1)[1]} "
                    f"--release {plane.release}` holds the nodes until the control plane has completed."
                )
        classes = [
            str(o.meta.get("name"))
            for o in new.objects
            if _kind_label(o) in ("EC2NodeClass", "OpenshiftEC2NodeClass")
            and o.annotations.get(k.ANNOTATION_HOSTED_CLUSTER) == ref
        ]
        if classes and not _carry(plane, new.controller):
            notes.append(
                f"HostedCluster {ref} runs {plane.release}: its Karpenter hashes the whole userData, so every "
                f"Ignition token rotation (every 5.5 h) replaces the nodes of {', '.join(sorted(classes))}, "
                "whatever this change does (the OpenShift Karpenter carry arrives with 4.22)."
            )
    return notes


def _nodes_moving_with(
    plane: _ControlPlane, new: Snapshot, old: Snapshot, rolled: set[tuple[str, str, str]]
) -> list[str]:
    moving = []
    for obj in new.objects:
        label = _kind_label(obj)
        if label == "NodePool (HyperShift)":
            spec = obj.spec
            cluster_ref = f"{obj.meta.get('namespace') or ''}/{spec.get('clusterName') or ''}"
            release = _release_text((spec.get("release") or {}).get("image"))
            if (
                cluster_ref == plane.ref
                and release == plane.release
                and (obj.cluster, label, str(obj.meta.get("name"))) in rolled
            ):
                moving.append(f"NodePool {obj.meta.get('name')}")
        elif label in ("OpenshiftEC2NodeClass", "EC2NodeClass"):
            if obj.annotations.get(k.ANNOTATION_HOSTED_CLUSTER) != plane.ref:
                continue
            eff = _effective_class(obj, new)
            if eff.release == plane.release and (obj.cluster, label, str(obj.meta.get("name"))) in rolled:
                moving.append(f"node class {obj.meta.get('name')}")
    return moving


# --- entry points --------------------------------------------------------------------------------------


def forecast(before: Snapshot | None, after: Snapshot, *, deployer: str = GITOPS) -> Forecast:
    """The forecast for moving from ``before`` to ``after``; ``before=None`` is the first run (unknown).
    ``deployer`` applies the change: :data:`GITOPS` (render mode) or :data:`PULUMI` (apply mode)."""
    new_objs = [o for o in after.objects if _kind_label(o)]
    if before is None:
        unknown = tuple(
            Item(
                o.cluster,
                _kind_label(o) or "",
                str(o.meta.get("name")),
                UNKNOWN,
                ("no previous render or state for this stack (first run): nothing to compare with",),
                "unknown",
                None,
                "",
            )
            for o in new_objs
        )
        return Forecast(None, after.source, _sorted(unknown))
    old_by_key = before.by_key()
    new_keys = {o.key for o in new_objs}
    items: list[Item] = []
    for obj in new_objs:
        previous = old_by_key.get(obj.key)
        if previous is None:
            items.append(_added(obj, after))
            continue
        item = _compare(previous, obj, before, after, deployer)
        if item is not None:
            items.append(item)
    for obj in before.objects:
        if _kind_label(obj) and obj.key not in new_keys:
            items.append(_removed(obj, before))
    notes = _control_plane_notes(before, after, items)
    return Forecast(before.source, after.source, _sorted(items), tuple(notes))


def _sorted(items: Iterable[Item]) -> tuple[Item, ...]:
    return tuple(
        sorted(items, key=lambda i: (i.cluster, _ORDER.index(i.kind) if i.kind in _ORDER else 99, i.name))
    )


# --- Pulumi state --------------------------------------------------------------------------------------

_SECRET_SIG = "4dabf18193072939515e22adb298388d"


def _plain(value: Any) -> Any:
    """State values with secrets replaced by an opaque marker of their ciphertext (compared, never read)."""
    if isinstance(value, Mapping):
        if _SECRET_SIG in value:
            return f"[secret {str(value.get('ciphertext', ''))[:12]}]"
        return {str(key): _plain(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value


def snapshot_from_state(export: Mapping[str, Any], source: str = "Pulumi state") -> Snapshot:
    """The Kubernetes objects of a ``pulumi stack export`` document (checkpoint ``version: 3``).

    Each resource of the deployment whose type is a Kubernetes kind contributes its ``inputs`` (what was
    last applied, before the cluster defaulted anything) and ``ignoreChanges``; its render target is the
    provider's ``renderYamlToDirectory``, else the provider's name without ``-k8s`` (apply mode). Raises
    ``ValueError`` with a complete message on anything that is not such a document.
    """
    if not isinstance(export, Mapping) or "deployment" not in export:
        raise ValueError("not a `pulumi stack export` document: no top-level 'deployment'")
    version = export.get("version")
    if version != 3:
        raise ValueError(f"checkpoint version {version!r} is not supported (this reads version 3)")
    resources = (export.get("deployment") or {}).get("resources") or []
    providers: dict[str, str] = {}
    for r in resources:
        if str(r.get("type", "")).startswith("pulumi:providers:kubernetes"):
            inputs = r.get("inputs") or {}
            name = str(r.get("urn", "")).rsplit("::", 1)[-1]
            target = inputs.get("renderYamlToDirectory") or name.removesuffix("-k8s")
            providers[f"{r.get('urn')}::{r.get('id')}"] = str(target)
    objects = []
    for r in resources:
        kind_type = str(r.get("type", ""))
        if not kind_type.startswith("kubernetes:") or not r.get("custom"):
            continue
        inputs = _plain(r.get("inputs") or {})
        if "kind" not in inputs or "apiVersion" not in inputs:
            continue
        manifest = {key: inputs[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in inputs}
        target = providers.get(str(r.get("provider", "")), "default")
        objects.append(Obj(target, manifest, tuple(str(p) for p in r.get("ignoreChanges") or ())))
    return Snapshot(source, tuple(objects))


def _running(count: int | None) -> str:
    if count is None:
        return "the running machines keep"
    return "the 1 running machine keeps" if count == 1 else f"the {count} running machines keep"
