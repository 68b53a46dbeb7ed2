"""The Automation API wiring `preview`/`up` use, on the real CLI built by engine/bootstrap."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cli.engine import engine_env, open_stack
from engine.status import read_status
from tests.conftest import PROJECT

pytestmark = pytest.mark.engine

#: The CLI engine/bootstrap chose: one on PATH, or one it built into the machine's cache.
CLI = read_status().cli or PROJECT / ".engine" / "bin" / "pulumi"


@pytest.fixture
def scratch_project(tmp_path: Path) -> Path:
    """Pulumi.yaml, the stack files and an .engine/ whose env points at a scratch backend and home."""
    assert CLI.exists(), f"run `make setup` first: {CLI} is missing"
    shutil.copy(PROJECT / "Pulumi.yaml", tmp_path)
    shutil.copytree(PROJECT / "stacks", tmp_path / "stacks")
    engine = tmp_path / ".engine"
    engine.mkdir()
    (engine / "bin").symlink_to(CLI.parent)
    (engine / "env").write_text(
        f'export PATH="{CLI.parent}:$PATH"\n'
        f'export PULUMI_HOME="{tmp_path / "home"}"\n'
        "export PULUMI_SKIP_UPDATE_CHECK=true\n"
        "export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true\n"
        f'export PULUMI_BACKEND_URL="file://{tmp_path / "state"}"\n'
        "export PULUMI_CONFIG_PASSPHRASE=nodefleet-local\n"
    )
    (tmp_path / "state").mkdir()
    return tmp_path


def test_open_stack_uses_the_engine_cli_backend_and_stack_files(scratch_project: Path) -> None:
    env = engine_env(scratch_project)
    assert env["PULUMI_BACKEND_URL"] == f"file://{scratch_project / 'state'}"
    stack = open_stack("dev", scratch_project)
    assert stack.name == "dev"
    assert stack.workspace.pulumi_command.command.endswith(".engine/bin/pulumi")
    assert [s.name for s in stack.workspace.list_stacks()] == ["dev"]
    assert (scratch_project / "state" / ".pulumi" / "stacks" / "nodefleet" / "dev.json").exists()
    # The structured fleet config of the committed stack file is what the CLI reads for this stack.
    fleet = stack.get_config("nodefleet:fleet")
    assert '"infraId":"dev-7xk2p"' in fleet.value.replace(" ", "")
