"""References built from upstream Go code, fetched from the Go module proxy and compiled on first use.

A differential test marks itself ``@pytest.mark.goref`` and calls :func:`build` with the folder that holds
the reference's ``go.mod``, ``go.sum`` and ``main.go``. The binary lands in the machine's cache,
``~/.cache/nodefleet/goref/<name>-<digest>/``, keyed by the digest of those sources, so a changed reference is
rebuilt and an unchanged one is reused across runs and checkouts. References that build one program against several module versions keep a
``go.mod``/``go.sum`` per version and pass the program's files as ``shared``: they are assembled with the
version's module files in the build folder, so the program is written once. Where ``go`` is not on PATH, tests/conftest.py deselects every ``goref`` test
and ends the run with a banner naming them: they are never skipped silently.
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
#: Where the references are built, once per machine (``NODEFLEET_CACHE`` moves it): outside the checkout, so
#: a fresh clone on the same machine (CI's) links nothing again.
TOOLS = (
    Path(
        os.environ.get("NODEFLEET_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodefleet"
    )
    / "goref"
)
#: Compiling a Kubernetes or Karpenter module graph from a cold cache takes minutes on two cores.
BUILD_TIMEOUT = 1800


def go_missing() -> str | None:
    """Why no Go reference can be built here, or None when one can."""
    if shutil.which("go") is None:
        return "`go` is not on PATH (Go >= 1.24 builds the references from the Go module proxy)"
    return None


def _is_source(path: Path) -> bool:
    return path.is_file() and (path.suffix in (".go", ".s") or path.name in ("go.mod", "go.sum"))


def _sources(source: Path, shared: Sequence[Path]) -> dict[str, Path]:
    """The files of the build by their name in it: ``source``'s own, then each of ``shared``."""
    files = {p.relative_to(source).as_posix(): p for p in sorted(source.rglob("*")) if _is_source(p)}
    return files | {p.name: p for p in shared}


def _digest(files: dict[str, Path]) -> str:
    h = hashlib.sha256()
    for name, path in sorted(files.items()):
        h.update(name.encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


def _binary(source: Path, shared: Sequence[Path], into: Path) -> tuple[Path, dict[str, Path]]:
    files = _sources(source, shared)
    return into / f"{source.name}-{_digest(files)}" / "ref", files


def built(source: Path, shared: Sequence[Path] = (), *, into: Path = TOOLS) -> bool:
    """Whether :func:`build` would return at once."""
    return _binary(source, shared, into)[0].exists()


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """One build of a binary at a time on this machine: the suite's workers, the background build of
    tests/parts.py and other checkouts wait for the first, then find its binary."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


def build(source: Path, shared: Sequence[Path] = (), *, into: Path = TOOLS) -> Path:
    """The reference binary for the Go module at ``source`` (plus the ``shared`` program files), built once
    per change of its sources, under ``into`` (default: the machine's ``~/.cache/nodefleet/goref``)."""
    binary, files = _binary(source, shared, into)
    if binary.exists():
        return binary
    with locked(binary.parent.with_name(binary.parent.name + ".lock")):
        if not binary.exists():
            _build(source, files, shared, binary)
    return binary


def _build(source: Path, files: dict[str, Path], shared: Sequence[Path], binary: Path) -> None:
    binary.parent.mkdir(parents=True, exist_ok=True)
    staging = binary.with_name(f"ref.{os.getpid()}.tmp")
    workdir = source
    if shared:  # assemble the module in the build folder; the checkout is left as it is
        workdir = binary.with_name("src")
        shutil.rmtree(workdir, ignore_errors=True)
        for name, path in files.items():
            (workdir / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, workdir / name)
    result = subprocess.run(
        ["go", "build", "-mod=mod", "-trimpath", "-o", str(staging), "."],
        cwd=workdir,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        # GOTOOLCHAIN=auto: a reference whose modules need a newer Go (Karpenter 1.14+ needs go >= 1.26.10)
        # gets that toolchain from the module proxy (golang.org/toolchain); older ones build with the local go.
        env={**os.environ, "GOFLAGS": "-mod=mod", "CGO_ENABLED": "0", "GOTOOLCHAIN": "auto"},
    )
    if result.returncode != 0:
        raise RuntimeError(f"go build in {source} failed:\n{result.stderr[-4000:]}")
    staging.replace(binary)
