"""What a user sees when the engine stops the program: nothing from the program.

The CLI closes its Python language host with SIGINT to the host's process group (pulumi/pulumi
pkg/resource/plugin/plugin.go, `cmdutil.InterruptChildren`), which holds the program too. Here the real exec
shim the language host runs (`pulumi-language-python-exec`, from the Pulumi SDK's own distribution) runs a
program against a stand-in resource monitor that, like an engine that has given up after a mandatory
violation, never answers a registration; the test then sends SIGINT to the process group as the CLI does.
Without components.shutdown the program prints a KeyboardInterrupt traceback (the upstream behaviour,
reproduced); with it the program leaves silently, by the signal. Silently includes gRPC's own logging: when
the stand-in monitor stops, the program's channel gets a GOAWAY, and a program still alive then prints gRPC's
``chttp2_transport.cc … Got goaway [2] … Cancelling all calls``. A Python-level handler lost that race about
once in twenty runs on a loaded machine; SIGINT's default action ends every thread in the kill itself, so
the outcome no longer depends on timing (measured under load: docs/engine.md, "When the engine stops a program").
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent import futures
from pathlib import Path
from typing import Any

import grpc
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import resource_pb2, resource_pb2_grpc

from mockruntime.run import run_program
from tests.conftest import PROJECT
from tests.engine.fakes import exec_shim

SHIM = exec_shim()
# Runs wherever the shim is; where it is not, neither is a language host, and the banner says so.
pytestmark = pytest.mark.engine(needs=() if SHIM else ("pulumi-language-python",))


class _StalledMonitor(resource_pb2_grpc.ResourceMonitorServicer):  # type: ignore[misc]
    """Answers the stack's registration, then never answers another, as an engine that stopped."""

    def __init__(self) -> None:
        self.stalled = threading.Event()
        self.release = threading.Event()

    def SupportsFeature(self, request: Any, context: Any) -> Any:
        return resource_pb2.SupportsFeatureResponse(hasSupport=False)

    def RegisterResource(self, request: Any, context: Any) -> Any:
        if request.type == "pulumi:pulumi:Stack":
            return resource_pb2.RegisterResourceResponse(
                urn=f"urn:pulumi:dev::nodefleet::pulumi:pulumi:Stack::{request.name}",
                object=struct_pb2.Struct(),
            )
        self.stalled.set()
        self.release.wait(60)
        context.abort(grpc.StatusCode.UNAVAILABLE, "engine stopped")

    def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    def GetDeploymentInfo(self, request: Any, context: Any) -> Any:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not an engine")


@pytest.fixture
def monitor() -> Iterator[tuple[str, _StalledMonitor]]:
    servicer = _StalledMonitor()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(servicer, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    servicer.stop = lambda: (servicer.release.set(), server.stop(0))  # type: ignore[attr-defined]
    yield f"127.0.0.1:{port}", servicer
    servicer.stop()  # type: ignore[attr-defined]


def _run_and_interrupt(
    tmp_path: Path, address: str, monitor: _StalledMonitor, quiet: bool
) -> tuple[int, str]:
    program = tmp_path / "program"
    program.mkdir()
    (program / "__main__.py").write_text(
        "import pulumi\n"
        + (
            "from components.shutdown import exit_quietly_when_the_engine_stops_us\n"
            "exit_quietly_when_the_engine_stops_us()\n"
            if quiet
            else ""
        )
        + 'pulumi.CustomResource("nodefleet:test:Blocked", "blocked", {})\n'
    )
    assert SHIM is not None
    proc = subprocess.Popen(
        [
            sys.executable,
            # SIGINT at its default first: a test run started in the background (`make test &`) hands its
            # children SIGINT ignored, and the Python in the shim would keep ignoring it.
            "-c",
            "import os, signal, sys; signal.signal(signal.SIGINT, signal.SIG_DFL); "
            "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])",
            str(SHIM),
            "--monitor",
            address,
            "--project",
            "nodefleet",
            "--stack",
            "dev",
            "--parallel",
            "4",
            "--dry_run",
            "true",
            "--pwd",
            str(program),
            ".",
        ],
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,  # its own process group, as the CLI gives the language host
    )
    try:
        assert monitor.stalled.wait(60), "the program never reached the stalled registration"
        # The CLI closes the language host with cmdutil.InterruptChildren, kill(-pgid, SIGINT), and the
        # engine's resource monitor goes away (in this order here, so the outcome does not hang on a race).
        os.killpg(proc.pid, signal.SIGINT)
        monitor.stop()  # type: ignore[attr-defined]
        _, stderr = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
    return proc.returncode, stderr


def test_without_the_handler_the_engines_interrupt_prints_a_traceback(
    tmp_path: Path, monitor: tuple[str, _StalledMonitor]
) -> None:
    code, stderr = _run_and_interrupt(tmp_path, *monitor, quiet=False)
    assert "KeyboardInterrupt" in stderr and "Traceback" in stderr, stderr
    assert code != 0


def test_the_program_leaves_silently_by_the_signal(
    tmp_path: Path, monitor: tuple[str, _StalledMonitor]
) -> None:
    code, stderr = _run_and_interrupt(tmp_path, *monitor, quiet=True)
    assert stderr.strip() == "", stderr
    assert code == -signal.SIGINT


def test_the_program_installs_it_first_and_the_mock_runtime_does_not() -> None:
    main = (PROJECT / "__main__.py").read_text()
    body = [line for line in main.splitlines() if line and not line.startswith(("#", '"', "from", "import"))]
    assert body[0] == "exit_quietly_when_the_engine_stops_us()"
    before = signal.getsignal(signal.SIGINT)  # default_int_handler, or SIG_IGN in a run started with `&`
    run_program("dev")
    assert signal.getsignal(signal.SIGINT) is before
