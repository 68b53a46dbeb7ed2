"""nodefleet's HostedCluster, NodePool, Namespace and pull-secret labels against what the HyperShift CLI
renders, field by field.

The CLI's output is HyperShift's own test fixtures for ``hypershift create cluster aws --render`` at every
vendored module version, v0.1.40 to v0.1.82 (``tests/fixtures/SOURCES.md`` says where they come from, what each
version changed, and why the CLI itself could not be built here). The fixtures use placeholder inputs
(``fakeVPCID``); the comparison substitutes the values the nodefleet stack gives for the same inputs, then
asserts that the remaining differences are exactly the listed ones, each with its reason (a few only for the
versions that render them). A new field the CLI starts rendering, or one nodefleet stops rendering, fails the
test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest
import yaml

from nodefleet.render.hosted import (
    LABEL_AUTO_CREATED_FOR_INFRA,
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_namespace,
    secret_labels,
)
from nodefleet.stackfile.hosted import HostedCluster
from tests.crdschema import validate_manifest
from tests.nodefleet.adopt.roundtrip import (
    FIXTURE_PREFIX,
    HYPERSHIFT_VERSIONED_CASES,
    HYPERSHIFT_VERSIONS,
    hypershift_fixture_dir,
    substitute,
)

ACCOUNT = "123456789012"
ROLES = {
    "ingressARN": "fakeIngressARN",
    "imageRegistryARN": "fakeImageRegistryARN",
    "storageARN": "fakeStorageARN",
    "networkARN": "fakeNetworkARN",
    "kubeCloudControllerARN": "fakeKubeCloudControllerARN",
    "nodePoolManagementARN": "fakeNodePoolManagementARN",
    "controlPlaneOperatorARN": "fakeControlPlaneOperatorARN",
}

#: The flags of each fixture (HyperShift ``cmd/cluster/aws/create_test.go``, ``TestCreateCluster``), besides
#: ``--sts-creds``, ``--infra-json`` and ``--iam-json`` (whose placeholder contents every case shares: a
#: proxy address in the infra output, a KMS key and KMS role in the IAM output) and ``--pull-secret``.
FLAG_SETS = {
    "minimal_flags_necessary_to_render": "--role-arn --render-sensitive --name=example",
    "default_creation_flags_for_cesar": "--instance-type=m5.large --region=us-east-2 --auto-repair --name=cesar "
    "--endpoint-access=Public --node-pool-replicas=2 --base-domain=… --control-plane-operator-image=fakeCPOImage "
    "--release-image=fakeReleaseImage --annotations=hypershift.openshift.io/cleanup-cloud-resources=true "
    "--render-sensitive",
    "minimal_with_KubeAPIServerDNSName": "--name=example --kas-dns-name=test-dns-name.example.com",
    "minimal_with_OVNKubernetesMTU": "--name=example --render-sensitive --ovn-kubernetes-mtu=1400",
}


#: v0.1.82 named its cases after what they assert, with v0.1.80's flags and bytes (tests/fixtures/SOURCES.md).
RENAMED = {
    "When_minimal_flags_are_provided__it_should_render_successfully": "minimal_flags_necessary_to_render",
    "When_default_creation_flags_are_provided__it_should_create_cluster_with_expected_configuration": (
        "default_creation_flags_for_cesar"
    ),
    "When_KubeAPIServerDNSName_is_provided__it_should_configure_custom_DNS_name": (
        "minimal_with_KubeAPIServerDNSName"
    ),
    "When_OVNKubernetesMTU_is_provided__it_should_configure_custom_MTU": "minimal_with_OVNKubernetesMTU",
}
#: Every vendored fixture: (module version, its file's case name, the flag set it renders).
VERSIONED = [(version, case, RENAMED.get(case, case)) for version, case in HYPERSHIFT_VERSIONED_CASES]
IDS = [f"{version}-{flags}" for version, _, flags in VERSIONED]
#: The case every version renders, for the comparisons made once per version.
MINIMAL = [(v, c) for v, c, flags in VERSIONED if flags == "minimal_flags_necessary_to_render"]


def _at_least(version: str, oldest: str) -> bool:
    def parts(v: str) -> tuple[int, ...]:
        return tuple(int(p) for p in v.removeprefix("v").split("."))

    return parts(version) >= parts(oldest)


def _fixture(case: str, version: str) -> dict[str, dict[str, Any]]:
    path = hypershift_fixture_dir(version) / f"{FIXTURE_PREFIX}{case}.yaml"
    docs = yaml.safe_load_all(path.read_text())
    return {doc["kind"]: doc for doc in docs if doc}


def _placeholders(region: str) -> dict[str, str]:
    """Placeholder input of the fixtures -> the value the nodefleet stack gives for the same input."""
    values = {
        "fakeVPCID": "vpc-0a1b2c3d4e5f60718",
        "fakeSubnetID": "subnet-0f1e2d3c4b5a69788",
        "fakeName": f"{region}a",
        "fakeInfraID": "example-4kq8z",
        "fakeIssuerURL": "https://example-oidc.s3.us-east-1.amazonaws.com/example-4kq8z",
        "fakeBaseDomain": "example.com",
        "fakeBaseDomainPrefix": "apps-prefix",
        "fakePublicZoneID": "Z0PUBLIC0000000000000",
        "fakePrivateZoneID": "Z0PRIVATE000000000000",
        "fakeProxyAddr": "http://proxy.example.com:3128",
        "fakeKMSKeyARN": f"arn:aws:kms:{region}:{ACCOUNT}:key/0a1b2c3d-0000-4000-8000-000000000001",
        "fakeKMSProviderRoleARN": f"arn:aws:iam::{ACCOUNT}:role/example-kms-provider",
        "fakeProfileName": "example-4kq8z-worker",
    }
    values.update({fake: f"arn:aws:iam::{ACCOUNT}:role/example-{key}" for key, fake in ROLES.items()})
    return values


def _stack(name: str, region: str, **choices: Any) -> dict[str, Any]:
    """The nodefleet hosted-cluster stanza for the fixtures' inputs, with ``choices`` on top."""
    p = _placeholders(region)
    raw: dict[str, Any] = {
        "kind": "hosted",
        "name": name,
        "namespace": "clusters",
        "infraId": p["fakeInfraID"],
        "region": region,
        "release": "4.22.3",
        "releaseImage": "fakeReleaseImage",
        "issuerUrl": p["fakeIssuerURL"],
        "dns": {
            "baseDomain": p["fakeBaseDomain"],
            "baseDomainPrefix": p["fakeBaseDomainPrefix"],
            "publicZoneId": p["fakePublicZoneID"],
            "privateZoneId": p["fakePrivateZoneID"],
        },
        "vpc": p["fakeVPCID"],
        "subnet": p["fakeSubnetID"],
        "zone": p["fakeName"],
        "roles": {key: p[fake] for key, fake in ROLES.items()},
        "networking": {"machineNetwork": "192.0.2.0/24"},
        "pullSecret": {"name": f"{name}-pull-secret", "fromConfig": "pullSecret"},
        "proxy": {"httpProxy": p["fakeProxyAddr"], "httpsProxy": p["fakeProxyAddr"]},
        "secretEncryption": {
            "kms": {"activeKeyARN": p["fakeKMSKeyARN"], "roleARN": p["fakeKMSProviderRoleARN"]}
        },
        "nodePools": [
            {
                "name": p[
                    "fakeName"
                ],  # the CLI names the NodePool <cluster>-<zone>; nodefleet <cluster>-<name>
                "replicas": 0,
                "instanceType": "m5.large",
                "instanceProfile": p["fakeProfileName"],
            }
        ],
    }
    for key, value in choices.items():
        if key == "nodePool":
            raw["nodePools"][0].update(value)
        else:
            raw[key] = value
    return raw


#: The CLI's own defaults, expressed as nodefleet choices: what a user who wants the CLI's result sets.
CLI_DEFAULT_CHOICES: dict[str, Any] = {
    "controllerAvailabilityPolicy": "SingleReplica",
    "infrastructureAvailabilityPolicy": "SingleReplica",
    "cleanupCloudResources": False,
    "nodePool": {"autoRepair": False},
}

CASES: dict[str, tuple[str, str, dict[str, Any]]] = {
    "minimal_flags_necessary_to_render": ("example", "us-east-1", {}),
    "default_creation_flags_for_cesar": (
        "cesar",
        "us-east-2",
        {
            "cleanupCloudResources": True,
            "annotations": {"hypershift.openshift.io/control-plane-operator-image": "fakeCPOImage"},
            "nodePool": {"autoRepair": True, "replicas": 2},
        },
    ),
    "minimal_with_KubeAPIServerDNSName": (
        "example",
        "us-east-1",
        {"kubeAPIServerDNSName": "test-dns-name.example.com"},
    ),
    "minimal_with_OVNKubernetesMTU": (
        "example",
        "us-east-1",
        {"operatorConfiguration": {"ovnKubernetes": {"mtu": 1400}}},
    ),
}

#: Differences that remain when the user makes the CLI's choices: (path, why). A value of the CLI's output
#: that nodefleet leaves out, or the other way round.
STRUCTURAL = {
    "spec.autoscaling": "empty object the CLI's Go types serialize ({}); nodefleet leaves it out (same meaning)",
    "spec.capabilities": "empty object ({}), as above; capabilities are immutable once set, so nodefleet sets none",
    "spec.sshKey": "empty reference ({}) when no SSH key is given; nodefleet leaves it out",
    "spec.platform.aws.multiArch": "deprecated (the operator no longer reads it); the CLI still renders false",
    "spec.configuration.proxy.trustedCA": "the CLI renders {name: ''} (Go zero value) without a proxy CA; nodefleet "
    "leaves it out (same meaning)",
    "spec.infrastructureAvailabilityPolicy": "the CLI leaves it out unless --infra-availability-policy is given "
    "(the API then defaults SingleReplica); nodefleet always states the policy",
    "metadata.annotations.nodefleet.io/cluster-release": "nodefleet's record of the release for the skew policies",
}
NODE_POOL_STRUCTURAL = {
    "spec.management.replace": "the CRD's default ({strategy: RollingUpdate, rollingUpdate: {maxSurge: 1, "
    "maxUnavailable: 0}}) spelled out, so the stored object equals the declared one (no perpetual diff)",
    "spec.platform.aws.rootVolume.encrypted": "nodefleet always encrypts root volumes; the CLI leaves it to the "
    "account's EBS default",
    "spec.release.image": "",  # filled per case: only where the CLI renders an empty image
    "metadata.annotations.nodefleet.io/cluster-release": "nodefleet's record of the release for the skew policies",
}


def _diff(cli: Any, ours: Any, path: str = "") -> dict[str, tuple[Any, Any]]:
    """Paths whose values differ, with (CLI, nodefleet); a missing key is ``...``."""
    if isinstance(cli, dict) and isinstance(ours, dict):
        out: dict[str, tuple[Any, Any]] = {}
        for key in sorted({*cli, *ours}):
            sub = f"{path}.{key}" if path else key
            one = cli.get(key, ours.get(key))
            if (key not in cli or key not in ours) and key in ("annotations", "labels") and one:
                # Annotations or labels only one side has: compare them entry by entry.
                out.update(_diff(cli.get(key, {}), ours.get(key, {}), sub))
            elif key not in cli or key not in ours:
                out[sub] = (cli.get(key, ...), ours.get(key, ...))
            else:
                out.update(_diff(cli[key], ours[key], sub))
        return out
    return {} if cli == ours else {path: (cli, ours)}


#: What each version of the CLI renders that nodefleet does not, or not any more: (oldest, newest, reason).
VERSION_STRUCTURAL = {
    "metadata.creationTimestamp": (
        "v0.1.40",
        "v0.1.70",
        "the CLI serialized the unset creation time as null (Go's zero metav1.Time); the API server sets it, "
        "nodefleet writes none, as v0.1.80's CLI",
    ),
}
#: Differences the newer CLIs have that older ones do not: (path, oldest version rendering it).
SINCE = {"spec.capabilities": "v0.1.70"}


def _version_structural(version: str, paths: Mapping[str, str]) -> set[str]:
    expected = {p for p in paths if p not in SINCE or _at_least(version, SINCE[p])}
    expected |= {
        path
        for path, (oldest, newest, _) in VERSION_STRUCTURAL.items()
        if _at_least(version, oldest) and _at_least(newest, version)
    }
    return expected


def _cli_choices(version: str) -> dict[str, Any]:
    """The CLI's choices of ``version``: v0.1.40 also published OVNSbDb, a no-op service a cluster it created
    holds for life (``spec.services`` is immutable), which nodefleet declares as ``legacyServices``."""
    choices = dict(CLI_DEFAULT_CHOICES)
    if not _at_least(version, "v0.1.60"):
        choices["legacyServices"] = [{"service": "OVNSbDb", "type": "Route"}]
    return choices


def _render(case: str, choices: Mapping[str, Any]) -> tuple[HostedCluster, dict[str, Any], dict[str, Any]]:
    name, region, case_choices = CASES[case]
    merged = dict(choices)
    for key, value in case_choices.items():
        merged[key] = {**merged.get(key, {}), **value} if key == "nodePool" else value
    hc = HostedCluster.model_validate(_stack(name, region, **merged))
    return hc, render_hosted_cluster(hc), render_hypershift_node_pool(hc, hc.node_pools[0])


#: The status the CLI's Go types serialize for an object that does not exist yet; nodefleet declares none.
EMPTY_STATUS = {
    "HostedCluster": {"controlPlaneEndpoint": {"host": "", "port": 0}},
    "NodePool": {"replicas": 0},
    "Namespace": {},
}


def _cli(case: str, version: str) -> dict[str, dict[str, Any]]:
    """The fixture of file case ``case`` at ``version``, placeholders filled, its empty status checked and gone."""
    _, region, _ = CASES[RENAMED.get(case, case)]
    docs = substitute(_fixture(case, version), _placeholders(region))
    for kind, status in EMPTY_STATUS.items():
        assert docs[kind].pop("status") == status
    return docs


def test_every_vendored_fixture_is_compared() -> None:
    """A fixture whose flags this file does not list would be left out of the comparison silently."""
    assert {version for version, _, _ in VERSIONED} == set(HYPERSHIFT_VERSIONS)
    assert {flags for _, _, flags in VERSIONED} == set(CASES)


@pytest.mark.parametrize(("version", "case", "flags"), VERSIONED, ids=IDS)
def test_hosted_cluster_matches_the_cli_when_the_user_makes_the_clis_choices(
    version: str, case: str, flags: str
) -> None:
    cli = _cli(case, version)["HostedCluster"]
    _, ours, _ = _render(flags, _cli_choices(version))
    expected = _version_structural(version, STRUCTURAL)
    if cli["spec"]["release"]["image"] == "":
        # Without --release-image the CLI renders an empty image (the operator's latest); nodefleet pins one.
        expected.add("spec.release.image")
    assert set(_diff(cli, ours)) == expected
    validate_manifest(ours)


@pytest.mark.parametrize(("version", "case", "flags"), VERSIONED, ids=IDS)
def test_node_pool_matches_the_cli_when_the_user_makes_the_clis_choices(
    version: str, case: str, flags: str
) -> None:
    cli = _cli(case, version)["NodePool"]
    _, _, ours = _render(flags, _cli_choices(version))
    expected = _version_structural(version, NODE_POOL_STRUCTURAL) - {"spec.release.image"}
    if cli["spec"]["release"]["image"] == "":
        expected.add("spec.release.image")
    assert set(_diff(cli, ours)) == expected
    validate_manifest(ours)


#: What nodefleet's own defaults change against the CLI's, each a production choice (docs/configuration.md,
#: "HostedCluster reference").
NODEFLEET_DEFAULTS = {
    "spec.controllerAvailabilityPolicy": ("SingleReplica", "HighlyAvailable"),
    "spec.infrastructureAvailabilityPolicy": (..., "HighlyAvailable"),
    "metadata.annotations.hypershift.openshift.io/cleanup-cloud-resources": (..., "true"),
}


@pytest.mark.parametrize(("version", "case"), MINIMAL, ids=[v for v, _ in MINIMAL])
def test_nodefleet_defaults_differ_from_the_cli_only_where_chosen(version: str, case: str) -> None:
    cli = _cli(case, version)
    flags = RENAMED.get(case, case)
    legacy = {key: v for key, v in _cli_choices(version).items() if key == "legacyServices"}
    _, ours, pool = _render(flags, legacy)
    _, ours_as_cli, pool_as_cli = _render(flags, _cli_choices(version))
    # What changes when the user keeps nodefleet's defaults instead of making the CLI's choices.
    as_cli = _diff(cli["HostedCluster"], ours_as_cli)
    chosen = {path: v for path, v in _diff(cli["HostedCluster"], ours).items() if as_cli.get(path) != v}
    assert chosen == NODEFLEET_DEFAULTS
    pool_as_cli_diff = _diff(cli["NodePool"], pool_as_cli)
    pool_chosen = {
        path: v for path, v in _diff(cli["NodePool"], pool).items() if pool_as_cli_diff.get(path) != v
    }
    assert pool_chosen == {"spec.management.autoRepair": (False, True)}


@pytest.mark.parametrize(("version", "case"), MINIMAL, ids=[v for v, _ in MINIMAL])
def test_namespace_and_pull_secret_labels_match_the_cli(version: str, case: str) -> None:
    cli = _cli(case, version)
    hc, _, _ = _render(RENAMED.get(case, case), {})
    namespace = render_namespace(hc)
    # The CLI's Go type adds empty spec and status; the object is the same.
    expected: dict[str, tuple[Any, Any]] = {"spec": ({}, ...)}
    if "metadata.creationTimestamp" in _version_structural(version, {}):
        expected["metadata.creationTimestamp"] = (None, ...)
    assert _diff(cli["Namespace"], namespace) == expected
    labels = secret_labels(hc, hc.pull_secret.delete_with_cluster)
    cli_labels = cli["Secret"]["metadata"]["labels"]
    # The CLI adds auto-created-for-infra to every object when it applies (not when it renders); on the
    # pull secret both labels together make the HostedCluster controller adopt it.
    assert labels == {**cli_labels, LABEL_AUTO_CREATED_FOR_INFRA: hc.infra_id}
    assert secret_labels(hc, False) == {}
