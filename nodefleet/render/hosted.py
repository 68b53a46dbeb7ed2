"""Pure renderers for HyperShift hosted clusters on AWS and their Karpenter (AutoNode) objects.

Management cluster: the ``HostedCluster`` and classic ``NodePool``\\ s (``hypershift.openshift.io/v1beta1``).
Hosted cluster: named ``OpenshiftEC2NodeClass``\\ es (current HyperShift) or, for older HyperShift,
``EC2NodeClass``\\ es whose ``userData`` and AMI HyperShift rewrites, and ``karpenter.sh/v1`` NodePools.

nodefleet never declares the EC2NodeClass HyperShift generates from an OpenshiftEC2NodeClass (an admission
policy rejects it) and never owns the operator-owned ``default`` class (the config model refuses the name).
Field shapes follow the shipped CRDs (``nodefleet/crds/``: HyperShift v0.1.82's, and for the Karpenter
objects the set HyperShift installs into AutoNode clusters, ``hypershift/<minor>``) and the HyperShift CLI's
rendered fixtures (``tests/fixtures/hypershift-cli-v0.1.80/``). Every Karpenter object carries
``nodefleet.io/karpenter`` (:func:`autonode_karpenter`), so ``crd-schema`` judges it by the CRDs its hosted
cluster serves rather than upstream's.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from nodefleet import kinds as k
from nodefleet.apiserver.store import karpenter_set_name
from nodefleet.render.gitops import (
    ANNOTATION_ARGOCD_SYNC_OPTIONS,
    ANNOTATION_FLUX_PRUNE,
    ARGOCD_NO_DELETION,
    FLUX_PRUNE_DISABLED,
)
from nodefleet.render.ignition import IGNITION_VERSION, user_data
from nodefleet.stackfile.hosted import HostedCluster, HyperShiftNodePoolSpec, SecretRef, node_pool_object_name
from nodefleet.stackfile.karpenter import (
    REASON_ORDER,
    AutoNodeClass,
    DisruptionReason,
    NodePoolSpec,
    StaticNodePoolSpec,
)

__all__ = [
    "ANNOTATION_ARGOCD_SYNC_OPTIONS",
    "ANNOTATION_CLEANUP_CLOUD_RESOURCES",
    "ANNOTATION_FLUX_PRUNE",
    "ANNOTATION_PROVISIONING",
    "LABEL_AUTO_CREATED_FOR_INFRA",
    "LABEL_SAFE_TO_DELETE_WITH_CLUSTER",
    "LEGACY_CONTROLLER_OWNED",
    "NODE_POOL_REPLACE_ON",
    "OCP_RELEASE_REPOSITORY",
    "PLACEHOLDER_AMI",
    "PLACEHOLDER_USER_DATA",
    "autonode_karpenter",
    "autonode_pool_annotations",
    "default_instance_profile",
    "disruption_budgets",
    "node_release_image",
    "pool_reasons",
    "release_image",
    "render_hosted_cluster",
    "render_hypershift_node_pool",
    "render_karpenter_node_pool",
    "render_legacy_ec2_node_class",
    "render_namespace",
    "render_openshift_ec2_node_class",
    "render_secret",
    "secret_labels",
]

#: On a static Karpenter NodePool (``spec.replicas``): "static". The NodePool API forbids switching a pool
#: between static and dynamic in place (CEL ``has(self.replicas) == has(oldSelf.replicas)``), so a change of
#: this annotation makes Pulumi replace the pool (:data:`NODE_POOL_REPLACE_ON`), deleting it first: same name.
ANNOTATION_PROVISIONING = "nodefleet.io/provisioning"
NODE_POOL_REPLACE_ON = [f'metadata.annotations["{ANNOTATION_PROVISIONING}"]']

#: On deletion, HyperShift removes the cloud resources the hosted cluster created (service load balancers,
#: persistent volumes, registry storage) only when the HostedCluster carries this annotation. ``hypershift
#: destroy cluster`` sets it just before deleting; a ``pulumi destroy`` deletes the object directly, so
#: nodefleet declares it up front (``cleanupCloudResources``).
ANNOTATION_CLEANUP_CLOUD_RESOURCES = "hypershift.openshift.io/cleanup-cloud-resources"
#: The CLI's labels on the Secrets it creates. The HostedCluster controller gives every Secret carrying both
#: (the second with the cluster's infraID) an owner reference to the HostedCluster, so it goes with the
#: cluster (hypershift-operator ``reconcileCLISecrets``).
LABEL_SAFE_TO_DELETE_WITH_CLUSTER = "hypershift.openshift.io/safe-to-delete-with-cluster"
LABEL_AUTO_CREATED_FOR_INFRA = "hypershift.openshift.io/auto-created-for-infra"

OCP_RELEASE_REPOSITORY = "quay.io/openshift-release-dev/ocp-release"

#: Legacy EC2NodeClass AMI until HyperShift writes the payload's: a well-formed id that exists nowhere,
#: so Karpenter resolves no image and launches nothing if HyperShift never takes over.
PLACEHOLDER_AMI = "ami-00000000000000000"
#: Legacy EC2NodeClass userData until HyperShift writes its stub: an empty Ignition config. No secret, no
#: source to fetch; a machine booted from it would come up unconfigured and never join the cluster.
PLACEHOLDER_USER_DATA = user_data({"ignition": {"version": IGNITION_VERSION}})
#: Property paths HyperShift owns on a legacy EC2NodeClass; Pulumi declares them once and ignores changes.
LEGACY_CONTROLLER_OWNED = ("spec.userData", "spec.amiSelectorTerms")


def root_volume(gib: int) -> dict[str, Any]:
    """The encrypted gp3 root volume of an upstream-shaped ``EC2NodeClass`` (``blockDeviceMappings[]``)."""
    return {
        "deviceName": "/dev/xvda",
        "rootVolume": True,
        "ebs": {
            "volumeSize": f"{gib}Gi",
            "volumeType": "gp3",
            "encrypted": True,
            "deleteOnTermination": True,
        },
    }


def release_image(hc: HostedCluster) -> str:
    """The control plane's release image (``spec.release.image``)."""
    return hc.image


def node_release_image(hc: HostedCluster, np: HyperShiftNodePoolSpec) -> str:
    """A classic NodePool's release image: its own ``x.y.z`` as the multi-arch payload, else the cluster's."""
    if np.release:
        return f"{OCP_RELEASE_REPOSITORY}:{np.release}-multi"
    return release_image(hc)


def default_instance_profile(hc: HostedCluster) -> str:
    """The worker instance profile ``hypershift create iam aws`` makes: ``<infraID>-worker``.

    nodefleet uses it for classic NodePools without an explicit profile, for legacy EC2NodeClasses, and
    declares it in the HostedCluster annotation HyperShift copies into generated EC2NodeClasses, so all
    three agree.
    """
    return f"{hc.infra_id}-worker"


def _hosted_cluster_ref(hc: HostedCluster) -> str:
    return f"{hc.namespace}/{hc.name}"


def _services(hc: HostedCluster) -> list[dict[str, Any]]:
    # A Private cluster has no public load balancer for the API; it is reached through the private router.
    api = "Route" if hc.endpoint_access == "Private" else "LoadBalancer"
    return [
        {"service": "APIServer", "servicePublishingStrategy": {"type": api}},
        {"service": "Ignition", "servicePublishingStrategy": {"type": "Route"}},
        {"service": "Konnectivity", "servicePublishingStrategy": {"type": "Route"}},
        {"service": "OAuthServer", "servicePublishingStrategy": {"type": "Route"}},
        *({"service": s.service, "servicePublishingStrategy": {"type": s.type}} for s in hc.legacy_services),
    ]


def _secret_encryption(hc: HostedCluster) -> dict[str, Any] | None:
    enc = hc.secret_encryption
    if enc is None:
        return None
    if enc.kms is not None:
        aws: dict[str, Any] = {
            "activeKey": {"arn": enc.kms.active_key_arn},
            "auth": {"awsKms": enc.kms.role_arn},
            "region": enc.kms.region or hc.region,
        }
        if enc.kms.backup_key_arn:
            aws["backupKey"] = {"arn": enc.kms.backup_key_arn}
        return {"type": "kms", "kms": {"provider": "AWS", "aws": aws}}
    assert enc.aescbc is not None
    aescbc: dict[str, Any] = {"activeKey": {"name": enc.aescbc.active_key.name}}
    if enc.aescbc.backup_key is not None:
        aescbc["backupKey"] = {"name": enc.aescbc.backup_key.name}
    return {"type": "aescbc", "aescbc": aescbc}


def _configuration(hc: HostedCluster) -> dict[str, Any]:
    """``spec.configuration``: empty (as the CLI renders it) unless a proxy is declared."""
    if hc.proxy is None:
        return {}
    p = hc.proxy
    proxy: dict[str, Any] = {}
    for key, value in (("httpProxy", p.http_proxy), ("httpsProxy", p.https_proxy), ("noProxy", p.no_proxy)):
        if value:
            proxy[key] = value
    if p.readiness_endpoints:
        proxy["readinessEndpoints"] = list(p.readiness_endpoints)
    if p.trusted_ca:
        proxy["trustedCA"] = {"name": p.trusted_ca}
    return {"proxy": proxy}


def _operator_configuration(hc: HostedCluster) -> dict[str, Any] | None:
    oc = hc.operator_configuration
    if oc is None:
        return None
    out: dict[str, Any] = {}
    cno: dict[str, Any] = {}
    if oc.disable_multi_network is not None:
        cno["disableMultiNetwork"] = oc.disable_multi_network
    if oc.ovn_kubernetes is not None:
        ovn = oc.ovn_kubernetes
        cfg: dict[str, Any] = {}
        if ovn.mtu is not None:
            cfg["mtu"] = ovn.mtu
        ipv4 = {
            key: value
            for key, value in (
                ("internalJoinSubnet", ovn.internal_join_subnet),
                ("internalTransitSwitchSubnet", ovn.internal_transit_switch_subnet),
            )
            if value
        }
        if ipv4:
            cfg["ipv4"] = ipv4
        if ovn.v4_internal_subnet:
            cfg["v4InternalSubnet"] = ovn.v4_internal_subnet
        if cfg:
            cno["ovnKubernetesConfig"] = cfg
    if cno:
        out["clusterNetworkOperator"] = cno
    if oc.ingress is not None:
        lb: dict[str, Any] = {
            "scope": oc.ingress.scope,
            "dnsManagementPolicy": oc.ingress.dns_management_policy,
            "providerParameters": {"type": "AWS", "aws": {"type": oc.ingress.type}},
        }
        if oc.ingress.allowed_source_ranges:
            lb["allowedSourceRanges"] = list(oc.ingress.allowed_source_ranges)
        out["ingressOperator"] = {
            "endpointPublishingStrategy": {"type": "LoadBalancerService", "loadBalancer": lb}
        }
    return out or None


def render_hosted_cluster(hc: HostedCluster, management_release: str = "") -> dict[str, Any]:
    """A ``hypershift.openshift.io/v1beta1`` HostedCluster on AWS, in ``hc.namespace``.

    Field for field what ``hypershift create cluster aws --render`` prints for the same choices (see
    ``tests/test_hypershift_cli_parity.py`` for the comparison and the remaining differences), with
    production defaults where the CLI's are not (docs/configuration.md, "HostedCluster reference").
    """
    dns: dict[str, Any] = {"baseDomain": hc.dns.base_domain}
    if hc.dns.base_domain_prefix is not None:
        dns["baseDomainPrefix"] = hc.dns.base_domain_prefix
    if hc.dns.public_zone_id:
        dns["publicZoneID"] = hc.dns.public_zone_id
    if hc.dns.private_zone_id:
        dns["privateZoneID"] = hc.dns.private_zone_id
    roles = hc.roles
    aws: dict[str, Any] = {
        "region": hc.region,
        "endpointAccess": hc.endpoint_access,
        "cloudProviderConfig": {"vpc": hc.vpc, "subnet": {"id": hc.subnet}, "zone": hc.zone},
        "rolesRef": {
            "ingressARN": roles.ingress_arn,
            "imageRegistryARN": roles.image_registry_arn,
            "storageARN": roles.storage_arn,
            "networkARN": roles.network_arn,
            "kubeCloudControllerARN": roles.kube_cloud_controller_arn,
            "nodePoolManagementARN": roles.node_pool_management_arn,
            "controlPlaneOperatorARN": roles.control_plane_operator_arn,
        },
    }
    if hc.resource_tags:
        aws["resourceTags"] = [{"key": key, "value": value} for key, value in hc.resource_tags.items()]
    net = hc.networking
    etcd: dict[str, Any] = {
        "managementType": "Managed",
        "managed": {
            "storage": {
                "type": "PersistentVolume",
                "persistentVolume": {"size": hc.etcd.size, "storageClassName": hc.etcd.storage_class_name},
            }
        },
    }
    spec: dict[str, Any] = {
        "release": {"image": release_image(hc)},
        "infraID": hc.infra_id,
        "issuerURL": hc.issuer_url,
        "dns": dns,
        "networking": {
            "networkType": net.network_type,
            "clusterNetwork": [{"cidr": net.cluster_network}],
            "serviceNetwork": [{"cidr": net.service_network}],
            "machineNetwork": [{"cidr": net.machine_network}],
        },
        "platform": {"type": "AWS", "aws": aws},
        "etcd": etcd,
        "services": _services(hc),
        "pullSecret": {"name": hc.pull_secret.name},
        "controllerAvailabilityPolicy": hc.controller_availability_policy,
        "infrastructureAvailabilityPolicy": hc.infrastructure_availability_policy,
        "fips": hc.fips,
        "olmCatalogPlacement": hc.olm_catalog_placement,
        "configuration": _configuration(hc),
    }
    if hc.ssh_key is not None:
        spec["sshKey"] = {"name": hc.ssh_key.name}
    encryption = _secret_encryption(hc)
    if encryption is not None:
        spec["secretEncryption"] = encryption
    if hc.kube_api_server_dns_name:
        spec["kubeAPIServerDNSName"] = hc.kube_api_server_dns_name
    operators = _operator_configuration(hc)
    if operators is not None:
        spec["operatorConfiguration"] = operators
    annotations = {**hc.annotations, k.ANNOTATION_RELEASE: hc.release}
    if management_release:
        annotations[k.ANNOTATION_MANAGEMENT_RELEASE] = management_release
    if hc.cleanup_cloud_resources:
        annotations[ANNOTATION_CLEANUP_CLOUD_RESOURCES] = "true"
    if hc.auto_node is not None:
        spec["autoNode"] = {
            "provisionerConfig": {
                "name": "Karpenter",
                "karpenter": {"platform": "AWS", "aws": {"roleARN": hc.auto_node.role_arn}},
            }
        }
        annotations[k.ANNOTATION_KARPENTER_INSTANCE_PROFILE] = default_instance_profile(hc)
    metadata: dict[str, Any] = {"name": hc.name, "namespace": hc.namespace, "annotations": annotations}
    if hc.labels:
        metadata["labels"] = dict(hc.labels)
    return {
        "apiVersion": k.HOSTED_CLUSTER.api_version,
        "kind": k.HOSTED_CLUSTER.kind,
        "metadata": metadata,
        "spec": spec,
    }


#: On a Namespace nodefleet renders for GitOps, as on every object whose deletion destroys capacity
#: (:func:`nodefleet.render.gitops.with_deletion_protection`): never deleted or pruned by Argo CD or Flux.
NAMESPACE_ARGOCD_SYNC_OPTIONS = ARGOCD_NO_DELETION
NAMESPACE_FLUX_PRUNE = FLUX_PRUNE_DISABLED


def render_namespace(hc: HostedCluster, gitops: bool = False) -> dict[str, Any]:
    """The namespace the HostedCluster lives in, as the CLI renders and applies it.

    ``gitops`` (render mode): hosted clusters of many stacks share their namespace (HyperShift's default,
    ``clusters``), and each stack's folder renders it, so several Argo CD Applications or Flux Kustomizations
    carry it; deleting any one of them with pruning would delete the namespace and every HostedCluster in it.
    Apply mode never deletes it (a ``NamespacePatch``); in render mode the Namespace carries the annotations
    that keep Argo CD and Flux from ever deleting or pruning it. The Argo CD wiring applies it from no folder
    (:data:`nodefleet.render.wiring.ARGOCD_EXCLUDE`: Argo CD tracks an object for one Application), its
    Applications create it; the annotation covers an Application of the user's own that applies the folder.
    """
    metadata: dict[str, Any] = {"name": hc.namespace}
    if gitops:
        metadata["annotations"] = {
            ANNOTATION_ARGOCD_SYNC_OPTIONS: NAMESPACE_ARGOCD_SYNC_OPTIONS,
            ANNOTATION_FLUX_PRUNE: NAMESPACE_FLUX_PRUNE,
        }
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": metadata}


def secret_labels(hc: HostedCluster, delete_with_cluster: bool) -> dict[str, str]:
    """Labels of a Secret nodefleet writes for ``hc`` in apply mode: the CLI's, when it goes with the cluster."""
    if not delete_with_cluster:
        return {}
    return {LABEL_SAFE_TO_DELETE_WITH_CLUSTER: "true", LABEL_AUTO_CREATED_FOR_INFRA: hc.infra_id}


def render_secret(hc: HostedCluster, ref: SecretRef, key: str) -> dict[str, Any]:
    """A Secret nodefleet writes for ``hc`` in apply mode, without its value (a stack secret, known only to
    the engine): the component adds ``data``/``stringData`` under ``key``; the rest is this manifest."""
    metadata: dict[str, Any] = {"name": ref.name, "namespace": hc.namespace}
    labels = secret_labels(hc, ref.delete_with_cluster)
    if labels:
        metadata["labels"] = labels
    kind = "kubernetes.io/dockerconfigjson" if key == ".dockerconfigjson" else "Opaque"
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata, "type": kind}


def render_hypershift_node_pool(
    hc: HostedCluster, np: HyperShiftNodePoolSpec, management_release: str = ""
) -> dict[str, Any]:
    """A classic ``hypershift.openshift.io/v1beta1`` NodePool of ``hc``, in the HostedCluster's namespace.

    No ``platform.aws.ami``: HyperShift picks the boot image of the NodePool's own release payload.
    """
    if np.upgrade_type == "Replace":
        management: dict[str, Any] = {
            "upgradeType": "Replace",
            "replace": {"strategy": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
        }
    else:
        management = {"upgradeType": "InPlace", "inPlace": {}}
    management["autoRepair"] = np.auto_repair
    spec: dict[str, Any] = {
        "clusterName": hc.name,
        "release": {"image": node_release_image(hc, np)},
        "management": management,
        "nodeDrainTimeout": np.node_drain_timeout,
        "nodeVolumeDetachTimeout": np.node_volume_detach_timeout,
        "arch": np.arch,
        "platform": {
            "type": "AWS",
            "aws": {
                "instanceType": np.instance_type,
                "instanceProfile": np.instance_profile or default_instance_profile(hc),
                "subnet": {"id": np.subnet or hc.subnet},
                "rootVolume": _node_pool_root_volume(np),
            },
        },
    }
    if np.auto_scaling is not None:
        spec["autoScaling"] = {"min": np.auto_scaling.min, "max": np.auto_scaling.max}
    else:
        spec["replicas"] = np.replicas
    return {
        "apiVersion": k.HYPERSHIFT_NODE_POOL.api_version,
        "kind": k.HYPERSHIFT_NODE_POOL.kind,
        "metadata": {
            "name": node_pool_object_name(hc.name, np),
            "namespace": hc.namespace,
            "annotations": {
                k.ANNOTATION_RELEASE: hc.release,
                **({k.ANNOTATION_MANAGEMENT_RELEASE: management_release} if management_release else {}),
            },
        },
        "spec": spec,
    }


def _node_pool_root_volume(np: HyperShiftNodePoolSpec) -> dict[str, Any]:
    volume: dict[str, Any] = {"size": np.root_volume_gib, "type": np.root_volume_type}
    if np.root_volume_encrypted is not None:
        volume["encrypted"] = np.root_volume_encrypted
    return volume


def _selector_terms(
    tags: Mapping[str, str] | None, ids: list[str] | None, infra_id: str
) -> list[dict[str, Any]]:
    """Selector terms from a class's tags and/or ids; ``karpenter.sh/discovery: <infraID>`` when neither."""
    terms: list[dict[str, Any]] = []
    if tags:
        terms.append({"tags": dict(tags)})
    terms += [{"id": i} for i in ids or []]
    return terms or [{"tags": {"karpenter.sh/discovery": infra_id}}]


def autonode_karpenter(hc: HostedCluster) -> str:
    """The Karpenter CRD set an AutoNode hosted cluster serves: HyperShift's, for its declared Karpenter."""
    if hc.auto_node is None:
        raise ValueError(f"hosted cluster {hc.name} declares no autoNode")
    return karpenter_set_name("hypershift", hc.auto_node.karpenter.version)


def autonode_pool_annotations(hc: HostedCluster) -> dict[str, str]:
    """Annotations of every Karpenter NodePool of an AutoNode cluster: its HostedCluster, release, Karpenter."""
    return {
        k.ANNOTATION_HOSTED_CLUSTER: _hosted_cluster_ref(hc),
        k.ANNOTATION_RELEASE: hc.release,
        k.ANNOTATION_KARPENTER: autonode_karpenter(hc),
    }


def _node_class_annotations(hc: HostedCluster, mode: str) -> dict[str, str]:
    return {
        k.ANNOTATION_HOSTED_CLUSTER: _hosted_cluster_ref(hc),
        k.ANNOTATION_USERDATA_MODE: mode,
        k.ANNOTATION_RELEASE: hc.release,
    }


def render_openshift_ec2_node_class(hc: HostedCluster, nc: AutoNodeClass) -> dict[str, Any]:
    """A cluster-scoped ``karpenter.hypershift.openshift.io/v1`` OpenshiftEC2NodeClass (AutoNode).

    HyperShift generates the EC2NodeClass of the same name (userData, AMI, instance profile). ``version``
    is declared only when the class pins its node release; empty follows the control plane.
    """
    spec: dict[str, Any] = {
        "subnetSelectorTerms": _selector_terms(nc.subnet_tags, nc.subnet_ids, hc.infra_id),
        "securityGroupSelectorTerms": _selector_terms(
            nc.security_group_tags, nc.security_group_ids, hc.infra_id
        ),
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "rootVolume": "RootVolume",
                "ebs": {
                    "volumeSizeGiB": nc.root_volume_gib,
                    "volumeType": "GP3",
                    "encrypted": "Encrypted",
                    "deleteOnTermination": "Delete",
                },
            }
        ],
    }
    if nc.version:
        spec["version"] = nc.version
    if nc.tags:
        spec["tags"] = dict(nc.tags)
    return {
        "apiVersion": k.OPENSHIFT_EC2_NODE_CLASS.api_version,
        "kind": k.OPENSHIFT_EC2_NODE_CLASS.kind,
        "metadata": {"name": nc.name, "annotations": _node_class_annotations(hc, k.USERDATA_MODE_AUTONODE)},
        "spec": spec,
    }


def render_legacy_ec2_node_class(hc: HostedCluster, nc: AutoNodeClass) -> dict[str, Any]:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass for older HyperShift, which rewrites its userData and AMI.

    ``userData`` and ``amiSelectorTerms`` are placeholders (:data:`PLACEHOLDER_USER_DATA`,
    :data:`PLACEHOLDER_AMI`) set on creation only; the component puts :data:`LEGACY_CONTROLLER_OWNED` in
    ``ignore_changes`` so Pulumi never writes them back over HyperShift's values. ``instanceProfile`` follows
    the HostedCluster convention ``<infraID>-worker`` (:func:`default_instance_profile`). A pinned
    ``version`` has no equivalent in this API and is ignored.
    """
    spec: dict[str, Any] = {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": PLACEHOLDER_AMI}],
        "userData": PLACEHOLDER_USER_DATA,
        "instanceProfile": default_instance_profile(hc),
        "subnetSelectorTerms": _selector_terms(nc.subnet_tags, nc.subnet_ids, hc.infra_id),
        "securityGroupSelectorTerms": _selector_terms(
            nc.security_group_tags, nc.security_group_ids, hc.infra_id
        ),
        "blockDeviceMappings": [root_volume(nc.root_volume_gib)],
    }
    if nc.tags:
        spec["tags"] = dict(nc.tags)
    return {
        "apiVersion": k.EC2_NODE_CLASS.api_version,
        "kind": k.EC2_NODE_CLASS.kind,
        "metadata": {
            "name": nc.name,
            "annotations": {
                **_node_class_annotations(hc, k.USERDATA_MODE_LEGACY),
                k.ANNOTATION_KARPENTER: autonode_karpenter(hc),
            },
        },
        "spec": spec,
    }


def pool_reasons(np: NodePoolSpec) -> tuple[DisruptionReason, ...]:
    """The disruption reasons that can replace or remove nodes of ``np``, in Karpenter's order.

    A static pool never consolidates; a WhenEmpty pool never consolidates underutilized nodes; ``Unhealthy``
    (node repair, Karpenter 1.15) counts only where the pool budgets it, since its gate is off by default.
    """
    if isinstance(np, StaticNodePoolSpec):
        reasons: list[DisruptionReason] = ["Drifted"]
    elif np.disruption.consolidate_after == "Never":
        reasons = ["Drifted"]
    elif np.disruption.consolidation_policy == "WhenEmpty":
        reasons = ["Empty", "Drifted"]
    else:
        reasons = ["Empty", "Underutilized", "Drifted"]
    if "Unhealthy" in np.disruption.budgets:
        reasons.append("Unhealthy")
    return tuple(r for r in REASON_ORDER if r in reasons)


def disruption_budgets(np: NodePoolSpec) -> list[dict[str, Any]]:
    """``spec.disruption.budgets``: an always-active budget for every reason that can act on the pool, then
    the scheduled windows. Reasons with the same limit share one budget.

    Karpenter applies, per reason, the smallest of the active budgets that name it (or name none); a reason
    no budget names is unbounded, so nodefleet never leaves one out.
    """
    limits = np.disruption.effective_budgets(pool_reasons(np))
    grouped: dict[str, list[str]] = {}
    for reason, nodes in limits.items():
        grouped.setdefault(nodes, []).append(reason)
    budgets: list[dict[str, Any]] = []
    if np.disruption.all_reasons_budget is not None:
        budgets.append({"nodes": np.disruption.all_reasons_budget})
    budgets += [{"nodes": nodes, "reasons": reasons} for nodes, reasons in grouped.items()]
    for window in np.disruption.windows:
        budget: dict[str, Any] = {"nodes": window.nodes}
        if window.reasons is not None:
            budget["reasons"] = [r for r in REASON_ORDER if r in window.reasons]
        budgets.append({**budget, "schedule": window.schedule, "duration": window.duration})
    budgets += [
        {"nodes": w.nodes, "reasons": ["Drifted"], "schedule": w.schedule, "duration": w.duration}
        for w in np.disruption.drift_windows
    ]
    return budgets


def render_karpenter_node_pool(np: NodePoolSpec, *, annotations: Mapping[str, str]) -> dict[str, Any]:
    """A cluster-scoped ``karpenter.sh/v1`` NodePool referencing the EC2NodeClass named ``np.node_class``.

    Dynamic pools carry limits, weight and consolidation settings; static pools (``replicas``) only
    ``limits.nodes`` and ``consolidateAfter: Never`` (which older CRDs require and Karpenter ignores for
    them). Changing ``labels``, ``expireAfter`` or ``terminationGracePeriod`` drifts every node of the pool;
    ``limits``, ``weight``, ``replicas`` and ``disruption`` never do (see :mod:`nodefleet.drift.rules`).
    """
    requirements: list[dict[str, Any]] = []
    if np.architectures:
        requirements.append({"key": "kubernetes.io/arch", "operator": "In", "values": list(np.architectures)})
    if np.capacity_types:
        requirements.append(
            {"key": "karpenter.sh/capacity-type", "operator": "In", "values": list(np.capacity_types)}
        )
    if np.instance_categories:
        requirements.append(
            {
                "key": "karpenter.k8s.aws/instance-category",
                "operator": "In",
                "values": list(np.instance_categories),
            }
        )
    if np.instance_families:
        requirements.append(
            {
                "key": "karpenter.k8s.aws/instance-family",
                "operator": "In",
                "values": list(np.instance_families),
            }
        )
    for req in np.requirements:
        rendered: dict[str, Any] = {"key": req.key, "operator": req.operator}
        if req.values:
            rendered["values"] = list(req.values)
        if req.min_values is not None:
            rendered["minValues"] = req.min_values
        requirements.append(rendered)
    template_spec: dict[str, Any] = {
        "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": np.node_class},
        "requirements": requirements,
        "expireAfter": np.expire_after,
    }
    if np.termination_grace_period:
        template_spec["terminationGracePeriod"] = np.termination_grace_period
    template: dict[str, Any] = {"spec": template_spec}
    if np.labels:
        template["metadata"] = {"labels": dict(np.labels)}
    spec: dict[str, Any] = {"template": template}
    metadata: dict[str, Any] = {"name": np.name}
    notes = {**np.annotations, **annotations}
    if isinstance(np, StaticNodePoolSpec):
        spec["replicas"] = np.replicas
        spec["disruption"] = {"consolidateAfter": "Never", "budgets": disruption_budgets(np)}
        if np.limits.nodes is not None:
            spec["limits"] = {"nodes": np.limits.nodes}
        notes[ANNOTATION_PROVISIONING] = "static"
    else:
        d = np.disruption
        spec["disruption"] = {
            "consolidationPolicy": d.consolidation_policy,
            "consolidateAfter": d.consolidate_after,
            "budgets": disruption_budgets(np),
        }
        limits: dict[str, Any] = {
            key: value
            for key, value in (
                ("cpu", np.limits.cpu),
                ("memory", np.limits.memory),
                ("nodes", np.limits.nodes),
            )
            if value is not None
        }
        if limits:
            spec["limits"] = limits
        if np.weight is not None:
            spec["weight"] = np.weight
    if notes:
        metadata["annotations"] = notes
    return {
        "apiVersion": k.KARPENTER_NODE_POOL.api_version,
        "kind": k.KARPENTER_NODE_POOL.kind,
        "metadata": metadata,
        "spec": spec,
    }
