"""Rendered manifests: the exact objects, and that they fit the real CRD schemas."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest

from nodefleet import kinds as k
from nodefleet.render.machinesets import (
    render_boot_image_settings,
    render_machine_config_pool,
    render_machine_set,
    user_data_secret,
)
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import Fleet
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import validate_manifest


def _fleet(stack: str, raw: dict[str, Any] | None = None) -> Fleet:
    return load_fleet(raw or stack_fleet(stack), stack, PROJECT)


def _all_manifests(fleet: Fleet) -> list[dict[str, Any]]:
    out = []
    for c in fleet.clusters:
        out += [render_machine_config_pool(c.config, p.name) for p in c.config.pools]
        out += [render_machine_set(c.config, ms, c.config.catalog) for ms in c.machine_sets]
        out.append(render_boot_image_settings(c))
    return out


@pytest.mark.parametrize("stack", ["dev", "rhel10"])
def test_every_rendered_manifest_fits_its_crd(stack: str) -> None:
    manifests = _all_manifests(_fleet(stack))
    assert {m["kind"] for m in manifests} == {"MachineSet", "MachineConfigPool", "MachineConfiguration"}
    for manifest in manifests:
        validate_manifest(manifest)


def test_crd_check_catches_a_bad_manifest() -> None:
    c = _fleet("dev").clusters[0]
    bad = render_machine_set(c.config, c.machine_sets[0], "x")
    bad["spec"]["replicas"] = "three"
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(bad)


def test_pinned_machine_set() -> None:
    c = _fleet("dev").clusters[0]
    ms = next(m for m in c.machine_sets if m.name == "dev-7xk2p-worker-us-east-1b")
    m = render_machine_set(c.config, ms, c.config.catalog)
    meta, spec = m["metadata"], m["spec"]
    assert meta["namespace"] == "openshift-machine-api"
    assert "ownerReferences" not in meta
    assert meta["labels"] == {k.LABEL_CLUSTER: "dev-7xk2p"}
    assert meta["annotations"][k.ANNOTATION_ARCH] == "kubernetes.io/arch=amd64"
    assert meta["annotations"][k.ANNOTATION_OWNER] == "nodefleet"
    assert meta["annotations"][k.ANNOTATION_RHCOS] == "9.8.20260403-0"
    assert spec["selector"]["matchLabels"] == {k.LABEL_CLUSTER: "dev-7xk2p", k.LABEL_MACHINESET: ms.name}
    # The machine-api requires the template labels to satisfy the selector.
    template_labels = spec["template"]["metadata"]["labels"]
    assert spec["selector"]["matchLabels"].items() <= template_labels.items()
    provider = spec["template"]["spec"]["providerSpec"]["value"]
    assert provider["ami"] == {"id": "ami-06a6b025350ff1e23"}
    assert provider["placement"] == {"region": "us-east-1", "availabilityZone": "us-east-1b"}
    assert provider["userDataSecret"] == {"name": "worker-user-data"}


def test_managed_machine_set_is_enrolled_and_records_no_version() -> None:
    c = _fleet("dev").clusters[0]
    ms = c.machine_sets[0]
    m = render_machine_set(c.config, ms, c.config.catalog)
    assert m["metadata"]["labels"]["nodefleet.io/boot-image-updates"] == "mco"
    assert m["metadata"]["annotations"][k.ANNOTATION_OWNER] == "mco"
    assert k.ANNOTATION_RHCOS not in m["metadata"]["annotations"]
    assert m["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] == {"id": "ami-06a6b025350ff1e23"}


def test_custom_pool_machine_set_boots_into_its_pool() -> None:
    c = _fleet("dev").clusters[0]
    ms = next(m for m in c.machine_sets if m.spec.pool == "infra")
    m = render_machine_set(c.config, ms, c.config.catalog)
    tspec = m["spec"]["template"]["spec"]
    assert tspec["metadata"]["labels"] == {"node-role.kubernetes.io/infra": ""}
    assert tspec["providerSpec"]["value"]["userDataSecret"] == {"name": "infra-user-data-managed"}
    assert m["spec"]["template"]["metadata"]["labels"][k.LABEL_MACHINE_ROLE] == "infra"
    assert user_data_secret("infra") == "infra-user-data-managed"


def test_pool_selectors() -> None:
    c = _fleet("rhel10").clusters[0]
    pool = render_machine_config_pool(c.config, "rhel10")
    assert pool["spec"]["machineConfigSelector"] == {
        "matchExpressions": [{"key": k.LABEL_MC_ROLE, "operator": "In", "values": ["worker", "rhel10"]}]
    }
    assert pool["spec"]["nodeSelector"] == {"matchLabels": {"node-role.kubernetes.io/rhel10": ""}}
    assert pool["spec"]["osImageStream"] == {"name": "rhel-10"}
    assert "namespace" not in pool["metadata"]


def test_rhel10_machine_set_is_labelled_out_of_the_boot_image_controller() -> None:
    c = _fleet("rhel10").clusters[0]
    arm = next(m for m in c.machine_sets if m.spec.architecture == "arm64")
    m = render_machine_set(c.config, arm, c.config.catalog)
    assert m["metadata"]["labels"][k.LABEL_OS_STREAM] == "rhel-10"
    assert m["metadata"]["annotations"][k.ANNOTATION_ARCH] == "kubernetes.io/arch=arm64"
    assert m["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] == {"id": "ami-067c61e7fb4d54a67"}


def test_boot_image_settings_partial_with_manual_record() -> None:
    c = _fleet("dev").clusters[0]
    mc = render_boot_image_settings(c)
    assert mc["metadata"]["name"] == "cluster" and set(mc["metadata"]) == {"name", "annotations"}
    (manager,) = mc["spec"]["managedBootImages"]["machineManagers"]
    assert manager["selection"] == {
        "mode": "Partial",
        "partial": {"machineResourceSelector": {"matchLabels": {"nodefleet.io/boot-image-updates": "mco"}}},
    }
    assert mc["spec"]["bootImageSkewEnforcement"] == {
        "mode": "Manual",
        "manual": {"mode": "RHCOSVersion", "rhcosVersion": "9.8.20260403-0"},
    }


def test_manual_record_is_the_oldest_declared_boot_image() -> None:
    raw = stack_fleet("dev")
    cluster = raw["clusters"][0]
    cluster["catalog"] = "catalogs/rhcos-4.16.json"
    cluster["release"] = "4.16.30"
    c = _fleet("dev", raw).clusters[0]
    record = render_boot_image_settings(c)["spec"]["bootImageSkewEnforcement"]["manual"]
    assert record == {"mode": "RHCOSVersion", "rhcosVersion": "416.94.202405291527-0"}


def test_all_mode_with_automatic_enforcement_leaves_the_stanza_out() -> None:
    raw = stack_fleet("dev")
    cluster = raw["clusters"][0]
    cluster["bootImageManagement"] = {"mode": "All"}
    cluster["skewEnforcement"] = {"mode": "Automatic"}
    for ms in cluster["machineSets"]:
        ms["bootImage"] = "managed"
    mc = render_boot_image_settings(_fleet("dev", raw).clusters[0])
    assert mc["spec"]["managedBootImages"]["machineManagers"][0]["selection"] == {"mode": "All"}
    assert "bootImageSkewEnforcement" not in mc["spec"]
    assert all(
        "nodefleet.io/boot-image-updates" not in m["metadata"]["labels"]
        for m in _all_manifests(_fleet("dev", raw))
        if m["kind"] == "MachineSet"
    )
