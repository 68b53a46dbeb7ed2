"""karpenter-provisioning-switch (against the last rendered copy) and karpenter-operator-fields."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from mockruntime.run import run_program
from nodefleet import kinds as k
from nodefleet.render_layout import manifest_path
from policies.karpenter import (
    karpenter_operator_fields,
    karpenter_provisioning_switch,
    provisioning_switch,
)
from tests.conftest import stack_fleet
from tests.policies.helpers import run_policy, run_stack_policy, stack_resource

NODE_POOL = k.KARPENTER_NODE_POOL.token
EC2 = k.EC2_NODE_CLASS.token


def _pool(replicas: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "template": {
            "spec": {"nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "g"}}
        },
        "disruption": {"consolidateAfter": "1m", "budgets": [{"nodes": "10%"}]},
    }
    if replicas is not None:
        spec["replicas"] = replicas
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", "metadata": {"name": "batch"}, "spec": spec}


def _rendered(tmp_path: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    """A render directory holding ``manifest`` where the provider's render mode put it last time."""
    path = tmp_path / manifest_path(manifest)
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(manifest))
    return {"renderYamlToDirectory": str(tmp_path)}


def test_dynamic_to_static_is_flagged_with_what_it_does(tmp_path: Path) -> None:
    provider = _rendered(tmp_path, _pool())
    (v,) = run_policy(karpenter_provisioning_switch, NODE_POOL, _pool(replicas=3), provider_props=provider)
    assert v.level == "advisory"
    assert "'batch' switches from dynamic to static" in v.message
    assert "deletes it first" in v.message and "drains and terminates every node" in v.message
    assert "keeps 3 node(s)" in v.message


def test_static_to_dynamic_is_flagged(tmp_path: Path) -> None:
    provider = _rendered(tmp_path, _pool(replicas=2))
    (v,) = run_policy(karpenter_provisioning_switch, NODE_POOL, _pool(), provider_props=provider)
    assert "from static (2 replicas) to dynamic" in v.message


def test_no_switch_no_finding(tmp_path: Path) -> None:
    provider = _rendered(tmp_path, _pool(replicas=2))
    # Scaling a static pool is an update.
    assert (
        run_policy(karpenter_provisioning_switch, NODE_POOL, _pool(replicas=5), provider_props=provider) == []
    )
    # No previous render (first run, apply mode) or another kind: nothing to compare.
    assert run_policy(karpenter_provisioning_switch, NODE_POOL, _pool(3), provider_props={}) == []
    assert run_policy(karpenter_provisioning_switch, NODE_POOL, _pool(3)) == []
    assert run_policy(karpenter_provisioning_switch, EC2, _pool(3), provider_props=provider) == []
    assert provisioning_switch(_pool(1), _pool(1)) is None


def test_check_sees_a_switch_against_the_last_render(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """End to end: the example stack rendered, then its spot pool made static."""
    monkeypatch.setenv("NODEFLEET_RENDER_ROOT", str(tmp_path))
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "render", "directory": str(tmp_path / "{stack}")}
    first = run_program("hosted", {"nodefleet:fleet": raw})
    (spot,) = [r for r in first.of_type(NODE_POOL) if r.inputs["metadata"]["name"] == "spot"]
    provider = first.provider_of(spot)
    assert provider is not None
    directory = Path(provider.inputs["renderYamlToDirectory"])
    manifest = {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **spot.inputs}
    (directory / manifest_path(manifest)).parent.mkdir(parents=True)
    (directory / manifest_path(manifest)).write_text(yaml.safe_dump(manifest))
    pool = raw["clusters"][0]["autoNode"]["nodePools"][1]
    pool.update(replicas=4)
    for key in ("weight", "limits"):
        pool.pop(key, None)
    pool["disruption"] = {"driftBudget": pool["disruption"]["driftBudget"]}
    raw["clusters"][0]["autoNode"]["karpenter"] = {"version": "1.13", "featureGates": ["StaticCapacity"]}
    second = run_program("hosted", {"nodefleet:fleet": raw})
    (static,) = [r for r in second.of_type(NODE_POOL) if r.inputs["metadata"]["name"] == "spot"]
    (v,) = run_policy(
        karpenter_provisioning_switch,
        NODE_POOL,
        {"apiVersion": "karpenter.sh/v1", "kind": "NodePool", **static.inputs},
        provider_props=second.provider_of(static).inputs,  # type: ignore[union-attr]
    )
    assert "'spot' switches from dynamic to static" in v.message


# --- karpenter-operator-fields -----------------------------------------------------------------------------


def _class(name: str, mode: str | None, **spec: Any) -> dict[str, Any]:
    notes = {k.ANNOTATION_USERDATA_MODE: mode} if mode else {}
    return {
        "apiVersion": "karpenter.k8s.aws/v1",
        "kind": "EC2NodeClass",
        "metadata": {"name": name, "annotations": notes},
        "spec": {"subnetSelectorTerms": [{"tags": {"a": "b"}}], **spec},
    }


def _messages(*resources: Any) -> list[str]:
    return [v.message for v in run_stack_policy(karpenter_operator_fields, list(resources))]


def test_operator_classes_comply() -> None:
    assert _messages(stack_resource(EC2, _class("general", "karpenter-operator"), provider="edge-k8s")) == []


def test_s3_pointer_and_hand_written_classes_on_an_operator_cluster() -> None:
    found = _messages(
        stack_resource(EC2, _class("general", "karpenter-operator"), provider="edge-k8s"),
        stack_resource(
            EC2,
            _class(
                "arm", "s3-pointer", userData="{}", amiFamily="Custom", amiSelectorTerms=[{"id": "ami-1"}]
            ),
            provider="edge-k8s",
        ),
        stack_resource(EC2, _class("mine", None, amiFamily="Custom"), provider="edge-k8s"),
        # Another cluster (provider) without the operator: not judged.
        stack_resource(EC2, _class("other", "s3-pointer", userData="{}"), provider="other-k8s"),
    )
    assert len(found) == 2
    assert "EC2NodeClass 'arm' sets spec.amiFamily, spec.amiSelectorTerms, spec.userData" in found[0]
    assert "nodefleet's S3-pointer class writes them" in found[0]
    assert "would be refused" in found[0] and "karpenterOperator.nodeClasses" in found[0]
    assert "EC2NodeClass 'mine' sets spec.amiFamily" in found[1]


def test_operator_class_declaring_owned_fields_by_hand() -> None:
    (msg,) = _messages(
        stack_resource(EC2, _class("general", "karpenter-operator", userData="x"), provider="p")
    )
    assert "spec.userData" in msg and "it declares them" in msg


def test_operator_stack_renders_only_user_owned_fields() -> None:
    from tests.variants import karpenter_operator_fleet

    raw = karpenter_operator_fleet()
    raw["clusters"][0]["karpenterOperator"]["nodeClasses"][0]["tags"] = {"team": "a"}
    run = run_program("karpenter", {"nodefleet:fleet": raw})
    (cls,) = run.of_type(EC2)
    assert not {"amiFamily", "amiSelectorTerms", "userData"} & set(cls.inputs["spec"])
    assert cls.inputs["spec"]["instanceProfile"] == "edge-m2x7c-worker-profile"
    assert cls.inputs["metadata"]["annotations"][k.ANNOTATION_USERDATA_MODE] == "karpenter-operator"
    assert run.of_type("aws:s3/bucketObjectv2:BucketObjectv2") == []
    (pool,) = run.of_type(NODE_POOL)
    assert cls.urn in pool.depends_on


def test_operator_class_fits_the_operators_relaxed_crd_not_upstreams() -> None:
    """The operator installs a relaxed EC2NodeClass CRD (HyperShift's: nothing required, amiFamily Custom);
    a class without the operator-owned fields fits it, and upstream's CRD would refuse it."""
    import jsonschema
    import pytest

    from nodefleet.render.karpenter import render_operator_ec2_node_class
    from nodefleet.render.objects import load_fleet
    from tests.conftest import PROJECT
    from tests.crdschema import validate_manifest
    from tests.variants import karpenter_operator_fleet

    c = load_fleet(karpenter_operator_fleet(), "karpenter", PROJECT).clusters[0].config
    assert c.karpenter_operator is not None
    m = render_operator_ec2_node_class(c, c.karpenter_operator.node_classes[0])  # type: ignore[arg-type]
    assert m["metadata"]["annotations"]["nodefleet.io/karpenter"] == "openshift/1.13"
    validate_manifest(m)  # the set it names: the operator's (HyperShift's) relaxed CRD
    del m["metadata"]["annotations"]["nodefleet.io/karpenter"]
    with pytest.raises(jsonschema.ValidationError, match="amiSelectorTerms"):
        validate_manifest(m)  # without the annotation: the default set, upstream's
