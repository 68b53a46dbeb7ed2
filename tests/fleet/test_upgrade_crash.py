"""`fleet upgrade --commit` killed between any two of its operations resumes to the same commits as a run that
was never interrupted: one commit per step on each branch, each holding exactly its step's paths.

Each test kills the command at one point (``NODEFLEET_TEST_CRASH_AT``: the command ends itself there with
``os._exit``, as a kill would leave it; or its health command kills it with SIGKILL while the gate runs), runs the
same command again, and compares everything the two runs left behind with what one uninterrupted run leaves: the
commits of both branches (ids included: the dates are fixed, so the same commits have the same ids), their trees,
the index, the working tree, the state file's progress. The points are those of the third step (the early wave's
control planes), where every earlier step is already recorded, and those of the standalone cluster's steps.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.fleet.upgrade_repo import GITOPS, copy_repo, git, make_repo, snapshot, state, upgrade

HEALTHY = "true"


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test fleet, committed and published once; each test works on a copy."""
    return make_repo(tmp_path_factory.mktemp("template"))


@pytest.fixture(scope="module")
def uninterrupted(template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    repo = copy_repo(template, tmp_path_factory.mktemp("uninterrupted"))
    done = upgrade(repo, "--health-command", HEALTHY)
    assert done.returncode == 0, done.stdout + done.stderr
    return snapshot(repo)


def test_an_uninterrupted_run_commits_each_step_once_with_exactly_its_paths(
    uninterrupted: dict[str, Any],
) -> None:
    """The reference itself: 7 steps with edits (the standalone cluster's control-plane step edits nothing: its
    own cluster version operator moves it), each one commit on main with only its stack files and one on the
    GitOps branch with only its render folders, each naming the step in its trailers."""
    log = uninterrupted["branches"]["main"]["log"].split("\x00")
    subjects = [entry.strip().splitlines()[1] for entry in log if entry.strip()]
    assert subjects == [
        "Fleet upgrade to 4.22.4: last wave, nodes (plant-last)",
        "Fleet upgrade to 4.22.4: main wave, nodes (east-a, east-b)",
        "Fleet upgrade to 4.22.4: main wave, control-plane (east-a, east-b)",
        "Fleet upgrade to 4.22.4: early wave, nodes (Team_B)",
        "Fleet upgrade to 4.22.4: early wave, control-plane (Team_B)",
        "Fleet upgrade to 4.22.4: canary wave, nodes (canary-east)",
        "Fleet upgrade to 4.22.4: canary wave, control-plane (canary-east)",
        "The fleet",
    ]
    assert uninterrupted["status"] == ""
    assert len(uninterrupted["progress"]) == 16 and uninterrupted["complete"] is True
    assert "plant-last" not in uninterrupted["branches"][GITOPS]["log"].split("\x00")[-3]


def _crash(template: Path, tmp_path: Path, point: str) -> Path:
    repo = copy_repo(template, tmp_path)
    crashed = upgrade(repo, "--health-command", HEALTHY, env={"NODEFLEET_TEST_CRASH_AT": point})
    assert crashed.returncode in (137, -9), (
        f"{point}: exit {crashed.returncode}\n{crashed.stdout}{crashed.stderr}"
    )
    assert "Traceback" not in crashed.stderr
    return repo


def _resume(repo: Path) -> None:
    resumed = upgrade(repo, "--health-command", HEALTHY)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stderr and "error:" not in resumed.stderr


@pytest.mark.parametrize(
    "point",
    [
        "edited:3",  # the stack file edited, nothing rendered
        "rendered:3",  # rendered, nothing committed
        "added:5",  # the step's paths in the temporary index of the main commit
        "commit-tree:5",  # the commit object made, the branch not moved
        "committed:3",  # main moved, the render not committed
        "added:6",  # the render in the temporary index of the GitOps branch's commit
        "commit-tree:6",  # the render commit made, the GitOps branch not moved
        "render-committed:3",  # both branches moved, the user's index not synced
        "index-synced:3",  # everything done but the state file
        "recorded:3",  # the step recorded, its gate not run
        "gate:3",  # the gate passed, not recorded
        "recorded:7",  # the standalone cluster's control-plane step: nothing to edit, recorded
        "edited:8",  # the standalone cluster's release recorded in its stack file, nothing committed
        "committed:7",  # its commit made, its render not
    ],
)
def test_a_run_killed_at_a_point_resumes_to_the_same_commits(
    template: Path, tmp_path: Path, point: str, uninterrupted: dict[str, Any]
) -> None:
    repo = _crash(template, tmp_path, point)
    _resume(repo)
    assert snapshot(repo) == uninterrupted


def test_a_run_killed_while_its_health_command_runs_resumes_to_the_same_commits(
    template: Path, tmp_path: Path, uninterrupted: dict[str, Any]
) -> None:
    """SIGKILL from the health command of the early wave's control planes (its parent is the command)."""
    marker = tmp_path / "killed"
    health = f'if [ "$NODEFLEET_WAVE" = early ] && [ ! -e {marker} ]; then touch {marker}; kill -9 $PPID; sleep 5; fi; true'
    repo = copy_repo(template, tmp_path)
    crashed = upgrade(repo, "--health-command", health)
    assert crashed.returncode in (137, -9), crashed.stdout + crashed.stderr
    assert marker.exists()
    assert [e["event"] for e in state(repo)["progress"]][-1] == "staged"  # killed at the gate, not after it
    _resume(repo)
    assert snapshot(repo) == uninterrupted


def test_nothing_the_user_staged_goes_into_a_step_and_it_stays_staged(template: Path, tmp_path: Path) -> None:
    repo = copy_repo(template, tmp_path)
    (repo / "README.md").write_text("The platform team's fleet, upgraded to 4.22.4.\n")
    git(repo, "add", "README.md")
    (repo / "NOTES.md").write_text("not staged\n")
    done = upgrade(repo, "--health-command", HEALTHY)
    assert done.returncode == 0, done.stdout + done.stderr
    changed = git(repo, "log", "--format=", "--name-only", "main~7..main").split()
    assert sorted(set(changed)) == sorted(
        f"stacks/Pulumi.{s}.yaml" for s in ("canary-east", "Team_B", "east-a", "east-b", "plant-last")
    )
    assert git(repo, "status", "--porcelain=v1") == "M  README.md\n?? NOTES.md\n"


def test_a_staged_change_to_a_stack_file_of_the_plan_is_refused_before_anything_is_written(
    template: Path, tmp_path: Path
) -> None:
    repo = copy_repo(template, tmp_path)
    path = repo / "stacks" / "Pulumi.Team_B.yaml"
    path.write_text(path.read_text().replace("replicas: 2", "replicas: 3", 1))
    git(repo, "add", str(path))
    before = git(repo, "log", "--all", "--format=%H")
    refused = upgrade(repo, "--health-command", HEALTHY)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == (
        "error: --commit: stacks/Pulumi.Team_B.yaml has changes not committed (or not tracked yet); each step's commit "
        "must hold only the step: commit or stash them first\n"
    )
    assert git(repo, "log", "--all", "--format=%H") == before
    assert not (repo / ".git" / "nodefleet-upgrade.json").exists()
