"""An object judged the way the API server judges a custom resource: structural schema, then CEL rules.

The order and the semantics follow ``k8s.io/apiextensions-apiserver`` 1.35 (``customresource_handler.go``,
customresource ``strategy.go`` and ``validator.go``, ``schema/pruning``, ``schema/defaulting``,
``schema/listtype``, ``schema/cel/validation.go``, ``validation/ratcheting.go``), and are checked against it
by tests/test_crd_apiserver.py (a Go reference built from those modules, on a generated corpus):

1. Decoding: a field the schema does not declare refuses the request before any validation (pruning under
   ``fieldValidation=Strict``, kubectl's default; ``x-kubernetes-preserve-unknown-fields`` keeps them), named
   ``spec.a.b`` as the API server names it. Then a ``null`` in a non-nullable field or map entry without a
   default is removed (a ``null`` list item stays: it takes the items' default, or fails its type check), and
   defaults are applied (not for server-side-apply patches, whose missing fields the live object supplies).
2. ``status`` is dropped when the CRD has a status subresource (a create cannot set it; an update keeps the
   stored status, so the previous object's ``status`` is carried over when it is known).
3. ObjectMeta: a name or generateName is required; name, generateName (and the name generated from it),
   namespace, labels and annotations are checked; on an update, name and namespace are immutable.
4. The OpenAPI value validations: ``type`` (``x-kubernetes-int-or-string``), ``enum``, ``pattern`` (RE2, as
   Go's ``regexp``), lengths (in characters, worded in "bytes" as the API server words them), bounds, item
   and property counts, ``required``, the string ``format``\\ s the CRDs declare,
   ``anyOf``/``allOf``/``oneOf``/``not``; duplicates in set and map lists (once per value); the scale
   subresource's ``specReplicasPath``. Paths are the API server's: ``spec.tags.Name`` for a map value here,
   ``spec.tags[Name]`` in CEL errors.
5. Unless one of those errors is a Required, enum, too-long, too-many or type error (a bad ``format`` is a
   type error to kube-openapi), in which case the API server skips CEL and notes it (:data:`NOT_CHECKED`),
   every ``x-kubernetes-validations`` rule on a node present in the object is evaluated with ``self`` bound
   at that node. Transition rules (those reading ``oldSelf``) run only where the previous object is known
   and the node correlates with it (object fields, map values, ``list-type: map`` items by key; not items of
   atomic or set lists); without a previous object they are skipped as on a create, unless the rule sets
   ``optionalOldSelf``.
6. Validation ratcheting (Kubernetes >= 1.30, locked on since 1.33): on an update, an error of a value whose
   nearest node correlated with the previous object is unchanged is not a rejection; it is reported as a
   note saying it was ratcheted. (An object holding a field its schema does not describe, such as any object
   with ``metadata``, is never unchanged: the API server cannot correlate the field.) CEL runtime errors, transition rules and ObjectMeta are never ratcheted;
   duplicate checks apply only if the previous object had none.

Values unknown during a preview are represented by :data:`UNKNOWN`: checks on them are skipped, and a rule
whose ``self`` or ``oldSelf`` contains one is reported as "cannot evaluate", never passed silently.
What this does not reproduce: order-insensitive equality of set and map lists inside CEL, CEL cost limits,
admission webhooks and ValidatingAdmissionPolicies.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import cache, lru_cache
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver import formats as crd_formats
from nodefleet.apiserver import rule_log as rule_log
from nodefleet.apiserver import strfmt as crd_strfmt
from nodefleet.apiserver.cel import escape_property
from nodefleet.apiserver.cel import rule_field_path as _rule_field_path
from nodefleet.apiserver.crd_rules import Refusal, analysis_digest, bad_value, refusals
from nodefleet.apiserver.store import CrdVersion, remembered

__all__ = [
    "CRD_REFUSED",
    "DEFAULT_KUBERNETES_VERSION",
    "KUBERNETES_VERSIONS",
    "NOT_CHECKED",
    "REQUEST_BODIES",
    "UNKNOWN",
    "Finding",
    "VersionError",
    "crd_refusals",
    "default_refusals",
    "defaulted",
    "escape_property",
    "followed_version",
    "kubernetes_version",
    "rejects_field",
    "unknown_fields",
    "validate_object",
    "validate_value",
    "without_bare_defaults",
]


class _Unknown:
    """A value the engine does not know yet during a preview."""

    def __repr__(self) -> str:
        return "<unknown during preview>"

    def __deepcopy__(self, memo: dict[int, Any]) -> _Unknown:
        return self


UNKNOWN = _Unknown()

#: The API server's note, at the root, when blocking errors kept the CEL rules from running.
NOT_CHECKED = (
    "Invalid value: null: some validation rules were not checked because the object was invalid; correct the "
    "existing errors to complete validation"
)
_ABSENT: Any = crd_cel._ABSENT

#: The Kubernetes versions whose API server validation crd-schema follows, and the one it follows unless told
#: (docs/crd-validation.md, "Which API server"): OpenShift 4.22, the newest release nodefleet deploys, runs
#: Kubernetes 1.35. What differs: 1.36 range-checks ``format: int32`` integers and ``format: float`` numbers
#: (and any integer beyond int64 or with a fraction, "Checked value must be of type ...") and words a number
#: in a field with a numeric format by Go's types.
KUBERNETES_VERSIONS = ("1.35", "1.36")
DEFAULT_KUBERNETES_VERSION = "1.35"
#: How a finding says the API server refuses the CRD itself (nodefleet.apiserver.crd_rules).
CRD_REFUSED = "the API server refuses this CRD"
#: How the API server reads a request body's numbers: ``client`` (kubectl, the Pulumi provider, client-go:
#: a whole float is marshalled as an integer, so ``1.0`` arrives as ``1``), or ``json`` (a JSON body written by
#: hand keeps ``1.0``, a float64 on the server).
REQUEST_BODIES = ("client", "json")


class VersionError(ValueError):
    """A Kubernetes version crd-schema does not follow."""


def kubernetes_version(text: str) -> tuple[int, int]:
    """``"1.36"`` as (1, 36); refused unless it is one of :data:`KUBERNETES_VERSIONS`."""
    if text not in KUBERNETES_VERSIONS:
        raise VersionError(
            f"Kubernetes {text!r} is not a version crd-schema follows; use one of {', '.join(KUBERNETES_VERSIONS)}"
        )
    major, minor = text.split(".")
    return int(major), int(minor)


DEFAULT_KUBERNETES = kubernetes_version(DEFAULT_KUBERNETES_VERSION)


def followed_version(kubernetes: tuple[int, int]) -> str:
    """The version crd-schema follows for an API server of Kubernetes ``kubernetes`` (major, minor): the newest
    of :data:`KUBERNETES_VERSIONS` not newer than it, and the oldest for an older one (what differs between the
    two arrived in 1.36, so older servers validate as 1.35 does on every point crd-schema models)."""
    fits = [v for v in KUBERNETES_VERSIONS if kubernetes_version(v) <= kubernetes]
    return fits[-1] if fits else KUBERNETES_VERSIONS[0]


@dataclass(frozen=True)
class Finding:
    """One thing the API server would reject (``blocking``), or could not be judged here (not blocking)."""

    path: str
    message: str
    blocking: bool
    rule: str | None = None

    def __str__(self) -> str:
        return f"{self.path or '<root>'}: {self.message}"


# ---------------------------------------------------------------------------------------------------------
# helpers
# ---------------------------------------------------------------------------------------------------------


_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def _copy(value: Any, raw: bool = False) -> Any:
    """A copy of JSON-shaped data (a few times faster than ``copy.deepcopy``, which this path is hot for), with
    its numbers as the API server decodes them from the JSON a client sends (:func:`_json_number`), or, with
    ``raw``, from a JSON body that writes each number as it is held (``1.0`` stays a float). Mappings become
    dicts and sequences lists, so what is judged holds nothing else."""
    kind = type(value)
    if kind is dict:
        return {k: _copy(v, raw) for k, v in value.items()}
    if kind is list:
        return [_copy(v, raw) for v in value]
    if kind is str or kind is bool or value is None:
        return value
    if kind is int or kind is float:
        return _json_number(value, raw)
    if isinstance(value, Mapping):
        return {k: _copy(v, raw) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copy(v, raw) for v in value]
    if isinstance(value, int | float) and not isinstance(value, bool):
        return _json_number(value, raw)
    return value


def _json_number(value: int | float, raw: bool = False) -> int | float:
    """A number as it arrives in the API server: a client (kubectl, the Pulumi provider) marshals it to JSON,
    where a whole float is written without a fraction (YAML's ``1.0`` becomes ``1``), and the API server
    decodes an integer that fits in int64 as int64 and any other number as float64 (so ``2**63`` is a float
    and fails an ``integer`` type)."""
    if isinstance(value, float):
        if (
            not raw
            and math.isfinite(value)
            and value.is_integer()
            and abs(value) < 1e21
            and _INT64_MIN <= value <= _INT64_MAX
        ):
            return int(value)
        return value
    if _INT64_MIN <= value <= _INT64_MAX:
        return value
    try:
        return float(value)
    except OverflowError:
        return value


def _json_integer(value: Any) -> bool:
    """Whether kube-openapi accepts a decoded JSON number as an ``integer``: an int64, or a float64 that
    ``swag.IsFloat64AJSONInteger`` takes for one (within 2**53, and within a relative 1e-9 of a whole number)."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return _INT64_MIN <= value <= _INT64_MAX
    if not isinstance(value, float) or not math.isfinite(value) or abs(value) > 2**53 - 1:
        return False
    trunc = int(value)
    # Go converts a float64 to uint64 through int64 on amd64: a negative value wraps around.
    g = float(trunc if trunc >= 0 else trunc + 2**64)
    if value == g or value == float(trunc):
        return True
    diff = abs(value - g)
    tiny = 5e-324
    if value == 0 or g == 0 or diff < tiny:
        return diff < 1e-9 * tiny
    return diff / min(abs(value) + abs(g), 1.7976931348623157e308) < 1e-9


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, Sequence):
        return "array"
    return type(value).__name__


def _go_float(value: float) -> str:
    """A float64 as Go's ``%v`` prints it (``strconv.FormatFloat(v, 'g', -1, 64)``): the shortest digits, in
    exponent form when the exponent is below -4 or at least 6 (``2.5``, ``1e+06``, ``-9.223372036854776e+18``)."""
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    if value == 0:
        return "-0" if math.copysign(1, value) < 0 else "0"
    text = repr(abs(value))
    digits_part, _, exp_part = text.partition("e")
    whole, _, frac = digits_part.partition(".")
    digits = (whole + frac).lstrip("0")
    lead_zeros = len(whole + frac) - len((whole + frac).lstrip("0"))
    dp = len(whole) + int(exp_part or 0) - lead_zeros
    digits = digits.rstrip("0") or "0"
    exp = dp - 1
    sign = "-" if value < 0 else ""
    if exp < -4 or exp >= 6:
        mant = digits[0] + ("." + digits[1:] if len(digits) > 1 else "")
        return f"{sign}{mant}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= len(digits):
        return f"{sign}{digits}{'0' * (dp - len(digits))}"
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


def _shown(value: Any) -> str:
    """A value as the API server prints it in a field error (``field.Error.ErrorBody``): numbers and booleans
    as they are, strings quoted, anything else as compact JSON."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return json.dumps(value, ensure_ascii=False)
    try:
        return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=repr)
    except (TypeError, ValueError):
        return repr(value)


def _child(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


_RATCHETED = (
    "the previous object already holds this value, and the API server accepts an update that leaves an "
    "invalid value unchanged (validation ratcheting, Kubernetes >= 1.30); a new object would be refused"
)


_GO_TYPES = {bool: "bool", int: "int64", float: "float64", str: "string"}


def _conversion_error(value: Any, schema: Mapping[str, Any]) -> str:
    """What the CEL validator's ``UnstructuredToVal`` says of a value its schema's type does not allow."""
    if value is None:
        return "invalid data, got null for schema with nullable=false"
    if schema.get("x-kubernetes-int-or-string"):
        return "invalid data, expected XIntOrString value to be either a string or integer"
    kind = schema.get("type")
    if kind == "object":
        return "invalid data, expected a map for the provided schema with type=object"
    if kind == "array":
        return "invalid data, expected an array for the provided schema with type=array"
    go_type = (
        "map[string]interface {}"
        if isinstance(value, dict)
        else "[]interface {}"
        if isinstance(value, list | tuple)
        else _GO_TYPES.get(type(value), type(value).__name__)
    )
    expected = {"string": "string", "number": "float", "integer": "int", "boolean": "bool"}.get(
        str(kind), kind
    )
    return f"invalid data, expected {expected}, got {go_type}"


#: The string formats the API server's CEL validator converts (``UnstructuredToVal``): a rule sees a
#: ``date-time`` or ``date`` as a timestamp, a ``duration`` as a duration, a ``byte`` string as its bytes.
_CEL_FORMATS = frozenset({"date-time", "date", "duration", "byte"})


def _format_view(value: str, fmt: str) -> Any:
    """The CEL value of a string of a converted format, or the API server's conversion error."""
    import base64
    import binascii

    if fmt == "duration":
        seconds = crd_formats.duration_seconds(value)
        if seconds is not None:
            return crd_cel.duration(round(seconds * 1e9))
        return crd_cel.invalid_data(f"Invalid duration {value}: unable to parse {value} as duration", value)
    if fmt in ("date", "date-time"):
        parse, layout = (
            (crd_formats.date_value, crd_formats.DATE_LAYOUT)
            if fmt == "date"
            else (crd_formats.date_time_value, crd_formats.DATE_TIME_LAYOUT)
        )
        instant = parse(value)
        if instant is not None:
            return crd_cel.timestamp_at(*instant)
        why = crd_formats.go_time_parse_error(value, layout)
        return crd_cel.invalid_data(f"Invalid {fmt} formatted string {value}: {why}", value)
    try:
        return base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return crd_cel.invalid_data(f"Invalid byte formatted string {value}", value)


def _type_message(
    value: Any, schema: Mapping[str, Any], path: str, kubernetes: tuple[int, int] = (1, 35)
) -> str:
    """The API server's words (kube-openapi ``InvalidType``), with the value's JSON type as its value. Since
    1.36 a number in a field with a numeric ``format`` is named by Go's type against that format
    (``must be of type int64: "float64"``)."""
    fmt = _numeric_format(schema)
    if kubernetes >= (1, 36) and fmt and isinstance(value, int | float) and not isinstance(value, bool):
        actual = "int64" if isinstance(value, int) else "float64"
        return f'Invalid value: "{actual}": {path} in body must be of type {fmt}: "{actual}"'
    expected = "integer,string" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
    actual = _json_type(value)
    return f'Invalid value: "{actual}": {path} in body must be of type {expected}: "{actual}"'


def _numeric_format(schema: Mapping[str, Any]) -> str:
    """The numeric ``format`` the API server keeps (``int32``/``int64`` of an integer, ``float``/``double`` of
    a number; it drops any other), or ``""``."""
    fmt = schema.get("format")
    kind = schema.get("type")
    if (kind == "integer" and fmt in ("int32", "int64")) or (kind == "number" and fmt in ("float", "double")):
        return str(fmt)
    return ""


_FLOAT32_MAX = 3.4028234663852886e38
#: Beyond this a float64 rounds to infinity as a float32 (``strconv.ParseFloat(s, 32)``'s ErrRange).
_FLOAT32_LIMIT = _FLOAT32_MAX + 2.0 ** (127 - 24)


def _checked_range_error(value: int | float, schema: Mapping[str, Any], path: str) -> str | None:
    """kube-openapi's range check of a number against its schema's type and format (1.36:
    ``IsValueValidAgainstRange``, prefix "Checked"): an integer field takes only whole numbers in int64 (int32
    with ``format: int32``), a ``format: float`` number only what a float32 holds."""
    # An int-or-string is an integer to it (its anyOf's integer branch).
    kind = "integer" if schema.get("x-kubernetes-int-or-string") else schema.get("type")
    fmt = _numeric_format(schema)
    if kind == "integer":
        low, high = (-(2**31), 2**31 - 1) if fmt == "int32" else (_INT64_MIN, _INT64_MAX)
        # The value as strconv.FormatFloat(v, 'f', -1, 64) writes it, parsed as an integer.
        whole = isinstance(value, int) or (
            math.isfinite(value) and value.is_integer() and "e" not in repr(value)
        )
        ok = whole and low <= int(value) <= high
    elif fmt == "float":
        ok = not math.isfinite(value) or abs(value) < _FLOAT32_LIMIT
    else:
        return None
    if ok:
        return None
    words = f"with format {fmt}" if fmt else "(default format)"
    return f'Invalid value: "": Checked value must be of type {kind} {words} in {path}'


def _map_key(item: Any, keys: Sequence[str], items: Mapping[str, Any]) -> str | None:
    """The key of a ``list-type: map`` item (a missing key takes its default), or None when it has none."""
    if not isinstance(item, dict):
        return None
    props: Mapping[str, Any] = items.get("properties") or {}
    found = {}
    for k in keys:
        if k in item:
            found[k] = item[k]
        elif "default" in (props.get(k) or {}):
            found[k] = props[k]["default"]
        else:
            return None
    return json.dumps(found, sort_keys=True, default=repr)


def _equal(a: Any, b: Any) -> bool:
    """JSON deep equality (reflect.DeepEqual on decoded JSON): a boolean never equals a number."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_equal(v, b[k]) for k, v in a.items())
    if isinstance(a, list | tuple):
        return (
            isinstance(b, list | tuple)
            and len(a) == len(b)
            and all(_equal(x, y) for x, y in zip(a, b, strict=True))
        )
    if isinstance(b, Mapping | list | tuple):
        return False
    return bool(a == b)


def _same(a: Any, b: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a value equals its previous one as the API server's ratcheting compares them (common.
    CorrelatedObject.CachedDeepEqual): JSON deep equality, except that ``list-type: map`` items are matched
    by key (order does not count, and an item without its keys makes the list unequal), and that an object
    holding a field its schema does not describe (kept by ``x-kubernetes-preserve-unknown-fields``, or any
    field of ``metadata``) never equals its previous value: the field cannot be correlated."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        if not isinstance(b, dict) or a.keys() != b.keys():
            return False
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for k, v in a.items():
            if k in props:
                sub: Mapping[str, Any] = props[k]
            elif isinstance(addl, dict):
                sub = addl
            else:
                return False
            if not _same(v, b[k], sub):
                return False
        return True
    if isinstance(a, list | tuple):
        if not isinstance(b, list | tuple) or len(a) != len(b):
            return False
        items: Mapping[str, Any] = schema.get("items") or {}
        keys: Sequence[str] = schema.get("x-kubernetes-list-map-keys") or ()
        if schema.get("x-kubernetes-list-type") == "map" and keys:
            old_by_key: dict[str, Any] = {}
            for o in b:
                key = _map_key(o, keys, items)
                if key is not None:
                    old_by_key.setdefault(key, o)
            for x in a:
                key = _map_key(x, keys, items)
                if key is None or key not in old_by_key or not _same(x, old_by_key[key], items):
                    return False
            return True
        return _equal(a, b)  # items of other lists do not correlate: the list compares as a whole
    if isinstance(b, Mapping | list | tuple):
        return False
    return bool(a == b)


def _type_ok(value: Any, schema: Mapping[str, Any]) -> bool:
    if schema.get("x-kubernetes-int-or-string"):
        return isinstance(value, str) or _json_integer(value)
    kind = schema.get("type")
    if kind is None:
        return True
    if kind == "object":
        return isinstance(value, dict)
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "string":
        return isinstance(value, str)
    if kind == "integer":
        return _json_integer(value)
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    if kind == "boolean":
        return isinstance(value, bool)
    return True


@cache
def _regex(pattern: str) -> Any:
    return crd_formats.re2_compile(pattern)


@lru_cache(maxsize=1 << 16)
def _matches(pattern: str, value: str) -> bool:
    """Whether RE2 finds ``pattern`` in ``value``; the answers are kept, since the same few values of a fleet
    meet the same patterns again and again."""
    return _regex(pattern).search(value) is not None


def _format_ok(fmt: str, value: str) -> bool | None:
    """Whether ``value`` is valid in string format ``fmt``; None where the API server does not check ``fmt``."""
    return crd_strfmt.format_ok(fmt, value)


def _map_item(item: Any) -> bool:
    """Whether ``item`` may sit in a ``list-type: map`` list (structural listtype: an object or null)."""
    return item is None or item is UNKNOWN or isinstance(item, dict)


def _list_key(item: Mapping[str, Any], keys: Sequence[str]) -> str:
    """The key of a ``list-type: map`` item from the key fields it has, as the API server shows it."""
    return json.dumps(
        {k: item[k] for k in keys if k in item}, sort_keys=True, separators=(",", ":"), default=repr
    )


# ---------------------------------------------------------------------------------------------------------
# defaulting and null pruning (schema/defaulting: PruneNonNullableNullsWithoutDefaults, Default)
# ---------------------------------------------------------------------------------------------------------


def _default(value: Any, schema: Mapping[str, Any]) -> None:
    """What decoding does to a request body before validation: null pruning, then defaulting, in one pass
    (a default never holds a null to prune: the API server refuses such a CRD)."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        if not isinstance(addl, dict):
            addl = None
        for key in [k for k, v in value.items() if v is None]:
            sub = props.get(key) if key in props else addl
            if sub is not None and not sub.get("nullable") and "default" not in sub:
                del value[key]  # PruneNonNullableNullsWithoutDefaults
        for key, sub in props.items():
            if "default" in sub and (key not in value or (value[key] is None and not sub.get("nullable"))):
                value[key] = _copy(sub["default"])
        for key, item in value.items():
            sub = props.get(key) if key in props else addl
            if sub is not None:
                if item is None:
                    if key not in props and not sub.get("nullable") and "default" in sub:
                        value[key] = _copy(sub["default"])
                        _default(value[key], sub)
                elif type(item) is dict or type(item) is list:
                    _default(item, sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                if item is None and not items.get("nullable") and "default" in items:
                    # A null item takes the items' default (schema/defaulting Default), like a map entry.
                    value[i] = item = _copy(items["default"])
                if type(item) is dict or type(item) is list:
                    _default(item, items)


def defaulted(obj: Mapping[str, Any], crd: CrdVersion) -> dict[str, Any]:
    """``obj`` as the API server stores it on a create or an apply: numbers as a client's JSON carries them,
    fields the structural schema does not know pruned (``metadata`` aside), non-nullable nulls pruned, the
    CRD's defaults filled in (``status`` dropped: a CRD with a status subresource ignores it on the main
    resource). What ``import`` compares a live object and its render by."""
    body: dict[str, Any] = _copy(obj)
    if crd.status_subresource:
        body.pop("status", None)
    meta = body.pop("metadata", None)
    _prune_unknown(body, crd.schema)
    if meta is not None:
        body["metadata"] = meta
    _default(body, crd.schema)
    return body


def without_bare_defaults(value: Any, schema: Mapping[str, Any]) -> Any:
    """``value`` (as :func:`defaulted` stores it) without the objects that hold nothing but what the API server
    fills into an empty one: ``autoscaling: {scaling: ScaleUpAndScaleDown}`` stored for a client's
    ``autoscaling: {}``. Such an object and its absence mean the same to the controller reading it (the API's
    defaults are its zero behaviour), so two objects that differ only so are one."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        out: dict[str, Any] = {}
        for key, item in value.items():
            sub = props.get(key)
            if sub is not None and isinstance(item, dict) and item:
                empty: dict[str, Any] = {}
                _default(empty, sub)
                if empty == item:
                    continue
            out[key] = without_bare_defaults(item, sub) if sub is not None else item
        return out
    if isinstance(value, list):
        items = schema.get("items")
        return [without_bare_defaults(v, items) if isinstance(items, Mapping) else v for v in value]
    return value


def _prune_unknown(value: Any, schema: Mapping[str, Any]) -> None:
    """Drop what the API server prunes from a structural schema's object: keys no ``properties`` name, below
    no ``additionalProperties`` and no ``x-kubernetes-preserve-unknown-fields``."""
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key in list(value):
            sub = props.get(key)
            if sub is None and isinstance(addl, Mapping):
                sub = addl
            if sub is None:
                if addl is not True and key not in ("apiVersion", "kind"):
                    del value[key]
                continue
            _prune_unknown(value[key], sub)
    elif isinstance(value, list):
        items = schema.get("items")
        if isinstance(items, Mapping):
            for item in value:
                _prune_unknown(item, items)


# ---------------------------------------------------------------------------------------------------------
# the walk
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Site:
    path: str
    rules: Sequence[Mapping[str, Any]]
    schema: Mapping[str, Any]
    view: Any
    unknown: bool
    old: Any  # raw previous value, or _ABSENT when not correlatable / not known
    #: The node's schema path (``.spec.items[]``, ``{}`` for map values), as crd_coverage names rule sites.
    spath: str = ""
    #: The nearest node correlated with the previous object is unchanged: its errors are ratcheted.
    ratchet: bool = False
    #: The value itself (a scalar's message shows it).
    value: Any = None
    #: The view holds, below its top, a value the API server cannot convert to its schema's type.
    holds_invalid: bool = False


class _Walk:
    def __init__(self, patch: bool, kubernetes: tuple[int, int] = DEFAULT_KUBERNETES) -> None:
        self.patch = patch
        #: The API server's Kubernetes version (major, minor), where its validation differs between versions.
        self.kubernetes = kubernetes
        self.findings: list[Finding] = []
        self.sites: list[_Site] = []
        self.type_errors = False
        #: Paths of values unknown during preview, and the rules (path, rule) they kept from being evaluated.
        self.unknown_paths: list[str] = []
        #: How many values the API server's CEL validator could not convert were met (kept by ratcheting).
        self.invalid = 0
        self.unknown_rules: list[tuple[str, str]] = []
        #: Whether the node being checked is ratcheted: on an update, the nearest node that correlates with
        #: the previous object (object fields, map values, items of ``list-type: map`` by key) is unchanged.
        self.anchor = False
        #: Whether the previous object is known (an update): errors of unchanged values are then ratcheted.
        self.ratcheting = False
        #: Duplicates in set and map lists are checked unless the previous object already had some (the API
        #: server ratchets that check as a whole).
        self.check_lists = True
        #: Whether each rule is first compiled as the API server compiles it (where it serves a CRD whose rules
        #: it would not have accepted: a test's ``installed`` CRD, a CRD's own defaults).
        self.compile_rules = False

    def fail(self, path: str, message: str, blocks: bool = False) -> None:
        """Report an error; ``blocks``: one after which the API server does not run CEL rules (a Required,
        enum, too-long, too-many or type error: customresource strategy ``hasBlockingErr``)."""
        if self.anchor:
            self.findings.append(Finding(path, f"{message}\n(ratcheted: {_RATCHETED})", False))
            return
        if blocks:
            self.type_errors = True
        self.findings.append(Finding(path, message, True))

    def walk(
        self,
        value: Any,
        schema: Mapping[str, Any],
        path: str,
        old: Any,
        spath: str = "",
        cpath: str | None = None,
    ) -> tuple[Any, bool]:
        """Validate ``value`` against ``schema``; return its CEL view and whether it holds unknowns.

        ``path`` names the value as the OpenAPI validator does (a map value: ``tags.Name``), ``cpath`` as the
        CEL validator does (``tags[Name]``); ``spath`` is the schema path.
        """
        if value is UNKNOWN:
            self.unknown_paths.append(path)
            return UNKNOWN, True
        outer = self.anchor
        if self.ratcheting and old is not _ABSENT:
            self.anchor = _same(value, old, schema)
        try:
            return self._walk(value, schema, path, old, spath, path if cpath is None else cpath)
        finally:
            self.anchor = outer

    def _walk(
        self, value: Any, schema: Mapping[str, Any], path: str, old: Any, spath: str, cpath: str
    ) -> tuple[Any, bool]:
        if value is None:
            if schema.get("nullable"):
                return None, False
            # Nulls in maps were removed before (non-nullable, without default); one left is a list item.
            self.fail(path, _type_message(None, schema, path), blocks=True)
            if "enum" in schema and None not in schema["enum"]:
                self._enum(None, schema, path)
            return self._invalid(value, schema, old, spath, cpath), False
        if not _type_ok(value, schema):
            self.fail(path, _type_message(value, schema, path, self.kubernetes), blocks=True)
            if "enum" in schema and value not in schema["enum"]:
                self._enum(value, schema, path)  # kube-openapi checks the enum regardless of the type
            if isinstance(value, int | float) and not isinstance(value, bool):
                # ...and picks its value validators by the value's kind: 1.5 for an integer meets the bounds.
                self._number(value, schema, path)
            return self._invalid(value, schema, old, spath, cpath), False
        if (
            isinstance(value, float)
            and value.is_integer()
            and (schema.get("type") == "integer" or schema.get("x-kubernetes-int-or-string"))
        ):
            value = int(
                value
            )  # the engine carries every number as a float; the API server sees JSON 1, not 1.0
        self._values(value, schema, path)
        view: Any
        unknown = False
        invalid_before = self.invalid
        if isinstance(value, dict):
            view, unknown = self._object(value, schema, path, old, spath, cpath)
        elif isinstance(value, list | tuple):
            view, unknown = self._array(value, schema, path, old, spath, cpath)
        elif schema.get("type") == "number" and isinstance(value, int):
            view = float(value)
        elif isinstance(value, str) and schema.get("format") in _CEL_FORMATS:
            view = _format_view(value, str(schema["format"]))
            if crd_cel.holds_invalid(view):
                self.invalid += 1
        else:
            view = value
        rules = schema.get("x-kubernetes-validations")
        if rules:
            self.sites.append(
                _Site(
                    cpath,
                    rules,
                    schema,
                    view,
                    unknown,
                    old,
                    spath,
                    self.anchor,
                    value,
                    self.invalid > invalid_before,
                )
            )
        return view, unknown

    def _invalid(self, value: Any, schema: Mapping[str, Any], old: Any, spath: str, cpath: str) -> Any:
        """The CEL view of a value of the wrong type: the CEL validator cannot convert it to the schema's type,
        so a rule that reads it, here or at any ancestor, fails at run time (rules run when the type error was
        ratcheted), and runtime errors are never ratcheted."""
        self.invalid += 1
        invalid = crd_cel.invalid_data(_conversion_error(value, schema), value)
        rules = schema.get("x-kubernetes-validations")
        if rules:
            self.sites.append(_Site(cpath, rules, schema, invalid, False, old, spath, self.anchor, value))
        return invalid

    # --- value validations ---------------------------------------------------------------------------------

    def _values(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        if "enum" in schema and value not in schema["enum"]:
            self._enum(value, schema, path)
        if isinstance(value, str):
            self._string(value, schema, path)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            self._number(value, schema, path)
        # Structural schemas keep only value validations under the combinators (and the int-or-string types).
        for sub in schema.get("allOf") or ():
            self._values(value, sub, path)
        if "anyOf" in schema and not any(self._branch_ok(value, sub) for sub in schema["anyOf"]):
            self.fail(path, f"Invalid value: {_shown(value)}: must validate at least one schema (anyOf)")
        if "oneOf" in schema and sum(self._branch_ok(value, sub) for sub in schema["oneOf"]) != 1:
            self.fail(path, f"Invalid value: {_shown(value)}: must validate one and only one schema (oneOf)")
        if "not" in schema and self._branch_ok(value, schema["not"]):
            self.fail(path, f"Invalid value: {_shown(value)}: must not validate the schema (not)")

    def _enum(self, value: Any, schema: Mapping[str, Any], path: str) -> None:
        allowed = ", ".join(json.dumps(v if isinstance(v, str) else _shown(v)) for v in schema["enum"])
        self.fail(path, f"Unsupported value: {_shown(value)}: supported values: {allowed}", blocks=True)

    def _branch_ok(self, value: Any, sub: Mapping[str, Any]) -> bool:
        if not _type_ok(value, sub):
            return False
        probe = _Walk(self.patch, self.kubernetes)
        probe._values(value, sub, "")
        return not probe.findings

    def _string(self, value: str, schema: Mapping[str, Any], path: str) -> None:
        # kube-openapi's string validator stops at its first error: too long, else too short, else the pattern.
        if "maxLength" in schema and len(value) > int(schema["maxLength"]):
            # The API server's words ("bytes"), though it counts characters: the note on the next line says so.
            self.fail(
                path,
                f"Too long: may not be more than {schema['maxLength']} bytes\n(the API server counts characters, "
                f"not bytes: this value has {len(value)})",
                blocks=True,
            )
        elif "minLength" in schema and len(value) < int(schema["minLength"]):
            self.fail(
                path,
                f"Invalid value: {_shown(value)}: {path} in body should be at least {schema['minLength']} chars long",
            )
        elif (pattern := schema.get("pattern")) is not None and not _matches(pattern, value):
            self.fail(path, f"Invalid value: {_shown(value)}: {path} in body should match '{pattern}'")
        fmt = schema.get("format")
        if fmt and _format_ok(str(fmt), value) is False:
            # kube-openapi reports a bad format as a type error, which keeps the CEL rules from running.
            self.fail(
                path,
                f"Invalid value: {_shown(value)}: {path} in body must be of type {fmt}: {_shown(value)}",
                blocks=True,
            )

    def _number(self, value: float, schema: Mapping[str, Any], path: str) -> None:
        if "minimum" in schema:
            low = schema["minimum"]
            if value < low or (schema.get("exclusiveMinimum") and value == low):
                op = "greater than" if schema.get("exclusiveMinimum") else "greater than or equal to"
                self.fail(path, f"Invalid value: {_shown(value)}: {path} in body should be {op} {low}")
        if "maximum" in schema:
            high = schema["maximum"]
            if value > high or (schema.get("exclusiveMaximum") and value == high):
                op = "less than" if schema.get("exclusiveMaximum") else "less than or equal to"
                self.fail(path, f"Invalid value: {_shown(value)}: {path} in body should be {op} {high}")
        step = schema.get("multipleOf")
        if step is not None:
            self._multiple_of(value, step, path)
        if self.kubernetes >= (1, 36):
            checked = _checked_range_error(value, schema, path)
            if checked is not None:
                self.fail("", checked)

    def _multiple_of(self, value: float, step: float, path: str) -> None:
        """kube-openapi's ``MultipleOfNativeType``: a JSON integer against the factor cut to an integer (a
        fraction such as 0.1 becomes 0, which is refused), a float within a relative 1e-9 of a multiple."""
        if isinstance(value, int):
            factor: float = int(step)
            if factor <= 0:
                self.fail(
                    path,
                    f"Invalid value: {factor}: factor MultipleOf declared for {path} must be positive: {factor}",
                )
                return
            multiple = abs(value) // factor * factor == abs(value)
        else:
            factor = step
            if factor <= 0:
                self.fail(
                    path,
                    f"Invalid value: {_shown(factor)}: factor MultipleOf declared for {path} must be positive: "
                    f"{_shown(factor)}",
                )
                return
            multiple = _json_integer(1 / factor * value if factor < 1 else value / factor)
        if not multiple:
            self.fail(
                path,
                f"Invalid value: {_shown(value)}: {path} in body should be a multiple of {_shown(factor)}",
            )

    # --- objects -------------------------------------------------------------------------------------------

    def _object(
        self, value: Mapping[str, Any], schema: Mapping[str, Any], path: str, old: Any, spath: str, cpath: str
    ) -> tuple[dict[str, Any], bool]:
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        preserve = bool(schema.get("x-kubernetes-preserve-unknown-fields"))
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        old_map = old if isinstance(old, dict) else None
        if not self.patch:
            for key in schema.get("required") or ():
                if key not in value:
                    self.fail(_child(path, key), "Required value", blocks=True)
        count = len(value)
        if "minProperties" in schema and count < int(schema["minProperties"]):
            self.fail(
                path,
                f"Invalid value: {count}: {path} in body should have at least {schema['minProperties']} properties",
            )
        if "maxProperties" in schema and count > int(schema["maxProperties"]):
            self.fail(
                path, f"Too many: {count}: must have at most {schema['maxProperties']} items", blocks=True
            )
        view: dict[str, Any] = {}
        unknown = False
        if embedded:
            self._embedded(value, path)
        for key, item in value.items():
            old_item = old_map.get(key, _ABSENT) if old_map is not None else _ABSENT
            if embedded and key in ("apiVersion", "kind", "metadata"):
                # An embedded resource's type and ObjectMeta, as CEL sees them whatever the schema declares
                # (WithTypeAndObjectMeta): of metadata, only name and generateName.
                if key == "metadata" and isinstance(item, dict):
                    item = {k: item[k] for k in ("name", "generateName") if isinstance(item.get(k), str)}
                view[key], child_unknown = item, _holds_unknown(item)
            elif key in props:
                child_view, child_unknown = self.walk(
                    item, props[key], _child(path, key), old_item, f"{spath}.{key}", _child(cpath, key)
                )
                name = escape_property(key)
                if name is not None and item is not None:
                    # (A null field of an object with properties is absent to CEL: has() is false.)
                    view[name] = child_view
            elif isinstance(addl, dict):
                child_view, child_unknown = self.walk(
                    item, addl, _child(path, key), old_item, f"{spath}{{}}", f"{cpath}[{key}]"
                )
                view[key] = child_view
            elif addl is True or preserve:
                view[key], child_unknown = item, _holds_unknown(item)
            else:
                self.fail(
                    _child(path, key),
                    f'unknown field "{key}"\n(the CRD schema does not declare it: the API server drops it '
                    "(pruning) or, under fieldValidation=Strict, kubectl's default, rejects the request)",
                )
                continue
            unknown = unknown or child_unknown
        return view, unknown

    def _embedded(self, value: Mapping[str, Any], path: str) -> None:
        """An embedded resource's type meta and ObjectMeta (apiextensions ``objectmeta.validateEmbeddedResource``)."""
        for key in ("apiVersion", "kind"):
            if key not in value:
                self.fail(_child(path, key), "Required value", blocks=True)
        for key, item in value.items():
            where = _child(path, key)
            if key in ("apiVersion", "kind") and item is not UNKNOWN:
                if not isinstance(item, str):
                    self.fail(where, f"Invalid value: {_shown(item)}: must be a string")
                elif not item:
                    self.fail(where, 'Invalid value: "": must not be empty')
                elif key == "apiVersion" and item.count("/") > 1:
                    self.fail(where, f"Invalid value: {_shown(item)}: unexpected GroupVersion string: {item}")
                elif key == "kind" and (errs := crd_formats.dns1035_label_errors(item.lower())):
                    self.fail(
                        where,
                        f"Invalid value: {_shown(item)}: may have mixed case, but should otherwise match: "
                        + ",".join(errs),
                    )
            elif key == "metadata" and isinstance(item, dict):
                _object_meta(item, where, self)

    # --- arrays --------------------------------------------------------------------------------------------

    def _array(
        self, value: Sequence[Any], schema: Mapping[str, Any], path: str, old: Any, spath: str, cpath: str
    ) -> tuple[list[Any], bool]:
        n = len(value)
        if "minItems" in schema and n < int(schema["minItems"]):
            self.fail(
                path, f"Invalid value: {n}: {path} in body should have at least {schema['minItems']} items"
            )
        if "maxItems" in schema and n > int(schema["maxItems"]):
            self.fail(path, f"Too many: {n}: must have at most {schema['maxItems']} items", blocks=True)
        list_type = schema.get("x-kubernetes-list-type")
        keys: Sequence[str] = schema.get("x-kubernetes-list-map-keys") or ()
        items_schema: Mapping[str, Any] = schema.get("items") or {}
        old_by_key: dict[str, Any] = {}
        if list_type == "map" and isinstance(old, Sequence) and not isinstance(old, str):
            for o in old:
                if _map_key(o, keys, items_schema) is not None:
                    old_by_key.setdefault(_list_key(o, keys), o)
        seen: set[str] = set()
        reported: set[str] = set()
        view: list[Any] = []
        unknown = False
        # listtype checks a map list's keys only when every item is an object or null.
        map_keys = list_type == "map" and all(_map_item(item) for item in value)
        if list_type == "map" and not map_keys and self.check_lists:
            # ...and otherwise says so of its first other item (its type error is reported besides).
            first = next(i for i, item in enumerate(value) if not _map_item(item))
            self.fail(
                f"{path}[{first}]",
                f"Invalid value: {_shown(value[first])}: must be an object for an array of list-type map",
            )
        for i, item in enumerate(value):
            item_path = f"{path}[{i}]"
            old_item: Any = _ABSENT
            if item is None and map_keys:
                # A null item has no key: a duplicate of another null or of an item without its keys.
                if "{}" in seen and "{}" not in reported and self.check_lists:
                    reported.add("{}")
                    self.fail(item_path, "Duplicate value: {}")
                seen.add("{}")
            elif item is not UNKNOWN and list_type == "map" and isinstance(item, dict):
                missing = [
                    k
                    for k in keys
                    if k not in item and "default" not in (items_schema.get("properties") or {}).get(k, {})
                ]
                # A missing key is the item schema's Required error; duplicates compare the keys present. A
                # server-side-apply patch skips Required, but the merge itself refuses an item without its keys.
                if self.patch:
                    for k in missing:
                        self.fail(
                            _child(item_path, k),
                            "Required value: a key of this map list (x-kubernetes-list-map-keys); server-side "
                            "apply refuses an item without it",
                        )
                if not any(item.get(k) is UNKNOWN for k in keys):
                    key = _list_key(item, keys)
                    if key in seen and key not in reported and self.check_lists and map_keys:
                        reported.add(key)  # once per value, as the API server reports it
                        self.fail(item_path, f"Duplicate value: {key}")
                    seen.add(key)
                    if not missing:
                        old_item = old_by_key.get(key, _ABSENT)
            elif item is not UNKNOWN and list_type == "set" and not _holds_unknown(item):
                key = json.dumps(item, sort_keys=True, default=repr)
                if key in seen and key not in reported and self.check_lists:
                    reported.add(key)
                    self.fail(item_path, f"Duplicate value: {_shown(item)}")
                seen.add(key)
            item_view, item_unknown = self.walk(
                item, items_schema, item_path, old_item, f"{spath}[]", f"{cpath}[{i}]"
            )
            view.append(crd_cel.in_set(item_view) if list_type == "set" else item_view)
            unknown = unknown or item_unknown
        return view, unknown


def unknown_fields(value: Any, schema: Mapping[str, Any] | None, path: str, root: bool = False) -> list[str]:
    """The fields pruning removes (schema/pruning ``PruneWithOptions``), as the API server names them."""
    if schema is not None and schema.get("x-kubernetes-preserve-unknown-fields"):
        return _unknown_below_preserved(value, schema, path)
    embedded = root or bool(schema and schema.get("x-kubernetes-embedded-resource"))
    found: list[str] = []
    if isinstance(value, dict):
        if schema is None:
            return sorted(_child(path, str(k)) for k in value)
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, item in value.items():
            if embedded and key in ("apiVersion", "kind", "metadata"):
                if key == "metadata" and not root and isinstance(item, dict):
                    found += [f"{_child(path, 'metadata')}.{k}" for k in item if k not in _OBJECT_META]
                continue
            if key in props:
                found += unknown_fields(item, props[key], _child(path, key))
            elif addl is not None and addl is not False:
                found += unknown_fields(item, addl if isinstance(addl, dict) else {}, _child(path, key))
            else:
                found.append(_child(path, key))
    elif isinstance(value, list | tuple):
        items = schema.get("items") if schema is not None else None
        for i, item in enumerate(value):
            found += unknown_fields(item, items if isinstance(items, dict) else None, f"{path}[{i}]")
    return sorted(found) if root else found


def _unknown_below_preserved(value: Any, schema: Mapping[str, Any], path: str) -> list[str]:
    found: list[str] = []
    embedded = bool(schema.get("x-kubernetes-embedded-resource"))
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, item in value.items():
            if embedded and key in ("apiVersion", "kind", "metadata"):
                if key == "metadata" and isinstance(item, dict):
                    found += [f"{_child(path, 'metadata')}.{k}" for k in item if k not in _OBJECT_META]
                continue
            if key in props:
                found += unknown_fields(item, props[key], _child(path, key))
            elif isinstance(addl, dict):
                found += unknown_fields(item, addl, _child(path, key))
    elif isinstance(value, list | tuple):
        items = schema.get("items")
        if isinstance(items, dict):
            for i, item in enumerate(value):
                found += _unknown_below_preserved(item, items, f"{path}[{i}]")
    return found


def _go_v(value: Any) -> str:
    """A decoded JSON value as Go's ``%v`` prints it."""
    if value is None:
        return "<nil>"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return _go_float(value)
    if isinstance(value, dict):
        return "map[" + " ".join(f"{k}:{_go_v(value[k])}" for k in sorted(value)) + "]"
    if isinstance(value, list | tuple):
        return "[" + " ".join(_go_v(v) for v in value) + "]"
    return str(value)


def _go_type(value: Any) -> str:
    """A decoded JSON value's Go type as ``%T`` prints it."""
    if isinstance(value, dict):
        return "map[string]interface {}"
    if isinstance(value, list | tuple):
        return "[]interface {}"
    return _GO_TYPES.get(type(value), type(value).__name__)


def _scale_replicas(body: Mapping[str, Any], replicas_path: str, walk: _Walk) -> None:
    """The scale subresource's check of ``specReplicasPath`` (customresource ``ValidateScaleSpec``), with the
    errors of ``unstructured.NestedInt64`` in its words."""
    value: Any = body
    parts = replicas_path.lstrip(".").split(".")
    for i, part in enumerate(parts):
        if value is UNKNOWN:
            return
        if not isinstance(value, dict):
            where = "." + ".".join(parts[: i + 1])
            walk.findings.append(
                Finding(
                    replicas_path,
                    f"Invalid value: 0: {where} accessor error: {_go_v(value)} is of the type {_go_type(value)}, "
                    "expected map[string]interface{}",
                    True,
                )
            )
            return
        if part not in value:
            return
        value = value[part]
    if value is UNKNOWN:
        return
    if isinstance(value, bool) or not isinstance(value, int):  # decoded from JSON: an int64, or not one
        walk.findings.append(
            Finding(
                replicas_path,
                f"Invalid value: 0: .{'.'.join(parts)} accessor error: {_go_v(value)} is of the type "
                f"{_go_type(value)}, expected int64",
                True,
            )
        )
    elif value < 0:
        walk.findings.append(
            Finding(replicas_path, f"Invalid value: {value}: should be a non-negative integer", True)
        )
    elif value > 2**31 - 1:
        walk.findings.append(
            Finding(
                replicas_path, f"Invalid value: {value}: should be less than or equal to 2147483647", True
            )
        )


def _has_duplicates(value: Any, schema: Mapping[str, Any]) -> bool:
    """Whether a set or map list anywhere in ``value`` holds a duplicate (structural ``listtype``)."""
    if isinstance(value, dict):
        props: Mapping[str, Any] = schema.get("properties") or {}
        addl = schema.get("additionalProperties")
        for key, item in value.items():
            sub = props.get(key) if key in props else (addl if isinstance(addl, dict) else None)
            if sub is not None and _has_duplicates(item, sub):
                return True
    elif isinstance(value, list):
        items: Mapping[str, Any] = schema.get("items") or {}
        list_type = schema.get("x-kubernetes-list-type")
        if list_type == "map" and not all(_map_item(item) for item in value):
            return True  # listtype's "must be an object" error
        if list_type == "set" or list_type == "map":
            keys: Sequence[str] = schema.get("x-kubernetes-list-map-keys") or ()
            seen = set()
            for item in value:
                key = (
                    _list_key(item if isinstance(item, dict) else {}, keys)
                    if list_type == "map"
                    else json.dumps(item, sort_keys=True, default=repr)
                )
                if key in seen:
                    return True
                seen.add(key)
        return any(_has_duplicates(item, items) for item in value)
    return False


def _holds_unknown(value: Any) -> bool:
    if value is UNKNOWN:
        return True
    if isinstance(value, dict):
        return any(_holds_unknown(v) for v in value.values())
    if isinstance(value, list | tuple):
        return any(_holds_unknown(v) for v in value)
    return False


def _view(value: Any, schema: Mapping[str, Any]) -> Any:
    """The CEL view of a previous value (``oldSelf``), converted as :meth:`_Walk.walk` converts ``self``."""
    walk = _Walk(patch=True)
    view, _ = walk.walk(value, schema, "", _ABSENT)
    return view


# ---------------------------------------------------------------------------------------------------------
# metadata (apimachinery ValidateObjectMeta, the parts a manifest can get wrong)
# ---------------------------------------------------------------------------------------------------------


#: ObjectMeta's JSON fields, and the Go type of those a manifest sets.
_OBJECT_META = {
    "name": "string",
    "generateName": "string",
    "namespace": "string",
    "selfLink": "string",
    "uid": "types.UID",
    "resourceVersion": "string",
    "generation": "int64",
    "creationTimestamp": "",
    "deletionTimestamp": "",
    "deletionGracePeriodSeconds": "int64",
    "labels": "map[string]string",
    "annotations": "map[string]string",
    "ownerReferences": "",
    "finalizers": "[]string",
    "managedFields": "",
}


def _go_json_kind(value: Any) -> str:
    """How encoding/json names a JSON value's kind in an UnmarshalTypeError."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "array" if isinstance(value, list | tuple) else "object"


def _metadata_decode_error(meta: Any) -> str | None:
    """Why ``metadata`` cannot be read as ObjectMeta (the first field in key order, as encoding/json reports
    it), or None."""
    if meta is None or meta is UNKNOWN:
        return None
    if not isinstance(meta, dict):
        return f"json: cannot unmarshal {_go_json_kind(meta)} into Go value of type v1.ObjectMeta"
    for key in sorted(meta):
        value, go_type = meta[key], _OBJECT_META.get(key, "")
        if value is None or value is UNKNOWN or not go_type:
            continue
        where = f"Go struct field ObjectMeta.{key} of type"
        if go_type in ("string", "types.UID") and not isinstance(value, str):
            return f"json: cannot unmarshal {_go_json_kind(value)} into {where} {go_type}"
        if go_type == "int64" and (isinstance(value, bool) or not isinstance(value, int | float)):
            return f"json: cannot unmarshal {_go_json_kind(value)} into {where} int64"
        if go_type == "int64" and (not float(value).is_integer() or not -(2**63) <= value < 2**63):
            return f"json: cannot unmarshal number {_go_float(float(value))} into {where} int64"
        if go_type == "map[string]string":
            if not isinstance(value, dict):
                return f"json: cannot unmarshal {_go_json_kind(value)} into {where} map[string]string"
            for k in sorted(value):
                if value[k] is not None and value[k] is not UNKNOWN and not isinstance(value[k], str):
                    return f"json: cannot unmarshal {_go_json_kind(value[k])} into {where} string"
        if go_type == "[]string":
            if not isinstance(value, list | tuple):
                return f"json: cannot unmarshal {_go_json_kind(value)} into {where} []string"
            for item in value:
                if item is not None and item is not UNKNOWN and not isinstance(item, str):
                    return f"json: cannot unmarshal {_go_json_kind(item)} into {where} string"
    return None


def _coerce_error(value: Any, schema: Any, path: str) -> str | None:
    """apiextensions' ``objectmeta.Coerce`` of a request below its root: the first embedded resource
    (``x-kubernetes-embedded-resource``) whose ``apiVersion`` or ``kind`` is not a string, or whose ``metadata``
    cannot be read as ObjectMeta, as ``<path>: Invalid value: <value>: <why>``; None when there is none. Keys
    are walked in sorted order (Go walks a map in random order: with two such errors the API server names
    either)."""
    if not isinstance(schema, Mapping) or value is UNKNOWN:
        return None
    if isinstance(value, dict):
        embedded = bool(schema.get("x-kubernetes-embedded-resource"))
        properties = schema.get("properties") or {}
        additional = schema.get("additionalProperties")
        for key in sorted(value):
            item = value[key]
            if embedded and item is not UNKNOWN:
                if key in ("apiVersion", "kind") and not isinstance(item, str):
                    return f"{_child(path, key)}: Invalid value: {_shown(item)}: must be a string"
                if key == "metadata" and (why := _metadata_decode_error(item)):
                    return f"{_child(path, key)}: Invalid value: {_shown(item)}: {why}"
            if key in properties:
                found = _coerce_error(item, properties[key], _child(path, key))
            elif isinstance(additional, Mapping):
                found = _coerce_error(item, additional, f"{path}[{key}]")
            else:
                continue
            if found:
                return found
    elif isinstance(value, list):
        for i, item in enumerate(value):
            if found := _coerce_error(item, schema.get("items"), f"{path}[{i}]"):
                return found
    return None


#: Name generation (``names.SimpleNameGenerator``): ``generateName`` cut to 58 characters, then 5 random ones
#: of ``bcdfghjklmnpqrstvwxz2456789``. Any such suffix gives the same verdict; this one stands for it.
_GENERATED_SUFFIX = "x7k2q"
_GENERATED_BASE = 58


def _mask_trailing_dash(prefix: str) -> str:
    """How ``NameIsDNSSubdomain`` reads a ``generateName`` (apimachinery ``maskTrailingDash``, quirk kept)."""
    return prefix[:-2] + "a" if len(prefix) > 1 and prefix.endswith("-") else prefix


def _path_segment_errors(name: str, prefix: bool) -> list[str]:
    """``path.ValidatePathSegmentName``: what an update checks of a name (the create checked the rest)."""
    if not prefix and name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]


def _meta_maps(meta: Mapping[str, Any], prefix: str, walk: _Walk) -> None:
    """ObjectMeta's labels, annotations (their size too) and finalizers, at ``prefix``."""
    for field, check_values in (("labels", True), ("annotations", False)):
        entries = meta.get(field)
        if entries is UNKNOWN or entries is None:
            continue
        if not isinstance(entries, dict):
            walk.fail(f"{prefix}.{field}", f"Invalid value: {_shown(entries)}: must be a map of strings")
            continue
        for key, item in entries.items():
            key_text = str(key) if field == "labels" else str(key).lower()
            for err in crd_formats.qualified_name_errors(key_text):
                walk.fail(f"{prefix}.{field}", f"Invalid value: {_shown(key)}: {err}")
            if check_values and isinstance(item, str):
                for err in crd_formats.label_value_errors(item):
                    # The API server names the map, not the key (ValidateLabels); the value says which.
                    walk.fail(f"{prefix}.{field}", f"Invalid value: {_shown(item)}: {err}")
    finalizers = meta.get("finalizers")
    if isinstance(finalizers, list | tuple):
        for finalizer in finalizers:
            if isinstance(finalizer, str):
                for err in crd_formats.qualified_name_errors(finalizer):
                    walk.fail(f"{prefix}.finalizers", f"Invalid value: {_shown(finalizer)}: {err}")
    annotations = meta.get("annotations")
    if isinstance(annotations, dict):
        size = sum(
            len(str(k).encode()) + len(str(v).encode()) for k, v in annotations.items() if v is not UNKNOWN
        )
        if size > 256 * 1024:
            # A Too long error: it keeps the CEL rules from running.
            walk.fail(
                f"{prefix}.annotations",
                f"Too long: may not be more than 262144 bytes\n(the annotations hold {size} bytes)",
                blocks=True,
            )


def _object_meta(meta: Mapping[str, Any], prefix: str, walk: _Walk) -> None:
    """An embedded resource's ObjectMeta (``ValidateObjectMeta`` with path-segment names; a missing name is
    no error)."""
    for key, prefix_name in (("name", False), ("generateName", True)):
        value = meta.get(key)
        if isinstance(value, str) and value:
            for err in _path_segment_errors(value, prefix_name):
                walk.fail(f"{prefix}.{key}", f"Invalid value: {_shown(value)}: {err}")
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and namespace:
        for err in crd_formats.dns1123_label_errors(namespace):
            walk.fail(f"{prefix}.namespace", f"Invalid value: {_shown(namespace)}: {err}")
    _meta_maps(meta, prefix, walk)


def _metadata(meta: Any, crd: CrdVersion, walk: _Walk, patch: bool, old: Any = None) -> dict[str, Any]:
    """ObjectMeta as ``rest.BeforeCreate`` checks it (``ValidateObjectMetaAccessor`` with DNS-subdomain names,
    after name generation), or, given the stored object's ``old`` metadata, as ``rest.BeforeUpdate`` does
    (common fields outside the strategy, so a missing name does not keep CEL rules from running; name and
    namespace immutable)."""
    if meta is UNKNOWN:
        return {}
    if meta is None:
        meta = {}
    update = old is not None and not patch
    if not isinstance(meta, dict):
        walk.type_errors = True
        walk.fail("metadata", f"Invalid value: {_shown(meta)}: must be of type object")
        return {}
    name = meta.get("name")
    generate = meta.get("generateName")
    if update:
        old_meta = old if isinstance(old, dict) else {}
        if isinstance(generate, str):
            for err in _path_segment_errors(generate, True):
                walk.fail("metadata.generateName", f"Invalid value: {_shown(generate)}: {err}")
        if not name:
            walk.fail("metadata.name", "Required value: name or generateName is required")
        elif isinstance(name, str):
            for err in _path_segment_errors(name, False):
                walk.fail("metadata.name", f"Invalid value: {_shown(name)}: {err}")
        new_name, old_name = name or "", old_meta.get("name") or ""
        if isinstance(new_name, str) and isinstance(old_name, str) and new_name != old_name:
            walk.fail("metadata.name", f"Invalid value: {_shown(new_name)}: field is immutable")
        # The request's namespace: "default" when a namespaced object names none; a cluster-scoped object's is
        # cleared, so a stored one holding a namespace no longer matches.
        namespaced = crd.crd.scope == "Namespaced"
        new_ns = (meta.get("namespace") or "default") if namespaced else ""
        old_ns = old_meta.get("namespace") or ("default" if namespaced else "")
        if isinstance(new_ns, str) and isinstance(old_ns, str) and new_ns != old_ns:
            walk.fail("metadata.namespace", f"Invalid value: {_shown(new_ns)}: field is immutable")
    elif not patch:
        if not name and not generate:
            walk.fail("metadata.name", "Required value: name or generateName is required", blocks=True)
        if isinstance(generate, str) and generate:
            for err in crd_formats.dns1123_subdomain_errors(_mask_trailing_dash(generate)):
                walk.fail("metadata.generateName", f"Invalid value: {_shown(generate)}: {err}")
            if not name:
                generated = generate[:_GENERATED_BASE] + _GENERATED_SUFFIX
                for err in crd_formats.dns1123_subdomain_errors(generated):
                    walk.fail("metadata.name", f"Invalid value: {_shown(generated)}: {err}")
    if isinstance(name, str) and name and not update:
        for err in crd_formats.dns1123_subdomain_errors(name):
            walk.fail("metadata.name", f"Invalid value: {_shown(name)}: {err}")
    namespace = meta.get("namespace")
    if isinstance(namespace, str) and crd.crd.scope == "Namespaced":
        for err in crd_formats.dns1123_label_errors(namespace):
            walk.fail("metadata.namespace", f"Invalid value: {_shown(namespace)}: {err}")
    _meta_maps(meta, "metadata", walk)
    return {key: meta[key] for key in ("name", "generateName") if isinstance(meta.get(key), str)}


# ---------------------------------------------------------------------------------------------------------
# entry point
# ---------------------------------------------------------------------------------------------------------


def validate_object(
    obj: Mapping[str, Any],
    crd: CrdVersion,
    *,
    old: Mapping[str, Any] | None = None,
    patch: bool = False,
    kubernetes: str = DEFAULT_KUBERNETES_VERSION,
    request_body: str = "client",
    installed: bool = False,
) -> list[Finding]:
    """Everything the API server would reject in ``obj`` (an object of ``crd``), plus what cannot be judged.

    ``old`` is the previous object (the stored one on an update), which enables transition rules; ``patch``
    marks a server-side-apply patch: a partial object whose missing fields the live object supplies, so
    neither ``required`` nor defaulting applies, and a rule that fails only because a field is absent from
    the patch is not reported. ``kubernetes`` is the API server's version (:data:`KUBERNETES_VERSIONS`), and
    ``request_body`` how the request's numbers reach it (:data:`REQUEST_BODIES`). A CRD the API server refuses
    refuses every object of it, unless ``installed`` says to judge the object as if the CRD were served (what
    the API server's object path alone does, e.g. for a test CRD only that path can serve).
    """
    version = kubernetes_version(kubernetes)
    refused = [] if installed else _crd_refusals(crd)
    if refused:
        # The API server refuses the CRD itself, so it is never installed and no object of it is created.
        return [
            Finding(
                "",
                f"{CRD_REFUSED} ({crd.crd.file}, {crd.version}), so no object of it can be created: {r}",
                True,
            )
            for r in refused[:3]
        ]
    raw = request_body == "json"
    body = _copy(obj, raw)
    if crd.status_subresource:
        body.pop("status", None)
        if old is not None and isinstance(old.get("status"), Mapping):
            body["status"] = _copy(old["status"], raw)
    schema = crd.schema
    if old is not None:
        old = _copy(old, raw)
    if not patch:
        _default(body, schema)
        if old is not None:
            # The stored object was defaulted when it was written; a previous object read back from a render
            # or from inputs may not be, so default it the same way.
            _default(old, schema)
    decode_error = _metadata_decode_error(body.get("metadata"))
    if decode_error is None:
        properties = schema.get("properties") or {}
        decode_error = next(
            (
                e
                for key in sorted(body)
                if key in properties and (e := _coerce_error(body[key], properties[key], key))
            ),
            None,
        )
    if decode_error is not None:
        # Decoding the request fails (its ObjectMeta, or an embedded resource's type and ObjectMeta), and it is
        # refused with that alone: a BadRequest, named as the API server names it.
        kind = crd.crd.kind
        return [
            Finding(
                "", f'{kind} in version "{crd.version}" cannot be handled as a {kind}: {decode_error}', True
            )
        ]
    undeclared = unknown_fields(body, schema, "", root=True)
    meta = body.get("metadata")
    if isinstance(meta, dict):
        undeclared = sorted(undeclared + [f"metadata.{k}" for k in meta if k not in _OBJECT_META])
    if undeclared:
        # Decoding refuses the request (fieldValidation=Strict, kubectl's default) before any validation.
        return [
            Finding(
                path,
                f'unknown field "{path}"\n(the CRD schema does not declare it: the API server refuses the '
                "request under fieldValidation=Strict, kubectl's default, or drops the field under Ignore)",
                True,
            )
            for path in undeclared
        ]
    for key, words in (("kind", "Kind"), ("apiVersion", "apiVersion")):
        if not patch and not body.get(key):
            # The request is refused as it is read, before validation (runtime: Object 'Kind' is missing).
            field = f"{key.lower()} field " if key == "kind" else f"{key} field"
            return [
                Finding(
                    "",
                    f"Object '{words}' is missing in 'object has no {field}' (every object names its {key})",
                    True,
                )
            ]
    walk = _Walk(patch, version)
    walk.compile_rules = installed
    for key, expected in (("kind", crd.crd.kind), ("apiVersion", crd.api_version)):
        # (The API server then skips the schema and ObjectMeta checks; an object of another kind or version
        # is judged by that CRD here, so this only shows up in hand-made objects.)
        if isinstance(body.get(key), str) and body[key] != expected:
            walk.fail(key, f"Invalid value: {_shown(body[key])}: must be {expected}")
    meta_view = _metadata(
        body.get("metadata"), crd, walk, patch, None if old is None else old.get("metadata") or {}
    )
    if old is not None:
        walk.ratcheting = True
        walk.anchor = _same(body, old, schema)
        walk.check_lists = not _has_duplicates(old, schema)
    root_view: dict[str, Any] = {}
    unknown = False
    props: Mapping[str, Any] = schema.get("properties") or {}
    for key, value in body.items():
        if key == "metadata":
            root_view["metadata"] = meta_view
            continue
        old_value = old.get(key, _ABSENT) if old is not None else _ABSENT
        if key in ("apiVersion", "kind"):
            root_view[key] = value
        elif key == "status" and crd.status_subresource:
            # The stored status, carried over: input to root rules, not the object's author's to fix.
            root_view[key] = _view(value, props.get(key) or {})
        elif key in props:
            view, child_unknown = walk.walk(value, props[key], key, old_value, f".{key}")
            name = escape_property(key)
            if name is not None and value is not None:
                root_view[name] = view
            unknown = unknown or child_unknown
        elif not schema.get("x-kubernetes-preserve-unknown-fields"):
            walk.fail(
                key,
                f'unknown field "{key}"\n(the CRD schema does not declare it: the API server drops it (pruning) '
                "or, under fieldValidation=Strict, kubectl's default, rejects the request)",
            )
    if not patch:
        for key in schema.get("required") or ():
            if key not in body and key not in ("apiVersion", "kind", "metadata"):
                walk.fail(key, "Required value", blocks=True)
    if crd.scale_replicas_path:
        _scale_replicas(body, crd.scale_replicas_path, walk)
    if schema.get("x-kubernetes-validations"):
        walk.sites.append(
            _Site(
                "",
                schema["x-kubernetes-validations"],
                schema,
                root_view,
                unknown,
                old if old is not None else _ABSENT,
                "",
                walk.anchor,
                holds_invalid=walk.invalid > 0,
            )
        )
    if walk.type_errors:
        if not _has_rules(crd.crd.file, crd.version, crd.schema):
            return walk.findings  # no CEL validator, so nothing was left unchecked
        # The API server lists this among the errors; the object is refused for the others already, so here it
        # is a note on what was not judged (the crd-schema-unchecked advisory), not a second rejection.
        walk.findings.append(Finding("", NOT_CHECKED, False))
        return walk.findings
    for site in walk.sites:
        _evaluate_site(site, walk, patch, crd)
    if walk.unknown_rules:
        rules = "; ".join(f"`{rule.strip()}` at {path or '<root>'}" for path, rule in walk.unknown_rules)
        fields = ", ".join(walk.unknown_paths) or "metadata"
        walk.findings.append(
            Finding(
                "",
                f"{len(walk.unknown_rules)} rule(s) not evaluated during preview because {fields} is unknown "
                f"until apply: {rules}",
                False,
            )
        )
    return walk.findings


#: Findings of the structural validation that ``ValidateCustomResource`` (kube-openapi's validator, all a
#: default is held to besides its rules) does not make: pruning's, and the list-type checks of the strategy.
_NOT_OPENAPI = ('unknown field "', "Duplicate value", "must be an object for an array of list-type map")


def validate_value(
    value: Any,
    schema: Mapping[str, Any],
    path: str,
    *,
    kubernetes: str = DEFAULT_KUBERNETES_VERSION,
) -> list[Finding]:
    """What the API server refuses in ``value`` as the value of the schema node ``schema``, its fields named
    under ``path``: how it checks a CRD's ``default`` when the CRD is created (``defaulting.ValidateDefaults``):
    kube-openapi's validation first and, only when that passes, the CEL rules of the node and below, once as
    an update from the value itself (where only transition rules can fail) and, when none does, as a create."""
    version = kubernetes_version(kubernetes)
    walk = _Walk(False, version)
    # kube-openapi validates the value as the root of a document (its messages name fields from there), and
    # the field errors are placed under ``path``.
    walk.walk(_copy(value, False), schema, "", _ABSENT)
    refused = [
        Finding(path + ("" if not f.path or f.path[0] == "[" else ".") + f.path, f.message, True)
        for f in walk.findings
        if f.blocking and not any(n in f.message for n in _NOT_OPENAPI)
    ]
    if refused:
        return refused
    for old in (value, _ABSENT):
        walk = _Walk(False, version)
        walk.compile_rules = True
        if old is not _ABSENT:
            walk.ratcheting = True
        walk.walk(_copy(value, False), schema, path, _copy(old, False) if old is not _ABSENT else _ABSENT)
        walk.findings = []
        for site in walk.sites:
            _evaluate_site(site, walk, False, None)
        refused = [f for f in walk.findings if f.blocking]
        if refused:
            return refused
    return []


def default_refusals(schema: Mapping[str, Any], where: str) -> Iterator[Refusal]:
    """``defaulting.ValidateDefaults``: every ``default`` (but under ``additionalProperties``, where defaults are
    forbidden, and in an embedded resource's type and metadata) held to its node's schema and to the CEL rules
    of its node and below: no unknown fields, then kube-openapi's validation, then the rules."""

    def visit(node: Mapping[str, Any], path: str, resource: bool, meta: bool) -> Iterator[Refusal]:
        resource = resource or bool(node.get("x-kubernetes-embedded-resource"))
        default = node.get("default")
        if default is not None and not meta:
            at = f"{path}.default"
            if unknown_fields(default, node, at, root=resource):
                yield Refusal(at, f"Invalid value: {bad_value(default)}: must not have unknown fields")
            for finding in validate_value(default, node, at):
                yield Refusal(finding.path, finding.message)
        items = node.get("items")
        if isinstance(items, Mapping):
            yield from visit(items, f"{path}.items", False, meta)
        for name, sub in (node.get("properties") or {}).items():
            if isinstance(sub, Mapping):
                inner = meta or (resource and name in ("apiVersion", "kind", "metadata"))
                yield from visit(sub, f"{path}.properties[{name}]", False, inner)

    yield from visit(schema, where, True, False)


def crd_refusals(schema: Mapping[str, Any], where: str = "openAPIV3Schema") -> list[Refusal]:
    """Why the API server refuses a CRD version whose schema is ``schema`` (empty: it accepts it):
    :func:`nodefleet.apiserver.crd_rules.refusals`, its defaults held to their schema by :func:`validate_value`."""
    return refusals(schema, where, defaults=default_refusals)


_REFUSALS: dict[tuple[str, str, int], list[str]] = {}


def _crd_refusals(crd: CrdVersion) -> list[str]:
    """Why the API server refuses ``crd``'s schema, as :mod:`nodefleet.apiserver.crd_rules` tells (kept per CRD
    file and version, and the schema's identity; and in the cache by the schema's content and the analysing
    code, since estimating every rule's cost is most of what checking a CRD costs)."""
    key = (crd.crd.file, crd.version, id(crd.schema))
    if key not in _REFUSALS:
        content = json.dumps(crd.schema, sort_keys=True, separators=(",", ":"), default=str)
        digest = hashlib.sha256(content.encode()).hexdigest()

        def analyse() -> list[str]:
            return [str(r) for r in crd_refusals(crd.schema)]

        _REFUSALS[key] = remembered(f"refusals-{digest}-{analysis_digest()}", analyse)
    return _REFUSALS[key]


_RULES_CACHE: dict[tuple[str, str], bool] = {}


def _has_rules(file: str, version: str, schema: Mapping[str, Any]) -> bool:
    """Whether any node of the schema has ``x-kubernetes-validations`` (else the API server has no CEL
    validator for the CRD)."""
    key = (file, version)
    if key not in _RULES_CACHE:

        def walk(node: Mapping[str, Any]) -> bool:
            if node.get("x-kubernetes-validations"):
                return True
            subs = list((node.get("properties") or {}).values())
            subs += [node[k] for k in ("items", "additionalProperties") if isinstance(node.get(k), Mapping)]
            return any(walk(sub) for sub in subs)

        _RULES_CACHE[key] = walk(schema)
    return _RULES_CACHE[key]


_COMPILE_ERRORS: dict[tuple[str, bool, int, bool], tuple[Mapping[str, Any], str]] = {}


def _compile_error(spec: Mapping[str, Any], schema: Mapping[str, Any], root: bool) -> str:
    """Why the API server's CEL validator cannot compile the rule ``spec`` at the node ``schema`` (its words
    after ``rule compile error:``), or ``""``."""
    from nodefleet.apiserver import cel_check

    rule, optional = str(spec.get("rule") or ""), bool(spec.get("optionalOldSelf"))
    key = (rule, optional, id(schema), root)
    cached = _COMPILE_ERRORS.get(key)
    if cached is None or cached[0] is not schema:
        error = ""
        decl = cel_check.schema_decl(schema, root or bool(schema.get("x-kubernetes-embedded-resource")))
        if decl is not None and rule.strip():
            try:
                checked = cel_check.check(rule, cel_check.renamed(decl), optional)
            except cel_check.CheckError as e:
                error = f"compilation failed: {e.display}"
            except (LookupError, TypeError, ValueError, AttributeError, AssertionError, RecursionError):
                error = ""  # a shape the checker does not know: never a reason to refuse
            else:
                if checked.types.get(checked.tree.id) != cel_check.BOOL:
                    error = "cel expression must evaluate to a bool"
        cached = _COMPILE_ERRORS[key] = (schema, error)
    return cached[1]


def _old_view(site: _Site) -> Any:
    if site.path == "" and isinstance(site.old, dict):
        return _root_view(site.old, site.schema)
    return _view(site.old, site.schema)


def _evaluate_site(site: _Site, walk: _Walk, patch: bool, crd: CrdVersion | None) -> None:
    old_view: Any = _ABSENT
    old_unknown = old_invalid = False
    for spec in site.rules:
        rule = crd_cel.compile_rule(spec)
        if walk.compile_rules:
            error = _compile_error(spec, site.schema, site.path == "")
            if error:
                node_type = _shown(str(site.schema.get("type") or ""))
                walk.findings.append(
                    Finding(
                        site.path, f"Invalid value: {node_type}: rule compile error: {error}", True, rule.rule
                    )
                )
                continue
        if rule.transition and site.old is _ABSENT and not rule.optional_old_self:
            continue  # as on a create: transition rules need the previous value
        if site.unknown:
            walk.unknown_rules.append((site.path, rule.rule))
            continue
        old_arg: Any = _ABSENT
        if rule.transition and site.old is not _ABSENT:
            if old_view is _ABSENT:
                old_unknown = _holds_unknown(site.old)
                old_view = _old_view(site)
                old_invalid = crd_cel.holds_invalid(old_view)
            if old_unknown:
                walk.findings.append(
                    Finding(
                        site.path, "cannot evaluate: the previous value is not fully known", False, rule.rule
                    )
                )
                continue
            old_arg = old_view
        outcome = crd_cel.evaluate(
            rule,
            site.view,
            old_arg,
            holds_invalid=site.holds_invalid or (old_arg is not _ABSENT and old_invalid),
            raw_old=site.old if old_arg is not _ABSENT else _ABSENT,
        )
        if crd is not None and rule_log.active():
            rule_log.record(crd.crd.file, crd.version, site.spath, rule.rule, outcome.passed)
        if outcome.passed is None:
            # The API server compiled this rule when the CRD was written, so it evaluates it; a rule judged
            # neither way here must not let the object through.
            walk.findings.append(
                Finding(
                    site.path,
                    f"cannot evaluate rule here: {outcome.detail}\n(nodefleet could not judge this rule, which "
                    "the API server evaluates: the object is refused until the rule can be checked; `nodefleet "
                    "crds coverage` lists such rules)",
                    True,
                    rule.rule,
                )
            )
            continue
        if outcome.passed:
            continue
        if patch and ("Key not found" in outcome.error or "no such key" in outcome.error):
            continue  # the field is absent from the patch; the live object may hold it
        if outcome.error:
            # A runtime error names the rule's node (not its fieldPath) and its type, and is never ratcheted.
            node_type = _shown(str(site.schema.get("type") or ""))
            walk.findings.append(
                Finding(site.path, f"Invalid value: {node_type}: {outcome.message}", True, rule.rule)
            )
            continue
        path = site.path
        relative = _rule_field_path(rule.field_path, site.schema) if rule.field_path else None
        if relative:
            path = _child(site.path, relative)
        message = _rule_message(site, str(rule.reason or ""), outcome.message)
        if site.ratchet and not rule.transition:
            # Rules reading oldSelf are never ratcheted; others are when their node is unchanged.
            walk.findings.append(Finding(path, f"{message}\n(ratcheted: {_RATCHETED})", False, rule.rule))
            continue
        walk.findings.append(Finding(path, message, True, rule.rule))


def _rule_message(site: _Site, reason: str, detail: str) -> str:
    """A failed rule as the API server words it (cel ``fieldErrorForReason``): a scalar node's value is shown."""
    scalar = not isinstance(site.value, Mapping | list | tuple) and site.path != ""
    if reason == "FieldValueForbidden":
        return f"Forbidden: {detail}"
    if reason == "FieldValueRequired":
        return f"Required value: {detail}"
    if reason == "FieldValueDuplicate":  # the value, without the rule's message
        return f"Duplicate value: {_shown(site.value)}" if scalar else "Duplicate value"
    return f"Invalid value: {_shown(site.value)}: {detail}" if scalar else f"Invalid value: {detail}"


def _root_view(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> dict[str, Any]:
    view: dict[str, Any] = {}
    props: Mapping[str, Any] = schema.get("properties") or {}
    for key, value in obj.items():
        if key == "metadata" and isinstance(value, dict):
            view["metadata"] = {
                k: value[k] for k in ("name", "generateName") if isinstance(value.get(k), str)
            }
        elif key in ("apiVersion", "kind"):
            view[key] = value
        elif key in props:
            name = escape_property(key)
            if name is not None:
                view[name] = _view(value, props[key])
    return view


def rejects_field(obj: Mapping[str, Any], crd: CrdVersion, path: str) -> bool:
    """Whether the API server rejects ``obj`` for its value at ``path`` (e.g. ``spec.version``).

    Other policies ask this before reporting a value they cannot use: when the CRD rejects it, ``crd-schema``
    reports it with the CRD's message, and one mistake gets one verdict.
    """
    whole = {"apiVersion": crd.api_version, "kind": crd.crd.kind, **obj}  # the field's object, of this CRD
    return any(
        f.blocking and (f.path == path or f.path.startswith((f"{path}.", f"{path}[")))
        for f in validate_object(whole, crd)
    )
