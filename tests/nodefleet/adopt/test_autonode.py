"""AutoNode hosted clusters: Karpenter's upstream example NodePools and OpenshiftEC2NodeClasses as HyperShift's and
ROSA's documentation write them, imported with their HostedCluster and rendered back, every difference listed."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from nodefleet.adopt.documents import AdoptError
from tests.nodefleet.adopt.roundtrip import (
    assert_round_trip,
    data_objects,
    differences,
    hypershift_fixture,
    imported,
    objects,
    with_autonode,
)

ROLE = "arn:aws:iam::123456789012:role/cesar-karpenter"

#: An AutoNode HostedCluster written by hand (or by the CLI before AutoNode) has no instance-profile annotation;
#: nodefleet declares it so that HyperShift's generated EC2NodeClasses and the classic NodePools agree.
PROFILE = (
    'HostedCluster clusters/cesar (test, document 3): metadata.annotations["hypershift.openshift.io/'
    "aws-karpenter-default-instance-profile\"]: nodefleet would add 'example-4kq8z-worker'"
)


def _autonode_cluster(profile: bool = False) -> list[dict[str, Any]]:
    return with_autonode(hypershift_fixture("default_creation_flags_for_cesar"), ROLE, profile=profile)


def _classes(*names: str) -> list[Any]:
    return [o for o in data_objects("autonode-classes.yaml") if o.name in names]


def test_upstream_example_node_pools_round_trip() -> None:
    live = [*objects(_autonode_cluster(profile=True)), *data_objects("karpenter-upstream-nodepools.yaml")]
    live += _classes("batch")
    adoption = assert_round_trip(live)
    auto = adoption.clusters[0]["autoNode"]
    assert auto["roleArn"] == ROLE
    assert [p["name"] for p in auto["nodePools"]] == ["general-purpose", "spot", "default"]
    general, spot, lifetime = auto["nodePools"]
    # The pools keep their requirements in their own order, and Karpenter's own budget shape.
    assert general["architectures"] == ["amd64"] and general["capacityTypes"] == []
    assert spot["architectures"] == [] and spot["capacityTypes"] == ["spot"]
    assert general["disruption"]["allReasonsBudget"] == "10%"
    assert general["annotations"] == {
        "kubernetes.io/description": "General purpose NodePool for generic workloads"
    }
    # The misspelt terminationGracePeriod is pruned by the API server, so there is nothing to keep.
    assert lifetime["expireAfter"] == "168h" and "terminationGracePeriod" not in lifetime
    assert lifetime["disruption"]["consolidationPolicy"] == "WhenEmpty"
    assert auto["nodeClasses"] == [
        {
            "name": "batch",
            "version": "4.22.1",
            "subnetTags": {"kubernetes.io/role/internal-elb": "1"},
            "rootVolumeGiB": 200,
            "tags": {"workload": "batch"},
        }
    ]
    assert any("autoNode.karpenter.version" in i.place for i in adoption.report.inferred)


def test_a_documented_class_with_only_tags_gains_nodefleets_selectors_and_volume() -> None:
    live = [*objects(_autonode_cluster()), *data_objects("karpenter-upstream-nodepools.yaml")[:1]]
    live += _classes("custom-nodeclass")
    where = "OpenshiftEC2NodeClass custom-nodeclass (autonode-classes.yaml, document 1)"
    adoption = imported(live)
    assert not adoption.fidelity.changes
    assert sorted(d.path for d in adoption.fidelity.additions) == [
        'metadata.annotations["hypershift.openshift.io/aws-karpenter-default-instance-profile"]',
        "spec.blockDeviceMappings",
        "spec.securityGroupSelectorTerms",
        "spec.subnetSelectorTerms",
    ]
    assert PROFILE in differences(adoption)
    assert all(d.obj in (where, PROFILE.split(":")[0]) for d in adoption.fidelity.additions)
    assert not imported(live, adopt_defaults=True).refused


def test_a_field_the_class_model_lacks_refuses() -> None:
    live = [*objects(_autonode_cluster(profile=True)), *data_objects("karpenter-upstream-nodepools.yaml")[:1]]
    batch = _classes("batch")[0]
    cmk = copy.deepcopy(batch.manifest)
    cmk["spec"]["blockDeviceMappings"][0]["ebs"]["kmsKeyID"] = "arn:aws:kms:us-east-2:123456789012:key/x"
    live += objects([cmk], source="cmk.yaml")
    adoption = imported(live)
    assert adoption.refused
    assert differences(adoption) == [
        "OpenshiftEC2NodeClass batch (cmk.yaml, document 1): spec.blockDeviceMappings[0].ebs.kmsKeyID: nodefleet "
        "would remove 'arn:aws:kms:us-east-2:123456789012:key/x'"
    ]


def test_hypershifts_own_objects_are_left_alone() -> None:
    generated = {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": "batch"},
        "spec": {
            "amiFamily": "Custom",
            "userData": "…",
            "amiSelectorTerms": [{"id": "ami-0123456789abcdef0"}],
        },
    }
    default = {
        "apiVersion": "karpenter.hypershift.openshift.io/v1",
        "kind": "OpenshiftEC2NodeClass",
        "metadata": {"name": "default"},
        "spec": {"subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example-4kq8z"}}]},
    }
    live = [*objects(_autonode_cluster(profile=True)), *data_objects("karpenter-upstream-nodepools.yaml")]
    live += [*_classes("batch"), *objects([generated, default], source="hosted.yaml")]
    adoption = assert_round_trip(live)
    left = {a.obj: a.why for a in adoption.report.left_alone}
    assert "generated by HyperShift" in left["EC2NodeClass batch (hosted.yaml, document 1)"]
    assert "belongs to HyperShift" in left["OpenshiftEC2NodeClass default (hosted.yaml, document 2)"]


def test_an_autonode_cluster_without_its_pools_is_refused() -> None:
    with pytest.raises(AdoptError, match="none of its Karpenter NodePools"):
        imported(objects(_autonode_cluster()))


def test_karpenter_objects_need_their_hosted_cluster() -> None:
    with pytest.raises(AdoptError, match="a Karpenter object without a HostedCluster"):
        imported(data_objects("karpenter-upstream-nodepools.yaml"))
    second = copy.deepcopy(_autonode_cluster())
    for d in second:
        if d["kind"] == "HostedCluster":
            d["metadata"]["name"] = "other"
            d["spec"]["infraID"] = "other-4kq8z"
    both = [*objects(_autonode_cluster()), *objects([d for d in second if d["kind"] == "HostedCluster"], "b")]
    with pytest.raises(AdoptError, match="with 2 HostedClusters in the sources nothing says whose"):
        imported([*both, *data_objects("karpenter-upstream-nodepools.yaml")])
