"""The folders of killed test runs are removed when the next run starts (tests/testcluster.py), and that look
never trips over the folders of runs that are still going: on parallel workers another worker's session may
create or remove its folder while this one looks."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.testcluster import RUN_PREFIX, remove_stale_runs


def test_a_killed_runs_folder_is_removed_and_a_running_ones_kept(tmp_path: Path) -> None:
    killed, running = tmp_path / f"{RUN_PREFIX}killed", tmp_path / f"{RUN_PREFIX}running"
    for folder, pid in ((killed, 2**22 + 1), (running, os.getpid())):  # above pid_max's default: no process
        folder.mkdir()
        (folder / "owner.pid").write_text(str(pid))
    assert remove_stale_runs(where=str(tmp_path)) == [killed]
    assert running.is_dir() and not killed.exists()


def test_a_folder_its_own_run_removes_while_the_look_runs_is_left_to_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Listed, then gone before its owner could be read: another worker's session ended meanwhile."""
    gone = tmp_path / f"{RUN_PREFIX}ended"
    monkeypatch.setattr(Path, "glob", lambda self, pattern: iter([gone]))
    assert remove_stale_runs(where=str(tmp_path)) == []


def test_a_folder_being_set_up_is_kept(tmp_path: Path) -> None:
    """Made, its owner not written yet."""
    starting = tmp_path / f"{RUN_PREFIX}starting"
    starting.mkdir()
    assert remove_stale_runs(where=str(tmp_path)) == [] and starting.is_dir()
