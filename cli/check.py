"""``check``: the program under the mock runtime, judged by the policy pack's own policy objects."""

from __future__ import annotations

import argparse
import json
import os
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
    advice += [("zone", a) for a in stack.fleet.zone_advice()]
    # Said, not judged: a Namespace several stacks render is safe (none of them deletes it).
    notes = [("shared-namespace", a) for a in _shared_namespace_advice(args, stack)]
    notes += [("secret", a) for a in _secrets_to_create(stack)]
    warnings = [text for _, text in advice + notes]
    kubernetes = _kubernetes_versions(mock, policy_config)
    if args.json:
        print(
            json.dumps(
                {
                    "stack": mock.stack,
                    "stackFile": stack.shown,
                    "resources": len(mock.registrations),
                    "violations": [v.as_dict() for v in violations],
                    "kubernetesProviders": providers,
                    "kubernetesVersions": [
                        {"version": v, "basis": b, "objects": n} for (v, b), n in kubernetes.items()
                    ],
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
        if kubernetes:
            print(
                "  Kubernetes (crd-schema): "
                + "; ".join(
                    f"{v} for {n} object{'s' if n != 1 else ''} ({b})" for (v, b), n in kubernetes.items()
                )
            )
        print_violations(violations)
        for name, text in advice:
            print(f"  ADVISORY  {name}  {text}")
        for name, text in notes:
            print(f"  NOTE  {name}  {text}")
        # The summary counts every ADVISORY line printed above it, the policies' and the run's own.
        advisory = len(violations) - len(mandatory) + len(advice)
        print(
            f"  {len(mandatory)} mandatory, {advisory} advisory"
            + (f", {len(notes)} note{'s' if len(notes) != 1 else ''}" if notes else "")
        )
    return EXIT_VIOLATIONS if mandatory else EXIT_OK


def _kubernetes_versions(mock: object, policy_config: dict[str, object] | None) -> dict[tuple[str, str], int]:
    """How many custom resources crd-schema judges by which Kubernetes version, and why (the cluster each lands
    on, or the policy config's override), sorted by version and reason: the order the mock runtime registers
    resources in follows which outputs resolve first, so it can differ from one run to the next."""
    from policies.crd_schema import kubernetes_for

    setting = (policy_config or {}).get("crd-schema")
    override = setting.get("kubernetesVersion") if isinstance(setting, dict) else None
    out: dict[tuple[str, str], int] = {}
    for reg in getattr(mock, "registrations", []):
        parts = reg.type.split(":")
        if len(parts) != 3 or parts[0] != "kubernetes" or "." not in parts[1].split("/")[0]:
            continue  # not a custom resource: crd-schema does not judge it
        key = kubernetes_for(reg.type, reg.inputs, override)
        out[key] = out.get(key, 0) + 1
    return dict(sorted(out.items()))


def _refuse_tree_collisions(stack: LoadedStack) -> None:
    """What ``render`` would refuse, ``check`` refuses too: objects another stack rendered into the same GitOps
    tree declares differently (:mod:`cli.tree`), so that the gate and the render agree; and what the fleet's
    registry refuses across its stacks, for apply-mode stacks too."""
    from mockruntime.rendering import plan_render
    from nodefleet.render.wiring import folder_fields

    fleet = stack.fleet
    plan = (
        plan_render(
            stack.run, fleet.render_directory, fleet.config.wave, folder_fields(fleet, stack.registry)
        )
        if fleet.config.output.mode == "render"
        else None
    )
    problems = tree_problems(fleet, stack.shown, fleet.render_dir.path, plan, stack.siblings, stack.registry)
    if problems:
        raise InputError("\n".join(problems))


def _secrets_to_create(stack: LoadedStack) -> list[str]:
    """The Secrets the HostedClusters reference that nodefleet does not write (all of them in render mode, those
    without fromConfig in apply mode), per management cluster: they must exist there before HyperShift can
    create the clusters."""
    from nodefleet.render.wiring import secrets_not_written

    why = (
        "render mode writes no Secret"
        if stack.fleet.config.output.mode == "render"
        else "nodefleet writes only Secrets with fromConfig"
    )
    return [
        f"{why}: on management cluster '{mc}' these must exist before HyperShift creates the clusters: "
        f"{', '.join(entries)} (docs/gitops.md, 'Credentials the wiring needs')"
        for mc, entries in secrets_not_written(stack.fleet).items()
    ]


def _shared_namespace_advice(args: argparse.Namespace, stack: LoadedStack) -> list[str]:
    """The Namespaces this stack renders that other stacks of its GitOps tree (the stack files beside it and in
    stacks/ whose render directories share its parent) render too on the same management cluster
    (:func:`nodefleet.render.objects.shared_namespaces`): said, not refused; none of them deletes it."""
    from cli.fleet import _read_config
    from cli.tree import IN_FLEET_ENV
    from mockruntime.run import PROJECT_DIR
    from nodefleet.fleet.registry import load_fleet_in
    from nodefleet.render.objects import shared_namespaces
    from nodefleet.stackfile.hosted import HostedCluster
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    if os.environ.get(IN_FLEET_ENV):
        return []  # `fleet check` says it once for the tree
    fleet = stack.fleet
    mine = {
        (c.management_cluster, c.namespace)
        for c in fleet.config.clusters
        if isinstance(c, HostedCluster) and c.create_namespace
    }
    if fleet.config.output.mode != "render" or not mine:
        return []
    folders = {(stack.siblings or PROJECT_DIR / "stacks").resolve()}
    fleets = [(fleet, stack.shown)]
    for folder in sorted(folders):
        for path in sorted(folder.glob("Pulumi.*.yaml")):
            name = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
            if name == stack.name:
                continue
            try:
                raw = _read_config(path, str(path)).get(CONFIG_KEY)
                if not mine & _hosted_namespaces(raw):
                    continue  # a quick look first: most stack files share nothing with this one
                other = load_fleet_in(stack.registry, raw, name, PROJECT_DIR)
            except (ConfigError, YAMLFileError, OSError):
                continue  # its own check says why
            if (
                other.config.output.mode == "render"
                and other.render_dir.path.parent == fleet.render_dir.path.parent
            ):
                fleets.append((other, str(path)))
    return [
        line for line in shared_namespaces(fleets) if f" {stack.name}," in line or f" {stack.name}:" in line
    ]


def _hosted_namespaces(raw: object) -> set[tuple[str, str]]:
    """(management cluster, namespace) of every hosted cluster a raw ``nodefleet:fleet`` declares a Namespace for."""
    from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER

    out = set()
    clusters = raw.get("clusters") if isinstance(raw, dict) else None
    for c in clusters if isinstance(clusters, list) else []:
        if isinstance(c, dict) and c.get("kind") == "hosted" and c.get("createNamespace", True) is not False:
            mc = c.get("managementCluster", DEFAULT_MANAGEMENT_CLUSTER)
            out.add((str(mc), str(c.get("namespace", "clusters"))))
    return out


def _max_providers(args: argparse.Namespace) -> int:
    try:
        return max_providers(args.max_providers)
    except ValueError as exc:
        raise InputError(str(exc)) from None
