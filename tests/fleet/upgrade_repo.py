"""A fleet in a scratch git repository, as a platform team keeps one, for the `fleet upgrade` tests.

The regional fleet (tests/fleet/regional: three HyperShift management clusters in two regions, hosted clusters in
HyperShift's default namespace, declared once in its registry) and a standalone cluster with a custom pool (tests/fleet/upgrade), in four waves,
in render mode. The repository ignores `rendered/` as the project does; the render of every stack is published
on `nodefleet-rendered`, as `scripts/pipeline publish` keeps it, which the GitOps wiring reads. Every commit is
made with fixed dates, so two runs that make the same commits make commits with the same ids.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT, nodefleet

REGIONAL = PROJECT / "tests" / "fleet" / "regional"
STANDALONE = PROJECT / "tests" / "fleet" / "upgrade"
#: Stack → wave of the test fleet.
WAVES = {"canary-east": "canary", "Team_B": "early", "east-a": "main", "east-b": "main", "plant-last": "last"}
OLD, NEW = "4.22.3", "4.22.4"
GIT_ENV = {
    "GIT_AUTHOR_NAME": "Platform Team",
    "GIT_AUTHOR_EMAIL": "platform@example.com",
    "GIT_COMMITTER_NAME": "Platform Team",
    "GIT_COMMITTER_EMAIL": "platform@example.com",
    "GIT_AUTHOR_DATE": "2026-11-26T10:00:00+00:00",
    "GIT_COMMITTER_DATE": "2026-11-26T10:00:00+00:00",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_CONFIG_NOSYSTEM": "1",
}
GITOPS = "nodefleet-rendered"


def git(repo: Path, *args: str, check: bool = True) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=check, capture_output=True, text=True
    ).stdout


def copy_repo(template: Path, root: Path) -> Path:
    """A copy of a repository :func:`make_repo` made (the same commits, index and working tree), in ``root``/repo."""
    repo = root / "repo"
    shutil.copytree(template, repo, symlinks=True)
    return repo


def make_repo(root: Path, stacks: Mapping[str, str] = WAVES, *, publish: bool = True) -> Path:
    """The test fleet in ``root``/repo, committed on ``main``; with ``publish`` its render on ``nodefleet-rendered``."""
    repo = root / "repo"
    (repo / "stacks").mkdir(parents=True)
    shutil.copy(REGIONAL / "nodefleet-fleet.yaml", repo / "stacks")  # the fleet's management clusters
    for stack in stacks:
        source = REGIONAL if (REGIONAL / f"Pulumi.{stack}.yaml").exists() else STANDALONE
        shutil.copy(source / f"Pulumi.{stack}.yaml", repo / "stacks")
    (repo / ".gitignore").write_text("rendered/\n")
    (repo / "README.md").write_text("The platform team's fleet.\n")
    git(repo, "init", "-q", "-b", "main")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "The fleet")
    if publish:
        rendered = nodefleet(
            "fleet",
            "render",
            "--stacks-dir",
            str(repo / "stacks"),
            "--out",
            str(repo / "rendered"),
            timeout=900,
        )
        assert rendered.returncode == 0, rendered.stdout + rendered.stderr
        git(repo, "checkout", "-q", "-b", GITOPS)
        git(repo, "add", "-f", "rendered")
        git(repo, "commit", "-qm", "Render of the fleet")
        git(repo, "checkout", "-q", "main")
        # The render stays in the working tree, as a user's last render does (main ignores it).
        git(repo, "restore", "--source", GITOPS, "--worktree", "--", "rendered")
    return repo


def upgrade(
    repo: Path, *extra: str, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """``fleet upgrade --release NEW --commit`` of the test fleet, its render in the repository's rendered/."""
    return nodefleet(
        "fleet", "upgrade", "--stacks-dir", str(repo / "stacks"), "--out", str(repo / "rendered"),
        "--release", NEW, "--commit", *extra, env={**GIT_ENV, **(env or {})}, timeout=900,
    )  # fmt: skip


def state(repo: Path) -> dict[str, Any]:
    return json.loads((repo / ".git" / "nodefleet-upgrade.json").read_text())  # type: ignore[no-any-return]


def snapshot(repo: Path) -> dict[str, Any]:
    """Everything a run leaves behind that a second, uninterrupted run must leave the same: the commits of both
    branches (ids, parents, messages: the dates are fixed), their trees, the index, the working tree's status and
    stack files, the progress the state file records."""
    branches = {}
    for branch in ("main", GITOPS):
        branches[branch] = {
            "log": git(repo, "log", "--format=%H %P%n%B%x00", branch),
            "tree": git(repo, "ls-tree", "-r", branch),
        }
    progress = [{k: v for k, v in event.items() if k != "detail"} for event in state(repo)["progress"]]
    return {
        "branches": branches,
        "index": git(repo, "ls-files", "-s"),
        "status": git(repo, "status", "--porcelain=v1", "--untracked-files=all"),
        "stacks": {p.name: p.read_text() for p in sorted((repo / "stacks").iterdir())},
        "rendered": {
            str(p.relative_to(repo)): p.read_text()
            for p in sorted((repo / "rendered").rglob("*"))
            if p.is_file()
        },
        "progress": progress,
        "complete": state(repo)["complete"],
        "head": git(repo, "symbolic-ref", "HEAD"),
    }
