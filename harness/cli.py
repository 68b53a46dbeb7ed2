"""``python -m nodefleet``: the credential-free companion of ``pulumi preview --policy-pack policies``.

``check`` runs the program under Pulumi's mock runtime and evaluates the policy pack's own policy objects:
no CLI, no providers, no cloud or cluster credentials, seconds per stack. ``render`` writes the manifests
the program declares, for review. ``pulumi preview --policy-pack policies`` stays the gate: it also runs
the providers' checks, which the mock runtime does not.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import yaml

from harness.mockrun import PROJECT_DIR, MockRun, read_stack_config, run_program, stack_path

EXIT_OK, EXIT_VIOLATIONS, EXIT_INVALID = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m nodefleet",
        description="Check or render a nodefleet stack without the Pulumi CLI, providers or credentials.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  python -m nodefleet check --stack dev\n"
            "  python -m nodefleet check --config-file path/Pulumi.prod.yaml --json\n"
            "  python -m nodefleet render --stack hosted --out /tmp/manifests\n\n"
            "exit codes (check): 0 no mandatory violation, 1 mandatory violations, 2 invalid configuration\n"
            "`pulumi preview --policy-pack policies` stays the gate: it also runs the providers' checks."
        ),
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="{check,render}")
    for name, text in (
        ("check", "run the program under the mock runtime and evaluate the policy pack"),
        ("render", "write the Kubernetes manifests the program declares to a directory"),
    ):
        s = sub.add_parser(name, help=text, description=text)
        src = s.add_mutually_exclusive_group(required=True)
        src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
        src.add_argument("--config-file", type=Path, help="a stack file elsewhere (Pulumi.<name>.yaml)")
        if name == "check":
            s.add_argument("--json", action="store_true", help='print {"resources": N, "violations": [...]}')
            s.add_argument(
                "--policy-config",
                type=Path,
                help="policy pack config JSON, as for `pulumi preview --policy-pack-config`",
            )
        else:
            s.add_argument(
                "--out", type=Path, help="output directory (default: the stack's output.directory)"
            )
    return p


def _load(args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    if args.stack:
        return args.stack, read_stack_config(stack_path(args.stack))
    path: Path = args.config_file
    stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    return stack, read_stack_config(path)


def _run(args: argparse.Namespace) -> MockRun:
    stack, config = _load(args)
    return run_program(stack, config)


def _check(args: argparse.Namespace) -> int:
    from harness.evaluate import evaluate_run
    from policies.pack import POLICIES

    started = time.perf_counter()
    run = _run(args)
    policy_config = json.loads(args.policy_config.read_text()) if args.policy_config else None
    violations = evaluate_run(run, POLICIES, policy_config)
    mandatory = [v for v in violations if v.level == "mandatory"]
    if args.json:
        print(
            json.dumps(
                {"resources": len(run.registrations), "violations": [v.as_dict() for v in violations]},
                indent=2,
            )
        )
    else:
        elapsed = time.perf_counter() - started
        print(
            f"nodefleet check: stack '{run.stack}': {len(run.registrations)} resources, "
            f"{len(POLICIES)} policies, {elapsed:.1f}s (mock runtime, no providers)"
        )
        for v in violations:
            print(f"  {v.level.upper():9} {v.policy}  {v.resource.rsplit('::', 1)[-1] or '(stack)'}")
            for line in v.message.splitlines():
                print(f"      {line}")
        print(f"  {len(mandatory)} mandatory, {len(violations) - len(mandatory)} advisory")
    return EXIT_VIOLATIONS if mandatory else EXIT_OK


def _render(args: argparse.Namespace) -> int:
    from nodefleet.config import OutputSettings

    run = _run(args)
    written = 0
    for reg in run.registrations:
        if not reg.custom or not reg.type.startswith("kubernetes:"):
            continue
        if reg.type == "kubernetes:core/v1:Secret":
            # Never written to disk: its values would be plaintext (see the no-plaintext-secrets policy).
            print(
                f"  skipped Secret {reg.inputs.get('metadata', {}).get('name', reg.name)} (values stay off disk)"
            )
            continue
        provider = run.provider_of(reg)
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
        f"nodefleet render: stack '{run.stack}': {written} manifests (from the mock runtime, not the provider)"
    )
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    import pulumi

    args = _parser().parse_args(argv)
    try:
        return _check(args) if args.command == "check" else _render(args)
    except (pulumi.RunError, FileNotFoundError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_INVALID
