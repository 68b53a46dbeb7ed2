"""Standalone clusters, from the live objects to a ``kind: standalone`` stack-file entry.

The inverse of :mod:`nodefleet.render.machinesets`: MachineSets of ``openshift-machine-api`` (the installer's
``<infraID>-worker-<zone>`` and any ``<infraID>-<name>-<zone>``), custom MachineConfigPools, the
``MachineConfiguration`` singleton's boot image management and skew enforcement, the release from
``ClusterVersion``, and Karpenter's classes and pools (:mod:`nodefleet.adopt.standalone_karpenter`). A MachineSet's AMI is left to the MCO when the cluster's boot image management enrolls it
(``bootImage: managed``), else it is pinned from the catalog, and the fidelity check says whether the
catalog's AMI is the one it runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from nodefleet import kinds as k
from nodefleet.adopt.documents import AdoptError, LiveObject, at
from nodefleet.adopt.report import Adopted, Inferred, LeftAlone, Report
from nodefleet.adopt.standalone_karpenter import KarpenterOptions, operator_pools, standalone_karpenter
from nodefleet.bootimages.catalog import BootImageCatalog
from nodefleet.bootimages.versions import VersionError, parse_release
from nodefleet.render.machinesets import user_data_secret
from nodefleet.stackfile.instance_types import instance_type_architecture
from nodefleet.stackfile.model import CONFIG_KEY

__all__ = ["StandaloneSources", "standalone_entry"]


class StandaloneSources:
    """The objects of one standalone cluster."""

    def __init__(
        self,
        machine_sets: Sequence[LiveObject],
        pools: Sequence[LiveObject],
        machine_configs: Sequence[LiveObject],
        configuration: LiveObject | None,
        cluster_version: LiveObject | None,
        infrastructure: LiveObject | None,
        karpenter_classes: Sequence[LiveObject] = (),
        karpenter_pools: Sequence[LiveObject] = (),
    ) -> None:
        self.machine_sets = list(machine_sets)
        self.pools = list(pools)
        self.machine_configs = list(machine_configs)
        self.configuration = configuration
        self.cluster_version = cluster_version
        self.infrastructure = infrastructure
        #: ``karpenter.k8s.aws`` EC2NodeClasses and ``karpenter.sh`` NodePools, where the cluster runs Karpenter.
        self.karpenter_classes = list(karpenter_classes)
        self.karpenter_pools = list(karpenter_pools)


def _infra_id(src: StandaloneSources) -> str:
    if src.infrastructure is not None:
        name = at(src.infrastructure.manifest, "status", "infrastructureName")
        if isinstance(name, str) and name:
            return name
    found = {ms.labels.get(k.LABEL_CLUSTER) for ms in src.machine_sets}
    found.discard(None)
    if len(found) != 1:
        raise AdoptError(
            f"{src.machine_sets[0].shown()}: the MachineSets name {len(found)} infrastructure IDs "
            f"({', '.join(sorted(str(f) for f in found)) or 'none'}) in their {k.LABEL_CLUSTER} label; import one "
            "cluster at a time, and add its Infrastructure object (`oc get infrastructure cluster -o yaml`)"
        )
    return str(found.pop())


def _release(src: StandaloneSources, given: str | None, place: str, report: Report) -> str:
    cv = src.cluster_version
    found = at(cv.manifest, "status", "desired", "version") if cv is not None else None
    if isinstance(found, str) and found:
        try:
            parse_release(found)
        except VersionError as e:
            raise AdoptError(f"{cv.shown() if cv else ''}: status.desired.version {found}: {e}") from None
        if given is not None and given != found:
            raise AdoptError(
                f"{cv.shown() if cv else ''}: --release {given} contradicts status.desired.version {found}; leave "
                "--release out (the ClusterVersion holds the release)"
            )
        report.inferred.append(Inferred(place, found, "from ClusterVersion status.desired.version"))
        return found
    if given is None:
        raise AdoptError(
            "the sources hold no ClusterVersion, so nothing says which release the cluster runs; pass --release "
            "X.Y.Z (`oc get clusterversion version -o jsonpath='{.status.desired.version}'`), or add "
            "`oc get clusterversion version -o yaml` to the sources"
        )
    report.inferred.append(Inferred(place, given, "from --release"))
    return given


def _boot_image_management(src: StandaloneSources) -> dict[str, Any]:
    mc = src.configuration
    if mc is None:
        raise AdoptError(
            "the sources hold no MachineConfiguration 'cluster', so nothing says which MachineSets the MCO's boot "
            "image controller manages (whose AMI nodefleet must leave alone); add `oc get machineconfiguration "
            "cluster -o yaml` to the sources"
        )
    managers = at(mc.spec, "managedBootImages", "machineManagers") or []
    mine = [
        m
        for m in managers
        if isinstance(m, Mapping)
        and m.get("resource") == "machinesets"
        and m.get("apiGroup") == "machine.openshift.io"
    ]
    if not mine:
        return {"mode": "None"}
    selection = mine[0].get("selection") or {}
    mode = selection.get("mode")
    if mode == "Partial":
        labels = at(selection, "partial", "machineResourceSelector", "matchLabels") or {}
        if len(labels) == 1:
            ((label, value),) = labels.items()
            return {"mode": "Partial", "label": str(label), "value": str(value)}
        return {"mode": "Partial"}
    return {"mode": str(mode)}


def _skew(live: Any, bim: Mapping[str, Any], place: str, report: Report) -> str:
    """The skew enforcement mode: the live one, else Automatic (the MCO's choice with every MachineSet
    enrolled), else nodefleet's Manual record, which the fidelity check then names as an addition."""
    if live in ("Manual", "None"):
        return str(live)
    if bim["mode"] == "All":
        return "Automatic"
    report.inferred.append(
        Inferred(
            place,
            "Manual",
            "the MachineConfiguration has no bootImageSkewEnforcement and not every MachineSet is enrolled: "
            "nodefleet's record of the oldest boot image",
        )
    )
    return "Manual"


def _enrolled(ms: LiveObject, bim: Mapping[str, Any]) -> bool:
    if bim["mode"] == "All":
        return True
    if bim["mode"] == "Partial":
        label = bim.get("label", "nodefleet.io/boot-image-updates")
        return bool(ms.labels.get(label) == bim.get("value", "mco"))
    return False


def _architecture(ms: LiveObject, instance_type: str, place: str, report: Report) -> str:
    note = ms.annotations.get(k.ANNOTATION_ARCH, "")
    for part in str(note).split(","):
        if part.startswith("kubernetes.io/arch="):
            return "arm64" if part.endswith("arm64") else "amd64"
    arch = instance_type_architecture(instance_type) or "amd64"
    report.inferred.append(
        Inferred(place, arch, f"from its instance type {instance_type} (no {k.ANNOTATION_ARCH} annotation)")
    )
    return arch


def _aws_reference(value: Any) -> dict[str, Any] | None:
    if not isinstance(value, Mapping):
        return None
    if value.get("id"):
        return {"id": value["id"]}
    filters = value.get("filters")
    if isinstance(filters, list) and filters:
        tags: dict[str, str] = {}
        for f in filters:
            name = str(at(f, "name") or "")
            values = at(f, "values")
            if not name.startswith("tag:") or not isinstance(values, list) or len(values) != 1:
                return None
            tags[name.removeprefix("tag:")] = str(values[0])
        return {"tags": tags}
    return None


def _machine_set(
    ms: LiveObject,
    infra: str,
    bim: Mapping[str, Any],
    pools: set[str],
    place: str,
    report: Report,
) -> dict[str, Any]:
    tspec = at(ms.spec, "template", "spec") or {}
    value = at(tspec, "providerSpec", "value") or {}
    zone = str(at(value, "placement", "availabilityZone") or "")
    prefix, suffix = f"{infra}-", f"-{zone}"
    if not (zone and ms.name.startswith(prefix) and ms.name.endswith(suffix)):
        raise AdoptError(
            f"{ms.shown()}: its name is not <infraId>-<name>-<zone> ('{infra}-…-{zone or '<zone>'}'), the only "
            "MachineSet name nodefleet declares; a MachineSet cannot be renamed in place, so leave it out of the "
            "sources (it stays as it is) or replace it by one named so"
        )
    role = at(ms.spec, "template", "metadata", "labels", k.LABEL_MACHINE_ROLE)
    pool = str(role) if role else "worker"
    instance_type = str(value.get("instanceType") or "")
    entry: dict[str, Any] = {
        "name": ms.name[len(prefix) : -len(suffix)],
        "zone": zone,
        "instanceType": instance_type,
        "replicas": ms.spec.get("replicas", 1),
        "pool": pool,
        "architecture": _architecture(ms, instance_type, f"{place}.architecture", report),
    }
    if value.get("apiVersion") not in (None, "machine.openshift.io/v1beta1"):
        entry["providerApiVersion"] = value["apiVersion"]
    stream = ms.labels.get(k.LABEL_OS_STREAM)
    if stream:
        entry["stream"] = stream
    entry["bootImage"] = "managed" if _enrolled(ms, bim) else "pinned"
    devices = value.get("blockDevices")
    ebs = at(devices[0], "ebs") if isinstance(devices, list) and devices else None
    if isinstance(ebs, Mapping):
        if isinstance(ebs.get("volumeSize"), int):
            entry["rootVolumeGiB"] = ebs["volumeSize"]
        if ebs.get("volumeType"):
            entry["rootVolumeType"] = ebs["volumeType"]
        entry["rootVolumeEncrypted"] = ebs.get("encrypted")
        # The installer's zero values (iops: 0, kmsKey.arn: ""), kept: blockDevices is replaced whole by an apply.
        if isinstance(ebs.get("iops"), int):
            entry["rootVolumeIops"] = ebs["iops"]
        kms = ebs.get("kmsKey")
        if isinstance(kms, Mapping) and isinstance(kms.get("arn"), str):
            entry["rootVolumeKMSKey"] = kms["arn"]
    tags = [t for t in value.get("tags") or [] if isinstance(t, Mapping)]
    owned = {"name": f"kubernetes.io/cluster/{infra}", "value": "owned"}
    if tags and tags[0] == owned:
        extra = {str(t.get("name")): str(t.get("value", "")) for t in tags[1:]}
        if extra:
            entry["tags"] = extra
    taints = tspec.get("taints")
    if isinstance(taints, list) and taints:
        entry["taints"] = [
            {key: t[key] for key in ("key", "value", "effect") if isinstance(t, Mapping) and key in t}
            for t in taints
        ]
    labels = dict(at(tspec, "metadata", "labels") or {})
    if pool != "worker":
        labels.pop(f"{k.NODE_ROLE_PREFIX}{pool}", None)
    if labels:
        entry["labels"] = {str(key): str(v) for key, v in labels.items()}
    subnet = _aws_reference(value.get("subnet"))
    default_subnet = {"tags": {"Name": f"{infra}-subnet-private-{zone}"}}
    if subnet is not None and subnet != default_subnet:
        entry["subnet"] = subnet
    groups = [_aws_reference(g) for g in value.get("securityGroups") or []]
    default_groups = [{"tags": {"Name": f"{infra}-node"}}, {"tags": {"Name": f"{infra}-lb"}}]
    if groups and all(g is not None for g in groups) and groups != default_groups:
        entry["securityGroups"] = groups
    secret = at(value, "userDataSecret", "name")
    if secret and secret != user_data_secret(pool):
        entry["userDataSecret"] = secret
        report.inferred.append(
            Inferred(
                f"{place}.userDataSecret",
                str(secret),
                f"its machines boot {secret}, not pool {pool}'s own config (custom-pool-labeling says so)",
            )
        )
    if pool != "worker" and pool not in pools:
        pools.add(pool)
    report.adopted.append(Adopted(ms.shown(), place))
    return entry


def standalone_entry(
    src: StandaloneSources,
    index: int,
    report: Report,
    *,
    catalog: str,
    release: str | None = None,
    name: str | None = None,
    karpenter: KarpenterOptions | None = None,
    boot_images: BootImageCatalog | None = None,
) -> dict[str, Any]:
    """The ``kind: standalone`` entry of ``clusters[index]`` that renders ``src``; ``boot_images`` is the
    catalog ``catalog`` names, which says what a Karpenter class's AMI is."""
    base = f"{CONFIG_KEY}.clusters[{index}]"
    if not src.machine_sets:
        raise AdoptError(
            "the sources hold no MachineSet of openshift-machine-api; a standalone cluster is declared by its "
            "MachineSets: add `oc -n openshift-machine-api get machinesets -o yaml`"
        )
    infra = _infra_id(src)
    block = None
    if src.karpenter_classes or src.karpenter_pools:
        block = standalone_karpenter(
            src.karpenter_classes,
            src.karpenter_pools,
            src.pools,
            src.infrastructure,
            infra,
            base,
            report,
            karpenter or KarpenterOptions(),
            boot_images,
        )
    if name is None and block is not None and block.cluster_name:
        name = block.cluster_name
        report.inferred.append(
            Inferred(
                f"{base}.name", name, "the cluster segment of the S3 key its Karpenter classes boot from"
            )
        )
    cluster_name = name or infra.rpartition("-")[0] or infra
    if name is None:
        report.inferred.append(
            Inferred(f"{base}.name", cluster_name, f"the infrastructure ID {infra} without its random suffix")
        )
    bim = _boot_image_management(src)
    report.adopted.append(
        Adopted(src.configuration.shown() if src.configuration else "", f"{base}.bootImageManagement")
    )
    skew = at(
        src.configuration.manifest if src.configuration else {}, "spec", "bootImageSkewEnforcement", "mode"
    )
    region = ""
    machine_sets: list[dict[str, Any]] = []
    declared: set[str] = set()
    owned = (
        operator_pools(src.karpenter_classes, src.pools)
        if block and block.key == "karpenterOperator"
        else set()
    )
    custom = {p.name for p in src.pools} - owned
    for p in src.pools:
        if p.name in owned:
            report.left_alone.append(
                LeftAlone(p.shown(), "made and kept by the karpenter-operator for the node class of its name")
            )
    for j, ms in enumerate(sorted(src.machine_sets, key=lambda o: o.name)):
        machine_sets.append(_machine_set(ms, infra, bim, declared, f"{base}.machineSets[{j}]", report))
        region = region or str(
            at(ms.spec, "template", "spec", "providerSpec", "value", "placement", "region") or ""
        )
    entry: dict[str, Any] = {
        "kind": "standalone",
        "name": cluster_name,
        "infraId": infra,
        "region": region,
        "release": _release(src, release, f"{base}.release", report),
        "catalog": catalog,
        "bootImageManagement": bim,
        "skewEnforcement": {"mode": _skew(skew, bim, f"{base}.skewEnforcement.mode", report)},
    }
    pools: list[dict[str, Any]] = []
    for pool in sorted(custom | declared):
        live = next((p for p in src.pools if p.name == pool), None)
        stream = at(live.spec, "osImageStream", "name") if live is not None else None
        pools.append({"name": pool, **({"osImageStream": stream} if stream else {})})
        if live is not None:
            report.adopted.append(Adopted(live.shown(), f"{base}.pools[{len(pools) - 1}]"))
    if pools:
        entry["pools"] = pools
    entry["machineSets"] = machine_sets
    if block is not None:
        entry[block.key] = block.block
    for mc in src.machine_configs:
        report.left_alone.append(
            LeftAlone(
                mc.shown(),
                "a MachineConfig: nodefleet declares pools, not their configuration; it stays as it is",
            )
        )
    return entry
