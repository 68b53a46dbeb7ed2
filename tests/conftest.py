"""Shared fixtures: the project and shared data folders, and stack configs to mutate."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from cli.tree import TREE_JUDGED_ENV
from mockruntime.run import stack_fleet
from tests import parallel, suite_times

if TYPE_CHECKING:
    from tests.gitopsctl import Controllers
    from tests.testcluster import TestClusters

__all__ = ["PROJECT", "SHARED_DATA", "copy_project", "nodefleet", "own_tree", "stack_fleet"]

PROJECT = Path(__file__).resolve().parent.parent
#: The suite's outcome must not depend on the user's own files in stacks/: a single stack's check compares it
#: with every stack file beside it (cli/tree.py), so the shipped stacks are checked as ``fleet`` checks them,
#: alone. The tests of that comparison run in a copy of the project with it set to "0" (docs/testing.md).
os.environ[TREE_JUDGED_ENV] = "1"
SHARED_DATA = PROJECT.parent / "shared" / "data"
#: What a fresh copy of the project needs to run the program, the pack and the command line.
PROJECT_PARTS = (
    "__main__.py",
    "Pulumi.yaml",
    "nodefleet",
    "components",
    "mockruntime",
    "cli",
    "engine",
    "policies",
    "catalogs",
)


def nodefleet(
    *args: str,
    cwd: Path = PROJECT,
    env: Mapping[str, str] | None = None,
    timeout: float = 300,
    fresh: bool = False,
) -> subprocess.CompletedProcess[str]:
    """``python -m nodefleet <args>`` in a process of its own, as a user runs it; ``env`` adds to the
    environment. The process is forked from the fork server ``fleet`` uses (:mod:`tests.forkcli`) where that
    cannot differ from a fresh interpreter; ``fresh`` asks for a fresh interpreter regardless."""
    from tests import forkcli

    if not fresh and forkcli.forkable(args, cwd, env):
        return forkcli.run(args, cwd, {**os.environ, **(env or {})}, timeout)
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )


def own_tree(fleet: dict[str, Any], tmp_path: Path) -> dict[str, str]:
    """Give a test's stack a GitOps tree of its own, under ``tmp_path``, and return the environment that
    allows that root. A stack file of a test, checked from the project, would otherwise render into the
    project's ``rendered/`` and be compared with whatever the user rendered there (``make demo`` renders
    ``dev``): a variant of an example is then, rightly, a second stack declaring the example's objects."""
    fleet.setdefault("output", {})["directory"] = str(tmp_path / "rendered" / "{stack}")
    return {"NODEFLEET_RENDER_ROOT": str(tmp_path)}


def copy_project(destination: Path) -> Path:
    """A fresh copy of the project at ``destination`` (created): for tests that must see every file a command
    writes, inside the project or next to it. The bytecode compiled before the suite comes along (hash-checked,
    so an edited copy of a module is compiled afresh), so a command run in the copy does not compile the
    project again."""
    destination.mkdir()
    for name in PROJECT_PARTS:
        src = PROJECT / name
        if src.is_dir():
            shutil.copytree(src, destination / name)
        else:
            shutil.copy2(src, destination / name)
    return destination


@pytest.fixture
def project_dir() -> Path:
    return PROJECT


@pytest.fixture
def dev_fleet() -> dict[str, Any]:
    return stack_fleet("dev")


# --- The engine tier ---------------------------------------------------------------------------------------
# Tests marked `engine` run on the real Pulumi engine; `needs=(...)` names the parts beyond the CLI they use
# (pulumi-language-python, kubernetes, aws). Where engine/bootstrap recorded one of those parts missing in
# .engine/status, such a test cannot run: it is deselected (never reported as skipped or passed) and the run
# ends with a banner naming the missing parts and every engine test that did not run.

_ENGINE_REPORT = pytest.StashKey[dict[str, Any]]()


def _engine_needs(item: pytest.Item) -> list[str]:
    needs = ["pulumi"]
    for mark in item.iter_markers("engine"):
        needs += [n for n in mark.kwargs.get("needs", ()) if n not in needs]
    return needs


@pytest.hookimpl(trylast=True)  # after `-m`/`-k` have chosen what the user asked for
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    from engine.status import read_status

    status = read_status()
    engine_items = [i for i in items if i.get_closest_marker("engine") is not None]
    not_run = [i for i in engine_items if status.missing(_engine_needs(i))]
    missing: dict[str, str] = {}
    for item in not_run:
        missing.update(status.missing(_engine_needs(item)))
    if not_run:
        config.hook.pytest_deselected(items=not_run)
        items[:] = [i for i in items if i not in not_run]
    config.stash[_ENGINE_REPORT] = {
        "total": len(engine_items),
        "not_run": [i.nodeid for i in not_run],
        "missing": missing,
        "recorded": status.recorded,
    }
    _deselect_go_references(config, items)
    _deselect_apiserver_tests(config, items)
    _deselect_gitops_tests(config, items)
    parallel.start_builds(config, items)
    workeroutput = getattr(config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: the closing lines are printed by the controlling process
        workeroutput[_RELAYED] = {k: config.stash.get(v, None) for k, v in _TIER_REPORTS.items()}


def _engine_banner(terminalreporter: Any, config: pytest.Config) -> None:
    report = config.stash.get(_ENGINE_REPORT, None)
    if not report or not report["not_run"]:
        return
    tr = terminalreporter
    n, total = len(report["not_run"]), report["total"]
    tr.write_sep("!", f"ENGINE TESTS NOT RUN: {n} of {total} (deselected, not skipped)", red=True, bold=True)
    where = ".engine/status" if report["recorded"] else "no .engine/status: `make setup` has not run here"
    tr.write_line(f"The Pulumi engine on this machine lacks parts these tests need ({where}):", red=True)
    for part, reason in report["missing"].items():
        tr.write_line(f"  {part}: missing: {reason}", red=True)
    tr.write_line("Not run:", red=True)
    for nodeid in report["not_run"]:
        tr.write_line(f"  {nodeid}", red=True)
    tr.write_line(
        "They run wherever `make setup` completes the engine (docs/engine.md); everything else above ran.",
        red=True,
    )
    tr.write_sep("!", f"{n} engine tests did not run", red=True, bold=True)


# --- Go references ---------------------------------------------------------------------------------------
# Tests marked `goref` compare nodefleet with upstream Go code built from the Go module proxy (tests/goref.py).
# Where Go is missing they are deselected, never skipped, and the run ends with a banner naming them.

_GOREF_REPORT = pytest.StashKey[dict[str, Any]]()


def _deselect_go_references(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.goref import go_missing

    _deselect_marked(config, items, "goref", go_missing, _GOREF_REPORT)


def _deselect_marked(
    config: pytest.Config,
    items: list[pytest.Item],
    marker: str,
    missing: Callable[[], str | None],
    key: pytest.StashKey[dict[str, Any]],
) -> None:
    """Deselect the tests marked ``marker`` when ``missing()`` says why they cannot run here, and keep the
    count and the reason for the closing lines."""
    marked = [i for i in items if i.get_closest_marker(marker) is not None]
    reason = missing() if marked else None
    not_run = marked if reason else []
    if not_run:
        config.hook.pytest_deselected(items=not_run)
        items[:] = [i for i in items if i not in not_run]
    config.stash[key] = {"total": len(marked), "not_run": [i.nodeid for i in not_run], "why": reason}


# --- The test API server ---------------------------------------------------------------------------------
# Tests marked `apiserver` run against a real kube-apiserver and etcd (tests/testcluster.py), built from the Go
# module proxy once per machine and started once per session by the `test_clusters` fixture. Where they cannot
# be built or started they are deselected, never skipped, and the run ends with a banner naming them.

_APISERVER_REPORT = pytest.StashKey[dict[str, Any]]()


def _deselect_apiserver_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.testcluster import missing

    _deselect_marked(config, items, "apiserver", missing, _APISERVER_REPORT)


# --- The GitOps controllers ------------------------------------------------------------------------------
# Tests marked `gitops` run Flux's and Argo CD's controllers (tests/gitopsctl.py), built from the Go module
# proxy once per machine, against test API servers, with a local Git server and Redis. Where they cannot be
# built or started they are deselected, never skipped, and the run ends with a banner naming them.

_GITOPS_REPORT = pytest.StashKey[dict[str, Any]]()


def _deselect_gitops_tests(config: pytest.Config, items: list[pytest.Item]) -> None:
    from tests.gitopsctl import missing

    _deselect_marked(config, items, "gitops", missing, _GITOPS_REPORT)


@pytest.fixture(scope="module")
def gitops_controllers(test_clusters: TestClusters) -> Iterator[Controllers]:
    """Flux's and Argo CD's controllers, a Git server and Redis (tests/gitopsctl.py), on a hub API server of
    their own; kept from one module to the next while this worker's next test needs them (:func:`_kept`)."""
    from tests.gitopsctl import Controllers

    yield _kept("gitops_controllers", lambda: Controllers(test_clusters))


def _deselected_banner(terminalreporter: Any, report: dict[str, Any] | None, title: str, what: str) -> None:
    """The closing banner of a tier whose tests were deselected here: how many, why, and which."""
    if not report or not report["not_run"]:
        return
    tr = terminalreporter
    n, total = len(report["not_run"]), report["total"]
    tr.write_sep(
        "!", f"{title.upper()} TESTS NOT RUN: {n} of {total} (deselected, not skipped)", red=True, bold=True
    )
    tr.write_line(f"These tests {what}, and {report['why']}.", red=True)
    tr.write_line("Not run:", red=True)
    for nodeid in report["not_run"]:
        tr.write_line(f"  {nodeid}", red=True)
    tr.write_sep("!", f"{n} {title} tests did not run", red=True, bold=True)


@pytest.fixture(scope="module")
def test_clusters() -> Iterator[TestClusters]:
    """etcd and kube-apiserver (tests/testcluster.py); kept from one module to the next while this worker's next
    test needs them (:func:`_kept`)."""
    from tests.testcluster import TestClusters

    yield _kept("test_clusters", TestClusters)


# The processes wider than a module: etcd with the API servers `test_clusters` keeps, and the GitOps controllers.
# A worker keeps them from one module to the next while its next test needs them, and stops them, their folders
# removed, as soon as its next test is in another module that does not (xdist hands a worker its next test before
# it runs the current one), or at the end of the session however it ends. Kept for the whole session, as before,
# they burned about 17 CPU-seconds a minute across the workers while the workers ran other tiers.
_KEPT: dict[str, Any] = {}


def _kept(name: str, make: Callable[[], Any]) -> Any:
    if name not in _KEPT:
        _KEPT[name] = make()
    return _KEPT[name]


def _release(*names: str) -> None:
    for name in names:
        kept = _KEPT.pop(name, None)
        if kept is not None:
            kept.close()
            if name == "test_clusters":
                suite_times.servers_closed(kept.started, kept.reused, kept.reaped)


# trylast: after pytest's own teardown of the module's fixtures, which may still use them.
@pytest.hookimpl(trylast=True)
def pytest_runtest_teardown(item: pytest.Item, nextitem: pytest.Item | None) -> None:
    if nextitem is not None and nextitem.module is getattr(item, "module", None):
        return  # a module fixture of this module may hold an API server for its next tests
    needs = set(getattr(nextitem, "fixturenames", ()))
    if "gitops_controllers" not in needs:
        _release("gitops_controllers")
    if "test_clusters" not in needs:
        _release("test_clusters")


# --- Parallel runs ---------------------------------------------------------------------------------------
# `make test` runs the suite on xdist workers (tests/parallel.py). Each worker collects and deselects the
# same tests; the closing lines are printed by the controlling process, from what the first worker to
# finish relayed.

_RELAYED = "nodefleet_tier_reports"
_TIER_REPORTS = {
    "engine": _ENGINE_REPORT,
    "apiserver": _APISERVER_REPORT,
    "goref": _GOREF_REPORT,
    "gitops": _GITOPS_REPORT,
}


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: object | None) -> None:
    relayed = getattr(node, "workeroutput", {}).get(_RELAYED)
    if not relayed:
        return
    for name, key in _TIER_REPORTS.items():
        if relayed.get(name) is not None and key not in node.config.stash:
            node.config.stash[key] = relayed[name]


def pytest_sessionfinish(session: pytest.Session) -> None:
    _release("gitops_controllers", "test_clusters")
    parallel.stop_builds(session.config)


def _parts_line(terminalreporter: Any) -> None:
    """The parts this run built (a new machine's log says what each took), from tests/parts.py's record."""
    from tests.parts import BUILD_TIMES

    started = _SESSION_START.get("at")
    if started is None:
        return
    built = []
    try:
        lines = BUILD_TIMES.read_text().splitlines()
    except OSError:
        return
    for line in lines:
        with contextlib.suppress(ValueError, KeyError):
            row = json.loads(line)
            if row["at"] >= started:
                built.append(
                    f"{row['part']} {row['seconds']:.0f} s" + (" (failed)" if "error" in row else "")
                )
    if built:
        terminalreporter.write_sep("=", "parts built by this run: " + ", ".join(built))


_SESSION_START: dict[str, str] = {}


def _real_parts_line(terminalreporter: Any, config: pytest.Config) -> None:
    """One line with how many tests of each tier ran on the real part, so a run's log shows it, not only
    what did not run."""
    tiers = (
        (_ENGINE_REPORT, "on the Pulumi engine"),
        (_APISERVER_REPORT, "against kube-apiserver and etcd"),
        (_GOREF_REPORT, "against upstream Go code"),
        (_GITOPS_REPORT, "on the Flux and Argo CD controllers"),
    )
    parts = []
    for key, where in tiers:
        report = config.stash.get(key, None)
        if report and report["total"]:
            ran = report["total"] - len(report["not_run"])
            parts.append(f"{ran} of {report['total']} tests {where}")
    if parts:
        terminalreporter.write_sep("=", "real parts: " + "; ".join(parts))


@pytest.hookimpl(trylast=True)
def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    _parts_line(terminalreporter)
    _real_parts_line(terminalreporter, config)
    _engine_banner(terminalreporter, config)
    _deselected_banner(
        terminalreporter,
        config.stash.get(_APISERVER_REPORT, None),
        "API server",
        "apply objects to a real kube-apiserver",
    )
    _deselected_banner(
        terminalreporter,
        config.stash.get(_GOREF_REPORT, None),
        "Go reference",
        "compare nodefleet with upstream Go code",
    )
    _deselected_banner(
        terminalreporter,
        config.stash.get(_GITOPS_REPORT, None),
        "GitOps",
        "run the rendered tree through Flux's and Argo CD's controllers",
    )


# --- Rule log ----------------------------------------------------------------------------------------------
# A test run records which CRD rules it evaluated, passing and failing (nodefleet/apiserver/rule_log.py), in this
# process and in the command-line processes the tests start; `python -m nodefleet crds coverage --exercised
# .tools/rule-log` turns it into the per-CRD figure. Runs add to the log (a run of one test file does not
# erase what the full suite recorded); remove the folder to start afresh, or set the variable elsewhere.
RULE_LOG = PROJECT / ".tools" / "rule-log"


def compile_project() -> None:
    """Write the project's bytecode once, before the tests start their processes.

    The suite starts about 1,500 Python processes (``python -m nodefleet``, fork servers, the engine's
    language host in scratch projects); each imports the project. Where ``PYTHONDONTWRITEBYTECODE`` is set, as
    on many CI machines, none of them writes its bytecode, so every one compiled the project's modules again:
    0.3 s of CPU for ``check``. The files are hash-checked (PEP 552): a module whose text changes, in the
    project or in a test's copy of it, is compiled from its text, never run from stale bytecode."""
    import compileall
    import py_compile

    for name in (*PROJECT_PARTS, "tests", "bench"):
        path = PROJECT / name
        mode = py_compile.PycInvalidationMode.CHECKED_HASH
        if path.is_dir():
            compileall.compile_dir(path, quiet=2, force=True, invalidation_mode=mode)
        elif path.suffix == ".py":
            compileall.compile_file(path, quiet=2, force=True, invalidation_mode=mode)


def pytest_configure(config: pytest.Config) -> None:
    from nodefleet.apiserver.rule_log import ENV

    if not hasattr(config, "workerinput"):  # once, in the process that starts the workers
        compile_project()
    os.environ.setdefault(ENV, str(RULE_LOG))
    _SESSION_START.setdefault("at", time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
    config.pluginmanager.register(parallel, "nodefleet-parallel")
    config.pluginmanager.register(suite_times, "nodefleet-suite-times")
