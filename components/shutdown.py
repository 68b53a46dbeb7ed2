"""Quiet exit when the Pulumi engine stops the program.

When a preview or update ends early (a mandatory policy violation, a failed resource, Ctrl+C), the CLI
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
from types import FrameType


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
    from pulumi.runtime import settings
    from pulumi.runtime.proto import resource_pb2_grpc

    if not isinstance(settings.get_monitor(), resource_pb2_grpc.ResourceMonitorStub):
        return
    if threading.current_thread() is not threading.main_thread():
        return  # signal handlers can only be installed from the main thread
    signal.signal(signal.SIGINT, _leave)
