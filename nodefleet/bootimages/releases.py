"""OpenShift release images: which OCP version a release pullspec names.

Why this module exists: HyperShift objects carry their release as an image pullspec, not a version
(``HostedCluster.spec.release.image``, ``NodePool.spec.release.image``), and the skew rules need the
version. The official release images are tagged ``<version>-<arch>``::

    quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64
    quay.io/openshift-release-dev/ocp-release:5.0.0-ec.2-multi
    registry.ci.openshift.org/ocp/release:4.22.0-0.nightly-2026-05-20-043516

The architecture suffix must be removed before the version is parsed: ``4.22.3-multi`` would otherwise
parse as the pre-release ``4.22.3-multi`` and sort *before* ``4.22.3``. A pullspec pinned only by digest
(``…@sha256:…``) names no version; mirrors that re-tag releases without the version are not readable
either. Both raise :class:`~nodefleet.bootimages.versions.VersionError`.
"""

from __future__ import annotations

import re

from .versions import OCP_FORMATS, OCPVersion, VersionError, parse_ocp

__all__ = ["RELEASE_ARCHES", "parse_release_image", "release_image_tag"]

#: Architecture suffixes of official release image tags (``multi`` = the heterogeneous payload).
RELEASE_ARCHES: tuple[str, ...] = ("x86_64", "aarch64", "arm64", "amd64", "ppc64le", "s390x", "multi")

_ARCH_SUFFIX = re.compile(rf"-(?:{'|'.join(re.escape(a) for a in RELEASE_ARCHES)})$")


def release_image_tag(image: str) -> str | None:
    """The tag of a pullspec (``4.22.3-x86_64``), or ``None`` when it has none (digest-only, untagged).

    A digest after the tag (``:4.22.3-x86_64@sha256:…``) is ignored; a registry port (``host:5000/…``) is
    not mistaken for a tag.
    """
    if not isinstance(image, str):
        return None
    name = image.strip().split("@", 1)[0]
    last = name.rsplit("/", 1)[-1]
    if ":" not in last:
        return None
    tag = last.rsplit(":", 1)[1]
    return tag or None


def parse_release_image(image: str) -> OCPVersion:
    """The OCP version a release image pullspec names, e.g. ``4.22.3`` for ``…/ocp-release:4.22.3-x86_64``.

    Raises :class:`VersionError` when the pullspec carries no tag or its tag is not ``<version>[-<arch>]``.
    """
    tag = release_image_tag(image)
    if tag is None:
        raise VersionError(
            f"Release image '{image}' has no tag, so its OCP version cannot be read (a digest-only pullspec "
            "names no version); use the tagged pullspec, e.g. "
            "quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64."
        )
    text = _ARCH_SUFFIX.sub("", tag)
    try:
        return parse_ocp(text)
    except VersionError:
        raise VersionError(
            f"Release image '{image}' has tag '{tag}', which is not '<OCP version>-<arch>'; the version part "
            f"must be {OCP_FORMATS} and the arch one of {', '.join(RELEASE_ARCHES)}."
        ) from None
