"""``python -m nodefleet import`` as a user runs it: exit 0 written, 1 written with the live cluster's policy
violations reported, 2 refused with nothing written, one message per problem and never a traceback. Every
stack file goes to the test's own folder (``--stacks-dir``)."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import nodefleet
from tests.nodefleet.adopt.roundtrip import DATA, hypershift_fixture, with_autonode

RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"
STANDALONE = str(DATA / "standalone-4.16.yaml")


def _hosted(tmp_path: Path, edit: Any = None, name: str = "mgmt.yaml") -> Path:
    docs = hypershift_fixture("default_creation_flags_for_cesar", release_image=RELEASE_IMAGE)
    if edit is not None:
        docs = edit(docs)
    path = tmp_path / name
    path.write_text(yaml.safe_dump_all(docs))
    return path


def _import(stacks: Path, *args: str, stdin: str | None = None) -> Any:
    import subprocess
    import sys

    from tests.conftest import PROJECT

    if stdin is None:
        return nodefleet("import", "--stacks-dir", str(stacks), *args)
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", "import", "--stacks-dir", str(stacks), *args],
        cwd=PROJECT,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    folder = tmp_path / "stacks"
    folder.mkdir()
    return folder


def test_a_hosted_cluster_is_written_and_checked(tmp_path: Path, stacks: Path) -> None:
    result = _import(stacks, "--stack", "cesar", "--from-file", str(_hosted(tmp_path)))
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "adopted  HostedCluster clusters/cesar" in out
    assert "left     Secret clusters/cesar-pull-secret" in out
    assert f"wrote {stacks / 'Pulumi.cesar.yaml'}" in out
    assert "nodefleet check: stack 'cesar'" in out
    written = yaml.safe_load((stacks / "Pulumi.cesar.yaml").read_text())
    (cluster,) = written["config"]["nodefleet:fleet"]["clusters"]
    assert cluster["name"] == "cesar" and cluster["pullSecret"] == {"name": "cesar-pull-secret"}
    assert "ZmFrZQ" not in (stacks / "Pulumi.cesar.yaml").read_text()  # the Secret's data


def test_a_cluster_an_older_cli_created_keeps_its_no_op_service(tmp_path: Path, stacks: Path) -> None:
    """HyperShift v0.1.40's `--render` output publishes OVNSbDb, a no-op the API keeps; `spec.services` is
    immutable, so the stack states it (`legacyServices`) and its render keeps it; one in a shape the model
    cannot express (a route hostname) is refused, naming the object and the list item, and nothing is written."""
    path = tmp_path / "v0.1.40.yaml"
    docs = hypershift_fixture("default_creation_flags_for_cesar", version="v0.1.40")
    path.write_text(yaml.safe_dump_all(docs))
    result = _import(stacks, "--stack", "cesar", "--from-file", str(path))
    assert result.returncode == 0, result.stderr
    written = yaml.safe_load((stacks / "Pulumi.cesar.yaml").read_text())
    (cluster,) = written["config"]["nodefleet:fleet"]["clusters"]
    assert cluster["legacyServices"] == [{"service": "OVNSbDb", "type": "Route"}]

    for d in docs:
        if d["kind"] == "HostedCluster":
            d["spec"]["services"][4]["servicePublishingStrategy"]["route"] = {"hostname": "sbdb.example.com"}
    path.write_text(yaml.safe_dump_all(docs))
    other = tmp_path / "other"
    other.mkdir()
    result = _import(other, "--stack", "cesar", "--from-file", str(path))
    assert result.returncode == 2, result.stdout
    assert (
        f"HostedCluster clusters/cesar ({path}, document 3): spec.services[4]: nodefleet would remove "
        "{'service': 'OVNSbDb', 'servicePublishingStrategy': {'route': {'hostname': 'sbdb.example.com'}"
    ) in result.stderr
    assert result.stderr.rstrip().endswith(
        "error: refused, nothing written: 1 field(s) nodefleet would change "
        "or remove: the stack cannot express them yet; make the live objects "
        "expressible (or leave those objects out of the sources)"
    )
    assert "Traceback" not in result.stderr
    assert list(other.iterdir()) == []


def test_standard_input_is_a_source(tmp_path: Path, stacks: Path) -> None:
    text = _hosted(tmp_path).read_text()
    result = _import(stacks, "--stack", "cesar", "--from-file", "-", stdin=text)
    assert result.returncode == 0, result.stderr
    assert "(standard input, document 3)" in result.stdout


def test_a_live_cluster_that_breaks_a_policy_is_imported_and_reported(stacks: Path) -> None:
    args = ("--stack", "shop", "--from-file", STANDALONE, "--catalog", "catalogs/rhcos-4.16.json")
    refused = _import(stacks, *args)
    assert refused.returncode == 2
    assert not (stacks / "Pulumi.shop.yaml").exists()
    assert "pass --adopt-defaults to accept them" in refused.stderr
    assert "Traceback" not in refused.stderr
    result = _import(stacks, *args, "--adopt-defaults")
    assert result.returncode == 1, result.stdout + result.stderr
    assert "accepted (--adopt-defaults): nodefleet will add" in result.stdout
    assert "MANDATORY custom-pool-labeling  shop-4kq8z-infra-us-east-1a" in result.stdout
    assert (stacks / "Pulumi.shop.yaml").exists()


def test_an_existing_stack_file_is_never_overwritten_without_force(tmp_path: Path, stacks: Path) -> None:
    target = stacks / "Pulumi.cesar.yaml"
    target.write_text("# mine\n")
    source = str(_hosted(tmp_path))
    result = _import(stacks, "--stack", "cesar", "--from-file", source)
    assert result.returncode == 2
    assert "a stack file of that name exists" in result.stderr and "--force" in result.stderr
    assert target.read_text() == "# mine\n"
    forced = _import(stacks, "--stack", "cesar", "--from-file", source, "--force")
    assert forced.returncode == 0, forced.stderr
    assert target.read_text().startswith("# Written by `nodefleet import`")


def test_a_cluster_another_stack_declares_is_refused(tmp_path: Path, stacks: Path) -> None:
    source = str(_hosted(tmp_path))
    assert _import(stacks, "--stack", "cesar", "--from-file", source).returncode == 0
    again = _import(stacks, "--stack", "cesar-again", "--from-file", source)
    assert again.returncode == 2
    assert "already declared by stack 'cesar'" in again.stderr
    assert not (stacks / "Pulumi.cesar-again.yaml").exists()


def _set(kind: str, path: str, value: Any) -> Any:
    def edit(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        for d in docs:
            if d["kind"] == kind:
                node = d
                *parents, last = path.split(".")
                for key in parents:
                    node = node.setdefault(key, {})
                node[last] = value
        return docs

    return edit


def _twice_in_two_namespaces(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    other = copy.deepcopy(next(d for d in docs if d["kind"] == "HostedCluster"))
    other["metadata"]["namespace"] = "team-b"
    return [*docs, other]


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (
            _set("NodePool", "metadata.deletionTimestamp", "2026-11-28T10:00:00Z"),
            "NodePool.hypershift.openshift.io clusters/cesar-us-east-2a (",
        ),
        (_set("HostedCluster", "spec.pausedUntil", "true"), "is paused (spec.pausedUntil: true)"),
        (
            _set("HostedCluster", "apiVersion", "hypershift.openshift.io/v1alpha1"),
            "apiVersion hypershift.openshift.io/v1alpha1 is not one nodefleet models",
        ),
        (_set("NodePool", "spec.platform", {"type": "KubeVirt"}), "a NodePool of platform KubeVirt"),
        (_set("NodePool", "spec.platform", {"type": "Agent"}), "a NodePool of platform Agent"),
        (_twice_in_two_namespaces, "has the same name in namespace clusters"),
        (lambda docs: [*docs, ["not", "an", "object"]], "not a Kubernetes object (a YAML list"),
    ],
    ids=["deleting", "paused", "api-version", "kubevirt", "agent", "two-namespaces", "not-kubernetes"],
)
def test_bad_input_is_one_message_and_nothing_written(
    tmp_path: Path, stacks: Path, edit: Any, message: str
) -> None:
    result = _import(stacks, "--stack", "cesar", "--from-file", str(_hosted(tmp_path, edit)))
    assert result.returncode == 2, result.stdout
    assert message in result.stderr
    assert result.stderr.rstrip().endswith("error: nothing was written"), result.stderr
    assert "Traceback" not in result.stderr
    assert list(stacks.iterdir()) == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--from-file", "missing.yaml"], "missing.yaml"),
        (["--from-file", "-", "--from-file", "-"], "standard input can be read once"),
        (["--stack", "bad/name"], "--stack: stack name 'bad/name' cannot name a folder"),
    ],
)
def test_bad_options_are_refused(stacks: Path, args: list[str], message: str) -> None:
    full = ["--stack", "x", *args] if "--stack" not in args else [*args, "--from-file", "missing.yaml"]
    result = _import(stacks, *full)
    assert result.returncode == 2
    assert message in result.stderr
    assert "Traceback" not in result.stderr
    assert list(stacks.iterdir()) == []


def test_a_binary_file_is_refused(tmp_path: Path, stacks: Path) -> None:
    blob = tmp_path / "dump.yaml.gz"
    blob.write_bytes(b"\x1f\x8b\x08\x00binary")
    result = _import(stacks, "--stack", "x", "--from-file", str(blob))
    assert result.returncode == 2
    assert "gzip-compressed" in result.stderr


def test_one_stack_per_cluster(tmp_path: Path, stacks: Path) -> None:
    from tests.conftest import PROJECT

    example = str(PROJECT / "examples" / "import" / "prod-west.yaml")
    result = _import(
        stacks, "--stack", "team-{cluster}", "--from-file", str(_hosted(tmp_path)), "--from-file", example
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in stacks.iterdir()) == [
        "Pulumi.team-cesar.yaml",
        "Pulumi.team-prod-west.yaml",
    ]
    # Each stack names the sources its own objects came from, not every file given: cesar's are all in mgmt.yaml;
    # prod-west's HostedCluster and NodePools are in prod-west.yaml, and the Namespace both declare in mgmt.yaml.
    for name, sources in (("cesar", "mgmt.yaml"), ("prod-west", "mgmt.yaml, prod-west.yaml")):
        text = (stacks / f"Pulumi.team-{name}.yaml").read_text()
        written = yaml.safe_load(text)
        assert [c["name"] for c in written["config"]["nodefleet:fleet"]["clusters"]] == [name]
        assert text.splitlines()[0] == f"# Written by `nodefleet import` from {sources}."
    assert "2 stacks in" in result.stdout and "fleet exit 0" in result.stdout
    again = _import(stacks, "--stack", "team-{cluster}", "--from-file", example)
    assert again.returncode == 2
    assert "Pulumi.team-prod-west.yaml: a stack file of that name exists" in again.stderr


def test_the_hosted_clusters_of_a_management_cluster_as_one_stack_each_beside_the_folders_others(
    tmp_path: Path, stacks: Path
) -> None:
    """``--stack {cluster}`` into a folder that already holds a stack: a stack per hosted cluster and the registry's
    entry for their management cluster, checked as ``fleet check`` checks them (the new stacks judged once against
    the folder's others); the folder then passes ``fleet check`` whole. A cluster whose ``infraId`` a stack of the
    folder already declares is refused, and nothing is written."""
    import shutil

    from bench.adopt import write_fleet
    from tests.conftest import PROJECT

    shutil.copy(PROJECT / "stacks" / "Pulumi.dev.yaml", stacks)
    sources = tmp_path / "sources"
    sources.mkdir()
    files = write_fleet(4, sources)
    args = ["--stack", "{cluster}", "--management-cluster", "mgmt-east"]
    result = _import(stacks, *args, *(a for f in files[:3] for a in ("--from-file", str(f))))
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in stacks.iterdir()) == [
        "Pulumi.c000.yaml",
        "Pulumi.c001.yaml",
        "Pulumi.c002.yaml",
        "Pulumi.dev.yaml",
        "nodefleet-fleet.yaml",
    ]
    registry = yaml.safe_load((stacks / "nodefleet-fleet.yaml").read_text())
    assert registry["managementClusters"] == [{"name": "mgmt-east", "region": "us-east-2"}]
    for name in ("c000", "c001", "c002"):
        written = yaml.safe_load((stacks / f"Pulumi.{name}.yaml").read_text())["config"]["nodefleet:fleet"]
        assert [(c["name"], c["managementCluster"]) for c in written["clusters"]] == [(name, "mgmt-east")]
    assert "3 stacks in" in result.stdout and "fleet exit 0" in result.stdout
    whole = nodefleet("fleet", "check", "--stacks-dir", str(stacks))
    assert whole.returncode == 0, whole.stdout + whole.stderr
    assert "4 stacks in" in whole.stdout

    # The fourth cluster, with the first one's infraId: refused, nothing written.
    clash = files[3]
    clash.write_text(clash.read_text().replace("c003-00003", "c000-00000"))
    before = {p.name: p.read_bytes() for p in stacks.iterdir()}
    refused = _import(stacks, *args, "--from-file", str(clash))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "cluster 'c003' is already declared by stack 'c000'" in refused.stderr
    assert {p.name: p.read_bytes() for p in stacks.iterdir()} == before
    # A stack of the folder checked alone (`fleet check --stacks`) is judged against the others it was not
    # chosen with: a hand-made copy of c002 under another name keeps c002's infraId.
    copy_ = yaml.safe_load((stacks / "Pulumi.c002.yaml").read_text())
    fleet = copy_["config"]["nodefleet:fleet"]
    fleet.pop("output", None)
    fleet["clusters"][0]["name"] = "c009"
    (stacks / "Pulumi.c009.yaml").write_text(yaml.safe_dump(copy_))
    alone = nodefleet("fleet", "check", "--stacks-dir", str(stacks), "--stacks", "c009")
    assert alone.returncode == 2, alone.stdout + alone.stderr
    assert (
        "nodefleet:fleet.clusters[0].infraId: 'c002-00002' is also the infraId of "
        f"{stacks / 'Pulumi.c009.yaml'}" in alone.stderr
    ), alone.stderr


def test_an_autonode_cluster_with_pools_on_hypershifts_default_class_is_written_and_checked(
    tmp_path: Path, stacks: Path
) -> None:
    def autonode(docs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        return with_autonode(docs, "arn:aws:iam::123456789012:role/k")

    inside = str(DATA / "karpenter-upstream-nodepools.yaml")
    result = _import(
        stacks, "--stack", "cesar", "--from-file", str(_hosted(tmp_path, autonode)), "--from-file", inside
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "nodefleet check: stack 'cesar'" in result.stdout
    written = yaml.safe_load((stacks / "Pulumi.cesar.yaml").read_text())["config"]["nodefleet:fleet"]
    assert {p["nodeClass"] for p in written["clusters"][0]["autoNode"]["nodePools"]} == {"default"}


def test_a_standalone_cluster_running_self_managed_karpenter_is_written_and_checked(
    tmp_path: Path, stacks: Path
) -> None:
    """Its classes and pools go to the `karpenter:` block; the MCS CA, which no object holds, is the step left."""
    from tests.nodefleet.adopt.test_standalone_karpenter import ROLE, _varied

    source = tmp_path / "edge.yaml"
    source.write_text(yaml.safe_dump_all(_varied()))
    args = ["--stack", "edge", "--from-file", str(source), "--catalog", "catalogs/coreos-bootimages-5.0.yaml"]
    unsaid = _import(stacks, *args, "--karpenter-version", "1.15")
    assert unsaid.returncode == 2, unsaid.stdout + unsaid.stderr
    assert "pass --karpenter-node-role with the role of instance profile edge-m2x7c-karpenter-node" in (
        unsaid.stderr
    )
    assert "Traceback" not in unsaid.stderr
    assert list(stacks.iterdir()) == []
    result = _import(stacks, *args, "--karpenter-version", "1.15", "--karpenter-node-role", ROLE)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert "adopted  EC2NodeClass general" in out
    assert "left     EC2NodeClass default" in out
    assert "next     set nodefleet:mcsCaBundle, the MCS CA bundle of cluster edge" in out
    assert "nodefleet check: stack 'edge'" in out
    raw = yaml.safe_load((stacks / "Pulumi.edge.yaml").read_text())["config"]
    assert "nodefleet:mcsCaBundle" not in raw  # never invented: the user sets it
    block = raw["nodefleet:fleet"]["clusters"][0]["karpenter"]
    assert (block["bucket"], block["prefix"], block["nodeRole"]) == (
        "edge-m2x7c-ignition",
        "ignition/v1",
        ROLE,
    )


def test_a_5_0_cluster_is_judged_by_the_os_stream_its_osimagestream_holds(
    tmp_path: Path, stacks: Path
) -> None:
    """stacks/Pulumi.dev.yaml's cluster as it runs: 5.0, upgraded from 4.22, so its default OS stream is still
    rhel-9, and its MachineSets boot rhel-9 AMIs. Without its OSImageStream nothing says so: refused, nothing
    written. With it, the stack says rhel-9 and `check` gives no cross-stream advisory; a fresh 5.0 install
    (rhel-10) booting the same AMIs gets the advisory for each MachineSet, which it deserves."""
    from nodefleet.render.objects import fleet_plan, load_fleet
    from nodefleet.stackfile.model import CONFIG_KEY
    from tests.conftest import PROJECT
    from tests.nodefleet.adopt.roundtrip import os_image_stream

    raw = yaml.safe_load((PROJECT / "stacks" / "Pulumi.dev.yaml").read_text())["config"][CONFIG_KEY]
    manifests = [o.manifest for o in fleet_plan(load_fleet(raw, "dev", PROJECT)).emitted]
    version = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "status": {"desired": {"version": "5.0.0-ec.2"}},
    }
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(yaml.safe_dump_all([*manifests, version]))
    args = ["--stack", "dev", "--from-file", str(cluster), "--catalog", "catalogs/coreos-bootimages-5.0.yaml"]

    refused = _import(stacks, *args)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "the sources hold no OSImageStream 'cluster'" in refused.stderr
    assert "pass --os-image-stream rhel-9 or rhel-10" in refused.stderr
    assert "Traceback" not in refused.stderr
    assert list(stacks.iterdir()) == []

    stream = tmp_path / "stream.yaml"
    stream.write_text(yaml.safe_dump(os_image_stream("rhel-9")))
    result = _import(stacks, *args, "--from-file", str(stream))
    assert result.returncode == 0, result.stdout + result.stderr
    assert (
        f"inferred nodefleet:fleet.clusters[0].osImageStream = rhel-9 (from OSImageStream cluster ({stream}, "
        "document 1) spec.defaultStream)" in result.stdout
    )
    assert "nodefleet check: stack 'dev'" in result.stdout
    assert "0 mandatory, 0 advisory" in result.stdout
    written = yaml.safe_load((stacks / "Pulumi.dev.yaml").read_text())["config"]["nodefleet:fleet"]
    assert written["clusters"][0]["osImageStream"] == "rhel-9"

    fresh = tmp_path / "fresh"
    fresh.mkdir()
    stream.write_text(yaml.safe_dump(os_image_stream("rhel-10")))
    installed = _import(fresh, *args, "--from-file", str(stream))
    assert installed.returncode == 0, installed.stdout + installed.stderr
    assert "0 mandatory, 4 advisory" in installed.stdout
    assert installed.stdout.count("is RHEL 9 for pool 'worker', which runs OS stream rhel-10") == 2
