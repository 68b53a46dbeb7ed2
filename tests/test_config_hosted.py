"""Hosted-cluster and Karpenter configuration: valid examples, and one clear error per unbuildable input."""

from __future__ import annotations

from typing import Any

import pytest

from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError, ResolvedCluster, ResolvedHostedCluster
from tests.conftest import PROJECT, stack_fleet


def _error(raw: dict[str, Any], stack: str) -> str:
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, stack, PROJECT)
    assert str(e.value).count("\n") == 0, "one message per mistake"
    return str(e.value)


def test_hosted_example_is_valid() -> None:
    fleet = load_fleet(stack_fleet("hosted"), "hosted", PROJECT)
    (c,) = fleet.clusters
    assert isinstance(c, ResolvedHostedCluster)
    assert c.config.auto_node is not None and c.config.auto_node.mode == "autonode"
    assert [p.capacity_types for p in c.config.auto_node.node_pools] == [["on-demand"], ["spot"]]
    assert c.config.image == "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"


def test_self_managed_karpenter_images_come_from_the_catalog() -> None:
    fleet = load_fleet(stack_fleet("karpenter"), "karpenter", PROJECT)
    (c,) = fleet.clusters
    assert isinstance(c, ResolvedCluster)
    assert {n: i.ami for n, i in c.karpenter_images.items()} == {
        "general": "ami-06a6b025350ff1e23",
        "arm": "ami-0e73a95fb409d8abd",
    }
    assert fleet.secret_keys() == [("mcsCaBundle", "MCS CA bundle of cluster edge")]


def test_pool_naming_an_undeclared_class() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["nodePools"][0]["nodeClass"] = "gpu"
    msg = _error(raw, "hosted")
    assert msg.startswith(
        "stacks/Pulumi.hosted.yaml: nodefleet:fleet.clusters[0].autoNode.nodePools[0].nodeClass: "
    )
    assert "'gpu' is not a declared node class (declared: batch, general)" in msg


def test_class_named_default_is_rejected() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["nodeClasses"][0]["name"] = "default"
    msg = _error(raw, "hosted")
    assert "autoNode.nodeClasses[0].name" in msg and "rewrites it on every reconcile" in msg


def test_capacity_type_is_the_allowed_karpenter_sh_key() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["nodePools"][1]["requirements"] = [
        {"key": "karpenter.sh/capacity-type", "values": ["spot"]}
    ]
    load_fleet(raw, "hosted", PROJECT)


def test_unknown_hosted_key_hint_comes_from_the_hosted_model() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["issuerURL"] = raw["clusters"][0].pop("issuerUrl")
    msg = _error(raw, "hosted")
    assert "unknown key 'issuerURL'; did you mean 'issuerUrl'?" in msg


def test_apply_mode_needs_the_hosted_kubeconfig_for_autonode() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    assert "clusters[0].hostedKubeconfig: required in apply mode" in _error(raw, "hosted")


def test_node_version_skew_is_valid_config() -> None:
    """A class pinned newer than its control plane is the version-skew policy's to report."""
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["nodeClasses"][0]["version"] = "5.0.0"
    raw["clusters"][0]["nodePools"][0]["release"] = "4.18.0"
    load_fleet(raw, "hosted", PROJECT)


def test_self_managed_class_region_missing_from_catalog() -> None:
    raw = stack_fleet("karpenter")
    raw["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    raw["clusters"][0]["karpenter"]["nodeClasses"][1]["stream"] = "rhel-10"
    msg = _error(raw, "karpenter")
    assert "karpenter.nodeClasses[1]" in msg and "'rhel-10'" in msg


@pytest.mark.parametrize(
    ("requirement", "expected"),
    [
        ({"key": "kubernetes.io/os", "operator": "Exists", "values": ["linux"]}, "takes no values"),
        ({"key": "kubernetes.io/os", "operator": "NotIn", "values": []}, "needs at least one value"),
        (
            {
                "key": "karpenter.k8s.aws/instance-family",
                "operator": "NotIn",
                "values": ["m6i"],
                "minValues": 2,
            },
            "minValues 2 is more",
        ),
    ],
    ids=["exists-with-values", "notin-without-values", "min-values-not-in"],
)
def test_requirement_rules_the_crd_does_not_check(requirement: dict[str, Any], expected: str) -> None:
    """What the NodePool CRD checks itself is the crd-schema policy's (tests/policies/test_crd_schema.py)."""
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["nodePools"][0]["requirements"] = [requirement]
    msg = _error(raw, "hosted")
    assert "autoNode.nodePools[0].requirements[0]" in msg and expected in msg
