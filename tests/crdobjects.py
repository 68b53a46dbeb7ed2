"""One manifest of every kind nodefleet writes, rendered by the pure renderers from the example stacks.

The starting point of the accepted/rejected cases: what nodefleet really declares, then changed the way a
CRD rule forbids.
"""

from __future__ import annotations

import copy
from functools import cache
from typing import Any

from mockruntime.run import stack_fleet
from nodefleet import kinds as k
from nodefleet.render.hosted import (
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_karpenter_node_pool,
    render_legacy_ec2_node_class,
    render_openshift_ec2_node_class,
)
from nodefleet.render.karpenter import render_self_managed_ec2_node_class
from nodefleet.render.machinesets import (
    render_boot_image_settings,
    render_machine_config_pool,
    render_machine_set,
)
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ResolvedCluster, ResolvedHostedCluster
from tests.conftest import PROJECT


@cache
def _objects() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    dev = load_fleet(stack_fleet("dev"), "dev", PROJECT).clusters[0]
    assert isinstance(dev, ResolvedCluster)
    out[k.MACHINE_SET.token] = render_machine_set(dev.config, dev.machine_sets[0], dev.config.catalog)
    out[k.MACHINE_CONFIG_POOL.token] = render_machine_config_pool(dev.config, dev.config.pools[0].name)
    out[k.MACHINE_CONFIGURATION.patch_token] = render_boot_image_settings(dev)
    hosted = load_fleet(stack_fleet("hosted"), "hosted", PROJECT).clusters[0]
    assert isinstance(hosted, ResolvedHostedCluster) and hosted.config.auto_node is not None
    hc = hosted.config
    auto = hc.auto_node
    assert auto is not None
    out[k.HOSTED_CLUSTER.token] = render_hosted_cluster(hc)
    out[k.HYPERSHIFT_NODE_POOL.token] = render_hypershift_node_pool(hc, hc.node_pools[0])
    out[k.OPENSHIFT_EC2_NODE_CLASS.token] = render_openshift_ec2_node_class(hc, auto.node_classes[0])
    out[k.KARPENTER_NODE_POOL.token] = render_karpenter_node_pool(auto.node_pools[0], annotations={})
    out["legacy:" + k.EC2_NODE_CLASS.token] = render_legacy_ec2_node_class(hc, auto.node_classes[0])
    karp = load_fleet(stack_fleet("karpenter"), "karpenter", PROJECT).clusters[0]
    assert isinstance(karp, ResolvedCluster) and karp.config.karpenter is not None
    nc = karp.config.karpenter.node_classes[0]
    out[k.EC2_NODE_CLASS.token] = render_self_managed_ec2_node_class(
        karp.config, nc, karp.karpenter_images[nc.name]
    )
    return out


#: A type token per kind nodefleet writes (``legacy:`` marks HyperShift's legacy EC2NodeClass).
TOKENS = (
    k.MACHINE_SET.token,
    k.MACHINE_CONFIG_POOL.token,
    k.MACHINE_CONFIGURATION.patch_token,
    k.HOSTED_CLUSTER.token,
    k.HYPERSHIFT_NODE_POOL.token,
    k.OPENSHIFT_EC2_NODE_CLASS.token,
    k.KARPENTER_NODE_POOL.token,
    k.EC2_NODE_CLASS.token,
    "legacy:" + k.EC2_NODE_CLASS.token,
)


def rendered(token: str) -> dict[str, Any]:
    """A fresh copy of the rendered manifest for a type token (``legacy:`` + token: the legacy class)."""
    return copy.deepcopy(_objects()[token])
