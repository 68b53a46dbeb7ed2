"""Forecast pacing in nodes: "10% of 3 nodes = 1 at a time", rounded as each controller rounds.

Karpenter rounds a percentage budget up (kubernetes-sigs/karpenter ``Budget.GetAllowedDisruptions``); the
MCO rounds a pool's ``maxUnavailable`` down, at least 1 (``node_controller.go``, ``maxUnavailable``); a
HyperShift Replace NodePool is a Cluster API MachineDeployment (``maxSurge`` up, ``maxUnavailable`` down);
InPlace rounds down, at least 1. Dynamic Karpenter pools say how their node count was estimated.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from mockruntime.run import run_program
from mockruntime.snapshots import plan_of, snapshot_from_plan
from nodefleet.drift.forecast import IN_PLACE, REPLACES, Forecast, Item, Obj, Snapshot, forecast, scaled_count
from tests.conftest import stack_fleet


@pytest.mark.parametrize(
    ("value", "total", "up", "down"),
    [
        ("10%", 3, 1, 0),
        ("10%", 10, 1, 1),
        ("10%", 11, 2, 1),
        ("25%", 10, 3, 2),
        ("0%", 50, 0, 0),
        ("100%", 7, 7, 7),
        ("3", 50, 3, 3),
        (2, 50, 2, 2),
    ],
)
def test_scaled_count_rounds_as_intstr_does(value: object, total: int, up: int, down: int) -> None:
    assert scaled_count(value, total, round_up=True) == up
    assert scaled_count(value, total, round_up=False) == down


def test_scaled_count_refuses_what_is_not_a_count() -> None:
    assert scaled_count("lots", 10, round_up=True) is None
    assert scaled_count("-1", 10, round_up=True) is None


def _pool(name: str, spec: dict[str, Any], label: str = "a") -> Obj:
    template = {"metadata": {"labels": {"team": label}}, "spec": {"nodeClassRef": {"name": "general"}}}
    manifest = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": name},
        "spec": {"template": template, **spec},
    }
    return Obj("edge", manifest)


def _relabelled(spec: dict[str, Any]) -> Item:
    result = forecast(Snapshot("before", (_pool("p", spec),)), Snapshot("after", (_pool("p", spec, "b"),)))
    (item,) = result.items
    assert item.verdict == REPLACES
    return item


def test_a_static_pool_is_paced_in_nodes_rounded_up() -> None:
    item = _relabelled({"replicas": 3, "disruption": {"budgets": [{"nodes": "10%"}]}})
    assert (item.nodes, item.node_count) == ("3 nodes (static pool: spec.replicas)", 3)
    assert item.paced_by == "10% of 3 nodes = 1 at a time (Karpenter rounds a percentage up)"


def test_karpenters_default_budget_in_nodes() -> None:
    item = _relabelled({"replicas": 25})
    assert item.paced_by == (
        "10% of 25 nodes = 3 at a time (Karpenter's default budget) (Karpenter rounds a percentage up)"
    )


def test_a_dynamic_pool_says_its_count_is_estimated_from_limits_nodes() -> None:
    item = _relabelled({"limits": {"nodes": 20}, "disruption": {"budgets": [{"nodes": "15%"}]}})
    assert item.node_count == 20
    assert item.nodes.startswith("at most 20 (estimated from limits.nodes: a dynamic pool runs only")
    assert item.paced_by == "15% of at most 20 nodes = at most 3 at a time (Karpenter rounds a percentage up)"


def test_a_dynamic_pool_without_a_node_limit_is_unknown_and_says_why() -> None:
    item = _relabelled({"limits": {"cpu": "100"}, "disruption": {"budgets": [{"nodes": "10%"}]}})
    assert item.node_count is None
    assert item.nodes == "unknown: Karpenter launches on demand (limits: cpu 100)"
    assert item.paced_by == (
        "10% of the pool's nodes at a time, at least 1 while it has any (Karpenter rounds a percentage up)"
    )


def test_budgets_that_do_not_limit_drift_do_not_pace_it() -> None:
    budgets = [{"nodes": "0", "reasons": ["Underutilized"]}, {"nodes": "2", "reasons": ["Drifted"]}]
    item = _relabelled({"replicas": 9, "disruption": {"budgets": budgets}})
    assert item.paced_by == "2 nodes at a time"


def _snap(stack: str, fleet: dict[str, Any]) -> Snapshot:
    return snapshot_from_plan(plan_of(run_program(stack, {"nodefleet:fleet": fleet})), stack)


def _by_name(result: Forecast) -> dict[tuple[str, str], Item]:
    return {(i.kind, i.name): i for i in result.items}


def test_hypershift_replace_in_nodes() -> None:
    fleet = stack_fleet("hosted")
    bumped = copy.deepcopy(fleet)
    bumped["clusters"][0]["release"] = "4.22.4"
    infra = _by_name(forecast(_snap("hosted", fleet), _snap("hosted", bumped)))[
        ("NodePool (HyperShift)", "infra")
    ]
    assert infra.paced_by == (
        "HyperShift Replace: maxSurge 1, maxUnavailable 0 of 2 nodes = 1 replaced at a time (1 extra, 0 "
        "unavailable; maxSurge rounds up, maxUnavailable down)"
    )


def test_machine_config_pool_counts_its_machine_sets_and_rounds_down() -> None:
    """dev's infra pool: two MachineSets of 1 replica labelled for it; an OS stream change reboots them."""
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["machineSets"][2]["bootImage"] = "pinned"  # the boot image controller is rhel-9 only
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["pools"][0]["osImageStream"] = "rhel-10"
    result = forecast(_snap("dev", fleet), _snap("dev", changed))
    pool = _by_name(result)[("MachineConfigPool", "infra")]
    assert pool.verdict == IN_PLACE
    assert pool.node_count == 2
    assert pool.nodes.startswith(
        "2 nodes (estimated from the replicas of the MachineSets labelled node-role.kubernetes.io/infra"
    )
    assert pool.paced_by == "maxUnavailable 1 of 2 nodes = 1 at a time (rounded down, at least 1)"
