"""Stack configuration: what is accepted, and the one clear message for what cannot be built."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError
from tests.conftest import PROJECT, stack_fleet


def _error(raw: dict[str, Any], stack: str = "dev") -> str:
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, stack, PROJECT)
    return str(e.value)


@pytest.mark.parametrize("stack", ["dev", "rhel10"])
def test_example_stacks_are_valid(stack: str) -> None:
    fleet = load_fleet(stack_fleet(stack), stack, PROJECT)
    assert fleet.clusters and all(c.machine_sets for c in fleet.clusters)


def test_defaults_come_from_the_model(dev_fleet: dict[str, Any]) -> None:
    del dev_fleet["output"]
    ms = dev_fleet["clusters"][0]["machineSets"][0]
    for key in ("instanceType", "replicas", "bootImage"):
        ms.pop(key)
    fleet = load_fleet(dev_fleet, "dev", PROJECT)
    assert fleet.config.output.mode == "render"
    assert fleet.render_directory == "rendered/dev"
    spec = fleet.clusters[0].machine_sets[0].spec
    assert (spec.instance_type, spec.replicas, spec.boot_image) == ("m6i.xlarge", 1, "managed")


def test_resolves_each_machine_set_from_the_catalog_stream() -> None:
    fleet = load_fleet(stack_fleet("rhel10"), "rhel10", PROJECT)
    images = {
        ms.name: (ms.stream, ms.boot_image.ami, ms.boot_image.raw_release)
        for ms in fleet.clusters[0].machine_sets
    }
    assert images == {
        "rhel10-q9d4m-worker-us-west-2a": ("rhel-9", "ami-087857c3acb318eac", "9.8.20260403-0"),
        "rhel10-q9d4m-rhel10-us-west-2a": ("rhel-10", "ami-07e365adf44ca432a", "10.2.20260405-0"),
        "rhel10-q9d4m-rhel10-arm-us-west-2b": ("rhel-10", "ami-067c61e7fb4d54a67", "10.2.20260405-0"),
    }


def test_unknown_key_gets_a_did_you_mean_hint(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][0]["instanceTyp"] = "m6i.large"
    msg = _error(dev_fleet)
    assert msg == (
        "stacks/Pulumi.dev.yaml: nodefleet:fleet.clusters[0].machineSets[0].instanceTyp: unknown key "
        "'instanceTyp'; did you mean 'instanceType'?"
    )


def test_wrong_type_names_field_and_value(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][1]["replicas"] = "three"
    msg = _error(dev_fleet)
    assert msg.count("\n") == 0
    assert "nodefleet:fleet.clusters[0].machineSets[1].replicas" in msg and "'three'" in msg


def test_region_missing_from_catalog_lists_what_it_has(dev_fleet: dict[str, Any]) -> None:
    cluster = dev_fleet["clusters"][0]
    cluster["region"] = "eu-north-1"
    for ms in cluster["machineSets"]:
        ms["zone"] = ms["zone"].replace("us-east-1", "eu-north-1")
    msg = _error(dev_fleet)
    assert msg.startswith("stacks/Pulumi.dev.yaml: nodefleet:fleet.clusters[0].machineSets[0]: ")
    assert "'eu-north-1'" in msg and "catalogs/coreos-bootimages-5.0.yaml" in msg
    assert "us-east-1, us-west-2" in msg


def test_stream_missing_from_catalog(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["catalog"] = "catalogs/rhcos-4.16.json"
    dev_fleet["clusters"][0]["machineSets"][1]["stream"] = "rhel-10"
    dev_fleet["clusters"][0]["machineSets"][1]["bootImage"] = "pinned"
    msg = _error(dev_fleet)
    assert "machineSets[1]" in msg and "'rhel-10'" in msg and "rhel-9" in msg


def test_missing_catalog_file_says_how_to_export_one(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["catalog"] = "catalogs/nope.yaml"
    msg = _error(dev_fleet)
    assert "clusters[0].catalog" in msg and "oc -n openshift-machine-config-operator get configmap" in msg


def test_undeclared_pool(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][1]["pool"] = "gpu"
    msg = _error(dev_fleet)
    assert "clusters[0].machineSets[1].pool: 'gpu' is not a declared pool (known: infra, worker)" in msg


def test_builtin_pool_cannot_be_declared(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["pools"].append({"name": "worker"})
    assert "built-in pool" in _error(dev_fleet)


def test_managed_boot_image_only_on_rhel9(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][0]["stream"] = "rhel-10"
    msg = _error(dev_fleet)
    assert "machineSets[0].bootImage" in msg and "bootImage: pinned" in msg


def test_pinned_contradicts_mode_all(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["bootImageManagement"]["mode"] = "All"
    assert "machineSets[1].bootImage: 'pinned' contradicts bootImageManagement.mode All" in _error(dev_fleet)


def test_automatic_skew_requires_all_and_says_to_switch_enforcement_first(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["skewEnforcement"]["mode"] = "Automatic"
    msg = _error(dev_fleet)
    assert "skewEnforcement.mode" in msg and "apply, then change bootImageManagement.mode" in msg


def test_zone_outside_region(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][0]["zone"] = "us-west-2a"
    assert "machineSets[0].zone: 'us-west-2a' is not in the cluster's region 'us-east-1'" in _error(dev_fleet)


def test_release_must_parse(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["release"] = "banana"
    assert "clusters[0].release" in _error(dev_fleet)


def test_missing_value_names_the_stack_file() -> None:
    assert _error(None, "prod").startswith("stacks/Pulumi.prod.yaml: no 'nodefleet:fleet' value")  # type: ignore[arg-type]


def test_old_catalog_on_newer_cluster_is_valid_config(dev_fleet: dict[str, Any]) -> None:
    """A cluster upgraded while its MachineSets kept old boot images: the policy pack's to judge."""
    cluster = dev_fleet["clusters"][0]
    cluster.update(catalog="catalogs/coreos-bootimages-4.10.yaml", release="4.22.3")
    fleet = load_fleet(dev_fleet, "dev", Path(PROJECT))
    assert fleet.clusters[0].machine_sets[0].boot_image.raw_release.startswith("410.84.")


# --- boot image catalogs known from their own content (a bare RHEL 10 stream JSON) --------------------------

RHEL10_STREAM = "catalogs/coreos-rhel-10-5.0.0-ec.2.json"  # data.streams["rhel-10"] of the 5.0 ConfigMap


def _standalone(release: str, catalog: str, *machine_sets: dict[str, Any], **cluster: Any) -> dict[str, Any]:
    """One standalone cluster in us-east-1 with the given MachineSets (zone us-east-1a unless given)."""
    sets = [{"name": f"m{i}", "zone": "us-east-1a", **ms} for i, ms in enumerate(machine_sets)]
    return {
        "clusters": [
            {
                "name": "c",
                "infraId": "c-7xk2p",
                "region": "us-east-1",
                "release": release,
                "catalog": catalog,
                "machineSets": sets,
                **cluster,
            }
        ]
    }


def test_bare_rhel_10_stream_serves_rhel_10_machine_sets() -> None:
    fleet = load_fleet(
        _standalone("5.0.0-ec.2", RHEL10_STREAM, {"stream": "rhel-10", "bootImage": "pinned"}), "t", PROJECT
    )
    (ms,) = fleet.clusters[0].machine_sets  # type: ignore[union-attr]
    assert (ms.stream, ms.boot_image.ami, ms.boot_image.raw_release) == (
        "rhel-10",
        "ami-04b3d999e39d62c5b",
        "10.2.20260405-0",
    )


def test_bare_rhel_10_stream_does_not_serve_the_default_stream() -> None:
    """A MachineSet that takes the default stream (rhel-9) is refused, not handed a RHEL 10 AMI."""
    msg = _error(_standalone("5.0.0-ec.2", RHEL10_STREAM, {"bootImage": "pinned"}), "t")
    assert msg.startswith(
        "stacks/Pulumi.t.yaml: nodefleet:fleet.clusters[0].machineSets[0]: OS stream 'rhel-9' is "
    )
    assert f"not in boot image catalog '{RHEL10_STREAM}'; it has: rhel-10 (RHEL 10)." in msg


# --- a MachineSet's boot image against its pool's OS stream --------------------------------------------------


@pytest.mark.parametrize(
    ("release", "cluster", "pools", "pool"),
    [
        ("4.22.3", {}, [], "worker"),  # the worker pool of a 4.22 cluster runs rhel-9
        ("5.0.0-ec.2", {"osImageStream": "rhel-9"}, [], "worker"),  # upgraded to 5.0: still rhel-9
        ("5.0.0-ec.2", {}, [{"name": "infra", "osImageStream": "rhel-9"}], "infra"),
        ("4.22.3", {}, [{"name": "infra"}], "infra"),  # a custom pool without a stream inherits worker's
    ],
)
def test_rhel_10_boot_image_into_a_rhel_9_pool_is_refused(
    release: str, cluster: dict[str, Any], pools: list[dict[str, Any]], pool: str
) -> None:
    raw = _standalone(
        release,
        "catalogs/coreos-bootimages-5.0.yaml",
        {"pool": pool, "stream": "rhel-10", "bootImage": "pinned"},
        pools=pools,
        **cluster,
    )
    msg = _error(raw, "t")
    assert msg.startswith(
        "stacks/Pulumi.t.yaml: nodefleet:fleet.clusters[0].machineSets[0].stream: Boot image "
    )
    assert f"is RHEL 10, newer than pool '{pool}', which runs OS stream rhel-9 (RHEL 9.8 on {release})" in msg
    assert "a RHEL 10 node in a RHEL 9 pool is not a supported state" in msg and "\n" not in msg


def test_rhel_10_boot_images_where_the_pool_runs_rhel_10() -> None:
    """5.0 installs default to RHEL 10: the worker pool, and custom pools without a stream, run rhel-10."""
    ms = {"stream": "rhel-10", "bootImage": "pinned"}
    fleet = load_fleet(
        _standalone("5.0.0-ec.2", RHEL10_STREAM, ms, {**ms, "pool": "infra"}, pools=[{"name": "infra"}]),
        "t",
        PROJECT,
    )
    assert [m.pool_stream for m in fleet.clusters[0].machine_sets] == ["rhel-10", "rhel-10"]  # type: ignore[union-attr]
    explicit = _standalone(
        "4.22.3", RHEL10_STREAM, {**ms, "pool": "r10"}, pools=[{"name": "r10", "osImageStream": "rhel-10"}]
    )
    assert load_fleet(explicit, "t", PROJECT).clusters[0].machine_sets[0].pool_stream == "rhel-10"  # type: ignore[union-attr]


def test_rhel_9_boot_image_into_a_rhel_10_pool_is_valid_config() -> None:
    """It works (one extra reboot per node): the policy pack advises, config accepts."""
    fleet = load_fleet(_standalone("5.0.0-ec.2", "catalogs/coreos-bootimages-5.0.yaml", {}), "t", PROJECT)
    (ms,) = fleet.clusters[0].machine_sets  # type: ignore[union-attr]
    assert (ms.stream, ms.pool_stream) == ("rhel-9", "rhel-10")


def test_karpenter_node_class_stream_against_its_pool() -> None:
    raw = stack_fleet("karpenter")
    raw["clusters"][0]["karpenter"]["nodeClasses"][0]["stream"] = "rhel-10"
    msg = _error(raw, "karpenter")
    assert (
        "clusters[0].karpenter.nodeClasses[0].stream: Boot image" in msg and "newer than pool 'worker'" in msg
    )


# --- catalog files that cannot be read: one line, the stack file, the field, the fix ---------------------------


def test_a_catalog_that_is_a_directory(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["catalog"] = "catalogs"
    msg = _error(dev_fleet)
    assert msg.startswith(
        "stacks/Pulumi.dev.yaml: nodefleet:fleet.clusters[0].catalog: Boot image catalog 'catalogs' is a "
        "directory, not a file; point catalog at one exported ConfigMap or stream JSON (it holds: "
        "coreos-bootimages-4.10.yaml, coreos-bootimages-5.0.yaml,"
    )


def test_messages_name_the_file_the_config_was_read_from(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["catalog"] = "catalogs"
    with pytest.raises(ConfigError) as e:
        load_fleet(dev_fleet, "prod", PROJECT, "/srv/fleet/Pulumi.prod.yaml")
    assert str(e.value).startswith("/srv/fleet/Pulumi.prod.yaml: nodefleet:fleet.clusters[0].catalog: ")
