"""``run_policy``: one resource through one policy, as the analyzer would run it."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import PolicyProviderResource, ResourceValidationPolicy

from harness.evaluate import Violation, evaluate_resource


def run_policy(
    policy: ResourceValidationPolicy,
    resource_type: str,
    props: Mapping[str, Any],
    *,
    ignore_changes: list[str] | None = None,
    provider_props: Mapping[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
) -> list[Violation]:
    provider = (
        PolicyProviderResource("pulumi:providers:kubernetes", dict(provider_props), "urn:provider", "k8s")
        if provider_props is not None
        else None
    )
    return evaluate_resource(
        policy,
        resource_type,
        props,
        urn="urn:test",
        name="test",
        ignore_changes=ignore_changes or [],
        provider=provider,
        config=config,
    )
