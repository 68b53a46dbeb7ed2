"""version-skew: HyperShift NodePools and node classes never lead their HostedCluster and trail it by at most
what the configured skew profile allows (default ocp)."""

from __future__ import annotations

from typing import Any

import jsonschema
import pytest
from pulumi_policy import PolicyResource
from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from nodefleet import kinds as k
from policies.hosted import hypershift_supported_versions, version_skew
from tests.crdschema import _schemas, validate_manifest
from tests.policies.helpers import component, run_stack_policy, stack_resource

IMAGE = "quay.io/openshift-release-dev/ocp-release:{}-multi"


def _hosted_cluster(release: str, name: str = "example", namespace: str = "clusters") -> dict[str, Any]:
    hc = {
        "apiVersion": "hypershift.openshift.io/v1beta1",
        "kind": "HostedCluster",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "release": {"image": IMAGE.format(release)},
            "infraID": f"{name}-abcde",
            "dns": {"baseDomain": "example.com"},
            "networking": {"networkType": "OVNKubernetes", "clusterNetwork": [{"cidr": "10.132.0.0/14"}]},
            "platform": {
                "type": "AWS",
                "aws": {
                    "region": "us-east-2",
                    "endpointAccess": "Public",
                    "cloudProviderConfig": {
                        "vpc": "vpc-0a1b2c3d",
                        "subnet": {"id": "subnet-0a1b2c3d"},
                        "zone": "us-east-2a",
                    },
                    "rolesRef": {
                        role: f"arn:aws:iam::123456789012:role/{name}-{role}"
                        for role in (
                            "ingressARN",
                            "imageRegistryARN",
                            "storageARN",
                            "networkARN",
                            "kubeCloudControllerARN",
                            "nodePoolManagementARN",
                            "controlPlaneOperatorARN",
                        )
                    },
                },
            },
            "etcd": {"managementType": "Managed"},
            "services": [
                {"service": "APIServer", "servicePublishingStrategy": {"type": "LoadBalancer"}},
                {"service": "Ignition", "servicePublishingStrategy": {"type": "Route"}},
                {"service": "Konnectivity", "servicePublishingStrategy": {"type": "Route"}},
                {"service": "OAuthServer", "servicePublishingStrategy": {"type": "Route"}},
            ],
            "pullSecret": {"name": f"{name}-pull-secret"},
            "autoNode": {
                "provisionerConfig": {
                    "name": "Karpenter",
                    "karpenter": {
                        "platform": "AWS",
                        "aws": {"roleARN": "arn:aws:iam::123456789012:role/example-karpenter"},
                    },
                }
            },
        },
    }
    return hc


def _node_pool(
    release: str, cluster: str = "example", namespace: str = "clusters", name: str = "workers"
) -> dict[str, Any]:
    return {
        "apiVersion": "hypershift.openshift.io/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "clusterName": cluster,
            "replicas": 2,
            "management": {"upgradeType": "Replace"},
            "release": {"image": IMAGE.format(release)},
            "platform": {
                "type": "AWS",
                "aws": {"instanceType": "m6i.xlarge", "subnet": {"id": "subnet-0a1b2c3d"}},
            },
        },
    }


def _node_class(
    version: str | None, cluster: str | None = "clusters/example", name: str = "gpu"
) -> dict[str, Any]:
    nc: dict[str, Any] = {
        "apiVersion": "karpenter.hypershift.openshift.io/v1",
        "kind": "OpenshiftEC2NodeClass",
        "metadata": {"name": name},
        "spec": {
            "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example-abcde"}}],
            "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "example-abcde"}}],
        },
    }
    if cluster is not None:
        nc["metadata"]["annotations"] = {
            k.ANNOTATION_HOSTED_CLUSTER: cluster,
            k.ANNOTATION_USERDATA_MODE: "autonode",
        }
    if version is not None:
        nc["spec"]["version"] = version
    return nc


def _stack(*objects: tuple[str, dict[str, Any]]) -> list[PolicyResource]:
    parent = component("nodefleet:hosted:Cluster", "example")
    return [parent] + [stack_resource(token, props, parent=parent) for token, props in objects]


def _messages(*objects: tuple[str, dict[str, Any]], **kw: Any) -> list[str]:
    return [v.message for v in run_stack_policy(version_skew, _stack(*objects), **kw)]


HC = k.HOSTED_CLUSTER.token
NP = k.HYPERSHIFT_NODE_POOL.token
NC = k.OPENSHIFT_EC2_NODE_CLASS.token


def test_fixtures_fit_the_crds() -> None:
    for manifest in (_node_pool("4.20.1"), _node_class("4.20.1")):
        validate_manifest(manifest)
    # validate_manifest's metaschema check rejects the HostedCluster CRD's Go-only regexes (\p{S}); those
    # patterns sit on fields this fixture does not set, so validate without the metaschema check.
    hc = _hosted_cluster("4.22.3")
    jsonschema.Draft202012Validator(_schemas()[(hc["apiVersion"], hc["kind"])]).validate(hc)


@pytest.mark.parametrize(
    ("cluster", "nodes"),
    [
        ("4.22.3", "4.22.3"),
        ("4.22.3", "4.22.1"),
        ("4.22.3", "4.20.0"),
        ("4.21.3", "4.20.0"),
        ("5.0.0", "4.21.4"),
        ("5.0.0-ec.2", "5.0.0-ec.2"),
    ],
)
def test_within_skew(cluster: str, nodes: str) -> None:
    assert _messages((HC, _hosted_cluster(cluster)), (NP, _node_pool(nodes)), (NC, _node_class(nodes))) == []


def test_node_class_without_version_follows_the_control_plane() -> None:
    assert (
        _messages((HC, _hosted_cluster("4.22.3")), (NC, _node_class(None)), (NC, _node_class("", name="b")))
        == []
    )


def test_node_pool_newer_than_control_plane_patch_included() -> None:
    resources = _stack((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.22.4")))
    (v,) = run_stack_policy(version_skew, resources)
    assert v.level == "mandatory" and v.resource == resources[-1].urn
    assert v.message.startswith(
        "HyperShift NodePool 'workers' runs 4.22.4 (spec.release.image) on HostedCluster 'example': newer than "
        "its control plane at 4.22.3; nodes may never lead the control plane."
    )
    assert "Upgrade the control plane first" in v.message


def test_prerelease_nodes_on_final_control_plane_and_vice_versa() -> None:
    assert _messages((HC, _hosted_cluster("5.0.0")), (NP, _node_pool("5.0.0-ec.2"))) == []
    (msg,) = _messages((HC, _hosted_cluster("5.0.0-ec.2")), (NP, _node_pool("5.0.0")))
    assert "newer than" in msg


def test_node_pool_too_old() -> None:
    (msg,) = _messages((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.18.9")))
    assert "4 minor releases behind its control plane at 4.22.3; at most 2 are supported" in msg
    assert "profile ocp" in msg and "Upgrade the nodes to 4.20 or newer" in msg


def test_ocp_profile_is_the_default_and_follows_the_control_planes_parity() -> None:
    """Documented support: y-2 for an even control-plane minor, y-1 for an odd one."""
    (msg,) = _messages((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.19.0")))
    assert "3 minor releases behind" in msg and "at most 2" in msg and "even minor such as 4.22" in msg
    (msg,) = _messages((HC, _hosted_cluster("4.21.3")), (NP, _node_pool("4.19.0")))
    assert "2 minor releases behind" in msg and "at most 1" in msg and "odd minor such as 4.21" in msg


def test_hypershift_profile_accepts_three_minors_and_counts_5_0_as_4_23() -> None:
    config = {"version-skew": {"profile": "hypershift"}}
    assert _messages((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.19.0")), config=config) == []
    assert _messages((HC, _hosted_cluster("5.0.1")), (NP, _node_pool("4.20.0")), config=config) == []
    (msg,) = _messages((HC, _hosted_cluster("5.0.1")), (NP, _node_pool("4.19.9")), config=config)
    assert "4 minor releases behind" in msg and "OCP 5.0 counts as 4.23" in msg and "at most 3" in msg


def test_rosa_profile_is_y_minus_2_for_every_minor() -> None:
    config = {"version-skew": {"profile": "rosa"}}
    assert _messages((HC, _hosted_cluster("4.21.3")), (NP, _node_pool("4.19.0")), config=config) == []
    (msg,) = _messages((HC, _hosted_cluster("4.21.3")), (NP, _node_pool("4.18.0")), config=config)
    assert "profile rosa" in msg and "at most 2" in msg


def test_bad_profile_config_is_one_clear_violation() -> None:
    objects = ((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.22.3")))
    (msg,) = _messages(*objects, config={"version-skew": {"profile": "eus"}})
    assert msg.startswith("version-skew config profile: 'eus' is not a version skew profile")
    (msg,) = _messages(*objects, config={"version-skew": {"maxMinorsBehind": "three"}})
    assert "maxMinorsBehind must be a whole number" in msg


def test_node_class_version_skew() -> None:
    (msg,) = _messages((HC, _hosted_cluster("4.22.3")), (NC, _node_class("4.23.0")))
    assert "OpenshiftEC2NodeClass 'gpu'" in msg and "spec.version" in msg and "newer than" in msg
    (msg,) = _messages((HC, _hosted_cluster("5.0.0")), (NC, _node_class("4.18.2")))
    assert "5 minor releases behind" in msg


def test_node_class_version_must_be_x_y_z() -> None:
    # Semantic versioning allows build metadata, which the CRD accepts and no OCP release carries.
    (msg,) = _messages((HC, _hosted_cluster("4.22.3")), (NC, _node_class("4.22.1+build.5")))
    assert "x.y.z" in msg and "gpu" in msg


def test_a_version_the_crd_rejects_gets_one_verdict_from_crd_schema() -> None:
    from policies.crd_schema import crd_schema
    from tests.policies.helpers import run_policy

    assert _messages((HC, _hosted_cluster("4.22.3")), (NC, _node_class("4.22"))) == []
    found = run_policy(crd_schema, NC, _node_class("4.22"))
    # As the API server does: the schema's minLength and the CEL rule, both on spec.version.
    assert [v.message.split(": ", 2)[1] for v in found] == ["spec.version", "spec.version"]
    assert all(v.level == "mandatory" for v in found)
    assert "version must be a valid semantic version" in found[1].message


def test_pairing() -> None:
    """By clusterName + namespace for NodePools, by annotation for node classes; others are not judged."""
    assert (
        _messages(
            (HC, _hosted_cluster("4.22.3")),
            (HC, _hosted_cluster("4.18.0", name="old")),
            (NP, _node_pool("4.22.3")),
            (NP, _node_pool("4.18.0", cluster="old", name="old-workers")),
            (NC, _node_class("4.22.3")),
        )
        == []
    )
    # Same cluster name in another namespace is another HostedCluster.
    assert _messages((HC, _hosted_cluster("4.18.0")), (NP, _node_pool("4.22.3", namespace="other"))) == []
    # A node class annotated for another hosted cluster.
    assert (
        _messages((HC, _hosted_cluster("4.18.0")), (NC, _node_class("4.22.3", cluster="clusters/other")))
        == []
    )


def test_hand_written_objects() -> None:
    """No nodefleet annotations: NodePools still pair by clusterName; unannotated node classes cannot."""
    resources = [
        stack_resource(HC, _hosted_cluster("4.22.3")),
        stack_resource(NP, _node_pool("4.17.0")),
        stack_resource(NC, _node_class("4.17.0", cluster=None)),
    ]
    (msg,) = [v.message for v in run_stack_policy(version_skew, resources)]
    assert "NodePool 'workers'" in msg and "5 minor releases behind" in msg


def test_unreadable_releases_are_not_judged() -> None:
    digest = _node_pool("4.22.3")
    digest["spec"]["release"]["image"] = "quay.io/openshift-release-dev/ocp-release@sha256:" + "f" * 64
    assert _messages((HC, _hosted_cluster("4.18.0")), (NP, digest)) == []
    hc = _hosted_cluster("4.22.3")
    hc["spec"]["release"]["image"] = "quay.io/openshift-release-dev/ocp-release@sha256:" + "f" * 64
    assert _messages((HC, hc), (NP, _node_pool("4.10.0"))) == []


def test_unknown_values_are_advisory() -> None:
    hc = _hosted_cluster("4.22.3")
    hc["spec"]["release"]["image"] = UNKNOWN_STRING_VALUE
    (v,) = run_stack_policy(version_skew, _stack((HC, hc), (NP, _node_pool("4.22.3"))))
    assert v.level == "advisory" and v.message.startswith("cannot verify during preview")
    (v,) = run_stack_policy(
        version_skew, _stack((HC, _hosted_cluster("4.22.3")), (NC, _node_class(UNKNOWN_STRING_VALUE)))
    )
    assert v.level == "advisory"


def test_config_max_minors_behind() -> None:
    objects = ((HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.20.1")))
    assert _messages(*objects) == []
    (msg,) = _messages(*objects, config={"version-skew": {"maxMinorsBehind": 1}})
    assert "2 minor releases behind" in msg and "at most 1" in msg
    assert (
        _messages(
            (HC, _hosted_cluster("4.22.3")), (NP, _node_pool("4.23.0")), config={"version-skew": "disabled"}
        )
        == []
    )


# --- hypershift-supported-versions: a release the management cluster's HyperShift operator runs -------------


def _on_management(
    supported: list[str], *objects: tuple[str, dict[str, Any]], management: str = "mgmt-use1-a"
) -> list[str]:
    parent = stack_resource(
        "nodefleet:hosted:Cluster",
        {
            "managementCluster": management,
            "supportedVersions": supported,
            "registry": "stacks/nodefleet-fleet.yaml",
        },
        name="example",
    )
    resources = [parent] + [stack_resource(token, props, parent=parent) for token, props in objects]
    return [v.message for v in run_stack_policy(hypershift_supported_versions, resources)]


def test_a_release_the_management_clusters_operator_does_not_run_is_refused() -> None:
    (hc_message, np_message) = _on_management(
        ["4.22", "4.21"], (HC, _hosted_cluster("4.20.5")), (NP, _node_pool("4.20.5"))
    )
    assert hc_message.startswith(
        "HostedCluster 'example' (spec.release.image) releases 4.20.5, but the HyperShift operator of management "
        "cluster 'mgmt-use1-a' runs 4.22, 4.21 (hypershift.supportedVersions in stacks/nodefleet-fleet.yaml)"
    ), hc_message
    assert "Choose a release of 4.22 or 4.21" in hc_message
    assert np_message.startswith("HyperShift NodePool 'workers' (spec.release.image) releases 4.20.5")


@pytest.mark.parametrize(
    ("supported", "release"),
    [
        (["4.22", "4.21"], "4.21.9"),  # a line it runs
        ([], "4.20.5"),  # not declared: nothing to judge against (fleet upgrade notes it)
        (["5.0", "4.22"], "5.0.0-ec.2"),  # a pre-release of a line it runs
    ],
)
def test_a_release_it_runs_or_an_undeclared_operator_passes(supported: list[str], release: str) -> None:
    assert _on_management(supported, (HC, _hosted_cluster(release)), (NP, _node_pool(release))) == []


def test_supported_versions_in_any_shape_or_no_component_are_not_judged() -> None:
    for shape in ("4.22", None, [4.22], {"x": "y"}):
        parent = stack_resource("nodefleet:hosted:Cluster", {"supportedVersions": shape}, name="x")
        hc = stack_resource(HC, _hosted_cluster("4.20.5"), parent=parent)
        assert run_stack_policy(hypershift_supported_versions, [parent, hc]) == []
    assert (
        run_stack_policy(hypershift_supported_versions, [stack_resource(HC, _hosted_cluster("4.20.5"))]) == []
    )
