"""Config models for HyperShift hosted clusters on AWS (management-cluster side and AutoNode)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, model_validator

from nodefleet.config_karpenter import AutoNode
from nodefleet.modelbase import DNS_LABEL, REGION, ZONE, ConfigModel, OCPRelease

_ROLE_ARN = r"^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/.+$"
RoleArn = Annotated[str, Field(pattern=_ROLE_ARN)]


class RolesRef(ConfigModel):
    """The IAM roles the hosted control plane's operators assume (``platform.aws.rolesRef``)."""

    ingress_arn: RoleArn = Field(alias="ingressARN")
    image_registry_arn: RoleArn = Field(alias="imageRegistryARN")
    storage_arn: RoleArn = Field(alias="storageARN")
    network_arn: RoleArn = Field(alias="networkARN")
    kube_cloud_controller_arn: RoleArn = Field(alias="kubeCloudControllerARN")
    node_pool_management_arn: RoleArn = Field(alias="nodePoolManagementARN")
    control_plane_operator_arn: RoleArn = Field(alias="controlPlaneOperatorARN")


class HostedDNS(ConfigModel):
    base_domain: str
    base_domain_prefix: str | None = None
    public_zone_id: str | None = None
    private_zone_id: str | None = None


class Networking(ConfigModel):
    network_type: Literal["OVNKubernetes", "Other"] = "OVNKubernetes"
    cluster_network: str = "10.132.0.0/14"
    service_network: str = "172.31.0.0/16"
    machine_network: str = "10.0.0.0/16"


class SecretRef(ConfigModel):
    """A Secret the HostedCluster references by name.

    ``fromConfig`` names a stack secret (``pulumi config set --secret nodefleet:<key>``) whose value
    nodefleet writes into the Secret in apply mode; in render mode the Secret is never written (its values
    would land on disk in plaintext), so it must exist or come from a sealed/external secret.
    """

    name: Annotated[str, Field(pattern=DNS_LABEL)]
    from_config: str | None = None


class AutoScaling(ConfigModel):
    # Bounds and max >= min are the NodePool CRD's own rules, judged by the crd-schema policy.
    min: int
    max: int


class HyperShiftNodePoolSpec(ConfigModel):
    """A classic HyperShift ``NodePool`` (CAPI machines, not Karpenter)."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    release: OCPRelease | None = Field(None, description="Node release (x.y.z); default: the cluster's.")
    replicas: Annotated[int, Field(ge=0)] | None = None
    auto_scaling: AutoScaling | None = None
    instance_type: str = "m6i.xlarge"
    instance_profile: str | None = Field(None, description="Default: <infraId>-worker.")
    subnet: str | None = Field(None, description="Subnet id; default: the cluster's subnet.")
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = "gp3"
    upgrade_type: Literal["Replace", "InPlace"] = "Replace"
    arch: Literal["amd64", "arm64"] = "amd64"

    @model_validator(mode="after")
    def _size(self) -> HyperShiftNodePoolSpec:
        if (self.replicas is None) == (self.auto_scaling is None):
            raise ValueError("set exactly one of replicas or autoScaling")
        return self


class HostedCluster(ConfigModel):
    """A HyperShift ``HostedCluster`` on AWS, declared on the management cluster."""

    kind: Literal["hosted"]
    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=40)]
    namespace: Annotated[str, Field(pattern=DNS_LABEL)] = "clusters"
    infra_id: Annotated[str, Field(pattern=DNS_LABEL, max_length=27)]
    region: Annotated[str, Field(pattern=REGION)]
    release: OCPRelease = Field(
        description="Control-plane release, e.g. 4.22.3 (OCP 5.0 counts as 4.23 for skew)."
    )
    release_image: str | None = Field(
        None,
        description="Explicit release image; default quay.io/openshift-release-dev/ocp-release:<release>-multi.",
    )
    issuer_url: str = Field(description="OIDC issuer (the S3 URL `hypershift create iam` made).")
    dns: HostedDNS
    vpc: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]+$")]
    subnet: Annotated[str, Field(pattern=r"^subnet-[0-9a-f]+$")]
    zone: Annotated[str, Field(pattern=ZONE)]
    roles: RolesRef
    endpoint_access: Literal["Public", "PublicAndPrivate", "Private"] = "Public"
    resource_tags: dict[str, str] = {}
    networking: Networking = Networking()
    pull_secret: SecretRef
    ssh_key: SecretRef | None = None
    auto_node: AutoNode | None = None
    node_pools: list[HyperShiftNodePoolSpec] = []
    hosted_kubeconfig: str | None = Field(
        None, description="apply mode: kubeconfig of the hosted cluster, for the AutoNode classes and pools."
    )

    @model_validator(mode="after")
    def _zone_in_region(self) -> HostedCluster:
        if not self.zone.startswith(self.region):
            raise ValueError(f"zone: '{self.zone}' is not in region '{self.region}'")
        names = [p.name for p in self.node_pools]
        if len(set(names)) != len(names):
            raise ValueError("nodePools: two NodePools share a name")
        return self

    @property
    def image(self) -> str:
        return self.release_image or f"quay.io/openshift-release-dev/ocp-release:{self.release}-multi"
