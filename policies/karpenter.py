"""Karpenter on OpenShift: no secrets in userData, AutoNode ownership, bounded drift, provisioning switches.

What the NodePool and EC2NodeClass CRDs reject themselves (restricted requirement and label domains,
malformed budgets) is judged once, by ``crd-schema`` with the CRD's own message and, where nodefleet knows
it, the key to use instead (``nodefleet.apiserver.advice``); these policies judge what no CRD rule can see.

Background: DESIGN.md section 1.1 and background/karpenter-hypershift.md sections 1, 2, 4. Any byte change
in ``EC2NodeClass.spec.userData`` drifts every node of the class (it is part of the static hash); HyperShift
puts a bearer token there that rotates every 5.5 h; OpenShift's Karpenter fork (4.22+) hashes only the
``TargetConfigVersionHash`` header of such a stub.
"""

from __future__ import annotations

import base64
import binascii
import re
import urllib.parse
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from pulumi_policy import (
    EnforcementLevel,
    PolicyConfigSchema,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from nodefleet import kinds as k
from nodefleet.bootimages.versions import VersionError, parse_ocp
from nodefleet.files import FastBoundedLoader, FileProblem, load_json, load_yaml, read_text
from nodefleet.render_layout import manifest_path
from policies.props import (
    ReportViolation,
    annotations_of,
    as_map,
    as_seq,
    as_text,
    is_list,
    metadata_of,
    name_of,
)

AUTONODE = "autonode"
S3_POINTER = "s3-pointer"
DEFAULT_NODE_CLASS = "default"


# ---------------------------------------------------------------------------------------------------------
# karpenter-userdata: no inline credentials in EC2NodeClass userData
# ---------------------------------------------------------------------------------------------------------

_TEXT_PATTERNS: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\bauthorization[\"']?\s*:", re.IGNORECASE), "an Authorization header"),
    (re.compile(r"\bbearer\s+[A-Za-z0-9._~+/-]{8,}", re.IGNORECASE), "a bearer token"),
    (re.compile(r"\baws_(secret_access_key|session_token)\b", re.IGNORECASE), "AWS secret credentials"),
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), "an AWS access key id"),
    (re.compile(r"-----BEGIN [A-Z ]*PRIVATE KEY-----"), "a private key"),
    (re.compile(r"[a-z][a-z0-9+.-]*://[^/\s:@\"']+:[^/\s@\"']+@"), "a password in a URL"),
)
_MAX_DEPTH = 3


def _decode_data_url(source: str) -> str | None:
    """The text of a ``data:`` URL (Ignition inlines files and configs this way), or None."""
    if not source.startswith("data:") or "," not in source:
        return None
    header, payload = source[5:].split(",", 1)
    try:
        if header.endswith(";base64"):
            return base64.b64decode(payload, validate=False).decode("utf-8", "replace")
        return urllib.parse.unquote(payload)
    except (binascii.Error, ValueError):
        return None


def _scan_text(text: str, where: str, depth: int) -> Iterator[str]:
    for pattern, what in _TEXT_PATTERNS:
        if pattern.search(text):
            yield f"{what} ({where})"
    decoded = _decode_data_url(text.strip())
    if decoded is not None and depth < _MAX_DEPTH:
        yield from _scan_user_data(decoded, f"{where}, decoded", depth + 1)


def _walk(value: Any, path: str) -> Iterator[tuple[str, Any]]:
    yield path, value
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _walk(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _walk(item, f"{path}[{i}]")


def _scan_ignition(doc: Mapping[str, Any], where: str, depth: int) -> Iterator[str]:
    for path, value in _walk(doc, ""):
        if path.endswith(".httpHeaders") and isinstance(value, list):
            for i, header in enumerate(value):
                if not isinstance(header, dict):
                    continue
                at = f"{where}: {path}[{i}]"
                if str(header.get("name", "")).strip().lower() == "authorization":
                    yield f"an Authorization header ({at})"
                if "bearer " in str(header.get("value", "")).lower():
                    yield f"a bearer token ({at})"
    for path, value in _walk(doc, ""):
        # Header values were judged above; a TargetConfigVersionHash or NodePool header is not a secret.
        if isinstance(value, str) and ".httpHeaders[" not in path:
            yield from _scan_text(value, f"{where}: {path}", depth)


def _scan_user_data(text: str, where: str = "spec.userData", depth: int = 0) -> Iterator[str]:
    try:
        doc = load_json(text, where)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("ignition"), dict):
        yield from _scan_ignition(doc, where, depth)
    else:
        yield from _scan_text(text, where, depth)


def inline_credentials(user_data: str) -> list[str]:
    """What kinds of credentials ``user_data`` carries inline, with where; empty when none."""
    return list(dict.fromkeys(_scan_user_data(user_data)))


def _validate_user_data(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.EC2_NODE_CLASS.token:
        return
    user_data = as_map(args.props.get("spec")).get("userData")
    if not isinstance(user_data, str) or not user_data:
        return
    found = inline_credentials(user_data)
    if not found:
        return
    name = name_of(args.props, args.name)
    report(
        f"EC2NodeClass '{name}' carries {'; '.join(found)} inline. userData is copied into every EC2 launch "
        "template, readable by anyone who may describe instances, and is part of Karpenter's drift hash, so "
        "every rotation replaces every node of the class. Keep userData a stable Ignition pointer "
        "(ignition.config.merge[].source: s3://<bucket>/<key>, fetched with the instance role) and rewrite "
        "the object on rotation; on HyperShift declare an OpenshiftEC2NodeClass instead and let the "
        "karpenter-operator generate the EC2NodeClass.",
        None,
    )


karpenter_userdata = ResourceValidationPolicy(
    name="karpenter-userdata",
    description="No bearer token, Authorization header or other credential is inline in an EC2NodeClass's "
    "userData.",
    validate=_validate_user_data,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# ---------------------------------------------------------------------------------------------------------
# karpenter-autonode-classes: AutoNode clusters declare no EC2NodeClass and never own `default`
# ---------------------------------------------------------------------------------------------------------


def _validate_autonode_classes(args: StackValidationArgs, report: ReportViolation) -> None:
    autonode: set[str] = set()
    for r in args.resources:
        if r.resource_type != k.OPENSHIFT_EC2_NODE_CLASS.token:
            continue
        notes = annotations_of(r.props)
        cluster = notes.get(k.ANNOTATION_HOSTED_CLUSTER)
        if cluster and notes.get(k.ANNOTATION_USERDATA_MODE) == AUTONODE:
            autonode.add(str(cluster))
    for r in args.resources:
        if r.resource_type == k.OPENSHIFT_EC2_NODE_CLASS.token:
            if name_of(r.props, r.name) == DEFAULT_NODE_CLASS:
                report(
                    f"OpenshiftEC2NodeClass '{DEFAULT_NODE_CLASS}' is owned by the HyperShift "
                    "karpenter-operator, which rewrites it on every reconcile, so Pulumi and the operator would "
                    "fight over it. Declare a named class (e.g. 'general') and point the NodePools' "
                    "nodeClassRef at it.",
                    r.urn,
                )
        elif r.resource_type == k.EC2_NODE_CLASS.token:
            notes = annotations_of(r.props)
            cluster = str(notes.get(k.ANNOTATION_HOSTED_CLUSTER) or "")
            own_mode = notes.get(k.ANNOTATION_USERDATA_MODE)
            if cluster in autonode or own_mode == AUTONODE:
                name = name_of(r.props, r.name)
                report(
                    f"EC2NodeClass '{name}' is declared for AutoNode hosted cluster '{cluster or '(unknown)'}'. "
                    "In AutoNode the karpenter-operator generates every EC2NodeClass from its "
                    "OpenshiftEC2NodeClass of the same name (userData, AMI, instance profile) and an admission "
                    "policy rejects direct edits. Declare an OpenshiftEC2NodeClass "
                    f"'{name}' instead and remove this object.",
                    r.urn,
                )


karpenter_autonode_classes = StackValidationPolicy(
    name="karpenter-autonode-classes",
    description="AutoNode hosted clusters declare no EC2NodeClass and never the operator-owned "
    "OpenshiftEC2NodeClass 'default'.",
    validate=_validate_autonode_classes,
    enforcement_level=EnforcementLevel.MANDATORY,
)


# ---------------------------------------------------------------------------------------------------------
# karpenter-token-carry: releases whose Karpenter lacks the TargetConfigVersionHash carry
# ---------------------------------------------------------------------------------------------------------

RELEASES_WITHOUT_CARRY = ["4.19", "4.20", "4.21"]
_NODE_CLASSES = (k.OPENSHIFT_EC2_NODE_CLASS.token, k.EC2_NODE_CLASS.token)


def _validate_token_carry(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type not in _NODE_CLASSES:
        return
    notes = annotations_of(args.props)
    if notes.get(k.ANNOTATION_USERDATA_MODE) == S3_POINTER:
        return  # a stable pointer: token rotation does not touch userData
    release_text = notes.get(k.ANNOTATION_RELEASE)
    if not release_text:
        return
    try:
        release = parse_ocp(str(release_text))
    except VersionError:
        return
    affected = {str(v) for v in args.get_config().get("releasesWithoutCarry", RELEASES_WITHOUT_CARRY)}
    line = f"{release.major}.{release.minor}"
    if line not in affected:
        return
    kind = (
        "OpenshiftEC2NodeClass" if args.resource_type == k.OPENSHIFT_EC2_NODE_CLASS.token else "EC2NodeClass"
    )
    report(
        f"{kind} '{name_of(args.props, args.name)}' is on cluster release {release}: OCP {line} ships a Karpenter "
        "without OpenShift's TargetConfigVersionHash carry, so every Ignition token rotation (every 5.5 h) "
        "changes the generated userData and drifts all of its nodes (~130 needless replacements a month). "
        "Upgrade the hosted cluster to 4.22 or later, or bound Drifted disruption on its NodePools, e.g. "
        'spec.disruption.budgets: [{nodes: "1", reasons: [Drifted]}].',
        None,
    )


karpenter_token_carry = ResourceValidationPolicy(
    name="karpenter-token-carry",
    description="Node classes on releases whose Karpenter drifts nodes on every Ignition token rotation are "
    "pointed out.",
    validate=_validate_token_carry,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={
            "releasesWithoutCarry": {
                "type": "array",
                "items": {"type": "string", "pattern": r"^[0-9]+\.[0-9]+$"},
                "default": RELEASES_WITHOUT_CARRY,
                "description": "OCP lines (x.y) whose Karpenter lacks the TargetConfigVersionHash carry.",
            }
        }
    ),
)


# ---------------------------------------------------------------------------------------------------------
# drift-budget: every NodePool bounds every disruption reason that can act on it
# ---------------------------------------------------------------------------------------------------------

MAX_DRIFTED_PERCENT = 10
MAX_DRIFTED_NODES = 5
MAX_PERCENT = 10
MAX_NODES = 5
#: Reasons a pool must bound by default; add "Unhealthy" for Karpenter 1.15+ with the NodeRepair gate.
REQUIRED_REASONS = ["Empty", "Underutilized", "Drifted"]
#: Karpenter's default when spec.disruption.budgets is absent.
KARPENTER_DEFAULT_BUDGET = "10%"
_NODES = re.compile(r"^(?:(?P<pct>100|[0-9]{1,2})%|(?P<count>[0-9]+))$")


def _budget_bound(nodes: Any, max_percent: int, max_nodes: int) -> tuple[bool, str] | None:
    """(within the configured maximum, text) for a budget's ``nodes``; None when it is not valid."""
    if isinstance(nodes, float) and nodes.is_integer():
        nodes = int(nodes)
    if isinstance(nodes, bool) or not isinstance(nodes, int | str):
        return None  # not a count or a share (a fraction, a list, a mapping): the CRD check names the field
    text = str(nodes)
    match = _NODES.match(text.strip())
    if match is None:
        return None
    if match.group("pct") is not None:
        return int(match.group("pct")) <= max_percent, text
    return int(match.group("count")) <= max_nodes, f"{text} nodes"


def _shape(value: Any) -> str:
    """What a malformed value is, for messages: ``a string``, ``a mapping``, ``a number``."""
    if isinstance(value, str):
        return "a string"
    if isinstance(value, Mapping):
        return "a mapping"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return f"a {type(value).__name__}"


def acting_reasons(spec: Mapping[str, Any], required: list[str]) -> list[str]:
    """Which of ``required`` can replace or remove nodes of a NodePool with this ``spec``.

    A static pool (``replicas``) and a pool with ``consolidateAfter: Never`` never consolidate; ``WhenEmpty``
    never consolidates underutilized nodes.
    """
    disruption = as_map(spec.get("disruption"))
    consolidation = {"Empty", "Underutilized"}
    if "replicas" in spec or disruption.get("consolidateAfter") == "Never":
        idle: set[str] = consolidation
    elif disruption.get("consolidationPolicy") == "WhenEmpty":
        idle = {"Underutilized"}
    else:
        idle = set()
    return [r for r in required if r not in idle]


def _reason_gaps(budgets: Any, reason: str, max_percent: int, max_nodes: int) -> list[str] | None:
    """Why ``reason`` is not bounded by ``budgets`` (None when it is, or when a budget for it is malformed:
    the NodePool CRD's pattern rejects the whole pool, and ``crd-schema`` says so, once)."""
    scheduled: list[str] = []
    loose: list[str] = []
    for i, budget in enumerate(as_seq(budgets)):
        b = as_map(budget)
        reasons = [str(r) for r in as_seq(b.get("reasons"))]
        if reasons and reason not in reasons:
            continue
        bound = _budget_bound(b.get("nodes"), max_percent, max_nodes)
        if bound is None:
            return None
        if b.get("schedule") or b.get("duration"):
            scheduled.append(f"budgets[{i}]")
            continue
        ok, text = bound
        if ok:
            return None
        loose.append(f"budgets[{i}] ({text})")
    details = []
    if loose:
        details.append(f"the budgets that apply to {reason} allow more ({', '.join(loose)})")
    if scheduled:
        details.append(
            f"{', '.join(scheduled)} only apply during their schedule window; outside it {reason} is unbounded "
            "by them"
        )
    if not details:
        details.append(
            f"no budget applies to {reason} (every budget lists other reasons), so it is unbounded"
        )
    return details


def _validate_drift_budget(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.KARPENTER_NODE_POOL.token:
        return
    config = args.get_config()
    drift_limits = (
        int(config.get("maxDriftedPercent", MAX_DRIFTED_PERCENT)),
        int(config.get("maxDriftedNodes", MAX_DRIFTED_NODES)),
    )
    other_limits = (int(config.get("maxPercent", MAX_PERCENT)), int(config.get("maxNodes", MAX_NODES)))
    required = [str(r) for r in config.get("reasons", REQUIRED_REASONS)]
    name = name_of(args.props, args.name)
    where = f"Karpenter NodePool '{name}'"
    spec = as_map(args.props.get("spec"))
    reasons = acting_reasons(spec, required)

    def limit(reason: str) -> tuple[int, int]:
        return drift_limits if reason == "Drifted" else other_limits

    def text(reason: str) -> str:
        pct, nodes = limit(reason)
        return f"{pct}% or {nodes} nodes"

    fix = (
        'add a budget per reason to spec.disruption.budgets, e.g. {nodes: "10%", reasons: [Empty, Underutilized, '
        'Drifted]} (replacement is then rate-limited; nodes: "0" with a schedule blocks it in a window)'
    )
    budgets = as_map(spec.get("disruption")).get("budgets")
    if budgets is not None and not is_list(budgets):
        # Not a list (the CRD check rejects the object too): say what it means for disruption, not only its type.
        report(
            f"{where}: spec.disruption.budgets is {_shape(budgets)}, not a list of budgets, so no disruption "
            f"reason is bounded; {fix}.",
            None,
        )
        return
    if budgets is None:
        loose = [
            r for r in reasons if not (_budget_bound(KARPENTER_DEFAULT_BUDGET, *limit(r)) or (False, ""))[0]
        ]
        if loose:
            report(
                f"{where} declares no disruption budgets, so Karpenter's default {{nodes: "
                f"{KARPENTER_DEFAULT_BUDGET}}} applies to {', '.join(loose)}, above the configured maximum of "
                f"{'; '.join(f'{r}: {text(r)}' for r in loose)}; {fix}.",
                None,
            )
        return
    if not as_seq(budgets):
        report(
            f"{where} declares an empty spec.disruption.budgets list, which replaces Karpenter's default "
            f"{{nodes: {KARPENTER_DEFAULT_BUDGET}}} with no budget at all: {', '.join(reasons)} disruption is "
            f"unbounded; {fix}.",
            None,
        )
        return
    clauses = []
    for reason in reasons:
        gaps = _reason_gaps(budgets, reason, *limit(reason))
        if gaps is not None:
            clauses.append(f"does not bound {reason} disruption to {text(reason)}: {'; '.join(gaps)}")
    if clauses:
        report(
            f"{where} {'. It '.join(clauses)}. Drift replaces nodes whenever the node class or template changes "
            "(e.g. a userData token rotation), consolidation removes or replaces them, and a reason no active "
            f"budget names is not limited at all; {fix}.",
            None,
        )


drift_budget = ResourceValidationPolicy(
    name="drift-budget",
    description="Every Karpenter NodePool has always-active disruption budgets that bound each reason that can "
    "replace or remove its nodes (Empty, Underutilized, Drifted; Unhealthy on request).",
    validate=_validate_drift_budget,
    enforcement_level=EnforcementLevel.ADVISORY,
    config_schema=PolicyConfigSchema(
        properties={
            "maxDriftedPercent": {
                "type": "integer",
                "minimum": 0,
                "maximum": 100,
                "default": MAX_DRIFTED_PERCENT,
                "description": 'Largest percentage budget (nodes: "N%") accepted for Drifted.',
            },
            "maxDriftedNodes": {
                "type": "integer",
                "minimum": 0,
                "default": MAX_DRIFTED_NODES,
                "description": 'Largest absolute budget (nodes: "N") accepted for Drifted.',
            },
            "maxPercent": {
                "type": "integer",
                "minimum": 0,
                "maximum": 100,
                "default": MAX_PERCENT,
                "description": "Largest percentage budget accepted for every other reason.",
            },
            "maxNodes": {
                "type": "integer",
                "minimum": 0,
                "default": MAX_NODES,
                "description": "Largest absolute budget accepted for every other reason.",
            },
            "reasons": {
                "type": "array",
                "items": {"type": "string", "enum": ["Empty", "Underutilized", "Drifted", "Unhealthy"]},
                "default": REQUIRED_REASONS,
                "description": "Reasons every pool must bound (those its consolidation settings let act).",
            },
        }
    ),
)


# ---------------------------------------------------------------------------------------------------------
# karpenter-provisioning-switch: a NodePool switching between static and dynamic is replaced
# ---------------------------------------------------------------------------------------------------------

#: Where relative render directories are resolved: the project (the program's working directory).
PROJECT_DIR = Path(__file__).resolve().parent.parent


def previous_render(
    props: Mapping[str, Any], provider_props: Mapping[str, Any] | None
) -> dict[str, Any] | None:
    """The last rendered copy of this object in its provider's render directory, if there is one."""
    directory = as_text(as_map(provider_props).get("renderYamlToDirectory"))
    if directory is None or not as_text(metadata_of(props).get("name")):
        return None  # not rendered, or an object without a name has no file to look for
    path = Path(directory)
    if not path.is_absolute():
        path = PROJECT_DIR / path
    file = path / manifest_path(props)
    try:
        doc = load_yaml(read_text(file, what="rendered manifest"), str(file), loader=FastBoundedLoader)
    except FileProblem:  # not there, not a regular file, not a manifest: no previous render to compare with
        return None
    return doc if isinstance(doc, dict) else None


def provisioning_switch(old: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """What switching a NodePool between static (``replicas``) and dynamic provisioning does; None if not."""
    old_spec, new_spec = as_map(old.get("spec")), as_map(new.get("spec"))
    was, becomes = "replicas" in old_spec, "replicas" in new_spec
    if was == becomes:
        return None
    name = name_of(new, "")
    if becomes:
        after = (
            f"then creates it as a static pool that keeps {new_spec.get('replicas')} node(s) whatever the pending "
            "pods (Karpenter's StaticCapacity gate must be on)"
        )
        kinds = "dynamic to static"
    else:
        after = "then creates it as a dynamic pool, which launches nodes only for pending pods"
        kinds = f"static ({old_spec.get('replicas')} replicas) to dynamic"
    return (
        f"Karpenter NodePool '{name}' switches from {kinds}. The NodePool API refuses that change in place "
        "(has(self.replicas) == has(oldSelf.replicas)), so nodefleet replaces the pool: Pulumi deletes it first "
        "(same name), and Karpenter drains and terminates every node of it, without disruption budgets, since "
        f"they belong to the deleted pool; {after}. Move workloads to another pool first if they must not "
        "wait for new nodes."
    )


def _validate_provisioning_switch(args: ResourceValidationArgs, report: ReportViolation) -> None:
    if args.resource_type != k.KARPENTER_NODE_POOL.token:
        return
    provider = args.provider.props if args.provider is not None else None
    old = previous_render(args.props, provider)
    if old is None:
        return
    message = provisioning_switch(old, args.props)
    if message:
        report(message, None)


karpenter_provisioning_switch = ResourceValidationPolicy(
    name="karpenter-provisioning-switch",
    description="A Karpenter NodePool that switches between static and dynamic provisioning is pointed out: it "
    "is deleted (its nodes drained) and created again.",
    validate=_validate_provisioning_switch,
    enforcement_level=EnforcementLevel.ADVISORY,
)


# ---------------------------------------------------------------------------------------------------------
# karpenter-operator-fields: classes Red Hat's karpenter-operator would reject
# ---------------------------------------------------------------------------------------------------------

#: Fields the karpenter-operator owns on every EC2NodeClass (its ValidatingAdmissionPolicies reject others').
OPERATOR_OWNED = ("amiFamily", "amiSelectorTerms", "userData")
OPERATOR_MODE = "karpenter-operator"


def _validate_operator_fields(args: StackValidationArgs, report: ReportViolation) -> None:
    operated: set[str] = set()
    classes = [r for r in args.resources if r.resource_type == k.EC2_NODE_CLASS.token]
    for r in classes:
        if annotations_of(r.props).get(k.ANNOTATION_USERDATA_MODE) == OPERATOR_MODE:
            operated.add(_provider_key(r))
    for r in classes:
        notes = annotations_of(r.props)
        mode = notes.get(k.ANNOTATION_USERDATA_MODE)
        if mode != OPERATOR_MODE and _provider_key(r) not in operated:
            continue
        owned = [f for f in OPERATOR_OWNED if f in as_map(r.props.get("spec"))]
        if not owned:
            continue
        name = name_of(r.props, r.name)
        how = "nodefleet's S3-pointer class writes them" if mode == S3_POINTER else "it declares them"
        report(
            f"EC2NodeClass '{name}' sets {', '.join(f'spec.{f}' for f in owned)} on a cluster whose Karpenter runs "
            f"under Red Hat's karpenter-operator ({how}). The operator owns amiFamily, amiSelectorTerms and userData "
            "on every node class (it points userData at the Machine Config Server, pool karpenter-<class>), and "
            "its ValidatingAdmissionPolicies reject any other writer, so this object would be refused. Declare the "
            "class under karpenterOperator.nodeClasses (nodefleet then writes only the fields users own) and "
            "customize its nodes with MachineConfigs for that pool.",
            r.urn,
        )


def _provider_key(r: Any) -> str:
    provider = getattr(r, "provider", None)
    return str(getattr(provider, "urn", "") or "")


karpenter_operator_fields = StackValidationPolicy(
    name="karpenter-operator-fields",
    description="On clusters running Red Hat's karpenter-operator, no EC2NodeClass sets the amiFamily, "
    "amiSelectorTerms or userData its admission policies reserve.",
    validate=_validate_operator_fields,
    enforcement_level=EnforcementLevel.ADVISORY,
)
