"""How the program ends under the real engine: one line for its own errors, silence when the engine stops it.

**Its own errors.** Invalid configuration stops the program with ``pulumi.RunError``, whose message names the
file, the field and the fix. The SDK's exec shim (``pulumi-language-python-exec``, pulumi/pulumi v3.259.0
``sdk/python/cmd/pulumi-language-python-exec``) logs that message and exits 1; the Python language host turns
any exit code other than 32 into "program exited with non-zero exit code: N", and the engine prints that as
a second error, "an unhandled error occurred: …" (``pkg/resource/deploy/program_source.go``). Exit code 32 is
the SDKs' convention for "the program has already shown the user an actionable error" (the shim's own
``PYTHON_PROCESS_EXITED_AFTER_SHOWING_USER_ACTIONABLE_MESSAGE_CODE``, used for its unhandled-exception
path): the language host answers the engine with ``RunResponse{bail: true}`` (its ``Run``,
``pythonProcessExitedAfterShowingUserActionableMessage``) and the engine ends the run without a message of
its own (``result.BailErrorf("run bailed")``). :func:`errors_reported_once` reports the message itself and
exits with 32.

**The engine stopping it.** When a preview or update ends early (a mandatory policy violation, a failed resource, Ctrl+C), the CLI
closes its language host by sending SIGINT to the host's whole process group
(pulumi/pulumi ``pkg/resource/plugin/plugin.go``: ``cmdutil.InterruptChildren``, i.e. ``kill(-pgid,
SIGINT)``). The Python language host starts the program without a process group of its own
(``sdk/python/cmd/pulumi-language-python/main.go``, ``Run``), so the program gets that SIGINT too. Python turns
it into ``KeyboardInterrupt``, which the SDK's exec shim (``pulumi-language-python-exec``) does not catch (it
handles ``Exception`` only), and the traceback lands under Diagnostics, where users paste it into tickets.
The engine has already decided the outcome by then; the program only has to go away.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

import pulumi

#: "An actionable error has been shown; add nothing": the exit code the Python exec shim and the language
#: hosts of every Pulumi SDK agree on.
ERROR_ALREADY_REPORTED = 32


def _under_the_engine() -> bool:
    """Connected to a real resource monitor (``pulumi preview/up``), not the mock runtime."""
    from pulumi.runtime import settings
    from pulumi.runtime.proto import resource_pb2_grpc

    return isinstance(settings.get_monitor(), resource_pb2_grpc.ResourceMonitorStub)


def _leave(signum: int, frame: FrameType | None) -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a closed or broken pipe: nothing left to say
            stream.flush()
    # Die by the signal itself, as an unhandled KeyboardInterrupt does since Python 3.8: the same exit status
    # for whoever waits on the process, without the traceback.
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def exit_quietly_when_the_engine_stops_us() -> None:
    """Replace the KeyboardInterrupt traceback by a silent exit, when running under the real engine.

    Under the mock runtime (``python -m nodefleet check``, the tests) nothing changes, so Ctrl+C there keeps
    its usual meaning for the command line and for pytest.
    """
    if not _under_the_engine():
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be installed from the main thread
    signal.signal(signal.SIGINT, _leave)


@contextlib.contextmanager
def errors_reported_once() -> Iterator[None]:
    """Under the real engine, a ``pulumi.RunError`` from the block becomes one error line and exit code 32.

    The message goes to the engine's error channel exactly as the exec shim would send it
    (``pulumi.log.error``, synchronous when no resource is named), then ``SystemExit`` ends the program: the
    SDK's runtime waits for outstanding calls and lets a ``BaseException`` through, and the shim catches only
    ``Exception``, so the process exits with 32. Under the mock runtime the error is raised unchanged: the
    command line and the tests report it themselves.
    """
    try:
        yield
    except pulumi.RunError as e:
        if not _under_the_engine():
            raise
        pulumi.log.error(str(e))
        raise SystemExit(ERROR_ALREADY_REPORTED) from None
