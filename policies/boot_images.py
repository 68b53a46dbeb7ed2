"""Boot image ownership: who sets a MachineSet's AMI, and whether the MCO boot image controller can."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

from nodefleet import kinds as k

ReportViolation = Callable[[str, str | None], None]

_AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")
_ARCH = re.compile(r"(^|,)kubernetes\.io/arch=(amd64|arm64|s390x|ppc64le)(,|$)")


def _provider_spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    spec = props.get("spec") or {}
    template = spec.get("template") or {}
    return ((template.get("spec") or {}).get("providerSpec") or {}).get("value") or {}


def _validate_ownership(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.MACHINE_SET.token:
        return
    props = args.props
    meta = props.get("metadata") or {}
    name = meta.get("name") or args.name
    where = f"MachineSet '{name}'"
    ami = _provider_spec(props).get("ami") or {}
    ami_id = ami.get("id")
    if not ami_id or set(ami) - {"id"}:
        report(
            f"{where} references its AMI by {', '.join(sorted(ami)) or 'nothing'}; set providerSpec.value.ami to "
            "{id: ami-...} only. The MCO boot image controller skips MachineSets whose AMI is not an id, and "
            "nodefleet resolves ids from the release's boot image catalog.",
            None,
        )
    elif not _AMI_ID.match(str(ami_id)):
        report(
            f"{where}: '{ami_id}' is not an AMI id (ami-<hex>); take it from the boot image catalog.", None
        )
    if meta.get("ownerReferences"):
        report(
            f"{where} has ownerReferences; the MCO boot image controller skips owned MachineSets and resets the "
            "recorded boot image to the install version. Remove them.",
            None,
        )
    annotations = meta.get("annotations") or {}
    if not _ARCH.search(str(annotations.get(k.ANNOTATION_ARCH, ""))):
        report(
            f"{where} lacks the annotation {k.ANNOTATION_ARCH}: kubernetes.io/arch=<amd64|arm64>; without it the "
            "boot image controller cannot tell the architecture on a multi-arch cluster and skips it.",
            None,
        )
    owner = annotations.get(k.ANNOTATION_OWNER)
    if owner == "mco" and k.AMI_PATH not in (args.opts.ignore_changes or []):
        report(
            f"{where} is enrolled in MCO boot image management but Pulumi still owns its AMI; add ignore_changes "
            f"['{k.AMI_PATH}'] or every `pulumi up` fights the controller, which degrades after 3 identical "
            "patches and blocks minor upgrades.",
            None,
        )
    if owner == "nodefleet" and not annotations.get(k.ANNOTATION_RHCOS):
        report(
            f"{where} is pinned by nodefleet but records no RHCOS version ({k.ANNOTATION_RHCOS}); pin it from a "
            "boot image catalog so its skew can be judged.",
            None,
        )


boot_image_ownership = ResourceValidationPolicy(
    name="boot-image-ownership",
    description="A MachineSet's AMI is an id that exactly one owner sets: nodefleet from a catalog, or the MCO.",
    validate=_validate_ownership,
    enforcement_level=EnforcementLevel.MANDATORY,
)
