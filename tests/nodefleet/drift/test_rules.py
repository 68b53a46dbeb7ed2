"""Karpenter's static drift model, and the token-rotation problem it exists to show."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from nodefleet.drift.rules import (
    drift_reasons,
    ec2_node_class_static_view,
    hypershift_config_hash,
    hypershift_generated_ec2_node_class,
    karpenter_minor,
    node_pool_static_view,
    static_drift,
    static_hash,
)
from nodefleet.render.hosted import render_karpenter_node_pool, render_openshift_ec2_node_class
from nodefleet.render.ignition import hypershift_stub, user_data
from nodefleet.stackfile.karpenter import KarpenterNodePoolSpec
from tests.nodefleet.render.test_hosted import hosted_cluster, hosted_cluster_dict, validate_manifest

CA = "-----BEGIN CERTIFICATE-----\nMIIBignitionserverca=\n-----END CERTIFICATE-----\n"
ENDPOINT = "ignition-server-clusters-demo.apps.mgmt.example.com"
AMI_4_22 = "ami-0422aaaaaaaaaaaaa"
AMI_4_23 = "ami-0423bbbbbbbbbbbbb"


# --- static_hash / static_drift -------------------------------------------------------------------------

_CLASS: dict[str, Any] = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "general"},
    "spec": {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": "ami-1"}],
        "role": "r",
        "subnetSelectorTerms": [{"id": "subnet-1"}],
        "securityGroupSelectorTerms": [{"id": "sg-1"}],
        "tags": {"a": "1", "b": "2"},
        "blockDeviceMappings": [{"deviceName": "/dev/xvda"}, {"deviceName": "/dev/xvdb"}],
    },
}
_POOL: dict[str, Any] = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "metadata": {"labels": {"team": "a"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "general"},
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
            },
        }
    },
}


def _with(base: dict[str, Any], **spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(base)
    for key, value in spec.items():
        if value is None:
            out["spec"].pop(key, None)
        else:
            out["spec"][key] = value
    return out


def _template(**template_spec: Any) -> dict[str, Any]:
    out = copy.deepcopy(_POOL)
    out["spec"]["template"]["spec"].update(template_spec)
    return out


def test_static_hash_ignores_order_but_not_go_zero_values() -> None:
    reordered = _with(
        _CLASS,
        tags={"b": "2", "a": "1"},
        blockDeviceMappings=[{"deviceName": "/dev/xvdb"}, {"deviceName": "/dev/xvda"}],
    )
    assert static_hash(reordered) == static_hash(_CLASS)
    assert re.fullmatch(r"[0-9a-f]{64}", static_hash(_CLASS))
    # A pointer to false, an empty list or map is not absent to hashstructure (IgnoreZeroValue skips nil only).
    assert static_hash(_with(_CLASS, detailedMonitoring=False)) != static_hash(_CLASS)
    assert static_hash(_with(_CLASS, tags={})) != static_hash(_with(_CLASS, tags=None))
    # A value (non-pointer) field at its zero value is absent: role "" hashes like no role.
    assert static_hash(_with(_CLASS, role="")) == static_hash(_with(_CLASS, role=None))
    # SlicesAsSets XORs items: an item listed twice cancels out.
    twice = [{"deviceName": "/dev/xvda"}, {"deviceName": "/dev/xvda"}, {"deviceName": "/dev/xvdb"}]
    assert static_hash(_with(_CLASS, blockDeviceMappings=twice)) == static_hash(
        _with(_CLASS, blockDeviceMappings=[{"deviceName": "/dev/xvdb"}])
    )


def test_static_hash_applies_crd_defaults_and_go_decoding() -> None:
    defaults = {"httpEndpoint": "enabled", "httpProtocolIPv6": "disabled"}
    defaults |= {"httpPutResponseHopLimit": 1, "httpTokens": "required"}
    assert static_hash(_with(_CLASS, metadataOptions=defaults)) == static_hash(_CLASS)
    assert static_hash(_template(expireAfter="720h")) == static_hash(_POOL)
    assert static_hash(_template(expireAfter="43200m")) == static_hash(_POOL)
    assert static_hash(_template(expireAfter="Never")) != static_hash(_POOL)
    size = {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "1024Gi"}}
    assert static_hash(_with(_CLASS, blockDeviceMappings=[size])) == static_hash(
        _with(_CLASS, blockDeviceMappings=[{**size, "ebs": {"volumeSize": "1Ti"}}])
    )


def test_static_hash_keeps_empty_map_values() -> None:
    """A label with an empty value is a map entry, not a zero struct field: adding it must change the hash."""
    infra = copy.deepcopy(_POOL)
    infra["spec"]["template"]["metadata"]["labels"]["node-role.kubernetes.io/infra"] = ""
    assert static_hash(_POOL) != static_hash(infra)


def test_ca_bundle_drifts_node_classes_from_karpenter_1_12() -> None:
    assert static_drift(_CLASS, _CLASS, ca_bundle_before="ca-1", ca_bundle_after="ca-2") == "NodeClassDrift"
    assert static_drift(_CLASS, _CLASS, ca_bundle_before=None, ca_bundle_after="") == ""


def test_a_hash_version_bump_restamps_instead_of_drifting() -> None:
    """EC2NodeClass hash v5 (1.12-1.14) → v6 (1.15): Karpenter re-stamps, so even a change does not drift."""
    changed = _with(_CLASS, userData="new")
    assert static_drift(_CLASS, changed, karpenter="1.14", launched_by="1.12") == "NodeClassDrift"
    assert static_drift(_CLASS, changed, karpenter="1.15", launched_by="1.14") == ""
    assert static_drift(_CLASS, _CLASS, karpenter="1.14", launched_by="1.12") == ""
    assert static_drift(_POOL, _template(expireAfter="1h"), karpenter="1.15", launched_by="1.12") == (
        "NodePoolDrifted"
    )


def test_karpenter_minor_comes_from_the_set_annotation() -> None:
    annotated = copy.deepcopy(_CLASS)
    annotated["metadata"]["annotations"] = {"nodefleet.io/karpenter": "hypershift/1.13"}
    assert karpenter_minor(annotated) == "1.13"
    assert karpenter_minor(_CLASS) == "1.15"
    annotated["metadata"]["annotations"]["nodefleet.io/karpenter"] = "aws/1.16"
    assert karpenter_minor(annotated) == "1.15"  # no verified model: judged as the default
    with pytest.raises(ValueError, match=r"supported: 1\.12, 1\.13, 1\.14, 1\.15"):
        static_hash(_CLASS, karpenter="1.11")


def test_ec2_node_class_view_drops_exactly_the_ignored_fields() -> None:
    spec = {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": "ami-1"}],
        "subnetSelectorTerms": [{"tags": {"a": "b"}}],
        "securityGroupSelectorTerms": [{"tags": {"a": "b"}}],
        "capacityReservationSelectorTerms": [{"id": "cr-1"}],
        "ipPrefixCount": 2,
        "userData": "x",
        "instanceProfile": "p",
    }
    assert ec2_node_class_static_view(spec) == {
        "amiFamily": "Custom",
        "userData": "x",
        "instanceProfile": "p",
    }


def test_node_pool_view_is_the_template_without_requirements() -> None:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"a": "b"}},
            "spec": {"requirements": [{"key": "k"}], "expireAfter": "720h"},
        },
        "limits": {"cpu": "10"},
        "weight": 3,
        "disruption": {"budgets": [{"nodes": "1"}]},
    }
    view = node_pool_static_view(spec)
    assert view == {"metadata": {"labels": {"a": "b"}}, "spec": {"expireAfter": "720h"}}
    assert spec["template"]["spec"]["requirements"] == [{"key": "k"}]  # input untouched


# --- HyperShift AutoNode: token rotation ------------------------------------------------------------------


def _generated(
    *, token: str, release: str = "4.22.3", config: str = "", ami: str = AMI_4_22
) -> dict[str, Any]:
    """The EC2NodeClass HyperShift would generate for the ``gpu`` OpenshiftEC2NodeClass right now."""
    hc = hosted_cluster()
    assert hc.auto_node is not None
    openshift_class = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[1])
    stub = hypershift_stub(
        ENDPOINT,
        token=token,
        ca_pem=CA,
        node_pool="clusters-demo/gpu-karpenter",
        config_hash=hypershift_config_hash(release=release, config=config),
    )
    return hypershift_generated_ec2_node_class(
        openshift_class,
        user_data=user_data(stub),
        ami=ami,
        instance_profile="demo-8h2kq-worker",
        infra_id="demo-8h2kq",
        resource_tags=hc.resource_tags,
    )


TOKEN_A = "0b9d7a52-6f0e-4c1e-9f53-2d1a7c3e8b10"
TOKEN_B = "e47c1f08-3a2b-4d6c-8e9f-5b0a1c2d3e4f"


def test_token_rotation_drifts_without_the_carry_only() -> None:
    before, after = _generated(token=TOKEN_A), _generated(token=TOKEN_B)
    assert before["spec"]["userData"] != after["spec"]["userData"]
    # Upstream Karpenter hashes userData byte for byte: every rotation (each 5.5 h) drifts every node.
    assert static_hash(before) != static_hash(after)
    assert drift_reasons(before, after) == ["NodeClassDrift"]
    # The OpenShift fork hashes only TargetConfigVersionHash, which a rotation does not touch.
    assert static_hash(before, carry=True) == static_hash(after, carry=True)
    assert drift_reasons(before, after, carry=True) == []


def test_carry_view_is_the_config_hash() -> None:
    spec = _generated(token=TOKEN_A)["spec"]
    assert ec2_node_class_static_view(spec, carry=True)["userData"] == hypershift_config_hash(
        release="4.22.3"
    )


def test_carry_keeps_non_ignition_user_data() -> None:
    spec = {"amiFamily": "Custom", "userData": "#!/bin/bash\necho a"}
    assert ec2_node_class_static_view(spec, carry=True)["userData"] == "#!/bin/bash\necho a"
    no_header = user_data({"ignition": {"version": "3.2.0", "config": {"merge": [{"source": "s3://b/k"}]}}})
    assert ec2_node_class_static_view({"userData": no_header}, carry=True)["userData"] == no_header


@pytest.mark.parametrize("carry", [False, True])
def test_config_change_drifts_with_and_without_the_carry(carry: bool) -> None:
    before = _generated(token=TOKEN_A)
    after = _generated(token=TOKEN_A, config="kubelet maxPods 250")
    assert drift_reasons(before, after, carry=carry) == ["NodeClassDrift"]


@pytest.mark.parametrize("carry", [False, True])
def test_release_change_drifts_with_and_without_the_carry(carry: bool) -> None:
    before = _generated(token=TOKEN_A)
    after = _generated(token=TOKEN_B, release="4.23.0", ami=AMI_4_23)
    assert drift_reasons(before, after, carry=carry) == ["NodeClassDrift", "AMIDrift"]


def test_generated_class_shape_and_crd() -> None:
    m = _generated(token=TOKEN_A)
    assert m["metadata"] == {"name": "gpu"}
    spec = m["spec"]
    assert spec["amiFamily"] == "Custom"
    assert spec["amiSelectorTerms"] == [{"id": AMI_4_22}]
    assert spec["instanceProfile"] == "demo-8h2kq-worker"
    assert spec["subnetSelectorTerms"] == [
        {"id": "subnet-0aaaaaaaaaaaaaaa1"},
        {"id": "subnet-0aaaaaaaaaaaaaaa2"},
    ]
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {
                "volumeSize": "300Gi",
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
            },
        }
    ]
    # Class tags overlaid by the HostedCluster's resourceTags.
    assert spec["tags"] == {"workload": "gpu", "team": "platform", "cost-center": "cc-1234"}
    validate_manifest(m)


def test_generated_class_defaults_and_restricted_tags() -> None:
    openshift_class = {
        "apiVersion": "karpenter.hypershift.openshift.io/v1",
        "kind": "OpenshiftEC2NodeClass",
        "metadata": {"name": "plain"},
        "spec": {
            "ipAddressAssociation": "Public",
            "monitoring": "Detailed",
            "metadataOptions": {
                "access": "HTTPEndpoint",
                "httpIPProtocol": "IPv4",
                "httpPutResponseHopLimit": 2,
                "httpTokens": "Required",
            },
            "capacityReservationSelectorTerms": [{"tags": {"a": "b"}, "instanceMatchCriteria": "Targeted"}],
        },
    }
    m = hypershift_generated_ec2_node_class(
        openshift_class,
        user_data="{}",
        ami="ami-0123",
        instance_profile="p",
        infra_id="demo-8h2kq",
        resource_tags={
            "kubernetes.io/cluster/demo-8h2kq": "owned",
            "karpenter.sh/nodepool": "x",
            "team": "a",
        },
    )
    spec = m["spec"]
    assert spec["subnetSelectorTerms"] == [
        {"tags": {"kubernetes.io/role/internal-elb": "1", "kubernetes.io/cluster/demo-8h2kq": "*"}}
    ]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo-8h2kq"}}]
    assert spec["blockDeviceMappings"] == [
        {"deviceName": "/dev/xvda", "ebs": {"volumeSize": "120Gi", "volumeType": "gp3", "encrypted": True}}
    ]
    assert spec["associatePublicIPAddress"] is True and spec["detailedMonitoring"] is True
    assert spec["metadataOptions"] == {
        "httpEndpoint": "enabled",
        "httpProtocolIPv6": "disabled",
        "httpPutResponseHopLimit": 2,
        "httpTokens": "required",
    }
    assert spec["capacityReservationSelectorTerms"] == [
        {"tags": {"a": "b"}, "instanceMatchCriteria": "targeted"}
    ]
    assert spec["tags"] == {"team": "a"}
    validate_manifest(m)


def test_config_hash_model() -> None:
    h = hypershift_config_hash(release="4.22.3")
    assert re.fullmatch(r"[0-9a-f]{8}", h)
    assert h == hypershift_config_hash(release="4.22.3", config="", rhel_stream="rhel-9")
    assert h != hypershift_config_hash(release="4.22.4")
    assert h != hypershift_config_hash(release="4.22.3", config="x")
    assert h != hypershift_config_hash(release="4.22.3", rhel_stream="rhel-10")


# --- Karpenter NodePools ---------------------------------------------------------------------------------


def _pool(**changes: Any) -> dict[str, Any]:
    raw = copy.deepcopy(hosted_cluster_dict()["autoNode"]["nodePools"][0])
    raw.update(changes)
    return render_karpenter_node_pool(KarpenterNodePoolSpec.model_validate(raw), annotations={"a": "b"})


@pytest.mark.parametrize(
    "changes",
    [
        {"limits": {"cpu": "2000", "memory": "4000Gi"}},
        {"limits": {}},
        {"weight": 90},
        {"weight": None},
        {"disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m", "driftBudget": "0"}},
        {"disruption": {"driftWindows": []}},
    ],
)
def test_behavioural_node_pool_fields_never_drift(changes: dict[str, Any]) -> None:
    assert drift_reasons(_pool(), _pool(**changes)) == []


@pytest.mark.parametrize(
    "changes",
    [
        {"expireAfter": "720h"},
        {"terminationGracePeriod": "48h"},
        {"labels": {"billing-team": "other"}},
        {"nodeClass": "gpu"},
    ],
)
def test_template_changes_drift(changes: dict[str, Any]) -> None:
    assert drift_reasons(_pool(), _pool(**changes)) == ["NodePoolDrifted"]


def test_widening_requirements_does_not_drift() -> None:
    assert drift_reasons(_pool(), _pool(instanceFamilies=["m6i", "m7i", "m7g", "c7i"])) == []
    wider = hosted_cluster_dict()["autoNode"]["nodePools"][0]["requirements"][1:]  # NotIn metal dropped
    assert drift_reasons(_pool(), _pool(requirements=wider)) == []


@pytest.mark.parametrize(
    "changes",
    [
        {"capacityTypes": ["on-demand"]},
        {"instanceFamilies": ["m7i"]},
        {
            "requirements": [
                {
                    "key": "karpenter.k8s.aws/instance-size",
                    "operator": "NotIn",
                    "values": ["metal", "48xlarge"],
                }
            ]
        },
        {
            "requirements": [
                {"key": "karpenter.k8s.aws/instance-size", "operator": "In", "values": ["xlarge"]}
            ]
        },
    ],
)
def test_narrowing_requirements_drifts(changes: dict[str, Any]) -> None:
    assert "RequirementsDrifted" in drift_reasons(_pool(), _pool(**changes))
    assert "NodePoolDrifted" not in drift_reasons(_pool(), _pool(**changes))


def test_drift_reasons_refuses_mixed_or_unknown_kinds() -> None:
    with pytest.raises(ValueError, match="cannot compare"):
        drift_reasons(_pool(), _generated(token=TOKEN_A))
    hc = hosted_cluster()
    assert hc.auto_node is not None
    openshift_class = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[0])
    with pytest.raises(ValueError, match="no drift model"):
        drift_reasons(openshift_class, openshift_class)
