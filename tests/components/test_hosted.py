"""What the program registers for hosted clusters (AutoNode and legacy), under Pulumi's mock runtime."""

from __future__ import annotations

from typing import Any

import pulumi
import pytest

from harness.mockrun import MockRun, run_program
from nodefleet import kinds as k
from nodefleet.hosted import LEGACY_CONTROLLER_OWNED
from tests.conftest import stack_fleet


@pytest.fixture(scope="module")
def hosted() -> MockRun:
    return run_program("hosted")


def _run(raw: dict[str, Any]) -> MockRun:
    return run_program("hosted", {"nodefleet:fleet": raw})


def test_autonode_registers_classes_and_pools_but_never_an_ec2_node_class(hosted: MockRun) -> None:
    assert hosted.of_type(k.EC2_NODE_CLASS.token) == []
    classes = {r.inputs["metadata"]["name"] for r in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token)}
    assert classes == {"general", "batch"}
    pools = {r.inputs["metadata"]["name"]: r for r in hosted.of_type(k.KARPENTER_NODE_POOL.token)}
    assert set(pools) == {"on-demand", "spot"}
    ref = pools["spot"].inputs["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "batch"}


def test_pools_depend_on_their_class(hosted: MockRun) -> None:
    by_name = {r.inputs["metadata"]["name"]: r for r in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token)}
    for pool in hosted.of_type(k.KARPENTER_NODE_POOL.token):
        cls = pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        assert by_name[cls].urn in pool.depends_on


def test_drifted_disruption_is_budgeted(hosted: MockRun) -> None:
    for pool in hosted.of_type(k.KARPENTER_NODE_POOL.token):
        budgets = pool.inputs["spec"]["disruption"]["budgets"]
        assert any(b.get("reasons") == ["Drifted"] and "schedule" not in b for b in budgets)


def test_management_and_hosted_objects_go_through_separate_providers(hosted: MockRun) -> None:
    (hc,) = hosted.of_type(k.HOSTED_CLUSTER.token)
    provider = hosted.provider_of(hc)
    assert provider is not None and provider.inputs["renderYamlToDirectory"] == "rendered/hosted/prod-east"
    for reg in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token) + hosted.of_type(k.KARPENTER_NODE_POOL.token):
        p = hosted.provider_of(reg)
        assert p is not None and p.inputs["renderYamlToDirectory"] == "rendered/hosted/prod-east-hosted"
    assert hc.inputs["spec"]["autoNode"]["provisionerConfig"]["karpenter"]["aws"]["roleARN"].endswith(
        "role/prod-east-karpenter"
    )


def test_render_mode_writes_no_secret(hosted: MockRun) -> None:
    assert hosted.of_type("kubernetes:core/v1:Secret") == []
    (hc,) = hosted.of_type(k.HOSTED_CLUSTER.token)
    assert hc.inputs["spec"]["pullSecret"] == {"name": "prod-east-pull-secret"}


def test_apply_mode_creates_secrets_from_stack_secrets() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"]["fromConfig"] = "pullSecret"
    run = run_program("hosted", {"nodefleet:fleet": raw, "nodefleet:pullSecret": '{"auths":{}}'})
    (secret,) = run.of_type("kubernetes:core/v1:Secret")
    assert secret.inputs["metadata"] == {"name": "prod-east-pull-secret", "namespace": "clusters"}
    assert secret.inputs["type"] == "kubernetes.io/dockerconfigjson"
    (hc,) = run.of_type(k.HOSTED_CLUSTER.token)
    assert secret.urn in hc.depends_on


def test_missing_stack_secret_registers_nothing() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"]["fromConfig"] = "pullSecret"
    with pytest.raises(pulumi.RunError) as e:
        _run(raw)
    assert "nodefleet:pullSecret is not set" in str(e.value) and "pulumi config set --secret" in str(e.value)
    assert e.value.registrations == []  # type: ignore[attr-defined]


def test_token_rotation_is_not_a_program_input() -> None:
    """The program's AutoNode inputs depend on config only: two runs give identical class and pool inputs."""
    a, b = run_program("hosted"), run_program("hosted")
    for token in (k.OPENSHIFT_EC2_NODE_CLASS.token, k.KARPENTER_NODE_POOL.token):
        assert {r.name: r.inputs for r in a.of_type(token)} == {r.name: r.inputs for r in b.of_type(token)}


def test_legacy_mode_ignores_exactly_the_controller_owned_fields() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["mode"] = "legacy"
    run = _run(raw)
    classes = run.of_type(k.EC2_NODE_CLASS.token)
    assert len(classes) == 2 and run.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token) == []
    for cls in classes:
        assert (
            sorted(cls.ignore_changes)
            == sorted(LEGACY_CONTROLLER_OWNED)
            == ["spec.amiSelectorTerms", "spec.userData"]
        )
        assert cls.inputs["spec"]["amiFamily"] == "Custom"
    for pool in run.of_type(k.KARPENTER_NODE_POOL.token):
        assert pool.ignore_changes == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda c: c["autoNode"]["nodePools"][0].update(nodeClass="gpu"),
            "'gpu' is not a declared node class",
        ),
        (lambda c: c["autoNode"]["nodeClasses"][0].update(name="default"), "rewrites it on every reconcile"),
        (
            lambda c: c["autoNode"]["nodePools"][0].update(
                requirements=[{"key": "kubernetes.io/os", "operator": "Exists", "values": ["linux"]}]
            ),
            "takes no values",
        ),
    ],
    ids=["undeclared-class", "default-class", "exists-with-values"],
)
def test_bad_autonode_config_registers_nothing(change: Any, expected: str) -> None:
    raw = stack_fleet("hosted")
    change(raw["clusters"][0])
    with pytest.raises(pulumi.RunError) as e:
        _run(raw)
    assert expected in str(e.value) and str(e.value).count("\n") == 0
    assert e.value.registrations == []  # type: ignore[attr-defined]
