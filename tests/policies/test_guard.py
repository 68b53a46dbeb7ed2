"""The pack's safety net: a policy that raises holds the deployment with a message to report, whatever its level,
and never crashes the analyzer (which would leave the stack without any verdict)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from pulumi_policy import (
    EnforcementLevel,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

import policies.pack
from cli.main import main
from mockruntime.evaluate import evaluate_resource, evaluate_stack
from nodefleet import kinds as k
from policies.guard import DEFECTS_POLICY, guarded, policy_defects, take_defects
from policies.props import ReportViolation
from tests.policies.helpers import stack_resource


def _explode(args: ResourceValidationArgs, report: ReportViolation) -> None:
    args.props["spec"].get("replicas")


def _resource_policy(level: EnforcementLevel) -> ResourceValidationPolicy:
    return ResourceValidationPolicy(
        name="exploding", description="Raises on a string spec.", validate=_explode, enforcement_level=level
    )


@pytest.fixture(autouse=True)
def _no_leftover_defects() -> Iterator[None]:
    take_defects()
    yield
    take_defects()


def test_a_mandatory_policy_that_raises_reports_a_mandatory_violation_naming_policy_and_resource() -> None:
    policy = guarded(_resource_policy(EnforcementLevel.MANDATORY))
    (v,) = evaluate_resource(
        policy, k.MACHINE_SET.token, {"spec": "oops"}, urn="urn:pulumi:s::p::type::ms-1", name="ms-1"
    )
    assert (v.policy, v.level) == ("exploding", "mandatory")
    assert v.message.startswith(
        "policy 'exploding' failed while judging MachineSet 'ms-1' (urn:pulumi:s::p::"
    )
    assert "AttributeError: 'str' object has no attribute 'get' (at test_guard.py:" in v.message
    assert "Report this" in v.message


def test_an_advisory_policy_that_raises_is_reported_mandatory_by_policy_defects() -> None:
    policy = guarded(_resource_policy(EnforcementLevel.ADVISORY))
    ms = stack_resource(k.MACHINE_SET.token, {"metadata": {"name": "ms-1"}, "spec": "oops"})
    assert evaluate_resource(policy, ms.resource_type, ms.props, urn=ms.urn, name=ms.name) == []
    (v,) = evaluate_stack(policy_defects, [ms])
    assert (v.policy, v.level, v.resource) == (DEFECTS_POLICY, "mandatory", ms.urn)
    assert "policy 'exploding' failed while judging MachineSet" in v.message
    # Reported once: the record is gone.
    assert evaluate_stack(policy_defects, [ms]) == []


def test_defects_of_another_stack_are_not_this_stacks() -> None:
    policy = guarded(_resource_policy(EnforcementLevel.ADVISORY))
    evaluate_resource(policy, k.MACHINE_SET.token, {"spec": "oops"}, urn="urn:other", name="x")
    ms = stack_resource(k.MACHINE_SET.token, {"metadata": {"name": "ms-1"}})
    assert evaluate_stack(policy_defects, [ms]) == []


def test_a_stack_policy_that_raises_names_the_stack() -> None:
    def explode(args: StackValidationArgs, report: ReportViolation) -> None:
        raise KeyError("spec")

    policy = guarded(StackValidationPolicy(name="stack-boom", description="d", validate=explode))
    (v,) = evaluate_stack(policy, [])
    assert v.level == "mandatory"
    assert v.message.startswith("policy 'stack-boom' failed while judging the stack: KeyError: 'spec'")


def test_unknown_values_during_preview_still_reach_the_analyzer() -> None:
    def read(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.props["spec"]["replicas"]:
            report("never", None)

    policy = guarded(ResourceValidationPolicy(name="reads", description="d", validate=read))
    (v,) = evaluate_resource(policy, k.MACHINE_SET.token, {"spec": {"replicas": UNKNOWN_STRING_VALUE}})
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")
    assert take_defects() == []


def test_the_pack_runs_every_rule_behind_the_net_and_policy_defects_last() -> None:
    assert policies.pack.POLICIES[-1] is policy_defects
    assert [p.name for p in policies.pack.POLICIES[:-1]] == [r.name for r in policies.pack.RULES]
    for guarded_rule, rule in zip(policies.pack.POLICIES, policies.pack.RULES, strict=False):
        assert guarded_rule is not rule
        assert guarded_rule.enforcement_level == rule.enforcement_level
        assert guarded_rule.config_schema is rule.config_schema


def test_check_exits_1_with_the_message_when_a_policy_crashes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A crashed policy is a held deployment (exit 1), not an internal error of the command (exit 3)."""

    def explode(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type == k.MACHINE_SET.token:
            raise RuntimeError("unexpected shape")

    broken = ResourceValidationPolicy(
        name="boot-image-advice",
        description="d",
        validate=explode,
        enforcement_level=EnforcementLevel.ADVISORY,
    )
    monkeypatch.setattr(policies.pack, "POLICIES", [guarded(broken), policy_defects])
    code = main(["check", "--stack", "dev"])
    out, err = capsys.readouterr()
    assert code == 1, err
    assert err == ""
    assert out.count(f"MANDATORY {DEFECTS_POLICY}") == 4  # the dev stack's four MachineSets
    assert "policy 'boot-image-advice' failed while judging MachineSet 'dev-7xk2p-worker-us-east-1a'" in out
    assert "RuntimeError: unexpected shape" in out
