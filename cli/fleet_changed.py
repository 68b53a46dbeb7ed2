"""``fleet check --changed-files``: only the stacks a change touches are checked, and what they can collide with
in the rest of the fleet is judged from the stack files, without running the rest.

A change touches the stacks ``fleet matrix --changed-files`` keeps (:func:`nodefleet.stackfile.waves.touched_stacks`:
a stack file its stack, a catalog the stacks naming it, the registry every stack on a management cluster, the
program and policies every stack). Two stacks can collide only where they declare something in one place: on one
management cluster, in one cluster's render folder (a cluster name), or with one ``infraId``. The other stacks of
the fleet are read as values (their stack files, not their programs); those sharing such a place with a touched
stack are validated and planned as ``fleet check`` plans every stack, and the collisions that involve a touched
stack are reported, as ``fleet check`` reports them (exit 2). A stack that no change touched is never judged on
its own: its problems are its own change's to report.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from cli.exits import InputError


def changed_paths(value: str) -> list[str]:
    """The lines of the list of changed files (``-``: standard input), read as ``fleet matrix`` reads it."""
    from nodefleet import files as reader

    try:
        if value == "-":
            data = sys.stdin.buffer.read(reader.MAX_FILE_BYTES + 1)
            if len(data) > reader.MAX_FILE_BYTES:
                raise reader.FileProblem(
                    "-",
                    f"standard input holds more than {reader.MAX_FILE_BYTES:,} bytes",
                    "give a list of files",
                )
            text = reader.decode_text(data, "-", what="list of changed files")
        else:
            text = reader.read_text(value, what="list of changed files")
    except reader.FileProblem as e:
        raise InputError(
            f"--changed-files {e.source}: {e.problem}; {e.fix} (the output of `git diff --name-only BASE`, "
            "or - to read it from stdin)"
        ) from None
    return text.splitlines()


def _relative(path: Path) -> str:
    """A stack file as `git diff --name-only` names it (relative to the project where it lies inside it), as
    ``fleet matrix`` names it."""
    from mockruntime.run import PROJECT_DIR

    try:
        return path.resolve().relative_to(PROJECT_DIR.resolve()).as_posix()
    except ValueError:
        return str(path)


def _shown(path: Path) -> str:
    """A stack file as ``fleet check``'s messages name it."""
    from mockruntime.run import PROJECT_DIR

    try:
        return str(path.resolve().relative_to(PROJECT_DIR))
    except ValueError:
        return str(path)


def _places(fleet: Any) -> set[tuple[str, str]]:
    """Where the clusters of a stack's raw ``nodefleet:fleet`` declare something another stack could declare too:
    its management clusters, its cluster names (their render folders and API servers) and its ``infraId``\\ s."""
    from nodefleet.stackfile.waves import management_clusters_of

    places = {("management", m) for m in management_clusters_of(fleet)}
    clusters = fleet.get("clusters") if isinstance(fleet, dict) else None
    for c in clusters if isinstance(clusters, list) else []:
        if not isinstance(c, dict):
            continue
        for key in ("name", "infraId"):
            if isinstance(c.get(key), str):
                places.add((key, c[key]))
    return places


def changed_check(
    args: argparse.Namespace, known: dict[str, Path], names: list[str]
) -> tuple[list[str], list[str]]:
    """(the stacks of ``names`` the change touches, the problems across the fleet that involve them)."""
    from cli.stacks import CACHED_FLEET, many_stacks, registry_of
    from nodefleet.fleet.registry import registry_path
    from nodefleet.stackfile.waves import (
        DEFAULT_WAVE,
        WAVES,
        StackWave,
        WaveError,
        normalize_wave,
        touched_stacks,
    )

    changed = changed_paths(args.changed_files)
    registry = registry_of(args.stacks_dir)
    with many_stacks(
        args.stacks_dir if len(known) >= CACHED_FLEET else None, [(p, _relative(p)) for p in known.values()]
    ):
        raw = _raw_fleets(known)
        stacks = []
        for name in known:
            fleet = raw[name]
            try:
                wave = normalize_wave(fleet.get("wave", DEFAULT_WAVE))
            except WaveError:
                wave = WAVES[0]
            clusters = fleet.get("clusters")
            catalogs = tuple(
                str(c["catalog"])
                for c in (clusters if isinstance(clusters, list) else [])
                if isinstance(c, dict) and isinstance(c.get("catalog"), str)
            )
            stacks.append(StackWave(name, wave, _relative(known[name]), "render", catalogs, tuple(
                m for kind, m in sorted(_places(fleet)) if kind == "management"
            )))  # fmt: skip
        hit = touched_stacks(changed, stacks, registry_file=_relative(registry_path(args.stacks_dir)))
        touched = [n for n in names if n in hit]
        involved, near = _judged_across(known, touched, raw, registry)
    print(
        f"fleet check --changed-files: {len(touched)} of {len(names)} stacks touched by the change"
        + (f" ({', '.join(touched)})" if touched else "")
        + f"; judged across the fleet with the {len(near)} others sharing a management cluster, a cluster name "
        "or an infraId with them",
        file=sys.stderr,
    )
    return touched, involved


def across_fleet(args: argparse.Namespace, known: dict[str, Path], names: list[str]) -> list[str]:
    """The problems across the fleet that involve the stacks ``names``, some of the stack files ``known``: what
    each of them, checked on its own, finds by reading every other stack file, found once for all of them
    (``fleet check --stacks``; ``import`` of several stacks into a folder that holds others)."""
    from cli.stacks import CACHED_FLEET, many_stacks, registry_of

    registry = registry_of(args.stacks_dir)
    with many_stacks(
        args.stacks_dir if len(known) >= CACHED_FLEET else None, [(p, _relative(p)) for p in known.values()]
    ):
        return _judged_across(known, names, _raw_fleets(known), registry)[0]


def _raw_fleets(known: dict[str, Path]) -> dict[str, Any]:
    """Every stack's ``nodefleet:fleet`` as its file holds it (empty where the file does not read)."""
    from mockruntime.run import read_stack_config
    from nodefleet.stackfile.model import CONFIG_KEY
    from nodefleet.stackfile.yamlfile import YAMLFileError

    raw: dict[str, Any] = {}
    for name in known:
        try:
            fleet = read_stack_config(known[name], _relative(known[name]), fast=True).get(CONFIG_KEY)
        except YAMLFileError:
            fleet = None  # judged by its own check if it is one of those judged
        raw[name] = fleet if isinstance(fleet, dict) else {}
    return raw


def _judged_across(
    known: dict[str, Path], touched: list[str], raw: dict[str, Any], registry: Any
) -> tuple[list[str], list[str]]:
    """(the problems that involve the stacks ``touched``, the other stacks they were judged with: those that
    share a place with one of them)."""
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from nodefleet.fleet.registry import fleet_problems, load_fleet_in
    from nodefleet.render.objects import remembered_plans
    from nodefleet.render.objects import tree_problems as problems_in
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    chosen = set(touched)
    mine = set().union(*(_places(raw[n]) for n in touched)) if touched else set()
    # The other stacks that share a place with a touched one: the only ones it can collide with.
    near = [n for n in known if n not in chosen and _places(raw[n]) & mine]
    loaded: list[tuple[Any, str]] = []
    trees: dict[Path, list[Any]] = {}
    with remembered_plans():
        for name in [*touched, *near]:
            shown = _shown(known[name])
            try:
                config = read_stack_config(known[name], shown, fast=True)
                fleet = load_fleet_in(registry, config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
            except (ConfigError, YAMLFileError, FileNotFoundError):
                continue  # a touched stack's own check says why; an untouched one is not this change's
            loaded.append((fleet, shown))
            if fleet.config.output.mode == "render":
                trees.setdefault(fleet.render_dir.path.parent, []).append((fleet, shown))
        problems = fleet_problems(registry, loaded)
        problems += [p for fleets in trees.values() if len(fleets) > 1 for p in problems_in(fleets)]
    files = [_shown(known[n]) for n in touched]
    return [p for p in dict.fromkeys(problems) if any(f in p for f in files)], near
