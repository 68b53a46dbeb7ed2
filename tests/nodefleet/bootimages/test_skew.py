"""Boot image skew rules and the MCO Manual skew record, checked against real catalogs and the real CRD."""

from __future__ import annotations

import re
from typing import Any

import jsonschema
import pytest
import yaml

from nodefleet.apiserver.store import CRD_DIR
from nodefleet.bootimages.catalog import load_catalog
from nodefleet.bootimages.skew import (
    SkewPolicy,
    evaluate_skew,
    manual_skew_enforcement,
    manual_skew_record,
    node_skew_rule,
    node_version_skew,
    stream_finding,
)
from nodefleet.bootimages.versions import RHCOSVersion, parse_ocp, parse_rhcos
from tests.conftest import SHARED_DATA

BOOTIMAGES = SHARED_DATA / "bootimages"
CRD = CRD_DIR / "operator.openshift.io_machineconfigurations.yaml"


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


@pytest.mark.parametrize(
    ("rhcos", "cluster"),
    [
        ("48.84.202208021106-0", "4.8.0"),  # a 4.8 boot image on 4.8: nothing on that cluster can fix it
        ("411.86.202212072103-0", "4.11.5"),
        (RHCOS_410.raw, "4.10.3"),
        (RHCOS_410.raw, "4.21.3"),  # the 4.21 MCO has the API field but no enforcement code
    ],
)
def test_floor_below_4_22_is_a_warning_that_names_the_4_22_upgrade(rhcos: str, cluster: str) -> None:
    """Below 4.22 the MCO does not enforce the floor: advice, not a violation nothing can fix."""
    findings = evaluate_skew(parse_rhcos(rhcos), parse_ocp(cluster))
    assert _codes(findings) == [("warning", "below-floor")]
    message = findings[0].message
    assert f"The MCO of {cluster} does not enforce the floor" in message
    assert (
        "once the cluster runs 4.22 it is blocked from further minor upgrades (Upgradeable=False)" in message
    )
    assert "before or during the upgrade to 4.22" in message


@pytest.mark.parametrize("cluster", ["4.22.0", "4.22.3", "5.0.0-ec.2", "5.1.0"])
def test_floor_from_4_22_is_an_error(cluster: str) -> None:
    findings = [f for f in evaluate_skew(RHCOS_410, parse_ocp(cluster)) if f.code == "below-floor"]
    assert _codes(findings) == [("error", "below-floor")]
    assert "does not enforce" not in findings[0].message
    assert "blocks minor upgrades while it is recorded" in findings[0].message


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
    assert _codes(findings) == [("warning", "stream-behind-pool")]
    assert RHCOS_50_RHEL9.raw in findings[0].message
    assert "rhel-10" in findings[0].message and "cross-stream rebase" in findings[0].message


def test_rhel_10_boot_image_for_rhel_9_stream_is_an_error() -> None:
    findings = evaluate_skew(RHCOS_50_RHEL10, parse_ocp("5.0.0"), stream="rhel-9")
    assert _codes(findings) == [("error", "stream-ahead-of-pool")]


# --- a boot image against its pool's OS stream (one function for config, check and preview) ---------------


@pytest.mark.parametrize("cluster", ["4.22.3", "5.0.0-ec.2"])
def test_rhel_10_boot_image_into_a_rhel_9_pool_is_an_error(cluster: str) -> None:
    finding = stream_finding(RHCOS_50_RHEL10, parse_ocp(cluster), "rhel-9", "worker")
    assert finding is not None and (finding.level, finding.code) == ("error", "stream-ahead-of-pool")
    assert finding.message == (
        f"Boot image RHCOS 10.2.20260405-0 (RHEL 10.2) is RHEL 10, newer than pool 'worker', which runs OS "
        f"stream rhel-9 (RHEL 9.8 on {cluster}): a RHEL 10 node in a RHEL 9 pool is not a supported state, "
        "and OS streams only migrate forward (rhel-9 -> rhel-10). Boot it from the pool's stream (stream: "
        "rhel-9), or move the pool to rhel-10 (osImageStream; for the worker pool, the cluster's "
        "osImageStream)."
    )
    # evaluate_skew reports the same finding, in the same words, for the same node.
    assert [
        f.message for f in evaluate_skew(RHCOS_50_RHEL10, parse_ocp(cluster), stream="rhel-9", pool="worker")
    ] == [finding.message]


def test_rhel_9_boot_image_into_a_rhel_10_pool_is_a_warning() -> None:
    finding = stream_finding(RHCOS_50_RHEL9, parse_ocp("5.0.0-ec.2"), "rhel-10", "infra")
    assert finding is not None and (finding.level, finding.code) == ("warning", "stream-behind-pool")
    assert "pool 'infra', which runs OS stream rhel-10 (RHEL 10.2 on 5.0.0-ec.2)" in finding.message
    assert "one extra reboot" in finding.message and "stream: rhel-10, bootImage: pinned" in finding.message


def test_matching_streams_and_pre_stream_releases_have_no_stream_finding() -> None:
    assert stream_finding(RHCOS_50_RHEL9, parse_ocp("5.0.0"), "rhel-9", "worker") is None
    assert stream_finding(RHCOS_50_RHEL10, parse_ocp("5.0.0"), "rhel-10", "worker") is None
    # On 4.10 the default ("rhel-9") stream is RHEL 8: a 4.10 boot image matches it.
    assert stream_finding(RHCOS_410, parse_ocp("4.10.3"), "rhel-9", "worker") is None
    # A RHEL 8 image on a RHEL 9 release is the floor's business, not a stream mismatch.
    assert stream_finding(RHCOS_410, parse_ocp("4.16.0"), "rhel-9", "worker") is None


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


# --- node release vs control plane: the three published skew profiles ------------------------------------

# The example table of openshift-docs modules/hcp-np-version-skew.adoc, row by row: (HostedCluster, NodePool
# versions supported, NodePool versions not supported).
OCP_DOCS_TABLE = [
    ("4.18.0", ["4.17.0", "4.16.0"], ["4.15.0", "4.14.0"]),
    ("4.17.0", ["4.16.0"], ["4.15.0"]),
    ("4.18.5", ["4.18.5", "4.18.4", "4.17.9", "4.16.0"], ["4.15.9", "4.19.0", "4.18.6"]),
    ("4.17.5", ["4.17.5", "4.17.4", "4.16.3"], ["4.15.2", "4.18.0"]),
]


@pytest.mark.parametrize(("control_plane", "supported", "unsupported"), OCP_DOCS_TABLE)
def test_ocp_profile_is_the_documented_table(
    control_plane: str, supported: list[str], unsupported: list[str]
) -> None:
    cp = parse_ocp(control_plane)
    for node in supported:
        assert node_version_skew(parse_ocp(node), cp, "ocp") is None, node
    for node in unsupported:
        assert node_version_skew(parse_ocp(node), cp, "ocp") is not None, node


@pytest.mark.parametrize(
    ("profile", "control_plane", "oldest_supported", "first_unsupported"),
    [
        ("ocp", "4.22.3", "4.20.0", "4.19.9"),  # even minor: y-2
        ("ocp", "4.21.3", "4.20.0", "4.19.9"),  # odd minor: y-1
        ("ocp", "5.0.1", "4.21.0", "4.20.9"),  # 5.0 is an even minor; 4.22 -> 5.0 is one minor
        ("ocp", "5.1.0", "5.0.0", "4.22.9"),
        ("hypershift", "4.22.3", "4.19.0", "4.18.9"),
        ("hypershift", "5.0.1", "4.20.0", "4.19.9"),  # 5.x counted as 4.(23+x)
        ("rosa", "4.16.2", "4.14.0", "4.13.9"),
        ("rosa", "4.17.2", "4.15.0", "4.14.9"),
        ("rosa", "5.0.0", "4.21.0", "4.20.9"),
    ],
)
def test_profiles_trail_limits(
    profile: str, control_plane: str, oldest_supported: str, first_unsupported: str
) -> None:
    cp = parse_ocp(control_plane)
    assert node_version_skew(parse_ocp(oldest_supported), cp, profile) is None
    problem = node_version_skew(parse_ocp(first_unsupported), cp, profile)
    assert problem is not None and f"profile {profile}" in problem
    assert f"Upgrade the nodes to {oldest_supported.rsplit('.', 1)[0]} or newer" in problem


@pytest.mark.parametrize("profile", ["ocp", "hypershift", "rosa"])
def test_no_profile_lets_nodes_lead_the_control_plane(profile: str) -> None:
    for cp, node in [
        ("4.22.3", "4.22.4"),
        ("4.22.3", "5.0.0"),
        ("5.0.0-ec.1", "5.0.0-ec.2"),
        ("5.0.0-ec.2", "5.0.0"),
    ]:
        problem = node_version_skew(parse_ocp(node), parse_ocp(cp), profile)
        assert problem is not None and "nodes may never lead the control plane" in problem


def test_max_minors_behind_overrides_the_profile() -> None:
    cp = parse_ocp("4.22.3")
    assert node_version_skew(parse_ocp("4.18.0"), cp, "ocp", max_behind=4) is None
    problem = node_version_skew(parse_ocp("4.21.0"), cp, "hypershift", max_behind=0)
    assert problem is not None and "maxMinorsBehind 0 overrides profile hypershift" in problem
    assert node_skew_rule(cp, "rosa", 5).max_behind == 5


def test_unknown_profile_is_refused() -> None:
    with pytest.raises(
        ValueError, match="'eus' is not a version skew profile; use one of: ocp, hypershift, rosa"
    ):
        node_version_skew(parse_ocp("4.20.0"), parse_ocp("4.22.0"), "eus")
