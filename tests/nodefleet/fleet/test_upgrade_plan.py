"""The plan of a fleet upgrade, judged from stacks as `check` reads them (nodefleet/fleet/upgrade_plan.py)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.bootimages.versions import parse_ocp
from nodefleet.fleet.upgrade_plan import (
    RELEASE_FORM,
    ClusterMove,
    FileStep,
    Plan,
    PlanError,
    StackInput,
    Step,
    Support,
    WavePlan,
    config_difference,
    expected_config,
    judge,
    parse_release,
    parse_supported_versions,
    plan_lines,
    waves_of,
)
from nodefleet.render.objects import load_fleet
from tests.conftest import PROJECT

FLEET = PROJECT / "tests" / "fleet"


def _raw(stack: str) -> dict[str, Any]:
    folder = (
        FLEET / "regional" if (FLEET / "regional" / f"Pulumi.{stack}.yaml").exists() else FLEET / "upgrade"
    )
    return yaml.safe_load((folder / f"Pulumi.{stack}.yaml").read_text())["config"]["nodefleet:fleet"]  # type: ignore[no-any-return]


def _input(
    stack: str, raw: dict[str, Any] | None = None, held: frozenset[tuple[str, str]] = frozenset()
) -> StackInput:
    fleet = load_fleet(raw if raw is not None else _raw(stack), stack, PROJECT)
    return StackInput(
        stack, f"stacks/Pulumi.{stack}.yaml", fleet.config.wave, fleet.config.output.mode, fleet, held
    )


def _at(stack: str, release: str) -> StackInput:
    raw = _raw(stack)
    for cluster in raw["clusters"]:
        cluster["release"] = release
    return _input(stack, raw)


SUPPORTED = Support(("4.22", "4.21", "4.20"), "nodefleet-fleet.yaml hypershift.supportedVersions")


@pytest.mark.parametrize(
    "text", ["4.22.4-multi", "4.22.04", "4.22", "5.0.0-ec.2", "v4.22.4", " 4.22.4", "4.22.4\n", "04.22.4", ""]
)
def test_a_release_has_one_form(text: str) -> None:
    with pytest.raises(PlanError) as caught:
        parse_release(text)
    assert str(caught.value).endswith(f"not a release; use {RELEASE_FORM}")


def test_a_release_nodefleet_cannot_place_is_refused_with_its_range() -> None:
    assert str(parse_release("4.22.4")) == "4.22.4" and str(parse_release("5.0.0")) == "5.0.0"
    with pytest.raises(PlanError, match=r"4\.23\.0 does not exist"):
        parse_release("4.23.0")


def test_the_supported_versions_configmap_is_read_as_the_operator_writes_it() -> None:
    assert parse_supported_versions('{"versions":["4.17","4.16","4.15","4.14"]}', "cm") == (
        "4.17",
        "4.16",
        "4.15",
        "4.14",
    )
    assert parse_supported_versions(["4.22"], "registry") == ("4.22",)
    for bad in ('{"versions": "4.22"}', "not json", '{"versions": ["4.22.1"]}', [], None, "[" * 100_000):
        with pytest.raises(ValueError):
            parse_supported_versions(bad, "cm")


def test_a_patch_upgrade_moves_every_hosted_cluster() -> None:
    stacks = [_input(s) for s in ("canary-east", "east-a", "Team_B")]
    judged = judge(stacks, parse_ocp("4.22.4"), {"mgmt-use2-a": SUPPORTED, "mgmt-euw1-a": SUPPORTED})
    assert judged.refusals == () and judged.left_out == ()
    assert sorted((m.stack, m.cluster, m.current) for m in judged.moves) == [
        ("Team_B", "shop", "4.22.3"), ("canary-east", "edge", "4.22.3"), ("east-a", "pay", "4.22.3"),
        ("east-a", "shop", "4.22.3"),
    ]  # fmt: skip
    assert [(w, [s.stack for s in members]) for w, members in waves_of(stacks, judged.moves)] == [
        ("canary", ["canary-east"]),
        ("early", ["Team_B"]),
        ("main", ["east-a"]),
    ]


def test_clusters_ahead_are_all_named_with_the_stacks_to_leave_out() -> None:
    stacks = [_input("canary-east"), _at("east-a", "4.22.5"), _at("Team_B", "4.22.6"), _input("east-b")]
    judged = judge(stacks, parse_ocp("4.22.4"), {}, selected=["canary-east", "east-a", "Team_B", "east-b"])
    assert judged.refusals == (
        "--release 4.22.4 is a downgrade for 3 clusters (east-a/shop at 4.22.5, east-a/pay at 4.22.5, Team_B/shop at "
        "4.22.6), and nodefleet does not stage downgrades: use a release at or above 4.22.6, or leave stacks east-a, "
        "Team_B out with --stacks canary-east,east-b",
    )


def test_a_control_plane_moves_one_minor_at_a_time_with_5_0_after_4_22() -> None:
    one_hop = judge([_at("canary-east", "4.22.3")], parse_ocp("5.0.0"), {})
    assert one_hop.refusals == () and [m.target for m in one_hop.moves] == ["5.0.0"]
    skip = judge([_at("canary-east", "4.21.14"), _at("east-a", "4.20.2")], parse_ocp("5.0.0"), {})
    assert skip.refusals == (
        "--release 5.0.0 skips a minor release for 3 clusters (canary-east/edge at 4.21.14 would skip 4.22; "
        "east-a/shop at 4.20.2 would skip 4.21, 4.22; east-a/pay at 4.20.2 would skip 4.21, 4.22), and a control plane "
        "moves one minor at a time: upgrade to a 4.21 release first (`fleet upgrade --release 4.21.z`), then to 5.0.0",
    )
    assert skip.moves == ()


def test_a_release_the_management_cluster_does_not_run_is_refused_and_an_unknown_one_said() -> None:
    stacks = [_at("canary-east", "4.22.3"), _at("east-b", "4.22.3")]
    judged = judge(stacks, parse_ocp("5.0.0"), {"mgmt-use2-a": SUPPORTED, "mgmt-use2-b": None})
    assert judged.refusals == (
        "--release 5.0.0: the HyperShift operator of 1 management cluster does not run 5.0 (mgmt-use2-a runs 4.22, "
        "4.21, 4.20 (nodefleet-fleet.yaml hypershift.supportedVersions; clusters canary-east/edge)): upgrade the "
        "HyperShift operator there first, or leave those stacks out with --stacks",
    )
    assert judged.notes == (
        "management cluster mgmt-use2-b: the release lines its HyperShift operator runs are not declared "
        "(hypershift.supportedVersions in the fleet registry), so the plan could not check them",
    )


def test_nodes_held_from_an_unfinished_upgrade_are_refused_and_a_cluster_at_the_release_finishes_its_nodes() -> (
    None
):
    earlier = _input("canary-east", held=frozenset({("edge", "NodePool infra")}))
    judged = judge([earlier], parse_ocp("4.22.5"), {})
    assert judged.refusals == (
        "--release 4.22.5: 1 cluster still holds nodes from an earlier, unfinished upgrade (canary-east/edge holds "
        "NodePool infra (stacks/Pulumi.canary-east.yaml) from an upgrade to 4.22.3): finish it first (`fleet upgrade "
        "--release 4.22.3`), then upgrade to 4.22.5",
    )
    finishing = judge([earlier], parse_ocp("4.22.3"), {})
    assert [(m.cluster, m.nodes_only) for m in finishing.moves] == [("edge", True)]


def test_a_node_pool_pinned_out_of_the_skew_after_the_move_is_refused() -> None:
    raw = _raw("canary-east")
    raw["clusters"][0]["release"] = "4.22.3"
    raw["clusters"][0]["nodePools"][0]["release"] = "4.20.9"
    judged = judge([_input("canary-east", raw)], parse_ocp("5.0.0"), {})
    (refusal,) = judged.refusals
    assert refusal.startswith(
        "--release 5.0.0 would put 1 node source pinned in their stack files outside the node skew: canary-east/edge: "
        "NodePool infra is pinned at 4.20.9 by its stack file; with the control plane at 5.0.0 it would be 3 minor "
        "releases behind its control plane at 5.0.0 (OCP 5.0 counts as 4.23); at most 2 are supported"
    )
    assert (
        judge([_input("canary-east", raw)], parse_ocp("5.0.0"), {}, skew_profile="hypershift").refusals == ()
    )


def test_a_standalone_cluster_moves_when_its_boot_images_stay_in_the_skew() -> None:
    judged = judge([_input("plant-last")], parse_ocp("4.22.4"), {})
    assert judged.refusals == () and judged.left_out == ()
    (move,) = judged.moves
    assert (move.kind, move.cluster, move.current, move.keep_stream) == ("standalone", "plant", "4.22.3", "")


def test_a_standalone_cluster_keeps_its_os_stream_across_5_0() -> None:
    (move,) = judge([_input("plant-last")], parse_ocp("5.0.0"), {}).moves
    assert move.keep_stream == "rhel-9"
    assert "osImageStream: rhel-9 is written into its stack file" in move.notes[-1]


def test_a_standalone_cluster_whose_boot_images_would_leave_the_skew_is_left_out_with_the_fix() -> None:
    raw = _raw("plant-last")
    raw["clusters"][0].update(release="4.21.9", catalog="catalogs/coreos-bootimages-4.10.yaml")
    judged = judge([_input("plant-last", raw)], parse_ocp("4.22.4"), {})
    assert judged.moves == () and judged.refusals == ()
    (left,) = judged.left_out
    assert left.cluster == "plant" and left.reason.startswith(
        "not moved: at 4.22.4 its boot images would be outside the boot image skew the cluster enforces (MachineSet "
        "plant-7q2wx-worker-us-east-2a: Boot image RHCOS 410.84."
    )
    assert left.reason.endswith(
        "Update the catalog (catalogs/coreos-bootimages-4.10.yaml) to boot images of 4.22 first (the cluster's "
        "coreos-bootimages ConfigMap), then run the upgrade again"
    )


def test_the_expected_edit_and_where_another_differs() -> None:
    before = _input("canary-east").fleet.config.model_dump()
    move = ClusterMove("canary-east", "edge", "hosted", "4.22.3", "4.22.4", "mgmt-use2-a", "clusters")
    after = expected_config(before, [move], "control-plane", frozenset())
    (edge,) = after["clusters"]
    assert edge["release"] == "4.22.4" and [p["release"] for p in edge["node_pools"]] == ["4.22.3", "4.22.3"]
    held = frozenset({("edge", "NodePool infra"), ("edge", "NodePool workers")})
    released = expected_config(after, [move], "nodes", held)
    assert [p["release"] for p in released["clusters"][0]["node_pools"]] == [None, None]
    wrong = copy.deepcopy(after)
    wrong["clusters"][0]["node_pools"][1]["replicas"] = 9
    assert (
        config_difference(after, wrong)
        == "clusters[edge].node_pools[workers].replicas: 9 where the step leaves None"
    )
    assert config_difference(after, after) == ""


def _plan() -> Plan:
    move = ClusterMove("canary-east", "edge", "hosted", "4.22.3", "4.22.4", "mgmt-use2-a", "clusters")
    steps = (
        Step("canary", "control-plane", {"canary-east": FileStep("a" * 64, "b" * 64, ("edge: HostedCluster edge: release 4.22.3 → 4.22.4",))}),
        Step("canary", "nodes", {"canary-east": FileStep("b" * 64, "c" * 64, ("edge: NodePool infra: release 4.22.3 removed",))}),
    )  # fmt: skip
    return Plan(
        "4.22.4",
        (WavePlan("canary", {"canary-east": ("render", ("edge",))}, steps, (move,)),),
        (),
        ("a note",),
    )


def test_a_plan_round_trips_through_json_with_the_same_digest() -> None:
    plan = _plan()
    again = Plan.from_json(plan.to_json())
    assert again == plan and again.digest() == plan.digest()
    other = Plan("4.22.5", plan.waves, (), plan.notes)
    assert other.digest() != plan.digest()


def test_the_plan_reads_as_text_a_user_can_paste() -> None:
    assert plan_lines(_plan(), {"canary/control-plane": "gate"}, commit=True) == [
        "wave 1/1 canary: canary-east",
        "  1. control-plane: edit, render, commit (done: gate)",
        "     canary-east / edge: HostedCluster edge: release 4.22.3 → 4.22.4",
        "     gate: the control planes report 4.22.4 Completed",
        "  2. nodes: edit, render, commit",
        "     canary-east / edge: NodePool infra: release 4.22.3 removed",
        "     gate: the wave is healthy on 4.22.4",
        "note: a note",
    ]


def test_stacks_are_read_as_check_reads_them_aliases_included(tmp_path: Path) -> None:
    """Two hosted clusters sharing their node pools through a YAML anchor and alias: the model has both clusters'
    pools, and the plan moves both (the regression: 'still has nodes held from an earlier upgrade')."""
    raw = _raw("east-a")
    assert raw["clusters"][0]["release"] == raw["clusters"][1]["release"]
    judged = judge([_input("east-a", raw)], parse_ocp("4.22.4"), {})
    assert judged.refusals == () and len(judged.moves) == 2
