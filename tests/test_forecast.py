"""The drift forecast on the example stacks: which changes replace nodes, which do not, and why."""

from __future__ import annotations

import copy
import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from mockruntime.run import run_program
from mockruntime.snapshots import (
    SnapshotError,
    plan_of,
    snapshot_from_plan,
    snapshot_from_render_dir,
    snapshot_from_state_file,
)
from nodefleet.drift.forecast import (
    CANNOT_APPLY,
    GITOPS,
    IN_PLACE,
    NEW,
    NEW_MACHINES_ONLY,
    NO_ROLLOUT,
    PULUMI,
    REMOVES,
    REPLACES,
    UNKNOWN,
    ControllerState,
    Forecast,
    Item,
    Snapshot,
    forecast,
    snapshot_from_state,
)
from tests.conftest import stack_fleet

CA_A = "-----BEGIN CERTIFICATE-----\nmcs-ca-a\n-----END CERTIFICATE-----\n"
CA_B = "-----BEGIN CERTIFICATE-----\nmcs-ca-b\n-----END CERTIFICATE-----\n"


def _snap(
    stack: str, fleet: dict[str, Any], *, ca: str = CA_A, controller: ControllerState | None = None
) -> Snapshot:
    config: dict[str, Any] = {"nodefleet:fleet": fleet}
    if stack == "karpenter":
        config["nodefleet:mcsCaBundle"] = ca
    snap = snapshot_from_plan(plan_of(run_program(stack, config)), stack)
    return Snapshot(snap.source, snap.objects, controller or ControllerState())


def _by_name(result: Forecast) -> dict[tuple[str, str], Item]:
    return {(i.kind, i.name): i for i in result.items}


def _verdicts(result: Forecast) -> dict[tuple[str, str], str]:
    return {key: item.verdict for key, item in _by_name(result).items()}


# --- what must not roll ---------------------------------------------------------------------------------


def test_token_rotation_on_openshift_karpenter_forecasts_no_rollout() -> None:
    fleet = stack_fleet("hosted")
    before = _snap("hosted", fleet, controller=ControllerState(token="token-0001"))
    after = _snap("hosted", fleet, controller=ControllerState(token="token-0002"))
    result = forecast(before, after)
    assert result.rollouts == ()
    assert set(_verdicts(result).values()) == {NO_ROLLOUT}
    assert result.notes == ()


def test_token_rotation_on_a_karpenter_without_the_carry_replaces_nodes() -> None:
    """The same rotation on a 4.21 control plane: its Karpenter hashes the whole userData."""
    fleet = stack_fleet("hosted")
    fleet["clusters"][0]["release"] = "4.21.9"
    before = _snap("hosted", fleet, controller=ControllerState(token="token-0001"))
    after = _snap("hosted", fleet, controller=ControllerState(token="token-0002"))
    result = forecast(before, after)
    assert {(i.kind, i.name) for i in result.rollouts} == {
        ("OpenshiftEC2NodeClass", "general"),
        ("OpenshiftEC2NodeClass", "batch"),
    }
    assert any("every Ignition token rotation" in n for n in result.notes)


def test_ca_rotation_of_a_self_managed_karpenter_forecasts_no_rollout() -> None:
    fleet = stack_fleet("karpenter")
    result = forecast(_snap("karpenter", fleet, ca=CA_A), _snap("karpenter", fleet, ca=CA_B))
    assert result.rollouts == ()
    assert _verdicts(result)[("EC2NodeClass", "general")] == NO_ROLLOUT


def test_managed_machine_set_ami_change_is_no_rollout() -> None:
    """The MCO owns a managed MachineSet's AMI (ignore_changes): a new catalog AMI is never applied."""
    fleet = stack_fleet("dev")
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    result = forecast(_snap("dev", fleet), _snap("dev", changed))
    item = _by_name(result)[("MachineSet", "dev-7xk2p-worker-us-east-1a")]
    assert item.verdict == NO_ROLLOUT
    assert "ignore_changes" in item.reasons[0]
    assert not item.rolls


# --- what does ------------------------------------------------------------------------------------------


def test_release_bump_of_a_hosted_cluster() -> None:
    fleet = stack_fleet("hosted")
    bumped = copy.deepcopy(fleet)
    bumped["clusters"][0]["release"] = "4.22.4"
    result = forecast(_snap("hosted", fleet), _snap("hosted", bumped))
    verdicts = _verdicts(result)
    assert verdicts == {
        ("NodePool (HyperShift)", "prod-east-infra"): REPLACES,
        ("OpenshiftEC2NodeClass", "general"): REPLACES,
        ("OpenshiftEC2NodeClass", "batch"): REPLACES,
        ("NodePool (Karpenter)", "on-demand"): NO_ROLLOUT,
        ("NodePool (Karpenter)", "spot"): NO_ROLLOUT,
    }
    general = _by_name(result)[("OpenshiftEC2NodeClass", "general")]
    assert "TargetConfigVersionHash" in general.reasons[0]
    assert "release 4.22.3 → 4.22.4" in general.reasons[0]
    # Paced by the Drifted budgets of the NodePools that use the class, business-hours freeze included.
    assert general.paced_by == (
        "NodePool on-demand: 10% of the pool's nodes at a time, at least 1 while it has any, 0 nodes during "
        "'0 0 28 * *' for 72h, 0 nodes during '0 9 * * mon-fri' for 8h (Karpenter rounds a percentage up)"
    )
    assert general.node_count is None and general.nodes.startswith("unknown")
    infra = _by_name(result)[("NodePool (HyperShift)", "prod-east-infra")]
    assert (infra.node_count, infra.paced_by) == (
        2,
        "HyperShift Replace: maxSurge 1, maxUnavailable 0 of 2 nodes = 1 replaced at a time (1 extra, 0 "
        "unavailable; maxSurge rounds up, maxUnavailable down)",
    )
    assert "control plane upgrade 4.22.3 → 4.22.4" in result.notes[0]
    # Nodes and control plane move in one change: the forecast says so and how to stage it.
    assert "NodePool prod-east-infra, node class batch, node class general move to 4.22.4" in result.notes[1]
    assert "python -m nodefleet upgrade" in result.notes[1]


def test_release_bump_of_a_self_managed_karpenter_moves_the_pointer_once() -> None:
    fleet = stack_fleet("karpenter")
    bumped = copy.deepcopy(fleet)
    bumped["clusters"][0]["release"] = "5.0.0-ec.3"
    result = forecast(_snap("karpenter", fleet), _snap("karpenter", bumped))
    assert {(i.kind, i.name) for i in result.rollouts} == {
        ("EC2NodeClass", "general"),
        ("EC2NodeClass", "arm"),
    }
    reason = _by_name(result)[("EC2NodeClass", "general")].reasons[0]
    assert reason.startswith("userData: Ignition pointer s3://edge-m2x7c-ignition/")
    assert "/5.0.0-ec.2/" in reason and "/5.0.0-ec.3/" in reason
    # The managed MachineSet follows the MCO, not the release: nothing for it to do.
    assert _verdicts(result)[("MachineSet", "edge-m2x7c-worker-us-east-1a")] == NO_ROLLOUT


def test_node_pool_label_change_replaces_the_pools_nodes() -> None:
    fleet = stack_fleet("hosted")
    labelled = copy.deepcopy(fleet)
    labelled["clusters"][0]["autoNode"]["nodePools"][1]["labels"] = {"team": "batch"}
    result = forecast(_snap("hosted", fleet), _snap("hosted", labelled))
    assert [(i.kind, i.name) for i in result.rollouts] == [("NodePool (Karpenter)", "spot")]
    spot = result.rollouts[0]
    assert spot.reasons == ("NodePool template: spec.template.metadata.labels.team",)
    assert spot.paced_by == "5 nodes at a time"
    assert spot.nodes == "unknown: Karpenter launches on demand (limits: cpu 1000)"


def test_node_pool_budget_and_limits_changes_never_roll() -> None:
    fleet = stack_fleet("hosted")
    changed = copy.deepcopy(fleet)
    pool = changed["clusters"][0]["autoNode"]["nodePools"][1]
    pool["disruption"]["driftBudget"] = "2"
    pool["limits"] = {"cpu": "2000"}
    pool["weight"] = 50
    result = forecast(_snap("hosted", fleet), _snap("hosted", changed))
    spot = _by_name(result)[("NodePool (Karpenter)", "spot")]
    assert spot.verdict == NO_ROLLOUT
    assert "never drift nodes" in spot.reasons[-1]
    assert spot.paced_by == "2 nodes at a time"


def _static(fleet: dict[str, Any], replicas: int) -> dict[str, Any]:
    """The hosted stack's spot pool made static (what a static pool may keep of it), with the gate it needs."""
    fleet = copy.deepcopy(fleet)
    auto = fleet["clusters"][0]["autoNode"]
    auto["karpenter"]["featureGates"] = ["StaticCapacity"]
    pool = auto["nodePools"][1]
    del pool["weight"]
    pool["limits"] = {}
    pool["disruption"] = {"driftBudget": pool["disruption"]["driftBudget"]}
    pool["replicas"] = replicas
    return fleet


def test_a_pool_switching_between_static_and_dynamic_cannot_be_applied_by_gitops() -> None:
    """In render mode Argo CD or Flux update the pool in place, which the NodePool API refuses: the change
    cannot be applied, no node rolls, and the forecast says so with the API server's words and the way out."""
    dynamic = stack_fleet("hosted")
    dynamic["clusters"][0]["autoNode"]["karpenter"]["featureGates"] = ["StaticCapacity"]
    static = _static(dynamic, 2)
    for before, after, nodes in ((static, dynamic, 2), (dynamic, static, None)):
        result = forecast(_snap("hosted", before), _snap("hosted", after), deployer=GITOPS)
        spot = _by_name(result)[("NodePool (Karpenter)", "spot")]
        assert (spot.verdict, spot.replaces_object, spot.rolls) == (CANNOT_APPLY, False, False), spot
        assert spot.node_count == nodes  # the pool as it stays
        assert "delete the NodePool first" in spot.reasons[0], spot
        assert spot.reasons[1] == (
            "the API server refuses the update: spec: Invalid value: Cannot transition NodePool between static "
            "(replicas set) and dynamic (replicas unset) provisioning modes"
        ), spot
        assert not result.rollouts
    scaled = forecast(_snap("hosted", static), _snap("hosted", _static(dynamic, 3)), deployer=GITOPS)
    assert _by_name(scaled)[("NodePool (Karpenter)", "spot")].verdict == NO_ROLLOUT


def test_a_pool_switching_between_static_and_dynamic_is_replaced_with_its_nodes_by_pulumi() -> None:
    """In apply mode Pulumi replaces the pool (replace_on_changes), deleting it first: all of its nodes go,
    whatever its budgets; nothing else changes. Either way round, and a static pool's new replica count is an
    ordinary update."""
    dynamic = stack_fleet("hosted")
    dynamic["clusters"][0]["autoNode"]["karpenter"]["featureGates"] = ["StaticCapacity"]
    static = _static(dynamic, 2)
    to_static = forecast(_snap("hosted", dynamic), _snap("hosted", static), deployer=PULUMI)
    spot = _by_name(to_static)[("NodePool (Karpenter)", "spot")]
    assert (spot.verdict, spot.replaces_object) == (REPLACES, True)
    (reason,) = spot.reasons
    assert reason.startswith("switches from dynamic to static provisioning (spec.replicas added)")
    assert reason.endswith("then the static pool launches 2 nodes (static pool: spec.replicas)")
    assert spot.nodes == "unknown: Karpenter launches on demand (limits: cpu 1000)"  # the old pool's
    assert spot.paced_by == "nothing: the pool's disruption budgets are deleted with it"
    assert [i.name for i in to_static.items if i.replaces_object] == ["spot"]
    assert [i.name for i in to_static.rollouts] == ["spot"]
    assert spot.as_dict()["replacesObject"] is True

    back = _by_name(forecast(_snap("hosted", static), _snap("hosted", dynamic), deployer=PULUMI))[
        ("NodePool (Karpenter)", "spot")
    ]
    assert (back.verdict, back.replaces_object) == (REPLACES, True)
    assert back.reasons[0].startswith("switches from static to dynamic provisioning (spec.replicas removed)")
    assert (back.nodes, back.node_count) == ("2 nodes (static pool: spec.replicas)", 2)

    scaled = _by_name(
        forecast(_snap("hosted", static), _snap("hosted", _static(dynamic, 3)), deployer=PULUMI)
    )
    assert scaled[("NodePool (Karpenter)", "spot")].replaces_object is False


def test_pinned_machine_set_ami_change_applies_only_to_new_machines() -> None:
    fleet = stack_fleet("dev")
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    result = forecast(_snap("dev", fleet), _snap("dev", changed))
    item = _by_name(result)[("MachineSet", "dev-7xk2p-worker-us-east-1b")]
    assert item.verdict == NEW_MACHINES_ONLY
    assert not item.rolls  # the machine-api never replaces running machines for a template change
    assert item.reasons[0] == (
        "AMI ami-06a6b025350ff1e23 → ami-05483066c3caaccf5 (RHCOS 9.8.20260403-0 → 416.94.202405291527-0)"
    )
    assert "3 running machines keep the old template" in item.reasons[1]
    assert (item.nodes, item.node_count) == ("3 machines", 3)
    assert item.paced_by.startswith("none: the machine-api never rolls a MachineSet")


def test_machine_set_scale_is_no_rollout_and_removal_removes_nodes() -> None:
    fleet = stack_fleet("dev")
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["machineSets"][0]["replicas"] = 5
    del changed["clusters"][0]["machineSets"][3]
    result = forecast(_snap("dev", fleet), _snap("dev", changed))
    scaled = _by_name(result)[("MachineSet", "dev-7xk2p-worker-us-east-1a")]
    assert (scaled.verdict, scaled.reasons) == (NO_ROLLOUT, ("scales 3 → 5 machines (no replacement)",))
    removed = _by_name(result)[("MachineSet", "dev-7xk2p-infra-us-east-1b")]
    assert (removed.verdict, removed.node_count) == (REMOVES, 1)


def test_os_stream_change_of_a_pool_rebuilds_its_nodes_in_place() -> None:
    fleet = stack_fleet("dev")
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["pools"][0]["osImageStream"] = "rhel-9"
    result = forecast(_snap("dev", fleet), _snap("dev", changed))
    assert _verdicts(result)[("MachineConfigPool", "infra")] == IN_PLACE


def test_new_objects_and_first_run() -> None:
    fleet = stack_fleet("hosted")
    grown = copy.deepcopy(fleet)
    grown["clusters"][0]["autoNode"]["nodePools"].append({"name": "gpu", "nodeClass": "batch"})
    result = forecast(_snap("hosted", fleet), _snap("hosted", grown))
    assert _verdicts(result)[("NodePool (Karpenter)", "gpu")] == NEW
    first = forecast(None, _snap("hosted", fleet))
    assert first.before is None
    assert {i.verdict for i in first.items} == {UNKNOWN}
    assert "first run" in first.items[0].reasons[0]


# --- reading the previous state back --------------------------------------------------------------------


def _write_render(plan_files: Any, root: Path) -> None:
    for f in plan_files:
        path = root / Path(f.target).name / f.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(f.content)


def test_previous_render_is_read_back_by_manifest_path(tmp_path: Path) -> None:
    fleet = stack_fleet("hosted")
    old_plan = plan_of(run_program("hosted", {"nodefleet:fleet": fleet}))
    assert snapshot_from_render_dir(old_plan, tmp_path / "nothing-here") is None  # first run
    _write_render(old_plan.files, tmp_path)
    bumped = copy.deepcopy(fleet)
    bumped["clusters"][0]["release"] = "4.22.4"
    bumped["clusters"][0]["autoNode"]["nodePools"].pop()  # the spot pool goes away
    new_plan = plan_of(run_program("hosted", {"nodefleet:fleet": bumped}))
    before = snapshot_from_render_dir(new_plan, tmp_path)
    assert before is not None and before.source == f"last render in {tmp_path}"
    result = forecast(before, snapshot_from_plan(new_plan, "program"))
    verdicts = _verdicts(result)
    assert verdicts[("OpenshiftEC2NodeClass", "general")] == REPLACES
    assert verdicts[("NodePool (Karpenter)", "spot")] == REMOVES  # found among the leftover files


def test_unreadable_previous_render_names_the_file(tmp_path: Path) -> None:
    plan = plan_of(run_program("dev", {"nodefleet:fleet": stack_fleet("dev")}))
    _write_render(plan.files, tmp_path)
    victim = tmp_path / Path(plan.files[0].target).name / plan.files[0].path
    victim.write_text("kind: [unclosed\n")
    with pytest.raises(SnapshotError, match=str(victim)):
        snapshot_from_render_dir(plan, tmp_path)


def _checkpoint(plan_files: Any, stack: str = "dev") -> dict[str, Any]:
    """A `pulumi stack export` document (checkpoint version 3) holding the objects of a render plan."""
    import yaml

    stack_urn = f"urn:pulumi:{stack}::nodefleet::pulumi:pulumi:Stack::nodefleet-{stack}"
    resources: list[dict[str, Any]] = [{"urn": stack_urn, "custom": False, "type": "pulumi:pulumi:Stack"}]
    providers: dict[str, str] = {}
    for f in plan_files:
        if f.target not in providers:
            urn = f"urn:pulumi:{stack}::nodefleet::pulumi:providers:kubernetes::{Path(f.target).name}-k8s"
            providers[f.target] = f"{urn}::04da6b54-80e4-46f7-96ec-b56ff0331ba9"
            inputs = {"renderYamlToDirectory": f.target, "version": "4.34.0"}
            resources.append(
                {"urn": urn, "custom": True, "id": "04da6b54-80e4-46f7-96ec-b56ff0331ba9",
                 "type": "pulumi:providers:kubernetes", "inputs": inputs, "outputs": inputs}
            )  # fmt: skip
        manifest = yaml.safe_load(f.content)
        token = f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}"
        resources.append(
            {
                "urn": f"urn:pulumi:{stack}::nodefleet::{token}::{f.name}",
                "custom": True,
                "id": f.name,
                "type": token,
                "inputs": manifest,
                "outputs": {**manifest, "status": {}},
                "parent": stack_urn,
                "provider": providers[f.target],
            }
        )
    return {"version": 3, "deployment": {"manifest": {"version": "v3.259.0"}, "resources": resources}}


def test_state_export_is_parsed_like_a_render(tmp_path: Path) -> None:
    fleet = stack_fleet("dev")
    plan = plan_of(run_program("dev", {"nodefleet:fleet": fleet}))
    export = _checkpoint(plan.files)
    path = tmp_path / "dev.json"
    path.write_text(json.dumps(export))
    before = snapshot_from_state_file(path)
    assert before.source == "Pulumi state (dev.json)"
    now = snapshot_from_plan(plan, "program")
    assert {o.key for o in before.objects} == {o.key for o in now.objects}
    assert forecast(before, now).rollouts == ()
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    new = snapshot_from_plan(plan_of(run_program("dev", {"nodefleet:fleet": changed})), "program")
    assert (
        _verdicts(forecast(before, new))[("MachineSet", "dev-7xk2p-worker-us-east-1b")] == NEW_MACHINES_ONLY
    )


def test_state_export_secrets_are_compared_not_read() -> None:
    secret = {"4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270", "ciphertext": "v1:abc"}
    export = {
        "version": 3,
        "deployment": {
            "resources": [
                {
                    "urn": "urn:pulumi:s::nodefleet::kubernetes:karpenter.k8s.aws/v1:EC2NodeClass::c",
                    "custom": True,
                    "type": "kubernetes:karpenter.k8s.aws/v1:EC2NodeClass",
                    "inputs": {
                        "apiVersion": "karpenter.k8s.aws/v1",
                        "kind": "EC2NodeClass",
                        "metadata": {"name": "c"},
                        "spec": {"userData": secret},
                    },
                }
            ]
        },
    }
    (obj,) = snapshot_from_state(export).objects
    assert obj.spec["userData"] == "[secret v1:abc]"
    assert obj.cluster == "default"


@pytest.mark.parametrize(
    ("document", "message"),
    [({"version": 3}, "no top-level 'deployment'"), ({"version": 2, "deployment": {}}, "version 2")],
)
def test_state_export_of_the_wrong_shape_is_refused(document: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        snapshot_from_state(document)


def test_state_file_errors_name_the_file(tmp_path: Path) -> None:
    with pytest.raises(SnapshotError, match="pulumi stack export --file"):
        snapshot_from_state_file(tmp_path / "missing.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(SnapshotError, match=r"bad\.json: not a `pulumi stack export`"):
        snapshot_from_state_file(bad)
    shutil.rmtree(tmp_path)


def test_managed_machine_set_ami_change_is_no_rollout_against_a_gitops_checkout(tmp_path: Path) -> None:
    """Forecast against the tree Argo CD or Flux syncs (written as `nodefleet render` writes it): the rendered
    object itself says its AMI is controller-owned, which is what the GitOps tools are configured from."""
    from mockruntime.render_tree import write_tree

    fleet = stack_fleet("dev")
    checkout = tmp_path / "gitops" / "rendered" / "dev"
    write_tree(checkout, "dev", plan_of(run_program("dev", {"nodefleet:fleet": fleet})))
    changed = copy.deepcopy(fleet)
    changed["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    new_plan = plan_of(run_program("dev", {"nodefleet:fleet": changed}))
    before = snapshot_from_render_dir(new_plan, checkout)
    assert before is not None
    worker = next(o for o in before.objects if o.meta.get("name") == "dev-7xk2p-worker-us-east-1a")
    assert worker.ignore_changes == () and worker.controller_owned == {
        "/spec/template/spec/providerSpec/value/ami"
    }
    item = _by_name(forecast(before, snapshot_from_plan(new_plan, "program")))[
        ("MachineSet", "dev-7xk2p-worker-us-east-1a")
    ]
    assert item.verdict == NO_ROLLOUT and not item.rolls
    assert "Argo CD and Flux" in item.reasons[0]


def test_an_item_read_back_from_json_is_the_item() -> None:
    from nodefleet.drift.forecast import REPLACES, Item

    item = Item("edge", "NodePool (Karpenter)", "spot", REPLACES, ("static",), "3 nodes", 3, "nothing", True)
    assert Item.from_dict(item.as_dict()) == item
