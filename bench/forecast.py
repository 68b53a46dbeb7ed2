"""Forecast accuracy over the drift benchmark's month: forecast rollouts against measured drift events.

``bench/drift.py`` measures, at every event of a simulated month (130 Ignition token rotations, one CA
rotation, two release bumps), which node classes and NodePools Karpenter would mark drifted. Here the
drift forecast (:mod:`nodefleet.drift.forecast`) is asked the same question one event at a time: the program's
render plan before the event against the plan after it, with the controller state (token, CA) of each
side, and the verdicts are counted per node class and NodePool. The benchmark passes when the forecast
and the measurement agree exactly, per class and per kind of event, in every nodefleet mode and for both
Karpenter images. The naive mode (no nodefleet program) has nothing to forecast and is left out.

Measured and forecast share the hashing (``nodefleet/drift/rules.py``); they differ in everything around it:
the measurement builds the objects Karpenter sees with its own HyperShift model of each mode, the
forecast reads only the rendered manifests (annotations, HostedCluster, node class) and rebuilds them.

    venv/bin/python -m bench.forecast           # table
    venv/bin/python -m bench.forecast --json
"""

from __future__ import annotations

import argparse
import gc
import json
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from bench.drift import PAYLOAD_AMI, State, _hosted, _standalone, simulate, timeline
from mockruntime.run import MockRun
from mockruntime.snapshots import plan_of, snapshot_from_plan
from nodefleet.drift.forecast import ControllerState, Snapshot, forecast

MODES = ("legacy", "autonode", "s3-pointer")
_CLASS_KINDS = ("EC2NodeClass", "OpenshiftEC2NodeClass")


@dataclass
class Tally:
    mode: str
    karpenter: str
    node_class: Counter[str] = field(default_factory=Counter)
    node_pool: Counter[str] = field(default_factory=Counter)
    by_event: Counter[str] = field(default_factory=Counter)
    #: Events at which a node source's verdict was anything but "no rollout", e.g. a MachineSet change.
    other: Counter[str] = field(default_factory=Counter)


def _run(mode: str, state: State) -> MockRun:
    return _standalone(state) if mode == "s3-pointer" else _hosted(state, mode)


def _with_controller(snap: Snapshot, state: State, carry: bool) -> Snapshot:
    controller = ControllerState(
        token=state.token, ca_pem=state.ca, payload_ami=PAYLOAD_AMI, karpenter_carry=carry
    )
    return Snapshot(snap.source, snap.objects, controller)


def forecast_month(states: list[State]) -> tuple[list[Tally], dict[str, Any]]:
    tallies = []
    started = time.perf_counter()
    runs = forecasts = 0
    for mode in MODES:
        plans = []
        for s in states:
            plans.append(snapshot_from_plan(plan_of(_run(mode, s)), f"{s.event} at {s.hour:.1f} h"))
            # Every program run ends with a full collection (mockruntime.run); the snapshots kept for the
            # month would make each one slower than the last. They live until the end: exempt them.
            gc.freeze()
        runs += len(plans)
        for carry in (False, True):
            tally = Tally(mode, "openshift-carry" if carry else "upstream")
            snaps = [_with_controller(p, s, carry) for p, s in zip(plans, states, strict=True)]
            for prev, cur, state in zip(snaps, snaps[1:], states[1:], strict=False):
                result = forecast(prev, cur)
                forecasts += 1
                for item in result.rollouts:
                    if item.kind in _CLASS_KINDS:
                        tally.node_class[item.name] += 1
                        tally.by_event[state.event] += 1
                    elif item.kind == "NodePool (Karpenter)":
                        tally.node_pool[item.name] += 1
                    else:
                        tally.other[f"{item.kind} {item.name}"] += 1
            tallies.append(tally)
    meta = {
        "program_runs": runs,
        "forecasts": forecasts,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return tallies, meta


def compare(states: list[State]) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """One row per mode and Karpenter image: forecast and measured counts, and whether they agree."""
    measured, _ = simulate(states)
    by = {(c.mode, c.karpenter): c for c in measured}
    tallies, meta = forecast_month(states)
    rows = []
    for t in tallies:
        m = by[(t.mode, t.karpenter)]
        row: dict[str, Any] = {
            "mode": t.mode,
            "karpenter": t.karpenter,
            "forecast_node_class": dict(t.node_class),
            "measured_node_class": dict(m.node_class_drift),
            "forecast_node_pool": dict(t.node_pool),
            "measured_node_pool": dict(m.node_pool_drift),
            "forecast_by_event": dict(t.by_event),
            "measured_by_event": dict(m.by_event),
            "other_rollouts": dict(t.other),
        }
        row["agree"] = (
            row["forecast_node_class"] == row["measured_node_class"]
            and row["forecast_node_pool"] == row["measured_node_pool"]
            and row["forecast_by_event"] == row["measured_by_event"]
        )
        rows.append(row)
    return rows, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    states = timeline()
    rows, meta = compare(states)
    if args.json:
        print(json.dumps({"meta": meta, "rows": rows}, indent=2))
        return 0 if all(r["agree"] for r in rows) else 1
    print(
        f"{len(states) - 1} events; {meta['program_runs']} program runs, {meta['forecasts']} forecasts, "
        f"{meta['seconds']} s"
    )
    print(f"{'mode':<11} {'karpenter':<16} {'forecast rollouts per class':<30} {'measured':<24} agree")
    for r in rows:
        fc = ", ".join(f"{k} {v}" for k, v in sorted(r["forecast_node_class"].items())) or "0"
        ms = ", ".join(f"{k} {v}" for k, v in sorted(r["measured_node_class"].items())) or "0"
        print(f"{r['mode']:<11} {r['karpenter']:<16} {fc:<30} {ms:<24} {'yes' if r['agree'] else 'NO'}")
        events = ", ".join(f"{k}: {v}" for k, v in sorted(r["forecast_by_event"].items()))
        other = ", ".join(f"{k} {v}" for k, v in sorted(r["other_rollouts"].items()))
        print(
            f"{'':<28} by event: {events or '-'}; Karpenter NodePools: "
            f"{sum(r['forecast_node_pool'].values())}; not counted by bench.drift: {other or '-'}"
        )
    return 0 if all(r["agree"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
