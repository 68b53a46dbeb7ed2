"""A standalone (IPI) cluster's node sources: custom pools, MachineSets, and the MCO boot image settings."""

from __future__ import annotations

from dataclasses import dataclass

import pulumi
import pulumi_kubernetes as k8s

from components.kubernetes import custom_resource
from nodefleet import kinds as k
from nodefleet.render.machinesets import (
    render_boot_image_settings,
    render_machine_config_pool,
    render_machine_set,
)
from nodefleet.stackfile.model import ResolvedCluster, ResolvedMachineSet


@dataclass(frozen=True)
class StandaloneClusterArgs:
    cluster: ResolvedCluster
    provider: k8s.Provider


class StandaloneCluster(pulumi.ComponentResource):
    """Declares where a standalone cluster's worker nodes come from.

    Custom pools are created before the MachineSets that boot into them, so a new machine's first Ignition
    request already finds its pool.
    """

    def __init__(self, name: str, args: StandaloneClusterArgs, opts: pulumi.ResourceOptions | None = None):
        super().__init__("nodefleet:standalone:Cluster", name, None, opts)
        self._args = args
        child = pulumi.ResourceOptions(parent=self, provider=args.provider)
        cfg = args.cluster.config
        self.pools = {p.name: self._create_pool(name, p.name, child) for p in cfg.pools}
        self.machine_sets = [self._create_machine_set(ms, child) for ms in args.cluster.machine_sets]
        self.boot_image_settings = self._create_boot_image_settings(name, child)
        self.register_outputs(
            {
                "machineSets": [ms.name for ms in args.cluster.machine_sets],
                "pools": list(self.pools),
                "bootImages": {ms.name: ms.boot_image.ami for ms in args.cluster.machine_sets},
            }
        )

    def _create_pool(
        self, name: str, pool: str, opts: pulumi.ResourceOptions
    ) -> k8s.apiextensions.CustomResource:
        return custom_resource(
            f"{name}-pool-{pool}", render_machine_config_pool(self._args.cluster.config, pool), opts
        )

    def _create_machine_set(
        self, ms: ResolvedMachineSet, opts: pulumi.ResourceOptions
    ) -> k8s.apiextensions.CustomResource:
        manifest = render_machine_set(self._args.cluster.config, ms, self._args.cluster.catalog_reference)
        depends = [self.pools[ms.spec.pool]] if ms.spec.pool in self.pools else []
        # Once the MCO boot image controller owns the AMI, re-applying the catalog's AMI would fight it: the
        # controller patches it back and after 3 identical patches degrades, blocking minor upgrades.
        ignore = [k.AMI_PATH] if ms.spec.boot_image == "managed" else []
        return custom_resource(
            ms.name,
            manifest,
            pulumi.ResourceOptions.merge(
                opts, pulumi.ResourceOptions(ignore_changes=ignore, depends_on=depends)
            ),
        )

    def _create_boot_image_settings(
        self, name: str, opts: pulumi.ResourceOptions
    ) -> k8s.apiextensions.CustomResourcePatch:
        manifest = render_boot_image_settings(self._args.cluster)
        # A server-side-apply patch of the existing singleton: nodefleet owns only the fields it declares.
        return k8s.apiextensions.CustomResourcePatch(
            f"{name}-machineconfiguration",
            api_version=manifest["apiVersion"],
            kind=manifest["kind"],
            metadata=manifest["metadata"],
            spec=manifest["spec"],
            opts=pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(depends_on=self.machine_sets)),
        )
