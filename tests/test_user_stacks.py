"""Users keep their own stacks in stacks/: the suite and every stack-iterating command tolerate them.

The suite names the shipped examples (tests/shipped.py) wherever it needs known stacks; code that iterates
over stacks/ (``fleet``, ``report``'s touched stacks, the policy mutation run) takes in any stack there. Here a
fresh copy of the project gets a user's stack beside the examples, and each of those is run on it.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT, copy_project, nodefleet
from tests.shipped import SHIPPED_STACKS, shipped_stack_files

#: A user's stack: the dev example copied for another cluster (its own name and infrastructure ID, as two
#: stacks rendered into one tree must not declare one object twice), with more replicas.
USER_STACK = "team-a"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    copy = copy_project(tmp_path_factory.mktemp("user-stacks") / "project")
    (copy / "stacks").mkdir()
    for path in shipped_stack_files(PROJECT):  # a user's own stacks in stacks/ stay out of the copy
        shutil.copy2(path, copy / "stacks")
    text = (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
    for line in ("            replicas: 3\n", "      - name: dev\n", "        infraId: dev-7xk2p\n"):
        assert line in text
    text = text.replace("            replicas: 3\n", "            replicas: 5\n", 1)
    text = text.replace("      - name: dev\n", "      - name: team-a\n", 1)
    text = text.replace("        infraId: dev-7xk2p\n", "        infraId: team-a-4mq8r\n", 1)
    (copy / "stacks" / f"Pulumi.{USER_STACK}.yaml").write_text(text)
    return copy


def test_the_shipped_examples_are_named_not_globbed() -> None:
    assert [p.name for p in shipped_stack_files(PROJECT)] == [f"Pulumi.{s}.yaml" for s in SHIPPED_STACKS]
    assert all(p.is_file() for p in shipped_stack_files(PROJECT))


def test_fleet_runs_every_stack_in_stacks_including_the_users(project: Path) -> None:
    result = nodefleet("fleet", "check", "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    stacks = {s["stack"]: s["exit"] for s in json.loads(result.stdout)["stacks"]}
    assert stacks == {**dict.fromkeys(SHIPPED_STACKS, 0), USER_STACK: 0}


def test_a_program_change_touches_the_users_stack_too(project: Path) -> None:
    from cli.report import touched_stacks

    stacks, why = touched_stacks(["nodefleet/drift/forecast.py"], project)
    assert stacks == sorted([*SHIPPED_STACKS, USER_STACK]) and "every stack" in why
    assert touched_stacks([f"stacks/Pulumi.{USER_STACK}.yaml"], project)[0] == [USER_STACK]


def test_the_policy_mutation_run_takes_the_users_stack(project: Path) -> None:
    from mockruntime.mutation import example_runs

    assert USER_STACK in {run.stack for run in example_runs(project)}


def test_render_and_forecast_of_the_users_stack(project: Path) -> None:
    assert nodefleet("render", "--stack", USER_STACK, cwd=project).returncode == 0
    result = nodefleet("forecast", "--stack", USER_STACK, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["before"] == f"last render in rendered/{USER_STACK}"
