"""The pack's safety net: a policy that raises gives a mandatory violation, never a crashed analyzer.

The Python analyzer (pulumi-policy) turns an exception in a policy into a failed ``Analyze`` call, and the
preview fails without any verdict: one unexpected object shape would void the judgement of the whole stack.
:func:`guarded` wraps each policy of the pack so that an exception becomes a finding that names the policy,
the resource and the error, and says to report it. Every policy reads objects through the tolerant readers
of :mod:`policies.props` and ``tests/policies/test_mutation.py`` proves none of them raises on any shape; the
net is for the defect nobody has found yet, and the mutation test counts each of its firings as a crash.

Mandatory, whatever the policy's level: a policy that could not judge an object has not said the object is
fine. A mandatory policy reports its own failure (at its level, on its resource). The analyzer fixes the
level per policy, so a failure of an advisory policy is recorded here and reported, mandatory, by
``policy-defects``, the pack's last stack policy, which the analyzer runs after every resource was judged.
"""

from __future__ import annotations

import inspect
import threading
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    Policy,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.policy import _NotApplicableError
from pulumi_policy.proxy import UnknownValueError

from policies.props import ReportViolation

#: What the analyzer itself handles: an unknown value during preview, and a policy declaring itself moot.
_PASS_THROUGH = (UnknownValueError, _NotApplicableError)
DEFECTS_POLICY = "policy-defects"


@dataclass(frozen=True)
class Defect:
    """One exception a policy raised: which policy, on what (a URN; empty for the stack), and where."""

    policy: str
    urn: str
    subject: str
    error: str
    where: str
    #: Whether the policy reported it itself (a mandatory policy); if not, ``policy-defects`` does.
    reported: bool

    @property
    def message(self) -> str:
        return (
            f"policy '{self.policy}' failed while judging {self.subject}: {self.error} (at {self.where}). This is "
            "a defect in nodefleet's policy pack, not a finding about your stack: the object was not judged by "
            "this policy, so the deployment is held until it is. Report this to the nodefleet maintainers with "
            "this message and the object's manifest; `pulumi preview --policy-pack policies "
            f'--policy-pack-config <file>` with {{"{self.policy}": "disabled"}} unblocks a deployment you have '
            "checked yourself."
        )


_lock = threading.Lock()
_defects: list[Defect] = []


def take_defects() -> list[Defect]:
    """Every defect recorded since the last call, forgotten here (the mutation test counts them)."""
    with _lock:
        taken = list(_defects)
        _defects.clear()
    return taken


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    if not frames:
        return "?"
    frame = frames[-1]
    return f"{Path(frame.filename).name}:{frame.lineno}"


def _record(policy: Policy, urn: str, subject: str, exc: Exception, report: ReportViolation) -> None:
    mandatory = policy.enforcement_level in (None, EnforcementLevel.MANDATORY)
    defect = Defect(
        policy.name, urn, subject, f"{type(exc).__name__}: {exc}"[:300], _where(exc), reported=mandatory
    )
    with _lock:
        _defects.append(defect)
    if mandatory:
        report(defect.message, urn or None)


def _subject(args: ResourceValidationArgs) -> str:
    kind = args.resource_type.rsplit(":", 1)[-1]
    return f"{kind} '{args.name}' ({args.urn or args.resource_type})"


def _call(run: Callable[[], Any], on_error: Callable[[Exception], None]) -> Awaitable[None] | None:
    """Run a validation; an exception, raised at once or by its awaitable, goes to ``on_error``."""
    try:
        result = run()
    except _PASS_THROUGH:
        raise
    except Exception as exc:
        on_error(exc)
        return None
    if not inspect.isawaitable(result):
        return None

    async def awaited() -> None:
        try:
            await result
        except _PASS_THROUGH:
            raise
        except Exception as exc:
            on_error(exc)

    return awaited()


def guarded(policy: Policy) -> Policy:
    """The same policy (name, description, level, config schema), its validation behind the safety net."""
    if isinstance(policy, ResourceValidationPolicy):
        resource_policy = policy

        def validate_resource(
            args: ResourceValidationArgs, report: ReportViolation
        ) -> Awaitable[None] | None:
            return _call(
                lambda: resource_policy.validate(args, report),
                lambda exc: _record(resource_policy, args.urn, _subject(args), exc, report),
            )

        return ResourceValidationPolicy(
            name=policy.name,
            description=policy.description,
            validate=validate_resource,
            enforcement_level=policy.enforcement_level,
            config_schema=policy.config_schema,
        )
    if isinstance(policy, StackValidationPolicy):
        stack_policy = policy

        def validate_stack(args: StackValidationArgs, report: ReportViolation) -> Awaitable[None] | None:
            return _call(
                lambda: stack_policy.validate(args, report),
                lambda exc: _record(stack_policy, "", "the stack", exc, report),
            )

        return StackValidationPolicy(
            name=policy.name,
            description=policy.description,
            validate=validate_stack,
            enforcement_level=policy.enforcement_level,
            config_schema=policy.config_schema,
        )
    raise TypeError(f"policy '{policy.name}' is neither a resource nor a stack policy")


def _report_defects(args: StackValidationArgs, report: ReportViolation) -> None:
    urns = {r.urn for r in args.resources}
    for defect in take_defects():
        # Defects of another run in this process (the credential-free check can judge several stacks) are
        # not this stack's; those of mandatory policies were reported by the policy itself.
        if defect.reported or (defect.urn and defect.urn not in urns):
            continue
        report(defect.message, defect.urn or None)


policy_defects = StackValidationPolicy(
    name=DEFECTS_POLICY,
    description="No policy of the pack failed on an object: a policy that raised holds the deployment, with "
    "a message to report, instead of passing the object unjudged.",
    validate=_report_defects,
    enforcement_level=EnforcementLevel.MANDATORY,
)
