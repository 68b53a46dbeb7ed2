"""skew-record: a Manual skew record equals manual_skew_record() of its cluster's MachineSets."""

from __future__ import annotations

import copy
from typing import Any

from pulumi_policy import PolicyResource, PolicyResourceOptions
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from nodefleet.render.machinesets import (
    render_boot_image_settings,
    render_machine_config_pool,
    render_machine_set,
)
from nodefleet.render.objects import load_fleet
from policies.skew_record import skew_record
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import validate_manifest
from tests.policies.helpers import component, run_stack_policy, stack_resource

AMI_416 = "ami-05483066c3caaccf5"  # catalogs/rhcos-4.16.json, us-east-1 x86_64, 416.94.202405291527-0
CLUSTER = "nodefleet:standalone:Cluster"


def _manifests(stack: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, Any]]:
    """(MachineSets, pools, MachineConfiguration patch) of a committed stack's first cluster."""
    cluster = load_fleet(stack_fleet(stack), stack, PROJECT).clusters[0]
    cfg = cluster.config
    sets = [copy.deepcopy(render_machine_set(cfg, ms, cfg.catalog)) for ms in cluster.machine_sets]
    pools = [copy.deepcopy(render_machine_config_pool(cfg, p.name)) for p in cfg.pools]
    return sets, pools, copy.deepcopy(render_boot_image_settings(cluster))


def _stack(
    stack: str,
    edit_sets: Any = None,
    edit_mc: Any = None,
    provider: str | None = None,
    parented: bool = True,
) -> list[PolicyResource]:
    sets, pools, mc = _manifests(stack)
    if edit_sets:
        edit_sets(sets)
    if edit_mc:
        edit_mc(mc)
    parent = component(CLUSTER, stack) if parented else None
    out = [parent] if parent else []
    out += [stack_resource(k.MACHINE_CONFIG_POOL.token, p, parent=parent, provider=provider) for p in pools]
    out += [stack_resource(k.MACHINE_SET.token, m, parent=parent, provider=provider) for m in sets]
    out.append(
        stack_resource(
            k.MACHINE_CONFIGURATION.patch_token,
            mc,
            name=f"{stack}-machineconfiguration",
            parent=parent,
            provider=provider,
        )
    )
    return out


def _messages(resources: list[PolicyResource], **kw: Any) -> list[str]:
    return [v.message for v in run_stack_policy(skew_record, resources, **kw)]


def _manual(mc: dict[str, Any]) -> dict[str, Any]:
    return mc["spec"]["bootImageSkewEnforcement"]["manual"]


def _pin_416(sets: list[dict[str, Any]]) -> None:
    """The pinned us-east-1b worker boots the 4.16 AMI instead, found by catalog lookup."""
    ms = next(m for m in sets if m["metadata"]["name"] == "dev-7xk2p-worker-us-east-1b")
    del ms["metadata"]["annotations"][k.ANNOTATION_RHCOS]
    ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": AMI_416}


def test_example_stacks_pass() -> None:
    assert _messages(_stack("dev")) == []
    assert _messages(_stack("rhel10")) == []
    assert _messages(_stack("dev") + _stack("rhel10")) == []


def test_record_is_the_rendered_shape() -> None:
    _, _, mc = _manifests("dev")
    validate_manifest(mc)
    assert _manual(mc) == {"mode": "RHCOSVersion", "rhcosVersion": "9.8.20260403-0"}


def test_record_newer_than_the_oldest_boot_image() -> None:
    resources = _stack("dev", edit_sets=_pin_416)
    (v,) = run_stack_policy(skew_record, resources)
    assert v.level == "mandatory" and v.resource == resources[-1].urn
    assert "MachineConfiguration 'cluster'" in v.message
    assert "{mode: RHCOSVersion, rhcosVersion: 9.8.20260403-0}" in v.message
    assert "MachineSet 'dev-7xk2p-worker-us-east-1b'" in v.message
    assert "set it to {mode: RHCOSVersion, rhcosVersion: 416.94.202405291527-0}" in v.message


def test_record_older_than_the_oldest_boot_image() -> None:
    def older(mc: dict[str, Any]) -> None:
        _manual(mc)["rhcosVersion"] = "9.6.20251023-0"

    (msg,) = _messages(_stack("rhel10", edit_mc=older))
    assert "9.6.20251023-0" in msg and "rhcosVersion: 9.8.20260403-0" in msg


def test_record_by_ocp_version_or_missing() -> None:
    def by_ocp(mc: dict[str, Any]) -> None:
        mc["spec"]["bootImageSkewEnforcement"]["manual"] = {"mode": "OCPVersion", "ocpVersion": "5.0.0"}

    (msg,) = _messages(_stack("dev", edit_mc=by_ocp))
    assert "{mode: OCPVersion, ocpVersion: 5.0.0}" in msg

    def missing(mc: dict[str, Any]) -> None:
        del mc["spec"]["bootImageSkewEnforcement"]["manual"]

    (msg,) = _messages(_stack("dev", edit_mc=missing))
    assert "no manual record" in msg


def test_other_modes_are_not_judged() -> None:
    def mode_none(mc: dict[str, Any]) -> None:
        mc["spec"]["bootImageSkewEnforcement"] = {"mode": "None"}

    def automatic(mc: dict[str, Any]) -> None:
        del mc["spec"]["bootImageSkewEnforcement"]

    assert _messages(_stack("dev", edit_sets=_pin_416, edit_mc=mode_none)) == []
    assert _messages(_stack("dev", edit_sets=_pin_416, edit_mc=automatic)) == []


def test_unknown_boot_image_version_is_a_violation() -> None:
    def unknown(sets: list[dict[str, Any]]) -> None:
        ms = sets[0]  # the MCO-managed worker: no recorded version, catalog lookup
        ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": "ami-0123456789abcdef0"}

    (msg,) = _messages(_stack("dev", edit_sets=unknown))
    assert (
        "cannot be verified" in msg
        and "dev-7xk2p-worker-us-east-1a" in msg
        and "cannot be established" in msg
    )


def test_pairs_machine_sets_by_parent_component() -> None:
    """Two clusters in one stack: each record is judged against its own cluster's MachineSets only."""
    resources = _stack("dev", edit_sets=_pin_416) + _stack("rhel10")
    (v,) = run_stack_policy(skew_record, resources)
    assert v.resource.endswith("::dev-machineconfiguration")


def test_pairs_by_parent_urn_option_when_parent_object_is_absent() -> None:
    """The harness's mock runs give the parent URN in opts.parent and no parent object."""
    resources = []
    for r in _stack("dev", edit_sets=_pin_416) + _stack("rhel10"):
        if r.parent is not None:
            r = PolicyResource(r.resource_type, r.props, r.urn, r.name, r.opts, r.provider, None, [], {})
        resources.append(r)
    assert all(isinstance(r.opts, PolicyResourceOptions) for r in resources)
    (v,) = run_stack_policy(skew_record, resources)
    assert v.resource.endswith("::dev-machineconfiguration")


def test_pairs_by_provider_without_components() -> None:
    resources = _stack("dev", edit_sets=_pin_416, provider="dev-k8s", parented=False) + _stack(
        "rhel10", provider="rhel10-k8s", parented=False
    )
    (v,) = run_stack_policy(skew_record, resources)
    assert v.resource.endswith("::dev-machineconfiguration")


def test_hand_written_objects_single_configuration() -> None:
    """No components, no providers, no nodefleet annotations: the only MachineConfiguration owns them all."""
    machine_set = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "legacy-worker", "namespace": "openshift-machine-api"},
        "spec": {"template": {"spec": {"providerSpec": {"value": {"ami": {"id": AMI_416}}}}}},
    }
    mc = {
        "apiVersion": "operator.openshift.io/v1",
        "kind": "MachineConfiguration",
        "metadata": {"name": "cluster"},
        "spec": {
            "bootImageSkewEnforcement": {
                "mode": "Manual",
                "manual": {"mode": "RHCOSVersion", "rhcosVersion": "416.94.202405291527-0"},
            }
        },
    }
    validate_manifest(mc)
    resources = [
        stack_resource(k.MACHINE_SET.token, machine_set),
        stack_resource(k.MACHINE_CONFIGURATION.token, mc),
    ]
    assert _messages(resources) == []
    mc["spec"]["bootImageSkewEnforcement"]["manual"]["rhcosVersion"] = "9.6.20251023-0"
    resources[-1] = stack_resource(k.MACHINE_CONFIGURATION.token, mc)
    (msg,) = _messages(resources)
    assert "legacy-worker" in msg and "416.94.202405291527-0" in msg
    # No MachineSets at all: nothing to compare with.
    assert _messages(resources[1:]) == []


def test_unknown_values_are_advisory() -> None:
    def unknown_record(mc: dict[str, Any]) -> None:
        _manual(mc)["rhcosVersion"] = UNKNOWN_STRING_VALUE

    (v,) = run_stack_policy(skew_record, _stack("dev", edit_mc=unknown_record))
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")

    def unknown_ami(sets: list[dict[str, Any]]) -> None:
        sets[0]["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": UNKNOWN_STRING_VALUE}

    (v,) = run_stack_policy(skew_record, _stack("dev", edit_sets=unknown_ami))
    assert v.level == "advisory" and "cannot verify" in v.message


def _without_catalog_annotation(sets: list[dict[str, Any]]) -> None:
    """As if written by hand: the MachineSets do not name the catalog they were built from."""
    for ms in sets:
        del ms["metadata"]["annotations"][k.ANNOTATION_CATALOG]


def test_config() -> None:
    # Without the 5.0 catalog the MCO-managed MachineSets (no recorded version) cannot be looked up.
    (msg,) = _messages(
        _stack("dev", edit_sets=_without_catalog_annotation),
        config={"skew-record": {"catalogs": ["catalogs/rhcos-4.16.json"]}},
    )
    assert "cannot be verified" in msg and "rhcos-4.16.json" in msg
    # A MachineSet nodefleet built names its catalog: it needs no policy config at all.
    assert _messages(_stack("dev"), config={"skew-record": {"catalogs": []}}) == []
    (v,) = run_stack_policy(
        skew_record, _stack("dev", edit_sets=_pin_416), config={"skew-record": "advisory"}
    )
    assert v.level == "advisory"
    assert run_stack_policy(skew_record, _stack("dev", edit_sets=_pin_416), config={"all": "disabled"}) == []


def test_an_ami_left_to_the_mco_is_judged_by_what_the_stack_declares() -> None:
    """On the engine a stack policy gets each object's final outputs, the live object. Once the MCO's boot
    image controller has rewritten the AMI the stack leaves to it (``ignore_changes``), that AMI, from the
    cluster's own boot images, may be in no catalog of the project: the record is judged by the boot image the
    MachineSet declares (its catalog's, for its region, architecture and stream), as ``render`` computed it.
    The same AMI on a MachineSet that sets its AMI itself cannot be placed."""
    sets, _, mc = _manifests("dev")
    parent = component(CLUSTER, "dev")

    def resources(ignored: list[str]) -> list[PolicyResource]:
        out = [parent, stack_resource(k.MACHINE_CONFIGURATION.patch_token, mc, name="mc", parent=parent)]
        for ms in sets:
            managed = ms["metadata"]["annotations"][k.ANNOTATION_OWNER] == "mco"
            out.append(
                stack_resource(
                    k.MACHINE_SET.token, ms, parent=parent, ignore_changes=ignored if managed else []
                )
            )
        return out

    for ms in sets:
        if ms["metadata"]["annotations"][k.ANNOTATION_OWNER] == "mco":
            ms["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] = {"id": "ami-0c0ffee00c0ffee00"}
    assert _messages(resources([k.AMI_PATH])) == []
    (msg,) = _messages(resources([]))
    assert "ami-0c0ffee00c0ffee00" in msg and "cannot be established" in msg
    # The record still has to match: a wrong one is found through the declared boot images too.
    _manual(mc)["rhcosVersion"] = "9.6.20250101-0"
    (msg,) = _messages(resources([k.AMI_PATH]))
    assert "the oldest boot image its MachineSets declare is" in msg
