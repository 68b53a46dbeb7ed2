"""Objects judged by their shipped CRD as the API server would: for every CRD, what nodefleet renders is
accepted, and changes its own rules forbid (the rule's ``message`` is the expected text) are rejected,
transition rules included when the previous object is known."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from nodefleet import kinds as k
from nodefleet.apiserver.schema import UNKNOWN, Finding, escape_property, validate_object
from nodefleet.apiserver.store import load_index
from tests.crdobjects import TOKENS, rendered

Change = Callable[[dict[str, Any]], Any]
LEGACY = "legacy:" + k.EC2_NODE_CLASS.token


def _judge(token: str, obj: dict[str, Any], old: dict[str, Any] | None = None) -> list[Finding]:
    found = load_index().for_token(token.removeprefix("legacy:"))
    assert found is not None, token
    crd, patch = found
    return validate_object(obj, crd, old=old, patch=patch)


def _blocking(findings: list[Finding]) -> list[str]:
    return [str(f) for f in findings if f.blocking]


def _set(path: str, value: Any) -> Change:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node.setdefault(part, {})
        if isinstance(node, list):
            node[int(last)] = value
        else:
            node[last] = value

    return change


def _drop(path: str) -> Change:
    def change(obj: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        node: Any = obj
        for part in parents:
            node = node[int(part)] if isinstance(node, list) else node[part]
        del node[last]

    return change


def _all(*changes: Change) -> Change:
    def change(obj: dict[str, Any]) -> None:
        for c in changes:
            c(obj)

    return change


ALL_TOKENS = list(TOKENS)


@pytest.mark.parametrize("token", ALL_TOKENS)
def test_what_nodefleet_renders_is_accepted(token: str) -> None:
    assert _judge(token, rendered(token)) == []


@pytest.mark.parametrize("token", ALL_TOKENS)
def test_an_unchanged_object_passes_its_transition_rules(token: str) -> None:
    assert _judge(token, rendered(token), old=rendered(token)) == []


# (id, token, change, expected text in the one blocking finding's path + message)
REJECTED: list[tuple[str, str, Change, str]] = [
    # MachineSet: no CEL rules; the schema and ObjectMeta still apply.
    (
        "machineset-replicas-type",
        k.MACHINE_SET.token,
        _set("spec.replicas", "3"),
        'spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"',
    ),
    (
        "machineset-pruned-field",
        k.MACHINE_SET.token,
        _set("spec.replica", 3),
        'spec.replica: unknown field "spec.replica"',
    ),
    (
        "machineset-label-key",
        k.MACHINE_SET.token,
        _set("metadata.labels", {"bad key!": "x"}),
        'metadata.labels: Invalid value: "bad key!": name part must consist of alphanumeric characters',
    ),
    # MachineConfigPool: format.dns1123Subdomain().validate(self)
    (
        "pool-os-image-stream",
        k.MACHINE_CONFIG_POOL.token,
        _set("spec.osImageStream", {"name": "RHEL_10"}),
        'spec.osImageStream.name: Invalid value: "RHEL_10": a RFC 1123 subdomain must consist of lower case '
        "alphanumeric",
    ),
    # MachineConfiguration (server-side-apply patch)
    (
        "mc-manual-without-record",
        k.MACHINE_CONFIGURATION.patch_token,
        _set("spec.bootImageSkewEnforcement", {"mode": "Manual"}),
        "spec.bootImageSkewEnforcement: Invalid value: manual is required when mode is Manual, and forbidden otherwise",
    ),
    (
        "mc-partial-without-selector",
        k.MACHINE_CONFIGURATION.patch_token,
        _set("spec.managedBootImages.machineManagers.0.selection", {"mode": "Partial"}),
        "selection: Invalid value: Partial is required when type is partial, and forbidden otherwise",
    ),
    (
        "mc-rhcos-record-format",
        k.MACHINE_CONFIGURATION.patch_token,
        _set(
            "spec.bootImageSkewEnforcement",
            {"mode": "Manual", "manual": {"mode": "RHCOSVersion", "rhcosVersion": "9.6"}},
        ),
        'rhcosVersion: Invalid value: "9.6": rhcosVersion must match format [major].[minor].[datestamp(YYYYMMDD)]',
    ),
    (
        "mc-list-map-key-missing",
        k.MACHINE_CONFIGURATION.patch_token,
        _drop("spec.managedBootImages.machineManagers.0.apiGroup"),
        "machineManagers[0].apiGroup: Required value: a key of this map list",
    ),
    # HostedCluster
    (
        "hc-issuer-url",
        k.HOSTED_CLUSTER.token,
        _set("spec.issuerURL", "not a url"),
        'spec.issuerURL: Invalid value: "not a url": issuerURL must be a valid absolute URL',
    ),
    (
        "hc-services",
        k.HOSTED_CLUSTER.token,
        lambda o: o["spec"]["services"].pop(),
        "spec: Invalid value: spec.services in body should have at least 4 items or 3 for IBMCloud",
    ),
    (
        "hc-cluster-network",
        k.HOSTED_CLUSTER.token,
        _set("spec.networking.clusterNetwork", [{"cidr": "10.132.0.0"}]),
        'spec.networking.clusterNetwork[0].cidr: Invalid value: "10.132.0.0": cidr must be a valid IPv4 or IPv6 CIDR',
    ),
    ("hc-required", k.HOSTED_CLUSTER.token, _drop("spec.release"), "spec.release: Required value"),
    (
        "hc-duration-format",
        k.HOSTED_CLUSTER.token,
        _set(
            "spec.operatorConfiguration",
            {
                "ingressOperator": {
                    "endpointPublishingStrategy": {
                        "type": "LoadBalancerService",
                        "loadBalancer": {
                            "scope": "External",
                            "providerParameters": {
                                "type": "AWS",
                                "aws": {
                                    "type": "Classic",
                                    "classicLoadBalancer": {"connectionIdleTimeout": "forever"},
                                },
                            },
                        },
                    }
                }
            },
        ),
        'connectionIdleTimeout in body must be of type duration: "forever"',
    ),
    # HyperShift NodePool
    (
        "np-autoscaling",
        k.HYPERSHIFT_NODE_POOL.token,
        _all(_drop("spec.replicas"), _set("spec.autoScaling", {"min": 5, "max": 1})),
        "spec.autoScaling: Invalid value: max must be equal or greater than min",
    ),
    (
        "np-replicas-and-autoscaling",
        k.HYPERSHIFT_NODE_POOL.token,
        _set("spec.autoScaling", {"min": 1, "max": 3}),
        "spec: Invalid value: Both replicas or autoScaling should not be set",
    ),
    (
        "np-upgrade-type-enum",
        k.HYPERSHIFT_NODE_POOL.token,
        _set("spec.management.upgradeType", "Recreate"),
        'spec.management.upgradeType: Unsupported value: "Recreate": supported values: "Replace", "InPlace"',
    ),
    (
        "np-max-surge-int-or-string",
        k.HYPERSHIFT_NODE_POOL.token,
        _set("spec.management.replace.rollingUpdate.maxSurge", True),
        'maxSurge: Invalid value: "boolean": spec.management.replace.rollingUpdate.maxSurge in body must be of type '
        "integer,string",
    ),
    # OpenshiftEC2NodeClass
    (
        "osnc-restricted-tag",
        k.OPENSHIFT_EC2_NODE_CLASS.token,
        _set("spec.tags", {"kubernetes.io/cluster/other": "owned"}),
        "spec.tags: Invalid value: tag contains a restricted tag matching kubernetes.io/cluster/",
    ),
    (
        "osnc-version",
        k.OPENSHIFT_EC2_NODE_CLASS.token,
        _set("spec.version", "4.22"),
        'spec.version: Invalid value: "4.22": version must be a valid semantic version',
    ),
    (
        "osnc-two-root-volumes",
        k.OPENSHIFT_EC2_NODE_CLASS.token,
        lambda o: o["spec"]["blockDeviceMappings"].append(
            dict(o["spec"]["blockDeviceMappings"][0], deviceName="/dev/xvdb")
        ),
        "spec.blockDeviceMappings: Invalid value: must have only one blockDeviceMappings with rootVolume",
    ),
    (
        "osnc-min-properties",
        k.OPENSHIFT_EC2_NODE_CLASS.token,
        _set("spec", {}),
        "spec: Invalid value: 0: spec in body should have at least 1 properties",
    ),
    # EC2NodeClass (self-managed and legacy)
    (
        "ec2nc-role-and-profile",
        k.EC2_NODE_CLASS.token,
        _set("spec.role", "node-role"),
        "spec: Invalid value: must specify exactly one of ['role', 'instanceProfile']",
    ),
    (
        "ec2nc-ami-id-exclusive",
        k.EC2_NODE_CLASS.token,
        lambda o: o["spec"]["amiSelectorTerms"][0].update(tags={"a": "b"}),
        "spec.amiSelectorTerms: Invalid value: 'id' is mutually exclusive",
    ),
    (
        "legacy-restricted-tag",
        LEGACY,
        _set("spec.tags", {"karpenter.sh/nodepool": "x"}),
        "spec.tags: Invalid value: tag contains a restricted tag matching karpenter.sh/nodepool",
    ),
    (
        "ec2nc-http-tokens-enum",
        k.EC2_NODE_CLASS.token,
        _set("spec.metadataOptions.httpTokens", "maybe"),
        'spec.metadataOptions.httpTokens: Unsupported value: "maybe"',
    ),
    # Karpenter NodePool
    (
        "kp-schedule",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"]["disruption"]["budgets"].append(
            {"nodes": "0", "schedule": "whenever", "duration": "8h"}
        ),
        'schedule: Invalid value: "whenever": spec.disruption.budgets[4].schedule in body should match \'^(@(annually',
    ),
    (
        "kp-schedule-without-duration",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"]["disruption"]["budgets"].append({"nodes": "0", "schedule": "@daily"}),
        "spec.disruption.budgets: Invalid value: 'schedule' must be set with 'duration'",
    ),
    (
        "kp-label-domain",
        k.KARPENTER_NODE_POOL.token,
        _set("spec.template.metadata", {"labels": {"karpenter.k8s.aws/team": "a"}}),
        'spec.template.metadata.labels: Invalid value: label domain "karpenter.k8s.aws" is restricted',
    ),
    (
        "kp-requirement-key",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"]["template"]["spec"]["requirements"].append(
            {"key": "karpenter.sh/instance-family", "operator": "In", "values": ["m6i"]}
        ),
        'key: Invalid value: "karpenter.sh/instance-family": label domain "karpenter.sh" is restricted',
    ),
    (
        "kp-requirement-in-without-values",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"]["template"]["spec"]["requirements"].append(
            {"key": "team", "operator": "In", "values": []}
        ),
        "spec.template.spec.requirements: Invalid value: requirements with operator 'In' must have a value defined",
    ),
    (
        "kp-gt-not-an-integer",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"]["template"]["spec"]["requirements"].append(
            {"key": "cpu", "operator": "Gt", "values": ["four"]}
        ),
        "spec.template.spec.requirements: Invalid value: \"array\": type conversion error from 'string' to 'int'",
    ),
    (
        "kp-reasons-set",
        k.KARPENTER_NODE_POOL.token,
        _set("spec.disruption.budgets.0.reasons", ["Drifted", "Drifted"]),
        'spec.disruption.budgets[0].reasons[1]: Duplicate value: "Drifted"',
    ),
]


@pytest.mark.parametrize(
    ("token", "change", "expected"), [c[1:] for c in REJECTED], ids=[c[0] for c in REJECTED]
)
def test_a_change_the_crd_forbids_is_rejected_with_its_message(
    token: str, change: Change, expected: str
) -> None:
    obj = rendered(token)
    change(obj)
    found = _blocking(_judge(token, obj))
    assert any(expected in f for f in found), found


# (id, token, change applied to the new object, change applied to the previous one, expected)
TRANSITIONS: list[tuple[str, str, Change, Change | None, str]] = [
    (
        "hc-availability-policy-from-default",
        k.HOSTED_CLUSTER.token,
        _set("spec.controllerAvailabilityPolicy", "SingleReplica"),
        None,  # the stored object has the CRD default, HighlyAvailable
        'spec.controllerAvailabilityPolicy: Invalid value: "SingleReplica": ControllerAvailabilityPolicy is immutable',
    ),
    (
        "hc-fips",
        k.HOSTED_CLUSTER.token,
        _set("spec.fips", True),
        _set("spec.fips", False),
        "spec.fips: Invalid value: true: fips is immutable",
    ),
    (
        "hc-platform-type",
        k.HOSTED_CLUSTER.token,
        _set("spec.platform.type", "None"),
        None,
        'spec.platform.type: Invalid value: "None": Type is immutable',
    ),
    (
        "hc-infra-id",
        k.HOSTED_CLUSTER.token,
        _set("spec.infraID", "other-1a2b3"),
        None,
        'spec.infraID: Invalid value: "other-1a2b3": infraID is immutable',
    ),
    (
        "np-arch",
        k.HYPERSHIFT_NODE_POOL.token,
        _set("spec.arch", "arm64"),
        None,
        'spec.arch: Invalid value: "arm64": Arch is immutable',
    ),
    (
        "np-upgrade-type",
        k.HYPERSHIFT_NODE_POOL.token,
        _set("spec.management", {"upgradeType": "InPlace", "inPlace": {}}),
        None,
        'spec.management.upgradeType: Invalid value: "InPlace": UpgradeType is immutable',
    ),
    (
        "kp-node-class-kind",
        k.KARPENTER_NODE_POOL.token,
        _set("spec.template.spec.nodeClassRef.kind", "OpenshiftEC2NodeClass"),
        None,
        "spec.template.spec.nodeClassRef: Invalid value: nodeClassRef.kind is immutable",
    ),
    (
        "kp-static-to-dynamic",
        k.KARPENTER_NODE_POOL.token,
        lambda o: o["spec"].update(replicas=3, limits={"nodes": 3}) or o["spec"].pop("weight", None),
        None,
        "spec: Invalid value: Cannot transition NodePool between static (replicas set) and dynamic",
    ),
]


@pytest.mark.parametrize(
    ("token", "change", "change_old", "expected"),
    [c[1:] for c in TRANSITIONS],
    ids=[c[0] for c in TRANSITIONS],
)
def test_a_transition_the_crd_forbids_is_rejected_only_against_a_previous_object(
    token: str, change: Change, change_old: Change | None, expected: str
) -> None:
    new, old = rendered(token), rendered(token)
    change(new)
    if change_old is not None:
        change_old(old)
    found = _blocking(_judge(token, new, old=old))
    assert any(expected in f for f in found), found
    # On a create there is no oldSelf: the API server does not evaluate transition rules.
    assert _blocking(_judge(token, new)) == []


def test_a_mutable_change_passes_the_transition_rules() -> None:
    new, old = rendered(k.HOSTED_CLUSTER.token), rendered(k.HOSTED_CLUSTER.token)
    new["spec"]["release"]["image"] = "quay.io/openshift-release-dev/ocp-release:4.22.9-multi"
    assert _judge(k.HOSTED_CLUSTER.token, new, old=old) == []


def test_status_on_the_previous_object_is_what_the_update_is_judged_with() -> None:
    """MachineConfiguration: while the MCO runs skew enforcement in Automatic mode (a status field), the
    CRD forbids any MachineSet selection but All; the update keeps the stored status."""
    patch = rendered(k.MACHINE_CONFIGURATION.patch_token)  # Partial selection
    stored = rendered(k.MACHINE_CONFIGURATION.patch_token)
    stored["spec"]["managedBootImages"]["machineManagers"][0]["selection"] = {"mode": "All"}
    live = {
        **stored,
        "status": {
            "bootImageSkewEnforcementStatus": {"mode": "Automatic", "automatic": {"ocpVersion": "4.22.0"}},
            "managedBootImagesStatus": {"machineManagers": []},
        },
    }
    found = _blocking(_judge(k.MACHINE_CONFIGURATION.patch_token, patch, old=live))
    assert any(
        "any MachineAPI MachineSet MachineManager must use selection mode 'All'" in f for f in found
    ), found
    # The same object again is refused too: a rule at the root is never ratcheted, since the fields of
    # metadata have no schema to correlate them by (the API server reference refuses it alike).
    assert any(
        "managedBootImagesStatus must contain a MachineManager" in f
        for f in _blocking(_judge(k.MACHINE_CONFIGURATION.patch_token, live, old=live))
    )
    # Status the object itself carries is dropped, as a create cannot set it.
    assert _blocking(_judge(k.MACHINE_CONFIGURATION.patch_token, live)) == []


def test_a_type_error_stops_the_cel_rules_as_in_the_api_server() -> None:
    obj = rendered(k.HYPERSHIFT_NODE_POOL.token)
    del obj["spec"]["replicas"]
    obj["spec"]["autoScaling"] = {"min": "five", "max": 1}
    found = _blocking(_judge(k.HYPERSHIFT_NODE_POOL.token, obj))
    assert any("spec.autoScaling.min" in f and "must be of type integer" in f for f in found)
    notes = [str(f) for f in _judge(k.HYPERSHIFT_NODE_POOL.token, obj) if not f.blocking]
    assert any("some validation rules were not checked" in f for f in notes)
    assert not any("max must be equal or greater than min" in f for f in found)


def test_defaults_are_applied_before_the_rules() -> None:
    """expireAfter has a CRD default; leaving it out is fine, and null is pruned rather than rejected."""
    obj = rendered(k.KARPENTER_NODE_POOL.token)
    del obj["spec"]["template"]["spec"]["expireAfter"]
    obj["spec"]["weight"] = None
    assert _judge(k.KARPENTER_NODE_POOL.token, obj) == []


def test_a_format_on_an_array_checks_nothing_as_in_the_api_server() -> None:
    """The HostedCluster CRD puts ``format: hostname`` on an array; kube-openapi applies formats to strings."""
    obj = rendered(k.HOSTED_CLUSTER.token)
    obj["spec"]["configuration"] = {
        "image": {"registrySources": {"containerRuntimeSearchRegistries": ["not a host!"]}}
    }
    assert _judge(k.HOSTED_CLUSTER.token, obj) == []


def test_preserve_unknown_fields_keeps_what_the_schema_does_not_declare() -> None:
    obj = rendered(k.MACHINE_SET.token)
    obj["spec"]["template"]["spec"]["providerSpec"]["value"]["anythingTheProviderReads"] = {"x": 1}
    assert _judge(k.MACHINE_SET.token, obj) == []


def test_a_patch_is_not_required_to_carry_what_the_live_object_holds() -> None:
    patch = {
        "apiVersion": k.MACHINE_CONFIGURATION.api_version,
        "kind": k.MACHINE_CONFIGURATION.kind,
        "metadata": {"name": "cluster"},
        "spec": {"bootImageSkewEnforcement": {"mode": "None"}},
    }
    assert _judge(k.MACHINE_CONFIGURATION.patch_token, patch) == []


def test_values_unknown_during_preview_are_never_passed_silently() -> None:
    obj = rendered(k.HYPERSHIFT_NODE_POOL.token)
    del obj["spec"]["replicas"]
    obj["spec"]["autoScaling"] = {"min": UNKNOWN, "max": 1}
    findings = _judge(k.HYPERSHIFT_NODE_POOL.token, obj)
    (advisory,) = [f for f in findings if not f.blocking]
    assert "because spec.autoScaling.min is unknown until apply" in advisory.message
    assert "`self.max >= self.min` at spec.autoScaling" in advisory.message
    assert _blocking(findings) == []
    # The rest is still judged.
    obj["spec"]["arch"] = "sparc"
    assert any(
        "spec.arch: Unsupported value" in f for f in _blocking(_judge(k.HYPERSHIFT_NODE_POOL.token, obj))
    )


@pytest.mark.parametrize(
    ("name", "escaped"),
    [
        ("foo", "foo"),
        ("namespace", "__namespace__"),
        ("x-y", "x__dash__y"),
        ("a.b/c", "a__dot__b__slash__c"),
        ("a__b", "a__underscores__b"),
        ("1a", None),
        ("a b", None),
    ],
)
def test_property_names_are_escaped_as_kubernetes_does(name: str, escaped: str | None) -> None:
    assert escape_property(name) == escaped


# --- the API server's request path (issue 17; the differential test checks these on a corpus) ----------


def test_a_null_list_item_fails_its_type_check() -> None:
    obj = rendered(k.KARPENTER_NODE_POOL.token)
    obj["spec"]["template"]["spec"]["requirements"][0]["values"].append(None)
    found = _blocking(_judge(k.KARPENTER_NODE_POOL.token, obj))
    assert any(
        f.startswith('spec.template.spec.requirements[0].values[1]: Invalid value: "null"') for f in found
    ), found


def test_a_null_map_entry_is_removed_then_the_map_constraints_apply() -> None:
    obj = rendered(k.OPENSHIFT_EC2_NODE_CLASS.token)
    obj["spec"]["subnetSelectorTerms"][0]["tags"] = {"karpenter.sh/discovery": None}
    found = _blocking(_judge(k.OPENSHIFT_EC2_NODE_CLASS.token, obj))
    assert any(
        "spec.subnetSelectorTerms[0].tags: Invalid value: 0:" in f
        and "should have at least 1 properties" in f
        for f in found
    ), found
    # An entry among others just goes away, as the API server removes it.
    obj["spec"]["subnetSelectorTerms"][0]["tags"] = {"karpenter.sh/discovery": "x", "Name": None}
    assert _blocking(_judge(k.OPENSHIFT_EC2_NODE_CLASS.token, obj)) == []


def test_a_hand_written_object_needs_a_name_and_then_no_rule_runs() -> None:
    obj = rendered(k.EC2_NODE_CLASS.token)
    del obj["metadata"]["name"]
    del obj["spec"]["amiSelectorTerms"]
    findings = _judge(k.EC2_NODE_CLASS.token, obj)
    found = _blocking(findings)
    assert "metadata.name: Required value: name or generateName is required" in found
    assert "spec.amiSelectorTerms: Required value" in found
    # Blocking errors keep the CEL rules from running, as on the server: no "no such key" beside them.
    assert not any("no such key" in f or "Key not found" in f for f in found), found
    assert any("some validation rules were not checked" in f.message for f in findings if not f.blocking)
    obj["metadata"]["generateName"] = "general-"
    assert "metadata.name: Required value: name or generateName is required" not in _blocking(
        _judge(k.EC2_NODE_CLASS.token, obj)
    )


def test_an_update_that_keeps_an_invalid_value_is_ratcheted() -> None:
    """A stored object that a stricter CRD would refuse: leaving the value as it is passes (noted), changing
    it to another invalid value is refused."""
    old = rendered(k.HYPERSHIFT_NODE_POOL.token)
    old["spec"]["management"]["upgradeType"] = "Recreate"  # not in the enum
    new = rendered(k.HYPERSHIFT_NODE_POOL.token)
    new["spec"]["management"]["upgradeType"] = "Recreate"
    new["metadata"].setdefault("labels", {})["team"] = "a"
    findings = _judge(k.HYPERSHIFT_NODE_POOL.token, new, old=old)
    assert _blocking(findings) == []
    assert any("Unsupported value" in f.message and "ratcheted" in f.message for f in findings)
    # The same object created afresh is refused.
    assert _blocking(_judge(k.HYPERSHIFT_NODE_POOL.token, new))
    new["spec"]["management"]["upgradeType"] = "Rebuild"
    assert any(
        "upgradeType: Unsupported value" in f
        for f in _blocking(_judge(k.HYPERSHIFT_NODE_POOL.token, new, old=old))
    )
