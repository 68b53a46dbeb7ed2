"""The suite on parallel workers (tests/parallel.py): what it shares, in which order it runs, and that the
closing lines still say which real parts ran."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests import parallel
from tests.conftest import PROJECT

#: A module-scoped fixture parametrized by tool, as the GitOps tests have, each set-up recorded in a file.
SHARED = """
import os, pytest

@pytest.fixture(scope="module", params=["flux", "argocd"])
def tool(request):
    with open(os.environ["SETUPS"], "a") as out:
        out.write(f"{__name__} {request.param} {os.environ.get('PYTEST_XDIST_WORKER')}\\n")
    return request.param

@pytest.mark.parametrize("n", range(6))
def test_uses(tool, n):
    assert tool
"""

CONFTEST = """
from tests import parallel

def pytest_configure(config):
    config.pluginmanager.register(parallel, "nodefleet-parallel")
"""


def _run(folder: Path, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(PROJECT), "SETUPS": str(folder / "setups.txt"), **(env or {})}
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", *args],
        cwd=folder,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


def test_a_wide_fixture_is_set_up_once_per_parameter_on_parallel_workers(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(textwrap.dedent(SHARED))
    (tmp_path / "test_pure.py").write_text(
        "import pytest\n@pytest.mark.parametrize('n', range(20))\ndef test_alone(n):\n    pass\n"
    )
    run = _run(tmp_path, "-n", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    setups = (tmp_path / "setups.txt").read_text().splitlines()
    # Four units (two files x two tools), each set up once; 24 tests share them.
    assert sorted(line.rsplit(" ", 1)[0] for line in setups) == [
        "test_one argocd",
        "test_one flux",
        "test_two argocd",
        "test_two flux",
    ]
    assert "44 passed" in run.stdout
    # The units went to more than one worker: the tools' tests run at once.
    assert len({line.rsplit(" ", 1)[1] for line in setups}) > 1


def test_without_the_groups_the_same_fixture_is_set_up_again_on_each_worker(tmp_path: Path) -> None:
    """The control: xdist's own load distribution (without the suite's scheduling) spreads one parameter's
    tests over workers, each of which sets the fixture up again (an API server, a controller, started twice)."""
    for name in ("test_one.py", "test_two.py"):
        (tmp_path / name).write_text(textwrap.dedent(SHARED))
    run = _run(tmp_path, "-n", "3")
    assert run.returncode == 0, run.stdout + run.stderr
    assert len((tmp_path / "setups.txt").read_text().splitlines()) > 4


def test_the_longest_units_go_first_and_units_waiting_for_a_build_last(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text(
        CONFTEST
        + textwrap.dedent("""
        def pytest_collection_finish(session):
            with open("order.txt", "w") as out:
                out.write("\\n".join(i.nodeid for i in session.items))
        """)
    )
    (tmp_path / "test_short.py").write_text("def test_short():\n    pass\n")
    (tmp_path / "test_long.py").write_text("def test_long():\n    pass\n")
    (tmp_path / "test_gitops.py").write_text(
        "import pytest\n\n@pytest.mark.gitops\ndef test_needs_controllers():\n    pass\n"
    )
    (tmp_path / "pytest.ini").write_text("[pytest]\nmarkers =\n    gitops: x\n")
    durations = tmp_path / "durations.json"
    durations.write_text(json.dumps({"tests": {"test_long.py::test_long": 500.0}}))
    run = _run(
        tmp_path,
        "-n",
        "2",
        # The controllers taken as not built here, whatever this machine has.
        env={parallel.DURATIONS_ENV: str(durations), parallel.MISSING_ENV: "source-controller"},
    )
    assert run.returncode == 0, run.stdout + run.stderr
    order = (tmp_path / "order.txt").read_text().splitlines()
    assert order == [
        "test_long.py::test_long",
        "test_short.py::test_short",
        "test_gitops.py::test_needs_controllers",
    ]


@pytest.mark.goref
def test_the_closing_lines_name_the_real_parts_that_ran_on_parallel_workers() -> None:
    """The banner counts what the workers ran, as a run in one process does."""
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2",
         "tests/test_cron_reference.py", "tests/test_layering.py"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "NODEFLEET_SUITE_TIMES": ""},
    )  # fmt: skip
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "real parts: 1 of 1 tests against upstream Go code" in run.stdout


def test_a_test_unknown_to_the_durations_is_estimated_by_its_tier() -> None:
    assert (
        parallel.TIER_ESTIMATES["gitops"] > parallel.TIER_ESTIMATES["apiserver"] > parallel.DEFAULT_ESTIMATE
    )


def test_a_copy_of_the_project_runs_its_edited_text_not_the_compiled_bytecode(tmp_path: Path) -> None:
    """The suite compiles the project once and its copies keep the bytecode; a test that edits a module of its
    copy must run the edited text even where the edit keeps the file's size and modification time, which
    is all timestamp-checked bytecode would look at."""
    from tests.conftest import copy_project, nodefleet

    copy = copy_project(tmp_path / "project")
    module = copy / "cli" / "main.py"
    assert list((copy / "cli" / "__pycache__").glob("main.*.pyc")), (
        "the copy took the compiled bytecode along"
    )
    stat = module.stat()
    text = module.read_text()
    assert "credential-free companion" in text
    module.write_text(text.replace("nodefleet's command line:", "nodefleet's COMMAND LINE:"))
    os.utime(module, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert module.stat().st_size == stat.st_size and module.stat().st_mtime_ns == stat.st_mtime_ns

    done = nodefleet("--help", cwd=copy)
    assert done.returncode == 0, done.stderr
    assert "nodefleet's COMMAND LINE:" in " ".join(done.stdout.split())
