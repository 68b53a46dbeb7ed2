"""The fidelity contract's rule for Go's zero values: equal to absence where an apply merges field by field, a
difference inside a list item, which an apply replaces whole (Flux and Argo CD found both cases on the
installer's MachineSets: tests/test_import_gitops.py)."""

from __future__ import annotations

import copy
from typing import Any

from nodefleet.adopt.documents import LiveObject
from nodefleet.adopt.fidelity import compare_object


def _machine_set(ebs: dict[str, Any], template_metadata: Any) -> dict[str, Any]:
    return {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "shop-4kq8z-worker-us-east-1a", "namespace": "openshift-machine-api"},
        "spec": {
            "replicas": 2,
            "template": {
                "spec": {
                    "metadata": template_metadata,
                    "providerSpec": {"value": {"blockDevices": [{"ebs": ebs}], "deviceIndex": 0}},
                }
            },
        },
    }


def _differences(live: dict[str, Any], rendered: dict[str, Any]) -> list[str]:
    return [d.describe() for d in compare_object(LiveObject(live, "live"), rendered).differences]


def test_a_zero_value_inside_a_list_item_is_a_difference() -> None:
    live = _machine_set({"iops": 0, "kmsKey": {"arn": ""}, "volumeSize": 120}, {})
    rendered = _machine_set({"volumeSize": 120}, {})
    assert _differences(live, rendered) == [
        "MachineSet openshift-machine-api/shop-4kq8z-worker-us-east-1a (live): "
        "spec.template.spec.providerSpec.value.blockDevices[0].ebs.iops: nodefleet would remove 0",
        "MachineSet openshift-machine-api/shop-4kq8z-worker-us-east-1a (live): "
        "spec.template.spec.providerSpec.value.blockDevices[0].ebs.kmsKey: nodefleet would remove {'arn': ''}",
    ]
    assert _differences(live, copy.deepcopy(live)) == []


def test_a_zero_value_outside_lists_equals_absence() -> None:
    live = _machine_set({"volumeSize": 120}, {})
    rendered = copy.deepcopy(live)
    rendered["spec"]["template"]["spec"]["providerSpec"]["value"]["deviceIndex"] = 0
    del live["spec"]["template"]["spec"]["providerSpec"]["value"]["deviceIndex"]
    assert _differences(live, rendered) == []
