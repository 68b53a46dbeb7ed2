"""Boot image skew: is an RHCOS boot image close enough to the cluster's payload OS to be used?

Why this module exists: the component that picks a MachineSet's AMI and the ``boot-image-skew`` policy that
judges it must apply the same rules (DESIGN.md sections 1.2 and 3). :func:`evaluate_skew` is that one
function; :func:`manual_skew_record` computes what the MCO's ``Manual`` skew record must say.

The rules, from background/mco-bootimages-custompools.md:

* The MCO floor (sections 1.2, 1.3): from 4.22 the MCO sets ``Upgradeable=False`` when the recorded boot
  image is older than its compiled-in limit, RHCOS (RHEL) 9.2 / OCP 4.13.0. The MCO compares an
  ``rhcosVersion`` by its RHEL ``major.minor`` and an ``ocpVersion`` semver-style.
* Strict mode follows the enhancement's stated intent, a floor that moves with the RHEL minor ("a 9.6
  boot image is allowed until 9.8 ships"): the boot image's RHEL minor must not be older than the one the
  payload ships for the node's OS stream.
* RHEL majors (section 1.7): RHEL 8 -> 10 direct updates are to be prevented; a RHEL 9 boot image can
  rebase to a RHEL 10 node image, but a stream-matched boot image avoids the cross-stream rebase. Only
  forward stream migration (rhel-9 -> rhel-10) is supported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

from .versions import (
    OS_STREAMS,
    OCPVersion,
    RHCOSVersion,
    VersionError,
    os_streams,
    rhel_for_ocp,
)

__all__ = [
    "DEFAULT_SKEW_POLICY",
    "ENFORCED_FROM",
    "MANUAL_RHCOS_MAX_LENGTH",
    "MCO_FLOOR_OCP",
    "MCO_FLOOR_RHEL",
    "SkewFinding",
    "SkewPolicy",
    "evaluate_skew",
    "manual_skew_enforcement",
    "manual_skew_record",
]

#: The MCO's compiled-in skew limits (RHCOSVersionBootImageSkewLimit / OCPVersionBootImageSkewLimit).
MCO_FLOOR_RHEL: tuple[int, int] = (9, 2)
MCO_FLOOR_OCP = OCPVersion(4, 13, 0)
#: First OCP release whose MCO enforces the boot image floor.
ENFORCED_FROM = OCPVersion(4, 22, 0)
#: The CRD's maxLength for ``manual.rhcosVersion``.
MANUAL_RHCOS_MAX_LENGTH = 21

_DOCS = (
    "https://docs.redhat.com/en/documentation/openshift_container_platform/4.22/html/machine_configuration/"
)
_SKEW_DOCS = _DOCS + "mco-update-boot-skew-mgmt"


@dataclass(frozen=True)
class SkewPolicy:
    """How strictly boot images are judged.

    ``floor_rhcos`` is the RHEL ``(major, minor)`` floor and ``floor_ocp`` the OCP floor; the defaults are
    the MCO's compiled-in limits (9.2 / 4.13.0), which cannot be changed on the cluster. Raising them here
    makes nodefleet stricter than the MCO. ``floor_ocp`` applies to legacy RHCOS versions only (new-format
    versions carry no OCP version): to raise the floor for them, raise ``floor_rhcos``.
    ``strict`` enables the moving floor (boot image RHEL minor >= payload RHEL minor).
    """

    floor_rhcos: tuple[int, int] = MCO_FLOOR_RHEL
    floor_ocp: OCPVersion = MCO_FLOOR_OCP
    strict: bool = False

    def __post_init__(self) -> None:
        if (
            not isinstance(self.floor_rhcos, tuple)
            or len(self.floor_rhcos) != 2
            or not all(isinstance(p, int) and p >= 0 for p in self.floor_rhcos)
        ):
            raise ValueError(
                f"SkewPolicy.floor_rhcos must be a RHEL (major, minor) pair such as (9, 2), "
                f"got {self.floor_rhcos!r}; parse text with nodefleet.versions.parse_rhel()."
            )
        if not isinstance(self.floor_ocp, OCPVersion):
            raise ValueError(
                f"SkewPolicy.floor_ocp must be an OCPVersion, got {self.floor_ocp!r}; "
                "parse text with nodefleet.versions.parse_ocp()."
            )


@dataclass(frozen=True)
class SkewFinding:
    """One problem with a boot image. ``level`` "error" should block; "warning" is advisory."""

    level: Literal["error", "warning"]
    code: str
    message: str


#: The MCO's own rules: floor 9.2 / 4.13.0, not strict.
DEFAULT_SKEW_POLICY = SkewPolicy()


def _rhel(pair: tuple[int, int]) -> str:
    return f"{pair[0]}.{pair[1]}"


def _below_floor(boot_image: RHCOSVersion, policy: SkewPolicy) -> bool:
    if boot_image.rhel < policy.floor_rhcos:
        return True
    return boot_image.ocp is not None and boot_image.ocp < policy.floor_ocp.minor_key()


def evaluate_skew(
    boot_image: RHCOSVersion,
    cluster: OCPVersion,
    policy: SkewPolicy = DEFAULT_SKEW_POLICY,
    stream: str = "rhel-9",
) -> list[SkewFinding]:
    """Judge ``boot_image`` for a node of OS ``stream`` on a cluster running release ``cluster``.

    Returns the findings, empty when the boot image passes. Codes:

    * ``below-floor`` (error): older than the floor. Evaluated for every cluster release; below 4.22 the
      message says the MCO does not enforce it yet (the upgrade to 4.22 will be blocked).
    * ``strict-rhel-minor`` (error, strict mode only): same RHEL major as the payload, older minor.
    * ``rhel-8-to-10`` (error): a RHEL 8 boot image for a RHEL 10 payload.
    * ``rhel-9-to-10`` (warning): a RHEL 9 boot image for the rhel-10 stream (works by cross-stream rebase).
    * ``rhel-major-downgrade`` (error): a boot image of a newer RHEL major than the stream's payload.
    * ``unknown-stream`` / ``stream-unavailable`` (error): ``stream`` is not an OS stream, or the release
      does not ship it; the payload checks are skipped.
    * ``payload-unknown`` (warning): the release is older than nodefleet's OCP -> RHEL table; the payload
      checks are skipped.
    """
    findings: list[SkewFinding] = []
    image = boot_image.describe()
    where = f"cluster release {cluster}"

    if _below_floor(boot_image, policy):
        if cluster < ENFORCED_FROM:
            when = (
                f"The MCO of {cluster} does not enforce the floor yet, but from 4.22 it blocks minor "
                "upgrades (Upgradeable=False) while such a boot image is recorded."
            )
        else:
            when = "The MCO sets Upgradeable=False and blocks minor upgrades while it is recorded."
        findings.append(
            SkewFinding(
                "error",
                "below-floor",
                f"Boot image {image} on {where} is older than the boot image floor "
                f"(RHEL {_rhel(policy.floor_rhcos)} / OCP {policy.floor_ocp}). {when} Use the boot image "
                f"of the cluster's own release stream (its coreos-bootimages ConfigMap), or enrol the "
                f"MachineSet in MCO boot image management; see {_SKEW_DOCS}.",
            )
        )

    if stream not in OS_STREAMS:
        findings.append(
            SkewFinding(
                "error",
                "unknown-stream",
                f"OS stream '{stream}' for boot image {image} is not an OS stream; "
                f"use one of: {', '.join(OS_STREAMS)}.",
            )
        )
        return findings
    try:
        shipped = os_streams(cluster)
    except VersionError as exc:
        findings.append(
            SkewFinding(
                "warning",
                "payload-unknown",
                f"Boot image {image} could not be checked against the payload OS of {where}: {exc} "
                "The strict and RHEL major checks were skipped.",
            )
        )
        return findings
    if stream not in shipped:
        findings.append(
            SkewFinding(
                "error",
                "stream-unavailable",
                f"Boot image {image} is for OS stream '{stream}', which {where} does not ship (it ships "
                f"{', '.join(shipped)}; rhel-10 arrives with 4.22). Use stream rhel-9 or upgrade first.",
            )
        )
        return findings

    payload = rhel_for_ocp(cluster, stream)
    boot_major, payload_major = boot_image.rhel[0], payload[0]
    payload_text = f"the RHEL {_rhel(payload)} payload of {where} (stream {stream})"

    if policy.strict and boot_major == payload_major and boot_image.rhel < payload:
        findings.append(
            SkewFinding(
                "error",
                "strict-rhel-minor",
                f"Boot image {image} is older than {payload_text}; strict mode requires a boot image of "
                f"RHEL {_rhel(payload)} or newer. Use the boot image from this release's stream, or turn "
                "strict mode off to accept anything above the MCO floor.",
            )
        )
    if boot_major <= 8 and payload_major >= 10:
        findings.append(
            SkewFinding(
                "error",
                "rhel-8-to-10",
                f"Boot image {image} would update straight to {payload_text}; RHEL 8 -> 10 updates are "
                "not supported. Use a RHEL 10 boot image from the catalog's rhel-10 stream.",
            )
        )
    elif boot_major == payload_major - 1 and payload_major >= 10:
        findings.append(
            SkewFinding(
                "warning",
                "rhel-9-to-10",
                f"Boot image {image} is a RHEL {boot_major} image for {payload_text}; new nodes need a "
                "cross-stream rebase on first boot. Resolve the boot image from the catalog's "
                f"{stream} stream instead.",
            )
        )
    elif boot_major > payload_major:
        findings.append(
            SkewFinding(
                "error",
                "rhel-major-downgrade",
                f"Boot image {image} is newer than {payload_text}; OS streams only migrate forward. Use a "
                f"boot image from the catalog's {stream} stream.",
            )
        )
    return findings


def manual_skew_record(boot_images: Iterable[RHCOSVersion]) -> dict[str, str]:
    """The ``spec.bootImageSkewEnforcement.manual`` value for machines booted from ``boot_images``.

    The MCO wants the **oldest** boot image in use (ordered as :class:`RHCOSVersion` documents). The
    record uses ``mode: RHCOSVersion`` with the raw RHCOS version because the CRD's ``rhcosVersion``
    pattern accepts both the legacy and the new format, and because new-format versions carry no OCP
    version while legacy ones carry only ``x.y``, not the ``x.y.z`` that ``ocpVersion`` requires.
    Exception: a legacy version longer than the CRD's 21-character limit (a build number of two or more
    digits) is recorded as ``mode: OCPVersion`` with ``x.y.0``, a lower bound of the image's release.
    """
    images = list(boot_images)
    if not images:
        raise ValueError(
            "manual_skew_record() needs at least one boot image: the Manual record must name the oldest "
            "boot image in use. Pass the RHCOS versions of every declared MachineSet and NodePool."
        )
    oldest = min(images)
    if len(oldest.raw) <= MANUAL_RHCOS_MAX_LENGTH:
        return {"mode": "RHCOSVersion", "rhcosVersion": oldest.raw}
    if oldest.ocp is not None:
        # A legacy version always carries its OCP line; x.y.0 is a valid, conservative ocpVersion.
        return {"mode": "OCPVersion", "ocpVersion": f"{oldest.ocp[0]}.{oldest.ocp[1]}.0"}
    raise ValueError(
        f"Boot image RHCOS {oldest.raw} is longer than the {MANUAL_RHCOS_MAX_LENGTH} characters the "
        "MachineConfiguration CRD allows for rhcosVersion and carries no OCP version; record it by hand "
        "with mode OCPVersion and the OCP release that shipped it."
    )


def manual_skew_enforcement(boot_images: Iterable[RHCOSVersion]) -> dict[str, object]:
    """The whole ``spec.bootImageSkewEnforcement`` stanza: ``{"mode": "Manual", "manual": <record>}``."""
    return {"mode": "Manual", "manual": manual_skew_record(boot_images)}
