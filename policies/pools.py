"""Custom MachineConfigPools: a MachineSet meant for pool X must boot straight into X (DESIGN.md 1.3)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.bootimages.versions import OCPVersion, VersionError, linear_minor, parse_ocp
from policies.boot_images import provider_spec
from policies.props import ReportViolation, annotations_of, as_map, as_text, map_at, name_of
from policies.skew_record import same_cluster

#: Roles that are not custom pools. ``infra`` and everything else under node-role.kubernetes.io/ is custom.
BUILTIN_ROLES = ("worker", "master")
USER_DATA_SUFFIX = "-user-data-managed"
#: First release whose MCO applies a custom pool's selector labels itself (MCO PR #5361, MCO-650).
EARLY_LABELS_FROM = "4.22"


def _role_label(pool: str) -> str:
    return f"{k.NODE_ROLE_PREFIX}{pool}"


@dataclass(frozen=True)
class PoolTarget:
    """Which custom pool(s) a MachineSet's machines boot into, from its node labels and user-data secret."""

    roles: Mapping[str, Any]  # custom pool -> value of its node-role label
    secret: str | None
    secret_pool: str | None  # X when the secret is `<X>-user-data-managed` and X is custom

    @property
    def pools(self) -> list[str]:
        return sorted(set(self.roles) | ({self.secret_pool} if self.secret_pool else set()))


def pool_target(props: Mapping[str, Any]) -> PoolTarget:
    """The custom pools a MachineSet (its props) targets; empty for worker MachineSets."""
    labels = map_at(props, "spec", "template", "spec", "metadata", "labels")
    roles = {
        key.removeprefix(k.NODE_ROLE_PREFIX): labels.get(key)
        for key in labels
        if key.startswith(k.NODE_ROLE_PREFIX) and key.removeprefix(k.NODE_ROLE_PREFIX) not in BUILTIN_ROLES
    }
    secret = as_text(as_map(provider_spec(props).get("userDataSecret")).get("name"))
    secret_pool = None
    if secret and secret.endswith(USER_DATA_SUFFIX):
        candidate = secret.removesuffix(USER_DATA_SUFFIX)
        if candidate and candidate not in BUILTIN_ROLES:
            secret_pool = candidate
    return PoolTarget(roles, secret, secret_pool)


def _selects_role(pool: Mapping[str, Any], role: str) -> bool:
    """Whether a MachineConfigPool's machineConfigSelector picks MachineConfigs of ``role``."""
    selector = as_map(as_map(pool.get("spec")).get("machineConfigSelector"))
    if as_map(selector.get("matchLabels")).get(k.LABEL_MC_ROLE) == role:
        return True
    expressions = selector.get("matchExpressions")
    if not isinstance(expressions, Sequence) or isinstance(expressions, str):
        return False
    for expression in expressions:
        e = as_map(expression)
        values = e.get("values")
        if (
            e.get("key") == k.LABEL_MC_ROLE
            and e.get("operator") == "In"
            and isinstance(values, Sequence)
            and role in list(values)
        ):
            return True
    return False


def _selects_nodes(pool: Mapping[str, Any], role: str) -> bool:
    node_selector = as_map(as_map(pool.get("spec")).get("nodeSelector"))
    labels = as_map(node_selector.get("matchLabels"))
    return _role_label(role) in labels and labels.get(_role_label(role)) == ""


def _pool_resource(pools: list[PolicyResource], ms: PolicyResource, role: str) -> PolicyResource | None:
    """The MachineConfigPool for ``role`` in the MachineSet's cluster: by name, else by node selector."""
    candidates = [p for p in pools if same_cluster(ms, p) is not False]
    by_name = [p for p in candidates if name_of(p.props, p.name) == role]
    if by_name:
        return by_name[0]
    by_selector = [p for p in candidates if _selects_nodes(p.props, role)]
    return by_selector[0] if by_selector else None


def _validate_labeling(args: StackValidationArgs, report: ReportViolation) -> None:
    pools = [r for r in args.resources if r.resource_type == k.MACHINE_CONFIG_POOL.token]
    reported_pools: set[tuple[str, str]] = set()
    for ms in args.resources:
        if ms.resource_type != k.MACHINE_SET.token:
            continue
        target = pool_target(ms.props)
        if not target.pools:
            continue
        where = f"MachineSet '{name_of(ms.props, ms.name)}'"
        if len(target.roles) > 1:
            labels = ", ".join(_role_label(r) for r in sorted(target.roles))
            report(
                f"{where} gives its nodes {len(target.roles)} custom roles ({labels}); a node may be in at most "
                "one custom MachineConfigPool (the MCO refuses to manage a node with several custom roles). "
                "Keep exactly one custom node-role label in spec.template.spec.metadata.labels.",
                ms.urn,
            )
        if target.secret_pool and target.roles and target.secret_pool not in target.roles:
            report(
                f"{where} boots from the user-data secret of pool '{target.secret_pool}' ({target.secret}) but labels "
                f"its nodes for {', '.join(sorted(target.roles))}; the node would boot into one pool and be "
                "moved to the other, with extra reboots. Use the same pool in both places.",
                ms.urn,
            )
        for pool in target.pools:
            label = _role_label(pool)
            if pool not in target.roles:
                report(
                    f"{where} boots into custom pool '{pool}' (user-data secret {target.secret}) but its node "
                    f'template lacks the label {label}; add {label}: "" to spec.template.spec.metadata.labels, '
                    "or the node stays a worker and the MCO moves it to the worker config.",
                    ms.urn,
                )
            elif target.roles[pool] != "":
                report(
                    f"{where} sets {label} to '{target.roles[pool]}'; role labels are empty-valued and the "
                    f'pool\'s node selector matches {label}: "". Set the value to "".',
                    ms.urn,
                )
            if target.secret != f"{pool}{USER_DATA_SUFFIX}" and target.secret_pool is None:
                report(
                    f"{where} is for custom pool '{pool}' but boots from user-data secret "
                    f"'{target.secret or '(none)'}'; set spec.template.spec.providerSpec.value.userDataSecret."
                    f"name to '{pool}{USER_DATA_SUFFIX}' (the MCO renders it for every pool) so the first "
                    "Ignition config served is the pool's own.",
                    ms.urn,
                )
            mcp = _pool_resource(pools, ms, pool)
            if mcp is None:
                report(
                    f"{where} boots into custom pool '{pool}', but no MachineConfigPool '{pool}' is declared in "
                    f"this stack for its cluster. Declare it (machineConfigSelector role In [worker, {pool}], "
                    f'nodeSelector matchLabels {label}: "") before the MachineSet: the Machine Config Server '
                    "answers 404 for an unknown pool.",
                    ms.urn,
                )
                continue
            if (mcp.urn, pool) in reported_pools:
                continue
            reported_pools.add((mcp.urn, pool))
            mcp_where = f"MachineConfigPool '{name_of(mcp.props, mcp.name)}'"
            if not _selects_nodes(mcp.props, pool):
                report(
                    f"{mcp_where} is pool '{pool}' of {where}, but its spec.nodeSelector.matchLabels lacks "
                    f'{label}: ""; add it so the pool owns the nodes the MachineSet labels.',
                    mcp.urn,
                )
            if not _selects_role(mcp.props, pool):
                report(
                    f"{mcp_where} does not select MachineConfigs of role '{pool}'; set spec.machineConfigSelector "
                    f"to matchExpressions [{{key: {k.LABEL_MC_ROLE}, operator: In, values: [worker, {pool}]}}] "
                    "so the pool inherits worker's configs and gets its own.",
                    mcp.urn,
                )


custom_pool_labeling = StackValidationPolicy(
    name="custom-pool-labeling",
    description="A MachineSet for custom pool X carries X's node-role label and user-data secret, X is "
    "declared with matching selectors, and no node gets two custom roles.",
    validate=_validate_labeling,
    enforcement_level=EnforcementLevel.MANDATORY,
)


def _validate_early_labels(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.MACHINE_SET.token:
        return
    props = args.props
    target = pool_target(props)
    if not target.pools:
        return
    release_text = annotations_of(props).get(k.ANNOTATION_RELEASE)
    if not release_text:
        return
    try:
        release: OCPVersion = parse_ocp(str(release_text))
        fixed = parse_ocp(str(args.get_config().get("fixedIn", EARLY_LABELS_FROM)))
        if linear_minor(release) >= linear_minor(fixed):
            return
    except VersionError:
        return  # boot-image-skew reports a malformed release annotation
    report(
        f"MachineSet '{name_of(props, args.name)}' boots into custom pool {', '.join(target.pools)} on cluster release {release}. "
        f"Before {fixed} the MCO does not apply the pool's labels itself: the node registers as a worker, "
        "is queued for the worker config, and reboots once more when the machine-api copies the pool label "
        f"(fixed in {fixed} by MCO PR #5361). Upgrade to {fixed} or later to boot straight into the pool, or "
        "accept the extra reboot per new node.",
        None,
    )


custom_pool_early_labels = ResourceValidationPolicy(
    name="custom-pool-early-labels",
    description="Custom-pool MachineSets on releases before 4.22 cost an extra reboot per new node.",
    validate=_validate_early_labels,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={
            "fixedIn": {
                "type": "string",
                "pattern": r"^[0-9]+\.[0-9]+$",
                "default": EARLY_LABELS_FROM,
                "description": "First OCP release whose MCO labels custom-pool nodes itself (MCO PR #5361).",
            }
        }
    ),
)
