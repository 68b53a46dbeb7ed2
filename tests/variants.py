"""Variations of the example stacks that exercise what the examples themselves do not declare."""

from __future__ import annotations

from typing import Any

from mockruntime.run import stack_fleet


def hosted_legacy_fleet() -> dict[str, Any]:
    """The hosted stack on older HyperShift: users create EC2NodeClasses whose userData and AMI HyperShift
    rewrites (nodefleet leaves both to it)."""
    fleet = stack_fleet("hosted")
    fleet["clusters"][0]["autoNode"]["mode"] = "legacy"
    return fleet


def karpenter_operator_fleet() -> dict[str, Any]:
    """The karpenter stack with Red Hat's karpenter-operator instead of self-managed Karpenter."""
    fleet = stack_fleet("karpenter")
    cluster = fleet["clusters"][0]
    del cluster["karpenter"]
    cluster["karpenterOperator"] = {
        "instanceProfile": "edge-m2x7c-worker-profile",
        "nodeClasses": [{"name": "general"}],
        "nodePools": [{"name": "general", "nodeClass": "general"}],
    }
    return fleet
