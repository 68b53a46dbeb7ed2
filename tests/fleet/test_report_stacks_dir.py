"""`report` and `fleet report` read the stacks of `--stacks-dir`, inside the repository (against the base's copy of
its stack files) or outside it (the base's code on the stack files as they are now)."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

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
