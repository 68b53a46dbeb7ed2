"""A hand-written corpus of small CRDs, one class of API server behaviour each, judged by the test API server.

Each class is a place where crd-schema once disagreed with kube-apiserver; its cases are written here, not
drawn from a generator, and their verdicts come from a running kube-apiserver (tests/test_crd_classes_live.py,
by server-side dry run) — never from this file. The CRDs are files in ``tests/data/crd-classes/`` (written by
:func:`write_crds`, checked by a test to be current), so the same bytes are installed on the API server and
read by crd-schema.

- ``ratchet-ancestor``: updates keeping a value of the wrong type (a string in an integer field, an object
  where a list belongs, a null list item) while a rule on an ancestor reads it, or does not;
- ``unreadable``: rules whose cel-go code meets such a kept value's conversion error, and passes over it
  (``sets.intersects``, ``indexOf``, ``!=``, membership that finds another item, a literal's ``sets.contains``)
  or fails (membership, ``has()``, ``.?`` chains, equality of objects); the stored JSON a rule reads under
  ``optionalOldSelf``; an int-or-string no overload takes;
- ``format-type``: rules on ``date-time``, ``date``, ``duration`` and ``byte`` strings, which CEL sees as
  timestamps, durations and bytes;
- ``quantity-equal``: quantities compared by value;
- ``macro``: ``transformMap`` and ``transformMapEntry`` (the API server compiles them; ``cel.bind`` it does not);
- ``nullable-has``: a nullable field holding null is absent to ``has()``;
- ``embedded``: ``x-kubernetes-embedded-resource`` objects: type meta required, ObjectMeta checked;
- ``number``: ``multipleOf`` with a fraction, a JSON integer in a ``number`` field, sets of numbers;
- ``int-format``: ``format: int32`` and ``format: float`` ranges (checked since Kubernetes 1.36).
- ``decode``: a request the API server cannot decode (a BadRequest before any validation): ObjectMeta of the
  wrong shape at the root or in an embedded resource, an embedded resource's ``apiVersion`` or ``kind`` not a
  string;
- ``runtime-words``: runtime errors in cel-go's words (division and modulus by zero, conversions out of range or
  from a string, ``<string>.format()`` given a value its clause does not take, an unknown clause, too few
  values).
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from tests.crd_corpus import Case, hand_written_crd

FOLDER = Path(__file__).resolve().parent / "data" / "crd-classes"
GROUP = "classes.nodefleet.io"


def crd_document(
    group: str, kind: str, spec: dict[str, Any], root_rules: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    """A namespaced CRD of ``group``, one version ``v1``, whose objects' ``spec`` has the schema ``spec``."""
    plural = kind.lower() + "s"
    schema: dict[str, Any] = {
        "type": "object",
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            "spec": spec,
        },
    }
    if root_rules:
        schema["x-kubernetes-validations"] = root_rules
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "names": {"kind": kind, "listKind": f"{kind}List", "plural": plural, "singular": kind.lower()},
            "scope": "Namespaced",
            "versions": [
                {"name": "v1", "served": True, "storage": True, "schema": {"openAPIV3Schema": schema}}
            ],
        },
    }


def _crd(kind: str, spec: dict[str, Any], root_rules: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return crd_document(GROUP, kind, spec, root_rules)


def _r(rule: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, **extra}


def _embedded(**properties: Any) -> dict[str, Any]:
    """An embedded resource's schema: its type meta, ``metadata: {type: object}`` and ``properties``."""
    return {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "properties": {
            "apiVersion": {"type": "string"},
            "kind": {"type": "string"},
            "metadata": {"type": "object"},
            **properties,
        },
    }


_S = {"type": "string", "maxLength": 64}
_I = {"type": "integer"}

CRDS: dict[str, dict[str, Any]] = {
    "ancestor": _crd(
        "Ancestor",
        {
            "type": "object",
            "x-kubernetes-validations": [_r("!has(self.limit) || self.limit >= self.floor")],
            "properties": {
                "floor": _I,
                "limit": _I,
                "mode": _S,
                "note": _S,
                "box": {
                    "type": "object",
                    "properties": {"size": _I, "label": _S},
                    "x-kubernetes-validations": [
                        _r("!has(self.label) || self.label != 'x'"),
                        _r("self == oldSelf || !has(self.label) || self.label != 'frozen'"),
                    ],
                },
                "slots": {
                    "type": "array",
                    "maxItems": 8,
                    "items": {"type": "object", "properties": {"port": _I, "name": _S}},
                    "x-kubernetes-validations": [_r("self.all(s, !has(s.port) || s.port < 65536)")],
                },
                "tags": {"type": "array", "maxItems": 8, "items": _S},
            },
        },
        [
            _r("!has(self.spec.tags) || self.spec.tags.size() <= 3"),
            _r("!has(self.spec.mode) || self.spec.mode.startsWith('m')"),
            _r("!has(self.spec.note) || self.spec.note != 'stop'"),
        ],
    ),
    "ledger": _crd(
        "Ledger",
        {
            "type": "object",
            "x-kubernetes-validations": [
                _r("!has(self.size) || self.size != 'huge'", message="not huge"),
                _r("!has(self.when) || self.when > timestamp('2020-01-01T00:00:00Z')", message="after 2020"),
            ],
            "properties": {
                "note": _S,
                "size": {"x-kubernetes-int-or-string": True},
                "when": {"type": "string", "format": "date-time"},
                "counts": {
                    "type": "object",
                    "maxProperties": 8,
                    "additionalProperties": _I,
                    "x-kubernetes-validations": [
                        _r("self.all(k, self[k] >= 0)", message="counts not negative")
                    ],
                },
                "ints": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "maxItems": 8,
                    "items": _I,
                    "x-kubernetes-validations": [_r("self.all(x, x > 0)", message="positive")],
                },
                "weights": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "maxItems": 8,
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": _S, "weight": _I},
                        "x-kubernetes-validations": [
                            _r(
                                "!has(self.weight) || !has(oldSelf.weight) || self.weight >= oldSelf.weight",
                                message="weights only grow",
                            )
                        ],
                    },
                    "x-kubernetes-validations": [
                        _r("self.all(i, !has(i.weight) || i.weight <= 10)", message="light")
                    ],
                },
            },
        },
    ),
    "formats": _crd(
        "Stamp",
        {
            "type": "object",
            "x-kubernetes-validations": [
                _r("!has(self.start) || !has(self.end) || self.start < self.end", message="start before end")
            ],
            "properties": {
                "start": {"type": "string", "format": "date-time"},
                "end": {"type": "string", "format": "date-time"},
                "at": {
                    "type": "string",
                    "format": "date-time",
                    "x-kubernetes-validations": [_r("self >= timestamp('2024-01-01T00:00:00Z')")],
                },
                "day": {
                    "type": "string",
                    "format": "date",
                    "x-kubernetes-validations": [_r("self.getFullYear() >= 2020")],
                },
                "wait": {
                    "type": "string",
                    "format": "duration",
                    "x-kubernetes-validations": [_r("self <= duration('24h')")],
                },
                "lag": {
                    "type": "string",
                    "format": "duration",
                    "x-kubernetes-validations": [_r("self >= duration('0s')", message="not negative")],
                },
                "blob": {
                    "type": "string",
                    "format": "byte",
                    "maxLength": 64,
                    "x-kubernetes-validations": [_r("self.size() <= 4")],
                },
            },
        },
    ),
    "quantities": _crd(
        "Measure",
        {
            "type": "object",
            "x-kubernetes-validations": [
                _r(
                    "!has(self.a) || !has(self.b) || quantity(self.a) == quantity(self.b)",
                    message="a equals b",
                ),
                _r(
                    "!has(self.c) || quantity(self.c) in [quantity('1'), quantity('2Gi')]",
                    message="c is 1 or 2Gi",
                ),
                _r("!has(self.v) || semver(self.v, true) == semver('1.2.0')", message="v is 1.2.0"),
            ],
            "properties": {
                "a": {"type": "string", "maxLength": 16},
                "b": {"type": "string", "maxLength": 16},
                "c": {"type": "string", "maxLength": 16},
                "v": {"type": "string", "maxLength": 16},
            },
        },
    ),
    "macros": _crd(
        "Mapper",
        {
            "type": "object",
            "properties": {
                "labels": {
                    "type": "object",
                    "maxProperties": 8,
                    "additionalProperties": {"type": "string", "maxLength": 16},
                    "x-kubernetes-validations": [
                        _r(
                            "self.transformMap(k, v, v.size()).all(k, self[k].size() <= 8)",
                            message="short values",
                        ),
                        _r(
                            "self.transformMapEntry(k, v, {v: k}).size() == self.size()",
                            message="distinct values",
                        ),
                    ],
                }
            },
        },
    ),
    "nullable": _crd(
        "Maybe",
        {
            "type": "object",
            "x-kubernetes-validations": [
                _r("!has(self.opt) || self.opt.size() > 0", message="opt not empty"),
                _r("!has(self.inner) || self.inner.x > 0", message="inner.x positive"),
            ],
            "properties": {
                "opt": {"type": "string", "nullable": True, "maxLength": 16},
                "inner": {"type": "object", "nullable": True, "properties": {"x": _I}},
                "m": {
                    "type": "object",
                    "maxProperties": 4,
                    "additionalProperties": {"type": "string", "nullable": True, "maxLength": 16},
                    "x-kubernetes-validations": [_r("!has(self.k) || self.k != ''", message="k not empty")],
                },
            },
        },
    ),
    "embedded": _crd(
        "Holder",
        {
            "type": "object",
            "properties": {
                "emb": {
                    **_embedded(
                        data={
                            "type": "object",
                            "additionalProperties": {"type": "string", "maxLength": 32},
                            "maxProperties": 4,
                        }
                    ),
                    "x-kubernetes-validations": [_r("self.kind != 'Secret'", message="no secrets")],
                },
                "more": {"type": "array", "maxItems": 4, "items": _embedded()},
            },
        },
    ),
    "numbers": _crd(
        "Number",
        {
            "type": "object",
            "properties": {
                "ratio": {"type": "number", "multipleOf": 0.1},
                "half": {"type": "number", "multipleOf": 0.5},
                "count": {"type": "integer", "multipleOf": 3},
                "set": {
                    "type": "array",
                    "x-kubernetes-list-type": "set",
                    "maxItems": 8,
                    "items": {"type": "number"},
                },
            },
        },
    ),
    "keeper": _crd(
        "Keeper",
        {
            "type": "object",
            "x-kubernetes-validations": [
                _r("!has(self.ports) || 80 in self.ports", message="port 80 open"),
                _r("!has(self.ports) || !sets.intersects(self.ports, [22, 23])", message="no ssh or telnet"),
                _r("!has(self.ports) || self.ports.indexOf(8080) == -1", message="no 8080"),
                _r("!has(self.ports) || self.ports != [1, 2]", message="not one and two"),
                _r("!has(self.codes) || sets.contains([200, 404, 500], self.codes)", message="known codes"),
                _r("!has(self.limits) || !('cpu' in self.limits) || self.limits.cpu <= 64", message="cpu"),
                _r("!has(self.box) || !has(self.box.label) || self.box.label != 'x'", message="label"),
                _r("!has(self.box) || !has(oldSelf.box) || self.box == oldSelf.box", message="box fixed"),
                _r("self.?deep.inner.depth.orValue(0) >= 0", message="depth"),
                _r("!has(self.when) || self.when > timestamp('2020-01-01T00:00:00Z')", message="after 2020"),
                _r(
                    "!oldSelf.hasValue() || !has(oldSelf.value().when) || oldSelf.value().when == self.when",
                    message="when is fixed",
                    optionalOldSelf=True,
                ),
                _r("!has(self.level) || self.level > 0", message="level positive"),
            ],
            "properties": {
                "note": _S,
                "ports": {"type": "array", "maxItems": 8, "items": _I},
                "codes": {"type": "array", "x-kubernetes-list-type": "set", "maxItems": 8, "items": _I},
                "limits": {"type": "object", "maxProperties": 8, "additionalProperties": _I},
                "box": {"type": "object", "properties": {"size": _I, "label": _S}},
                "deep": {
                    "type": "object",
                    "properties": {"inner": {"type": "object", "properties": {"depth": _I}}},
                },
                "when": {"type": "string", "format": "date-time"},
                "level": {"x-kubernetes-int-or-string": True, "maxLength": 16},
            },
        },
    ),
    "intformats": _crd(
        "Width",
        {
            "type": "object",
            "properties": {
                "small": {"type": "integer", "format": "int32"},
                "big": {"type": "integer", "format": "int64"},
                "real": {"type": "number", "format": "float"},
                "wide": {"type": "number", "format": "double"},
            },
        },
    ),
    "decoded": _crd(
        "Decoded",
        {
            "type": "object",
            "properties": {
                "res": {
                    "type": "array",
                    "maxItems": 5,
                    "items": {**_embedded(), "x-kubernetes-preserve-unknown-fields": True},
                },
                "tpl": _embedded(
                    metadata={
                        "type": "object",
                        "properties": {
                            "labels": {"type": "object", "additionalProperties": {"type": "string"}}
                        },
                    },
                    spec={"type": "object", "properties": {"r": _I}},
                ),
                "byName": {"type": "object", "additionalProperties": _embedded()},
                "free": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
            },
        },
    ),
    "runtime": _crd(
        "Runtime",
        {
            "type": "object",
            "properties": {
                "e": {"type": "string", "maxLength": 8},
                "a": _I,
                "b": _I,
                "d": {"type": "number"},
                "s": {"type": "string", "maxLength": 32},
                "l": {"type": "array", "maxItems": 4, "items": _I},
            },
            # One rule per runtime error, chosen by ``e``; ``dyn()`` keeps format's arguments from the
            # compile-time check, so cel-go's formatter meets them when the rule runs.
            "x-kubernetes-validations": [
                _r(f"self.e != '{tag}' || {rule}", message=tag)
                for tag, rule in {
                    "div": "self.a / self.b == 1",
                    "mod": "self.a % self.b == 1",
                    "uint": "uint(self.a) > 0u",
                    "uintdbl": "uint(self.d) > 0u",
                    "intdbl": "int(self.d) > 0",
                    "dur": "duration(self.s) > duration('1s')",
                    "ts": "timestamp(self.s) > timestamp('2020-01-01T00:00:00Z')",
                    "bool": "bool(self.s)",
                    "fmt-d": "'%d'.format([dyn(self.d)]) != ''",
                    "fmt-f": "'%.2f'.format([dyn(self.a)]) != ''",
                    "fmt-e": "'%e'.format([dyn(self.a)]) != ''",
                    "fmt-x": "'%x'.format([dyn(self.d)]) != ''",
                    "fmt-b": "'%b'.format([dyn(self.s)]) != ''",
                    "fmt-o": "'%o'.format([dyn(self.d)]) != ''",
                    "fmt-nan": "'%f'.format([dyn(self.s)]) != ''",
                    "fmt-s": "'%s'.format([dyn([quantity(self.s)])]) != ''",
                    "fmt-map": "'%s'.format([dyn({'a': quantity(self.s)})]) != ''",
                    "fmt-few": "'%s %s'.format(self.l) != ''",
                    "fmt-verb": "self.s.format([1]) != ''",
                }.items()
            ],
        },
    ),
}


def _one_rule(
    tag: str,
    rule: dict[str, Any] | list[dict[str, Any]],
    at: str = "spec",
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A CRD whose schema has one rule (or several), at ``spec`` or at one of its fields."""
    rules = rule if isinstance(rule, list) else [rule]
    spec: dict[str, Any] = {
        "type": "object",
        "properties": {
            "a": _I,
            "s": {"type": "string"},
            "q": {"type": "string", "maxLength": 32},
            "tags": {
                "type": "array",
                "x-kubernetes-list-type": "set",
                "maxItems": 8,
                "items": {"type": "string", "maxLength": 16},
            },
            "steps": {"type": "array", "maxItems": 8, "items": {"type": "object", "properties": {"n": _I}}},
            "free": {
                "type": "object",
                "x-kubernetes-preserve-unknown-fields": True,
                "properties": {"known": _I},
            },
            "emb": _embedded(),
            **(extra or {}),
        },
    }
    root_rules = None
    if at == "":
        root_rules = rules
    elif at == "spec":
        spec["x-kubernetes-validations"] = rules
    else:
        node = spec["properties"][at]
        if node.get("type") == "array":
            node = node["items"]
        node["x-kubernetes-validations"] = rules
    kind = "R" + "".join(part.capitalize() for part in tag.split("-"))
    return _crd(kind, spec, root_rules)


_NAME_RULE = "self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')"
_NAMES_RULE = f"self.names.all(x, x.{_NAME_RULE.removeprefix('self.')})"


def _names(max_items: int | None) -> dict[str, Any]:
    """A list of names (strings of up to 63 characters), of at most ``max_items`` (None: unbounded)."""
    bound = {} if max_items is None else {"maxItems": max_items}
    return {"names": {"type": "array", **bound, "items": {"type": "string", "maxLength": 63}}}


def _grid(rows: int) -> dict[str, Any]:
    """A list of ``rows`` lists of as many names."""
    names = _names(rows)["names"]
    return {"grid": {"type": "array", "maxItems": rows, "items": names}}


def _list(items: dict[str, Any], **extensions: Any) -> dict[str, Any]:
    return {"type": "array", "maxItems": 4, "items": items, **extensions}


def _keyed(items: dict[str, Any], keys: tuple[str, ...] = ("name",)) -> dict[str, Any]:
    """A ``list-type: map`` list keyed by ``keys``."""
    return _list(items, **{"x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": list(keys)})


def _object(required: tuple[str, ...] = (), **properties: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **({"required": list(required)} if required else {})}


#: Schemas of a property ``x`` whose ``x-kubernetes-*`` extensions the API server refuses or accepts.
_EXTENSION_SCHEMAS: dict[str, dict[str, Any]] = {
    "list-map-key-optional": _keyed(_object(name=_S)),
    "accepted-list-map-key-required": _keyed(_object(("name",), name=_S)),
    "accepted-list-map-key-default": _keyed(_object(name={**_S, "default": "x"})),
    "list-map-key-nullable": _keyed(_object(("name",), name={**_S, "nullable": True})),
    "list-map-without-keys": _list(_object(("name",), name=_S), **{"x-kubernetes-list-type": "map"}),
    "list-map-key-not-a-property": _keyed(_object(("name",), name=_S), ("name", "port")),
    "list-map-key-twice": _keyed(_object(("name",), name=_S), ("name", "name")),
    "list-map-key-an-object": _keyed(_object(("name",), name=_object(a=_S))),
    "list-map-of-strings": _keyed(_S),
    "list-type-on-an-object": {**_object(a=_S), "x-kubernetes-list-type": "set"},
    "list-type-unknown": _list(_S, **{"x-kubernetes-list-type": "bag"}),
    "map-keys-on-a-set": _list(
        _object(("name",), name=_S),
        **{"x-kubernetes-list-type": "set", "x-kubernetes-list-map-keys": ["name"]},
    ),
    "map-keys-without-list-type": _list(
        _object(("name",), name=_S), **{"x-kubernetes-list-map-keys": ["name"]}
    ),
    "map-type-on-a-list": _list(_S, **{"x-kubernetes-map-type": "atomic"}),
    "map-type-unknown": {**_object(a=_S), "x-kubernetes-map-type": "loose"},
    "set-of-nullable-items": _list({**_S, "nullable": True}, **{"x-kubernetes-list-type": "set"}),
    "set-of-granular-objects": _list(_object(a=_S), **{"x-kubernetes-list-type": "set"}),
    "accepted-set-of-atomic-objects": _list(
        {**_object(a=_S), "x-kubernetes-map-type": "atomic"}, **{"x-kubernetes-list-type": "set"}
    ),
    "set-of-keyed-lists": _list(_keyed(_object(("name",), name=_S)), **{"x-kubernetes-list-type": "set"}),
    "preserve-unknown-fields-false": {**_object(a=_S), "x-kubernetes-preserve-unknown-fields": False},
}

#: CRDs, each with one rule the API server refuses or accepts when the CRD is created (tag: CRD).
REFUSAL_CRDS: dict[str, dict[str, Any]] = {
    tag: _one_rule(tag, rule, *where)
    for tag, rule, *where in [
        ("accepted-plain", _r("self.a > 0")),
        ("accepted-transform-map", _r("self.tags.all(t, t.size() > 0)")),
        ("accepted-list-reverse", _r("self.tags.reverse().size() >= 0")),
        ("accepted-sets", _r("sets.contains(self.tags, ['x']) || true")),
        ("accepted-old-self-map", _r("self == oldSelf", message="immutable"), "free"),
        ("bind", _r("cel.bind(x, self.a, x > 0)")),
        ("math", _r("math.greatest(self.a, 1) > 0")),
        ("strings-reverse", _r("self.s.reverse() != ''")),
        ("syntax", _r("self.a >")),
        ("not-bool", _r("self.a + 1")),
        ("message-expression-int", _r("self.a > 0", messageExpression="self.a")),
        ("field-path-unknown", _r("self.a > 0", fieldPath=".nope")),
        ("field-path-bad", _r("self.a > 0", fieldPath="a..b")),
        ("reason-unknown", _r("self.a > 0", reason="FieldValueWrong")),
        ("old-self-set-item", _r("self == oldSelf"), "tags"),
        ("old-self-atomic-item", _r("self.n == oldSelf.n"), "steps"),
        ("root-labels", _r("!has(self.metadata.labels)"), ""),
        ("embedded-annotations", _r("!has(self.metadata.annotations)"), "emb"),
        ("mixed-list", _r("self.a in [1, 'two']")),
        ("int-double", _r("self.a == 2.5")),
        ("undeclared-free", _r("self.other == 1"), "free"),
        ("string-int", _r("self.s == 1")),
        ("cost-nested-unbounded", _r("self.s.split(',').all(x, self.s.split(',').exists(y, x == y))")),
        ("cost-split-join", _r("self.s.split('-').join('.') != ''")),
        ("cost-quantity-ne", _r("quantity(self.s) != quantity('1')")),
        ("cost-quantity-bounded", _r("quantity(self.q) != quantity('1')")),
        # Near the per-rule budget (10,000,000): a name check over every item of a list of 63-character
        # strings, 47,169 items cost 9,999,831, 47,170 cost 10,000,043.
        ("accepted-cost-rule-under", _r(_NAMES_RULE), "spec", _names(47169)),
        ("cost-rule-over", _r(_NAMES_RULE), "spec", _names(47170)),
        ("cost-rule-over-2x", _r(_NAMES_RULE), "spec", _names(120000)),
        # Near the per-CRD budget (100,000,000): rules each under the per-rule budget.
        (
            "accepted-cost-crd-under",
            [_r(_NAMES_RULE, message=f"m{i}") for i in range(10)],
            "spec",
            _names(47169),
        ),
        ("cost-crd-over", [_r(_NAMES_RULE, message=f"m{i}") for i in range(11)], "spec", _names(47169)),
        # A rule on list items counts once per item: maxItems bounds it, else the largest request does.
        ("accepted-cost-items-bounded", _r(_NAME_RULE), "names", _names(47846)),
        ("cost-items-bounded-over", _r(_NAME_RULE), "names", _names(47847)),
        ("cost-items-unbounded", _r(_NAME_RULE), "names", _names(None)),
        ("accepted-cost-grid", _r(_NAMES_RULE.replace("self.names", "self")), "grid", _grid(216)),
        ("cost-grid-over", _r(_NAMES_RULE.replace("self.names", "self")), "grid", _grid(219)),
        ("cost-message-expression", _r("self.a > 0", messageExpression="self.s.split(',').join('-')")),
        # Rules that do not compile, of many shapes: the API server's words name each error's place.
        ("undeclared-function", _r("self.s.frobnicate() == 1")),
        ("format-decimal-string", _r("'%d'.format([self.s]) == ''")),
        ("format-fixed-int", _r("'%.2f'.format([self.a]) == ''")),
        ("format-too-many-args", _r("'%s'.format([self.s, self.a]) == ''")),
        ("format-bad-clause", _r("'%q'.format([self.s]) == ''")),
        ("accepted-format-dyn", _r("'%d and %s'.format([self.a, self.tags]) != ''")),
        ("and-of-int", _r("self.a && true")),
        ("range-of-int", _r("self.a.all(x, x > 0)")),
        ("or-value-type", _r("self.?a.orValue('x') == 'x'")),
        ("map-mixed-values", _r("{'a': 1, 'b': 'x'}.size() > 0")),
        ("two-errors", _r("self.s + 1 > 0 && self.nope")),
        ("item-struct", _r("self.steps[0] == 'x'")),
        ("second-line", _r("self.a > 0 &&\n  self.s == 1", message="two lines")),
        ("wide-characters", _r("self.s == 'é' && self.a == 'x'")),
        ("not-bool-string", _r("self.s")),
        ("duration-literal", _r("duration('1d') > duration('1h')")),
        ("timestamp-literal", _r("timestamp('x') > timestamp('2020-01-01T00:00:00Z')")),
        ("regex-literal", _r("self.s.matches('[')")),
        ("message-expression-syntax", _r("self.a > 0", messageExpression="self.a +")),
        ("message-expression-undefined", _r("self.a > 0", messageExpression="self.nope")),
        ("rule-lines-without-message", _r("self.a > 0 &&\n  self.a < 10")),
        ("message-blank", _r("self.a > 0", message="  ")),
        ("message-line-break", _r("self.a > 0", message="one\ntwo")),
        ("optional-old-self-unused", _r("self.a > 0", optionalOldSelf=False)),
        ("compile-error-and-bad-field-path", _r("self.nope > 0", fieldPath=".nope")),
        # List and map types, map keys and their items, as the API server holds the extensions to them.
        *((tag, _r("self.a > 0"), "spec", {"x": schema}) for tag, schema in _EXTENSION_SCHEMAS.items()),
        # Defaults the API server holds to their schema and rules when the CRD is created.
        (
            "accepted-default-valid",
            _r("self.startsWith('a')"),
            "q",
            {"q": {"type": "string", "default": "abc"}},
        ),
        ("default-rule-false", _r("self.startsWith('a')"), "q", {"q": {"type": "string", "default": "x"}}),
        (
            "default-rule-error",
            _r("int(self) > 0", message="a number"),
            "q",
            {"q": {"type": "string", "default": "x"}},
        ),
        (
            "default-pattern",
            _r("self.size() > 0"),
            "q",
            {"q": {"type": "string", "pattern": "^a", "default": "x"}},
        ),
        ("default-type", _r("self > 0"), "a", {"a": {"type": "integer", "default": "x"}}),
        ("default-enum", _r("self != 'z'"), "q", {"q": {"type": "string", "enum": ["a"], "default": "x"}}),
        (
            "default-object-rule",
            _r("self.n < 3", message="small"),
            "box",
            {"box": {"type": "object", "properties": {"n": _I}, "default": {"n": 5}}},
        ),
        (
            "default-unknown-field",
            _r("!has(self.n) || self.n < 3"),
            "box",
            {"box": {"type": "object", "properties": {"n": _I}, "default": {"n": 1, "m": 2}}},
        ),
        (
            "default-optional-old-self",
            _r("!oldSelf.hasValue() || self > oldSelf.value()", optionalOldSelf=True),
            "a",
            {"a": {"type": "integer", "default": 3}},
        ),
        (
            "default-and-compile-error",
            _r("self.nope == 1"),
            "box",
            {"box": {"type": "object", "properties": {"n": _I}, "default": {"n": 1}}},
        ),
        (
            "accepted-default-under-item-rule",
            _r("self.n > 0", message="positive"),
            "steps",
            {
                "steps": {
                    "type": "array",
                    "maxItems": 8,
                    "items": {"type": "object", "properties": {"n": {**_I, "default": -1}}},
                }
            },
        ),
    ]
}


def crd_text(name: str) -> str:
    return yaml.safe_dump(CRDS[name], sort_keys=False)


def write_crds() -> None:
    """Write :data:`CRDS` to their files (``python -m tests.crd_classes``)."""
    FOLDER.mkdir(parents=True, exist_ok=True)
    for name in CRDS:
        (FOLDER / f"{name}.yaml").write_text(crd_text(name), encoding="utf-8")


def _obj(kind: str, spec: dict[str, Any], name: str = "a") -> dict[str, Any]:
    return {
        "apiVersion": f"{GROUP}/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "default"},
        "spec": copy.deepcopy(spec),
    }


def _keep(**spec: Any) -> dict[str, Any]:
    return _obj("Keeper", {"note": "n", **spec})


def _anc(**spec: Any) -> dict[str, Any]:
    return _obj("Ancestor", {"floor": 1, "note": "n", **spec})


#: (class, CRD, tag, object, previous object or None)
CASES: list[tuple[str, str, str, dict[str, Any], dict[str, Any] | None]] = [
    # --- an ancestor's rule reads a mistyped value an update keeps ------------------------------------
    ("ratchet-ancestor", "ancestor", "valid-create", _anc(limit=3), None),
    ("ratchet-ancestor", "ancestor", "floor-string-create", _anc(floor="5"), None),
    (
        "ratchet-ancestor",
        "ancestor",
        "floor-string-read",
        _anc(floor="5", limit=9, note="m"),
        _anc(floor="5", limit=9),
    ),
    ("ratchet-ancestor", "ancestor", "floor-string-unread", _anc(floor="5", note="m"), _anc(floor="5")),
    ("ratchet-ancestor", "ancestor", "limit-string-read", _anc(limit="9", floor=2), _anc(limit="9")),
    (
        "ratchet-ancestor",
        "ancestor",
        "box-size-unread",
        _anc(box={"size": "big", "label": "y"}),
        _anc(box={"size": "big", "label": "z"}),
    ),
    (
        "ratchet-ancestor",
        "ancestor",
        "box-size-compared",
        _anc(box={"size": "big", "label": "frozen"}, note="m"),
        _anc(box={"size": "big", "label": "frozen"}),
    ),
    ("ratchet-ancestor", "ancestor", "mode-number-root", _anc(mode=7, floor=2), _anc(mode=7)),
    (
        "ratchet-ancestor",
        "ancestor",
        "slot-port-string",
        _anc(slots=[{"port": "http"}], note="m"),
        _anc(slots=[{"port": "http"}]),
    ),
    (
        "ratchet-ancestor",
        "ancestor",
        "slot-null-item",
        _anc(slots=[None, {"port": 1}], note="m"),
        _anc(slots=[None, {"port": 1}]),
    ),
    (
        "ratchet-ancestor",
        "ancestor",
        "slot-name-number-unread",
        _anc(slots=[{"name": 5, "port": 1}], note="m"),
        _anc(slots=[{"name": 5, "port": 1}]),
    ),
    (
        "ratchet-ancestor",
        "ancestor",
        "tags-object-root",
        _anc(tags={"a": "b"}, note="m"),
        _anc(tags={"a": "b"}),
    ),
    ("ratchet-ancestor", "ancestor", "note-number-root", _anc(note=5, floor=3), _anc(note=5)),
    ("ratchet-ancestor", "ancestor", "tag-number-item", _anc(tags=["a", 5], note="m"), _anc(tags=["a", 5])),
    (
        "ratchet-ancestor",
        "ledger",
        "ledger-valid-create",
        _obj("Ledger", {"size": 3, "counts": {"a": 1}, "weights": [{"name": "w", "weight": 2}]}),
        None,
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "count-string-map-rule",
        _obj("Ledger", {"counts": {"a": "x"}, "note": "m"}),
        _obj("Ledger", {"counts": {"a": "x"}}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "size-bool-spec-rule",
        _obj("Ledger", {"size": True, "note": "m"}),
        _obj("Ledger", {"size": True}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "size-fraction-spec-rule",
        _obj("Ledger", {"size": 1.5, "note": "m"}),
        _obj("Ledger", {"size": 1.5}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "when-not-a-date",
        _obj("Ledger", {"when": "soon", "note": "m"}),
        _obj("Ledger", {"when": "soon"}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "weight-string-item",
        _obj("Ledger", {"weights": [{"name": "w", "weight": "heavy"}], "note": "m"}),
        _obj("Ledger", {"weights": [{"name": "w", "weight": "heavy"}]}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "int-string-set",
        _obj("Ledger", {"ints": [1, "two"], "note": "m"}),
        _obj("Ledger", {"ints": [1, "two"]}),
    ),
    (
        "ratchet-ancestor",
        "ledger",
        "weight-grows",
        _obj("Ledger", {"weights": [{"name": "w", "weight": 1}]}),
        _obj("Ledger", {"weights": [{"name": "w", "weight": 2}]}),
    ),
    # --- cel-go's code meets the kept value's conversion error: passes over it, or fails ---------------------
    (
        "unreadable",
        "keeper",
        "valid-create",
        _keep(ports=[80], codes=[200], when="2024-01-01T00:00:00Z"),
        None,
    ),
    (
        "unreadable",
        "keeper",
        "ports-string-beside-80",
        _keep(ports=[80, "x"], note="m"),
        _keep(ports=[80, "x"]),
    ),
    ("unreadable", "keeper", "ports-only-string", _keep(ports=["x"], note="m"), _keep(ports=["x"])),
    ("unreadable", "keeper", "codes-string", _keep(codes=[200, "x"], note="m"), _keep(codes=[200, "x"])),
    (
        "unreadable",
        "keeper",
        "limits-cpu-string",
        _keep(limits={"cpu": "x"}, note="m"),
        _keep(limits={"cpu": "x"}),
    ),
    (
        "unreadable",
        "keeper",
        "limits-mem-string",
        _keep(limits={"mem": "x"}, note="m"),
        _keep(limits={"mem": "x"}),
    ),
    (
        "unreadable",
        "keeper",
        "box-size-string",
        _keep(box={"size": "big", "label": "y"}, note="m"),
        _keep(box={"size": "big", "label": "y"}),
    ),
    (
        "unreadable",
        "keeper",
        "depth-string",
        _keep(deep={"inner": {"depth": "x"}}, note="m"),
        _keep(deep={"inner": {"depth": "x"}}),
    ),
    ("unreadable", "keeper", "when-not-a-date", _keep(when="soon", note="m"), _keep(when="soon")),
    (
        "unreadable",
        "keeper",
        "when-kept",
        _keep(when="2024-01-01T00:00:00Z", note="m"),
        _keep(when="2024-01-01T00:00:00Z"),
    ),
    ("unreadable", "keeper", "level-string", _keep(level="high"), None),
    ("unreadable", "keeper", "level-number", _keep(level=3), None),
    # --- string formats as CEL types ---------------------------------------------------------------------
    ("format-type", "formats", "at-after", _obj("Stamp", {"at": "2024-06-01T10:00:00Z"}), None),
    ("format-type", "formats", "at-before", _obj("Stamp", {"at": "2023-12-31T23:59:59Z"}), None),
    ("format-type", "formats", "at-offset", _obj("Stamp", {"at": "2024-01-01T00:30:00+01:00"}), None),
    ("format-type", "formats", "day-recent", _obj("Stamp", {"day": "2021-03-04"}), None),
    ("format-type", "formats", "day-old", _obj("Stamp", {"day": "2019-12-31"}), None),
    ("format-type", "formats", "wait-short", _obj("Stamp", {"wait": "90m"}), None),
    ("format-type", "formats", "wait-long", _obj("Stamp", {"wait": "25h"}), None),
    ("format-type", "formats", "wait-words", _obj("Stamp", {"wait": "2 days"}), None),
    ("format-type", "formats", "lag-negative", _obj("Stamp", {"lag": "-5m"}), None),
    ("format-type", "formats", "lag-zero", _obj("Stamp", {"lag": "0"}), None),
    ("format-type", "formats", "at-fraction", _obj("Stamp", {"at": "2024-06-01T10:00:00.123Z"}), None),
    ("format-type", "formats", "blob-short", _obj("Stamp", {"blob": "aGk="}), None),
    ("format-type", "formats", "blob-long", _obj("Stamp", {"blob": "aGVsbG8="}), None),
    (
        "format-type",
        "formats",
        "start-before-end",
        _obj("Stamp", {"start": "2024-01-01T00:00:00Z", "end": "2024-01-02T00:00:00Z"}),
        None,
    ),
    (
        "format-type",
        "formats",
        "start-after-end",
        _obj("Stamp", {"start": "2024-01-03T00:00:00Z", "end": "2024-01-02T00:00:00Z"}),
        None,
    ),
    # --- quantities by value --------------------------------------------------------------------------------
    ("quantity-equal", "quantities", "millis-and-one", _obj("Measure", {"a": "1000m", "b": "1"}), None),
    ("quantity-equal", "quantities", "gi-and-mi", _obj("Measure", {"a": "1Gi", "b": "1024Mi"}), None),
    ("quantity-equal", "quantities", "decimal-and-binary", _obj("Measure", {"a": "1G", "b": "1Gi"}), None),
    ("quantity-equal", "quantities", "half", _obj("Measure", {"a": "0.5", "b": "500m"}), None),
    ("quantity-equal", "quantities", "exponent", _obj("Measure", {"a": "1e3", "b": "1k"}), None),
    ("quantity-equal", "quantities", "in-list-millis", _obj("Measure", {"c": "1000m"}), None),
    ("quantity-equal", "quantities", "in-list-mi", _obj("Measure", {"c": "2048Mi"}), None),
    ("quantity-equal", "quantities", "semver-short", _obj("Measure", {"v": "v1.2"}), None),
    ("quantity-equal", "quantities", "semver-other", _obj("Measure", {"v": "1.2.1"}), None),
    ("quantity-equal", "quantities", "not-in-list", _obj("Measure", {"c": "3"}), None),
    # --- macros and extensions --------------------------------------------------------------------------------
    ("macro", "macros", "short-distinct", _obj("Mapper", {"labels": {"a": "x", "b": "y"}}), None),
    ("macro", "macros", "long-value", _obj("Mapper", {"labels": {"a": "abcdefghij"}}), None),
    ("macro", "macros", "same-values", _obj("Mapper", {"labels": {"a": "x", "b": "x"}}), None),
    (
        "macro",
        "macros",
        "four-labels",
        _obj("Mapper", {"labels": {"a": "1", "b": "2", "c": "3", "d": "4"}}),
        None,
    ),
    # --- nullable fields and has() ------------------------------------------------------------------------
    ("nullable-has", "nullable", "opt-null", _obj("Maybe", {"opt": None}), None),
    ("nullable-has", "nullable", "opt-empty", _obj("Maybe", {"opt": ""}), None),
    ("nullable-has", "nullable", "inner-null", _obj("Maybe", {"inner": None}), None),
    ("nullable-has", "nullable", "inner-zero", _obj("Maybe", {"inner": {"x": 0}}), None),
    ("nullable-has", "nullable", "map-null-value", _obj("Maybe", {"m": {"k": None}}), None),
    ("nullable-has", "nullable", "map-empty-value", _obj("Maybe", {"m": {"k": ""}}), None),
    # --- embedded resources -----------------------------------------------------------------------------------
    (
        "embedded",
        "embedded",
        "with-meta",
        _obj(
            "Holder",
            {
                "emb": {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": "c", "generateName": "c-", "creationTimestamp": None},
                }
            },
        ),
        None,
    ),
    (
        "embedded",
        "embedded",
        "no-kind",
        _obj("Holder", {"emb": {"apiVersion": "v1", "metadata": {"name": "c"}}}),
        None,
    ),
    ("embedded", "embedded", "no-api-version", _obj("Holder", {"emb": {"kind": "ConfigMap"}}), None),
    ("embedded", "embedded", "secret", _obj("Holder", {"emb": {"apiVersion": "v1", "kind": "Secret"}}), None),
    (
        "embedded",
        "embedded",
        "bad-kind",
        _obj("Holder", {"emb": {"apiVersion": "v1", "kind": "Config_Map"}}),
        None,
    ),
    (
        "embedded",
        "embedded",
        "bad-api-version",
        _obj("Holder", {"emb": {"apiVersion": "a/b/c", "kind": "ConfigMap"}}),
        None,
    ),
    (
        "embedded",
        "embedded",
        "bad-label",
        _obj(
            "Holder", {"emb": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"labels": {"a b": "c"}}}}
        ),
        None,
    ),
    (
        "embedded",
        "embedded",
        "meta-unknown",
        _obj("Holder", {"emb": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"colour": "red"}}}),
        None,
    ),
    (
        "embedded",
        "embedded",
        "name-slash",
        _obj("Holder", {"emb": {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a/b"}}}),
        None,
    ),
    (
        "embedded",
        "embedded",
        "data",
        _obj("Holder", {"emb": {"apiVersion": "v1", "kind": "ConfigMap", "data": {"k": "v"}}}),
        None,
    ),
    # --- numbers as the API server decodes them -------------------------------------------------------------
    (
        "embedded",
        "embedded",
        "list-no-kind",
        _obj("Holder", {"more": [{"apiVersion": "v1", "kind": "A"}, {"apiVersion": "v1"}]}),
        None,
    ),
    (
        "embedded",
        "embedded",
        "list-bad-generate-name",
        _obj("Holder", {"more": [{"apiVersion": "v1", "kind": "A", "metadata": {"generateName": "a%b-"}}]}),
        None,
    ),
    ("number", "numbers", "ratio-0.3", _obj("Number", {"ratio": 0.3}), None),
    ("number", "numbers", "ratio-0.7", _obj("Number", {"ratio": 0.7}), None),
    ("number", "numbers", "ratio-0.35", _obj("Number", {"ratio": 0.35}), None),
    ("number", "numbers", "ratio-integer", _obj("Number", {"ratio": 3}), None),
    ("number", "numbers", "half-integer", _obj("Number", {"half": 2}), None),
    ("number", "numbers", "half-1.5", _obj("Number", {"half": 1.5}), None),
    ("number", "numbers", "half-1.25", _obj("Number", {"half": 1.25}), None),
    ("number", "numbers", "count-6", _obj("Number", {"count": 6}), None),
    ("number", "numbers", "count-minus-6", _obj("Number", {"count": -6}), None),
    ("number", "numbers", "half-minus-1.5", _obj("Number", {"half": -1.5}), None),
    ("number", "numbers", "ratio-tiny-off", _obj("Number", {"ratio": 0.1000001}), None),
    ("number", "numbers", "count-7", _obj("Number", {"count": 7}), None),
    ("number", "numbers", "set-1-and-1.0", _obj("Number", {"set": [1, 1.0]}), None),
    ("number", "numbers", "set-0.5-twice", _obj("Number", {"set": [0.5, 0.5]}), None),
    ("number", "numbers", "set-distinct", _obj("Number", {"set": [1, 1.5]}), None),
    # --- int32 and float ranges ----------------------------------------------------------------------------
    ("int-format", "intformats", "int32-max", _obj("Width", {"small": 2**31 - 1}), None),
    ("int-format", "intformats", "int32-over", _obj("Width", {"small": 2**31}), None),
    ("int-format", "intformats", "int32-under", _obj("Width", {"small": -(2**31) - 1}), None),
    ("int-format", "intformats", "int64-over-int32", _obj("Width", {"big": 2**40}), None),
    ("int-format", "intformats", "float-max", _obj("Width", {"real": 3.4e38}), None),
    ("int-format", "intformats", "float-over", _obj("Width", {"real": 1e39}), None),
    ("int-format", "intformats", "float-under", _obj("Width", {"real": -1e39}), None),
    ("int-format", "intformats", "double-big", _obj("Width", {"wide": 1e300}), None),
    # --- a request that cannot be decoded: an embedded resource's type meta and ObjectMeta -----------------
    (
        "decode",
        "decoded",
        "tpl-valid",
        _obj(
            "Decoded",
            dict(tpl={"apiVersion": "v1", "kind": "K", "metadata": {"name": "x", "labels": {"a": "b"}}}),
        ),
        None,
    ),
    (
        "decode",
        "decoded",
        "tpl-label-number",
        _obj("Decoded", dict(tpl={"apiVersion": "v1", "kind": "K", "metadata": {"labels": {"a": 1}}})),
        None,
    ),
    (
        "decode",
        "decoded",
        "item-label-number",
        _obj("Decoded", dict(res=[{"apiVersion": "v1", "kind": "K", "metadata": {"labels": {"a": 1}}}])),
        None,
    ),
    (
        "decode",
        "decoded",
        "item-annotations-list",
        _obj("Decoded", dict(res=[{"apiVersion": "v1", "kind": "K", "metadata": {"annotations": ["x"]}}])),
        None,
    ),
    (
        "decode",
        "decoded",
        "item-name-number",
        _obj("Decoded", dict(res=[{"apiVersion": "v1", "kind": "K", "metadata": {"name": 5}}])),
        None,
    ),
    (
        "decode",
        "decoded",
        "item-finalizer-number",
        _obj("Decoded", dict(res=[{"apiVersion": "v1", "kind": "K", "metadata": {"finalizers": [1]}}])),
        None,
    ),
    (
        "decode",
        "decoded",
        "free-metadata-string",
        _obj("Decoded", dict(free={"apiVersion": "v1", "kind": "K", "metadata": "x"})),
        None,
    ),
    (
        "decode",
        "decoded",
        "free-generation-string",
        _obj("Decoded", dict(free={"apiVersion": "v1", "kind": "K", "metadata": {"generation": "x"}})),
        None,
    ),
    (
        "decode",
        "decoded",
        "free-generation-fraction",
        _obj("Decoded", dict(free={"apiVersion": "v1", "kind": "K", "metadata": {"generation": 1.5}})),
        None,
    ),
    (
        "decode",
        "decoded",
        "free-uid-number",
        _obj("Decoded", dict(free={"apiVersion": "v1", "kind": "K", "metadata": {"uid": 3}})),
        None,
    ),
    (
        "decode",
        "decoded",
        "map-value-kind-number",
        _obj("Decoded", dict(byName={"a": {"apiVersion": "v1", "kind": 3}})),
        None,
    ),
    (
        "decode",
        "decoded",
        "tpl-kind-number",
        _obj("Decoded", dict(tpl={"apiVersion": "v1", "kind": 3})),
        None,
    ),
    (
        "decode",
        "decoded",
        "tpl-api-version-list",
        _obj("Decoded", dict(tpl={"apiVersion": ["v1"], "kind": "K"})),
        None,
    ),
    (
        "decode",
        "decoded",
        "root-label-number",
        {**_obj("Decoded", {}), "metadata": {"name": "a", "namespace": "default", "labels": {"a": 1}}},
        None,
    ),
    # --- cel-go's runtime errors, in its words ---------------------------------------------------------------
    ("runtime-words", "runtime", "div", _obj("Runtime", {"e": "div", "a": 1, "b": 0}), None),
    ("runtime-words", "runtime", "div-ok", _obj("Runtime", {"e": "div", "a": 2, "b": 2}), None),
    ("runtime-words", "runtime", "mod", _obj("Runtime", {"e": "mod", "a": 1, "b": 0}), None),
    ("runtime-words", "runtime", "uint", _obj("Runtime", {"e": "uint", "a": -1}), None),
    ("runtime-words", "runtime", "uintdbl", _obj("Runtime", {"e": "uintdbl", "d": -1.5}), None),
    ("runtime-words", "runtime", "intdbl", _obj("Runtime", {"e": "intdbl", "d": 1e30}), None),
    ("runtime-words", "runtime", "dur", _obj("Runtime", {"e": "dur", "s": "1d"}), None),
    ("runtime-words", "runtime", "dur-ok", _obj("Runtime", {"e": "dur", "s": "1h"}), None),
    ("runtime-words", "runtime", "ts", _obj("Runtime", {"e": "ts", "s": "2020-01-01"}), None),
    ("runtime-words", "runtime", "bool", _obj("Runtime", {"e": "bool", "s": "yes"}), None),
    ("runtime-words", "runtime", "bool-ok", _obj("Runtime", {"e": "bool", "s": "true"}), None),
    ("runtime-words", "runtime", "fmt-d", _obj("Runtime", {"e": "fmt-d", "d": 1}), None),
    ("runtime-words", "runtime", "fmt-f", _obj("Runtime", {"e": "fmt-f", "a": 1}), None),
    ("runtime-words", "runtime", "fmt-e", _obj("Runtime", {"e": "fmt-e", "a": 3}), None),
    ("runtime-words", "runtime", "fmt-x", _obj("Runtime", {"e": "fmt-x", "d": 1.5}), None),
    ("runtime-words", "runtime", "fmt-b", _obj("Runtime", {"e": "fmt-b", "s": "x"}), None),
    ("runtime-words", "runtime", "fmt-o", _obj("Runtime", {"e": "fmt-o", "d": 2}), None),
    ("runtime-words", "runtime", "fmt-nan", _obj("Runtime", {"e": "fmt-nan", "s": "NaN"}), None),
    ("runtime-words", "runtime", "fmt-nan-x", _obj("Runtime", {"e": "fmt-nan", "s": "x"}), None),
    ("runtime-words", "runtime", "fmt-s", _obj("Runtime", {"e": "fmt-s", "s": "1Gi"}), None),
    ("runtime-words", "runtime", "fmt-map", _obj("Runtime", {"e": "fmt-map", "s": "1"}), None),
    ("runtime-words", "runtime", "fmt-few", _obj("Runtime", {"e": "fmt-few", "l": [1]}), None),
    ("runtime-words", "runtime", "fmt-few-ok", _obj("Runtime", {"e": "fmt-few", "l": [1, 2]}), None),
    ("runtime-words", "runtime", "fmt-verb-q", _obj("Runtime", {"e": "fmt-verb", "s": "%q"}), None),
    ("runtime-words", "runtime", "fmt-verb-dot", _obj("Runtime", {"e": "fmt-verb", "s": "%."}), None),
    ("runtime-words", "runtime", "fmt-verb-dotx", _obj("Runtime", {"e": "fmt-verb", "s": "%.x"}), None),
    ("runtime-words", "runtime", "fmt-verb-end", _obj("Runtime", {"e": "fmt-verb", "s": "a%"}), None),
    ("runtime-words", "runtime", "fmt-verb-pct", _obj("Runtime", {"e": "fmt-verb", "s": "100%% %d"}), None),
    ("runtime-words", "runtime", "fmt-verb-wide", _obj("Runtime", {"e": "fmt-verb", "s": "%é"}), None),
]

#: The cases whose JSON body keeps a whole float as written (``1.0``), as a raw JSON request does; all others
#: are sent as kubectl and the Pulumi provider marshal them (``1``).
RAW_JSON = frozenset({"number/set-1-and-1.0"})


@cache
def crd_version(name: str) -> Any:
    return hand_written_crd(FOLDER / f"{name}.yaml")


def cases() -> list[Case]:
    return [Case(f"{cls}/{tag}", cls, crd_version(crd), obj, old) for cls, crd, tag, obj, old in CASES]


if __name__ == "__main__":
    write_crds()
