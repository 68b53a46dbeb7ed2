"""crd-schema and crd-schema-unchecked through run_policy: the CRD's message, the field path and the object
in every violation; the previous object from the last render or from a stack checkpoint."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy.proxy import UNKNOWN_NUMBER_VALUE

from nodefleet import kinds as k
from nodefleet.render_layout import manifest_path
from policies.crd_schema import crd_schema, crd_schema_unchecked
from tests.crdobjects import TOKENS, rendered
from tests.policies.helpers import run_policy


def _node_pool(**spec: Any) -> dict[str, Any]:
    obj = rendered(k.HYPERSHIFT_NODE_POOL.token)
    obj["spec"].update(spec)
    return obj


@pytest.mark.parametrize("token", TOKENS)
def test_rendered_objects_pass_both_policies(token: str) -> None:
    resource_type = token.removeprefix("legacy:")
    assert run_policy(crd_schema, resource_type, rendered(token)) == []
    assert run_policy(crd_schema_unchecked, resource_type, rendered(token)) == []


def test_violation_names_object_field_crd_message_and_rule() -> None:
    obj = _node_pool(autoScaling={"min": 5, "max": 1})
    del obj["spec"]["replicas"]
    (v,) = run_policy(crd_schema, k.HYPERSHIFT_NODE_POOL.token, obj)
    assert v.level == "mandatory"
    assert v.message.startswith(
        "NodePool 'clusters/prod-east-infra' (hypershift.openshift.io/v1beta1): spec.autoScaling: "
    )
    assert "max must be equal or greater than min" in v.message
    assert "CRD rule `self.max >= self.min`" in v.message


def test_kinds_without_a_shipped_crd_are_not_judged() -> None:
    assert run_policy(crd_schema, "kubernetes:core/v1:ConfigMap", {"data": {"a": 1}}) == []


def test_transition_rules_use_the_last_rendered_manifest(tmp_path: Path) -> None:
    previous = rendered(k.HYPERSHIFT_NODE_POOL.token)
    file = tmp_path / manifest_path(previous)
    file.parent.mkdir(parents=True)
    file.write_text(yaml.safe_dump(previous))
    changed = _node_pool(arch="arm64")
    provider = {"renderYamlToDirectory": str(tmp_path)}
    (v,) = run_policy(crd_schema, k.HYPERSHIFT_NODE_POOL.token, changed, provider_props=provider)
    assert 'spec.arch: Invalid value: "arm64": Arch is immutable' in v.message
    assert f"compared with the last rendered manifest {file}" in v.message
    # Never rendered before: a create, so the transition rule does not apply.
    assert (
        run_policy(
            crd_schema,
            k.HYPERSHIFT_NODE_POOL.token,
            changed,
            provider_props={"renderYamlToDirectory": str(tmp_path / "new")},
        )
        == []
    )


def _export(tmp_path: Path, urn: str, outputs: dict[str, Any]) -> Path:
    path = tmp_path / "state.json"
    path.write_text(
        json.dumps(
            {
                "version": 3,
                "deployment": {
                    "manifest": {},
                    "resources": [
                        {
                            "urn": urn,
                            "custom": True,
                            "type": k.HOSTED_CLUSTER.token,
                            "inputs": {},
                            "outputs": outputs,
                        }
                    ],
                },
            }
        )
    )
    return path


def test_transition_rules_use_a_stack_checkpoint_given_in_policy_config(tmp_path: Path) -> None:
    live = rendered(k.HOSTED_CLUSTER.token)
    live["spec"]["controllerAvailabilityPolicy"] = "HighlyAvailable"
    live["status"] = {"version": {"desired": {"image": "x"}}}
    state = _export(tmp_path, "urn:test", live)
    new = rendered(k.HOSTED_CLUSTER.token)
    new["spec"]["controllerAvailabilityPolicy"] = "SingleReplica"
    config = {"crd-schema": {"previousState": str(state)}}
    (v,) = run_policy(crd_schema, k.HOSTED_CLUSTER.token, new, config=config)
    assert "ControllerAvailabilityPolicy is immutable" in v.message
    assert f"compared with the stack checkpoint {state}" in v.message


def test_an_encrypted_secret_in_the_checkpoint_is_reported_not_guessed(tmp_path: Path) -> None:
    live = rendered(k.HOSTED_CLUSTER.token)
    live["spec"]["infraID"] = {
        "4dabf18193072939515e22adb298388d": "1b47061264138c4ac30d75fd1eb44270",
        "ciphertext": "x",
    }
    state = _export(tmp_path, "urn:test", live)
    new = rendered(k.HOSTED_CLUSTER.token)
    config = {
        "crd-schema": {"previousState": str(state)},
        "crd-schema-unchecked": {"previousState": str(state)},
    }
    assert run_policy(crd_schema, k.HOSTED_CLUSTER.token, new, config=config) == []
    notes = run_policy(crd_schema_unchecked, k.HOSTED_CLUSTER.token, new, config=config)
    assert notes and all(n.level == "advisory" for n in notes)
    assert any("previous value is not fully known" in n.message for n in notes)


def test_a_missing_checkpoint_is_a_violation_saying_how_to_make_one(tmp_path: Path) -> None:
    config = {"crd-schema": {"previousState": str(tmp_path / "nope.json")}}
    (v,) = run_policy(crd_schema, k.HOSTED_CLUSTER.token, rendered(k.HOSTED_CLUSTER.token), config=config)
    assert "pulumi stack export --file" in v.message


def test_unknown_values_give_an_advisory_naming_the_rule() -> None:
    obj = _node_pool(autoScaling={"min": UNKNOWN_NUMBER_VALUE, "max": 1})
    del obj["spec"]["replicas"]
    assert run_policy(crd_schema, k.HYPERSHIFT_NODE_POOL.token, obj) == []
    notes = run_policy(crd_schema_unchecked, k.HYPERSHIFT_NODE_POOL.token, obj)
    assert [n.level for n in notes] == ["advisory"]
    assert "because spec.autoScaling.min is unknown until apply" in notes[0].message
    assert "`self.max >= self.min` at spec.autoScaling" in notes[0].message


def test_a_patch_is_judged_as_a_patch() -> None:
    patch = {
        "apiVersion": k.MACHINE_CONFIGURATION.api_version,
        "kind": k.MACHINE_CONFIGURATION.kind,
        "metadata": {"name": "cluster"},
        "spec": {"bootImageSkewEnforcement": {"mode": "Manual"}},
    }
    (v,) = run_policy(crd_schema, k.MACHINE_CONFIGURATION.patch_token, patch)
    assert "The API server rejects this server-side-apply patch" in v.message
    assert "manual is required when mode is Manual" in v.message


# Each validator removed from the config model (nodefleet/stackfile/karpenter.py, config_hosted.py), the stack
# change it used to refuse, and the CRD rule that refuses it now, in the CRD's words.
_POOL = ("autoNode", "nodePools", 0)
MOVED: list[tuple[str, tuple[Any, ...], Any, str]] = [
    (
        "requirement-key-domain",
        (*_POOL, "requirements"),
        [{"key": "karpenter.sh/instance-family", "values": ["m6i"]}],
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "requirement-in-without-values",
        (*_POOL, "requirements"),
        [{"key": "karpenter.k8s.aws/instance-size", "values": []}],
        "evaluating rule: requirements with operator 'In' must have a value defined",
    ),
    (
        "requirement-gt-integer",
        (*_POOL, "requirements"),
        [{"key": "karpenter.k8s.aws/instance-cpu", "operator": "Gt", "values": ["four"]}],
        "type conversion error from 'string' to 'int' evaluating rule",
    ),
    (
        "requirement-min-values",
        (*_POOL, "requirements"),
        [{"key": "karpenter.k8s.aws/instance-family", "values": ["m6i"], "minValues": 2}],
        "requirements with 'minValues' must have at least that many values",
    ),
    (
        "requirement-min-values-bound",
        (*_POOL, "requirements"),
        [{"key": "karpenter.k8s.aws/instance-family", "values": ["m6i"] * 51, "minValues": 51}],
        "should be less than or equal to 50",
    ),
    (
        "label-domain",
        (*_POOL, "labels"),
        {"karpenter.sh/team": "a"},
        'label domain "karpenter.sh" is restricted',
    ),
    (
        "label-hostname",
        (*_POOL, "labels"),
        {"kubernetes.io/hostname": "a"},
        'label "kubernetes.io/hostname" is restricted',
    ),
    (
        "class-tag",
        ("autoNode", "nodeClasses", 0, "tags"),
        {"karpenter.sh/nodeclaim": "x"},
        "tag contains a restricted tag matching karpenter.sh/nodeclaim",
    ),
    (
        "drift-window-duration",
        (*_POOL, "disruption", "driftWindows"),
        [{"schedule": "@daily", "duration": "8 hours"}],
        'Invalid value: "8 hours": spec.disruption.budgets[3].duration in body should match',
    ),
    (
        "drift-window-nodes",
        (*_POOL, "disruption", "driftWindows"),
        [{"schedule": "@daily", "duration": "8h", "nodes": "ten"}],
        'Invalid value: "ten": spec.disruption.budgets[3].nodes in body should match',
    ),
    (
        "consolidate-after",
        (*_POOL, "disruption", "consolidateAfter"),
        "soon",
        'consolidateAfter: Invalid value: "soon": spec.disruption.consolidateAfter in body should match',
    ),
    (
        "drift-budget",
        (*_POOL, "disruption", "driftBudget"),
        "150%",
        'Invalid value: "150%": spec.disruption.budgets[2].nodes in body should match',
    ),
    (
        "expire-after",
        (*_POOL, "expireAfter"),
        "30d",
        'expireAfter: Invalid value: "30d": spec.template.spec.expireAfter in body should match',
    ),
    (
        "termination-grace-period",
        (*_POOL, "terminationGracePeriod"),
        "1d",
        'terminationGracePeriod: Invalid value: "1d": spec.template.spec.terminationGracePeriod in body should match',
    ),
    (
        "weight",
        (*_POOL, "weight"),
        0,
        "spec.weight: Invalid value: 0: spec.weight in body should be greater than or equal to 1",
    ),
    ("role-arn", ("autoNode", "roleArn"), "karpenter-role", "roleARN must be a valid AWS IAM role ARN"),
    (
        "autoscaling-min-max",
        ("nodePools", 0, "autoScaling"),
        {"min": 5, "max": 1},
        "max must be equal or greater than min",
    ),
    (
        "autoscaling-negative",
        ("nodePools", 0, "autoScaling"),
        {"min": -1, "max": 1},
        "spec.autoScaling.min: Invalid value: -1: spec.autoScaling.min in body should be greater than or equal to 0",
    ),
]


@pytest.mark.parametrize(("path", "value", "expected"), [m[1:] for m in MOVED], ids=[m[0] for m in MOVED])
def test_rules_moved_out_of_the_config_model_are_judged_by_the_crd(
    path: tuple[Any, ...], value: Any, expected: str
) -> None:
    from mockruntime.evaluate import evaluate_run
    from mockruntime.run import run_program, stack_fleet

    fleet = stack_fleet("hosted")
    node: Any = fleet["clusters"][0]
    for part in path[:-1]:
        node = node[part]
    node[path[-1]] = value
    if path[:2] == ("nodePools", 0):
        node.pop("replicas", None)
    run = run_program("hosted", {"nodefleet:fleet": fleet})  # the config model accepts it now
    found = [v.message for v in evaluate_run(run, [crd_schema]) if v.level == "mandatory"]
    assert any(expected in m for m in found), found


def test_an_object_of_a_crd_the_api_server_refuses_says_so_and_how_to_fix_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A CRD whose rule does not compile on the API server is never installed: its objects are refused with
    the reason, and the fix is the CRD's, not the stack's."""
    from nodefleet.apiserver import schema

    obj = _node_pool()
    reason = (
        "openAPIV3Schema.x-kubernetes-validations[0].rule: compilation failed: undeclared reference to 'cel'"
    )
    monkeypatch.setattr(schema, "_crd_refusals", lambda crd: [reason])
    (v,) = run_policy(crd_schema, k.HYPERSHIFT_NODE_POOL.token, obj)
    assert v.level == "mandatory"
    assert "the API server refuses this CRD (hypershift.openshift.io_nodepools.yaml, v1beta1)" in v.message
    assert reason in v.message and "`nodefleet crds refresh`" in v.message, v.message


# --- which API server: the version of the cluster each object lands on --------------------------------------


def _machine_set_on(release: str) -> dict[str, Any]:
    """dev's MachineSet, of a cluster at ``release``, with a fraction for its replica count: both API servers
    refuse it, Kubernetes 1.36 with one more error (its integer check of ``format: int32``), which 1.35 has not."""
    obj = rendered(k.MACHINE_SET.token)
    obj["metadata"]["annotations"][k.ANNOTATION_RELEASE] = release
    obj["spec"]["replicas"] = 1.5
    return obj


CHECKED = "Checked value must be of type integer"


def _judged(release: str, config: dict[str, Any] | None = None) -> list[str]:
    found = [
        v.message
        for v in run_policy(crd_schema, k.MACHINE_SET.token, _machine_set_on(release), config=config)
    ]
    assert found, "a fraction in spec.replicas is refused by every version"
    return found


def test_an_object_is_judged_by_the_api_server_of_the_cluster_it_lands_on() -> None:
    """No kubernetesVersion set: a MachineSet of an OpenShift 5.0 cluster (Kubernetes 1.36) is judged by 1.36's
    words, one of a 4.22 cluster (Kubernetes 1.35) or older by 1.35's; the setting still overrides the cluster's."""
    assert any(CHECKED in m for m in _judged("5.0.0"))
    assert not any(CHECKED in m for m in _judged("4.22.3"))
    assert not any(CHECKED in m for m in _judged("4.16.9"))
    assert not any(CHECKED in m for m in _judged("5.0.0", {"crd-schema": {"kubernetesVersion": "1.35"}}))
    assert any(CHECKED in m for m in _judged("4.22.3", {"crd-schema": {"kubernetesVersion": "1.36"}}))


@pytest.mark.parametrize(
    ("token", "release", "version"),
    [
        (k.MACHINE_SET.token, "5.0.0-ec.2", "1.36"),
        (k.MACHINE_CONFIG_POOL.token, "5.0.0", "1.36"),
        (k.MACHINE_CONFIGURATION.patch_token, "4.22.3", "1.35"),
        (k.OPENSHIFT_EC2_NODE_CLASS.token, "5.0.0", "1.36"),
        # On the management cluster, whatever release the HostedCluster asks for.
        (k.HOSTED_CLUSTER.token, "5.0.0", "1.35"),
        (k.HYPERSHIFT_NODE_POOL.token, "5.0.0", "1.35"),
    ],
)
def test_the_version_follows_the_release_the_object_records(token: str, release: str, version: str) -> None:
    from policies.crd_schema import kubernetes_for

    obj = rendered(token)
    assert k.ANNOTATION_RELEASE in obj["metadata"]["annotations"], "nodefleet records the cluster's release"
    obj["metadata"]["annotations"][k.ANNOTATION_RELEASE] = release
    assert kubernetes_for(token, obj)[0] == version
    assert kubernetes_for(token, obj, "1.36")[0] == "1.36"


@pytest.mark.parametrize("token", [k.HOSTED_CLUSTER.token, k.HYPERSHIFT_NODE_POOL.token])
def test_objects_on_a_management_cluster_follow_its_release_where_the_registry_says_it(token: str) -> None:
    from policies.crd_schema import kubernetes_for

    obj = rendered(token)
    obj["metadata"]["annotations"][k.ANNOTATION_RELEASE] = (
        "4.21.9"  # the hosted cluster's, not where it lands
    )
    obj["metadata"]["annotations"][k.ANNOTATION_MANAGEMENT_RELEASE] = "5.0.0"
    assert kubernetes_for(token, obj) == (
        "1.36",
        "on a management cluster on OpenShift 5.0.0, Kubernetes 1.36",
    )
