"""Karpenter's static drift model: which rendered fields replace nodes when they change.

Karpenter (aws/karpenter-provider-aws ``pkg/apis/v1/ec2nodeclass.go`` ``Hash()``, kubernetes-sigs/karpenter
``pkg/apis/v1/nodepool.go`` ``Hash()``) stamps a hash of the static fields on each NodeClaim at launch and
marks the claim ``Drifted`` when the class's or pool's current hash differs:

* EC2NodeClass: ``spec`` minus the ``hash:"ignore"`` fields (selector terms, ``ipPrefixCount``), plus the
  resolved AMI family. ``userData`` is hashed, byte for byte. Reason ``NodeClassDrift``.
* NodePool: ``spec.template`` minus ``requirements`` (checked dynamically, reason ``RequirementsDrifted``).
  ``disruption``, ``limits`` and ``weight`` are outside the template and never drift. Reason
  ``NodePoolDrifted``.

The OpenShift fork carry (openshift/aws-karpenter-provider-aws ``882c0766c``, present in the 4.22+ branches)
hashes only the ``TargetConfigVersionHash`` header of an Ignition userData instead of the whole string, so
a rotated bearer token no longer drifts nodes. ``carry=True`` models it.

This is a model for tests and benchmarks, not a byte-compatible reimplementation of ``hashstructure``:
equal views give equal digests and different views different ones, under the same normalisation
(``SlicesAsSets``, ``IgnoreZeroValue``, ``ZeroNil``). The cluster CA bundle that v1.12+ also hashes, and
dynamic drift through selector resolution (subnets, security groups), are not modelled.
"""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
from typing import Any

from nodefleet import kinds as k
from nodefleet.ignition import TARGET_CONFIG_VERSION_HASH, merge_headers

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
    "node_pool_static_view",
    "static_hash",
]

#: EC2NodeClass spec fields tagged ``hash:"ignore"`` (they drift through resolution, if at all).
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
# Keys whose value is a Go map, not a struct: IgnoreZeroValue applies to struct fields only, so a map entry
# with an empty value (a label "node-role.kubernetes.io/infra": "") is still hashed.
_MAP_FIELDS = frozenset(
    {
        "labels",
        "annotations",
        "tags",
        "systemReserved",
        "kubeReserved",
        "evictionHard",
        "evictionSoft",
        "evictionSoftGracePeriod",
    }
)

NODE_CLASS_DRIFT = "NodeClassDrift"
AMI_DRIFT = "AMIDrift"
NODE_POOL_DRIFTED = "NodePoolDrifted"
REQUIREMENTS_DRIFTED = "RequirementsDrifted"


# --- normalisation and hashing ------------------------------------------------------------------------


def _is_zero(value: Any) -> bool:
    return (
        value is None
        or value == ""
        or value is False
        or (type(value) in (int, float) and value == 0)
        or (isinstance(value, Mapping | list | tuple) and len(value) == 0)
    )


def _canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def _normalise(value: Any, *, is_map: bool = False) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            norm = _normalise(item, is_map=str(key) in _MAP_FIELDS)
            if (is_map and isinstance(norm, str)) or not _is_zero(norm):
                out[str(key)] = norm  # a map entry is kept even when its value is ""
        return out
    if isinstance(value, list | tuple):
        # SlicesAsSets: order does not matter.
        items = [_normalise(v) for v in value if v is not None]
        return sorted(items, key=_canonical)
    return value


def static_hash(view: Mapping[str, Any]) -> str:
    """A stable digest of ``view`` under hashstructure's ``SlicesAsSets, IgnoreZeroValue, ZeroNil``.

    Struct fields that are ``None``, ``""``, ``0``, ``False`` or empty are dropped (recursively), lists are
    compared as (multi)sets, map entries (labels, annotations, tags, kubelet maps) keep empty values. The
    result is the hex SHA-256 of the canonical JSON of what is left.
    """
    return hashlib.sha256(_canonical(_normalise(view)).encode()).hexdigest()


# --- static views ---------------------------------------------------------------------------------------


def _carry_user_data(user_data: str) -> str:
    """The fork's ``UserDataHash()``: the TargetConfigVersionHash header value, else the raw userData."""
    value = merge_headers(user_data).get(TARGET_CONFIG_VERSION_HASH)
    return user_data if value is None else value


def ec2_node_class_static_view(spec: Mapping[str, Any], *, carry: bool = False) -> dict[str, Any]:
    """What Karpenter hashes of an EC2NodeClass ``spec``: everything except the ``hash:"ignore"`` fields.

    ``amiFamily`` stays (upstream hashes the resolved ``AMIFamily()``). With ``carry=True`` (OpenShift fork),
    ``userData`` is replaced by its ``TargetConfigVersionHash`` header value when it is an Ignition config
    carrying that header in ``ignition.config.merge[0].httpHeaders``.
    """
    view = {
        key: copy.deepcopy(value) for key, value in spec.items() if key not in EC2_NODE_CLASS_HASH_IGNORED
    }
    if carry and isinstance(view.get("userData"), str):
        view["userData"] = _carry_user_data(view["userData"])
    return view


def node_pool_static_view(spec: Mapping[str, Any]) -> dict[str, Any]:
    """What Karpenter hashes of a NodePool ``spec``: ``spec.template`` without ``spec.requirements``."""
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


def _requirements(spec: Mapping[str, Any]) -> dict[tuple[str, str], list[Mapping[str, Any]]]:
    template = spec.get("template") or {}
    out: dict[tuple[str, str], list[Mapping[str, Any]]] = {}
    for req in (template.get("spec") or {}).get("requirements") or []:
        out.setdefault((str(req["key"]), str(req["operator"])), []).append(req)
    return out


def _narrowed(before: Mapping[str, Any], after: Mapping[str, Any]) -> bool:
    """Whether ``after``'s requirements may exclude nodes ``before``'s allowed (conservative).

    Karpenter checks each NodeClaim's labels against the new requirements, so only the affected nodes drift;
    statically, any narrowing counts: a new key/operator, an ``In`` value removed, a ``NotIn`` value added,
    a changed ``Gt``/``Lt``/``Gte``/``Lte`` bound. Widening (values added to ``In``, a requirement removed)
    never drifts.
    """
    old, new = _requirements(before), _requirements(after)
    for key_op, reqs in new.items():
        if key_op not in old:
            return True
        _, op = key_op
        old_values = {v for r in old[key_op] for v in r.get("values") or []}
        new_values = {v for r in reqs for v in r.get("values") or []}
        if op == "In" and old_values - new_values:
            return True
        if op == "NotIn" and new_values - old_values:
            return True
        if op in ("Gt", "Lt", "Gte", "Lte") and old_values != new_values:
            return True
    return False


def drift_reasons(before: Mapping[str, Any], after: Mapping[str, Any], *, carry: bool = False) -> list[str]:
    """Why nodes launched from ``before`` would be marked Drifted once ``after`` is applied; [] = no drift.

    Both are manifests of the same kind. EC2NodeClass: ``NodeClassDrift`` when the static hash differs
    (``carry`` selects the OpenShift fork's userData hashing), and ``AMIDrift`` when both classes select
    AMIs by id only and the set of ids changed (resolution drift, decidable statically in that case).
    Karpenter NodePool: ``NodePoolDrifted`` when the template hash differs, ``RequirementsDrifted`` when a
    requirement narrowed (see ``_narrowed``). Raises ``ValueError`` for other or mismatched kinds.
    """
    kind = (str(before.get("apiVersion")), str(before.get("kind")))
    if kind != (str(after.get("apiVersion")), str(after.get("kind"))):
        raise ValueError(f"cannot compare a {kind[1]} with a {after.get('kind')}")
    old, new = before.get("spec") or {}, after.get("spec") or {}
    reasons: list[str] = []
    if kind == (k.EC2_NODE_CLASS.api_version, k.EC2_NODE_CLASS.kind):
        if static_hash(ec2_node_class_static_view(old, carry=carry)) != static_hash(
            ec2_node_class_static_view(new, carry=carry)
        ):
            reasons.append(NODE_CLASS_DRIFT)
        old_ids, new_ids = _ami_ids(old), _ami_ids(new)
        if old_ids is not None and new_ids is not None and old_ids != new_ids:
            reasons.append(AMI_DRIFT)
        return reasons
    if kind == (k.KARPENTER_NODE_POOL.api_version, k.KARPENTER_NODE_POOL.kind):
        if static_hash(node_pool_static_view(old)) != static_hash(node_pool_static_view(new)):
            reasons.append(NODE_POOL_DRIFTED)
        if _narrowed(old, new):
            reasons.append(REQUIREMENTS_DRIFTED)
        return reasons
    raise ValueError(f"no drift model for {kind[0]} {kind[1]}")


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
