"""A HyperShift hosted cluster: the HostedCluster and classic NodePools on the management cluster, and
its AutoNode classes and Karpenter NodePools inside the hosted cluster."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pulumi
import pulumi_kubernetes as k8s

from components.karpenter import node_pool_options
from components.kubernetes import custom_resource
from nodefleet.render.hosted import (
    LEGACY_CONTROLLER_OWNED,
    autonode_pool_annotations,
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_karpenter_node_pool,
    render_legacy_ec2_node_class,
    render_namespace,
    render_openshift_ec2_node_class,
    render_secret,
)
from nodefleet.stackfile.hosted import HostedCluster, SecretRef


@dataclass(frozen=True)
class HostedClusterArgs:
    cluster: HostedCluster
    management: k8s.Provider
    hosted: k8s.Provider
    #: Values of the Secrets the HostedCluster references (pull secret, SSH key, AES-CBC keys) by stack
    #: secret key (``fromConfig``). Empty in render mode, where no Secret is written (the provider would
    #: render its values in plaintext), and for Secrets that already exist.
    secret_values: Mapping[str, pulumi.Output[str]] = field(default_factory=dict)
    #: Render mode: declare the namespace as a plain Namespace (the GitOps tool applies it). Apply mode: a
    #: NamespacePatch, which creates it when missing and is never deleted with the stack.
    render: bool = True
    #: Objects an earlier cluster of the stack declares identically (the shared Namespace, a shared Secret),
    #: by (kind, namespace, name): this cluster does not declare them again (:mod:`nodefleet.render.objects`) but
    #: waits for them like for its own.
    declared_elsewhere: Mapping[tuple[str, str, str], pulumi.Resource] = field(default_factory=dict)
    #: The release lines the HyperShift operator of its management cluster runs, as the fleet's registry
    #: declares them (``hypershift.supportedVersions``; empty when it does not say), and the registry's name in
    #: messages: recorded on the component for the ``hypershift-supported-versions`` policy.
    supported_versions: tuple[str, ...] = ()
    registry: str = ""
    #: The release the management cluster itself runs, where the registry says it (``release``): recorded on
    #: the HostedCluster and NodePools, whose API server version crd-schema judges them by.
    management_release: str = ""


class HostedClusterNodes(pulumi.ComponentResource):
    """Declares a hosted cluster and where its nodes come from.

    In AutoNode mode nodefleet declares named ``OpenshiftEC2NodeClass``es and Karpenter NodePools only: the
    karpenter-operator generates each EC2NodeClass (userData with the rotating Ignition token, AMI) and an
    admission policy rejects direct edits, so no EC2NodeClass is ever declared and the operator-owned
    ``default`` class is never touched.
    """

    def __init__(self, name: str, args: HostedClusterArgs, opts: pulumi.ResourceOptions | None = None):
        hc = args.cluster
        super().__init__("nodefleet:hosted:Cluster", name, None, opts)
        mgmt = pulumi.ResourceOptions(parent=self, provider=args.management)
        elsewhere = args.declared_elsewhere
        #: What this cluster declares that later clusters may share, by (kind, namespace, name).
        self.declared: dict[tuple[str, str, str], pulumi.Resource] = {}
        first: list[pulumi.Resource] = []
        if hc.create_namespace:
            key = ("Namespace", "", hc.namespace)
            if key in elsewhere:
                first.append(elsewhere[key])
            else:
                self.declared[key] = _namespace(name, hc, args.render, mgmt)
                first.append(self.declared[key])
        in_namespace = pulumi.ResourceOptions.merge(mgmt, pulumi.ResourceOptions(depends_on=list(first)))
        secrets: list[pulumi.Resource] = []
        for ref, data_key in hc.secret_refs():
            if not (ref.from_config and ref.from_config in args.secret_values):
                continue
            key = ("Secret", hc.namespace, ref.name)
            if key not in elsewhere:
                value = args.secret_values[ref.from_config]
                self.declared[key] = _secret(hc, ref, data_key, value, in_namespace)
            secrets.append(elsewhere.get(key) or self.declared[key])
        self.hosted_cluster = custom_resource(
            f"{name}-hostedcluster",
            render_hosted_cluster(hc, args.management_release),
            pulumi.ResourceOptions.merge(mgmt, pulumi.ResourceOptions(depends_on=[*first, *secrets])),
        )
        after_hc = pulumi.ResourceOptions.merge(
            mgmt, pulumi.ResourceOptions(depends_on=[self.hosted_cluster])
        )
        self.node_pools = [
            custom_resource(
                f"{name}-nodepool-{np.name}",
                render_hypershift_node_pool(hc, np, args.management_release),
                after_hc,
            )
            for np in hc.node_pools
        ]
        self.node_classes: list[pulumi.CustomResource] = []
        self.karpenter_pools: list[pulumi.CustomResource] = []
        if hc.auto_node:
            self._create_auto_node(name, args)
        self.register_outputs(
            {
                "hostedCluster": f"{hc.namespace}/{hc.name}",
                "nodeClasses": [c.name for c in hc.auto_node.node_classes] if hc.auto_node else [],
                "nodePools": [p.name for p in hc.node_pools],
                # What the hypershift-supported-versions policy judges the cluster's releases against: a stack
                # policy sees a component's registered outputs, not its inputs (the engine's AnalyzeStack reads
                # each resource's outputs), so they are recorded here.
                "managementCluster": hc.management_cluster,
                "supportedVersions": list(args.supported_versions),
                "registry": args.registry,
            }
        )

    def _create_auto_node(self, name: str, args: HostedClusterArgs) -> None:
        hc = args.cluster
        auto = hc.auto_node
        assert auto is not None
        hosted = pulumi.ResourceOptions(parent=self, provider=args.hosted)
        classes: dict[str, pulumi.CustomResource] = {}
        for nc in auto.node_classes:
            if auto.mode == "autonode":
                classes[nc.name] = custom_resource(
                    f"{name}-nodeclass-{nc.name}", render_openshift_ec2_node_class(hc, nc), hosted
                )
            else:
                # Older HyperShift rewrites userData (with the rotating token) and the AMI of the EC2NodeClass
                # users create; Pulumi sets placeholders once and never fights the controller afterwards.
                classes[nc.name] = custom_resource(
                    f"{name}-nodeclass-{nc.name}",
                    render_legacy_ec2_node_class(hc, nc),
                    pulumi.ResourceOptions.merge(
                        hosted, pulumi.ResourceOptions(ignore_changes=list(LEGACY_CONTROLLER_OWNED))
                    ),
                )
        owner = autonode_pool_annotations(hc)
        for pool in auto.node_pools:
            # A pool on HyperShift's own `default` class waits for nothing nodefleet declares.
            after: list[pulumi.Resource] = [classes[pool.node_class]] if pool.node_class in classes else []
            self.karpenter_pools.append(
                custom_resource(
                    f"{name}-karpenter-{pool.name}",
                    render_karpenter_node_pool(pool, annotations=owner),
                    pulumi.ResourceOptions.merge(hosted, node_pool_options(after)),
                )
            )
        self.node_classes = list(classes.values())


def _namespace(name: str, hc: HostedCluster, render: bool, opts: pulumi.ResourceOptions) -> pulumi.Resource:
    manifest = render_namespace(hc, gitops=render)
    if render:
        return k8s.core.v1.Namespace(f"{name}-namespace", metadata=manifest["metadata"], opts=opts)
    # Several hosted clusters usually share one namespace, and it may exist already: a patch creates it when
    # missing, and deleting the stack (or this cluster) leaves it, with whatever else lives in it, alone.
    return k8s.core.v1.NamespacePatch(f"{name}-namespace", metadata=manifest["metadata"], opts=opts)


def _secret(
    hc: HostedCluster, ref: SecretRef, key: str, value: pulumi.Output[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    manifest = render_secret(hc, ref, key)
    meta = manifest["metadata"]
    metadata = k8s.meta.v1.ObjectMetaArgs(
        name=meta["name"], namespace=meta["namespace"], labels=meta.get("labels")
    )
    name = f"{hc.name}-secret-{ref.name}"
    if key == "key":
        # AES-CBC: the stack secret holds the base64 of the 32-byte key, which is what `data` carries.
        return k8s.core.v1.Secret(
            name, metadata=metadata, type=manifest["type"], data={key: value}, opts=opts
        )
    return k8s.core.v1.Secret(
        name, metadata=metadata, type=manifest["type"], string_data={key: value}, opts=opts
    )
