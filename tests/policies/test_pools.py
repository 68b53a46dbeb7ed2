"""custom-pool-labeling and custom-pool-early-labels: MachineSets boot straight into their custom pool."""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest
from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from nodefleet.render.machinesets import render_machine_config_pool, render_machine_set
from nodefleet.render.objects import load_fleet
from policies.pools import custom_pool_early_labels, custom_pool_labeling, pool_target
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import validate_manifest
from tests.policies.helpers import component, run_policy, run_stack_policy, stack_resource

INFRA_LABEL = f"{k.NODE_ROLE_PREFIX}infra"
Edit = Callable[[dict[str, Any]], None]


def _manifests(stack: str) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
    """({MachineSet name: manifest}, {pool name: manifest}) of a committed stack's first cluster."""
    cluster = load_fleet(stack_fleet(stack), stack, PROJECT).clusters[0]
    cfg = cluster.config
    sets = {ms.name: copy.deepcopy(render_machine_set(cfg, ms, cfg.catalog)) for ms in cluster.machine_sets}
    pools = {p.name: copy.deepcopy(render_machine_config_pool(cfg, p.name)) for p in cfg.pools}
    return sets, pools


def _stack(
    stack: str = "dev",
    *,
    machine_set: str | None = None,
    edit: Edit | None = None,
    pool: str | None = None,
    edit_pool: Edit | None = None,
    drop_pools: bool = False,
) -> list[PolicyResource]:
    sets, pools = _manifests(stack)
    if edit and machine_set:
        edit(sets[machine_set])
    if edit_pool and pool:
        edit_pool(pools[pool])
    parent = component("nodefleet:standalone:Cluster", stack)
    out = [parent]
    if not drop_pools:
        out += [stack_resource(k.MACHINE_CONFIG_POOL.token, p, parent=parent) for p in pools.values()]
    out += [stack_resource(k.MACHINE_SET.token, m, parent=parent) for m in sets.values()]
    return out


INFRA_MS = "dev-7xk2p-infra-us-east-1a"


def _template_labels(ms: dict[str, Any]) -> dict[str, Any]:
    """The node labels of a MachineSet's template (a worker MachineSet renders none: ``metadata: {}``)."""
    labels: dict[str, Any] = (
        ms["spec"]["template"]["spec"].setdefault("metadata", {}).setdefault("labels", {})
    )
    return labels


def _provider_value(ms: dict[str, Any]) -> dict[str, Any]:
    return ms["spec"]["template"]["spec"]["providerSpec"]["value"]


def _messages(resources: list[PolicyResource], **kw: Any) -> list[str]:
    return [v.message for v in run_stack_policy(custom_pool_labeling, resources, **kw)]


# --- custom-pool-labeling --------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "rhel10"])
def test_example_stacks_pass(stack: str) -> None:
    sets, pools = _manifests(stack)
    for manifest in [*sets.values(), *pools.values()]:
        validate_manifest(manifest)
    assert _messages(_stack(stack)) == []


def test_pool_target() -> None:
    sets, _ = _manifests("dev")
    assert pool_target(sets[INFRA_MS]).pools == ["infra"]
    assert pool_target(sets["dev-7xk2p-worker-us-east-1a"]).pools == []


def test_missing_role_label() -> None:
    (msg,) = _messages(_stack(machine_set=INFRA_MS, edit=lambda ms: _template_labels(ms).clear()))
    assert f"MachineSet '{INFRA_MS}'" in msg and "lacks the label node-role.kubernetes.io/infra" in msg
    assert "infra-user-data-managed" in msg


def test_role_label_with_a_value() -> None:
    (msg,) = _messages(
        _stack(machine_set=INFRA_MS, edit=lambda ms: _template_labels(ms).update({INFRA_LABEL: "true"}))
    )
    assert "to 'true'" in msg and 'Set the value to ""' in msg


def test_worker_user_data_secret() -> None:
    def worker_secret(ms: dict[str, Any]) -> None:
        _provider_value(ms)["userDataSecret"] = {"name": "worker-user-data"}

    (msg,) = _messages(_stack(machine_set=INFRA_MS, edit=worker_secret))
    assert "boots from user-data secret 'worker-user-data'" in msg and "'infra-user-data-managed'" in msg


def test_two_custom_roles() -> None:
    def two_roles(ms: dict[str, Any]) -> None:
        _template_labels(ms)[f"{k.NODE_ROLE_PREFIX}gpu"] = ""

    messages = _messages(_stack(machine_set=INFRA_MS, edit=two_roles))
    assert any("2 custom roles" in m and "at most one custom MachineConfigPool" in m for m in messages)
    # gpu also has neither its secret nor a declared pool
    assert any("no MachineConfigPool 'gpu'" in m for m in messages)


def test_worker_and_master_roles_are_not_custom() -> None:
    def builtin(ms: dict[str, Any]) -> None:
        _template_labels(ms).update({f"{k.NODE_ROLE_PREFIX}worker": "", f"{k.NODE_ROLE_PREFIX}master": ""})

    assert _messages(_stack(machine_set=INFRA_MS, edit=builtin)) == []
    assert _messages(_stack(machine_set="dev-7xk2p-worker-us-east-1a", edit=builtin)) == []


def test_secret_and_label_name_different_pools() -> None:
    def mismatch(ms: dict[str, Any]) -> None:
        _provider_value(ms)["userDataSecret"] = {"name": "gpu-user-data-managed"}

    messages = _messages(_stack(machine_set=INFRA_MS, edit=mismatch))
    assert any(
        "boots from the user-data secret of pool 'gpu'" in m and "labels its nodes for infra" in m
        for m in messages
    )


def test_pool_not_declared() -> None:
    messages = _messages(_stack(drop_pools=True))
    assert len(messages) == 2  # both infra MachineSets
    assert all("no MachineConfigPool 'infra' is declared" in m for m in messages)


def test_pool_of_another_cluster_does_not_count() -> None:
    _, dev_pools = _manifests("dev")
    other = component("nodefleet:standalone:Cluster", "other")
    resources = [
        *_stack(drop_pools=True),
        stack_resource(k.MACHINE_CONFIG_POOL.token, dev_pools["infra"], parent=other),
    ]
    assert len(_messages(resources)) == 2


def test_pool_node_selector_wrong() -> None:
    def selector(pool: dict[str, Any]) -> None:
        pool["spec"]["nodeSelector"] = {"matchLabels": {f"{k.NODE_ROLE_PREFIX}worker": ""}}

    resources = _stack(pool="infra", edit_pool=selector)
    (v,) = run_stack_policy(custom_pool_labeling, resources)  # reported once, on the pool
    assert v.resource.endswith("MachineConfigPool::infra")
    assert "MachineConfigPool 'infra'" in v.message and "nodeSelector.matchLabels lacks" in v.message


def test_pool_machine_config_selector_wrong() -> None:
    def worker_only(pool: dict[str, Any]) -> None:
        pool["spec"]["machineConfigSelector"]["matchExpressions"][0]["values"] = ["worker"]

    (msg,) = _messages(_stack(pool="infra", edit_pool=worker_only))
    assert "does not select MachineConfigs of role 'infra'" in msg and "values: [worker, infra]" in msg

    def match_labels(pool: dict[str, Any]) -> None:
        pool["spec"]["machineConfigSelector"] = {"matchLabels": {k.LABEL_MC_ROLE: "infra"}}

    assert _messages(_stack(pool="infra", edit_pool=match_labels)) == []


def test_hand_written_objects() -> None:
    """No components, no nodefleet annotations: pools are found by name in the flat stack."""
    machine_set = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "legacy-infra", "namespace": "openshift-machine-api"},
        "spec": {
            "template": {
                "spec": {
                    "metadata": {"labels": {INFRA_LABEL: ""}},
                    "providerSpec": {"value": {"userDataSecret": {"name": "infra-user-data-managed"}}},
                }
            }
        },
    }
    pool = {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "MachineConfigPool",
        "metadata": {"name": "infra"},
        "spec": {
            "machineConfigSelector": {
                "matchExpressions": [
                    {"key": k.LABEL_MC_ROLE, "operator": "In", "values": ["worker", "infra"]}
                ]
            },
            "nodeSelector": {"matchLabels": {INFRA_LABEL: ""}},
        },
    }
    validate_manifest(machine_set)
    validate_manifest(pool)
    resources = [
        stack_resource(k.MACHINE_SET.token, machine_set),
        stack_resource(k.MACHINE_CONFIG_POOL.token, pool),
    ]
    assert _messages(resources) == []
    (msg,) = _messages(resources[:1])
    assert "legacy-infra" in msg and "no MachineConfigPool 'infra'" in msg
    assert _messages([stack_resource(k.MACHINE_SET.token, {"metadata": {"name": "bare"}})]) == []


def test_unknown_values_are_advisory() -> None:
    def unknown_secret(ms: dict[str, Any]) -> None:
        _provider_value(ms)["userDataSecret"] = {"name": UNKNOWN_STRING_VALUE}

    (v,) = run_stack_policy(custom_pool_labeling, _stack(machine_set=INFRA_MS, edit=unknown_secret))
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")


def test_config_enforcement_level() -> None:
    resources = _stack(drop_pools=True)
    assert {
        v.level
        for v in run_stack_policy(
            custom_pool_labeling, resources, config={"custom-pool-labeling": "advisory"}
        )
    } == {"advisory"}
    assert (
        run_stack_policy(custom_pool_labeling, resources, config={"custom-pool-labeling": "disabled"}) == []
    )


# --- custom-pool-early-labels ----------------------------------------------------------------------------


def _early(ms: dict[str, Any], **kw: Any) -> list[str]:
    return [v.message for v in run_policy(custom_pool_early_labels, k.MACHINE_SET.token, ms, **kw)]


def _infra(release: str | None) -> dict[str, Any]:
    sets, _ = _manifests("dev")
    ms = sets[INFRA_MS]
    if release is None:
        del ms["metadata"]["annotations"][k.ANNOTATION_RELEASE]
    else:
        ms["metadata"]["annotations"][k.ANNOTATION_RELEASE] = release
    return ms


def test_early_labels_before_4_22() -> None:
    (v,) = run_policy(custom_pool_early_labels, k.MACHINE_SET.token, _infra("4.21.5"))
    assert v.level == "advisory"
    assert f"MachineSet '{INFRA_MS}'" in v.message and "custom pool infra" in v.message
    assert "registers as a worker" in v.message and "MCO PR #5361" in v.message and "4.22" in v.message


@pytest.mark.parametrize("release", ["4.22.0", "4.22.0-ec.1", "5.0.0-ec.2"])
def test_no_early_labels_advice_from_4_22(release: str) -> None:
    assert _early(_infra(release)) == []


def test_early_labels_only_for_custom_pools_with_a_known_release() -> None:
    sets, _ = _manifests("dev")
    worker = sets["dev-7xk2p-worker-us-east-1a"]
    worker["metadata"]["annotations"][k.ANNOTATION_RELEASE] = "4.18.3"
    assert _early(worker) == []
    assert _early(_infra(None)) == []  # hand-written: release unknown
    assert _early(_infra("not-a-release")) == []


def test_early_labels_config_and_unknowns() -> None:
    (msg,) = _early(_infra("4.22.3"), config={"custom-pool-early-labels": {"fixedIn": "5.0"}})
    assert "Before 5.0" in msg
    assert _early(_infra("4.21.5"), config={"custom-pool-early-labels": "disabled"}) == []
    (v,) = run_policy(custom_pool_early_labels, k.MACHINE_SET.token, _infra(UNKNOWN_STRING_VALUE))
    assert v.level == "advisory" and "cannot verify" in v.message
