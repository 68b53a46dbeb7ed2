"""What the policy pack is told and what it says: the ``--policy-config`` file and the violations as
``check``, ``render`` and ``report`` print them."""

from __future__ import annotations

import argparse
from typing import Any

from cli.exits import InputError


def print_violations(violations: list[Any]) -> None:
    """Each violation: level, policy and resource, then its message indented (``check`` and ``render``)."""
    for v in violations:
        print(f"  {v.level.upper():9} {v.policy}  {v.resource.rsplit('::', 1)[-1] or '(stack)'}")
        for line in v.message.splitlines():
            print(f"      {line}")


def read_policy_config(args: argparse.Namespace) -> dict[str, object] | None:
    """The ``--policy-config`` file, validated against the pack's config schemas (InputError otherwise)."""
    if not args.policy_config:
        return None
    from nodefleet import files

    path = args.policy_config
    example = 'it takes the --policy-pack-config format, e.g. {"boot-image-skew": {"strict": true}}'
    try:
        text = files.read_text(path, what="policy config", limit=files.SMALL_FILE_BYTES, source=str(path))
        value = files.load_json(text, str(path))
    except files.FileProblem as exc:
        fix = example if exc.syntax else exc.fix
        raise InputError(f"--policy-config {exc.source}: {exc.problem}; {fix}") from None
    if not isinstance(value, dict):
        raise InputError(
            f"--policy-config {path}: the top level must be an object keyed by policy name, "
            f'not {type(value).__name__}; write it as e.g. {{"boot-image-skew": {{"strict": true}}}}'
        )
    from mockruntime.evaluate import policy_config_errors
    from policies.pack import POLICIES

    errors = policy_config_errors(POLICIES, value)
    if errors:
        raise InputError("\n".join(f"--policy-config {path}: {e}" for e in errors))
    return value
