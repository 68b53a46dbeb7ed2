"""What the program registers for ``output.adopt``, under Pulumi's mock runtime: the ``import`` option on exactly
the listed objects, in apply mode only."""

from __future__ import annotations

import copy
from typing import Any

import pulumi
import pytest
import yaml

from mockruntime.run import run_program
from nodefleet import kinds as k
from tests.conftest import PROJECT, nodefleet, stack_fleet

ADOPT = {
    "prod-east": [
        "HostedCluster.hypershift.openshift.io clusters/prod-east",
        "NodePool.hypershift.openshift.io clusters/prod-east-infra",
    ],
    "prod-east-hosted": ["NodePool.karpenter.sh spot"],
}


def _hosted(mode: str, adopt: dict[str, list[str]]) -> dict[str, Any]:
    raw = copy.deepcopy(stack_fleet("hosted"))
    raw["output"] = {"mode": mode, "adopt": adopt}
    if mode == "apply":
        raw["output"]["kubeconfig"] = "mgmt.kubeconfig"
        raw["clusters"][0]["hostedKubeconfig"] = "hosted.kubeconfig"
    return raw


def test_apply_mode_imports_exactly_the_listed_objects() -> None:
    run = run_program("hosted", {"nodefleet:fleet": _hosted("apply", ADOPT)})
    imported = {(r.type, r.import_id) for r in run.registrations if r.import_id}
    assert imported == {
        (k.HOSTED_CLUSTER.token, "clusters/prod-east"),
        (k.HYPERSHIFT_NODE_POOL.token, "clusters/prod-east-infra"),
        (k.KARPENTER_NODE_POOL.token, "spot"),
    }
    # The other Karpenter NodePool, the node classes and the Namespace patch are declared as always.
    assert {
        r.inputs["metadata"]["name"] for r in run.of_type(k.KARPENTER_NODE_POOL.token) if not r.import_id
    } == {"on-demand"}


def test_render_mode_imports_nothing() -> None:
    run = run_program("hosted", {"nodefleet:fleet": _hosted("render", ADOPT)})
    assert [r.urn for r in run.registrations if r.import_id] == []


@pytest.mark.parametrize("mode", ["apply", "render"])
def test_a_stale_list_is_refused_in_either_mode(mode: str, tmp_path: Any) -> None:
    stack = tmp_path / "Pulumi.hosted.yaml"
    adopt = {"prod-east-hosted": ["NodePool.karpenter.sh gone"]}
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": _hosted(mode, adopt)}}))
    result = nodefleet("check", "--config-file", str(stack), cwd=PROJECT)
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "nodefleet:fleet.output.adopt.prod-east-hosted[0]: 'NodePool.karpenter.sh gone' is no object this stack "
        "declares through prod-east-hosted (it declares: "
    ) in result.stderr, result.stderr
    assert "'NodePool.karpenter.sh on-demand'" in result.stderr


@pytest.mark.parametrize("mode", ["apply", "render"])
def test_without_a_list_nothing_is_imported(mode: str) -> None:
    run = run_program("hosted", {"nodefleet:fleet": _hosted(mode, {})})
    assert [r.urn for r in run.registrations if r.import_id] == []


def test_a_standalone_cluster_imports_its_machine_sets_and_pools_never_the_machine_configuration() -> None:
    raw = copy.deepcopy(stack_fleet("dev"))
    machine_set = "dev-7xk2p-worker-us-east-1a"
    raw["output"] = {
        "mode": "apply",
        "kubeconfig": "dev.kubeconfig",
        "adopt": {"dev": [f"MachineSet.machine.openshift.io openshift-machine-api/{machine_set}"]},
    }
    pools = [p["name"] for p in raw["clusters"][0].get("pools") or []]
    raw["output"]["adopt"]["dev"] += [
        f"MachineConfigPool.machineconfiguration.openshift.io {p}" for p in pools
    ]
    run = run_program("dev", {"nodefleet:fleet": raw})
    imported = {(r.type, r.import_id) for r in run.registrations if r.import_id}
    assert imported == {(k.MACHINE_SET.token, f"openshift-machine-api/{machine_set}")} | {
        (k.MACHINE_CONFIG_POOL.token, p) for p in pools
    }
    assert pools, "dev declares a custom pool"
    raw["output"]["adopt"]["dev"].append("MachineConfiguration.operator.openshift.io cluster")
    with pytest.raises(pulumi.RunError, match="nothing to adopt"):
        run_program("dev", {"nodefleet:fleet": raw})
