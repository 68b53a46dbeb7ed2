"""How the suite runs in parallel (pytest-xdist, ``make test``): which tests share a worker, in which order
the work is handed out, and the background build of the real tiers' parts.

- **Units.** The tests of one file form one work unit, so what they share is made
  once, on one worker: a module-scoped fixture (the API servers an apply-mode module starts, a corpus sent
  once and judged by many tests) and a module-level cache (the Karpenter references' answers). A file whose
  wide fixture is parametrized is split by that parameter: the GitOps tests of Flux and those of Argo CD are
  two units, which may run on two workers at once. Session fixtures (the test API server's etcd, the GitOps
  controllers' hub) are per worker.
- **Order.** The longest units go first (longest-processing-time-first, from ``tests/durations.json``, which
  ``python -m tests.suite_times --write-durations`` writes from a run's times; a test it does not know is
  estimated by its tier), so the run does not end waiting for a long unit started last. On a machine that
  has not built a part yet, the units that need it go after every unit that does not, so the pure tiers run
  while :mod:`tests.parts` builds.
- **Builds.** The first worker (or the only process) starts :mod:`tests.parts` for the parts the selected
  tests need and this machine lacks; each test that needs one waits for that part's build only.

The decision of what is built is taken once, by the process that starts the run, and handed to every worker,
so that every worker orders the same collection the same way (xdist refuses to run otherwise).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pytest
from xdist.scheduler import LoadScopeScheduling

PROJECT = Path(__file__).resolve().parent.parent
DURATIONS = PROJECT / "tests" / "durations.json"
#: Overrides, for the tests of this module: another durations file, and the parts taken as not built.
DURATIONS_ENV = "NODEFLEET_TEST_DURATIONS"
MISSING_ENV = "NODEFLEET_PARTS_MISSING"
#: What a test missing from tests/durations.json is estimated to take, by its tier (seconds).
TIER_ESTIMATES = {"gitops": 120.0, "engine": 30.0, "apiserver": 20.0, "goref": 10.0}
DEFAULT_ESTIMATE = 0.5
TIERS = ("gitops", "apiserver", "goref", "engine")
_MISSING_KEY = "nodefleet_missing_parts"
_BUILD = pytest.StashKey[Any]()


def worker_id(config: pytest.Config) -> str | None:
    """``gw0``, ``gw1``, … in an xdist worker; None in the process that runs the session."""
    workerinput = getattr(config, "workerinput", None)
    return None if workerinput is None else str(workerinput["workerid"])


def is_controller(config: pytest.Config) -> bool:
    """True in xdist's controlling process, which collects nothing and runs no test."""
    return worker_id(config) is None and bool(getattr(config.option, "numprocesses", None))


def missing_parts(config: pytest.Config) -> list[str]:
    """The parts this machine had not built when the run started (the same list in every worker)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None and _MISSING_KEY in workerinput:
        return list(workerinput[_MISSING_KEY])
    cached = config.stash.get(_MISSING, None)
    if cached is None:
        from tests.parts import parts

        override = os.environ.get(MISSING_ENV)
        if override is not None:
            cached = [name for name in override.split(",") if name]
        else:
            cached = [p.name for p in parts() if not p.built()]
        config.stash[_MISSING] = cached
    return list(cached)


_MISSING = pytest.StashKey[list[str]]()


_UNITS_KEY = "nodefleet_units_file"
_UNITS = pytest.StashKey[Path]()


def _units_file(config: pytest.Config) -> Path:
    """Where the workers write each test's work unit for the scheduler (one file per run, removed after)."""
    if _UNITS not in config.stash:
        config.stash[_UNITS] = Path(tempfile.mkdtemp(prefix="nodefleet-units-")) / "units.json"
    return config.stash[_UNITS]


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node: Any) -> None:
    """Hand the run's view of what is built, and where to write the work units, to each worker."""
    node.workerinput[_MISSING_KEY] = missing_parts(node.config)
    node.workerinput[_UNITS_KEY] = str(_units_file(node.config))


class UnitScheduling(LoadScopeScheduling):
    """xdist's scope scheduling (a unit to a worker at a time, the next when it is nearly done), with the
    units the workers computed (:func:`_unit_key`) in the order they sorted them. The units travel in a file
    rather than in the node ids (``--dist loadgroup`` renames node ids, which pytest 9 no longer lets a
    plugin do)."""

    def __init__(self, config: pytest.Config, log: Any = None) -> None:
        super().__init__(config, log)
        self._file = _units_file(config)
        self._units: dict[str, str] | None = None
        config.option.loadscopereorder = False  # the workers' order is the order

    def _split_scope(self, nodeid: str) -> str:
        if self._units is None:  # every worker has collected (and written) by the time scheduling starts
            try:
                self._units = json.loads(self._file.read_text())
            except (OSError, ValueError):
                self._units = {}
        return self._units.get(nodeid, nodeid)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """The suite's scheduling for ``-n N`` (xdist's default ``--dist load``); another ``--dist`` is kept."""
    if config.getvalue("dist") != "load":
        return None
    return UnitScheduling(config, log)


def pytest_unconfigure(config: pytest.Config) -> None:
    if _UNITS in config.stash:
        shutil.rmtree(config.stash[_UNITS].parent, ignore_errors=True)


def _tiers(item: pytest.Item) -> set[str]:
    return {tier for tier in TIERS if item.get_closest_marker(tier) is not None}


def _parts_of(tiers: Iterable[str], missing: list[str]) -> list[str]:
    from tests.parts import parts

    wanted = set(tiers)
    return [p.name for p in parts() if p.name in missing and wanted.intersection(p.tiers)]


def _unit_key(item: pytest.Item) -> str:
    """The work unit of ``item``: its file, split by the parameter of each fixture wider than a test that it
    uses (``shipped[flux]`` and ``shipped[argocd]`` are set up apart, so they may run on two workers)."""
    module = item.nodeid.split("::", 1)[0]
    info = getattr(item, "_fixtureinfo", None)
    callspec = getattr(item, "callspec", None)
    if info is None or callspec is None:
        return module
    split = []
    for name, defs in sorted(info.name2fixturedefs.items()):
        if defs and defs[-1].scope != "function" and name in callspec.indices:
            split.append(f"{name}-{callspec.indices[name]}")
    return module + (":" + ",".join(split) if split else "")


def _units(items: list[pytest.Item]) -> list[list[pytest.Item]]:
    """The items in work units, each in collection order."""
    units: dict[str, list[pytest.Item]] = {}
    for item in items:
        units.setdefault(_unit_key(item), []).append(item)
    return list(units.values())


def _estimates() -> dict[str, float]:
    try:
        data = json.loads(Path(os.environ.get(DURATIONS_ENV) or DURATIONS).read_text())
    except (OSError, ValueError):
        return {}
    return {str(k): float(v) for k, v in data.get("tests", {}).items()}


def _estimate(item: pytest.Item, known: dict[str, float]) -> float:
    if item.nodeid in known:
        return known[item.nodeid]
    tiers = _tiers(item)
    return max((TIER_ESTIMATES[t] for t in tiers), default=DEFAULT_ESTIMATE)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: order the items by work unit and write each one's unit for the scheduler (see
    the module's docstring)."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or _UNITS_KEY not in workerinput:
        return
    missing = missing_parts(config)
    known = _estimates()
    ordered = []
    for index, unit in enumerate(_units(items)):
        tiers = set().union(*(_tiers(i) for i in unit))
        waits = bool(_parts_of(tiers, missing))
        ordered.append((waits, -sum(_estimate(i, known) for i in unit), index, unit))
    ordered.sort(key=lambda row: row[:3])
    items[:] = [item for *_, unit in ordered for item in unit]
    target = Path(workerinput[_UNITS_KEY])
    staging = target.with_name(f"{worker_id(config)}.tmp")
    staging.write_text(json.dumps({item.nodeid: _unit_key(item) for item in items}))
    staging.replace(target)  # every worker writes the same units; the scheduler reads whole files only


def start_builds(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Start the background build of the parts the selected ``items`` need and this machine lacks (in the
    first worker, or the only process)."""
    if worker_id(config) not in (None, "gw0"):
        return
    tiers = set().union(*(_tiers(i) for i in items)) if items else set()
    names = _parts_of(tiers, missing_parts(config))
    if not names:
        return
    from tests.parts import start

    config.stash[_BUILD] = start(names)


def stop_builds(config: pytest.Config) -> None:
    """End a background build the run no longer waits for (an interrupted run), with the ``go`` processes
    it started (its process group)."""
    proc = config.stash.get(_BUILD, None)
    if proc is None or proc.poll() is not None:
        return
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=15)
