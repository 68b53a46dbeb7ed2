"""Evaluates the policy pack's own policy objects the way the CLI's analyzer does, without the CLI.

Inputs are wrapped in pulumi-policy's unknown-checking proxy; reading a value unknown during preview yields
an advisory "cannot verify" result instead of a violation or a crash, as in ``pulumi preview``.
"""

from __future__ import annotations

import asyncio
import difflib
import inspect
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import jsonschema
from pulumi_policy import (
    EnforcementLevel,
    Policy,
    PolicyCustomTimeouts,
    PolicyProviderResource,
    PolicyResource,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from mockruntime.run import MockRun, Registration


@dataclass(frozen=True)
class Violation:
    policy: str
    level: str  # "mandatory" | "advisory"
    resource: str  # URN, or "" for a stack-level finding without one
    message: str

    def as_dict(self) -> dict[str, str]:
        return {
            "policy": self.policy,
            "level": self.level,
            "resource": self.resource,
            "message": self.message,
        }


def level_of(
    policy: Policy,
    config: Mapping[str, Any] | None = None,
    default: EnforcementLevel = EnforcementLevel.MANDATORY,
) -> EnforcementLevel:
    """Effective level, in the CLI's order: policy-pack config, then the policy's own, then the pack default."""
    cfg = (config or {}).get(policy.name, (config or {}).get("all"))
    if isinstance(cfg, str):
        return EnforcementLevel(cfg)
    if isinstance(cfg, Mapping) and "enforcementLevel" in cfg:
        return EnforcementLevel(cfg["enforcementLevel"])
    return policy.enforcement_level or default


def _policy_config(policy: Policy, config: Mapping[str, Any] | None) -> dict[str, Any]:
    cfg = (config or {}).get(policy.name)
    values = {k: v for k, v in cfg.items() if k != "enforcementLevel"} if isinstance(cfg, Mapping) else {}
    schema = getattr(policy, "config_schema", None)
    for key, prop in (schema.properties if schema else {}).items():
        if key not in values and "default" in prop:
            values[key] = prop["default"]
    return values


_LEVELS = [level.value for level in EnforcementLevel]


def policy_config_errors(policies: Iterable[Policy], config: Mapping[str, Any]) -> list[str]:
    """What is wrong with a ``--policy-pack-config`` value for ``policies``, one message per problem.

    The Pulumi CLI validates each policy's entry against the policy's config schema before the pack runs;
    this applies the same JSON schemas (with ``jsonschema``), and also names entries for policies the pack
    does not have, where the CLI would silently ignore a misspelt name.
    """
    by_name = {p.name: p for p in policies}
    errors: list[str] = []
    for name, value in config.items():
        if name == "all":
            if value not in _LEVELS:
                errors.append(f"'all': must be one of {', '.join(_LEVELS)}, got {value!r}")
            continue
        policy = by_name.get(name)
        if policy is None:
            hint = difflib.get_close_matches(name, list(by_name), n=1)
            known = f"did you mean '{hint[0]}'?" if hint else f"policies: {', '.join(sorted(by_name))}"
            errors.append(f"'{name}': the pack has no such policy; {known}")
            continue
        if isinstance(value, str):
            if value not in _LEVELS:
                errors.append(
                    f"'{name}': enforcement level must be one of {', '.join(_LEVELS)}, got {value!r}"
                )
            continue
        if not isinstance(value, Mapping):
            errors.append(f"'{name}': must be an enforcement level or an object of settings, got {value!r}")
            continue
        schema = getattr(policy, "config_schema", None)
        properties = dict(schema.properties) if schema else {}
        properties["enforcementLevel"] = {"type": "string", "enum": _LEVELS}
        for key in value:
            if key not in properties:
                hint = difflib.get_close_matches(key, list(properties), n=1)
                known = f"did you mean '{hint[0]}'?" if hint else f"settings: {', '.join(sorted(properties))}"
                errors.append(f"'{name}'.{key}: the policy has no such setting; {known}")
        validator = jsonschema.Draft7Validator(
            {
                "type": "object",
                "properties": properties,
                "required": list(schema.required or []) if schema else [],
            }
        )
        for error in sorted(validator.iter_errors(dict(value)), key=lambda e: list(e.path)):
            path = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.path)
            # A pattern's regular expression is no help to a reader: the fix below gives an example instead.
            message = (
                f"{json.dumps(error.instance)} is not in the form the setting takes"
                if error.validator == "pattern"
                else error.message
            )
            errors.append(f"'{name}'{path}: {message}; {_config_fix(error)}")
    return errors


_JSON_TYPES = {
    "integer": "a whole number",
    "number": "a number",
    "boolean": "true or false",
    "string": "a string",
    "array": "a list",
    "object": "an object",
}


_PLURAL = {"integer": "whole numbers", "number": "numbers", "string": "strings", "object": "objects"}


def _config_fix(error: jsonschema.ValidationError) -> str:
    """What a valid value looks like, from the property's own schema: its type, bounds or values, and an
    example (its default) where it has one."""
    schema = error.schema if isinstance(error.schema, Mapping) else {}
    if error.validator == "enum" and isinstance(error.validator_value, list):
        return "use one of " + ", ".join(json.dumps(v) for v in error.validator_value)
    if error.validator == "minimum":
        return f"use {error.validator_value} or more"
    if error.validator == "maximum":
        return f"use {error.validator_value} or less"
    what = _JSON_TYPES.get(str(schema.get("type")), "a value of the type the setting takes")
    items = schema.get("items") if isinstance(schema.get("items"), Mapping) else None
    if items and items.get("type") in _PLURAL:
        what += f" of {_PLURAL[str(items['type'])]}"
    example = (
        f", e.g. {json.dumps(schema['default'])}" if "default" in schema and schema["default"] != [] else ""
    )
    return f"use {what}{example}"


def _await(result: Any) -> None:
    if inspect.isawaitable(result):
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(result)
        finally:
            loop.close()


def _options(ignore_changes: Iterable[str] = (), parent: str | None = None) -> PolicyResourceOptions:
    return PolicyResourceOptions(
        False, list(ignore_changes), None, [], PolicyCustomTimeouts(0, 0, 0), [], parent
    )


def policy_options(reg: Registration) -> PolicyResourceOptions:
    """A registration's options as the engine hands them to a policy (pulumi/pulumi
    ``pkg/resource/deploy/step_generator.go``, ``AnalyzerResourceOptions``; pulumi-policy
    ``_get_resource_options``): protect, ignoreChanges, deleteBeforeReplace (None when not set), aliases,
    custom timeouts, additional secret outputs, parent. The engine passes no more: ``replaceOnChanges``,
    ``retainOnDelete`` and ``deletedWith`` never reach a policy."""
    t = reg.custom_timeouts
    return PolicyResourceOptions(
        reg.protect,
        list(reg.ignore_changes),
        reg.delete_before_replace,
        list(reg.aliases),
        PolicyCustomTimeouts(t.create, t.update, t.delete),
        list(reg.additional_secret_outputs),
        reg.parent or None,
    )


def evaluate_resource(
    policy: ResourceValidationPolicy,
    resource_type: str,
    props: Mapping[str, Any],
    *,
    urn: str = "",
    name: str = "",
    ignore_changes: Iterable[str] = (),
    provider: PolicyProviderResource | None = None,
    config: Mapping[str, Any] | None = None,
    options: PolicyResourceOptions | None = None,
) -> list[Violation]:
    """One resource policy on one resource. ``options`` are the resource's options (default: only
    ``ignore_changes`` set, for policy tests on a bare resource)."""
    level = level_of(policy, config)
    if level == EnforcementLevel.DISABLED:
        return []
    messages: list[str] = []
    args = ResourceValidationArgs(
        resource_type,
        unknown_checking_proxy(dict(props)),
        urn,
        name,
        options or _options(ignore_changes),
        provider,
        _policy_config(policy, config),
    )

    def report(message: str, _urn: str | None = None) -> None:
        messages.append(message)

    try:
        _await(policy.validate(args, report))
    except UnknownValueError as e:
        return [Violation(policy.name, "advisory", urn, f"cannot verify during preview: {e}")]
    lvl = "advisory" if level == EnforcementLevel.ADVISORY else "mandatory"
    return [Violation(policy.name, lvl, urn, m) for m in messages]


def evaluate_stack(
    policy: StackValidationPolicy, resources: list[PolicyResource], config: Mapping[str, Any] | None = None
) -> list[Violation]:
    level = level_of(policy, config)
    if level == EnforcementLevel.DISABLED:
        return []
    found: list[tuple[str, str | None]] = []
    args = StackValidationArgs(resources, _policy_config(policy, config))

    def report(message: str, urn: str | None = None) -> None:
        found.append((message, urn))

    try:
        _await(policy.validate(args, report))
    except UnknownValueError as e:
        return [Violation(policy.name, "advisory", "", f"cannot verify during preview: {e}")]
    lvl = "advisory" if level == EnforcementLevel.ADVISORY else "mandatory"
    return [Violation(policy.name, lvl, urn or "", m) for m, urn in found]


def provider_resource(run: MockRun, reg: Registration) -> PolicyProviderResource | None:
    """The provider of a registration as a policy sees it (``args.provider``)."""
    p = run.provider_of(reg)
    return PolicyProviderResource(p.type, p.inputs, p.urn, p.name) if p else None


def evaluate_run(
    run: MockRun, policies: Iterable[Policy], config: Mapping[str, Any] | None = None
) -> list[Violation]:
    """Every policy over every registration of a mock run, resource policies first, then stack policies.

    Resources are judged in the order of their URNs: registrations arrive from the runtime's worker threads in
    whatever order their inputs resolved, and a report pasted into a ticket twice must read the same."""
    policies = list(policies)
    out: list[Violation] = []
    for reg in sorted(run.registrations, key=lambda r: r.urn):
        for policy in policies:
            if isinstance(policy, ResourceValidationPolicy):
                out += evaluate_resource(
                    policy,
                    reg.type,
                    reg.inputs,
                    urn=reg.urn,
                    name=reg.name,
                    provider=provider_resource(run, reg),
                    config=config,
                    options=policy_options(reg),
                )
    stack_policies = [p for p in policies if isinstance(p, StackValidationPolicy)]
    if stack_policies:
        out += _evaluate_stack_policies(run, stack_policies, config)
    return out


def stack_resources(run: MockRun) -> dict[str, PolicyResource]:
    """Every registration as a stack policy sees it, by URN: parent and dependencies resolved to
    PolicyResources, as in the analyzer."""
    resources: dict[str, PolicyResource] = {}
    for r in run.registrations:
        resources[r.urn] = PolicyResource(
            r.type,
            unknown_checking_proxy(dict(r.stack_props)),
            r.urn,
            r.name,
            policy_options(r),
            provider_resource(run, r),
            None,
            [],
            {},
        )
    for r in run.registrations:
        resources[r.urn].parent = resources.get(r.parent)
        resources[r.urn].dependencies = [resources[d] for d in r.depends_on if d in resources]
    return resources


def _evaluate_stack_policies(
    run: MockRun, policies: list[StackValidationPolicy], config: Mapping[str, Any] | None
) -> list[Violation]:
    resources = stack_resources(run)
    out: list[Violation] = []
    for policy in policies:
        out += evaluate_stack(policy, list(resources.values()), config)
    return out
