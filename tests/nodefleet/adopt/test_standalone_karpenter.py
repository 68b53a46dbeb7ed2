"""render(import(live)) == live for Karpenter on a standalone cluster: self-managed Karpenter booting through
nodefleet's S3 Ignition pointer (``karpenter:``) and Red Hat's karpenter-operator (``karpenterOperator:``).
The render of ``stacks/Pulumi.karpenter.yaml`` imports back to itself; the same objects as a user's install
wrote them (none of nodefleet's annotations, the installation's own ``default`` class, hand-varied fields)
round trip too; what the model cannot express is named, by object and field, and refused."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nodefleet.adopt.documents import AdoptError
from nodefleet.adopt.standalone_karpenter import KarpenterOptions
from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY
from tests.nodefleet.adopt.roundtrip import PROJECT, assert_round_trip, differences, imported, objects

STACK = PROJECT / "stacks" / "Pulumi.karpenter.yaml"
CATALOG = "catalogs/coreos-bootimages-5.0.yaml"
ROLE = "edge-m2x7c-karpenter-node"
#: What a user's install of self-managed Karpenter does not know: nodefleet's own record and GitOps annotations.
NOT_A_USERS = ("nodefleet.io/", "argocd.argoproj.io/", "kustomize.toolkit.fluxcd.io/")


def stack_fleet() -> dict[str, Any]:
    fleet: dict[str, Any] = yaml.safe_load(STACK.read_text(encoding="utf-8"))["config"][CONFIG_KEY]
    return fleet


def rendered(fleet: dict[str, Any]) -> list[dict[str, Any]]:
    return [copy.deepcopy(o.manifest) for o in fleet_plan(load_fleet(fleet, "karpenter", PROJECT)).emitted]


def cluster_version(release: str = "5.0.0-ec.2") -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "status": {"desired": {"version": release}},
    }


def infrastructure() -> dict[str, Any]:
    return {
        "apiVersion": "config.openshift.io/v1",
        "kind": "Infrastructure",
        "metadata": {"name": "cluster"},
        "status": {
            "infrastructureName": "edge-m2x7c",
            "apiServerInternalURI": "https://api-int.edge.example.com:6443",
        },
    }


def as_a_user_wrote_them(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Karpenter objects without anything nodefleet adds, as a team's own install has them."""
    out = copy.deepcopy(manifests)
    for m in out:
        notes = m["metadata"].get("annotations") or {}
        for key in [key for key in notes if key.startswith(NOT_A_USERS)]:
            del notes[key]
    return out


def karpenter_live(manifests: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in manifests if m["apiVersion"].startswith("karpenter.")]


def test_the_karpenter_stacks_render_imports_back_to_itself() -> None:
    fleet = stack_fleet()
    live = objects([*rendered(fleet), cluster_version()], source="karpenter")
    adoption = assert_round_trip(
        live, catalog=CATALOG, karpenter=KarpenterOptions(node_role=ROLE, cluster_domain="edge.example.com")
    )
    (cluster,) = adoption.clusters
    declared = fleet["clusters"][0]["karpenter"]
    block = cluster["karpenter"]
    assert cluster["name"] == "edge"
    for key in ("bucket", "nodeRole", "instanceProfile", "clusterDomain", "version", "featureGates"):
        assert block[key] == declared[key], key
    assert [
        (c["name"], c.get("architecture", "amd64"), c["configVersion"]) for c in block["nodeClasses"]
    ] == [(c["name"], c.get("architecture", "amd64"), c["configVersion"]) for c in declared["nodeClasses"]]
    assert [p["name"] for p in block["nodePools"]] == ["general", "arm"]
    assert block["nodePools"][1]["replicas"] == 3
    adopted = {a.obj.split(" (")[0] for a in adoption.report.adopted}
    assert {
        "EC2NodeClass general",
        "EC2NodeClass arm",
        "NodePool.karpenter.sh general",
        "NodePool.karpenter.sh arm",
    } <= adopted


def _varied() -> list[dict[str, Any]]:
    """A team's own self-managed Karpenter: its prefix, selectors and root volume, an extra requirement, pool
    annotations, and the `default` class (and a pool on it) its install keeps, none of nodefleet's records."""
    fleet = stack_fleet()
    k = fleet["clusters"][0]["karpenter"]
    k["prefix"] = "ignition/v1"
    k["nodeClasses"][0] |= {
        "subnetTags": {"network": "private"},
        "securityGroupTags": {"Name": "edge-karpenter"},
        "rootVolumeGiB": 200,
        "pool": "infra",
        "configVersion": "rendered-infra-0a1b2c3d",
    }
    k["nodePools"][0] |= {
        "annotations": {"team": "platform"},
        "requirements": [{"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]}],
        "labels": {"node-role.kubernetes.io/infra": ""},
    }
    fleet["clusters"][0]["pools"] = [{"name": "infra"}]
    manifests = as_a_user_wrote_them(rendered(fleet))
    default_class = copy.deepcopy(next(m for m in manifests if m["kind"] == "EC2NodeClass"))
    default_class["metadata"]["name"] = "default"
    return [*manifests, default_class, cluster_version(), infrastructure()]


def test_a_users_own_self_managed_karpenter_round_trips_with_what_it_needs_asked_for() -> None:
    live = objects(_varied(), source="edge")
    with pytest.raises(AdoptError, match=r"pass --karpenter-version x\.y"):
        imported(live, catalog=CATALOG, karpenter=KarpenterOptions(node_role=ROLE))
    with pytest.raises(AdoptError, match="pass --karpenter-node-role with the role of instance profile"):
        imported(live, catalog=CATALOG, karpenter=KarpenterOptions(version="1.15"))
    adoption = assert_round_trip(
        live, catalog=CATALOG, karpenter=KarpenterOptions(version="1.15", node_role=ROLE)
    )
    block = adoption.clusters[0]["karpenter"]
    assert block["prefix"] == "ignition/v1"
    assert block["clusterDomain"] == "edge.example.com"  # from the Infrastructure object
    assert block["nodeClasses"][0] == {
        "name": "general",
        "subnetTags": {"network": "private"},
        "securityGroupTags": {"Name": "edge-karpenter"},
        "rootVolumeGiB": 200,
        "pool": "infra",
        "configVersion": "rendered-infra-0a1b2c3d",
    }
    assert block["nodePools"][0]["annotations"] == {"team": "platform"}
    assert [c["name"] for c in block["nodeClasses"]] == ["general", "arm"]
    left = {a.obj.split(" (")[0]: a.why for a in adoption.report.left_alone}
    assert "keeps" in left["EC2NodeClass default"]


@pytest.mark.parametrize(
    ("path", "value", "difference"),
    [
        (
            ("spec", "metadataOptions", "httpPutResponseHopLimit"),
            2,
            "spec.metadataOptions: nodefleet would remove {'httpEndpoint': 'enabled', "
            "'httpProtocolIPv6': 'disabled', 'httpPutResponseHopLimit': 2, 'httpTokens': 'required'}",
        ),
        (("spec", "kubelet"), {"maxPods": 110}, "spec.kubelet: nodefleet would remove {'maxPods': 110}"),
        (("spec", "tags"), {"team": "a"}, "spec.tags: nodefleet would remove {'team': 'a'}"),
    ],
    ids=["metadata-options", "kubelet", "tags"],
)
def test_a_class_field_the_model_cannot_express_is_named_and_refuses(
    path: tuple[str, ...], value: Any, difference: str
) -> None:
    manifests = _varied()
    general = next(m for m in manifests if m["kind"] == "EC2NodeClass" and m["metadata"]["name"] == "general")
    node = general
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    adoption = imported(
        objects(manifests, source="edge"),
        catalog=CATALOG,
        karpenter=KarpenterOptions(version="1.15", node_role=ROLE),
    )
    assert adoption.refused
    assert differences(adoption) == [f"EC2NodeClass general (edge, document 4): {difference}"]


def test_a_user_data_of_its_own_is_refused_naming_the_class_and_field() -> None:
    manifests = _varied()
    general = next(m for m in manifests if m["kind"] == "EC2NodeClass" and m["metadata"]["name"] == "general")
    general["spec"]["userData"] = '{"ignition":{"version":"3.2.0"}}'
    with pytest.raises(AdoptError) as e:
        imported(objects(manifests, source="edge"), catalog=CATALOG, karpenter=KarpenterOptions("1.15", ROLE))
    assert str(e.value).startswith("EC2NodeClass general (edge, document 4): spec.userData is neither")
    assert "leaving it out would replace every node" in str(e.value)


# ---- Red Hat's karpenter-operator ------------------------------------------------------------------------------


def _operator_fleet() -> dict[str, Any]:
    fleet = stack_fleet()
    cluster = fleet["clusters"][0]
    del cluster["karpenter"]
    cluster["karpenterOperator"] = {
        "instanceProfile": "edge-m2x7c-karpenter-node",
        "nodeClasses": [
            {"name": "general", "tags": {"team": "a"}, "rootVolumeGiB": 200},
            {"name": "batch", "subnetTags": {"tier": "batch"}},
        ],
        "nodePools": [
            {"name": "general", "nodeClass": "general", "capacityTypes": ["on-demand", "spot"]},
            {"name": "batch", "nodeClass": "batch", "instanceCategories": ["c"]},
        ],
    }
    return fleet


def _operator_live() -> list[dict[str, Any]]:
    """The render as the running cluster holds it: the operator's userData, AMI and amiFamily in every class,
    its MachineConfigPool per class, its own `default` class; nothing of nodefleet's."""
    manifests = as_a_user_wrote_them(rendered(_operator_fleet()))
    pools = []
    for m in manifests:
        if m["kind"] == "EC2NodeClass":
            name = m["metadata"]["name"]
            m["spec"] |= {
                "amiFamily": "Custom",
                "amiSelectorTerms": [{"id": "ami-06a6b025350ff1e23"}],
                "userData": f'{{"ignition":{{"config":{{"merge":[{{"source":"https://api-int.edge.example.com:22623/config/karpenter-{name}"}}]}},"version":"3.2.0"}}}}',
            }
            pools.append(
                {
                    "apiVersion": "machineconfiguration.openshift.io/v1",
                    "kind": "MachineConfigPool",
                    "metadata": {"name": f"karpenter-{name}"},
                    "spec": {"machineConfigSelector": {"matchLabels": {"role": f"karpenter-{name}"}}},
                }
            )
    return [*manifests, *pools, cluster_version()]


def test_a_cluster_running_the_karpenter_operator_round_trips_leaving_it_its_fields_and_pools() -> None:
    adoption = assert_round_trip(objects(_operator_live(), source="edge"), catalog=CATALOG)
    (cluster,) = adoption.clusters
    assert "karpenter" not in cluster and "pools" not in cluster
    declared = _operator_fleet()["clusters"][0]["karpenterOperator"]
    block = cluster["karpenterOperator"]
    assert block["instanceProfile"] == declared["instanceProfile"]
    assert block["nodeClasses"] == declared["nodeClasses"]
    assert [p["name"] for p in block["nodePools"]] == ["general", "batch"]
    left = {a.obj.split(" (")[0]: a.why for a in adoption.report.left_alone}
    assert "karpenter-operator" in left["MachineConfigPool karpenter-general"]


def test_pointer_and_operator_classes_on_one_cluster_are_refused() -> None:
    manifests = _operator_live()
    pointer = next(m for m in _varied() if m["kind"] == "EC2NodeClass" and m["metadata"]["name"] == "arm")
    with pytest.raises(AdoptError, match="a cluster runs one of them"):
        imported(objects([*manifests, pointer], source="edge"), catalog=CATALOG)


def test_karpenter_objects_without_machine_sets_or_a_hosted_cluster_are_refused() -> None:
    live = objects(karpenter_live(rendered(stack_fleet())), source="edge")
    with pytest.raises(AdoptError, match="without a HostedCluster or MachineSets"):
        imported(live, catalog=CATALOG)
