"""HyperShift version skew: node releases never lead their HostedCluster and trail it by at most what the
chosen skew profile allows (``nodefleet.bootimages.skew.node_version_skew``: ocp, hypershift or rosa); and
HyperShift's supported versions: a HostedCluster or NodePool releases only what the HyperShift operator of its
management cluster runs (``nodefleet.fleet.registry.unsupported_release``)."""

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
from nodefleet.fleet.registry import unsupported_release
from policies.props import ReportViolation, annotations_of, as_seq, as_text, metadata_of, name_of, value_at

#: The component a hosted cluster's objects are children of (components/hosted.py); its registered outputs name the
#: management cluster and the release lines its HyperShift operator runs.
HOSTED_COMPONENT = "nodefleet:hosted:Cluster"


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


def _landing(resource: PolicyResource) -> tuple[str, tuple[str, ...], str] | None:
    """(management cluster, its supported release lines, the registry's name) recorded on the hosted-cluster
    component ``resource`` belongs to; None for an object outside one (hand-written, another program)."""
    parent = resource.parent
    while parent is not None and parent.resource_type != HOSTED_COMPONENT:
        parent = parent.parent
    if parent is None:
        return None
    props = parent.props
    name = as_text(props.get("managementCluster"))
    lines = tuple(v for v in as_seq(props.get("supportedVersions")) if isinstance(v, str))
    if not name or not lines:
        return None
    return name, lines, as_text(props.get("registry")) or "the fleet registry"


def _validate_supported_versions(args: StackValidationArgs, report: ReportViolation) -> None:
    for r in args.resources:
        if r.resource_type == k.HOSTED_CLUSTER.token:
            what = f"HostedCluster '{_name(r)}' (spec.release.image)"
        elif r.resource_type == k.HYPERSHIFT_NODE_POOL.token:
            what = f"HyperShift NodePool '{_name(r)}' (spec.release.image)"
        else:
            continue
        release = _release(r)
        landing = _landing(r) if release is not None else None
        if release is None or landing is None:
            continue  # no readable release (crd-schema judges the field), or nothing declared to judge against
        management, lines, source = landing
        message = unsupported_release(what, str(release), management, lines, source)
        if message:
            report(message, r.urn)


hypershift_supported_versions = StackValidationPolicy(
    name="hypershift-supported-versions",
    description="A HostedCluster or HyperShift NodePool releases only a release line the HyperShift operator "
    "of its management cluster runs (hypershift.supportedVersions in the fleet registry).",
    validate=_validate_supported_versions,
    enforcement_level=EnforcementLevel.MANDATORY,
)
