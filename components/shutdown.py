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

**The engine stopping it.** When a preview or update ends early (a mandatory policy violation, a failed resource,
Ctrl+C), the CLI closes its language host by sending SIGINT to the host's whole process group
(pulumi/pulumi ``pkg/resource/plugin/plugin.go``: ``cmdutil.InterruptChildren``, i.e. ``kill(-pgid,
SIGINT)``). The Python language host starts the program without a process group of its own
(``sdk/python/cmd/pulumi-language-python/main.go``, ``Run``), so the program gets that SIGINT too. Python turns
it into ``KeyboardInterrupt``, which the SDK's exec shim (``pulumi-language-python-exec``) does not catch (it
handles ``Exception`` only), and the traceback lands under Diagnostics, where users paste it into tickets.
The engine has already decided the outcome by then; the program only has to go away, and say nothing.

Saying nothing includes gRPC's own C-core logging. The engine tears its resource monitor down right after the
SIGINT; when that server cancels the program's pending calls, its GOAWAY reaches the program's channel and
gRPC (grpcio 1.85, ``chttp2_transport.cc``) logs ``Got goaway [2] … Cancelling all calls`` at INFO, which absl
writes to stderr (nothing calls ``absl::InitializeLog``, so every level above the minimum goes there). Whether
the program is still alive to log it is a race a loaded machine loses now and then. The environment cannot
help from here: grpcio reads ``GRPC_VERBOSITY`` once, when ``grpc`` is imported, and the exec shim imports it
(and opens the monitor channel) before this program runs. A Python-level handler cannot help either: it runs
only when the main thread next executes bytecode, and gRPC's threads log without it. So the program gives
SIGINT back its default action: the kernel then ends every thread of the process inside the ``kill()`` that
sends it (``complete_signal``: a fatal signal with the default action takes the whole thread group down
at once), before any thread runs another instruction, so nothing can be printed after it, whatever the
timing. stdout is made line-buffered first, so every line printed before the signal has reached the
language host already (stderr is line-buffered since Python 3.9).
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator

import pulumi

#: "An actionable error has been shown; add nothing": the exit code the Python exec shim and the language
#: hosts of every Pulumi SDK agree on.
ERROR_ALREADY_REPORTED = 32


def _under_the_engine() -> bool:
    """Connected to a real resource monitor (``pulumi preview/up``), not the mock runtime."""
    from pulumi.runtime import settings
    from pulumi.runtime.proto import resource_pb2_grpc

    return isinstance(settings.get_monitor(), resource_pb2_grpc.ResourceMonitorStub)


def exit_quietly_when_the_engine_stops_us() -> None:
    """Under the real engine, let SIGINT end the program by its default action: silently, every thread at once.

    Under the mock runtime (``python -m nodefleet check``, the tests) nothing changes, so Ctrl+C there keeps
    its usual meaning for the command line and for pytest.
    """
    if not _under_the_engine():
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signal dispositions can only be set from the main thread
    with contextlib.suppress(AttributeError, ValueError, OSError):  # a replaced or closed stream
        sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    signal.signal(signal.SIGINT, signal.SIG_DFL)


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
