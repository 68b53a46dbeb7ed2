"""``forecast``: which nodes the stack's current declaration would replace, against its last render or state."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from cli.exits import EXIT_OK, InputError
from cli.stacks import load_stack

if TYPE_CHECKING:  # the parser imports this module on every run; the forecast itself only where it runs
    from nodefleet.drift.forecast import Forecast, Item, Snapshot


def run(args: argparse.Namespace) -> int:
    from mockruntime.snapshots import (
        SnapshotError,
        deployer_of,
        last_render_root,
        plan_of,
        snapshot_from_plan,
        snapshot_from_render_dir,
        snapshot_from_state_file,
    )
    from nodefleet.drift.forecast import forecast

    loaded = load_stack(args)
    stack, mock = loaded.name, loaded.run
    plan = plan_of(mock)
    before: Snapshot | None
    root: Path | None = None
    try:
        if args.state:
            before = snapshot_from_state_file(args.state)
        else:
            # Without --rendered: the stack's last render, where `render` without --out wrote it.
            root = args.rendered or last_render_root(loaded.fleet)
            before = snapshot_from_render_dir(plan, root, stack=stack)
    except SnapshotError as exc:
        raise InputError(str(exc)) from None
    result = forecast(
        before, snapshot_from_plan(plan, "the program now (mock runtime)"), deployer=deployer_of(mock)
    )
    if before is None and root is not None and not args.json:
        hint = (
            "--rendered DIR (where `render --out DIR` wrote)"
            if args.rendered is None
            else "another --rendered"
        )
        print(
            f"nodefleet forecast: no render of stack '{stack}' in {_shown(root)}; first run, or pass {hint}",
            file=sys.stderr,
        )
    if args.json:
        print(json.dumps({"stack": mock.stack, **result.as_dict()}, indent=2))
    else:
        print(text(mock.stack, result))
    return EXIT_OK


def _shown(path: Path) -> str:
    from mockruntime.snapshots import shown_path

    return shown_path(path)


def _count(items: Iterable[Item]) -> str:
    items = list(items)
    rolls = [i for i in items if i.rolls]
    return f"{len(rolls)} of {len(items)} node sources replace or reboot nodes"


def text(stack: str, result: Forecast) -> str:
    lines = [
        f"nodefleet forecast: stack '{stack}': {result.before or 'no previous render or state'} → {result.after}",
    ]
    if result.before is None:
        names = ", ".join(f"{i.cluster}/{i.kind} {i.name}" for i in result.items)
        lines.append(f"  UNKNOWN: nothing to compare with (first run); node sources declared: {names}")
        return "\n".join(lines)
    for i in result.items:
        lines.append(f"  {i.verdict.upper():22} {i.cluster}/{i.kind} {i.name}")
        for reason in i.reasons:
            lines.append(f"      {reason}")
        if i.verdict not in ("no rollout",):
            lines.append(f"      nodes: {i.nodes}; paced by: {i.paced_by or '-'}")
    for note in result.notes:
        lines.append(f"  NOTE {note}")
    lines.append(f"  {_count(result.items)}")
    return "\n".join(lines)


_ICON = {
    "replaces nodes": "🔁",
    "may replace nodes": "⚠️",
    "updates nodes in place": "🔄",
    "removes nodes": "🗑️",
    "new machines only": "🆕",
    "new": "🌱",
    "no rollout": "✅",
    "unknown": "❔",
}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown(result: Forecast, *, show_quiet: bool = False) -> str:
    """The forecast as a Markdown table (rolling items first; unchanged items only counted)."""
    lines = [f"Compared with: {result.before or '**nothing** (first run: no previous render or state)'}", ""]
    shown = [
        i for i in result.items if show_quiet or i.verdict != "no rollout" or i.reasons != ("unchanged",)
    ]
    if shown:
        lines += [
            "| | cluster | kind | name | verdict | why | nodes at stake | paced by |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for i in sorted(shown, key=lambda i: (not i.rolls, i.cluster, i.kind, i.name)):
            lines.append(
                f"| {_ICON.get(i.verdict, '')} | {_cell(i.cluster)} | {_cell(i.kind)} | {_cell(i.name)} | "
                f"**{i.verdict}** | {_cell('; '.join(i.reasons))} | {_cell(i.nodes)} | {_cell(i.paced_by or '-')} |"
            )
    quiet = len(result.items) - len(shown)
    lines += ["", f"{_count(result.items)}" + (f"; {quiet} unchanged." if quiet else ".")]
    for note in result.notes:
        lines += ["", f"> ⚠️ {note}"]
    return "\n".join(lines)
