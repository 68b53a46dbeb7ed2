"""The parts the real tiers build from the Go module proxy, and the build that starts them all at once.

A new machine builds them once (the test API server, kubectl, the GitOps controllers, the Go references:
about 45 minutes of compiling on two cores); a machine that has built them finds them by digest and builds
nothing. ``make test`` does not wait for them: the suite's collection starts this module in a process of
its own (:func:`start`), which builds every part the selected tests need, one after another, while the pure
tiers run. A test that needs a part calls the part's own build function, as before; every build takes a
file lock (tests/goref.py, tests/gitopsctl.py), so the test waits for the background build of its part
only, and a part already built is returned at once.

    venv/bin/python -m tests.parts build [PART ...]   # build now (all parts when none is named)
    venv/bin/python -m tests.parts start              # build every missing part in the background
    venv/bin/python -m tests.parts list               # each part, its tier and whether it is built

``make test`` runs ``start`` before it sets up the engine, so that on a new machine the parts build while the
engine does; the suite then waits for each part where a test needs it.

Each build's time is appended to ``build-times.jsonl`` in the machine's cache (``~/.cache/nodefleet``), so a
new machine's log says what each part took.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
#: The machine's cache, shared by every checkout (``NODEFLEET_CACHE`` moves it).
CACHE = Path(
    os.environ.get("NODEFLEET_CACHE")
    or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodefleet"
)
BUILD_TIMES = CACHE / "build-times.jsonl"
#: The background build's output, and its lock: one build of the parts per machine at a time (a second one,
#: started by another run or checkout, leaves at once; its tests wait for each part's own lock).
BUILD_LOG = CACHE / "parts-build.log"
BUILD_LOCK = CACHE / "parts-build.lock"


@dataclass(frozen=True)
class Part:
    """One binary a real tier needs: its name, the markers of the tests that need it, and how to build it
    (the build function the tests call; it returns at once when the part is built)."""

    name: str
    tiers: tuple[str, ...]
    build: Callable[[], object]
    built: Callable[[], bool]


def _testcluster(module: str) -> Part:
    from tests import goref, testcluster

    folder = testcluster.MODULES / module
    tiers = ("gitops",) if module == "kubectl" else ("apiserver", "gitops")
    return Part(
        module,
        tiers,
        lambda: goref.build(folder, into=testcluster.CACHE),
        lambda: goref.built(folder, into=testcluster.CACHE),
    )


def _controller(name: str) -> Part:
    from tests import gitopsctl

    recipe = next(r for r in gitopsctl.RECIPES if r.name == name)
    return Part(name, ("gitops",), lambda: gitopsctl.build(recipe), lambda: gitopsctl.is_built(recipe))


def _reference(folder: Path, shared: tuple[Path, ...] = ()) -> Part:
    from tests import goref

    return Part(
        folder.name,
        ("goref",),
        lambda: goref.build(folder, shared),
        lambda: goref.built(folder, shared),
    )


def parts() -> list[Part]:
    """Every part, in the order a new machine builds them: the test API server first (the API server and
    GitOps tiers wait for it), then the controllers (the longest tier waits for them), kubectl, and the Go
    references last (their tests are short)."""
    from tests.karpenter_hash.reference import MODULES, PROGRAM, folder

    tests = PROJECT / "tests"
    return [
        _testcluster("etcd"),
        _testcluster("kube-apiserver"),
        _testcluster("kube-controller-manager"),
        _controller("source-controller"),
        _controller("kustomize-controller"),
        _controller("argocd"),
        _testcluster("kubectl"),
        _reference(tests / "apiserver_reference"),
        _reference(tests / "celcost_reference"),
        _reference(tests / "cron_reference"),
        *(_reference(folder(minor), PROGRAM) for minor in MODULES),
    ]


def _record(name: str, seconds: float, error: str | None) -> None:
    CACHE.mkdir(parents=True, exist_ok=True)
    row = {
        "part": name,
        "seconds": round(seconds, 1),
        "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    if error:
        row["error"] = error[-500:]
    with BUILD_TIMES.open("a", encoding="utf-8") as out:
        out.write(json.dumps(row) + "\n")


def build(names: Iterable[str] = ()) -> int:
    """Build the parts named (every part when none is), one after another; 1 when one failed (the test that
    needs it builds it again and fails with the build's error). Another build running on this machine
    builds them already: then this one leaves at once."""
    chosen = set(names)
    CACHE.mkdir(parents=True, exist_ok=True)
    with BUILD_LOCK.open("w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(
                "another build of the test parts is running on this machine; nothing to do here", flush=True
            )
            return 0
        status = 0
        for part in parts():
            if (chosen and part.name not in chosen) or part.built():
                continue
            t0 = time.monotonic()
            error = None
            try:
                part.build()
            except Exception as e:  # the test that needs the part reports it; the others go on
                error = f"{type(e).__name__}: {e}"
                status = 1
            seconds = time.monotonic() - t0
            _record(part.name, seconds, error)
            print(f"{part.name}: {'FAILED' if error else 'built'} in {seconds:.0f}s", flush=True)
            if error:
                print(error, flush=True)
        return status


def building() -> bool:
    """Whether a build of the parts is running on this machine."""
    if not BUILD_LOCK.exists():
        return False
    with BUILD_LOCK.open("r") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(lock, fcntl.LOCK_UN)
    return False


def start(names: list[str], *, detached: bool = False) -> subprocess.Popen[bytes] | None:
    """Build ``names`` in a process of its own, its output appended to :data:`BUILD_LOG`; None when there is
    nothing to build or a build is running already (the tests wait for it through the parts' locks). The
    process dies with the caller, unless ``detached`` (``make test`` starts it and goes on to the engine)."""
    if not names or building():
        return None
    from tests.testcluster import _die_with_parent

    CACHE.mkdir(parents=True, exist_ok=True)
    with BUILD_LOG.open("ab") as log:
        return subprocess.Popen(
            [sys.executable, "-m", "tests.parts", "build", *names],
            stdout=log,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=PROJECT,
            # its own process group either way, so that stopping it stops its `go` processes too
            start_new_session=detached,
            preexec_fn=None if detached else _die_with_parent,
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.parts", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    b = sub.add_parser("build", help="build the parts named (every part when none is)")
    b.add_argument("names", nargs="*", metavar="PART")
    sub.add_parser("start", help="build every part this machine lacks, in the background (make test does)")
    sub.add_parser("list", help="each part, its tiers and whether it is built")
    args = parser.parse_args(argv)
    if args.command == "list":
        for part in parts():
            print(f"{part.name:26} {','.join(part.tiers):16} {'built' if part.built() else 'not built'}")
        return 0
    if args.command == "start":
        missing = [p.name for p in parts() if not p.built()]
        if not missing:
            return 0
        if start(missing, detached=True) is not None:
            print(
                f"building {len(missing)} test parts in the background ({', '.join(missing)}); log: {BUILD_LOG}"
            )
        else:
            print(f"the test parts are being built in the background already; log: {BUILD_LOG}")
        return 0
    known = {p.name for p in parts()}
    unknown = sorted(set(args.names) - known)
    if unknown:
        parser.error(f"unknown part(s) {', '.join(unknown)}; the parts are: {', '.join(sorted(known))}")
    with contextlib.suppress(KeyboardInterrupt):
        return build(args.names)
    return 130


if __name__ == "__main__":
    sys.exit(main())
