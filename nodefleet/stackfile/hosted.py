"""Config models for HyperShift hosted clusters on AWS (management-cluster side and AutoNode)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BeforeValidator, Field, model_validator

from nodefleet.stackfile.instance_types import instance_type_finding
from nodefleet.stackfile.karpenter import AutoNode, check_unique_names
from nodefleet.stackfile.modelbase import (
    CONFIG_KEY_NAME,
    DNS_LABEL,
    DNS_SUBDOMAIN,
    GO_DURATION,
    IAM_NAME,
    INSTANCE_TYPE,
    KMS_KEY_ARN,
    REGION,
    ROLE_ARN,
    SUBNET_ID,
    VOLUME_SIZE,
    AwsTags,
    ConfigModel,
    OCPRelease,
    Zone,
    fits_go_duration,
    refused_when,
    reserved_namespace_problem,
)
from nodefleet.stackfile.names import dns_label

RoleArn = Annotated[str, Field(pattern=ROLE_ARN)]
KmsKeyArn = Annotated[str, Field(pattern=KMS_KEY_ARN, max_length=2048)]
#: A Go duration as metav1.Duration parses it ("0s", "30m", "1h30m"); the CRD types these fields as plain
#: strings, so a typo would only fail when the API server decodes the object.
GoDuration = Annotated[str, Field(pattern=GO_DURATION), AfterValidator(fits_go_duration)]
AvailabilityPolicy = Literal["HighlyAvailable", "SingleReplica"]


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
    from_config: Annotated[str, Field(pattern=CONFIG_KEY_NAME, max_length=128)] | None = None
    delete_with_cluster: bool = Field(
        True,
        description="apply mode: label the Secret nodefleet writes hypershift.openshift.io/safe-to-delete-with-cluster "
        "(and auto-created-for-infra: <infraId>), as the CLI does, so HyperShift garbage-collects it with the cluster.",
    )


class KmsEncryption(ConfigModel):
    """``spec.secretEncryption`` with AWS KMS: what ``hypershift create cluster aws --kms-key-arn`` sets."""

    active_key_arn: KmsKeyArn = Field(alias="activeKeyARN")
    backup_key_arn: KmsKeyArn | None = Field(None, alias="backupKeyARN")
    role_arn: RoleArn = Field(
        alias="roleARN",
        description="Role the KMS provider assumes (auth.awsKms; `hypershift create iam` makes it).",
    )
    region: Annotated[str, Field(pattern=REGION)] | None = Field(
        None, description="Default: the cluster's region."
    )


class AescbcEncryption(ConfigModel):
    """``spec.secretEncryption`` with an AES-CBC key in a Secret of the cluster's namespace (key ``key``).

    The CLI generates that key when no KMS key is given; nodefleet never invents key material: name an
    existing Secret, or in apply mode a stack secret holding the base64 of 32 random bytes (``fromConfig``).
    """

    active_key: SecretRef
    backup_key: SecretRef | None = None


class SecretEncryption(ConfigModel):
    kms: KmsEncryption | None = None
    aescbc: AescbcEncryption | None = None

    @model_validator(mode="after")
    def _one(self) -> SecretEncryption:
        if (self.kms is None) == (self.aescbc is None):
            raise ValueError("set exactly one of kms or aescbc")
        return self


class Proxy(ConfigModel):
    """``spec.configuration.proxy`` (config.openshift.io ProxySpec) for the hosted cluster's nodes."""

    http_proxy: str | None = None
    https_proxy: str | None = None
    no_proxy: str | None = Field(None, description="Comma-separated hosts, domains and CIDRs.")
    trusted_ca: Annotated[str, Field(pattern=DNS_LABEL)] | None = Field(
        None,
        alias="trustedCA",
        description="ConfigMap (key ca-bundle.crt) with the proxy's CA, in the cluster's namespace.",
    )
    readiness_endpoints: list[str] = []


class Etcd(ConfigModel):
    """Managed etcd storage; both fields are immutable once the cluster exists."""

    storage_class_name: Annotated[str, Field(max_length=255)] = Field(
        "gp3-csi", description="StorageClass of each etcd member's volume (the CLI's AWS default)."
    )
    size: Annotated[str, Field(pattern=VOLUME_SIZE)] = "8Gi"


class OvnKubernetes(ConfigModel):
    """``operatorConfiguration.clusterNetworkOperator.ovnKubernetesConfig``; every field is immutable once set."""

    mtu: Annotated[int, Field(ge=576, le=9216)] | None = Field(
        None,
        description="Tunnel MTU: 100 bytes below the uplink MTU; unset lets the CNO detect it (8901 on AWS).",
    )
    internal_join_subnet: str | None = Field(
        None, description="ipv4.internalJoinSubnet (default 100.64.0.0/16)."
    )
    internal_transit_switch_subnet: str | None = Field(None, description="ipv4.internalTransitSwitchSubnet.")
    v4_internal_subnet: str | None = Field(None, alias="v4InternalSubnet")


class LegacyService(ConfigModel):
    """A ``spec.services`` entry older HyperShift CLIs wrote and the API keeps as a no-op (``OVNSbDb``, ``OIDC``);
    ``spec.services`` is immutable, so a cluster created with one keeps it for life."""

    service: Literal["OVNSbDb", "OIDC"]
    type: Literal["Route", "LoadBalancer", "NodePort", "None", "S3"] = "Route"


class IngressLoadBalancer(ConfigModel):
    """The default ingress controller published through a cloud load balancer (``LoadBalancerService``)."""

    scope: Literal["External", "Internal"] = "External"
    type: Literal["NLB", "Classic"] = "NLB"
    dns_management_policy: Literal["Managed", "Unmanaged"] = "Managed"
    allowed_source_ranges: list[str] = []


class OperatorConfiguration(ConfigModel):
    """``spec.operatorConfiguration``: the hosted cluster's network and ingress operators."""

    ovn_kubernetes: OvnKubernetes | None = None
    disable_multi_network: bool | None = Field(
        None, description="Disable Multus (immutable; the API allows it only with networkType Other)."
    )
    ingress: IngressLoadBalancer | None = None


#: Kubernetes' limit on a namespace name (a DNS label).
MAX_NAMESPACE = 63
#: A management cluster's name is a DNS label; wiring derives names from it (``<name>-kubeconfig``).
MAX_MANAGEMENT_CLUSTER_NAME = 63


class AutoScaling(ConfigModel):
    # Bounds and max >= min are the NodePool CRD's own rules, judged by the crd-schema policy.
    min: int
    max: int


#: The management cluster of a hosted cluster that names none: without a registry of management clusters
#: (``nodefleet-fleet.yaml`` beside the stack files, :mod:`nodefleet.fleet.registry`) it is the fleet's only one.
DEFAULT_MANAGEMENT_CLUSTER = "management"

#: The file beside the stack files that declares the fleet's management clusters (:mod:`nodefleet.fleet.registry`).
REGISTRY_FILE = "nodefleet-fleet.yaml"


def _name_only(value: object) -> object:
    """``managementCluster`` names a management cluster of the fleet's registry; how it is reached is said once
    there, so that two stacks can never reach one management cluster differently."""
    if isinstance(value, dict):
        settings = ", ".join(sorted(str(k) for k in value if k != "name")) or "nothing but its name"
        named = value.get("name")
        shown = f"managementCluster: {named}" if isinstance(named, str) else "managementCluster: <name>"
        raise ValueError(
            f"a mapping (with {settings}) is no longer taken: a hosted cluster names its management cluster only "
            f"({shown}), and how the fleet reaches it (kubeconfig, argocdCluster, fluxKubeConfig) is declared once, "
            f"in {REGISTRY_FILE} beside the stack files; move these settings there (docs/configuration.md, "
            "'Management clusters')"
        )
    return value


ManagementClusterName = Annotated[
    str, BeforeValidator(_name_only), Field(pattern=DNS_LABEL, max_length=MAX_MANAGEMENT_CLUSTER_NAME)
]


class HyperShiftNodePoolSpec(ConfigModel):
    """A classic HyperShift ``NodePool`` (CAPI machines, not Karpenter)."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    object_name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)] | None = Field(
        None,
        description="The NodePool object's name (default <cluster>-<name>, as the hypershift CLI names NodePools). "
        "Set it to the pool's name to keep a NodePool created before nodefleet named them so.",
    )
    release: OCPRelease | None = Field(None, description="Node release (x.y.z); default: the cluster's.")
    replicas: Annotated[int, Field(ge=0)] | None = None
    auto_scaling: AutoScaling | None = None
    instance_type: Annotated[str, Field(pattern=INSTANCE_TYPE)] = "m6i.xlarge"
    instance_profile: Annotated[str, Field(pattern=IAM_NAME, max_length=128)] | None = Field(
        None, description="Default: <infraId>-worker."
    )
    subnet: Annotated[str, Field(pattern=SUBNET_ID)] | None = Field(
        None, description="Subnet id; default: the cluster's subnet."
    )
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = "gp3"
    root_volume_encrypted: bool | None = Field(
        True,
        description="platform.aws.rootVolume.encrypted; null leaves the field out, so the AWS account's EBS "
        "encryption by default decides, as NodePools `hypershift create cluster aws` made have it.",
    )
    upgrade_type: Literal["Replace", "InPlace"] = "Replace"
    arch: Literal["amd64", "arm64"] = "amd64"
    auto_repair: bool = Field(
        True,
        description="management.autoRepair: a MachineHealthCheck replaces unhealthy machines. The CLI sets it "
        "only with --auto-repair; without it a node that stops reporting is never replaced.",
    )
    node_drain_timeout: GoDuration = Field("0s", description="0s: drain retries without a time limit.")
    node_volume_detach_timeout: GoDuration = Field("0s", description="0s: wait for volumes without a limit.")

    @model_validator(mode="after")
    def _size(self) -> HyperShiftNodePoolSpec:
        finding = instance_type_finding(self.instance_type, self.arch)
        if finding is not None and finding.level == "error":
            raise ValueError(f"instanceType: {finding.message}")
        if (self.replicas is None) == (self.auto_scaling is None):
            raise ValueError("set exactly one of replicas or autoScaling")
        return self


def node_pool_object_name(cluster: str, pool: HyperShiftNodePoolSpec) -> str:
    """The classic NodePool's object name: ``objectName``, else ``<cluster>-<pool>`` as the hypershift CLI names
    the NodePools it creates (``hypershift create cluster aws``: ``<cluster>-<zone>``), so that pools of one
    name in different hosted clusters of one namespace (``clusters/infra``) are different objects."""
    return pool.object_name or f"{cluster}-{pool.name}"


#: HostedCluster annotations nodefleet writes from typed keys; the free-form ``annotations`` may not set them.
_NODEFLEET_ANNOTATIONS = (
    "hypershift.openshift.io/cleanup-cloud-resources",
    "hypershift.openshift.io/aws-karpenter-default-instance-profile",
)


class HostedCluster(ConfigModel):
    """A HyperShift ``HostedCluster`` on AWS, declared on the management cluster."""

    kind: Literal["hosted"]
    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=40)]
    namespace: Annotated[
        str, Field(pattern=DNS_LABEL, max_length=63), refused_when(reserved_namespace_problem)
    ] = "clusters"
    infra_id: Annotated[str, Field(pattern=DNS_LABEL, max_length=27)]
    region: Annotated[str, Field(pattern=REGION)]

    release: OCPRelease = Field(
        description="Control-plane release, e.g. 4.22.3; node releases may trail it as far as the version-skew "
        "policy's profile allows (docs/policies.md, 'Skew profiles')."
    )
    release_image: str | None = Field(
        None,
        description="Explicit release image; default quay.io/openshift-release-dev/ocp-release:<release>-multi.",
    )
    issuer_url: str = Field(description="OIDC issuer (the S3 URL `hypershift create iam` made).")
    dns: HostedDNS
    vpc: Annotated[str, Field(pattern=r"^vpc-[0-9a-f]+$")]
    subnet: Annotated[str, Field(pattern=SUBNET_ID)]
    zone: Zone
    roles: RolesRef
    endpoint_access: Literal["Public", "PublicAndPrivate", "Private"] = "Public"
    legacy_services: list[LegacyService] = Field(
        [],
        description="No-op spec.services entries after the four nodefleet derives from endpointAccess, as a "
        "cluster created by an older hypershift CLI holds them (v0.1.40's `OVNSbDb`); only for adopted clusters.",
    )
    resource_tags: AwsTags = {}
    networking: Networking = Networking()
    pull_secret: SecretRef
    ssh_key: SecretRef | None = None
    controller_availability_policy: AvailabilityPolicy = Field(
        "HighlyAvailable",
        description="Control plane replicas (immutable). The CLI's default is SingleReplica: one etcd member and "
        "one API server for the life of the cluster.",
    )
    infrastructure_availability_policy: AvailabilityPolicy = Field(
        "HighlyAvailable",
        description="Data-plane infrastructure (ingress routers, registry). The API's default, SingleReplica, runs "
        "one router: every node replacement is an ingress outage.",
    )
    cleanup_cloud_resources: bool = Field(
        True,
        description="hypershift.openshift.io/cleanup-cloud-resources: on deletion HyperShift removes the load "
        "balancers, volumes and registry storage the cluster created (`hypershift destroy` sets it).",
    )
    secret_encryption: SecretEncryption | None = Field(
        None, description="Encryption at rest of the cluster's Secrets; cannot be removed once set."
    )
    fips: bool = Field(False, description="FIPS mode for the cluster's nodes (immutable).")
    proxy: Proxy | None = None
    etcd: Etcd = Etcd()
    kube_api_server_dns_name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] | None = Field(
        None,
        alias="kubeAPIServerDNSName",
        description="A custom DNS name for the API server (4.19+); HyperShift then publishes a kubeconfig for it.",
    )
    olm_catalog_placement: Literal["management", "guest"] = Field(
        "management", description="Where OLM catalog pods run (immutable)."
    )
    operator_configuration: OperatorConfiguration | None = None
    create_namespace: bool = Field(
        True,
        description="Declare the namespace as the CLI does; never deleted by nodefleet (other clusters may share it).",
    )
    annotations: dict[str, str] = Field(
        {}, description="Extra HostedCluster annotations (the CLI's --annotations)."
    )
    labels: dict[str, str] = Field({}, description="Extra HostedCluster labels (the CLI's --labels).")
    auto_node: AutoNode | None = None
    node_pools: list[HyperShiftNodePoolSpec] = []
    hosted_kubeconfig: str | None = Field(
        None, description="apply mode: kubeconfig of the hosted cluster, for the AutoNode classes and pools."
    )
    management_cluster: ManagementClusterName = Field(
        DEFAULT_MANAGEMENT_CLUSTER,
        description=f"The management cluster the hosted cluster lives on, by its name in {REGISTRY_FILE} beside "
        f"the stack files (without that file the fleet has one, '{DEFAULT_MANAGEMENT_CLUSTER}').",
    )

    @property
    def control_plane_namespace(self) -> str:
        """The namespace HyperShift creates for the control plane: ``<namespace>-<name>`` (openshift/hypershift
        ``hypershift-operator/controllers/manifests/manifests.go``, ``HostedControlPlaneNamespace``)."""
        return f"{self.namespace}-{self.name.replace('.', '-')}"

    @property
    def hosted_destination(self) -> str:
        """The hosted cluster's own API server, by the name GitOps wiring registers it under: ``<name>-hosted``
        (its render folder) on the default management cluster, else ``<management cluster>-<control-plane
        namespace>``, which no other hosted cluster of the fleet has (HyperShift gives every hosted cluster of a
        management cluster its own control-plane namespace)."""
        if self.management_cluster == DEFAULT_MANAGEMENT_CLUSTER:
            return f"{self.name}-hosted"
        return dns_label(f"{self.management_cluster}-{self.control_plane_namespace}")

    @property
    def hosted_kubeconfig_secret(self) -> str:
        """The Secret a Flux Kustomization reaches the hosted cluster through: HyperShift's own
        ``<name>-admin-kubeconfig`` on the default management cluster, else ``<hosted_destination>-kubeconfig``."""
        if self.management_cluster == DEFAULT_MANAGEMENT_CLUSTER:
            return f"{self.name}-admin-kubeconfig"
        return dns_label(f"{self.hosted_destination}-kubeconfig")

    @model_validator(mode="after")
    def _zone_in_region(self) -> HostedCluster:
        hcp = self.control_plane_namespace
        if len(hcp) > MAX_NAMESPACE:
            raise ValueError(
                f"name: HyperShift puts the control plane of '{self.name}' in namespace '{hcp}' (<namespace>-<name>, "
                f"{len(hcp)} characters), and a namespace name has at most {MAX_NAMESPACE}: the control plane could "
                f"never be created. Shorten name or namespace ({len(hcp) - MAX_NAMESPACE} too many between them)"
            )
        if not self.zone.startswith(self.region):
            raise ValueError(
                f"zone: '{self.zone}' is not in region '{self.region}'; use a zone of {self.region}, e.g. "
                f"{self.region}a"
            )
        services = [s.service for s in self.legacy_services]
        repeated = sorted({s for s in services if services.count(s) > 1})
        if repeated:
            raise ValueError(
                f"legacyServices: {', '.join(repeated)} is listed more than once; HyperShift publishes a service "
                "once: keep one entry"
            )
        check_unique_names(
            [p.name for p in self.node_pools],
            "nodePools",
            "a NodePool's name names its object and its Pulumi resource",
        )
        objects: dict[str, int] = {}
        for j, pool in enumerate(self.node_pools):
            object_name = node_pool_object_name(self.name, pool)
            if len(object_name) > MAX_NAMESPACE:
                raise ValueError(
                    f"nodePools[{j}].name: the NodePool object is named '{object_name}' (<cluster>-<pool>, as the "
                    f"hypershift CLI names it: {len(object_name)} characters), and a NodePool name has at most "
                    f"{MAX_NAMESPACE}; shorten the pool's or the cluster's name, or set nodePools[{j}].objectName"
                )
            if object_name in objects:
                raise ValueError(
                    f"nodePools[{j}]: its object name '{object_name}' is also nodePools[{objects[object_name]}]'s; "
                    "give one of them another objectName"
                )
            objects[object_name] = j
        reserved = sorted(
            key
            for key in self.annotations
            if key in _NODEFLEET_ANNOTATIONS or key.startswith("nodefleet.io/")
        )
        if reserved:
            raise ValueError(
                f"annotations: {', '.join(reserved)} are set by nodefleet from typed keys (cleanupCloudResources, "
                "release, autoNode); remove them here"
            )
        return self

    def secret_refs(self) -> list[tuple[SecretRef, str]]:
        """Every Secret the HostedCluster references, each with the key nodefleet writes its value under."""
        refs: list[tuple[SecretRef, str]] = [(self.pull_secret, ".dockerconfigjson")]
        if self.ssh_key is not None:
            refs.append((self.ssh_key, "id_rsa.pub"))
        aescbc = self.secret_encryption.aescbc if self.secret_encryption else None
        if aescbc is not None:
            refs += [(ref, "key") for ref in (aescbc.active_key, aescbc.backup_key) if ref is not None]
        return refs

    @property
    def image(self) -> str:
        return self.release_image or f"quay.io/openshift-release-dev/ocp-release:{self.release}-multi"
