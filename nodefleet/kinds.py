"""Kubernetes kinds nodefleet declares, with the Pulumi type tokens they register under.

Components, tests and policies import these constants, so a policy can never look for a token the
components do not produce.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Kind:
    api_version: str
    kind: str
    namespaced: bool

    @property
    def token(self) -> str:
        """Type token of a ``CustomResource`` of this kind."""
        return f"kubernetes:{self.api_version}:{self.kind}"

    @property
    def patch_token(self) -> str:
        """Type token of a ``CustomResourcePatch`` (server-side apply patch) of this kind."""
        return f"{self.token}Patch"


MACHINE_SET = Kind("machine.openshift.io/v1beta1", "MachineSet", namespaced=True)
MACHINE_CONFIG_POOL = Kind("machineconfiguration.openshift.io/v1", "MachineConfigPool", namespaced=False)
MACHINE_CONFIGURATION = Kind("operator.openshift.io/v1", "MachineConfiguration", namespaced=False)
HOSTED_CLUSTER = Kind("hypershift.openshift.io/v1beta1", "HostedCluster", namespaced=True)
HYPERSHIFT_NODE_POOL = Kind("hypershift.openshift.io/v1beta1", "NodePool", namespaced=True)
OPENSHIFT_EC2_NODE_CLASS = Kind(
    "karpenter.hypershift.openshift.io/v1", "OpenshiftEC2NodeClass", namespaced=False
)
KARPENTER_NODE_POOL = Kind("karpenter.sh/v1", "NodePool", namespaced=False)
EC2_NODE_CLASS = Kind("karpenter.k8s.aws/v1", "EC2NodeClass", namespaced=False)

MACHINE_API_NAMESPACE = "openshift-machine-api"

# Labels and annotations with a meaning to OpenShift.
LABEL_CLUSTER = "machine.openshift.io/cluster-api-cluster"
LABEL_MACHINESET = "machine.openshift.io/cluster-api-machineset"
LABEL_MACHINE_ROLE = "machine.openshift.io/cluster-api-machine-role"
LABEL_MACHINE_TYPE = "machine.openshift.io/cluster-api-machine-type"
LABEL_OS_STREAM = "machineconfiguration.openshift.io/osstream"
LABEL_MC_ROLE = "machineconfiguration.openshift.io/role"
NODE_ROLE_PREFIX = "node-role.kubernetes.io/"
ANNOTATION_ARCH = "capacity.cluster-autoscaler.kubernetes.io/labels"

# What nodefleet records on the objects it declares, for the policy pack and for humans.
ANNOTATION_OWNER = "nodefleet.io/boot-image-owner"  # "mco" or "nodefleet"
ANNOTATION_RHCOS = "nodefleet.io/boot-image-rhcos"  # RHCOS version of a pinned AMI
ANNOTATION_STREAM = "nodefleet.io/boot-image-stream"
# The OS stream of the MachineSet's pool (its osImageStream, else the cluster's default): what its nodes run.
ANNOTATION_POOL_STREAM = "nodefleet.io/pool-os-stream"
ANNOTATION_RELEASE = "nodefleet.io/cluster-release"
# On HostedClusters and HyperShift NodePools, when the fleet registry says it: the release of the management
# cluster they land on, whose API server (its Kubernetes version) validates them.
ANNOTATION_MANAGEMENT_RELEASE = "nodefleet.io/management-cluster-release"
# The catalog the AMI was resolved from, relative to the project (nodefleet.bootimages.catalog.catalog_reference).
ANNOTATION_CATALOG = "nodefleet.io/boot-image-catalog"
# On objects inside a hosted cluster (node classes, Karpenter NodePools): the HostedCluster they belong to,
# as "<namespace>/<name>", so stack-level policies can pair them across providers.
ANNOTATION_HOSTED_CLUSTER = "nodefleet.io/hosted-cluster"
# How a Karpenter node class gets its userData: "autonode" (HyperShift generates it), "legacy-hypershift"
# (HyperShift rewrites it; nodefleet ignores it), "s3-pointer" (nodefleet's stable Ignition pointer).
ANNOTATION_USERDATA_MODE = "nodefleet.io/userdata-mode"
# On Karpenter objects (NodePool, EC2NodeClass): the Karpenter CRDs their cluster serves, "<flavour>/<minor>"
# (e.g. "aws/1.15", "hypershift/1.13"), which the crd-schema policy judges them by (nodefleet.apiserver.store).
ANNOTATION_KARPENTER = "nodefleet.io/karpenter"

# Property path Pulumi must leave alone once the MCO boot image controller owns the AMI.
AMI_PATH = "spec.template.spec.providerSpec.value.ami"

# Values of ANNOTATION_USERDATA_MODE.
USERDATA_MODE_AUTONODE = "autonode"
USERDATA_MODE_LEGACY = "legacy-hypershift"
USERDATA_MODE_S3_POINTER = "s3-pointer"
# HostedCluster annotation HyperShift copies into every generated EC2NodeClass's spec.instanceProfile.
ANNOTATION_KARPENTER_INSTANCE_PROFILE = "hypershift.openshift.io/aws-karpenter-default-instance-profile"
