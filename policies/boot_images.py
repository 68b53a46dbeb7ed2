"""Boot images: who sets a MachineSet's AMI and whether the MCO boot image controller can (ownership), and
whether the RHCOS version it boots is inside the skew its cluster supports (skew, advice)."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.bootimages.catalog import (
    BootImageCatalog,
    CatalogError,
    load_catalog,
    resolve_catalog_reference,
)
from nodefleet.bootimages.releases import parse_release_image
from nodefleet.bootimages.skew import MCO_FLOOR_OCP, MCO_FLOOR_RHEL, SkewPolicy, evaluate_skew
from nodefleet.bootimages.versions import (
    OCPVersion,
    RHCOSVersion,
    VersionError,
    default_stream,
    parse_ocp,
    parse_rhcos,
    parse_rhel,
)
from policies.props import (
    ReportViolation,
    annotations_of,
    as_map,
    as_seq,
    as_text,
    map_at,
    metadata_of,
    name_of,
    value_at,
)

_AMI_ID = re.compile(r"^ami-[0-9a-f]{8,17}$")
_ARCH = re.compile(r"(^|,)kubernetes\.io/arch=(amd64|arm64|s390x|ppc64le)(,|$)")


def provider_spec(props: Mapping[str, Any]) -> Mapping[str, Any]:
    """A MachineSet's ``spec.template.spec.providerSpec.value``; empty when absent or not a mapping."""
    return map_at(props, "spec", "template", "spec", "providerSpec", "value")


def _validate_ownership(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.MACHINE_SET.token:
        return
    props = args.props
    meta = metadata_of(props)
    where = f"MachineSet '{name_of(props, args.name)}'"
    ami = as_map(provider_spec(props).get("ami"))
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
    annotations = annotations_of(props)
    if not _ARCH.search(as_text(annotations.get(k.ANNOTATION_ARCH)) or ""):
        report(
            f"{where} lacks the annotation {k.ANNOTATION_ARCH}: kubernetes.io/arch=<amd64|arm64>; without it the "
            "boot image controller cannot tell the architecture on a multi-arch cluster and skips it.",
            None,
        )
    owner = annotations.get(k.ANNOTATION_OWNER)
    if owner == "mco" and k.AMI_PATH not in as_seq(args.opts.ignore_changes):
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


# ---------------------------------------------------------------------------------------------------------
# Boot image skew: the boot image's RHCOS version judged by nodefleet.bootimages.skew.evaluate_skew
# ---------------------------------------------------------------------------------------------------------

#: The project root: the catalog a MachineSet names, and catalog paths in policy config, are relative to it.
#: The pack is the project's ``policies/`` folder, so this holds for ``pulumi preview --policy-pack policies``
#: (whatever the working directory of the pack's process) and for ``python -m nodefleet check`` alike.
PROJECT_ROOT = Path(__file__).resolve().parent.parent
_CATALOG_DIR = PROJECT_ROOT / "catalogs"
_CATALOG_SUFFIXES = (".yaml", ".yml", ".json")
#: The OS stream of a boot image without a stream annotation or osstream label (what the MCO assumes).
_DEFAULT_STREAM = "rhel-9"
_FLOOR_RHEL = f"{MCO_FLOOR_RHEL[0]}.{MCO_FLOOR_RHEL[1]}"
_FLOOR_OCP = str(MCO_FLOOR_OCP)
_SKEW_TYPES = (k.MACHINE_SET.token, k.HYPERSHIFT_NODE_POOL.token)


def default_catalogs() -> list[str]:
    """Every catalog file (YAML or JSON) in the project's ``catalogs/`` folder, relative to the project root."""
    if not _CATALOG_DIR.is_dir():
        return []
    return sorted(
        p.relative_to(PROJECT_ROOT).as_posix()
        for p in _CATALOG_DIR.iterdir()
        if p.is_file() and p.suffix in _CATALOG_SUFFIXES
    )


#: JSON schema of the ``catalogs`` config property shared by every policy that looks AMIs up.
CATALOGS_PROPERTY: dict[str, Any] = {
    "type": "array",
    "items": {"type": "string"},
    "default": default_catalogs(),
    "description": "Boot image catalogs (coreos-bootimages ConfigMap exports or stream JSON) to look AMIs "
    "up in, relative to the project root, for objects that do not name their own catalog (hand-written "
    "MachineSets, HyperShift NodePools); searched after the catalog a nodefleet MachineSet names. Default: "
    "every catalog file in catalogs/.",
}


def _load(path: str) -> BootImageCatalog | str:
    """A catalog, or the reason it cannot be read; parsed once per file version (the pack runs per preview)."""
    try:
        stat = os.stat(path)
        version = (stat.st_mtime_ns, stat.st_size)
    except (OSError, ValueError):  # ValueError: a NUL in a hand-written catalog annotation; load says so
        version = (0, 0)
    return _load_version(path, version)


@functools.lru_cache(maxsize=128)
def _load_version(path: str, version: tuple[int, int]) -> BootImageCatalog | str:
    try:
        return load_catalog(path, _shown(path))
    except CatalogError as exc:
        return str(exc)


def _shown(path: str) -> str:
    """A catalog path as messages show it: relative to the project when inside it."""
    try:
        return Path(path).relative_to(PROJECT_ROOT).as_posix()
    except ValueError:
        return path


def catalog_paths(config: Mapping[str, Any]) -> list[str]:
    """Absolute paths of the catalogs a policy's ``catalogs`` config names (default: all in catalogs/)."""
    configured = config.get("catalogs")
    names = default_catalogs() if configured is None else [str(c) for c in configured]
    return [str(PROJECT_ROOT / name) for name in names]


def catalogs_for(annotations: Mapping[str, Any], config: Mapping[str, Any]) -> list[str]:
    """The catalogs to judge one object by: the one it was built from, then the configured ones.

    A nodefleet MachineSet names its catalog (``nodefleet.io/boot-image-catalog``, relative to the project),
    so it is judged by the file the program used, wherever it lives, without repeating it in policy config.
    The configured catalogs follow: they serve hand-written objects, and an MCO-managed MachineSet whose
    AMI Pulumi keeps from an earlier catalog (``ignore_changes``) after the named one was re-exported.
    """
    own = as_text(annotations.get(k.ANNOTATION_CATALOG))
    named = [str(resolve_catalog_reference(str(own), PROJECT_ROOT))] if own else []
    return list(dict.fromkeys(named + catalog_paths(config)))


@dataclass(frozen=True)
class RHCOSLookup:
    """The RHCOS version of a boot image, or why it cannot be established (``problem``)."""

    version: RHCOSVersion | None
    problem: str | None = None


def boot_image_rhcos(annotations: Mapping[str, Any], ami: Any, catalogs: Sequence[str]) -> RHCOSLookup:
    """RHCOS version of a boot image: the ``nodefleet.io/boot-image-rhcos`` annotation, else the catalogs.

    ``ami`` is the AMI id (or None when the object references its AMI some other way); ``catalogs`` comes
    from :func:`catalogs_for`. Shared by boot-image-skew, boot-image-advice and skew-record so they cannot
    disagree about which version a MachineSet boots.
    """
    recorded = annotations.get(k.ANNOTATION_RHCOS)
    if recorded:
        try:
            return RHCOSLookup(parse_rhcos(str(recorded)))
        except VersionError as exc:
            return RHCOSLookup(
                None,
                f"its annotation {k.ANNOTATION_RHCOS} is invalid ({exc}); pin the AMI from a boot image "
                "catalog so nodefleet records the catalog's version.",
            )
    if not isinstance(ami, str) or not ami:
        return RHCOSLookup(
            None,
            f"it references its AMI by something other than an id and has no {k.ANNOTATION_RHCOS} "
            "annotation; reference the AMI by id, pinned from a boot image catalog.",
        )
    errors: list[str] = []
    for path in catalogs:
        catalog = _load(path)
        if isinstance(catalog, str):
            errors.append(catalog)
            continue
        image = catalog.find_ami(ami)
        if image is not None:
            return RHCOSLookup(image.release)
    searched = ", ".join(_shown(p) for p in catalogs) or "none configured"
    own = as_text(annotations.get(k.ANNOTATION_CATALOG))
    built_from = f" It was built from catalog '{own}' ({k.ANNOTATION_CATALOG})." if own else ""
    unreadable = f" Unreadable catalogs: {' '.join(errors)}" if errors else ""
    return RHCOSLookup(
        None,
        f"AMI '{ami}' has no {k.ANNOTATION_RHCOS} annotation and is in none of the boot image catalogs "
        f"searched ({searched}), so its RHCOS version cannot be established.{built_from} Pin the AMI from a "
        "boot image catalog (the cluster's coreos-bootimages ConfigMap), or add the catalog that lists it to "
        f"the policy's `catalogs` config.{unreadable}",
    )


def declared_boot_image(props: Mapping[str, Any]) -> RHCOSLookup | None:
    """The boot image a nodefleet MachineSet declares, from what it names rather than from its AMI: its own
    catalog's image for its region, architecture and stream, as the program resolved it. None for an object
    that does not name its catalog (hand-written): it is judged by its AMI.

    For a MachineSet whose AMI the stack leaves to the MCO's boot image controller (``ignore_changes``): where
    the engine hands a policy the live object, its AMI is whatever the controller wrote last, from the
    cluster's own boot images, which may be in no catalog of the project.
    """
    annotations = annotations_of(props)
    own = as_text(annotations.get(k.ANNOTATION_CATALOG))
    if own is None:
        return None
    region = as_text(map_at(provider_spec(props), "placement").get("region"))
    arch = _ARCH.search(str(annotations.get(k.ANNOTATION_ARCH) or ""))
    stream = as_text(annotations.get(k.ANNOTATION_STREAM)) or _DEFAULT_STREAM
    path = str(resolve_catalog_reference(own, PROJECT_ROOT))
    catalog = _load(path)
    if isinstance(catalog, str):
        return RHCOSLookup(None, f"its catalog '{own}' ({k.ANNOTATION_CATALOG}) cannot be read: {catalog}")
    if region is None or arch is None:
        return RHCOSLookup(
            None,
            f"it names catalog '{own}' but not its region (providerSpec placement.region) and architecture "
            f"({k.ANNOTATION_ARCH}), so the boot image it declares cannot be looked up.",
        )
    try:
        image = catalog.resolve(region, arch.group(2), stream)
    except CatalogError as exc:
        return RHCOSLookup(None, f"its catalog '{own}' has no boot image for it: {exc}")
    return RHCOSLookup(image.release)


def _stream(meta: Mapping[str, Any], default: str = _DEFAULT_STREAM) -> str:
    annotations, labels = as_map(meta.get("annotations")), as_map(meta.get("labels"))
    return as_text(annotations.get(k.ANNOTATION_STREAM)) or as_text(labels.get(k.LABEL_OS_STREAM)) or default


@dataclass(frozen=True)
class _BootImageSubject:
    """What boot-image-skew judges: one object's boot image, its node release and the OS its node runs."""

    where: str
    kind: str
    release: OCPVersion
    #: The OS stream the node runs: its pool's (nodefleet MachineSets), else the object's own.
    stream: str
    #: The MachineConfigPool the node joins, when the object says (for the wording of stream findings).
    pool: str | None
    lookup: RHCOSLookup


def _subject(args: ResourceValidationArgs) -> _BootImageSubject | str | None:
    """The object to judge, a problem message, or None when there is nothing to judge."""
    props = args.props
    config = args.get_config()
    meta = metadata_of(props)
    annotations = annotations_of(props)
    name = name_of(props, args.name)
    if args.resource_type == k.MACHINE_SET.token:
        where = f"MachineSet '{name}'"
        release_text = annotations.get(k.ANNOTATION_RELEASE)
        if not release_text:
            return None  # hand-written: the cluster release is unknown
        try:
            release = parse_ocp(str(release_text))
        except VersionError as exc:
            return (
                f"{where}: its annotation {k.ANNOTATION_RELEASE} is not an OCP version ({exc}); set it to the "
                "cluster's release (x.y.z) so the boot image skew can be judged."
            )
        ami = as_map(provider_spec(props).get("ami")).get("id")
        pool_stream = as_text(annotations.get(k.ANNOTATION_POOL_STREAM))
        template_labels = map_at(props, "spec", "template", "metadata", "labels")
        pool = as_text(template_labels.get(k.LABEL_MACHINE_ROLE)) if pool_stream else None
        return _BootImageSubject(
            where,
            "MachineSet",
            release,
            pool_stream or _stream(meta),
            pool,
            boot_image_rhcos(annotations, ami, catalogs_for(annotations, config)),
        )
    if args.resource_type == k.HYPERSHIFT_NODE_POOL.token:
        where = f"HyperShift NodePool '{name}'"
        ami = value_at(props, "spec", "platform", "aws", "ami")
        if not ami:
            return None  # the payload's default boot image: nothing to judge
        image = value_at(props, "spec", "release", "image")
        try:
            node_release = parse_release_image(str(image))
        except VersionError:
            return None  # no or a digest-only release image: the node release is unknown
        # Without a stream of its own, a NodePool boots its release's default stream (rhel-10 from 5.0).
        stream = _stream(meta, default=default_stream(node_release))
        return _BootImageSubject(
            where,
            "NodePool",
            node_release,
            stream,
            None,
            boot_image_rhcos(annotations, ami, catalogs_for(annotations, config)),
        )
    return None


_NODEPOOL_HINT = (
    " For a HyperShift NodePool, removing spec.platform.aws.ami lets HyperShift pick the boot image of the "
    "NodePool's own release payload."
)


def _skew_findings(args: ResourceValidationArgs, policy: SkewPolicy) -> tuple[list[str], list[str]]:
    """(error messages, warning messages) for one object; both empty when there is nothing to judge.

    The level of every finding comes from ``nodefleet.bootimages.skew``: boot-image-skew reports the errors,
    boot-image-advice the warnings, of one and the same evaluation.
    """
    subject = _subject(args)
    if subject is None:
        return [], []
    if isinstance(subject, str):
        return [subject], []
    hint = _NODEPOOL_HINT if subject.kind == "NodePool" else ""
    if subject.lookup.version is None:
        return [f"{subject.where}: {subject.lookup.problem}{hint}"], []
    findings = evaluate_skew(subject.lookup.version, subject.release, policy, subject.stream, subject.pool)
    errors = [f"{subject.where}: {f.message}{hint}" for f in findings if f.level == "error"]
    warnings = [f"{subject.where}: {f.message}" for f in findings if f.level == "warning"]
    return errors, warnings


def _skew_policy(config: Mapping[str, Any], policy_name: str) -> SkewPolicy:
    """The SkewPolicy of a boot image policy's config; raises ValueError naming the bad key."""
    floor_rhel, floor_ocp = config.get("floorRhel", _FLOOR_RHEL), config.get("floorOcp", _FLOOR_OCP)
    try:
        rhel = parse_rhel(str(floor_rhel))
    except VersionError as exc:
        raise ValueError(f"{policy_name} config floorRhel: {exc}") from None
    try:
        ocp = parse_ocp(str(floor_ocp))
    except VersionError as exc:
        raise ValueError(f"{policy_name} config floorOcp: {exc}") from None
    return SkewPolicy(floor_rhcos=rhel, floor_ocp=ocp, strict=bool(config.get("strict", False)))


def _validator(policy_name: str, errors: bool) -> Callable[[ResourceValidationArgs, ReportViolation], None]:
    def validate(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type not in _SKEW_TYPES:
            return
        try:
            policy = _skew_policy(args.get_config(), policy_name)
        except ValueError as exc:
            report(f"{exc}; fix the policy pack config (floorRhel is 'major.minor', floorOcp 'x.y.z').", None)
            return
        found, advice = _skew_findings(args, policy)
        for message in found if errors else advice:
            report(message, None)

    return validate


#: The config both boot image policies take: one evaluation, split by level, needs the same settings.
SKEW_CONFIG = PolicyConfigSchema(
    properties={
        "strict": {
            "type": "boolean",
            "default": False,
            "description": "Also require the boot image's RHEL minor to be at least the payload's "
            "(the enhancement's moving floor), not only the MCO's compiled-in floor.",
        },
        "floorRhel": {
            "type": "string",
            "pattern": r"^[0-9]+\.[0-9]+$",
            "default": _FLOOR_RHEL,
            "description": "RHEL major.minor floor of boot images (the MCO's own is 9.2).",
        },
        "floorOcp": {
            "type": "string",
            "pattern": r"^[0-9]+\.[0-9]+\.[0-9]+$",
            "default": _FLOOR_OCP,
            "description": "OCP floor of legacy-format boot images (the MCO's own is 4.13.0).",
        },
        "catalogs": CATALOGS_PROPERTY,
    }
)

boot_image_skew = ResourceValidationPolicy(
    name="boot-image-skew",
    description="Every MachineSet and HyperShift NodePool boot image has a known RHCOS version inside the "
    "boot image skew its cluster release enforces.",
    validate=_validator("boot-image-skew", errors=True),
    enforcement_level=EnforcementLevel.MANDATORY,
    config_schema=SKEW_CONFIG,
)

boot_image_advice = ResourceValidationPolicy(
    name="boot-image-advice",
    description="Boot images that work today but are not the best choice are pointed out: below the floor "
    "on a release whose MCO does not enforce it yet, or a RHEL 9 boot image for a rhel-10 pool.",
    validate=_validator("boot-image-advice", errors=False),
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=SKEW_CONFIG,
)
