"""``render``: the manifests the program declares, written in the Kubernetes provider's render layout."""

from __future__ import annotations

import argparse

from cli.exits import EXIT_OK
from cli.stacks import load_run


def run(args: argparse.Namespace) -> int:
    from harness.mockrun import PROJECT_DIR
    from harness.rendering import plan_render
    from nodefleet.config import OutputSettings

    mock = load_run(args)
    plan = plan_render(mock, OutputSettings().directory.replace("{stack}", mock.stack))
    for skipped in plan.skipped:
        print(f"  skipped {skipped} (values stay off disk)")
    for f in plan.files:
        root = (
            args.out if args.out else PROJECT_DIR / OutputSettings().directory.replace("{stack}", mock.stack)
        )
        file = root / f.relpath
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_bytes(f.content)
        print(f"  wrote {file.relative_to(PROJECT_DIR) if file.is_relative_to(PROJECT_DIR) else file}")
    print(
        f"nodefleet render: stack '{mock.stack}': {len(plan.files)} manifests "
        "(from the mock runtime, not the provider)"
    )
    return EXIT_OK
