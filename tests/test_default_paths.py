"""The commands as a user runs them, with no path flags: `render`, then `forecast` finds that render.

Every test works in a fresh copy of the project (so `rendered/` and the stack files are the user's own), and
reads the last render from where `render` wrote it: the stack's `output.directory`, whatever it says
(the default `rendered/{stack}`, a custom folder, a GitOps tree several stacks share, a root outside the
project), for `--stack` and `--config-file` stacks, standalone and hosted.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.conftest import PROJECT, copy_project, nodefleet
from tests.shipped import SHIPPED_STACKS, shipped_stack_files


@pytest.fixture
def project(tmp_path: Path) -> Path:
    copy = copy_project(tmp_path / "project")
    (copy / "stacks").mkdir()
    for path in shipped_stack_files(PROJECT):  # a user's own stacks in stacks/ stay out of the copy
        shutil.copy2(path, copy / "stacks")
    return copy


def _forecast(project: Path, *source: str, env: dict[str, str] | None = None) -> dict[str, object]:
    result = nodefleet("forecast", *source, "--json", cwd=project, env=env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stack", SHIPPED_STACKS)
def test_forecast_after_render_compares_with_that_render(project: Path, stack: str) -> None:
    first = _forecast(project, "--stack", stack)
    assert first["before"] is None  # nothing rendered yet: a first run, said as such
    rendered = nodefleet("render", "--stack", stack, cwd=project)
    assert rendered.returncode == 0, rendered.stderr
    after = _forecast(project, "--stack", stack)
    assert after["before"] == f"last render in rendered/{stack}"
    assert after["rollouts"] == 0
    assert all(i["verdict"] == "no rollout" for i in after["items"])  # type: ignore[attr-defined]


def test_readme_example_forecast_against_the_last_render(project: Path) -> None:
    """README: `forecast --stack hosted  # against the last render`: a release bump after a render."""
    assert nodefleet("render", "--stack", "hosted", cwd=project).returncode == 0
    stack = project / "stacks" / "Pulumi.hosted.yaml"
    stack.write_text(stack.read_text().replace("release: 4.22.3", "release: 4.22.4"))
    result = nodefleet("forecast", "--stack", "hosted", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "last render in rendered/hosted" in result.stdout.splitlines()[0]
    assert "REPLACES NODES         prod-east-hosted/OpenshiftEC2NodeClass general" in result.stdout
    assert "UNKNOWN" not in result.stdout


def _own_stack(tmp_path: Path, name: str, directory: str, source: str = "dev") -> Path:
    """A copy of an example stack named ``name``, outside the project, rendering to ``directory``."""
    text = (PROJECT / "stacks" / f"Pulumi.{source}.yaml").read_text()
    if "directory: rendered/{stack}" in text:
        text = text.replace("directory: rendered/{stack}", f"directory: {directory}")
    else:
        assert text.count("      mode: render\n") == 1
        text = text.replace("      mode: render\n", f"      mode: render\n      directory: {directory}\n")
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(text)
    return path


def _bump_instance_type(path: Path) -> None:
    path.write_text(path.read_text().replace("instanceType: m6i.xlarge", "instanceType: m6i.2xlarge", 1))


def test_config_file_with_its_own_output_directory(project: Path, tmp_path: Path) -> None:
    stack = _own_stack(tmp_path, "edge", "gitops/{stack}/manifests")
    first = nodefleet("forecast", "--config-file", str(stack), cwd=project)
    assert first.returncode == 0, first.stderr  # was exit 3: the render directory was assumed
    assert "no render of stack 'edge' in gitops/edge/manifests" in first.stderr
    assert nodefleet("render", "--config-file", str(stack), cwd=project).returncode == 0
    assert (project / "gitops" / "edge" / "manifests" / "dev" / "1-manifest").is_dir()
    _bump_instance_type(stack)
    result = _forecast(project, "--config-file", str(stack))
    assert result["before"] == "last render in gitops/edge/manifests"
    verdicts = {i["name"]: i["verdict"] for i in result["items"]}  # type: ignore[attr-defined]
    assert verdicts["dev-7xk2p-worker-us-east-1a"] == "new machines only"
    assert verdicts["dev-7xk2p-worker-us-east-1b"] == "no rollout"


def test_stacks_sharing_one_gitops_tree_see_only_their_own_folders(project: Path, tmp_path: Path) -> None:
    """Two stacks render into one folder (no `{stack}` in it); neither counts the other's objects as removed."""
    one = _own_stack(tmp_path, "one", "gitops/clusters")
    other = _own_stack(tmp_path, "other", "gitops/clusters", source="karpenter")
    for stack in (one, other):
        assert nodefleet("render", "--config-file", str(stack), cwd=project).returncode == 0
    for stack in (one, other):
        result = _forecast(project, "--config-file", str(stack))
        assert result["before"] == "last render in gitops/clusters"
        assert result["rollouts"] == 0, result


def test_output_directory_outside_the_project(project: Path, tmp_path: Path) -> None:
    outside = tmp_path / "gitops-checkout"
    stack = _own_stack(tmp_path, "far", f"{outside}/{{stack}}")
    env = {"NODEFLEET_RENDER_ROOT": str(outside)}
    refused = nodefleet("forecast", "--config-file", str(stack), cwd=project)
    assert refused.returncode == 2 and "NODEFLEET_RENDER_ROOT" in refused.stderr
    assert nodefleet("render", "--config-file", str(stack), cwd=project, env=env).returncode == 0
    _bump_instance_type(stack)
    result = _forecast(project, "--config-file", str(stack), env=env)
    assert result["before"] == f"last render in {outside / 'far'}"
    verdicts = [i["verdict"] for i in result["items"]]  # type: ignore[attr-defined]
    assert verdicts.count("new machines only") == 1 and verdicts.count("no rollout") == 4
    # --root allows the folder for one command, as for render.
    rooted = nodefleet("forecast", "--config-file", str(stack), "--root", str(outside), cwd=project)
    assert rooted.returncode == 0 and "NEW MACHINES ONLY" in rooted.stdout


def test_fleet_forecast_after_fleet_render(project: Path) -> None:
    stacks = ",".join(SHIPPED_STACKS[:2])
    assert nodefleet("fleet", "render", "--stacks", stacks, cwd=project).returncode == 0
    result = nodefleet("fleet", "forecast", "--stacks", stacks, "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    summaries = [s["summary"] for s in json.loads(result.stdout)["stacks"]]
    assert len(summaries) == 2
    assert all("node sources roll" in s and "unknown" not in s for s in summaries), summaries


def test_upgrade_of_a_stack_with_its_own_output_directory(project: Path, tmp_path: Path) -> None:
    stack = _own_stack(tmp_path, "edge-hosted", "gitops/hosted", source="hosted")
    result = nodefleet(
        "upgrade", "--config-file", str(stack), "--release", "4.22.4", "--dry-run", cwd=project
    )
    assert result.returncode == 0, result.stderr  # was exit 3 (RenderPlanError)
    assert "0 of 5 node sources replace or reboot nodes" in result.stdout


def test_fleet_forecast_reads_where_fleet_render_out_wrote(project: Path, tmp_path: Path) -> None:
    out = tmp_path / "tree"
    assert nodefleet("fleet", "render", "--stacks", "dev", "--out", str(out), cwd=project).returncode == 0
    result = nodefleet("fleet", "forecast", "--stacks", "dev", "--out", str(out), "--json", cwd=project)
    assert result.returncode == 0, result.stderr
    (dev,) = json.loads(result.stdout)["stacks"]
    assert dev["summary"] == "0 of 5 node sources roll"
