"""OCP and RHCOS version parsing, ordering and the OCP -> RHEL payload table."""

from __future__ import annotations

import itertools
import re

import pytest

from nodefleet.bootimages.versions import (
    OCPVersion,
    VersionError,
    default_stream,
    known_release,
    linear_minor,
    minors_between,
    os_streams,
    parse_ocp,
    parse_rhcos,
    parse_rhel,
    rhel_for_ocp,
)

# --- OCP versions ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "major", "minor", "patch", "prerelease", "has_patch"),
    [
        ("4.22.3", 4, 22, 3, (), True),
        ("5.0.0-ec.2", 5, 0, 0, ("ec", "2"), True),
        ("4.16", 4, 16, 0, (), False),
        ("4.16.0-rc.1", 4, 16, 0, ("rc", "1"), True),
        ("5.0.0-0.nightly-2026-05-20-043516", 5, 0, 0, ("0", "nightly-2026-05-20-043516"), True),
    ],
)
def test_parse_ocp_fields_and_round_trip(
    text: str, major: int, minor: int, patch: int, prerelease: tuple[str, ...], has_patch: bool
) -> None:
    version = parse_ocp(text)
    assert (version.major, version.minor, version.patch) == (major, minor, patch)
    assert version.prerelease == prerelease
    assert version.has_patch is has_patch
    assert version.minor_key() == (major, minor)
    assert str(version) == text


def test_ocp_prerelease_sorts_before_final_and_ec_before_rc() -> None:
    ordered = ["5.0.0-0.nightly-2026-05-20-043516", "5.0.0-ec.2", "5.0.0-ec.10", "5.0.0-rc.1", "5.0.0"]
    versions = [parse_ocp(t) for t in ordered]
    for permutation in itertools.permutations(versions):
        assert [str(v) for v in sorted(permutation)] == ordered
    assert parse_ocp("5.0.0-ec.2") < parse_ocp("5.0.0")
    assert parse_ocp("4.22.9") < parse_ocp("5.0.0-ec.2")


def test_ocp_numeric_parts_compare_numerically() -> None:
    assert parse_ocp("4.9") < parse_ocp("4.10")
    assert parse_ocp("4.9.30") < parse_ocp("4.10.0")
    assert parse_ocp("4.16.2") < parse_ocp("4.16.10")


def test_ocp_x_y_equals_x_y_0() -> None:
    assert parse_ocp("4.16") == parse_ocp("4.16.0")
    assert hash(parse_ocp("4.16")) == hash(OCPVersion(4, 16, 0))


@pytest.mark.parametrize(
    "text", ["", "4", "4.", "v4.16", "4.16.x", "4.16.0.1", "04.16", " 4.16", "4.16-ec.1"]
)
def test_parse_ocp_rejects_malformed_with_the_string_and_formats(text: str) -> None:
    with pytest.raises(VersionError) as excinfo:
        parse_ocp(text)
    assert f"'{text}'" in str(excinfo.value)
    assert "x.y.z" in str(excinfo.value)


def test_version_error_is_a_value_error() -> None:
    with pytest.raises(ValueError):
        parse_ocp("nope")


def test_linear_minor_counts_5_0_as_4_23() -> None:
    assert linear_minor(parse_ocp("4.16")) == 16
    assert linear_minor(parse_ocp("5.0.0")) == 23
    assert linear_minor(parse_ocp("5.2.1")) == 25
    assert minors_between(parse_ocp("4.22.0"), parse_ocp("5.0.0")) == 1
    assert minors_between(parse_ocp("4.19"), parse_ocp("5.0")) == 4
    assert minors_between(parse_ocp("5.0"), parse_ocp("4.20")) == -3


def test_linear_minor_rejects_unknown_major() -> None:
    with pytest.raises(VersionError, match=r"6\.1"):
        linear_minor(parse_ocp("6.1.0"))


# --- RHCOS versions --------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "rhel", "ocp", "legacy"),
    [
        ("416.94.202405291527-0", (9, 4), (4, 16), True),
        ("48.84.202109241901-0", (8, 4), (4, 8), True),
        ("410.84.202111111403-0", (8, 4), (4, 10), True),
        ("413.92.202303281804-0", (9, 2), (4, 13), True),
        ("412.810.202301010000-3", (8, 10), (4, 12), True),
        ("9.6.20251023-0", (9, 6), None, False),
        ("9.8.20260403-0", (9, 8), None, False),
        ("10.2.20260405-0", (10, 2), None, False),
    ],
)
def test_parse_rhcos_fields(
    text: str, rhel: tuple[int, int], ocp: tuple[int, int] | None, legacy: bool
) -> None:
    version = parse_rhcos(text)
    assert version.raw == text
    assert str(version) == text
    assert version.rhel == rhel
    assert version.ocp == ocp
    assert version.legacy is legacy


def test_parse_rhcos_build_number_and_timestamp() -> None:
    version = parse_rhcos("416.94.202405291527-3")
    assert version.build == 3
    assert version.timestamp == "202405291527"
    assert parse_rhcos("9.6.20251023-0").timestamp == "20251023"


def test_rhcos_order_across_formats() -> None:
    ordered = [
        "48.84.202109241901-0",
        "410.84.202111111403-0",
        "416.94.202405291527-0",
        "9.6.20251023-0",
        "9.8.20260403-0",
        "10.2.20260405-0",
    ]
    versions = [parse_rhcos(t) for t in ordered]
    for permutation in itertools.permutations(versions):
        assert [v.raw for v in sorted(permutation)] == ordered
    assert min(reversed(versions)).raw == "48.84.202109241901-0"


def test_rhcos_order_within_a_release_uses_timestamp_then_build() -> None:
    older = parse_rhcos("410.84.202111111322-0")
    newer = parse_rhcos("410.84.202111111403-0")
    rebuilt = parse_rhcos("410.84.202111111403-1")
    assert older < newer < rebuilt
    assert parse_rhcos("9.6.20251023-0") < parse_rhcos("9.6.20251101-0")


def test_rhcos_rhel_minor_orders_before_timestamp() -> None:
    # A 9.4 image built after a 9.6 image is still older for skew purposes.
    assert parse_rhcos("418.94.202512010000-0") < parse_rhcos("9.6.20251023-0")


def test_rhcos_equality_and_hash_follow_the_text() -> None:
    assert parse_rhcos("9.6.20251023-0") == parse_rhcos("9.6.20251023-0")
    assert len({parse_rhcos("9.6.20251023-0"), parse_rhcos("9.6.20251023-0")}) == 1
    assert parse_rhcos("9.6.20251023-0") <= parse_rhcos("9.6.20251023-0")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "foo",
        "4.16",
        "416.94",
        "9.6.2025",
        "9.6.20251023",
        "9.6.20251023-",
        "4.16.202405291527-0",  # legacy timestamp, but no room for the OCP minor
        "416.9.202405291527-0",  # legacy timestamp, but no RHEL minor
        "416.94.20240529-0",  # 8-digit date with a legacy first field
        "9.6.20251399-0",  # not a date
        "416.94.202405291580-0",  # minute 80
        " 9.6.20251023-0",
    ],
)
def test_parse_rhcos_rejects_malformed_with_the_string(text: str) -> None:
    with pytest.raises(VersionError) as excinfo:
        parse_rhcos(text)
    assert f"'{text}'" in str(excinfo.value)


def test_parse_rhel() -> None:
    assert parse_rhel("9.2") == (9, 2)
    assert parse_rhel("10.2") == (10, 2)
    with pytest.raises(VersionError, match="'9'"):
        parse_rhel("9")


# --- the payload table -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ocp", "rhel"),
    [
        ("4.8", (8, 4)),
        ("4.10.3", (8, 4)),
        ("4.12", (8, 6)),
        ("4.13.0", (9, 2)),
        ("4.15", (9, 2)),
        ("4.16", (9, 4)),
        ("4.18", (9, 4)),
        ("4.19", (9, 6)),
        ("4.21", (9, 6)),
        ("4.22.0", (9, 8)),
        ("5.0.0-ec.2", (10, 2)),
    ],
)
def test_rhel_for_ocp_default_stream(ocp: str, rhel: tuple[int, int]) -> None:
    assert rhel_for_ocp(parse_ocp(ocp)) == rhel


def test_rhel_for_ocp_per_stream() -> None:
    assert rhel_for_ocp(parse_ocp("5.0.0"), "rhel-9") == (9, 8)
    assert rhel_for_ocp(parse_ocp("5.0.0"), "rhel-10") == (10, 2)
    assert rhel_for_ocp(parse_ocp("4.22.1"), "rhel-10") == (10, 2)
    assert rhel_for_ocp(parse_ocp("4.22.1"), "rhel-9") == (9, 8)
    assert rhel_for_ocp(parse_ocp("4.22.1"), "default") == (9, 8)
    # Before 4.13 the only stream is RHEL 8; the MCO addresses it as the default (rhel-9) stream.
    assert rhel_for_ocp(parse_ocp("4.10"), "rhel-9") == (8, 4)


def test_rhel_for_ocp_rejects_streams_the_release_does_not_ship() -> None:
    with pytest.raises(VersionError, match="rhel-10"):
        rhel_for_ocp(parse_ocp("4.21.5"), "rhel-10")
    with pytest.raises(VersionError, match="'rhel-8'"):
        rhel_for_ocp(parse_ocp("4.21.5"), "rhel-8")
    with pytest.raises(VersionError, match=r"4\.6"):
        rhel_for_ocp(parse_ocp("4.6"))


def test_streams_and_default_stream_per_release() -> None:
    assert os_streams(parse_ocp("4.21")) == ("rhel-9",)
    assert set(os_streams(parse_ocp("4.22"))) == {"rhel-9", "rhel-10"}
    assert default_stream(parse_ocp("4.22")) == "rhel-9"
    assert default_stream(parse_ocp("5.0.0-ec.2")) == "rhel-10"


def test_releases_newer_than_the_table_use_its_last_row() -> None:
    assert rhel_for_ocp(parse_ocp("5.1.0"), "rhel-10") == (10, 2)


@pytest.mark.parametrize("text", ["4.7.0", "4.22.3", "5.0.0-ec.2", "5.1.0", "5.1.0-rc.1"])
def test_known_release_accepts_the_table_and_one_minor_past_it(text: str) -> None:
    assert known_release(parse_ocp(text)) == parse_ocp(text)


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("99.0.0", "OCP 99.0.0 is newer than nodefleet knows: use a release from 4.7 to 5.1"),
        ("5.2.0", "newer than nodefleet knows"),
        ("6.0.0", "newer than nodefleet knows"),
        (
            "4.99.0",
            "OCP 4.99.0 does not exist (the release after 4.22 is 5.0): use a release from 4.7 to 5.1",
        ),
        ("4.23.0", "does not exist"),
        ("4.6.9", "OCP 4.6.9 is older than nodefleet knows"),
        ("3.11.0", "older than nodefleet knows"),
    ],
)
def test_known_release_refuses_what_the_table_cannot_place(text: str, says: str) -> None:
    with pytest.raises(VersionError, match=re.escape(says)) as exc:
        known_release(parse_ocp(text))
    assert "nodefleet/bootimages/versions.py ends at 5.0" in str(exc.value)
