"""The real Pulumi CLI engine/bootstrap chose (a user's own, at least the SDK pin, or one built from the Go
module proxy), with the project's offline defaults.

Every CLI call runs in a network namespace with no network (``unshare -n``), so passing means the command
needed nothing from the network: no update check, no plugin download, no cloud backend.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path

import pytest

from engine.semver import at_least
from engine.status import CORE, PARTS, read_status
from tests.conftest import PROJECT, copy_project

pytestmark = pytest.mark.engine

ENGINE = PROJECT / ".engine"
CLI = read_status().cli or ENGINE / "bin" / "pulumi"


def _pinned(package: str) -> str:
    for line in (PROJECT / "requirements.txt").read_text().splitlines():
        if line.startswith(f"{package}=="):
            return line.split("==", 1)[1].strip()
    raise AssertionError(f"{package} is not pinned in requirements.txt")


def _offline_prefix() -> list[str]:
    for prefix in (["unshare", "-n"], ["unshare", "-rn"]):
        if shutil.which(prefix[0]) and subprocess.run([*prefix, "true"], capture_output=True).returncode == 0:
            return prefix
    raise AssertionError("cannot create a network namespace (unshare -n / -rn); the offline check needs one")


@pytest.fixture(scope="module")
def project_copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Pulumi.yaml and the stack files in a scratch folder, so `stack init` never edits the checkout."""
    assert CLI.exists(), f"run `make setup` first: {CLI} is missing"
    root = tmp_path_factory.mktemp("project")
    shutil.copy(PROJECT / "Pulumi.yaml", root)
    shutil.copytree(PROJECT / "stacks", root / "stacks")
    (root / "state").mkdir()
    return root


def _pulumi(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": f"{CLI.parent}:/usr/bin:/bin",
        "HOME": str(root),
        "PULUMI_HOME": str(root / "home"),
        "PULUMI_SKIP_UPDATE_CHECK": "true",
        "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION": "true",
        "PULUMI_BACKEND_URL": f"file://{root / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "nodefleet-local",
    }
    return subprocess.run(
        [*_offline_prefix(), str(CLI), *args, "--non-interactive"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_is_at_least_the_pinned_sdk() -> None:
    out = subprocess.run([str(CLI), "version"], capture_output=True, text=True, check=True).stdout.strip()
    assert at_least(out, _pinned("pulumi")), out
    assert out == read_status().cli_version
    assert version("pulumi") == _pinned("pulumi")


def test_local_backend_and_passphrase_work_offline(project_copy: Path) -> None:
    created = _pulumi(project_copy, "stack", "init", "dev", "--secrets-provider", "passphrase")
    assert created.returncode == 0, created.stderr
    listed = _pulumi(project_copy, "stack", "ls", "--json")
    assert [s["name"] for s in json.loads(listed.stdout)] == ["dev"]


def test_cli_reads_the_structured_stack_config(project_copy: Path) -> None:
    _pulumi(project_copy, "stack", "init", "rhel10", "--secrets-provider", "passphrase")
    got = _pulumi(
        project_copy,
        "config",
        "get",
        "--path",
        "nodefleet:fleet.clusters[0].pools[0].osImageStream",
        "--stack",
        "rhel10",
    )
    assert got.returncode == 0, got.stderr
    assert got.stdout.strip() == "rhel-10"


def test_secrets_round_trip_with_the_local_passphrase(project_copy: Path) -> None:
    _pulumi(project_copy, "stack", "init", "secrets", "--secrets-provider", "passphrase")
    assert (
        _pulumi(project_copy, "config", "set", "--secret", "token", "s3cr3t", "--stack", "secrets").returncode
        == 0
    )
    stack_file = (project_copy / "stacks" / "Pulumi.secrets.yaml").read_text()
    assert "s3cr3t" not in stack_file and "secure:" in stack_file
    shown = _pulumi(project_copy, "config", "get", "token", "--stack", "secrets")
    assert shown.stdout.strip() == "s3cr3t"


def test_bootstrap_reports_every_engine_part() -> None:
    recorded = read_status()
    status = recorded.parts
    assert list(status) == list(PARTS)
    # A remembered failed acquisition belongs to a missing part, with the version that was tried.
    for part, attempt in recorded.attempts.items():
        assert status[part].startswith("missing: ") and attempt.startswith("v"), (part, attempt)
    assert status["pulumi"] == f"ok {read_status().cli_version} at {CLI}"
    for part, state in status.items():
        assert state.startswith(("ok", "missing: ")), (part, state)
    for plugin in ("kubernetes", "aws"):
        if status[plugin].startswith("ok"):
            assert status[plugin].startswith(f"ok v{_pinned('pulumi-' + plugin)} "), status[plugin]


def test_offline_defaults_are_exported_and_the_users_pulumi_setup_is_not() -> None:
    env = (ENGINE / "env").read_text()
    assert f'export PULUMI_CLI="{CLI}"' in env
    assert 'PULUMI_SKIP_UPDATE_CHECK="${PULUMI_SKIP_UPDATE_CHECK:-true}"' in env
    assert (
        'PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION="${PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION:-true}"'
        in env
    )
    # The user's Pulumi home (their plugins), backend and passphrase stay theirs; engine/run decides per stack.
    for name in ("PULUMI_HOME", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE"):
        assert name not in env


def test_engine_run_explains_a_missing_part_instead_of_downloading(tmp_path: Path) -> None:
    """engine/run on the example stack `dev`, in a copy of the project, on a file backend this test makes with
    the `dev` stack in it: neither the user's backend (they may be logged in to one without a `dev` stack)
    nor their stacks are needed or touched."""
    missing = read_status().missing(CORE)
    copy = copy_project(tmp_path / "project")
    shutil.copytree(PROJECT / "stacks", copy / "stacks")
    shutil.copytree(PROJECT / ".engine", copy / ".engine", ignore=shutil.ignore_patterns("build"))
    (copy / "venv").symlink_to((PROJECT / "venv").resolve())
    (tmp_path / "state").mkdir()
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "nodefleet-local",
        "PULUMI_SKIP_UPDATE_CHECK": "true",
    }
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    if not missing:
        made = subprocess.run(
            [str(CLI), "stack", "init", "dev", "--secrets-provider", "passphrase", "--non-interactive"],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
        )
        assert made.returncode == 0, made.stderr
    result = subprocess.run(
        [str(copy / "engine" / "run"), "dev", "preview", "--policy-pack", "policies"],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )
    if missing:
        assert result.returncode == 3
        assert "the Pulumi engine on this machine is incomplete" in result.stderr
        assert "make check STACK=dev" in result.stderr
    else:
        assert result.returncode == 0, result.stdout + result.stderr
        assert "boot-image-ownership" not in result.stdout
        assert f"stack 'dev' on PULUMI_BACKEND_URL (file://{tmp_path / 'state'})" in result.stderr


def test_unknown_stack_is_a_clear_error() -> None:
    result = subprocess.run(
        [str(PROJECT / "engine" / "run"), "prod", "preview"], capture_output=True, text=True
    )
    assert result.returncode == 2
    assert "stack 'prod' has no file stacks/Pulumi.prod.yaml" in result.stderr and "dev" in result.stderr


@pytest.mark.engine(needs=("pulumi-language-python", "kubernetes"))
def test_nodefleet_preview_runs_a_stack_without_aws_resources_whatever_the_aws_provider(
    tmp_path: Path,
) -> None:
    """`python -m nodefleet preview` asks only for the parts the stack needs: `dev` declares no AWS resource, so
    it previews on the engine whether or not the AWS provider is there, and gives check's verdict."""
    root = copy_project(tmp_path / "project")
    shutil.copytree(PROJECT / "stacks", root / "stacks")
    (root / "venv").symlink_to(PROJECT / "venv")
    shutil.copytree(ENGINE, root / ".engine")
    (tmp_path / "state").mkdir()
    env = {
        **os.environ,
        "PULUMI_BACKEND_URL": f"file://{tmp_path / 'state'}",
        "PULUMI_CONFIG_PASSPHRASE": "nodefleet-local",
    }
    done = subprocess.run(
        [str(PROJECT / "venv" / "bin" / "python"), "-m", "nodefleet", "preview", "--stack", "dev", "--json"],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    report = json.loads(done.stdout)
    assert report["engine"] == "pulumi" and report["violations"] == []
    assert report["changes"]["create"] >= 8
    if read_status().missing(("aws",)):
        # The stack that needs it is still refused, naming the part, exit 3.
        karpenter = subprocess.run(
            [str(PROJECT / "venv" / "bin" / "python"), "-m", "nodefleet", "preview", "--stack", "karpenter"],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert karpenter.returncode == 3 and "aws: missing" in karpenter.stderr, karpenter.stderr
