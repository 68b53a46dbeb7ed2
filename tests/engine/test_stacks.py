"""The program and the policy pack on the real engine, against what was measured with a complete engine
(CLI 3.259.0, its Python language host, the Kubernetes provider): `dev` previews with the pack and passes;
every stack in stacks/ and tests/stacks/ gives the same (policy, level, resource) findings at preview as
`python -m nodefleet check --json`; `up` in render mode writes exactly the bytes `nodefleet render` writes
and a second `up` changes nothing; invalid configuration fails preview with one line and no traceback.

Results are read from the engine's event log (engine/events.py), since `pulumi preview --json` leaves
policy results out. Each test names the engine parts it needs; where .engine/status records one missing,
the test is deselected and listed in the run's closing banner (tests/conftest.py).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest

from engine.events import changes, diagnostics, findings, program_errors, step_urns
from engine.project import ScratchProject, copy_tree_bytes, scratch_project, stack_name
from mockruntime.render_tree import RECORD_PREFIX
from mockruntime.run import read_stack_config, run_program
from nodefleet.render.gitops import ARGOCD_IGNORE_DIFFERENCES_FILE
from tests.conftest import PROJECT, nodefleet
from tests.shipped import shipped_stack_files

PROGRAM = ("pulumi-language-python", "kubernetes")
STACK_FILES = shipped_stack_files(PROJECT) + sorted((PROJECT / "tests" / "stacks").glob("Pulumi.*.yaml"))


def _needs(stack_file: Path) -> tuple[str, ...]:
    """The engine parts a stack's preview needs: the AWS provider too when it declares AWS resources."""
    try:
        run = run_program(stack_name(stack_file), read_stack_config(stack_file))
    except pulumi.RunError:
        return PROGRAM  # invalid configuration: the program stops before any provider is needed
    return PROGRAM + (("aws",) if any(r.type.startswith("aws:") for r in run.registrations) else ())


def _check(stack_file: Path) -> tuple[int, set[tuple[str, str, str]], str]:
    """check's exit code, its (policy, level, resource) findings, and its error output."""
    done = nodefleet("check", "--config-file", str(stack_file), "--json")
    assert done.returncode in (0, 1, 2), done.stderr
    if done.returncode == 2:
        return 2, set(), done.stderr
    report = json.loads(done.stdout)
    return (
        done.returncode,
        {(v["policy"], v["level"], v["resource"]) for v in report["violations"]},
        done.stderr,
    )


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ScratchProject:
    p = scratch_project(tmp_path_factory.mktemp("engine-project"), STACK_FILES)
    for f in STACK_FILES:
        p.init_stack(stack_name(f))
    return p


@pytest.mark.engine(needs=PROGRAM)
def test_dev_previews_with_the_pack_and_passes(project: ScratchProject) -> None:
    run = project.pulumi("preview", "--policy-pack", "policies", stack="dev")
    assert run.returncode == 0, run.stdout + run.stderr
    assert not [f for f in findings(run.events) if f.level == "mandatory"]
    mock = run_program("dev", read_stack_config(PROJECT / "stacks" / "Pulumi.dev.yaml"))
    planned = step_urns(run.events) - {"urn:pulumi:dev::nodefleet::pulumi:pulumi:Stack::nodefleet-dev"}
    assert planned == {r.urn for r in mock.registrations}, "the engine plans what the check judged"


@pytest.mark.parametrize(
    "stack_file",
    [pytest.param(f, id=stack_name(f), marks=pytest.mark.engine(needs=_needs(f))) for f in STACK_FILES],
)
def test_preview_reports_what_check_reports(project: ScratchProject, stack_file: Path) -> None:
    run = project.pulumi("preview", "--policy-pack", "policies", stack=stack_name(stack_file))
    check_exit, expected, check_errors = _check(stack_file)
    assert "Traceback" not in run.stdout + run.stderr
    if check_exit == 2:
        # Invalid input: both refuse, with the same one-line reason (the file named as each read it).
        assert run.returncode != 0
        (error,) = program_errors(run.events)
        reason = check_errors.strip().split(": ", 2)[-1]
        assert error.split(": ", 1)[-1].endswith(reason.split(": ", 1)[-1]), (error, check_errors)
        return
    got = {(f.policy, f.level, f.resource) for f in findings(run.events)}
    assert got == expected, run.stdout + run.stderr
    assert (run.returncode != 0) == (check_exit == 1), run.stdout + run.stderr
    assert "Traceback" not in run.stdout + run.stderr


@pytest.mark.engine(needs=PROGRAM)
def test_up_in_render_mode_writes_what_render_writes_and_a_second_up_changes_nothing(
    project: ScratchProject, tmp_path: Path
) -> None:
    first = project.pulumi("up", "--yes", "--policy-pack", "policies", stack="dev")
    assert first.returncode == 0, first.stdout + first.stderr
    rendered = tmp_path / "render"
    done = subprocess.run(
        [sys.executable, "-m", "nodefleet", "render", "--stack", "dev", "--out", str(rendered)],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    by_engine = copy_tree_bytes(project.root / "rendered" / "dev")
    # render also keeps its ownership record (mockruntime/render_tree.py), and writes each folder's Argo CD
    # ignoreDifferences file (nodefleet/render/gitops.py); the provider writes manifests only and keeps its state.
    by_render = {
        p: b
        for p, b in copy_tree_bytes(rendered).items()
        if not p.startswith(RECORD_PREFIX) and not p.endswith("/" + ARGOCD_IGNORE_DIFFERENCES_FILE)
    }
    assert sorted(by_engine) == sorted(by_render)
    for path, content in by_render.items():
        assert by_engine[path] == content, path
    second = project.pulumi("up", "--yes", "--policy-pack", "policies", stack="dev")
    assert second.returncode == 0, second.stdout + second.stderr
    assert set(changes(second.events)) == {"same"}, changes(second.events)


@pytest.mark.engine(needs=PROGRAM)
def test_invalid_config_fails_preview_with_one_line_and_no_traceback(project: ScratchProject) -> None:
    stack_file = project.root / "stacks" / "Pulumi.invalid.yaml"
    text = (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert "instanceType:" in text
    stack_file.write_text(text.replace("instanceType:", "instanceTyp:", 1))
    project.init_stack("invalid")
    run = project.pulumi("preview", "--policy-pack", "policies", stack="invalid")
    assert run.returncode != 0
    # The program reports the error and exits 32, so the language host bails and the engine adds nothing
    # (components/shutdown.py): one error diagnostic in all.
    (error,) = [d.message.strip() for d in diagnostics(run.events)]
    assert "\n" not in error
    assert error.startswith("stacks/Pulumi.invalid.yaml: nodefleet:fleet.clusters[0].machineSets[")
    assert "unknown key 'instanceTyp'; did you mean 'instanceType'?" in error
    everything = run.stdout + run.stderr + "".join(str(vars(e)) for e in run.events)
    assert "Traceback" not in everything
