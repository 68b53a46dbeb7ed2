"""The GitOps tree a stack renders into, and the other stacks rendered there: what ``render`` refuses to write
and ``check`` refuses to pass, so that the gate and the render agree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: Set by ``fleet`` for the stacks it runs when it has already judged the tree of every stack file beside
#: theirs: each stack then skips reading its siblings again (``fleet check`` of N stacks stays linear).
TREE_JUDGED_ENV = "NODEFLEET_TREE_JUDGED"


def tree_problems(fleet: Any, source: str, root: Path, plan: Any, siblings: Path | None = None) -> list[str]:
    """Objects this stack and another stack rendered into the same GitOps tree declare differently.

    The tree is the render root's parent (``rendered/`` for the default ``rendered/{stack}``, which the
    example ApplicationSet syncs as a whole). The other stacks are every render-mode stack file beside this
    one (``siblings``, default ``stacks/``) whose render directory lies in that tree, rendered yet or not (what ``fleet check`` and CI
    compare, so that a single stack's pass predicts theirs), and the stacks whose render record lies in it.
    A stack whose file is in ``stacks/`` is judged by its declaration, read and validated but not run, with
    its config places named; any other (rendered with ``--config-file`` from elsewhere, or whose file no
    longer loads) by the manifests its last render left in the tree, each named by its file
    (:mod:`nodefleet.render.objects`). A stack file of ``stacks/`` that does not load is left to its own
    check, which says why.
    """
    from mockruntime.render_tree import JOURNAL_SUFFIX, RECORD_PREFIX, RenderTreeError, recorded_files
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from mockruntime.snapshots import shown_path
    from nodefleet.render.objects import (
        fleet_plan,
        load_fleet,
        object_key,
        rendered_objects,
        rendered_tree_problems,
        with_rendered_content,
    )
    from nodefleet.render.objects import (
        tree_problems as problems_across,
    )
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    records = [*root.parent.glob(f"*/{RECORD_PREFIX}*"), *root.glob(f"{RECORD_PREFIX}*")]
    others: dict[str, set[Path]] = {}
    for record in records:
        name = record.name.removeprefix(RECORD_PREFIX)
        if not record.name.endswith(JOURNAL_SUFFIX) and name != fleet.stack:
            others.setdefault(name, set()).add(record.parent)
    fleets = [(fleet, source)]
    judged = os.environ.get(TREE_JUDGED_ENV) == "1"
    folder = (siblings or PROJECT_DIR / "stacks").resolve()
    for path in [] if judged else sorted(folder.glob("Pulumi.*.yaml")):
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        if name == fleet.stack or name in others:
            continue
        shown = path.relative_to(PROJECT_DIR).as_posix() if path.is_relative_to(PROJECT_DIR) else str(path)
        try:
            config = read_stack_config(path, shown)
            other = load_fleet(config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            continue
        if other.config.output.mode == "render" and other.render_dir.path.parent == root.parent:
            fleets.append((other, shown))
    unread: list[tuple[str, Path]] = []
    for name in sorted(others):
        shown = f"stacks/Pulumi.{name}.yaml"
        try:
            config = read_stack_config(PROJECT_DIR / shown, shown)
            other = load_fleet(config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            # Not a stack of stacks/ (or not a valid one now): what its last render left is what the tree syncs.
            unread += [(name, directory) for directory in sorted(others[name])]
            continue
        if other.config.output.mode == "render":
            fleets.append((other, shown))
    problems = problems_across(fleets) if len(fleets) > 1 else []
    if not unread:
        return problems
    rendered = []
    for name, directory in unread:
        files = []
        try:
            recorded = recorded_files(directory).get(name, frozenset())
        except RenderTreeError as exc:
            return [*problems, str(exc)]
        for rel in sorted(recorded):
            path = directory / rel
            manifest = _rendered_manifest(path)
            if manifest is not None:
                files.append((rel.split("/", 1)[0], shown_path(path), manifest))
        destinations = _folder_destinations(directory, {target for target, _, _ in files})
        rendered += rendered_objects(
            name, "its last render; its stack file is not in stacks/", files, destinations
        )
    written = {}
    for f in plan.files:
        manifest = _rendered_manifest_bytes(f.content)
        if manifest is not None:
            key = object_key("", manifest)
            written[(f.target, key.group, key.kind, key.namespace, key.name)] = manifest
    mine = with_rendered_content(fleet_plan(fleet, source).emitted, written)
    return problems + rendered_tree_problems(mine, rendered)


def _folder_destinations(directory: Path, targets: set[str]) -> dict[str, str]:
    """Where each render folder's objects go, as the folder's Argo CD file records it (management cluster,
    hosted cluster): two stacks' folders on different management clusters never collide."""
    from nodefleet import files as reader
    from nodefleet.render.gitops import ARGOCD_IGNORE_DIFFERENCES_FILE
    from nodefleet.render.objects import folder_destination

    out = {}
    for target in targets:
        path = directory / target / ARGOCD_IGNORE_DIFFERENCES_FILE
        try:
            data = reader.load_yaml(reader.read_text(path), str(path))
        except reader.FileProblem:
            continue
        destination = folder_destination(data) if isinstance(data, dict) else None
        if destination:
            out[target] = destination
    return out


def _rendered_manifest(path: Path) -> dict[str, Any] | None:
    from nodefleet import files as reader

    try:
        return _rendered_manifest_bytes(reader.read_bytes(path))
    except reader.FileProblem:
        return None


def _rendered_manifest_bytes(content: bytes) -> dict[str, Any] | None:
    """A rendered manifest, or None for a file that is not one (its own render, or a reader, says why)."""
    from nodefleet import files as reader

    try:
        value = reader.load_yaml(
            reader.decode_text(content, "manifest"), "manifest", loader=reader.FastBoundedLoader
        )
    except reader.FileProblem:
        return None
    return value if isinstance(value, dict) and "kind" in value else None
