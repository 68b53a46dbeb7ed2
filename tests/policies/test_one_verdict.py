"""One mistake, one verdict: a CRD rule is judged by crd-schema alone, with the CRD's message and, where
nodefleet knows it, what to write instead; no other policy of the pack repeats it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi_policy import ResourceValidationPolicy, StackValidationPolicy

from mockruntime.evaluate import Violation, evaluate_resource, evaluate_stack
from mockruntime.run import stack_fleet
from nodefleet import kinds as k
from policies.pack import POLICIES
from tests.conftest import nodefleet, own_tree
from tests.crdobjects import rendered
from tests.nodefleet.apiserver.test_schema import REJECTED, Change
from tests.policies.helpers import stack_resource

NODE_POOL = k.KARPENTER_NODE_POOL.token
RESTRICTED = 'label domain "karpenter.sh" is restricted'


def _whole_pack(token: str, obj: dict[str, Any]) -> list[Violation]:
    """Every policy of the pack on one object: the resource policies, and the stack policies on a stack of it."""
    # As the component registers it: an MCO-managed MachineSet's AMI is left to the MCO.
    managed = (obj.get("metadata") or {}).get("annotations", {}).get(k.ANNOTATION_OWNER) == "mco"
    ignore = [k.AMI_PATH] if managed else []
    found: list[Violation] = []
    for policy in POLICIES:
        if isinstance(policy, ResourceValidationPolicy):
            found += evaluate_resource(
                policy, token, obj, urn=f"urn:{token}", name="test", ignore_changes=ignore
            )
        elif isinstance(policy, StackValidationPolicy):
            found += evaluate_stack(policy, [stack_resource(token, obj, ignore_changes=ignore)])
    return found


def _mandatory(found: list[Violation]) -> list[Violation]:
    return [v for v in found if v.level == "mandatory"]


def _hypershift_doc_example() -> dict[str, Any]:
    """The NodePool of HyperShift's AutoNode how-to, written by hand (no nodefleet annotations)."""
    return {
        "apiVersion": "karpenter.sh/v1",
        "kind": "NodePool",
        "metadata": {"name": "spot-and-gpu"},
        "spec": {
            "template": {
                "spec": {
                    "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "default"},
                    "requirements": [
                        {
                            "key": "karpenter.sh/capacity-type",
                            "operator": "In",
                            "values": ["spot", "on-demand"],
                        },
                        {"key": "karpenter.sh/instance-family", "operator": "In", "values": ["g4dn", "m5"]},
                        {
                            "key": "karpenter.sh/instance-size",
                            "operator": "In",
                            "values": ["large", "xlarge"],
                        },
                        {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    ],
                }
            },
            "disruption": {
                "consolidateAfter": "1m",
                "budgets": [{"nodes": "10%"}],
            },
        },
    }


@pytest.mark.parametrize("karpenter", [None, "hypershift/1.13", "aws/1.12", "aws/1.15"])
def test_a_restricted_requirement_key_is_one_mandatory_violation_with_the_crds_message_and_the_fix(
    karpenter: str | None,
) -> None:
    doc = _hypershift_doc_example()
    if karpenter:
        doc["metadata"]["annotations"] = {"nodefleet.io/karpenter": karpenter}
    found = _mandatory(_whole_pack(NODE_POOL, doc))
    assert [v.policy for v in found] == ["crd-schema", "crd-schema"]
    family, size = (v.message for v in found)
    assert "spec.template.spec.requirements[1].key" in family and RESTRICTED in family
    assert "use karpenter.k8s.aws/instance-family instead of karpenter.sh/instance-family" in family
    assert "spec.template.spec.requirements[2].key" in size and RESTRICTED in size
    assert "use karpenter.k8s.aws/instance-size instead of karpenter.sh/instance-size" in size
    assert f"CRD of {karpenter or 'aws/1.15'} (" in family


@pytest.mark.parametrize(
    ("key", "hint"),
    [
        ("karpenter.sh/nodepool", "Karpenter puts karpenter.sh/nodepool on its nodes itself"),
        (
            "karpenter.sh/zone",
            "use the well-known label topology.kubernetes.io/zone instead of karpenter.sh/zone",
        ),
        (
            "karpenter.sh/instance-type",
            "node.kubernetes.io/instance-type instead of karpenter.sh/instance-type",
        ),
        ("karpenter.sh/team", "a label in your own domain"),
        ("node.karpenter.sh/team", "a label in your own domain"),
        ("karpenter.k8s.aws/instance-famly", "did you mean karpenter.k8s.aws/instance-family?"),
        ("karpenter.k8s.aws/instance-type", "node.kubernetes.io/instance-type instead"),
    ],
)
def test_each_restricted_key_gets_its_fix(key: str, hint: str) -> None:
    doc = _hypershift_doc_example()
    doc["spec"]["template"]["spec"]["requirements"] = [{"key": key, "operator": "Exists"}]
    found = _mandatory(_whole_pack(NODE_POOL, doc))
    assert found and {v.policy for v in found} == {"crd-schema"}
    assert all(hint in v.message for v in found), [v.message for v in found]


def test_restricted_template_labels_name_the_keys_to_move() -> None:
    doc = _hypershift_doc_example()
    doc["spec"]["template"]["metadata"] = {"labels": {"karpenter.sh/team": "a", "team": "b"}}
    (v,) = _mandatory(_whole_pack(NODE_POOL, doc))[2:]
    assert v.policy == "crd-schema" and "spec.template.metadata.labels" in v.message
    assert "move karpenter.sh/team to a label in your own domain" in v.message


@pytest.mark.parametrize(("case", "token", "change", "expected"), REJECTED, ids=[c[0] for c in REJECTED])
def test_no_other_policy_repeats_a_crd_rule(case: str, token: str, change: Change, expected: str) -> None:
    """Every rejected object of the CRD corpus: its mandatory violations all come from crd-schema."""
    obj = rendered(token)
    change(obj)
    found = _mandatory(_whole_pack(token.removeprefix("legacy:"), obj))
    assert any(expected in v.message for v in found if v.policy == "crd-schema"), case
    assert {v.policy for v in found} == {"crd-schema"}, [(v.policy, v.message) for v in found]


def test_check_reports_a_stack_files_restricted_key_once(tmp_path: Path) -> None:
    """The config accepts any requirement key; the CRD of the cluster's Karpenter judges it, once."""
    fleet = stack_fleet("hosted")
    fleet["clusters"][0]["autoNode"]["nodePools"][0]["requirements"] = [
        {"key": "karpenter.sh/instance-family", "values": ["m6i"]}
    ]
    tree = own_tree(fleet, tmp_path)
    stack = tmp_path / "Pulumi.one-verdict.yaml"
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    result = nodefleet("check", "--config-file", str(stack), "--json", env=tree)
    assert result.returncode == 1, result.stderr
    mandatory = [v for v in json.loads(result.stdout)["violations"] if v["level"] == "mandatory"]
    assert [v["policy"] for v in mandatory] == ["crd-schema"]
    (message,) = (v["message"] for v in mandatory)
    assert RESTRICTED in message and "use karpenter.k8s.aws/instance-family instead" in message
    assert (
        "NodePool 'on-demand' (karpenter.sh/v1, CRD of hypershift/1.13 (github.com/openshift/hypershift v0.1.82))"
        in message
    )
