"""``run_policy``: one resource through one policy, as the analyzer would run it; ``run_stack_policy``: a
list of resources (built with ``stack_resource``) through one stack policy."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationPolicy,
    StackValidationPolicy,
)
from pulumi_policy.proxy import unknown_checking_proxy

from mockruntime.evaluate import Violation, evaluate_resource, evaluate_stack


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


# --- stack policies ------------------------------------------------------------------------------------------

STACK_URN = "urn:pulumi:test::nodefleet::pulumi:pulumi:Stack::nodefleet-test"


def stack_resource(
    resource_type: str,
    props: Mapping[str, Any],
    *,
    name: str | None = None,
    parent: PolicyResource | None = None,
    provider: str | None = None,
    ignore_changes: list[str] | None = None,
) -> PolicyResource:
    """One resource as a stack policy sees it: outputs behind the unknown-checking proxy, parent resolved.

    ``name`` defaults to ``metadata.name``; ``provider`` names a Kubernetes provider (one per cluster).
    """
    name = name or str((props.get("metadata") or {}).get("name") or resource_type.rsplit(":", 1)[-1])
    parent_part = f"{parent.resource_type}$" if parent is not None else ""
    urn = f"urn:pulumi:test::nodefleet::{parent_part}{resource_type}::{name}"
    opts = PolicyResourceOptions(
        False,
        list(ignore_changes or []),
        None,
        [],
        PolicyCustomTimeouts(0, 0, 0),
        [],
        parent.urn if parent is not None else None,
    )
    prov = (
        PolicyProviderResource(
            "pulumi:providers:kubernetes",
            {},
            f"urn:pulumi:test::nodefleet::pulumi:providers:kubernetes::{provider}",
            provider,
        )
        if provider
        else None
    )
    return PolicyResource(
        resource_type, unknown_checking_proxy(dict(props)), urn, name, opts, prov, parent, [], {}
    )


def component(type_token: str, name: str) -> PolicyResource:
    """A component resource (e.g. ``nodefleet:standalone:Cluster``) to parent stack resources to."""
    return stack_resource(type_token, {}, name=name)


def run_stack_policy(
    policy: StackValidationPolicy,
    resources: list[PolicyResource],
    *,
    config: Mapping[str, Any] | None = None,
) -> list[Violation]:
    return evaluate_stack(policy, resources, config)
