"""The GitOps tree `nodefleet render` leaves: exactly the current manifests, atomically, one render at a time."""

from __future__ import annotations

import copy
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from mockruntime import render_tree
from mockruntime.render_tree import RenderTreeError, record_path, write_tree
from mockruntime.rendering import RenderPlan, plan_render
from mockruntime.run import run_program, stack_fleet
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError
from tests.conftest import PROJECT


def _plan(stack: str, fleet: dict[str, Any] | None = None) -> RenderPlan:
    config = None if fleet is None else {"nodefleet:fleet": fleet}
    return plan_render(run_program(stack, config), f"rendered/{stack}")


def _files(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def _manifests(root: Path) -> dict[str, bytes]:
    return {k: v for k, v in _files(root).items() if k.endswith(".yaml")}


def _two_cluster_fleet() -> dict[str, Any]:
    fleet = stack_fleet("dev")
    second = copy.deepcopy(fleet["clusters"][0])
    second.update(name="edge", infraId="edge-4r8w2")
    fleet["clusters"].append(second)
    return fleet


def test_removed_cluster_and_machineset_leave_no_files_and_foreign_files_stay(tmp_path: Path) -> None:
    fleet = _two_cluster_fleet()
    first = write_tree(tmp_path, "dev", _plan("dev", fleet))
    assert len(first.written) == 12 and len(_manifests(tmp_path)) == 12
    (tmp_path / "dev" / "README.md").write_text("hand-written notes\n")
    (tmp_path / "dev" / "kustomization.yaml").write_text("resources: [1-manifest]\n")
    (tmp_path / "dev" / "1-manifest" / "extra-configmap.yaml").write_text("kind: ConfigMap\n")

    del fleet["clusters"][1]  # the cluster edge
    del fleet["clusters"][0]["machineSets"][3]  # dev's infra MachineSet in us-east-1b
    plan = _plan("dev", fleet)
    second = write_tree(tmp_path, "dev", plan)

    assert len(plan.files) == 5
    rendered = {k for k in _manifests(tmp_path) if k.startswith(("dev/0-crd", "dev/1-manifest", "edge"))}
    assert rendered == {f.relpath for f in plan.files} | {"dev/1-manifest/extra-configmap.yaml"}
    assert not (tmp_path / "edge").exists()
    assert second.removed_folders == ["edge"]
    assert len(second.removed) == 7
    assert (tmp_path / "dev" / "README.md").read_text() == "hand-written notes\n"
    assert (tmp_path / "dev" / "kustomization.yaml").exists()
    assert (tmp_path / "dev" / "1-manifest" / "extra-configmap.yaml").exists()
    assert (tmp_path / "dev" / "0-crd").is_dir()  # the provider's layout, even without CRDs


def test_a_second_render_rewrites_nothing(tmp_path: Path) -> None:
    plan = _plan("dev")
    write_tree(tmp_path, "dev", plan)
    mtimes = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.yaml")}
    again = write_tree(tmp_path, "dev", plan)
    assert (again.written, again.removed, len(again.unchanged)) == ([], [], 6)
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.yaml")} == mtimes


def test_the_record_and_the_argo_cd_file_are_invisible_to_argo_cd_and_flux(tmp_path: Path) -> None:
    """Argo CD's directory source loads *.yaml, *.yml, *.json, *.jsonnet; Flux's generated kustomization
    *.yaml and *.yml: neither the ownership record nor the ignoreDifferences file is a manifest to them."""
    write_tree(tmp_path, "dev", _plan("dev"))
    extras = sorted(
        str(p.relative_to(tmp_path))
        for p in tmp_path.rglob("*")
        if p.is_file() and not p.name.endswith(".yaml")
    )
    assert extras == [".nodefleet-render-dev", "dev/argocd-ignore-differences"]
    assert not any(Path(e).suffix in (".yaml", ".yml", ".json", ".jsonnet") for e in extras)


def test_files_pulumi_up_wrote_are_adopted_and_pruned_like_its_own(tmp_path: Path) -> None:
    """`pulumi up` in render mode writes the same names and bytes; render after it does not fight it."""
    fleet = _two_cluster_fleet()
    for f in _plan("dev", fleet).files:  # as the provider would have written them, without a record
        (tmp_path / f.relpath).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f.relpath).write_bytes(f.content)
    (tmp_path / "dev" / "1-manifest" / "notes.md").write_text("x")
    del fleet["clusters"][0]["machineSets"][3]
    result = write_tree(tmp_path, "dev", _plan("dev", fleet))
    assert result.written == [] and len(result.unchanged) == 11  # identical bytes: nothing to change
    assert result.removed == [
        "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-infra-us-east-1b.yaml"
    ]
    assert (tmp_path / "dev" / "1-manifest" / "notes.md").exists()


def test_a_failure_while_writing_leaves_the_previous_complete_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fleet = _two_cluster_fleet()
    write_tree(tmp_path, "dev", _plan("dev", fleet))
    previous = _files(tmp_path)
    for ms in fleet["clusters"][0]["machineSets"]:
        ms["replicas"] = 7
    del fleet["clusters"][1]
    calls = 0
    real = render_tree._write_new_file

    def fail_on_third(path: Path, content: bytes) -> None:
        nonlocal calls
        calls += 1
        if calls == 3:
            raise OSError(28, "No space left on device")
        real(path, content)

    monkeypatch.setattr(render_tree, "_write_new_file", fail_on_third)
    with pytest.raises(OSError, match="No space left"):
        write_tree(tmp_path, "dev", _plan("dev", fleet))
    assert _files(tmp_path) == previous  # same files, same bytes, no temporaries


_KILL_MID_COMMIT = """
import os, sys
from pathlib import Path
sys.path.insert(0, {project!r})
from mockruntime import render_tree
from mockruntime.run import run_program, stack_fleet
from mockruntime.rendering import plan_render
fleet = stack_fleet("dev")
for ms in fleet["clusters"][0]["machineSets"]:
    ms["replicas"] = 7
del fleet["clusters"][0]["machineSets"][3]
plan = plan_render(run_program("dev", {{"nodefleet:fleet": fleet}}), "rendered/dev")
renames = 0
real = os.replace
def replace(src, dst):
    global renames
    if str(dst).endswith(".yaml"):
        renames += 1
        if renames == 3:
            os._exit(9)  # killed mid-commit: no cleanup, no exception handler
    real(src, dst)
render_tree.os.replace = replace
render_tree.write_tree(Path({root!r}), "dev", plan)
"""


def test_a_render_killed_after_its_commit_point_is_completed_by_the_next(tmp_path: Path) -> None:
    write_tree(tmp_path, "dev", _plan("dev"))
    fleet = stack_fleet("dev")
    for ms in fleet["clusters"][0]["machineSets"]:
        ms["replicas"] = 7
    del fleet["clusters"][0]["machineSets"][3]
    new_plan = _plan("dev", fleet)

    killed = subprocess.run(
        [sys.executable, "-c", _KILL_MID_COMMIT.format(project=str(PROJECT), root=str(tmp_path))],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert killed.returncode == 9, killed.stderr
    assert (tmp_path / ".nodefleet-render-dev.journal").exists()

    result = write_tree(tmp_path, "dev", new_plan)
    assert result.recovered
    assert _manifests(tmp_path) == {f.relpath: f.content for f in new_plan.files}
    assert not list(tmp_path.rglob("*.nodefleet-tmp")) and not list(tmp_path.glob("*.journal"))


def test_an_exception_after_the_commit_point_is_finished_in_process(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    write_tree(tmp_path, "dev", _plan("dev"))
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["machineSets"][0]["replicas"] = 9
    plan = _plan("dev", fleet)
    real = render_tree.os.replace
    failed = False

    def flaky(src: Any, dst: Any) -> None:
        nonlocal failed
        if str(dst).endswith(".yaml") and not failed:
            failed = True
            raise OSError(5, "Input/output error")
        real(src, dst)

    monkeypatch.setattr(render_tree.os, "replace", flaky)
    write_tree(tmp_path, "dev", plan)
    assert _manifests(tmp_path) == {f.relpath: f.content for f in plan.files}


def test_two_renders_of_one_directory_take_turns(tmp_path: Path) -> None:
    plan = _plan("dev")
    holding, release = threading.Event(), threading.Event()
    real_recover = render_tree._recover

    def slow_recover(root: Path) -> bool:
        holding.set()
        release.wait(60)
        return real_recover(root)

    errors: list[BaseException] = []
    waited: list[bool] = []

    def render(**options: Any) -> None:
        try:
            write_tree(tmp_path, "dev", plan, **options)
        except BaseException as e:  # pragma: no cover - reported below
            errors.append(e)

    render_tree._recover = slow_recover  # type: ignore[assignment]
    try:
        t = threading.Thread(target=render)
        t.start()
        assert holding.wait(60)
        render_tree._recover = real_recover  # type: ignore[assignment]
        # The first holds the lock until released: a second render that gives up soon says so.
        with pytest.raises(RenderTreeError, match=r"another nodefleet render of .* is still running"):
            write_tree(tmp_path, "dev", plan, lock_timeout=0.2, on_wait=lambda: waited.append(True))
        assert waited == [True]
        second = threading.Thread(target=render, kwargs={"lock_timeout": 60})
        second.start()
        release.set()
        t.join(60)
        second.join(60)
        assert not t.is_alive() and not second.is_alive()
    finally:
        render_tree._recover = real_recover  # type: ignore[assignment]
        release.set()
    assert not errors
    assert _manifests(tmp_path) == {f.relpath: f.content for f in plan.files}


def test_symlinked_target_folders_and_other_stacks_folders_are_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "root"
    root.mkdir()
    (root / "dev").symlink_to(outside)
    with pytest.raises(RenderTreeError, match="is a symlink"):
        write_tree(root, "dev", _plan("dev"))
    assert list(outside.iterdir()) == []
    (root / "dev").unlink()
    write_tree(root, "dev", _plan("dev"))
    with pytest.raises(RenderTreeError, match="belongs to the render of stack 'dev'"):
        write_tree(root, "other", _plan("dev"))
    assert record_path(root, "dev").exists()


def test_apply_mode_gives_every_target_its_own_folder(tmp_path: Path) -> None:
    fleet = stack_fleet("hosted")
    fleet["output"] = {"mode": "apply"}
    fleet["clusters"][0]["hostedKubeconfig"] = "/dev/null"
    for ref in ("pullSecret", "sshKey"):
        fleet["clusters"][0].get(ref, {}).pop("fromConfig", None)
    run = run_program("hosted", {"nodefleet:fleet": fleet})
    plan = plan_render(run, "rendered/hosted")
    objects = [r for r in run.registrations if r.custom and r.type.startswith("kubernetes:")]
    objects = [
        r
        for r in objects
        if not r.type.startswith("pulumi:providers") and r.type != "kubernetes:core/v1:Secret"
    ]
    write_tree(tmp_path, "hosted", plan)
    assert len(_manifests(tmp_path)) == len(plan.files) == len(objects) > 0
    assert {f.target for f in plan.files} == {"prod-east", "prod-east-hosted"}


def test_render_folders_never_coincide_and_infra_ids_are_unique() -> None:
    fleet = stack_fleet("hosted")
    standalone = stack_fleet("dev")["clusters"][0]
    standalone["name"] = "prod-east-hosted"
    fleet["clusters"].append(standalone)
    with pytest.raises(ConfigError) as err:
        load_fleet(fleet, "hosted", PROJECT)
    assert str(err.value) == (
        "stacks/Pulumi.hosted.yaml: nodefleet:fleet.clusters[1].name: 'prod-east-hosted' would render into "
        "<directory>/prod-east-hosted, but hosted cluster clusters[0] 'prod-east' puts its hosted-cluster "
        "objects in <directory>/prod-east-hosted; rename one of the clusters"
    )
    fleet = _two_cluster_fleet()
    fleet["clusters"][1]["infraId"] = fleet["clusters"][0]["infraId"]
    with pytest.raises(
        ConfigError, match=r"clusters\[1\]\.infraId: 'dev-7xk2p' is also the infraId of clusters\[0\] 'dev'"
    ):
        load_fleet(fleet, "dev", PROJECT)


def test_the_argo_cd_file_follows_its_folder(tmp_path: Path) -> None:
    """Written for every folder with manifests, rewritten when the folder's controller-owned fields change,
    removed with the folder; the record keeps its format (a target line stands for the file)."""
    fleet = _two_cluster_fleet()
    write_tree(tmp_path, "dev", _plan("dev", fleet))
    assert (tmp_path / "edge" / "argocd-ignore-differences").is_file()
    record = record_path(tmp_path, "dev").read_text()
    assert "argocd-ignore-differences" not in record and "target edge\n" in record
    before = (tmp_path / "dev" / "argocd-ignore-differences").read_bytes()

    for ms in fleet["clusters"][0]["machineSets"]:
        ms["bootImage"] = "pinned"  # nodefleet owns every AMI now: nothing left to ignore in dev
    del fleet["clusters"][1]
    result = write_tree(tmp_path, "dev", _plan("dev", fleet))
    after = (tmp_path / "dev" / "argocd-ignore-differences").read_bytes()
    assert after != before and b"ignoreDifferences: []" in after
    assert result.beside_written == ["dev/argocd-ignore-differences"]
    assert not (tmp_path / "edge").exists(), "the file does not keep a removed cluster's folder alive"
    assert write_tree(tmp_path, "dev", _plan("dev", fleet)).beside_written == []
