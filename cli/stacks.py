"""Which stack a command works on, and the program run under the mock runtime for it."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.exits import InputError


def add_source(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    src.add_argument("--config-file", type=Path, help="a stack file elsewhere (Pulumi.<name>.yaml)")


def load(args: argparse.Namespace) -> tuple[str, dict[str, Any], str | None]:
    """(stack name, the stack file's ``config:`` block, the file as messages must name it).

    The file is ``None`` for ``--stack``: the program's default, ``stacks/Pulumi.<stack>.yaml``, is right.
    """
    from harness.mockrun import read_stack_config, stack_path
    from nodefleet.yamlfile import YAMLFileError

    try:
        if args.stack:
            return (
                args.stack,
                read_stack_config(stack_path(args.stack), f"stacks/Pulumi.{args.stack}.yaml"),
                None,
            )
        path: Path = args.config_file
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
        return stack, read_stack_config(path), str(path)
    except (FileNotFoundError, YAMLFileError) as exc:
        raise InputError(str(exc)) from None


def stack_file_shown(args: argparse.Namespace) -> str:
    """The stack file as messages name it: the ``--config-file`` path, else ``stacks/Pulumi.<stack>.yaml``."""
    return str(args.config_file) if getattr(args, "config_file", None) else f"stacks/Pulumi.{args.stack}.yaml"


def load_run(args: argparse.Namespace) -> Any:
    """The program for the chosen stack, run under the mock runtime (a ``harness.mockrun.MockRun``)."""
    return run_loaded(*load(args))


def run_loaded(stack: str, config: dict[str, Any], source: str | None) -> Any:
    """The program run under the mock runtime for a stack :func:`load` has read."""
    import pulumi

    from harness.mockrun import run_program

    try:
        return run_program(stack, config, source=source)
    except pulumi.RunError as exc:
        raise InputError(str(exc)) from None


def fleet_of(stack: str, config: dict[str, Any], source: str | None) -> Any:
    """The validated stack (a ``nodefleet.config.Fleet``) for a stack :func:`load` has read."""
    from harness.mockrun import PROJECT_DIR
    from nodefleet.config import CONFIG_KEY, ConfigError, load_fleet

    try:
        return load_fleet(config.get(CONFIG_KEY), stack, PROJECT_DIR, source=source)
    except ConfigError as e:
        raise InputError(str(e)) from None
