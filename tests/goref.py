"""References built from upstream Go code, fetched from the Go module proxy and compiled on first use.

A differential test marks itself ``@pytest.mark.goref`` and calls :func:`build` with the folder that holds
the reference's ``go.mod``, ``go.sum`` and ``main.go``. The binary lands in ``.tools/goref/<name>-<digest>/``
(ignored by git), keyed by the digest of those sources, so a changed reference is rebuilt and an unchanged
one is reused across runs. References that build one program against several module versions keep a
``go.mod``/``go.sum`` per version and pass the program's files as ``shared``: they are assembled with the
version's module files in the build folder, so the program is written once. Where ``go`` is not on PATH, tests/conftest.py deselects every ``goref`` test
and ends the run with a banner naming them: they are never skipped silently.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
TOOLS = PROJECT / ".tools" / "goref"
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


def build(source: Path, shared: Sequence[Path] = (), *, into: Path = TOOLS) -> Path:
    """The reference binary for the Go module at ``source`` (plus the ``shared`` program files), built once
    per change of its sources, under ``into`` (default: the checkout's ``.tools/goref``)."""
    files = _sources(source, shared)
    binary = into / f"{source.name}-{_digest(files)}" / "ref"
    if binary.exists():
        return binary
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
    return binary
