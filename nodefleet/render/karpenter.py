"""Self-managed Karpenter on a standalone cluster: nodes boot from the MCS through a stable S3 pointer.

The MCS stub a MachineSet boots from carries the MCS CA, which rotates; in ``EC2NodeClass.spec.userData``
every rotation would drift every Karpenter node. So the userData holds only
``merge: [{source: s3://<bucket>/<key>}]`` (fetched with the instance role), and the real pointer to the
MCS, CA included, lives in the object, rewritten in place. The key names the drift-relevant inputs only
(cluster, node class, release, rendered config), so a real change moves the pointer, and replaces the
nodes, exactly once. The same indirection as the installer's UPI bootstrap and CAPA's ClusterObjectStore.
"""

from __future__ import annotations

from typing import Any

from nodefleet import kinds as k
from nodefleet.apiserver.store import karpenter_set_name
from nodefleet.bootimages.catalog import BootImage
from nodefleet.render.hosted import root_volume
from nodefleet.render.ignition import ignition_pointer, pointer_key, prefix_segments, s3_pointer, user_data
from nodefleet.stackfile.karpenter import OperatorNodeClass, SelfManagedKarpenter, SelfManagedNodeClass
from nodefleet.stackfile.model import StandaloneCluster

__all__ = [
    "METADATA_OPTIONS",
    "OPERATOR_OWNED",
    "cluster_karpenter",
    "mcs_source",
    "node_pool_annotations",
    "node_read_policy",
    "object_key",
    "payload_config",
    "render_operator_ec2_node_class",
    "render_self_managed_ec2_node_class",
]

#: EC2NodeClass fields Red Hat's karpenter-operator writes on every class and guards with admission policies
#: (openshift/enhancements ``enhancements/autoscaling/karpenter-operator.md``, "Protected fields").
OPERATOR_OWNED = ("amiFamily", "amiSelectorTerms", "userData")

#: ``nodefleet.io/userdata-mode`` of classes whose userData, AMI and amiFamily the karpenter-operator owns.
USERDATA_MODE_OPERATOR = "karpenter-operator"

#: IMDSv2 only; the CRD's defaults spelled out so the server has nothing to default (no perpetual diff).
METADATA_OPTIONS = {
    "httpEndpoint": "enabled",
    "httpProtocolIPv6": "disabled",
    "httpPutResponseHopLimit": 1,
    "httpTokens": "required",
}


def _karpenter(cluster: StandaloneCluster) -> SelfManagedKarpenter:
    if cluster.karpenter is None:
        raise ValueError(f"cluster {cluster.name} declares no self-managed Karpenter (karpenter:)")
    return cluster.karpenter


def cluster_karpenter(cluster: StandaloneCluster) -> str:
    """The Karpenter CRD set a standalone cluster serves (``nodefleet.io/karpenter``): upstream's for a
    self-managed install, the karpenter-operator's for a cluster running it."""
    if cluster.karpenter is not None:
        return karpenter_set_name("aws", cluster.karpenter.version)
    if cluster.karpenter_operator is not None:
        return karpenter_set_name("openshift", cluster.karpenter_operator.karpenter.version)
    raise ValueError(f"cluster {cluster.name} declares no Karpenter (karpenter: or karpenterOperator:)")


def node_pool_annotations(cluster: StandaloneCluster) -> dict[str, str]:
    """Annotations of every Karpenter NodePool of a standalone cluster: its release and Karpenter CRD set."""
    return {k.ANNOTATION_RELEASE: cluster.release, k.ANNOTATION_KARPENTER: cluster_karpenter(cluster)}


def mcs_source(cluster: StandaloneCluster, pool: str) -> str:
    """The Machine Config Server URL a node of ``pool`` fetches its config from."""
    return f"https://api-int.{_karpenter(cluster).cluster_domain}:22623/config/{pool}"


def payload_config(cluster: StandaloneCluster, nc: SelfManagedNodeClass, *, ca_pem: str) -> dict[str, Any]:
    """The Ignition config stored in S3: the real pointer to the MCS for the class's pool, with its CA.

    Everything that rotates (the CA) is here, never in userData; rewriting the object does not drift nodes.
    """
    return ignition_pointer(mcs_source(cluster, nc.pool), ca_bundle_pem=ca_pem)


def object_key(cluster: StandaloneCluster, nc: SelfManagedNodeClass) -> str:
    """The S3 key of the class's payload: ``<prefix>/<cluster>/<class>/<release>/<config>.ign``.

    The config segment is the class's ``configVersion``; when that does not already name the pool
    (``rendered-<pool>-…``) it is prefixed with ``<pool>.``, so moving a class to another pool always
    moves the key (and replaces its nodes) instead of silently repointing the existing object.
    """
    config = nc.config_version
    if not config.startswith(f"rendered-{nc.pool}-"):
        config = f"{nc.pool}.{config}"
    return pointer_key(
        _karpenter(cluster).prefix, cluster.name, nc.name, release=cluster.release, config_version=config
    )


def _terms(tags: dict[str, str] | None, default: dict[str, str]) -> list[dict[str, Any]]:
    return [{"tags": dict(tags) if tags else default}]


def render_self_managed_ec2_node_class(
    cluster: StandaloneCluster, nc: SelfManagedNodeClass, image: BootImage
) -> dict[str, Any]:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass whose userData is the stable S3 pointer to the payload.

    ``image`` is the class's boot image from the cluster's catalog (``ResolvedCluster.karpenter_images``);
    the AMI is selected by id, and its RHCOS version is recorded for the boot image policies. Default
    selectors follow the installer's tags: subnets ``kubernetes.io/cluster/<infraID>: owned``, security
    group ``Name: <infraID>-node``.
    """
    karpenter = _karpenter(cluster)
    infra = cluster.infra_id
    spec: dict[str, Any] = {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": image.ami}],
        "userData": user_data(s3_pointer(karpenter.bucket, object_key(cluster, nc))),
        "instanceProfile": karpenter.instance_profile,
        "subnetSelectorTerms": _terms(nc.subnet_tags, {f"kubernetes.io/cluster/{infra}": "owned"}),
        "securityGroupSelectorTerms": _terms(nc.security_group_tags, {"Name": f"{infra}-node"}),
        "blockDeviceMappings": [root_volume(nc.root_volume_gib)],
        "metadataOptions": dict(METADATA_OPTIONS),
    }
    return {
        "apiVersion": k.EC2_NODE_CLASS.api_version,
        "kind": k.EC2_NODE_CLASS.kind,
        "metadata": {
            "name": nc.name,
            "annotations": {
                k.ANNOTATION_USERDATA_MODE: k.USERDATA_MODE_S3_POINTER,
                k.ANNOTATION_RELEASE: cluster.release,
                k.ANNOTATION_RHCOS: image.raw_release,
                k.ANNOTATION_STREAM: nc.stream,
                k.ANNOTATION_KARPENTER: cluster_karpenter(cluster),
            },
        },
        "spec": spec,
    }


def render_operator_ec2_node_class(cluster: StandaloneCluster, nc: OperatorNodeClass) -> dict[str, Any]:
    """A ``karpenter.k8s.aws/v1`` EC2NodeClass for a cluster whose Karpenter runs under Red Hat's operator.

    Only what the operator leaves to users: selectors, instance profile (pre-populated only on its own
    ``default`` class), block devices, tags, metadata options. The operator fills :data:`OPERATOR_OWNED` and
    creates the MachineConfigPool ``karpenter-<class>`` the userData points at; its EC2NodeClass CRD, like
    HyperShift's, requires none of those fields (inferred: the enhancement moves HyperShift's operator code).
    """
    assert cluster.karpenter_operator is not None
    infra = cluster.infra_id
    spec: dict[str, Any] = {
        "instanceProfile": cluster.karpenter_operator.instance_profile,
        "subnetSelectorTerms": _terms(nc.subnet_tags, {f"kubernetes.io/cluster/{infra}": "owned"}),
        "securityGroupSelectorTerms": _terms(nc.security_group_tags, {"Name": f"{infra}-node"}),
        "blockDeviceMappings": [root_volume(nc.root_volume_gib)],
        "metadataOptions": dict(METADATA_OPTIONS),
    }
    if nc.tags:
        spec["tags"] = dict(nc.tags)
    return {
        "apiVersion": k.EC2_NODE_CLASS.api_version,
        "kind": k.EC2_NODE_CLASS.kind,
        "metadata": {
            "name": nc.name,
            "annotations": {
                k.ANNOTATION_USERDATA_MODE: USERDATA_MODE_OPERATOR,
                k.ANNOTATION_RELEASE: cluster.release,
                k.ANNOTATION_KARPENTER: cluster_karpenter(cluster),
            },
        },
        "spec": spec,
    }


def node_read_policy(bucket: str, prefix: str, cluster: str, *, partition: str = "aws") -> dict[str, Any]:
    """The IAM policy for the node role: ``s3:GetObject`` on this cluster's payloads and nothing else."""
    if not bucket or "/" in bucket or "*" in bucket:
        raise ValueError(f"bucket '{bucket}' must be a bare bucket name")
    if not cluster or "/" in cluster or "*" in cluster:
        raise ValueError(f"cluster '{cluster}' must be a single key segment")
    path = "/".join(prefix_segments(prefix))
    return {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Sid": "ReadIgnitionPayloads",
                "Effect": "Allow",
                "Action": ["s3:GetObject"],
                "Resource": [f"arn:{partition}:s3:::{bucket}/{path}/{cluster}/*"],
            }
        ],
    }
