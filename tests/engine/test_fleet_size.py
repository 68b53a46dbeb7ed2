"""`check` says when a stack would run more Kubernetes provider processes than a team allows: an advisory
line in text, `kubernetesProviders` and `warnings` in `--json`, never a violation or another exit code."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
import yaml

from bench.scale import synthetic_fleet
from engine.sizing import DEFAULT_MAX_PROVIDERS, fleet_size_warning, kubernetes_providers, provider_memory_mb
from mockruntime.run import run_program
from tests.conftest import nodefleet


def _stack(tmp_path: Path, clusters: int) -> Path:
    f = tmp_path / f"Pulumi.fleet-{clusters}.yaml"
    f.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": synthetic_fleet(clusters)}}))
    return f


def _check(stack: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return nodefleet("check", "--config-file", str(stack), *args, env=env)


def test_one_provider_per_standalone_cluster_and_two_per_hosted_cluster() -> None:
    assert kubernetes_providers(run_program("dev").registrations) == 1
    assert kubernetes_providers(run_program("hosted").registrations) == 2  # management side, hosted side


def test_above_the_default_limit_check_warns_without_failing(tmp_path: Path) -> None:
    stack = _stack(tmp_path, DEFAULT_MAX_PROVIDERS + 1)
    text = _check(stack)
    assert text.returncode == 0, text.stderr
    (line,) = [out for out in text.stdout.splitlines() if "fleet-size" in out]
    assert line.startswith(f"  ADVISORY  fleet-size  {DEFAULT_MAX_PROVIDERS + 1} Kubernetes providers")
    assert "one per cluster" in line
    report = json.loads(_check(stack, "--json").stdout)
    assert report["kubernetesProviders"] == DEFAULT_MAX_PROVIDERS + 1
    assert len(report["warnings"]) == 1 and report["violations"] == []


def test_at_the_limit_there_is_no_warning(tmp_path: Path) -> None:
    report = json.loads(_check(_stack(tmp_path, DEFAULT_MAX_PROVIDERS), "--json").stdout)
    assert report["kubernetesProviders"] == DEFAULT_MAX_PROVIDERS
    assert report["warnings"] == []


def test_the_limit_comes_from_the_option_then_the_environment(tmp_path: Path) -> None:
    stack = _stack(tmp_path, 3)
    assert json.loads(_check(stack, "--json", env={"NODEFLEET_MAX_PROVIDERS": "2"}).stdout)["warnings"]
    assert not json.loads(
        _check(stack, "--json", "--max-providers", "3", env={"NODEFLEET_MAX_PROVIDERS": "2"}).stdout
    )["warnings"]


@pytest.mark.parametrize("value", ["many", "0", "-4"])
def test_a_bad_limit_is_one_clear_error(tmp_path: Path, value: str) -> None:
    done = _check(_stack(tmp_path, 1), env={"NODEFLEET_MAX_PROVIDERS": value})
    assert done.returncode == 2
    assert done.stderr.startswith(f"error: NODEFLEET_MAX_PROVIDERS={value!r}: not a positive whole number")
    assert "Traceback" not in done.stderr


def test_the_advisory_counts_the_shared_provider_binary_once() -> None:
    # 100 providers: 120 MB of binary shared by all, 17 MB private each: about 1.8 GB, not 100 x 140 MB.
    warning = fleet_size_warning(100, 30)
    assert warning is not None and "~1.8 GB" in warning and "~13 s of CPU" in warning
    assert provider_memory_mb(0) == 0 and provider_memory_mb(1) == 137
