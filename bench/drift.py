"""Drift benchmark: a simulated month of Ignition token rotations, a CA rotation and two release bumps.

At every event the real program runs under Pulumi's mock runtime for each nodefleet mode; whether
Karpenter's hash of each node class and NodePool changed is then decided with nodefleet's drift model
(``nodefleet/drift/rules.py``, verified against Karpenter's own ``Hash()`` of v1.12-v1.15 by
tests/test_drift_reference.py; the fork carry is modelled, not verified), and every change of a node
class's or NodePool's static hash (or its AMI) is counted as one drift event: one rolling replacement of
every node of that class. The cluster CA bundle Karpenter hashes (v1.12+) is held; a rotation of it is
counted apart (``cluster_ca_rotation``): it drifts every node class once, in every mode. The controller side is modelled where nodefleet leaves a field to it:
HyperShift writes the Ignition stub (bearer token, CA, ``TargetConfigVersionHash``) into the EC2NodeClass it
generates (AutoNode) or rewrites (legacy) on every rotation.

Modes:
* ``naive``: an EC2NodeClass whose userData holds HyperShift's stub inline (what HyperShift with upstream
  Karpenter does); no nodefleet program involved.
* ``legacy``: nodefleet's legacy AutoNode class (placeholders + ignore_changes), HyperShift rewriting it.
* ``autonode``: nodefleet's OpenshiftEC2NodeClass, HyperShift generating the EC2NodeClass.
* ``s3-pointer``: nodefleet's self-managed EC2NodeClass with a stable S3 Ignition pointer.
Each is counted with upstream Karpenter and with OpenShift's fork carry (hash of ``TargetConfigVersionHash``
only, in the Karpenter of OCP 4.22+ payloads).

    venv/bin/python -m bench.drift            # table
    venv/bin/python -m bench.drift --json
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from mockruntime.run import MockRun, run_program, stack_fleet
from nodefleet import kinds as k
from nodefleet.drift.rules import (
    NODE_CLASS_DRIFT,
    hypershift_config_hash,
    hypershift_generated_ec2_node_class,
    static_drift,
    static_hash,
)
from nodefleet.render.ignition import hypershift_stub, user_data

HOURS = 30 * 24
ROTATION_EVERY_H = 5.5
CA_ROTATION_AT_H = 240.0
RELEASES = [(0.0, "4.22.3", "5.0.0-ec.2"), (192.0, "4.22.4", "5.0.0-ec.3"), (528.0, "4.22.5", "5.0.0")]
#: The cluster CA bundle Karpenter runs with (hashed into every EC2NodeClass hash since v1.12).
CLUSTER_CA = "-----BEGIN CERTIFICATE-----\nkube-apiserver-root-ca-0\n-----END CERTIFICATE-----\n"
CLUSTER_CA_NEXT = CLUSTER_CA.replace("ca-0", "ca-1")
#: The AMI HyperShift stamps for the payload: the same RHCOS for z-stream bumps.
PAYLOAD_AMI = "ami-06a6b025350ff1e23"


@dataclass(frozen=True)
class State:
    hour: float
    event: str
    token: str
    ca: str
    hosted_release: str
    standalone_release: str


def timeline() -> list[State]:
    """Every event of the month, in order, with the state after it."""
    events: list[tuple[float, str]] = [(h, "release") for h, _, _ in RELEASES[1:]]
    events.append((CA_ROTATION_AT_H, "ca-rotation"))
    rotation = ROTATION_EVERY_H
    while rotation < HOURS:
        events.append((rotation, "token-rotation"))
        rotation += ROTATION_EVERY_H
    states = [State(0.0, "start", "token-0000", _ca(0), RELEASES[0][1], RELEASES[0][2])]
    for hour, event in sorted(events):
        prev = states[-1]
        token = f"token-{len([s for s in states if s.event == 'token-rotation']) + 1:04d}"
        release = next(r for r in reversed(RELEASES) if r[0] <= hour)
        states.append(
            State(
                hour,
                event,
                token if event == "token-rotation" else prev.token,
                _ca(1) if event == "ca-rotation" or prev.ca == _ca(1) else prev.ca,
                release[1],
                release[2],
            )
        )
    return states


def _ca(n: int) -> str:
    return f"-----BEGIN CERTIFICATE-----\nignition-server-ca-{n}\n-----END CERTIFICATE-----\n"


def _stub(state: State, node_pool: str) -> str:
    config_hash = hypershift_config_hash(release=state.hosted_release)
    return user_data(
        hypershift_stub(
            "ignition-server-clusters-prod-east.apps.example.com",
            token=state.token,
            ca_pem=state.ca,
            node_pool=f"clusters-prod-east/{node_pool}",
            config_hash=config_hash,
        )
    )


def _hosted(state: State, mode: str) -> MockRun:
    raw = stack_fleet("hosted")
    cluster = raw["clusters"][0]
    cluster["release"] = state.hosted_release
    cluster["autoNode"]["mode"] = mode
    return run_program("bench", {"nodefleet:fleet": raw})


def _standalone(state: State) -> MockRun:
    raw = stack_fleet("karpenter")
    raw["clusters"][0]["release"] = state.standalone_release
    return run_program("bench", {"nodefleet:fleet": raw, "nodefleet:mcsCaBundle": state.ca})


def _named(run: MockRun, token: str) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in run.of_type(token)}


def node_classes(mode: str, state: State) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]], int]:
    """The live EC2NodeClasses and Karpenter NodePools of a mode at one state, and the program runs it took."""
    if mode == "naive":
        spec = {
            "amiFamily": "Custom",
            "amiSelectorTerms": [{"id": PAYLOAD_AMI}],
            "userData": _stub(state, "general"),
        }
        manifest = {
            "apiVersion": k.EC2_NODE_CLASS.api_version,
            "kind": k.EC2_NODE_CLASS.kind,
            "metadata": {"name": "general"},
            "spec": spec,
        }
        return {"general": manifest}, {}, 0
    if mode == "s3-pointer":
        run = _standalone(state)
        return _named(run, k.EC2_NODE_CLASS.token), _named(run, k.KARPENTER_NODE_POOL.token), 1
    run = _hosted(state, "legacy" if mode == "legacy" else "autonode")
    pools = _named(run, k.KARPENTER_NODE_POOL.token)
    if mode == "legacy":
        live = {}
        for name, declared in _named(run, k.EC2_NODE_CLASS.token).items():
            # ignore_changes leaves userData and amiSelectorTerms to HyperShift, which rewrites them.
            obj = copy.deepcopy(declared)
            obj["spec"]["userData"] = _stub(state, f"{name}-karpenter")
            obj["spec"]["amiSelectorTerms"] = [{"id": PAYLOAD_AMI}]
            live[name] = obj
        return live, pools, 1
    generated = {
        name: hypershift_generated_ec2_node_class(
            oc,
            user_data=_stub(state, f"{name}-karpenter"),
            ami=PAYLOAD_AMI,
            instance_profile="prod-east-4kq8z-worker",
            infra_id="prod-east-4kq8z",
        )
        for name, oc in _named(run, k.OPENSHIFT_EC2_NODE_CLASS.token).items()
    }
    return generated, pools, 1


@dataclass
class Count:
    mode: str
    karpenter: str
    node_class_drift: dict[str, int] = field(default_factory=dict)
    node_pool_drift: dict[str, int] = field(default_factory=dict)
    by_event: dict[str, int] = field(default_factory=dict)
    #: Node classes a rotation of the cluster CA bundle alone drifts (held constant in the month).
    cluster_ca_rotation: int = 0


def simulate(states: list[State]) -> tuple[list[Count], dict[str, Any]]:
    counts: list[Count] = []
    runs = 0
    started = time.perf_counter()
    for mode in ("naive", "legacy", "autonode", "s3-pointer"):
        snapshots = []
        for state in states:
            classes, pools, n = node_classes(mode, state)
            runs += n
            snapshots.append((state, classes, pools))
        for carry in (False, True):
            count = Count(mode, "openshift-carry" if carry else "upstream")
            prev_c: dict[str, str] = {}
            prev_p: dict[str, str] = {}
            for state, classes, pools in snapshots:
                hashes_c = {
                    n: static_hash(o, carry=carry, ca_bundle=CLUSTER_CA)
                    + json.dumps(o["spec"].get("amiSelectorTerms"), sort_keys=True)
                    for n, o in classes.items()
                }
                hashes_p = {n: static_hash(o) for n, o in pools.items()}
                for name, h in hashes_c.items():
                    if name in prev_c and prev_c[name] != h:
                        count.node_class_drift[name] = count.node_class_drift.get(name, 0) + 1
                        count.by_event[state.event] = count.by_event.get(state.event, 0) + 1
                for name, h in hashes_p.items():
                    if name in prev_p and prev_p[name] != h:
                        count.node_pool_drift[name] = count.node_pool_drift.get(name, 0) + 1
                prev_c, prev_p = hashes_c, hashes_p
            _, classes, _ = snapshots[-1]
            count.cluster_ca_rotation = sum(
                static_drift(o, o, carry=carry, ca_bundle_before=CLUSTER_CA, ca_bundle_after=CLUSTER_CA_NEXT)
                == NODE_CLASS_DRIFT
                for o in classes.values()
            )
            counts.append(count)
    meta = {
        "events": {
            e: sum(s.event == e for s in states) for e in ("token-rotation", "ca-rotation", "release")
        },
        "real_changes": sum(s.event == "release" for s in states),
        "program_runs": runs,
        "seconds": round(time.perf_counter() - started, 1),
    }
    return counts, meta


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", action="store_true", help="machine-readable output")
    args = parser.parse_args(argv)
    counts, meta = simulate(timeline())
    if args.json:
        print(json.dumps({"meta": meta, "counts": [c.__dict__ for c in counts]}, indent=2))
        return 0
    ev = meta["events"]
    print(
        f"simulated {HOURS} h: {ev['token-rotation']} token rotations, {ev['ca-rotation']} CA rotation, "
        f"{ev['release']} release bumps ({meta['real_changes']} real changes); "
        f"{meta['program_runs']} program runs under the mock runtime, {meta['seconds']} s"
    )
    print(
        f"{'mode':<11} {'karpenter':<16} {'drift events per node class':<30} {'per NodePool':<14} "
        f"{'cluster CA rotation':<20} by event"
    )
    for c in counts:
        per_class = max(c.node_class_drift.values(), default=0)
        per_pool = max(c.node_pool_drift.values(), default=0)
        events = ", ".join(
            f"{e}: {n // max(len(c.node_class_drift), 1)}" for e, n in sorted(c.by_event.items())
        )
        ca = f"{c.cluster_ca_rotation} of {len(c.node_class_drift) or c.cluster_ca_rotation} classes"
        print(f"{c.mode:<11} {c.karpenter:<16} {per_class:<30} {per_pool:<14} {ca:<20} {events or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
