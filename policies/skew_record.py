"""The MCO's Manual boot image skew record must name the oldest boot image the cluster's MachineSets use."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    PolicyResource,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.bootimages.skew import manual_skew_record
from nodefleet.bootimages.versions import RHCOSVersion
from policies.boot_images import (
    CATALOGS_PROPERTY,
    RHCOSLookup,
    boot_image_rhcos,
    catalogs_for,
    declared_boot_image,
    provider_spec,
)
from policies.props import ReportViolation, annotations_of, as_map, map_at, name_of

_MACHINE_CONFIGURATION = (k.MACHINE_CONFIGURATION.token, k.MACHINE_CONFIGURATION.patch_token)


def parent_urn(resource: PolicyResource) -> str | None:
    """The parent's URN: the resolved parent object (CLI), else the option (harness mock runs)."""
    if resource.parent is not None:
        return resource.parent.urn
    return getattr(resource.opts, "parent", None) or None


def provider_urn(resource: PolicyResource) -> str | None:
    return resource.provider.urn if resource.provider is not None else None


def same_cluster(a: PolicyResource, b: PolicyResource) -> bool | None:
    """Whether two objects go to the same cluster: same parent component, else same provider; None: unknown."""
    pa, pb = parent_urn(a), parent_urn(b)
    if pa and pb:
        return pa == pb
    va, vb = provider_urn(a), provider_urn(b)
    if va and vb:
        return va == vb
    return None


def _name(resource: PolicyResource) -> str:
    return name_of(resource.props, resource.name)


def _left_to_the_mco(ms: PolicyResource) -> RHCOSLookup | None:
    """The boot image a MachineSet whose AMI the stack leaves to the MCO (``ignore_changes``) declares; None for
    one whose AMI is the stack's own.

    A stack policy gets each resource's final outputs from the engine, the live object: once the MCO's boot
    image controller has rewritten such an AMI, from the cluster's own boot images, the object no longer says
    what the stack declares, and the controller's AMI may be in no catalog of the project. The record nodefleet
    writes is computed from what the stack declares (``manual_skew_record`` of every MachineSet's catalog
    image), and so is judged by it, under ``check`` and on the engine alike.
    """
    if k.AMI_PATH not in (ms.opts.ignore_changes or []):
        return None
    return declared_boot_image(ms.props)


def _record_text(record: Mapping[str, Any]) -> str:
    mode = record.get("mode")
    value = record.get("rhcosVersion") if mode == "RHCOSVersion" else record.get("ocpVersion")
    return f"{{mode: {mode}, {'rhcosVersion' if mode == 'RHCOSVersion' else 'ocpVersion'}: {value}}}"


def _validate_record(args: StackValidationArgs, report: ReportViolation) -> None:
    configurations = [r for r in args.resources if r.resource_type in _MACHINE_CONFIGURATION]
    machine_sets = [r for r in args.resources if r.resource_type == k.MACHINE_SET.token]
    config = args.get_config()
    for mc in configurations:
        enforcement = map_at(mc.props, "spec", "bootImageSkewEnforcement")
        if enforcement.get("mode") != "Manual":
            continue
        where = f"MachineConfiguration '{_name(mc)}'"
        if len(configurations) == 1:
            members = machine_sets
        else:
            members = [ms for ms in machine_sets if same_cluster(mc, ms)]
        if not members:
            continue  # no MachineSet of this cluster is declared here: nothing to compare with
        versions: list[tuple[RHCOSVersion, str]] = []
        unknown: list[str] = []
        for ms in members:
            annotations = annotations_of(ms.props)
            ami = as_map(provider_spec(ms.props).get("ami")).get("id")
            lookup = _left_to_the_mco(ms) or boot_image_rhcos(
                annotations, ami, catalogs_for(annotations, config)
            )
            if lookup.version is None:
                unknown.append(f"MachineSet '{_name(ms)}': {lookup.problem}")
            else:
                versions.append((lookup.version, _name(ms)))
        if unknown:
            report(
                f"{where} records a Manual boot image skew record that cannot be verified, because the boot "
                f"image version of a MachineSet of its cluster is unknown. {' '.join(unknown)}",
                mc.urn,
            )
            continue
        expected = manual_skew_record(v for v, _ in versions)
        oldest_version, oldest_name = min(versions, key=lambda pair: pair[0])
        actual = as_map(enforcement.get("manual"))
        field = "rhcosVersion" if expected["mode"] == "RHCOSVersion" else "ocpVersion"
        if actual.get("mode") == expected["mode"] and actual.get(field) == expected[field]:
            continue
        shown = _record_text(actual) if actual else "no manual record"
        report(
            f"{where} has {shown} in spec.bootImageSkewEnforcement.manual, but the oldest boot image its "
            f"MachineSets declare is {oldest_version.describe()} (MachineSet '{oldest_name}'). The MCO "
            f"judges skew by this record, so it must name the oldest boot image in use; set it to "
            f"{_record_text(expected)} (nodefleet.bootimages.skew.manual_skew_record computes it).",
            mc.urn,
        )


skew_record = StackValidationPolicy(
    name="skew-record",
    description="A Manual boot image skew record names exactly the oldest boot image the cluster's "
    "MachineSets declare.",
    validate=_validate_record,
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=PolicyConfigSchema(properties={"catalogs": CATALOGS_PROPERTY}),
)
