"""The GitOps pipeline: the workflow lints clean, and the script it calls does what the workflow relies on.

Each step runs ``scripts/pipeline`` exactly as ``.github/workflows/nodefleet.yaml`` does, in a scratch git
repository holding a copy of the project (with a bare repository as its remote), so the real checkout is
never committed to.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT
from tests.shipped import SHIPPED_STACKS

WORKFLOW = PROJECT / ".github" / "workflows" / "nodefleet.yaml"


def _run(cmd: list[str], cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHON": sys.executable, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com", **env}  # fmt: skip
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=600, env=full)


def _git(cwd: Path, *args: str) -> str:
    result = _run(["git", *args], cwd)
    assert result.returncode == 0, result.stderr
    return result.stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A copy of the project's files in a fresh repository on `main`, with a bare `origin`; of stacks/, the
    shipped examples only (a user's own stacks there are theirs, not the suite's)."""
    shipped = {f"stacks/Pulumi.{name}.yaml" for name in SHIPPED_STACKS}
    files = [
        name
        for name in _run(["git", "ls-files", "-co", "--exclude-standard"], PROJECT).stdout.split()
        if not name.startswith("stacks/") or name in shipped
    ]
    work = tmp_path / "work"
    for name in files:
        if (PROJECT / name).is_file():
            (work / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(PROJECT / name, work / name)
    _git(tmp_path, "init", "-q", "--bare", "-b", "main", "origin.git")
    _git(work, "init", "-q", "-b", "main")
    _git(work, "add", "-A")
    _git(work, "commit", "-q", "-m", "base")
    _git(work, "remote", "add", "origin", str(tmp_path / "origin.git"))
    _git(work, "push", "-q", "origin", "main")
    return work


def _tree(repo: Path, ref: str) -> set[str]:
    return set(_git(repo, "ls-tree", "-r", "--name-only", ref).split())


def test_the_workflow_passes_actionlint() -> None:
    result = subprocess.run(
        [str(PROJECT / "scripts" / "actionlint")], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_catches_a_broken_workflow(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yaml"
    broken.write_text(WORKFLOW.read_text().replace("github.base_ref", "github.base_reff", 1))
    result = subprocess.run(
        [str(PROJECT / "scripts" / "actionlint"), str(broken)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 1
    assert "base_reff" in result.stdout


def test_the_workflow_calls_the_pipeline_script() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    runs = [step.get("run", "") for job in workflow["jobs"].values() for step in job["steps"]]
    called = {
        line.split()[1]
        for run in runs
        for line in run.splitlines()
        if line.strip().startswith("scripts/pipeline")
    }
    assert called == {"check", "preview", "report", "publish", "matrix", "wave"}
    # on: is parsed by PyYAML as True (YAML 1.1); the triggers are the PR and pushes to main.
    triggers = workflow[True]
    assert set(triggers) == {"pull_request", "push"} and triggers["push"]["branches"] == ["main"]


def test_check_step_gates_on_the_fleet_exit_code(repo: Path) -> None:
    result = _run(["scripts/pipeline", "check"], repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "fleet exit 0" in result.stdout


def test_publish_commits_the_whole_tree_and_drops_what_left_the_program(repo: Path) -> None:
    first = _run(["scripts/pipeline", "publish", "nodefleet-rendered"], repo)
    assert first.returncode == 0, first.stdout + first.stderr
    files = _tree(repo, "origin/nodefleet-rendered")
    assert "rendered/hosted/prod-east-hosted/1-manifest/karpenter.sh_v1-nodepool-default-spot.yaml" in files
    assert (
        "rendered/dev/dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-infra-us-east-1b.yaml"
        in files
    )
    assert not any(f.startswith(("stacks/", "nodefleet/")) for f in files)  # the branch holds the tree only
    # Nothing changed: nothing to commit.
    again = _run(["scripts/pipeline", "publish", "nodefleet-rendered"], repo)
    assert again.returncode == 0 and "already matches" in again.stdout
    # A MachineSet leaves the program: its manifest leaves the tree.
    stack = repo / "stacks" / "Pulumi.dev.yaml"
    text = stack.read_text()
    cut = text.index("          - name: infra\n            zone: us-east-1b")
    stack.write_text(text[:cut] + "encryptionsalt" + text.split("encryptionsalt", 1)[1])
    _git(repo, "commit", "-qam", "drop the pinned infra MachineSet")
    third = _run(["scripts/pipeline", "publish", "nodefleet-rendered"], repo)
    assert third.returncode == 0, third.stderr
    after = _tree(repo, "origin/nodefleet-rendered")
    assert files - after == {
        "rendered/dev/dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-infra-us-east-1b.yaml"
    }
    assert _git(repo, "log", "-1", "--format=%s", "origin/nodefleet-rendered").startswith("Render of ")


def test_report_step_writes_markdown_and_json_for_the_touched_stacks(repo: Path) -> None:
    _git(repo, "checkout", "-q", "-b", "change")
    dev = repo / "stacks" / "Pulumi.dev.yaml"
    dev.write_text(dev.read_text().replace("coreos-bootimages-5.0.yaml", "coreos-bootimages-4.10.yaml"))
    hosted = repo / "stacks" / "Pulumi.hosted.yaml"
    hosted.write_text(hosted.read_text().replace("expireAfter: 336h", "expireAfter: 168h"))
    _git(repo, "commit", "-qam", "stale boot images on dev; spot nodes expire after a week")
    result = _run(["scripts/pipeline", "report", "main", "out"], repo)
    assert result.returncode == 0, result.stdout + result.stderr  # violations are the check's to gate on
    report = json.loads((repo / "out" / "report.json").read_text())
    assert [s["stack"] for s in report["stacks"]] == ["dev", "hosted"]
    dev_report, hosted_report = report["stacks"]
    assert {v["policy"] for v in dev_report["violations"] if v["level"] == "mandatory"} == {"boot-image-skew"}
    assert dev_report["renderDiff"]["dev"]["changed"]
    rolls = [(i["kind"], i["name"]) for i in hosted_report["forecast"]["items"] if i["rolls"]]
    assert rolls == [("NodePool (Karpenter)", "spot")]
    markdown = (repo / "out" / "report.md").read_text()
    assert "**Policies: ❌ fails** (4 mandatory, 0 advisory)" in markdown
    assert "credential-free check" in markdown
    assert "NodePool template: spec.template.spec.expireAfter" in markdown
    assert "| `prod-east-hosted` | 0 | 1 | 0 |" in markdown


def test_report_of_a_change_that_touches_no_stack(repo: Path) -> None:
    _git(repo, "checkout", "-q", "-b", "docs")
    (repo / "README.md").write_text((repo / "README.md").read_text() + "\nMore words.\n")
    _git(repo, "commit", "-qam", "docs")
    result = _run(["scripts/pipeline", "report", "main", "out"], repo)
    assert result.returncode == 0, result.stderr
    assert "This change touches no stack." in (repo / "out" / "report.md").read_text()


def test_preview_step_is_skipped_without_a_complete_engine(repo: Path) -> None:
    result = _run(["scripts/pipeline", "preview"], repo)
    assert result.returncode == 0
    assert result.stdout.startswith("preview skipped: the Pulumi engine is not complete here")


def test_matrix_step_lists_the_apply_mode_stacks_a_push_touches_by_wave(repo: Path) -> None:
    dev = repo / "stacks" / "Pulumi.dev.yaml"
    dev.write_text(
        dev.read_text().replace(
            "      mode: render\n      directory: rendered/{stack}\n", "      mode: apply\n"
        )
    )
    rhel10 = repo / "stacks" / "Pulumi.rhel10.yaml"
    rhel10.write_text(rhel10.read_text().replace("      mode: render\n", "      mode: apply\n"))
    _git(repo, "commit", "-qam", "apply dev and rhel10 from CI")
    result = _run(["scripts/pipeline", "matrix", "HEAD~1"], repo)
    assert result.returncode == 0, result.stderr
    key, _, value = result.stdout.strip().partition("=")
    assert key == "matrix" and "\n" not in value, "one line of $GITHUB_OUTPUT"
    matrix = json.loads(value)
    assert [(s["stack"], s["wave"]) for s in matrix["stacks"]] == [("dev", "canary"), ("rhel10", "main")]
    assert matrix["waves"]["canary"]["matrix"]["include"][0]["stacks"] == "dev"
    # Only the render-mode hosted stack changes: no apply-mode stack is touched, every wave is empty.
    hosted = repo / "stacks" / "Pulumi.hosted.yaml"
    hosted.write_text(hosted.read_text() + "\n")
    _git(repo, "commit", "-qam", "touch hosted")
    nothing = json.loads(_run(["scripts/pipeline", "matrix", "HEAD~1"], repo).stdout.partition("=")[2])
    assert nothing["total"] == 0
    # The first push of a branch has no previous commit: every apply-mode stack.
    first = json.loads(_run(["scripts/pipeline", "matrix", "0" * 40], repo).stdout.partition("=")[2])
    assert [s["stack"] for s in first["stacks"]] == ["dev", "rhel10"]


def test_wave_step_stops_at_the_check(repo: Path) -> None:
    shutil.copy(PROJECT / "tests" / "stacks" / "Pulumi.stale-boot-images.yaml", repo / "stacks")
    result = _run(["scripts/pipeline", "wave", "stale-boot-images"], repo)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "1 with mandatory violations" in result.stdout
    assert "preview" not in result.stdout + result.stderr, "a failed check gates the preview and the up"


def test_the_workflow_has_a_job_per_wave_each_after_every_earlier_wave() -> None:
    from nodefleet.stackfile.waves import WAVES

    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    for i, wave in enumerate(WAVES):
        job = jobs[f"wave-{wave}"]
        assert set(job["needs"]) == {"waves", *(f"wave-{w}" for w in WAVES[:i])}, wave
        assert (
            job["strategy"]["matrix"]
            == f"${{{{ fromJSON(needs.waves.outputs.matrix).waves.{wave}.matrix }}}}"
        )
        assert f".waves.{wave}.size > 0" in job["if"] and "!contains(needs.*.result, 'failure')" in job["if"]
        assert job["steps"][-1]["run"] == 'scripts/pipeline wave "$STACKS"'
    assert not [name for name in jobs if name.startswith("wave-") and name[5:] not in WAVES]
