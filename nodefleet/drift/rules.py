"""Karpenter's static drift: which changes of an EC2NodeClass or NodePool mark its nodes Drifted, and why.

Karpenter stamps a hash of each node class and NodePool template on every NodeClaim at launch and marks
the claim ``Drifted`` when the object's current hash differs (aws/karpenter-provider-aws
``pkg/cloudprovider/drift.go``, kubernetes-sigs/karpenter ``pkg/controllers/nodeclaim/disruption/drift.go``):

* EC2NodeClass: ``EC2NodeClass.Hash(caBundle)``: the spec minus its ``hash:"ignore"`` fields (selector
  terms, ``ipPrefixCount``, ``amiFamily`` which is hashed as the *resolved* family), the cluster CA bundle
  Karpenter runs with (v1.12+) and, from v1.15, the kubelet map. ``userData`` is hashed byte for byte.
  Reason ``NodeClassDrift``.
* NodePool: ``NodePool.Hash()`` of ``spec.template`` minus ``requirements`` (checked per node, reason
  ``RequirementsDrifted``). ``disruption``, ``limits``, ``weight`` and ``replicas`` are outside the
  template and never drift. Reason ``NodePoolDrifted``.
* Static drift is only evaluated when the NodeClaim's ``*-hash-version`` equals the object's: a Karpenter
  upgrade that bumps the hash version (EC2NodeClass v5 → v6 at v1.15) re-stamps NodeClaims instead of
  drifting them, so a change applied across that upgrade does not drift nodes.

The verdicts come from :mod:`nodefleet.drift.karpenter_hash`, which follows the Go types Karpenter hashes, and
from a model of Karpenter's ``scheduling.Requirement`` for ``RequirementsDrifted``; both are checked
against Karpenter's own ``Hash()`` and drift checks for v1.12-v1.15 on generated pairs and nodes
(``tests/test_drift_reference.py``; docs/drift-reference.md). Not verified against Go, and said so where
used: the OpenShift fork carry (openshift/aws-karpenter-provider-aws ``882c0766c``, 4.22+ branches; the
fork is not on the Go module proxy), which hashes only the ``TargetConfigVersionHash`` header of an
Ignition userData so a rotated bearer token does not drift nodes (``carry=True``); and ``AMIDrift``,
decided here only when both classes select AMIs by id (Karpenter decides it from the AMIs it resolved
into status, as it does subnets, security groups, capacity reservations and placement groups, none of
which a manifest pair decides).
"""

from __future__ import annotations

import copy
import hashlib
import re
from collections.abc import Mapping
from typing import Any

from nodefleet import kinds as k
from nodefleet.drift import karpenter_hash as kh
from nodefleet.render.ignition import TARGET_CONFIG_VERSION_HASH, merge_headers

__all__ = [
    "AMI_DRIFT",
    "EC2_NODE_CLASS_HASH_IGNORED",
    "NODE_CLASS_DRIFT",
    "NODE_POOL_DRIFTED",
    "REQUIREMENTS_DRIFTED",
    "RESTRICTED_TAG_KEYS",
    "drift_reasons",
    "ec2_node_class_static_view",
    "hypershift_config_hash",
    "hypershift_generated_ec2_node_class",
    "is_restricted_tag_key",
    "karpenter_minor",
    "node_pool_static_view",
    "node_requirements_drifted",
    "static_drift",
    "static_hash",
]

#: EC2NodeClass spec fields tagged ``hash:"ignore"`` in every supported Karpenter (``amiFamily`` too, but
#: its resolved value is hashed beside the spec, so it stays in :func:`ec2_node_class_static_view`).
EC2_NODE_CLASS_HASH_IGNORED = (
    "subnetSelectorTerms",
    "securityGroupSelectorTerms",
    "capacityReservationSelectorTerms",
    "amiSelectorTerms",
    "ipPrefixCount",
)
#: Tag keys Karpenter manages itself; the EC2NodeClass CRD rejects them (prefix match for the first).
RESTRICTED_TAG_KEYS = (
    "kubernetes.io/cluster/",
    "karpenter.sh/nodepool",
    "karpenter.sh/nodeclaim",
    "karpenter.k8s.aws/ec2nodeclass",
    "eks:eks-cluster-name",
)

NODE_CLASS_DRIFT = "NodeClassDrift"
AMI_DRIFT = "AMIDrift"
NODE_POOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"

_KINDS = {
    (k.EC2_NODE_CLASS.api_version, k.EC2_NODE_CLASS.kind): "EC2NodeClass",
    (k.KARPENTER_NODE_POOL.api_version, k.KARPENTER_NODE_POOL.kind): "NodePool",
}


def _kind(manifest: Mapping[str, Any]) -> str:
    key = (str(manifest.get("apiVersion")), str(manifest.get("kind")))
    if key not in _KINDS:
        raise ValueError(f"no drift model for {key[0]} {key[1]}")
    return _KINDS[key]


def karpenter_minor(manifest: Mapping[str, Any], default: str | None = None) -> str:
    """The Karpenter minor judging ``manifest``: its ``nodefleet.io/karpenter`` set (``aws/1.13`` → ``1.13``),
    else ``default``, else :data:`nodefleet.drift.karpenter_hash.DEFAULT_KARPENTER`.

    A set of a minor with no verified hash model (one added with ``crds refresh``) is judged as the default.
    """
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    named = annotations.get(k.ANNOTATION_KARPENTER) if isinstance(annotations, Mapping) else None
    if isinstance(named, str) and named.split("/", 1)[-1] in kh.SUPPORTED_KARPENTER:
        return named.split("/", 1)[-1]
    return default or kh.DEFAULT_KARPENTER


# --- the hashed views -----------------------------------------------------------------------------------


def _carry_user_data(user_data: str) -> str:
    """The fork's ``UserDataHash()``: the TargetConfigVersionHash header value, else the raw userData."""
    value = merge_headers(user_data).get(TARGET_CONFIG_VERSION_HASH)
    return user_data if value is None else value


def _hashed(manifest: Mapping[str, Any], minor: str, ca_bundle: str | None, carry: bool) -> Any:
    if _kind(manifest) == "NodePool":
        return kh.node_pool_view(manifest, minor)
    if carry and isinstance((manifest.get("spec") or {}).get("userData"), str):
        manifest = copy.deepcopy(dict(manifest))
        manifest["spec"]["userData"] = _carry_user_data(manifest["spec"]["userData"])
    return kh.node_class_view(manifest, minor, ca_bundle=ca_bundle)


def static_hash(
    manifest: Mapping[str, Any],
    *,
    karpenter: str | None = None,
    ca_bundle: str | None = None,
    carry: bool = False,
) -> str:
    """A digest equal for two manifests exactly when Karpenter's static hash of them is equal.

    ``karpenter`` is the minor hashing it (default: :func:`karpenter_minor`), ``ca_bundle`` the cluster CA
    bundle it runs with (EC2NodeClass, v1.12+), ``carry`` the OpenShift fork's userData hashing (modelled).
    The digest is nodefleet's (SHA-256 of the canonical view), not Karpenter's decimal FNV-64 value.
    """
    minor = karpenter or karpenter_minor(manifest)
    view = _hashed(manifest, minor, ca_bundle, carry)
    return hashlib.sha256(f"{_kind(manifest)}/{minor}/{view!r}".encode()).hexdigest()


def static_drift(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    karpenter: str | None = None,
    launched_by: str | None = None,
    ca_bundle_before: str | None = None,
    ca_bundle_after: str | None = None,
    carry: bool = False,
) -> str:
    """Karpenter's static drift reason for nodes launched from ``before`` once ``after`` is applied, or "".

    ``karpenter`` is the minor running after the change (default: ``after``'s :func:`karpenter_minor`),
    ``launched_by`` the one that stamped the nodes (default: the same). Between minors of different hash
    versions the answer is "" (Karpenter re-stamps instead of comparing). ``NodeClassDrift`` for an
    EC2NodeClass, ``NodePoolDrifted`` for a NodePool; ``ValueError`` for other or mismatched kinds.
    """
    kind = _kind(before)
    if _kind(after) != kind:
        raise ValueError(f"cannot compare a {before.get('kind')} with a {after.get('kind')}")
    now = karpenter or karpenter_minor(after)
    then = launched_by or now
    if kh.hash_version(kind, now) != kh.hash_version(kind, then):
        return ""
    old = _hashed(before, then, ca_bundle_before, carry)
    new = _hashed(after, now, ca_bundle_after, carry)
    # Views of one hash version compare across minors: a field a later minor added is zero, so not hashed.
    if old == new:
        return ""
    return NODE_CLASS_DRIFT if kind == "EC2NodeClass" else NODE_POOL_DRIFTED


# --- views naming the fields behind a verdict -----------------------------------------------------------


def ec2_node_class_static_view(spec: Mapping[str, Any], *, carry: bool = False) -> dict[str, Any]:
    """The EC2NodeClass ``spec`` fields Karpenter hashes, as written: for naming what changed.

    Everything except the ``hash:"ignore"`` selector terms and ``ipPrefixCount``; ``amiFamily`` stays
    (its resolved value is hashed). With ``carry=True`` (OpenShift fork), ``userData`` is replaced by its
    ``TargetConfigVersionHash`` header value when it is an Ignition config carrying that header in
    ``ignition.config.merge[0].httpHeaders``. Verdicts come from :func:`static_drift`, not from comparing
    these views (they do not apply defaults or Go's decoding).
    """
    view = {
        key: copy.deepcopy(value) for key, value in spec.items() if key not in EC2_NODE_CLASS_HASH_IGNORED
    }
    if carry and isinstance(view.get("userData"), str):
        view["userData"] = _carry_user_data(view["userData"])
    return view


def node_pool_static_view(spec: Mapping[str, Any]) -> dict[str, Any]:
    """The NodePool ``spec.template`` without ``requirements``, as written: for naming what changed."""
    template = copy.deepcopy(dict(spec.get("template") or {}))
    inner = template.get("spec")
    if isinstance(inner, dict):
        inner.pop("requirements", None)
    return template


# --- drift between two manifests ------------------------------------------------------------------------


def _ami_ids(spec: Mapping[str, Any]) -> frozenset[str] | None:
    """The AMI ids of selector terms that name ids only; None when any term resolves dynamically."""
    terms = spec.get("amiSelectorTerms") or []
    ids = [t.get("id") for t in terms if isinstance(t, Mapping)]
    if not ids or any(not i for i in ids):
        return None
    return frozenset(str(i) for i in ids)


# Karpenter's scheduling.Requirement: a value set or its complement, with integer bounds (gte, lte).
_Req = tuple[bool, frozenset[str], int | None, int | None]
_UNIVERSAL: _Req = (True, frozenset(), None, None)
#: sigs.k8s.io/karpenter ``v1.NormalizedLabels`` (the same in every supported minor).
_NORMALIZED_LABELS = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
    "beta.kubernetes.io/arch": "kubernetes.io/arch",
    "beta.kubernetes.io/os": "kubernetes.io/os",
    "beta.kubernetes.io/instance-type": "node.kubernetes.io/instance-type",
}
_MAX_INT = 2**63 - 1
_MIN_INT = -(2**63)
_GO_INT = re.compile(r"[+-]?[0-9]+")


def _go_atoi(text: str) -> tuple[int, bool]:
    """Go's ``strconv.Atoi`` (64-bit): the value and whether it parsed. ASCII digits after an optional sign,
    nothing else (no spaces, no ``_``, no other scripts' digits); out of range clamps to the int64 bounds
    and fails; anything else is 0 and fails."""
    if not _GO_INT.fullmatch(text):
        return 0, False
    number = int(text, 10)
    if number > _MAX_INT:
        return _MAX_INT, False
    if number < _MIN_INT:
        return _MIN_INT, False
    return number, True


def _atoi(text: str) -> int | None:
    number, ok = _go_atoi(text)
    return number if ok else None


def _within(value: str, gte: int | None, lte: int | None) -> bool:
    if gte is None and lte is None:
        return True
    number = _atoi(value)
    return number is not None and (gte is None or number >= gte) and (lte is None or number <= lte)


def _normalized(key: str) -> str:
    """Karpenter's ``v1.NormalizedLabels``: deprecated keys stand for their GA ones, on pools and nodes."""
    return _NORMALIZED_LABELS.get(key, key)


def _requirement(req: Mapping[str, Any]) -> _Req:
    """``NewRequirement(key, operator, values...)``, Gt/Lt canonicalised to bounds as Karpenter does (the
    value as Go's ``Atoi`` reads it, a failed parse counting as what it returns; ``Lt`` of the smallest int
    wraps round as Go's ``value--`` does)."""
    op = str(req.get("operator"))
    values = [str(v) for v in req.get("values") or []]
    first = _go_atoi(values[0])[0] if values else 0
    if op == "In":
        return (False, frozenset(values), None, None)
    if op == "NotIn":
        return (True, frozenset(values), None, None)
    if op == "DoesNotExist":
        return (False, frozenset(), None, None)
    if op == "Gt":
        return (False, frozenset(), None, None) if first == _MAX_INT else (True, frozenset(), first + 1, None)
    if op == "Lt":
        return (True, frozenset(), None, first - 1 if first != _MIN_INT else _MAX_INT)
    if op == "Gte":
        return (True, frozenset(), first, None)
    if op == "Lte":
        return (True, frozenset(), None, first)
    return _UNIVERSAL  # Exists


def _intersection(a: _Req, b: _Req) -> _Req:
    """``Requirement.Intersection``: what several requirements on one key allow together."""
    complement = a[0] and b[0]
    gte = max((x for x in (a[2], b[2]) if x is not None), default=None)
    lte = min((x for x in (a[3], b[3]) if x is not None), default=None)
    if gte is not None and lte is not None and gte > lte:
        return (False, frozenset(), None, None)
    if a[0] and b[0]:
        values = a[1] | b[1]
    elif a[0]:
        values = b[1] - a[1]
    elif b[0]:
        values = a[1] - b[1]
    else:
        values = a[1] & b[1]
    values = frozenset(v for v in values if _within(v, gte, lte))
    return (complement, values, gte, lte) if complement else (False, values, None, None)


def _pool_requirements(pool: Mapping[str, Any]) -> dict[str, _Req]:
    template = (pool.get("spec") or {}).get("template") or {}
    out: dict[str, _Req] = {}
    for req in (template.get("spec") or {}).get("requirements") or []:
        if isinstance(req, Mapping) and req.get("key"):
            key = _normalized(str(req["key"]))
            out[key] = _intersection(out.get(key, _UNIVERSAL), _requirement(req))
    return out


def _node_labels(labels: Mapping[str, str]) -> dict[str, str | None]:
    """``NewLabelRequirements(labels)`` per normalised key: the label's value, or None where a deprecated
    key and its GA key disagree (``In {a} ∩ In {b}`` is empty, which Compatible() treats as no label)."""
    out: dict[str, str | None] = {}
    for key, value in labels.items():
        norm = _normalized(str(key))
        out[norm] = str(value) if norm not in out or out[norm] == str(value) else None
    return out


def _allows(req: _Req | None, value: str | None) -> bool:
    """Whether a node whose label is ``value`` (None: no such label) passes requirement ``req`` on its key."""
    if req is None:
        return True
    complement, values, gte, lte = req
    if value is None:
        # Compatible(): a key the node lacks passes only a NotIn or DoesNotExist requirement.
        return (complement and bool(values)) or (not complement and not values)
    allowed = (value not in values) if complement else (value in values)
    return allowed and _within(value, gte, lte)


def node_requirements_drifted(pool: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    """Whether Karpenter marks a node with ``labels`` ``RequirementsDrifted`` under NodePool ``pool``.

    ``areRequirementsDrifted``: the node's labels must be ``Compatible`` with the pool's requirements. A key
    the node has no label for is allowed only if the pool's requirements on it come to ``NotIn`` or
    ``DoesNotExist``; a labelled key must allow the label's value (bounds of Gt/Lt/Gte/Lte need a value Go's
    ``Atoi`` reads: ASCII digits, within int64). Deprecated keys (``beta.kubernetes.io/arch``…) count as
    their GA keys on both sides, as Karpenter normalises them.
    """
    node = _node_labels(labels)
    return not all(_allows(req, node.get(key)) for key, req in _pool_requirements(pool).items())


def _label_options(pools: tuple[Mapping[str, Any], Mapping[str, Any]], key: str) -> list[str | None]:
    """The values of ``key`` that can tell the pools' requirements apart: every value they mention, every
    bound (as Karpenter reads it) and its neighbours, one value none mentions (no integer), and no label at
    all (None). Between two such integers every requirement answers alike."""
    out: set[str] = {"nodefleet-other-value"}
    for pool in pools:
        template = (pool.get("spec") or {}).get("template") or {}
        for req in (template.get("spec") or {}).get("requirements") or []:
            if isinstance(req, Mapping) and _normalized(str(req.get("key"))) == key:
                out.update(str(value) for value in req.get("values") or [])
                _, _, gte, lte = _requirement(req)
                for bound in (gte, lte):
                    if bound is not None:
                        out.update(str(n) for n in (bound - 1, bound, bound + 1) if _MIN_INT <= n <= _MAX_INT)
    return [None, *sorted(out)]


def _narrowed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether some node ``before``'s requirements allow is no longer allowed by ``after``'s.

    Decided with Karpenter's per-node check (:func:`node_requirements_drifted`) over every label value
    that can tell the two apart (:func:`_label_options`). Requirements are per key, so this holds exactly
    when ``before`` admits some node at all and, on some key, admits a value ``after`` does not; only the
    nodes with such a value drift. Widening (values added to ``In``, a bound relaxed, a requirement
    removed) never drifts.
    """
    old, new = _pool_requirements(before), _pool_requirements(after)
    pools = (before, after)
    keys = sorted(set(old) | set(new))
    options = {key: _label_options(pools, key) for key in keys}
    if not all(any(_allows(old.get(key), v) for v in options[key]) for key in keys):
        return False  # no node matches before's requirements: none can drift from them
    return any(
        _allows(old.get(key), v) and not _allows(new.get(key), v) for key in keys for v in options[key]
    )


def drift_reasons(
    before: Mapping[str, Any],
    after: Mapping[str, Any],
    *,
    carry: bool = False,
    karpenter: str | None = None,
    launched_by: str | None = None,
    ca_bundle_before: str | None = None,
    ca_bundle_after: str | None = None,
) -> list[str]:
    """Why nodes launched from ``before`` would be marked Drifted once ``after`` is applied; [] = no drift.

    Both are manifests of the same kind. The static reason first (:func:`static_drift`, same keywords),
    then for an EC2NodeClass ``AMIDrift`` when both classes select AMIs by id only and the set of ids
    changed, for a NodePool ``RequirementsDrifted`` when a requirement narrowed (see ``_narrowed``).
    Raises ``ValueError`` for other or mismatched kinds.
    """
    reasons: list[str] = []
    static = static_drift(
        before,
        after,
        karpenter=karpenter,
        launched_by=launched_by,
        ca_bundle_before=ca_bundle_before,
        ca_bundle_after=ca_bundle_after,
        carry=carry,
    )
    if static:
        reasons.append(static)
    old, new = before.get("spec") or {}, after.get("spec") or {}
    if static == NODE_CLASS_DRIFT or _kind(after) == "EC2NodeClass":
        old_ids, new_ids = _ami_ids(old), _ami_ids(new)
        if old_ids is not None and new_ids is not None and old_ids != new_ids:
            reasons.append(AMI_DRIFT)
        return reasons
    if _narrowed(before, after):
        reasons.append(REQUIREMENTS_DRIFTED)
    return reasons


# --- HyperShift AutoNode model --------------------------------------------------------------------------

_VOLUME_TYPES = {
    "Standard": "standard",
    "IO1": "io1",
    "IO2": "io2",
    "GP2": "gp2",
    "SC1": "sc1",
    "ST1": "st1",
    "GP3": "gp3",
}
_DEFAULT_BDM = {
    "deviceName": "/dev/xvda",
    "ebs": {"volumeSize": "120Gi", "volumeType": "gp3", "encrypted": True},
}


def is_restricted_tag_key(key: str) -> bool:
    """Whether the EC2NodeClass CRD rejects ``key`` as a tag (Karpenter manages it)."""
    return any(key.startswith(r) if r.endswith("/") else key == r for r in RESTRICTED_TAG_KEYS)


def _upstream_bdm(bdm: Mapping[str, Any]) -> dict[str, Any]:
    """An OpenshiftEC2NodeClass v1 block device mapping in the upstream EC2NodeClass shape."""
    out: dict[str, Any] = {}
    if "deviceName" in bdm:
        out["deviceName"] = bdm["deviceName"]
    if "rootVolume" in bdm:
        out["rootVolume"] = bdm["rootVolume"] == "RootVolume"
    ebs_in: Mapping[str, Any] = bdm.get("ebs") or {}
    ebs: dict[str, Any] = {}
    if "volumeSizeGiB" in ebs_in:
        ebs["volumeSize"] = f"{ebs_in['volumeSizeGiB']}Gi"
    if "volumeType" in ebs_in:
        ebs["volumeType"] = _VOLUME_TYPES[ebs_in["volumeType"]]
    if "encrypted" in ebs_in:
        ebs["encrypted"] = ebs_in["encrypted"] == "Encrypted"
    if "deleteOnTermination" in ebs_in:
        ebs["deleteOnTermination"] = ebs_in["deleteOnTermination"] == "Delete"
    for same in ("iops", "throughput", "kmsKeyID", "snapshotID"):
        if same in ebs_in:
            ebs[same] = ebs_in[same]
    if ebs:
        out["ebs"] = ebs
    return out


def _upstream_metadata_options(opts: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if "access" in opts:
        out["httpEndpoint"] = "enabled" if opts["access"] == "HTTPEndpoint" else "disabled"
    if "httpIPProtocol" in opts:
        out["httpProtocolIPv6"] = "enabled" if opts["httpIPProtocol"] == "IPv6" else "disabled"
    if "httpPutResponseHopLimit" in opts:
        out["httpPutResponseHopLimit"] = opts["httpPutResponseHopLimit"]
    if "httpTokens" in opts:
        out["httpTokens"] = str(opts["httpTokens"]).lower()
    return out


def hypershift_generated_ec2_node_class(
    openshift_class: Mapping[str, Any],
    *,
    user_data: str,
    ami: str,
    instance_profile: str,
    infra_id: str,
    resource_tags: Mapping[str, str] | None = None,
) -> dict[str, Any]:
    """The EC2NodeClass HyperShift's karpenter-operator generates from an ``OpenshiftEC2NodeClass`` manifest.

    A model of ``reconcileEC2NodeClass`` (``karpenter-operator/controllers/nodeclass/ec2_nodeclass_controller.go``):
    same name; ``amiFamily: Custom``; ``amiSelectorTerms: [{id: ami}]``; ``userData`` from the user-data
    Secret; ``instanceProfile`` from the HCP annotation; the class's selectors, else HyperShift's defaults
    (subnets ``kubernetes.io/role/internal-elb: "1"`` + ``kubernetes.io/cluster/<infraID>: "*"``, security
    groups ``karpenter.sh/discovery: <infraID>``); the class's block devices, else ``/dev/xvda`` 120Gi gp3
    encrypted; tags = class tags overlaid by the HostedCluster's ``resource_tags`` (HC wins), Karpenter-
    restricted keys dropped. The v1 enum spellings (``GP3``, ``Encrypted``, ``RootVolume``, ``Public``,
    ``Detailed``…) are mapped back to the upstream types. Owner references and ``spec.version`` (which only
    selects the release, i.e. the userData and AMI passed in) are not rendered.
    """
    spec: Mapping[str, Any] = openshift_class.get("spec") or {}
    name = str((openshift_class.get("metadata") or {})["name"])
    out: dict[str, Any] = {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": ami}],
        "userData": user_data,
        "instanceProfile": instance_profile,
        "subnetSelectorTerms": copy.deepcopy(spec.get("subnetSelectorTerms"))
        or [{"tags": {"kubernetes.io/role/internal-elb": "1", f"kubernetes.io/cluster/{infra_id}": "*"}}],
        "securityGroupSelectorTerms": copy.deepcopy(spec.get("securityGroupSelectorTerms"))
        or [{"tags": {"karpenter.sh/discovery": infra_id}}],
        "blockDeviceMappings": [_upstream_bdm(b) for b in spec.get("blockDeviceMappings") or []]
        or [copy.deepcopy(_DEFAULT_BDM)],
    }
    if spec.get("capacityReservationSelectorTerms"):
        terms = copy.deepcopy(spec["capacityReservationSelectorTerms"])
        for term in terms:
            if "instanceMatchCriteria" in term:
                term["instanceMatchCriteria"] = str(term["instanceMatchCriteria"]).lower()
        out["capacityReservationSelectorTerms"] = terms
    if spec.get("ipAddressAssociation") == "Public":
        out["associatePublicIPAddress"] = True
    if spec.get("instanceStorePolicy"):
        out["instanceStorePolicy"] = spec["instanceStorePolicy"]
    if spec.get("monitoring") == "Detailed":
        out["detailedMonitoring"] = True
    if spec.get("metadataOptions"):
        out["metadataOptions"] = _upstream_metadata_options(spec["metadataOptions"])
    if spec.get("kubelet"):
        out["kubelet"] = copy.deepcopy(spec["kubelet"])
    tags = {**dict(spec.get("tags") or {}), **dict(resource_tags or {})}
    tags = {key: value for key, value in tags.items() if not is_restricted_tag_key(key)}
    if tags:
        out["tags"] = tags
    return {
        "apiVersion": k.EC2_NODE_CLASS.api_version,
        "kind": k.EC2_NODE_CLASS.kind,
        "metadata": {"name": name},
        "spec": out,
    }


def _fnv32a(data: bytes) -> int:
    h = 0x811C9DC5
    for byte in data:
        h = ((h ^ byte) * 0x01000193) & 0xFFFFFFFF
    return h


def hypershift_config_hash(*, release: str, config: str = "", rhel_stream: str = "rhel-9") -> str:
    """A stand-in for HyperShift's ``ConfigGenerator.Hash()`` (the ``TargetConfigVersionHash`` header value).

    This is a *model*: HyperShift computes ``HashSimple(mcoRawConfig + releaseVersion + pullSecretName +
    additionalTrustBundleName + globalConfig + rhelStream)``, ``HashSimple`` being an 8-hex-digit FNV-1a 32
    of the string. Here only the inputs a fleet varies are folded in (``config`` stands for the MachineConfig
    text, the pull secret and global config), in the same order and with the same digest, so the value
    changes exactly when the release, the config or the stream changes and is stable otherwise. Do not
    expect it to equal a live cluster's value.
    """
    return f"{_fnv32a((config + release + rhel_stream).encode()):08x}"
