"""The tests' forked ``python -m nodefleet`` (:mod:`tests.forkcli`) says and does what a fresh interpreter does."""

from __future__ import annotations

import json
import os
import re
import subprocess
from multiprocessing import forkserver
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import pytest

from cli import forkrun
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


def _timeless(report: dict[str, Any]) -> dict[str, Any]:
    """A ``fleet --json`` report without what differs between any two runs: times and CPU seconds."""
    stacks = [{k: v for k, v in stack.items() if k not in {"seconds", "cpu"}} for stack in report["stacks"]]
    return {**{k: v for k, v in report.items() if k != "wallSeconds"}, "stacks": stacks}


def test_a_forked_fleet_command_reports_what_a_fresh_one_reports() -> None:
    argv = ("fleet", "check", "--stacks", "dev,hosted,karpenter", "--json")
    fresh = nodefleet(*argv, fresh=True)
    forked = nodefleet(*argv)
    assert forked.returncode == fresh.returncode == 0, forked.stderr
    assert _timeless(json.loads(forked.stdout)) == _timeless(json.loads(fresh.stdout))
    assert [s["exit"] for s in json.loads(forked.stdout)["stacks"]] == [0, 0, 0]


def _parent_pid(send: Connection) -> None:
    send.send(os.getppid())


def _stack_parent(send: Connection) -> None:
    """What a ``fleet`` command in a forked command line does for each stack: a process from
    :func:`cli.forkrun._ctx`; it says whose child that process is."""
    forkcli.share_fork_server()
    ctx = forkrun._ctx()
    receive, inner = ctx.Pipe(duplex=False)
    stack = ctx.Process(target=_parent_pid, args=(inner,))
    stack.start()
    inner.close()
    send.send(receive.recv())
    stack.join()


def test_a_fleet_command_in_a_forked_command_line_forks_its_stacks_from_the_same_server() -> None:
    ctx = forkrun._ctx()
    receive, send = ctx.Pipe(duplex=False)
    command_line = ctx.Process(target=_stack_parent, args=(send,))
    command_line.start()
    send.close()
    parent = receive.recv()
    command_line.join()
    assert command_line.exitcode == 0
    assert parent == forkserver._forkserver._forkserver_pid  # not a server of its own
