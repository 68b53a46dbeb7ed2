"""engine/run's choice of backend and secrets: the project's local backend and passphrase for its example
stacks only, the team's backend (PULUMI_BACKEND_URL, `pulumi login`) and secrets provider otherwise.
Stand-in `pulumi` records what it was run with (tests/engine/fakes.py)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.engine.fakes import Machine, make_machine
from tests.shipped import SHIPPED_STACKS, shipped_stack_files


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    m = make_machine(tmp_path)
    cli = m.pulumi_on_path("v3.274.0", bundled_host=True)
    engine = m.project / ".engine"
    engine.mkdir()
    (engine / "status").write_text(
        f"venv: ok\npulumi: ok v3.274.0 at {cli}\npulumi-language-python: ok beside the CLI\n"
        "kubernetes: ok v4.34.0\naws: ok v7.51.1\n"
    )
    (engine / "env").write_text(f'export PULUMI_CLI="{cli}"\n')
    (m.project / "stacks").mkdir()
    for stack in ("dev", "prod"):
        (m.project / "stacks" / f"Pulumi.{stack}.yaml").write_text("config: {}\n")
    return m


def _command(m: Machine) -> dict[str, Any]:
    """The final `pulumi preview` call and the environment it ran with."""
    return next(c for c in reversed(m.calls("pulumi")) if c["argv"][:1] == ["preview"])


def test_example_stacks_default_to_the_project_backend_and_local_passphrase(machine: Machine) -> None:
    result = machine.run("run", "dev", "preview")
    assert result.returncode == 0, result.stderr
    call = _command(machine)
    assert call["argv"] == ["preview", "--stack", "dev"]
    assert call["env"]["PULUMI_BACKEND_URL"] == f"file://{machine.project}/.pulumi-state"
    assert call["env"]["PULUMI_CONFIG_PASSPHRASE"] == "nodefleet-local"
    inits = [c["argv"] for c in machine.calls("pulumi") if c["argv"][:2] == ["stack", "init"]]
    assert inits == [["stack", "init", "dev", "--secrets-provider", "passphrase", "--non-interactive"]]


def test_a_backend_url_the_user_set_is_used_and_no_passphrase_is_imposed(machine: Machine) -> None:
    result = machine.run(
        "run", "dev", "preview", PULUMI_BACKEND_URL="s3://team-state/nodefleet", FAKE_STACKS="dev"
    )
    assert result.returncode == 0, result.stderr
    env = _command(machine)["env"]
    assert env["PULUMI_BACKEND_URL"] == "s3://team-state/nodefleet"
    assert "PULUMI_CONFIG_PASSPHRASE" not in env
    assert "PULUMI_BACKEND_URL" in result.stderr and "s3://team-state/nodefleet" in result.stderr


def test_the_backend_the_user_logged_in_to_is_used(machine: Machine) -> None:
    creds = machine.home / ".pulumi" / "credentials.json"
    creds.parent.mkdir(parents=True)
    creds.write_text(json.dumps({"current": "s3://team-state", "accessTokens": {}}))
    result = machine.run("run", "dev", "preview", FAKE_STACKS="dev")
    assert result.returncode == 0, result.stderr
    env = _command(machine)["env"]
    assert "PULUMI_BACKEND_URL" not in env, "the CLI keeps using the login it recorded"
    assert "PULUMI_CONFIG_PASSPHRASE" not in env
    assert "logged in to (s3://team-state)" in result.stderr


def test_a_missing_stack_on_a_team_backend_is_not_created_with_our_secrets_provider(machine: Machine) -> None:
    result = machine.run("run", "dev", "preview", PULUMI_BACKEND_URL="s3://team-state")
    assert result.returncode == 2
    assert "pulumi stack init dev --secrets-provider" in result.stderr
    assert not [c for c in machine.calls("pulumi") if c["argv"][:2] == ["stack", "init"]]


def test_the_users_passphrase_file_is_not_overridden(machine: Machine) -> None:
    result = machine.run("run", "dev", "preview", PULUMI_CONFIG_PASSPHRASE_FILE="/secure/passphrase")
    assert result.returncode == 0, result.stderr
    env = _command(machine)["env"]
    assert env["PULUMI_CONFIG_PASSPHRASE_FILE"] == "/secure/passphrase"
    assert "PULUMI_CONFIG_PASSPHRASE" not in env


def test_a_teams_own_stack_never_falls_back_to_the_project_backend(machine: Machine) -> None:
    result = machine.run("run", "prod", "preview")
    assert result.returncode == 2
    assert "stack 'prod' is not one of the local example stacks" in result.stderr
    assert "pulumi login s3://" in result.stderr
    assert machine.calls("pulumi") == []
    assert not (machine.project / ".pulumi-state").exists()


def test_the_example_stacks_named_in_engine_run_are_the_ones_that_ship(project_dir: Path) -> None:
    text = (project_dir / "engine" / "run").read_text()
    named = text.split('example_stacks="', 1)[1].split('"', 1)[0].split()
    assert sorted(named) == sorted(SHIPPED_STACKS)
    assert all(path.is_file() for path in shipped_stack_files(project_dir))
