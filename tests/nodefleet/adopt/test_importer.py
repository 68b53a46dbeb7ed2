"""render(import(live)) == live on objects nobody here wrote: HyperShift's own `--render` fixtures, the
installer's MachineSets and OpenShift's documented ones, and nodefleet's own example stacks rendered and read
back. Each test lists every difference on failure."""

from __future__ import annotations

import hashlib

import pytest
import yaml

from nodefleet.adopt.documents import AdoptError
from nodefleet.adopt.importer import stack_text
from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY, StandaloneCluster
from tests.nodefleet.adopt.roundtrip import (
    FIXTURE_PREFIX,
    FIXTURES,
    HYPERSHIFT_VERSIONED_CASES,
    HYPERSHIFT_VERSIONED_IDS,
    HYPERSHIFT_VERSIONS,
    PROJECT,
    assert_round_trip,
    data_objects,
    differences,
    hypershift_fixture,
    hypershift_fixture_dir,
    imported,
    objects,
    os_image_stream,
)

RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"


@pytest.mark.parametrize(("version", "case"), HYPERSHIFT_VERSIONED_CASES, ids=HYPERSHIFT_VERSIONED_IDS)
def test_hypershift_render_output_round_trips(version: str, case: str) -> None:
    docs = hypershift_fixture(case, release_image=RELEASE_IMAGE, version=version)
    adoption = assert_round_trip(objects(docs))
    (cluster,) = adoption.clusters
    assert cluster["kind"] == "hosted"
    assert cluster["release"] == "4.22.3"
    # The pull secret is referenced by name; its data never reaches the stack.
    assert cluster["pullSecret"] == {"name": f"{cluster['name']}-pull-secret"}
    assert "ZmFrZQ" not in stack_text(adoption, ["x"])
    rendered_secret = any(d["kind"] == "Secret" for d in docs)  # with --render-sensitive only
    assert any("a Secret" in a.why for a in adoption.report.left_alone) == rendered_secret


@pytest.mark.parametrize("case", ["default_creation_flags_for_cesar", "minimal_flags_necessary_to_render"])
def test_the_no_op_service_an_older_cli_wrote_is_adopted_and_rendered_in_place(case: str) -> None:
    """v0.1.40's CLI published a fifth service, OVNSbDb, which the API keeps as a no-op; `spec.services` is
    immutable, so such a cluster holds it for life and the render must too (or the apply is refused)."""
    docs = hypershift_fixture(case, release_image=RELEASE_IMAGE, version="v0.1.40")
    adoption = assert_round_trip(objects(docs))
    assert adoption.clusters[0]["legacyServices"] == [{"service": "OVNSbDb", "type": "Route"}]
    newer = assert_round_trip(objects(hypershift_fixture(case, release_image=RELEASE_IMAGE)))
    assert "legacyServices" not in newer.clusters[0]


def test_a_no_op_service_in_a_shape_the_model_cannot_express_is_named_and_refuses() -> None:
    docs = hypershift_fixture("default_creation_flags_for_cesar", version="v0.1.40")
    for d in docs:
        if d["kind"] == "HostedCluster":
            d["spec"]["services"][4]["servicePublishingStrategy"]["route"] = {"hostname": "sbdb.example.com"}
    adoption = imported(objects(docs))
    assert adoption.refused
    assert differences(adoption) == [
        "HostedCluster clusters/cesar (test, document 3): spec.services[4]: nodefleet would remove {'service': "
        "'OVNSbDb', 'servicePublishingStrategy': {'type': 'Route', 'route': {'hostname': 'sbdb.example.com'}}}"
    ]
    assert "legacyServices" not in adoption.clusters[0]


def test_the_cli_choices_are_kept_not_replaced_by_nodefleets_defaults() -> None:
    adoption = assert_round_trip(objects(hypershift_fixture("default_creation_flags_for_cesar")))
    (cluster,) = adoption.clusters
    assert cluster["controllerAvailabilityPolicy"] == "SingleReplica"
    assert cluster["infrastructureAvailabilityPolicy"] == "SingleReplica"  # the API's default, stated
    assert cluster["nodePools"][0]["rootVolumeEncrypted"] is None  # as the CLI left it
    assert cluster["annotations"] == {"hypershift.openshift.io/control-plane-operator-image": "fakeCPOImage"}


def test_an_empty_release_image_is_refused_with_what_to_do() -> None:
    with pytest.raises(AdoptError, match=r"spec.release.image is empty.*--release-image"):
        imported(objects(hypershift_fixture("minimal_flags_necessary_to_render")))


def test_a_release_image_by_digest_needs_release() -> None:
    docs = hypershift_fixture("default_creation_flags_for_cesar")
    digest = "quay.io/openshift-release-dev/ocp-release@sha256:" + "0" * 64
    for d in docs:
        if d["kind"] in ("HostedCluster", "NodePool"):
            d["spec"]["release"]["image"] = digest
    with pytest.raises(AdoptError, match=r"pass --release X\.Y\.Z"):
        imported(objects(docs))
    adoption = assert_round_trip(objects(docs), release="4.22.3")
    assert adoption.clusters[0]["releaseImage"] == digest
    assert any(i.value == "4.22.3" and "--release" in i.why for i in adoption.report.inferred)


def test_a_field_the_model_cannot_express_is_named_and_refuses() -> None:
    docs = hypershift_fixture("default_creation_flags_for_cesar")
    for d in docs:
        if d["kind"] == "NodePool":
            d["spec"]["management"]["replace"] = {
                "strategy": "RollingUpdate",
                "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 1},
            }
    adoption = imported(objects(docs))
    assert adoption.refused
    assert differences(adoption) == [
        "NodePool.hypershift.openshift.io clusters/cesar-us-east-2a (test, document 4): "
        "spec.management.replace.rollingUpdate.maxSurge: live 3, nodefleet would write 1",
        "NodePool.hypershift.openshift.io clusters/cesar-us-east-2a (test, document 4): "
        "spec.management.replace.rollingUpdate.maxUnavailable: live 1, nodefleet would write 0",
    ]


INSTALLER_ACCEPTED = [
    # OpenShift's documented infra pool carries no `pools.operator…` label; nodefleet labels every pool it declares.
    "MachineConfigPool infra (standalone-4.16.yaml, document 1, items[3]): "
    "metadata.labels[\"pools.operator.machineconfiguration.openshift.io/infra\"]: nodefleet would add ''",
    # The documented infra MachineSet has no architecture annotation (the machine-api adds it on a live cluster).
    "MachineSet openshift-machine-api/shop-4kq8z-infra-us-east-1a (standalone-4.16.yaml, document 1, items[2]): "
    'metadata.annotations["capacity.cluster-autoscaler.kubernetes.io/labels"]: nodefleet would add '
    "'kubernetes.io/arch=amd64'",
    # A 4.16 MachineConfiguration states neither; nodefleet states both.
    "MachineConfiguration cluster (standalone-4.16.yaml, document 1, items[4]): spec.managedBootImages: nodefleet "
    "would add {'machineManagers': [{'resource': 'machinesets', 'apiGroup': 'machine.openshift.io', 'selection': "
    "{'mode': 'None'}}]}",
    "MachineConfiguration cluster (standalone-4.16.yaml, document 1, items[4]): spec.bootImageSkewEnforcement: "
    "nodefleet would add {'mode': 'Manual', 'manual': {'mode': 'RHCOSVersion', 'rhcosVersion': "
    "'416.94.202405291527-0'}}",
]


def test_installer_and_documented_machinesets_round_trip_with_only_additions() -> None:
    live = data_objects("standalone-4.16.yaml")
    adoption = assert_round_trip(live, accept=INSTALLER_ACCEPTED, catalog="catalogs/rhcos-4.16.json")
    assert adoption.refused  # additions are refused unless accepted
    assert not adoption.fidelity.changes
    (cluster,) = adoption.clusters
    assert cluster["name"] == "shop" and cluster["release"] == "4.16.3"
    names = [(m["name"], m["zone"], m["bootImage"]) for m in cluster["machineSets"]]
    assert names == [
        ("infra", "us-east-1a", "pinned"),
        ("worker", "us-east-1a", "pinned"),
        ("worker", "us-east-1b", "pinned"),
    ]
    infra = cluster["machineSets"][0]
    # As documented: gp2 without `encrypted`, one security group, the older subnet name, a custom tag, and the
    # worker's user data on an infra machine (custom-pool-labeling reports it; import does not fix it).
    assert infra["rootVolumeType"] == "gp2" and infra["rootVolumeEncrypted"] is None
    assert infra["securityGroups"] == [{"tags": {"Name": "shop-4kq8z-worker-sg"}}]
    assert infra["subnet"] == {"tags": {"Name": "shop-4kq8z-private-us-east-1a"}}
    assert infra["tags"] == {"Email": "admin-email@example.com"}
    assert infra["userDataSecret"] == "worker-user-data"
    accepted = imported(live, catalog="catalogs/rhcos-4.16.json", adopt_defaults=True)
    assert not accepted.refused


def test_an_ami_the_catalog_does_not_hold_is_a_change_unless_the_mco_owns_it() -> None:
    live = data_objects("standalone-4.16.yaml")
    for o in live:
        if o.kind == "MachineSet":
            o.manifest["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"]["id"] = (
                "ami-0123456789abcdef0"
            )
    pinned = imported(live, catalog="catalogs/rhcos-4.16.json", adopt_defaults=True)
    assert [d.path for d in pinned.fidelity.changes] == ["spec.template.spec.providerSpec.value.ami.id"] * 3
    for o in live:
        if o.kind == "MachineConfiguration":
            o.manifest["spec"]["managedBootImages"] = {
                "machineManagers": [
                    {
                        "resource": "machinesets",
                        "apiGroup": "machine.openshift.io",
                        "selection": {"mode": "All"},
                    }
                ]
            }
    managed = imported(live, catalog="catalogs/rhcos-4.16.json", adopt_defaults=True)
    assert not managed.fidelity.changes, differences(managed)
    assert {m["bootImage"] for m in managed.clusters[0]["machineSets"]} == {"managed"}
    assert managed.clusters[0]["skewEnforcement"] == {"mode": "Automatic"}


@pytest.mark.parametrize("stack", ["dev", "rhel10", "hosted"])
def test_nodefleets_own_render_imports_back_to_itself(stack: str) -> None:
    """A stack nodefleet rendered, imported again: the same objects, and nothing to accept."""
    text = (PROJECT / "stacks" / f"Pulumi.{stack}.yaml").read_text(encoding="utf-8")
    raw = yaml.safe_load(text)["config"][CONFIG_KEY]
    fleet = load_fleet(raw, stack, PROJECT)
    live = objects((o.manifest for o in fleet_plan(fleet).emitted), source=stack)
    streams = {}
    for cluster, declared in zip(raw["clusters"], fleet.config.clusters, strict=True):
        if isinstance(declared, StandaloneCluster):
            streams[declared.name] = declared.default_stream
            live += objects(_singletons(cluster, declared.default_stream), source=f"{stack} cluster")
    catalog = next((c.get("catalog") for c in raw["clusters"] if c.get("catalog")), None)
    adoption = assert_round_trip(live, catalog=catalog)
    assert {c["name"]: c["osImageStream"] for c in adoption.clusters if c["kind"] == "standalone"} == streams


def _singletons(cluster: dict[str, object], stream: str) -> list[dict[str, object]]:
    """Its ClusterVersion and its OSImageStream, which hold the release and the default OS stream it declares."""
    version = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "status": {"desired": {"version": cluster["release"]}},
    }
    return [version, os_image_stream(stream)]


def test_an_export_of_a_running_hosted_cluster_round_trips() -> None:
    """`oc get -o yaml` of a live management cluster: status, managedFields, finalizers and the values the API
    server filled in (``autoscaling: {scaling: ScaleUpAndScaleDown}`` for the CLI's ``autoscaling: {}``)."""
    from nodefleet.adopt.documents import read_documents

    text = (PROJECT / "examples" / "import" / "prod-west.yaml").read_text(encoding="utf-8")
    adoption = assert_round_trip(read_documents(text, "prod-west.yaml"))
    (cluster,) = adoption.clusters
    assert cluster["releaseImage"] == "quay.io/openshift-release-dev/ocp-release:4.21.4-x86_64"
    assert cluster["createNamespace"] is False
    assert [p["name"] for p in cluster["nodePools"]] == ["us-west-2a", "infra"]
    assert cluster["nodePools"][1]["autoScaling"] == {"min": 2, "max": 6}


def test_legacy_ec2_node_classes_round_trip_whatever_hypershift_wrote_into_them() -> None:
    """Older HyperShift: EC2NodeClasses nodefleet declares once and HyperShift rewrites (userData, AMI)."""
    raw = yaml.safe_load((PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text(encoding="utf-8"))
    fleet_raw = raw["config"][CONFIG_KEY]
    fleet_raw["clusters"][0]["autoNode"]["mode"] = "legacy"
    fleet = load_fleet(fleet_raw, "hosted", PROJECT)
    manifests = [o.manifest for o in fleet_plan(fleet).emitted]
    for m in manifests:
        if m["kind"] == "EC2NodeClass":
            m["spec"]["userData"] = "ignition stub with a rotating token"
            m["spec"]["amiSelectorTerms"] = [{"id": "ami-0fedcba9876543210"}]
    adoption = assert_round_trip(objects(manifests, source="hosted"))
    assert adoption.clusters[0]["autoNode"]["mode"] == "legacy"


def test_the_stack_file_lists_what_adopt_defaults_accepted() -> None:
    adoption = imported(
        data_objects("standalone-4.16.yaml"), catalog="catalogs/rhcos-4.16.json", adopt_defaults=True
    )
    header = [line for line in stack_text(adoption, ["s.yaml"]).splitlines() if line.startswith("#")]
    assert header[1].endswith("except what --adopt-defaults accepted; applying it adds:")
    assert header[2:] == [f"#   {line}" for line in INSTALLER_ACCEPTED]


def test_an_object_the_sources_do_not_hold_is_never_accepted_as_a_default() -> None:
    live = [o for o in data_objects("standalone-4.16.yaml") if o.kind != "MachineConfigPool"]
    adoption = imported(live, catalog="catalogs/rhcos-4.16.json", adopt_defaults=True)
    assert adoption.refused
    assert [d.describe() for d in adoption.fidelity.changes] == [
        "MachineConfigPool infra (machineconfiguration.openshift.io) on cluster shop: nodefleet would declare it and the sources hold no such object; "
        "add it to the sources if it exists, or create it first"
    ]


def test_a_machine_set_as_the_documentation_showed_it_before_4_5_round_trips() -> None:
    """The older providerSpec apiVersion, gp2, one security group; enrolled in boot image management (mode All),
    so its AMI, which no current catalog holds, is the MCO's to move."""
    adoption = assert_round_trip(
        data_objects("machineset-docs-4.4.yaml"),
        catalog="catalogs/rhcos-4.16.json",
        accept=[
            "MachineSet openshift-machine-api/shop-4kq8z-worker-us-east-1a (machineset-docs-4.4.yaml, document 1): "
            'metadata.annotations["capacity.cluster-autoscaler.kubernetes.io/labels"]: nodefleet would add '
            "'kubernetes.io/arch=amd64'"
        ],
    )
    (ms,) = adoption.clusters[0]["machineSets"]
    assert ms["providerApiVersion"] == "awsproviderconfig.openshift.io/v1beta1"
    assert ms["bootImage"] == "managed" and ms["labels"] == {"node-role.kubernetes.io/worker": ""}
    assert adoption.clusters[0]["skewEnforcement"] == {"mode": "Automatic"}


def test_every_vendored_hypershift_fixture_is_recorded_with_its_hash() -> None:
    """tests/fixtures/SOURCES.md names each vendored `--render` fixture's module version and SHA-256: a file
    changed or added without its provenance fails here."""
    sources = (FIXTURES / "SOURCES.md").read_text(encoding="utf-8")
    assert {v for v, _ in HYPERSHIFT_VERSIONED_CASES} == set(HYPERSHIFT_VERSIONS)
    for version, case in HYPERSHIFT_VERSIONED_CASES:
        path = hypershift_fixture_dir(version) / f"{FIXTURE_PREFIX}{case}.yaml"
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        assert f"| `{path.relative_to(FIXTURES)}` | `{digest}` |" in sources, path.name
        assert f"`github.com/openshift/hypershift@{version}`" in sources, version
