"""``render``: the manifests the program declares, written as the Kubernetes provider's render mode writes them.

A stack with mandatory policy violations is not rendered (exit 1, nothing written), as ``pulumi up
--policy-pack policies`` would not apply it. The tree it leaves holds exactly the current manifests (stale ones pruned, foreign files untouched), is
written atomically and by one render at a time (:mod:`harness.render_tree`), and lies inside the project or
inside a root the operator allowed (:mod:`nodefleet.paths`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from cli import check
from cli.exits import EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.stacks import load, run_loaded, stack_file_shown


def run(args: argparse.Namespace) -> int:
    from harness.evaluate import evaluate_run
    from harness.mockrun import PROJECT_DIR
    from harness.render_tree import RenderTreeError, write_tree
    from harness.rendering import plan_render
    from nodefleet.config import CONFIG_KEY, ConfigError, load_fleet
    from nodefleet.paths import PathError, contain, writable_folder_problem
    from policies.pack import POLICIES

    policy_config = check.policy_config(args)
    stack, config, source = load(args)
    mock = run_loaded(stack, config, source)
    try:
        fleet = load_fleet(config.get(CONFIG_KEY), stack, PROJECT_DIR, source=source)
    except ConfigError as e:
        raise InputError(str(e)) from None
    # What `pulumi up --policy-pack policies` would refuse is not written either: a GitOps tool would apply it.
    violations = evaluate_run(mock, POLICIES, policy_config)
    mandatory = [v for v in violations if v.level == "mandatory"]
    if mandatory:
        print(
            f"nodefleet render: stack '{stack}' ({stack_file_shown(args)}): {len(mandatory)} mandatory "
            "violations; nothing written (fix them, or see them all with `check`)"
        )
        check.print_violations(mandatory)
        return EXIT_VIOLATIONS
    plan = plan_render(mock, fleet.render_directory, fleet.config.wave)
    if args.out is not None:
        problem = writable_folder_problem(Path(args.out).expanduser())
        if problem:
            raise InputError(f"--out {args.out}: {problem}")
        try:
            out = contain(
                str(Path(args.out).expanduser().resolve()),
                project_dir=PROJECT_DIR,
                roots=[Path(args.out).expanduser().resolve()],
                allow="--out",
                example="--out /tmp/manifests",
            )
        except PathError as e:
            raise InputError(f"--out {args.out}: {e}") from None
        if out.path == Path(out.path.anchor):
            raise InputError(f"--out {args.out}: is the file system root; name a folder for the manifests")
        if any(p.lower() == ".git" for p in out.path.parts):
            raise InputError(
                f"--out {args.out}: lies inside a .git folder, the repository's own files; name a folder of the "
                "work tree"
            )
        root = out.path
    else:
        root = fleet.render_dir.path
    problems = tree_problems(fleet, stack_file_shown(args), root, plan)
    if problems:
        raise InputError("\n".join(problems))
    for skipped in plan.skipped:
        print(f"  skipped {skipped} (values stay off disk)")
    try:
        result = write_tree(
            root,
            stack,
            plan,
            lock_timeout=args.lock_timeout,
            on_wait=lambda: print(f"waiting for another render of {_show(root)} to finish", file=sys.stderr),
        )
    except RenderTreeError as e:
        raise InputError(str(e)) from None
    if result.recovered:
        print(f"  completed an interrupted render of {_show(root)} first")
    for rel in result.written:
        print(f"  {'adopted' if rel in result.adopted else 'wrote'} {_show(root / rel)}")
    for rel in result.beside_written:
        print(
            f"  wrote {_show(root / rel)} (Argo CD ignoreDifferences of the folder's controller-owned fields)"
        )
    for rel in result.removed:
        print(f"  removed {_show(root / rel)}")
    for folder in result.removed_folders:
        print(f"  removed folder {_show(root / folder)}")
    print(
        f"nodefleet render: stack '{stack}': {len(plan.files)} manifests in {_show(root)} "
        f"({len(result.written)} written, {len(result.unchanged)} unchanged, {len(result.removed)} removed; "
        "from the mock runtime, not the provider)"
    )
    return EXIT_OK


def tree_problems(fleet: Any, source: str, root: Path, plan: Any) -> list[str]:
    """Objects this stack and another stack rendered into the same GitOps tree declare differently.

    The tree is the render root's parent (``rendered/`` for the default ``rendered/{stack}``, which the
    example ApplicationSet syncs as a whole); the other stacks are those whose render record lies in it. A
    stack whose file is in ``stacks/`` is judged by its declaration, with its config places named; any other
    (rendered with ``--config-file`` from elsewhere, or whose file no longer loads) by the manifests its
    last render left in the tree, each named by its file (:mod:`nodefleet.objects`).
    """
    from harness.mockrun import PROJECT_DIR, read_stack_config
    from harness.render_tree import JOURNAL_SUFFIX, RECORD_PREFIX, recorded_files
    from harness.snapshots import shown_path
    from nodefleet.config import CONFIG_KEY, ConfigError, load_fleet
    from nodefleet.objects import (
        fleet_plan,
        object_key,
        rendered_objects,
        rendered_tree_problems,
        with_rendered_content,
    )
    from nodefleet.objects import (
        tree_problems as problems_across,
    )
    from nodefleet.yamlfile import YAMLFileError

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


def _show(path: Path) -> str:
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)
