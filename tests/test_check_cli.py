"""`python -m nodefleet check|render`: exit codes, output a user can paste, and what it refuses."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import PROJECT

BAD = PROJECT / "tests" / "stacks"


def _nodefleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", *args], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("stack", ["dev", "rhel10", "hosted", "karpenter"])
def test_example_stacks_pass_with_zero_violations(stack: str) -> None:
    result = _nodefleet("check", "--stack", stack, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["resources"] > 0
    assert report["violations"] == []


def test_known_bad_stacks_exit_1_with_policy_and_resource() -> None:
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.stale-boot-images.yaml"), "--json")
    assert result.returncode == 1
    (v,) = json.loads(result.stdout)["violations"]
    assert (v["policy"], v["level"]) == ("boot-image-skew", "mandatory")
    assert v["resource"].endswith("::legacy-p2n8v-worker-us-east-1a")
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.skewed-hosted.yaml"), "--json")
    assert result.returncode == 1
    found = {
        (v["policy"], v["resource"].rsplit("::", 1)[-1]) for v in json.loads(result.stdout)["violations"]
    }
    assert found == {
        ("version-skew", "skewed-nodeclass-ahead"),
        ("version-skew", "skewed-nodeclass-behind"),
        ("version-skew", "skewed-nodepool-old"),
        ("drift-budget", "skewed-karpenter-ahead"),
    }


def test_text_report_names_policy_resource_and_fix() -> None:
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.stale-boot-images.yaml"))
    assert result.returncode == 1
    assert "MANDATORY boot-image-skew  legacy-p2n8v-worker-us-east-1a" in result.stdout
    assert "1 mandatory, 0 advisory" in result.stdout


def test_policy_config_can_relax_a_policy(tmp_path: Path) -> None:
    cfg = tmp_path / "policy-config.json"
    cfg.write_text(json.dumps({"boot-image-skew": "advisory"}))
    result = _nodefleet(
        "check",
        "--config-file",
        str(BAD / "Pulumi.stale-boot-images.yaml"),
        "--policy-config",
        str(cfg),
        "--json",
    )
    assert result.returncode == 0
    assert [v["level"] for v in json.loads(result.stdout)["violations"]] == ["advisory"]


def test_invalid_configuration_exits_2_with_the_message_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.typo.yaml"
    bad.write_text(
        (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text().replace("instanceType:", "instanceTyp:", 1)
    )
    result = _nodefleet("check", "--config-file", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.strip() == (
        "error: stacks/Pulumi.typo.yaml: nodefleet:fleet.clusters[0].machineSets[0].instanceTyp: unknown key "
        "'instanceTyp'; did you mean 'instanceType'?"
    )


def test_unknown_stack_exits_2() -> None:
    result = _nodefleet("check", "--stack", "prod")
    assert result.returncode == 2
    assert (
        "stack 'prod' has no file stacks/Pulumi.prod.yaml; stacks: dev, hosted, karpenter, rhel10"
        in result.stderr
    )


def test_render_writes_the_provider_layout_and_no_secret(tmp_path: Path) -> None:
    result = _nodefleet("render", "--stack", "hosted", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.yaml"))
    assert (
        "prod-east/1-manifest/hypershift.openshift.io_v1beta1-hostedcluster-clusters-prod-east.yaml" in files
    )
    assert "prod-east-hosted/1-manifest/karpenter.sh_v1-nodepool-default-spot.yaml" in files
    assert not any("secret" in f for f in files)


def test_help_lists_both_commands_and_exit_codes() -> None:
    result = _nodefleet("--help")
    assert result.returncode == 0
    assert "check" in result.stdout and "render" in result.stdout and "2 invalid input" in result.stdout
