"""HyperShift version skew: node releases never lead their HostedCluster and trail it by at most what the
chosen skew profile allows (``nodefleet.bootimages.skew.node_version_skew``: ocp, hypershift or rosa)."""

from __future__ import annotations

from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.apiserver.schema import rejects_field
from nodefleet.apiserver.store import load_index
from nodefleet.bootimages.releases import parse_release_image
from nodefleet.bootimages.skew import DEFAULT_SKEW_PROFILE, SKEW_PROFILES, node_skew_rule, node_version_skew
from nodefleet.bootimages.versions import OCPVersion, VersionError, parse_ocp
from policies.props import ReportViolation, annotations_of, as_text, metadata_of, name_of, value_at


def _name(resource: PolicyResource) -> str:
    return name_of(resource.props, resource.name)


def _namespace(resource: PolicyResource) -> str:
    return as_text(metadata_of(resource.props).get("namespace")) or ""


def _release(resource: PolicyResource) -> OCPVersion | None:
    """The OCP version of ``spec.release.image``, or None when absent or not readable (digest-only)."""
    image = as_text(value_at(resource.props, "spec", "release", "image"))
    if not image:
        return None
    try:
        return parse_release_image(image)
    except VersionError:
        return None


def _check(
    where: str,
    node: OCPVersion,
    field: str,
    cluster_name: str,
    cluster: OCPVersion,
    profile: str,
    max_behind: int | None,
) -> str | None:
    """The violation message for a node release against its control plane's, or None when inside the skew."""
    try:
        problem = node_version_skew(node, cluster, profile, max_behind)
    except VersionError as exc:
        return f"{where}: the skew to HostedCluster '{cluster_name}' cannot be computed ({exc})."
    if problem is None:
        return None
    return f"{where} runs {node} ({field}) on HostedCluster '{cluster_name}': {problem}"


def _crd_rejects_version(version: str) -> bool:
    crd = load_index().for_object(k.OPENSHIFT_EC2_NODE_CLASS.api_version, k.OPENSHIFT_EC2_NODE_CLASS.kind)
    return crd is not None and rejects_field({"spec": {"version": version}}, crd, "spec.version")


def _settings(config: Any) -> tuple[str, int | None]:
    """(profile, maxMinorsBehind override) of the version-skew config; ValueError names the bad key."""
    profile = str(config.get("profile") or DEFAULT_SKEW_PROFILE)
    max_behind = config.get("maxMinorsBehind")
    if max_behind is not None and (
        not isinstance(max_behind, int) or isinstance(max_behind, bool) or max_behind < 0
    ):
        raise ValueError(
            f"version-skew config maxMinorsBehind must be a whole number >= 0, got {max_behind!r}; fix the "
            "policy pack config, or remove it and choose a profile (ocp, hypershift, rosa)."
        )
    try:
        node_skew_rule(OCPVersion(4, 22, 0), profile, max_behind)
    except ValueError as exc:
        raise ValueError(f"version-skew config profile: {exc}") from None
    return profile, max_behind


def _validate_version_skew(args: StackValidationArgs, report: ReportViolation) -> None:
    try:
        profile, max_behind = _settings(args.get_config())
    except ValueError as exc:
        report(str(exc), None)
        return
    clusters: dict[str, tuple[str, OCPVersion | None]] = {}
    for r in args.resources:
        if r.resource_type == k.HOSTED_CLUSTER.token:
            key = f"{_namespace(r)}/{_name(r)}"
            clusters[key] = (_name(r), _release(r))
    if not clusters:
        return
    for r in args.resources:
        if r.resource_type == k.HYPERSHIFT_NODE_POOL.token:
            key = f"{_namespace(r)}/{as_text(value_at(r.props, 'spec', 'clusterName')) or ''}"
            where = f"HyperShift NodePool '{_name(r)}'"
            node = _release(r)
            field = "spec.release.image"
        elif r.resource_type == k.OPENSHIFT_EC2_NODE_CLASS.token:
            key = as_text(annotations_of(r.props).get(k.ANNOTATION_HOSTED_CLUSTER)) or ""
            where = f"OpenshiftEC2NodeClass '{_name(r)}'"
            field = "spec.version"
            version = value_at(r.props, "spec", "version")
            if not version:
                continue  # follows the control plane
            try:
                node = parse_ocp(str(version))
                if not node.has_patch:
                    raise VersionError(f"'{version}' has no patch level")
            except VersionError as exc:
                if _crd_rejects_version(str(version)):
                    continue  # the CRD's own rule rejects it: crd-schema reports it, with the CRD's message
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
        message = _check(where, node, field, cluster_name, cluster, profile, max_behind)
        if message:
            report(message, r.urn)


version_skew = StackValidationPolicy(
    name="version-skew",
    description="HyperShift NodePools and OpenshiftEC2NodeClass versions are never newer than their "
    "HostedCluster and trail it by at most the minors the chosen skew profile allows.",
    validate=_validate_version_skew,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(
        properties={
            "profile": {
                "type": "string",
                "enum": list(SKEW_PROFILES),
                "default": DEFAULT_SKEW_PROFILE,
                "description": "Which published skew rule to hold nodes to: ocp (documented support: y-2 "
                "for an even control-plane minor, y-1 for an odd one), hypershift (what the operator "
                "accepts: y-3), rosa (y-2).",
            },
            "maxMinorsBehind": {
                "type": "integer",
                "minimum": 0,
                "description": "Overrides the profile's limit: how many minor releases nodes may trail the "
                "control plane, for every control-plane release.",
            },
        }
    ),
)
