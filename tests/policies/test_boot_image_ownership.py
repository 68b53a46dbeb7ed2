"""boot-image-ownership: compliant objects pass; each way of breaking ownership is reported."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from nodefleet.render.machinesets import render_machine_set
from nodefleet.render.objects import load_fleet
from policies.boot_images import boot_image_ownership
from tests.conftest import PROJECT, stack_fleet
from tests.policies.helpers import run_policy


def _machine_set(owner: str) -> dict[str, Any]:
    cluster = load_fleet(stack_fleet("dev"), "dev", PROJECT).clusters[0]
    ms = next(m for m in cluster.machine_sets if (m.spec.boot_image == "managed") == (owner == "mco"))
    return copy.deepcopy(render_machine_set(cluster.config, ms, cluster.config.catalog))


def _check(props: dict[str, Any], ignore: list[str] | None = None, **kw: Any) -> list[str]:
    return [
        v.message
        for v in run_policy(boot_image_ownership, k.MACHINE_SET.token, props, ignore_changes=ignore, **kw)
    ]


def test_compliant_managed_and_pinned() -> None:
    assert _check(_machine_set("mco"), [k.AMI_PATH]) == []
    assert _check(_machine_set("nodefleet")) == []


def test_managed_without_ignore_changes() -> None:
    (msg,) = _check(_machine_set("mco"))
    assert "enrolled in MCO boot image management" in msg and k.AMI_PATH in msg


@pytest.mark.parametrize(
    "ami",
    [
        {"arn": "arn:aws:ec2:us-east-1::image/ami-0"},
        {"filters": [{"name": "name", "values": ["rhcos-*"]}]},
        {"id": "ami-06a6b025350ff1e23", "arn": "x"},
        {},
    ],
)
def test_ami_not_by_id(ami: dict[str, Any]) -> None:
    ms = _machine_set("nodefleet")
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = ami
    (msg,) = _check(ms)
    assert "{id: ami-...}" in msg and "dev-7xk2p-" in msg


def test_malformed_ami_id() -> None:
    ms = _machine_set("nodefleet")
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": "rhcos-416"}
    (msg,) = _check(ms)
    assert "'rhcos-416' is not an AMI id" in msg


def test_owner_references() -> None:
    ms = _machine_set("nodefleet")
    ms["metadata"]["ownerReferences"] = [{"apiVersion": "v1", "kind": "Thing", "name": "x", "uid": "1"}]
    (msg,) = _check(ms)
    assert "ownerReferences" in msg


def test_missing_arch_annotation() -> None:
    ms = _machine_set("nodefleet")
    del ms["metadata"]["annotations"][k.ANNOTATION_ARCH]
    (msg,) = _check(ms)
    assert k.ANNOTATION_ARCH in msg


def test_pinned_without_recorded_version() -> None:
    ms = _machine_set("nodefleet")
    del ms["metadata"]["annotations"][k.ANNOTATION_RHCOS]
    (msg,) = _check(ms)
    assert "records no RHCOS version" in msg


def test_unknown_ami_during_preview_is_advisory_not_a_crash() -> None:
    ms = _machine_set("nodefleet")
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": UNKNOWN_STRING_VALUE}
    (v,) = run_policy(boot_image_ownership, k.MACHINE_SET.token, ms)
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")


def test_hand_written_machine_set() -> None:
    """An object not written by nodefleet: judged on what it declares, without nodefleet annotations."""
    hand = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "legacy-infra", "namespace": "openshift-machine-api"},
        "spec": {"template": {"spec": {"providerSpec": {"value": {"ami": {"id": "ami-0713d9bcf78401cd1"}}}}}},
    }
    (msg,) = _check(hand)
    assert "legacy-infra" in msg and k.ANNOTATION_ARCH in msg
    hand["metadata"]["annotations"] = {k.ANNOTATION_ARCH: "kubernetes.io/arch=amd64"}
    assert _check(hand) == []


def test_other_resource_types_are_ignored() -> None:
    assert run_policy(boot_image_ownership, k.MACHINE_CONFIG_POOL.token, {"spec": {}}) == []


def test_config_can_make_it_advisory() -> None:
    ms = _machine_set("mco")
    (v,) = run_policy(
        boot_image_ownership, k.MACHINE_SET.token, ms, config={"boot-image-ownership": "advisory"}
    )
    assert v.level == "advisory"
    assert (
        run_policy(
            boot_image_ownership,
            k.MACHINE_SET.token,
            ms,
            config={"boot-image-ownership": {"enforcementLevel": "disabled"}},
        )
        == []
    )
