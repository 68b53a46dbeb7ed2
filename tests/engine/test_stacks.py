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
from pathlib import Path
from typing import Any

import pytest

from cli.engine import engine_parts
from engine.events import changes, diagnostics, findings, program_errors, step_ops, step_urns
from engine.project import ScratchProject, copy_tree_bytes, scratch_project, stack_name
from mockruntime.render_tree import RECORD_PREFIX
from mockruntime.run import read_stack_config, run_program
from nodefleet.render.gitops import ARGOCD_IGNORE_DIFFERENCES_FILE
from tests.conftest import PROJECT, nodefleet
from tests.shipped import shipped_stack_files

PROGRAM = ("pulumi-language-python", "kubernetes")
STACK_FILES = shipped_stack_files(PROJECT) + sorted((PROJECT / "tests" / "stacks").glob("Pulumi.*.yaml"))


def _needs(stack_file: Path) -> tuple[str, ...]:
    """The engine parts a stack needs, as ``preview`` and ``up`` ask for them: the AWS provider too when it
    declares AWS resources. They cannot be left out with ``--exclude``: the engine loads the default AWS
    provider's plugin even when that provider is excluded too (docs/engine.md, "The AWS provider")."""
    return engine_parts(stack_name(stack_file), read_stack_config(stack_file))


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


def _manifests_by_render(stack_file: Path, out: Path) -> tuple[int, dict[str, bytes]]:
    """``nodefleet render`` of the stack into ``out``: its exit code and the manifests it wrote. render also
    keeps its ownership record (mockruntime/render_tree.py) and writes each folder's Argo CD
    ignoreDifferences file (nodefleet/render/gitops.py); the provider writes manifests only and keeps its state."""
    done = nodefleet("render", "--config-file", str(stack_file), "--out", str(out))
    assert done.returncode in (0, 1, 2), done.stderr
    written = copy_tree_bytes(out) if out.exists() else {}
    return done.returncode, {
        p: b
        for p, b in written.items()
        if not p.startswith(RECORD_PREFIX) and not p.endswith("/" + ARGOCD_IGNORE_DIFFERENCES_FILE)
    }


def _written_by_engine(project: ScratchProject, stack: str) -> dict[str, bytes]:
    """What the provider wrote in render mode: the stack's ``output.directory``, ``rendered/{stack}``."""
    out = project.root / "rendered" / stack
    return copy_tree_bytes(out) if out.exists() else {}


def _resources(project: ScratchProject, stack: str) -> list[str]:
    """The URNs the stack's state holds (``pulumi stack export``)."""
    done = project.pulumi("stack", "export", stack=stack)
    assert done.returncode == 0, done.stderr
    return [r["urn"] for r in json.loads(done.stdout).get("deployment", {}).get("resources") or []]


@pytest.mark.parametrize(
    "stack_file",
    [pytest.param(f, id=stack_name(f), marks=pytest.mark.engine(needs=_needs(f))) for f in STACK_FILES],
)
def test_up_writes_what_render_writes_a_second_up_changes_nothing_and_destroy_removes_it(
    project: ScratchProject, stack_file: Path, tmp_path: Path
) -> None:
    stack = stack_name(stack_file)
    render_exit, by_render = _manifests_by_render(stack_file, tmp_path / "render")
    first = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=stack)
    assert "Traceback" not in first.stdout + first.stderr
    if render_exit != 0:
        # render refuses invalid input and a stack with a mandatory violation; so does `up`, writing nothing.
        assert first.returncode != 0, first.stdout
        assert _written_by_engine(project, stack) == {}
        return
    assert first.returncode == 0, first.stdout + first.stderr
    by_engine = _written_by_engine(project, stack)
    assert sorted(by_engine) == sorted(by_render)
    for path, content in by_render.items():
        assert by_engine[path] == content, path

    second = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=stack)
    assert second.returncode == 0, second.stdout + second.stderr
    assert set(changes(second.events)) == {"same"}, changes(second.events)
    assert _written_by_engine(project, stack) == by_engine

    made = _resources(project, stack)
    gone = project.pulumi("destroy", "--yes", stack=stack)
    assert gone.returncode == 0, gone.stdout + gone.stderr
    assert _written_by_engine(project, stack) == {}, "every manifest the stack wrote is removed"
    assert _resources(project, stack) == []
    assert {u for u, op in step_ops(gone.events).items() if op == "delete"} == set(made)


def _changed(item: dict[str, Any]) -> bool:
    return list(item["reasons"]) != ["unchanged"]


@pytest.mark.engine(needs=PROGRAM)
def test_a_change_previews_as_the_forecast_says(project: ScratchProject, tmp_path: Path) -> None:
    """A bigger instance type for the infra pool and two more worker replicas: the forecast says the infra
    MachineSets take the new template for new machines only and the rest does not roll; the engine updates
    exactly the MachineSets the forecast names as changed, in place (a replaced MachineSet would delete its
    machines), and leaves everything else as it is."""
    stack = "forecast"
    text = (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
    stack_file = project.root / "stacks" / f"Pulumi.{stack}.yaml"
    stack_file.write_text(text)
    project.init_stack(stack)
    first = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=stack)
    assert first.returncode == 0, first.stdout + first.stderr
    state = tmp_path / "state.json"
    exported = project.pulumi("stack", "export", "--file", str(state), stack=stack)
    assert exported.returncode == 0, exported.stderr

    assert "instanceType: r6i.xlarge" in text and "replicas: 3" in text
    changed = text.replace("instanceType: r6i.xlarge", "instanceType: r6i.2xlarge").replace(
        "replicas: 3", "replicas: 5", 1
    )
    stack_file.write_text(changed)
    mine = tmp_path / f"Pulumi.{stack}.yaml"
    mine.write_text(changed)
    said = nodefleet("forecast", "--config-file", str(mine), "--state", str(state), "--json")
    assert said.returncode == 0, said.stderr
    items = json.loads(said.stdout)["items"]
    infra = {i["verdict"] for i in items if i["kind"] == "MachineSet" and "-infra-" in i["name"]}
    assert infra == {"new machines only"}, items

    run = project.pulumi("preview", "--policy-pack", "policies", stack=stack)
    assert run.returncode == 0, run.stdout + run.stderr
    ops = step_ops(run.events)
    mock = run_program(stack, read_stack_config(stack_file))
    urn_of = {
        (r.inputs.get("kind"), (r.inputs.get("metadata") or {}).get("name")): r.urn
        for r in mock.registrations
        if r.custom and r.type.startswith("kubernetes:")
    }
    for item in items:
        urn = urn_of[(item["kind"], item["name"])]
        expected = "update" if _changed(item) else "same"
        assert ops[urn] == expected, (item, ops[urn])
    assert "replace" not in ops.values(), ops
    assert sum(1 for i in items if _changed(i)) >= 3, "the change reaches the infra and worker MachineSets"


@pytest.mark.engine(needs=PROGRAM)
def test_the_provider_is_never_asked_for_its_package_schema_nor_to_read(
    project: ScratchProject, tmp_path: Path
) -> None:
    """A provider built from a source snapshot that lacks its schema.json embeds a minimal package schema
    instead (docs/engine.md, "Building from source trees"); the provider reads that schema only to answer
    GetSchema and in Read. Every gRPC call the engine makes to its plugins during preview, up, a second up
    and destroy is logged (PULUMI_DEBUG_GRPC): neither is among them."""
    stack = "grpc"
    (project.root / "stacks" / f"Pulumi.{stack}.yaml").write_text(
        (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
    )
    project.init_stack(stack)
    log = tmp_path / "grpc.jsonl"
    pack = ("--policy-pack", "policies")
    for args in (("preview", *pack), ("up", "--yes", *pack), ("up", "--yes", *pack), ("destroy", "--yes")):
        run = project.pulumi(*args, stack=stack, env={"PULUMI_DEBUG_GRPC": str(log)})
        assert run.returncode == 0, run.stdout + run.stderr
    methods = {json.loads(line)["method"] for line in log.read_text().splitlines() if line.strip()}
    provider = {m.rsplit("/", 1)[-1] for m in methods if m.startswith("/pulumirpc.ResourceProvider/")}
    assert {"CheckConfig", "Configure", "Check", "Create", "Delete"} <= provider, provider
    assert not {"GetSchema", "Read"} & provider, provider


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


@pytest.mark.engine(needs=PROGRAM)
def test_preview_refuses_a_release_the_management_clusters_hypershift_operator_does_not_run(
    tmp_path: Path,
) -> None:
    """The example fleet's Team_B on 4.20.5, on mgmt-euw1-a whose registry entry says its HyperShift operator runs
    4.22 and 4.21: the engine, with the pack, fails with the same hypershift-supported-versions findings as
    `check`. The hosted-cluster component registers the management cluster and its supported versions as its
    outputs, which is what the engine hands a stack policy (its inputs never reach one)."""
    regional = PROJECT / "tests" / "fleet" / "regional"
    stack_file = tmp_path / "Pulumi.Team_B.yaml"
    stack_file.write_text(
        (regional / "Pulumi.Team_B.yaml").read_text().replace("release: 4.22.3", "release: 4.20.5")
    )
    p = scratch_project(tmp_path / "project", [stack_file, regional / "nodefleet-fleet.yaml"])
    p.init_stack("Team_B")
    run = p.pulumi("preview", "--policy-pack", "policies", stack="Team_B")
    assert "Traceback" not in run.stdout + run.stderr
    assert run.returncode != 0, run.stdout + run.stderr
    # What the user reads: the policy, and the registry field that says what the operator runs.
    assert "hypershift-supported-versions" in run.stdout and "hypershift.supportedVersions" in run.stdout, (
        run.stdout
    )
    got = {
        (f.policy, f.level, f.resource)
        for f in findings(run.events)
        if f.policy == "hypershift-supported-versions"
    }
    check_exit, expected, _ = _check(p.root / "stacks" / "Pulumi.Team_B.yaml")
    assert check_exit == 1
    assert got and got == {f for f in expected if f[0] == "hypershift-supported-versions"}, (got, expected)
