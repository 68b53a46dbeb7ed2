"""Config models for Karpenter node classes and NodePools, shared by AutoNode and self-managed Karpenter.

What the NodePool, EC2NodeClass and OpenshiftEC2NodeClass CRDs themselves enforce (label and tag domains,
requirement operators and values, duration and budget patterns, bounds) is not repeated here: the
``crd-schema`` policy judges the rendered objects by the CRDs' own rules, with their messages. The models
keep what only the configuration knows (references between classes and pools, nodefleet's own choices).
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field, field_validator, model_validator

from nodefleet.modelbase import DNS_LABEL, OCP_XYZ, ConfigModel


class Requirement(ConfigModel):
    """An extra NodePool requirement (``spec.template.spec.requirements[]``)."""

    key: str
    operator: Literal["In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt", "Gte", "Lte"] = "In"
    values: list[str] = []
    min_values: int | None = None

    @model_validator(mode="after")
    def _values_fit_operator(self) -> Requirement:
        # Only what the NodePool CRD does not check itself (its rules cover In without values, Gt/Lt/Gte/Lte
        # with one integer, and minValues with In): Kubernetes' node selector semantics for the others.
        n = len(self.values)
        if self.operator == "NotIn" and n == 0:
            raise ValueError("operator NotIn needs at least one value in values")
        if self.operator in ("Exists", "DoesNotExist") and n:
            raise ValueError(f"operator {self.operator} takes no values; remove values")
        if self.operator != "In" and self.min_values is not None and self.min_values > n:
            raise ValueError(f"minValues {self.min_values} is more than the {n} value(s) listed")
        return self


class DriftWindow(ConfigModel):
    """A scheduled budget for Drifted disruption, e.g. no drift replacement during business hours."""

    schedule: str = Field(description="Cron, UTC, e.g. '0 9 * * mon-fri'.")
    duration: str
    nodes: str = "0"


class Disruption(ConfigModel):
    consolidation_policy: Literal["WhenEmptyOrUnderutilized", "WhenEmpty"] = "WhenEmptyOrUnderutilized"
    consolidate_after: str = "1m"
    drift_budget: str = Field(
        "10%", description="At most this many nodes (or share) replaced for drift at once."
    )
    drift_windows: list[DriftWindow] = []


class Limits(ConfigModel):
    cpu: str | None = None
    memory: str | None = None


class KarpenterNodePoolSpec(ConfigModel):
    """A ``karpenter.sh/v1`` NodePool."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    node_class: str = Field(description="Name of a node class declared in the same cluster.")
    capacity_types: list[Literal["spot", "on-demand", "reserved"]] = ["on-demand"]
    architectures: list[Literal["amd64", "arm64"]] = ["amd64"]
    instance_families: list[str] = Field([], description="karpenter.k8s.aws/instance-family In [...].")
    instance_categories: list[str] = Field(
        ["c", "m", "r"], description="karpenter.k8s.aws/instance-category."
    )
    requirements: list[Requirement] = []
    labels: dict[str, str] = {}
    expire_after: str = "720h"
    termination_grace_period: str | None = None
    limits: Limits = Limits()
    weight: int | None = None
    disruption: Disruption = Disruption()


class AutoNodeClass(ConfigModel):
    """A named ``OpenshiftEC2NodeClass``; HyperShift generates the EC2NodeClass of the same name."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    version: Annotated[str, Field(pattern=OCP_XYZ)] | None = Field(
        None, description="Pin the node OS release (x.y.z); empty follows the control plane."
    )
    subnet_tags: dict[str, str] | None = None
    subnet_ids: list[str] | None = None
    security_group_tags: dict[str, str] | None = None
    security_group_ids: list[str] | None = None
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    tags: dict[str, str] = {}

    @field_validator("name")
    @classmethod
    def _not_default(cls, v: str) -> str:
        if v == "default":
            raise ValueError(
                "'default' is owned by HyperShift's karpenter-operator, which rewrites it on every reconcile; "
                "give the class its own name"
            )
        return v


class SelfManagedNodeClass(ConfigModel):
    """An ``EC2NodeClass`` for self-managed Karpenter whose userData is a stable S3 Ignition pointer."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    pool: str = Field("worker", description="MachineConfigPool whose config the nodes fetch from the MCS.")
    config_version: str = Field(
        description="The pool's rendered config (e.g. rendered-worker-5f1c…): a change replaces nodes once."
    )
    architecture: Literal["amd64", "arm64"] = "amd64"
    stream: Literal["rhel-9", "rhel-10"] = "rhel-9"
    subnet_tags: dict[str, str] | None = None
    security_group_tags: dict[str, str] | None = None
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")


def check_pools_reference_classes(classes: list[str], pools: list[KarpenterNodePoolSpec], where: str) -> None:
    known = set(classes)
    if len(known) != len(classes):
        raise ValueError(f"{where}nodeClasses: two node classes share a name")
    for i, pool in enumerate(pools):
        if pool.node_class not in known:
            listed = ", ".join(sorted(known)) or "none"
            raise ValueError(
                f"{where}nodePools[{i}].nodeClass: '{pool.node_class}' is not a declared node class "
                f"(declared: {listed}); declare it under nodeClasses or reference one of those"
            )


class AutoNode(ConfigModel):
    """HyperShift AutoNode: Karpenter runs in the control plane; nodefleet declares classes and pools."""

    mode: Literal["autonode", "legacy"] = Field(
        "autonode",
        description="autonode: OpenshiftEC2NodeClass (current HyperShift); legacy: EC2NodeClass whose userData "
        "and AMI HyperShift rewrites (older HyperShift), declared once and then left to it.",
    )
    role_arn: str
    node_classes: list[AutoNodeClass] = Field(min_length=1)
    node_pools: list[KarpenterNodePoolSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self) -> AutoNode:
        check_pools_reference_classes([c.name for c in self.node_classes], self.node_pools, "")
        return self


class SelfManagedKarpenter(ConfigModel):
    """Karpenter on a standalone cluster, nodes booting from the MCS through an S3 Ignition pointer."""

    bucket: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
    prefix: str = "nodefleet/ignition"
    node_role: str = Field(
        description="IAM role name of the Karpenter nodes; gets s3:GetObject on the prefix."
    )
    instance_profile: str
    cluster_domain: str = Field(
        description="<cluster>.<baseDomain>: the MCS is https://api-int.<domain>:22623."
    )
    ca_bundle_key: str = Field(
        "mcsCaBundle",
        description="Stack secret (`pulumi config set --secret nodefleet:<key>`) holding the MCS CA PEM.",
    )
    node_classes: list[SelfManagedNodeClass] = Field(min_length=1)
    node_pools: list[KarpenterNodePoolSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self) -> SelfManagedKarpenter:
        check_pools_reference_classes([c.name for c in self.node_classes], self.node_pools, "")
        return self
