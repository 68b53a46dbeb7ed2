"""Pure renderers: validated config in, Kubernetes manifests (camelCase dicts) out.

Components only wrap what these return, so the exact objects can be reviewed, unit-tested and
validated against the real CRD schemas without Pulumi.
"""

from __future__ import annotations

from typing import Any

from nodefleet import kinds as k
from nodefleet.bootimages.skew import manual_skew_record
from nodefleet.stackfile.model import AwsFilter, ResolvedCluster, ResolvedMachineSet, StandaloneCluster


def user_data_secret(pool: str) -> str:
    """The Ignition stub secret a MachineSet of ``pool`` boots from.

    The MCO renders ``<pool>-user-data-managed`` for every pool, so a custom-pool machine fetches its
    pool's config at first boot; IPI worker MachineSets use ``worker-user-data``.
    """
    return "worker-user-data" if pool == "worker" else f"{pool}-user-data-managed"


def arch_annotation(arch: str) -> str:
    """Value of the autoscaler capacity annotation the MCO boot image controller reads the arch from."""
    return f"kubernetes.io/arch={'arm64' if arch in ('arm64', 'aarch64') else 'amd64'}"


def render_machine_set(cluster: StandaloneCluster, ms: ResolvedMachineSet, catalog: str) -> dict[str, Any]:
    """A ``machine.openshift.io/v1beta1`` MachineSet with an AWS providerSpec and its AMI by id.

    ``catalog`` names the catalog the AMI came from, as ``nodefleet.bootimages.catalog.catalog_reference`` gives it
    (relative to the project): the policy pack judges the MachineSet by that file.
    """
    spec = ms.spec
    infra = cluster.infra_id
    managed = spec.boot_image == "managed"
    labels = {k.LABEL_CLUSTER: infra}
    bim = cluster.boot_image_management
    if managed and bim.mode == "Partial":
        labels[bim.label] = bim.value
    if ms.stream != "rhel-9":
        # The boot image controller manages only rhel-9 MachineSets; the label tells it to skip this one.
        labels[k.LABEL_OS_STREAM] = ms.stream
    annotations = {
        k.ANNOTATION_ARCH: arch_annotation(spec.architecture),
        k.ANNOTATION_OWNER: "mco" if managed else "nodefleet",
        k.ANNOTATION_STREAM: ms.stream,
        k.ANNOTATION_POOL_STREAM: ms.pool_stream,
        k.ANNOTATION_RELEASE: cluster.release,
        k.ANNOTATION_CATALOG: catalog,
    }
    if not managed:
        annotations[k.ANNOTATION_RHCOS] = ms.boot_image.raw_release
    machine_labels = {
        k.LABEL_CLUSTER: infra,
        k.LABEL_MACHINE_ROLE: spec.pool,
        k.LABEL_MACHINE_TYPE: spec.pool,
        k.LABEL_MACHINESET: ms.name,
    }
    node_labels = dict(spec.labels)
    if spec.pool != "worker":
        node_labels[f"{k.NODE_ROLE_PREFIX}{spec.pool}"] = ""
    template_spec: dict[str, Any] = {
        # No labels: {} as the installer writes it; an empty labels map would be stored, a change of the object.
        "metadata": {"labels": node_labels} if node_labels else {},
        "providerSpec": {"value": _aws_provider_spec(cluster, ms)},
    }
    if spec.taints:
        template_spec["taints"] = [
            {"key": t.key, **({"value": t.value} if t.value is not None else {}), "effect": t.effect}
            for t in spec.taints
        ]
    return {
        "apiVersion": k.MACHINE_SET.api_version,
        "kind": k.MACHINE_SET.kind,
        "metadata": {
            "name": ms.name,
            "namespace": k.MACHINE_API_NAMESPACE,
            "labels": labels,
            "annotations": annotations,
        },
        "spec": {
            "replicas": spec.replicas,
            "selector": {"matchLabels": {k.LABEL_CLUSTER: infra, k.LABEL_MACHINESET: ms.name}},
            "template": {
                "metadata": {"labels": machine_labels},
                "spec": template_spec,
            },
        },
    }


def _aws_provider_spec(cluster: StandaloneCluster, ms: ResolvedMachineSet) -> dict[str, Any]:
    infra = cluster.infra_id
    spec = ms.spec
    return {
        "apiVersion": spec.provider_api_version,
        "kind": "AWSMachineProviderConfig",
        "ami": {"id": ms.boot_image.ami},
        "instanceType": spec.instance_type,
        "iamInstanceProfile": {"id": f"{infra}-worker-profile"},
        "userDataSecret": {"name": spec.user_data_secret or user_data_secret(spec.pool)},
        "credentialsSecret": {"name": "aws-cloud-credentials"},
        "placement": {"region": cluster.region, "availabilityZone": spec.zone},
        # Default subnet and security groups: the names the installer (4.16+) tags them with.
        "subnet": _aws_reference(spec.subnet)
        if spec.subnet
        else {"filters": [{"name": "tag:Name", "values": [f"{infra}-subnet-private-{spec.zone}"]}]},
        "securityGroups": [_aws_reference(g) for g in spec.security_groups]
        if spec.security_groups
        else [
            {"filters": [{"name": "tag:Name", "values": [f"{infra}-node"]}]},
            {"filters": [{"name": "tag:Name", "values": [f"{infra}-lb"]}]},
        ],
        "blockDevices": [{"ebs": _root_volume(ms)}],
        "deviceIndex": 0,
        "tags": [
            {"name": f"kubernetes.io/cluster/{infra}", "value": "owned"},
            *({"name": key, "value": value} for key, value in spec.tags.items()),
        ],
    }


def _root_volume(ms: ResolvedMachineSet) -> dict[str, Any]:
    spec = ms.spec
    ebs: dict[str, Any] = {"volumeSize": spec.root_volume_gib, "volumeType": spec.root_volume_type}
    if spec.root_volume_encrypted is not None:
        ebs["encrypted"] = spec.root_volume_encrypted
    if spec.root_volume_iops is not None:
        ebs["iops"] = spec.root_volume_iops
    if spec.root_volume_kms_key is not None:
        ebs["kmsKey"] = {"arn": spec.root_volume_kms_key}
    return ebs


def _aws_reference(ref: AwsFilter) -> dict[str, Any]:
    """An ``AWSResourceReference``: by id, or by one ``tag:<key>`` filter per tag (all must match)."""
    if ref.id:
        return {"id": ref.id}
    return {
        "filters": [
            {"name": f"tag:{key}", "values": [value]} for key, value in sorted((ref.tags or {}).items())
        ]
    }


def render_machine_config_pool(cluster: StandaloneCluster, pool_name: str) -> dict[str, Any]:
    """A custom MachineConfigPool: worker's MachineConfigs plus its own, and nodes with its role label."""
    pool = cluster.pool(pool_name)
    if pool is None:
        raise KeyError(f"cluster {cluster.name} declares no pool {pool_name!r}")
    spec: dict[str, Any] = {
        "machineConfigSelector": {
            "matchExpressions": [{"key": k.LABEL_MC_ROLE, "operator": "In", "values": ["worker", pool.name]}]
        },
        "nodeSelector": {"matchLabels": {f"{k.NODE_ROLE_PREFIX}{pool.name}": ""}},
    }
    if pool.os_image_stream:
        spec["osImageStream"] = {"name": pool.os_image_stream}
    return {
        "apiVersion": k.MACHINE_CONFIG_POOL.api_version,
        "kind": k.MACHINE_CONFIG_POOL.kind,
        "metadata": {
            "name": pool.name,
            "labels": {f"pools.operator.machineconfiguration.openshift.io/{pool.name}": ""},
            # The release of the cluster it lands on: the API server version crd-schema judges it by.
            "annotations": {k.ANNOTATION_RELEASE: cluster.release},
        },
        "spec": spec,
    }


def render_boot_image_settings(cluster: ResolvedCluster) -> dict[str, Any]:
    """The fields nodefleet owns on the ``MachineConfiguration`` singleton, as a server-side-apply patch.

    The object exists on every cluster; only ``managedBootImages`` and ``bootImageSkewEnforcement`` are
    declared, so other managers keep their fields. ``Automatic`` skew enforcement is the MCO's own choice,
    expressed by leaving the stanza out.
    """
    cfg = cluster.config
    bim = cfg.boot_image_management
    selection: dict[str, Any] = {"mode": bim.mode}
    if bim.mode == "Partial":
        selection["partial"] = {"machineResourceSelector": {"matchLabels": {bim.label: bim.value}}}
    spec: dict[str, Any] = {
        "managedBootImages": {
            "machineManagers": [
                {"resource": "machinesets", "apiGroup": "machine.openshift.io", "selection": selection}
            ]
        }
    }
    skew = cfg.skew_enforcement.mode
    if skew == "Manual":
        spec["bootImageSkewEnforcement"] = {
            "mode": "Manual",
            "manual": manual_skew_record(ms.boot_image.release for ms in cluster.machine_sets),
        }
    elif skew == "None":
        spec["bootImageSkewEnforcement"] = {"mode": "None"}
    return {
        "apiVersion": k.MACHINE_CONFIGURATION.api_version,
        "kind": k.MACHINE_CONFIGURATION.kind,
        "metadata": {"name": "cluster", "annotations": {k.ANNOTATION_RELEASE: cfg.release}},
        "spec": spec,
    }
