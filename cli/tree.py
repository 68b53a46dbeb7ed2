"""The GitOps tree a stack renders into, and the other stacks rendered there: what ``render`` refuses to write
and ``check`` refuses to pass, so that the gate and the render agree."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

#: Set by ``fleet`` for the stacks it runs when it has already judged the tree of every stack file beside
#: theirs: each stack then skips reading its siblings again (``fleet check`` of N stacks stays linear).
TREE_JUDGED_ENV = "NODEFLEET_TREE_JUDGED"
#: Set by ``fleet`` for every stack it runs: the stack's command is one of a fleet's (``check`` then leaves the
#: fleet-wide judgments to ``fleet``, ``report`` says its stack was given by ``fleet report``).
IN_FLEET_ENV = "NODEFLEET_IN_FLEET"


def tree_problems(
    fleet: Any, source: str, root: Path, plan: Any, siblings: Path | None = None, registry: Any = None
) -> list[str]:
    """Objects this stack and another stack rendered into the same GitOps tree declare differently, and what the
    fleet's registry refuses across its stacks (one ``infraId`` in two stacks).

    The tree is the render root's parent (``rendered/`` for the default ``rendered/{stack}``, which the
    example ApplicationSet syncs as a whole). The other stacks are every stack file beside this one
    (``siblings``, default ``stacks/``): judged by its declaration, read and validated but not run, with its
    config places named, when it is in render mode and its render directory lies in that tree, rendered yet or
    not, or when its last render is in the tree (the stack file is the source of truth, not an older render:
    what ``fleet check`` and CI compare, so that a single stack's pass predicts theirs). A stack whose render
    record is in the tree and whose file is not beside this one (rendered with ``--config-file`` from
    elsewhere), or no longer loads, is judged by the manifests its last render left in the tree, each named by
    its file (:mod:`nodefleet.render.objects`). A stack file beside this one that does not load is left to
    its own check, which says why.
    """
    from mockruntime.render_tree import JOURNAL_SUFFIX, RECORD_PREFIX, RenderTreeError, recorded_files
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from mockruntime.snapshots import shown_path
    from nodefleet.fleet.registry import fleet_problems, load_fleet_in
    from nodefleet.render.objects import (
        fleet_plan,
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

    # `fleet` judged the tree and the registry of every stack file beside this one already: only the stacks whose
    # render records are in the tree are read again.
    judged = os.environ.get(TREE_JUDGED_ENV) == "1"
    folder = (siblings or PROJECT_DIR / "stacks").resolve()
    if registry is None:
        from cli.stacks import registry_of

        registry = registry_of(folder)
    records = [*root.parent.glob(f"*/{RECORD_PREFIX}*"), *root.glob(f"{RECORD_PREFIX}*")]
    others: dict[str, set[Path]] = {}
    for record in records:
        name = record.name.removeprefix(RECORD_PREFIX)
        if not record.name.endswith(JOURNAL_SUFFIX) and name != fleet.stack:
            others.setdefault(name, set()).add(record.parent)
    fleets = [(fleet, source)]
    neighbours = [(fleet, source)]
    for path in sorted(folder.glob("Pulumi.*.yaml")):
        name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        if name == fleet.stack or (judged and name not in others):
            continue
        shown = shown_path(path)
        try:
            config = read_stack_config(path, shown)
            other = load_fleet_in(registry, config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            continue  # its own check says why; a render it left in the tree is judged below
        neighbours.append((other, shown))
        if other.config.output.mode != "render":
            continue
        if name in others or other.render_dir.path.parent == root.parent:
            others.pop(name, None)
            fleets.append((other, shown))
    problems = fleet_problems(registry, neighbours) if len(neighbours) > 1 and not judged else []
    if fleet.config.output.mode != "render":
        return problems  # applied to its clusters, never in a GitOps tree
    # A collision on a management cluster between stacks of one tree is both the tree's and the fleet's: once.
    problems = list(dict.fromkeys(problems + (problems_across(fleets) if len(fleets) > 1 else [])))
    if not others:
        return problems
    rendered = []
    for name in sorted(others):
        for directory in sorted(others[name]):
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
                name, f"its last render; its stack file is not in {shown_path(folder)}", files, destinations
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
