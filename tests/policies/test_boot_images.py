"""boot-image-skew and boot-image-advice: boot images judged by nodefleet.bootimages.skew.evaluate_skew."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from nodefleet.render.machinesets import render_machine_set
from nodefleet.render.objects import load_fleet
from policies.boot_images import PROJECT_ROOT, boot_image_advice, boot_image_skew, default_catalogs
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import validate_manifest
from tests.policies.helpers import run_policy

AMI_410 = (
    "ami-0713d9bcf78401cd1"  # catalogs/coreos-bootimages-4.10.yaml, us-east-1 x86_64, 410.84.202111111322-0
)
AMI_416 = "ami-05483066c3caaccf5"  # catalogs/rhcos-4.16.json, us-east-1 x86_64, 416.94.202405291527-0
AMI_50_RHEL9_WEST = "ami-087857c3acb318eac"  # catalogs/coreos-bootimages-5.0.yaml rhel-9, us-west-2 x86_64
AMI_NOWHERE = "ami-0123456789abcdef0"
RHCOS_416 = "416.94.202405291527-0"
RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:{}-x86_64"


def _rendered(stack: str) -> list[dict[str, Any]]:
    cluster = load_fleet(stack_fleet(stack), stack, PROJECT).clusters[0]
    return [
        copy.deepcopy(render_machine_set(cluster.config, ms, cluster.config.catalog))
        for ms in cluster.machine_sets
    ]


def _machine_set(ami: str, release: str = "4.22.3", rhcos: str | None = None) -> dict[str, Any]:
    """The dev stack's pinned us-east-1b worker, re-pointed at ``ami`` on a cluster of ``release``."""
    ms = next(m for m in _rendered("dev") if m["metadata"]["name"] == "dev-7xk2p-worker-us-east-1b")
    annotations = ms["metadata"]["annotations"]
    annotations[k.ANNOTATION_RELEASE] = release
    annotations.pop(k.ANNOTATION_RHCOS)
    if rhcos is not None:
        annotations[k.ANNOTATION_RHCOS] = rhcos
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": ami}
    return ms


def _node_pool(ami: str | None, release: str = "4.22.3") -> dict[str, Any]:
    """A HyperShift NodePool as `hypershift create cluster aws` renders it, optionally with an explicit AMI."""
    aws: dict[str, Any] = {
        "instanceType": "m6i.xlarge",
        "instanceProfile": "example-abcde-worker",
        "subnet": {"id": "subnet-0a1b2c3d4e5f67890"},
        "rootVolume": {"size": 120, "type": "gp3"},
    }
    if ami is not None:
        aws["ami"] = ami
    np = {
        "apiVersion": "hypershift.openshift.io/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "example-us-east-1a", "namespace": "clusters"},
        "spec": {
            "clusterName": "example",
            "replicas": 2,
            "arch": "amd64",
            "management": {"upgradeType": "Replace", "autoRepair": True},
            "release": {"image": RELEASE_IMAGE.format(release)},
            "platform": {"type": "AWS", "aws": aws},
        },
    }
    validate_manifest(np)
    return np


def _skew(props: dict[str, Any], token: str = k.MACHINE_SET.token, **kw: Any) -> list[str]:
    return [v.message for v in run_policy(boot_image_skew, token, props, **kw)]


def _advice(props: dict[str, Any], token: str = k.MACHINE_SET.token, **kw: Any) -> list[str]:
    return [v.message for v in run_policy(boot_image_advice, token, props, **kw)]


# --- compliant -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("stack", ["dev", "rhel10"])
def test_example_stacks_pass(stack: str) -> None:
    for ms in _rendered(stack):
        assert _skew(ms) == []
        assert _skew(ms, config={"boot-image-skew": {"strict": True}}) == []
        assert _advice(ms) == []


def test_default_catalogs_are_the_project_catalogs() -> None:
    assert default_catalogs() == sorted(f"catalogs/{p.name}" for p in (PROJECT_ROOT / "catalogs").iterdir())
    assert "catalogs/coreos-bootimages-4.10.yaml" in default_catalogs()


# --- the required skew cases ---------------------------------------------------------------------------


def test_4_10_boot_image_on_4_22_3_fails_via_catalog_lookup() -> None:
    (msg,) = _skew(_machine_set(AMI_410))
    assert "MachineSet 'dev-7xk2p-worker-us-east-1b'" in msg
    assert "410.84.202111111322-0" in msg  # found in catalogs/coreos-bootimages-4.10.yaml
    assert "older than the boot image floor" in msg and "4.22.3" in msg
    assert "Use the boot image of the cluster's own release stream" in msg


def test_4_16_boot_image_passes_by_default_but_not_strict() -> None:
    for ms in (_machine_set(AMI_416), _machine_set(AMI_NOWHERE, rhcos=RHCOS_416)):
        assert _skew(ms) == []
        (msg,) = _skew(ms, config={"boot-image-skew": {"strict": True}})
        assert "dev-7xk2p-worker-us-east-1b" in msg and RHCOS_416 in msg
        assert "strict mode requires a boot image of RHEL 9.8" in msg


def test_ami_in_no_catalog_is_a_violation() -> None:
    (msg,) = _skew(_machine_set(AMI_NOWHERE))
    assert "dev-7xk2p-worker-us-east-1b" in msg and AMI_NOWHERE in msg
    assert "cannot be established" in msg
    assert "Pin the AMI from a boot image catalog" in msg and "`catalogs` config" in msg


# --- other violations ------------------------------------------------------------------------------------


def test_ami_not_by_id_without_recorded_version() -> None:
    ms = _machine_set(AMI_410)
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {
        "filters": [{"name": "name", "values": ["rhcos-*"]}]
    }
    (msg,) = _skew(ms)
    assert "other than an id" in msg


def test_invalid_recorded_version() -> None:
    (msg,) = _skew(_machine_set(AMI_416, rhcos="rhcos-4.16"))
    assert k.ANNOTATION_RHCOS in msg and "is invalid" in msg


def test_invalid_cluster_release_annotation() -> None:
    (msg,) = _skew(_machine_set(AMI_416, release="four-twenty-two"))
    assert k.ANNOTATION_RELEASE in msg and "dev-7xk2p-worker-us-east-1b" in msg


def test_rhel_8_boot_image_for_a_rhel_10_pool() -> None:
    ms = _machine_set(AMI_410, release="5.0.0")
    ms["metadata"]["annotations"][k.ANNOTATION_POOL_STREAM] = "rhel-10"
    messages = _skew(ms)
    assert len(messages) == 2
    assert "older than the boot image floor" in messages[0]
    assert "RHEL 8 -> 10 updates are not supported" in messages[1]


# --- config ----------------------------------------------------------------------------------------------


def test_config_floor_rhel() -> None:
    ms = _machine_set(AMI_416)
    (msg,) = _skew(ms, config={"boot-image-skew": {"floorRhel": "9.6"}})
    assert "RHEL 9.6" in msg
    (msg,) = _skew(ms, config={"boot-image-skew": {"floorRhel": "nine"}})
    assert "floorRhel" in msg and "policy pack config" in msg


def test_config_floor_ocp() -> None:
    (msg,) = _skew(_machine_set(AMI_416), config={"boot-image-skew": {"floorOcp": "4.17.0"}})
    assert "OCP 4.17.0" in msg


def test_config_catalogs_limit_the_lookup() -> None:
    ms = _machine_set(AMI_410)
    (msg,) = _skew(ms, config={"boot-image-skew": {"catalogs": ["catalogs/rhcos-4.16.json"]}})
    assert "cannot be established" in msg
    # Searched: the catalog the MachineSet names, then the configured ones.
    assert "(catalogs/coreos-bootimages-5.0.yaml, catalogs/rhcos-4.16.json)" in msg


def test_config_catalogs_accepts_another_catalog(tmp_path: Path) -> None:
    """An AMI outside the project's catalogs passes once the catalog that lists it is configured."""
    stream = json.loads((PROJECT_ROOT / "catalogs" / "rhcos-4.16.json").read_text())
    stream["architectures"]["x86_64"]["images"]["aws"]["regions"]["us-east-1"]["image"] = AMI_NOWHERE
    mirror = tmp_path / "mirror-4.16.json"
    mirror.write_text(json.dumps(stream))
    ms = _machine_set(AMI_NOWHERE)
    assert _skew(ms, config={"boot-image-skew": {"catalogs": [str(mirror)]}}) == []
    (msg,) = _skew(ms, config={"boot-image-skew": {"catalogs": [str(tmp_path / "missing.json")]}})
    assert "Unreadable catalogs" in msg and "missing.json" in msg


def test_config_enforcement_level() -> None:
    (v,) = run_policy(
        boot_image_skew, k.MACHINE_SET.token, _machine_set(AMI_410), config={"boot-image-skew": "advisory"}
    )
    assert v.level == "advisory"


# --- unknowns, hand-written objects, other types ---------------------------------------------------------


def test_unknown_ami_is_advisory() -> None:
    (v,) = run_policy(boot_image_skew, k.MACHINE_SET.token, _machine_set(UNKNOWN_STRING_VALUE))
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")


def test_unknown_recorded_version_is_advisory() -> None:
    (v,) = run_policy(boot_image_skew, k.MACHINE_SET.token, _machine_set(AMI_416, rhcos=UNKNOWN_STRING_VALUE))
    assert v.level == "advisory" and "cannot verify" in v.message


def test_hand_written_machine_set_without_release_is_not_judged() -> None:
    hand = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "legacy-infra", "namespace": "openshift-machine-api"},
        "spec": {"template": {"spec": {"providerSpec": {"value": {"ami": {"id": AMI_410}}}}}},
    }
    assert _skew(hand) == [] and _advice(hand) == []
    assert _skew({"metadata": {}}) == []


def test_other_resource_types_are_ignored() -> None:
    assert run_policy(boot_image_skew, k.MACHINE_CONFIG_POOL.token, {"spec": {}}) == []
    assert run_policy(boot_image_advice, k.EC2_NODE_CLASS.token, {"spec": {}}) == []


# --- HyperShift NodePools --------------------------------------------------------------------------------


def test_node_pool_without_ami_uses_the_payload_default() -> None:
    assert _skew(_node_pool(None), k.HYPERSHIFT_NODE_POOL.token) == []


def test_node_pool_with_old_ami_fails() -> None:
    (msg,) = _skew(_node_pool(AMI_410), k.HYPERSHIFT_NODE_POOL.token)
    assert "HyperShift NodePool 'example-us-east-1a'" in msg and "older than the boot image floor" in msg
    assert "removing spec.platform.aws.ami" in msg


def test_node_pool_release_from_image_tag() -> None:
    np = _node_pool(AMI_416, release="4.21.9")
    assert _skew(np, k.HYPERSHIFT_NODE_POOL.token) == []
    (msg,) = _skew(np, k.HYPERSHIFT_NODE_POOL.token, config={"boot-image-skew": {"strict": True}})
    assert "RHEL 9.6 payload of cluster release 4.21.9" in msg
    np["spec"]["release"]["image"] = "quay.io/openshift-release-dev/ocp-release:5.0.0-ec.2-multi"
    assert _skew(np, k.HYPERSHIFT_NODE_POOL.token) == []


def test_node_pool_with_ami_in_no_catalog() -> None:
    (msg,) = _skew(_node_pool(AMI_NOWHERE), k.HYPERSHIFT_NODE_POOL.token)
    assert "cannot be established" in msg and "removing spec.platform.aws.ami" in msg


def test_node_pool_with_digest_only_release_is_not_judged() -> None:
    np = _node_pool(AMI_410)
    np["spec"]["release"]["image"] = "quay.io/openshift-release-dev/ocp-release@sha256:" + "0" * 64
    assert _skew(np, k.HYPERSHIFT_NODE_POOL.token) == []


def test_node_pool_unknown_ami_is_advisory() -> None:
    (v,) = run_policy(boot_image_skew, k.HYPERSHIFT_NODE_POOL.token, _node_pool(UNKNOWN_STRING_VALUE))
    assert v.level == "advisory" and "cannot verify" in v.message


# --- boot-image-advice -----------------------------------------------------------------------------------


def _rhel10_with_rhel9_image() -> dict[str, Any]:
    ms = next(m for m in _rendered("rhel10") if m["metadata"]["name"] == "rhel10-q9d4m-rhel10-us-west-2a")
    del ms["metadata"]["annotations"][k.ANNOTATION_RHCOS]
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": AMI_50_RHEL9_WEST}
    return ms


def test_advice_rhel9_image_for_rhel10_stream() -> None:
    ms = _rhel10_with_rhel9_image()
    assert _skew(ms) == []
    (v,) = run_policy(boot_image_advice, k.MACHINE_SET.token, ms)
    assert v.level == "advisory"
    assert "rhel10-q9d4m-rhel10-us-west-2a" in v.message and "cross-stream rebase" in v.message


def test_advice_reads_the_osstream_label_without_the_annotations() -> None:
    """An object without nodefleet's stream annotations is judged by its osstream label."""
    ms = _rhel10_with_rhel9_image()
    del ms["metadata"]["annotations"][k.ANNOTATION_STREAM]
    del ms["metadata"]["annotations"][k.ANNOTATION_POOL_STREAM]
    assert ms["metadata"]["labels"][k.LABEL_OS_STREAM] == "rhel-10"
    (msg,) = _advice(ms)
    assert "cross-stream rebase" in msg
    del ms["metadata"]["labels"][k.LABEL_OS_STREAM]
    assert _advice(ms) == []  # rhel-9 is the default stream


def test_advice_does_not_repeat_errors() -> None:
    assert _advice(_machine_set(AMI_410)) == []
    assert _advice(_machine_set(AMI_NOWHERE)) == []


def test_advice_config_and_unknowns() -> None:
    ms = _rhel10_with_rhel9_image()
    assert (
        run_policy(boot_image_advice, k.MACHINE_SET.token, ms, config={"boot-image-advice": "disabled"}) == []
    )
    # Without a catalog of its own, the 5.0 catalog is not searched: no version, so nothing to advise
    # (boot-image-skew reports it).
    hand_written = copy.deepcopy(ms)
    del hand_written["metadata"]["annotations"][k.ANNOTATION_CATALOG]
    assert (
        _advice(hand_written, config={"boot-image-advice": {"catalogs": ["catalogs/rhcos-4.16.json"]}}) == []
    )
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": UNKNOWN_STRING_VALUE}
    (v,) = run_policy(boot_image_advice, k.MACHINE_SET.token, ms)
    assert v.level == "advisory" and "cannot verify" in v.message


def test_node_pool_defaults_to_its_releases_stream() -> None:
    """A 5.0 NodePool boots rhel-10 by default: its explicit RHEL 10 AMI is no major downgrade."""
    np = _node_pool("ami-04b3d999e39d62c5b", release="5.0.0-ec.2")
    assert _skew(np, k.HYPERSHIFT_NODE_POOL.token) == []
    np["metadata"]["labels"] = {k.LABEL_OS_STREAM: "rhel-9"}
    (msg,) = _skew(np, k.HYPERSHIFT_NODE_POOL.token)
    assert "RHEL 10" in msg or "rhel-9" in msg
