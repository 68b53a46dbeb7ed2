"""``python -m nodefleet`` for the tests, forked from the fork server ``fleet`` itself uses (:mod:`cli.forkrun`).

About 750 of the suite's command-line runs each started an interpreter and imported Pulumi, the policy pack
and the program again: most of their CPU, and the suite is CPU-bound on two cores. Forked from a server that
imported them once, a run is the process ``fleet check`` gives each stack (docs/operations.md): its own copy
of everything, the command run as ``__main__`` with its own ``argv``, working directory and environment.
Here, unlike in ``fleet``, the process's file descriptors 1 and 2 are the files the test reads, so what the
command's own child processes print (``git``, ``pulumi``) is captured as :func:`subprocess.run` captures it,
and the interpreter's exit handlers run before it exits, as at the end of a fresh interpreter.

A fresh interpreter is still used where the fork could differ from it: a working directory other than the
project (a copy of it imports the copy's modules), an environment that changes how Python starts or decodes
(``PYTHON*``, the locale), one that moves what the fork server read while it warmed up (the cache folders,
``HOME``), and ``preview`` and ``up``, which run the engine through the Automation API in their own process. ``NODEFLEET_TEST_FORK=0`` runs every command in a fresh interpreter, to compare or to rule the fork
out; ``tests/test_forkcli.py`` holds the two to the same output.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import locale
import os
import subprocess
import sys
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path

from cli import forkrun

PROJECT = Path(__file__).resolve().parent.parent
ENV = "NODEFLEET_TEST_FORK"
#: Environment variables whose value, set by a test, sends its command to a fresh interpreter.
_FRESH_PREFIXES = ("PYTHON", "LC_", "LANG")
_FRESH_NAMES = frozenset({"HOME", "XDG_CACHE_HOME", "NODEFLEET_CACHE_DIR", forkrun.FORK_ENV, ENV})


#: Commands that run the Pulumi engine in-process (the Automation API): they start from a fresh interpreter.
_ENGINE_COMMANDS = frozenset({"preview", "up"})


def forkable(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None) -> bool:
    """Whether ``python -m nodefleet <argv>`` run from ``cwd`` with ``env`` added to the environment can be
    forked."""
    if os.environ.get(ENV, "1") == "0" or not forkrun.available():
        return False
    if next((a for a in argv if not a.startswith("-")), None) in _ENGINE_COMMANDS:
        return False
    if Path(cwd).resolve() != PROJECT:
        return False
    return not any(k.startswith(_FRESH_PREFIXES) or k in _FRESH_NAMES for k in env or {})


def share_fork_server() -> None:
    """In a process forked from the fork server: a ``fleet`` command run here forks its stacks from that same
    server instead of starting one of its own.

    ``multiprocessing`` gives a process forked from a fork server the server's address and a hold on it, but
    not its pid, which ``ensure_running`` checks before anything else, so it starts a new server: a new
    interpreter that imports :data:`cli.forkrun.PRELOAD` again, about 1.2 CPU-seconds for each ``fleet``
    command of a test, 143 of them in a whole run. The server this process came from has imported the same
    modules, started by the same :func:`cli.forkrun._ctx`, and each stack still gets its own process with the
    environment and working directory ``fleet`` gives it. Nothing changes where the hold is missing (another
    Python, another start method): the command then starts its own server, as in a user's ``fleet``."""
    from multiprocessing import forkserver

    server = forkserver._forkserver
    if server._forkserver_address is not None and server._forkserver_alive_fd is not None:
        server.ensure_running = lambda: None  # type: ignore[method-assign]


def _child(argv: Sequence[str], cwd: str, env: Mapping[str, str], out: str, err: str) -> None:
    """In the forked process: file descriptors 1 and 2 onto the test's files, then the command as
    ``python -m nodefleet`` runs it; the exit handlers, a flush and the exit code, as an interpreter ends."""
    share_fork_server()
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_TRUNC)
        os.dup2(target, fd)
        os.close(target)
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["nodefleet", *argv]
    code: object = 0
    try:
        import runpy

        runpy.run_module("nodefleet", run_name="__main__", alter_sys=True)
    except SystemExit as exit_:
        code = exit_.code
    except BaseException:  # what a fresh interpreter prints for an exception that escapes
        import traceback

        traceback.print_exc()
        code = 1
    if code is None:
        code = 0
    elif not isinstance(code, int):  # sys.exit("message") prints it and exits 1, as the interpreter does
        print(code, file=sys.stderr)
        code = 1
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(code & 0xFF)


def _text(data: bytes) -> str:
    """What ``subprocess.run(text=True)`` makes of a stream: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data), encoding=locale.getpreferredencoding(False)).read()


def run(
    argv: Sequence[str], cwd: Path, env: Mapping[str, str], timeout: float
) -> subprocess.CompletedProcess[str]:
    """``python -m nodefleet <argv>`` forked; what :func:`subprocess.run` with ``capture_output=True, text=True``
    returns, and :class:`subprocess.TimeoutExpired` past ``timeout`` (the process killed)."""
    ctx = forkrun._ctx()
    args = [sys.executable, "-m", "nodefleet", *argv]
    with tempfile.TemporaryDirectory(prefix="nodefleet-cli-") as folder:
        out, err = Path(folder) / "stdout", Path(folder) / "stderr"
        out.touch()
        err.touch()
        process = ctx.Process(target=_child, args=(tuple(argv), str(cwd), dict(env), str(out), str(err)))
        process.start()
        process.join(timeout)
        if process.exitcode is None:
            process.kill()
            process.join()
            raise subprocess.TimeoutExpired(args, timeout, _text(out.read_bytes()), _text(err.read_bytes()))
        return subprocess.CompletedProcess(
            args, process.exitcode, _text(out.read_bytes()), _text(err.read_bytes())
        )
