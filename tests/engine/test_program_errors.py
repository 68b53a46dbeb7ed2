"""What a user sees when the program stops on its own error under the engine: the error, once.

The SDK's real exec shim (``pulumi-language-python-exec`` from the Pulumi SDK's own module) runs the
project's ``__main__.py`` with an invalid stack configuration against a stand-in resource monitor and a
stand-in engine that records every log call, as the Python language host starts it. The program reports
the error itself and exits with 32, the exit code the language host turns into ``RunResponse{bail: true}``
(so the engine adds no "an unhandled error occurred" line). A bare ``pulumi.RunError`` (the upstream path,
reproduced) leaves the process with exit code 1, which the language host reports as "program exited with
non-zero exit code: 1" and the engine prints as a second error. The language host and the engine
themselves cannot run here; their side is read from their sources (docs/engine.md, "When the engine
stops a program").
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from concurrent import futures
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
import pulumi
import pytest
from google.protobuf import empty_pb2, struct_pb2
from pulumi.runtime.proto import engine_pb2, engine_pb2_grpc, resource_pb2, resource_pb2_grpc

from components.shutdown import ERROR_ALREADY_REPORTED, errors_reported_once
from mockruntime.run import run_program, stack_fleet
from tests.conftest import PROJECT
from tests.engine.fakes import exec_shim

SHIM = exec_shim()
pytestmark = pytest.mark.engine(needs=() if SHIM else ("pulumi-language-python",))


class _Monitor(resource_pb2_grpc.ResourceMonitorServicer):  # type: ignore[misc]
    """Answers the root stack's registration, as the engine's resource monitor does before anything else."""

    def SupportsFeature(self, request: Any, context: Any) -> Any:
        return resource_pb2.SupportsFeatureResponse(hasSupport=False)

    def RegisterResource(self, request: Any, context: Any) -> Any:
        return resource_pb2.RegisterResourceResponse(
            urn=f"urn:pulumi:qa::nodefleet::{request.type}::{request.name}", object=struct_pb2.Struct()
        )

    def RegisterResourceOutputs(self, request: Any, context: Any) -> Any:
        return empty_pb2.Empty()

    def GetDeploymentInfo(self, request: Any, context: Any) -> Any:
        context.abort(grpc.StatusCode.UNIMPLEMENTED, "not an engine")


@dataclass
class _Engine(engine_pb2_grpc.EngineServicer):  # type: ignore[misc]
    """Records the program's log calls, the way the engine turns them into diagnostics."""

    errors: list[str] = field(default_factory=list)

    def Log(self, request: Any, context: Any) -> Any:
        if request.severity == engine_pb2.ERROR:
            self.errors.append(request.message)
        return empty_pb2.Empty()

    def GetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.GetRootResourceResponse(urn="")

    def SetRootResource(self, request: Any, context: Any) -> Any:
        return engine_pb2.SetRootResourceResponse()


@pytest.fixture
def engine() -> Iterator[tuple[str, str, _Engine]]:
    recorder = _Engine()
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
    resource_pb2_grpc.add_ResourceMonitorServicer_to_server(_Monitor(), server)
    engine_pb2_grpc.add_EngineServicer_to_server(recorder, server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    yield f"127.0.0.1:{port}", f"127.0.0.1:{port}", recorder
    server.stop(0)


def _run_shim(
    program: Path, monitor: str, engine: str, config: dict[str, Any]
) -> subprocess.CompletedProcess[str]:
    assert SHIM is not None
    return subprocess.run(
        [
            sys.executable,
            str(SHIM),
            *("--monitor", monitor, "--engine", engine, "--project", "nodefleet", "--stack", "qa"),
            *("--parallel", "4", "--dry_run", "true", "--pwd", str(program), "."),
        ],
        env={
            **os.environ,
            "PYTHONPATH": str(PROJECT),
            "PULUMI_CONFIG": json.dumps(
                {k: v if isinstance(v, str) else json.dumps(v) for k, v in config.items()}
            ),
        },
        capture_output=True,
        text=True,
        timeout=120,
    )


def _invalid_config() -> dict[str, Any]:
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["machineSets"][0]["instanceTyp"] = fleet["clusters"][0]["machineSets"][0].pop(
        "instanceType"
    )
    return {"nodefleet:fleet": fleet}


def test_invalid_configuration_is_reported_once_and_the_run_bails(
    engine: tuple[str, str, _Engine],
) -> None:
    monitor, address, recorder = engine
    done = _run_shim(PROJECT, monitor, address, _invalid_config())
    assert done.returncode == ERROR_ALREADY_REPORTED, done.stderr
    (error,) = recorder.errors
    assert "stacks/Pulumi.qa.yaml" in error and "instanceTyp" in error and "instanceType" in error, error
    assert "Traceback" not in done.stderr + done.stdout, done.stderr


def test_a_bare_run_error_exits_1_which_the_engine_reports_a_second_time(
    tmp_path: Path, engine: tuple[str, str, _Engine]
) -> None:
    """The upstream path the helper replaces: the shim logs the message and exits 1."""
    monitor, address, recorder = engine
    (tmp_path / "__main__.py").write_text("import pulumi\nraise pulumi.RunError('bad input')\n")
    done = _run_shim(tmp_path, monitor, address, {})
    assert done.returncode == 1
    assert recorder.errors == ["bad input"]


def test_under_the_mock_runtime_the_error_is_raised_unchanged() -> None:
    fleet = _invalid_config()["nodefleet:fleet"]
    with pytest.raises(pulumi.RunError, match="instanceTyp"):
        run_program("dev", {"nodefleet:fleet": fleet})
    with pytest.raises(pulumi.RunError, match="plain"), errors_reported_once():
        raise pulumi.RunError("plain")
