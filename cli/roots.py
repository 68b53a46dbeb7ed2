"""``--root`` and ``--catalog-root``: the operator allows a folder outside the project, from outside the stack file.

Both options add to the environment variables a pipeline sets (``NODEFLEET_RENDER_ROOT``,
``NODEFLEET_CATALOG_ROOTS``) for the duration of the command, so the program run under the mock runtime sees
exactly what it would see under ``pulumi`` with those variables set.
"""

from __future__ import annotations

import argparse
import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from nodefleet.stackfile.paths import CATALOG_ROOTS_ENV, RENDER_ROOTS_ENV


def add_roots(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--root",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help=f"allow output.directory inside DIR, outside the project (repeatable; adds to {RENDER_ROOTS_ENV})",
    )
    parser.add_argument(
        "--catalog-root",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help=f"allow catalog files inside DIR, outside the project (repeatable; adds to {CATALOG_ROOTS_ENV})",
    )


@contextlib.contextmanager
def allowed_roots(args: argparse.Namespace) -> Iterator[None]:
    """The command's ``--root``/``--catalog-root`` folders, added to the variables while it runs."""
    saved = {name: os.environ.get(name) for name in (RENDER_ROOTS_ENV, CATALOG_ROOTS_ENV)}
    try:
        for name, extra in (
            (RENDER_ROOTS_ENV, getattr(args, "root", [])),
            (CATALOG_ROOTS_ENV, getattr(args, "catalog_root", [])),
        ):
            if extra:
                listed = [str(p.expanduser().resolve()) for p in extra]
                if saved[name]:
                    listed.append(str(saved[name]))
                os.environ[name] = os.pathsep.join(listed)
        yield
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
