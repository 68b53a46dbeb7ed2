"""What to write instead, for CRD rules whose own message says only what is wrong.

``crd-schema`` reports a failed rule with the CRD's message (``label domain "karpenter.sh" is restricted``);
that is the verdict, and it is the only one: no other policy repeats a CRD's rule. For the rules users meet
most, this module adds the fix, e.g. ``use karpenter.k8s.aws/instance-family instead`` for the
``karpenter.sh/instance-family`` requirement key that HyperShift's own AutoNode how-to uses. The keys the
AWS provider allows are read from the rule of the CRD the object is judged by, so the advice follows the
cluster's Karpenter version.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Mapping
from typing import Any

from nodefleet.apiserver.coverage import rule_sites
from nodefleet.apiserver.schema import Finding
from nodefleet.apiserver.store import CrdVersion

__all__ = ["advise", "requirement_key_advice"]

#: Kubernetes' well-known node labels, for keys users put in a Karpenter domain by mistake.
_WELL_KNOWN = {
    "instance-type": "node.kubernetes.io/instance-type",
    "zone": "topology.kubernetes.io/zone",
    "region": "topology.kubernetes.io/region",
    "arch": "kubernetes.io/arch",
    "os": "kubernetes.io/os",
    "hostname": "kubernetes.io/hostname",
}
_AWS_DOMAIN = "karpenter.k8s.aws"
_QUOTED = re.compile(r'"(karpenter\.k8s\.aws/[^"]+)"')
_INDEX = re.compile(r"([^.\[]+)|\[(\d+)\]")


def _aws_keys(crd: CrdVersion) -> list[str]:
    """The ``karpenter.k8s.aws/`` keys the CRD's own restricted-domain rule lets through (empty if it has none)."""
    for path, spec in rule_sites(crd.schema):
        if path.endswith("requirements[].key") and f'"{_AWS_DOMAIN}" is restricted' in str(
            spec.get("message")
        ):
            return list(dict.fromkeys(_QUOTED.findall(str(spec.get("rule")))))
    return []


def _domain(key: str) -> str:
    return key.split("/", 1)[0] if "/" in key else ""


def requirement_key_advice(key: str, crd: CrdVersion) -> str:
    """What to use instead of a NodePool requirement key in a restricted domain."""
    suffix = key.split("/", 1)[-1]
    allowed = _aws_keys(crd)
    if key == "karpenter.sh/nodepool":
        return "remove it: Karpenter puts karpenter.sh/nodepool on its nodes itself"
    if f"{_AWS_DOMAIN}/{suffix}" in allowed and _domain(key) != _AWS_DOMAIN:
        return f"use {_AWS_DOMAIN}/{suffix} instead of {key}"
    if suffix in _WELL_KNOWN:
        return f"use the well-known label {_WELL_KNOWN[suffix]} instead of {key}"
    known = {key.split("/", 1)[1]: key for key in allowed}
    close = difflib.get_close_matches(suffix, list(known), n=1, cutoff=0.8)
    if close:
        return f"did you mean {known[close[0]]}?"
    return (
        f"use a {_AWS_DOMAIN}/ key this Karpenter knows (instance-family, instance-size, instance-category, …), "
        "a well-known label (kubernetes.io/arch, topology.kubernetes.io/zone, node.kubernetes.io/instance-type) "
        "or a label in your own domain"
    )


def _labels_advice(labels: Mapping[str, Any], domain: str) -> str:
    keys = sorted(str(k) for k in labels if _domain(str(k)).endswith(domain))
    shown = ", ".join(keys) or f"the {domain} keys"
    return f"move {shown} to a label in your own domain (e.g. example.com/team); Karpenter owns {domain}"


def _at(obj: Mapping[str, Any], path: str) -> Any:
    node: Any = obj
    for name, index in _INDEX.findall(path):
        if index:
            node = node[int(index)] if isinstance(node, list) and int(index) < len(node) else None
        else:
            node = node.get(name) if isinstance(node, Mapping) else None
        if node is None:
            return None
    return node


Adviser = Callable[[Any, CrdVersion], str | None]


def _requirement_key(value: Any, crd: CrdVersion) -> str | None:
    return requirement_key_advice(value, crd) if isinstance(value, str) else None


def _labels(domain: str) -> Adviser:
    def advise(value: Any, crd: CrdVersion) -> str | None:
        return _labels_advice(value, domain) if isinstance(value, Mapping) else None

    return advise


#: (kind, path suffix, the CRD's message) -> advice from the value at the finding's path.
_ADVISERS: tuple[tuple[str, str, str, Adviser], ...] = (
    ("NodePool", ".key", 'label domain "karpenter.sh" is restricted', _requirement_key),
    ("NodePool", ".key", 'label "karpenter.sh/nodepool" is restricted', _requirement_key),
    ("NodePool", ".key", f'label domain "{_AWS_DOMAIN}" is restricted', _requirement_key),
    ("NodePool", "labels", 'label domain "karpenter.sh" is restricted', _labels("karpenter.sh")),
    ("NodePool", "labels", f'label domain "{_AWS_DOMAIN}" is restricted', _labels(_AWS_DOMAIN)),
)


def advise(finding: Finding, obj: Mapping[str, Any], crd: CrdVersion) -> str | None:
    """The fix for a failed CRD rule, when nodefleet knows a better one than the CRD's message; else None."""
    if not finding.blocking or finding.rule is None:
        return None
    for kind, suffix, message, adviser in _ADVISERS:
        if crd.crd.kind == kind and finding.path.endswith(suffix) and finding.message.endswith(message):
            return adviser(_at(obj, finding.path), crd)
    return None
