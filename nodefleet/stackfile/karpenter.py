"""Config models for Karpenter node classes and NodePools, shared by AutoNode and self-managed Karpenter.

What the NodePool, EC2NodeClass and OpenshiftEC2NodeClass CRDs themselves enforce (label and tag domains,
requirement operators and values, duration, schedule and budget patterns, bounds) is not repeated here: the
``crd-schema`` policy judges the rendered objects by the CRDs' own rules, with their messages. The models
keep what only the configuration knows (references between classes and pools, the cluster's Karpenter
version and gates, static versus dynamic pools, nodefleet's own choices).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Discriminator, Field, Tag, field_validator, model_validator

from nodefleet.apiserver.store import unshipped_karpenter
from nodefleet.stackfile.cron import schedule_problem
from nodefleet.stackfile.instance_types import (
    family_architecture,
    family_finding,
    instance_type_architecture,
    instance_type_finding,
)
from nodefleet.stackfile.modelbase import (
    CONFIG_KEY_NAME,
    DNS_LABEL,
    DNS_SUBDOMAIN,
    IAM_NAME,
    KARPENTER_MINOR,
    AwsTags,
    ConfigModel,
    GoDurationValue,
    LabelKeys,
    OCPRelease,
    key_segment,
    prefix_segments,
    refused_when,
)

#: A budget's node count or share, e.g. "10%" or "5" (the NodePool CRD's pattern judges it).
BudgetNodes = str
#: Disruption reasons a budget can name. ``Unhealthy`` (node repair) only from Karpenter v1.15.
DisruptionReason = Literal["Empty", "Underutilized", "Drifted", "Unhealthy"]
#: Karpenter's own order of the reasons, used wherever nodefleet lists them.
REASON_ORDER: tuple[DisruptionReason, ...] = ("Empty", "Underutilized", "Drifted", "Unhealthy")
KarpenterVersion = Annotated[str, Field(pattern=KARPENTER_MINOR)]
#: Upstream Karpenter feature gates that change what a NodePool may declare (all alpha, off by default).
FeatureGate = Literal["StaticCapacity", "NodeRepair"]


#: Well-known node labels whose values are EC2 instance types and families (Kubernetes; Karpenter AWS).
INSTANCE_TYPE_LABEL = "node.kubernetes.io/instance-type"
INSTANCE_FAMILY_LABEL = "karpenter.k8s.aws/instance-family"
ARCH_LABEL = "kubernetes.io/arch"


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
        # minValues is not limited beside other operators: with Exists or NotIn it asks for that many distinct
        # values of the key among the instance types Karpenter may launch (sigs.k8s.io/karpenter
        # ValidateRequirement checks it only for In, as the CRD does).
        n = len(self.values)
        if self.operator == "NotIn" and n == 0:
            raise ValueError(
                "operator NotIn needs at least one value in values; list the values to exclude, or use "
                "DoesNotExist to exclude every node with the key"
            )
        if self.operator in ("Exists", "DoesNotExist") and n:
            raise ValueError(f"operator {self.operator} takes no values; remove values")
        return self


class DriftWindow(ConfigModel):
    """A scheduled budget for Drifted disruption, e.g. no drift replacement during business hours."""

    schedule: Annotated[str, refused_when(schedule_problem)] = Field(
        description="Cron, UTC, e.g. '0 9 * * mon-fri'."
    )
    duration: GoDurationValue = Field(description="How long the window lasts, e.g. '8h' or '1h30m'.")
    nodes: BudgetNodes = "0"


class BudgetWindow(DriftWindow):
    """A scheduled budget for any reasons, e.g. a freeze on every voluntary disruption at month end."""

    reasons: list[DisruptionReason] | None = Field(
        None, description="Reasons it limits; omitted: every reason (Karpenter's meaning)."
    )


#: The always-active budget per reason when a pool states none: Karpenter's own default (10%), but per reason
#: and explicit, so no reason that replaces or removes nodes is ever left without a bound.
DEFAULT_BUDGETS: dict[DisruptionReason, str] = {"Empty": "10%", "Underutilized": "10%", "Drifted": "10%"}


class _DisruptionBase(ConfigModel):
    budgets: dict[DisruptionReason, BudgetNodes] = Field(
        {},
        description="Always-active limit per reason, merged over the defaults (Empty, Underutilized, Drifted: "
        "10%). Unhealthy (Karpenter 1.15+, NodeRepair gate) has no default.",
    )
    drift_budget: BudgetNodes | None = Field(
        None, description="Shorthand for budgets.Drifted: nodes replaced for drift at once (10% or 5)."
    )
    windows: list[BudgetWindow] = []
    drift_windows: list[DriftWindow] = Field([], description="Shorthand for windows limited to Drifted.")
    all_reasons_budget: BudgetNodes | None = Field(
        None,
        description="One always-active budget naming no reason, Karpenter's own default shape "
        "([{nodes: 10%}]): it bounds every reason at once, so `budgets` then adds only the limits written "
        "there (no per-reason defaults). `import` sets it for NodePools written without budgets.",
    )

    @model_validator(mode="after")
    def _one_drift_limit(self) -> _DisruptionBase:
        if self.drift_budget is not None and "Drifted" in self.budgets:
            raise ValueError("driftBudget and budgets.Drifted both set the Drifted limit; keep one")
        return self

    def effective_budgets(self, reasons: tuple[DisruptionReason, ...]) -> dict[DisruptionReason, str]:
        """The always-active limit of each of ``reasons`` this pool declares, defaults included (none with
        :attr:`all_reasons_budget`, which bounds every reason itself)."""
        defaults = {} if self.all_reasons_budget is not None else DEFAULT_BUDGETS
        merged: dict[DisruptionReason, str] = {**defaults, **self.budgets}
        if self.drift_budget is not None:
            merged["Drifted"] = self.drift_budget
        return {reason: merged[reason] for reason in REASON_ORDER if reason in reasons and reason in merged}

    def reasons_named(self) -> set[str]:
        named: set[str] = set(self.budgets)
        for window in self.windows:
            named |= set(window.reasons or ())
        return named


class Disruption(_DisruptionBase):
    consolidation_policy: Literal["WhenEmptyOrUnderutilized", "WhenEmpty", "Balanced"] = Field(
        "WhenEmptyOrUnderutilized",
        description="Balanced (Karpenter 1.14+) consolidates only moves whose savings outweigh their disruption "
        "(score >= 1/k, k = 2, fixed in v1.15: there is no threshold field).",
    )
    consolidate_after: GoDurationValue = "1m"


class StaticDisruption(_DisruptionBase):
    """A static pool never consolidates (Karpenter ignores consolidationPolicy); drift and repair still replace."""


class Limits(ConfigModel):
    cpu: str | None = None
    memory: str | None = None
    nodes: Annotated[int, Field(ge=0)] | None = None


class StaticLimits(ConfigModel):
    """A static NodePool may limit only its node count."""

    nodes: Annotated[int, Field(ge=0)] | None = None


class _NodePoolBase(ConfigModel):
    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)]
    node_class: str = Field(description="Name of a node class declared in the same cluster.")
    capacity_types: list[Literal["spot", "on-demand", "reserved"]] = Field(
        ["on-demand"],
        description="karpenter.sh/capacity-type In [...], the pool's second requirement; [] writes none "
        "(Karpenter then launches on-demand), for a requirement of the pool's own written elsewhere.",
    )
    architectures: list[Literal["amd64", "arm64"]] = Field(
        ["amd64"],
        description="kubernetes.io/arch In [...], the pool's first requirement; [] writes none, for pools "
        "whose requirements state the architecture in their own order.",
    )
    annotations: dict[str, str] = Field(
        {}, description="Annotations of the NodePool object (not of its nodes; they drift nothing)."
    )
    instance_families: list[str] = Field([], description="karpenter.k8s.aws/instance-family In [...].")
    instance_categories: list[str] = Field(
        ["c", "m", "r"], description="karpenter.k8s.aws/instance-category."
    )
    requirements: list[Requirement] = []
    labels: LabelKeys = Field({}, description="Node labels (spec.template.metadata.labels).")
    expire_after: GoDurationValue = "720h"
    termination_grace_period: GoDurationValue | None = None

    @model_validator(mode="after")
    def _known_families(self) -> _NodePoolBase:
        for i, family in enumerate(self.instance_families):
            finding = family_finding(family)
            if finding is not None and finding.level == "error":
                raise ValueError(f"instanceFamilies[{i}]: {finding.message}")
            arch = family_architecture(family)
            if arch is not None and self.architectures and arch not in self.architectures:
                raise ValueError(
                    f"instanceFamilies[{i}]: '{family}' is an {arch} family but architectures is "
                    f"[{', '.join(self.architectures)}], so Karpenter would never launch it; add {arch} to "
                    "architectures or remove the family"
                )
        reserved = [k for k in self.annotations if k.startswith("nodefleet.io/")]
        if reserved:
            raise ValueError(
                f"annotations: {', '.join(sorted(reserved))} are nodefleet's own record, written from typed keys; "
                "remove them here"
            )
        if set(self.capacity_types) == {"reserved"}:
            raise ValueError(
                "capacityTypes: only 'reserved': reserved capacity comes from the capacity reservations a node "
                "class selects (capacityReservationSelectorTerms), and no node class nodefleet declares selects any, so "
                "Karpenter would never launch a node for this pool; add on-demand (or spot)"
            )
        if not self.launchable_architectures():
            raise ValueError(
                f"architectures [{', '.join(self.architectures)}] and the pool's requirements on {ARCH_LABEL} and "
                "its instance families leave no architecture, so Karpenter would never launch a node for it; make "
                "them agree (e.g. architectures: [arm64] with arm64 families such as m7g)"
            )
        for i, req in enumerate(self.requirements):
            if req.operator not in ("In", "NotIn"):
                continue
            for j, value in enumerate(req.values):
                if req.key == INSTANCE_TYPE_LABEL:
                    finding = instance_type_finding(value, None)
                elif req.key == INSTANCE_FAMILY_LABEL:
                    finding = family_finding(value)
                else:
                    continue
                if finding is not None and finding.level == "error":
                    raise ValueError(f"requirements[{i}].values[{j}]: {finding.message}")
        return self

    def launchable_architectures(self) -> set[str]:
        """The architectures Karpenter may launch for this pool: ``architectures``, narrowed by requirements on
        ``kubernetes.io/arch`` (Karpenter intersects requirements on one key) and by the architectures of the
        instance families and types it is limited to."""
        archs: set[str] = set(self.architectures) if self.architectures else {"amd64", "arm64"}
        for req in self.requirements:
            if req.key == ARCH_LABEL and req.operator == "In":
                archs &= set(req.values)
            elif req.key == ARCH_LABEL and req.operator == "NotIn":
                archs -= set(req.values)
            elif req.key == ARCH_LABEL and req.operator == "DoesNotExist":
                archs = set()
            elif req.key in (INSTANCE_FAMILY_LABEL, INSTANCE_TYPE_LABEL) and req.operator == "In":
                archs &= _architectures_of(req.key, req.values)
        if self.instance_families:
            archs &= _architectures_of(INSTANCE_FAMILY_LABEL, self.instance_families)
        return archs


def _architectures_of(label: str, values: list[str]) -> set[str]:
    """The architectures of instance families or types; a value the shipped list does not know could be
    either (its own finding says so), so it narrows nothing."""
    found: set[str] = set()
    for value in values:
        arch = (
            family_architecture(value)
            if label == INSTANCE_FAMILY_LABEL
            else instance_type_architecture(value)
        )
        if arch is None:
            return {"amd64", "arm64"}
        found.add(arch)
    return found


class KarpenterNodePoolSpec(_NodePoolBase):
    """A dynamic ``karpenter.sh/v1`` NodePool: Karpenter launches nodes for pending pods."""

    limits: Limits = Limits()
    weight: int | None = None
    disruption: Disruption = Disruption()

    @property
    def static(self) -> bool:
        return False


class StaticNodePoolSpec(_NodePoolBase):
    """A static NodePool (``spec.replicas``, Karpenter 1.8+, StaticCapacity gate): a fixed number of nodes.

    It has no ``weight``, no cpu/memory limits and no consolidation settings (the NodePool API rejects the
    first two and ignores the last), and switching a pool between static and dynamic replaces it.
    """

    replicas: Annotated[int, Field(ge=0)]
    limits: StaticLimits = StaticLimits()
    disruption: StaticDisruption = StaticDisruption()

    @property
    def static(self) -> bool:
        return True


def _pool_kind(value: Any) -> str:
    if isinstance(value, dict):
        return "static" if "replicas" in value else "dynamic"
    return "static" if isinstance(value, StaticNodePoolSpec) else "dynamic"


NodePoolSpec = Annotated[
    Annotated[KarpenterNodePoolSpec, Tag("dynamic")] | Annotated[StaticNodePoolSpec, Tag("static")],
    Discriminator(_pool_kind),
]


#: OpenShift's Karpenter fork, which AutoNode runs, was last merged from upstream v1.13.0; HyperShift v0.1.80
#: installs a NodePool CRD without Balanced and runs Karpenter with FEATURE_GATES=Drift=true only.
AUTONODE_KARPENTER = "1.13"
#: The newest upstream release (v1.15.0, 2026-10-10): the default for a Karpenter the user installs.
SELF_MANAGED_KARPENTER = "1.15"


class KarpenterRelease(ConfigModel):
    """What the cluster's Karpenter accepts: its minor version and the alpha gates it runs with."""

    version: KarpenterVersion
    feature_gates: list[FeatureGate] = []


def _minor(version: str) -> int:
    return int(version.split(".")[1])


def check_pools_fit_karpenter(karpenter: KarpenterRelease, pools: list[NodePoolSpec], where: str) -> None:
    """Refuse what the cluster's Karpenter cannot do: the config knows the version, the CRD check does not.

    Balanced needs 1.14, the Unhealthy budget reason 1.15, static pools 1.8 and the StaticCapacity gate
    (without it Karpenter's static controllers do not run and the pool never gets a node).
    """
    minor = _minor(karpenter.version)
    for i, pool in enumerate(pools):
        at = f"{where}nodePools[{i}]"
        if (
            isinstance(pool, KarpenterNodePoolSpec)
            and pool.disruption.consolidation_policy == "Balanced"
            and minor < 14
        ):
            raise ValueError(
                f"{at}.disruption.consolidationPolicy: Balanced needs Karpenter 1.14 or later and this cluster's "
                f"is {karpenter.version} (its NodePool CRD rejects the value); use WhenEmptyOrUnderutilized, or "
                "declare the newer Karpenter version"
            )
        if "Unhealthy" in pool.disruption.reasons_named() and minor < 15:
            raise ValueError(
                f"{at}.disruption: the Unhealthy budget reason needs Karpenter 1.15 or later and this cluster's is "
                f"{karpenter.version}; remove it, or declare the newer Karpenter version"
            )
        gated = minor >= 8 and "StaticCapacity" in karpenter.feature_gates
        if isinstance(pool, StaticNodePoolSpec) and not gated:
            gates = ", ".join(karpenter.feature_gates) or "none"
            raise ValueError(
                f"{at}.replicas: a static NodePool needs Karpenter 1.8+ running with the StaticCapacity feature "
                f"gate (this cluster's: {karpenter.version}, gates: {gates}); without it the pool never gets a "
                "node. Remove replicas, or enable the gate and list it"
            )


def check_karpenter_shipped(flavour: str, version: str, field: str) -> None:
    """Refuse a Karpenter whose CRDs nodefleet does not ship: its objects could not be checked by them."""
    problem = unshipped_karpenter(flavour, version, field)
    if problem:
        raise ValueError(problem)


def _full_release(v: str) -> str:
    # OpenshiftEC2NodeClass.spec.version is a full semver (x.y.z, pre-releases allowed, at most 64 characters).
    # OCP releases never carry build metadata, which the skew policies could not place; x.y is not a release.
    if v.count(".") < 2 or len(v) > 64:
        raise ValueError(f"'{v}' is not a full release: use x.y.z, e.g. 4.22.1 or 5.0.0-ec.2")
    return v


_HYPERSHIFT_OWNS_DEFAULT = "owned by HyperShift's karpenter-operator, which rewrites it on every reconcile"
_OPERATOR_OWNS_DEFAULT = "created and re-created by the karpenter-operator"
_INSTALLS_OWN_DEFAULT = (
    "the class Karpenter installations keep for themselves (the karpenter-operator re-creates its own "
    "'default', and setup guides and charts write one), so two owners would overwrite each other"
)


def _not_default(owner: str) -> AfterValidator:
    """A node class name other than ``default``, which the operator that owns it would keep rewriting."""

    def check(name: str) -> str:
        if name == "default":
            raise ValueError(f"'default' is {owner}; give the class its own name")
        return name

    return AfterValidator(check)


class AutoNodeClass(ConfigModel):
    """A named ``OpenshiftEC2NodeClass``; HyperShift generates the EC2NodeClass of the same name."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63), _not_default(_HYPERSHIFT_OWNS_DEFAULT)]
    version: Annotated[OCPRelease, AfterValidator(_full_release)] | None = Field(
        None,
        description="Pin the node OS release (x.y.z, pre-releases such as 5.0.0-ec.2 too); empty follows "
        "the control plane.",
    )
    subnet_tags: dict[str, str] | None = None
    subnet_ids: list[str] | None = None
    security_group_tags: dict[str, str] | None = None
    security_group_ids: list[str] | None = None
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    tags: AwsTags = {}


class SelfManagedNodeClass(ConfigModel):
    """An ``EC2NodeClass`` for self-managed Karpenter whose userData is a stable S3 Ignition pointer."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63), _not_default(_INSTALLS_OWN_DEFAULT)]
    pool: str = Field("worker", description="MachineConfigPool whose config the nodes fetch from the MCS.")
    config_version: Annotated[str, Field(max_length=253)] = Field(
        description="The pool's rendered config (e.g. rendered-worker-5f1c…): a change replaces nodes once."
    )

    @field_validator("config_version")
    @classmethod
    def _one_key_segment(cls, v: str) -> str:
        # It becomes one segment of the S3 key the class's userData points at.
        try:
            return key_segment("configVersion", v)
        except ValueError as e:
            raise ValueError(str(e).removeprefix("pointer key: configVersion ")) from None

    architecture: Literal["amd64", "arm64"] = "amd64"
    stream: Literal["rhel-9", "rhel-10"] = "rhel-9"
    subnet_tags: dict[str, str] | None = None
    security_group_tags: dict[str, str] | None = None
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")


def check_unique_names(names: list[str], field: str, why: str) -> None:
    """Refuse a name given twice in the list ``field``, naming every entry that carries it."""
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        at = ", ".join(f"{field}[{i}]" for i, n in enumerate(names) if n in repeated)
        raise ValueError(f"{field}: {at} share the name {', '.join(repeated)}; {why}: rename all but one")


#: The OpenshiftEC2NodeClass HyperShift's karpenter-operator creates and owns in every AutoNode cluster.
HYPERSHIFT_DEFAULT_CLASS = "default"


def check_pools_reference_classes(
    classes: list[str], pools: list[NodePoolSpec], where: str, operator_owned: list[str] | None = None
) -> None:
    """Every pool's class is declared here, or is one the operator owns (``operator_owned``: referenced,
    never declared)."""
    known = set(classes) | set(operator_owned or [])
    check_unique_names(classes, f"{where}nodeClasses", "a node class's name is its object's name")
    check_unique_names([p.name for p in pools], f"{where}nodePools", "a NodePool's name is its object's name")
    for i, pool in enumerate(pools):
        if pool.node_class not in known:
            listed = ", ".join(sorted(classes)) or "none"
            owned = "".join(f", or the operator's own '{name}'" for name in operator_owned or [])
            raise ValueError(
                f"{where}nodePools[{i}].nodeClass: '{pool.node_class}' is not a declared node class "
                f"(declared: {listed}); declare it under nodeClasses or reference one of those{owned}"
            )


class AutoNode(ConfigModel):
    """HyperShift AutoNode: Karpenter runs in the control plane; nodefleet declares classes and pools."""

    mode: Literal["autonode", "legacy"] = Field(
        "autonode",
        description="autonode: OpenshiftEC2NodeClass (current HyperShift); legacy: EC2NodeClass whose userData "
        "and AMI HyperShift rewrites (older HyperShift), declared once and then left to it.",
    )
    role_arn: str = Field(
        description="The role Karpenter assumes (the OpenshiftEC2NodeClass CRD judges the ARN)."
    )
    karpenter: KarpenterRelease = Field(
        KarpenterRelease(version=AUTONODE_KARPENTER),
        description="HyperShift's Karpenter: OpenShift's fork, merged from upstream 1.13 and run with only "
        "Drift=true; raise it when your HyperShift ships a newer one.",
    )
    node_classes: list[AutoNodeClass] = Field(
        [],
        description="Named classes nodefleet declares; pools may also use HyperShift's own `default` class "
        "(autonode mode), which nodefleet never declares.",
    )
    node_pools: list[NodePoolSpec] = Field(min_length=1)

    @field_validator("node_classes")
    @classmethod
    def _named_when_given(cls, v: list[AutoNodeClass]) -> list[AutoNodeClass]:
        # Left out, the pools use HyperShift's `default`; written empty, something meant was left out.
        if not v:
            raise ValueError(
                "an empty list declares no class; add the classes the pools use, or leave nodeClasses out when "
                "every pool uses HyperShift's own `default` class"
            )
        return v

    @model_validator(mode="after")
    def _refs(self) -> AutoNode:
        own = [HYPERSHIFT_DEFAULT_CLASS] if self.mode == "autonode" else []
        check_pools_reference_classes(
            [c.name for c in self.node_classes], self.node_pools, "", operator_owned=own
        )
        check_karpenter_shipped("hypershift", self.karpenter.version, "karpenter.version")
        check_pools_fit_karpenter(self.karpenter, self.node_pools, "")
        return self


class SelfManagedKarpenter(ConfigModel):
    """Karpenter on a standalone cluster, nodes booting from the MCS through an S3 Ignition pointer."""

    bucket: Annotated[str, Field(pattern=r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")]
    prefix: Annotated[str, Field(max_length=512)] = Field(
        "nodefleet/ignition", description="S3 key prefix of the pointer objects: '/'-separated segments."
    )
    node_role: Annotated[str, Field(pattern=IAM_NAME, max_length=64)] = Field(
        description="IAM role name of the Karpenter nodes; gets s3:GetObject on the prefix."
    )
    instance_profile: Annotated[str, Field(pattern=IAM_NAME, max_length=128)]
    cluster_domain: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] = Field(
        description="<cluster>.<baseDomain>: the MCS is https://api-int.<domain>:22623."
    )
    ca_bundle_key: Annotated[str, Field(pattern=CONFIG_KEY_NAME, max_length=128)] = Field(
        "mcsCaBundle",
        description="Stack secret (`pulumi config set --secret nodefleet:<key>`) holding the MCS CA PEM.",
    )
    version: KarpenterVersion = Field(
        SELF_MANAGED_KARPENTER, description="The Karpenter you installed (x.y)."
    )
    feature_gates: list[FeatureGate] = Field([], description="Alpha gates it runs with (--feature-gates).")
    node_classes: list[SelfManagedNodeClass] = Field(min_length=1)
    node_pools: list[NodePoolSpec] = Field(min_length=1)

    @field_validator("prefix")
    @classmethod
    def _key_prefix(cls, v: str) -> str:
        try:
            prefix_segments(v)
        except ValueError as e:
            raise ValueError(str(e).removeprefix("pointer key: ")) from None
        return v

    @field_validator("ca_bundle_key")
    @classmethod
    def _not_the_fleet(cls, v: str) -> str:
        if v == "fleet":
            raise ValueError(
                "'fleet' is nodefleet:fleet, this configuration itself; name the stack secret that holds the "
                "MCS CA bundle, e.g. mcsCaBundle"
            )
        return v

    @model_validator(mode="after")
    def _refs(self) -> SelfManagedKarpenter:
        check_pools_reference_classes([c.name for c in self.node_classes], self.node_pools, "")
        classes = {c.name: (j, c) for j, c in enumerate(self.node_classes)}
        for i, pool in enumerate(self.node_pools):
            j, node_class = classes[pool.node_class]
            archs = pool.launchable_architectures()
            if node_class.architecture not in archs:
                other = "arm64" if node_class.architecture == "amd64" else "amd64"
                raise ValueError(
                    f"nodePools[{i}]: its node class '{node_class.name}' boots {node_class.architecture} images "
                    f"(nodeClasses[{j}].architecture) but the pool launches only {', '.join(sorted(archs))} "
                    "instance types, so no instance type can ever launch; set architectures: "
                    f"[{node_class.architecture}] on the pool (and {node_class.architecture} families), or "
                    f"architecture: {other} on the class"
                )
        check_karpenter_shipped("aws", self.version, "version")
        check_pools_fit_karpenter(
            KarpenterRelease(version=self.version, feature_gates=self.feature_gates), self.node_pools, ""
        )
        return self


class OperatorNodeClass(ConfigModel):
    """An ``EC2NodeClass`` on a cluster running Red Hat's karpenter-operator: only the fields it leaves to users.

    The operator writes ``amiFamily`` (Custom), ``amiSelectorTerms`` (the cluster's RHCOS AMI) and ``userData``
    (a pointer to the Machine Config Server, pool ``karpenter-<class>``, which it also creates) and its
    admission policies reject anyone else's values; nodefleet never declares them.
    """

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=63), _not_default(_OPERATOR_OWNS_DEFAULT)]
    subnet_tags: dict[str, str] | None = None
    security_group_tags: dict[str, str] | None = None
    root_volume_gib: Annotated[int, Field(ge=16, le=16384)] = Field(120, alias="rootVolumeGiB")
    tags: AwsTags = {}


class KarpenterOperator(ConfigModel):
    """Red Hat's karpenter-operator on a standalone cluster (enhancement ``karpenter-operator``, provisional,
    ``KarpenterOperator`` feature gate): nodefleet declares classes and pools, the operator the boot fields."""

    instance_profile: Annotated[str, Field(pattern=IAM_NAME, max_length=128)] = Field(
        description="Instance profile of the nodes: the operator pre-populates it only on its `default` class."
    )
    karpenter: KarpenterRelease = Field(
        KarpenterRelease(version=AUTONODE_KARPENTER),
        description="The payload's Karpenter (OpenShift's fork, as in AutoNode).",
    )
    node_classes: list[OperatorNodeClass] = Field(min_length=1)
    node_pools: list[NodePoolSpec] = Field(min_length=1)

    @model_validator(mode="after")
    def _refs(self) -> KarpenterOperator:
        check_pools_reference_classes([c.name for c in self.node_classes], self.node_pools, "")
        check_karpenter_shipped("openshift", self.karpenter.version, "karpenter.version")
        check_pools_fit_karpenter(self.karpenter, self.node_pools, "")
        return self
