"""What a test run that died leaves behind (tests/testcluster.py): its processes die with it, even one that would
take its time over SIGTERM as an API server does, and its folders are removed when the next run starts; that
look never trips over the folders of runs that are still going (on parallel workers another worker's session may
create or remove its folder while this one looks)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.testcluster import PROJECT, RUN_PREFIX, remove_stale_runs

#: A test process that starts a server the way the test clusters do, then dies without stopping it; it prints
#: the server's pid. The "server" ignores SIGTERM, as an API server in graceful termination outlived it.
DIES = """
import sys, time
from pathlib import Path
from tests.testcluster import start_process
log = Path(sys.argv[1])
server = start_process([sys.executable, "-c", "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
                        "print('serving', flush=True); time.sleep(600)"], log)
deadline = time.monotonic() + 60
while b"serving" not in log.read_bytes() and server.poll() is None and time.monotonic() < deadline:
    time.sleep(0.05)
print(server.pid, flush=True)
raise SystemExit("died without stopping its server")
"""


def _gone(pid: int) -> bool:
    """No process ``pid``, or only its exit status left for its new parent to collect."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (FileNotFoundError, ProcessLookupError):
        return True


def test_a_server_that_ignores_sigterm_dies_with_the_test_process_that_started_it(tmp_path: Path) -> None:
    log = tmp_path / "server.log"
    died = subprocess.run(
        [sys.executable, "-c", DIES, str(log)], cwd=PROJECT, capture_output=True, text=True, timeout=120
    )
    assert died.returncode == 1 and "died without stopping its server" in died.stderr, died.stderr
    assert (log.read_text() if log.exists() else "") == "serving\n", "the server did not start"
    pid = int(died.stdout)
    deadline = time.monotonic() + 60
    while not _gone(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    if not _gone(pid):
        os.kill(pid, signal.SIGKILL)
        pytest.fail(f"the server (pid {pid}) outlived the test process that started it by 60 s")


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
