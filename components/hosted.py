"""A HyperShift hosted cluster: the HostedCluster and classic NodePools on the management cluster, and
its AutoNode classes and Karpenter NodePools inside the hosted cluster."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import custom_resource
from nodefleet import kinds as k
from nodefleet.config_hosted import HostedCluster
from nodefleet.hosted import (
    LEGACY_CONTROLLER_OWNED,
    render_hosted_cluster,
    render_hypershift_node_pool,
    render_karpenter_node_pool,
    render_legacy_ec2_node_class,
    render_openshift_ec2_node_class,
)


@dataclass(frozen=True)
class HostedClusterArgs:
    cluster: HostedCluster
    management: k8s.Provider
    hosted: k8s.Provider
    #: Values of the pull secret and SSH key, from stack secrets. None in render mode, where no Secret is
    #: written (the provider would render its values in plaintext), and when the Secret already exists.
    pull_secret: pulumi.Output[str] | None = None
    ssh_public_key: pulumi.Output[str] | None = None


class HostedClusterNodes(pulumi.ComponentResource):
    """Declares a hosted cluster and where its nodes come from.

    In AutoNode mode nodefleet declares named ``OpenshiftEC2NodeClass``es and Karpenter NodePools only: the
    karpenter-operator generates each EC2NodeClass (userData with the rotating Ignition token, AMI) and an
    admission policy rejects direct edits, so no EC2NodeClass is ever declared and the operator-owned
    ``default`` class is never touched.
    """

    def __init__(self, name: str, args: HostedClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("nodefleet:hosted:Cluster", name, None, opts)
        hc = args.cluster
        mgmt = pulumi.ResourceOptions(parent=self, provider=args.management)
        secrets = []
        if args.pull_secret is not None:
            secrets.append(_secret(hc, hc.pull_secret.name, ".dockerconfigjson", args.pull_secret, mgmt))
        if args.ssh_public_key is not None and hc.ssh_key is not None:
            secrets.append(_secret(hc, hc.ssh_key.name, "id_rsa.pub", args.ssh_public_key, mgmt))
        self.hosted_cluster = custom_resource(
            f"{name}-hostedcluster",
            render_hosted_cluster(hc),
            pulumi.ResourceOptions.merge(mgmt, pulumi.ResourceOptions(depends_on=secrets)),
        )
        after_hc = pulumi.ResourceOptions.merge(
            mgmt, pulumi.ResourceOptions(depends_on=[self.hosted_cluster])
        )
        self.node_pools = [
            custom_resource(f"{name}-nodepool-{np.name}", render_hypershift_node_pool(hc, np), after_hc)
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
        owner = _owner_annotations(hc)
        for pool in auto.node_pools:
            self.karpenter_pools.append(
                custom_resource(
                    f"{name}-karpenter-{pool.name}",
                    render_karpenter_node_pool(pool, annotations=owner),
                    pulumi.ResourceOptions.merge(
                        hosted, pulumi.ResourceOptions(depends_on=[classes[pool.node_class]])
                    ),
                )
            )
        self.node_classes = list(classes.values())


def _secret(
    hc: HostedCluster, name: str, key: str, value: pulumi.Output[str], opts: pulumi.ResourceOptions
) -> k8s.core.v1.Secret:
    return k8s.core.v1.Secret(
        f"{hc.name}-secret-{name}",
        metadata={"name": name, "namespace": hc.namespace},
        type="kubernetes.io/dockerconfigjson" if key == ".dockerconfigjson" else "Opaque",
        string_data={key: value},
        opts=opts,
    )


def _owner_annotations(hc: HostedCluster) -> dict[str, Any]:
    return {k.ANNOTATION_HOSTED_CLUSTER: f"{hc.namespace}/{hc.name}", k.ANNOTATION_RELEASE: hc.release}
