"""``output.adopt``: entries, targets and import IDs, and what ``import`` writes there (pure, no engine)."""

from __future__ import annotations

import copy
import re
from typing import Any

import pytest

from nodefleet.stackfile.adopt import AdoptError, adopt_list, entry_text, import_ids, parse_entry
from nodefleet.stackfile.model import ConfigError, validate_fleet
from tests.conftest import PROJECT, stack_fleet

DECLARED = [
    ("prod", "", "Namespace", "", "clusters"),
    ("prod", "hypershift.openshift.io", "HostedCluster", "clusters", "prod"),
    ("prod", "hypershift.openshift.io", "NodePool", "clusters", "prod-workers"),
    ("prod-hosted", "karpenter.sh", "NodePool", "", "spot"),
    ("other-hosted", "karpenter.sh", "NodePool", "", "spot"),
]


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        (
            "HostedCluster.hypershift.openshift.io clusters/prod",
            ("hypershift.openshift.io", "HostedCluster", "clusters", "prod"),
        ),
        ("NodePool.karpenter.sh spot", ("karpenter.sh", "NodePool", "", "spot")),
        ("Namespace clusters", ("", "Namespace", "", "clusters")),
    ],
)
def test_an_entry_is_kind_group_and_name_and_reads_back(text: str, parsed: tuple[str, str, str, str]) -> None:
    assert parse_entry(text) == parsed
    assert entry_text(*parsed) == text


@pytest.mark.parametrize(
    "text",
    ["nodepool clusters/x", "NodePool", "NodePool.karpenter.sh a/b/c", "NodePool.karpenter.sh Spot", ""],
)
def test_a_malformed_entry_says_the_form(text: str) -> None:
    with pytest.raises(ValueError, match=re.escape("'Kind.group namespace/name'")):
        parse_entry(text)


def test_import_ids_are_namespace_slash_name_or_the_name() -> None:
    adopt = {
        "prod": ["HostedCluster.hypershift.openshift.io clusters/prod"],
        "prod-hosted": ["NodePool.karpenter.sh spot"],
    }
    assert import_ids(adopt, DECLARED, "f: output.adopt") == {
        ("prod", "hypershift.openshift.io", "HostedCluster", "clusters", "prod"): "clusters/prod",
        ("prod-hosted", "karpenter.sh", "NodePool", "", "spot"): "spot",
    }


def test_an_entry_naming_no_declared_object_names_the_entry_and_what_is_declared() -> None:
    adopt = {"prod": ["NodePool.hypershift.openshift.io clusters/prod-infra"]}
    with pytest.raises(AdoptError) as e:
        import_ids(adopt, DECLARED, "stacks/Pulumi.prod.yaml: nodefleet:fleet.output.adopt")
    message = str(e.value)
    assert message.startswith("stacks/Pulumi.prod.yaml: nodefleet:fleet.output.adopt.prod[0]: ")
    assert "'NodePool.hypershift.openshift.io clusters/prod-workers'" in message
    assert message.endswith("correct the entry, or remove it")


def test_an_object_of_another_target_is_not_this_targets() -> None:
    """Two hosted clusters each have a Karpenter NodePool `spot`: the target says whose."""
    with pytest.raises(AdoptError, match=r"output.adopt.prod\[0\]"):
        import_ids({"prod": ["NodePool.karpenter.sh spot"]}, DECLARED, "output.adopt")


def test_a_patched_object_is_refused_because_there_is_nothing_to_adopt() -> None:
    with pytest.raises(AdoptError, match="never creates or deletes it, so there is nothing to adopt"):
        import_ids({"prod": ["Namespace clusters"]}, DECLARED, "output.adopt")


def test_import_writes_every_live_declared_object_but_the_patched_ones_by_target() -> None:
    live = [
        ("", "Namespace", "", "clusters"),
        ("hypershift.openshift.io", "HostedCluster", "clusters", "prod"),
        ("karpenter.sh", "NodePool", "", "spot"),
    ]
    assert adopt_list(DECLARED, live) == {
        "prod": ["HostedCluster.hypershift.openshift.io clusters/prod"],
        "prod-hosted": ["NodePool.karpenter.sh spot"],
        "other-hosted": ["NodePool.karpenter.sh spot"],
    }


def _hosted(adopt: Any) -> dict[str, Any]:
    raw = copy.deepcopy(stack_fleet("hosted"))
    raw["output"] = {"mode": "apply", "kubeconfig": "mgmt.kubeconfig", "adopt": adopt}
    raw["clusters"][0]["hostedKubeconfig"] = "hosted.kubeconfig"
    return raw


def test_the_model_takes_targets_of_the_stack() -> None:
    adopt = {
        "prod-east": ["HostedCluster.hypershift.openshift.io clusters/prod-east"],
        "prod-east-hosted": [],
    }
    fleet = validate_fleet(_hosted(adopt), "hosted", PROJECT)
    assert fleet.config.output.adopt == adopt


@pytest.mark.parametrize(
    ("adopt", "says"),
    [
        (
            {"prod-west": ["HostedCluster.hypershift.openshift.io clusters/prod-west"]},
            "output.adopt.prod-west: 'prod-west' is no render target of this stack (its targets: prod-east, "
            "prod-east-hosted",
        ),
        (
            {"prod-east": ["hostedcluster clusters/prod-east"]},
            "output.adopt.prod-east[0]: 'hostedcluster clusters/",
        ),
        ({"prod-east": "HostedCluster.hypershift.openshift.io clusters/prod-east"}, "output.adopt.prod-east"),
    ],
)
def test_the_model_refuses_what_it_cannot_adopt_naming_file_and_field(adopt: Any, says: str) -> None:
    with pytest.raises(ConfigError) as e:
        validate_fleet(_hosted(adopt), "hosted", PROJECT, "stacks/Pulumi.hosted.yaml")
    message = str(e.value)
    assert message.startswith("stacks/Pulumi.hosted.yaml"), message
    assert says in message, message


def test_one_stack_per_cluster_keeps_each_clusters_own_list() -> None:
    """``import --stack team-{cluster}``: each stack lists its own cluster's objects, and only those."""
    import yaml

    from nodefleet.adopt.documents import LiveObject
    from nodefleet.adopt.importer import ImportOptions, adopt, per_cluster
    from tests.nodefleet.adopt.roundtrip import hypershift_fixture

    example = yaml.safe_load((PROJECT / "examples" / "import" / "prod-west.yaml").read_text())["items"]
    cesar = [d for d in hypershift_fixture("default_creation_flags_for_cesar") if d["kind"] != "Secret"]
    live = [LiveObject(d, "test") for d in [*cesar, *example]]
    adoption = adopt(live, ImportOptions(stack="team", project_dir=PROJECT))
    stacks = dict(per_cluster(adoption, "team-{cluster}"))
    assert {
        name: a.document["config"]["nodefleet:fleet"]["output"]["adopt"] for name, a in stacks.items()
    } == {
        "team-cesar": {
            "cesar": [
                "HostedCluster.hypershift.openshift.io clusters/cesar",
                "NodePool.hypershift.openshift.io clusters/cesar-us-east-2a",
            ]
        },
        "team-prod-west": {
            "prod-west": [
                "HostedCluster.hypershift.openshift.io clusters/prod-west",
                "NodePool.hypershift.openshift.io clusters/prod-west-us-west-2a",
                "NodePool.hypershift.openshift.io clusters/prod-west-infra",
            ]
        },
    }
