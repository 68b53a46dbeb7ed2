"""Hosted cluster renderers: exact shapes, and every object fits its real CRD."""

from __future__ import annotations

import json
import re
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from nodefleet import kinds as k
from nodefleet.apiserver.schema import validate_object
from nodefleet.apiserver.store import load_index
from nodefleet.render.hosted import (
    LEGACY_CONTROLLER_OWNED,
    PLACEHOLDER_AMI,
    PLACEHOLDER_USER_DATA,
    node_release_image,
    release_image,
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_karpenter_node_pool,
    render_legacy_ec2_node_class,
    render_openshift_ec2_node_class,
)
from nodefleet.stackfile.hosted import HostedCluster
from nodefleet.stackfile.karpenter import KarpenterNodePoolSpec
from tests.crdschema import _schemas
from tests.crdschema import validate_manifest as _validate_manifest

ACCOUNT = "123456789012"


def validate_manifest(manifest: dict[str, Any]) -> None:
    """``tests.crdschema.validate_manifest``, tolerating CRDs whose patterns Python's ``re`` cannot compile.

    The HostedCluster CRD has ``\\p{S}``/``\\p{L}`` patterns (``configuration.ingress.componentRoutes``), so
    ``jsonschema.validate``'s metaschema check raises ``SchemaError`` before validating anything. Then the
    instance is validated without that check: patterns are compiled only for fields the manifest has.
    """
    try:
        _validate_manifest(manifest)
    except jsonschema.SchemaError:
        schema = _schemas()[(manifest["apiVersion"], manifest["kind"])]
        jsonschema.Draft202012Validator(schema).validate(manifest)


def _role(name: str) -> str:
    return f"arn:aws:iam::{ACCOUNT}:role/demo-{name}"


def hosted_cluster_dict() -> dict[str, Any]:
    """A realistic hosted cluster stanza (camelCase, as in a stack file), AutoNode included."""
    return {
        "kind": "hosted",
        "name": "demo",
        "namespace": "clusters",
        "infraId": "demo-8h2kq",
        "region": "us-east-2",
        "release": "4.22.3",
        "issuerUrl": "https://demo-oidc.s3.us-east-2.amazonaws.com/demo-8h2kq",
        "dns": {"baseDomain": "example.com", "publicZoneId": "Z0PUBLIC123", "privateZoneId": "Z0PRIVATE456"},
        "vpc": "vpc-0a1b2c3d4e5f67890",
        "subnet": "subnet-0123456789abcdef0",
        "zone": "us-east-2a",
        "roles": {
            "ingressARN": _role("openshift-ingress"),
            "imageRegistryARN": _role("openshift-image-registry"),
            "storageARN": _role("aws-ebs-csi-driver-controller"),
            "networkARN": _role("cloud-network-config-controller"),
            "kubeCloudControllerARN": _role("cloud-controller"),
            "nodePoolManagementARN": _role("node-pool"),
            "controlPlaneOperatorARN": _role("control-plane-operator"),
        },
        "resourceTags": {"team": "platform", "cost-center": "cc-1234"},
        "pullSecret": {"name": "demo-pull-secret", "fromConfig": "pullSecret"},
        "sshKey": {"name": "demo-ssh-key"},
        "autoNode": {
            "roleArn": _role("karpenter"),
            "nodeClasses": [
                {"name": "general"},
                {
                    "name": "gpu",
                    "version": "4.21.9",
                    "subnetIds": ["subnet-0aaaaaaaaaaaaaaa1", "subnet-0aaaaaaaaaaaaaaa2"],
                    "securityGroupTags": {"kubernetes.io/cluster/demo-8h2kq": "owned"},
                    "rootVolumeGiB": 300,
                    "tags": {"workload": "gpu"},
                },
            ],
            "nodePools": [
                {
                    "name": "spot-general",
                    "nodeClass": "general",
                    "capacityTypes": ["spot", "on-demand"],
                    "architectures": ["amd64", "arm64"],
                    "instanceFamilies": ["m6i", "m7i", "m7g"],
                    "requirements": [
                        {"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["metal"]},
                        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["3"]},
                        {
                            "key": "topology.kubernetes.io/zone",
                            "values": ["us-east-2a", "us-east-2b"],
                            "minValues": 2,
                        },
                    ],
                    "labels": {"billing-team": "platform"},
                    "expireAfter": "336h",
                    "terminationGracePeriod": "24h",
                    "limits": {"cpu": "1000", "memory": "1000Gi"},
                    "weight": 10,
                    "disruption": {
                        "consolidateAfter": "30s",
                        "driftBudget": "20%",
                        "driftWindows": [{"schedule": "0 9 * * mon-fri", "duration": "8h", "nodes": "0"}],
                    },
                },
                {"name": "gpu", "nodeClass": "gpu", "instanceCategories": ["g", "p"]},
            ],
        },
        "nodePools": [
            {"name": "workers", "replicas": 2},
            {
                "name": "arm",
                "release": "4.21.9",
                "autoScaling": {"min": 1, "max": 5},
                "arch": "arm64",
                "instanceType": "m7g.xlarge",
                "instanceProfile": "custom-profile",
                "subnet": "subnet-0fedcba9876543210",
                "rootVolumeGiB": 200,
                "rootVolumeType": "io2",
                "upgradeType": "InPlace",
            },
        ],
    }


def hosted_cluster(**changes: Any) -> HostedCluster:
    raw = hosted_cluster_dict()
    raw.update(changes)
    return HostedCluster.model_validate(raw)


def test_hosted_cluster_shape() -> None:
    hc = hosted_cluster()
    m = render_hosted_cluster(hc)
    assert (m["apiVersion"], m["kind"]) == (k.HOSTED_CLUSTER.api_version, k.HOSTED_CLUSTER.kind)
    assert m["metadata"]["name"] == "demo"
    assert m["metadata"]["namespace"] == "clusters"
    assert m["metadata"]["annotations"][k.ANNOTATION_RELEASE] == "4.22.3"
    assert m["metadata"]["annotations"][k.ANNOTATION_KARPENTER_INSTANCE_PROFILE] == "demo-8h2kq-worker"
    spec = m["spec"]
    assert spec["release"] == {"image": "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"}
    assert release_image(hc) == hc.image
    assert spec["infraID"] == "demo-8h2kq"
    assert spec["issuerURL"] == "https://demo-oidc.s3.us-east-2.amazonaws.com/demo-8h2kq"
    assert spec["dns"] == {
        "baseDomain": "example.com",
        "publicZoneID": "Z0PUBLIC123",
        "privateZoneID": "Z0PRIVATE456",
    }
    assert spec["networking"] == {
        "networkType": "OVNKubernetes",
        "clusterNetwork": [{"cidr": "10.132.0.0/14"}],
        "serviceNetwork": [{"cidr": "172.31.0.0/16"}],
        "machineNetwork": [{"cidr": "10.0.0.0/16"}],
    }
    aws = spec["platform"]["aws"]
    assert spec["platform"]["type"] == "AWS"
    assert aws["region"] == "us-east-2"
    assert aws["endpointAccess"] == "Public"
    assert aws["cloudProviderConfig"] == {
        "vpc": "vpc-0a1b2c3d4e5f67890",
        "subnet": {"id": "subnet-0123456789abcdef0"},
        "zone": "us-east-2a",
    }
    assert set(aws["rolesRef"]) == {
        "ingressARN",
        "imageRegistryARN",
        "storageARN",
        "networkARN",
        "kubeCloudControllerARN",
        "nodePoolManagementARN",
        "controlPlaneOperatorARN",
    }
    assert aws["rolesRef"]["nodePoolManagementARN"] == _role("node-pool")
    assert aws["resourceTags"] == [
        {"key": "team", "value": "platform"},
        {"key": "cost-center", "value": "cc-1234"},
    ]
    assert spec["etcd"] == {
        "managementType": "Managed",
        "managed": {
            "storage": {
                "type": "PersistentVolume",
                "persistentVolume": {"size": "8Gi", "storageClassName": "gp3-csi"},
            }
        },
    }
    assert spec["controllerAvailabilityPolicy"] == "HighlyAvailable"
    assert spec["infrastructureAvailabilityPolicy"] == "HighlyAvailable"
    assert spec["fips"] is False and spec["olmCatalogPlacement"] == "management"
    assert spec["configuration"] == {}
    assert "secretEncryption" not in spec and "operatorConfiguration" not in spec
    assert m["metadata"]["annotations"]["hypershift.openshift.io/cleanup-cloud-resources"] == "true"
    assert [(s["service"], s["servicePublishingStrategy"]["type"]) for s in spec["services"]] == [
        ("APIServer", "LoadBalancer"),
        ("Ignition", "Route"),
        ("Konnectivity", "Route"),
        ("OAuthServer", "Route"),
    ]
    assert spec["pullSecret"] == {"name": "demo-pull-secret"}
    assert spec["sshKey"] == {"name": "demo-ssh-key"}
    assert spec["autoNode"] == {
        "provisionerConfig": {
            "name": "Karpenter",
            "karpenter": {"platform": "AWS", "aws": {"roleARN": _role("karpenter")}},
        }
    }
    # Nothing secret: the pull secret is referenced by name only.
    assert "fromConfig" not in json.dumps(m) and 'pullSecret": "' not in json.dumps(m)


def test_private_cluster_publishes_the_api_through_a_route() -> None:
    spec = render_hosted_cluster(hosted_cluster(endpointAccess="Private"))["spec"]
    assert spec["services"][0] == {"service": "APIServer", "servicePublishingStrategy": {"type": "Route"}}
    assert spec["platform"]["aws"]["endpointAccess"] == "Private"


def test_legacy_services_follow_the_four_derived_ones_and_fit_the_crd() -> None:
    """The no-op entries older CLIs wrote (an adopted cluster's `spec.services` is immutable) come last, in
    the stack's order; the CRD takes at most six services, the four and both no-ops."""
    legacy = [{"service": "OVNSbDb", "type": "Route"}, {"service": "OIDC", "type": "S3"}]
    m = render_hosted_cluster(hosted_cluster(legacyServices=legacy))
    assert [s["service"] for s in m["spec"]["services"]] == [
        "APIServer",
        "Ignition",
        "Konnectivity",
        "OAuthServer",
        "OVNSbDb",
        "OIDC",
    ]
    assert m["spec"]["services"][4:] == [
        {"service": "OVNSbDb", "servicePublishingStrategy": {"type": "Route"}},
        {"service": "OIDC", "servicePublishingStrategy": {"type": "S3"}},
    ]
    validate_manifest(m)
    assert len(render_hosted_cluster(hosted_cluster())["spec"]["services"]) == 4


@pytest.mark.parametrize(
    ("legacy", "message"),
    [
        (
            [{"service": "OVNSbDb"}, {"service": "OVNSbDb"}],
            "legacyServices: OVNSbDb is listed more than once",
        ),
        ([{"service": "APIServer"}], "legacyServices.0.service"),
    ],
    ids=["twice", "not-a-no-op"],
)
def test_legacy_services_are_the_no_ops_once_each(legacy: list[dict[str, str]], message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        hosted_cluster(legacyServices=legacy)


def test_without_auto_node_or_ssh_key() -> None:
    raw = hosted_cluster_dict()
    del raw["autoNode"], raw["sshKey"]
    raw["releaseImage"] = "quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64"
    m = render_hosted_cluster(HostedCluster.model_validate(raw))
    assert "autoNode" not in m["spec"] and "sshKey" not in m["spec"]
    assert k.ANNOTATION_KARPENTER_INSTANCE_PROFILE not in m["metadata"]["annotations"]
    assert m["spec"]["release"]["image"] == "quay.io/openshift-release-dev/ocp-release:4.22.3-x86_64"
    validate_manifest(m)


def test_replace_node_pool() -> None:
    hc = hosted_cluster()
    m = render_hypershift_node_pool(hc, hc.node_pools[0])
    assert m["metadata"] == {
        "name": "demo-workers",  # <cluster>-<pool>, as the hypershift CLI names NodePools
        "namespace": "clusters",
        "annotations": {k.ANNOTATION_RELEASE: "4.22.3"},
    }
    spec = m["spec"]
    assert spec["clusterName"] == "demo"
    assert spec["release"] == {"image": hc.image}
    assert spec["replicas"] == 2 and "autoScaling" not in spec
    assert spec["management"] == {
        "upgradeType": "Replace",
        "replace": {"strategy": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        "autoRepair": True,
    }
    assert spec["nodeDrainTimeout"] == "0s" and spec["nodeVolumeDetachTimeout"] == "0s"
    assert spec["arch"] == "amd64"
    assert spec["platform"] == {
        "type": "AWS",
        "aws": {
            "instanceType": "m6i.xlarge",
            "instanceProfile": "demo-8h2kq-worker",
            "subnet": {"id": "subnet-0123456789abcdef0"},
            "rootVolume": {"size": 120, "type": "gp3", "encrypted": True},
        },
    }
    assert "ami" not in spec["platform"]["aws"]  # HyperShift picks the payload's boot image


def test_in_place_autoscaled_node_pool_with_its_own_release() -> None:
    hc = hosted_cluster()
    np = hc.node_pools[1]
    spec = render_hypershift_node_pool(hc, np)["spec"]
    assert spec["release"]["image"] == "quay.io/openshift-release-dev/ocp-release:4.21.9-multi"
    assert node_release_image(hc, np) == spec["release"]["image"]
    assert spec["autoScaling"] == {"min": 1, "max": 5} and "replicas" not in spec
    assert spec["management"] == {"upgradeType": "InPlace", "inPlace": {}, "autoRepair": True}
    assert spec["arch"] == "arm64"
    aws = spec["platform"]["aws"]
    assert aws["instanceProfile"] == "custom-profile"
    assert aws["subnet"] == {"id": "subnet-0fedcba9876543210"}
    assert aws["rootVolume"] == {"size": 200, "type": "io2", "encrypted": True}


def test_openshift_ec2_node_class_defaults() -> None:
    hc = hosted_cluster()
    assert hc.auto_node is not None
    m = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[0])
    assert (m["apiVersion"], m["kind"]) == ("karpenter.hypershift.openshift.io/v1", "OpenshiftEC2NodeClass")
    assert m["metadata"] == {
        "name": "general",
        "annotations": {
            k.ANNOTATION_HOSTED_CLUSTER: "clusters/demo",
            k.ANNOTATION_USERDATA_MODE: "autonode",
            k.ANNOTATION_RELEASE: "4.22.3",
        },
    }
    assert "namespace" not in m["metadata"]  # cluster-scoped
    spec = m["spec"]
    assert spec["subnetSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo-8h2kq"}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"karpenter.sh/discovery": "demo-8h2kq"}}]
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": "RootVolume",
            "ebs": {
                "volumeSizeGiB": 120,
                "volumeType": "GP3",
                "encrypted": "Encrypted",
                "deleteOnTermination": "Delete",
            },
        }
    ]
    assert "version" not in spec and "tags" not in spec
    # Never userData, AMI or instance profile: HyperShift generates those on the EC2NodeClass.
    assert not {"userData", "amiSelectorTerms", "instanceProfile", "amiFamily"} & set(spec)


def test_openshift_ec2_node_class_pinned_with_own_selectors() -> None:
    hc = hosted_cluster()
    assert hc.auto_node is not None
    spec = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[1])["spec"]
    assert spec["version"] == "4.21.9"
    assert spec["subnetSelectorTerms"] == [
        {"id": "subnet-0aaaaaaaaaaaaaaa1"},
        {"id": "subnet-0aaaaaaaaaaaaaaa2"},
    ]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"kubernetes.io/cluster/demo-8h2kq": "owned"}}]
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSizeGiB"] == 300
    assert spec["tags"] == {"workload": "gpu"}


def test_node_class_tags_karpenter_manages_are_refused_by_the_crd() -> None:
    """The OpenshiftEC2NodeClass CRD's own tag rules refuse them, with its message."""
    raw = hosted_cluster_dict()
    raw["autoNode"]["nodeClasses"][0]["tags"] = {"kubernetes.io/cluster/demo-8h2kq": "owned"}
    hc = HostedCluster.model_validate(raw)
    assert hc.auto_node is not None
    manifest = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[0])
    found = load_index().for_object(k.OPENSHIFT_EC2_NODE_CLASS.api_version, k.OPENSHIFT_EC2_NODE_CLASS.kind)
    assert found is not None
    assert [str(f) for f in validate_object(manifest, found)] == [
        "spec.tags: Invalid value: tag contains a restricted tag matching kubernetes.io/cluster/"
    ]


def test_legacy_ec2_node_class_placeholders() -> None:
    hc = hosted_cluster()
    assert hc.auto_node is not None
    m = render_legacy_ec2_node_class(hc, hc.auto_node.node_classes[0])
    assert (m["apiVersion"], m["kind"]) == ("karpenter.k8s.aws/v1", "EC2NodeClass")
    assert m["metadata"]["annotations"][k.ANNOTATION_USERDATA_MODE] == "legacy-hypershift"
    assert m["metadata"]["annotations"][k.ANNOTATION_HOSTED_CLUSTER] == "clusters/demo"
    spec = m["spec"]
    assert spec["amiFamily"] == "Custom"
    assert spec["amiSelectorTerms"] == [{"id": PLACEHOLDER_AMI}]
    assert spec["userData"] == PLACEHOLDER_USER_DATA
    assert spec["instanceProfile"] == "demo-8h2kq-worker"
    assert spec["blockDeviceMappings"] == [
        {
            "deviceName": "/dev/xvda",
            "rootVolume": True,
            "ebs": {
                "volumeSize": "120Gi",
                "volumeType": "gp3",
                "encrypted": True,
                "deleteOnTermination": True,
            },
        }
    ]
    # Exactly the two paths HyperShift rewrites are left to it.
    assert LEGACY_CONTROLLER_OWNED == ("spec.userData", "spec.amiSelectorTerms")
    for path in LEGACY_CONTROLLER_OWNED:
        obj: Any = m
        for part in path.split("."):
            obj = obj[part]


def test_legacy_placeholder_is_harmless() -> None:
    cfg = json.loads(PLACEHOLDER_USER_DATA)
    assert cfg == {"ignition": {"version": "3.2.0"}}  # no source to fetch, no token, no CA


def test_karpenter_node_pool_shape() -> None:
    hc = hosted_cluster()
    assert hc.auto_node is not None
    owner = {k.ANNOTATION_HOSTED_CLUSTER: "clusters/demo", k.ANNOTATION_RELEASE: "4.22.3"}
    m = render_karpenter_node_pool(hc.auto_node.node_pools[0], annotations=owner)
    assert (m["apiVersion"], m["kind"]) == ("karpenter.sh/v1", "NodePool")
    assert m["metadata"] == {"name": "spot-general", "annotations": owner}
    spec = m["spec"]
    tmpl = spec["template"]
    assert tmpl["metadata"] == {"labels": {"billing-team": "platform"}}
    assert tmpl["spec"]["nodeClassRef"] == {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "general",
    }
    assert tmpl["spec"]["requirements"] == [
        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64", "arm64"]},
        {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot", "on-demand"]},
        {"key": "karpenter.k8s.aws/instance-category", "operator": "In", "values": ["c", "m", "r"]},
        {"key": "karpenter.k8s.aws/instance-family", "operator": "In", "values": ["m6i", "m7i", "m7g"]},
        {"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["metal"]},
        {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["3"]},
        {
            "key": "topology.kubernetes.io/zone",
            "operator": "In",
            "values": ["us-east-2a", "us-east-2b"],
            "minValues": 2,
        },
    ]
    assert tmpl["spec"]["expireAfter"] == "336h"
    assert tmpl["spec"]["terminationGracePeriod"] == "24h"
    assert spec["limits"] == {"cpu": "1000", "memory": "1000Gi"}
    assert spec["weight"] == 10
    assert spec["disruption"] == {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "consolidateAfter": "30s",
        "budgets": [
            {"nodes": "10%", "reasons": ["Empty", "Underutilized"]},
            {"nodes": "20%", "reasons": ["Drifted"]},
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "0 9 * * mon-fri", "duration": "8h"},
        ],
    }


def test_karpenter_node_pool_defaults() -> None:
    np = KarpenterNodePoolSpec.model_validate({"name": "plain", "nodeClass": "general"})
    m = render_karpenter_node_pool(np, annotations={})
    spec = m["spec"]
    assert "annotations" not in m["metadata"]
    assert "metadata" not in spec["template"]
    assert "terminationGracePeriod" not in spec["template"]["spec"]
    assert spec["template"]["spec"]["expireAfter"] == "720h"
    assert "limits" not in spec and "weight" not in spec
    # Every reason that can act on the pool is bounded (one budget: they share the 10% default).
    assert spec["disruption"]["budgets"] == [
        {"nodes": "10%", "reasons": ["Empty", "Underutilized", "Drifted"]}
    ]
    assert [r["key"] for r in spec["template"]["spec"]["requirements"]] == [
        "kubernetes.io/arch",
        "karpenter.sh/capacity-type",
        "karpenter.k8s.aws/instance-category",
    ]
    validate_manifest(m)


def _all_hosted_manifests(hc: HostedCluster) -> list[dict[str, Any]]:
    assert hc.auto_node is not None
    out = [render_hosted_cluster(hc)]
    out += [render_hypershift_node_pool(hc, np) for np in hc.node_pools]
    out += [render_openshift_ec2_node_class(hc, nc) for nc in hc.auto_node.node_classes]
    out += [render_legacy_ec2_node_class(hc, nc) for nc in hc.auto_node.node_classes]
    out += [render_karpenter_node_pool(np, annotations={"a": "b"}) for np in hc.auto_node.node_pools]
    return out


@pytest.mark.parametrize("access", ["Public", "PublicAndPrivate", "Private"])
def test_every_hosted_manifest_fits_its_crd(access: str) -> None:
    manifests = _all_hosted_manifests(hosted_cluster(endpointAccess=access))
    assert {(m["apiVersion"], m["kind"]) for m in manifests} == {
        (k.HOSTED_CLUSTER.api_version, k.HOSTED_CLUSTER.kind),
        (k.HYPERSHIFT_NODE_POOL.api_version, k.HYPERSHIFT_NODE_POOL.kind),
        (k.OPENSHIFT_EC2_NODE_CLASS.api_version, k.OPENSHIFT_EC2_NODE_CLASS.kind),
        (k.EC2_NODE_CLASS.api_version, k.EC2_NODE_CLASS.kind),
        (k.KARPENTER_NODE_POOL.api_version, k.KARPENTER_NODE_POOL.kind),
    }
    for manifest in manifests:
        validate_manifest(manifest)


def test_crd_check_catches_bad_hosted_objects() -> None:
    hc = hosted_cluster()
    assert hc.auto_node is not None
    hosted = render_hosted_cluster(hc)
    del hosted["spec"]["services"]
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(hosted)
    node_pool = render_hypershift_node_pool(hc, hc.node_pools[0])
    node_pool["spec"]["management"]["upgradeType"] = "Recreate"
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(node_pool)
    bad = render_openshift_ec2_node_class(hc, hc.auto_node.node_classes[0])
    bad["spec"]["blockDeviceMappings"][0]["ebs"]["volumeType"] = "gp3"  # v1 wants GP3
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(bad)
    legacy = render_legacy_ec2_node_class(hc, hc.auto_node.node_classes[0])
    assert legacy["metadata"]["annotations"]["nodefleet.io/karpenter"] == "hypershift/1.13"
    # HyperShift's relaxed EC2NodeClass CRD requires no amiSelectorTerms (HyperShift writes them); upstream's does.
    del legacy["spec"]["amiSelectorTerms"]
    validate_manifest(legacy)
    with pytest.raises(jsonschema.ValidationError, match="amiSelectorTerms"):
        _validate_manifest({**legacy, "metadata": {"name": "x"}}, karpenter="aws/1.15")
    legacy["spec"]["amiFamily"] = "AL2023"  # HyperShift's copy allows only Custom
    with pytest.raises(jsonschema.ValidationError, match="Custom"):
        validate_manifest(legacy)
    pool = render_karpenter_node_pool(hc.auto_node.node_pools[0], annotations={})
    pool["spec"]["disruption"]["budgets"][0]["reasons"] = ["NodeClassDrift"]  # not a budget reason
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(pool)


def test_karpenter_sh_requirement_domain_is_rejected_by_the_crds_own_rule() -> None:
    """The CRD's karpenter.sh domain rule is CEL only: the JSON-schema check cannot see it, the crd-schema
    validation (the CRD's CEL rules) rejects it with the CRD's message; the config model leaves it to them."""
    np = KarpenterNodePoolSpec.model_validate(
        {
            "name": "bad",
            "nodeClass": "general",
            "requirements": [{"key": "karpenter.sh/instance-family", "values": ["m6i"]}],
        }
    )
    sneaked = render_karpenter_node_pool(np, annotations={})
    validate_manifest(sneaked)  # CEL-only: not seen by the jsonschema validator
    found = load_index().for_object(k.KARPENTER_NODE_POOL.api_version, k.KARPENTER_NODE_POOL.kind)
    assert found is not None
    messages = [str(f) for f in validate_object(sneaked, found) if f.blocking]
    assert messages == [
        'spec.template.spec.requirements[3].key: Invalid value: "karpenter.sh/instance-family": label domain '
        '"karpenter.sh" is restricted'
    ]
    # capacity-type is the one allowed key of the domain.
    ok = KarpenterNodePoolSpec.model_validate(
        {
            "name": "ok",
            "nodeClass": "general",
            "requirements": [{"key": "karpenter.sh/capacity-type", "values": ["spot"]}],
        }
    )
    assert validate_object(render_karpenter_node_pool(ok, annotations={}), found) == []
