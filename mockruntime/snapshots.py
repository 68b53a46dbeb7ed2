"""Snapshots of what a stack declares, for the drift forecast: now (the program), and what came before.

*Now* is the program under the mock runtime, taken through :func:`mockruntime.rendering.plan_render` so the
forecast sees exactly the objects (and the render folders) a render writes. *Before* is one of:

* a render directory: for each object the program declares now, the file
  :func:`nodefleet.render_layout.manifest_path` names in its folder, plus every other manifest left in the
  stack's cluster folders (objects the program no longer declares);
* a ``pulumi stack export`` document (:func:`nodefleet.drift.forecast.snapshot_from_state`);
* another render plan, e.g. the base of a pull request.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path, PurePosixPath
from typing import Any

from mockruntime.render_tree import RenderTreeError, recorded_targets
from mockruntime.rendering import ManifestFile, RenderPlan, plan_render
from mockruntime.run import PROJECT_DIR, MockRun
from nodefleet import files as reader
from nodefleet.drift.forecast import Obj, Snapshot, snapshot_from_state
from nodefleet.render_layout import CRD_DIR, MANIFEST_DIR, target_folder
from nodefleet.stackfile.model import Fleet, OutputSettings

__all__ = [
    "SnapshotError",
    "default_target",
    "deployer_of",
    "last_render_root",
    "plan_of",
    "render_directory_of",
    "shown_path",
    "snapshot_from_files",
    "snapshot_from_plan",
    "snapshot_from_render_dir",
    "snapshot_from_state_file",
]


class SnapshotError(ValueError):
    """A previous render or state that cannot be read; the message names the file and what is wrong."""


def default_target(stack: str) -> str:
    """Where a stack renders when its objects have no ``renderYamlToDirectory`` (apply mode)."""
    return OutputSettings().directory.replace("{stack}", stack)


def plan_of(run: MockRun) -> RenderPlan:
    """The files a render of ``run`` writes, under the render directory its providers were given.

    The program builds every render-mode provider with ``renderYamlToDirectory: <render directory>/<target>``
    (:func:`nodefleet.stackfile.paths.render_directory`), so the providers name the stack's render directory whatever
    ``output.directory`` says; in apply mode no provider names one and the default stands in (targets are
    then named after their providers, and the directory is not used).
    """
    return plan_render(run, render_directory_of(run) or default_target(run.stack))


def deployer_of(run: MockRun) -> str:
    """Who applies the run's objects: Argo CD or Flux from its render (render mode), or Pulumi (apply mode)."""
    from nodefleet.drift.forecast import GITOPS, PULUMI

    return GITOPS if render_directory_of(run) else PULUMI


def render_directory_of(run: MockRun) -> str | None:
    """The render directory the program handed its providers, as it wrote it; None in apply mode."""
    parents = {
        str(PurePosixPath(str(reg.inputs["renderYamlToDirectory"])).parent)
        for reg in run.registrations
        if reg.type == "pulumi:providers:kubernetes" and reg.inputs.get("renderYamlToDirectory")
    }
    return parents.pop() if len(parents) == 1 else None


def _manifest(content: bytes, where: str) -> dict[str, Any]:
    """A rendered manifest, read by the guarded reader (libyaml's parser: forecasts read every manifest of a
    stack; bounded in aliases and depth)."""
    try:
        value = reader.load_yaml(reader.decode_text(content, where), where, loader=reader.FastBoundedLoader)
    except reader.FileProblem as exc:
        raise SnapshotError(f"{where}: not a readable manifest ({exc.problem}); re-render it") from None
    if not isinstance(value, dict) or "kind" not in value:
        raise SnapshotError(f"{where}: not a Kubernetes manifest (no 'kind'); remove it or re-render")
    return value


def snapshot_from_files(files: Iterable[ManifestFile], source: str) -> Snapshot:
    return Snapshot(source, tuple(Obj(f.target, _manifest(f.content, f.path)) for f in files))


def snapshot_from_plan(plan: RenderPlan, source: str) -> Snapshot:
    return snapshot_from_files(plan.files, source)


def snapshot_from_render_dir(plan: RenderPlan, root: Path, *, stack: str | None = None) -> Snapshot | None:
    """The previous render of the stack ``plan`` belongs to, in ``root``; None when none of its folders exists.

    ``root`` is a render directory: ``<root>/<target>/{0-crd,1-manifest}/…``, as ``nodefleet render`` writes
    it (to the stack's ``output.directory``, :func:`last_render_root`, or to ``--out``) and as the provider's
    render mode writes it. Besides the files of the objects the program declares now, every manifest in the
    other cluster folders of ``root`` counts as an object the program no longer declares, except in folders
    the render record of another stack claims (several stacks rendered into one GitOps tree).
    """
    targets = {*plan.targets, *(f.target for f in plan.files)}
    if not any(target_folder(root, t).is_dir() for t in targets):
        return None
    objects: list[Obj] = []
    seen: set[Path] = set()
    for f in plan.files:
        path = target_folder(root, f.target) / f.path
        if path.is_file():
            objects.append(Obj(f.target, _manifest(_read(path), str(path))))
            seen.add(path)
    try:
        recorded = recorded_targets(root)
    except RenderTreeError as exc:
        raise SnapshotError(str(exc)) from None
    others = {t for owner, claimed in recorded.items() if owner != stack for t in claimed} - targets
    for layout in (MANIFEST_DIR, CRD_DIR):
        for path in sorted(root.glob(f"*/{layout}/*.yaml")):
            target = path.parent.parent.name
            if path in seen or target in others:
                continue
            objects.append(Obj(target, _manifest(_read(path), str(path))))
    return Snapshot(f"last render in {shown_path(root)}", tuple(objects))


def _read(path: Path) -> bytes:
    """A rendered manifest's bytes: a regular file only (a named pipe dropped into the tree must not hang)."""
    try:
        return reader.read_bytes(path, what="rendered manifest")
    except reader.FileProblem as exc:
        raise SnapshotError(
            f"{path}: cannot be read as a rendered manifest ({exc.problem}); remove it from the render "
            "directory or render again"
        ) from None


def last_render_root(fleet: Fleet) -> Path:
    """Where the stack's last render is: its ``output.directory`` (``{stack}`` replaced, inside the project or
    an allowed root), which is where ``nodefleet render`` without ``--out`` and ``pulumi up`` in render mode
    write. One rule for the writers and every reader (``forecast``, ``fleet forecast``)."""
    return fleet.render_dir.path


def shown_path(path: Path) -> str:
    """``path`` relative to the project or the working directory where it lies inside one, else as is."""
    for base in (PROJECT_DIR, Path.cwd()):
        try:
            return str(path.relative_to(base))
        except ValueError:
            continue
    return str(path)


def snapshot_from_state_file(path: Path) -> Snapshot:
    """The objects of a ``pulumi stack export`` file."""
    try:
        text = reader.read_text(path, what="stack export", limit=reader.EXPORT_BYTES)
    except reader.FileProblem as exc:
        raise SnapshotError(
            f"{path}: {exc.problem}; write it with `pulumi stack export --file {path}`"
        ) from None
    try:
        export = reader.load_json(text, str(path))
    except reader.FileProblem as exc:
        raise SnapshotError(
            f"{path}: not a `pulumi stack export` JSON document ({exc.problem}); write it with "
            f"`pulumi stack export --file {path}`"
        ) from None
    try:
        return snapshot_from_state(export, f"Pulumi state ({path.name})")
    except ValueError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
