"""What the program registers for standalone clusters, under Pulumi's mock runtime.

The mock runtime records what the program asks the engine for; it does not run the Kubernetes provider.
"""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from mockruntime.run import MockRun, run_program
from nodefleet import kinds as k
from tests.conftest import stack_fleet


@pytest.fixture(scope="module")
def dev() -> MockRun:
    return run_program("dev")


def _machine_sets(run: MockRun) -> dict[str, Any]:
    return {r.name: r for r in run.of_type(k.MACHINE_SET.token)}


def test_type_tokens_and_counts(dev: MockRun) -> None:
    types = [r.type for r in dev.registrations]
    assert types.count("nodefleet:standalone:Cluster") == 1
    assert types.count(k.MACHINE_SET.token) == 4
    assert types.count(k.MACHINE_CONFIG_POOL.token) == 1
    assert types.count(k.MACHINE_CONFIGURATION.patch_token) == 1
    assert types.count("pulumi:providers:kubernetes") == 1


def test_ami_and_ignore_changes_exactly_in_mco_managed_mode(dev: MockRun) -> None:
    for name, reg in _machine_sets(dev).items():
        ami = reg.inputs["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"]
        assert ami == {"id": "ami-06a6b025350ff1e23"}, name
        managed = reg.inputs["metadata"]["annotations"][k.ANNOTATION_OWNER] == "mco"
        assert reg.ignore_changes == ([k.AMI_PATH] if managed else []), name
    managed = sorted(n for n, r in _machine_sets(dev).items() if r.ignore_changes)
    assert managed == ["dev-7xk2p-infra-us-east-1a", "dev-7xk2p-worker-us-east-1a"]


def test_labels_and_user_data_secrets(dev: MockRun) -> None:
    ms = _machine_sets(dev)
    infra = ms["dev-7xk2p-infra-us-east-1b"].inputs["spec"]["template"]["spec"]
    worker = ms["dev-7xk2p-worker-us-east-1b"].inputs["spec"]["template"]["spec"]
    assert infra["metadata"]["labels"] == {"node-role.kubernetes.io/infra": ""}
    assert infra["providerSpec"]["value"]["userDataSecret"]["name"] == "infra-user-data-managed"
    assert worker["providerSpec"]["value"]["userDataSecret"]["name"] == "worker-user-data"


def test_pool_selectors_and_pool_before_its_machine_sets(dev: MockRun) -> None:
    (pool,) = dev.of_type(k.MACHINE_CONFIG_POOL.token)
    assert pool.inputs["spec"]["nodeSelector"] == {"matchLabels": {"node-role.kubernetes.io/infra": ""}}
    for name, reg in _machine_sets(dev).items():
        assert (pool.urn in reg.depends_on) == ("-infra-" in name), name


def test_objects_are_children_of_the_cluster_and_go_through_its_render_provider(dev: MockRun) -> None:
    (cluster,) = dev.of_type("nodefleet:standalone:Cluster")
    for reg in dev.of_type(k.MACHINE_SET.token) + dev.of_type(k.MACHINE_CONFIG_POOL.token):
        assert reg.parent == cluster.urn
        provider = dev.provider_of(reg)
        assert provider is not None and provider.inputs["renderYamlToDirectory"] == "rendered/dev/dev"


def test_machine_configuration_is_a_patch_of_the_singleton(dev: MockRun) -> None:
    (patch,) = dev.of_type(k.MACHINE_CONFIGURATION.patch_token)
    # The singleton by name; the annotation records the cluster's release, the API server version crd-schema
    # judges the patch by.
    assert patch.inputs["metadata"] == {
        "name": "cluster",
        "annotations": {k.ANNOTATION_RELEASE: "5.0.0-ec.2"},
    }
    assert patch.inputs["spec"]["bootImageSkewEnforcement"]["mode"] == "Manual"


def test_apply_mode_uses_a_kubeconfig_provider() -> None:
    raw = stack_fleet("dev")
    raw["output"] = {"mode": "apply", "kubeconfig": "/tmp/kubeconfig"}
    run = run_program("dev", {"nodefleet:fleet": raw})
    (provider,) = run.of_type("pulumi:providers:kubernetes")
    assert provider.inputs.get("kubeconfig") == "/tmp/kubeconfig"
    assert "renderYamlToDirectory" not in provider.inputs


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (lambda c: c["machineSets"][0].update(color="blue"), "unknown key 'color'"),
        (lambda c: c["machineSets"][0].update(replicas="many"), "machineSets[0].replicas"),
        (
            lambda c: (
                c.update(region="eu-west-3")
                or [m.update(zone=m["zone"].replace("us-east-1", "eu-west-3")) for m in c["machineSets"]]
            ),
            "'eu-west-3'",
        ),
        (
            lambda c: (
                c["machineSets"][1].update(stream="rhel-10", bootImage="pinned", pool="worker")
                or c.update(catalog="catalogs/rhcos-4.16.json")
            ),
            "'rhel-10'",
        ),
    ],
    ids=["unknown-key", "wrong-type", "region-not-in-catalog", "stream-not-in-catalog"],
)
def test_bad_config_registers_nothing(change: Any, expected: str) -> None:
    raw = stack_fleet("dev")
    change(raw["clusters"][0])
    with pytest.raises(pulumi.RunError) as e:
        run_program("dev", {"nodefleet:fleet": raw})
    assert expected in str(e.value)
    assert str(e.value).startswith("stacks/Pulumi.dev.yaml: ")
    assert str(e.value).count("\n") == 0
    assert e.value.registrations == []  # type: ignore[attr-defined]
