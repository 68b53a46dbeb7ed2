"""The suite's own record of where its time goes (tests/suite_times.py): a process a fixture keeps is charged to
the phases it works in, not to the one that stops it."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from tests.test_parallel_suite import _run

#: A process kept by a module fixture, as an API server is: it spends about a CPU-second each time it is asked,
#: and answers with what it spent.
KEPT = """
import sys, time
for line in sys.stdin:
    t = time.process_time()
    while time.process_time() - t < 1.0:
        pass
    print(time.process_time() - t, flush=True)
"""

TESTS = f"""
import subprocess, sys, pytest

@pytest.fixture(scope="module")
def kept():
    proc = subprocess.Popen([sys.executable, "-c", {KEPT!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield proc
    proc.stdin.close()
    proc.wait()

def test_1_quiet(kept):
    pass

def test_2_asks_the_kept_process_to_work(kept):
    kept.stdin.write("go\\n")
    kept.stdin.flush()
    with open("spent.txt", "w") as out:
        out.write(kept.stdout.readline())

def test_3_quiet(kept):
    pass
"""

CONFTEST = """
from tests import suite_times

def pytest_configure(config):
    config.pluginmanager.register(suite_times, "nodefleet-suite-times")
"""


def test_a_kept_process_is_charged_to_the_phase_it_works_in_not_to_the_teardown_that_stops_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_kept.py").write_text(textwrap.dedent(TESTS))
    log = tmp_path / "times.jsonl"
    run = _run(tmp_path, "test_kept.py", env={"NODEFLEET_SUITE_TIMES": str(log)})
    assert run.returncode == 0, run.stdout + run.stderr
    spent = float((tmp_path / "spent.txt").read_text())
    rows = {(r["test"].split("::")[1], r["phase"]): r["reapedCpu"] for r in map(json.loads, log.open())}
    working = rows[("test_2_asks_the_kept_process_to_work", "call")]
    assert working >= spent * 0.9, rows
    # The teardown that stops it is charged with what it spent there (its exit), not with the second it worked.
    assert rows[("test_3_quiet", "teardown")] < spent / 2, rows
    assert sum(rows.values()) < spent * 2, rows
