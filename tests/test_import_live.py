"""``import`` from a live API server (kube-apiserver and etcd with nodefleet's CRDs, tests/testcluster.py): objects
created on it are read back with the Kubernetes client, imported, rendered and compared field by field; the
render, server-side applied over them as a dry run with nodefleet's field manager and no forcing, conflicts
with nothing and changes no spec; a server that refuses or cannot be reached is one message, exit 2."""

from __future__ import annotations

import copy
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY
from tests.conftest import PROJECT, nodefleet
from tests.nodefleet.adopt.roundtrip import (
    HYPERSHIFT_VERSIONED_CASES,
    HYPERSHIFT_VERSIONED_IDS,
    assert_round_trip,
    autonode_cesar,
    hypershift_fixture,
)

pytestmark = pytest.mark.apiserver

EXAMPLE = PROJECT / "examples" / "import" / "prod-west.yaml"
#: What nodefleet adds to an object it declares, and nothing a controller reads (docs/operations.md).
BOOKKEEPING = ("nodefleet.io/", "argocd.argoproj.io/sync-options", "kustomize.toolkit.fluxcd.io/prune")


def _declared(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest as a user would create it: without what the API server and controllers wrote."""
    body = copy.deepcopy(manifest)
    body.pop("status", None)
    meta = body["metadata"]
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"):
        meta.pop(key, None)
    return body


def _create(dyn: Any, manifest: dict[str, Any]) -> None:
    api = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    dyn.create(api, body=_declared(manifest), namespace=manifest["metadata"].get("namespace"))


def _serve_standalone(dyn: Any, manifests: list[dict[str, Any]]) -> None:
    """A standalone cluster's objects on the test API server, in its `openshift-machine-api` namespace."""
    core = dyn.resources.get(api_version="v1", kind="Namespace")
    dyn.create(
        core, body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-machine-api"}}
    )
    for manifest in manifests:
        _create(dyn, manifest)


#: ``osimagestreams.machineconfiguration.openshift.io``, the cluster's default OS stream (5.0 and later). Neither
#: nodefleet nor its CRD sources ship this CRD: it is written here from the object's shape in openshift/enhancements
#: ``machine-config/os-images-streams.md`` (the cluster-scoped singleton ``cluster``, ``spec.defaultStream``,
#: ``status.availableStreams[].{name,osImage,osExtensionsImage}``), which is all the import reads of it.
OS_IMAGE_STREAM_CRD: dict[str, Any] = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "osimagestreams.machineconfiguration.openshift.io"},
    "spec": {
        "group": "machineconfiguration.openshift.io",
        "scope": "Cluster",
        "names": {
            "kind": "OSImageStream",
            "listKind": "OSImageStreamList",
            "plural": "osimagestreams",
            "singular": "osimagestream",
        },
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "properties": {
                            "spec": {"type": "object", "properties": {"defaultStream": {"type": "string"}}},
                            "status": {
                                "type": "object",
                                "properties": {
                                    "availableStreams": {
                                        "type": "array",
                                        "items": {
                                            "type": "object",
                                            "properties": {
                                                "name": {"type": "string"},
                                                "osImage": {"type": "string"},
                                                "osExtensionsImage": {"type": "string"},
                                            },
                                        },
                                    }
                                },
                            },
                        },
                    }
                },
            }
        ],
    },
}


def _sources() -> list[dict[str, Any]]:
    example = yaml.safe_load(EXAMPLE.read_text(encoding="utf-8"))["items"]
    cesar = hypershift_fixture("default_creation_flags_for_cesar")
    return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusters"}}, *example, *cesar[2:]]


def _without_bookkeeping(notes: dict[str, str] | None) -> dict[str, str]:
    return {k: v for k, v in (notes or {}).items() if not k.startswith(BOOKKEEPING)}


def _applies_as_no_change(
    raw: dict[str, Any], stack: str, client_for: Any, groups: tuple[str, ...] = ()
) -> int:
    """Server-side apply, as a dry run with nodefleet's field manager and without forcing, every object the stack
    renders over the live object of its name: no conflict, no change of spec or generation, labels or annotations
    beyond nodefleet's own. ``client_for(destination)`` is the dynamic client of an object's API server;
    ``groups``: only the objects of these API groups."""
    fleet = load_fleet(raw, stack, PROJECT, "written stack")
    applied = 0
    for o in fleet_plan(fleet).emitted:
        if groups and o.key.group not in groups:
            continue
        dyn = client_for(o.key.destination)
        manifest = o.manifest
        meta = manifest["metadata"]
        api = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
        before = dyn.get(api, name=meta["name"], namespace=meta.get("namespace")).to_dict()
        after = dyn.server_side_apply(
            api,
            body=manifest,
            name=meta["name"],
            namespace=meta.get("namespace"),
            field_manager="nodefleet",
            force_conflicts=False,
            dry_run="All",
        ).to_dict()
        shown = f"{manifest['kind']} {meta['name']}"
        assert after.get("spec") == before.get("spec"), shown
        assert after["metadata"].get("generation") == before["metadata"].get("generation"), shown
        assert (after["metadata"].get("labels") or {}) == (before["metadata"].get("labels") or {}), shown
        assert _without_bookkeeping(after["metadata"].get("annotations")) == _without_bookkeeping(
            before["metadata"].get("annotations")
        ), shown
        applied += 1
    return applied


def test_import_from_the_api_server_and_its_render_applies_as_no_change(
    test_clusters: Any, tmp_path: Path
) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    with test_clusters.fresh("adopt-live") as server:
        dyn = server.dynamic()
        for manifest in _sources():
            _create(dyn, manifest)
        result = nodefleet(
            "import",
            "--stack",
            "prod-west",
            "--stacks-dir",
            str(stacks),
            "--kubeconfig",
            str(server.kubeconfig),
            "--cluster",
            "prod-west",
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert (
            "adopted  HostedCluster clusters/prod-west (live hostedclusters.hypershift.openshift.io)"
            in result.stdout
        )
        assert "adopted  Namespace clusters (live namespaces.core)" in result.stdout
        assert "cesar" not in result.stdout  # --cluster: the other HostedCluster is not read
        raw = yaml.safe_load((stacks / "Pulumi.prod-west.yaml").read_text())["config"][CONFIG_KEY]
        applied = _applies_as_no_change(raw, "prod-west", lambda destination: dyn)
        assert applied == 4  # the Namespace, the HostedCluster, its two NodePools


def test_objects_as_the_api_server_stores_them_round_trip(test_clusters: Any) -> None:
    """Every source created, then read back as the API server returns it (defaults, managedFields, uids)."""
    from cli.adopt_live import LiveSource, read_live
    from nodefleet.adopt.documents import LiveObject

    with test_clusters.fresh("adopt-stored") as server:
        dyn = server.dynamic()
        for manifest in _sources():
            _create(dyn, manifest)
        source = LiveSource(server.api_client(), "test cluster")
        stored = read_live(source, namespace="clusters", cluster=None)
        assert sorted(o["kind"] for o in stored) == [
            "HostedCluster",
            "HostedCluster",
            "Namespace",
            "NodePool",
            "NodePool",
            "NodePool",
        ]
        assert all(o["metadata"].get("uid") and o["metadata"].get("managedFields") for o in stored)
        adoption = assert_round_trip([LiveObject(o, "stored") for o in stored])
        assert sorted(c["name"] for c in adoption.clusters) == ["cesar", "prod-west"]


def _service_account_token(server: Any, name: str) -> str:
    """A token of a ServiceAccount no role is bound to: authenticated, allowed nothing (TokenRequest API)."""
    from kubernetes import client

    core = client.CoreV1Api(server.api_client())
    core.create_namespaced_service_account("default", {"metadata": {"name": name}})
    request = core.create_namespaced_service_account_token(
        name, "default", {"spec": {"expirationSeconds": 600}}
    )
    return str(request.status.token)


def _kubeconfig(server: Any, path: Path, *, token: str | None = None, port: int | None = None) -> Path:
    document = yaml.safe_load(server.kubeconfig.read_text())
    if token is not None:
        document["users"][0]["user"]["token"] = token
    if port is not None:
        document["clusters"][0]["cluster"]["server"] = f"https://127.0.0.1:{port}"
    path.write_text(yaml.safe_dump(document))
    return path


def test_a_server_that_refuses_or_cannot_be_reached_is_one_message(
    test_clusters: Any, tmp_path: Path
) -> None:
    from tests.testcluster import free_port

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    server = test_clusters.cluster()
    stranger = _service_account_token(server, "adopt-stranger")
    for config, message in (
        (
            _kubeconfig(server, tmp_path / "no-rights", token=stranger),
            "forbidden to list hostedclusters.hypershift.openshift.io (HTTP 403); import needs `list` on "
            "`hostedclusters.hypershift.openshift.io`",
        ),
        (
            _kubeconfig(server, tmp_path / "bad-token", token="not-a-token"),
            "not authenticated to list hostedclusters.",
        ),
        (_kubeconfig(server, tmp_path / "closed-port", port=free_port()), "unreachable"),
    ):
        result = nodefleet("import", "--stack", "x", "--stacks-dir", str(stacks), "--kubeconfig", str(config))
        assert result.returncode == 2, result.stdout
        assert message in result.stderr
        assert "Traceback" not in result.stderr
        assert "not-a-token" not in result.stderr and stranger not in result.stderr
        assert list(stacks.iterdir()) == []


def test_a_standalone_cluster_from_the_api_server(test_clusters: Any, tmp_path: Path) -> None:
    """No HostedCluster served there: the MachineSets, pools and MachineConfiguration are read instead (this test
    API server serves no ClusterVersion, so the release is given)."""
    from tests.nodefleet.adopt.roundtrip import DATA

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    items = yaml.safe_load((DATA / "standalone-4.16.yaml").read_text())["items"]
    served = [i for i in items if i["kind"] not in ("ClusterVersion", "Infrastructure")]
    with test_clusters.fresh("adopt-standalone") as server:
        dyn = server.dynamic()
        _serve_standalone(dyn, served)
        args = [
            "import",
            "--stack",
            "shop",
            "--stacks-dir",
            str(stacks),
            "--kubeconfig",
            str(server.kubeconfig),
        ]
        args += ["--catalog", "catalogs/rhcos-4.16.json"]
        without_release = nodefleet(*args)
        assert without_release.returncode == 2
        assert "pass --release" in without_release.stderr
        result = nodefleet(*args, "--release", "4.16.3", "--adopt-defaults")
        assert result.returncode == 1, result.stdout + result.stderr
        assert (
            "adopted  MachineSet openshift-machine-api/shop-4kq8z-worker-us-east-1a (live machinesets."
            in result.stdout
        )
        assert "MANDATORY custom-pool-labeling  shop-4kq8z-infra-us-east-1a" in result.stdout


def test_a_standalone_cluster_running_self_managed_karpenter_from_the_api_server(
    test_clusters: Any, tmp_path: Path
) -> None:
    """A team's own self-managed Karpenter (S3-pointer classes, the installation's `default` class, none of
    nodefleet's annotations) beside the cluster's MachineSet: its NodePools and EC2NodeClasses are read too, and
    the render of the imported stack applies over them as no change. A class field the model cannot express
    refuses the import (exit 2) naming the object and field, and nothing is written."""
    from tests.nodefleet.adopt.test_standalone_karpenter import ROLE, _varied

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    served = [m for m in _varied() if m["kind"] not in ("ClusterVersion", "Infrastructure", "OSImageStream")]
    with test_clusters.fresh("adopt-karpenter", karpenter_set="aws/1.15") as server:
        dyn = server.dynamic()
        _serve_standalone(dyn, served)
        args = ["import", "--stacks-dir", str(stacks), "--kubeconfig", str(server.kubeconfig)]
        args += ["--catalog", "catalogs/coreos-bootimages-5.0.yaml", "--release", "5.0.0-ec.2"]
        args += ["--os-image-stream", "rhel-9"]  # this API server serves no OSImageStream
        args += ["--karpenter-version", "1.15", "--karpenter-node-role", ROLE]
        args += ["--cluster-domain", "edge.example.com"]
        result = nodefleet(*args, "--stack", "edge")
        assert result.returncode in (0, 1), result.stdout + result.stderr
        out = result.stdout
        assert "adopted  EC2NodeClass general (live ec2nodeclasses.karpenter.k8s.aws)" in out
        assert "adopted  NodePool.karpenter.sh arm (live nodepools.karpenter.sh)" in out
        assert "left     EC2NodeClass default (live ec2nodeclasses.karpenter.k8s.aws)" in out
        raw = yaml.safe_load((stacks / "Pulumi.edge.yaml").read_text())["config"][CONFIG_KEY]
        assert [c["name"] for c in raw["clusters"][0]["karpenter"]["nodeClasses"]] == ["arm", "general"]
        applied = _applies_as_no_change(
            raw, "edge", lambda destination: dyn, groups=("karpenter.sh", "karpenter.k8s.aws")
        )
        assert applied == 4  # two EC2NodeClasses, two NodePools

        api = dyn.resources.get(api_version="karpenter.k8s.aws/v1", kind="EC2NodeClass")
        dyn.patch(
            api,
            name="general",
            body={"spec": {"kubelet": {"maxPods": 110}}},
            content_type="application/merge-patch+json",
        )
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        args[args.index(str(stacks))] = str(elsewhere)
        refused = nodefleet(*args, "--stack", "edge")
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert (
            "EC2NodeClass general (live ec2nodeclasses.karpenter.k8s.aws): spec.kubelet: nodefleet would remove "
            "{'maxPods': 110}" in refused.stdout + refused.stderr
        )
        assert "Traceback" not in refused.stderr
        assert list(elsewhere.iterdir()) == []


def test_a_standalone_cluster_running_the_karpenter_operator_from_the_api_server(
    test_clusters: Any, tmp_path: Path
) -> None:
    """Red Hat's karpenter-operator (its EC2NodeClass CRD, its userData, AMI and amiFamily in every class, its
    `karpenter-<class>` MachineConfigPools and `default` class) on a 5.0 cluster upgraded from 4.x: read live,
    the classes and pools written to `karpenterOperator:`, the operator's pools left alone, the default OS stream
    read from the cluster's OSImageStream, and the render applies over the objects as no change."""
    from tests.nodefleet.adopt.test_standalone_karpenter import _operator_live
    from tests.testcluster import install_crd_documents

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    served = [m for m in _operator_live() if m["kind"] != "ClusterVersion"]
    assert [m["spec"] for m in served if m["kind"] == "OSImageStream"] == [{"defaultStream": "rhel-9"}]
    default_class = copy.deepcopy(next(m for m in served if m["kind"] == "EC2NodeClass"))
    default_class["metadata"]["name"] = "default"
    with test_clusters.fresh("adopt-karpenter-operator", karpenter_set="openshift/1.13") as server:
        install_crd_documents(server, [OS_IMAGE_STREAM_CRD])
        dyn = server.dynamic()
        _serve_standalone(dyn, [*served, default_class])
        result = nodefleet(
            "import",
            "--stack",
            "edge",
            "--stacks-dir",
            str(stacks),
            "--kubeconfig",
            str(server.kubeconfig),
            "--catalog",
            "catalogs/coreos-bootimages-5.0.yaml",
            "--release",
            "5.0.0-ec.2",
        )
        assert result.returncode in (0, 1), result.stdout + result.stderr
        out = result.stdout
        assert (
            "inferred nodefleet:fleet.clusters[0].osImageStream = rhel-9 (from OSImageStream cluster (live "
            "osimagestreams.machineconfiguration.openshift.io) spec.defaultStream)" in out
        )
        assert "adopted  EC2NodeClass batch (live ec2nodeclasses.karpenter.k8s.aws)" in out
        assert "left     MachineConfigPool karpenter-batch (live machineconfigpools." in out
        assert "left     EC2NodeClass default (live ec2nodeclasses.karpenter.k8s.aws)" in out
        raw = yaml.safe_load((stacks / "Pulumi.edge.yaml").read_text())["config"][CONFIG_KEY]
        cluster = raw["clusters"][0]
        assert "pools" not in cluster and "karpenter" not in cluster
        assert cluster["osImageStream"] == "rhel-9"
        assert [c["name"] for c in cluster["karpenterOperator"]["nodeClasses"]] == ["batch", "general"]
        applied = _applies_as_no_change(
            raw, "edge", lambda destination: dyn, groups=("karpenter.sh", "karpenter.k8s.aws")
        )
        assert applied == 4  # two EC2NodeClasses, two NodePools

        streams = dyn.resources.get(api_version="machineconfiguration.openshift.io/v1", kind="OSImageStream")
        dyn.delete(streams, name="cluster")
        elsewhere = tmp_path / "elsewhere"
        elsewhere.mkdir()
        args = [
            "import",
            "--stack",
            "edge",
            "--stacks-dir",
            str(elsewhere),
            "--kubeconfig",
            str(server.kubeconfig),
        ]
        args += ["--catalog", "catalogs/coreos-bootimages-5.0.yaml", "--release", "5.0.0-ec.2"]
        refused = nodefleet(*args)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert "the sources hold no OSImageStream 'cluster'" in refused.stderr
        assert "pass --os-image-stream rhel-9 or rhel-10" in refused.stderr
        assert "Traceback" not in refused.stderr
        assert list(elsewhere.iterdir()) == []

        # A 4.22 cluster with the TechPreview on serves the kind at v1alpha1 only: read there.
        _serve_os_image_stream_at_v1alpha1_only(server)
        alpha = dyn.resources.get(
            api_version="machineconfiguration.openshift.io/v1alpha1", kind="OSImageStream"
        )
        dyn.create(alpha, body={**_os_stream_object("rhel-9"), "apiVersion": alpha.group_version})
        again = nodefleet(*args)
        assert again.returncode in (0, 1), again.stdout + again.stderr
        assert "osImageStream = rhel-9 (from OSImageStream cluster (live " in again.stdout
        assert (
            yaml.safe_load((elsewhere / "Pulumi.edge.yaml").read_text())["config"][CONFIG_KEY]["clusters"][0][
                "osImageStream"
            ]
            == "rhel-9"
        )


def _os_stream_object(stream: str) -> dict[str, Any]:
    return {"kind": "OSImageStream", "metadata": {"name": "cluster"}, "spec": {"defaultStream": stream}}


def _serve_os_image_stream_at_v1alpha1_only(server: Any) -> None:
    """Replace the test CRD by one that serves only v1alpha1, as 4.22's TechPreview does."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from tests.testcluster import install_crd_documents

    api = client.ApiextensionsV1Api(server.api_client())
    name = OS_IMAGE_STREAM_CRD["metadata"]["name"]
    api.delete_custom_resource_definition(name)
    while True:  # gone once the API server has removed it (its objects first); the test's timeout bounds it
        try:
            api.read_custom_resource_definition(name, _preload_content=False)
        except ApiException as e:
            if e.status == 404:
                break
            raise
        time.sleep(0.1)
    alpha = copy.deepcopy(OS_IMAGE_STREAM_CRD)
    alpha["spec"]["versions"][0]["name"] = "v1alpha1"
    install_crd_documents(server, [alpha])


def test_an_autonode_cluster_read_from_its_management_and_hosted_api_servers(
    test_clusters: Any, tmp_path: Path
) -> None:
    """The HostedCluster on the management cluster, Karpenter's upstream example NodePools and a node class
    inside the hosted cluster (which serves HyperShift's Karpenter CRDs): imported from both servers, and the
    render applies over each side as no change."""
    from tests.nodefleet.adopt.roundtrip import DATA

    stacks = tmp_path / "stacks"
    stacks.mkdir()
    cesar = autonode_cesar()
    inside = [d for d in yaml.safe_load_all((DATA / "karpenter-upstream-nodepools.yaml").read_text()) if d]
    inside += [
        d
        for d in yaml.safe_load_all((DATA / "autonode-classes.yaml").read_text())
        if d and d["metadata"]["name"] == "batch"
    ]
    with (
        test_clusters.fresh("adopt-management") as management,
        test_clusters.fresh("adopt-hosted", karpenter_set="hypershift/1.13") as hosted,
    ):
        mgmt, guest = management.dynamic(), hosted.dynamic()
        for manifest in cesar:
            if manifest["kind"] != "Secret":
                _create(mgmt, manifest)
        for manifest in inside:
            _create(guest, manifest)
        result = nodefleet(
            "import",
            "--stack",
            "cesar",
            "--stacks-dir",
            str(stacks),
            "--kubeconfig",
            str(management.kubeconfig),
            "--cluster",
            "cesar",
            "--hosted-kubeconfig",
            str(hosted.kubeconfig),
        )
        assert result.returncode == 0, result.stdout + result.stderr
        assert "adopted  NodePool.karpenter.sh general-purpose (live nodepools.karpenter.sh)" in result.stdout
        raw = yaml.safe_load((stacks / "Pulumi.cesar.yaml").read_text())["config"][CONFIG_KEY]
        applied = _applies_as_no_change(
            raw, "cesar", lambda destination: mgmt if destination.startswith("management") else guest
        )
        assert applied == 7  # Namespace, HostedCluster, NodePool; a node class and three Karpenter NodePools


def _leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value that is not a non-empty map or list (``{}`` and ``[]`` are leaves)."""
    if isinstance(value, dict) and value:
        return [p for key, v in value.items() for p in _leaf_paths(v, (*path, key))]
    if isinstance(value, list) and value:
        return [p for i, v in enumerate(value) for p in _leaf_paths(v, (*path, i))]
    return [path]


def _holds(value: Any, path: tuple[Any, ...]) -> bool:
    for key in path:
        in_map = isinstance(value, dict) and key in value
        in_list = isinstance(value, list) and isinstance(key, int) and key < len(value)
        if not (in_map or in_list):
            return False
        value = value[key]
    return True


@pytest.fixture(scope="module")
def fixture_server(test_clusters: Any) -> Iterator[Any]:
    """One API server with every vendored HyperShift `--render` fixture (each HyperShift version's) created on it
    through nodefleet's shipped CRDs, each fixture in a namespace of its own (most share the name `example`)."""
    image = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"
    with test_clusters.fresh("adopt-fixtures") as server:
        dyn = server.dynamic()
        for i, (version, case) in enumerate(HYPERSHIFT_VERSIONED_CASES):
            for manifest in hypershift_fixture(case, release_image=image, version=version):
                if manifest["kind"] == "Secret":
                    continue
                if manifest["kind"] == "Namespace":
                    manifest["metadata"]["name"] = f"fixture-{i}"
                else:
                    manifest["metadata"]["namespace"] = f"fixture-{i}"
                _create(dyn, manifest)
        yield server


@pytest.mark.parametrize(("version", "case"), HYPERSHIFT_VERSIONED_CASES, ids=HYPERSHIFT_VERSIONED_IDS)
def test_hypershift_render_fixtures_created_on_the_api_server_round_trip(
    fixture_server: Any, version: str, case: str
) -> None:
    """HyperShift's `--render` fixtures of several module versions, created on the API server (the shipped CRDs
    accept them), read back one namespace at a time, imported and compared field by field."""
    from cli.adopt_live import LiveSource, read_live
    from nodefleet.adopt.documents import LiveObject

    namespace = f"fixture-{HYPERSHIFT_VERSIONED_CASES.index((version, case))}"
    source = LiveSource(fixture_server.api_client(), "test cluster")
    stored = read_live(source, namespace=namespace, cluster=None)
    assert sorted(o["kind"] for o in stored) == ["HostedCluster", "Namespace", "NodePool"]
    # The shipped CRDs know every field the fixture sets: the API server prunes a field its CRD lacks silently.
    image = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"
    for manifest in hypershift_fixture(case, release_image=image, version=version):
        if manifest["kind"] in ("HostedCluster", "NodePool"):
            (kept,) = [o for o in stored if o["kind"] == manifest["kind"]]
            pruned = [p for p in _leaf_paths(manifest["spec"]) if not _holds(kept["spec"], p)]
            assert pruned == [], f"{manifest['kind']}: the shipped CRD lacks {pruned}"
    adoption = assert_round_trip([LiveObject(o, f"{version} {case}") for o in stored])
    assert adoption.clusters[0]["namespace"] == namespace
    (hc,) = [o for o in stored if o["kind"] == "HostedCluster"]
    legacy = [s for s in hc["spec"]["services"] if s["service"] == "OVNSbDb"]
    assert bool(legacy) == (version == "v0.1.40")  # the no-op service older CLIs wrote, kept by the server
    assert adoption.clusters[0].get("legacyServices", []) == [
        {"service": s["service"], "type": s["servicePublishingStrategy"]["type"]} for s in legacy
    ]
