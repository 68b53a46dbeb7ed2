"""Where a test run's time goes: every phase of every test and every fixture set up wider than a test.

Each worker records, per test phase (setup, call, teardown), its duration, the CPU time it spent itself and
the CPU time the processes it started spent in the phase (with their own children: an engine run, an API
server a fixture keeps, what the command-line fork server forks), and, for the setup phase, the
fixtures of module, class, package or session scope it set up and what each took (an API server, the GitOps
controllers, a corpus sent once). The records travel with the test reports to the process that runs the
session, which writes them, one JSON line per phase, to ``.tools/suite-times/last.jsonl`` (``NODEFLEET_SUITE_TIMES``
moves it; an empty value turns it off). Tests do not read it (speed lives in the benchmarks and the
measurements); this module's command turns it into the tables of docs/testing.md:

    venv/bin/python -m tests.suite_times                    # the tables, from the last run
    venv/bin/python -m tests.suite_times --write-durations  # tests/durations.json, the order of the next runs
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import time
from collections import defaultdict
from collections.abc import Generator, Iterable
from pathlib import Path
from typing import Any

import pytest

PROJECT = Path(__file__).resolve().parent.parent
DEFAULT = PROJECT / ".tools" / "suite-times" / "last.jsonl"
ENV = "NODEFLEET_SUITE_TIMES"
_PROPERTY = "nodefleet-fixture-setup"
_TIERS = "nodefleet-tiers"
_SERVERS = "nodefleet-api-servers"
_CPU = "nodefleet-cpu"
_pending: list[tuple[str, str, float]] = []
#: API servers a worker's closed ``test_clusters`` started, how many times it handed one on reset instead, and
#: how many spares it stopped unused.
_servers: list[tuple[int, int, int]] = []


def servers_closed(started: int, reused: int, reaped: int = 0) -> None:
    """Record what a ``test_clusters`` fixture did with API servers (with the phase that closed it)."""
    _servers.append((started, reused, reaped))


def _cpu() -> tuple[float, float]:
    """CPU seconds (user and system) of this process, and of the processes it started: those it has reaped, and
    those still running (an API server, etcd or a controller a fixture keeps, the command line's fork server),
    each with what it has reaped. A process counts in the phases it runs in: when it is reaped, what it had
    spent moves from the one sum to the other."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    reaped = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime, reaped.ru_utime + reaped.ru_stime + _running_cpu(os.getpid())


def _running_cpu(pid: int) -> float:
    """CPU seconds of ``pid``'s running children, each with the children it has reaped (``utime stime cutime
    cstime`` of ``/proc/<child>/stat``), found through each of its threads' ``children`` file. The children's
    own running children are not walked (reading every thread of every Go server took about 100 ms a phase):
    the servers and controllers are the worker's children, and what they start they reap."""
    ticks = 0
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return 0.0
    for thread in threads:
        try:
            children = Path(f"/proc/{pid}/task/{thread}/children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                fields = Path(f"/proc/{child}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
    return ticks / os.sysconf("SC_CLK_TCK")


#: CPU times at the start of the current phase.
_mark: list[tuple[float, float]] = []


def pytest_runtest_logstart(nodeid: str, location: object) -> None:
    _mark[:] = [_cpu()]


def target() -> Path | None:
    value = os.environ.get(ENV)
    if value is None:
        return DEFAULT
    return Path(value) if value else None


@pytest.hookimpl(hookwrapper=True)
def pytest_fixture_setup(
    fixturedef: pytest.FixtureDef[Any], request: pytest.FixtureRequest
) -> Generator[None]:
    t0 = time.perf_counter()
    yield
    if fixturedef.scope != "function":
        _pending.append((fixturedef.argname, fixturedef.scope, time.perf_counter() - t0))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Generator[None, Any]:
    outcome = yield
    report = outcome.get_result()
    now = _cpu()
    if _mark:
        report.user_properties.append(
            (_CPU, [round(now[0] - _mark[0][0], 2), round(now[1] - _mark[0][1], 2)])
        )
    _mark[:] = [now]
    if _pending:
        report.user_properties.append((_PROPERTY, [[n, s, round(d, 3)] for n, s, d in _pending]))
        _pending.clear()
    if _servers:
        report.user_properties.append((_SERVERS, [sum(column) for column in zip(*_servers, strict=True)]))
        _servers.clear()
    if call.when == "call":
        tiers = [t for t in ("gitops", "apiserver", "engine", "goref") if item.get_closest_marker(t)]
        report.user_properties.append((_TIERS, tiers))


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    out = _open.get("out")
    if out is None:
        return
    fixtures = next((v for k, v in report.user_properties if k == _PROPERTY), [])
    row = {
        "test": report.nodeid.split("@", 1)[0],
        "phase": report.when,
        "seconds": round(report.duration, 3),
        "start": round(report.start, 3),
        "worker": getattr(report, "node", None) and report.node.gateway.id,
        "outcome": report.outcome,
    }
    if fixtures:
        row["fixtures"] = fixtures
    tiers = next((v for k, v in report.user_properties if k == _TIERS), None)
    if tiers:
        row["tiers"] = tiers
    servers = next((v for k, v in report.user_properties if k == _SERVERS), None)
    if servers:
        row["apiServers"] = servers
    cpu = next((v for k, v in report.user_properties if k == _CPU), None)
    if cpu:
        row["cpu"], row["reapedCpu"] = cpu
    out.write(json.dumps(row) + "\n")


#: The open output of this process (the logreport hook has no config at hand).
_open: dict[str, Any] = {}


def pytest_configure(config: pytest.Config) -> None:
    if hasattr(config, "workerinput"):
        return
    path = target()
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    _open["out"] = path.open("w", encoding="utf-8")
    _open["started"] = time.time()


def pytest_unconfigure(config: pytest.Config) -> None:
    out = _open.pop("out", None)
    if out is not None:
        out.close()


# --- the tables ------------------------------------------------------------------------------------------


def read(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _file(test: str) -> str:
    return test.split("::", 1)[0]


def _tier(rows: Iterable[dict[str, Any]]) -> str:
    tiers = {t for r in rows for t in r.get("tiers", ())}
    for tier in ("gitops", "engine", "apiserver", "goref"):
        if tier in tiers:
            return tier
    return "pure"


def _cpus(rows: list[dict[str, Any]]) -> str:
    """The two CPU columns of the file table (blank for a record written before they were kept)."""
    if not any("cpu" in r for r in rows):
        return " | "
    return f"{sum(r.get('cpu', 0) for r in rows):.0f} | {sum(r.get('reapedCpu', 0) for r in rows):.0f}"


def tables(rows: list[dict[str, Any]], top: int = 25) -> str:
    """The run's wall time and use of its workers, then per file and per wide fixture, as Markdown."""
    if not rows:
        return "no test ran"
    start = min(r["start"] for r in rows)
    end = max(r["start"] + r["seconds"] for r in rows)
    by_worker: dict[str, float] = defaultdict(float)
    by_file: dict[str, list[dict[str, Any]]] = defaultdict(list)
    fixtures: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        by_worker[r.get("worker") or "main"] += r["seconds"]
        by_file[_file(r["test"])].append(r)
        for name, scope, seconds in r.get("fixtures", ()):
            fixtures[f"{name} ({scope})"].append(seconds)
    wall = end - start
    tests = len({r["test"] for r in rows})
    out = [
        f"{tests} tests, {wall / 60:.1f} min from the first test's start to the last one's end, on "
        f"{len(by_worker)} worker(s) busy {', '.join(f'{w} {s / 60:.1f} min' for w, s in sorted(by_worker.items()))}.",
        "",
        "| file | tier | tests | seconds | of which wide fixtures' set-up | CPU s: worker | CPU s: its processes |",
        "|---|---|---:|---:|---:|---:|---:|",
    ]
    files = sorted(by_file.items(), key=lambda kv: -sum(r["seconds"] for r in kv[1]))
    for name, file_rows in files[:top]:
        setup = sum(f[2] for r in file_rows for f in r.get("fixtures", ()))
        total = sum(r["seconds"] for r in file_rows)
        count = len({r["test"] for r in file_rows})
        out.append(
            f"| `{name}` | {_tier(file_rows)} | {count} | {total:.0f} | {setup:.0f} | {_cpus(file_rows)} |"
        )
    rest = files[top:]
    if rest:
        rows_rest = [r for _, file_rows in rest for r in file_rows]
        total = sum(r["seconds"] for r in rows_rest)
        count = len({r["test"] for r in rows_rest})
        out.append(f"| {len(rest)} other files | | {count} | {total:.0f} | | {_cpus(rows_rest)} |")
    per_tier: dict[str, float] = defaultdict(float)
    for _, file_rows in files:
        per_tier[_tier(file_rows)] += sum(r["seconds"] for r in file_rows)
    out += [
        "",
        "| tier | seconds of test time | CPU s: workers | CPU s: its processes |",
        "|---|---:|---:|---:|",
    ]
    tier_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for _, file_rows in files:
        tier_rows[_tier(file_rows)] += file_rows
    out += [
        f"| {t} | {s:.0f} | {_cpus(tier_rows[t])} |"
        for t, s in sorted(per_tier.items(), key=lambda kv: -kv[1])
    ]
    out += ["", "| fixture wider than a test | set-ups | seconds | longest |", "|---|---:|---:|---:|"]
    for name, times in sorted(fixtures.items(), key=lambda kv: -sum(kv[1]))[:top]:
        if sum(times) >= 0.5:
            out.append(f"| `{name}` | {len(times)} | {sum(times):.0f} | {max(times):.1f} |")
    servers = [r["apiServers"] for r in rows if "apiServers" in r]
    if servers:
        out += [
            "",
            f"Test API servers: {sum(s[0] for s in servers)} started, and {sum(s[1] for s in servers)} times one "
            "a test gave back was reset and handed to the next instead of starting another"
            # Logs written before spares were reaped have two numbers.
            + (
                f"; {sum(s[2] for s in servers)} spares were stopped, unused for a minute."
                if all(len(s) > 2 for s in servers)
                else "."
            ),
        ]
    return "\n".join(out)


def durations(rows: list[dict[str, Any]], floor: float = 1.0) -> dict[str, Any]:
    """Each test's time (all phases, seconds), for tests of at least ``floor`` seconds."""
    per_test: dict[str, float] = defaultdict(float)
    for r in rows:
        per_test[r["test"]] += r["seconds"]
    return {"tests": {t: round(s, 1) for t, s in sorted(per_test.items()) if s >= floor}}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.suite_times", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--log", type=Path, default=target() or DEFAULT, help="a run's times (default: %(default)s)"
    )
    parser.add_argument("--top", type=int, default=25, help="rows per table (default: %(default)s)")
    parser.add_argument(
        "--write-durations",
        action="store_true",
        help="write tests/durations.json from the run, for tests/parallel.py",
    )
    args = parser.parse_args(argv)
    try:
        rows = read(args.log)
    except (OSError, ValueError) as e:
        print(
            f"python -m tests.suite_times: cannot read {args.log}: {e}; run the suite first", file=sys.stderr
        )
        return 2
    if args.write_durations:
        from tests.parallel import DURATIONS

        DURATIONS.write_text(json.dumps(durations(rows), indent=0, sort_keys=True) + "\n")
        print(f"wrote {DURATIONS.relative_to(PROJECT)}")
        return 0
    try:
        print(tables(rows, args.top))
        sys.stdout.flush()
    except BrokenPipeError:  # `| head`: the reader has what it wanted
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return 0


if __name__ == "__main__":
    sys.exit(main())
