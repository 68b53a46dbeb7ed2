"""`report` and `fleet report` read the stacks of `--stacks-dir`, inside the repository (against the base's copy of
its stack files) or outside it (the base's code on the stack files as they are now)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from tests.conftest import nodefleet
from tests.test_pipeline import _git, _run, repo  # noqa: F401 (repo is a fixture)

FLEET = Path(__file__).resolve().parent / "regional"


def _report(work: Path, *args: str) -> dict:  # type: ignore[type-arg]
    result = _run([sys.executable, "-m", "nodefleet", *args], work)
    assert result.returncode in (0, 1), result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


def test_report_reads_a_stacks_dir_inside_the_repository(repo: Path) -> None:  # noqa: F811
    shutil.copytree(FLEET, repo / "fleet")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a fleet of its own")
    _git(repo, "checkout", "-q", "-b", "change")
    east = repo / "fleet" / "Pulumi.east-a.yaml"
    east.write_text(east.read_text().replace("replicas: 2", "replicas: 4", 1))
    _git(repo, "commit", "-qam", "more infra nodes")
    report = _report(repo, "report", "--base", "main", "--stacks-dir", "fleet", "--json")
    assert report["changedFiles"] == ["fleet/Pulumi.east-a.yaml"]
    (stack,) = report["stacks"]
    assert stack["stack"] == "east-a" and not stack["baseMissing"]
    assert stack["renderDiff"]["shop"]["changed"] == [
        "1-manifest/hypershift.openshift.io_v1beta1-nodepool-clusters-shop-infra.yaml"
    ]
    fleet = _report(
        repo, "fleet", "report", "--stacks-dir", "fleet", "--stacks", "east-a", "--base", "main", "--json",
        "--out-dir", "reports",
    )  # fmt: skip
    assert [(s["stack"], s["exit"]) for s in fleet["stacks"]] == [("east-a", 0)]
    # Each stack's report says why it is there: not "named with --stacks", which the user may not have said.
    markdown = (repo / "reports" / "east-a.md").read_text()
    assert "Stacks: one report per stack of `fleet report`." in markdown, markdown[:600]


def test_report_reads_a_stacks_dir_outside_the_repository(repo: Path, tmp_path: Path) -> None:  # noqa: F811
    outside = tmp_path / "team-fleet"
    shutil.copytree(FLEET, outside)
    _git(repo, "checkout", "-q", "-b", "change")
    report = _report(
        repo, "report", "--base", "main", "--stacks-dir", str(outside), "--stacks", "canary-east", "--json"
    )
    (stack,) = report["stacks"]
    assert stack["stack"] == "canary-east" and not stack["baseMissing"]
    assert stack["renderDiff"]["edge"] == {
        "added": [],
        "changed": [],
        "removed": [],
    }  # the code did not change
    assert any("Pulumi reads stack files from stacks/ only" in c for c in stack["checks"])
    # Without --stacks: a change that touches no program file touches none of them.
    untouched = _report(repo, "report", "--base", "main", "--stacks-dir", str(outside), "--json")
    assert untouched["stacks"] == [] and "outside the repository" in untouched["why"]
    fleet = _report(repo, "fleet", "report", "--stacks-dir", str(outside), "--base", "main", "--json")
    assert sorted((s["stack"], s["exit"]) for s in fleet["stacks"]) == [
        ("Team_B", 0),
        ("canary-east", 0),
        ("east-a", 0),
        ("east-b", 0),
    ]


def _matrix_stacks(work: Path, *args: str, stdin: str | None = None) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-m", "nodefleet", "fleet", "matrix", "--stacks-dir", "fleet", *args],
        cwd=work, input=stdin, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    return sorted(s["stack"] for s in json.loads(done.stdout)["stacks"])


def test_a_registry_change_touches_the_stacks_on_the_management_clusters_it_changes(
    repo: Path,  # noqa: F811
) -> None:
    """mgmt-euw1-a's argocdCluster changes: Team_B's folders go to another Argo CD cluster. report names Team_B
    and what changed, its render diff holds the Argo CD file that says where the folder goes, fleet matrix keeps
    it (given the base, only it), fleet report counts the file."""
    shutil.copytree(FLEET, repo / "fleet")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "a fleet of its own")
    _git(repo, "checkout", "-q", "-b", "change")
    registry = repo / "fleet" / "nodefleet-fleet.yaml"
    registry.write_text(registry.read_text().replace("argocdCluster: mgmt-euw1-a", "argocdCluster: hub-euw1"))
    _git(repo, "commit", "-qam", "mgmt-euw1-a moves to another Argo CD cluster")

    report = _report(repo, "report", "--base", "main", "--stacks-dir", "fleet", "--json")
    assert report["changedFiles"] == ["fleet/nodefleet-fleet.yaml"]
    assert [s["stack"] for s in report["stacks"]] == ["Team_B"], report["why"]
    assert "mgmt-euw1-a: argocdCluster mgmt-euw1-a → hub-euw1" in report["why"]
    (stack,) = report["stacks"]
    differ = {folder: diff for folder, diff in stack["renderDiff"].items() if any(diff.values())}
    assert differ == {"shop": {"added": [], "changed": ["argocd-ignore-differences"], "removed": []}}

    changed = "fleet/nodefleet-fleet.yaml\n"
    assert _matrix_stacks(repo, "--changed-files", "-", "--base", "main", stdin=changed) == ["Team_B"]
    # Without the base: every stack on a management cluster (which one changed is not known).
    assert _matrix_stacks(repo, "--changed-files", "-", stdin=changed) == [
        "Team_B",
        "canary-east",
        "east-a",
        "east-b",
    ]

    fleet = _report(
        repo, "fleet", "report", "--stacks-dir", "fleet", "--stacks", "Team_B", "--base", "main", "--json"
    )
    (summary,) = [s["summary"] for s in fleet["stacks"]]
    assert summary.endswith("1 rendered file differs from the base"), summary


def test_fleet_matrix_refuses_a_broken_registry(tmp_path: Path) -> None:
    stacks = tmp_path / "fleet"
    shutil.copytree(FLEET, stacks)
    (stacks / "nodefleet-fleet.yaml").write_text("managementClusters:\n  - name: Mgmt_A\n")
    done = nodefleet("fleet", "matrix", "--stacks-dir", str(stacks))
    assert done.returncode == 2, done.stdout + done.stderr
    assert "nodefleet-fleet.yaml: managementClusters[0].name: must be" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
