"""The example stacks the project ships in ``stacks/``: what tests that need known stacks iterate over.

Users keep their own stacks in ``stacks/`` too, so no test may take "every file in stacks/" to mean these
four: a test about the examples names them from here; a test about any stack must work for every stack.
"""

from __future__ import annotations

from pathlib import Path

#: The shipped example stacks, ``stacks/Pulumi.<name>.yaml``.
SHIPPED_STACKS: tuple[str, ...] = ("dev", "hosted", "karpenter", "rhel10")


def shipped_stack_files(project: Path) -> list[Path]:
    """The shipped example stack files of ``project``."""
    return [project / "stacks" / f"Pulumi.{name}.yaml" for name in SHIPPED_STACKS]
