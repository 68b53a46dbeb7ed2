"""Karpenter on a standalone cluster, from the live objects to the ``karpenter:`` or ``karpenterOperator:`` block.

The inverse of :mod:`nodefleet.render.karpenter`. Which block a cluster's classes go to is read from their
``userData``: nodefleet's S3 Ignition pointer (:func:`nodefleet.adopt.karpenter.s3_pointer_key`) is self-managed
Karpenter, whose key names the bucket, prefix, cluster, release and rendered config; a class the
karpenter-operator serves (its ``karpenter-<class>`` MachineConfigPool in the sources, or nodefleet's own record
of that mode) goes to ``karpenterOperator:``, the operator's ``userData``, AMI and ``amiFamily`` left to it. A
``userData`` of any other shape is refused: the model cannot declare it, and dropping it would change every node.

What no Kubernetes object holds is asked for, never guessed: the nodes' IAM role (``--karpenter-node-role``), the
Karpenter version of a self-managed install (``--karpenter-version``, unless nodefleet's own annotation records
it) and the cluster's domain (the ``Infrastructure`` object's ``apiServerInternalURI``, or ``--cluster-domain``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from nodefleet import kinds as k
from nodefleet.adopt.documents import AdoptError, LiveObject, at
from nodefleet.adopt.karpenter import (
    PointerKey,
    node_pool_entry,
    operator_class_entry,
    s3_pointer_key,
    self_managed_class_entry,
)
from nodefleet.adopt.report import Adopted, Inferred, LeftAlone, Report
from nodefleet.bootimages.catalog import BootImageCatalog, kube_arch
from nodefleet.render.karpenter import USERDATA_MODE_OPERATOR
from nodefleet.stackfile.karpenter import AUTONODE_KARPENTER

__all__ = ["KarpenterOptions", "StandaloneKarpenter", "operator_pools", "standalone_karpenter"]

#: The class every Karpenter installation keeps for itself (the karpenter-operator re-creates it).
DEFAULT_CLASS = "default"
#: The prefix of the MachineConfigPool the karpenter-operator creates for each class.
OPERATOR_POOL_PREFIX = "karpenter-"


@dataclass(frozen=True)
class KarpenterOptions:
    """What the user gives for Karpenter on a standalone cluster, where no object holds it."""

    version: str | None = None
    node_role: str | None = None
    cluster_domain: str | None = None


@dataclass
class StandaloneKarpenter:
    """The block (``karpenter`` or ``karpenterOperator``) and the cluster name the pointer keys give."""

    key: str
    block: dict[str, Any]
    #: The cluster segment of the S3 keys (self-managed): the name the render writes them under.
    cluster_name: str | None
    adopted: list[LiveObject]


def operator_pools(classes: Sequence[LiveObject], pools: Sequence[LiveObject]) -> set[str]:
    """The MachineConfigPools the karpenter-operator made for ``classes`` (``karpenter-<class>``)."""
    names = {f"{OPERATOR_POOL_PREFIX}{c.name}" for c in classes}
    return {p.name for p in pools if p.name in names}


def _version(objects: Sequence[LiveObject], flavour: str) -> str | None:
    """The Karpenter minor nodefleet recorded on the objects (``nodefleet.io/karpenter: <flavour>/<x.y>``)."""
    for o in objects:
        note = str(o.annotations.get(k.ANNOTATION_KARPENTER) or "")
        if note.startswith(f"{flavour}/"):
            return note.partition("/")[2]
    return None


def _gates(pools: Sequence[LiveObject], base: str, report: Report) -> list[str]:
    gates: list[str] = []
    if any(p.spec.get("replicas") is not None for p in pools):
        gates.append("StaticCapacity")
        report.inferred.append(
            Inferred(f"{base}.featureGates", "StaticCapacity", "a NodePool has spec.replicas (a static pool)")
        )
    reasons = {
        str(r)
        for p in pools
        for b in at(p.spec, "disruption", "budgets") or []
        if isinstance(b, Mapping)
        for r in b.get("reasons") or []
    }
    if "Unhealthy" in reasons:
        gates.append("NodeRepair")
        report.inferred.append(
            Inferred(f"{base}.featureGates", "NodeRepair", "a NodePool's budget names the Unhealthy reason")
        )
    return gates


def _cluster_domain(infrastructure: LiveObject | None, given: str | None, place: str, report: Report) -> str:
    uri = at(infrastructure.manifest, "status", "apiServerInternalURI") if infrastructure else None
    host = str(uri or "").removeprefix("https://").partition(":")[0]
    found = host.removeprefix("api-int.") if host.startswith("api-int.") else None
    if found and given and found != given:
        raise AdoptError(
            f"{infrastructure.shown() if infrastructure else ''}: --cluster-domain {given} contradicts "
            f"status.apiServerInternalURI {uri}; leave --cluster-domain out"
        )
    if found:
        report.inferred.append(Inferred(place, found, "from Infrastructure status.apiServerInternalURI"))
        return found
    if given:
        report.inferred.append(Inferred(place, given, "from --cluster-domain"))
        return given
    raise AdoptError(
        "self-managed Karpenter's nodes fetch their config from the MCS at https://api-int.<cluster domain>:22623, "
        "and no source holds the domain: add `oc get infrastructure cluster -o yaml` to the sources, or pass "
        "--cluster-domain <cluster>.<baseDomain>"
    )


def _mode(o: LiveObject, pools: set[str]) -> str:
    if s3_pointer_key(o.spec) is not None:
        return "karpenter"
    if (
        o.annotations.get(k.ANNOTATION_USERDATA_MODE) == USERDATA_MODE_OPERATOR
        or f"{OPERATOR_POOL_PREFIX}{o.name}" in pools
    ):
        return "karpenterOperator"
    raise AdoptError(
        f"{o.shown()}: spec.userData is neither nodefleet's S3 Ignition pointer (self-managed Karpenter, "
        "`karpenter:`) nor the karpenter-operator's (its MachineConfigPool "
        f"{OPERATOR_POOL_PREFIX}{o.name} is not in the sources); nodefleet cannot declare a userData of its own, "
        "and leaving it out would replace every node of the class: move the class to the S3 pointer "
        "(docs/configuration.md, 'Self-managed Karpenter'), add the karpenter-operator's MachineConfigPools "
        "(`oc get machineconfigpools -o yaml`) if the operator runs, or leave the cluster's Karpenter objects out "
        "of the sources"
    )


def _image(o: LiveObject, catalog: BootImageCatalog | None, place: str, report: Report) -> tuple[str, str]:
    """(architecture, stream) of the class's AMI in the cluster's catalog; amd64 on rhel-9 when the catalog has
    no such AMI (the fidelity check then names the AMI the render would write instead)."""
    terms = o.spec.get("amiSelectorTerms")
    ami = at(terms[0], "id") if isinstance(terms, list) and len(terms) == 1 else None
    image = catalog.find_ami(str(ami)) if catalog is not None and ami else None
    if image is None:
        return "amd64", str(o.annotations.get(k.ANNOTATION_STREAM) or "rhel-9")
    arch = kube_arch(image.arch)
    stream = image.stream if image.stream in ("rhel-9", "rhel-10") else "rhel-9"
    report.inferred.append(
        Inferred(f"{place}.architecture", arch, f"{ami} is the catalog's {image.arch} {image.stream} image")
    )
    return arch, stream


def standalone_karpenter(
    classes: Sequence[LiveObject],
    node_pools: Sequence[LiveObject],
    machine_config_pools: Sequence[LiveObject],
    infrastructure: LiveObject | None,
    infra_id: str,
    base: str,
    report: Report,
    options: KarpenterOptions,
    catalog: BootImageCatalog | None,
) -> StandaloneKarpenter:
    """The Karpenter block of the standalone cluster ``clusters[…]`` at ``base``."""
    pool_names = {p.name for p in machine_config_pools}
    own = [o for o in classes if o.name != DEFAULT_CLASS]
    for o in classes:
        if o.name == DEFAULT_CLASS:
            report.left_alone.append(
                LeftAlone(
                    o.shown(), "the `default` class belongs to the Karpenter installation that keeps it"
                )
            )
    if not own:
        shown = (node_pools or classes)[0].shown()
        raise AdoptError(
            f"{shown}: the sources hold no EC2NodeClass but `default`, which the Karpenter installation keeps for "
            "itself; nodefleet declares a cluster's Karpenter through classes of its own: add them "
            "(`oc get ec2nodeclasses -o yaml`), or leave the Karpenter objects out of the sources"
        )
    modes = {o.name: _mode(o, pool_names) for o in own}
    if len(set(modes.values())) > 1:
        booting = next(o for o in own if modes[o.name] == "karpenter")
        operator = next(o for o in own if modes[o.name] == "karpenterOperator")
        raise AdoptError(
            f"{booting.shown()}: boots through nodefleet's S3 pointer (self-managed Karpenter) while "
            f"{operator.shown()} is the karpenter-operator's; a cluster runs one of them, and the operator's "
            "admission policies reject the pointer's fields: leave one set of classes out of the sources"
        )
    key = next(iter(modes.values()))
    place = f"{base}.{key}"
    entries: list[dict[str, Any]] = []
    pointers: list[PointerKey] = []
    for j, o in enumerate(own):
        where = f"{place}.nodeClasses[{j}]"
        if key == "karpenter":
            pointer = s3_pointer_key(o.spec)
            assert pointer is not None
            pointers.append(pointer)
            arch, stream = _image(o, catalog, where, report)
            entries.append(self_managed_class_entry(o, infra_id, pointer, architecture=arch, stream=stream))
        else:
            entries.append(operator_class_entry(o, infra_id))
        report.adopted.append(Adopted(o.shown(), where))
    if not node_pools:
        raise AdoptError(
            f"{own[0].shown()}: the sources hold the cluster's Karpenter node classes but none of its NodePools; "
            "nodefleet declares them together: add `oc get nodepools.karpenter.sh -o yaml` to the sources"
        )
    pools = []
    for j, o in enumerate(node_pools):
        pools.append(node_pool_entry(o))
        report.adopted.append(Adopted(o.shown(), f"{place}.nodePools[{j}]"))
    profile = str(own[0].spec.get("instanceProfile") or "")
    if key == "karpenterOperator":
        version = _version([*own, *node_pools], "openshift")
        if version is None:
            version = AUTONODE_KARPENTER
            report.inferred.append(
                Inferred(
                    f"{place}.karpenter.version", version, "the payload's Karpenter; no object says which"
                )
            )
        release: dict[str, Any] = {"version": version}
        gates = _gates(node_pools, f"{place}.karpenter", report)
        if gates:
            release["featureGates"] = gates
        block = {"instanceProfile": profile, "karpenter": release, "nodeClasses": entries, "nodePools": pools}
        return StandaloneKarpenter(key, block, None, [*own, *node_pools])
    first = pointers[0]
    version = _version([*own, *node_pools], "aws") or options.version
    if version is None:
        raise AdoptError(
            f"{own[0].shown()}: nothing in the sources says which Karpenter the cluster runs (self-managed, "
            "installed by you); pass --karpenter-version x.y (`kubectl -n kube-system get deploy karpenter -o "
            "jsonpath='{.spec.template.spec.containers[0].image}'`)"
        )
    if not options.node_role:
        raise AdoptError(
            f"{own[0].shown()}: the nodes' IAM role (which gets s3:GetObject on the Ignition payloads) is in no "
            f"Kubernetes object; pass --karpenter-node-role with the role of instance profile {profile or '?'} "
            f"(`aws iam get-instance-profile --instance-profile-name {profile or '<profile>'} --query "
            "'InstanceProfile.Roles[0].RoleName'`)"
        )
    block = {"bucket": first.bucket}
    if first.prefix != "nodefleet/ignition":
        block["prefix"] = first.prefix
    block |= {
        "nodeRole": options.node_role,
        "instanceProfile": profile,
        "clusterDomain": _cluster_domain(
            infrastructure, options.cluster_domain, f"{place}.clusterDomain", report
        ),
        "version": version,
    }
    gates = _gates(node_pools, place, report)
    if gates:
        block["featureGates"] = gates
    block |= {"nodeClasses": entries, "nodePools": pools}
    return StandaloneKarpenter(key, block, first.cluster, [*own, *node_pools])
