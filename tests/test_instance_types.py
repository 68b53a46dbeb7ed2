"""EC2 instance types: unknown ones refused with a did-you-mean, architecture mismatches refused, stale-list advice."""

from __future__ import annotations

import copy
import json
import os
import re
import subprocess
import zipfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.instance_types import DATA_FILE, architecture_of, instance_type_finding, known_types
from nodefleet.stackfile.model import ConfigError
from tests.conftest import PROJECT, nodefleet, own_tree, stack_fleet

#: The Karpenter release whose generated DescribeInstanceTypes fixture checks the architecture rule.
KARPENTER = "github.com/aws/karpenter-provider-aws@v1.15.1"


def _stack(tmp_path: Path, raw: dict[str, Any]) -> Path:
    path = tmp_path / "Pulumi.types.yaml"
    path.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": raw}}), encoding="utf-8")
    return path


def _dev(**extra: Any) -> dict[str, Any]:
    raw = copy.deepcopy(stack_fleet("dev"))
    raw["clusters"][0]["machineSets"][0].update(extra)
    return raw


def test_check_refuses_a_misspelled_instance_type_with_a_did_you_mean(tmp_path: Path) -> None:
    result = nodefleet("check", "--config-file", str(_stack(tmp_path, _dev(instanceType="r6i.xxlarge"))))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "nodefleet:fleet.clusters[0].machineSets[0].instanceType: 'r6i.xxlarge' is not an EC2 instance type"
        in (result.stderr)
    )
    assert "did you mean 'r6i.2xlarge'" in result.stderr


def test_an_arm64_type_on_an_amd64_boot_image_is_refused() -> None:
    with pytest.raises(ConfigError) as e:
        load_fleet(_dev(instanceType="m7g.xlarge"), "dev", PROJECT)
    assert (
        "machineSets[0].instanceType: 'm7g.xlarge' is an arm64 instance type but the boot image is amd64"
        in str(e.value)
    )
    assert "'m7i.xlarge'" in str(e.value)
    load_fleet(_dev(instanceType="m7g.xlarge", architecture="arm64"), "dev", PROJECT)


def test_hosted_node_pools_and_karpenter_families_are_checked() -> None:
    raw = copy.deepcopy(stack_fleet("hosted"))
    raw["clusters"][0]["nodePools"][0]["instanceType"] = "m6i.xxlarge"
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "nodePools[0].instanceType: 'm6i.xxlarge'" in str(e.value)
    raw = copy.deepcopy(stack_fleet("hosted"))
    raw["clusters"][0]["autoNode"]["nodePools"][1]["instanceFamilies"] = ["m6i", "c7ii"]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "instanceFamilies[1]: 'c7ii' is not an EC2 instance family" in str(e.value) and "'c7i'" in str(
        e.value
    )
    raw["clusters"][0]["autoNode"]["nodePools"][1]["instanceFamilies"] = ["m7g"]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "'m7g' is an arm64 family but architectures is [amd64]" in str(e.value)


def test_a_type_newer_than_the_list_is_advice_not_an_error(tmp_path: Path) -> None:
    newest = known_types().newest_generation["m"]
    new_type = f"m{newest + 1}i.xlarge"
    raw = _dev(instanceType=new_type)
    tree = own_tree(raw, tmp_path)
    result = nodefleet("check", "--config-file", str(_stack(tmp_path, raw)), env=tree)
    assert result.returncode == 0, result.stdout + result.stderr
    (line,) = [ln for ln in result.stdout.splitlines() if "ADVISORY  instance-type" in ln]
    assert f"machineSets[0].instanceType: '{new_type}' is not in the shipped list" in line
    assert "scripts/ec2-instance-types" in line


def test_the_shipped_list_records_where_it_came_from() -> None:
    data = json.loads(DATA_FILE.read_text(encoding="utf-8"))
    source = data["source"]
    assert source["package"] == "botocore" and source["file"].startswith("botocore/data/ec2/")
    assert re.fullmatch(r"[0-9a-f]{64}", source["wheelSha256"])
    assert data["types"]["r6i.2xlarge"] == "amd64" and data["types"]["m7g.large"] == "arm64"
    assert len(data["types"]) > 1000
    assert instance_type_finding("r6i.2xlarge", "x86_64") is None


@pytest.mark.goref
def test_the_architecture_rule_agrees_with_karpenters_generated_instance_data() -> None:
    """Every type in Karpenter's generated DescribeInstanceTypes fixture has the architecture the rule gives."""
    # The module zip as the proxy serves it (go refuses to unpack a module needing a newer toolchain, but
    # still downloads and verifies the zip, which is all this reads).
    found = subprocess.run(
        ["go", "mod", "download", "-json", KARPENTER],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "GOFLAGS": "-mod=mod"},
    )
    module = json.loads(found.stdout)
    assert Path(module.get("Zip", "")).is_file(), found.stdout + found.stderr
    member = f"{KARPENTER}/pkg/fake/zz_generated.describe_instance_types.go"
    with zipfile.ZipFile(module["Zip"]) as z:
        text = z.read(member).decode("utf-8")
    pairs = re.findall(
        r'InstanceType:\s+"([^"]+)".*?SupportedArchitectures:\s+\[\]ec2types\.ArchitectureType\{"([^"]+)"',
        text,
        re.S,
    )
    assert len(pairs) >= 5
    for name, arch in pairs:
        assert architecture_of(name) == {"x86_64": "amd64"}.get(arch, arch), name
        assert known_types().types.get(name) == architecture_of(name), name


def test_karpenter_requirements_on_instance_types_and_families_are_checked() -> None:
    raw = copy.deepcopy(stack_fleet("hosted"))
    pool = raw["clusters"][0]["autoNode"]["nodePools"][0]
    pool["requirements"] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.xlarge", "r6i.xxlarge"]}
    ]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert (
        "autoNode.nodePools[0].requirements[0].values[1]: 'r6i.xxlarge' is not an EC2 instance type"
        in str(e.value)
    )
    pool["requirements"] = [
        {"key": "karpenter.k8s.aws/instance-family", "operator": "NotIn", "values": ["t3a", "c5z"]}
    ]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "requirements[0].values[1]: 'c5z' is not an EC2 instance family" in str(e.value)
    pool["requirements"] = [
        {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m6i.xlarge"]}
    ]
    load_fleet(raw, "hosted", PROJECT)
