"""The API server's own validation at preview: every object of a shipped CRD against its schema and CEL rules.

``crd-schema`` (mandatory) reports what the API server would reject: structural schema violations, fields
pruning would drop, and failed ``x-kubernetes-validations`` rules with the CRD's own message, transition
rules (``oldSelf``) included where the previous object is known; a rule this environment cannot compile or
run is a violation too, since the API server evaluates it. ``crd-schema-unchecked`` (advisory) names the
rules that could not be evaluated for an object for want of its values (unknown during preview), so nothing
passes silently. The judging is
``nodefleet.apiserver.schema``; this module only finds the object, its CRD and its previous version.

A Karpenter object (NodePool, NodeClaim, EC2NodeClass) is judged by the CRD its cluster serves: the set its
``nodefleet.io/karpenter`` annotation names (nodefleet's components stamp it from the cluster's declared
Karpenter), else the policy's ``karpenter`` setting, else the shipped default (``nodefleet.apiserver.store``).
For the rules users meet most, the message adds what to write instead (``nodefleet.apiserver.advice``): this
policy is the one verdict on a CRD rule, so no other policy repeats it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)
from pulumi_policy.proxy import (
    UNKNOWN_ARCHIVE_VALUE,
    UNKNOWN_ARRAY_VALUE,
    UNKNOWN_ASSET_VALUE,
    UNKNOWN_BOOLEAN_VALUE,
    UNKNOWN_NUMBER_VALUE,
    UNKNOWN_OBJECT_VALUE,
    UNKNOWN_STRING_VALUE,
)

from nodefleet.apiserver.advice import advise
from nodefleet.apiserver.previous import PreviousStateError, load_checkpoint, rendered_previous
from nodefleet.apiserver.schema import (
    CRD_REFUSED,
    DEFAULT_KUBERNETES_VERSION,
    KUBERNETES_VERSIONS,
    UNKNOWN,
    Finding,
    followed_version,
    validate_object,
)
from nodefleet.apiserver.store import ANNOTATION_KARPENTER, KarpenterSetError, Selection, load_index
from nodefleet.bootimages.versions import VersionError, kubernetes_of, parse_ocp
from nodefleet.kinds import (
    ANNOTATION_MANAGEMENT_RELEASE,
    ANNOTATION_RELEASE,
    HOSTED_CLUSTER,
    HYPERSHIFT_NODE_POOL,
)
from policies.props import ReportViolation

#: Where relative render directories and checkpoint paths resolve: the project root, where the program runs.
PROJECT_ROOT = Path(__file__).resolve().parent.parent

_SENTINELS = frozenset(
    {
        UNKNOWN_BOOLEAN_VALUE,
        UNKNOWN_NUMBER_VALUE,
        UNKNOWN_STRING_VALUE,
        UNKNOWN_ARRAY_VALUE,
        UNKNOWN_ASSET_VALUE,
        UNKNOWN_ARCHIVE_VALUE,
        UNKNOWN_OBJECT_VALUE,
    }
)


def _plain(value: Any) -> Any:
    """The props without pulumi-policy's unknown-checking proxies, unknowns as ``crd_schema.UNKNOWN``.

    The proxies wrap every nested dict and list; ``proxy["__target"]`` is the wrapped container itself.
    """
    if isinstance(value, str):
        return UNKNOWN if value in _SENTINELS else value
    if isinstance(value, Mapping):
        source = value if isinstance(value, dict) else value["__target"]
        return {k: _plain(v) for k, v in source.items()}
    if isinstance(value, Sequence) and not isinstance(value, bytes):
        items = value if isinstance(value, list | tuple) else value["__target"]  # type: ignore[call-overload]
        return [_plain(v) for v in items]
    return value


def _identity(kind: str, described: str, props: Mapping[str, Any], fallback: str) -> str:
    meta: Mapping[str, Any] = props["metadata"] if isinstance(props.get("metadata"), Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else fallback
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return f"{kind} '{namespace + '/' if namespace else ''}{name}' ({described})"


def _previous(args: ResourceValidationArgs, props: Mapping[str, Any]) -> tuple[dict[str, Any] | None, str]:
    """(previous object, where it came from): the configured checkpoint first, else the last render."""
    checkpoint = args.get_config().get("previousState")
    if checkpoint:
        found = load_checkpoint(str(checkpoint), PROJECT_ROOT).previous(args.urn)
        return found, f"stack checkpoint {checkpoint}"
    directory = (
        (args.provider.props or {}).get("renderYamlToDirectory") if args.provider is not None else None
    )
    if isinstance(directory, str) and directory and isinstance(props.get("metadata"), Mapping):
        rendered = rendered_previous(directory, props, PROJECT_ROOT)
        if rendered is not None:
            return rendered[0], f"last rendered manifest {rendered[1]}"
    return None, ""


def _renamed(props: Mapping[str, Any], previous: Mapping[str, Any]) -> bool:
    """Whether the object's name or namespace differs from the previous object's (both known)."""
    meta, old = props.get("metadata"), previous.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(old, Mapping):
        return False
    for key in ("name", "namespace"):
        new_value, old_value = meta.get(key), old.get(key)
        if isinstance(new_value, str) and isinstance(old_value, str) and new_value != old_value:
            return True
    return False


#: Findings by (URN, type, props, settings), shared by crd-schema and crd-schema-unchecked.
_CACHE: dict[tuple[str, str, str], tuple[list[Finding], str, str, list[str | None]]] = {}


def _select(
    args: ResourceValidationArgs, props: Mapping[str, Any]
) -> tuple[Selection | None, KarpenterSetError | None]:
    try:
        return load_index().for_manifest(args.resource_type, props, args.get_config().get("karpenter")), None
    except KarpenterSetError as e:
        return None, e


def _judge(args: ResourceValidationArgs) -> tuple[list[Finding], str, str, bool, list[str | None]] | None:
    """(findings, object identity, previous-object source, is a patch, advice per finding) for a resource of
    a shipped CRD."""
    props = _plain(args.props)
    selection, unknown_set = _select(args, props)
    if unknown_set is not None:
        kind = args.resource_type.split(":")[-1]
        identity = _identity(kind, args.resource_type.split(":")[1], props, args.name)
        where = f"metadata.annotations[{ANNOTATION_KARPENTER}]"
        meta = props.get("metadata")
        notes = meta.get("annotations") if isinstance(meta, Mapping) else None
        named = isinstance(notes, Mapping) and ANNOTATION_KARPENTER in notes
        setting = "" if named else " (the crd-schema policy's `karpenter` setting)"
        finding = Finding(
            where if named else "", f"{unknown_set}{setting}; the object was not validated", True
        )
        return [finding], identity, "", False, [None]
    if selection is None:
        return None
    crd, patch = selection.crd, selection.patch
    directory = (
        (args.provider.props or {}).get("renderYamlToDirectory") if args.provider is not None else None
    )
    config = args.get_config()
    try:
        key = (
            args.urn,
            args.resource_type,
            json.dumps(
                [
                    props,
                    config.get("previousState"),
                    config.get("karpenter"),
                    config.get("kubernetesVersion"),
                    directory,
                ],
                sort_keys=True,
                default=repr,
            ),
        )
    except (TypeError, ValueError):
        key = ("", "", "")
    if key in _CACHE:
        findings, identity, source, advice = _CACHE[key]
        return findings, identity, source, patch, advice
    identity = _identity(crd.crd.kind, selection.describe(), props, args.name)
    try:
        previous, source = _previous(args, props)
    except PreviousStateError as e:
        findings = [Finding("", f"{e}; transition rules (oldSelf) were not evaluated", True)]
        return findings, identity, "", patch, [None]
    if previous is not None and _renamed(props, previous):
        previous, source = None, ""  # Pulumi replaces a renamed object: the API server sees a create
    version, _ = kubernetes_for(args.resource_type, props, config.get("kubernetesVersion"))
    findings = validate_object(props, crd, old=previous, patch=patch, kubernetes=version)
    advice = [advise(f, props, crd) for f in findings]
    if key[0]:
        # The two policies judge one object back to back; only the latest results are worth keeping.
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = (findings, identity, source, advice)
    return findings, identity, source, patch, advice


#: Objects that land on the management cluster, whatever release they ask HyperShift for.
_ON_MANAGEMENT = frozenset({HOSTED_CLUSTER.token, HYPERSHIFT_NODE_POOL.token})


def kubernetes_for(resource_type: str, props: Mapping[str, Any], override: Any = None) -> tuple[str, str]:
    """The Kubernetes version whose API server validation an object is judged by, and why: the policy config's
    ``kubernetesVersion`` where set; else that of the cluster it lands on. An object inside a cluster (a
    MachineSet, a Karpenter NodePool or node class) carries that cluster's release
    (``nodefleet.io/cluster-release``), whose Kubernetes minor chooses
    (``nodefleet.bootimages.versions.kubernetes_of``); a HostedCluster or HyperShift NodePool lands on its
    management cluster, whose release the fleet registry records on them where it says it
    (``nodefleet.io/management-cluster-release``); an object without a readable release, on a cluster nodefleet
    does not know: the default."""
    if override:
        return str(override), "the policy config's kubernetesVersion"
    meta = props.get("metadata")
    notes = meta.get("annotations") if isinstance(meta, Mapping) else None
    notes = notes if isinstance(notes, Mapping) else {}
    on_management = resource_type in _ON_MANAGEMENT
    release = notes.get(ANNOTATION_MANAGEMENT_RELEASE if on_management else ANNOTATION_RELEASE)
    try:
        kubernetes = kubernetes_of(parse_ocp(release)) if isinstance(release, str) else None
    except VersionError:
        kubernetes = None
    if kubernetes is None:
        if on_management:
            return (
                DEFAULT_KUBERNETES_VERSION,
                "on a management cluster whose release the registry does not say: the default",
            )
        return DEFAULT_KUBERNETES_VERSION, "no cluster release recorded: the default"
    where = "on a management cluster" if on_management else "in a cluster"
    return followed_version(
        kubernetes
    ), f"{where} on OpenShift {release}, Kubernetes {kubernetes[0]}.{kubernetes[1]}"


def _short(rule: str, limit: int = 160) -> str:
    """A rule as quoted in a message: whole when short, else its start (the CRD's message says the rest)."""
    text = " ".join(rule.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    judged = _judge(args)
    if judged is None:
        return
    findings, identity, source, patch, advice = judged
    what = "server-side-apply patch" if patch else "object"
    for finding, fix in zip(findings, advice, strict=True):
        if not finding.blocking:
            continue
        where = (
            f" (compared with the {source})" if source and finding.rule and "oldSelf" in finding.rule else ""
        )
        rule = f"; CRD rule `{_short(finding.rule)}`" if finding.rule else ""
        todo = (
            f"{fix}, in the stack file (or the program)"
            if fix
            else "fix the rule in the CRD, or refresh it with one the API server accepts (`nodefleet crds refresh`)"
            if finding.message.startswith(CRD_REFUSED)
            else "fix the value in the stack file (or the program)"
        )
        report(
            f"{identity}: {finding}{where}. The API server rejects this {what} at apply{rule}; {todo} before "
            "`pulumi up`.",
            None,
        )


def _validate_unchecked(args: ResourceValidationArgs, report: ReportViolation) -> None:
    judged = _judge(args)
    if judged is None:
        return
    findings, identity, _, _, _ = judged
    for finding in findings:
        if finding.blocking:
            continue
        if finding.rule:
            where = finding.path or "<root>"
            report(
                f"{identity}: {where}: rule `{_short(finding.rule)}` not checked: {finding.message}.", None
            )
        else:
            report(f"{identity}: {finding.message}. The API server judges them at `pulumi up`.", None)


_CONFIG = PolicyConfigSchema(
    properties={
        "karpenter": {
            "type": "string",
            "pattern": r"^[a-z]+/[0-9]+\.[0-9]+$",
            "description": "The Karpenter CRD set (<flavour>/<minor>, e.g. hypershift/1.13) that judges Karpenter "
            "objects without a nodefleet.io/karpenter annotation, i.e. written by hand. Default: the shipped "
            "default (aws/<newest>).",
        },
        "kubernetesVersion": {
            "type": "string",
            "enum": list(KUBERNETES_VERSIONS),
            "description": "The Kubernetes version of the API server that applies the objects: crd-schema follows "
            "its validation where versions differ. Default: that of the cluster each object lands on (its "
            f"nodefleet.io/cluster-release), else {DEFAULT_KUBERNETES_VERSION} (OpenShift 4.22).",
        },
        "previousState": {
            "type": "string",
            "description": "A `pulumi stack export --file` JSON: transition rules (oldSelf) compare each object "
            "with its state there. Relative to the project root. Default: the last rendered manifest in render "
            "mode, none otherwise.",
        },
    }
)

crd_schema = ResourceValidationPolicy(
    name="crd-schema",
    description="Every object of a shipped CRD passes the API server's validation: structural schema, no "
    "pruned fields, and the CRD's CEL rules (transition rules against the previous object where known).",
    validate=_validate,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=_CONFIG,
)

crd_schema_unchecked = ResourceValidationPolicy(
    name="crd-schema-unchecked",
    description="Names the CRD validation rules that could not be evaluated for an object (values unknown "
    "during preview, or a previous object not fully known).",
    validate=_validate_unchecked,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=_CONFIG,
)
