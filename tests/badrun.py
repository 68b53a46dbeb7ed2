"""Running a command on bad input as a user would, bounded in time, with every write and every secret seen.

Each run happens in a scratch Git repository holding the example fleet of tests/fleet/regional; the whole
scratch folder (the repository and what lies beside it) is snapshotted before and after, so a file written,
changed or removed anywhere shows. A run that does not end within its bound is killed, with its process
group, and reported as a hang: the suite never gets stuck on one.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from tests.conftest import PROJECT

FLEET = PROJECT / "tests" / "fleet" / "regional"
#: A credential no output and no file may hold: a canary put in every secret-bearing input.
CANARY = "canary-7f3a9c1e2b5d"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
#: Bound of one command on bad input: every refusal comes long before it on a loaded machine.
BOUND = 240.0


def git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True, text=True
    ).stdout


def scratch(tmp_path: Path) -> Path:
    """The example fleet in a Git repository at ``tmp_path/repo`` (stack files in ``stacks/``), committed."""
    repo = tmp_path / "repo"
    shutil.copytree(FLEET, repo / "stacks")
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the fleet")
    return repo


def _snapshot(base: Path) -> dict[str, tuple[int, int, int]]:
    out = {}
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(root, d)))]:
            path = os.path.join(root, name)
            st = os.lstat(path)
            out[os.path.relpath(path, base)] = (st.st_mode, st.st_size, st.st_mtime_ns)
    return out


@dataclass
class Run:
    argv: list[str]
    code: int | None
    stdout: str
    stderr: str
    #: Files written, changed or removed below the scratch folder, relative to it.
    changed: list[str] = field(default_factory=list)
    hung: bool = False
    #: Files below the scratch folder that held the canary before the run (the inputs it was put in).
    held: set[str] = field(default_factory=set)
    #: The scratch repository's commit before the run ("" when it has none).
    head: str = ""

    def where(self) -> str:
        return (
            f"nodefleet {' '.join(self.argv)}: exit {self.code}{' (HUNG, killed)' if self.hung else ''}\n"
            f"stdout: {self.stdout[-1500:]}\nstderr: {self.stderr[-1500:]}\nchanged: {self.changed}"
        )


def run(
    base: Path,
    *argv: str,
    cwd: Path | None = None,
    env: Mapping[str, str] | None = None,
    bound: float = BOUND,
    stdin: str | None = None,
) -> Run:
    """``python -m nodefleet <argv>`` from ``cwd`` (default: ``base/repo``), killed after ``bound`` seconds."""
    before = _snapshot(base)
    held = {rel for rel in before if _holds(base / rel)}
    repo = base / "repo"
    head = git(repo, "rev-parse", "HEAD").strip() if (repo / ".git").is_dir() else ""
    environ = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_")}
    proc = subprocess.Popen(
        [sys.executable, "-m", "nodefleet", *argv],
        cwd=cwd or base / "repo",
        env={**environ, "PYTHONPATH": str(PROJECT), **GIT_ENV, **(env or {})},
        stdin=subprocess.PIPE if stdin is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        out, err = proc.communicate(stdin, timeout=bound)
        hung = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        out, err = proc.communicate()
        hung = True
    after = _snapshot(base)
    changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
    return Run(list(argv), None if hung else proc.returncode, out, err, changed, hung, held, head)


def _holds(path: Path, canary: str = CANARY) -> bool:
    try:
        return path.is_file() and not path.is_symlink() and canary.encode() in path.read_bytes()
    except OSError:
        return False


def refused(result: Run, says: str) -> None:
    """Exit 2 within the bound: one ``error:`` line saying ``says``, no traceback, nothing written."""
    where = result.where()
    assert not result.hung, f"hung: {where}"
    assert "Traceback" not in result.stdout + result.stderr, where
    assert "internal error" not in result.stderr, where
    assert result.code == 2, where
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: "), where
    assert says in lines[0], where
    assert result.changed == [], where


def no_secret(result: Run, base: Path, canary: str = CANARY) -> None:
    """The canary is in no output, in no file the run wrote (other than an input that held it already) and in
    no line a commit of the run added."""
    where = result.where()
    assert not result.hung, f"hung: {where}"
    assert canary not in result.stdout and canary not in result.stderr, where
    for rel in result.changed:
        if rel not in result.held and _holds(base / rel, canary):
            raise AssertionError(f"{rel} holds the secret; {where}")
    repo = base / "repo"
    if result.head:
        added = [
            line
            for line in git(repo, "log", "-p", "-U0", f"{result.head}..HEAD").splitlines()
            if line.startswith("+") and canary in line
        ]
        assert not added, f"a commit of the run adds the secret: {added[:3]}; {where}"
