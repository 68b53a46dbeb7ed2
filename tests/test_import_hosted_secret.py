"""``import`` of an AutoNode hosted cluster from its management cluster alone: the Karpenter objects inside the
hosted cluster are reached through HyperShift's ``<name>-admin-kubeconfig`` Secret (two test API servers: the
management cluster, and the hosted cluster serving HyperShift's Karpenter CRDs). The Secret's content is never
printed, never written to the stack, and leaves no file behind; a Secret the user may not read is one message
naming the verb and the resource."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import nodefleet
from tests.nodefleet.adopt.roundtrip import DATA, autonode_cesar
from tests.testcluster import ApiServer, TestClusters

pytestmark = pytest.mark.apiserver


def _cesar_with_autonode() -> list[dict[str, Any]]:
    return [d for d in autonode_cesar() if d["kind"] != "Secret"]


def _inside() -> list[dict[str, Any]]:
    """Karpenter's upstream example NodePools and an AutoNode node class."""
    docs = [d for d in yaml.safe_load_all((DATA / "karpenter-upstream-nodepools.yaml").read_text()) if d]
    docs += [
        d
        for d in yaml.safe_load_all((DATA / "autonode-classes.yaml").read_text())
        if d and d["metadata"]["name"] == "batch"
    ]
    return docs


def _create(server: ApiServer, manifest: dict[str, Any]) -> None:
    dyn = server.dynamic()
    api = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    dyn.create(api, body=manifest, namespace=manifest["metadata"].get("namespace"))


@dataclass
class Fleet:
    management: ApiServer
    hosted: ApiServer
    #: the hosted cluster's admin kubeconfig, as HyperShift's Secret holds it
    secret_text: str


@pytest.fixture(scope="module")
def fleet(test_clusters: TestClusters) -> Iterator[Fleet]:
    with (
        test_clusters.fresh("adopt-secret-management") as management,
        test_clusters.fresh("adopt-secret-hosted", karpenter_set="hypershift/1.13") as hosted,
    ):
        for manifest in _cesar_with_autonode():
            _create(management, manifest)
        for manifest in _inside():
            _create(hosted, manifest)
        text = hosted.kubeconfig.read_text()
        _create(
            management,
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "cesar-admin-kubeconfig", "namespace": "clusters"},
                "data": {"kubeconfig": base64.b64encode(text.encode()).decode()},
            },
        )
        yield Fleet(management, hosted, text)


def _secrets_in(text: str) -> list[str]:
    """The credentials of a kubeconfig (tokens, keys, certificates): what must never appear anywhere."""
    document = yaml.safe_load(text)
    out = []
    for user in document.get("users") or []:
        for key, value in (user.get("user") or {}).items():
            if isinstance(value, str) and key in ("token", "client-key-data", "client-certificate-data"):
                out.append(value)
    return out


def test_the_karpenter_objects_are_read_through_hypershifts_admin_kubeconfig_secret(
    fleet: Fleet, tmp_path: Path
) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    scratch = tmp_path / "tmp"  # where the import's temporary files go: empty again afterwards
    scratch.mkdir()
    result = nodefleet("import", "--stack", "cesar", "--stacks-dir", str(stacks),
                       "--kubeconfig", str(fleet.management.kubeconfig), "--cluster", "cesar",
                       env={"TMPDIR": str(scratch)})  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "adopted  NodePool.karpenter.sh general-purpose (live nodepools.karpenter.sh)" in result.stdout
    assert "adopted  OpenshiftEC2NodeClass batch (live openshiftec2nodeclasses." in result.stdout
    stack = (stacks / "Pulumi.cesar.yaml").read_text()
    written = yaml.safe_load(stack)["config"]["nodefleet:fleet"]
    pools = {p["name"] for p in written["clusters"][0]["autoNode"]["nodePools"]}
    assert {"general-purpose"} <= pools
    credentials = _secrets_in(fleet.secret_text)
    assert credentials, "the test's kubeconfig carries a credential to look for"
    for value in credentials:
        assert value not in result.stdout and value not in result.stderr and value not in stack
    assert "nodefleet.io/hosted-cluster" not in stack  # the mark of where an object was read, not adopted
    assert list(scratch.iterdir()) == []
    assert sorted(p.name for p in stacks.iterdir()) == ["Pulumi.cesar.yaml"]


def test_a_new_management_clusters_entry_has_its_kubeconfig_path_and_hypershifts_releases(
    fleet: Fleet, tmp_path: Path
) -> None:
    """Read live, the registry entry gets the --kubeconfig path as given and the release lines of the HyperShift
    operator's supported-versions ConfigMap (as HyperShift writes it)."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    args = ["import", "--stack", "cesar", "--stacks-dir", str(stacks), "--cluster", "cesar",
            "--kubeconfig", str(fleet.management.kubeconfig), "--management-cluster", "mgmt-use2-a"]  # fmt: skip
    result = nodefleet(*args)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        "hypershift.supportedVersions not read (no ConfigMap hypershift/supported-versions" in result.stdout
    )
    entry = yaml.safe_load((stacks / "nodefleet-fleet.yaml").read_text())["managementClusters"]
    assert entry == [
        {"name": "mgmt-use2-a", "region": "us-east-2", "kubeconfig": str(fleet.management.kubeconfig)}
    ]
    _create(fleet.management, {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "hypershift"}})
    _create(
        fleet.management,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "supported-versions", "namespace": "hypershift"},
            "data": {
                "server-version": "a1b2c3d",
                "supported-versions": '{"versions":["4.22","4.21","4.20","4.19"]}',
            },
        },
    )
    result = nodefleet(*args, "--force")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "updated management cluster 'mgmt-use2-a'" in result.stdout
    (entry,) = yaml.safe_load((stacks / "nodefleet-fleet.yaml").read_text())["managementClusters"]
    assert entry["hypershift"] == {"supportedVersions": ["4.22", "4.21", "4.20", "4.19"]}


def _limited_kubeconfig(server: ApiServer, tmp_path: Path) -> Path:
    """A ServiceAccount that may read HostedClusters, NodePools and Namespaces, and no Secret."""
    from kubernetes import client

    api = server.api_client()
    core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
    core.create_namespaced_service_account("default", {"metadata": {"name": "adopt-reader"}})
    rbac.create_cluster_role({
        "metadata": {"name": "adopt-reader"},
        "rules": [
            {"apiGroups": ["hypershift.openshift.io"], "resources": ["hostedclusters", "nodepools"],
             "verbs": ["get", "list"]},
            {"apiGroups": [""], "resources": ["namespaces"], "verbs": ["get"]},
        ],
    })  # fmt: skip
    rbac.create_cluster_role_binding({
        "metadata": {"name": "adopt-reader"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "adopt-reader"},
        "subjects": [{"kind": "ServiceAccount", "name": "adopt-reader", "namespace": "default"}],
    })  # fmt: skip
    token = core.create_namespaced_service_account_token(
        "adopt-reader", "default", {"spec": {"expirationSeconds": 600}}
    ).status.token
    document = yaml.safe_load(server.kubeconfig.read_text())
    document["users"][0]["user"] = {"token": token}
    path = tmp_path / "reader.kubeconfig"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_secret_the_user_may_not_read_or_that_is_missing_is_one_message(
    fleet: Fleet, tmp_path: Path
) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    reader = _limited_kubeconfig(fleet.management, tmp_path)
    result = nodefleet("import", "--stack", "cesar", "--stacks-dir", str(stacks), "--kubeconfig", str(reader),
                       "--cluster", "cesar")  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "forbidden to get secrets (clusters/cesar-admin-kubeconfig) (HTTP 403); import needs `get` on `secrets`"
        in result.stderr
    )
    assert "Traceback" not in result.stderr
    assert list(stacks.iterdir()) == []
    # Without the Secret (a hosted cluster whose API server is not up yet): say so, and how to go on.
    dyn = fleet.management.dynamic()
    secrets = dyn.resources.get(api_version="v1", kind="Secret")
    dyn.delete(secrets, name="cesar-admin-kubeconfig", namespace="clusters")
    result = nodefleet("import", "--stack", "cesar", "--stacks-dir", str(stacks),
                       "--kubeconfig", str(fleet.management.kubeconfig), "--cluster", "cesar")  # fmt: skip
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "its admin kubeconfig Secret clusters/cesar-admin-kubeconfig (key kubeconfig) is not there"
        in result.stderr
    )
    assert "pass --hosted-kubeconfig" in result.stderr
    assert list(stacks.iterdir()) == []
