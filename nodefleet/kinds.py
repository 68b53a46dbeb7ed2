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
SECRET = Kind("v1", "Secret", namespaced=True)

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
ANNOTATION_RELEASE = "nodefleet.io/cluster-release"
ANNOTATION_CATALOG = "nodefleet.io/boot-image-catalog"

# Property path Pulumi must leave alone once the MCO boot image controller owns the AMI.
AMI_PATH = "spec.template.spec.providerSpec.value.ami"
