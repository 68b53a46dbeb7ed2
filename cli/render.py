"""``render``: the manifests the program declares, written as the Kubernetes provider's render mode writes them.

A stack with mandatory policy violations is not rendered (exit 1, nothing written), as ``pulumi up
--policy-pack policies`` would not apply it. The tree it leaves holds exactly the current manifests (stale ones pruned, foreign files untouched), is
written atomically and by one render at a time (:mod:`mockruntime.render_tree`), and lies inside the project or
inside a root the operator allowed (:mod:`nodefleet.stackfile.paths`).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from cli.exits import EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.stacks import load_stack
from cli.tree import tree_problems
from cli.verdicts import print_violations, read_policy_config


def run(args: argparse.Namespace) -> int:
    from mockruntime.evaluate import evaluate_run
    from mockruntime.render_tree import RenderTreeError, write_tree
    from mockruntime.rendering import plan_render
    from nodefleet.render.wiring import folder_fields
    from policies.pack import POLICIES

    policy_config = read_policy_config(args)
    loaded = load_stack(args)
    stack, mock, fleet = loaded.name, loaded.run, loaded.fleet
    # What `pulumi up --policy-pack policies` would refuse is not written either: a GitOps tool would apply it.
    violations = evaluate_run(mock, POLICIES, policy_config)
    mandatory = [v for v in violations if v.level == "mandatory"]
    if mandatory:
        print(
            f"nodefleet render: stack '{stack}' ({loaded.shown}): {len(mandatory)} mandatory "
            "violations; nothing written (fix them, or see them all with `check`)"
        )
        print_violations(mandatory)
        return EXIT_VIOLATIONS
    plan = plan_render(mock, fleet.render_directory, fleet.config.wave, folder_fields(fleet, loaded.registry))
    root = out_folder(args.out) if args.out is not None else fleet.render_dir.path
    problems = tree_problems(fleet, loaded.shown, root, plan, loaded.siblings, loaded.registry)
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


def out_folder(out: Path, option: str = "--out", what: str = "the manifests") -> Path:
    """The folder an ``--out`` option names, resolved: refused (exit 2, nothing written) by the rules
    ``output.directory`` follows (:func:`nodefleet.stackfile.paths.output_folder`: never a file or through one,
    never inside a ``.git`` folder, whose hooks Git runs, never a symlink loop), and never the file system root.
    The user chose it, so it may lie outside the project."""
    from nodefleet.stackfile.paths import PathError, output_folder

    try:
        path = output_folder(out, example=f"{option} /tmp/out")
    except PathError as e:
        raise InputError(f"{option} {out}: {e}") from None
    if path == Path(path.anchor):
        raise InputError(f"{option} {out}: is the file system root; name a folder for {what}")
    return path


def _show(path: Path) -> str:
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)
