"""Release image pullspecs -> OCP versions."""

from __future__ import annotations

import pytest

from nodefleet.bootimages.releases import parse_release_image, release_image_tag
from nodefleet.bootimages.versions import VersionError, parse_ocp


@pytest.mark.parametrize(
    ("image", "version"),
    [
        ("quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64", "4.22.3"),
        ("quay.io/openshift-release-dev/ocp-release:5.0.0-ec.2-multi", "5.0.0-ec.2"),
        ("quay.io/openshift-release-dev/ocp-release:4.20.1-aarch64", "4.20.1"),
        ("quay.io/openshift-release-dev/ocp-release:4.19.0-rc.1-s390x", "4.19.0-rc.1"),
        (
            "registry.ci.openshift.org/ocp/release:4.22.0-0.nightly-2026-05-20-043516",
            "4.22.0-0.nightly-2026-05-20-043516",
        ),
        ("mirror.example.com:5000/ocp4/openshift4:4.21.7-x86_64", "4.21.7"),
        ("quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64@sha256:" + "a" * 64, "4.22.3"),
        ("quay.io/openshift-release-dev/ocp-release:4.22.3", "4.22.3"),
    ],
)
def test_parse_release_image(image: str, version: str) -> None:
    assert parse_release_image(image) == parse_ocp(version)
    assert str(parse_release_image(image)) == version


def test_arch_suffix_is_not_taken_for_a_prerelease() -> None:
    """``-multi`` left in place would parse as a pre-release and sort before the real release."""
    multi = parse_release_image("quay.io/openshift-release-dev/ocp-release:4.22.3-multi")
    assert not multi.is_prerelease
    assert multi == parse_ocp("4.22.3")
    assert parse_release_image("quay.io/x/ocp-release:5.0.0-ec.2-multi") < parse_ocp("5.0.0")


@pytest.mark.parametrize(
    "image",
    [
        "quay.io/openshift-release-dev/ocp-release@sha256:" + "b" * 64,
        "quay.io/openshift-release-dev/ocp-release",
        "mirror.example.com:5000/ocp4/openshift4",
    ],
)
def test_untagged_images_name_no_version(image: str) -> None:
    assert release_image_tag(image) is None
    with pytest.raises(VersionError, match="has no tag"):
        parse_release_image(image)


@pytest.mark.parametrize("image", ["quay.io/x/ocp-release:latest", "quay.io/x/ocp-release:v4.22.3-x86_64"])
def test_tags_that_are_not_versions(image: str) -> None:
    with pytest.raises(VersionError, match="not '<OCP version>-<arch>'"):
        parse_release_image(image)


def test_non_string() -> None:
    assert release_image_tag(None) is None  # type: ignore[arg-type]
    with pytest.raises(VersionError):
        parse_release_image(None)  # type: ignore[arg-type]
