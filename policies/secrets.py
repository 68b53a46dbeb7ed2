"""Render (GitOps) mode must never write Secret values to disk."""

from __future__ import annotations

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.props import ReportViolation

SECRET_TOKEN = "kubernetes:core/v1:Secret"


def _validate_no_plaintext(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != SECRET_TOKEN or args.provider is None:
        return
    directory = (args.provider.props or {}).get("renderYamlToDirectory")
    if not directory:
        return
    props = args.props
    if props.get("data") or props.get("stringData"):
        name = (props.get("metadata") or {}).get("name") or args.name
        report(
            f"Secret '{name}' carries data and its provider renders to '{directory}', which writes the values "
            "in plaintext. Create it in apply mode, or reference an existing Secret (sealed or external).",
            None,
        )


no_plaintext_secrets = ResourceValidationPolicy(
    name="no-plaintext-secrets",
    description="In render mode no Secret carrying data is written to the manifest directory.",
    validate=_validate_no_plaintext,
    enforcement_level=EnforcementLevel.MANDATORY,
)
