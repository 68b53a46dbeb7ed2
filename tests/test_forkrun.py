"""fleet's fork server runs a stack's command exactly as a fresh ``python -m nodefleet`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli import forkrun
from tests.conftest import PROJECT, nodefleet


@pytest.mark.parametrize("args", [("check", "--stack", "dev", "--json"), ("check", "--stack", "hosted")])
def test_a_forked_command_says_what_a_fresh_process_says(args: tuple[str, ...]) -> None:
    fresh = nodefleet(*args)
    forked = forkrun.run(args, cwd=PROJECT, env=dict(os.environ), timeout=600)
    assert forked is not None
    code, out, err = forked.code, forked.stdout, forked.stderr
    assert code == fresh.returncode
    assert forked.cpu_seconds is not None and forked.cpu_seconds > 0
    if "--json" in args:
        assert out == fresh.stdout
    else:  # the first line names the elapsed time
        assert out.splitlines()[1:] == fresh.stdout.splitlines()[1:]
    assert err == fresh.stderr


def test_a_bad_stack_file_is_an_input_error_in_a_forked_process_too(tmp_path: Path) -> None:
    path = tmp_path / "Pulumi.typo.yaml"
    path.write_text("config:\n  nodefleet:fleet:\n    clusterz: []\n", encoding="utf-8")
    forked = forkrun.run(
        ["check", "--config-file", str(path)], cwd=PROJECT, env=dict(os.environ), timeout=600
    )
    assert forked is not None
    code, err = forked.code, forked.stderr
    assert code == 2
    assert "clusterz" in err and "Traceback" not in err


def test_this_platform_has_the_fork_server(monkeypatch: pytest.MonkeyPatch) -> None:
    assert forkrun.available()  # Linux and macOS: fleet forks the mock-runtime commands
    monkeypatch.setenv(forkrun.FORK_ENV, "0")
    assert not forkrun.available()


def test_a_forked_command_past_its_timeout_is_killed() -> None:
    assert (
        forkrun.run(["check", "--stack", "hosted"], cwd=PROJECT, env=dict(os.environ), timeout=0.001) is None
    )
