"""The API server's own validation at preview: every object of a shipped CRD against its schema and CEL rules.

``crd-schema`` (mandatory) reports what the API server would reject: structural schema violations, fields
pruning would drop, and failed ``x-kubernetes-validations`` rules with the CRD's own message, transition
rules (``oldSelf``) included where the previous object is known. ``crd-schema-unchecked`` (advisory) names
the rules that could not be evaluated for an object, so nothing passes silently. The judging is
``nodefleet.crd_schema``; this module only finds the object, its CRD and its previous version.
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

from nodefleet.crd_previous import PreviousStateError, load_checkpoint, rendered_previous
from nodefleet.crd_schema import UNKNOWN, Finding, validate_object
from nodefleet.crdstore import CrdVersion, load_index
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


def _identity(crd: CrdVersion, props: Mapping[str, Any], fallback: str) -> str:
    meta: Mapping[str, Any] = props["metadata"] if isinstance(props.get("metadata"), Mapping) else {}
    name = meta.get("name") if isinstance(meta.get("name"), str) else fallback
    namespace = meta.get("namespace") if isinstance(meta.get("namespace"), str) else ""
    return f"{crd.crd.kind} '{namespace + '/' if namespace else ''}{name}' ({crd.api_version})"


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


#: Findings by (URN, type, props and previous-state source), shared by crd-schema and crd-schema-unchecked.
_CACHE: dict[tuple[str, str, str], tuple[list[Finding], str, str]] = {}


def _judge(args: ResourceValidationArgs) -> tuple[list[Finding], str, str, bool] | None:
    """(findings, object identity, previous-object source, is a patch) for a resource of a shipped CRD."""
    found = load_index().for_token(args.resource_type)
    if found is None:
        return None
    crd, patch = found
    props = _plain(args.props)
    directory = (
        (args.provider.props or {}).get("renderYamlToDirectory") if args.provider is not None else None
    )
    try:
        key = (
            args.urn,
            args.resource_type,
            json.dumps(
                [props, args.get_config().get("previousState"), directory], sort_keys=True, default=repr
            ),
        )
    except (TypeError, ValueError):
        key = ("", "", "")
    if key in _CACHE:
        findings, identity, source = _CACHE[key]
        return findings, identity, source, patch
    identity = _identity(crd, props, args.name)
    try:
        previous, source = _previous(args, props)
    except PreviousStateError as e:
        findings = [Finding("", f"{e}; transition rules (oldSelf) were not evaluated", True)]
        return findings, identity, "", patch
    findings = validate_object(props, crd, old=previous, patch=patch)
    if key[0]:
        # The two policies judge one object back to back; only the latest results are worth keeping.
        if len(_CACHE) > 16:
            _CACHE.clear()
        _CACHE[key] = (findings, identity, source)
    return findings, identity, source, patch


def _short(rule: str, limit: int = 160) -> str:
    """A rule as quoted in a message: whole when short, else its start (the CRD's message says the rest)."""
    text = " ".join(rule.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
    judged = _judge(args)
    if judged is None:
        return
    findings, identity, source, patch = judged
    what = "server-side-apply patch" if patch else "object"
    for finding in findings:
        if not finding.blocking:
            continue
        where = (
            f" (compared with the {source})" if source and finding.rule and "oldSelf" in finding.rule else ""
        )
        rule = f"; CRD rule `{_short(finding.rule)}`" if finding.rule else ""
        report(
            f"{identity}: {finding}{where}. The API server rejects this {what} at apply{rule}; fix the value in "
            "the stack file (or the program) before `pulumi up`.",
            None,
        )


def _validate_unchecked(args: ResourceValidationArgs, report: ReportViolation) -> None:
    judged = _judge(args)
    if judged is None:
        return
    findings, identity, _, _ = judged
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
        "previousState": {
            "type": "string",
            "description": "A `pulumi stack export --file` JSON: transition rules (oldSelf) compare each object "
            "with its state there. Relative to the project root. Default: the last rendered manifest in render "
            "mode, none otherwise.",
        }
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
    description="Names the CRD validation rules that could not be evaluated for an object (unknown values "
    "during preview, or a rule this environment cannot run).",
    validate=_validate_unchecked,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=_CONFIG,
)
