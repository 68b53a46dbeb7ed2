"""What the program registers for hosted clusters (AutoNode and legacy), under Pulumi's mock runtime."""

from __future__ import annotations

import base64
import json
from typing import Any

import pulumi
import pytest

from mockruntime.run import MockRun, run_program
from nodefleet import kinds as k
from nodefleet.drift.rules import hypershift_config_hash, hypershift_generated_ec2_node_class
from nodefleet.render.hosted import LEGACY_CONTROLLER_OWNED
from nodefleet.render.ignition import hypershift_stub, merge_headers, user_data
from tests.conftest import stack_fleet


@pytest.fixture(scope="module")
def hosted() -> MockRun:
    return run_program("hosted")


def _run(raw: dict[str, Any]) -> MockRun:
    return run_program("hosted", {"nodefleet:fleet": raw})


def test_autonode_registers_classes_and_pools_but_never_an_ec2_node_class(hosted: MockRun) -> None:
    assert hosted.of_type(k.EC2_NODE_CLASS.token) == []
    classes = {r.inputs["metadata"]["name"] for r in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token)}
    assert classes == {"general", "batch"}
    pools = {r.inputs["metadata"]["name"]: r for r in hosted.of_type(k.KARPENTER_NODE_POOL.token)}
    assert set(pools) == {"on-demand", "spot"}
    ref = pools["spot"].inputs["spec"]["template"]["spec"]["nodeClassRef"]
    assert ref == {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "batch"}


def test_pools_depend_on_their_class(hosted: MockRun) -> None:
    by_name = {r.inputs["metadata"]["name"]: r for r in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token)}
    for pool in hosted.of_type(k.KARPENTER_NODE_POOL.token):
        cls = pool.inputs["spec"]["template"]["spec"]["nodeClassRef"]["name"]
        assert by_name[cls].urn in pool.depends_on


def test_every_reason_is_budgeted(hosted: MockRun) -> None:
    for pool in hosted.of_type(k.KARPENTER_NODE_POOL.token):
        budgets = pool.inputs["spec"]["disruption"]["budgets"]
        for reason in ("Empty", "Underutilized", "Drifted"):
            assert any(reason in b["reasons"] and "schedule" not in b for b in budgets), reason


def test_management_and_hosted_objects_go_through_separate_providers(hosted: MockRun) -> None:
    (hc,) = hosted.of_type(k.HOSTED_CLUSTER.token)
    provider = hosted.provider_of(hc)
    assert provider is not None and provider.inputs["renderYamlToDirectory"] == "rendered/hosted/prod-east"
    for reg in hosted.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token) + hosted.of_type(k.KARPENTER_NODE_POOL.token):
        p = hosted.provider_of(reg)
        assert p is not None and p.inputs["renderYamlToDirectory"] == "rendered/hosted/prod-east-hosted"
    assert hc.inputs["spec"]["autoNode"]["provisionerConfig"]["karpenter"]["aws"]["roleARN"].endswith(
        "role/prod-east-karpenter"
    )


def test_render_mode_writes_no_secret(hosted: MockRun) -> None:
    assert hosted.of_type("kubernetes:core/v1:Secret") == []
    (hc,) = hosted.of_type(k.HOSTED_CLUSTER.token)
    assert hc.inputs["spec"]["pullSecret"] == {"name": "prod-east-pull-secret"}


def test_apply_mode_creates_secrets_from_stack_secrets() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"]["fromConfig"] = "pullSecret"
    run = run_program("hosted", {"nodefleet:fleet": raw, "nodefleet:pullSecret": '{"auths":{}}'})
    (secret,) = run.of_type("kubernetes:core/v1:Secret")
    # The CLI's labels: with both, the HostedCluster controller adopts the Secret and deletes it with the cluster.
    assert secret.inputs["metadata"] == {
        "name": "prod-east-pull-secret",
        "namespace": "clusters",
        "labels": {
            "hypershift.openshift.io/safe-to-delete-with-cluster": "true",
            "hypershift.openshift.io/auto-created-for-infra": "prod-east-4kq8z",
        },
    }
    assert secret.inputs["type"] == "kubernetes.io/dockerconfigjson"
    (hc,) = run.of_type(k.HOSTED_CLUSTER.token)
    assert secret.urn in hc.depends_on
    # Apply mode: the namespace is a patch (created when missing, never deleted: other clusters share it).
    (namespace,) = run.of_type("kubernetes:core/v1:NamespacePatch")
    assert namespace.inputs["metadata"] == {"name": "clusters"}
    assert run.of_type("kubernetes:core/v1:Namespace") == []
    assert namespace.urn in hc.depends_on and namespace.urn in secret.depends_on


def test_apply_mode_aescbc_key_and_unlabelled_secret() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"] = {
        "name": "shared-pull-secret",
        "fromConfig": "pullSecret",
        "deleteWithCluster": False,
    }
    raw["clusters"][0]["secretEncryption"] = {
        "aescbc": {"activeKey": {"name": "prod-east-etcd-key", "fromConfig": "etcdKey"}}
    }
    run = run_program(
        "hosted",
        {
            "nodefleet:fleet": raw,
            "nodefleet:pullSecret": '{"auths":{}}',
            "nodefleet:etcdKey": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        },
    )
    secrets = {s.inputs["metadata"]["name"]: s for s in run.of_type("kubernetes:core/v1:Secret")}
    assert "labels" not in secrets["shared-pull-secret"].inputs["metadata"]
    key = secrets["prod-east-etcd-key"]
    assert (
        key.inputs["data"] == {"key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}
        and "data" in key.secret_inputs
    )
    (hc,) = run.of_type(k.HOSTED_CLUSTER.token)
    assert hc.inputs["spec"]["secretEncryption"] == {
        "type": "aescbc",
        "aescbc": {"activeKey": {"name": "prod-east-etcd-key"}},
    }


def test_render_mode_declares_the_namespace() -> None:
    run = run_program("hosted")
    (namespace,) = run.of_type("kubernetes:core/v1:Namespace")
    assert namespace.inputs["metadata"] == {"name": "clusters"}
    raw = stack_fleet("hosted")
    raw["clusters"][0]["createNamespace"] = False
    assert _run(raw).of_type("kubernetes:core/v1:Namespace") == []


def test_missing_stack_secret_registers_nothing() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"]["fromConfig"] = "pullSecret"
    with pytest.raises(pulumi.RunError) as e:
        _run(raw)
    assert "nodefleet:pullSecret is not set" in str(e.value) and "pulumi config set --secret" in str(e.value)
    assert e.value.registrations == []  # type: ignore[attr-defined]


def test_token_rotation_changes_only_what_hypershift_owns(hosted: MockRun) -> None:
    """A rotation rewrites the generated EC2NodeClass's userData, which nodefleet neither declares nor hashes.

    The rotation is modelled as HyperShift performs it: the karpenter-operator regenerates each EC2NodeClass
    from the declared OpenshiftEC2NodeClass with a new bearer token in the Ignition stub. Nothing nodefleet
    registers may carry the token, and the generated classes of two tokens may differ only in userData.
    """
    run = hosted
    declared = [r for r in run.registrations if r.custom]
    assert (
        run.of_type(k.EC2_NODE_CLASS.token) == []
    )  # HyperShift generates them; nodefleet never declares one

    def generated(token: str) -> dict[str, dict[str, Any]]:
        stub = user_data(
            hypershift_stub(
                "ignition.example.com",
                token=token,
                ca_pem="-----BEGIN CERTIFICATE-----\nca\n-----END CERTIFICATE-----\n",
                node_pool="clusters-prod-east/general-karpenter",
                config_hash=hypershift_config_hash(release="4.22.3"),
            )
        )
        return {
            r.name: hypershift_generated_ec2_node_class(
                r.inputs, user_data=stub, ami="ami-0123456789abcdef0", instance_profile="p", infra_id="i"
            )
            for r in run.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token)
        }

    before, after = generated("token-before-rotation"), generated("token-after-rotation")
    assert before.keys() == after.keys() and before
    for name in before:
        changed = {
            key for key in before[name]["spec"] if before[name]["spec"][key] != after[name]["spec"].get(key)
        }
        assert changed == {"userData"}, name
    bearers = {
        merge_headers(classes[name]["spec"]["userData"])["Authorization"].removeprefix("Bearer ")
        for classes in (before, after)
        for name in classes
    }
    assert {base64.b64decode(b).decode() for b in bearers} == {
        "token-before-rotation",
        "token-after-rotation",
    }
    declared_text = json.dumps([r.inputs for r in declared])
    for bearer in bearers:
        assert bearer not in declared_text and base64.b64decode(bearer).decode() not in declared_text


def test_legacy_mode_ignores_exactly_the_controller_owned_fields() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["mode"] = "legacy"
    run = _run(raw)
    classes = run.of_type(k.EC2_NODE_CLASS.token)
    assert len(classes) == 2 and run.of_type(k.OPENSHIFT_EC2_NODE_CLASS.token) == []
    for cls in classes:
        assert (
            sorted(cls.ignore_changes)
            == sorted(LEGACY_CONTROLLER_OWNED)
            == ["spec.amiSelectorTerms", "spec.userData"]
        )
        assert cls.inputs["spec"]["amiFamily"] == "Custom"
    for pool in run.of_type(k.KARPENTER_NODE_POOL.token):
        assert pool.ignore_changes == []


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (
            lambda c: c["autoNode"]["nodePools"][0].update(nodeClass="gpu"),
            "'gpu' is not a declared node class",
        ),
        (lambda c: c["autoNode"]["nodeClasses"][0].update(name="default"), "rewrites it on every reconcile"),
        (
            lambda c: c["autoNode"]["nodePools"][0].update(
                requirements=[{"key": "kubernetes.io/os", "operator": "Exists", "values": ["linux"]}]
            ),
            "takes no values",
        ),
    ],
    ids=["undeclared-class", "default-class", "exists-with-values"],
)
def test_bad_autonode_config_registers_nothing(change: Any, expected: str) -> None:
    raw = stack_fleet("hosted")
    change(raw["clusters"][0])
    with pytest.raises(pulumi.RunError) as e:
        _run(raw)
    assert expected in str(e.value) and str(e.value).count("\n") == 0
    assert e.value.registrations == []  # type: ignore[attr-defined]


def test_the_program_names_render_folders_with_the_one_layout_function(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each cluster's providers render to exactly the folders nodefleet.render_layout.render_targets names,
    the function configuration validation uses to refuse colliding folders: change the layout and the
    program's folders follow."""
    from nodefleet import render_layout

    def folders(run: MockRun) -> set[str]:
        return {
            str(p.inputs["renderYamlToDirectory"]).rsplit("/", 1)[-1]
            for p in run.of_type("pulumi:providers:kubernetes")
        }

    assert folders(run_program("hosted")) == set(render_layout.render_targets("prod-east", hosted=True))
    monkeypatch.setattr(render_layout, "HOSTED_SUFFIX", "-guest")
    assert folders(run_program("hosted")) == {"prod-east", "prod-east-guest"}
    assert folders(run_program("dev")) == set(render_layout.render_targets("dev", hosted=False))
