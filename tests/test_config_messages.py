"""Config rejections say what a valid value looks like, never just a regular expression or a type name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest
from pydantic import BaseModel

from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError, FleetConfig
from nodefleet.stackfile.modelbase import PATTERN_HELP
from tests.conftest import PROJECT, stack_fleet

Mutation = Callable[[dict[str, Any]], None]


def _ms(key: str, value: Any) -> Mutation:
    return lambda f: f["clusters"][0]["machineSets"][0].__setitem__(key, value)


def _cluster(key: str, value: Any) -> Mutation:
    return lambda f: f["clusters"][0].__setitem__(key, value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _ms("replicas", True),
            "machineSets[0].replicas: Input should be a valid integer; use a whole number",
        ),
        (_ms("replicas", "3"), "use a whole number without quotes (got '3')"),
        (_ms("name", "Worker_1"), "machineSets[0].name: must be lowercase letters, digits and '-'"),
        (_ms("instanceType", "huge"), "must be an EC2 instance type, e.g. 'm6i.xlarge' (got 'huge')"),
        (_cluster("region", "US-east"), "region: must be an AWS region, e.g. 'us-east-1' (got 'US-east')"),
        (_cluster("pools", "infra"), "pools: Input should be a valid list; use a list"),
        (
            _cluster("pools", [{"name": "infra"}, {"name": "infra"}]),
            "pools: pools[0], pools[1] share the name infra; a pool's name is its MachineConfigPool's name",
        ),
        (
            _cluster("machineSets", []),
            "machineSets: List should have at least 1 item after validation, not 0; add",
        ),
    ],
)
def test_rejections_carry_the_fix(
    dev_fleet: dict[str, Any], project_dir: Path, mutate: Mutation, expected: str
) -> None:
    mutate(dev_fleet)
    with pytest.raises(ConfigError) as exc:
        load_fleet(dev_fleet, "dev", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert expected in line
    assert "should match pattern" not in line


def _karpenter(*path: Any, value: Any) -> Mutation:
    def mutate(f: dict[str, Any]) -> None:
        node = f["clusters"][0]["karpenter"]
        for part in path[:-1]:
            node = node[part]
        node[path[-1]] = value

    return mutate


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        pytest.param(
            _karpenter("clusterDomain", value="https://x.example.com/"),
            "karpenter.clusterDomain: must be a DNS name such as 'edge.example.com': lowercase letters, digits, "
            "'-' and '.', without scheme, port or path (got 'https://x.example.com/')",
            id="cluster-domain-url",
        ),
        pytest.param(
            _karpenter("prefix", value=""),
            "karpenter.prefix: prefix '' segment 1 is empty; use letters, digits and . _ + = @ -, starting with a "
            "letter or digit, e.g. 'nodefleet/ignition'",
            id="prefix-empty",
        ),
        pytest.param(
            _karpenter("prefix", value="../../other"),
            "karpenter.prefix: prefix '../../other' segment 1 '..' must use only letters, digits",
            id="prefix-dotdot",
        ),
        pytest.param(
            _karpenter("nodeClasses", 0, "configVersion", value="a/b"),
            "karpenter.nodeClasses[0].configVersion: 'a/b' contains '/'; use one segment of letters",
            id="config-version-slash",
        ),
        pytest.param(
            _karpenter("caBundleKey", value=""),
            "karpenter.caBundleKey: must be a stack config key such as 'mcsCaBundle'",
            id="ca-key-empty",
        ),
        pytest.param(
            _karpenter("nodePools", 0, "labels", value={"bad key!": "x"}),
            "karpenter.nodePools[0].labels: key 'bad key!' is not a Kubernetes label key; use [prefix/]name",
            id="label-key",
        ),
        pytest.param(
            _karpenter("nodePools", 0, "labels", value={"example.com/" + "n" * 64: "x"}),
            "is not a Kubernetes label key (name part must be no more than 63 bytes)",
            id="label-key-long",
        ),
        pytest.param(
            _karpenter("nodeRole", value="arn:aws:iam::123456789012:role/x"),
            "karpenter.nodeRole: must be an IAM name such as 'edge-karpenter-node'",
            id="node-role-arn",
        ),
        pytest.param(
            _karpenter("version", value="2.0"),
            "karpenter.version: must be a Karpenter minor version such as '1.15', quoted",
            id="karpenter-version",
        ),
        pytest.param(
            _karpenter("nodePools", 1, "name", value="general"),
            "karpenter.nodePools: nodePools[0], nodePools[1] share the name general;",
            id="pools-share-a-name",
        ),
    ],
)
def test_karpenter_rejections_carry_the_fix(mutate: Mutation, expected: str) -> None:
    fleet = stack_fleet("karpenter")
    mutate(fleet)
    with pytest.raises(ConfigError) as exc:
        load_fleet(fleet, "karpenter", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert expected in line


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _cluster("release", "99.0.0"),
            "release: OCP 99.0.0 is newer than nodefleet knows: use a release from 4.7",
        ),
        (_cluster("release", "4.99.0"), "release: OCP 4.99.0 does not exist (the release after 4.22 is 5.0)"),
        (_cluster("name", "dev\0"), "clusters[0].name: contains the control character U+0000"),
        (
            _cluster("infraId", "x" * 5000),
            "clusters[0].infraId: is 5000 characters long; shorten it to at most 4096",
        ),
        (
            _ms("replicas", 501),
            "machineSets[0].replicas: Input should be less than or equal to 500; use 500 or less",
        ),
        (
            _ms("rootVolumeGiB", 8),
            "rootVolumeGiB: Input should be greater than or equal to 16; use 16 or more",
        ),
        (
            _cluster("infraId", "d" * 28),
            "infraId: String should have at most 27 characters; shorten it to 27 characters or fewer (got 'ddd",
        ),
        (
            _cluster("osImageStream", "rhel-8"),
            "osImageStream: Input should be 'rhel-9' or 'rhel-10'; use one of",
        ),
        (
            lambda f: f.__setitem__("clusters", [f["clusters"][0], {**f["clusters"][0], "infraId": "dev-2"}]),
            "nodefleet:fleet.clusters: clusters[0], clusters[1] share the name dev;",
        ),
    ],
)
def test_more_rejections_carry_the_fix(dev_fleet: dict[str, Any], mutate: Mutation, expected: str) -> None:
    mutate(dev_fleet)
    with pytest.raises(ConfigError) as exc:
        load_fleet(dev_fleet, "dev", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert expected in line
    assert len(line) < 600, "a rejected value is quoted short, never echoed whole"


def _patterns(model: type[BaseModel], seen: set[type[BaseModel]]) -> set[str]:
    """Every regular expression a field of ``model`` (or a model below it) is constrained by."""
    if model in seen:
        return set()
    seen.add(model)
    found: set[str] = set()
    for field in model.model_fields.values():
        found |= _field_patterns(field.annotation, field.metadata, seen)
    return found


def _field_patterns(annotation: Any, metadata: list[Any], seen: set[type[BaseModel]]) -> set[str]:
    found = {str(m.pattern) for m in metadata if getattr(m, "pattern", None)}
    for arg in get_args(annotation):
        found |= _field_patterns(arg, [], seen)
        found |= {str(m.pattern) for m in getattr(arg, "__metadata__", ()) if getattr(m, "pattern", None)}
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        found |= _patterns(annotation, seen)
    return found


def test_every_pattern_of_the_config_has_words_and_an_example() -> None:
    """A rejected pattern reads 'must be a DNS name such as …', never the regular expression."""
    patterns = _patterns(FleetConfig, set())
    assert len(patterns) >= 15
    missing = sorted(p for p in patterns if p not in PATTERN_HELP)
    assert missing == []
    for pattern in patterns:
        assert "e.g." in PATTERN_HELP[pattern] or "such as" in PATTERN_HELP[pattern], pattern


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("hostd", "clusters[0].kind: unknown cluster kind 'hostd'; did you mean 'hosted'?"),
        ("Hosted", "clusters[0].kind: unknown cluster kind 'Hosted'; did you mean 'hosted'?"),
        ("Standalone", "clusters[0].kind: unknown cluster kind 'Standalone'; did you mean 'standalone'?"),
        (None, "clusters[0].kind: is empty; use standalone"),
        (5, "clusters[0].kind: unknown cluster kind 5; use standalone"),
    ],
)
def test_a_misspelled_cluster_kind_is_named_not_judged_as_standalone(kind: Any, expected: str) -> None:
    """A hosted cluster with a misspelled kind once got the standalone model's verdict: 'should be
    standalone', catalog and machineSets missing, and every hosted key unknown."""
    fleet = stack_fleet("hosted")
    fleet["clusters"][0]["kind"] = kind
    with pytest.raises(ConfigError) as exc:
        load_fleet(fleet, "hosted", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert line.startswith("stacks/Pulumi.hosted.yaml: nodefleet:fleet.clusters[0].kind: ")
    assert expected in line
    assert "hosted (a HyperShift hosted cluster)" in line


def test_a_machine_set_name_over_the_label_value_limit_is_refused(dev_fleet: dict[str, Any]) -> None:
    """The MachineSet's name is its machine.openshift.io/cluster-api-machineset label value (at most 63
    characters): a longer one passed check and render, and the machine-api could create no Machine."""
    cluster = dev_fleet["clusters"][0]
    cluster["infraId"] = "abcdefghijabcdefghij-7xk2p"  # 26: within the infraId limit
    cluster["machineSets"][0]["name"] = "w" * 30  # within the name limit: 26 + 30 + "us-east-1a" + 2 = 68
    with pytest.raises(ConfigError) as exc:
        load_fleet(dev_fleet, "dev", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert line.startswith("stacks/Pulumi.dev.yaml: nodefleet:fleet.clusters[0].machineSets[0].name: ")
    assert "(68 characters)" in line and "limits to 63 characters" in line
    assert "Shorten name to at most 25 characters" in line
    cluster["machineSets"][0]["name"] = "w" * 25
    load_fleet(dev_fleet, "dev", PROJECT)
