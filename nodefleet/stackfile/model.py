"""The typed configuration of one fleet stack: validated once, with every default in this module.

A stack file holds a single structured value, ``nodefleet:fleet``. ``validate_fleet`` turns it into a
``Fleet``: pydantic validates shapes and types, then the cross-references (pools, catalogs, regions,
streams) are checked against the real boot image catalogs. Everything that cannot be built is rejected
here, with one message naming the stack file, the field path and the fix. Skew limits and labeling rules
are deliberately *not* checked here: a cluster upgraded while its MachineSets kept old boot images is a
valid configuration, and the policy pack reports it.
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, get_args, get_origin

from pydantic import BaseModel, Discriminator, Field, Tag, ValidationError, field_validator, model_validator

from nodefleet.apiserver.formats import label_value_errors
from nodefleet.bootimages.catalog import (
    BootImage,
    BootImageCatalog,
    CatalogError,
    catalog_reference,
    load_catalog,
    normalize_arch,
)
from nodefleet.bootimages.skew import stream_finding
from nodefleet.bootimages.versions import OCPVersion, VersionError, default_stream, parse_ocp
from nodefleet.kinds import LABEL_MACHINESET, NODE_ROLE_PREFIX
from nodefleet.render_layout import LAYOUT_DIRS, render_targets
from nodefleet.stackfile.adopt import entry_problem
from nodefleet.stackfile.hosted import HostedCluster
from nodefleet.stackfile.instance_types import Finding, family_finding, instance_type_finding
from nodefleet.stackfile.karpenter import (
    KarpenterNodePoolSpec,
    KarpenterOperator,
    SelfManagedKarpenter,
    StaticNodePoolSpec,
    check_unique_names,
)
from nodefleet.stackfile.modelbase import (
    DNS_LABEL,
    DNS_SUBDOMAIN,
    INSTANCE_TYPE,
    PATTERN_HELP,
    REGION,
    SECURITY_GROUP_ID,
    SUBNET_ID,
    AwsTags,
    ConfigModel,
    LabelKeys,
    OCPRelease,
    Zone,
    label_key_problem,
    zone_advice,
)
from nodefleet.stackfile.paths import (
    ContainedPath,
    PathError,
    catalog_file,
    check_stack_name,
    render_directory,
    writable_folder_problem,
)
from nodefleet.stackfile.secrets import CA_BUNDLE
from nodefleet.stackfile.waves import DEFAULT_WAVE, WAVES, WaveSetting

CONFIG_KEY = "nodefleet:fleet"

_BUILTIN_POOLS = ("worker",)
_RESERVED_POOLS = ("master", "worker", "arbiter")
_CONTROL_PLANE_ROLES = ("master", "control-plane", "arbiter")


class OutputSettings(ConfigModel):
    """Where Kubernetes objects go: a cluster (``apply``) or a directory of manifests (``render``)."""

    mode: Literal["apply", "render"] = Field(
        "render",
        description="`render` writes manifests for Argo CD / Flux through the Kubernetes provider's "
        "renderYamlToDirectory; `apply` talks to the cluster in the ambient kubeconfig.",
    )
    directory: str = Field(
        "rendered/{stack}",
        description="Render directory, relative to the project; `{stack}` is replaced by the stack name. "
        "Outside the project only inside a root allowed by `--root` or NODEFLEET_RENDER_ROOT.",
    )
    kubeconfig: str | None = Field(
        None, description="apply mode only: kubeconfig path (default: $KUBECONFIG / ~/.kube/config)."
    )

    adopt: dict[str, list[str]] = Field(
        default_factory=dict,
        description="apply mode: live objects the first `pulumi up` adopts (Pulumi's import) instead of creating, "
        "by render target (a cluster's name; `<name>-hosted` for the objects inside a hosted cluster): "
        "'Kind.group namespace/name', 'Kind.group name' when cluster-scoped, 'Kind name' for the core group. "
        "`nodefleet import` writes it; harmless once adopted; ignored in render mode (docs/operations.md).",
    )

    @model_validator(mode="after")
    def _kubeconfig_only_in_apply(self) -> OutputSettings:
        if self.mode == "render" and self.kubeconfig:
            raise ValueError(
                "kubeconfig: is set but mode is render; the provider refuses a kubeconfig in render mode. "
                "Remove kubeconfig or set mode: apply"
            )
        return self


class BootImageManagement(ConfigModel):
    """The cluster's MCO boot image management (``MachineConfiguration.spec.managedBootImages``)."""

    mode: Literal["All", "Partial", "None"] = Field(
        "Partial",
        description="All: every MachineSet is updated by the MCO boot image controller; Partial: only "
        "MachineSets with `bootImage: managed` (they carry the selector label); None: nodefleet pins all.",
    )
    label: str = Field(
        "nodefleet.io/boot-image-updates",
        description="Partial mode: label key put on enrolled MachineSets and used in the selector.",
    )
    value: str = Field("mco", description="Partial mode: value of that label.")


class SkewEnforcement(ConfigModel):
    """The cluster's boot image skew enforcement (``spec.bootImageSkewEnforcement``)."""

    mode: Literal["Automatic", "Manual", "None"] = Field(
        "Manual",
        description="Automatic: leave the stanza out so the MCO self-selects (requires bootImageManagement "
        "All); Manual: record the oldest declared boot image; None: opt out (the MCO raises an alert).",
    )


class CustomPool(ConfigModel):
    """A custom MachineConfigPool that inherits from worker and has its own nodes."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=50)]
    os_image_stream: Literal["rhel-9", "rhel-10"] | None = Field(
        None, description="MachineConfigPool.spec.osImageStream; empty inherits the worker pool's stream."
    )

    @field_validator("name")
    @classmethod
    def _not_builtin(cls, v: str) -> str:
        if v in _RESERVED_POOLS:
            raise ValueError(f"'{v}' is a built-in pool; declare only custom pools here")
        return v


class Taint(ConfigModel):
    """A taint the machine controller puts on every node of the MachineSet (``spec.template.spec.taints``)."""

    key: str = Field(description="Taint key, e.g. node-role.kubernetes.io/infra.")
    value: str | None = Field(None, description="Taint value; empty for a key-only taint.")
    effect: Literal["NoSchedule", "PreferNoSchedule", "NoExecute"]

    @model_validator(mode="after")
    def _kubernetes_syntax(self) -> Taint:
        problem = label_key_problem(self.key, "taint key")
        if problem:
            raise ValueError(f"key: {problem}")
        if self.value is not None and label_value_errors(self.value):
            raise ValueError(
                f"value: '{self.value}' is not a taint value; use at most 63 letters, digits, '-', '_' or '.', "
                "starting and ending with a letter or digit"
            )
        return self


class AwsFilter(ConfigModel):
    """An AWS resource of the providerSpec by id, or by tags (every tag must match)."""

    id: str | None = Field(None, description="The resource's id.")
    tags: dict[str, str] | None = Field(
        None, description="Tags the resource carries, e.g. {Name: my-subnet}."
    )

    @model_validator(mode="after")
    def _one(self) -> AwsFilter:
        if (self.id is None) == (not self.tags):
            raise ValueError("set exactly one of id or tags (a non-empty mapping)")
        return self


class SubnetRef(AwsFilter):
    id: Annotated[str, Field(pattern=SUBNET_ID)] | None = Field(
        None, description="Subnet id, e.g. subnet-0f1e…."
    )


class SecurityGroupRef(AwsFilter):
    id: Annotated[str, Field(pattern=SECURITY_GROUP_ID)] | None = Field(
        None, description="Security group id, e.g. sg-0123…."
    )


class MachineSetSpec(ConfigModel):
    """One MachineSet: a zone, an instance type, a pool, and who owns its boot image."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=30)] = Field(
        description="Short role name; the object is named `<infraId>-<name>-<zone>`."
    )
    zone: Zone = Field(description="Availability zone, e.g. us-east-1a.")
    instance_type: Annotated[str, Field(pattern=INSTANCE_TYPE)] = "m6i.xlarge"
    replicas: Annotated[int, Field(ge=0, le=500)] = 1
    pool: str = Field("worker", description="`worker` or the name of a declared custom pool.")
    architecture: Literal["amd64", "arm64", "x86_64", "aarch64"] = "amd64"
    stream: Literal["rhel-9", "rhel-10"] | None = Field(
        None, description="OS stream; default: the pool's osImageStream, else rhel-9."
    )
    boot_image: Literal["managed", "pinned"] = Field(
        "managed",
        description="managed: enrolled in the MCO boot image controller, initial AMI from the catalog and "
        "then left to the controller; pinned: nodefleet sets the AMI from the catalog on every run.",
    )
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    root_volume_type: Literal["gp3", "gp2", "io1", "io2"] = Field(
        "gp3", description="EBS type of the root volume (clusters installed before 4.10 have gp2)."
    )
    root_volume_encrypted: bool | None = Field(
        True,
        description="blockDevices[0].ebs.encrypted; null leaves the field out, so the AWS account's EBS "
        "encryption by default decides, as MachineSets written from OpenShift's documentation have it.",
    )
    root_volume_iops: Annotated[int, Field(ge=0, le=256000)] | None = Field(
        None,
        alias="rootVolumeIops",
        description="blockDevices[0].ebs.iops; null leaves the field out (the volume type's own rate). The "
        "installer writes 0: an adopted MachineSet keeps it, since an apply replaces blockDevices whole.",
    )
    root_volume_kms_key: Annotated[str, Field(max_length=2048)] | None = Field(
        None,
        alias="rootVolumeKMSKey",
        description="blockDevices[0].ebs.kmsKey.arn; null leaves kmsKey out (the account's default key). The "
        "installer writes '' without a key of its own: an adopted MachineSet keeps it.",
    )
    tags: AwsTags = Field(
        {},
        description="AWS tags of the instances, after `kubernetes.io/cluster/<infraId>: owned` "
        "(providerSpec tags).",
    )
    taints: list[Taint] = Field(
        [],
        description="Taints of the nodes (spec.template.spec.taints), e.g. node-role.kubernetes.io/infra "
        "NoSchedule for infra nodes.",
    )
    labels: LabelKeys = Field(
        {},
        description="Extra node labels (spec.template.spec.metadata.labels), beside the pool's role label.",
    )
    subnet: SubnetRef | None = Field(
        None,
        description="The subnet, by id or tags; default: the installer's `<infraId>-subnet-private-<zone>` "
        "(tag Name).",
    )
    security_groups: list[SecurityGroupRef] | None = Field(
        None,
        min_length=1,
        description="The security groups, by id or tags; default: the installer's `<infraId>-node` and "
        "`<infraId>-lb` (tag Name).",
    )
    provider_api_version: Literal[
        "machine.openshift.io/v1beta1", "awsproviderconfig.openshift.io/v1beta1"
    ] = Field(
        "machine.openshift.io/v1beta1",
        description="The providerSpec's apiVersion. MachineSets the installer wrote before OpenShift 4.5 (and "
        "OpenShift's documentation of that time) say awsproviderconfig.openshift.io/v1beta1; the machine-api "
        "reads both, and `import` keeps what runs.",
    )
    user_data_secret: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] | None = Field(
        None,
        description="The Ignition stub Secret its machines boot from; default: the pool's, `worker-user-data` "
        "for worker and `<pool>-user-data-managed` for a custom pool. Set by `import` for a MachineSet that "
        "boots another pool's config (a custom-pool MachineSet on `worker-user-data`, as OpenShift's "
        "documentation shows one), which the custom-pool-labeling policy reports.",
    )

    @model_validator(mode="after")
    def _node_metadata(self) -> MachineSetSpec:
        finding = instance_type_finding(self.instance_type, self.architecture)
        if finding is not None and finding.level == "error":
            raise ValueError(f"instanceType: {finding.message}")
        for key, value in self.labels.items():
            if label_value_errors(value):
                raise ValueError(
                    f"labels: the value '{value}' of '{key}' is not a label value; use at most 63 letters, digits, '-', '_' or "
                    "'.', starting and ending with a letter or digit (or empty)"
                )
            if key.removeprefix(NODE_ROLE_PREFIX) in _CONTROL_PLANE_ROLES and key.startswith(
                NODE_ROLE_PREFIX
            ):
                raise ValueError(
                    f"labels: '{key}' is a control-plane role; on a worker MachineSet it would put its nodes in the master "
                    "pool and schedule control-plane workloads on them; remove this label"
                )
        seen: set[tuple[str, str]] = set()
        for i, taint in enumerate(self.taints):
            if (taint.key, taint.effect) in seen:
                raise ValueError(
                    f"taints[{i}]: a second taint with key '{taint.key}' and effect {taint.effect}; a node "
                    "holds one taint per key and effect, so remove one"
                )
            seen.add((taint.key, taint.effect))
        return self


class StandaloneCluster(ConfigModel):
    """A self-managed (IPI) OpenShift cluster whose workers come from MachineSets."""

    kind: Literal["standalone"] = "standalone"
    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=40)]
    infra_id: Annotated[str, Field(pattern=DNS_LABEL, max_length=27)] = Field(
        description="Infrastructure ID (`oc get infrastructure cluster -o jsonpath='{.status.infrastructureName}'`)."
    )
    region: Annotated[str, Field(pattern=REGION)]
    release: OCPRelease = Field(description="The cluster's current OCP release, e.g. 4.22.3 or 5.0.0-ec.2.")
    catalog: str = Field(
        description="Boot image catalog: a coreos-bootimages ConfigMap export or a stream JSON, relative to "
        "the project."
    )
    os_image_stream: Literal["rhel-9", "rhel-10"] | None = Field(
        None,
        description="The cluster's default OS stream (OSImageStream `cluster`, set by the installer): the "
        "worker pool's stream, inherited by custom pools without their own. Default: what an install of "
        "`release` chooses, rhel-10 from 5.0, rhel-9 before; a cluster upgraded to 5.0 keeps rhel-9.",
    )
    boot_image_management: BootImageManagement = BootImageManagement()
    skew_enforcement: SkewEnforcement = SkewEnforcement()
    pools: list[CustomPool] = []
    machine_sets: list[MachineSetSpec] = Field(min_length=1)
    karpenter: SelfManagedKarpenter | None = Field(
        None,
        description="Self-managed Karpenter on this cluster, its nodes booting through an S3 Ignition pointer.",
    )
    karpenter_operator: KarpenterOperator | None = Field(
        None,
        description="Red Hat's karpenter-operator runs Karpenter here; nodefleet declares classes and pools.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> StandaloneCluster:
        pools = {p.name for p in self.pools}
        check_unique_names(
            [p.name for p in self.pools], "pools", "a pool's name is its MachineConfigPool's name"
        )
        seen: set[str] = set()
        for i, ms in enumerate(self.machine_sets):
            where = f"machineSets[{i}]"
            if ms.pool not in pools and ms.pool not in _BUILTIN_POOLS:
                known = ", ".join(sorted({*pools, *_BUILTIN_POOLS}))
                raise ValueError(
                    f"{where}.pool: '{ms.pool}' is not a declared pool (known: {known}); add it under pools "
                    "or use one of those"
                )
            if not ms.zone.startswith(self.region):
                raise ValueError(
                    f"{where}.zone: '{ms.zone}' is not in the cluster's region '{self.region}'; use a zone of "
                    f"{self.region}, e.g. {self.region}a"
                )
            for key in ms.labels:
                role = key.removeprefix(NODE_ROLE_PREFIX) if key.startswith(NODE_ROLE_PREFIX) else None
                if role in pools and role != ms.pool:
                    raise ValueError(
                        f"{where}.labels: '{key}' puts the nodes in pool '{role}' while the MachineSet boots them "
                        f"into pool '{ms.pool}' (a node belongs to one custom pool); set pool: {role} or remove "
                        "the label"
                    )
            full = machine_set_name(self, ms)
            if len(full) > MAX_LABEL_VALUE:
                room = MAX_LABEL_VALUE - len(full) + len(ms.name)
                raise ValueError(
                    f"{where}.name: the MachineSet would be named '{full}' ({len(full)} characters), and that "
                    f"name is the value of its {LABEL_MACHINESET} label, which Kubernetes limits to "
                    f"{MAX_LABEL_VALUE} characters: the machine-api could create no Machine from it. Shorten "
                    f"name to at most {max(room, 1)} characters (with infraId '{self.infra_id}' and zone "
                    f"'{ms.zone}')"
                )
            if full in seen:
                raise ValueError(f"{where}: a second MachineSet is named '{full}'; change name or zone")
            seen.add(full)
            mode = self.boot_image_management.mode
            if mode == "All" and ms.boot_image == "pinned":
                raise ValueError(
                    f"{where}.bootImage: 'pinned' contradicts bootImageManagement.mode All, which enrolls "
                    "every MachineSet in the MCO boot image controller; use mode Partial or bootImage managed"
                )
            if ms.boot_image == "managed" and self.stream_of(ms) != "rhel-9":
                raise ValueError(
                    f"{where}.bootImage: 'managed' is only possible on the rhel-9 stream (this MachineSet boots "
                    f"{self.stream_of(ms)}); the MCO boot image controller skips every other stream, so its AMI "
                    "would never move. Set bootImage: pinned"
                )
            if mode == "None" and ms.boot_image == "managed":
                raise ValueError(
                    f"{where}.bootImage: 'managed' needs bootImageManagement.mode All or Partial (it is None); "
                    "change the mode or pin this MachineSet"
                )
        if self.karpenter and self.karpenter_operator:
            raise ValueError(
                "karpenterOperator: the karpenter-operator's admission policies reject the userData, AMI and "
                "amiFamily that karpenter (S3 pointer mode) writes; declare one of karpenter or karpenterOperator"
            )
        if self.karpenter_operator:
            by_name = {p.name: j for j, p in enumerate(self.pools)}
            for i, oc in enumerate(self.karpenter_operator.node_classes):
                pool = f"{OPERATOR_POOL_PREFIX}{oc.name}"
                if pool in by_name:
                    raise ValueError(
                        f"pools[{by_name[pool]}].name: '{pool}' is the MachineConfigPool the karpenter-operator "
                        f"creates and owns for karpenterOperator.nodeClasses[{i}] '{oc.name}' "
                        f"({OPERATOR_POOL_PREFIX}<class>); declared here too, the two would overwrite each other. "
                        "Rename the pool (put node configuration for that class in MachineConfigs for the operator's "
                        "pool instead)"
                    )
        if self.karpenter:
            for i, nc in enumerate(self.karpenter.node_classes):
                if nc.pool not in pools and nc.pool not in _BUILTIN_POOLS:
                    known = ", ".join(sorted({*pools, *_BUILTIN_POOLS}))
                    raise ValueError(
                        f"karpenter.nodeClasses[{i}].pool: '{nc.pool}' is not a declared pool (known: {known}); "
                        "add it under pools or use one of those"
                    )
        if self.skew_enforcement.mode == "Automatic" and self.boot_image_management.mode != "All":
            raise ValueError(
                "skewEnforcement.mode: Automatic is chosen by the MCO only when every MachineSet is enrolled "
                "(bootImageManagement.mode All), and while it is Automatic the API rejects leaving All. Set "
                "skewEnforcement.mode: Manual (or None), apply, then change bootImageManagement.mode"
            )
        return self

    @property
    def ocp(self) -> OCPVersion:
        return parse_ocp(self.release)

    def pool(self, name: str) -> CustomPool | None:
        return next((p for p in self.pools if p.name == name), None)

    def stream_of(self, ms: MachineSetSpec) -> str:
        """The OS stream a MachineSet boots: its own, else its pool's, else the rhel-9 default."""
        if ms.stream:
            return ms.stream
        pool = self.pool(ms.pool)
        return (pool.os_image_stream if pool else None) or "rhel-9"

    @property
    def default_stream(self) -> str:
        """The cluster's default OS stream: declared, else the one an install of its release chooses."""
        if self.os_image_stream:
            return self.os_image_stream
        try:
            return default_stream(self.ocp)
        except VersionError:
            return "rhel-9"  # older than the payload table: before OS streams, the only stream

    def pool_stream(self, name: str) -> str:
        """The OS stream pool ``name`` runs: a custom pool's own, else the cluster's default (worker's)."""
        pool = self.pool(name)
        return (pool.os_image_stream if pool else None) or self.default_stream


def machine_set_name(cluster: StandaloneCluster, ms: MachineSetSpec) -> str:
    return f"{cluster.infra_id}-{ms.name}-{ms.zone}"


#: The karpenter-operator creates one MachineConfigPool per node class, named ``karpenter-<class>``
#: (openshift/enhancements ``enhancements/autoscaling/karpenter-operator.md``).
OPERATOR_POOL_PREFIX = "karpenter-"

#: Kubernetes' limit on a label value; a MachineSet's name is one (``machine.openshift.io/cluster-api-machineset``).
MAX_LABEL_VALUE = 63

#: The values of a cluster's ``kind``, the tags of :data:`ClusterSpec`.
CLUSTER_KINDS = ("standalone", "hosted")


def _cluster_kind(value: Any) -> str:
    """The cluster's ``kind``, which picks its model; an unknown kind is returned as written, so that
    validation refuses it as a kind (``union_tag_invalid``) instead of judging a misspelled hosted cluster's
    keys by the standalone model."""
    kind = (
        value.get("kind", "standalone") if isinstance(value, dict) else getattr(value, "kind", "standalone")
    )
    return kind if kind in CLUSTER_KINDS else repr(kind)


ClusterSpec = Annotated[
    Annotated[StandaloneCluster, Tag("standalone")] | Annotated[HostedCluster, Tag("hosted")],
    Discriminator(_cluster_kind),
]


class FleetConfig(ConfigModel):
    """The whole ``nodefleet:fleet`` value of one stack."""

    output: OutputSettings = OutputSettings()
    wave: WaveSetting = Field(
        DEFAULT_WAVE,
        description=f"Rollout wave of the stack's clusters: one of {', '.join(WAVES)} (or 0-{len(WAVES) - 1}), "
        "in that order (docs/fleet-waves.md).",
    )
    clusters: list[ClusterSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _unique_clusters(self) -> FleetConfig:
        check_unique_names(
            [c.name for c in self.clusters],
            "clusters",
            "a cluster's name names its render folder, its provider and its objects",
        )
        _no_shared_render_folder(self.clusters)
        targets = [t for c in self.clusters for t in render_targets(c.name, isinstance(c, HostedCluster))]
        for target, entries in self.output.adopt.items():
            for j, text in enumerate(entries):
                problem = entry_problem(text)
                if problem:
                    raise ValueError(f"output.adopt.{target}[{j}]: {problem}")
            if target not in targets:
                raise ValueError(
                    f"output.adopt.{target}: '{target}' is no render target of this stack (its targets: "
                    f"{', '.join(targets)}: a cluster's name, and '<name>-hosted' for the objects inside a hosted "
                    "cluster); key each list by the target its objects go through"
                )
        infra_ids: dict[str, int] = {}
        for i, c in enumerate(self.clusters):
            if c.infra_id in infra_ids:
                j = infra_ids[c.infra_id]
                raise ValueError(
                    f"clusters[{i}].infraId: '{c.infra_id}' is also the infraId of clusters[{j}] "
                    f"'{self.clusters[j].name}'; every cluster has its own infrastructure ID (its MachineSet "
                    "and node names, tags and IAM scope derive from it), so correct one of them"
                )
            infra_ids[c.infra_id] = i
        standalone = [(i, c) for i, c in enumerate(self.clusters) if isinstance(c, StandaloneCluster)]
        if self.output.mode == "apply" and len(standalone) > 1:
            (j, first), (i, second) = standalone[:2]
            raise ValueError(
                f"clusters[{i}]: in apply mode every standalone cluster is applied through output.kubeconfig, so "
                f"'{second.name}' and clusters[{j}] '{first.name}' would write their MachineSets, pools and "
                "MachineConfiguration into one cluster; use one stack per standalone cluster (each with its own "
                "kubeconfig), or output.mode render"
            )
        for i, c in enumerate(self.clusters):
            if isinstance(c, HostedCluster) and c.hosted_kubeconfig and self.output.mode == "render":
                raise ValueError(
                    f"clusters[{i}].hostedKubeconfig: is set but output.mode is render, where nothing reaches the "
                    "hosted cluster through it (the wiring reaches it through HyperShift's admin kubeconfig "
                    "Secret: gitops' secrets.sh), as output.kubeconfig is refused there; remove hostedKubeconfig "
                    "or set output.mode apply"
                )
            if (
                isinstance(c, HostedCluster)
                and c.auto_node
                and self.output.mode == "apply"
                and not c.hosted_kubeconfig
            ):
                raise ValueError(
                    f"clusters[{i}].hostedKubeconfig: required in apply mode, because the AutoNode classes and "
                    "pools live inside the hosted cluster; set it to the hosted cluster's kubeconfig path"
                )
        return self


def _no_shared_render_folder(clusters: Sequence[StandaloneCluster | HostedCluster]) -> None:
    """Every render target (provider) has its own folder: ``<directory>/<cluster>``, and for a hosted
    cluster also ``<directory>/<cluster>-hosted``. Two targets in one folder would overwrite or prune each
    other's files (and their providers would share a resource name)."""
    owner: dict[str, tuple[int, str]] = {}
    for i, c in enumerate(clusters):
        for folder in render_targets(c.name, isinstance(c, HostedCluster)):
            if folder in owner:
                j, other = owner[folder]
                why = (
                    f"hosted cluster clusters[{j}] '{other}' puts its hosted-cluster objects in <directory>/{folder}"
                    if folder != other
                    else f"clusters[{j}] '{other}' renders to <directory>/{folder}"
                )
                raise ValueError(
                    f"clusters[{i}].name: '{c.name}' would render into <directory>/{folder}, but {why}; "
                    "rename one of the clusters"
                )
            owner[folder] = (i, c.name)


@dataclass(frozen=True)
class ResolvedMachineSet:
    """A MachineSet with its boot image resolved from the cluster's catalog."""

    spec: MachineSetSpec
    name: str
    stream: str
    boot_image: BootImage
    #: The OS stream of the MachineSet's pool, which its nodes run after their first boot.
    pool_stream: str = "rhel-9"


@dataclass(frozen=True)
class ResolvedCluster:
    config: StandaloneCluster
    catalog: BootImageCatalog
    machine_sets: tuple[ResolvedMachineSet, ...]
    #: Self-managed Karpenter node class name -> its boot image from the same catalog.
    karpenter_images: Mapping[str, BootImage]
    #: The catalog as the objects name it (``nodefleet.bootimages.catalog.catalog_reference``): relative to the project.
    catalog_reference: str = ""


@dataclass(frozen=True)
class ResolvedHostedCluster:
    """A hosted cluster: HyperShift picks node AMIs from the release payload, so nothing to resolve."""

    config: HostedCluster


@dataclass(frozen=True)
class Fleet:
    """A validated stack: the config plus everything resolved from the catalogs."""

    stack: str
    config: FleetConfig
    clusters: tuple[ResolvedCluster | ResolvedHostedCluster, ...]
    #: ``output.directory`` for this stack, checked by :func:`nodefleet.stackfile.paths.render_directory`.
    render_dir: ContainedPath

    @property
    def render_directory(self) -> str:
        """The render directory as the providers get it (relative to the project when written so)."""
        return self.render_dir.text

    def instance_type_advice(self) -> list[str]:
        """Instance types and families missing from the shipped list that may be newer than it: advice."""
        advice: list[tuple[str, Finding | None]] = []
        for i, c in enumerate(self.config.clusters):
            base = f"{CONFIG_KEY}.clusters[{i}]"
            if isinstance(c, StandaloneCluster):
                for j, ms in enumerate(c.machine_sets):
                    advice.append(
                        (
                            f"{base}.machineSets[{j}].instanceType",
                            instance_type_finding(ms.instance_type, ms.architecture),
                        )
                    )
                pools = [
                    ("karpenter.nodePools", c.karpenter.node_pools if c.karpenter else []),
                    (
                        "karpenterOperator.nodePools",
                        c.karpenter_operator.node_pools if c.karpenter_operator else [],
                    ),
                ]
            else:
                for j, np in enumerate(c.node_pools):
                    advice.append(
                        (
                            f"{base}.nodePools[{j}].instanceType",
                            instance_type_finding(np.instance_type, np.arch),
                        )
                    )
                pools = [("autoNode.nodePools", c.auto_node.node_pools if c.auto_node else [])]
            for field, specs in pools:
                for j, pool in enumerate(specs):
                    for k, family in enumerate(pool.instance_families):
                        advice.append((f"{base}.{field}[{j}].instanceFamilies[{k}]", family_finding(family)))
        return [f"{where}: {f.message}" for where, f in advice if f is not None and f.level == "advisory"]

    def zone_advice(self) -> list[str]:
        """Zones their region is not documented to have: advice, since only AWS can tell for an account."""
        found: list[tuple[str, str | None]] = []
        for i, c in enumerate(self.config.clusters):
            base = f"{CONFIG_KEY}.clusters[{i}]"
            if isinstance(c, StandaloneCluster):
                found += [
                    (f"{base}.machineSets[{j}].zone", zone_advice(ms.zone))
                    for j, ms in enumerate(c.machine_sets)
                ]
            else:
                found.append((f"{base}.zone", zone_advice(c.zone)))
        return [f"{where}: {text}" for where, text in found if text]

    def secret_keys(self) -> list[tuple[str, str]]:
        """Stack secrets (``nodefleet:<key>``) the program will read, each with the reason it needs it.

        Pull secrets and SSH keys are written only in apply mode: in render mode they would land on disk.
        """
        return list(dict.fromkeys((key, why) for key, why, _ in self.secret_uses()))

    def secret_uses(self) -> list[tuple[str, str, str]]:
        """(key, why, kind) of every use of a stack secret; ``kind`` is what the value must be
        (:func:`nodefleet.stackfile.secrets.secret_value_problem`). One key may serve several uses."""
        uses: list[tuple[str, str, str]] = []
        apply = self.config.output.mode == "apply"
        for c in self.clusters:
            if isinstance(c, ResolvedCluster):
                if c.config.karpenter:
                    uses.append(
                        (
                            c.config.karpenter.ca_bundle_key,
                            f"MCS CA bundle of cluster {c.config.name}",
                            CA_BUNDLE,
                        )
                    )
                continue
            hc = c.config
            for ref, data_key in hc.secret_refs():
                if apply and ref.from_config:
                    uses.append(
                        (
                            ref.from_config,
                            f"Secret {hc.namespace}/{ref.name} of hosted cluster {hc.name}",
                            data_key,
                        )
                    )
        return list(dict.fromkeys(uses))


class ConfigError(ValueError):
    """Invalid stack configuration: the message names the stack file, the field and the fix."""


#: Environment variable naming the file the stack configuration was read from, for messages. Whoever runs
#: the program with a stack file other than ``stacks/Pulumi.<stack>.yaml`` sets it: ``python -m nodefleet
#: --config-file`` does, and so can a wrapper around ``pulumi --config-file``.
STACK_FILE_ENV = "NODEFLEET_STACK_FILE"


def stack_file(stack: str) -> str:
    """The stack file Pulumi reads for ``stack`` (``stackConfigDir: stacks``), as messages name it."""
    return f"stacks/Pulumi.{stack}.yaml"


def validate_fleet(
    raw: Any,
    stack: str,
    project_dir: Path,
    source: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Fleet:
    """Validate the ``nodefleet:fleet`` value of ``stack`` and resolve every boot image.

    ``source`` names the file the value came from in messages (default: the stack file). ``environ``
    (default: the process environment) holds the roots the operator allowed outside the project
    (``NODEFLEET_RENDER_ROOT``, ``NODEFLEET_CATALOG_ROOTS``).
    Raises ``ConfigError`` with every problem found, one per line. The objects the clusters declare are
    not compared here: :func:`nodefleet.render.objects.load_fleet` plans them and refuses collisions.
    """
    where = source or stack_file(stack)
    env = os.environ if environ is None else environ
    try:
        check_stack_name(stack)
    except PathError as e:
        raise ConfigError(f"{where}: {e}") from None
    if raw is None:
        raise ConfigError(
            f"{where}: no '{CONFIG_KEY}' value. Add one under `config:` (see docs/configuration.md)."
        )
    problems = list(_bad_strings(raw, CONFIG_KEY)) if _any_bad_string(raw) else []
    if problems:
        raise ConfigError("\n".join(f"{where}: {p}" for p in problems))
    try:
        config = FleetConfig.model_validate(raw)
    except ValidationError as e:
        raise ConfigError("\n".join(_describe(where, err) for err in _without_echoes(e.errors()))) from None
    try:
        render_dir = render_directory(config.output.directory, stack, project_dir=project_dir, environ=env)
    except PathError as e:
        raise ConfigError(f"{where}: {CONFIG_KEY}.output.directory: {e}") from None
    if config.output.mode == "render":
        _render_folders_writable(where, config, render_dir)
    fleet = Fleet(
        stack=stack,
        config=config,
        clusters=tuple(_resolve_any(where, c, i, project_dir, env) for i, c in enumerate(config.clusters)),
        render_dir=render_dir,
    )
    return fleet


def _render_folders_writable(where: str, config: FleetConfig, render_dir: ContainedPath) -> None:
    """Every cluster folder below the render directory (and its layout folders) can be a folder."""
    for i, cluster in enumerate(config.clusters):
        for target in render_targets(cluster.name, isinstance(cluster, HostedCluster)):
            for sub in ("", *LAYOUT_DIRS):
                folder = render_dir.path / target / sub if sub else render_dir.path / target
                problem = writable_folder_problem(folder)
                if problem:
                    shown = f"{render_dir.text}/{target}{'/' + sub if sub else ''}"
                    raise ConfigError(
                        f"{where}: {CONFIG_KEY}.output.directory: the folder of clusters[{i}] '{cluster.name}', "
                        f"{shown}, {problem}"
                    )


#: The longest string a stack-config value may be. No value nodefleet writes needs more (Kubernetes names stop
#: at 253 characters, label values at 63, S3 keys at 1024, IAM names at 128); a longer one is a paste error.
MAX_VALUE_LENGTH = 4096


_CONTROL = re.compile("[\x00-\x1f\x7f]")


def _control(text: str) -> str | None:
    bad = _CONTROL.search(text)
    return None if bad is None else f"U+{ord(bad.group()):04X}"


#: Paths that :mod:`nodefleet.stackfile.paths` judges with its own, path-specific messages (NUL, length, ``..``).
_PATH_VALUES = re.compile(r"\.output\.directory$|\.clusters\[\d+\]\.catalog$")


def _any_bad_string(value: Any) -> bool:
    """Whether any string (key or value) of ``value`` might be one :func:`_bad_strings` refuses: one pass without
    the field paths, which cost more than the check itself on a fleet's thousands of valid stacks."""
    stack = [value]
    control, longest = _CONTROL.search, MAX_VALUE_LENGTH
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if len(item) > longest or control(item):
                return True
        elif isinstance(item, dict):
            for key, child in item.items():
                text = str(key)
                if len(text) > longest or control(text):
                    return True
                stack.append(child)
        elif isinstance(item, list):
            stack.extend(item)
    return False


def _bad_strings(value: Any, path: str) -> Iterator[str]:
    """Strings (keys too) no stack-config value may be: with a control character, or over-long.

    Names, ids, versions, label and tag values never hold a NUL, a newline or an escape sequence, and one
    that does (a paste from a terminal, a Windows line end) would reach manifests, S3 keys and file names
    where every consumer reads it differently: refused here, for every key, with the field path.
    """
    if isinstance(value, str):
        if _PATH_VALUES.search(path):
            return
        bad = _control(value)
        if bad:
            yield (
                f"{path}: contains the control character {bad} (a NUL, line break, tab or escape); remove it: a "
                "stack-config value is one line of printable text"
            )
        elif len(value) > MAX_VALUE_LENGTH:
            yield (
                f"{path}: is {len(value)} characters long; shorten it to at most {MAX_VALUE_LENGTH} (no value "
                "nodefleet writes needs more: names stop at 253 characters, label values at 63)"
            )
    elif isinstance(value, dict):
        for key, item in value.items():
            text = str(key)
            shown = repr(text if len(text) <= 40 else text[:40] + "…")
            if _control(text):
                yield f"{path}: key {shown} contains the control character {_control(text)}; remove it"
            elif len(text) > MAX_VALUE_LENGTH:
                yield f"{path}: key {shown} is {len(text)} characters long; shorten it"
            else:
                yield from _bad_strings(item, f"{path}.{text}")
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _bad_strings(item, f"{path}[{i}]")


def _resolve_any(
    where: str,
    cluster: StandaloneCluster | HostedCluster,
    index: int,
    project_dir: Path,
    environ: Mapping[str, str],
) -> ResolvedCluster | ResolvedHostedCluster:
    if isinstance(cluster, HostedCluster):
        return ResolvedHostedCluster(cluster)
    return _resolve(where, cluster, index, project_dir, environ)


def _catalog_path(where: str, base: str, catalog: str, project_dir: Path, environ: Mapping[str, str]) -> Path:
    """A catalog is read only inside the project or a root allowed for catalogs (nodefleet.stackfile.paths)."""
    try:
        return catalog_file(catalog, project_dir=project_dir, environ=environ).path
    except PathError as e:
        raise ConfigError(f"{where}: {base}.catalog: {e}") from None


def _resolve(
    where: str, cluster: StandaloneCluster, index: int, project_dir: Path, environ: Mapping[str, str]
) -> ResolvedCluster:
    base = f"{CONFIG_KEY}.clusters[{index}]"
    path = _catalog_path(where, base, cluster.catalog, project_dir, environ)
    try:
        catalog = _catalog(path, cluster.catalog)
    except CatalogError as e:
        raise ConfigError(f"{where}: {base}.catalog: {e}") from None
    resolved = []
    for i, ms in enumerate(cluster.machine_sets):
        stream = cluster.stream_of(ms)
        try:
            image = catalog.resolve(cluster.region, normalize_arch(ms.architecture), stream)
        except CatalogError as e:
            raise ConfigError(f"{where}: {base}.machineSets[{i}]: {e}") from None
        pool_stream = cluster.pool_stream(ms.pool)
        _refuse_stream_ahead(where, f"{base}.machineSets[{i}].stream", cluster, image, pool_stream, ms.pool)
        resolved.append(ResolvedMachineSet(ms, machine_set_name(cluster, ms), stream, image, pool_stream))
    karpenter_images = {}
    for i, nc in enumerate(cluster.karpenter.node_classes if cluster.karpenter else []):
        try:
            karpenter_images[nc.name] = catalog.resolve(
                cluster.region, normalize_arch(nc.architecture), nc.stream
            )
        except CatalogError as e:
            raise ConfigError(f"{where}: {base}.karpenter.nodeClasses[{i}]: {e}") from None
        _refuse_stream_ahead(
            where,
            f"{base}.karpenter.nodeClasses[{i}].stream",
            cluster,
            karpenter_images[nc.name],
            cluster.pool_stream(nc.pool),
            nc.pool,
        )
    reference = catalog_reference(path, project_dir)
    return ResolvedCluster(cluster, catalog, tuple(resolved), karpenter_images, reference)


def _refuse_stream_ahead(
    where: str, field: str, cluster: StandaloneCluster, image: BootImage, pool_stream: str, pool: str
) -> None:
    """A boot image of a newer RHEL major than its pool runs cannot make a supported node: refuse it here.

    The other findings of the same rule (a rhel-9 image for a rhel-10 pool) are advice, reported by the
    policy pack from what the objects carry, in the same words.
    """
    try:
        finding = stream_finding(image.release, cluster.ocp, pool_stream, pool)
    except VersionError:
        return  # the release does not ship that stream, or predates the payload table: the policies say so
    if finding is not None and finding.code == "stream-ahead-of-pool":
        raise ConfigError(f"{where}: {field}: {finding.message}")


def _catalog(path: Path, name: str) -> BootImageCatalog:
    """Catalogs are shared by many clusters of a fleet: each file is parsed once per process and version."""
    try:
        stat = path.stat()
        version = (stat.st_mtime_ns, stat.st_size)
    except OSError:
        version = (0, 0)  # load_catalog says what is wrong with the path
    return _cached_catalog(path, name, version)


@functools.lru_cache(maxsize=64)
def _cached_catalog(path: Path, name: str, version: tuple[int, int]) -> BootImageCatalog:
    return load_catalog(path, name)


def _without_echoes(errors: Sequence[Any], model: type[BaseModel] | None = None) -> list[Any]:
    """Drop "X is missing" when the same object has a misspelled key whose hint is X: one mistake, one message."""
    hinted = set()
    for err in errors:
        if err["type"] == "extra_forbidden":
            loc = tuple(err["loc"])
            hint = suggest_key(str(loc[-1]), _known_keys(loc[:-1], model))
            if hint:
                hinted.add((*loc[:-1], hint[0]))
    return [e for e in errors if not (e["type"] == "missing" and tuple(e["loc"]) in hinted)]


def _describe(where: str, err: Mapping[str, Any]) -> str:
    return describe_error(where, err)


def describe_errors(
    where: str, errors: Sequence[Any], *, root: str = CONFIG_KEY, model: type[BaseModel] | None = None
) -> str:
    """Every error of a failed validation, one line each (:func:`describe_error`), a misspelt key once."""
    return "\n".join(describe_error(where, e, root=root, model=model) for e in _without_echoes(errors, model))


def describe_error(
    where: str, err: Mapping[str, Any], *, root: str = CONFIG_KEY, model: type[BaseModel] | None = None
) -> str:
    """One line for one pydantic error: the file, the field's path from ``root`` (the stack file's
    ``nodefleet:fleet``, or another file's top level), what is wrong and the fix. ``model`` is the model at
    ``root`` (default the stack's), for did-you-mean hints on unknown keys."""
    loc: Sequence[str | int] = [p for p in err["loc"] if not _is_union_tag(p)]
    path = root + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)
    path = path.lstrip(".")
    kind = err["type"]
    if kind == "extra_forbidden":
        bad = str(loc[-1])
        known = _known_keys(err["loc"][:-1], model)
        hint = suggest_key(bad, known)
        shown, note = escaped(bad)
        fix = f"did you mean '{hint[0]}'?" if hint else f"known keys here: {', '.join(known)}"
        return f"{where}: {escaped(path)[0]}: unknown key '{shown}'{note}; {fix}"
    if kind == "missing":
        return f"{where}: {path}: required but missing; add it (see docs/configuration.md)"
    if kind == "union_tag_invalid":
        return f"{where}: {path}.kind: {_unknown_kind(err.get('input'))}"
    msg = _with_fix(err)
    # Cross-field checks name their own sub-path first ("machineSets[1].pool: ..."): join it to the path.
    sub = re.match(r"^([a-z][A-Za-z]*(?:\[\d+\])?(?:\.[a-z][A-Za-z]*(?:\[\d+\])?)*): (.*)$", msg, re.S)
    if sub:
        path, msg = f"{path}.{sub.group(1)}" if path else sub.group(1), sub.group(2)
    value = err.get("input")
    shown = f" (got {_shown_value(value)})" if isinstance(value, str | int | float | bool) else ""
    note = ""
    # A validator's message quotes what it refused (a label key, a tag): escaped there too, and named once.
    for text in _strings_of(value):
        quoted, why = escaped(text)
        if why and (text in msg or text == value):
            msg = msg.replace(text, quoted)
            note = note or why
    return f"{where}: {escaped(path)[0]}: {msg.rstrip('.') if shown else msg}{shown}{note}"


def _strings_of(value: Any, depth: int = 2) -> list[str]:
    """The strings of a refused input (keys and values of a mapping, items of a list), longest first."""
    if isinstance(value, str):
        return [value]
    found: list[str] = []
    if depth and isinstance(value, dict):
        for key, item in value.items():
            found += [str(key), *_strings_of(item, depth - 1)]
    elif depth and isinstance(value, list):
        for item in value:
            found += _strings_of(item, depth - 1)
    return sorted(set(found), key=len, reverse=True)


def _unknown_kind(cluster: Any) -> str:
    kind = cluster.get("kind") if isinstance(cluster, dict) else None
    hint = (
        difflib.get_close_matches(kind.lower(), CLUSTER_KINDS, n=1, cutoff=0.5)
        if isinstance(kind, str)
        else []
    )
    mean = f"did you mean '{hint[0]}'? " if hint else ""
    what = "is empty" if kind is None else f"unknown cluster kind {_shown_value(kind)}"
    return (
        f"{what}; {mean}use standalone (an OpenShift cluster of its own, the "
        "default when kind is left out) or hosted (a HyperShift hosted cluster), in lowercase"
    )


def _with_fix(err: Mapping[str, Any]) -> str:
    """Pydantic's message, with what a valid value looks like where pydantic gives none."""
    msg = str(err["msg"]).removeprefix("Value error, ")
    kind, ctx = err["type"], err.get("ctx") or {}
    if kind == "string_pattern_mismatch":
        pattern = str(ctx.get("pattern", ""))
        return f"must be {PATTERN_HELP.get(pattern, f'a string matching {pattern}')}"
    if kind == "literal_error":
        return f"{msg}; use one of {ctx.get('expected')}"
    if kind in _BOUNDS:
        return f"{msg}; {_BOUNDS[kind].format(**ctx)}"
    fixes = {
        "int_type": "use a whole number without quotes",
        "int_from_float": "use a whole number",
        "bool_type": "use true or false without quotes",
        "string_type": "use a string (quote it if YAML reads it as a number or boolean)",
        "dict_type": "use a mapping of keys to values",
        "list_type": "use a list ([a, b] or one '- item' per line)",
        "model_type": "use a mapping with the keys listed in docs/configuration.md",
        "model_attributes_type": "use a mapping with the keys listed in docs/configuration.md",
        "too_short": "add at least one",
    }
    fix = fixes.get(kind)
    return f"{msg}; {fix}" if fix else msg


#: What to do about a value outside a bound, by pydantic error type (its ``ctx`` fills the braces).
_BOUNDS = {
    "greater_than_equal": "use {ge} or more",
    "greater_than": "use more than {gt}",
    "less_than_equal": "use {le} or less",
    "less_than": "use less than {lt}",
    "string_too_long": "shorten it to {max_length} characters or fewer",
    "string_too_short": "give at least {min_length} characters",
    "too_long": "keep at most {max_length}",
}


def _shown_value(value: Any) -> str:
    """A rejected scalar as messages quote it: whole when short, else its start (never a 5,000-character echo),
    every character outside printable ASCII escaped (a Cyrillic U+0430 printed raw looks like the ASCII 'a')."""
    text = repr(escaped(value)[0]) if isinstance(value, str) else repr(value)
    text = text.replace("\\\\u", "\\u").replace("\\\\U", "\\U")
    return text if len(text) <= 70 else f"{text[:60]}…' ({len(str(value))} characters)"


def lookalike(char: str) -> str | None:
    """The ASCII character ``char`` is easily taken for (Cyrillic U+0430 or fullwidth U+FF41 for 'a'), or None."""
    folded = unicodedata.normalize("NFKC", char)
    if folded.isascii() and folded.isprintable() and len(folded) == 1:
        return folded
    name = unicodedata.name(char, "")
    m = re.fullmatch(r"(?:CYRILLIC|GREEK|ARMENIAN|CHEROKEE) (SMALL|CAPITAL) LETTER (.+)", name)
    if m:
        letter = m.group(2) if len(m.group(2)) == 1 else _HOMOGLYPHS.get(m.group(2))
        if letter:
            return letter.lower() if m.group(1) == "SMALL" else letter
    return _DASHES.get(char)


#: Cyrillic and Greek letters whose glyph is a Latin one (Unicode's confusables, the common part).
_HOMOGLYPHS = {
    "VE": "B", "IE": "E", "KA": "K", "EM": "M", "EN": "H", "ER": "P", "ES": "C", "TE": "T", "U": "Y",
    "HA": "X", "DZE": "S", "JE": "J", "BYELORUSSIAN-UKRAINIAN I": "I", "PALOCHKA": "I", "ALPHA": "A",
    "BETA": "B", "EPSILON": "E", "ZETA": "Z", "ETA": "H", "IOTA": "I", "KAPPA": "K", "MU": "M", "NU": "N",
    "OMICRON": "O", "RHO": "P", "TAU": "T", "UPSILON": "Y", "CHI": "X",
}  # fmt: skip
_DASHES = dict.fromkeys("\u2010\u2011\u2012\u2013\u2014\u2212", "-")


def escaped(value: str) -> tuple[str, str]:
    """``value`` with every character outside printable ASCII written as ``\\uXXXX``, and a note naming the
    first such character and the ASCII one it looks like (""  when there is none)."""
    if value.isascii() and value.isprintable():
        return value, ""
    shown = "".join(
        c
        if c.isascii() and c.isprintable()
        else (f"\\u{ord(c):04x}" if ord(c) < 0x10000 else f"\\U{ord(c):08x}")
        for c in value
    )
    i, char = next((i, c) for i, c in enumerate(value) if not (c.isascii() and c.isprintable()))
    like = lookalike(char)
    name = unicodedata.name(char, "unnamed")
    looks = f", which looks like '{like}' but is not ASCII" if like else ", not an ASCII character"
    note = f"; character {i + 1} is U+{ord(char):04X} ({name}){looks}: retype it" + (
        f" as '{like}'" if like else ""
    )
    return shown, note


def suggest_key(bad: str, known: Sequence[str]) -> list[str]:
    """The known key ``bad`` is likely a slip for: a close spelling, the same in another case, or the one key
    it abbreviates (``dir`` for ``directory``)."""
    close = difflib.get_close_matches(bad, known, n=1)
    if close:
        return close
    folded = [k for k in known if k.lower() == bad.lower() or k.lower() == bad.lower().replace("_", "")]
    if folded:
        return folded[:1]
    if len(bad) >= 2:
        starts = [k for k in known if k.lower().startswith(bad.lower())]
        if len(starts) == 1:
            return starts
        within = [k for k in known if bad.lower() in k.lower()]
        if len(within) == 1:
            return within
    return []


def _is_union_tag(part: object) -> bool:
    return (
        isinstance(part, str)
        and re.fullmatch(r"(standalone|hosted|static|dynamic|function-after\[.*\])", part) is not None
    )


_UNION_MEMBERS: dict[str, type[BaseModel]] = {
    "standalone": StandaloneCluster,
    "hosted": HostedCluster,
    "static": StaticNodePoolSpec,
    "dynamic": KarpenterNodePoolSpec,
}


def _known_keys(loc: Sequence[str | int], root: type[BaseModel] | None = None) -> list[str]:
    """The camelCase keys the model at ``loc`` (from ``root``, default the stack's) accepts, for did-you-mean hints."""
    model: Any = root or FleetConfig
    for part in loc:
        if isinstance(part, int):
            continue
        if part in _UNION_MEMBERS:
            model = _UNION_MEMBERS[part]
            continue
        field = model.model_fields.get(_snake(part))
        if field is None:
            return []
        model = _model_of(field.annotation)
        if model is None:
            return []
    return sorted((f.alias or n) for n, f in model.model_fields.items())


def _model_of(annotation: Any) -> Any:
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    if get_origin(annotation) is not None:
        for arg in get_args(annotation):
            found = _model_of(arg)
            if found is not None:
                return found
    return None


def _snake(camel: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", camel).lower()
