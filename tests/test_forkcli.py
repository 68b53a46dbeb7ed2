"""The tests' forked ``python -m nodefleet`` (:mod:`tests.forkcli`) says and does what a fresh interpreter does."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from tests import forkcli
from tests.conftest import PROJECT, nodefleet

CASES = {
    "help": ["--help"],
    "check json": ["check", "--stack", "dev", "--json"],
    "check hosted": ["check", "--stack", "hosted"],
    "bad stack file": ["check", "--config-file", "tests/bad_stacks/hosted-ssh-private-key.yaml"],
    "unknown command": ["chekc", "--stack", "dev"],
    "fleet matrix": ["fleet", "matrix"],
}


@pytest.fixture(autouse=True)
def _forking(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests compare the two ways, whatever ``NODEFLEET_TEST_FORK`` says for the rest of the suite."""
    monkeypatch.delenv(forkcli.ENV, raising=False)


def _same(text: str) -> str:
    """The output without what differs between any two runs: the elapsed time (``0.3s``)."""
    return re.sub(r"\b\d+\.\d+s\b", "<elapsed>", text)


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_a_forked_command_exits_and_prints_as_a_fresh_interpreter_does(argv: list[str]) -> None:
    assert forkcli.forkable(argv, PROJECT, None)
    fresh = nodefleet(*argv, fresh=True)
    forked = nodefleet(*argv)
    assert forked.returncode == fresh.returncode, forked.stderr
    assert _same(forked.stdout) == _same(fresh.stdout)
    assert forked.stderr == fresh.stderr


def test_a_forked_render_writes_what_a_fresh_one_writes(tmp_path: Path) -> None:
    outs = {}
    for label, fresh in (("fresh", True), ("forked", False)):
        out = tmp_path / label
        done = nodefleet("render", "--stack", "hosted", "--out", str(out), fresh=fresh)
        assert done.returncode == 0, done.stderr
        outs[label] = {
            p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()
        }
    assert outs["forked"] and outs["forked"] == outs["fresh"]


def test_what_could_differ_from_a_fresh_interpreter_runs_in_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    argv = ["check", "--stack", "dev"]
    assert forkcli.forkable(argv, PROJECT, {"NODEFLEET_RENDER_ROOT": str(tmp_path)})
    assert not forkcli.forkable(argv, tmp_path, None)  # a copy of the project imports the copy's modules
    for name in ("PYTHONHASHSEED", "LC_ALL", "LANG", "HOME", "NODEFLEET_CACHE_DIR", "XDG_CACHE_HOME"):
        assert not forkcli.forkable(argv, PROJECT, {name: "x"}), name
    for command in ("preview", "up"):
        assert not forkcli.forkable(["--debug", command, "--stack", "dev"], PROJECT, None)
    monkeypatch.setenv(forkcli.ENV, "0")
    assert not forkcli.forkable(argv, PROJECT, None)


def test_a_forked_command_past_its_timeout_is_killed_as_subprocess_run_kills_it() -> None:
    with pytest.raises(subprocess.TimeoutExpired):
        forkcli.run(["check", "--stack", "hosted"], PROJECT, {}, timeout=0.001)
