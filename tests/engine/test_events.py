"""The engine event-log reader (engine/events.py) on event lines in the engine's documented format
(tests/engine/data/SOURCES.md): what the engine tier compares with `python -m nodefleet check --json`."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.events import (
    EventLogError,
    Finding,
    changes,
    findings,
    parse_lines,
    program_errors,
    read_event_log,
    step_urns,
)

DATA = Path(__file__).parent / "data"


def test_policy_results_are_read_from_policy_events() -> None:
    events = read_event_log(DATA / "preview-stale-boot-images.jsonl")
    assert findings(events) == {
        Finding(
            "boot-image-skew",
            "mandatory",
            "urn:pulumi:stale-boot-images::nodefleet::nodefleet:standalone:Cluster$"
            "kubernetes:machine.openshift.io/v1beta1:MachineSet::legacy-p2n8v-worker-us-east-1a",
        )
    }


def test_advisories_and_stack_findings_without_a_resource_are_kept() -> None:
    events = read_event_log(DATA / "preview-stack-and-advisory-findings.jsonl")
    got = {(f.policy, f.level, f.resource.rsplit("::", 1)[-1]) for f in findings(events)}
    assert got == {
        ("drift-budget", "advisory", "skewed-karpenter-ahead"),
        ("version-skew", "mandatory", "skewed-nodeclass-ahead"),
        ("skew-record", "mandatory", ""),
    }


def test_planned_steps_and_change_counts() -> None:
    events = read_event_log(DATA / "preview-stale-boot-images.jsonl")
    assert len(step_urns(events)) == 5
    assert changes(events) == {"create": 5}
    assert changes(read_event_log(DATA / "up-unchanged.jsonl")) == {"same": 9}


def test_the_programs_own_errors_are_told_from_the_engines_generic_line() -> None:
    events = read_event_log(DATA / "preview-invalid-config.jsonl")
    assert program_errors(events) == [
        "stacks/Pulumi.invalid.yaml: nodefleet:fleet.clusters[0].machineSets[0].instanceTyp: unknown key "
        "'instanceTyp'; did you mean 'instanceType'?"
    ]


def test_a_log_recorded_on_this_machine_reads_as_a_run_without_results() -> None:
    events = read_event_log(DATA / "recorded-cli-3.259.0-no-language-host.jsonl")
    assert [e.cancel_event is not None for e in events] == [True]
    assert findings(events) == set() and changes(events) == {}


def test_lines_that_are_not_engine_events_are_refused_with_their_line_number() -> None:
    with pytest.raises(EventLogError, match="log:2: not JSON"):
        parse_lines(['{"sequence":0,"timestamp":1,"cancelEvent":{}}', '{"sequence":1,'], "log")
    with pytest.raises(EventLogError, match="log:1: not an engine event"):
        parse_lines(['{"policyName": "x"}'], "log")
    with pytest.raises(EventLogError, match="unknown enforcement level"):
        findings(
            parse_lines(
                [
                    '{"sequence":0,"timestamp":1,"policyEvent":{"policyName":"p","message":"m","color":"never",'
                    '"policyPackName":"n","policyPackVersion":"1","policyPackVersionTag":"1","enforcementLevel":"loud"}}'
                ]
            )
        )
