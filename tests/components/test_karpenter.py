"""Self-managed Karpenter: stable userData, the S3 object carrying what rotates, least-privilege reads."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mockruntime.run import SECRET_PLACEHOLDER, MockRun, read_stack_config, run_program, stack_path
from nodefleet import kinds as k
from nodefleet.render.ignition import merge_headers
from nodefleet.stackfile.yamlfile import load_yaml
from tests.conftest import stack_fleet
from tests.variants import karpenter_operator_fleet

CA_1 = "-----BEGIN CERTIFICATE-----\nMIIB-first\n-----END CERTIFICATE-----\n"
CA_2 = "-----BEGIN CERTIFICATE-----\nMIIB-rotated\n-----END CERTIFICATE-----\n"
OBJECT = "aws:s3/bucketObjectv2:BucketObjectv2"


def _run(ca: str = CA_1, release: str | None = None, config_version: str | None = None) -> MockRun:
    raw = stack_fleet("karpenter")
    if release:
        raw["clusters"][0]["release"] = release
    if config_version:
        for nc in raw["clusters"][0]["karpenter"]["nodeClasses"]:
            nc["configVersion"] = config_version
    return run_program("karpenter", {"nodefleet:fleet": raw, "nodefleet:mcsCaBundle": ca})


def _classes(run: MockRun) -> dict[str, dict[str, Any]]:
    return {r.inputs["metadata"]["name"]: r.inputs for r in run.of_type(k.EC2_NODE_CLASS.token)}


def _objects(run: MockRun) -> dict[str, dict[str, Any]]:
    return {r.name: r.inputs for r in run.of_type(OBJECT)}


def test_user_data_is_a_stable_s3_pointer_without_credentials() -> None:
    for name, spec in ((n, c["spec"]) for n, c in _classes(_run()).items()):
        ignition = json.loads(spec["userData"])
        (merge,) = ignition["ignition"]["config"]["merge"]
        assert merge["source"].startswith(
            f"s3://edge-m2x7c-ignition/nodefleet/ignition/edge/{name}/5.0.0-ec.2/"
        )
        assert merge_headers(spec["userData"]) == {}
        assert "security" not in ignition["ignition"]
        assert spec["amiSelectorTerms"][0]["id"].startswith("ami-")


def test_ca_rotation_rewrites_the_object_and_changes_no_node_class_or_pool() -> None:
    before, after = _run(CA_1), _run(CA_2)
    assert _classes(before) == _classes(after)
    assert {r.name: r.inputs for r in before.of_type(k.KARPENTER_NODE_POOL.token)} == {
        r.name: r.inputs for r in after.of_type(k.KARPENTER_NODE_POOL.token)
    }
    for name, obj in _objects(before).items():
        assert obj["key"] == _objects(after)[name]["key"]
        assert obj["content"] != _objects(after)[name]["content"]


def test_new_node_pointer_resolves_to_the_current_ca() -> None:
    """A node launched after the rotation follows its unchanged pointer to the object, which holds the new CA."""
    run = _run(CA_2)
    for name, cls in _classes(run).items():
        source = json.loads(cls["spec"]["userData"])["ignition"]["config"]["merge"][0]["source"]
        obj = next(o for o in _objects(run).values() if source == f"s3://{o['bucket']}/{o['key']}")
        payload = json.loads(obj["content"])
        assert (
            payload["ignition"]["config"]["merge"][0]["source"]
            == "https://api-int.edge.example.com:22623/config/worker"
        )
        ca_url = payload["ignition"]["security"]["tls"]["certificateAuthorities"][0]["source"]
        import base64

        assert base64.b64decode(ca_url.split(",", 1)[1]).decode() == CA_2, name


def test_release_bump_moves_the_pointer_exactly_once() -> None:
    v1, v1_again, v2 = _run(), _run(CA_2), _run(release="5.0.0")
    pointer = {n: c["spec"]["userData"] for n, c in _classes(v1).items()}
    assert pointer == {n: c["spec"]["userData"] for n, c in _classes(v1_again).items()}
    moved = {n: c["spec"]["userData"] for n, c in _classes(v2).items()}
    assert all(moved[n] != pointer[n] and "/5.0.0/" in moved[n] for n in pointer)
    assert moved == {n: c["spec"]["userData"] for n, c in _classes(_run(CA_2, release="5.0.0")).items()}


def test_rendered_config_change_moves_the_pointer() -> None:
    a = _classes(_run())
    b = _classes(_run(config_version="rendered-worker-0000aaaa1111"))
    assert all(a[n]["spec"]["userData"] != b[n]["spec"]["userData"] for n in a)


def test_node_role_can_read_exactly_the_cluster_prefix() -> None:
    (policy,) = _run().of_type("aws:iam/rolePolicy:RolePolicy")
    assert policy.inputs["role"] == "edge-m2x7c-karpenter-node"
    (statement,) = json.loads(policy.inputs["policy"])["Statement"]
    assert statement["Action"] in ("s3:GetObject", ["s3:GetObject"])
    assert statement["Resource"] in (
        "arn:aws:s3:::edge-m2x7c-ignition/nodefleet/ignition/edge/*",
        ["arn:aws:s3:::edge-m2x7c-ignition/nodefleet/ignition/edge/*"],
    )


def test_node_class_waits_for_its_object() -> None:
    run = _run()
    objects = {r.name: r.urn for r in run.of_type(OBJECT)}
    for cls in run.of_type(k.EC2_NODE_CLASS.token):
        name = cls.inputs["metadata"]["name"]
        assert objects[f"edge-karpenter-ignition-{name}"] in cls.depends_on


def test_the_stack_file_holds_the_ca_only_encrypted() -> None:
    """The CA bundle is a `secure:` value in the committed stack file; the check hands the program a marker."""
    raw = load_yaml(stack_path("karpenter").read_text(), "karpenter")
    value = raw["config"]["nodefleet:mcsCaBundle"]
    assert set(value) == {"secure"} and value["secure"].startswith("v1:")
    assert "BEGIN CERTIFICATE" not in stack_path("karpenter").read_text()
    assert read_stack_config(stack_path("karpenter"))["nodefleet:mcsCaBundle"] == SECRET_PLACEHOLDER


def test_missing_ca_secret_is_a_clear_error() -> None:
    import pulumi

    with pytest.raises(pulumi.RunError) as e:
        run_program("karpenter", {"nodefleet:fleet": stack_fleet("karpenter")})
    assert "nodefleet:mcsCaBundle is not set (MCS CA bundle of cluster edge)" in str(e.value)


def _operator_run() -> MockRun:
    return run_program("karpenter", {"nodefleet:fleet": karpenter_operator_fleet()})


@pytest.mark.parametrize("which", ["self-managed", "operator", "hosted"])
def test_every_karpenter_node_pool_is_replaced_deleting_first_on_a_provisioning_switch(which: str) -> None:
    """The NodePool API refuses a static <-> dynamic switch in place, so the engine must replace the pool, and
    with the same name delete it first: what is registered says so for every Karpenter NodePool, and for
    nothing else."""
    from nodefleet.render.hosted import ANNOTATION_PROVISIONING

    run = {"self-managed": _run, "operator": _operator_run, "hosted": lambda: run_program("hosted")}[which]()
    pools = run.of_type(k.KARPENTER_NODE_POOL.token)
    assert pools
    for pool in pools:
        assert pool.replace_on_changes == [f'metadata.annotations["{ANNOTATION_PROVISIONING}"]'], pool.name
        assert pool.delete_before_replace is True, pool.name
    others = [r for r in run.registrations if r.type != k.KARPENTER_NODE_POOL.token]
    assert not [r.name for r in others if r.replace_on_changes or r.delete_before_replace is not None]
