"""A stack file alone never sends output (or catalog reads) outside the project: `check`, `check --json`,
`render` and the Pulumi program, run in a fresh copy of the project so that any write outside it shows."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pulumi
import pytest
import yaml

from nodefleet.stackfile.model import OutputSettings
from tests.conftest import PROJECT, copy_project


@pytest.fixture(scope="module")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """<tmp>/project (a copy of the program), <tmp>/outside (must stay empty unless allowed)."""
    base = tmp_path_factory.mktemp("containment")
    project = copy_project(base / "project")
    (project / "stacks").mkdir()
    (base / "outside").mkdir()
    return base


def _tree(path: Path) -> list[str]:
    return sorted(str(p.relative_to(path)) for p in path.rglob("*") if "__pycache__" not in p.parts)


def _stack_file(sandbox: Path, name: str, mutate: dict[str, object]) -> Path:
    doc = yaml.safe_load((PROJECT / "stacks" / "Pulumi.dev.yaml").read_text())
    fleet = doc["config"]["nodefleet:fleet"]
    fleet["output"].update(mutate.get("output", {}))  # type: ignore[call-overload]
    # The files of one stacks/ folder are one fleet, where an infraId is one cluster's: each its own (same length).
    fleet["clusters"][0]["infraId"] = "dev-" + hashlib.sha256(name.encode()).hexdigest()[:5]
    for key, value in mutate.items():
        if key != "output":
            fleet["clusters"][0][key] = value
    path = sandbox / "project" / "stacks" / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def _nodefleet(
    sandbox: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_")}
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", *args],
        cwd=sandbox / "project",
        capture_output=True,
        text=True,
        timeout=120,
        env={**clean, **(env or {})},
    )


#: output.directory values a stack file must not be able to use, and what the message says.
BAD_DIRECTORIES = {
    "absolute": ("{outside}/x", "outside every allowed root"),
    "dotdot": ("../outside/{stack}", "leads out with '..'"),
    "dotdot-deep": ("../../x", "leads out with '..'"),
    "home": ("~", "starts with '~'"),
    "home-sub": ("~/gitops/{stack}", "starts with '~'"),
    "empty": ("", "is empty"),
    "blank": ("  ", "is empty"),
    "nul": ("rendered/\0x", "control character U+0000"),
    "newline": ("rendered/a\nb", "control character U+000A"),
    "too-long": ("a/" * 600, "at most 1024"),
    "long-name": ("rendered/" + "x" * 300, "at most 255"),
    "project-itself": (".", "project directory itself"),
    "symlink": ("escape/{stack}", "resolves through a symlink"),
}


COMMANDS = ("check", "check --json", "render")

# Runs every case in one process of the copied project (cli.main.main per case), snapshotting the project
# and the outside folder around each: one interpreter start instead of one per case.
_DRIVER = """
import contextlib, io, json, sys
from pathlib import Path
from cli.main import main

def tree(p):
    return sorted(str(q.relative_to(p)) for q in p.rglob('*') if '__pycache__' not in q.parts)

import os, shutil
base = Path.cwd().parent
out = {}
for name, run in json.loads(sys.argv[1]).items():
    before = (tree(base / 'project'), tree(base / 'outside'))
    o, e = io.StringIO(), io.StringIO()
    os.environ.update(run['env'])
    with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
        code = main(run['argv'])
    for key in run['env']:
        del os.environ[key]
    after = (tree(base / 'project'), tree(base / 'outside'))
    out[name] = {'code': code, 'stdout': o.getvalue(), 'stderr': e.getvalue(), 'wrote': before != after,
                 'new': sorted(set(after[0] + after[1]) - set(before[0] + before[1]))}
    for folder in (base / 'project' / 'rendered', base / 'outside' / 'gitops'):
        shutil.rmtree(folder, ignore_errors=True)
print(json.dumps(out))
"""
_UNUSED = """
"""


@pytest.fixture(scope="module")
def bad_directory_results(sandbox: Path) -> dict[str, dict[str, object]]:
    (sandbox / "project" / "escape").symlink_to(sandbox / "outside")
    runs: dict[str, dict[str, object]] = {}

    def add(name: str, argv: list[str], env: dict[str, str] | None = None) -> None:
        runs[name] = {"argv": argv, "env": env or {}}

    for case, (value, _) in BAD_DIRECTORIES.items():
        directory = value.replace("{outside}", str(sandbox / "outside"))
        stack = _stack_file(sandbox, case, {"output": {"directory": directory}})
        for command in COMMANDS:
            add(f"{case}|{command}", [*command.split(), "--config-file", str(stack)])
    dotdot = _stack_file(sandbox, "..", {})
    for command in COMMANDS:
        add(f"stack-dotdot|{command}", [*command.split(), "--config-file", str(dotdot)])
    # A render directory outside the project, allowed by the operator (option or variable), or not.
    gitops = sandbox / "outside" / "gitops"
    stack = str(_stack_file(sandbox, "gitops", {"output": {"directory": f"{gitops}/{{stack}}"}}))
    add("gitops|refused", ["render", "--config-file", stack])
    add("gitops|option", ["render", "--config-file", stack, "--root", str(gitops)])
    add("gitops|env", ["render", "--config-file", stack], {"NODEFLEET_RENDER_ROOT": str(gitops)})
    add("gitops|check", ["check", "--json", "--config-file", stack, "--root", str(gitops)])
    # A catalog outside the project, allowed by --catalog-root, or not.
    catalog = sandbox / "outside" / "catalogs" / "dev.yaml"
    catalog.parent.mkdir()
    shutil.copy2(PROJECT / "catalogs" / "coreos-bootimages-5.0.yaml", catalog)
    outside_catalog = str(_stack_file(sandbox, "outside-catalog", {"catalog": str(catalog)}))
    for command in COMMANDS:
        add(f"catalog|{command}", [*command.split(), "--config-file", outside_catalog])
    relative = str(_stack_file(sandbox, "relative-catalog", {"catalog": "../outside/catalogs/dev.yaml"}))
    add("catalog|relative", ["check", "--config-file", relative])
    add(
        "catalog|allowed", ["render", "--config-file", outside_catalog, "--catalog-root", str(catalog.parent)]
    )
    result = subprocess.run(
        [sys.executable, "-c", _DRIVER, json.dumps(runs)],
        cwd=sandbox / "project",
        capture_output=True,
        text=True,
        timeout=300,
        env={k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_")},
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


@pytest.mark.parametrize("case", sorted(BAD_DIRECTORIES))
@pytest.mark.parametrize("command", COMMANDS)
def test_a_stack_file_cannot_send_output_outside(
    bad_directory_results: dict[str, dict[str, object]], case: str, command: str
) -> None:
    _, says = BAD_DIRECTORIES[case]
    result = bad_directory_results[f"{case}|{command}"]
    assert result["code"] == 2, result
    stderr = str(result["stderr"])
    assert "Traceback" not in stderr
    (line,) = stderr.strip().splitlines()
    assert f"Pulumi.{case}.yaml: nodefleet:fleet.output.directory: " in line
    assert says in line
    assert "e.g. rendered/{stack}" in line or "--root" in line
    if command.endswith("--json"):  # the same line as a JSON error document (docs/cli-and-forecast.md)
        (problem,) = json.loads(str(result["stdout"]))["problems"]
        assert problem["message"] == line.removeprefix("error: ")
        assert problem["field"] == "nodefleet:fleet.output.directory"
    else:
        assert result["stdout"] == ""
    assert result["wrote"] is False


@pytest.mark.parametrize("command", COMMANDS)
def test_a_stack_named_dot_dot_cannot_escape(
    bad_directory_results: dict[str, dict[str, object]], command: str
) -> None:
    result = bad_directory_results[f"stack-dotdot|{command}"]
    assert result["code"] == 2
    assert "stack name '..' cannot name a folder" in str(result["stderr"])
    assert result["wrote"] is False


def test_a_root_the_operator_allows_lets_render_write_outside(
    bad_directory_results: dict[str, dict[str, object]],
) -> None:
    refused = bad_directory_results["gitops|refused"]
    assert refused["code"] == 2 and refused["wrote"] is False
    assert "--root DIR` or NODEFLEET_RENDER_ROOT=DIR" in str(refused["stderr"])
    for how in ("option", "env"):
        result = bad_directory_results[f"gitops|{how}"]
        assert result["code"] == 0, result
        written = [p for p in result["new"] if str(p).startswith("gitops/gitops/dev/1-manifest/")]  # type: ignore[union-attr]
        assert len(written) == 6
    checked = bad_directory_results["gitops|check"]
    assert checked["code"] == 0 and json.loads(str(checked["stdout"]))["violations"] == []


@pytest.mark.parametrize("command", COMMANDS)
def test_a_catalog_outside_the_project_needs_an_explicit_root(
    bad_directory_results: dict[str, dict[str, object]], command: str
) -> None:
    result = bad_directory_results[f"catalog|{command}"]
    assert result["code"] == 2, result
    (line,) = str(result["stderr"]).strip().splitlines()
    assert "nodefleet:fleet.clusters[0].catalog: " in line and "--catalog-root DIR" in line
    assert "leads out with '..'" in str(bad_directory_results["catalog|relative"]["stderr"])
    allowed = bad_directory_results["catalog|allowed"]
    assert allowed["code"] == 0, allowed


def test_the_program_refuses_an_escaping_provider_directory_itself() -> None:
    """Whoever builds a provider, the program applies the same rule (not only configuration validation)."""
    from components.kubernetes import cluster_provider

    for directory in ("/etc", "../../x", "~", "", "rendered/\0"):
        with pytest.raises(pulumi.RunError, match=re.escape("output.directory of stack dev")):
            cluster_provider("dev", "dev", OutputSettings(mode="render", directory=directory))
    with pytest.raises(pulumi.RunError, match="cannot name a render folder"):
        cluster_provider("..", "dev", OutputSettings(mode="render"))
    with pytest.raises(pulumi.RunError, match="cannot name a folder"):
        cluster_provider("dev", "..", OutputSettings(mode="render"))
