"""Policy results, diagnostics and change counts from the Pulumi engine's structured event stream.

``pulumi preview --json`` leaves policy results out (pulumi/pulumi#18851); the engine's event log keeps
them. ``pulumi preview --event-log FILE`` (a flag the CLI registers only when ``PULUMI_DEBUG_COMMANDS=true``,
as the Automation API sets it) writes one JSON ``apitype.EngineEvent`` per line
(pulumi/pulumi ``sdk/go/common/apitype/events.go``): a discriminated union whose ``policyEvent`` carries
``resourceUrn`` (omitted for a stack-level finding without a resource), ``policyName``, ``policyPackName``,
``enforcementLevel`` and ``message``. Lines are decoded with the Pulumi SDK's own
``pulumi.automation.events.EngineEvent.from_json``, the parser the Automation API uses for the same file.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from pulumi.automation.events import DiagnosticEvent, EngineEvent, SummaryEvent

#: The engine's level strings (apitype.EnforcementLevel) as ``check`` spells them. The events.go comment
#: still calls advisory "warning"; a remediate policy that still finds a violation reports it as mandatory.
_LEVELS = {"advisory": "advisory", "warning": "advisory", "mandatory": "mandatory", "remediate": "mandatory"}


class EventLogError(ValueError):
    """A line of the event log is not an engine event."""


@dataclass(frozen=True, order=True)
class Finding:
    """One policy result, keyed the way ``python -m nodefleet check --json`` keys its violations."""

    policy: str
    level: str  # "mandatory" | "advisory"
    #: URN, "" for a stack-level finding without one. The mock runtime builds URNs as the engine does
    #: (mockruntime/run.py), so ``check --json`` and the engine name a resource by the same string.
    resource: str


def parse_lines(lines: Iterable[str], source: str = "<event log>") -> list[EngineEvent]:
    events: list[EngineEvent] = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as e:
            raise EventLogError(f"{source}:{number}: not JSON ({e.msg})") from None
        if not isinstance(data, dict) or "sequence" not in data:
            raise EventLogError(f"{source}:{number}: not an engine event (no sequence number)")
        events.append(EngineEvent.from_json(data))
    return sorted(events, key=lambda e: e.sequence)


def read_event_log(path: Path) -> list[EngineEvent]:
    with path.open(encoding="utf-8") as f:
        return parse_lines(f, str(path))


def findings(events: Iterable[EngineEvent]) -> set[Finding]:
    """Every policy violation the engine reported, as (policy, level, resource)."""
    out: set[Finding] = set()
    for e in events:
        p = e.policy_event
        if p is None:
            continue
        level = _LEVELS.get(p.enforcement_level)
        if level is None:
            raise EventLogError(f"policy {p.policy_name}: unknown enforcement level {p.enforcement_level!r}")
        out.add(Finding(p.policy_name, level, p.resource_urn or ""))
    return out


def diagnostics(events: Iterable[EngineEvent], severity: str = "error") -> list[DiagnosticEvent]:
    return [
        e.diagnostic_event
        for e in events
        if e.diagnostic_event is not None and e.diagnostic_event.severity == severity
    ]


#: The engine's own line when the program exits non-zero without saying it has reported its error
#: (pulumi/pulumi pkg/resource/deploy/program_source.go, "an unhandled error occurred: %v", around the Python
#: language host's "program exited with non-zero exit code: %d"). nodefleet's program exits with 32 after its
#: own errors (components/shutdown.py), which the language host turns into a bail without this line; other
#: programs, and a Python exception outside that path, still get it.
ENGINE_PROGRAM_FAILED = re.compile(
    r"an unhandled error occurred: program exited with non-zero exit code: \d+"
)


def program_errors(events: Iterable[EngineEvent]) -> list[str]:
    """Error diagnostics other than the engine's generic "program exited" line: what the program said."""
    messages = [d.message.strip() for d in diagnostics(events)]
    return [m for m in messages if not ENGINE_PROGRAM_FAILED.fullmatch(m)]


def summary(events: Iterable[EngineEvent]) -> SummaryEvent | None:
    found = [e.summary_event for e in events if e.summary_event is not None]
    return found[-1] if found else None


def changes(events: Iterable[EngineEvent]) -> dict[str, int]:
    """The summary's resource changes by operation, ``{"same": 9}`` for a run that changed nothing."""
    s = summary(events)
    return {str(getattr(op, "value", op)): n for op, n in (s.resource_changes if s else {}).items() if n}


def step_urns(events: Iterable[EngineEvent]) -> set[str]:
    """URNs of every resource the engine planned a step for."""
    return {e.resource_pre_event.metadata.urn for e in events if e.resource_pre_event is not None}


#: The steps of one replacement (pulumi/pulumi apitype.OpType): whichever order the engine takes.
_REPLACEMENT_STEPS = {"replace", "create-replacement", "delete-replaced"}


def step_ops(events: Iterable[EngineEvent]) -> dict[str, str]:
    """The operation the engine planned for each resource, by URN: ``same``, ``create``, ``update``,
    ``delete``, …, and ``replace`` for a resource replaced (which takes several steps)."""
    ops: dict[str, list[str]] = {}
    for e in events:
        if e.resource_pre_event is not None:
            m = e.resource_pre_event.metadata
            ops.setdefault(m.urn, []).append(str(getattr(m.op, "value", m.op)))
    return {urn: "replace" if _REPLACEMENT_STEPS & set(seen) else seen[-1] for urn, seen in ops.items()}
