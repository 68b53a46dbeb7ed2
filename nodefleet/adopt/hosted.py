"""HyperShift hosted clusters, from the live objects to a ``kind: hosted`` stack-file entry.

The inverse of :mod:`nodefleet.render.hosted`: the ``HostedCluster`` and its AWS ``NodePool``\\ s on the
management cluster, and (AutoNode) the ``OpenshiftEC2NodeClass``\\ es and ``karpenter.sh`` NodePools inside the
hosted cluster. Secrets (pull secret, SSH key, AES-CBC keys) are referenced by name, never copied. What the
renderer derives (the services from the endpoint access, the etcd and availability shapes) is not read back
here, but for the no-op services older CLIs wrote: the fidelity check compares the render with the live object
and names any field that differs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodefleet import kinds as k
from nodefleet.adopt.documents import AdoptError, LiveObject, at
from nodefleet.adopt.karpenter import autonode_class_entry, legacy_class_entry, node_pool_entry
from nodefleet.adopt.report import Adopted, Inferred, LeftAlone, Report
from nodefleet.bootimages.releases import parse_release_image
from nodefleet.bootimages.versions import VersionError
from nodefleet.render.hosted import ANNOTATION_CLEANUP_CLOUD_RESOURCES, OCP_RELEASE_REPOSITORY
from nodefleet.stackfile.karpenter import AUTONODE_KARPENTER
from nodefleet.stackfile.model import CONFIG_KEY

__all__ = ["HostedSources", "hosted_entry", "release_of"]

#: HostedCluster annotations nodefleet writes from typed keys or leaves to HyperShift, never free-form ones.
_TYPED_ANNOTATIONS = frozenset({ANNOTATION_CLEANUP_CLOUD_RESOURCES, k.ANNOTATION_KARPENTER_INSTANCE_PROFILE})


#: The ``spec.services`` entries the API keeps as no-ops for clusters older CLIs created (v0.1.40's ``OVNSbDb``).
_LEGACY_SERVICES = ("OVNSbDb", "OIDC")


def _legacy_services(services: Any) -> list[dict[str, str]]:
    """The no-op entries of a live ``spec.services``, in their order, when each is a bare publishing type; any
    other shape is left for the fidelity check to name."""
    out: list[dict[str, str]] = []
    for item in services if isinstance(services, list) else ():
        strategy = item.get("servicePublishingStrategy") if isinstance(item, Mapping) else None
        if (
            isinstance(strategy, Mapping)
            and item.get("service") in _LEGACY_SERVICES
            and set(strategy) == {"type"}
            and set(item) == {"service", "servicePublishingStrategy"}
        ):
            out.append({"service": str(item["service"]), "type": str(strategy["type"])})
    return out


def release_of(
    obj: LiveObject, image: Any, given: str | None, place: str, report: Report
) -> tuple[str, str | None]:
    """(release, releaseImage or None for the default pullspec) of a HostedCluster or NodePool's image.

    The release is read from the image's tag, else from nodefleet's own record on the object, else taken from
    ``given`` (``--release``); a source that holds it and an option that says otherwise are refused."""
    record = obj.annotations.get(k.ANNOTATION_RELEASE)
    found: str | None = None
    why = ""
    if isinstance(image, str) and image:
        try:
            found = str(parse_release_image(image))
            why = f"the tag of its release image {image}"
        except VersionError:
            found = None
    else:
        raise AdoptError(
            f"{obj.shown()}: spec.release.image is empty; a running cluster has a release image (the `--render` "
            "output of `hypershift create cluster aws` without --release-image leaves the choice to the operator): "
            "export the object from the cluster, or give the render a --release-image"
        )
    if found is None and record:
        found, why = str(record), f"nodefleet's record ({k.ANNOTATION_RELEASE})"
    if found is not None and given is not None and given != found:
        raise AdoptError(
            f"{obj.shown()}: --release {given} contradicts {why}, which says {found}; leave --release out "
            "(the sources hold the release)"
        )
    if found is None:
        if given is None:
            raise AdoptError(
                f"{obj.shown()}: its release image {image} names no version (a digest, or a tag that is not "
                "<version>-<arch>); pass --release X.Y.Z with the release it runs"
            )
        found, why = given, "--release"
    report.inferred.append(Inferred(place, found, f"from {why}"))
    default = f"{OCP_RELEASE_REPOSITORY}:{found}-multi"
    return found, (None if image == default else str(image))


def _secret_name(value: Any) -> str | None:
    name = at(value, "name")
    return str(name) if isinstance(name, str) and name else None


def _tags(live: Any) -> dict[str, str]:
    return {
        str(t.get("key")): str(t.get("value"))
        for t in live or []
        if isinstance(t, Mapping) and t.get("key") is not None
    }


def _first_cidr(value: Any) -> str | None:
    if isinstance(value, list) and value and isinstance(value[0], Mapping):
        cidr = value[0].get("cidr")
        return str(cidr) if cidr else None
    return None


def _encryption(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    enc = spec.get("secretEncryption")
    if not isinstance(enc, Mapping):
        return None
    aws = at(enc, "kms", "aws")
    if enc.get("type") == "kms" and isinstance(aws, Mapping):
        kms: dict[str, Any] = {
            "activeKeyARN": at(aws, "activeKey", "arn"),
            "roleARN": at(aws, "auth", "awsKms"),
        }
        if at(aws, "backupKey", "arn"):
            kms["backupKeyARN"] = at(aws, "backupKey", "arn")
        if aws.get("region"):
            kms["region"] = aws["region"]
        return {"kms": kms}
    if enc.get("type") == "aescbc":
        aescbc: dict[str, Any] = {"activeKey": {"name": at(enc, "aescbc", "activeKey", "name")}}
        backup = at(enc, "aescbc", "backupKey", "name")
        if backup:
            aescbc["backupKey"] = {"name": backup}
        return {"aescbc": aescbc}
    return None


def _proxy(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    live = at(spec, "configuration", "proxy")
    if not isinstance(live, Mapping):
        return None
    proxy: dict[str, Any] = {}
    for key in ("httpProxy", "httpsProxy", "noProxy"):
        if live.get(key):
            proxy[key] = live[key]
    if _secret_name(live.get("trustedCA")):
        proxy["trustedCA"] = _secret_name(live.get("trustedCA"))
    if live.get("readinessEndpoints"):
        proxy["readinessEndpoints"] = list(live["readinessEndpoints"])
    return proxy or None


def _operator_configuration(spec: Mapping[str, Any]) -> dict[str, Any] | None:
    live = spec.get("operatorConfiguration")
    if not isinstance(live, Mapping):
        return None
    out: dict[str, Any] = {}
    cno = live.get("clusterNetworkOperator") or {}
    if cno.get("disableMultiNetwork") is not None:
        out["disableMultiNetwork"] = cno["disableMultiNetwork"]
    ovn = cno.get("ovnKubernetesConfig") or {}
    ovn_entry: dict[str, Any] = {}
    if ovn.get("mtu") is not None:
        ovn_entry["mtu"] = ovn["mtu"]
    for key in ("internalJoinSubnet", "internalTransitSwitchSubnet"):
        if at(ovn, "ipv4", key):
            ovn_entry[key] = at(ovn, "ipv4", key)
    if ovn.get("v4InternalSubnet"):
        ovn_entry["v4InternalSubnet"] = ovn["v4InternalSubnet"]
    if ovn_entry:
        out["ovnKubernetes"] = ovn_entry
    lb = at(live, "ingressOperator", "endpointPublishingStrategy", "loadBalancer")
    if isinstance(lb, Mapping):
        ingress: dict[str, Any] = {}
        for key in ("scope", "dnsManagementPolicy"):
            if lb.get(key):
                ingress[key] = lb[key]
        if at(lb, "providerParameters", "aws", "type"):
            ingress["type"] = at(lb, "providerParameters", "aws", "type")
        if lb.get("allowedSourceRanges"):
            ingress["allowedSourceRanges"] = list(lb["allowedSourceRanges"])
        out["ingress"] = ingress
    return out or None


class HostedSources:
    """The objects of one hosted cluster: its HostedCluster, classic NodePools, and what runs inside it."""

    def __init__(
        self,
        cluster: LiveObject,
        node_pools: Sequence[LiveObject],
        inside: Sequence[LiveObject],
        namespace: LiveObject | None,
        secrets: Sequence[LiveObject],
    ) -> None:
        self.cluster = cluster
        self.node_pools = list(node_pools)
        self.inside = list(inside)
        self.namespace = namespace
        self.secrets = list(secrets)


def hosted_entry(
    src: HostedSources,
    index: int,
    report: Report,
    *,
    release: str | None = None,
    management_cluster: str | None = None,
) -> dict[str, Any]:
    """The ``kind: hosted`` entry of ``clusters[index]`` that renders ``src``."""
    hc = src.cluster
    spec = hc.spec
    base = f"{CONFIG_KEY}.clusters[{index}]"
    aws = at(spec, "platform", "aws") or {}
    cluster_release, image = release_of(hc, at(spec, "release", "image"), release, f"{base}.release", report)
    entry: dict[str, Any] = {
        "kind": "hosted",
        "name": hc.name,
        "namespace": hc.namespace or "clusters",
        "infraId": spec.get("infraID"),
        "region": aws.get("region"),
        "release": cluster_release,
    }
    if image is not None:
        entry["releaseImage"] = image
    entry["issuerUrl"] = spec.get("issuerURL")
    dns = spec.get("dns") or {}
    entry["dns"] = {
        key: dns[live]
        for key, live in (
            ("baseDomain", "baseDomain"),
            ("baseDomainPrefix", "baseDomainPrefix"),
            ("publicZoneId", "publicZoneID"),
            ("privateZoneId", "privateZoneID"),
        )
        if dns.get(live) is not None and (dns.get(live) != "" or live == "baseDomainPrefix")
    }
    cloud = aws.get("cloudProviderConfig") or {}
    entry["vpc"] = cloud.get("vpc")
    entry["subnet"] = at(cloud, "subnet", "id")
    entry["zone"] = cloud.get("zone")
    entry["roles"] = dict(aws.get("rolesRef") or {})
    if aws.get("endpointAccess"):
        entry["endpointAccess"] = aws["endpointAccess"]
    legacy = _legacy_services(spec.get("services"))
    if legacy:
        entry["legacyServices"] = legacy
    tags = _tags(aws.get("resourceTags"))
    if tags:
        entry["resourceTags"] = tags
    net = spec.get("networking") or {}
    networking = {
        key: value
        for key, value in (
            ("networkType", net.get("networkType")),
            ("clusterNetwork", _first_cidr(net.get("clusterNetwork"))),
            ("serviceNetwork", _first_cidr(net.get("serviceNetwork"))),
            ("machineNetwork", _first_cidr(net.get("machineNetwork"))),
        )
        if value is not None
    }
    if networking:
        entry["networking"] = networking
    pull = _secret_name(spec.get("pullSecret"))
    entry["pullSecret"] = {"name": pull}
    ssh = _secret_name(spec.get("sshKey"))
    if ssh:
        entry["sshKey"] = {"name": ssh}
    for key in ("controllerAvailabilityPolicy", "infrastructureAvailabilityPolicy", "olmCatalogPlacement"):
        if spec.get(key):
            entry[key] = spec[key]
    cleanup = hc.annotations.get(ANNOTATION_CLEANUP_CLOUD_RESOURCES) == "true"
    entry["cleanupCloudResources"] = cleanup
    encryption = _encryption(spec)
    if encryption is not None:
        entry["secretEncryption"] = encryption
    entry["fips"] = bool(spec.get("fips", False))
    proxy = _proxy(spec)
    if proxy is not None:
        entry["proxy"] = proxy
    volume = at(spec, "etcd", "managed", "storage", "persistentVolume") or {}
    etcd = {key: volume[key] for key in ("storageClassName", "size") if volume.get(key)}
    if etcd:
        entry["etcd"] = etcd
    if spec.get("kubeAPIServerDNSName"):
        entry["kubeAPIServerDNSName"] = spec["kubeAPIServerDNSName"]
    operators = _operator_configuration(spec)
    if operators is not None:
        entry["operatorConfiguration"] = operators
    entry["createNamespace"] = src.namespace is not None
    if src.namespace is None:
        report.inferred.append(
            Inferred(
                f"{base}.createNamespace",
                "false",
                f"the sources hold no Namespace {entry['namespace']}: nodefleet leaves it as it is",
            )
        )
    notes = hc.declared_annotations(_TYPED_ANNOTATIONS)
    if notes:
        entry["annotations"] = notes
    if hc.labels:
        entry["labels"] = {str(key): str(value) for key, value in hc.labels.items()}
    if management_cluster:
        entry["managementCluster"] = management_cluster
    report.adopted.append(Adopted(hc.shown(), base))
    if src.namespace is not None:
        report.adopted.append(Adopted(src.namespace.shown(), f"{base}.createNamespace"))
    for secret in src.secrets:
        report.left_alone.append(
            LeftAlone(secret.shown(), "a Secret: referenced by name, its data never copied into the stack")
        )
    pools = [
        _node_pool(np, entry, cluster_release, image, f"{base}.nodePools[{j}]", report)
        for j, np in enumerate(src.node_pools)
    ]
    if pools:
        entry["nodePools"] = pools
    role = at(spec, "autoNode", "provisionerConfig", "karpenter", "aws", "roleARN")
    if role or src.inside:
        entry["autoNode"] = _auto_node(src, str(role or ""), str(entry["infraId"]), base, report)
    return entry


def _node_pool(
    np: LiveObject,
    cluster: Mapping[str, Any],
    cluster_release: str,
    cluster_image: str | None,
    place: str,
    report: Report,
) -> dict[str, Any]:
    spec = np.spec
    aws = at(spec, "platform", "aws") or {}
    name = np.name
    prefix = f"{cluster['name']}-"
    entry: dict[str, Any] = {}
    if name.startswith(prefix) and len(name) > len(prefix):
        entry["name"] = name[len(prefix) :]
    else:
        entry["name"] = name
        entry["objectName"] = name
    image = at(spec, "release", "image")
    default_image = cluster_image or f"{OCP_RELEASE_REPOSITORY}:{cluster_release}-multi"
    if image != default_image:
        pool_release, _ = release_of(np, image, None, f"{place}.release", report)
        entry["release"] = pool_release
    if spec.get("autoScaling") is not None:
        entry["autoScaling"] = {
            "min": at(spec, "autoScaling", "min"),
            "max": at(spec, "autoScaling", "max"),
        }
    else:
        entry["replicas"] = spec.get("replicas", 0)
    if aws.get("instanceType"):
        entry["instanceType"] = aws["instanceType"]
    profile = aws.get("instanceProfile")
    if profile and profile != f"{cluster['infraId']}-worker":
        entry["instanceProfile"] = profile
    subnet = at(aws, "subnet", "id")
    if subnet and subnet != cluster.get("subnet"):
        entry["subnet"] = subnet
    root = aws.get("rootVolume") or {}
    if root.get("size") is not None:
        entry["rootVolumeGiB"] = root["size"]
    if root.get("type"):
        entry["rootVolumeType"] = root["type"]
    entry["rootVolumeEncrypted"] = root.get("encrypted")
    management = spec.get("management") or {}
    if management.get("upgradeType"):
        entry["upgradeType"] = management["upgradeType"]
    if spec.get("arch"):
        entry["arch"] = spec["arch"]
    entry["autoRepair"] = bool(management.get("autoRepair", False))
    for key in ("nodeDrainTimeout", "nodeVolumeDetachTimeout"):
        if spec.get(key) is not None:
            entry[key] = str(spec[key])
    report.adopted.append(Adopted(np.shown(), place))
    return entry


def _auto_node(src: HostedSources, role: str, infra_id: str, base: str, report: Report) -> dict[str, Any]:
    hc = src.cluster
    openshift = [o for o in src.inside if o.kind == k.OPENSHIFT_EC2_NODE_CLASS.kind]
    generated = {o.name for o in openshift}
    legacy = [
        o
        for o in src.inside
        if o.kind == k.EC2_NODE_CLASS.kind and o.group == "karpenter.k8s.aws" and o.name not in generated
    ]
    pools = [o for o in src.inside if o.kind == "NodePool" and o.group == "karpenter.sh"]
    for o in src.inside:
        if o.kind == k.EC2_NODE_CLASS.kind and o.name in generated:
            report.left_alone.append(
                LeftAlone(o.shown(), "generated by HyperShift from the OpenshiftEC2NodeClass of its name")
            )
    classes: list[dict[str, Any]] = []
    mode = "legacy" if legacy and not openshift else "autonode"
    for o in openshift if mode == "autonode" else legacy:
        if o.name == "default":
            report.left_alone.append(
                LeftAlone(
                    o.shown(),
                    "the `default` class belongs to HyperShift, which rewrites it on every reconcile",
                )
            )
            continue
        place = f"{base}.autoNode.nodeClasses[{len(classes)}]"
        entry = autonode_class_entry(o, infra_id) if mode == "autonode" else legacy_class_entry(o, infra_id)
        classes.append(entry)
        report.adopted.append(Adopted(o.shown(), place))
    if not role:
        raise AdoptError(
            f"{hc.shown()}: the sources hold Karpenter objects of its hosted cluster but the HostedCluster has no "
            "spec.autoNode (AutoNode is off); import the HostedCluster alone, or turn AutoNode on first"
        )
    if not pools:
        raise AdoptError(
            f"{hc.shown()}: runs AutoNode (spec.autoNode), but the sources hold none of its Karpenter NodePools; "
            "nodefleet declares an AutoNode cluster's classes and pools, which live in the hosted cluster: add "
            "`oc --kubeconfig <hosted cluster> get openshiftec2nodeclasses,nodepools.karpenter.sh -o yaml` to the "
            "sources"
        )
    node_pools = []
    for j, o in enumerate(pools):
        node_pools.append(node_pool_entry(o))
        report.adopted.append(Adopted(o.shown(), f"{base}.autoNode.nodePools[{j}]"))
    report.inferred.append(
        Inferred(
            f"{base}.autoNode.karpenter.version",
            AUTONODE_KARPENTER,
            "the Karpenter HyperShift runs for AutoNode; no object says which",
        )
    )
    auto: dict[str, Any] = {"roleArn": role}
    if mode == "legacy":
        auto["mode"] = "legacy"
    if classes:
        auto["nodeClasses"] = classes
    auto["nodePools"] = node_pools
    return auto
