"""Every HostedCluster / HyperShift NodePool key nodefleet added to match the CLI: what it renders, that the
real CRD accepts it, and where a bad value is stopped (the config model, or the CRD schema)."""

from __future__ import annotations

import copy
import re
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import ValidationError

from nodefleet.apiserver.store import CRD_DIR
from nodefleet.render.hosted import render_hosted_cluster, render_hypershift_node_pool
from nodefleet.stackfile.hosted import HostedCluster
from tests.conftest import PROJECT
from tests.crdschema import validate_manifest
from tests.nodefleet.render.test_hosted import hosted_cluster_dict

KMS_KEY = "arn:aws:kms:us-east-2:123456789012:key/0a1b2c3d-0000-4000-8000-000000000001"
KMS_ROLE = "arn:aws:iam::123456789012:role/demo-kms-provider"


def _hc(**changes: Any) -> HostedCluster:
    raw = hosted_cluster_dict()
    raw.update(changes)
    return HostedCluster.model_validate(raw)


def _at(doc: Any, path: str) -> Any:
    for part in path.split("."):
        doc = doc[part]
    return doc


ACCEPTED: list[tuple[dict[str, Any], str, Any]] = [
    ({"controllerAvailabilityPolicy": "SingleReplica"}, "spec.controllerAvailabilityPolicy", "SingleReplica"),
    (
        {"infrastructureAvailabilityPolicy": "SingleReplica"},
        "spec.infrastructureAvailabilityPolicy",
        "SingleReplica",
    ),
    ({"fips": True}, "spec.fips", True),
    ({"olmCatalogPlacement": "guest"}, "spec.olmCatalogPlacement", "guest"),
    (
        {"etcd": {"storageClassName": "io2-csi", "size": "32Gi"}},
        "spec.etcd.managed.storage.persistentVolume",
        {"size": "32Gi", "storageClassName": "io2-csi"},
    ),
    ({"kubeAPIServerDNSName": "api.prod.example.com"}, "spec.kubeAPIServerDNSName", "api.prod.example.com"),
    (
        {
            "secretEncryption": {
                "kms": {"activeKeyARN": KMS_KEY, "backupKeyARN": KMS_KEY, "roleARN": KMS_ROLE}
            }
        },
        "spec.secretEncryption",
        {
            "type": "kms",
            "kms": {
                "provider": "AWS",
                "aws": {
                    "activeKey": {"arn": KMS_KEY},
                    "backupKey": {"arn": KMS_KEY},
                    "auth": {"awsKms": KMS_ROLE},
                    "region": "us-east-2",
                },
            },
        },
    ),
    (
        {"secretEncryption": {"aescbc": {"activeKey": {"name": "demo-etcd-encryption-key"}}}},
        "spec.secretEncryption",
        {"type": "aescbc", "aescbc": {"activeKey": {"name": "demo-etcd-encryption-key"}}},
    ),
    (
        {
            "proxy": {
                "httpProxy": "http://p:3128",
                "httpsProxy": "http://p:3128",
                "noProxy": ".corp,10.0.0.0/8",
                "trustedCA": "proxy-ca",
                "readinessEndpoints": ["https://www.redhat.com"],
            }
        },
        "spec.configuration.proxy",
        {
            "httpProxy": "http://p:3128",
            "httpsProxy": "http://p:3128",
            "noProxy": ".corp,10.0.0.0/8",
            "trustedCA": {"name": "proxy-ca"},
            "readinessEndpoints": ["https://www.redhat.com"],
        },
    ),
    (
        {
            "operatorConfiguration": {
                "ovnKubernetes": {
                    "mtu": 8901,
                    "internalJoinSubnet": "100.66.0.0/16",
                    "internalTransitSwitchSubnet": "100.67.0.0/16",
                    "v4InternalSubnet": "100.68.0.0/16",
                }
            }
        },
        "spec.operatorConfiguration.clusterNetworkOperator.ovnKubernetesConfig",
        {
            "mtu": 8901,
            "ipv4": {"internalJoinSubnet": "100.66.0.0/16", "internalTransitSwitchSubnet": "100.67.0.0/16"},
            "v4InternalSubnet": "100.68.0.0/16",
        },
    ),
    (
        {"operatorConfiguration": {"ingress": {"scope": "Internal", "allowedSourceRanges": ["10.0.0.0/8"]}}},
        "spec.operatorConfiguration.ingressOperator.endpointPublishingStrategy",
        {
            "type": "LoadBalancerService",
            "loadBalancer": {
                "scope": "Internal",
                "dnsManagementPolicy": "Managed",
                "providerParameters": {"type": "AWS", "aws": {"type": "NLB"}},
                "allowedSourceRanges": ["10.0.0.0/8"],
            },
        },
    ),
    ({"cleanupCloudResources": False}, "metadata.annotations", None),
    (
        {"annotations": {"hypershift.openshift.io/control-plane-operator-image": "quay.io/x/cpo:1"}},
        "metadata.annotations.hypershift.openshift.io/control-plane-operator-image",
        "quay.io/x/cpo:1",
    ),
    ({"labels": {"team": "platform"}}, "metadata.labels", {"team": "platform"}),
]


@pytest.mark.parametrize(("changes", "path", "value"), ACCEPTED)
def test_each_new_key_renders_and_fits_the_crd(changes: dict[str, Any], path: str, value: Any) -> None:
    m = render_hosted_cluster(_hc(**changes))
    validate_manifest(m)
    if path == "metadata.annotations" and value is None:
        assert "hypershift.openshift.io/cleanup-cloud-resources" not in m["metadata"]["annotations"]
    elif path.startswith("metadata.annotations."):
        assert m["metadata"]["annotations"][path.removeprefix("metadata.annotations.")] == value
    else:
        assert _at(m, path) == value


CONFIG_REJECTS: list[tuple[dict[str, Any], str]] = [
    ({"controllerAvailabilityPolicy": "Single"}, "controllerAvailabilityPolicy"),
    ({"infrastructureAvailabilityPolicy": "HA"}, "infrastructureAvailabilityPolicy"),
    ({"fips": "maybe"}, "fips"),
    ({"olmCatalogPlacement": "Guest"}, "olmCatalogPlacement"),
    ({"etcd": {"size": "8GB"}}, "etcd.size"),
    ({"kubeAPIServerDNSName": "API_server.example.com"}, "kubeAPIServerDNSName"),
    ({"secretEncryption": {}}, "set exactly one of kms or aescbc"),
    ({"secretEncryption": {"kms": {"activeKeyARN": "alias/mine", "roleARN": KMS_ROLE}}}, "activeKeyARN"),
    ({"secretEncryption": {"kms": {"activeKeyARN": KMS_KEY, "roleARN": "kms-role"}}}, "roleARN"),
    ({"operatorConfiguration": {"ovnKubernetes": {"mtu": 575}}}, "mtu"),
    ({"operatorConfiguration": {"ovnKubernetes": {"mtu": 9217}}}, "mtu"),
    ({"operatorConfiguration": {"ingress": {"scope": "Private"}}}, "scope"),
    ({"annotations": {"hypershift.openshift.io/cleanup-cloud-resources": "true"}}, "cleanupCloudResources"),
    ({"annotations": {"nodefleet.io/cluster-release": "4.22.0"}}, "set by nodefleet"),
]


@pytest.mark.parametrize(("changes", "match"), CONFIG_REJECTS)
def test_bad_values_are_refused_by_the_config_model(changes: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(match)):
        _hc(**changes)


def test_the_crd_rejects_the_same_bad_values_where_its_schema_says_so() -> None:
    """The config model's types are the CRD's: each value it refuses, the CRD's schema refuses too."""
    good = render_hosted_cluster(_hc(operatorConfiguration={"ovnKubernetes": {"mtu": 1400}}))
    for path, bad in (
        ("spec.controllerAvailabilityPolicy", "Single"),
        ("spec.infrastructureAvailabilityPolicy", "HA"),
        ("spec.fips", "maybe"),
        ("spec.olmCatalogPlacement", "Guest"),
        ("spec.operatorConfiguration.clusterNetworkOperator.ovnKubernetesConfig.mtu", 575),
        ("spec.operatorConfiguration.clusterNetworkOperator.ovnKubernetesConfig.mtu", 9217),
    ):
        m = copy.deepcopy(good)
        *parents, leaf = path.split(".")
        _at(m, ".".join(parents))[leaf] = bad
        with pytest.raises(jsonschema.ValidationError):
            validate_manifest(m)


NODE_POOL_ACCEPTED = [
    ({"autoRepair": False}, "spec.management.autoRepair", False),
    ({"nodeDrainTimeout": "30m"}, "spec.nodeDrainTimeout", "30m"),
    ({"nodeVolumeDetachTimeout": "1h30m"}, "spec.nodeVolumeDetachTimeout", "1h30m"),
]


@pytest.mark.parametrize(("changes", "path", "value"), NODE_POOL_ACCEPTED)
def test_node_pool_keys_render_and_fit_the_crd(changes: dict[str, Any], path: str, value: Any) -> None:
    raw = hosted_cluster_dict()
    raw["nodePools"][0].update(changes)
    hc = HostedCluster.model_validate(raw)
    m = render_hypershift_node_pool(hc, hc.node_pools[0])
    validate_manifest(m)
    assert _at(m, path) == value


@pytest.mark.parametrize("bad", ["30 minutes", "5d", "-1m", ""])
def test_node_pool_durations_are_go_durations(bad: str) -> None:
    # The CRD types them as bare strings; the API server fails only when it decodes metav1.Duration.
    raw = hosted_cluster_dict()
    raw["nodePools"][0]["nodeDrainTimeout"] = bad
    with pytest.raises(ValidationError, match="nodeDrainTimeout"):
        HostedCluster.model_validate(raw)


def _immutable_paths(crd_file: str) -> set[str]:
    """Spec paths whose CEL rule is ``self == oldSelf`` (immutable once set) in a CRD."""
    crd = yaml.safe_load((CRD_DIR / crd_file).read_text())
    version = next(v for v in crd["spec"]["versions"] if v["name"] == "v1beta1")
    found: set[str] = set()

    def walk(schema: dict[str, Any], path: str) -> None:
        if any(r.get("rule") == "self == oldSelf" for r in schema.get("x-kubernetes-validations", [])):
            found.add(path)
        for name, sub in schema.get("properties", {}).items():
            walk(sub, f"{path}.{name}" if path else name)
        if "items" in schema:
            walk(schema["items"], f"{path}[]")

    walk(version["schema"]["openAPIV3Schema"]["properties"]["spec"], "spec")
    return found


def test_docs_list_every_immutable_field_nodefleet_renders() -> None:
    """The immutable fields docs/configuration.md lists are the CRD's ``self == oldSelf`` rules on the paths nodefleet renders."""
    hc = _hc(
        secretEncryption={"kms": {"activeKeyARN": KMS_KEY, "roleARN": KMS_ROLE}},
        operatorConfiguration={"ovnKubernetes": {"mtu": 1400}},
    )
    rendered = render_hosted_cluster(hc)
    immutable = set()
    for path in _immutable_paths("hypershift.openshift.io_hostedclusters.yaml"):
        try:
            _at(rendered, path)
        except (KeyError, TypeError):
            continue
        immutable.add(path)
    assert {
        "spec.controllerAvailabilityPolicy",
        "spec.fips",
        "spec.olmCatalogPlacement",
        "spec.etcd.managementType",
        "spec.etcd.managed.storage.persistentVolume.size",
        "spec.etcd.managed.storage.persistentVolume.storageClassName",
        "spec.operatorConfiguration.clusterNetworkOperator.ovnKubernetesConfig.mtu",
    } <= immutable
    docs = (PROJECT / "docs" / "configuration.md").read_text()
    section = docs.split("Immutable once the cluster exists", 1)[1].split("\n\n", 1)[0]
    for path in immutable:
        assert f"`{path}`" in section, f"docs/configuration.md does not list immutable {path}"
