"""`python -m nodefleet fleet|upgrade|preview|forecast`: exit codes, what they print, what they write."""

from __future__ import annotations

import json
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
import yaml

from cli.engine import engine_status, policy_violations
from cli.upgrade import completed_version
from tests.conftest import PROJECT, nodefleet

BAD = PROJECT / "tests" / "stacks"


def _nodefleet(*args: str, cwd: Path = PROJECT) -> subprocess.CompletedProcess[str]:
    return nodefleet(*args, cwd=cwd)


# --- fleet ---------------------------------------------------------------------------------------------


@pytest.fixture
def fleet_dir(tmp_path: Path) -> Path:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT / "stacks" / "Pulumi.dev.yaml", stacks)
    shutil.copy(BAD / "Pulumi.stale-boot-images.yaml", stacks)
    typo = (PROJECT / "stacks" / "Pulumi.rhel10.yaml").read_text().replace("replicas:", "replicaz:", 1)
    (stacks / "Pulumi.typo.yaml").write_text(typo)
    return stacks


def test_fleet_runs_every_stack_and_exits_with_the_worst(fleet_dir: Path) -> None:
    result = _nodefleet("fleet", "check", "--stacks-dir", str(fleet_dir), "--parallel", "2", "--json")
    assert result.returncode == 2, result.stderr
    summary = json.loads(result.stdout)
    by = {s["stack"]: s for s in summary["stacks"]}
    assert {name: s["exit"] for name, s in by.items()} == {"dev": 0, "stale-boot-images": 1, "typo": 2}
    assert by["dev"]["summary"] == "8 resources, 0 mandatory, 0 advisory"  # unaffected by the others
    assert by["stale-boot-images"]["summary"] == "4 resources, 1 mandatory, 0 advisory"
    assert "unknown key 'replicaz'; did you mean 'replicas'?" in by["typo"]["error"]
    assert summary["exit"] == 2 and summary["parallel"] == 2
    # One progress line per stack on stderr, as each finishes.
    progress = [line for line in result.stderr.splitlines() if line.startswith("[")]
    assert len(progress) == 3 and all("/3] " in line for line in progress)


def test_fleet_table_and_selection(fleet_dir: Path) -> None:
    result = _nodefleet("fleet", "check", "--stacks-dir", str(fleet_dir), "--stacks", "dev,stale-boot-images")
    assert result.returncode == 1
    assert "2 stacks in" in result.stdout and "1 clean, 1 with mandatory violations" in result.stdout
    unknown = _nodefleet("fleet", "check", "--stacks-dir", str(fleet_dir), "--stacks", "dev,prod")
    assert unknown.returncode == 2
    assert "--stacks: no stack file for prod" in unknown.stderr


def test_fleet_render_writes_each_stack_under_its_name(tmp_path: Path) -> None:
    result = _nodefleet("fleet", "render", "--stacks", "dev,hosted", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "hosted" / "prod-east-hosted" / "1-manifest").is_dir()
    assert (tmp_path / "dev" / "dev" / "1-manifest").is_dir()


# --- forecast ------------------------------------------------------------------------------------------


def test_forecast_command_against_a_previous_render(tmp_path: Path) -> None:
    first = _nodefleet("forecast", "--stack", "hosted", "--rendered", str(tmp_path / "none"), "--json")
    assert first.returncode == 0
    assert json.loads(first.stdout)["before"] is None
    assert _nodefleet("render", "--stack", "hosted", "--out", str(tmp_path)).returncode == 0
    stack = tmp_path / "Pulumi.hosted.yaml"
    stack.write_text(
        (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text().replace("release: 4.22.3", "release: 4.22.4")
    )
    result = _nodefleet("forecast", "--config-file", str(stack), "--rendered", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert "REPLACES NODES         prod-east-hosted/OpenshiftEC2NodeClass general" in result.stdout
    assert "3 of 5 node sources replace or reboot nodes" in result.stdout
    bad = _nodefleet("forecast", "--stack", "hosted", "--state", str(tmp_path / "missing.json"))
    assert bad.returncode == 2 and "pulumi stack export --file" in bad.stderr


# --- upgrade -------------------------------------------------------------------------------------------


@pytest.fixture
def hosted_copy(tmp_path: Path) -> Path:
    path = tmp_path / "Pulumi.hosted.yaml"
    shutil.copy(PROJECT / "stacks" / "Pulumi.hosted.yaml", path)
    return path


def _diff(before: str, after: str) -> list[str]:
    import difflib

    return [
        line
        for line in difflib.unified_diff(before.splitlines(), after.splitlines(), lineterm="", n=0)
        if line[:1] in "+-" and not line.startswith(("+++", "---"))
    ]


def test_upgrade_stages_the_control_plane_first(hosted_copy: Path) -> None:
    original = hosted_copy.read_text()
    step1 = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4")
    assert step1.returncode == 0, step1.stderr
    held = "  # nodefleet upgrade: held at 4.22.3 until the control plane completes 4.22.4"
    # Only the release and the three holds change; every comment and the layout survive.
    assert _diff(original, hosted_copy.read_text()) == [
        "-        release: 4.22.3",
        "+        release: 4.22.4",
        f"+              version: 4.22.3{held}",
        f"+              version: 4.22.3{held}",
        f"+            release: 4.22.3{held}",
    ]
    assert "0 of 5 node sources replace or reboot nodes" in step1.stdout  # nothing rolls in step 1
    # Render mode: nodefleet cannot see the control plane; step 2 waits for the user's word.
    waiting = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4")
    assert waiting.returncode == 1
    assert "--control-plane-confirmed" in waiting.stderr and "4.22.4 Completed" in waiting.stderr
    step2 = _nodefleet(
        "upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4", "--control-plane-confirmed"
    )
    assert step2.returncode == 0, step2.stderr
    assert _diff(original, hosted_copy.read_text()) == [
        "-        release: 4.22.3",
        "+        release: 4.22.4",
    ]
    assert "3 of 5 node sources replace or reboot nodes" in step2.stdout
    done = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4")
    assert done.returncode == 0 and "nothing to do" in done.stdout


def test_upgrade_leaves_nodes_pinned_by_the_user_alone(hosted_copy: Path) -> None:
    text = hosted_copy.read_text().replace(
        "            - name: general\n", "            - name: general\n              version: 4.21.9\n"
    )
    hosted_copy.write_text(text)
    result = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4", "--dry-run")
    assert result.returncode == 0, result.stderr
    assert "node class general: pinned at 4.21.9 by you: left alone" in result.stdout
    assert hosted_copy.read_text() == text  # --dry-run writes nothing


@pytest.mark.parametrize(
    ("release", "message"),
    [
        ("4.22.2", "older than the cluster's 4.22.3"),
        (
            "4.23",
            "--release '4.23': not a release; use x.y.z, as in 4.22.4 (numbers without leading zeros, no "
            "suffix such as -multi or -rc.1)",
        ),
        ("4.22.4-multi", "--release '4.22.4-multi': not a release; use x.y.z"),
        ("4.22.04", "--release '4.22.04': not a release; use x.y.z"),
        ("banana", "--release 'banana': not a release"),
    ],
)
def test_upgrade_refuses_bad_releases(hosted_copy: Path, release: str, message: str) -> None:
    result = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", release)
    assert result.returncode == 2
    assert message in result.stderr


def test_completed_version_reads_history_like_hypershift() -> None:
    upgrading = {"status": {"version": {"desired": {"version": "4.22.4"}, "history": [
        {"version": "4.22.4", "state": "Partial"}, {"version": "4.22.3", "state": "Completed"}]}}}  # fmt: skip
    assert completed_version(upgrading) == (
        "4.22.3",
        "desired 4.22.4; history: 4.22.4 Partial, 4.22.3 Completed",
    )
    installing = {
        "status": {
            "version": {
                "desired": {"version": "4.22.3"},
                "history": [{"version": "4.22.3", "state": "Partial"}],
            }
        }
    }
    assert completed_version(installing)[0] is None
    assert completed_version({})[0] is None


class _HostedClusterAPI(BaseHTTPRequestHandler):
    """Serves one HostedCluster the way the Kubernetes API does, for the real client to read."""

    history: ClassVar[list[dict[str, str]]] = []
    requests: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        _HostedClusterAPI.requests.append(f"{self.path} {self.headers.get('Authorization')}")
        if self.path != "/apis/hypershift.openshift.io/v1beta1/namespaces/clusters/hostedclusters/prod-east":
            self.send_response(404)
            self.end_headers()
            return
        body = json.dumps({"apiVersion": "hypershift.openshift.io/v1beta1", "kind": "HostedCluster",
                           "metadata": {"name": "prod-east", "namespace": "clusters"},
                           "status": {"version": {"desired": {"version": "4.22.4"}, "history": self.history}}})  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@contextmanager
def _serving(handler: type[BaseHTTPRequestHandler], kubeconfig: Path) -> Iterator[Path]:
    """``handler`` served on a free port, and a kubeconfig at ``kubeconfig`` (a bearer token) that reaches it."""
    server = HTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "mgmt",
        "clusters": [{"name": "mgmt", "cluster": {"server": f"http://127.0.0.1:{server.server_port}"}}],
        "users": [{"name": "admin", "user": {"token": "sha256~test"}}],
        "contexts": [{"name": "mgmt", "context": {"cluster": "mgmt", "user": "admin"}}],
    }))  # fmt: skip
    try:
        yield kubeconfig
    finally:
        server.shutdown()


@pytest.fixture
def management_api(tmp_path: Path) -> Iterator[Path]:
    with _serving(_HostedClusterAPI, tmp_path / "management.kubeconfig") as kubeconfig:
        yield kubeconfig


def test_upgrade_in_apply_mode_waits_for_the_control_plane(hosted_copy: Path, management_api: Path) -> None:
    text = (
        hosted_copy.read_text()
        .replace("      mode: render\n", f"      mode: apply\n      kubeconfig: {management_api}\n")
        .replace("        sshKey:", f"        hostedKubeconfig: {management_api}\n        sshKey:")
    )
    hosted_copy.write_text(text)
    assert _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4").returncode == 0
    _HostedClusterAPI.history = [
        {"version": "4.22.4", "state": "Partial"},
        {"version": "4.22.3", "state": "Completed"},
    ]
    waiting = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4")
    assert waiting.returncode == 1
    assert (
        "has not completed 4.22.4 yet (desired 4.22.4; history: 4.22.4 Partial, 4.22.3 Completed)"
        in waiting.stderr
    )
    assert "held" in hosted_copy.read_text()
    _HostedClusterAPI.history = [
        {"version": "4.22.4", "state": "Completed"},
        {"version": "4.22.3", "state": "Completed"},
    ]
    done = _nodefleet("upgrade", "--config-file", str(hosted_copy), "--release", "4.22.4")
    assert done.returncode == 0, done.stderr
    assert "reports 4.22.4 Completed" in done.stdout
    assert "held" not in hosted_copy.read_text()
    assert all(r.endswith("Bearer sha256~test") for r in _HostedClusterAPI.requests)


class _SupportedVersionsAPI(BaseHTTPRequestHandler):
    """Serves the HyperShift operator's `supported-versions` ConfigMap as the operator writes it
    (openshift/hypershift docs/content/reference/versioning-support.md), and nothing else."""

    versions: ClassVar[list[str]] = ["4.22", "4.21", "4.20"]

    def do_GET(self) -> None:
        if self.path != "/api/v1/namespaces/hypershift/configmaps/supported-versions":
            self.send_response(404)
            self.end_headers()
            return
        body = {"apiVersion": "v1", "kind": "ConfigMap",
                "metadata": {"name": "supported-versions", "namespace": "hypershift",
                             "labels": {"hypershift.openshift.io/supported-versions": "true"}},
                "data": {"server-version": "2f6cfe21a0861dea3130f3bed0d3ae5553b8c28b",
                         "supported-versions": json.dumps({"versions": self.versions})}}  # fmt: skip
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(json.dumps(body).encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def operator_api(tmp_path: Path) -> Iterator[Path]:
    with _serving(_SupportedVersionsAPI, tmp_path / "operator.kubeconfig") as kubeconfig:
        yield kubeconfig


def _apply_hosted(stacks: Path, kubeconfig: Path) -> None:
    stacks.mkdir()
    (stacks / "Pulumi.hosted.yaml").write_text(
        (PROJECT / "stacks" / "Pulumi.hosted.yaml")
        .read_text()
        .replace("      mode: render\n", f"      mode: apply\n      kubeconfig: {kubeconfig}\n")
        .replace("        sshKey:", f"        hostedKubeconfig: {kubeconfig}\n        sshKey:")
    )


def test_fleet_upgrade_in_apply_mode_leaves_autonode_nodes_to_the_user(
    tmp_path: Path, operator_api: Path
) -> None:
    """The gate after the nodes reads classic NodePools on the management cluster; an AutoNode cluster's
    node classes live in the hosted cluster, so that gate waits for --confirmed (or a health command), saying
    why, and reads nothing (the management cluster here serves only the operator's supported versions)."""
    stacks = tmp_path / "stacks"
    _apply_hosted(stacks, operator_api)
    args = ("fleet", "upgrade", "--stacks-dir", str(stacks), "--release", "4.22.4")
    first = _nodefleet(*args, "--confirmed")  # passes the control planes' gate only
    assert first.returncode == 1, first.stdout + first.stderr
    assert "gate after wave 1/1 main control-plane: passed (confirmed with --confirmed)" in first.stderr
    assert first.stdout.splitlines()[0] == (
        "nodefleet fleet upgrade to 4.22.4: stopped at the gate after wave 1/1 main nodes: waiting until wave "
        "main (hosted) is healthy on 4.22.4 (nodefleet cannot read hosted/prod-east: AutoNode node classes live in "
        "the hosted cluster, and a standalone cluster's version in the cluster itself): run the same command again "
        "with --confirmed once it has (or give --health-command)"
    )
    assert "nodefleet upgrade: held" not in (stacks / "Pulumi.hosted.yaml").read_text()
    done = _nodefleet(*args, "--confirmed")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "every wave is at 4.22.4" in done.stdout


def test_fleet_upgrade_in_apply_mode_refuses_a_release_the_operator_does_not_run(
    tmp_path: Path, operator_api: Path
) -> None:
    """Read from the operator's supported-versions ConfigMap, before anything is written; a management cluster
    that does not answer stops the run there too (exit 1), naming what could not be read."""
    stacks = tmp_path / "stacks"
    _apply_hosted(stacks, operator_api)
    before = (stacks / "Pulumi.hosted.yaml").read_bytes()
    refused = _nodefleet("fleet", "upgrade", "--stacks-dir", str(stacks), "--release", "5.0.0", "--dry-run")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines() == [
        "error: --release 5.0.0: the HyperShift operator of 1 management cluster does not run 5.0 (management runs "
        "4.22, 4.21, 4.20 (its ConfigMap hypershift/supported-versions; clusters hosted/prod-east)): upgrade the "
        "HyperShift operator there first, or leave those stacks out with --stacks"
    ]
    nowhere = tmp_path / "nowhere"
    _apply_hosted(nowhere, tmp_path / "missing.kubeconfig")
    missing = _nodefleet("fleet", "upgrade", "--stacks-dir", str(nowhere), "--release", "4.22.4")
    assert missing.returncode == 2
    assert missing.stderr == (
        f"error: management cluster management: kubeconfig {tmp_path / 'missing.kubeconfig'}: no such file; check the "
        "path of the kubeconfig\n"
    )
    assert (stacks / "Pulumi.hosted.yaml").read_bytes() == before
    assert (
        not (stacks / "nodefleet-upgrade.json").exists() and not (nowhere / "nodefleet-upgrade.json").exists()
    )


# --- preview / up --------------------------------------------------------------------------------------


def test_engine_status_names_the_missing_parts(tmp_path: Path) -> None:
    assert not engine_status(tmp_path).complete
    (tmp_path / ".engine").mkdir()
    (tmp_path / ".engine" / "env").write_text("export X=1\n")
    (tmp_path / ".engine" / "status").write_text(
        "venv: ok\npulumi: ok v3.259.0\npulumi-language-python: missing: 403 Forbidden\nkubernetes: missing: x\n"
    )
    status = engine_status(tmp_path)
    assert not status.complete
    assert status.reason == "pulumi-language-python: missing; kubernetes: missing"
    (tmp_path / ".engine" / "status").write_text("venv: ok\npulumi: ok v3.259.0\n")
    assert engine_status(tmp_path).complete


def test_engine_status_names_each_missing_part_once(tmp_path: Path) -> None:
    """Two bootstraps that ran at once append the same lines twice; the report printed every part twice."""
    (tmp_path / ".engine").mkdir()
    (tmp_path / ".engine" / "env").write_text("export X=1\n")
    lines = "kubernetes: missing: download failed\naws: missing: download failed\n"
    (tmp_path / ".engine" / "status").write_text("venv: ok\n" + lines + lines)
    assert engine_status(tmp_path).reason == "kubernetes: missing; aws: missing"


def test_preview_refuses_on_an_incomplete_engine(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import argparse

    from cli import engine

    missing = engine.EngineStatus(False, ("pulumi-language-python: missing",))
    monkeypatch.setattr(engine, "engine_status", lambda project=engine.PROJECT, needs=None: missing)
    args = argparse.Namespace(operation="preview", stack="dev", json=False, policy_config=None)
    assert engine.run(args) == 3
    err = capsys.readouterr().err
    assert (
        "the Pulumi engine on this machine is incomplete" in err and "pulumi-language-python: missing" in err
    )
    assert "python -m nodefleet check --stack dev" in err


@pytest.mark.parametrize("operation", ["preview", "up"])
def test_an_invalid_stack_file_is_exit_2_before_the_engine_is_asked(
    operation: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A wrong stack file is wrong on every engine: on an incomplete one it was reported as the engine's
    exit 3, and the user fixed the engine first only to learn the file was wrong."""
    from cli import engine
    from cli.main import main

    missing = engine.EngineStatus(False, ("pulumi-language-python: missing",))
    monkeypatch.setattr(engine, "engine_status", lambda project=engine.PROJECT, needs=None: missing)
    stack = tmp_path / "Pulumi.typo.yaml"
    stack.write_text(
        (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text().replace("kind: hosted", "kind: Hosted")
    )
    assert main([operation, "--config-file", str(stack)]) == 2
    err = capsys.readouterr().err
    assert f"error: {stack}: nodefleet:fleet.clusters[0].kind: unknown cluster kind 'Hosted'" in err
    assert "engine" not in err and "Traceback" not in err
    assert main([operation, "--config-file", str(stack), "--json"]) == 2
    doc = json.loads(capsys.readouterr().out)
    assert (
        doc["error"] == "invalid-input" and doc["problems"][0]["field"] == "nodefleet:fleet.clusters[0].kind"
    )


def test_policy_results_come_from_the_engine_event_stream() -> None:
    from pulumi.automation.events import EngineEvent

    events = [
        EngineEvent.from_json({"sequence": 1, "timestamp": 1, "preludeEvent": {"config": {}}}),
        EngineEvent.from_json({"sequence": 2, "timestamp": 2, "policyEvent": {
            "resourceUrn": "urn:pulumi:dev::nodefleet::kubernetes:machine.openshift.io/v1beta1:MachineSet::w",
            "message": "Boot image RHCOS 410.84… is older than the floor", "color": "never",
            "policyName": "boot-image-skew", "policyPackName": "nodefleet", "policyPackVersion": "0.1.0",
            "policyPackVersionTag": "0.1.0", "enforcementLevel": "mandatory"}}),
    ]  # fmt: skip
    assert policy_violations(events) == [
        {
            "policy": "boot-image-skew",
            "level": "mandatory",
            "resource": "urn:pulumi:dev::nodefleet::kubernetes:machine.openshift.io/v1beta1:MachineSet::w",
            "message": "Boot image RHCOS 410.84… is older than the floor",
        }
    ]


def test_upgrade_of_a_stack_without_a_hosted_cluster_says_so() -> None:
    """'name the hosted cluster with --cluster (hosted clusters: none)', under the file's absolute path, asked
    a user with only standalone clusters for a --cluster no value could satisfy."""
    result = nodefleet("upgrade", "--stack", "dev", "--release", "5.0.1", "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: stacks/Pulumi.dev.yaml: nodefleet:fleet.clusters: no hosted cluster")
    assert "--cluster" not in line and "set its release in the stack file" in line


def test_upgrade_to_a_release_that_does_not_exist_names_the_option() -> None:
    """The release was written into the stack first, so the message blamed clusters[0].release of the file."""
    result = nodefleet("upgrade", "--stack", "hosted", "--release", "4.23.0", "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("error: --release 4.23.0: OCP 4.23.0 does not exist")
    assert "clusters[0].release" not in line


def test_a_stack_needs_the_aws_provider_only_when_it_declares_aws_resources(tmp_path: Path) -> None:
    from cli.engine import engine_parts
    from engine.status import CORE
    from mockruntime.run import read_stack_config

    def config(stack: str) -> dict[str, Any]:
        return read_stack_config(PROJECT / "stacks" / f"Pulumi.{stack}.yaml")

    assert engine_parts("dev", config("dev")) == CORE
    assert engine_parts("hosted", config("hosted")) == CORE
    assert engine_parts("karpenter", config("karpenter")) == (*CORE, "aws")
    # Only the parts asked for count: an engine without the AWS provider is complete for `dev`.
    (tmp_path / ".engine").mkdir()
    (tmp_path / ".engine" / "env").write_text("export X=1\n")
    (tmp_path / ".engine" / "status").write_text(
        "venv: ok\npulumi: ok v3.259.0\naws: missing: not buildable\n"
    )
    assert engine_status(tmp_path, needs=CORE).complete
    assert engine_status(tmp_path, needs=(*CORE, "aws")).reason == "aws: missing"
