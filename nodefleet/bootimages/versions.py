"""OpenShift (OCP) and RHCOS version parsing, ordering and the OCP -> RHEL payload table.

Why this module exists: every skew decision nodefleet makes -- which boot image is the oldest, whether a
boot image is below the MCO floor, whether a HyperShift NodePool trails its HostedCluster further than
its skew profile allows -- starts from a version string. Parsing them in one place means the components that build
MachineSets and the policies that judge them cannot disagree about what ``416.94.202405291527-0`` means.

Background (DESIGN.md section 1.2, background/mco-bootimages-custompools.md sections 1.2 and 6):

* OCP versions are ``x.y.z`` with an optional pre-release (``5.0.0-ec.2``, ``4.16.0-rc.1``,
  ``5.0.0-0.nightly-2026-05-20-043516``).
* RHCOS versions come in two formats:

  - legacy (up to 4.18): ``<OCP major><OCP minor>.<RHEL major><RHEL minor>.<YYYYMMDDHHmm>-<build>``,
    e.g. ``416.94.202405291527-0`` = OCP 4.16 on RHEL 9.4;
  - new (4.19 and later): ``<RHEL major>.<RHEL minor>.<YYYYMMDD>-<build>``, e.g. ``9.6.20251023-0``;
    it names the RHEL release only, not the OCP release.

  The MCO tells them apart by the length of the date field (12 digits = legacy, 8 = new), and so does
  :func:`parse_rhcos`.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass, field
from datetime import datetime

__all__ = [
    "OCP_FORMATS",
    "OS_STREAMS",
    "RELEASE_FORM",
    "RHCOS_FORMATS",
    "OCPVersion",
    "RHCOSVersion",
    "VersionError",
    "default_stream",
    "known_release",
    "kubernetes_of",
    "linear_minor",
    "minors_between",
    "os_streams",
    "parse_ocp",
    "parse_release",
    "parse_rhcos",
    "parse_rhel",
    "rhel_for_ocp",
]

OCP_FORMATS = "'x.y.z' (4.22.3), 'x.y.z-<pre-release>' (5.0.0-ec.2) or 'x.y' (4.16)"
RHCOS_FORMATS = (
    "legacy '<OCP major+minor>.<RHEL major+minor>.<YYYYMMDDHHmm>-<build>' (416.94.202405291527-0) "
    "or '<RHEL major>.<RHEL minor>.<YYYYMMDD>-<build>' (9.6.20251023-0)"
)

#: The OS stream names MachineConfigPools, the ``machineconfiguration.openshift.io/osstream`` label and the
#: ``coreos-bootimages`` ConfigMap's ``streams`` key use.
OS_STREAMS: tuple[str, ...] = ("rhel-9", "rhel-10")


class VersionError(ValueError):
    """A version string nodefleet cannot interpret, or a version outside what nodefleet knows about.

    It is a ValueError so pydantic validators that call the parsers turn it into a field error.
    """


# ---------------------------------------------------------------------------------------------------------
# OCP versions
# ---------------------------------------------------------------------------------------------------------

_NUM = r"(?:0|[1-9][0-9]*)"
_PRE_IDENT = r"[0-9A-Za-z-]+"
_OCP_RE = re.compile(
    rf"^(?P<major>{_NUM})\.(?P<minor>{_NUM})"
    rf"(?:\.(?P<patch>{_NUM})(?:-(?P<pre>{_PRE_IDENT}(?:\.{_PRE_IDENT})*))?)?$"
)

# Sort key of a pre-release: (0, identifiers) sorts before a final release's (1, ()).
# Each identifier is (0, n, "") when numeric and (1, 0, text) otherwise, so numeric identifiers compare
# numerically, sort before alphanumeric ones (as in semver), and "ec" < "rc" alphabetically.
_PreKey = tuple[int, tuple[tuple[int, int, str], ...]]


def _pre_key(prerelease: tuple[str, ...]) -> _PreKey:
    if not prerelease:
        return (1, ())
    return (0, tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in prerelease))


@dataclass(frozen=True, order=True)
class OCPVersion:
    """An OpenShift release version, ordered the way releases ship.

    Ordering compares ``major``, ``minor``, ``patch`` numerically, then the pre-release: every pre-release
    sorts before the final release, numeric identifiers compare numerically, so
    ``5.0.0-0.nightly… < 5.0.0-ec.2 < 5.0.0-ec.10 < 5.0.0-rc.1 < 5.0.0``.

    ``has_patch`` records whether the text carried a patch level: ``parse_ocp("4.16")`` gives patch 0 and
    ``has_patch=False`` so ``str()`` gives back ``"4.16"``. It does not take part in comparisons:
    ``4.16 == 4.16.0``. Stack configs use ``x.y`` for "the 4.16 line"; the patch only matters where an API
    wants ``x.y.z`` (the MCO's ``ocpVersion``), and there the caller must supply a real one.
    """

    major: int
    minor: int
    patch: int = 0
    prerelease_key: _PreKey = field(init=False, repr=False)
    prerelease: tuple[str, ...] = field(default=(), compare=False)
    has_patch: bool = field(default=True, compare=False)

    def __post_init__(self) -> None:
        if min(self.major, self.minor, self.patch) < 0:
            raise VersionError(
                f"OCP version parts must be non-negative, got {self.major}.{self.minor}.{self.patch}."
            )
        if self.prerelease and not self.has_patch:
            raise VersionError("An OCP pre-release version needs a patch level, as in 5.0.0-ec.2.")
        object.__setattr__(self, "prerelease_key", _pre_key(self.prerelease))

    def minor_key(self) -> tuple[int, int]:
        """The release line, ``(major, minor)``: what "the 4.16 release" means in skew rules."""
        return (self.major, self.minor)

    @property
    def is_prerelease(self) -> bool:
        return bool(self.prerelease)

    def __str__(self) -> str:
        text = f"{self.major}.{self.minor}"
        if self.has_patch:
            text += f".{self.patch}"
        if self.prerelease:
            text += "-" + ".".join(self.prerelease)
        return text


def parse_ocp(text: str) -> OCPVersion:
    """Parse an OCP version: ``4.22.3``, ``5.0.0-ec.2``, ``5.0.0-0.nightly-2026-05-20-043516`` or ``4.16``.

    ``x.y`` means the release line and parses with patch 0 and ``has_patch=False``. Leading zeros, a ``v``
    prefix, build metadata (``+…``) and surrounding whitespace are rejected so that ``str()`` round-trips.
    """
    if not isinstance(text, str):
        raise VersionError(f"An OCP version must be a string such as '4.22.3', got {text!r}.")
    match = _OCP_RE.match(text)
    if match is None:
        raise VersionError(f"'{text}' is not an OCP version; use {OCP_FORMATS}.")
    patch = match.group("patch")
    pre = match.group("pre")
    return OCPVersion(
        major=int(match.group("major")),
        minor=int(match.group("minor")),
        patch=int(patch) if patch is not None else 0,
        prerelease=tuple(pre.split(".")) if pre else (),
        has_patch=patch is not None,
    )


#: The one form a release field takes (a stack file's ``release``, a node class ``version``, ``--release``).
RELEASE_FORM = (
    "x.y.z, e.g. 4.22.3, or a pre-release as OpenShift publishes it (5.0.0-ec.2, 5.0.0-rc.1, "
    "5.0.0-0.nightly-2026-05-20-043516)"
)
#: The pre-releases OpenShift publishes: engineering, feature and release candidates (``ec.2``, ``fc.0``,
#: ``rc.1``), and the builds of a release stream (``0.nightly-2026-05-20-043516``, ``0.ci-…``,
#: ``0.okd-scos-…``, ``0.nightly-multi-…``).
_PUBLISHED_PRE = re.compile(
    r"^(?:(?:ec|fc|rc)\.(?:0|[1-9][0-9]*)|0\.[a-z][a-z0-9]*(?:-[a-z][a-z0-9]*)*-[0-9]{4}-[0-9]{2}-[0-9]{2}-[0-9]{6})$"
)
#: Suffixes of release image tags (``quay.io/openshift-release-dev/ocp-release:4.22.4-multi``): the payload
#: for an architecture, not a version.
_IMAGE_TAG_ARCH = re.compile(
    r"^(multi|x86_64|amd64|aarch64|arm64|ppc64le|s390x)(-(x86_64|aarch64|arm64|amd64))?$"
)


def parse_release(text: str) -> OCPVersion:
    """A release as a release field takes it: ``x.y.z``, or a pre-release OpenShift publishes
    (:data:`RELEASE_FORM`). Everything else raises :class:`VersionError` naming that one form and, where it
    can tell, what was meant: a leading zero (``4.22.03``: write ``4.22.3``), a release image tag's suffix
    (``4.22.4-multi``: write ``4.22.4``), a release line without its patch (``4.22``), a ``v``."""
    if not isinstance(text, str):
        raise VersionError(f"a release is text, not {type(text).__name__}; write a release: {RELEASE_FORM}")
    core = re.match(r"^v?([0-9]+)\.([0-9]+)(?:\.([0-9]+))?(?:-(.*))?$", text.strip())
    if core is None:
        raise VersionError(f"'{text}' is not a release; write a release: {RELEASE_FORM}")
    numbers = [n for n in core.groups()[:3] if n is not None]
    plain = ".".join(str(int(n)) for n in numbers)
    pre = core.group(4)
    meant = plain + (f"-{pre}" if pre and not _IMAGE_TAG_ARCH.match(pre) else "")
    if text != text.strip() or text.startswith("v"):
        raise VersionError(
            f"'{text}' is not a release (no 'v', no spaces); write {meant}: a release is {RELEASE_FORM}"
        )
    if any(len(n) > 1 and n.startswith("0") for n in numbers):
        raise VersionError(
            f"'{text}' has a leading zero, which no release has; write {meant}: a release is {RELEASE_FORM}"
        )
    if core.group(3) is None:
        raise VersionError(
            f"'{text}' is a release line, not a release: a release has its patch number (the release image, the "
            f"boot image catalog and the skew policies name one); write e.g. {plain}.0 or the patch the cluster "
            f"runs: a release is {RELEASE_FORM}"
        )
    if pre is not None and _IMAGE_TAG_ARCH.match(pre):
        raise VersionError(
            f"'{text}' is a release image tag (the {pre} payload of {plain}), not a release; write {plain}: a "
            f"release is {RELEASE_FORM}"
        )
    if pre is not None and not _PUBLISHED_PRE.match(pre):
        raise VersionError(
            f"'{text}' has the suffix '-{pre}', which is not a pre-release OpenShift publishes; write {plain}: a "
            f"release is {RELEASE_FORM}"
        )
    return parse_ocp(text)


def linear_minor(version: OCPVersion | tuple[int, int]) -> int:
    """Map an OCP release line onto one counter: 4.x -> x, 5.y -> 23 + y.

    Why: OCP 5.0 follows 4.22 directly, and HyperShift's "a NodePool may trail its HostedCluster by up to
    three minors" counts 4.22 -> 5.0 as one minor. 4.23 (the MCO branch name of the 5.0 line) also maps
    to 23. Only majors 4 and 5 are known; anything else raises :class:`VersionError`.
    """
    major, minor = version.minor_key() if isinstance(version, OCPVersion) else version
    if major == 4:
        return minor
    if major == 5:
        return 23 + minor
    raise VersionError(
        f"OCP major version {major} ({major}.{minor}) is not one nodefleet can place on the release line; "
        "it knows 4.x and 5.x."
    )


def minors_between(older: OCPVersion, newer: OCPVersion) -> int:
    """How many minor releases ``newer`` is ahead of ``older`` (negative when it is behind).

    Counts 5.0 as 4.23, so ``minors_between(4.22, 5.0) == 1``.
    """
    return linear_minor(newer) - linear_minor(older)


# ---------------------------------------------------------------------------------------------------------
# The OCP -> RHEL payload table
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _PayloadRow:
    first: tuple[int, int]
    last: tuple[int, int]
    rhel9: tuple[int, int]  # the stream the MCO calls "rhel-9"/default (RHEL 8 before 4.13)
    rhel10: tuple[int, int] | None  # None: the payload ships no rhel-10 stream
    default: str  # the stream a fresh install uses


# DESIGN.md section 1.2: "RHEL per OCP: 9.2 (4.13-4.15), 9.4 (4.16-4.18), 9.6 (4.19-4.21), 9.8 and 10.2
# (4.22), RHEL 10 default in 5.0". background/mco-bootimages-custompools.md sections 1.7 and 6. Rows before
# 4.13 follow the legacy RHCOS strings (48.84 / 410.84 = RHEL 8.4, 411.86 / 412.86 = RHEL 8.6).
# Versions newer than the last row use the last row: update the table when a new payload ships.
_PAYLOAD_RHEL: tuple[_PayloadRow, ...] = (
    _PayloadRow((4, 7), (4, 10), (8, 4), None, "rhel-9"),
    _PayloadRow((4, 11), (4, 12), (8, 6), None, "rhel-9"),
    _PayloadRow((4, 13), (4, 15), (9, 2), None, "rhel-9"),
    _PayloadRow((4, 16), (4, 18), (9, 4), None, "rhel-9"),
    _PayloadRow((4, 19), (4, 21), (9, 6), None, "rhel-9"),
    _PayloadRow((4, 22), (4, 22), (9, 8), (10, 2), "rhel-9"),
    _PayloadRow((5, 0), (5, 0), (9, 8), (10, 2), "rhel-10"),
)


def _fmt_line(line: tuple[int, int]) -> str:
    return f"{line[0]}.{line[1]}"


def _payload_row(ocp: OCPVersion) -> _PayloadRow:
    position = linear_minor(ocp)
    first = _PAYLOAD_RHEL[0]
    if position < linear_minor(first.first):
        raise VersionError(
            f"nodefleet does not know which RHEL the OCP {ocp} payload ships; its table starts at "
            f"{_fmt_line(first.first)}. Use a cluster release of {_fmt_line(first.first)} or newer."
        )
    for row in _PAYLOAD_RHEL:
        if linear_minor(row.first) <= position <= linear_minor(row.last):
            return row
    return _PAYLOAD_RHEL[-1]


#: The last 4.x minor: the line after 4.22 is 5.0 (``linear_minor`` counts it as 23).
LAST_4X_MINOR = 22
#: How many minor lines past the payload table's newest a cluster release may be: its payload is assumed to
#: be the newest known one's. One line covers a release that shipped after this nodefleet version (and
#: HyperShift's own newest supported line, 5.1, one past 5.0); further than that nothing nodefleet derives
#: from the release (OS streams, RHEL, skew) can be trusted.
RELEASE_LINES_AHEAD = 1


def known_release(ocp: OCPVersion) -> OCPVersion:
    """``ocp`` when nodefleet can place it: 4.7 (the table's first line) up to one minor past its newest.

    Raises :class:`VersionError` with the range and the fix otherwise (``99.0.0``, ``4.99.0``, ``4.23.0``).
    """
    first, last = _PAYLOAD_RHEL[0].first, _PAYLOAD_RHEL[-1].last
    newest = linear_minor(last) + RELEASE_LINES_AHEAD
    beyond = f"{last[0]}.{last[1] + RELEASE_LINES_AHEAD}"
    span = (
        f"use a release from {_fmt_line(first)} to {beyond} (the payload table in nodefleet/bootimages/versions.py ends "
        f"at {_fmt_line(last)}; {beyond} is judged by {_fmt_line(last)}'s payload), or update nodefleet"
    )
    if ocp.major == 4 and ocp.minor > LAST_4X_MINOR:
        raise VersionError(f"OCP {ocp} does not exist (the release after 4.{LAST_4X_MINOR} is 5.0): {span}.")
    try:
        position = linear_minor(ocp)
    except VersionError:
        position = -1 if ocp.major < 4 else newest + 1
    if position < linear_minor(first):
        raise VersionError(f"OCP {ocp} is older than nodefleet knows: {span}.")
    if position > newest:
        raise VersionError(f"OCP {ocp} is newer than nodefleet knows: {span}.")
    return ocp


def os_streams(ocp: OCPVersion) -> tuple[str, ...]:
    """The OS streams the OCP ``ocp`` payload ships: ``("rhel-9",)``, or both from 4.22 on."""
    row = _payload_row(ocp)
    return OS_STREAMS if row.rhel10 is not None else ("rhel-9",)


def default_stream(ocp: OCPVersion) -> str:
    """The OS stream a fresh install of ``ocp`` uses: ``rhel-10`` from 5.0, ``rhel-9`` before."""
    return _payload_row(ocp).default


def rhel_for_ocp(ocp: OCPVersion, stream: str | None = None) -> tuple[int, int]:
    """The RHEL ``(major, minor)`` the OCP ``ocp`` payload runs for an OS stream.

    ``stream`` is ``"rhel-9"``, ``"rhel-10"``, or ``None``/``"default"`` for the release's default stream
    (:func:`default_stream`). Before 4.13 the only stream is RHEL 8; the MCO addresses it as the
    default stream, which is also what an absent or ``rhel-9`` osstream label means, so ``"rhel-9"`` on
    those releases gives the RHEL 8 minor. ``"rhel-10"`` before 4.22 raises :class:`VersionError`.
    """
    row = _payload_row(ocp)
    name = row.default if stream in (None, "default") else stream
    if name == "rhel-9":
        return row.rhel9
    if name == "rhel-10":
        if row.rhel10 is None:
            raise VersionError(
                f"OCP {ocp} ships no rhel-10 OS stream (RHEL 10 arrives with 4.22); "
                "use stream 'rhel-9' or a 4.22 or newer release."
            )
        return row.rhel10
    raise VersionError(f"'{stream}' is not an OS stream; use one of: {', '.join(OS_STREAMS)}.")


def _first_line_for_rhel(rhel: tuple[int, int]) -> tuple[int, int]:
    """The first OCP line whose payload shipped RHEL ``rhel``, extrapolated for unknown minors.

    An unknown RHEL minor takes the line of the newest known RHEL below it (or the oldest row when it is
    below all of them): the result is only a secondary sort key, so it has to be deterministic, not exact.
    """
    best: tuple[tuple[int, int], tuple[int, int]] | None = None  # (rhel, first line)
    for row in _PAYLOAD_RHEL:
        for shipped in (row.rhel9, row.rhel10):
            if shipped is None:
                continue
            if shipped == rhel:
                return row.first
            if shipped < rhel and (best is None or shipped > best[0]):
                best = (shipped, row.first)
    return best[1] if best is not None else _PAYLOAD_RHEL[0].first


# ---------------------------------------------------------------------------------------------------------
# RHCOS versions
# ---------------------------------------------------------------------------------------------------------

# Mirrors the MachineConfiguration CRD's rhcosVersion pattern: ^[0-9]+\.[0-9]+\.([0-9]{8}|[0-9]{12})-[0-9]+$
_RHCOS_RE = re.compile(r"^(?P<a>[0-9]+)\.(?P<b>[0-9]+)\.(?P<stamp>[0-9]{12}|[0-9]{8})-(?P<build>[0-9]+)$")


def _split_digits(digits: str, what: str, text: str) -> tuple[int, int]:
    """Split ``"416"`` into (4, 16) and ``"94"`` into (9, 4): first digit major, the rest minor."""
    if len(digits) < 2:
        raise VersionError(
            f"'{text}' looks like a legacy RHCOS version (12-digit timestamp) but its {what} field "
            f"'{digits}' needs a major digit followed by the minor; use {RHCOS_FORMATS}."
        )
    return (int(digits[0]), int(digits[1:]))


@functools.total_ordering
@dataclass(frozen=True)
class RHCOSVersion:
    """An RHCOS (boot image) version, in either format, with a deterministic total order.

    Fields: ``raw`` is the text as given; ``rhel`` the RHEL ``(major, minor)``; ``ocp`` the OCP
    ``(major, minor)`` for legacy versions and ``None`` for new-format ones (they do not carry it);
    ``timestamp`` the date digits (12 for legacy, 8 for new); ``build`` the number after ``-``;
    ``legacy`` which format it was.

    Order (used to find "the oldest boot image" for the MCO's Manual skew record), by key:

    1. RHEL ``(major, minor)`` -- this is what the MCO compares against its floor, and what moves the
       skew limit ("a 9.6 boot image is allowed until 9.8 ships");
    2. the OCP release line (:meth:`release_line`): exact for legacy versions; for new-format versions the
       first OCP line that shipped that RHEL minor (9.6 -> 4.19, 9.8 and 10.2 -> 4.22), an approximation
       that only orders legacy and new versions of the same RHEL minor deterministically;
    3. the build timestamp, with 8-digit dates padded to 12 digits (``YYYYMMDD0000``);
    4. the build number, then the raw text, so that two versions are equal only when their text is.

    Hence ``48.84.… < 410.84.… < 416.94.… < 9.6.… < 9.8.… < 10.2.…``.
    """

    raw: str
    rhel: tuple[int, int]
    ocp: tuple[int, int] | None
    timestamp: str
    build: int
    legacy: bool

    def release_line(self) -> tuple[int, int]:
        """The OCP ``(major, minor)`` this boot image belongs to: exact if legacy, else approximated."""
        return self.ocp if self.ocp is not None else _first_line_for_rhel(self.rhel)

    def sort_key(self) -> tuple[int, int, int, int, int, str]:
        """The ordering key described in the class docstring."""
        line = self.release_line()
        stamp = int(self.timestamp.ljust(12, "0"))
        return (self.rhel[0], self.rhel[1], line[0] * 1000 + line[1], stamp, self.build, self.raw)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, RHCOSVersion):
            return NotImplemented
        return self.sort_key() < other.sort_key()

    @property
    def rhel_text(self) -> str:
        """RHEL as ``"9.4"``, for messages."""
        return _fmt_line(self.rhel)

    def describe(self) -> str:
        """``RHCOS 416.94.202405291527-0 (OCP 4.16, RHEL 9.4)``, for messages."""
        if self.ocp is not None:
            return f"RHCOS {self.raw} (OCP {_fmt_line(self.ocp)}, RHEL {self.rhel_text})"
        return f"RHCOS {self.raw} (RHEL {self.rhel_text})"

    def __str__(self) -> str:
        return self.raw


def parse_rhcos(text: str) -> RHCOSVersion:
    """Parse an RHCOS version in legacy (``416.94.202405291527-0``) or new (``9.6.20251023-0``) format.

    The date field decides the format, as in the MCO: 12 digits (``YYYYMMDDHHmm``) is legacy, whose first
    field is the OCP major digit plus minor digits and whose second is the RHEL major digit plus minor
    digits (``810`` = RHEL 8.10); 8 digits (``YYYYMMDD``) is the new format, whose first two fields are the
    RHEL major and minor. The date itself must be a real date and time.
    """
    if not isinstance(text, str):
        raise VersionError(f"An RHCOS version must be a string such as '9.6.20251023-0', got {text!r}.")
    match = _RHCOS_RE.match(text)
    if match is None:
        raise VersionError(f"'{text}' is not an RHCOS version; use {RHCOS_FORMATS}.")
    first, second, stamp = match.group("a"), match.group("b"), match.group("stamp")
    legacy = len(stamp) == 12
    try:
        datetime.strptime(stamp, "%Y%m%d%H%M" if legacy else "%Y%m%d")
    except ValueError:
        raise VersionError(
            f"'{text}' is not an RHCOS version: '{stamp}' is not a valid "
            f"{'YYYYMMDDHHmm timestamp' if legacy else 'YYYYMMDD date'}; use {RHCOS_FORMATS}."
        ) from None
    if legacy:
        ocp: tuple[int, int] | None = _split_digits(first, "OCP", text)
        rhel = _split_digits(second, "RHEL", text)
    else:
        if len(first) > 2:
            raise VersionError(
                f"'{text}' has a new-format 8-digit date but '{first}' is not a RHEL major version; "
                f"legacy versions carry a 12-digit timestamp. Use {RHCOS_FORMATS}."
            )
        ocp = None
        rhel = (int(first), int(second))
    return RHCOSVersion(
        raw=text, rhel=rhel, ocp=ocp, timestamp=stamp, build=int(match.group("build")), legacy=legacy
    )


_RHEL_RE = re.compile(rf"^({_NUM})\.({_NUM})$")


def parse_rhel(text: str) -> tuple[int, int]:
    """Parse a RHEL ``major.minor`` such as ``"9.2"`` (the form of the MCO's RHCOS floor)."""
    match = _RHEL_RE.match(text) if isinstance(text, str) else None
    if match is None:
        raise VersionError(f"'{text}' is not a RHEL version; use 'major.minor', for example '9.2'.")
    return (int(match.group(1)), int(match.group(2)))


#: The Kubernetes minor each OpenShift minor is built on (Red Hat's "OpenShift Container Platform life cycle"
#: release table: 4.12 rebased on 1.25, and each minor since on the next one); OpenShift 5.0 follows 4.22 as
#: 4.23 would (the skew profiles count it so), on Kubernetes 1.36.
KUBERNETES_OF_OPENSHIFT: dict[tuple[int, int], tuple[int, int]] = {
    **{(4, minor): (1, minor + 13) for minor in range(12, 23)},
    (5, 0): (1, 36),
}


def kubernetes_of(release: OCPVersion) -> tuple[int, int] | None:
    """The Kubernetes minor an OpenShift release runs, or None for a release line the table does not know."""
    return KUBERNETES_OF_OPENSHIFT.get(release.minor_key())
