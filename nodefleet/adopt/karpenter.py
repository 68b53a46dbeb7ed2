"""Karpenter NodePools and node classes, from the live object to the stack file's model.

The inverse of :func:`nodefleet.render.hosted.render_karpenter_node_pool`,
:func:`nodefleet.render.hosted.render_openshift_ec2_node_class` and, on standalone clusters,
:func:`nodefleet.render.karpenter.render_self_managed_ec2_node_class` and
:func:`nodefleet.render.karpenter.render_operator_ec2_node_class`: each live field goes to the key that renders
it. A field the model has no key for is not dropped here and not refused here either: the entry leaves it out,
and the fidelity check (:mod:`nodefleet.adopt.fidelity`) names it as a difference, with the object and the
path, so that one place decides what the stack cannot express.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodefleet.adopt.documents import LiveObject, at
from nodefleet.files import load_json
from nodefleet.render.ignition import s3_pointer, user_data
from nodefleet.stackfile.karpenter import REASON_ORDER

__all__ = [
    "PointerKey",
    "autonode_class_entry",
    "legacy_class_entry",
    "node_pool_entry",
    "operator_class_entry",
    "s3_pointer_key",
    "self_managed_class_entry",
]

ARCH = "kubernetes.io/arch"
CAPACITY = "karpenter.sh/capacity-type"
CATEGORY = "karpenter.k8s.aws/instance-category"
FAMILY = "karpenter.k8s.aws/instance-family"


#: NodePool annotations nobody declares (Karpenter's hash, kubectl's and Argo CD's records) or that nodefleet
#: writes itself in render mode (the GitOps tools' no-deletion annotations).
_NOT_DECLARED = frozenset(
    {
        "karpenter.sh/nodepool-hash",
        "karpenter.sh/nodepool-hash-version",
        "kubectl.kubernetes.io/last-applied-configuration",
        "argocd.argoproj.io/tracking-id",
        "argocd.argoproj.io/sync-options",
        "kustomize.toolkit.fluxcd.io/prune",
    }
)


def _requirement(req: Mapping[str, Any]) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": req.get("key"), "operator": req.get("operator")}
    if req.get("values"):
        entry["values"] = [str(v) for v in req["values"]]
    if req.get("minValues") is not None:
        entry["minValues"] = req["minValues"]
    return entry


def _is_in(req: Any, key: str) -> bool:
    return (
        isinstance(req, Mapping)
        and req.get("key") == key
        and req.get("operator") == "In"
        and bool(req.get("values"))
        and req.get("minValues") is None
    )


def _requirements(live: list[Any]) -> dict[str, Any]:
    """The keys that render ``live`` in its order: the renderer writes architectures, capacity types,
    instance categories and families first, in that order, each only when its list is not empty, then every
    other requirement as written. A list whose requirement is not where the renderer puts it is left empty
    and the requirement is kept, in place, among the others."""
    rest = [r for r in live if isinstance(r, Mapping)]
    entry: dict[str, Any] = {}
    for key, label in (
        ("architectures", ARCH),
        ("capacityTypes", CAPACITY),
        ("instanceCategories", CATEGORY),
        ("instanceFamilies", FAMILY),
    ):
        if rest and _is_in(rest[0], label):
            entry[key] = [str(v) for v in rest.pop(0)["values"]]
        else:
            entry[key] = []
    if not entry["instanceFamilies"]:
        del entry["instanceFamilies"]
    if rest:
        entry["requirements"] = [_requirement(r) for r in rest]
    return entry


def _disruption(live: Mapping[str, Any], static: bool) -> dict[str, Any]:
    entry: dict[str, Any] = {}
    if not static:
        for key in ("consolidationPolicy", "consolidateAfter"):
            if live.get(key) is not None:
                entry[key] = str(live[key])
    budgets: dict[str, str] = {}
    windows: list[dict[str, Any]] = []
    every: str | None = None
    for budget in live.get("budgets") or []:
        if not isinstance(budget, Mapping):
            continue
        nodes = str(budget.get("nodes", "10%"))
        reasons = budget.get("reasons")
        if budget.get("schedule") is not None:
            window: dict[str, Any] = {
                "schedule": budget.get("schedule"),
                "duration": budget.get("duration"),
                "nodes": nodes,
            }
            if reasons is not None:
                window["reasons"] = list(reasons)
            windows.append(window)
        elif reasons is None and every is None:
            every = nodes  # Karpenter's own shape: one budget for every reason
        else:
            for reason in reasons or REASON_ORDER:
                budgets.setdefault(str(reason), nodes)
    if every is not None:
        entry["allReasonsBudget"] = every
    if budgets:
        entry["budgets"] = budgets
    if windows:
        entry["windows"] = windows
    return entry


def node_pool_entry(obj: LiveObject) -> dict[str, Any]:
    """The stack-file entry of a ``karpenter.sh/v1`` NodePool (``autoNode.nodePools[]``)."""
    spec = obj.spec
    template = spec.get("template") if isinstance(spec.get("template"), Mapping) else {}
    tspec = at(template, "spec") or {}
    entry: dict[str, Any] = {"name": obj.name, "nodeClass": at(tspec, "nodeClassRef", "name")}
    notes = obj.declared_annotations(_NOT_DECLARED)
    if notes:
        entry["annotations"] = notes
    entry |= _requirements(list(tspec.get("requirements") or []))
    labels = at(template, "metadata", "labels")
    if labels:
        entry["labels"] = {str(key): str(value) for key, value in labels.items()}
    if tspec.get("expireAfter") is not None:
        entry["expireAfter"] = str(tspec["expireAfter"])
    if tspec.get("terminationGracePeriod") is not None:
        entry["terminationGracePeriod"] = str(tspec["terminationGracePeriod"])
    static = spec.get("replicas") is not None
    live_limits = spec.get("limits")
    limits: Mapping[str, Any] = live_limits if isinstance(live_limits, Mapping) else {}
    if static:
        entry["replicas"] = spec["replicas"]
        if limits.get("nodes") is not None:
            entry["limits"] = {"nodes": limits["nodes"]}
    else:
        kept: dict[str, Any] = {
            key: str(limits[key]) for key in ("cpu", "memory") if limits.get(key) is not None
        }
        if limits.get("nodes") is not None:
            kept["nodes"] = limits["nodes"]
        if kept:
            entry["limits"] = kept
        if spec.get("weight") is not None:
            entry["weight"] = spec["weight"]
    disruption = _disruption(spec.get("disruption") or {}, static)
    if disruption:
        entry["disruption"] = disruption
    return entry


def _terms(live: Any, infra_id: str) -> tuple[dict[str, str] | None, list[str] | None]:
    """(tags, ids) of selector terms as the renderer writes them: one tags term first, then id terms; the
    renderer's default (``karpenter.sh/discovery: <infraID>``) is left to it."""
    terms = [t for t in live or [] if isinstance(t, Mapping)]
    if terms == [{"tags": {"karpenter.sh/discovery": infra_id}}]:
        return None, None
    tags: dict[str, str] | None = None
    if terms and isinstance(terms[0].get("tags"), Mapping) and set(terms[0]) == {"tags"}:
        tags = {str(key): str(value) for key, value in terms.pop(0)["tags"].items()}
    ids = [str(t["id"]) for t in terms if set(t) == {"id"}]
    return tags, ids or None


def _selectors(entry: dict[str, Any], spec: Mapping[str, Any], infra_id: str) -> None:
    for live_key, tags_key, ids_key in (
        ("subnetSelectorTerms", "subnetTags", "subnetIds"),
        ("securityGroupSelectorTerms", "securityGroupTags", "securityGroupIds"),
    ):
        tags, ids = _terms(spec.get(live_key), infra_id)
        if tags is not None:
            entry[tags_key] = tags
        if ids is not None:
            entry[ids_key] = ids


def autonode_class_entry(obj: LiveObject, infra_id: str) -> dict[str, Any]:
    """The stack-file entry of an ``OpenshiftEC2NodeClass`` (``autoNode.nodeClasses[]``)."""
    spec = obj.spec
    entry: dict[str, Any] = {"name": obj.name}
    if spec.get("version"):
        entry["version"] = str(spec["version"])
    _selectors(entry, spec, infra_id)
    mappings = spec.get("blockDeviceMappings")
    size = at(mappings[0], "ebs", "volumeSizeGiB") if isinstance(mappings, list) and mappings else None
    if isinstance(size, int):
        entry["rootVolumeGiB"] = size
    if isinstance(spec.get("tags"), Mapping) and spec["tags"]:
        entry["tags"] = {str(key): str(value) for key, value in spec["tags"].items()}
    return entry


def legacy_class_entry(obj: LiveObject, infra_id: str) -> dict[str, Any]:
    """The stack-file entry of an ``EC2NodeClass`` older HyperShift rewrites (``autoNode.mode: legacy``)."""
    spec = obj.spec
    entry: dict[str, Any] = {"name": obj.name}
    _selectors(entry, spec, infra_id)
    mappings = spec.get("blockDeviceMappings")
    size = at(mappings[0], "ebs", "volumeSize") if isinstance(mappings, list) and mappings else None
    if isinstance(size, str) and size.endswith("Gi") and size[:-2].isdigit():
        entry["rootVolumeGiB"] = int(size[:-2])
    if isinstance(spec.get("tags"), Mapping) and spec["tags"]:
        entry["tags"] = {str(key): str(value) for key, value in spec["tags"].items()}
    return entry


# ---- standalone clusters: self-managed Karpenter and Red Hat's karpenter-operator ------------------------


class PointerKey:
    """The parts of the S3 key a self-managed class's userData points at:
    ``<prefix>/<cluster>/<class>/<release>/<config>.ign`` (:func:`nodefleet.render.karpenter.object_key`)."""

    def __init__(self, bucket: str, prefix: str, cluster: str, node_class: str, release: str, config: str):
        self.bucket, self.prefix, self.cluster = bucket, prefix, cluster
        self.node_class, self.release, self.config = node_class, release, config

    @property
    def pool_and_config(self) -> tuple[str, str]:
        """(pool, configVersion): ``rendered-<pool>-<hash>`` names its pool; any other config is written
        ``<pool>.<config>``; a bare config is the worker pool's, which the fidelity check then judges."""
        if self.config.startswith("rendered-") and "-" in self.config[len("rendered-") :]:
            return self.config[len("rendered-") :].rpartition("-")[0], self.config
        pool, dot, config = self.config.partition(".")
        return (pool, config) if dot and pool and config else ("worker", self.config)


def s3_pointer_key(spec: Mapping[str, Any]) -> PointerKey | None:
    """The key of a userData that is exactly nodefleet's S3 Ignition pointer (byte for byte as the renderer
    writes it); None for any other userData."""
    text = spec.get("userData")
    if not isinstance(text, str):
        return None
    try:
        source = load_json(text, "userData")["ignition"]["config"]["merge"][0]["source"]
    except (ValueError, KeyError, IndexError, TypeError):
        return None
    if not isinstance(source, str) or not source.startswith("s3://"):
        return None
    bucket, _, key = source[len("s3://") :].partition("/")
    segments = key.removesuffix(".ign").split("/")
    if not key.endswith(".ign") or len(segments) < 5 or not all(segments):
        return None
    try:
        if user_data(s3_pointer(bucket, key)) != text:
            return None
    except ValueError:
        return None
    prefix = "/".join(segments[:-4])
    cluster, node_class, release, config = segments[-4:]
    return PointerKey(bucket, prefix, cluster, node_class, release, config)


def _tags_term(live: Any, default: Mapping[str, str]) -> dict[str, str] | None:
    """The tags of a selector written as the renderer writes it (one term of tags); None for its default and
    for any other shape, which the renderer's default then stands for and the fidelity check names."""
    terms = [t for t in live or [] if isinstance(t, Mapping)]
    if len(terms) != 1 or set(terms[0]) != {"tags"} or not isinstance(terms[0]["tags"], Mapping):
        return None
    tags = {str(key): str(value) for key, value in terms[0]["tags"].items()}
    return None if tags == dict(default) else tags


def _standalone_common(obj: LiveObject, infra_id: str) -> dict[str, Any]:
    spec = obj.spec
    entry: dict[str, Any] = {"name": obj.name}
    subnets = _tags_term(spec.get("subnetSelectorTerms"), {f"kubernetes.io/cluster/{infra_id}": "owned"})
    if subnets is not None:
        entry["subnetTags"] = subnets
    groups = _tags_term(spec.get("securityGroupSelectorTerms"), {"Name": f"{infra_id}-node"})
    if groups is not None:
        entry["securityGroupTags"] = groups
    mappings = spec.get("blockDeviceMappings")
    size = at(mappings[0], "ebs", "volumeSize") if isinstance(mappings, list) and mappings else None
    if isinstance(size, str) and size.endswith("Gi") and size[:-2].isdigit() and int(size[:-2]) != 120:
        entry["rootVolumeGiB"] = int(size[:-2])
    return entry


def self_managed_class_entry(
    obj: LiveObject, infra_id: str, key: PointerKey, *, architecture: str, stream: str
) -> dict[str, Any]:
    """The stack-file entry of a self-managed ``EC2NodeClass`` (``karpenter.nodeClasses[]``); ``architecture``
    and ``stream`` are those of its AMI in the cluster's catalog."""
    entry = _standalone_common(obj, infra_id)
    pool, config = key.pool_and_config
    if pool != "worker":
        entry["pool"] = pool
    entry["configVersion"] = config
    if architecture != "amd64":
        entry["architecture"] = architecture
    if stream != "rhel-9":
        entry["stream"] = stream
    return entry


def operator_class_entry(obj: LiveObject, infra_id: str) -> dict[str, Any]:
    """The stack-file entry of an ``EC2NodeClass`` on a cluster running Red Hat's karpenter-operator
    (``karpenterOperator.nodeClasses[]``): only what the operator leaves to users."""
    entry = _standalone_common(obj, infra_id)
    if isinstance(obj.spec.get("tags"), Mapping) and obj.spec["tags"]:
        entry["tags"] = {str(key): str(value) for key, value in obj.spec["tags"].items()}
    return entry
