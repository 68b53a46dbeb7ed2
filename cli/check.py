"""``check``: the program under the mock runtime, judged by the policy pack's own policy objects."""

from __future__ import annotations

import argparse
import json
import time

from cli.exits import EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.stacks import LoadedStack, load_stack
from cli.tree import tree_problems
from cli.verdicts import print_violations, read_policy_config
from engine.sizing import fleet_size_warning, kubernetes_providers, max_providers


def run(args: argparse.Namespace) -> int:
    from mockruntime.evaluate import evaluate_run
    from policies.pack import POLICIES

    started = time.perf_counter()
    limit = _max_providers(args)
    policy_config = read_policy_config(args)
    stack = load_stack(args)
    mock = stack.run
    _refuse_tree_collisions(stack)
    violations = evaluate_run(mock, POLICIES, policy_config)
    mandatory = [v for v in violations if v.level == "mandatory"]
    # Not a policy: the engine's memory per target cluster is a property of the run, not of a resource.
    providers = kubernetes_providers(mock.registrations)
    advice = [("fleet-size", w) for w in [fleet_size_warning(providers, limit)] if w]
    advice += [("instance-type", a) for a in stack.fleet.instance_type_advice()]
    warnings = [text for _, text in advice]
    if args.json:
        print(
            json.dumps(
                {
                    "stack": mock.stack,
                    "stackFile": stack.shown,
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
            f"nodefleet check: stack '{mock.stack}' ({stack.shown}): {len(mock.registrations)} "
            f"resources, {len(POLICIES)} policies, {elapsed:.1f}s (mock runtime, no providers)"
        )
        print_violations(violations)
        for name, text in advice:
            print(f"  ADVISORY  {name}  {text}")
        print(f"  {len(mandatory)} mandatory, {len(violations) - len(mandatory)} advisory")
    return EXIT_VIOLATIONS if mandatory else EXIT_OK


def _refuse_tree_collisions(stack: LoadedStack) -> None:
    """What ``render`` would refuse, ``check`` refuses too: objects another stack rendered into the same GitOps
    tree declares differently (:mod:`cli.tree`), so that the gate and the render agree."""
    from mockruntime.rendering import plan_render

    fleet = stack.fleet
    if fleet.config.output.mode != "render":
        return
    plan = plan_render(stack.run, fleet.render_directory, fleet.config.wave)
    problems = tree_problems(fleet, stack.shown, fleet.render_dir.path, plan)
    if problems:
        raise InputError("\n".join(problems))


def _max_providers(args: argparse.Namespace) -> int:
    try:
        return max_providers(args.max_providers)
    except ValueError as exc:
        raise InputError(str(exc)) from None
