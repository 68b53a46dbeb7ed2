"""Reads a fleet stack's configuration and builds every cluster in it."""

from __future__ import annotations

import functools
import os
from pathlib import Path

import pulumi

from components.hosted import HostedClusterArgs, HostedClusterNodes
from components.karpenter import (
    KarpenterOperatorArgs,
    KarpenterOperatorNodes,
    SelfManagedKarpenter,
    SelfManagedKarpenterArgs,
)
from components.kubernetes import cluster_provider
from components.standalone import StandaloneCluster, StandaloneClusterArgs
from nodefleet.fleet.registry import (
    STACKS_DIR_ENV,
    Registry,
    RegistryError,
    load_fleet_in,
    load_registry,
    registry_path,
)
from nodefleet.render.objects import ObjectPlan, fleet_plan
from nodefleet.render_layout import render_targets
from nodefleet.stackfile.adopt import AdoptError, import_ids
from nodefleet.stackfile.model import (
    CONFIG_KEY,
    STACK_FILE_ENV,
    ConfigError,
    Fleet,
    ResolvedCluster,
    stack_file,
)
from nodefleet.stackfile.secrets import secret_value_problem

#: Stack secrets by key (``nodefleet:<key>``), read before anything is registered so a missing one stops cleanly.
StackSecrets = dict[str, pulumi.Output[str]]


def stack_registry(project_dir: Path) -> Registry:
    """The fleet's registry of management clusters, beside this stack's file: ``stacks/`` (Pulumi's
    ``stackConfigDir``), or the folder ``NODEFLEET_STACKS_DIR`` names, else that of the file named in
    ``NODEFLEET_STACK_FILE`` (``--config-file``)."""
    named = os.environ.get(STACK_FILE_ENV)
    folder = os.environ.get(STACKS_DIR_ENV)
    stacks_dir = Path(folder) if folder else Path(named).parent if named else project_dir / "stacks"
    path = registry_path(stacks_dir)
    try:
        shown = path.resolve().relative_to(project_dir.resolve()).as_posix()
    except ValueError:
        shown = str(path)
    try:
        return load_registry(stacks_dir, shown)
    except RegistryError as e:
        raise pulumi.RunError(str(e)) from None


def load_stack_fleet(project_dir: Path) -> tuple[Fleet, StackSecrets, Registry]:
    """This stack's validated ``nodefleet:fleet``, judged against the fleet's registry, and its secrets; invalid
    config stops before any registration."""
    config = pulumi.Config("nodefleet")
    stack = pulumi.get_stack()
    source = os.environ.get(STACK_FILE_ENV) or stack_file(stack)
    registry = stack_registry(project_dir)
    try:
        raw = config.get_object("fleet")
    except pulumi.ConfigTypeError:
        # A scalar where the structured value belongs: the SDK's message names neither the file nor the fix.
        raise pulumi.RunError(
            f"{source}: nodefleet:fleet: is a plain value, not the structured fleet; write it as a mapping with "
            "output and clusters (see docs/configuration.md)"
        ) from None
    try:
        fleet = load_fleet_in(registry, raw, stack, project_dir, source)
    except ConfigError as e:
        # RunError prints the message alone, without a Python traceback.
        raise pulumi.RunError(str(e)) from None
    secrets: StackSecrets = {}
    for key, why in fleet.secret_keys():
        value = config.get_secret(key)
        if value is None:
            raise pulumi.RunError(
                f"{source}: nodefleet:{key} is not set ({why}). Set it with "
                f"`pulumi config set --secret nodefleet:{key} --stack {stack} < <file>`."
            )
        secrets[key] = value
    for key, why, kind in fleet.secret_uses():
        # The value is known only here, inside the Output: a wrong one stops the program where it resolves.
        secrets[key] = secrets[key].apply(
            functools.partial(_checked, f"{source}: nodefleet:{key} ({why})", kind, key, stack)
        )
    return fleet, secrets, registry


def _checked(where: str, kind: str, key: str, stack: str, value: str) -> str:
    problem = secret_value_problem(kind, value)
    if problem:
        # RunError: the engine prints the message alone. It is not a ValueError, so the SDK's serializers pass
        # it through unchanged instead of wrapping it in "While processing input ..." layers.
        raise pulumi.RunError(
            f"{where} {problem}. Set it with `pulumi config set --secret nodefleet:{key} --stack {stack} < <file>`."
        )
    return value


def _management_release(registry: Registry, management_cluster: str) -> str:
    """The release the registry says ``management_cluster`` runs, or "" where it does not say."""
    try:
        return registry.get(management_cluster).release or ""
    except RegistryError:
        return ""


def _supported_versions(registry: Registry, management_cluster: str) -> tuple[str, ...]:
    """The release lines the registry declares for ``management_cluster`` (none for a name it lacks: the stack
    was judged against the registry before, and a program built without one has nothing to say)."""
    try:
        return registry.get(management_cluster).supported_versions
    except RegistryError:
        return ()


def build_fleet(
    fleet: Fleet, secrets: StackSecrets, registry: Registry | None = None
) -> dict[str, pulumi.ComponentResource]:
    """Every cluster of ``fleet``; apply mode reaches each management cluster through the kubeconfig the
    fleet's ``registry`` gives it (without a registry: the stack's ``output.kubeconfig``)."""
    registry = registry or Registry("", exists=False)
    built: dict[str, pulumi.ComponentResource] = {}
    output = fleet.config.output
    # Objects several clusters declare identically (the Namespace hosted clusters share) are declared once.
    plan = fleet_plan(fleet)
    # By management cluster: hosted clusters share an object only with those on the same API server.
    declared: dict[str, dict[tuple[str, str, str], pulumi.Resource]] = {}
    adopting = _adopting(fleet, plan)
    for resolved in fleet.clusters:
        name = resolved.config.name
        if isinstance(resolved, ResolvedCluster):
            (target,) = render_targets(name, hosted=False)
            provider = cluster_provider(target, fleet.stack, output, adopting=adopting.get(target))
            built[name] = StandaloneCluster(name, StandaloneClusterArgs(resolved, provider))
            karpenter = resolved.config.karpenter
            if karpenter:
                built[f"{name}-karpenter"] = SelfManagedKarpenter(
                    f"{name}-karpenter",
                    SelfManagedKarpenterArgs(
                        resolved.config,
                        resolved.karpenter_images,
                        provider,
                        secrets[karpenter.ca_bundle_key],
                    ),
                )
            if resolved.config.karpenter_operator:
                built[f"{name}-karpenter"] = KarpenterOperatorNodes(
                    f"{name}-karpenter", KarpenterOperatorArgs(resolved.config, provider)
                )
            continue
        hc = resolved.config
        apply = output.mode == "apply"
        # One name for each folder everywhere: configuration refuses clusters whose folders coincide by it.
        management_target, hosted_target = render_targets(name, hosted=True)
        on_management = declared.setdefault(hc.management_cluster, {})
        built[name] = hosted = HostedClusterNodes(
            name,
            HostedClusterArgs(
                cluster=hc,
                management=cluster_provider(
                    management_target,
                    fleet.stack,
                    output,
                    kubeconfig=registry.kubeconfig(hc.management_cluster, output.kubeconfig),
                    adopting=adopting.get(management_target),
                ),
                hosted=cluster_provider(
                    hosted_target,
                    fleet.stack,
                    output,
                    kubeconfig=hc.hosted_kubeconfig,
                    adopting=adopting.get(hosted_target),
                ),
                secret_values={
                    ref.from_config: secrets[ref.from_config]
                    for ref, _ in hc.secret_refs()
                    if apply and ref.from_config
                },
                render=not apply,
                declared_elsewhere={key: on_management[key] for key in plan.left_out(name)},
                supported_versions=_supported_versions(registry, hc.management_cluster),
                registry=registry.source,
                management_release=_management_release(registry, hc.management_cluster),
            ),
        )
        on_management.update(hosted.declared)
    return built


def _adopting(fleet: Fleet, plan: ObjectPlan) -> dict[str, dict[tuple[str, str, str, str], str]]:
    """Apply mode: the import IDs of the live objects the stack adopts (``output.adopt``), by render target
    (provider), then by (group, kind, namespace, name). Render mode applies nothing, so adopts nothing; the list
    is checked against what the stack declares in both modes, so a stale list is found before the switch."""
    output = fleet.config.output
    if not output.adopt:
        return {}
    source = os.environ.get(STACK_FILE_ENV) or stack_file(fleet.stack)
    objects = [(o.target, o.key.group, o.key.kind, o.key.namespace, o.key.name) for o in plan.emitted]
    try:
        ids = import_ids(output.adopt, objects, f"{source}: {CONFIG_KEY}.output.adopt")
    except AdoptError as e:
        raise pulumi.RunError(str(e)) from None
    out: dict[str, dict[tuple[str, str, str, str], str]] = {}
    if output.mode != "apply":
        return out
    for (target, *key), import_id in ids.items():
        group, kind, namespace, name = key
        out.setdefault(target, {})[(group, kind, namespace, name)] = import_id
    return out
