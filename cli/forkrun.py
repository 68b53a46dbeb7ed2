"""``python -m nodefleet <command>`` for many stacks, without paying the interpreter's start-up for each.

``fleet check``, ``fleet render`` and ``fleet forecast`` run one process per stack, since two stacks never run
in one interpreter (the Pulumi runtime, the event loop and module caches are global: pulumi/pulumi#6052).
Starting each of those processes from scratch spent about half of a stack's CPU time importing Pulumi, the
policy pack and the domain package again. Here a fork server (:mod:`multiprocessing`'s ``forkserver``) imports
them once; each stack then runs in a process forked from it, with the fork server's clean state and its own
copy of everything, exactly as a fresh ``python -m nodefleet`` would, and hands back its exit code, stdout and
stderr. Where the platform has no fork server (Windows), :func:`available` is false and ``fleet`` starts
processes as before.
"""

from __future__ import annotations

import contextlib
import io
import multiprocessing
import os
import resource
import runpy
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

#: What every mock-runtime command imports; loaded once, in the fork server.
PRELOAD = (
    "cli.main",
    "cli.check",
    "cli.render",
    "cli.forecast",
    "nodefleet.drift.forecast",  # the parser imports cli.forecast without it
    "mockruntime.run",
    "mockruntime.evaluate",
    "mockruntime.rendering",
    "mockruntime.render_tree",
    "mockruntime.snapshots",
    "policies.pack",
    "components.fleet",
    # The Namespace and Secrets of a hosted cluster: the provider's largest generated module, about 0.45 s of
    # CPU to import, once here instead of in every hosted stack's process.
    "pulumi_kubernetes.core.v1",
    # What `check` itself imports on its way (the parser registers every command; a custom resource's
    # definition), about 0.15 s of CPU per stack; `fleet upgrade`'s run, which the parser no longer imports but a
    # command line forked from this server may run (tests/forkcli.py); then what every stack reads alike
    # (:mod:`cli.forkwarm`).
    "cli.ops",
    "cli.fleet",
    "cli.fleet_upgrade",
    "cli.engine",
    "cli.report",
    "cli.upgrade",
    "components.shutdown",
    "pulumi_kubernetes.apiextensions",
    "pulumi_kubernetes.meta.v1",
    "cli.forkwarm",
)

_context: Any = None

#: Set to 0 to run every stack in a fresh interpreter instead (to compare, or to rule the fork server out).
FORK_ENV = "NODEFLEET_FLEET_FORK"


@dataclass(frozen=True)
class Done:
    """What a forked command left: its exit code and output, and the CPU time and peak memory of its process."""

    code: int
    stdout: str
    stderr: str
    cpu_seconds: float | None = None
    peak_rss_mib: float | None = None


def available() -> bool:
    return "forkserver" in multiprocessing.get_all_start_methods() and os.environ.get(FORK_ENV, "1") != "0"


def _ctx() -> Any:
    global _context
    if _context is None:
        _context = multiprocessing.get_context("forkserver")
        _context.set_forkserver_preload(list(PRELOAD))
    return _context


def _child(argv: Sequence[str], cwd: str, env: Mapping[str, str], conn: Connection) -> None:
    """In the forked process: the command as ``python -m nodefleet`` runs it (the same module, run as
    ``__main__``, with the same ``sys.argv``), its output captured."""
    os.chdir(cwd)
    os.environ.clear()
    os.environ.update(env)
    sys.argv = ["nodefleet", *argv]
    out, err = io.StringIO(), io.StringIO()
    code: Any = 0
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            runpy.run_module("nodefleet", run_name="__main__", alter_sys=True)
        except SystemExit as exit_:
            code = exit_.code
        except KeyboardInterrupt:  # Ctrl-C reaches the whole process group: the fleet reports it, once
            code = 130
    if not isinstance(code, int):  # sys.exit("message") prints it and exits 1, as the interpreter does
        err.write(f"{code}\n" if code is not None else "")
        code = 0 if code is None else 1
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu = round(usage.ru_utime + usage.ru_stime, 2)
    try:
        conn.send(Done(code, out.getvalue(), err.getvalue(), cpu, round(usage.ru_maxrss / 1024, 1)))
        conn.close()
    except OSError:
        # The fleet that asked is gone (killed, interrupted): nobody to tell, and nothing to print on a terminal
        # that has moved on (BrokenPipeError, ConnectionResetError).
        os._exit(code if 0 <= code < 256 else 1)


def run(argv: Sequence[str], *, cwd: Path, env: Mapping[str, str], timeout: float | None) -> Done | None:
    """``python -m nodefleet <argv>`` in a process forked from the fork server; ``None`` when it did not finish
    within ``timeout`` seconds (it is killed). A process that died without reporting (a signal, a crash) gives
    its exit status as a subprocess would: negative for a signal."""
    ctx = _ctx()
    receive, send = ctx.Pipe(duplex=False)
    process = ctx.Process(target=_child, args=(tuple(argv), str(cwd), dict(env), send), daemon=True)
    process.start()
    send.close()
    result: Done | None = None
    try:
        if receive.poll(timeout):
            result = receive.recv()
    except EOFError:
        pass
    finally:
        receive.close()
    if result is None and process.is_alive():
        process.kill()
        process.join()
        return None
    process.join()
    if result is None:
        return Done(process.exitcode if process.exitcode is not None else -9, "", "")
    return result
