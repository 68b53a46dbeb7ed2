"""Self-managed Karpenter on a standalone cluster, with userData that never changes on a rotation.

Each EC2NodeClass's userData is a stable Ignition pointer to an S3 object; the object holds the real pointer
config (MCS URL and CA) and is rewritten in place when those rotate. The object key names only the
drift-relevant inputs (release, node class, rendered config), so a real change moves the pointer, and with it
the userData hash, exactly once.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pulumi
import pulumi_aws as aws
import pulumi_kubernetes as k8s

from components.kubernetes import custom_resource
from nodefleet.bootimages.catalog import BootImage
from nodefleet.render.hosted import NODE_POOL_REPLACE_ON, render_karpenter_node_pool
from nodefleet.render.ignition import user_data
from nodefleet.render.karpenter import (
    node_pool_annotations,
    node_read_policy,
    object_key,
    payload_config,
    render_operator_ec2_node_class,
    render_self_managed_ec2_node_class,
)
from nodefleet.stackfile.karpenter import NodePoolSpec, SelfManagedNodeClass
from nodefleet.stackfile.model import StandaloneCluster


def node_pool_options(depends_on: list[pulumi.Resource]) -> pulumi.ResourceOptions:
    """Options of every Karpenter NodePool: after its class, and replaced, deleting first, when it switches
    between static and dynamic provisioning.

    The NodePool API refuses that switch in place, so it can only be a replacement of the object, and with the
    same name the old one must go first. Deleting a NodePool drains and terminates all of its nodes; the
    ``karpenter-provisioning-switch`` policy says so at preview.
    """
    return pulumi.ResourceOptions(
        depends_on=depends_on, replace_on_changes=list(NODE_POOL_REPLACE_ON), delete_before_replace=True
    )


def standalone_node_pools(
    name: str,
    cluster: StandaloneCluster,
    pools: Sequence[NodePoolSpec],
    classes: Mapping[str, pulumi.Resource],
    opts: pulumi.ResourceOptions,
) -> list[pulumi.CustomResource]:
    """The Karpenter NodePools of a standalone cluster, each after its class."""
    owner = node_pool_annotations(cluster)
    return [
        custom_resource(
            f"{name}-karpenter-{pool.name}",
            render_karpenter_node_pool(pool, annotations=owner),
            pulumi.ResourceOptions.merge(opts, node_pool_options([classes[pool.node_class]])),
        )
        for pool in pools
    ]


@dataclass(frozen=True)
class SelfManagedKarpenterArgs:
    cluster: StandaloneCluster
    images: Mapping[str, BootImage]
    provider: k8s.Provider
    #: The MCS CA bundle (PEM), a stack secret: it rotates, so it lives in the S3 object, not in userData.
    ca_bundle: pulumi.Output[str]


class SelfManagedKarpenter(pulumi.ComponentResource):
    def __init__(self, name: str, args: SelfManagedKarpenterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("nodefleet:karpenter:SelfManaged", name, None, opts)
        cluster = args.cluster
        karpenter = cluster.karpenter
        assert karpenter is not None
        aws_opts = pulumi.ResourceOptions(parent=self)
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        self.read_policy = aws.iam.RolePolicy(
            f"{name}-ignition-read",
            role=karpenter.node_role,
            policy=json.dumps(node_read_policy(karpenter.bucket, karpenter.prefix, cluster.name)),
            opts=aws_opts,
        )
        classes: dict[str, pulumi.CustomResource] = {}
        self.objects: dict[str, aws.s3.BucketObjectv2] = {}
        for nc in karpenter.node_classes:
            self.objects[nc.name] = aws.s3.BucketObjectv2(
                f"{name}-ignition-{nc.name}",
                bucket=karpenter.bucket,
                key=object_key(cluster, nc),
                content=args.ca_bundle.apply(functools.partial(_payload, cluster, nc)),
                content_type="application/json",
                opts=aws_opts,
            )
            # The node class only after its object exists: a node launched earlier could not fetch its config.
            classes[nc.name] = custom_resource(
                f"{name}-nodeclass-{nc.name}",
                render_self_managed_ec2_node_class(cluster, nc, args.images[nc.name]),
                pulumi.ResourceOptions.merge(
                    k8s_opts, pulumi.ResourceOptions(depends_on=[self.objects[nc.name], self.read_policy])
                ),
            )
        self.node_pools = standalone_node_pools(name, cluster, karpenter.node_pools, classes, k8s_opts)
        self.register_outputs({"objects": {n: o.key for n, o in self.objects.items()}})


def _payload(cluster: StandaloneCluster, nc: SelfManagedNodeClass, ca_pem: str) -> str:
    return user_data(payload_config(cluster, nc, ca_pem=ca_pem))


@dataclass(frozen=True)
class KarpenterOperatorArgs:
    cluster: StandaloneCluster
    provider: k8s.Provider


class KarpenterOperatorNodes(pulumi.ComponentResource):
    """Node classes and pools on a cluster whose Karpenter runs under Red Hat's karpenter-operator.

    No AWS resources and no userData: the operator points every class at its own MachineConfigPool on the
    Machine Config Server and pins the AMI; nodefleet declares only the fields the operator leaves to users.
    """

    def __init__(self, name: str, args: KarpenterOperatorArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("nodefleet:karpenter:Operator", name, None, opts)
        cluster = args.cluster
        operator = cluster.karpenter_operator
        assert operator is not None
        k8s_opts = pulumi.ResourceOptions(parent=self, provider=args.provider)
        classes = {
            nc.name: custom_resource(
                f"{name}-nodeclass-{nc.name}", render_operator_ec2_node_class(cluster, nc), k8s_opts
            )
            for nc in operator.node_classes
        }
        self.node_pools = standalone_node_pools(name, cluster, operator.node_pools, classes, k8s_opts)
        self.register_outputs({"nodeClasses": sorted(classes)})
