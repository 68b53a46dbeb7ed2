"""The config and the CRDs agree, for every Karpenter a cluster can declare.

A matrix of flavour (self-managed ``aws``, HyperShift AutoNode ``hypershift``, Red Hat's karpenter-operator
``openshift``) x declared Karpenter minor (1.8 to 1.16: shipped and not) x feature gates x NodePool features
(every kind of pool the config can express). Two properties:

1. every combination the config model accepts renders objects that the CRD of the cluster's Karpenter (the
   set their ``nodefleet.io/karpenter`` annotation names) accepts: nodefleet never writes what the API server
   would reject;
2. what a set's CRD lacks (``Balanced`` before 1.14, the ``Unhealthy`` budget reason before 1.15, HyperShift's
   copy without ``Balanced``) is refused: by the config, with a message naming the Karpenter version, and,
   for a hand-written object, by ``crd-schema``, with the CRD's message and the set it was judged by.
"""

from __future__ import annotations

import copy
import itertools
from functools import cache
from typing import Any

import pytest
from pydantic import TypeAdapter, ValidationError

from mockruntime.run import stack_fleet
from nodefleet import kinds as k
from nodefleet.apiserver.schema import validate_object
from nodefleet.apiserver.store import load_index
from nodefleet.render.hosted import render_karpenter_node_pool, render_legacy_ec2_node_class
from nodefleet.render.karpenter import render_operator_ec2_node_class, render_self_managed_ec2_node_class
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.karpenter import AutoNode, KarpenterOperator, NodePoolSpec, SelfManagedKarpenter
from nodefleet.stackfile.model import ConfigError, ResolvedCluster, ResolvedHostedCluster
from policies.crd_schema import crd_schema
from tests.conftest import PROJECT
from tests.policies.helpers import run_policy

FLAVOURS = ("aws", "hypershift", "openshift")
MINORS = [f"1.{m}" for m in range(8, 17)]
GATES: list[list[str]] = [[], ["StaticCapacity"], ["NodeRepair"], ["StaticCapacity", "NodeRepair"]]

#: Every kind of NodePool the config can express, by name.
FEATURES: dict[str, dict[str, Any]] = {
    "defaults": {},
    "balanced": {"disruption": {"consolidationPolicy": "Balanced"}},
    "when-empty": {"disruption": {"consolidationPolicy": "WhenEmpty", "consolidateAfter": "5m"}},
    "never-consolidate": {"disruption": {"consolidateAfter": "Never"}},
    "per-reason-budgets": {
        "disruption": {"budgets": {"Empty": "20%", "Underutilized": "2", "Drifted": "0"}},
    },
    "windows": {
        "disruption": {
            "driftBudget": "1",
            "windows": [
                {"schedule": "0 0 28 * *", "duration": "72h", "nodes": "0"},
                {"schedule": "0 9 * * mon-fri", "duration": "8h", "reasons": ["Empty", "Underutilized"]},
            ],
            "driftWindows": [{"schedule": "@daily", "duration": "1h30m", "nodes": "0"}],
        }
    },
    "unhealthy-budget": {"disruption": {"budgets": {"Unhealthy": "1"}}},
    "unhealthy-window": {
        "disruption": {"windows": [{"schedule": "@hourly", "duration": "10m", "reasons": ["Unhealthy"]}]}
    },
    "static": {"replicas": 3, "limits": {"nodes": 4}, "disruption": {"driftBudget": "1"}},
    "static-unhealthy": {"replicas": 2, "disruption": {"budgets": {"Unhealthy": "1"}}},
    "requirements": {
        "requirements": [
            {"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gte", "values": ["4"]},
            {"key": "karpenter.k8s.aws/instance-memory", "operator": "Lte", "values": ["65536"]},
            {"key": "karpenter.k8s.aws/instance-generation", "operator": "Gt", "values": ["5"]},
            {"key": "karpenter.k8s.aws/instance-family", "values": ["m6i", "m7i"], "minValues": 2},
            {"key": "karpenter.k8s.aws/instance-size", "operator": "NotIn", "values": ["metal"]},
            {"key": "example.com/team", "operator": "Exists"},
        ]
    },
    "capacity": {
        "capacityTypes": ["spot", "on-demand", "reserved"],
        "architectures": ["amd64", "arm64"],
        "instanceFamilies": ["m7g", "m7i"],
        "instanceCategories": [],
    },
    "lifetimes": {
        "expireAfter": "Never",
        "terminationGracePeriod": "24h",
        "labels": {"example.com/tier": "a"},
    },
    "dynamic-limits": {"weight": 10, "limits": {"cpu": "100", "memory": "400Gi", "nodes": 20}},
}


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def _expected_accepted(flavour: str, version: str, gates: list[str], feature: str) -> bool:
    """The config's rules, stated once: a shipped Karpenter, Balanced from 1.14, Unhealthy from 1.15, static
    pools with the StaticCapacity gate."""
    if version not in load_index().karpenter_minors(flavour):
        return False
    if feature == "balanced" and _minor(version) < 14:
        return False
    if "unhealthy" in feature and _minor(version) < 15:
        return False
    return not (feature.startswith("static") and "StaticCapacity" not in gates)


def _pool(feature: str) -> dict[str, Any]:
    return {"name": "p", "nodeClass": "general", **copy.deepcopy(FEATURES[feature])}


def _model(flavour: str, version: str, gates: list[str], feature: str) -> Any:
    pools = [_pool(feature)]
    release = {"version": version, "featureGates": gates}
    if flavour == "aws":
        return SelfManagedKarpenter.model_validate(
            {
                "bucket": "edge-ignition",
                "nodeRole": "r",
                "instanceProfile": "p",
                "clusterDomain": "edge.example.com",
                "nodeClasses": [{"name": "general", "configVersion": "rendered-worker-1"}],
                "nodePools": pools,
                **release,
            }
        )
    if flavour == "hypershift":
        return AutoNode.model_validate(
            {
                "roleArn": "arn:aws:iam::123456789012:role/k",
                "karpenter": release,
                "nodeClasses": [{"name": "general"}],
                "nodePools": pools,
            }
        )
    return KarpenterOperator.model_validate(
        {
            "instanceProfile": "p",
            "karpenter": release,
            "nodeClasses": [{"name": "general"}],
            "nodePools": pools,
        }
    )


@cache
def _node_class(flavour: str, version: str) -> dict[str, Any]:
    """The EC2NodeClass nodefleet writes on a cluster of this flavour and Karpenter, through the whole config."""
    if flavour == "hypershift":
        fleet = stack_fleet("hosted")
        fleet["clusters"][0]["autoNode"]["karpenter"] = {"version": version}
        fleet["clusters"][0]["autoNode"]["mode"] = "legacy"
        hosted = load_fleet(fleet, "matrix", PROJECT).clusters[0]
        assert isinstance(hosted, ResolvedHostedCluster) and hosted.config.auto_node is not None
        return render_legacy_ec2_node_class(hosted.config, hosted.config.auto_node.node_classes[0])
    fleet = stack_fleet("karpenter")
    cluster = fleet["clusters"][0]
    if flavour == "aws":
        cluster["karpenter"]["version"] = version
        cluster["karpenter"]["nodePools"] = [{"name": "general", "nodeClass": "general"}]
    else:
        del cluster["karpenter"]
        cluster["karpenterOperator"] = {
            "instanceProfile": "p",
            "karpenter": {"version": version},
            "nodeClasses": [{"name": "general", "tags": {"team": "a"}}],
            "nodePools": [{"name": "general", "nodeClass": "general"}],
        }
    resolved = load_fleet(fleet, "matrix", PROJECT, environ={}).clusters[0]
    assert isinstance(resolved, ResolvedCluster)
    c = resolved.config
    if flavour == "aws":
        assert c.karpenter is not None
        nc = c.karpenter.node_classes[0]
        return render_self_managed_ec2_node_class(c, nc, resolved.karpenter_images[nc.name])
    assert c.karpenter_operator is not None
    return render_operator_ec2_node_class(c, c.karpenter_operator.node_classes[0])


def _blocking(obj: dict[str, Any]) -> list[str]:
    selection = load_index().for_manifest(f"kubernetes:{obj['apiVersion']}:{obj['kind']}", obj)
    assert selection is not None and selection.karpenter is not None
    return [str(f) for f in validate_object(obj, selection.crd) if f.blocking]


COMBINATIONS = list(itertools.product(FLAVOURS, MINORS, range(len(GATES)), FEATURES))


@pytest.mark.parametrize("flavour", FLAVOURS)
def test_every_combination_the_config_accepts_renders_what_its_crd_accepts(flavour: str) -> None:
    accepted = refused = 0
    for version, gates, feature in itertools.product(MINORS, GATES, FEATURES):
        expected = _expected_accepted(flavour, version, gates, feature)
        try:
            model = _model(flavour, version, gates, feature)
        except ValidationError as e:
            assert not expected, f"{flavour} {version} {gates} {feature}: refused: {e}"
            refused += 1
            continue
        assert expected, f"{flavour} {version} {gates} {feature}: accepted, but its CRD has no such feature"
        accepted += 1
        name = f"{flavour}/{version}"
        pool = render_karpenter_node_pool(model.node_pools[0], annotations={k.ANNOTATION_KARPENTER: name})
        assert _blocking(pool) == [], (name, gates, feature)
        node_class = _node_class(flavour, version)
        assert node_class["metadata"]["annotations"][k.ANNOTATION_KARPENTER] == name
        assert _blocking(node_class) == [], name
    shipped = len(load_index().karpenter_minors(flavour))
    assert accepted + refused == len(MINORS) * len(GATES) * len(FEATURES)
    assert accepted > 0 and refused > (len(MINORS) - shipped) * len(GATES) * len(FEATURES)


def _lacks(name: str) -> set[str]:
    """The features whose pool the set's NodePool CRD rejects, found by validating each (the config's cluster
    checks bypassed: only the pool model)."""
    out = set()
    for feature in FEATURES:
        pool = TypeAdapter(NodePoolSpec).validate_python(_pool(feature))
        if _blocking(render_karpenter_node_pool(pool, annotations={k.ANNOTATION_KARPENTER: name})):
            out.add(feature)
    return out


def test_what_each_shipped_crd_lacks() -> None:
    lacks = {name: _lacks(name) for name in load_index().karpenter_sets}
    before_balanced = {"balanced", "unhealthy-budget", "unhealthy-window", "static-unhealthy"}
    assert lacks == {
        "aws/1.12": before_balanced,
        "aws/1.13": before_balanced,
        "aws/1.14": {"unhealthy-budget", "unhealthy-window", "static-unhealthy"},
        "aws/1.15": set(),
        "hypershift/1.13": before_balanced,
        "openshift/1.13": before_balanced,
    }


@pytest.mark.parametrize("name", sorted(load_index().karpenter_sets))
def test_what_a_clusters_crd_lacks_is_refused_by_the_config_and_by_crd_schema(name: str) -> None:
    flavour, version = name.split("/")
    for feature in sorted(_lacks(name)):
        with pytest.raises(ValidationError) as refused:
            _model(flavour, version, ["StaticCapacity", "NodeRepair"], feature)
        needs = (
            "Balanced needs Karpenter 1.14"
            if feature == "balanced"
            else "Unhealthy budget reason needs Karpenter 1.15"
        )
        assert needs in str(refused.value) and f"this cluster's is {version}" in str(refused.value)
        # Written by hand and annotated with the cluster's set: crd-schema is the guard, naming the set.
        pool = TypeAdapter(NodePoolSpec).validate_python(_pool(feature))
        doc = render_karpenter_node_pool(pool, annotations={k.ANNOTATION_KARPENTER: name})
        found = run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, doc)
        assert found and all(v.level == "mandatory" for v in found)
        assert all(f"CRD of {load_index().karpenter_sets[name].describe()}" in v.message for v in found)
        field = "consolidationPolicy" if feature == "balanced" else "reasons"
        assert any(field in v.message and "Unsupported value" in v.message for v in found), found


def test_the_brief_cases() -> None:
    """A self-managed 1.15 cluster's Unhealthy budget passes; HyperShift's Balanced is refused at config and
    at crd-schema, where upstream's default CRD would have let it through."""
    unhealthy = _model("aws", "1.15", [], "unhealthy-budget")
    pool = render_karpenter_node_pool(
        unhealthy.node_pools[0], annotations={k.ANNOTATION_KARPENTER: "aws/1.15"}
    )
    assert run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, pool) == []
    balanced = TypeAdapter(NodePoolSpec).validate_python(_pool("balanced"))
    hosted = render_karpenter_node_pool(balanced, annotations={k.ANNOTATION_KARPENTER: "hypershift/1.13"})
    assert run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, hosted)
    del hosted["metadata"]["annotations"]
    assert run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, hosted) == []  # judged by aws/1.15
    # A hand-written HyperShift pool: the policy's `karpenter` setting names its cluster's set.
    config = {"crd-schema": {"karpenter": "hypershift/1.13"}}
    (v,) = run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, hosted, config=config)
    assert "CRD of hypershift/1.13 (github.com/openshift/hypershift v0.1.82)" in v.message


def test_an_annotation_naming_no_shipped_set_is_a_mandatory_violation() -> None:
    pool = render_karpenter_node_pool(
        TypeAdapter(NodePoolSpec).validate_python(_pool("defaults")),
        annotations={k.ANNOTATION_KARPENTER: "aws/1.11"},
    )
    (v,) = run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, pool)
    assert v.level == "mandatory"
    assert "metadata.annotations[nodefleet.io/karpenter]" in v.message
    assert "no Karpenter CRD set 'aws/1.11' is shipped (shipped: aws/1.12, aws/1.13" in v.message
    (v,) = run_policy(
        crd_schema,
        k.KARPENTER_NODE_POOL.token,
        {**pool, "metadata": {"name": "p"}},
        config={"crd-schema": {"karpenter": "aws/1.9"}},
    )
    assert "the crd-schema policy's `karpenter` setting" in v.message


@pytest.mark.parametrize(("stack", "flavour"), [("hosted", "hypershift"), ("karpenter", "aws")])
@pytest.mark.parametrize("version", MINORS)
def test_example_stacks_at_every_declared_karpenter(stack: str, flavour: str, version: str) -> None:
    """The example stacks with each Karpenter minor declared: refused with the reason, or every Karpenter
    object passes crd-schema against the set of that version."""
    from mockruntime.evaluate import evaluate_run
    from mockruntime.run import run_program

    fleet = stack_fleet(stack)
    cluster = fleet["clusters"][0]
    if stack == "hosted":
        cluster["autoNode"]["karpenter"] = {"version": version}
    else:
        cluster["karpenter"]["version"] = version
    shipped = version in load_index().karpenter_minors(flavour)
    feature_needs = 15 if stack == "karpenter" else 0  # the karpenter stack's Balanced pool needs 1.14
    try:
        load_fleet(fleet, stack, PROJECT, environ={})
    except ConfigError as e:
        assert not shipped or _minor(version) < 14, str(e)
        reason = "ships no CRDs of Karpenter" if not shipped else "Balanced needs Karpenter 1.14"
        assert reason in str(e)
        return
    assert shipped and (_minor(version) >= 14 or feature_needs == 0)
    config: dict[str, Any] = {"nodefleet:fleet": fleet}
    run = (
        run_program(stack, config)
        if stack == "hosted"
        else run_program(stack, {**config, "nodefleet:mcsCaBundle": _ca()})
    )
    found = [v for v in evaluate_run(run, [crd_schema])]
    assert found == []
    names = {
        r.inputs["metadata"]["annotations"][k.ANNOTATION_KARPENTER]
        for r in run.registrations
        if r.type in (k.KARPENTER_NODE_POOL.token, k.EC2_NODE_CLASS.token)
    }
    assert names == {f"{flavour}/{version}"}


def _ca() -> str:
    return "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"


def test_the_matrix_the_readme_quotes() -> None:
    """1,512 combinations, 246 accepted (docs/crd-validation.md, "Which Karpenter CRDs a cluster serves")."""
    outcomes = [_expected_accepted(f, v, GATES[g], feature) for f, v, g, feature in COMBINATIONS]
    assert (len(outcomes), sum(outcomes)) == (1512, 246)
