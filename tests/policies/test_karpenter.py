"""Karpenter policies: karpenter-userdata, karpenter-autonode-classes, karpenter-token-carry and
drift-budget. (Restricted requirement keys are the NodePool CRD's rule: tests/policies/test_one_verdict.py.)"""

from __future__ import annotations

import base64
import json
import urllib.parse
from typing import Any

import pytest
from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UNKNOWN_ARRAY_VALUE, UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from policies.karpenter import (
    drift_budget,
    inline_credentials,
    karpenter_autonode_classes,
    karpenter_token_carry,
    karpenter_userdata,
)
from tests.crdschema import validate_manifest
from tests.policies.helpers import component, run_policy, run_stack_policy, stack_resource

HOSTED = "clusters/example"
CA = "-----BEGIN CERTIFICATE-----\nMIIDUTCCAjmgAwIBAgIIYm9ndXMtY2E=\n-----END CERTIFICATE-----\n"
TOKEN = base64.b64encode(b"6f1c2b8e-3d4a-4e5f-9a7b-1c2d3e4f5a6b").decode()


def _data_url(text: str) -> str:
    return "data:text/plain;base64," + base64.b64encode(text.encode()).decode()


def _stub(headers: list[dict[str, str]], key: str = "merge") -> str:
    """HyperShift's Ignition stub (token.go ignConfig()), with the given headers."""
    source = {
        "source": "https://ignition-server-clusters-example.apps.mgmt.example.com/ignition",
        "httpHeaders": headers,
    }
    config: dict[str, Any] = {"merge": [source]} if key == "merge" else {"replace": source}
    return json.dumps(
        {
            "ignition": {
                "version": "3.2.0",
                "security": {"tls": {"certificateAuthorities": [{"source": _data_url(CA)}]}},
                "config": config,
            }
        }
    )


HYPERSHIFT_STUB = _stub(
    [
        {"name": "Authorization", "value": f"Bearer {TOKEN}"},
        {"name": "NodePool", "value": "clusters-example/general-karpenter"},
        {"name": "TargetConfigVersionHash", "value": "5c7a1f2e"},
    ]
)
S3_POINTER = json.dumps(
    {
        "ignition": {
            "version": "3.2.0",
            "config": {"merge": [{"source": "s3://nodefleet-ignition/dev/4.22.3/worker/5c7a1f2e.ign"}]},
        }
    }
)


def _ec2_node_class(
    user_data: Any, name: str = "general", annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    nc: dict[str, Any] = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "amiFamily": "Custom",
            "amiSelectorTerms": [{"id": "ami-06a6b025350ff1e23"}],
            "instanceProfile": "dev-7xk2p-worker-profile",
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dev-7xk2p"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "dev-7xk2p"}}],
            "metadataOptions": {
                "httpEndpoint": "enabled",
                "httpPutResponseHopLimit": 1,
                "httpTokens": "required",
            },
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "ebs": {"volumeSize": "120Gi", "volumeType": "gp3", "encrypted": True},
                }
            ],
        },
    }
    if user_data is not None:
        nc["spec"]["userData"] = user_data
    if annotations is not None:
        nc["metadata"]["annotations"] = annotations
    return nc


def _openshift_node_class(name: str = "general", annotations: dict[str, str] | None = None) -> dict[str, Any]:
    nc: dict[str, Any] = {
        "apiVersion": "karpenter.hypershift.openshift.io/v1",
        "kind": "OpenshiftEC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example-abcde"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example-abcde"}}],
            "blockDeviceMappings": [
                {
                    "deviceName": "/dev/xvda",
                    "rootVolume": "RootVolume",
                    "ebs": {"volumeSizeGiB": 120, "volumeType": "GP3", "encrypted": "Encrypted"},
                }
            ],
        },
    }
    if annotations is not None:
        nc["metadata"]["annotations"] = annotations
    return nc


def _autonode(cluster: str = HOSTED, release: str = "4.22.3") -> dict[str, str]:
    return {
        k.ANNOTATION_HOSTED_CLUSTER: cluster,
        k.ANNOTATION_USERDATA_MODE: "autonode",
        k.ANNOTATION_RELEASE: release,
    }


def _node_pool(
    requirements: list[dict[str, Any]] | None = None,
    disruption: dict[str, Any] | None = None,
    name: str = "spot-and-gpu",
) -> dict[str, Any]:
    """HyperShift's AutoNode doc NodePool, with valid requirement keys unless told otherwise."""
    np: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {
            "name": name,
            "annotations": {k.ANNOTATION_HOSTED_CLUSTER: HOSTED, k.ANNOTATION_RELEASE: "4.22.3"},
        },
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "general"},
                    "expireAfter": "336h",
                    "terminationGracePeriod": "24h",
                    "requirements": requirements
                    if requirements is not None
                    else [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-family",
                            "operator": "In",
                            "values": ["g4dn", "m5", "m6i"],
                        },
                        {
                            "key": "karpenter.k8s.aws/instance-size",
                            "operator": "In",
                            "values": ["large", "xlarge"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                }
            },
            "limits": {"cpu": "1000", "memory": "1000Gi"},
            "weight": 10,
        },
    }
    np["spec"]["disruption"] = (
        disruption
        if disruption is not None
        else {
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "30s",
            "budgets": [{"nodes": "10%"}],
        }
    )
    return np


def _messages(policy: Any, token: str, props: dict[str, Any], **kw: Any) -> list[str]:
    return [v.message for v in run_policy(policy, token, props, **kw)]


def test_fixtures_fit_the_crds() -> None:
    validate_manifest(_ec2_node_class(S3_POINTER))
    validate_manifest(_openshift_node_class(annotations=_autonode()))
    validate_manifest(_node_pool())
    scheduled = {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"}
    validate_manifest(_node_pool(disruption={"consolidateAfter": "1m", "budgets": [scheduled]}))


# --- karpenter-userdata ----------------------------------------------------------------------------------


def _userdata(user_data: Any, **kw: Any) -> list[str]:
    return _messages(karpenter_userdata, k.EC2_NODE_CLASS.token, _ec2_node_class(user_data), **kw)


def test_userdata_compliant() -> None:
    assert _userdata(S3_POINTER) == []
    assert _userdata(None) == []
    # The stub without the token: the CA data URL and the NodePool/TargetConfigVersionHash headers are no secrets.
    assert _userdata(_stub([{"name": "TargetConfigVersionHash", "value": "5c7a1f2e"}])) == []
    assert _userdata("#!/bin/bash\necho 'Hello world'\n") == []


def test_userdata_hypershift_stub_with_bearer_token() -> None:
    (msg,) = _userdata(HYPERSHIFT_STUB)
    assert "EC2NodeClass 'general'" in msg
    assert "an Authorization header (spec.userData: ignition.config.merge[0].httpHeaders[0])" in msg
    assert "a bearer token" in msg
    assert "s3://" in msg and "OpenshiftEC2NodeClass" in msg
    assert TOKEN not in msg  # never echo the secret


def test_userdata_replace_and_case_insensitive_header() -> None:
    (msg,) = _userdata(_stub([{"name": "authorization", "value": "token-abc"}], key="replace"))
    assert "ignition.config.replace.httpHeaders[0]" in msg and "bearer" not in msg


@pytest.mark.parametrize(
    ("user_data", "what"),
    [
        (
            "#!/bin/bash\ncurl -H 'Authorization: Bearer abcdef0123456789' https://api/ignition\n",
            "an Authorization header",
        ),
        ("#!/bin/bash\nTOKEN='Bearer abcdef0123456789'\n", "a bearer token"),
        (
            "#cloud-config\nwrite_files:\n- content: |\n    aws_secret_access_key = wJalrXUtnFEMI\n",
            "AWS secret credentials",
        ),
        ("export AWS_ACCESS_KEY_ID=AKIAIOSFODNN7EXAMPLE\n", "an AWS access key id"),
        ("-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----\n", "a private key"),
        (
            json.dumps(
                {
                    "ignition": {
                        "version": "3.2.0",
                        "config": {"merge": [{"source": "https://core:s3cret@ignition.example.com/x"}]},
                    }
                }
            ),
            "a password in a URL",
        ),
    ],
)
def test_userdata_plain_text_credentials(user_data: str, what: str) -> None:
    (msg,) = _userdata(user_data)
    assert what in msg


def test_userdata_nested_in_data_urls() -> None:
    nested = json.dumps(
        {"ignition": {"version": "3.2.0", "config": {"merge": [{"source": _data_url(HYPERSHIFT_STUB)}]}}}
    )
    (msg,) = _userdata(nested)
    assert "decoded" in msg and "an Authorization header" in msg
    files = {
        "ignition": {"version": "3.2.0"},
        "storage": {
            "files": [
                {
                    "path": "/root/.aws/credentials",
                    "contents": {
                        "source": "data:," + urllib.parse.quote("[default]\naws_secret_access_key=abc\n")
                    },
                }
            ]
        },
    }
    (msg,) = _userdata(json.dumps(files))
    assert "AWS secret credentials" in msg and "storage.files[0].contents.source" in msg


def test_inline_credentials_helper() -> None:
    assert inline_credentials(S3_POINTER) == []
    assert len(inline_credentials(HYPERSHIFT_STUB)) == 2


def test_userdata_unknown_in_preview_is_advisory() -> None:
    (v,) = run_policy(karpenter_userdata, k.EC2_NODE_CLASS.token, _ec2_node_class(UNKNOWN_STRING_VALUE))
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")


def test_userdata_hand_written_and_other_types() -> None:
    hand = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "mine"},
        "spec": {"userData": "Bearer abcdefghijkl"},
    }
    (msg,) = _messages(karpenter_userdata, k.EC2_NODE_CLASS.token, hand)
    assert "EC2NodeClass 'mine'" in msg
    assert _messages(karpenter_userdata, k.EC2_NODE_CLASS.token, {"spec": {}}) == []
    assert (
        _messages(
            karpenter_userdata, k.OPENSHIFT_EC2_NODE_CLASS.token, {"spec": {"userData": HYPERSHIFT_STUB}}
        )
        == []
    )


def test_userdata_config() -> None:
    (v,) = run_policy(
        karpenter_userdata,
        k.EC2_NODE_CLASS.token,
        _ec2_node_class(HYPERSHIFT_STUB),
        config={"karpenter-userdata": "advisory"},
    )
    assert v.level == "advisory"


# --- karpenter-autonode-classes --------------------------------------------------------------------------


def _hosted_stack(*objects: tuple[str, dict[str, Any]]) -> list[PolicyResource]:
    parent = component("nodefleet:hosted:Cluster", "example")
    return [parent] + [
        stack_resource(token, props, parent=parent, provider="example-hosted-k8s") for token, props in objects
    ]


OEC2 = k.OPENSHIFT_EC2_NODE_CLASS.token
EC2 = k.EC2_NODE_CLASS.token


def _autonode_messages(*objects: tuple[str, dict[str, Any]], **kw: Any) -> list[str]:
    return [v.message for v in run_stack_policy(karpenter_autonode_classes, _hosted_stack(*objects), **kw)]


def test_autonode_compliant() -> None:
    assert (
        _autonode_messages(
            (OEC2, _openshift_node_class(annotations=_autonode())),
            (k.KARPENTER_NODE_POOL.token, _node_pool()),
        )
        == []
    )


def test_autonode_cluster_declares_an_ec2_node_class() -> None:
    resources = _hosted_stack(
        (OEC2, _openshift_node_class(annotations=_autonode())),
        (
            EC2,
            _ec2_node_class(
                S3_POINTER,
                annotations={k.ANNOTATION_HOSTED_CLUSTER: HOSTED, k.ANNOTATION_USERDATA_MODE: "s3-pointer"},
            ),
        ),
    )
    (v,) = run_stack_policy(karpenter_autonode_classes, resources)
    assert v.level == "mandatory" and v.resource == resources[-1].urn
    assert "EC2NodeClass 'general' is declared for AutoNode hosted cluster 'clusters/example'" in v.message
    assert "Declare an OpenshiftEC2NodeClass 'general' instead" in v.message


def test_ec2_node_class_marked_autonode() -> None:
    (msg,) = _autonode_messages(
        (EC2, _ec2_node_class(None, annotations={k.ANNOTATION_USERDATA_MODE: "autonode"}))
    )
    assert "EC2NodeClass 'general'" in msg


def test_ec2_node_class_of_another_cluster_is_fine() -> None:
    legacy = {k.ANNOTATION_HOSTED_CLUSTER: "clusters/legacy", k.ANNOTATION_USERDATA_MODE: "legacy-hypershift"}
    assert (
        _autonode_messages(
            (OEC2, _openshift_node_class(annotations=_autonode())),
            (EC2, _ec2_node_class("", annotations=legacy)),
        )
        == []
    )


def test_default_node_class_is_operator_owned() -> None:
    (msg,) = _autonode_messages((OEC2, _openshift_node_class(name="default", annotations=_autonode())))
    assert "OpenshiftEC2NodeClass 'default'" in msg and "rewrites it on every reconcile" in msg


def test_autonode_hand_written_objects() -> None:
    """Without annotations an EC2NodeClass cannot be paired with a hosted cluster; `default` is always owned."""
    assert (
        _autonode_messages(
            (OEC2, _openshift_node_class(annotations=_autonode())), (EC2, _ec2_node_class(S3_POINTER))
        )
        == []
    )
    (msg,) = _autonode_messages((OEC2, _openshift_node_class(name="default")))
    assert "'default'" in msg


def test_autonode_unknown_and_config() -> None:
    unknown = _autonode()
    unknown[k.ANNOTATION_HOSTED_CLUSTER] = UNKNOWN_STRING_VALUE
    (v,) = run_stack_policy(
        karpenter_autonode_classes, _hosted_stack((OEC2, _openshift_node_class(annotations=unknown)))
    )
    assert v.level == "advisory" and "cannot verify" in v.message
    resources = _hosted_stack((OEC2, _openshift_node_class(name="default")))
    (v,) = run_stack_policy(
        karpenter_autonode_classes, resources, config={"karpenter-autonode-classes": "advisory"}
    )
    assert v.level == "advisory"


# --- karpenter-token-carry -------------------------------------------------------------------------------


@pytest.mark.parametrize("release", ["4.19.0", "4.20.3", "4.21.12"])
def test_token_carry_missing(release: str) -> None:
    (v,) = run_policy(
        karpenter_token_carry, OEC2, _openshift_node_class(annotations=_autonode(release=release))
    )
    assert v.level == "advisory"
    assert "OpenshiftEC2NodeClass 'general'" in v.message and "TargetConfigVersionHash" in v.message
    assert "every 5.5 h" in v.message and "4.22 or later" in v.message and "Drifted" in v.message


@pytest.mark.parametrize("release", ["4.18.9", "4.22.0", "5.0.0-ec.2"])
def test_token_carry_present_or_not_applicable(release: str) -> None:
    assert (
        run_policy(karpenter_token_carry, OEC2, _openshift_node_class(annotations=_autonode(release=release)))
        == []
    )


def test_token_carry_ec2_node_class_modes() -> None:
    legacy = {k.ANNOTATION_USERDATA_MODE: "legacy-hypershift", k.ANNOTATION_RELEASE: "4.21.0"}
    (msg,) = _messages(karpenter_token_carry, EC2, _ec2_node_class("", annotations=legacy))
    assert msg.startswith("EC2NodeClass 'general'")
    pointer = {k.ANNOTATION_USERDATA_MODE: "s3-pointer", k.ANNOTATION_RELEASE: "4.21.0"}
    assert _messages(karpenter_token_carry, EC2, _ec2_node_class(S3_POINTER, annotations=pointer)) == []


def test_token_carry_hand_written_config_unknown() -> None:
    assert _messages(karpenter_token_carry, OEC2, _openshift_node_class()) == []
    assert _messages(karpenter_token_carry, k.KARPENTER_NODE_POOL.token, _node_pool()) == []
    cfg = {"karpenter-token-carry": {"releasesWithoutCarry": ["4.22"]}}
    assert (
        len(
            _messages(karpenter_token_carry, OEC2, _openshift_node_class(annotations=_autonode()), config=cfg)
        )
        == 1
    )
    (v,) = run_policy(
        karpenter_token_carry,
        OEC2,
        _openshift_node_class(annotations=_autonode(release=UNKNOWN_STRING_VALUE)),
    )
    assert v.level == "advisory" and "cannot verify" in v.message


NODE_POOL = k.KARPENTER_NODE_POOL.token


# --- drift-budget ----------------------------------------------------------------------------------------


def _budgets(*budgets: dict[str, Any]) -> dict[str, Any]:
    return _node_pool(
        disruption={
            "consolidationPolicy": "WhenEmptyOrUnderutilized",
            "consolidateAfter": "1m",
            "budgets": list(budgets),
        }
    )


def _drift(props: dict[str, Any], **kw: Any) -> list[str]:
    return _messages(drift_budget, NODE_POOL, props, **kw)


@pytest.mark.parametrize(
    "budgets",
    [
        [{"nodes": "10%"}],
        [{"nodes": "10%", "reasons": ["Empty", "Underutilized", "Drifted"]}],
        [{"nodes": "5%", "reasons": ["Empty", "Underutilized"]}, {"nodes": "1", "reasons": ["Drifted"]}],
        [{"nodes": "5"}],
        [{"nodes": "0", "reasons": ["Drifted"]}, {"nodes": "2", "reasons": ["Empty", "Underutilized"]}],
        [{"nodes": "20%"}, {"nodes": "0", "schedule": "0 9 * * mon-fri", "duration": "8h"}, {"nodes": "2"}],
    ],
)
def test_every_reason_bounded(budgets: list[dict[str, Any]]) -> None:
    assert _drift(_budgets(*budgets)) == []


def test_a_reason_no_budget_names_is_unbounded() -> None:
    """Karpenter takes, per reason, the smallest active budget naming it (or none): unnamed means no limit."""
    (msg,) = _drift(_budgets({"nodes": "10%", "reasons": ["Drifted"]}))
    assert "does not bound Empty disruption to 10% or 5 nodes: no budget applies to Empty" in msg
    assert "It does not bound Underutilized disruption" in msg and "Drifted" not in msg.split(".")[0]
    (msg,) = _drift(
        _budgets(
            {"nodes": "50%", "reasons": ["Empty", "Underutilized"]}, {"nodes": "1", "reasons": ["Drifted"]}
        )
    )
    assert (
        "does not bound Empty disruption to 10% or 5 nodes: the budgets that apply to Empty allow more (budgets[0] (50%))"
        in msg
    )


@pytest.mark.parametrize(
    ("disruption", "extra", "bounded"),
    [
        # WhenEmpty never consolidates underutilized nodes: Underutilized needs no budget.
        ({"consolidationPolicy": "WhenEmpty", "consolidateAfter": "1m"}, {}, ["Empty", "Drifted"]),
        # consolidateAfter: Never turns consolidation off: only Drifted acts.
        ({"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "Never"}, {}, ["Drifted"]),
        # A static pool never consolidates.
        ({"consolidateAfter": "Never"}, {"replicas": 3}, ["Drifted"]),
        (
            {"consolidationPolicy": "Balanced", "consolidateAfter": "1m"},
            {},
            ["Empty", "Underutilized", "Drifted"],
        ),
    ],
)
def test_only_reasons_that_can_act_need_a_budget(
    disruption: dict[str, Any], extra: dict[str, Any], bounded: list[str]
) -> None:
    np = _node_pool(disruption={**disruption, "budgets": [{"nodes": "10%", "reasons": bounded}]})
    np["spec"].update(extra)
    assert _drift(np) == []
    missing = {"Empty", "Underutilized", "Drifted"} - set(bounded)
    if missing:
        # Those reasons do not act here: leaving them out is fine, naming Drifted alone is not for others.
        np["spec"]["disruption"]["budgets"] = [{"nodes": "10%", "reasons": ["Drifted"]}]
        assert _drift(np) == [] if bounded == ["Drifted"] else len(_drift(np)) == 1


def test_unhealthy_on_request() -> None:
    np = _budgets({"nodes": "10%", "reasons": ["Empty", "Underutilized", "Drifted"]})
    assert _drift(np) == []
    reasons = ["Empty", "Underutilized", "Drifted", "Unhealthy"]
    (msg,) = _drift(np, config={"drift-budget": {"reasons": reasons}})
    assert "does not bound Unhealthy disruption" in msg


def test_no_budgets_is_karpenters_default() -> None:
    np = _node_pool(disruption={"consolidationPolicy": "WhenEmpty"})
    assert _drift(np) == []
    del np["spec"]["disruption"]
    assert _drift(np) == []
    (msg,) = _drift(np, config={"drift-budget": {"maxDriftedPercent": 5}})
    assert "Karpenter's default {nodes: 10%} applies to Drifted" in msg and "Drifted: 5% or 5 nodes" in msg


def test_drift_budget_too_loose() -> None:
    (v,) = run_policy(drift_budget, NODE_POOL, _budgets({"nodes": "20%"}))
    assert v.level == "advisory"
    assert "Karpenter NodePool 'spot-and-gpu' does not bound Empty disruption to 10% or 5 nodes" in v.message
    assert "It does not bound Drifted disruption to 10% or 5 nodes" in v.message
    assert "budgets[0] (20%)" in v.message and "reasons: [Empty, Underutilized" in v.message
    (msg,) = _drift(
        _budgets(
            {"nodes": "6", "reasons": ["Drifted"]}, {"nodes": "1", "reasons": ["Empty", "Underutilized"]}
        )
    )
    assert "budgets[0] (6 nodes)" in msg and "Empty" not in msg.split(":")[0]


def test_drift_budget_other_reasons_only() -> None:
    (msg,) = _drift(_budgets({"nodes": "10%", "reasons": ["Empty", "Underutilized"]}))
    assert "no budget applies to Drifted" in msg


def test_drift_budget_only_in_a_schedule_window() -> None:
    (msg,) = _drift(
        _budgets(
            {"nodes": "10%", "reasons": ["Empty", "Underutilized"]},
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"},
        )
    )
    assert "budgets[1] only apply during their schedule window" in msg


def test_drift_budget_empty_list_and_malformed_nodes() -> None:
    (msg,) = _drift(_budgets())
    assert "empty spec.disruption.budgets" in msg and "unbounded" in msg
    # A malformed count is the NodePool CRD's pattern to reject (crd-schema, once), not a second verdict here.
    assert _drift(_budgets({"nodes": "ten"})) == []
    (other,) = _drift(
        _budgets({"nodes": "ten", "reasons": ["Drifted"]}, {"nodes": "50%", "reasons": ["Empty"]})
    )
    assert "Empty" in other and "Drifted" not in other.split(". ")[0]


def test_drift_budget_config() -> None:
    np = _budgets({"nodes": "20%"}, {"nodes": "8", "reasons": ["Drifted"]})
    assert len(_drift(np)) == 1
    assert len(_drift(np, config={"drift-budget": {"maxDriftedPercent": 25}})) == 1  # Empty/Underutilized 20%
    assert _drift(np, config={"drift-budget": {"maxDriftedPercent": 25, "maxPercent": 20}}) == []
    assert _drift(np, config={"drift-budget": {"maxDriftedNodes": 8, "maxPercent": 20}}) == []
    (v,) = run_policy(drift_budget, NODE_POOL, np, config={"drift-budget": {"enforcementLevel": "mandatory"}})
    assert v.level == "mandatory"


def test_drift_budget_unknown_and_hand_written() -> None:
    (v,) = run_policy(drift_budget, NODE_POOL, _budgets({"nodes": UNKNOWN_STRING_VALUE}))
    assert v.level == "advisory" and "cannot verify" in v.message
    (v,) = run_policy(drift_budget, NODE_POOL, _node_pool(disruption={"budgets": UNKNOWN_ARRAY_VALUE}))
    assert "cannot verify" in v.message
    hand = {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "mine"},
        "spec": {"disruption": {"budgets": [{"nodes": "100%"}]}},
    }
    (msg,) = _drift(hand)
    assert "NodePool 'mine'" in msg
    assert run_policy(drift_budget, EC2, hand) == []
