"""``check``: the program under the mock runtime, judged by the policy pack's own policy objects."""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from cli.exits import EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.stacks import load, load_run, stack_file_shown
from engine.sizing import fleet_size_warning, kubernetes_providers, max_providers


def run(args: argparse.Namespace) -> int:
    from harness.evaluate import evaluate_run
    from policies.pack import POLICIES

    started = time.perf_counter()
    limit = _max_providers(args)
    policy_config = _policy_config(args)
    mock = load_run(args)
    _refuse_tree_collisions(args, mock)
    violations = evaluate_run(mock, POLICIES, policy_config)
    mandatory = [v for v in violations if v.level == "mandatory"]
    # Not a policy: the engine's memory per target cluster is a property of the run, not of a resource.
    providers = kubernetes_providers(mock.registrations)
    advice = [("fleet-size", w) for w in [fleet_size_warning(providers, limit)] if w]
    fleet = _fleet(args)
    advice += [("instance-type", a) for a in fleet.instance_type_advice()]
    advice += [("zone", a) for a in fleet.zone_advice()]
    warnings = [text for _, text in advice]
    if args.json:
        print(
            json.dumps(
                {
                    "stack": mock.stack,
                    "stackFile": stack_file_shown(args),
                    "resources": len(mock.registrations),
                    "violations": [v.as_dict() for v in violations],
                    "kubernetesProviders": providers,
                    "warnings": warnings,
                },
                indent=2,
            )
        )
    else:
        elapsed = time.perf_counter() - started
        print(
            f"nodefleet check: stack '{mock.stack}' ({stack_file_shown(args)}): {len(mock.registrations)} "
            f"resources, {len(POLICIES)} policies, {elapsed:.1f}s (mock runtime, no providers)"
        )
        print_violations(violations)
        for name, text in advice:
            print(f"  ADVISORY  {name}  {text}")
        print(f"  {len(mandatory)} mandatory, {len(violations) - len(mandatory)} advisory")
    return EXIT_VIOLATIONS if mandatory else EXIT_OK


def _refuse_tree_collisions(args: argparse.Namespace, mock: Any) -> None:
    """What ``render`` would refuse, ``check`` refuses too: objects another stack rendered into the same GitOps
    tree declares differently (``cli.render``), so that the gate and the render agree."""
    from cli.render import tree_problems
    from harness.mockrun import PROJECT_DIR
    from harness.rendering import plan_render
    from nodefleet.config import CONFIG_KEY, load_fleet

    stack, config, source = load(args)
    fleet = load_fleet(config.get(CONFIG_KEY), stack, PROJECT_DIR, source=source)
    if fleet.config.output.mode != "render":
        return
    plan = plan_render(mock, fleet.render_directory, fleet.config.wave)
    problems = tree_problems(fleet, stack_file_shown(args), fleet.render_dir.path, plan)
    if problems:
        raise InputError("\n".join(problems))


def _fleet(args: argparse.Namespace) -> Any:
    """The validated stack, for the advice only it gives: instance types the shipped list does not know but
    may be newer than it (nodefleet.instance_types), zones only AWS can confirm."""
    from harness.mockrun import PROJECT_DIR
    from nodefleet.config import CONFIG_KEY, load_fleet

    stack, config, source = load(args)
    return load_fleet(config.get(CONFIG_KEY), stack, PROJECT_DIR, source=source)


def print_violations(violations: list[Any]) -> None:
    """Each violation: level, policy and resource, then its message indented (``check`` and ``render``)."""
    for v in violations:
        print(f"  {v.level.upper():9} {v.policy}  {v.resource.rsplit('::', 1)[-1] or '(stack)'}")
        for line in v.message.splitlines():
            print(f"      {line}")


def _max_providers(args: argparse.Namespace) -> int:
    try:
        return max_providers(args.max_providers)
    except ValueError as exc:
        raise InputError(str(exc)) from None


def policy_config(args: argparse.Namespace) -> dict[str, object] | None:
    """The ``--policy-config`` file, validated against the pack's config schemas (InputError otherwise)."""
    return _policy_config(args)


def _policy_config(args: argparse.Namespace) -> dict[str, object] | None:
    if not args.policy_config:
        return None
    from nodefleet.yamlfile import FileKindError, FileTooLargeError, read_regular_file

    path = args.policy_config
    try:
        value = json.loads(read_regular_file(path).decode("utf-8"))
    except FileNotFoundError:
        raise InputError(f"--policy-config {path}: no such file") from None
    except (FileKindError, FileTooLargeError) as exc:
        raise InputError(
            f"--policy-config {path}: {exc}; give a JSON file in the --policy-pack-config format, "
            'e.g. {"boot-image-skew": {"strict": true}}'
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise InputError(f"--policy-config {path}: cannot be read ({exc.__class__.__name__})") from None
    except json.JSONDecodeError as exc:
        raise InputError(
            f"--policy-config {path}: not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg}); "
            'it takes the --policy-pack-config format, e.g. {"boot-image-skew": {"strict": true}}'
        ) from None
    if not isinstance(value, dict):
        raise InputError(
            f"--policy-config {path}: the top level must be an object keyed by policy name, "
            f'not {type(value).__name__}; write it as e.g. {{"boot-image-skew": {{"strict": true}}}}'
        )
    from harness.evaluate import policy_config_errors
    from policies.pack import POLICIES

    errors = policy_config_errors(POLICIES, value)
    if errors:
        raise InputError("\n".join(f"--policy-config {path}: {e}" for e in errors))
    return value
