"""Skew: is a boot image close enough to its node's OS, and a node release close enough to its control plane?

Why this module exists: the component that picks a MachineSet's AMI, the configuration check and the
policies that judge the objects must apply the same rules (DESIGN.md sections 1.2 and 3). Each rule is one
function here, and every caller takes its findings, levels and wording from it:

* :func:`evaluate_skew` -- a boot image against the payload of the OS stream its node runs;
* :func:`stream_finding` -- the boot image's RHEL major against its pool's OS stream (also checked when the
  configuration is loaded);
* :func:`manual_skew_record` -- what the MCO's ``Manual`` skew record must say;
* :func:`node_version_skew` -- a HyperShift NodePool or node class release against its control plane, under
  one of the published skew profiles (:data:`SKEW_PROFILES`).

The boot image rules, from background/mco-bootimages-custompools.md:

* The MCO floor (sections 1.2, 1.3, 1.11): from 4.22 the MCO sets ``Upgradeable=False`` when the recorded
  boot image is older than its compiled-in limit, RHCOS (RHEL) 9.2 / OCP 4.13.0. The enforcement code is
  absent from the 4.20 and 4.21 MCO, so below 4.22 the finding is a warning (advisory): it becomes blocking
  once the cluster runs 4.22. The MCO compares an ``rhcosVersion`` by its RHEL ``major.minor`` and an
  ``ocpVersion`` semver-style.
* Strict mode follows the enhancement's stated intent, a floor that moves with the RHEL minor ("a 9.6
  boot image is allowed until 9.8 ships"): the boot image's RHEL minor must not be older than the one the
  payload ships for the node's OS stream.
* RHEL majors (section 1.7): RHEL 8 -> 10 direct updates are to be prevented; a RHEL 9 boot image can
  rebase to a RHEL 10 node image (one extra reboot), but a stream-matched boot image avoids the
  cross-stream rebase. Only forward stream migration (rhel-9 -> rhel-10) is supported, so a RHEL 10 node in
  a RHEL 9 pool is not a supported state.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from .versions import (
    OS_STREAMS,
    OCPVersion,
    RHCOSVersion,
    VersionError,
    linear_minor,
    os_streams,
    rhel_for_ocp,
)

__all__ = [
    "DEFAULT_SKEW_POLICY",
    "DEFAULT_SKEW_PROFILE",
    "ENFORCED_FROM",
    "MANUAL_RHCOS_MAX_LENGTH",
    "MCO_FLOOR_OCP",
    "MCO_FLOOR_RHEL",
    "SKEW_PROFILES",
    "NodeSkewRule",
    "SkewFinding",
    "SkewPolicy",
    "evaluate_skew",
    "manual_skew_enforcement",
    "manual_skew_record",
    "node_skew_rule",
    "node_version_skew",
    "stream_finding",
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
                f"got {self.floor_rhcos!r}; parse text with nodefleet.bootimages.versions.parse_rhel()."
            )
        if not isinstance(self.floor_ocp, OCPVersion):
            raise ValueError(
                f"SkewPolicy.floor_ocp must be an OCPVersion, got {self.floor_ocp!r}; "
                "parse text with nodefleet.bootimages.versions.parse_ocp()."
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
    pool: str | None = None,
) -> list[SkewFinding]:
    """Judge ``boot_image`` for a node that runs OS ``stream`` (of ``pool``) on a cluster at ``cluster``.

    ``stream`` is the OS the node runs -- its pool's stream -- not the stream its boot image was taken
    from: a machine pivots to its pool's OS on first boot. Returns the findings, empty when the boot image
    passes; the level of each finding is part of the rule. Codes:

    * ``below-floor``: older than the floor; an error from 4.22, where the MCO blocks minor upgrades while
      it is recorded, a warning below 4.22, where it does not enforce the floor yet.
    * ``strict-rhel-minor`` (error, strict mode only): same RHEL major as the payload, older minor.
    * ``rhel-8-to-10``, ``stream-ahead-of-pool`` (errors), ``stream-behind-pool`` (warning): the RHEL
      majors of boot image and node (:func:`stream_finding`).
    * ``unknown-stream`` / ``stream-unavailable`` (error): ``stream`` is not an OS stream, or the release
      does not ship it; the payload checks are skipped.
    * ``payload-unknown`` (warning): the release is older than nodefleet's OCP -> RHEL table; the payload
      checks are skipped.
    """
    findings: list[SkewFinding] = []
    image = boot_image.describe()
    where = f"cluster release {cluster}"

    if _below_floor(boot_image, policy):
        floor = f"RHEL {_rhel(policy.floor_rhcos)} / OCP {policy.floor_ocp}"
        fix = (
            f"Use the boot image of the cluster's own release stream (its coreos-bootimages ConfigMap), or "
            f"enrol the MachineSet in MCO boot image management; see {_SKEW_DOCS}."
        )
        if cluster < ENFORCED_FROM:
            # The 4.20/4.21 MCO has the API field but no enforcement code: nothing blocks this release, and
            # nothing on it can make the finding go away except a newer boot image. Blocking it would fail
            # every preview of an old cluster for a rule its MCO does not apply.
            findings.append(
                SkewFinding(
                    "warning",
                    "below-floor",
                    f"Boot image {image} on {where} is older than the boot image floor ({floor}). The MCO "
                    f"of {cluster} does not enforce the floor, but from 4.22 it does: once the cluster runs "
                    "4.22 it is blocked from further minor upgrades (Upgradeable=False) until a boot image "
                    f"at or above the floor is recorded. Move to a newer boot image before or during the "
                    f"upgrade to 4.22. {fix}",
                )
            )
        else:
            findings.append(
                SkewFinding(
                    "error",
                    "below-floor",
                    f"Boot image {image} on {where} is older than the boot image floor ({floor}). The MCO "
                    f"sets Upgradeable=False and blocks minor upgrades while it is recorded. {fix}",
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
    if policy.strict and boot_image.rhel[0] == payload[0] and boot_image.rhel < payload:
        findings.append(
            SkewFinding(
                "error",
                "strict-rhel-minor",
                f"Boot image {image} is older than the RHEL {_rhel(payload)} payload of {where} (stream "
                f"{stream}); strict mode requires a boot image of RHEL {_rhel(payload)} or newer. Use the "
                "boot image from this release's stream, or turn strict mode off to accept anything above the "
                "MCO floor.",
            )
        )
    major = stream_finding(boot_image, cluster, stream, pool)
    if major is not None:
        findings.append(major)
    return findings


def stream_finding(
    boot_image: RHCOSVersion, cluster: OCPVersion, stream: str, pool: str | None = None
) -> SkewFinding | None:
    """The boot image's RHEL major against the OS its node runs: ``stream`` (of ``pool``) on ``cluster``.

    One function for the configuration check and the policies, so both say the same thing:

    * ``stream-ahead-of-pool`` (error): a newer RHEL major than the pool runs, e.g. a rhel-10 boot image
      for a rhel-9 pool. OS streams only migrate forward; a RHEL 10 node in a RHEL 9 pool is not a
      supported state.
    * ``rhel-8-to-10`` (error): a RHEL 8 boot image for a RHEL 10 node; RHEL 8 -> 10 updates are not
      supported.
    * ``stream-behind-pool`` (warning): one RHEL major older, e.g. a rhel-9 boot image for a rhel-10 pool;
      every new node rebases across streams on first boot (one extra reboot).

    ``None`` when the majors match. Raises :class:`VersionError` when ``cluster`` does not ship ``stream``
    or is older than the payload table (:func:`evaluate_skew` reports those itself).
    """
    payload = rhel_for_ocp(cluster, stream)
    boot_major, payload_major = boot_image.rhel[0], payload[0]
    image = boot_image.describe()
    target = (
        f"pool '{pool}', which runs OS stream {stream} (RHEL {_rhel(payload)} on {cluster})"
        if pool
        else f"OS stream {stream} (RHEL {_rhel(payload)} on {cluster})"
    )
    if boot_major <= 8 and payload_major >= 10:
        return SkewFinding(
            "error",
            "rhel-8-to-10",
            f"Boot image {image} would update straight to {target}; RHEL 8 -> 10 updates are not "
            f"supported. Use a RHEL {payload_major} boot image from the catalog's {stream} stream.",
        )
    if boot_major > payload_major:
        if payload_major < 9:
            # Before OS streams a release has one OS; a boot image of a later release cannot go back to it.
            return SkewFinding(
                "error",
                "stream-ahead-of-pool",
                f"Boot image {image} is RHEL {boot_major}, newer than {target}: its nodes would have to "
                "downgrade their OS on first boot, which is not supported. Use the boot image catalog of the "
                "cluster's own release.",
            )
        newer = f"rhel-{boot_major}"
        if not pool:
            fix = f"Use a boot image from the catalog's {stream} stream"
        elif newer in os_streams(cluster):
            fix = (
                f"Boot it from the pool's stream (stream: {stream}), or move the pool to {newer} "
                "(osImageStream; for the worker pool, the cluster's osImageStream)"
            )
        else:
            fix = f"Boot it from the pool's stream (stream: {stream}); {cluster} ships no {newer} stream"
        return SkewFinding(
            "error",
            "stream-ahead-of-pool",
            f"Boot image {image} is RHEL {boot_major}, newer than {target}: a RHEL {boot_major} node in a "
            f"RHEL {payload_major} pool is not a supported state, and OS streams only migrate forward "
            f"(rhel-9 -> rhel-10). {fix}.",
        )
    if 9 <= boot_major < payload_major:
        fix = (
            f"Boot it from the {stream} stream (stream: {stream}, bootImage: pinned; the MCO boot image "
            f"controller manages only rhel-9), or, if the pool runs rhel-{boot_major} after all (a cluster "
            f"upgraded to 5.0 keeps its rhel-9 default), declare it (osImageStream: rhel-{boot_major})"
            if pool
            else f"Resolve the boot image from the catalog's {stream} stream instead"
        )
        return SkewFinding(
            "warning",
            "stream-behind-pool",
            f"Boot image {image} is RHEL {boot_major} for {target}: every new node needs a cross-stream "
            f"rebase to RHEL {payload_major} on first boot (one extra reboot). {fix}.",
        )
    return None


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


# ---------------------------------------------------------------------------------------------------------
# Node release vs control plane (HyperShift NodePools, OpenshiftEC2NodeClass.spec.version)
# ---------------------------------------------------------------------------------------------------------

#: The published forms of the node/control-plane limit, by profile name, with their sources.
SKEW_PROFILES: Mapping[str, str] = {
    "ocp": "OpenShift hosted control planes documentation, openshift-docs modules/hcp-np-version-skew.adoc: "
    "a NodePool may trail a HostedCluster of an even minor (4.18) by up to 2 minors, of an odd minor (4.17) "
    "by 1",
    "hypershift": "what the HyperShift operator accepts, openshift/hypershift support/supportedversion/"
    "version.go: up to 3 minors behind, OCP 5.x counted as 4.(23+x)",
    "rosa": "ROSA with hosted control planes, openshift-docs modules/machine-pools-hcp.adoc: machine pools "
    "within 2 minor (Y-stream) versions of the control plane",
}
#: The documented support statement: what a support case will be judged by.
DEFAULT_SKEW_PROFILE = "ocp"


@dataclass(frozen=True)
class NodeSkewRule:
    """How far nodes may trail one control-plane release under a profile; they may never lead it."""

    profile: str
    control_plane: OCPVersion
    max_behind: int
    #: Why ``max_behind`` is what it is, for messages (names the profile and its source).
    reason: str


def node_skew_rule(
    control_plane: OCPVersion, profile: str = DEFAULT_SKEW_PROFILE, max_behind: int | None = None
) -> NodeSkewRule:
    """The rule for nodes of a control plane at ``control_plane``; ``max_behind`` overrides the profile's.

    * ``ocp``: y-2 when the control plane's minor is even, y-1 when it is odd. The documentation states it
      for 4.x ("where <x> is an even release number, such as 4.18"); nodefleet applies the same parity to
      the 5.x minor (5.0 is even), counting the distance across 4.22 -> 5.0 as one minor.
    * ``hypershift``: y-3.
    * ``rosa``: y-2.

    Raises ``ValueError`` for an unknown profile.
    """
    if profile not in SKEW_PROFILES:
        raise ValueError(
            f"'{profile}' is not a version skew profile; use one of: {', '.join(SKEW_PROFILES)} "
            f"(default {DEFAULT_SKEW_PROFILE})."
        )
    line = f"{control_plane.major}.{control_plane.minor}"
    if profile == "ocp":
        even = control_plane.minor % 2 == 0
        limit = 2 if even else 1
        reason = (
            f"profile ocp: the OpenShift documentation allows y-{limit} for a control plane of an "
            f"{'even' if even else 'odd'} minor such as {line}"
        )
    elif profile == "hypershift":
        limit, reason = 3, "profile hypershift: the HyperShift operator accepts y-3"
    else:
        limit, reason = 2, "profile rosa: ROSA keeps machine pools within y-2"
    if max_behind is not None:
        limit, reason = max_behind, f"maxMinorsBehind {max_behind} overrides {reason}"
    return NodeSkewRule(profile, control_plane, limit, reason)


def node_version_skew(
    node: OCPVersion,
    control_plane: OCPVersion,
    profile: str = DEFAULT_SKEW_PROFILE,
    max_behind: int | None = None,
) -> str | None:
    """Why a node release ``node`` is outside the skew of its control plane's, or ``None`` when inside.

    Every profile forbids a node newer than its control plane, patch and pre-release included (5.0.0-ec.2
    nodes on a 5.0.0-ec.1 control plane lead it). The minors behind are counted on one line, 4.22 -> 5.0
    being one minor (:func:`~nodefleet.bootimages.versions.linear_minor`). The text completes a sentence that starts
    with the subject and its release, e.g. "NodePool 'a' runs 4.18.9 (spec.release.image), …"; it says how
    to fix it. Raises ``ValueError`` for an unknown profile and :class:`VersionError` for an OCP major
    nodefleet cannot place on the release line.
    """
    rule = node_skew_rule(control_plane, profile, max_behind)
    if node > control_plane:
        return (
            f"newer than its control plane at {control_plane}; nodes may never lead the control plane. Upgrade "
            f"the control plane first, or set the node release to {control_plane} or older."
        )
    behind = linear_minor(control_plane) - linear_minor(node)
    if behind <= rule.max_behind:
        return None
    counted = " (OCP 5.0 counts as 4.23)" if 5 in (node.major, control_plane.major) else ""
    oldest = _line_before(control_plane, rule.max_behind)
    return (
        f"{behind} minor releases behind its control plane at {control_plane}{counted}; at most "
        f"{rule.max_behind} are supported ({rule.reason}). Upgrade the nodes to {oldest} or newer before "
        "upgrading the control plane further."
    )


def _line_before(version: OCPVersion, minors: int) -> str:
    """The release line ``minors`` minors before ``version``'s, on the 4.x/5.x line (5.0 follows 4.22)."""
    position = linear_minor(version) - minors
    return f"5.{position - 23}" if position >= 23 and version.major >= 5 else f"4.{position}"
