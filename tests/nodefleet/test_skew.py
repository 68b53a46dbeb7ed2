"""Boot image skew rules and the MCO Manual skew record, checked against real catalogs and the real CRD."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from nodefleet.catalog import load_catalog
from nodefleet.skew import SkewPolicy, evaluate_skew, manual_skew_enforcement, manual_skew_record
from nodefleet.versions import RHCOSVersion, parse_ocp, parse_rhcos

DATA = Path(__file__).parents[3] / "shared" / "data"
BOOTIMAGES = DATA / "bootimages"
CRD = DATA / "crds" / "operator.openshift.io_machineconfigurations.yaml"


def _release(file: str, stream: str = "rhel-9") -> RHCOSVersion:
    return load_catalog(BOOTIMAGES / file).resolve("us-east-1", "x86_64", stream).release


RHCOS_410 = _release("coreos-bootimages-4.10.yaml")
RHCOS_416 = _release("rhcos-4.16.json")
RHCOS_50_RHEL9 = _release("coreos-bootimages-5.0.yaml", "rhel-9")
RHCOS_50_RHEL10 = _release("coreos-bootimages-5.0.yaml", "rhel-10")


def _codes(findings: list[Any]) -> list[tuple[str, str]]:
    return [(f.level, f.code) for f in findings]


# --- the MCO floor ---------------------------------------------------------------------------------------


def test_4_10_boot_image_fails_the_floor_on_4_22() -> None:
    findings = evaluate_skew(RHCOS_410, parse_ocp("4.22.0"))
    assert _codes(findings) == [("error", "below-floor")]
    message = findings[0].message
    assert RHCOS_410.raw in message
    assert "4.22.0" in message
    assert "9.2" in message
    assert "4.13.0" in message


def test_floor_is_reported_below_4_22_with_a_note_that_the_mco_does_not_enforce_it() -> None:
    findings = evaluate_skew(RHCOS_410, parse_ocp("4.21.3"))
    assert _codes(findings) == [("error", "below-floor")]
    assert "does not enforce" in findings[0].message
    assert "does not enforce" not in evaluate_skew(RHCOS_410, parse_ocp("4.22.0"))[0].message


def test_floor_boundary_4_13_passes_4_12_fails() -> None:
    assert evaluate_skew(parse_rhcos("413.92.202303281804-0"), parse_ocp("4.22.0")) == []
    assert _codes(evaluate_skew(parse_rhcos("412.86.202301311551-0"), parse_ocp("4.22.0"))) == [
        ("error", "below-floor")
    ]


def test_4_16_boot_image_passes_the_floor_but_fails_strict_mode_on_4_22() -> None:
    cluster = parse_ocp("4.22.0")
    assert evaluate_skew(RHCOS_416, cluster) == []
    findings = evaluate_skew(RHCOS_416, cluster, SkewPolicy(strict=True))
    assert _codes(findings) == [("error", "strict-rhel-minor")]
    assert RHCOS_416.raw in findings[0].message
    assert "9.8" in findings[0].message
    assert "4.22.0" in findings[0].message


def test_strict_mode_passes_when_the_rhel_minor_matches_the_payload() -> None:
    assert evaluate_skew(RHCOS_416, parse_ocp("4.18.2"), SkewPolicy(strict=True)) == []
    assert evaluate_skew(parse_rhcos("9.6.20251023-0"), parse_ocp("4.21.0"), SkewPolicy(strict=True)) == []


@pytest.mark.parametrize("strict", [False, True])
def test_5_0_stream_matched_boot_images_pass_on_5_0(strict: bool) -> None:
    cluster = parse_ocp("5.0.0-ec.2")
    policy = SkewPolicy(strict=strict)
    assert evaluate_skew(RHCOS_50_RHEL9, cluster, policy, stream="rhel-9") == []
    assert evaluate_skew(RHCOS_50_RHEL10, cluster, policy, stream="rhel-10") == []


# --- RHEL majors -----------------------------------------------------------------------------------------


def test_rhel_8_boot_image_for_rhel_10_stream_is_an_error() -> None:
    findings = evaluate_skew(RHCOS_410, parse_ocp("5.0.0-ec.2"), stream="rhel-10")
    assert ("error", "rhel-8-to-10") in _codes(findings)
    assert ("error", "below-floor") in _codes(findings)
    # even with the floor lowered out of the way
    lowered = SkewPolicy(floor_rhcos=(8, 0), floor_ocp=parse_ocp("4.1.0"))
    assert _codes(evaluate_skew(RHCOS_410, parse_ocp("5.0.0"), lowered, stream="rhel-10")) == [
        ("error", "rhel-8-to-10")
    ]


def test_rhel_9_boot_image_for_rhel_10_stream_is_a_warning() -> None:
    findings = evaluate_skew(RHCOS_50_RHEL9, parse_ocp("5.0.0-ec.2"), stream="rhel-10")
    assert _codes(findings) == [("warning", "rhel-9-to-10")]
    assert RHCOS_50_RHEL9.raw in findings[0].message
    assert "rhel-10" in findings[0].message


def test_rhel_10_boot_image_for_rhel_9_stream_is_an_error() -> None:
    findings = evaluate_skew(RHCOS_50_RHEL10, parse_ocp("5.0.0"), stream="rhel-9")
    assert _codes(findings) == [("error", "rhel-major-downgrade")]


def test_rhel_10_stream_before_4_22_and_unknown_streams_are_errors() -> None:
    assert _codes(evaluate_skew(RHCOS_416, parse_ocp("4.21.0"), stream="rhel-10")) == [
        ("error", "stream-unavailable")
    ]
    assert _codes(evaluate_skew(RHCOS_416, parse_ocp("4.21.0"), stream="rhel-8")) == [
        ("error", "unknown-stream")
    ]


def test_release_older_than_the_payload_table_is_a_warning_not_a_crash() -> None:
    findings = evaluate_skew(RHCOS_416, parse_ocp("4.6.0"))
    assert _codes(findings) == [("warning", "payload-unknown")]


# --- custom floors ---------------------------------------------------------------------------------------


def test_custom_rhel_floor() -> None:
    policy = SkewPolicy(floor_rhcos=(9, 6))
    cluster = parse_ocp("4.22.0")
    assert _codes(evaluate_skew(RHCOS_416, cluster, policy)) == [("error", "below-floor")]
    assert "RHEL 9.6" in evaluate_skew(RHCOS_416, cluster, policy)[0].message
    assert evaluate_skew(parse_rhcos("9.6.20251023-0"), cluster, policy) == []


def test_custom_ocp_floor_applies_to_legacy_versions() -> None:
    policy = SkewPolicy(floor_ocp=parse_ocp("4.17.0"))
    cluster = parse_ocp("4.22.0")
    assert _codes(evaluate_skew(RHCOS_416, cluster, policy)) == [("error", "below-floor")]
    assert evaluate_skew(parse_rhcos("417.94.202410090804-0"), cluster, policy) == []


def test_lowered_floor_accepts_rhel_8() -> None:
    policy = SkewPolicy(floor_rhcos=(8, 4), floor_ocp=parse_ocp("4.8.0"))
    assert evaluate_skew(RHCOS_410, parse_ocp("4.12.0"), policy) == []


def test_invalid_policy_is_rejected() -> None:
    with pytest.raises(ValueError, match="floor_rhcos"):
        SkewPolicy(floor_rhcos=(9,))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="floor_ocp"):
        SkewPolicy(floor_ocp="4.13.0")  # type: ignore[arg-type]


# --- the Manual record -----------------------------------------------------------------------------------


def _strip_kubernetes_extensions(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            k: _strip_kubernetes_extensions(v) for k, v in node.items() if not k.startswith("x-kubernetes-")
        }
    if isinstance(node, list):
        return [_strip_kubernetes_extensions(v) for v in node]
    return node


def _skew_schema() -> dict[str, Any]:
    crd = yaml.safe_load(CRD.read_text())
    (version,) = [v for v in crd["spec"]["versions"] if v["name"] == "v1"]
    schema: dict[str, Any] = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"][
        "bootImageSkewEnforcement"
    ]
    return schema


def _check_against_crd(stanza: dict[str, Any]) -> None:
    """JSON-schema part of the CRD, plus its CEL `self.matches(...)` patterns and mode/has() rules."""
    schema = _skew_schema()
    jsonschema.validate(stanza, _strip_kubernetes_extensions(schema))
    manual = stanza["manual"]
    manual_schema = schema["properties"]["manual"]
    for name, prop in manual_schema["properties"].items():
        for rule in prop.get("x-kubernetes-validations", []):
            match = re.fullmatch(r"self\.matches\('(.*)'\)", rule["rule"])
            if match and name in manual:
                pattern = match.group(1).replace("\\\\", "\\")  # CEL string escapes
                assert re.search(pattern, manual[name]), (name, manual[name], pattern)
    field = {"OCPVersion": "ocpVersion", "RHCOSVersion": "rhcosVersion"}[manual["mode"]]
    assert set(manual) == {"mode", field}


def test_manual_record_picks_the_oldest_and_validates_against_the_crd() -> None:
    images = [RHCOS_50_RHEL10, RHCOS_416, RHCOS_50_RHEL9, parse_rhcos("9.6.20251023-0")]
    record = manual_skew_record(images)
    assert record == {"mode": "RHCOSVersion", "rhcosVersion": "416.94.202405291527-0"}
    _check_against_crd({"mode": "Manual", "manual": record})
    assert manual_skew_enforcement(iter(images)) == {"mode": "Manual", "manual": record}


@pytest.mark.parametrize(
    "raw",
    ["48.84.202109241901-0", "410.84.202111111403-0", "9.6.20251023-0", "9.8.20260403-0", "10.2.20260405-0"],
)
def test_manual_record_for_each_format_validates(raw: str) -> None:
    stanza = manual_skew_enforcement([parse_rhcos(raw)])
    assert stanza["manual"] == {"mode": "RHCOSVersion", "rhcosVersion": raw}
    _check_against_crd(stanza)


def test_manual_record_from_a_whole_catalog() -> None:
    catalog = load_catalog(BOOTIMAGES / "coreos-bootimages-5.0.yaml")
    record = manual_skew_record(image.release for image in catalog.images())
    assert record == {"mode": "RHCOSVersion", "rhcosVersion": "9.8.20260403-0"}


def test_legacy_version_too_long_for_the_crd_is_recorded_by_ocp_version() -> None:
    stanza = manual_skew_enforcement([parse_rhcos("416.94.202405291527-12"), parse_rhcos("9.6.20251023-0")])
    assert stanza["manual"] == {"mode": "OCPVersion", "ocpVersion": "4.16.0"}
    _check_against_crd(stanza)


def test_manual_record_needs_at_least_one_boot_image() -> None:
    with pytest.raises(ValueError, match="at least one boot image"):
        manual_skew_record([])
