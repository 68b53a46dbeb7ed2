"""Render (GitOps) mode must never write Secret values to disk.

Judged by what would be written, not by the Pulumi type used to declare it: a ``core/v1:Secret``, a
``SecretPatch``, a ``SecretList`` and a ``CustomResource`` (or any other resource of the Kubernetes
provider) whose ``kind`` is ``Secret`` all land in the render directory with their values in plaintext.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from policies.props import ReportViolation, as_map, as_seq, name_of

SECRET_TOKEN = "kubernetes:core/v1:Secret"
_VALUE_FIELDS = ("data", "stringData")

_INSTEAD = (
    "Keep Secret values out of the GitOps tree: declare the Secret in apply mode, or render a SealedSecret "
    "(bitnami-labs/sealed-secrets) or an ExternalSecret (external-secrets.io) that the cluster turns into "
    "the Secret, and reference it by name."
)


def _written_secrets(resource_type: str, props: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The Secret objects (with values) this resource would write: itself, or the items of a list.

    The kind comes from the type token, which the Kubernetes SDK derives from the object for typed
    resources (``kubernetes:core/v1:Secret``) and custom resources alike (``kubernetes:v1:Secret``).
    """
    if not resource_type.startswith("kubernetes:"):
        return []
    kind = resource_type.rsplit(":", 1)[-1]
    if kind == "SecretList":
        return [as_map(item) for item in as_seq(props.get("items"))]
    return [props] if kind in ("Secret", "SecretPatch") else []


def _validate_no_plaintext(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.provider is None:
        return
    directory = as_map(args.provider.props).get("renderYamlToDirectory")
    if not directory:
        return
    for secret in _written_secrets(args.resource_type, args.props):
        fields = [f for f in _VALUE_FIELDS if secret.get(f)]
        if fields:
            report(
                f"Secret '{name_of(secret, args.name)}' ({args.resource_type}) carries "
                f"{' and '.join(fields)} and its provider renders to '{directory}', which writes the values "
                f"in plaintext. {_INSTEAD}",
                None,
            )


no_plaintext_secrets = ResourceValidationPolicy(
    name="no-plaintext-secrets",
    description="In render mode no Secret carrying data is written to the manifest directory, whatever "
    "resource type declares it.",
    validate=_validate_no_plaintext,
    enforcement_level=EnforcementLevel.MANDATORY,
)
