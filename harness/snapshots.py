"""Snapshots of what a stack declares, for the drift forecast: now (the program), and what came before.

*Now* is the program under the mock runtime, taken through :func:`harness.rendering.plan_render` so the
forecast sees exactly the objects (and the render folders) a render writes. *Before* is one of:

* a render directory: for each object the program declares now, the file
  :func:`nodefleet.render_layout.manifest_path` names in its folder, plus every other manifest left in the
  stack's cluster folders (objects the program no longer declares);
* a ``pulumi stack export`` document (:func:`nodefleet.forecast.snapshot_from_state`);
* another render plan, e.g. the base of a pull request.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from harness.mockrun import PROJECT_DIR, MockRun
from harness.rendering import ManifestFile, RenderPlan, plan_render
from nodefleet.config import OutputSettings
from nodefleet.forecast import Obj, Snapshot, snapshot_from_state
from nodefleet.render_layout import CRD_DIR, MANIFEST_DIR

__all__ = [
    "SnapshotError",
    "default_target",
    "plan_of",
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
    return plan_render(run, default_target(run.stack))


# libyaml's safe loader where PyYAML was built with it: forecasts read every manifest of a stack.
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _manifest(content: bytes, where: str) -> dict[str, Any]:
    try:
        value = yaml.load(content, Loader=_LOADER)
    except yaml.YAMLError as exc:
        raise SnapshotError(f"{where}: not valid YAML ({exc.__class__.__name__}); re-render it") from None
    if not isinstance(value, dict) or "kind" not in value:
        raise SnapshotError(f"{where}: not a Kubernetes manifest (no 'kind'); remove it or re-render")
    return value


def snapshot_from_files(files: Iterable[ManifestFile], source: str) -> Snapshot:
    return Snapshot(source, tuple(Obj(f.target, _manifest(f.content, f.path)) for f in files))


def snapshot_from_plan(plan: RenderPlan, source: str) -> Snapshot:
    return snapshot_from_files(plan.files, source)


def _folder(root: Path | None, target: str) -> Path:
    """The folder a target's files are in: the project's own path, or ``<root>/<target name>``."""
    if root is not None:
        return root / Path(target).name
    path = Path(target)
    return path if path.is_absolute() else PROJECT_DIR / path


def snapshot_from_render_dir(plan: RenderPlan, root: Path | None = None) -> Snapshot | None:
    """The previous render of the stack ``plan`` belongs to; None when none of its folders exists.

    ``root`` is a directory laid out like ``nodefleet render --out`` (``<root>/<cluster>/1-manifest/…``),
    e.g. a GitOps checkout; by default each target's own path (``rendered/<stack>/<cluster>``).
    """
    targets = {f.target for f in plan.files}
    folders = {_folder(root, t): t for t in targets}
    if not any(folder.is_dir() for folder in folders):
        return None
    objects: list[Obj] = []
    seen: set[Path] = set()
    for f in plan.files:
        path = _folder(root, f.target) / f.path
        if path.is_file():
            objects.append(Obj(f.target, _manifest(path.read_bytes(), str(path))))
            seen.add(path.resolve())
    # Objects the program no longer declares, in the folders it renders and in sibling cluster folders.
    parents = {folder.parent for folder in folders}
    for parent in sorted(parents):
        for path in sorted(parent.glob(f"*/{MANIFEST_DIR}/*.yaml")) + sorted(
            parent.glob(f"*/{CRD_DIR}/*.yaml")
        ):
            if path.resolve() in seen:
                continue
            cluster_dir = path.parent.parent
            target = folders.get(cluster_dir) or str(cluster_dir)
            objects.append(Obj(target, _manifest(path.read_bytes(), str(path))))
    where = root if root is not None else sorted(parents)[0]
    try:
        shown = where.relative_to(PROJECT_DIR)
    except ValueError:
        shown = where
    return Snapshot(f"last render in {shown}", tuple(objects))


def snapshot_from_state_file(path: Path) -> Snapshot:
    """The objects of a ``pulumi stack export`` file."""
    try:
        export = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise SnapshotError(
            f"{path}: no such file; write it with `pulumi stack export --file {path}`"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SnapshotError(f"{path}: not a `pulumi stack export` JSON document ({exc})") from None
    try:
        return snapshot_from_state(export, f"Pulumi state ({path.name})")
    except ValueError as exc:
        raise SnapshotError(f"{path}: {exc}") from None
