"""Self-managed Karpenter: the S3 pointer keeps userData stable across rotations, moves once on real change."""

from __future__ import annotations

import json
from typing import Any

import jsonschema  # type: ignore[import-untyped]
import pytest

from nodefleet import kinds as k
from nodefleet.drift.rules import drift_reasons, static_hash
from nodefleet.render.hosted import render_karpenter_node_pool
from nodefleet.render.ignition import merge_headers, s3_pointer, user_data
from nodefleet.render.karpenter import (
    mcs_source,
    node_read_policy,
    object_key,
    payload_config,
    render_self_managed_ec2_node_class,
)
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.karpenter import SelfManagedNodeClass
from nodefleet.stackfile.model import ResolvedCluster, StandaloneCluster
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import validate_manifest

CA_1 = "-----BEGIN CERTIFICATE-----\nMIIBfirst0000=\n-----END CERTIFICATE-----\n"
CA_2 = "-----BEGIN CERTIFICATE-----\nMIIBsecond111=\n-----END CERTIFICATE-----\n"


def karpenter_dict() -> dict[str, Any]:
    return {
        "bucket": "dev-7xk2p-ignition",
        "nodeRole": "dev-7xk2p-karpenter-node",
        "instanceProfile": "dev-7xk2p-karpenter-node",
        "clusterDomain": "dev.example.com",
        "nodeClasses": [
            {"name": "general", "configVersion": "rendered-worker-5f1c0e4b2a9d"},
            {
                "name": "infra-arm",
                "pool": "infra",
                "architecture": "arm64",
                "configVersion": "rendered-infra-77aa01",
                "subnetTags": {"kubernetes.io/role/internal-elb": "1"},
                "securityGroupTags": {"Name": "dev-7xk2p-infra"},
                "rootVolumeGiB": 200,
            },
        ],
        "nodePools": [
            {"name": "general", "nodeClass": "general", "capacityTypes": ["on-demand", "spot"]},
            {
                "name": "infra-arm",
                "nodeClass": "infra-arm",
                "architectures": ["arm64"],
                "labels": {"node-role.kubernetes.io/infra": ""},
            },
        ],
    }


def resolved(**changes: Any) -> ResolvedCluster:
    raw = stack_fleet("dev")
    cluster = raw["clusters"][0]
    cluster["karpenter"] = karpenter_dict()
    cluster.update(changes)
    fleet = load_fleet(raw, "dev", PROJECT)
    c = fleet.clusters[0]
    assert isinstance(c, ResolvedCluster)
    return c


def _class(c: ResolvedCluster, name: str) -> SelfManagedNodeClass:
    assert c.config.karpenter is not None
    return next(nc for nc in c.config.karpenter.node_classes if nc.name == name)


def _render(c: ResolvedCluster, name: str) -> dict[str, Any]:
    return render_self_managed_ec2_node_class(c.config, _class(c, name), c.karpenter_images[name])


def test_mcs_source_and_payload() -> None:
    c = resolved()
    nc = _class(c, "infra-arm")
    assert mcs_source(c.config, "infra") == "https://api-int.dev.example.com:22623/config/infra"
    payload = payload_config(c.config, nc, ca_pem=CA_1)
    ign = payload["ignition"]
    assert ign["config"]["merge"] == [{"source": "https://api-int.dev.example.com:22623/config/infra"}]
    assert ign["security"]["tls"]["certificateAuthorities"][0]["source"].startswith(
        "data:text/plain;charset=utf-8;base64,"
    )


def test_object_key_is_readable_and_names_the_drift_inputs() -> None:
    c = resolved()
    assert object_key(c.config, _class(c, "general")) == (
        "nodefleet/ignition/dev/general/5.0.0-ec.2/rendered-worker-5f1c0e4b2a9d.ign"
    )
    assert object_key(c.config, _class(c, "infra-arm")) == (
        "nodefleet/ignition/dev/infra-arm/5.0.0-ec.2/rendered-infra-77aa01.ign"
    )


def test_object_key_moves_when_the_pool_moves() -> None:
    """A class moved to another pool must not silently repoint the existing object at the other pool."""
    nc = SelfManagedNodeClass.model_validate({"name": "general", "pool": "infra", "configVersion": "v7"})
    other = SelfManagedNodeClass.model_validate({"name": "general", "pool": "worker", "configVersion": "v7"})
    c = resolved()
    assert object_key(c.config, nc) != object_key(c.config, other)
    assert object_key(c.config, nc).endswith("/infra.v7.ign")


def test_ec2_node_class_shape() -> None:
    c = resolved()
    m = _render(c, "general")
    assert (m["apiVersion"], m["kind"]) == (k.EC2_NODE_CLASS.api_version, k.EC2_NODE_CLASS.kind)
    image = c.karpenter_images["general"]
    assert m["metadata"] == {
        "name": "general",
        "annotations": {
            k.ANNOTATION_USERDATA_MODE: "s3-pointer",
            k.ANNOTATION_RELEASE: "5.0.0-ec.2",
            k.ANNOTATION_RHCOS: image.raw_release,
            k.ANNOTATION_STREAM: "rhel-9",
            k.ANNOTATION_KARPENTER: "aws/1.15",
        },
    }
    spec = m["spec"]
    assert spec["amiFamily"] == "Custom"
    assert spec["amiSelectorTerms"] == [{"id": image.ami}]
    assert spec["instanceProfile"] == "dev-7xk2p-karpenter-node"
    assert spec["userData"] == user_data(
        s3_pointer("dev-7xk2p-ignition", object_key(c.config, _class(c, "general")))
    )
    assert json.loads(spec["userData"]) == {
        "ignition": {
            "version": "3.2.0",
            "config": {
                "merge": [
                    {
                        "source": "s3://dev-7xk2p-ignition/nodefleet/ignition/dev/general/5.0.0-ec.2/"
                        "rendered-worker-5f1c0e4b2a9d.ign"
                    }
                ]
            },
        }
    }
    assert spec["subnetSelectorTerms"] == [{"tags": {"kubernetes.io/cluster/dev-7xk2p": "owned"}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"Name": "dev-7xk2p-node"}}]
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "120Gi"
    assert spec["metadataOptions"]["httpTokens"] == "required"
    # Nothing that rotates, nothing secret.
    assert "BEGIN CERTIFICATE" not in spec["userData"] and "base64" not in spec["userData"]
    assert merge_headers(spec["userData"]) == {}


def test_class_selectors_and_arch_image() -> None:
    c = resolved()
    m = _render(c, "infra-arm")
    spec = m["spec"]
    assert spec["subnetSelectorTerms"] == [{"tags": {"kubernetes.io/role/internal-elb": "1"}}]
    assert spec["securityGroupSelectorTerms"] == [{"tags": {"Name": "dev-7xk2p-infra"}}]
    assert spec["blockDeviceMappings"][0]["ebs"]["volumeSize"] == "200Gi"
    arm = c.karpenter_images["infra-arm"]
    assert arm.arch == "aarch64" and spec["amiSelectorTerms"] == [{"id": arm.ami}]
    assert arm.ami != c.karpenter_images["general"].ami


def test_every_self_managed_manifest_fits_the_strict_upstream_crds() -> None:
    c = resolved()
    assert c.config.karpenter is not None
    manifests = [_render(c, nc.name) for nc in c.config.karpenter.node_classes]
    manifests += [render_karpenter_node_pool(p, annotations={}) for p in c.config.karpenter.node_pools]
    for manifest in manifests:
        validate_manifest(manifest)
    bad = _render(c, "general")
    bad["spec"]["metadataOptions"]["httpTokens"] = "Required"  # the v1 OpenShift spelling, not upstream's
    with pytest.raises(jsonschema.ValidationError):
        validate_manifest(bad)


def test_ca_rotation_rewrites_the_object_not_the_user_data() -> None:
    c = resolved()
    nc = _class(c, "general")
    before, after = payload_config(c.config, nc, ca_pem=CA_1), payload_config(c.config, nc, ca_pem=CA_2)
    assert user_data(before) != user_data(after)  # the object is rewritten in place...
    m1, m2 = _render(c, "general"), _render(c, "general")  # ...the class does not depend on the CA at all
    assert m1["spec"]["userData"] == m2["spec"]["userData"]
    assert static_hash(m1) == static_hash(m2)
    assert drift_reasons(m1, m2) == []
    assert drift_reasons(m1, m2, carry=True) == []


def test_release_bump_moves_the_key_exactly_once() -> None:
    old = resolved()
    same = resolved()
    new = resolved(release="5.0.0-ec.3")
    keys = [object_key(r.config, _class(r, "general")) for r in (old, same, new)]
    assert keys[0] == keys[1]
    assert keys[2] != keys[0] and "/5.0.0-ec.3/" in keys[2]
    before, after = _render(old, "general"), _render(new, "general")
    assert before["spec"]["userData"] != after["spec"]["userData"]
    assert drift_reasons(before, after) == ["NodeClassDrift"]
    # Applying the bumped release again is a no-op.
    assert drift_reasons(after, _render(resolved(release="5.0.0-ec.3"), "general")) == []


def test_rendered_config_change_moves_the_key() -> None:
    c = resolved()
    raw = karpenter_dict()
    raw["nodeClasses"][0]["configVersion"] = "rendered-worker-99ffee"
    moved = resolved(karpenter=raw)
    assert object_key(c.config, _class(c, "general")) != object_key(moved.config, _class(moved, "general"))
    assert drift_reasons(_render(c, "general"), _render(moved, "general")) == ["NodeClassDrift"]


def test_node_read_policy_is_exactly_the_cluster_prefix() -> None:
    policy = node_read_policy("dev-7xk2p-ignition", "nodefleet/ignition", "dev")
    assert policy == {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadIgnitionPayloads",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": ["arn:aws:s3:::dev-7xk2p-ignition/nodefleet/ignition/dev/*"],
            }
        ],
    }
    c = resolved()
    key = object_key(c.config, _class(c, "general"))
    resource = policy["Statement"][0]["Resource"][0]
    assert f"arn:aws:s3:::dev-7xk2p-ignition/{key}".startswith(resource.removesuffix("*"))
    assert node_read_policy("b", "p", "c", partition="aws-us-gov")["Statement"][0]["Resource"] == [
        "arn:aws-us-gov:s3:::b/p/c/*"
    ]


@pytest.mark.parametrize(
    ("bucket", "prefix", "cluster"), [("", "p", "c"), ("b", "p", "*"), ("b", "", "c"), ("b/x", "p", "c")]
)
def test_node_read_policy_refuses_wider_grants(bucket: str, prefix: str, cluster: str) -> None:
    with pytest.raises(ValueError):
        node_read_policy(bucket, prefix, cluster)


def test_cluster_without_karpenter_is_refused() -> None:
    raw = stack_fleet("dev")["clusters"][0]
    cluster = StandaloneCluster.model_validate(raw)
    nc = SelfManagedNodeClass.model_validate({"name": "x", "configVersion": "v1"})
    with pytest.raises(ValueError, match="no self-managed Karpenter"):
        object_key(cluster, nc)
