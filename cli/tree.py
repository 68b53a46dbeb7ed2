"""The GitOps tree a stack renders into, and the other stacks rendered there: what ``render`` refuses to write
and ``check`` refuses to pass, so that the gate and the render agree."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def tree_problems(fleet: Any, source: str, root: Path, plan: Any) -> list[str]:
    """Objects this stack and another stack rendered into the same GitOps tree declare differently.

    The tree is the render root's parent (``rendered/`` for the default ``rendered/{stack}``, which the
    example ApplicationSet syncs as a whole); the other stacks are those whose render record lies in it. A
    stack whose file is in ``stacks/`` is judged by its declaration, with its config places named; any other
    (rendered with ``--config-file`` from elsewhere, or whose file no longer loads) by the manifests its
    last render left in the tree, each named by its file (:mod:`nodefleet.render.objects`).
    """
    from mockruntime.render_tree import JOURNAL_SUFFIX, RECORD_PREFIX, recorded_files
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
        for rel in sorted(recorded_files(directory).get(name, ())):
            path = directory / rel
            manifest = _rendered_manifest(path)
            if manifest is not None:
                files.append((rel.split("/", 1)[0], shown_path(path), manifest))
        rendered += rendered_objects(name, "its last render; its stack file is not in stacks/", files)
    written = {}
    for f in plan.files:
        manifest = _rendered_manifest_bytes(f.content)
        if manifest is not None:
            key = object_key("", manifest)
            written[(f.target, key.group, key.kind, key.namespace, key.name)] = manifest
    mine = with_rendered_content(fleet_plan(fleet, source).emitted, written)
    return problems + rendered_tree_problems(mine, rendered)


def _rendered_manifest(path: Path) -> dict[str, Any] | None:
    try:
        return _rendered_manifest_bytes(path.read_bytes())
    except OSError:
        return None


def _rendered_manifest_bytes(content: bytes) -> dict[str, Any] | None:
    """A rendered manifest, or None for a file that is not one (its own render, or a reader, says why)."""
    import yaml

    try:
        value = yaml.safe_load(content)
    except yaml.YAMLError:
        return None
    return value if isinstance(value, dict) and "kind" in value else None
