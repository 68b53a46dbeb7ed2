"""What of the shipped CRDs' validation nodefleet checks: rules that evaluate, rules it cannot, formats.

``python -m nodefleet crds coverage`` prints it; a CRD refresh that brings a rule calling a function this
environment lacks shows up here (and, per object, in the ``crd-schema-unchecked`` advisory).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver.schema import _FORMATS as _STRING_FORMATS
from nodefleet.apiserver.store import CrdIndex, CrdVersion

__all__ = ["CrdCoverage", "coverage", "rule_sites"]

_NUMERIC_FORMATS = frozenset({"int32", "int64", "float", "double"})
_CALL = re.compile(r"(?<![\w.])((?:format\.)?[A-Za-z_][A-Za-z0-9_]*)\s*\(|\.([A-Za-z_][A-Za-z0-9_]*)\s*\(")


def rule_sites(schema: Mapping[str, Any], path: str = "") -> Iterator[tuple[str, Mapping[str, Any]]]:
    """Every (schema path, validation entry) under ``schema``."""
    for rule in schema.get("x-kubernetes-validations") or ():
        yield path, rule
    for key, sub in (schema.get("properties") or {}).items():
        yield from rule_sites(sub, f"{path}.{key}")
    if isinstance(schema.get("items"), Mapping):
        yield from rule_sites(schema["items"], f"{path}[]")
    if isinstance(schema.get("additionalProperties"), Mapping):
        yield from rule_sites(schema["additionalProperties"], f"{path}{{}}")


def _formats(schema: Mapping[str, Any]) -> Iterator[str]:
    if isinstance(schema.get("format"), str):
        yield schema["format"]
    for sub in (schema.get("properties") or {}).values():
        yield from _formats(sub)
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            yield from _formats(schema[key])


def called_functions(rule: str) -> set[str]:
    """Function and method names a rule calls (string literals excluded)."""
    text = crd_cel._strip_strings(rule)
    return {m[1] or m[2] for m in _CALL.finditer(text)}


@dataclass
class CrdCoverage:
    kind: str
    api_version: str
    #: The shipped file, and the Karpenter sets that use it (empty for a per-kind CRD).
    file: str = ""
    sets: list[str] = field(default_factory=list)
    rules: int = 0
    transition: int = 0
    evaluated: int = 0
    cannot: list[tuple[str, str, str]] = field(default_factory=list)  # (path, rule, why)
    functions: Counter[str] = field(default_factory=Counter)
    formats_checked: set[str] = field(default_factory=set)
    formats_unchecked: set[str] = field(default_factory=set)
    #: From a rule log (``coverage(index, log)``): rules seen evaluated, seen passing, seen failing, and
    #: the rules never evaluated (path, rule).
    exercised: int = 0
    passed: int = 0
    failed: int = 0
    not_exercised: list[tuple[str, str]] = field(default_factory=list)


Log = Mapping[tuple[str, str, str, str], Mapping[str, int]]


def _one(version: CrdVersion, sets: list[str], log: Log | None = None) -> CrdCoverage:
    cov = CrdCoverage(version.crd.kind, version.api_version, version.crd.file, sets)
    for path, spec in rule_sites(version.schema):
        cov.rules += 1
        compiled = crd_cel.compile_rule(spec)
        cov.transition += compiled.transition
        cov.functions.update(called_functions(compiled.rule))
        if compiled.error is None:
            cov.evaluated += 1
        else:
            cov.cannot.append((path or "<root>", compiled.rule, compiled.error))
        if log is not None:
            seen = log.get((version.crd.file, version.version, path, compiled.rule))
            if seen and (seen.get("pass", 0) or seen.get("fail", 0)):
                cov.exercised += 1
                cov.passed += bool(seen.get("pass", 0))
                cov.failed += bool(seen.get("fail", 0))
            else:
                cov.not_exercised.append((path or "<root>", compiled.rule))
    for fmt in _formats(version.schema):
        if fmt in _NUMERIC_FORMATS:
            continue
        (cov.formats_checked if fmt in _STRING_FORMATS or fmt == "uri" else cov.formats_unchecked).add(fmt)
    return cov


def coverage(index: CrdIndex, log: Log | None = None) -> list[CrdCoverage]:
    """Coverage of every served version of every CRD file in ``index`` (a file shared by sets once).

    With ``log`` (``crd_rule_log.read``), each row also counts the rules the logged runs evaluated.
    """
    return [_one(v, index.sets_of(v.crd.file), log) for v in index.all_versions()]


#: CEL standard and extension functions and macros (not Kubernetes libraries) the rules may call.
_STANDARD_NAMES = (
    "has all exists exists_one map filter size matches startsWith endsWith contains int uint double "
    "string bytes bool duration timestamp getSeconds getMilliseconds dyn type split lowerAscii upperAscii "
    "substring trim replace join indexOf lastIndexOf charAt orValue hasValue value of none ofNonZeroValue bind"
)
STANDARD = frozenset(_STANDARD_NAMES.split())
