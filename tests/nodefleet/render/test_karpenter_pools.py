"""Karpenter NodePools as of v1.14/v1.15: per-reason budgets, Balanced, static pools, and which Karpenter
accepts what, against the shipped NodePool CRDs (aws/karpenter-provider-aws v1.14.3 and v1.15.1, and the copy
HyperShift v0.1.82 installs into AutoNode clusters)."""

from __future__ import annotations

import copy
import re
from functools import cache
from typing import Any

import jsonschema
import pytest
import yaml
from pydantic import TypeAdapter, ValidationError

from nodefleet.apiserver.store import CRD_DIR, load_index
from nodefleet.render.hosted import (
    ANNOTATION_PROVISIONING,
    NODE_POOL_REPLACE_ON,
    disruption_budgets,
    render_karpenter_node_pool,
)
from nodefleet.stackfile.karpenter import (
    AutoNode,
    AutoNodeClass,
    KarpenterNodePoolSpec,
    NodePoolSpec,
    SelfManagedKarpenter,
    StaticNodePoolSpec,
)
from tests.crdschema import _strip

#: The NodePool CRDs a cluster can serve, by the Karpenter set its objects name.
CRDS = ("aws/1.14", "aws/1.15", "hypershift/1.13")
POOL = TypeAdapter(NodePoolSpec)


@cache
def _crd(label: str) -> dict[str, Any]:
    crd = load_index().for_object("karpenter.sh/v1", "NodePool", label)
    assert crd is not None
    return yaml.safe_load((CRD_DIR / crd.crd.file).read_text())


def _validator(label: str) -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(
        _strip(_crd(label)["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    )


def _pool(**raw: Any) -> Any:
    return POOL.validate_python({"name": "p", "nodeClass": "general", **raw})


def _render(**raw: Any) -> dict[str, Any]:
    return render_karpenter_node_pool(_pool(**raw), annotations={})


# --- per-reason budgets ------------------------------------------------------------------------------------


def test_default_budgets_bound_every_reason_that_acts() -> None:
    assert _render()["spec"]["disruption"]["budgets"] == [
        {"nodes": "10%", "reasons": ["Empty", "Underutilized", "Drifted"]}
    ]
    # WhenEmpty: Underutilized never acts, so it is left out; consolidateAfter Never: only Drifted.
    when_empty = _render(disruption={"consolidationPolicy": "WhenEmpty"})
    assert when_empty["spec"]["disruption"]["budgets"] == [{"nodes": "10%", "reasons": ["Empty", "Drifted"]}]
    never = _render(disruption={"consolidateAfter": "Never"})
    assert never["spec"]["disruption"]["budgets"] == [{"nodes": "10%", "reasons": ["Drifted"]}]


def test_budgets_per_reason_with_windows() -> None:
    m = _render(
        disruption={
            "consolidationPolicy": "Balanced",
            "budgets": {"Underutilized": "2", "Empty": "20%"},
            "driftBudget": "5%",
            "windows": [
                {"schedule": "0 0 1 * *", "duration": "24h", "nodes": "0"},
                {
                    "schedule": "0 9 * * mon-fri",
                    "duration": "8h",
                    "nodes": "1",
                    "reasons": ["Underutilized", "Empty"],
                },
            ],
            "driftWindows": [{"schedule": "@daily", "duration": "2h"}],
        }
    )
    assert m["spec"]["disruption"] == {
        "consolidationPolicy": "Balanced",
        "consolidateAfter": "1m",
        "budgets": [
            {"nodes": "20%", "reasons": ["Empty"]},
            {"nodes": "2", "reasons": ["Underutilized"]},
            {"nodes": "5%", "reasons": ["Drifted"]},
            {"nodes": "0", "schedule": "0 0 1 * *", "duration": "24h"},  # every reason: a month-start freeze
            {
                "nodes": "1",
                "reasons": ["Empty", "Underutilized"],
                "schedule": "0 9 * * mon-fri",
                "duration": "8h",
            },
            {"nodes": "0", "reasons": ["Drifted"], "schedule": "@daily", "duration": "2h"},
        ],
    }
    for label in ("aws/1.14", "aws/1.15"):
        _validator(label).validate(m)


def test_unhealthy_budgets_only_in_v1_15() -> None:
    m = _render(disruption={"budgets": {"Unhealthy": "1"}})
    assert {"nodes": "1", "reasons": ["Unhealthy"]} in m["spec"]["disruption"]["budgets"]
    _validator("aws/1.15").validate(m)
    with pytest.raises(jsonschema.ValidationError, match="Unhealthy"):
        _validator("aws/1.14").validate(m)


@pytest.mark.parametrize(
    ("disruption", "match"),
    [
        ({"budgets": {"Expired": "1"}}, "budgets.Expired"),
        ({"driftBudget": "5%", "budgets": {"Drifted": "1"}}, "keep one"),
        (
            {"windows": [{"schedule": "0 9 * * *", "duration": "8h", "reasons": ["NodeClassDrift"]}]},
            "reasons",
        ),
        ({"consolidationPolicy": "WhenUnderutilized"}, "consolidationPolicy"),
    ],
)
def test_bad_budgets_are_refused_by_the_config_model(disruption: dict[str, Any], match: str) -> None:
    with pytest.raises(ValidationError, match=re.escape(match)):
        _pool(disruption=disruption)


def test_the_crd_rejects_what_the_config_model_refuses_or_leaves_to_it() -> None:
    """Node counts, schedules and durations are the CRD's patterns alone (judged by crd-schema)."""
    good = _render(disruption={"windows": [{"schedule": "0 9 * * *", "duration": "8h"}]})
    for path, bad in (
        (("budgets", 0, "nodes"), "ten"),
        (("budgets", 0, "reasons"), ["Expired"]),
        (("budgets", 1, "schedule"), "daily"),
        (("budgets", 1, "duration"), "30s"),
        (("consolidationPolicy",), "WhenUnderutilized"),
    ):
        m = copy.deepcopy(good)
        target: Any = m["spec"]["disruption"]
        for part in path[:-1]:
            target = target[part]
        target[path[-1]] = bad
        with pytest.raises(jsonschema.ValidationError):
            _validator("aws/1.14").validate(m)


# --- Balanced ----------------------------------------------------------------------------------------------


def test_balanced_is_in_v1_14_crds_but_not_in_hypershifts() -> None:
    m = _render(disruption={"consolidationPolicy": "Balanced"})
    _validator("aws/1.14").validate(m)
    _validator("aws/1.15").validate(m)
    with pytest.raises(jsonschema.ValidationError, match="Balanced"):
        _validator("hypershift/1.13").validate(m)


def test_balanced_has_no_threshold_field() -> None:
    """v1.15.0 hard-codes the Balanced threshold (score >= 1/k, k = 2): no API field to render."""
    disruption = _crd("aws/1.15")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
        "properties"
    ]["disruption"]["properties"]
    assert set(disruption) == {"budgets", "consolidateAfter", "consolidationPolicy"}


def _autonode(pools: list[dict[str, Any]], **karpenter: Any) -> AutoNode:
    raw: dict[str, Any] = {
        "roleArn": "arn:aws:iam::123456789012:role/k",
        "nodeClasses": [{"name": "general"}],
        "nodePools": pools,
    }
    if karpenter:
        raw["karpenter"] = karpenter
    return AutoNode.model_validate(raw)


def test_autonode_refuses_what_hypershifts_karpenter_lacks() -> None:
    balanced = [{"name": "b", "nodeClass": "general", "disruption": {"consolidationPolicy": "Balanced"}}]
    with pytest.raises(
        ValidationError, match=re.escape("Balanced needs Karpenter 1.14 or later and this cluster's is 1.13")
    ):
        _autonode(balanced)
    # nodefleet ships no HyperShift CRDs of a Karpenter 1.14: the cluster's objects could not be checked.
    with pytest.raises(
        ValidationError, match=re.escape("ships no CRDs of Karpenter 1.14 on HyperShift AutoNode")
    ):
        _autonode(balanced, version="1.14")
    unhealthy = [{"name": "u", "nodeClass": "general", "disruption": {"budgets": {"Unhealthy": "1"}}}]
    with pytest.raises(ValidationError, match=re.escape("Unhealthy budget reason needs Karpenter 1.15")):
        _autonode(unhealthy)
    static = [{"name": "s", "nodeClass": "general", "replicas": 3}]
    with pytest.raises(ValidationError, match="StaticCapacity feature gate"):
        _autonode(static)
    assert _autonode(static, version="1.13", featureGates=["StaticCapacity"]).node_pools[0].static


def test_self_managed_karpenter_defaults_to_v1_15() -> None:
    raw = {
        "bucket": "b-ignition",
        "nodeRole": "r",
        "instanceProfile": "p",
        "clusterDomain": "c.example.com",
        "nodeClasses": [{"name": "general", "configVersion": "rendered-worker-1"}],
        "nodePools": [
            {
                "name": "b",
                "nodeClass": "general",
                "disruption": {"consolidationPolicy": "Balanced", "budgets": {"Unhealthy": "1"}},
            }
        ],
    }
    assert SelfManagedKarpenter.model_validate(raw).version == "1.15"
    with pytest.raises(ValidationError, match="version"):
        SelfManagedKarpenter.model_validate({**raw, "version": "v1.15.0"})


# --- static NodePools --------------------------------------------------------------------------------------


def test_static_pool_renders_only_what_the_api_allows() -> None:
    m = _render(replicas=3, limits={"nodes": 5}, disruption={"driftBudget": "1"})
    spec = m["spec"]
    assert spec["replicas"] == 3 and spec["limits"] == {"nodes": 5}
    assert "weight" not in spec and "consolidationPolicy" not in spec["disruption"]
    assert spec["disruption"] == {
        "consolidateAfter": "Never",
        "budgets": [{"nodes": "1", "reasons": ["Drifted"]}],
    }
    assert m["metadata"]["annotations"] == {ANNOTATION_PROVISIONING: "static"}
    for label in CRDS:
        _validator(label).validate(m)
    dynamic = _render()
    assert "replicas" not in dynamic["spec"] and "annotations" not in dynamic["metadata"]


@pytest.mark.parametrize(
    ("raw", "key"),
    [
        ({"weight": 10}, "weight"),
        ({"limits": {"cpu": "100"}}, "limits.cpu"),
        ({"disruption": {"consolidationPolicy": "WhenEmpty"}}, "disruption.consolidationPolicy"),
        ({"replicas": -1}, "replicas"),
    ],
)
def test_static_pool_cannot_express_what_the_api_rejects(raw: dict[str, Any], key: str) -> None:
    """The CRD's CEL rules (no weight, only limits.nodes) are unrepresentable: a static pool has no such keys."""
    with pytest.raises(ValidationError, match=re.escape(key)):
        _pool(
            replicas=2, **{k: v for k, v in raw.items() if k != "replicas"}
        ) if "replicas" not in raw else _pool(**raw)


def test_the_crds_cel_rules_for_static_pools_are_the_ones_modelled() -> None:
    rules = {
        r["message"]: r["rule"]
        for r in _crd("aws/1.15")["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"][
            "x-kubernetes-validations"
        ]
    }
    assert rules == {
        "Cannot transition NodePool between static (replicas set) and dynamic (replicas unset) provisioning modes": "has(self.replicas) == has(oldSelf.replicas)",
        "only 'limits.nodes' is supported on static NodePools": "!has(self.replicas) || (!has(self.limits) || size(self.limits) == 0 || (size(self.limits) == 1 && 'nodes' in self.limits))",
        "'weight' is not supported on static NodePools": "!has(self.replicas) || !has(self.weight)",
    }
    assert isinstance(_pool(replicas=1), StaticNodePoolSpec) and isinstance(_pool(), KarpenterNodePoolSpec)


def test_only_a_switch_changes_what_the_pool_is_replaced_on() -> None:
    """The kind of pool is in the annotation the component replaces on (registered options:
    tests/components/test_karpenter.py); scaling a static pool changes replicas, never the annotation."""
    assert [f'metadata.annotations["{ANNOTATION_PROVISIONING}"]'] == NODE_POOL_REPLACE_ON
    assert _render(replicas=2)["metadata"] == _render(replicas=5)["metadata"]
    assert _render(replicas=2)["metadata"] != _render()["metadata"]


def test_budget_helper_matches_rendering() -> None:
    np = _pool(replicas=2, disruption={"budgets": {"Unhealthy": "1"}})
    assert disruption_budgets(np) == [
        {"nodes": "10%", "reasons": ["Drifted"]},
        {"nodes": "1", "reasons": ["Unhealthy"]},
    ]


# --- OpenshiftEC2NodeClass version -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "version", ["4.22.1", "5.0.0-ec.2", "5.0.0-0.nightly-2026-05-20-043516", "5.1.0-rc.1"]
)
def test_node_class_version_accepts_full_releases(version: str) -> None:
    assert AutoNodeClass.model_validate({"name": "a", "version": version}).version == version


@pytest.mark.parametrize("version", ["4.22", "v4.22.1", "4.22.1+build.5", "04.22.1"])
def test_node_class_version_refuses_what_is_not_a_release(version: str) -> None:
    with pytest.raises(ValidationError, match="version"):
        AutoNodeClass.model_validate({"name": "a", "version": version})


# --- the example stacks, object by object ------------------------------------------------------------------


@pytest.mark.parametrize(("stack", "karpenter"), [("hosted", "hypershift/1.13"), ("karpenter", "aws/1.15")])
def test_example_stacks_name_and_fit_the_crds_their_clusters_run(stack: str, karpenter: str) -> None:
    """Every Karpenter object names its cluster's CRD set (AutoNode: what HyperShift installs; self-managed:
    the upstream release declared), and fits it; the other objects fit their per-kind CRDs."""
    from mockruntime.run import run_program
    from nodefleet import kinds as k
    from tests.crdschema import crd_of, validate_manifest

    run = run_program(stack)
    checked = 0
    for reg in run.registrations:
        kind = next(
            (
                x
                for x in (
                    k.HOSTED_CLUSTER,
                    k.HYPERSHIFT_NODE_POOL,
                    k.OPENSHIFT_EC2_NODE_CLASS,
                    k.EC2_NODE_CLASS,
                    k.KARPENTER_NODE_POOL,
                )
                if x.token == reg.type
            ),
            None,
        )
        if kind is None:
            continue
        manifest = {"apiVersion": kind.api_version, "kind": kind.kind, **reg.inputs}
        if kind in (k.KARPENTER_NODE_POOL, k.EC2_NODE_CLASS):
            assert manifest["metadata"]["annotations"]["nodefleet.io/karpenter"] == karpenter
            assert crd_of(manifest) is load_index().for_object(kind.api_version, kind.kind, karpenter)
        validate_manifest(manifest)
        checked += 1
    assert checked >= 4


def test_replicas_and_budgets_do_not_drift_nodes() -> None:
    """Karpenter v1.15.0 still hashes spec.template only (NodePoolHashVersion v3): a pool's kind, limits and
    budgets never drift its nodes (a switch replaces the pool anyway)."""
    from nodefleet.drift.rules import static_drift, static_hash

    a = _render(disruption={"consolidationPolicy": "Balanced"})
    b = _render(replicas=3, disruption={"budgets": {"Drifted": "1"}})
    assert static_hash(a) == static_hash(b)
    assert static_drift(a, b) == ""
