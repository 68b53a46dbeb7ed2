"""HyperShift version skew: node releases never lead their HostedCluster and trail it by at most 3 minors."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.releases import parse_release_image
from nodefleet.versions import OCPVersion, VersionError, minors_between, parse_ocp
from policies.props import ReportViolation, as_map

#: HyperShift's supported skew: NodePools and node classes may trail the control plane by n-3.
MAX_MINORS_BEHIND = 3


def _meta(resource: PolicyResource) -> Mapping[str, Any]:
    return as_map(resource.props.get("metadata"))


def _name(resource: PolicyResource) -> str:
    return str(_meta(resource).get("name") or resource.name)


def _release(resource: PolicyResource) -> OCPVersion | None:
    """The OCP version of ``spec.release.image``, or None when absent or not readable (digest-only)."""
    image = as_map(as_map(resource.props.get("spec")).get("release")).get("image")
    if not image:
        return None
    try:
        return parse_release_image(str(image))
    except VersionError:
        return None


def _check(
    where: str,
    node: OCPVersion,
    field: str,
    cluster_name: str,
    cluster: OCPVersion,
    max_behind: int,
) -> str | None:
    """The violation message for a node release against its control plane's, or None when inside the skew."""
    if node > cluster:
        return (
            f"{where} runs {node} ({field}), newer than its HostedCluster '{cluster_name}' at {cluster}; nodes "
            f"may never lead the control plane. Upgrade the HostedCluster first, or set {field} to {cluster} "
            "or older."
        )
    try:
        behind = minors_between(node, cluster)
    except VersionError as exc:
        return f"{where}: the skew to HostedCluster '{cluster_name}' cannot be computed ({exc})."
    if behind > max_behind:
        return (
            f"{where} runs {node} ({field}), {behind} minor releases behind its HostedCluster "
            f"'{cluster_name}' at {cluster} (OCP 5.0 counts as 4.23); at most {max_behind} are supported. "
            f"Upgrade the nodes to {cluster.major}.{cluster.minor} or a release at most {max_behind} minors "
            "older before upgrading the control plane further."
        )
    return None


def _validate_version_skew(args: StackValidationArgs, report: ReportViolation) -> None:
    max_behind = int(args.get_config().get("maxMinorsBehind", MAX_MINORS_BEHIND))
    clusters: dict[str, tuple[str, OCPVersion | None]] = {}
    for r in args.resources:
        if r.resource_type == k.HOSTED_CLUSTER.token:
            key = f"{_meta(r).get('namespace') or ''}/{_name(r)}"
            clusters[key] = (_name(r), _release(r))
    if not clusters:
        return
    for r in args.resources:
        if r.resource_type == k.HYPERSHIFT_NODE_POOL.token:
            spec = as_map(r.props.get("spec"))
            key = f"{_meta(r).get('namespace') or ''}/{spec.get('clusterName') or ''}"
            where = f"HyperShift NodePool '{_name(r)}'"
            node = _release(r)
            field = "spec.release.image"
        elif r.resource_type == k.OPENSHIFT_EC2_NODE_CLASS.token:
            key = str(as_map(_meta(r).get("annotations")).get(k.ANNOTATION_HOSTED_CLUSTER) or "")
            where = f"OpenshiftEC2NodeClass '{_name(r)}'"
            field = "spec.version"
            version = as_map(r.props.get("spec")).get("version")
            if not version:
                continue  # follows the control plane
            try:
                node = parse_ocp(str(version))
                if not node.has_patch:
                    raise VersionError(f"'{version}' has no patch level")
            except VersionError as exc:
                report(
                    f"{where}: spec.version must be an OCP version x.y.z ({exc}); set a full release such as "
                    "4.20.1, or remove it to follow the control plane.",
                    r.urn,
                )
                continue
        else:
            continue
        if key not in clusters or node is None:
            continue  # its HostedCluster is not in this stack, or the node release is not readable
        cluster_name, cluster = clusters[key]
        if cluster is None:
            continue
        message = _check(where, node, field, cluster_name, cluster, max_behind)
        if message:
            report(message, r.urn)


version_skew = StackValidationPolicy(
    name="version-skew",
    description="HyperShift NodePools and OpenshiftEC2NodeClass versions are never newer than their "
    "HostedCluster and at most 3 minor releases older.",
    validate=_validate_version_skew,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={
            "maxMinorsBehind": {
                "type": "integer",
                "minimum": 0,
                "default": MAX_MINORS_BEHIND,
                "description": "How many minor releases nodes may trail the control plane (HyperShift: 3).",
            }
        }
    ),
)
