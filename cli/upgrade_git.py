"""Git for ``fleet upgrade --commit``: one commit per step holding exactly the step's paths, made with git's plumbing
so that the user's index, working tree and checkout are left as they were.

A commit is built in a temporary index (``GIT_INDEX_FILE``) seeded from the branch's tip, with the step's paths
added from the working tree (``git add -f``: a render folder the project's ``.gitignore`` ignores is committed all
the same), written as a tree, committed with ``commit-tree`` and put on the branch with ``update-ref`` against the
tip it was built on (so a commit made meanwhile is never overwritten). Nothing else the user staged goes in. The
user's index is then brought in line with the new commit for the step's paths only (``git reset -- <paths>``),
so ``git status`` shows the step as committed and every other staged change still staged.

Each commit carries trailers naming the upgrade (:data:`TRAILERS`): release, plan digest, wave and phase (and, for
a render commit, the source commit it renders). A run that was killed after a commit but before the state file
recorded it finds the commit by them (:func:`find_commit`) instead of making a second one.

The render goes to the branch the GitOps tool reads (``gitops.branch`` of the registry, ``--gitops-branch``,
default ``nodefleet-rendered``, where ``scripts/pipeline publish`` puts it), without checking that branch out:
the same temporary index, seeded from that branch. When the GitOps tool reads the branch the stack files are on,
one commit holds both.

With ``--push`` both branches go to the remote in one ``git push --atomic``, never forced. Where a branch is on the
remote is read with ``ls-remote`` (:func:`remote_tips`); a tip there the local branch does not contain (someone
else pushed to it) is refused with the merge that brings it in (:func:`moved_on_remote`).
"""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from cli.exits import InputError
from nodefleet.files import redact

__all__ = [
    "TRAILERS",
    "Repo",
    "commit_paths",
    "fetch_objects",
    "find_commit",
    "moved_on_remote",
    "open_repo",
    "push",
    "remote_tips",
    "sync_index",
]

#: The trailers of an upgrade's commits, by what they name.
TRAILERS = {
    "release": "Nodefleet-Upgrade",
    "plan": "Nodefleet-Plan",
    "wave": "Nodefleet-Wave",
    "phase": "Nodefleet-Phase",
    "source": "Nodefleet-Source",
}
_ZERO = "0" * 40


@dataclass(frozen=True)
class Repo:
    """The git repository the stack files are in, and where its HEAD is."""

    top: Path
    git_dir: Path
    #: The branch checked out (``refs/heads/<branch>``).
    branch: str

    def git(
        self,
        *args: str,
        index: Path | None = None,
        stdin: str | None = None,
        check: bool = True,
        timeout: float | None = None,
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "GIT_TERMINAL_PROMPT": "0", "GIT_OPTIONAL_LOCKS": "0"}
        if index is not None:
            env["GIT_INDEX_FILE"] = str(index)
        try:
            done = subprocess.run(
                ["git", *args],
                cwd=self.top,
                env=env,
                input=stdin,
                stdin=None if stdin is not None else subprocess.DEVNULL,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            raise InputError(f"git {args[0]}: no answer within {timeout:.0f}s (--timeout)") from None
        if check and done.returncode != 0:
            message = redact(" ".join(done.stderr.strip().splitlines()[-3:]))[:1000]
            raise InputError(f"git {args[0]} in {self.top} failed: {message}")
        return done

    def rev(self, ref: str) -> str | None:
        """The commit ``ref`` names, or None."""
        done = self.git("rev-parse", "-q", "--verify", f"{ref}^{{commit}}", check=False)
        return done.stdout.strip() if done.returncode == 0 else None

    def head(self) -> str:
        sha = self.rev(f"refs/heads/{self.branch}")
        if sha is None:
            raise InputError(
                f"--commit: the branch {self.branch} has no commit yet; commit the stack files first"
            )
        return sha

    def relative(self, path: Path) -> str:
        """``path`` relative to the top of the repository (it must lie inside)."""
        return path.resolve().relative_to(self.top).as_posix()

    def inside(self, path: Path) -> bool:
        try:
            path.resolve().relative_to(self.top)
        except ValueError:
            return False
        return True

    def is_ancestor(self, older: str, newer: str) -> bool:
        return self.git("merge-base", "--is-ancestor", older, newer, check=False).returncode == 0

    def checked_out_elsewhere(self, branch: str) -> str | None:
        """The worktree that has ``branch`` checked out, other than this one."""
        listing = self.git("worktree", "list", "--porcelain").stdout
        here = None
        for block in listing.strip().split("\n\n"):
            lines = dict(line.split(" ", 1) for line in block.splitlines() if " " in line)
            if lines.get("branch") == f"refs/heads/{branch}":
                here = lines.get("worktree")
                if here and Path(here).resolve() != self.top:
                    return here
        return None

    def dirty(self, paths: Sequence[str]) -> list[str]:
        """The paths among ``paths`` with changes not committed (in the working tree or staged), untracked ones too."""
        if not paths:
            return []
        out = self.git("status", "--porcelain=v1", "-z", "--untracked-files=all", "--", *paths).stdout
        return sorted({entry[3:] for entry in out.split("\0") if entry[3:]})

    def staged(self, paths: Sequence[str], against: str = "HEAD") -> list[str]:
        """The paths among ``paths`` whose staged content differs from commit ``against`` (the branch's tip)."""
        if not paths:
            return []
        out = self.git("diff", "--cached", "--name-only", "-z", against, "--", *paths).stdout
        return sorted(p for p in out.split("\0") if p)

    def tracked(self, path: str, ref: str = "HEAD") -> bool:
        return bool(self.git("ls-tree", "-r", "--name-only", ref, "--", path, check=False).stdout.strip())


def open_repo(where: Path) -> Repo:
    """The repository ``where`` lies in, on a branch; :class:`InputError` otherwise."""
    probe = subprocess.run(
        ["git", "rev-parse", "--show-toplevel", "--absolute-git-dir"],
        cwd=where,
        capture_output=True,
        text=True,
        errors="replace",
        stdin=subprocess.DEVNULL,
    )
    if probe.returncode != 0:
        raise InputError(
            f"--commit: {where} is not in a git repository ({redact(probe.stderr.strip())[:300]}); run `git init` "
            "and commit the stack files, or leave --commit out"
        )
    top, git_dir = probe.stdout.splitlines()[:2]
    repo = Repo(Path(top).resolve(), Path(git_dir).resolve(), "")
    branch = repo.git("symbolic-ref", "-q", "--short", "HEAD", check=False).stdout.strip()
    if not branch:
        raise InputError(
            f"--commit: {repo.top} has no branch checked out (a detached HEAD); check out the branch the upgrade "
            "commits to"
        )
    return Repo(repo.top, repo.git_dir, branch)


def _message(subject: str, body: Sequence[str], trailers: Mapping[str, str]) -> str:
    text = subject + "\n"
    if body:
        text += "\n" + "\n".join(body) + "\n"
    text += "\n" + "".join(f"{TRAILERS[key]}: {value}\n" for key, value in trailers.items())
    return text


def commit_paths(
    repo: Repo,
    branch: str,
    paths: Sequence[str],
    subject: str,
    body: Sequence[str],
    trailers: Mapping[str, str],
    *,
    crash: object = None,
) -> str | None:
    """Commit exactly ``paths`` (relative to the top, as they are in the working tree) on ``branch`` (created
    when it does not exist), on top of its tip; the new commit, or None when the paths are as the tip has them.

    ``crash`` (a callable taking a point's name) is called between the operations, for the tests that kill the
    process there.
    """
    point = crash if callable(crash) else (lambda _name: None)
    ref = f"refs/heads/{branch}"
    tip = repo.rev(ref)
    # One fixed name: a run killed here leaves it behind, and the next run overwrites it.
    index = repo.git_dir / "nodefleet-upgrade.index"
    try:
        if tip is None:
            repo.git("read-tree", "--empty", index=index)
        else:
            repo.git("read-tree", tip, index=index)
        present = [p for p in paths if (repo.top / p).exists() or (tip and repo.tracked(p, tip))]
        if present:
            repo.git("add", "-f", "-A", "--", *present, index=index)
        point("added")
        tree = repo.git("write-tree", index=index).stdout.strip()
    finally:
        index.unlink(missing_ok=True)
    if tip is not None and tree == repo.git("rev-parse", f"{tip}^{{tree}}").stdout.strip():
        return None
    parents = ["-p", tip] if tip else []
    commit = repo.git("commit-tree", tree, *parents, stdin=_message(subject, body, trailers)).stdout.strip()
    point("commit-tree")
    moved = repo.git(
        "update-ref", "-m", f"nodefleet fleet upgrade: {subject}", ref, commit, tip or _ZERO, check=False
    )
    if moved.returncode != 0:
        raise InputError(
            f"--commit: the branch {branch} moved while the step was committed (a commit made meanwhile); nothing was "
            "overwritten. Run the same command again"
        )
    return commit


def find_commit(repo: Repo, branch: str, base: str | None, trailers: Mapping[str, str]) -> str | None:
    """The commit on ``branch`` after ``base`` whose trailers include all of ``trailers``, or None."""
    tip = repo.rev(f"refs/heads/{branch}")
    if tip is None:
        return None
    keys = list(TRAILERS)
    fields = "%x1f".join(f"%(trailers:key={TRAILERS[k]},valueonly=true,separator=%x2c)" for k in keys)
    span = [tip, "--not", base] if base else [tip]
    out = repo.git("log", f"--format=%H%x1f{fields}%x1e", *span).stdout
    for entry in out.split("\x1e"):
        parts = entry.strip("\n").split("\x1f")
        if len(parts) != len(keys) + 1:
            continue
        found = dict(zip(keys, (p.strip() for p in parts[1:]), strict=True))
        if all(found.get(k) == v for k, v in trailers.items()):
            return parts[0]
    return None


def sync_index(repo: Repo, paths: Sequence[str]) -> None:
    """The user's index for ``paths`` as the branch's new tip has them (every other entry left as it was)."""
    known = [p for p in paths if repo.tracked(p) or repo.git("ls-files", "--", p).stdout.strip()]
    if known:
        repo.git("reset", "-q", "HEAD", "--", *known)


def _git_says(done: subprocess.CompletedProcess[str]) -> str:
    """What git said went wrong, in its own words: its ``fatal:``/``error:`` lines (else its last lines), any
    credentials removed."""
    lines = [line.strip() for line in (done.stderr or done.stdout).splitlines() if line.strip()]
    said = [line for line in lines if line.startswith(("fatal:", "error:"))] or lines[-2:]
    return redact(" ".join(said))[:1000]


def remote_tips(repo: Repo, remote: str, branches: Sequence[str], timeout: float) -> dict[str, str | None]:
    """Where each of ``branches`` is on ``remote`` (None: not there yet), read with ``git ls-remote``;
    :class:`InputError` naming ``--remote`` and git's words when the remote cannot be read."""
    refs = [f"refs/heads/{b}" for b in branches]
    try:
        done = repo.git("ls-remote", "--heads", remote, *refs, check=False, timeout=timeout)
    except InputError as exc:
        raise InputError(
            f"--remote {redact(remote)}: {exc}; check the remote's URL (git remote -v) and that it answers"
        ) from None
    if done.returncode != 0:
        raise InputError(
            f"--remote {redact(remote)}: cannot be read ({_git_says(done)}); name a remote of {repo.top} (git remote "
            "-v) that answers, with credentials git finds without asking (a credential helper, an SSH key), or add "
            "it (git remote add)"
        )
    found: dict[str, str | None] = dict.fromkeys(branches)
    for line in done.stdout.splitlines():
        sha, _, ref = line.partition("\t")
        if ref in refs:
            found[ref.removeprefix("refs/heads/")] = sha.strip()
    return found


def moved_on_remote(repo: Repo, remote: str, tips: Mapping[str, str | None]) -> str:
    """Why the branches cannot be pushed without overwriting what someone else pushed to ``remote`` (a tip there
    that the local branch does not contain): one message naming each branch and the fix; "" when none moved."""
    moved = [
        (branch, sha)
        for branch, sha in tips.items()
        if sha is not None
        and not (repo.rev(sha) is not None and repo.is_ancestor(sha, f"refs/heads/{branch}"))
    ]
    if not moved:
        return ""
    shown = redact(remote)
    fixes = []
    for branch, _ in moved:
        if branch == repo.branch:
            fixes.append(f"git pull --no-rebase --no-edit {shown} {branch}")
        else:
            # The branch is not checked out here: merged in a worktree of its own, removed after.
            fixes.append(
                f"git worktree add ../nodefleet-merge {branch} && git -C ../nodefleet-merge pull --no-rebase "
                f"--no-edit {shown} {branch} && git worktree remove ../nodefleet-merge"
            )
    return (
        "--push: "
        + "; ".join(
            f"{branch} on {shown} is at {sha[:12]}, which the local {branch} does not contain"
            for branch, sha in moved
        )
        + " (someone pushed to it meanwhile); nodefleet never overwrites a branch others push to, and pushed nothing. "
        f"Merge it into the local branch ({'; '.join(fixes)}), then run the same command again: the upgrade's commits "
        "stay and are pushed on top"
    )


def fetch_objects(repo: Repo, remote: str, branch: str, timeout: float) -> None:
    """The commits of ``branch`` on ``remote`` into the repository's objects, moving no ref (not even FETCH_HEAD or a remote-tracking branch):
    to judge a commit the GitOps tool reports that someone else pushed. A fetch that fails leaves it unknown."""
    # Out of time, the commit stays unknown, and the wait goes on as for any commit it cannot judge.
    with contextlib.suppress(InputError):
        repo.git(
            "fetch", "-q", "--no-write-fetch-head", "--no-tags", "--refmap=", remote, f"refs/heads/{branch}", check=False,
            timeout=timeout,
        )  # fmt: skip


def push(repo: Repo, remote: str, branches: Sequence[str], timeout: float) -> tuple[str, bool]:
    """Push ``branches`` to the same names on ``remote``, all or none (``--atomic``), never forced: ("", False)
    when it did, else (why not, in git's words with any credentials removed; True when the remote refused
    because a branch moved there). Never asks for a password: a push that would is refused."""
    refs = [f"refs/heads/{b}:refs/heads/{b}" for b in branches]
    try:
        done = repo.git("push", "--porcelain", "--atomic", remote, *refs, check=False, timeout=timeout)
    except InputError as exc:
        return str(exc), False
    if done.returncode == 0:
        return "", False
    rejected = any(
        line.startswith("!") and ("fetch first" in line or "non-fast-forward" in line)
        for line in done.stdout.splitlines()
    )
    return f"git push to {redact(remote)} exited {done.returncode}: {_git_says(done)}", rejected
