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
    from nodefleet.paths import PathError, contain
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
        root = out.path
    else:
        root = fleet.render_dir.path
    problems = _tree_problems(fleet, stack_file_shown(args), root)
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


def _tree_problems(fleet: Any, source: str, root: Path) -> list[str]:
    """Objects this stack and another stack rendered into the same GitOps tree declare differently.

    The tree is the render root's parent (``rendered/`` for the default ``rendered/{stack}``, which the
    example ApplicationSet syncs as a whole); the other stacks are those whose render record lies in it and
    whose stack file is in ``stacks/`` (:mod:`nodefleet.objects`).
    """
    from harness.mockrun import PROJECT_DIR, read_stack_config
    from harness.render_tree import JOURNAL_SUFFIX, RECORD_PREFIX
    from nodefleet.config import CONFIG_KEY, ConfigError, load_fleet
    from nodefleet.objects import tree_problems
    from nodefleet.yamlfile import YAMLFileError

    records = [*root.parent.glob(f"*/{RECORD_PREFIX}*"), *root.glob(f"{RECORD_PREFIX}*")]
    others = sorted(
        {r.name.removeprefix(RECORD_PREFIX) for r in records if not r.name.endswith(JOURNAL_SUFFIX)}
        - {fleet.stack}
    )
    fleets = [(fleet, source)]
    for name in others:
        shown = f"stacks/Pulumi.{name}.yaml"
        try:
            config = read_stack_config(PROJECT_DIR / shown, shown)
            other = load_fleet(config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            continue  # not a stack of this project, or invalid: its own render says why
        if other.config.output.mode == "render":
            fleets.append((other, shown))
    return tree_problems(fleets) if len(fleets) > 1 else []


def _show(path: Path) -> str:
    try:
        return os.path.relpath(path) if path.is_relative_to(Path.cwd()) else str(path)
    except ValueError:
        return str(path)
