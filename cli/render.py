"""``render``: the manifests the program declares, written in the Kubernetes provider's render layout."""

from __future__ import annotations

import argparse
from pathlib import Path

import yaml

from cli.exits import EXIT_OK
from cli.stacks import load_run


def run(args: argparse.Namespace) -> int:
    from harness.mockrun import PROJECT_DIR
    from nodefleet.config import OutputSettings

    mock = load_run(args)
    written = 0
    for reg in mock.registrations:
        if not reg.custom or not reg.type.startswith("kubernetes:"):
            continue
        if reg.type == "kubernetes:core/v1:Secret":
            # Never written to disk: its values would be plaintext (see the no-plaintext-secrets policy).
            print(
                f"  skipped Secret {reg.inputs.get('metadata', {}).get('name', reg.name)} (values stay off disk)"
            )
            continue
        provider = mock.provider_of(reg)
        target = (
            provider.inputs.get("renderYamlToDirectory") if provider else None
        ) or OutputSettings().directory
        directory = args.out / Path(target).name if args.out else PROJECT_DIR / target
        manifest = {
            key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in reg.inputs
        }
        meta = manifest.get("metadata", {})
        # The Kubernetes provider's renderYamlToDirectory layout and file names.
        file = (
            directory
            / "1-manifest"
            / (
                f"{manifest['apiVersion'].replace('/', '_')}-{manifest['kind'].lower()}-"
                f"{meta.get('namespace', 'default')}-{meta.get('name', reg.name)}.yaml"
            )
        )
        file.parent.mkdir(parents=True, exist_ok=True)
        file.write_text(yaml.safe_dump(manifest, sort_keys=False))
        written += 1
        print(f"  wrote {file.relative_to(PROJECT_DIR) if file.is_relative_to(PROJECT_DIR) else file}")
    print(
        f"nodefleet render: stack '{mock.stack}': {written} manifests (from the mock runtime, not the provider)"
    )
    return EXIT_OK
