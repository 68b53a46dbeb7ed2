"""The API server's rules in `check`, and `crds refresh|coverage`: what the config accepts but a CRD
rejects fails `check` with the CRD's message; the shipped CRDs are exactly what SOURCES.yaml records."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from harness.mockrun import stack_fleet
from nodefleet import kinds as k
from nodefleet.crdstore import CRD_DIR, SOURCES_FILE
from tests.conftest import PROJECT, SHARED_DATA
from tests.crdobjects import rendered


def _nodefleet(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", *args], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )


def _stack(tmp_path: Path, name: str, fleet: dict[str, Any]) -> Path:
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    return path


def _autoscaling(fleet: dict[str, Any]) -> None:
    pool = fleet["clusters"][0]["nodePools"][0]
    pool.pop("replicas", None)
    pool["autoScaling"] = {"min": 5, "max": 1}


def _schedule(fleet: dict[str, Any]) -> None:
    fleet["clusters"][0]["autoNode"]["nodePools"][0]["disruption"]["driftWindows"] = [
        {"schedule": "whenever", "duration": "8h", "nodes": "0"}
    ]


def _label(fleet: dict[str, Any]) -> None:
    fleet["clusters"][0]["autoNode"]["nodePools"][0]["labels"] = {"karpenter.k8s.aws/team": "batch"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_autoscaling, "spec.autoScaling: Invalid value: max must be equal or greater than min"),
        (_schedule, 'schedule: Invalid value: "whenever": should match'),
        (
            _label,
            'spec.template.metadata.labels: Invalid value: label domain "karpenter.k8s.aws" is restricted',
        ),
    ],
    ids=["autoscaling-min-above-max", "drift-window-schedule", "label-key"],
)
def test_what_the_crd_rejects_fails_check(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    fleet = stack_fleet("hosted")
    change(fleet)
    result = _nodefleet("check", "--config-file", str(_stack(tmp_path, "crd-bad", fleet)), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    found = [v for v in json.loads(result.stdout)["violations"] if v["policy"] == "crd-schema"]
    assert len(found) == 1 and expected in found[0]["message"], found
    assert found[0]["level"] == "mandatory"


def test_check_evaluates_transition_rules_against_a_checkpoint(tmp_path: Path) -> None:
    """A stack export where the HostedCluster has another infraID: changing it is refused."""
    fleet = stack_fleet("hosted")
    stack = _stack(tmp_path, "crd-moved", fleet)
    report = json.loads(_nodefleet("check", "--config-file", str(stack), "--json").stdout)
    assert report["violations"] == []
    # As `pulumi stack export` names it; the check's own run names stack and project differently.
    hc_urn = "urn:pulumi:prod::nodefleet::nodefleet:hosted:Cluster$kubernetes:hypershift.openshift.io/v1beta1:HostedCluster::prod-east-hostedcluster"
    previous = rendered(k.HOSTED_CLUSTER.token)  # the same cluster, as created with another infraID
    previous["spec"]["infraID"] = "prod-east-zzzzz"
    state = tmp_path / "state.json"
    state.write_text(
        json.dumps({"version": 3, "deployment": {"resources": [{"urn": hc_urn, "outputs": previous}]}})
    )
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"crd-schema": {"previousState": str(state)}}))
    result = _nodefleet("check", "--config-file", str(stack), "--policy-config", str(config), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    (v,) = json.loads(result.stdout)["violations"]
    assert v["resource"].endswith("HostedCluster::prod-east-hostedcluster")
    assert "spec.infraID: Invalid value: infraID is immutable" in v["message"]


def test_shipped_crds_are_the_recorded_upstream_files() -> None:
    recorded = yaml.safe_load((CRD_DIR / SOURCES_FILE).read_text())["crds"]
    files = sorted(p.name for p in CRD_DIR.glob("*.yaml") if p.name != SOURCES_FILE)
    assert files == sorted(e["file"] for e in recorded)
    for entry in recorded:
        digest = hashlib.sha256((CRD_DIR / entry["file"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], (
            f"{entry['file']} differs from what SOURCES.yaml records: refresh it"
        )
        assert entry["source"]["commit"] and entry["source"]["repository"]


def test_refresh_copies_the_written_kinds_with_their_sources(tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    result = _nodefleet("crds", "refresh", "--from", str(SHARED_DATA / "crds"), "--to", str(dest))
    assert result.returncode == 0, result.stderr
    assert "8 CRDs" in result.stdout
    assert "ignored   karpenter.sh_nodeclaims.yaml" in result.stdout
    assert sorted(p.name for p in dest.iterdir()) == sorted(p.name for p in CRD_DIR.iterdir())
    assert (dest / SOURCES_FILE).read_text() == (CRD_DIR / SOURCES_FILE).read_text()


def test_refresh_refuses_an_incomplete_or_unrecorded_source(tmp_path: Path) -> None:
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(SHARED_DATA / "crds" / "karpenter.sh_nodepools.yaml", partial)
    result = _nodefleet("crds", "refresh", "--from", str(partial), "--to", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no CRD for MachineSet" in result.stderr and "nothing was changed" in result.stderr
    unrecorded = tmp_path / "unrecorded"
    shutil.copytree(SHARED_DATA / "crds", unrecorded)
    result = _nodefleet("crds", "refresh", "--from", str(unrecorded), "--to", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no upstream source recorded" in result.stderr
    assert not (tmp_path / "out").exists()


def test_coverage_lists_every_crd_and_no_missing_function() -> None:
    result = _nodefleet("crds", "coverage")
    assert result.returncode == 0, result.stderr
    assert "HostedCluster" in result.stdout and "MachineConfiguration" in result.stdout
    assert "total" in result.stdout and "  491      83      491      0" in result.stdout
    assert "missing: none" in result.stdout
