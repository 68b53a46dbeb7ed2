"""What an import reads and what it refuses before modelling anything: one class of bad input per test, each a
message naming the object (or document) and what to do."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nodefleet.adopt.documents import AdoptError, check_objects, read_documents
from nodefleet.files import FileProblem
from tests.nodefleet.adopt.roundtrip import hypershift_fixture, imported, objects

RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"


def _cluster() -> list[dict[str, Any]]:
    return hypershift_fixture("default_creation_flags_for_cesar", release_image=RELEASE_IMAGE)


def _of(docs: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    return next(d for d in docs if d["kind"] == kind)


def test_a_list_is_unpacked_and_every_item_named_by_its_place() -> None:
    docs = _cluster()
    text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": docs[2:]})
    text += "---\n" + yaml.safe_dump(docs[0])
    found = read_documents(text, "dump.yaml")
    assert [o.kind for o in found] == ["HostedCluster", "NodePool", "Namespace"]
    assert found[1].source == "dump.yaml, document 1, items[1]"
    assert found[2].source == "dump.yaml, document 2"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("just a string\n", "document 1: not a Kubernetes object (a YAML str"),
        ("- a\n- b\n", "document 1: not a Kubernetes object (a YAML list"),
        (
            "name: x\nreplicas: 3\n",
            "document 1: not a Kubernetes object (no apiVersion, kind, metadata.name)",
        ),
        ("apiVersion: v1\nkind: ConfigMap\nmetadata: {}\n", "(no metadata.name)"),
        (
            "apiVersion: v1\nkind: List\nitems:\n- 3\n",
            "document 1, items[0]: not a Kubernetes object",
        ),
    ],
)
def test_a_document_that_is_not_a_kubernetes_object_is_refused(text: str, problem: str) -> None:
    with pytest.raises(AdoptError) as e:
        read_documents(text, "notes.yaml")
    assert str(e.value).startswith("notes.yaml, ")
    assert problem in str(e.value)
    assert "give only Kubernetes manifests" in str(e.value)


def test_yaml_that_does_not_parse_names_the_line() -> None:
    with pytest.raises(FileProblem, match=r"^broken.yaml: line 2"):
        read_documents("kind: x\n  - : [\n", "broken.yaml")


def test_an_object_being_deleted_is_refused() -> None:
    docs = _cluster()
    _of(docs, "NodePool")["metadata"]["deletionTimestamp"] = "2026-11-28T10:00:00Z"
    with pytest.raises(
        AdoptError, match=r"NodePool.hypershift.openshift.io clusters/cesar-us-east-2a .*is being deleted"
    ):
        check_objects(objects(docs))


def test_a_paused_hosted_cluster_is_refused() -> None:
    docs = _cluster()
    _of(docs, "HostedCluster")["spec"]["pausedUntil"] = "true"
    with pytest.raises(AdoptError, match=r"HostedCluster clusters/cesar .*is paused.*unpause it"):
        check_objects(objects(docs))


@pytest.mark.parametrize(
    ("kind", "api_version", "hint"),
    [
        ("NodePool", "hypershift.openshift.io/v1alpha1", "nodepools.v1beta1.hypershift.openshift.io"),
        (
            "HostedCluster",
            "hypershift.openshift.io/v1alpha1",
            "hostedclusters.v1beta1.hypershift.openshift.io",
        ),
    ],
)
def test_an_api_version_nodefleet_does_not_model_is_refused(kind: str, api_version: str, hint: str) -> None:
    docs = _cluster()
    _of(docs, kind)["apiVersion"] = api_version
    with pytest.raises(AdoptError) as e:
        check_objects(objects(docs))
    assert f"apiVersion {api_version} is not one nodefleet models" in str(e.value)
    assert hint in str(e.value)


def test_a_karpenter_v1beta1_node_pool_is_refused() -> None:
    pool = {
        "apiVersion": "karpenter.sh/v1beta1",
        "kind": "NodePool",
        "metadata": {"name": "default"},
        "spec": {"template": {"spec": {"nodeClassRef": {"name": "default"}}}},
    }
    with pytest.raises(AdoptError, match=r"NodePool.karpenter.sh default .*models karpenter.sh/v1\)"):
        check_objects(objects([pool]))


@pytest.mark.parametrize("platform", ["KubeVirt", "Agent"])
def test_a_node_pool_of_another_platform_is_refused(platform: str) -> None:
    docs = _cluster()
    _of(docs, "NodePool")["spec"]["platform"] = {"type": platform}
    with pytest.raises(AdoptError, match=f"a NodePool of platform {platform}; nodefleet declares AWS"):
        check_objects(objects(docs))


def test_one_hosted_cluster_name_in_two_namespaces_is_refused() -> None:
    docs = _cluster()
    other = copy.deepcopy(_of(docs, "HostedCluster"))
    other["metadata"]["namespace"] = "team-b"
    with pytest.raises(
        AdoptError, match=r"HostedCluster team-b/cesar .*same name in namespace clusters.*two stacks"
    ):
        check_objects(objects([*docs, other]))


def test_one_object_twice_is_kept_once_and_twice_differently_is_refused() -> None:
    docs = _cluster()
    assert len(check_objects(objects([*docs, copy.deepcopy(_of(docs, "NodePool"))]))) == len(docs)
    changed = copy.deepcopy(_of(docs, "NodePool"))
    changed["spec"]["replicas"] = 5
    with pytest.raises(AdoptError, match="with different content; give each object once"):
        check_objects(objects([*docs, changed]))


def test_a_node_pool_without_its_hosted_cluster_is_refused() -> None:
    docs = [d for d in _cluster() if d["kind"] != "HostedCluster"]
    with pytest.raises(
        AdoptError, match=r"belongs to HostedCluster clusters/cesar .*which the sources do not hold"
    ):
        imported(objects(docs))


def test_other_kinds_are_left_alone_and_said_so() -> None:
    docs = _cluster()
    docs.append(
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "x"}}
    )
    adoption = imported(objects(docs))
    assert any(
        a.obj.startswith("Deployment x/web") and "declares no Deployment" in a.why
        for a in adoption.report.left_alone
    )


def test_hosted_and_standalone_objects_need_two_stacks() -> None:
    from tests.nodefleet.adopt.roundtrip import data_objects

    with pytest.raises(AdoptError, match="import each into its own stack"):
        imported(
            [*objects(_cluster()), *data_objects("standalone-4.16.yaml")], catalog="catalogs/rhcos-4.16.json"
        )


def test_a_standalone_cluster_needs_its_catalog_and_machine_configuration() -> None:
    from tests.nodefleet.adopt.roundtrip import data_objects

    live = data_objects("standalone-4.16.yaml")
    with pytest.raises(AdoptError, match="pass --catalog"):
        imported(live)
    without = [o for o in live if o.kind != "MachineConfiguration"]
    with pytest.raises(AdoptError, match="no MachineConfiguration 'cluster'"):
        imported(without, catalog="catalogs/rhcos-4.16.json")
    without = [o for o in live if o.kind != "ClusterVersion"]
    with pytest.raises(AdoptError, match="pass --release"):
        imported(without, catalog="catalogs/rhcos-4.16.json")
    assert (
        imported(without, catalog="catalogs/rhcos-4.16.json", release="4.16.3").clusters[0]["release"]
        == "4.16.3"
    )
    with pytest.raises(AdoptError, match=r"contradicts status\.desired\.version 4\.16\.3"):
        imported(live, catalog="catalogs/rhcos-4.16.json", release="4.16.4")
