"""fleet's fork server runs a stack's command exactly as a fresh ``python -m nodefleet`` does."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from cli import forkrun
from tests.conftest import PROJECT, nodefleet


@pytest.mark.parametrize("args", [("check", "--stack", "dev", "--json"), ("check", "--stack", "hosted")])
def test_a_forked_command_says_what_a_fresh_process_says(args: tuple[str, ...]) -> None:
    fresh = nodefleet(*args, fresh=True)
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


def test_a_forked_command_whose_fleet_is_gone_exits_without_a_traceback(tmp_path: Path) -> None:
    """Killing `fleet upgrade` leaves its forked stacks finishing with nobody to report to: each ends quietly
    instead of printing a BrokenPipeError traceback on the terminal."""
    import subprocess
    import sys

    script = (
        "import multiprocessing, os\n"
        "from cli import forkrun\n"
        "receive, send = multiprocessing.Pipe(duplex=False)\n"
        "receive.close()\n"
        f"forkrun._child(['check', '--help'], {str(PROJECT)!r}, dict(os.environ), send)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )  # fmt: skip
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.returncode == 0
