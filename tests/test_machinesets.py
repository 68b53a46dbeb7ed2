"""MachineSets beyond the installer's defaults: taints, node labels, subnet and security group overrides."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from nodefleet.apiserver.schema import validate_object
from nodefleet.render.machinesets import render_machine_set
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError, ResolvedCluster
from tests.conftest import PROJECT, nodefleet, own_tree, stack_fleet
from tests.crdschema import crd_of, validate_manifest

INFRA_TAINT = {"key": "node-role.kubernetes.io/infra", "effect": "NoSchedule"}


def _infra(**extra: Any) -> dict[str, Any]:
    """The dev example with its first infra MachineSet changed by ``extra``."""
    raw = copy.deepcopy(stack_fleet("dev"))
    raw["clusters"][0]["machineSets"][2].update(extra)
    return raw


def _machine_set(raw: dict[str, Any], index: int = 2) -> dict[str, Any]:
    fleet = load_fleet(raw, "dev", PROJECT)
    cluster = fleet.clusters[0]
    assert isinstance(cluster, ResolvedCluster)
    return render_machine_set(cluster.config, cluster.machine_sets[index], cluster.catalog_reference)


def _error(raw: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "dev", PROJECT)
    return str(e.value)


def test_infra_nodes_are_tainted_and_labelled() -> None:
    ms = _machine_set(_infra(taints=[INFRA_TAINT], labels={"team": "platform"}))
    template = ms["spec"]["template"]["spec"]
    assert template["taints"] == [INFRA_TAINT]
    assert template["metadata"]["labels"] == {"team": "platform", "node-role.kubernetes.io/infra": ""}
    validate_manifest(ms)


def test_the_crd_judges_the_taints_nodefleet_writes() -> None:
    ms = _machine_set(_infra(taints=[INFRA_TAINT]))
    del ms["spec"]["template"]["spec"]["taints"][0]["effect"]
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(ms)


def test_the_crd_schema_policy_judges_the_taints_too() -> None:
    """The check's own CRD validation (nodefleet.apiserver.schema, what the crd-schema policy runs)."""
    ms = _machine_set(_infra(taints=[INFRA_TAINT], labels={"team": "platform"}))
    assert validate_object(ms, crd_of(ms)) == []
    del ms["spec"]["template"]["spec"]["taints"][0]["key"]
    (finding,) = validate_object(ms, crd_of(ms))
    assert "spec.template.spec.taints[0].key" in finding.path


def test_subnet_and_security_groups_override_the_installer_names() -> None:
    ms = _machine_set(
        _infra(
            subnet={"tags": {"Name": "shared-private-a", "tier": "infra"}},
            securityGroups=[{"id": "sg-0123456789abcdef0"}, {"tags": {"Name": "infra-extra"}}],
        )
    )
    spec = ms["spec"]["template"]["spec"]["providerSpec"]["value"]
    assert spec["subnet"] == {
        "filters": [
            {"name": "tag:Name", "values": ["shared-private-a"]},
            {"name": "tag:tier", "values": ["infra"]},
        ]
    }
    assert spec["securityGroups"] == [
        {"id": "sg-0123456789abcdef0"},
        {"filters": [{"name": "tag:Name", "values": ["infra-extra"]}]},
    ]
    by_id = _machine_set(_infra(subnet={"id": "subnet-0f1e2d3c4b5a69788"}))
    assert by_id["spec"]["template"]["spec"]["providerSpec"]["value"]["subnet"] == {
        "id": "subnet-0f1e2d3c4b5a69788"
    }


def test_without_overrides_the_installer_names_stay() -> None:
    spec = _machine_set(stack_fleet("dev"))["spec"]["template"]["spec"]
    assert "taints" not in spec
    assert spec["providerSpec"]["value"]["subnet"] == {
        "filters": [{"name": "tag:Name", "values": ["dev-7xk2p-subnet-private-us-east-1a"]}]
    }


@pytest.mark.parametrize(
    ("extra", "field", "fix"),
    [
        (
            {"taints": [{"key": "node-role.kubernetes.io/infra", "effect": "NoShedule"}]},
            "taints[0].effect",
            "use one of",
        ),
        ({"taints": [{"key": "bad key!", "effect": "NoSchedule"}]}, "taints[0]", "taint key"),
        ({"taints": [INFRA_TAINT, INFRA_TAINT]}, "taints[1]", "remove one"),
        ({"labels": {"team": "not a value"}}, "labels", "of 'team' is not a label value"),
        (
            {"labels": {"node-role.kubernetes.io/master": ""}},
            "labels",
            "remove this",
        ),
        (
            {"subnet": {"id": "subnet-0f1e2d3c4b5a69788", "tags": {"Name": "x"}}},
            "subnet",
            "exactly one of id or tags",
        ),
        ({"subnet": {"id": "sg-0123"}}, "subnet.id", "must be a subnet id"),
        ({"securityGroups": []}, "securityGroups", "at least"),
        ({"taint": [INFRA_TAINT]}, "taint", "did you mean 'taints'"),
    ],
)
def test_machine_set_mistakes_name_the_field_and_the_fix(extra: dict[str, Any], field: str, fix: str) -> None:
    msg = _error(_infra(**extra))
    assert f"nodefleet:fleet.clusters[0].machineSets[2].{field}" in msg
    assert fix in msg


def test_a_label_for_another_declared_pool_is_refused() -> None:
    raw = copy.deepcopy(stack_fleet("dev"))
    raw["clusters"][0]["machineSets"][0]["labels"] = {"node-role.kubernetes.io/infra": ""}
    msg = _error(raw)
    assert "machineSets[0].labels: 'node-role.kubernetes.io/infra'" in msg and "set pool: infra" in msg


def test_check_passes_a_stack_with_tainted_infra_nodes(tmp_path: Path) -> None:
    raw = _infra(taints=[INFRA_TAINT], labels={"team": "platform"}, subnet={"id": "subnet-0f1e2d3c4b5a69788"})
    tree = own_tree(raw, tmp_path)
    stack = tmp_path / "Pulumi.infra.yaml"
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": raw}}), encoding="utf-8")
    result = nodefleet("check", "--config-file", str(stack), "--json", env=tree)
    assert result.returncode == 0, result.stdout + result.stderr
    assert not [v for v in json.loads(result.stdout)["violations"] if v["policy"] == "crd-schema"]
