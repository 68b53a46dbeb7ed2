"""Keys the stack file gained so that live objects can be declared as they run (``import``): a MachineSet's root
volume type, its encryption left to the account, its instance tags and its user-data Secret; a classic NodePool's
encryption left to the account. Each renders exactly the field it names and nothing else changes."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY

PROJECT = Path(__file__).resolve().parents[3]


def _rendered(stack: str, edit: Any) -> dict[tuple[str, str], dict[str, Any]]:
    raw = yaml.safe_load((PROJECT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"][CONFIG_KEY]
    edit(raw["clusters"][0])
    fleet = load_fleet(raw, stack, PROJECT)
    return {(o.key.kind, o.key.name): o.manifest for o in fleet_plan(fleet).emitted}


def _provider(objects: dict[tuple[str, str], dict[str, Any]], name: str) -> dict[str, Any]:
    value: dict[str, Any] = objects[("MachineSet", name)]["spec"]["template"]["spec"]["providerSpec"]["value"]
    return value


def test_machine_set_volume_tags_and_user_data() -> None:
    def edit(cluster: dict[str, Any]) -> None:
        ms = cluster["machineSets"][0]
        ms |= {
            "rootVolumeType": "gp2",
            "rootVolumeEncrypted": None,
            "tags": {"team": "shop"},
            "userDataSecret": "worker-user-data",
        }

    before = _rendered("dev", lambda c: None)
    after = _rendered("dev", edit)
    name = "dev-7xk2p-worker-us-east-1a"
    value = _provider(after, name)
    assert value["blockDevices"] == [{"ebs": {"volumeSize": 120, "volumeType": "gp2"}}]
    assert value["tags"] == [
        {"name": "kubernetes.io/cluster/dev-7xk2p", "value": "owned"},
        {"name": "team", "value": "shop"},
    ]
    assert value["userDataSecret"] == {"name": "worker-user-data"}
    old = _provider(before, name)
    assert old["blockDevices"] == [{"ebs": {"volumeSize": 120, "volumeType": "gp3", "encrypted": True}}]
    changed = {key for key in value if value[key] != old[key]}
    assert changed == {"blockDevices", "tags"}


def test_node_pool_encryption_left_to_the_account() -> None:
    def edit(cluster: dict[str, Any]) -> None:
        cluster["nodePools"][0]["rootVolumeEncrypted"] = None

    pools = {k: v for k, v in _rendered("hosted", edit).items() if k[0] == "NodePool" and "spec" in v}
    volumes = [p["spec"]["platform"]["aws"]["rootVolume"] for p in pools.values() if "platform" in p["spec"]]
    assert {"size": 120, "type": "gp3"} in volumes
    defaults = _rendered("hosted", lambda c: None)
    assert all(
        p["spec"]["platform"]["aws"]["rootVolume"]["encrypted"] is True
        for (kind, _), p in defaults.items()
        if kind == "NodePool" and "platform" in p["spec"]
    )


def _autonode_pool(edit: Any) -> dict[str, Any]:
    def change(cluster: dict[str, Any]) -> None:
        edit(cluster["autoNode"])

    objects = _rendered("hosted", change)
    pool: dict[str, Any] = objects[("NodePool", "on-demand")]
    return pool


def test_a_karpenter_pool_without_nodefleets_leading_requirements() -> None:
    def edit(auto: dict[str, Any]) -> None:
        pool = auto["nodePools"][0]
        pool |= {
            "architectures": [],
            "capacityTypes": [],
            "instanceCategories": [],
            "requirements": [
                {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
                {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
            ],
        }

    pool = _autonode_pool(edit)
    assert pool["spec"]["template"]["spec"]["requirements"] == [
        {"key": "kubernetes.io/os", "operator": "In", "values": ["linux"]},
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]},
    ]


def test_a_budget_naming_no_reason_and_pool_annotations() -> None:
    def edit(auto: dict[str, Any]) -> None:
        pool = auto["nodePools"][0]
        pool["disruption"] = {"allReasonsBudget": "10%", "budgets": {"Drifted": "1"}}
        pool["annotations"] = {"kubernetes.io/description": "General purpose"}

    pool = _autonode_pool(edit)
    assert pool["spec"]["disruption"]["budgets"] == [
        {"nodes": "10%"},
        {"nodes": "1", "reasons": ["Drifted"]},
    ]
    assert pool["metadata"]["annotations"]["kubernetes.io/description"] == "General purpose"


def test_pools_may_use_hypershifts_default_class_without_declaring_it() -> None:
    def edit(auto: dict[str, Any]) -> None:
        auto.pop("nodeClasses")
        for pool in auto["nodePools"]:
            pool["nodeClass"] = "default"

    objects = _rendered("hosted", lambda c: edit(c["autoNode"]))
    assert not [key for key in objects if key[0] == "OpenshiftEC2NodeClass"]
    assert objects[("NodePool", "spot")]["spec"]["template"]["spec"]["nodeClassRef"]["name"] == "default"


def test_nodefleets_own_annotations_and_a_legacy_default_class_are_refused() -> None:
    import pytest

    from nodefleet.stackfile.model import ConfigError

    def own(auto: dict[str, Any]) -> None:
        auto["nodePools"][0]["annotations"] = {"nodefleet.io/karpenter": "aws/1.15"}

    with pytest.raises(ConfigError, match="nodefleet's own record"):
        _autonode_pool(own)

    def legacy(auto: dict[str, Any]) -> None:
        auto["mode"] = "legacy"
        auto["nodePools"][0]["nodeClass"] = "default"

    with pytest.raises(ConfigError, match="'default' is not a declared node class"):
        _autonode_pool(legacy)
