"""``import --management-cluster NAME`` and the fleet's registry (``nodefleet-fleet.yaml`` beside the stack files):
a management cluster the registry lacks is declared there (created if absent, appended otherwise, the other
entries and comments kept), an existing entry of that name is left alone unless ``--force``, and an entry the
registry's rules refuse stops the import with nothing written."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.adopt.documents import AdoptError
from nodefleet.adopt.registry_entry import REGISTRY_HEADER, management_entry, registry_text
from nodefleet.fleet.registry import load_registry
from tests.conftest import nodefleet
from tests.nodefleet.adopt.roundtrip import hypershift_fixture

RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"
EXISTING = """\
# Our management clusters. Keep this comment.
managementClusters:
- name: mgmt-euw1-a   # Dublin
  region: eu-west-1
  argocdCluster: dublin
  kubeconfig: ~/.kube/mgmt-euw1-a
gitops:
  repoURL: https://git.example.com/platform/fleet.git
"""


@pytest.fixture
def sources(tmp_path: Path) -> Path:
    """HyperShift's `--render` output for `cesar` (us-east-2) as a file."""
    docs = hypershift_fixture("default_creation_flags_for_cesar", release_image=RELEASE_IMAGE)
    path = tmp_path / "mgmt.yaml"
    path.write_text(yaml.safe_dump_all(docs))
    return path


@pytest.fixture
def stacks(tmp_path: Path) -> Path:
    folder = tmp_path / "stacks"
    folder.mkdir()
    return folder


def _import(stacks: Path, sources: Path, *args: str) -> Any:
    return nodefleet(
        "import", "--stack", "cesar", "--stacks-dir", str(stacks), "--from-file", str(sources), *args
    )


# ---- the pure part ------------------------------------------------------------------------------------------


def test_the_entry_holds_the_name_the_clusters_region_and_the_kubeconfig_path() -> None:
    clusters = [{"kind": "hosted", "name": "a", "region": "us-east-2"}, {"kind": "standalone", "name": "s"}]
    assert management_entry("mgmt-use2-a", clusters, "/home/me/.kube/mgmt") == {
        "name": "mgmt-use2-a",
        "region": "us-east-2",
        "kubeconfig": "/home/me/.kube/mgmt",
    }
    assert management_entry("mgmt-use2-a", clusters, None) == {"name": "mgmt-use2-a", "region": "us-east-2"}
    two = [*clusters, {"kind": "hosted", "name": "b", "region": "eu-west-1"}]
    with pytest.raises(AdoptError, match=r"2 regions \(eu-west-1: b; us-east-2: a\)"):
        management_entry("mgmt-use2-a", two, None)


def test_an_entry_is_appended_with_the_files_comments_and_entries_kept() -> None:
    text = registry_text(EXISTING, {"name": "mgmt-use2-a", "region": "us-east-2"})
    assert text.startswith("# Our management clusters. Keep this comment.\nmanagementClusters:\n"
                           "- name: mgmt-euw1-a   # Dublin\n")  # fmt: skip
    assert "- name: mgmt-use2-a\n  region: us-east-2\n" in text
    assert "repoURL: https://git.example.com/platform/fleet.git" in text
    document = yaml.safe_load(text)
    assert [c["name"] for c in document["managementClusters"]] == ["mgmt-euw1-a", "mgmt-use2-a"]
    assert document["managementClusters"][0] == yaml.safe_load(EXISTING)["managementClusters"][0]
    created = registry_text(None, {"name": "mgmt-use2-a", "region": "us-east-2"})
    assert created.startswith(REGISTRY_HEADER)
    assert yaml.safe_load(created) == {"managementClusters": [{"name": "mgmt-use2-a", "region": "us-east-2"}]}


def test_an_entry_of_the_same_name_is_updated_only_when_asked_and_keeps_what_the_user_added() -> None:
    with pytest.raises(AdoptError, match=r"'mgmt-euw1-a' is declared already; .*--force"):
        registry_text(EXISTING, {"name": "mgmt-euw1-a", "region": "eu-west-1"})
    entry = {"name": "mgmt-euw1-a", "region": "eu-west-2", "hypershift": {"supportedVersions": ["4.22"]}}
    text = registry_text(EXISTING, entry, replace=True)
    # The keys import knows are its own; the Argo CD cluster and the kubeconfig the user wrote stay.
    assert yaml.safe_load(text)["managementClusters"] == [
        {
            "name": "mgmt-euw1-a",
            "region": "eu-west-2",
            "argocdCluster": "dublin",
            "kubeconfig": "~/.kube/mgmt-euw1-a",
            "hypershift": {"supportedVersions": ["4.22"]},
        }
    ]
    assert text.startswith("# Our management clusters. Keep this comment.\n")
    assert "# Dublin" in text


# ---- import, as a user runs it -------------------------------------------------------------------------------


def test_a_management_cluster_the_fleet_lacks_gets_a_new_registry(stacks: Path, sources: Path) -> None:
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 0, result.stdout + result.stderr
    registry = stacks / "nodefleet-fleet.yaml"
    assert f"wrote {registry}: added management cluster 'mgmt-use2-c' (region: us-east-2)" in result.stdout
    assert yaml.safe_load(registry.read_text()) == {
        "managementClusters": [{"name": "mgmt-use2-c", "region": "us-east-2"}]
    }
    assert load_registry(stacks).names == ("mgmt-use2-c",)  # the registry's own reader takes it
    stack = yaml.safe_load((stacks / "Pulumi.cesar.yaml").read_text())["config"]["nodefleet:fleet"]
    assert stack["clusters"][0]["managementCluster"] == "mgmt-use2-c"
    # Again under the fleet's default name: no registry is needed, and none is written.
    other = stacks.parent / "other"
    other.mkdir()
    result = _import(other, sources)
    assert result.returncode == 0, result.stdout + result.stderr
    assert sorted(p.name for p in other.iterdir()) == ["Pulumi.cesar.yaml"]


def test_an_existing_registry_is_appended_to_and_its_entry_left_alone_without_force(
    stacks: Path, sources: Path
) -> None:
    registry = stacks / "nodefleet-fleet.yaml"
    registry.write_text(EXISTING)
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 0, result.stdout + result.stderr
    text = registry.read_text()
    assert text.startswith("# Our management clusters. Keep this comment.\n")
    assert [c["name"] for c in yaml.safe_load(text)["managementClusters"]] == ["mgmt-euw1-a", "mgmt-use2-c"]
    # Declared now: a second import leaves the registry byte for byte as it is.
    (stacks / "Pulumi.cesar.yaml").unlink()
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 0, result.stdout + result.stderr
    assert registry.read_text() == text
    assert "nodefleet-fleet.yaml" not in result.stdout
    # --force updates what import knows (the region) in the entry (and replaces the stack file); what the user
    # added to the entry, the other entry and the comments stay.
    edited = text.replace("region: us-east-2", "region: us-west-2\n  argocdCluster: ohio")
    registry.write_text(edited)
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c", "--force")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "updated management cluster 'mgmt-use2-c' (region: us-east-2)" in result.stdout
    assert registry.read_text() == edited.replace("region: us-west-2", "region: us-east-2")


def test_an_entry_the_registry_refuses_writes_nothing(stacks: Path, sources: Path) -> None:
    registry = stacks / "nodefleet-fleet.yaml"
    # Argo CD knows the Dublin cluster as 'mgmt-use2-c': the new entry's Argo CD cluster (its name, by default)
    # would send two management clusters' folders to one cluster, which the registry refuses.
    registry.write_text(EXISTING.replace("argocdCluster: dublin", "argocdCluster: mgmt-use2-c"))
    before = registry.read_bytes()
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "managementClusters[1].argocdCluster: 'mgmt-use2-c' is also managementClusters[0]'s" in result.stderr
    )
    assert "(the entry import would add for management cluster 'mgmt-use2-c')" in result.stderr
    assert "nothing was written" in result.stderr
    assert registry.read_bytes() == before
    assert sorted(p.name for p in stacks.iterdir()) == ["nodefleet-fleet.yaml"]
    # A management cluster in another region than the hosted cluster: the entry exists, the check refuses the
    # stack, and the written stack is taken back.
    result = _import(stacks, sources, "--management-cluster", "mgmt-euw1-a")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "'us-east-2', but its management cluster 'mgmt-euw1-a' is in eu-west-1" in result.stderr
    assert registry.read_bytes() == before
    assert sorted(p.name for p in stacks.iterdir()) == ["nodefleet-fleet.yaml"]


def test_a_new_registry_that_would_leave_the_folders_stacks_on_no_management_cluster_writes_nothing(
    stacks: Path, sources: Path
) -> None:
    import shutil

    from tests.conftest import PROJECT

    # A fleet without a registry: its hosted stack is on the one management cluster such a fleet has.
    shutil.copy(PROJECT / "stacks" / "Pulumi.hosted.yaml", stacks)
    before = {p.name: p.read_bytes() for p in stacks.iterdir()}
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert (
        "the import would create it with management cluster 'mgmt-use2-c' alone, and the hosted clusters of stack "
        "hosted are on 'management'"
    ) in result.stderr
    assert "nothing was written" in result.stderr
    assert {p.name: p.read_bytes() for p in stacks.iterdir()} == before
    # Declared first, as the message says: the import appends its entry and the folder checks clean.
    registry = stacks / "nodefleet-fleet.yaml"
    registry.write_text("managementClusters:\n- name: management\n  region: us-east-2\n")
    result = _import(stacks, sources, "--management-cluster", "mgmt-use2-c")
    assert result.returncode == 0, result.stdout + result.stderr
    assert yaml.safe_load(registry.read_text())["managementClusters"][1]["name"] == "mgmt-use2-c"
    whole = nodefleet("fleet", "check", "--stacks-dir", str(stacks))
    assert whole.returncode == 0, whole.stdout + whole.stderr
