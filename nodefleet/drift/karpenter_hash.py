"""Karpenter's static hashes, modelled on the Go types they walk: equal views exactly when the hashes are equal.

Karpenter stamps every NodeClaim with a hash of its EC2NodeClass (aws/karpenter-provider-aws
``EC2NodeClass.Hash(caBundle)``) and of its NodePool's template (kubernetes-sigs/karpenter
``NodePool.Hash()``), both ``hashstructure.Hash(..., FormatV2, {SlicesAsSets, IgnoreZeroValue, ZeroNil})``
over the *Go* object, decoded from what the API server stored. What changes the hash depends on Go types
the manifest does not show, so this module walks the manifest with a description of those types, taken by
reflection from the Karpenter modules themselves (``nodefleet/hashtypes/karpenter-<minor>.json``, written by
the Go reference in ``tests/karpenter_hash``). It reproduces, for each supported Karpenter minor:

* what the API server does before storing: the CRD's defaults (the set's shipped CRD), dropped nulls;
  fields the Go type does not have are never hashed (the API server prunes them);
* ``hash:"ignore"`` fields; ``IgnoreZeroValue``: a struct field is skipped when its Go value is zero, so an
  absent pointer differs from a pointer to ``false``/``0``/``""``/``{}`` and an absent list or map differs
  from an empty one, while a value (non-pointer) ``""``/``0``/``false`` is the same as absent;
* ``SlicesAsSets``: a list hashes as the XOR of its items, so order does not count *and equal items cancel
  in pairs* (``[a, a, b]`` hashes as ``[b]``); map entries always count, empty values included;
* the values Go decodes rather than copies: durations (``60m`` is ``1h``; ``Never`` is a nil duration),
  ``resource.Quantity`` hashed through its canonical string (``1024Gi`` is ``1Ti``);
* the extra inputs of ``EC2NodeClass.Hash``: the resolved AMI family (``amiFamily``, else the alias's
  family, else ``Custom``), the cluster CA bundle (v1.12+), and from v1.15 the kubelet map's JSON text.

:func:`node_class_view` and :func:`node_pool_view` return these canonical values; :func:`hash_version`
the ``*-hash-version`` a Karpenter minor stamps (static drift is only evaluated between equal versions).
The differential test ``tests/test_drift_reference.py`` checks the verdicts against the real ``Hash()``
of every supported minor.
"""

from __future__ import annotations

import copy
import datetime
import functools
import json
import math
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

from nodefleet.apiserver import store as crdstore

__all__ = [
    "DEFAULT_KARPENTER",
    "HASH_TYPES_DIR",
    "SUPPORTED_KARPENTER",
    "HashTypes",
    "UnhashableValue",
    "admit",
    "go_duration_ns",
    "hash_types",
    "hash_version",
    "node_class_view",
    "node_pool_view",
    "quantity_string",
]

#: The Karpenter minors whose hashes are modelled (and verified against their Go code).
SUPPORTED_KARPENTER = ("1.12", "1.13", "1.14", "1.15")
DEFAULT_KARPENTER = "1.15"
HASH_TYPES_DIR = Path(__file__).resolve().parent.parent / "hashtypes"

_MISSING: Any = object()


class UnhashableValue(ValueError):
    """A value whose Go hash this model does not reproduce (a Go type it has no decoder for)."""


@dataclass(frozen=True)
class HashTypes:
    """The Go types one Karpenter minor hashes, as its reference described them."""

    minor: str
    modules: Mapping[str, str]
    types: Mapping[str, Mapping[str, Any]]
    roots: Mapping[str, str]
    versions: Mapping[str, str]


@functools.cache
def hash_types(minor: str) -> HashTypes:
    """The hashed types of Karpenter ``minor`` (one of :data:`SUPPORTED_KARPENTER`)."""
    if minor not in SUPPORTED_KARPENTER:
        raise ValueError(f"Karpenter {minor} has no drift model; supported: {', '.join(SUPPORTED_KARPENTER)}")
    doc = json.loads((HASH_TYPES_DIR / f"karpenter-{minor}.json").read_text())
    return HashTypes(minor, doc["modules"], doc["types"], doc["roots"], doc["versions"])


def hash_version(kind: str, minor: str) -> str:
    """The ``*-hash-version`` annotation Karpenter ``minor`` stamps for ``kind`` (EC2NodeClass, NodePool)."""
    return str(hash_types(minor).versions[kind])


# --- what the API server stores -------------------------------------------------------------------------


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    """structuraldefaulting.PruneNonNullableNullsWithoutDefaults + Default, in place."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        for key, sub in props.items():
            if key in value and value[key] is None and not sub.get("nullable"):
                del value[key]
            if key not in value and "default" in sub:
                value[key] = copy.deepcopy(sub["default"])
        addl = schema.get("additionalProperties")
        for key in list(value):
            sub = props.get(key) or (addl if isinstance(addl, Mapping) else None)
            if sub is None:
                continue
            if value[key] is None and not sub.get("nullable"):
                del value[key]
            else:
                _default(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _default(item, items)


@functools.cache
def _spec_schema(api_version: str, kind: str, minor: str) -> Mapping[str, Any]:
    found = crdstore.load_index().select(api_version, kind, f"aws/{minor}")
    if found is None:
        raise ValueError(f"no shipped CRD for {api_version} {kind} in Karpenter set aws/{minor}")
    return dict((found.crd.schema.get("properties") or {}).get("spec") or {})


def admit(manifest: Mapping[str, Any], minor: str) -> dict[str, Any]:
    """The ``spec`` the API server stores for ``manifest``: the CRD defaults of Karpenter ``minor`` applied."""
    spec = copy.deepcopy(dict(manifest.get("spec") or {}))
    _default(spec, _spec_schema(str(manifest.get("apiVersion")), str(manifest.get("kind")), minor))
    return spec


# --- Go values decoded from JSON ------------------------------------------------------------------------

_DURATION_UNITS = {
    "ns": 1,
    "us": 1_000,
    "µs": 1_000,
    "μs": 1_000,
    "ms": 1_000_000,
    "s": 1_000_000_000,
    "m": 60_000_000_000,
    "h": 3_600_000_000_000,
}
_DURATION_PART = re.compile(r"(\d*)(?:\.(\d*))?(ns|us|µs|μs|ms|s|m|h)")


def go_duration_ns(text: str) -> int:
    """``time.ParseDuration`` in nanoseconds (``1h30m``, ``90m``, ``1.5h``, ``0``)."""
    s = text
    sign = -1 if s.startswith("-") else 1
    s = s.lstrip("+-") if s[:1] in "+-" else s
    if s == "0":
        return 0
    if not s:
        raise UnhashableValue(f"invalid duration {text!r}")
    total = 0
    pos = 0
    while pos < len(s):
        m = _DURATION_PART.match(s, pos)
        if m is None or (not m.group(1) and not m.group(2)):
            raise UnhashableValue(f"invalid duration {text!r}")
        unit = _DURATION_UNITS[m.group(3)]
        whole = int(m.group(1) or 0) * unit
        frac = m.group(2) or ""
        if frac:
            whole += int(frac) * unit // 10 ** len(frac)
        total += whole
        pos = m.end()
    return sign * total


_BINARY = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_QUANTITY = re.compile(r"^([+-]?)(\d*)(?:\.(\d*))?(Ki|Mi|Gi|Ti|Pi|Ei|[eE][+-]?\d+|[numkMGTPE]?)$")


def quantity_string(text: Any) -> str:
    """``resource.Quantity.String()`` of a parsed quantity: its canonical form (``1024Gi`` → ``1Ti``)."""
    m = _QUANTITY.match(str(text))
    if m is None or not (m.group(2) or m.group(3)):
        raise UnhashableValue(f"invalid quantity {text!r}")
    sign, whole, frac, suffix = m.group(1), m.group(2) or "0", m.group(3) or "", m.group(4)
    value = Fraction(int(whole + frac), 10 ** len(frac))
    if suffix in _BINARY:
        fmt = "binary"
        value *= 2 ** _BINARY[suffix]
    elif suffix[:1] in ("e", "E"):
        fmt = "exponent"
        value *= Fraction(10) ** int(suffix[1:])
    else:
        fmt = "decimal"
        value *= Fraction(10) ** _DECIMAL[suffix]
    # Quantities keep nano precision, rounding up (away from zero).
    scaled = value * 10**9
    nanos = -(-scaled.numerator // scaled.denominator)
    if sign == "-":
        nanos = -nanos
    if nanos == 0:
        return "0"
    if fmt == "binary" and (-1024 * 10**9 < nanos < 1024 * 10**9 or nanos % 10**9):
        fmt = "decimal"
    if fmt == "binary":
        amount, exp = nanos // 10**9, 0
        while amount % 1024 == 0:
            amount //= 1024
            exp += 10
        return f"{amount}{next(k for k, v in _BINARY.items() if v == exp) if exp else ''}"
    amount, exp = nanos, -9
    while amount % 10 == 0:
        amount //= 10
        exp += 1
    shift = exp % 3
    amount, exp = amount * 10**shift, exp - shift
    if fmt == "exponent":
        return f"{amount}e{exp}" if exp else str(amount)
    named = {v: k for k, v in _DECIMAL.items()}
    return f"{amount}{named[exp]}" if exp in named else f"{amount}e{exp}"


_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})(?:[.,](\d+))?(?:Z|([+-])(\d{2}):(\d{2}))"
)


def rfc3339_instant(text: Any) -> tuple[int, int]:
    """``time.Parse(time.RFC3339, text)`` as (seconds since the epoch, nanoseconds): an upper-case ``T`` and
    ``Z`` or ``±hh:mm``; a fraction of a second (``.`` or ``,``) is cut to nanoseconds, not rounded."""
    m = _RFC3339.fullmatch(str(text))
    if m is None:
        raise UnhashableValue(f"invalid RFC 3339 time {text!r}")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    try:
        days = (datetime.date(year, month, day) - datetime.date(1970, 1, 1)).days
    except ValueError as err:
        raise UnhashableValue(f"invalid RFC 3339 time {text!r}: {err}") from None
    if hour > 23 or minute > 59 or second > 59:
        raise UnhashableValue(f"invalid RFC 3339 time {text!r}: out of range")
    offset = 0
    if m.group(8):
        off_h, off_m = int(m.group(9)), int(m.group(10))
        if off_h > 23 or off_m > 59:
            raise UnhashableValue(f"invalid RFC 3339 time {text!r}: zone offset out of range")
        offset = (off_h * 3600 + off_m * 60) * (-1 if m.group(8) == "-" else 1)
    nanos = int((m.group(7) or "")[:9].ljust(9, "0"))
    return days * 86400 + hour * 3600 + minute * 60 + second - offset, nanos


def _go_float(number: float) -> str:
    """``encoding/json`` text of a float64: shortest digits, plain between 1e-6 and 1e21, else ``1e+21`` /
    ``1e-7`` (so an integral float is written as the integer: ``110.0`` is ``110``)."""
    if number == 0:
        return "-0" if math.copysign(1.0, number) < 0 else "0"
    if 1e-6 <= abs(number) < 1e21:
        return format(Decimal(repr(number)).normalize(), "f")
    sign, digits, exponent = Decimal(repr(number)).normalize().as_tuple()
    text = "".join(str(d) for d in digits)
    power = len(text) - 1 + int(exponent)
    mantissa = text[0] + ("." + text[1:] if len(text) > 1 else "")
    return f"{'-' if sign else ''}{mantissa}e{'-' if power < 0 else '+'}{abs(power):02d}".replace("e-0", "e-")


def _go_json(value: Any) -> str:
    """``encoding/json.Marshal`` of a JSON value as the API server stores it (sorted keys, HTML-safe
    escapes). Numbers are what ``sigs.k8s.io/json`` decodes them into: an int64 when the integer fits, else
    a float64 (``1e2``, ``110.0``, ``2**63`` are floats, and an integral float is written as an integer)."""
    if isinstance(value, Mapping):
        return "{" + ",".join(f"{_go_json(str(k))}:{_go_json(value[k])}" for k in sorted(value)) + "}"
    if isinstance(value, list | tuple):
        return "[" + ",".join(_go_json(v) for v in value) + "]"
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int):
        return str(value) if -(2**63) <= value < 2**63 else _go_float(float(value))
    if isinstance(value, float):
        return _go_float(value)
    text = json.dumps(str(value), ensure_ascii=False)
    for raw, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"), ("\u2028", "\\u2028")):
        text = text.replace(raw, esc)
    return text.replace("\u2029", "\\u2029")


# --- hashstructure over the described Go types ----------------------------------------------------------


class _Walker:
    def __init__(self, types: HashTypes) -> None:
        self.types = types.types

    def desc(self, tid: str) -> Mapping[str, Any]:
        return self.types[tid]

    def short(self, tid: str) -> str:
        return tid.rsplit(".", 1)[-1] if self.desc(tid).get("name") else ""

    def fields(self, tid: str, obj: Any) -> list[tuple[Mapping[str, Any], Any]]:
        """The struct's fields with their JSON values (``_MISSING`` when absent), embedded ones inlined."""
        out = []
        src = obj if isinstance(obj, Mapping) else {}
        for f in self.desc(tid)["fields"]:
            if not f["exported"] or f["json"] == "-":
                out.append((f, _MISSING))
            elif f.get("embedded") and f["json"] == "":
                out.append((f, src))  # encoding/json inlines an embedded struct's fields
            else:
                out.append((f, src.get(f["json"], _MISSING)))
        return out

    def is_zero(self, value: Any, tid: str) -> bool:
        """reflect.Value.IsZero of the Go value encoding/json decodes ``value`` into."""
        if value is _MISSING or value is None:
            return True
        d = self.desc(tid)
        kind = d["kind"]
        if kind in ("ptr", "slice", "map", "interface"):
            return False
        if tid.endswith("karpenter/pkg/apis/v1.NillableDuration"):
            return bool(value == "Never")
        if d.get("json"):
            raise UnhashableValue(f"no model of how Go decodes a {tid} value")
        if kind == "struct":
            return all(self.is_zero(v, f["type"]) for f, v in self.fields(tid, value))
        return value in ("", 0, False)

    def canon(self, value: Any, tid: str, *, stringer: bool = False) -> Any:
        """A value equal for two inputs exactly when hashstructure's hashes of them are equal."""
        d = self.desc(tid)
        if d["kind"] == "ptr":
            return self.canon(None if value is _MISSING else value, d["elem"], stringer=stringer)
        if stringer:
            if tid.endswith("apimachinery/pkg/api/resource.Quantity"):
                return ("s", quantity_string(value))
            raise UnhashableValue(f"no model of {tid}.String()")
        if d.get("time"):
            raise UnhashableValue("time.Time values are not modelled")
        if tid.endswith("apimachinery/pkg/apis/meta/v1.Time"):
            # struct{time.Time}: the embedded Time is hashed by MarshalBinary after UnmarshalJSON's
            # .Local(), so what counts is the instant, not the zone it was written in.
            return ("struct", "Time", () if value is None else (("Time", ("t", *rfc3339_instant(value))),))
        if tid.endswith("apimachinery/pkg/apis/meta/v1.Duration"):
            ns = 0 if value is None else go_duration_ns(str(value))
            return ("struct", "Duration", (("Duration", ns),) if ns else ())
        if tid.endswith("karpenter/pkg/apis/v1.NillableDuration"):
            if value is None or value == "Never":
                return ("struct", "NillableDuration", ())
            return ("struct", "NillableDuration", (("Duration", go_duration_ns(str(value))),))
        if d.get("json"):
            raise UnhashableValue(f"no model of how Go decodes a {tid} value")
        kind = d["kind"]
        if kind == "struct":
            included = []
            for f, v in self.fields(tid, value):
                if not f["exported"] or f.get("hash") in ("ignore", "-"):
                    continue
                if self.is_zero(v, f["type"]):
                    continue
                included.append((f["go"], self.canon(v, f["type"], stringer=f.get("hash") == "string")))
            return ("struct", self.short(tid), tuple(included))
        if kind == "slice":
            return _xor_set(self.canon(item, d["elem"]) for item in value or [])
        if kind == "map":
            entries = ((self.canon(k, d["key"]), self.canon(v, d["elem"])) for k, v in (value or {}).items())
            return ("map", tuple(sorted(entries, key=repr)))
        if value is None:
            value = {"string": "", "bool": False}.get(kind, 0)
        if kind == "bool":
            return ("i", int(bool(value)))
        if kind in ("int", "uint"):
            return ("i", int(value))
        if kind == "float":
            return ("f", float(value))
        if kind == "string":
            return ("s", str(value))
        raise UnhashableValue(f"no model of Go kind {kind} ({tid})")


def _xor_set(items: Any) -> tuple[str, tuple[Any, ...]]:
    """A SlicesAsSets slice: items XOR together, so order is lost and equal items cancel in pairs."""
    counts = Counter(items)
    return ("set", tuple(sorted((item for item, n in counts.items() if n % 2), key=repr)))


#: What ``EC2NodeClass.Hash`` hashes beside the spec and the resolved AMI family, by hash version:
#: v5 (v1.12-v1.14) adds ``lo.FromPtr(caBundle)``, v6 (v1.15) also ``Spec.Kubelet.String()``.
_NODE_CLASS_INPUTS: dict[str, tuple[str, ...]] = {"v5": ("caBundle",), "v6": ("caBundle", "kubelet")}

_ALIAS_FAMILIES = ("AL2", "AL2023", "Bottlerocket", "Windows2019", "Windows2022", "Windows2025")


def _ami_family(spec: Mapping[str, Any]) -> str:
    """``EC2NodeClass.AMIFamily()``: ``amiFamily``, else the family of the first alias term, else Custom."""
    if spec.get("amiFamily") is not None:
        return str(spec["amiFamily"])
    for term in spec.get("amiSelectorTerms") or []:
        alias = term.get("alias") if isinstance(term, Mapping) else None
        if alias:
            family = str(alias).split("@")[0]
            for known in _ALIAS_FAMILIES:
                if known.lower() == family:
                    return known
            raise UnhashableValue(f"invalid AMI alias family {family!r} (Karpenter exits on it)")
    return "Custom"


def node_class_view(
    manifest: Mapping[str, Any], minor: str = DEFAULT_KARPENTER, *, ca_bundle: str | None = None
) -> Any:
    """What ``EC2NodeClass.Hash(caBundle)`` of Karpenter ``minor`` distinguishes, for an EC2NodeClass manifest."""
    types = hash_types(minor)
    walker = _Walker(types)
    spec = admit(manifest, minor)
    version = types.versions["EC2NodeClass"]
    if version not in _NODE_CLASS_INPUTS:
        raise UnhashableValue(f"EC2NodeClass hash version {version} (Karpenter {minor}) is not modelled")
    elements = [walker.canon(spec, types.roots["EC2NodeClass"]), ("s", _ami_family(spec))]
    if "caBundle" in _NODE_CLASS_INPUTS[version]:
        elements.append(("s", ca_bundle or ""))
    if "kubelet" in _NODE_CLASS_INPUTS[version]:
        kubelet = spec.get("kubelet")
        elements.append(("s", _go_json(kubelet) if kubelet else "null"))
    # Hash() hashes a []any, which SlicesAsSets XORs like any other slice.
    return _xor_set(elements)


def node_pool_view(manifest: Mapping[str, Any], minor: str = DEFAULT_KARPENTER) -> Any:
    """What ``NodePool.Hash()`` of Karpenter ``minor`` distinguishes: ``spec.template`` as Go decodes it."""
    types = hash_types(minor)
    spec = admit(manifest, minor)
    return _Walker(types).canon(spec.get("template"), types.roots["NodePool"])
