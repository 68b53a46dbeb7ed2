"""A generated corpus of CRDs whose rules' estimated costs the API server's own code computes
(tests/celcost_reference), for tests/test_cel_cost_reference.py to hold nodefleet's estimator
(nodefleet/apiserver/cel_cost.py) to.

Deterministic by seed. Every CRD has one to four rules, each at a schema node drawn from a fixed set of
shapes: strings with and without ``maxLength``, with an ``enum``, of the formats CEL converts (``date-time``,
``date``, ``duration``, ``byte``), numbers, booleans, int-or-string, lists and maps with and without bounds,
lists of objects, of lists and of maps, maps of maps, objects, an embedded resource, a preserve-unknown-fields
object and names CEL escapes or cannot reach; rules sit at the root, ``spec``, a field, list items and map
values (so the cardinality of lists and maps above them counts). Each rule is drawn from typed templates:
string functions (``split``/``join``/``replace``/``find``/``format``...), regular expressions, the quantity,
IP, CIDR, URL, semver and format libraries, comparisons, arithmetic, conversions, comprehensions
(``all``/``exists``/``exists_one``/``map``/``filter``, their two-variable forms,
``transformList``/``transformMap``/``transformMapEntry``), nested comprehensions, the lists and sets
extensions, optionals, conditionals, ``messageExpression`` and ``optionalOldSelf`` transition rules.

:data:`HAND_WRITTEN_RULES` are rules written by hand where the templates do not reach, one CRD each.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from typing import Any

from nodefleet.apiserver.cel import escape_property
from tests.crd_classes import crd_document

GROUP = "costs.nodefleet.io"

S = {"type": "string"}


def _str(**extra: Any) -> dict[str, Any]:
    return {"type": "string", **extra}


def _list(items: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "array", "items": items, **extra}


def _map(values: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "additionalProperties": values, **extra}


def _obj(properties: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"type": "object", "properties": properties, **extra}


#: The fields of ``spec``, one of each shape.
FIELDS: dict[str, dict[str, Any]] = {
    "s": S,
    "s8": _str(maxLength=8),
    "s300": _str(maxLength=300),
    "e": _str(enum=["ab", "abcd", "x"]),
    "dt": _str(format="date-time"),
    "day": _str(format="date"),
    "dur": _str(format="duration"),
    "blob": _str(format="byte", maxLength=16),
    "bytes": _str(format="byte"),
    "n": {"type": "integer"},
    "r": {"type": "number"},
    "f": {"type": "boolean"},
    "ios": {"x-kubernetes-int-or-string": True},
    "ios8": {"x-kubernetes-int-or-string": True, "maxLength": 8},
    "l": _list(S),
    "l4": _list(_str(maxLength=10), maxItems=4),
    "ln": _list({"type": "integer"}, maxItems=10),
    "lr": _list({"type": "number"}),
    "ls": _list(_str(maxLength=63), maxItems=20, **{"x-kubernetes-list-type": "set"}),
    "objs": _list(
        _obj(
            {"name": _str(maxLength=20), "vals": _list(S, maxItems=3), "q": S, "w": {"type": "integer"}},
            required=["name"],
        ),
        maxItems=5,
    ),
    "objsu": _list(_obj({"name": S, "vals": _list(_str(maxLength=4))}, required=["name"])),
    "ll": _list(_list(_str(maxLength=5), maxItems=3), maxItems=2),
    "llu": _list(_list(S)),
    "lm": _list(_map(_str(maxLength=4), maxProperties=2), maxItems=3),
    "m": _map(S),
    "m4": _map(_str(maxLength=10), maxProperties=4),
    "mi": _map({"type": "integer"}),
    "ml": _map(_list(S, maxItems=2), maxProperties=3),
    "mo": _map(_obj({"a": {"type": "integer"}, "b": _str(maxLength=6)}, required=["a", "b"])),
    "o": _obj(
        {
            "a": {"type": "integer"},
            "b": _str(maxLength=5),
            "c": _list(S, maxItems=2),
            "d": _obj({"e": S, "g": _str(maxLength=3, default="x")}, required=["e", "g"]),
        },
        required=["a"],
    ),
    "emb": {
        "type": "object",
        "x-kubernetes-embedded-resource": True,
        "properties": {"apiVersion": S, "kind": S, "metadata": {"type": "object"}, "data": _map(S)},
    },
    "free": {
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": True,
        "properties": {"k": {"type": "integer"}},
    },
    # names CEL escapes (a dash, a dot, a reserved word) or cannot reach (a leading digit)
    "x-y": _str(maxLength=12),
    "a.b": {"type": "integer"},
    "namespace": _str(maxLength=7),
    "1st": S,
    "mm": _map(_map(_str(maxLength=3), maxProperties=2), maxProperties=3),
    "lml": _list(_map(_list(_str(maxLength=2), maxItems=2)), maxItems=2),
    "deep": _obj({"lst": _list(_obj({"in": _list(_obj({"v": _str(maxLength=9)}), maxItems=4)}), maxItems=3)}),
}

_COMPARABLE = ("string", "int", "double", "bool", "timestamp", "duration", "bytes")


def _kind(schema: dict[str, Any]) -> str:
    if schema.get("x-kubernetes-int-or-string"):
        return "dyn"
    kind = schema.get("type")
    if kind == "string":
        return {"date-time": "timestamp", "date": "timestamp", "duration": "duration", "byte": "bytes"}.get(
            schema.get("format", ""), "string"
        )
    if kind == "array":
        return "list"
    if kind == "object":
        return "map" if "additionalProperties" in schema else "object"
    return {"integer": "int", "number": "double", "boolean": "bool"}[str(kind)]


def _fields(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The properties a rule can select, by their CEL names."""
    props: dict[str, dict[str, Any]] = {}
    for name, sub in (schema.get("properties") or {}).items():
        cel_name = escape_property(name)
        if cel_name is not None:
            # a resource's metadata is, to CEL, its name and generateName
            props[cel_name] = _obj({"name": S, "generateName": S}) if name == "metadata" else sub
    return props


class _Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.vars = 0

    def var(self) -> str:
        self.vars += 1
        return f"v{self.vars}"

    def pick(self, options: list[Callable[[], str]]) -> str:
        return self.rng.choice(options)()

    def value(self, x: str, schema: dict[str, Any]) -> str:
        """An expression computed from ``x`` (of a comparable type where it can)."""
        kind = _kind(schema)
        table: dict[str, list[str]] = {
            "string": [f"{x}", f"{x} + 'x'", f"{x}.lowerAscii()", f"{x}.size()", f"{x}.split('.')"],
            "int": [f"{x}", f"{x} + 1", f"{x} * 2", f"string({x})"],
            "double": [f"{x}", f"{x} / 2.0"],
            "bool": [f"{x}", f"!{x}"],
            "timestamp": [f"{x}", f"{x} + duration('1h')"],
            "duration": [f"{x}", f"{x}.getSeconds()"],
            "bytes": [f"{x}", f"{x}.size()"],
            "dyn": [f"{x}", f"string({x})"],
        }
        if kind in table:
            return self.rng.choice(table[kind])
        if kind == "list":
            return self.rng.choice([f"{x}.size()", f"{x}", f"{x}.map(z, 1)"])
        if kind == "map":
            return self.rng.choice([f"{x}.size()", f"{x}"])
        props = _fields(schema)
        name = self.rng.choice(sorted(props)) if props else None
        return f"{x}.{name}" if name else f"{x}"

    def rule(self, x: str, schema: dict[str, Any], depth: int = 2) -> str:
        """A bool expression about ``x``, an expression of ``schema``'s type."""
        r = self.rng
        if depth > 0 and r.random() < 0.12:
            a, b = self.rule(x, schema, depth - 1), self.rule(x, schema, depth - 1)
            return r.choice([f"{a} && {b}", f"{a} || {b}", f"!({a})", f"({a}) ? ({b}) : true"])
        kind = _kind(schema)
        return getattr(self, f"_{kind}")(x, schema, depth)

    def _string(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [
                f"{x}.size() < 100",
                f"{x} == 'abc'",
                f"{x} != ''",
                f"{x} < 'm'",
                f"{x}.startsWith('a')",
                f"{x}.endsWith('xyz')",
                f"{x}.contains('ab')",
                f"'abcdef'.contains({x})",
                f"{x}.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?$')",
                f"matches({x}, '[0-9]')",
                f"{x}.lowerAscii() == {x}",
                f"{x}.upperAscii() != ''",
                f"{x}.trim() != ''",
                f"{x}.substring(1) != ''",
                f"{x}.substring(1, 2) != ''",
                f"{x}.charAt(0) == 'a'",
                f"{x}.indexOf('a') >= 0",
                f"{x}.indexOf('a', 1) >= 0",
                f"{x}.lastIndexOf('a') >= 0",
                f"{x}.replace('a', 'bb') != ''",
                f"{x}.replace('', '-') != ''",
                f"{x}.replace('ab', 'c', 2) != ''",
                f"{x}.split(',').size() < 5",
                f"{x}.split(',', 3).size() < 5",
                f"{x}.split(',', -1).size() < 5",
                f"{x}.split('-').join('.') != ''",
                f"{x}.split(',').all(p, p.size() < 10)",
                f"{x}.split(',').exists(p, {x}.split(',').exists(q, p == q))",
                f"{x}.find('[a-z]+') != ''",
                f"{x}.findAll('a').size() < 3",
                f"{x}.findAll('a', 2).size() < 3",
                f"'%s-x'.format([{x}]) != ''",
                f"{x}.format([1]) != ''",
                f"strings.quote({x}) != ''",
                f"{x} + 'a' != ''",
                f"{x} + {x} == 'aa'",
                f"isQuantity({x}) && quantity({x}).isLessThan(quantity('10Gi'))",
                f"quantity({x}) == quantity('1')",
                f"quantity({x}) != quantity('1')",
                f"quantity({x}).add(1).sign() > 0",
                f"quantity({x}).compareTo(quantity('1k')) > 0",
                f"quantity({x}).asApproximateFloat() > 1.0",
                f"isIP({x}) && ip({x}).isLoopback()",
                f"ip({x}) == ip('::1')",
                f"ip.isCanonical({x})",
                f"isCIDR({x}) && cidr({x}).containsIP('10.0.0.1')",
                f"cidr({x}).containsIP(ip('10.0.0.1'))",
                f"cidr({x}).containsCIDR('10.0.0.0/8')",
                f"cidr({x}).containsCIDR(cidr('10.0.0.0/8'))",
                f"cidr({x}).ip().family() == 4",
                f"cidr({x}).masked().prefixLength() > 8",
                f"string(cidr({x})) != ''",
                f"string(ip({x})) != ''",
                f"isURL({x}) && url({x}).getHostname() != ''",
                f"url({x}).getQuery().size() > 0",
                f"url({x}) == url('https://example.com')",
                f"isSemver({x}) && semver({x}).isGreaterThan(semver('1.0.0'))",
                f"semver({x}, true).major() > 0",
                f"semver({x}) == semver('1.2.3')",
                f"format.dns1123Label().validate({x}).hasValue()",
                f"!format.qualifiedName().validate({x}).hasValue()",
                f"format.named('uuid').value().validate({x}).hasValue()",
                f"format.named({x}).hasValue()",
                "format.dns1123Subdomain() == format.dns1123Subdomain()",
                f"bytes({x}).size() > 0",
                f"int({x}) > 0",
                f"double({x}) > 0.5",
                f"{x} in ['a', 'b']",
                f"type({x}) == string",
                f"{x}.size() > 0 ? {x}.size() < 5 : true",
                f"dyn({x}) == 'a'",
                f"timestamp({x}) > timestamp('2020-01-01T00:00:00Z')",
                f"duration({x}) > duration('1s')",
                f"[{x}, 'a'].all(p, p != '')",
                f"{{{x}: 1}}.size() > 0",
                f"{x} in {{'a': 1}}",
            ]
        )

    def _int(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [
                f"{x} > 0",
                f"{x} + 1 < 10",
                f"{x} % 2 == 0",
                f"double({x}) > 1.5",
                f"{x} > 1.5",
                f"string({x}) != ''",
                f"{x} in [1, 2]",
                f"uint({x}) > 1u",
                f"duration(string({x}) + 's') > duration('1s')",
                f"lists.range({x}).size() > 0",
                "lists.range(5).all(i, i < 10)",
                f"{x} == 1 ? true : false",
            ]
        )

    def _double(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [f"{x} > 0.5", f"{x} * 2.0 < 10.0", f"int({x}) > 1", f"{x} > 1", f"{x} == 1.0"]
        )

    def _bool(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice([x, f"!{x}", f"{x} == true", f"({x} ? 1 : 2) > 0"])

    def _timestamp(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [
                f"{x} > timestamp('2020-01-01T00:00:00Z')",
                f"{x}.getFullYear() > 2000",
                f"{x}.getHours('UTC') < 12",
                f"{x} + duration('1h') > {x}",
                f"string({x}) != ''",
                f"{x} - {x} == duration('0s')",
                f"int({x}) > 0",
            ]
        )

    def _duration(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [f"{x} > duration('1m')", f"{x}.getSeconds() > 0", f"{x} + {x} > {x}", f"string({x}) != ''"]
        )

    def _bytes(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [
                f"{x}.size() < 10",
                f"{x} == b'abc'",
                f"string({x}) != ''",
                f"{x} + b'a' != b''",
                f"{x} < b'z'",
                f"size({x}) > 0",
            ]
        )

    def _dyn(self, x: str, schema: dict[str, Any], depth: int) -> str:
        return self.rng.choice(
            [
                f"type({x}) == int ? {x} > 0 : {x}.matches('^[0-9]+%$')",
                f"type({x}) == string && {x}.endsWith('%')",
                f"{x} == 1",
                f"string({x}).size() > 0",
                f"{x} == {x}",
                f"{x} + 1 > 1",
                f"{x}.size() > 1",
                f"size({x}) > 1",
                f"{x} in [1, 2]",
                f"{x}.contains('a')",
            ]
        )

    def _list(self, x: str, schema: dict[str, Any], depth: int) -> str:
        items = schema["items"]
        kind = _kind(items)
        e, i = self.var(), self.var()
        rule = lambda v: self.rule(v, items, depth - 1)  # noqa: E731
        value = lambda v: self.value(v, items)  # noqa: E731
        options = [
            lambda: f"{x}.size() <= 3",
            lambda: f"size({x}) <= 3",
            lambda: f"{x}.all({e}, {rule(e)})",
            lambda: f"{x}.exists({e}, {rule(e)})",
            lambda: f"{x}.exists_one({e}, {rule(e)})",
            lambda: f"{x}.filter({e}, {rule(e)}).size() > 0",
            lambda: f"{x}.map({e}, {value(e)}).size() > 0",
            lambda: f"{x}.map({e}, {rule(e)}, {value(e)}).size() >= 0",
            lambda: f"{x}.all({i}, {e}, {i} < 10 && {rule(e)})",
            lambda: f"{x}.exists({i}, {e}, {rule(e)})",
            lambda: f"{x}.exists_one({i}, {e}, {rule(e)})",
            lambda: f"{x}.existsOne({i}, {e}, {rule(e)})",
            lambda: f"{x}.transformList({i}, {e}, {value(e)}).size() > 0",
            lambda: f"{x}.transformList({i}, {e}, {rule(e)}, {value(e)}).size() > 0",
            lambda: f"{x}.transformMap({i}, {e}, {value(e)}).size() > 0",
            lambda: f"{x} == {x}",
            lambda: f"{x} != []",
            lambda: f"{x} + {x} == {x}",
            lambda: f"{x}.size() == 0 || {self.rule(f'{x}[0]', items, depth - 1)}",
            lambda: f"{x}.reverse().size() > 0",
            lambda: f"{x}.slice(0, 1).size() > 0",
            lambda: f"{x}.slice(1, {x}.size()).size() > 0",
            lambda: f"{x}.distinct().size() > 0",
            lambda: f"{x}.first().hasValue()",
            lambda: f"{x}.last().hasValue()",
            lambda: f"sets.contains({x}, {x})",
            lambda: f"sets.equivalent({x}, {x})",
            lambda: f"sets.intersects({x}, {x})",
            lambda: f"{x}.sortBy({e}, {e} == {e}).size() > 0",
            lambda: f"{x}[?0].hasValue()",
            lambda: f"[{x}].all(z, z.size() > 0)",
        ]
        if kind in _COMPARABLE:
            options += [
                lambda: f"{x}.sort() == {x}",
                lambda: f"{x}.isSorted()",
                lambda: f"{x}.indexOf({x}[0]) >= 0",
                lambda: f"{x}.lastIndexOf({x}[0]) >= 0",
                lambda: f"{x}[0] in {x}",
            ]
        if kind in ("int", "double", "string", "bytes", "timestamp", "duration"):
            options += [lambda: f"{x}.max() == {x}.min()"]
        if kind in ("int", "double"):
            options += [lambda: f"{x}.sum() > 0"]
        if kind == "string":
            options += [
                lambda: f"{x}.join(',') != ''",
                lambda: f"{x}.join() != ''",
                lambda: f"{x}.all({e}, {x}.exists({i}, {e} == {i}))",
                lambda: f"'a' in {x}",
                lambda: f"{x}.sortBy({e}, {e}.size()).size() > 0",
            ]
        if kind == "list":
            options += [lambda: f"{x}.flatten().size() > 0", lambda: f"{x}.flatten(1).size() > 0"]
        if kind == "object":
            name = self.rng.choice(sorted(_fields(items)))
            options += [
                lambda: f"{x}.all({e}, has({e}.{name}))",
                lambda: f"{x}.exists({e}, {e}.?{name}.hasValue())",
            ]
        return self.pick(options)

    def _map(self, x: str, schema: dict[str, Any], depth: int) -> str:
        values = schema["additionalProperties"]
        k, v = self.var(), self.var()
        rule = lambda y: self.rule(y, values, depth - 1)  # noqa: E731
        return self.pick(
            [
                lambda: f"{x}.size() < 5",
                lambda: f"{x}.all({k}, {k}.size() < 10)",
                lambda: f"{x}.all({k}, {rule(f'{x}[{k}]')})",
                lambda: f"{x}.exists({k}, {v}, {rule(v)})",
                lambda: f"{x}.all({k}, {v}, {k} != '' && {rule(v)})",
                lambda: f"'a' in {x}",
                lambda: f"{x}.?a.hasValue()",
                lambda: f"has({x}.a)",
                lambda: f"{x}[?'a'].hasValue()",
                lambda: f"{x}.transformMap({k}, {v}, {self.value(v, values)}).size() > 0",
                lambda: f"{x}.transformMapEntry({k}, {v}, {{{k}: {self.value(v, values)}}}).size() > 0",
                lambda: f"{x}.map({k}, {k} + 'x').size() > 0",
                lambda: f"{x}.filter({k}, {k}.startsWith('a')).size() > 0",
                lambda: f"{x} == {x}",
                lambda: f"!('a' in {x}) || {rule(f'{x}.a')}",
            ]
        )

    def _object(self, x: str, schema: dict[str, Any], depth: int) -> str:
        props = _fields(schema)
        name = self.rng.choice(sorted(props))
        sub = props[name]
        return self.pick(
            [
                lambda: self.rule(f"{x}.{name}", sub, depth),
                lambda: self.rule(f"{x}.{name}", sub, depth),
                lambda: f"has({x}.{name})",
                lambda: f"!has({x}.{name}) || {self.rule(f'{x}.{name}', sub, depth - 1)}",
                lambda: f"{x}.?{name}.hasValue()",
                lambda: f"{x}.?{name}.optMap(z, z == z).orValue(true)",
                lambda: f"{x} == {x}",
            ]
        )


def _places(schema: dict[str, Any], path: tuple[str, ...]) -> list[tuple[tuple[str, ...], dict[str, Any]]]:
    """Every node a rule can sit at, by its path of properties / ``items`` / ``additionalProperties``."""
    out = [(path, schema)]
    for name, sub in (schema.get("properties") or {}).items():
        if name != "metadata":
            out += _places(sub, (*path, name))
    if isinstance(schema.get("items"), dict):
        out += _places(schema["items"], (*path, "items"))
    if isinstance(schema.get("additionalProperties"), dict):
        out += _places(schema["additionalProperties"], (*path, "additionalProperties"))
    return out


def _node(root: dict[str, Any], path: tuple[str, ...]) -> dict[str, Any]:
    node = root
    for step in path:
        node = node[step] if step in ("items", "additionalProperties") else node["properties"][step]
    return node


def _spec() -> dict[str, Any]:
    """A fresh ``spec`` schema, sharing no node with another (rules are added to its nodes)."""
    return json.loads(json.dumps(_obj(FIELDS)))


def corpus(seed: int = 7, count: int = 600) -> list[tuple[str, dict[str, Any]]]:
    """``count`` CRDs (id, CRD object) with one to four rules each."""
    rng = random.Random(seed)
    out = []
    for n in range(count):
        spec = _spec()
        document = crd_document(GROUP, f"C{seed}n{n}", spec)
        root = document["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
        places = [*_places(spec, ("spec",)), ((), root)]
        for _ in range(rng.choice((1, 1, 1, 2, 3, 4))):
            path, _ = rng.choice(places)
            node = _node(root, path)
            gen = _Gen(rng)
            entry: dict[str, Any] = {"rule": gen.rule("self", node)}
            roll = rng.random()
            if roll < 0.08:
                entry["messageExpression"] = rng.choice(
                    ["'bad value'", "'size ' + string(self.size())", "'x'.repeat(1)", "string(self)"]
                )
            elif roll < 0.13 and path == ("spec",):
                entry = {
                    "rule": f"!oldSelf.hasValue() || {gen.rule('oldSelf.value()', node)}",
                    "optionalOldSelf": True,
                }
            elif roll < 0.18 and path == ("spec",):
                entry = {"rule": gen.rule("oldSelf", node) + " || self == oldSelf"}
            node.setdefault("x-kubernetes-validations", []).append(entry)
        out.append((f"c{seed}-{n}", document))
    return out


#: The ``spec`` the hand-written rules read.
HAND_SPEC: dict[str, Any] = _obj(
    {
        "s": S,
        "b": _str(maxLength=10),
        "e": _str(enum=["ab", "abcd"]),
        "n": {"type": "integer"},
        "d": {"type": "number"},
        "f": {"type": "boolean"},
        "l": _list(S),
        "lb": _list(_str(maxLength=3), maxItems=5),
        "ln": _list({"type": "integer"}, maxItems=10),
        "m": _map(S),
        "mb": _map({"type": "integer"}, maxProperties=4),
        "o": _obj(
            {"x": {"type": "integer"}, "y": _str(maxLength=2), "c": _list(S, maxItems=2)}, required=["x"]
        ),
        "ol": _list(_obj({"k": S, "v": _list(S)}, required=["k"])),
        "ll": _list(_list(_str(maxLength=5), maxItems=2), maxItems=3),
        "objs": _list(
            _obj({"name": _str(maxLength=20), "vals": _list(S, maxItems=3)}, required=["name"]), maxItems=5
        ),
        "objsu": _list(_obj({"name": S, "vals": _list(_str(maxLength=4))}, required=["name"])),
        "ios": {"x-kubernetes-int-or-string": True},
        "t": _str(format="date-time"),
        "du": _str(format="duration"),
        "by": _str(format="byte", maxLength=8),
        "emb": FIELDS["emb"],
        "free": FIELDS["free"],
        "x-y": _str(maxLength=12),
        "a.b": {"type": "integer"},
        "namespace": _str(maxLength=7),
        "mm": FIELDS["mm"],
        "lml": FIELDS["lml"],
        "deep": FIELDS["deep"],
    }
)

#: Rules written by hand at ``spec`` of :data:`HAND_SPEC`, where the generator's templates do not reach: list
#: and map literals, concatenations and conditionals of lists, comprehensions over computed lists nested three
#: deep, the lists extension chained, optionals in every form, regular expressions from fields, every library
#: function on fields and on literals, invalid duration, timestamp and regex literals (which the API server
#: refuses to compile), mixed literals, names CEL escapes, transition rules.
HAND_WRITTEN_RULES: tuple[str, ...] = (
    "self.s.size() > 1",
    "self.b.size() > 1",
    "self.s == 'a'",
    "self.b == self.e",
    "self.s.startsWith('x')",
    "self.b.contains('ab')",
    "self.s.matches('^a+$')",
    "matches(self.s, '^a$')",
    "self.l.all(x, x.size() < 3)",
    "self.lb.all(x, x.size() < 3)",
    "self.l.exists(x, x == 'a')",
    "self.lb.exists_one(x, x == 'a')",
    "self.lb.map(x, x + 'a').size() > 0",
    "self.lb.filter(x, x != '').size() > 0",
    "self.m.all(k, self.m[k] != '')",
    "self.mb.exists(k, self.mb[k] > 1)",
    "self.o.x > 0 && has(self.o.y)",
    "self.ol.all(i, i.k != '' && i.v.all(w, w != i.k))",
    "self.ll.all(a, a.all(b, b.size() < 4))",
    "self.s.split(',').all(x, self.s.split(',').exists(y, x == y))",
    "self.s.split('-').join('.') != ''",
    "quantity(self.s) != quantity('1')",
    "quantity(self.b) == quantity('1')",
    "quantity(self.b).isLessThan(quantity('2'))",
    "isQuantity(self.b)",
    "self.b.lowerAscii() == 'a'",
    "self.lb.isSorted()",
    "self.lb.indexOf('a') > 0",
    "self.s.indexOf('a') > 0",
    "self.b.replace('a', 'bb') != ''",
    "self.b.find('[a-z]+') != ''",
    "self.b.findAll('x').size() > 0",
    "isIP(self.b) && ip(self.b).family() == 4",
    "cidr(self.b).containsIP('1.2.3.4')",
    "cidr(self.b).containsCIDR(cidr('10.0.0.0/8'))",
    "isURL(self.b) && url(self.b).getHost() != ''",
    "isSemver(self.b) && semver(self.b).major() > 1",
    "format.dns1123Label().validate(self.b).hasValue()",
    "type(self.ios) == int",
    "self.ios == 1",
    "self.t < timestamp('2024-01-01T00:00:00Z')",
    "self.du > duration('1h')",
    "self.by.size() > 1",
    "sets.contains(self.lb, ['x'])",
    "self.lb.reverse().size() >= 0",
    "self.lb.slice(0, 2).size() > 0",
    "self.lb.sort() == self.lb",
    "self.lb.distinct().size() > 0",
    "lists.range(3).size() > 0",
    "self.mb.transformMap(k, v, v + 1).size() > 0",
    "self.lb.all(i, x, i >= 0 && x != '')",
    "self.m.exists(k, v, v == k)",
    "self.lb.existsOne(x, x == 'a')",
    "self.?o.?y.orValue('') == ''",
    "self.o.?y.hasValue()",
    "'x' in self.lb",
    "'x' in self.m",
    "self.lb[0] == 'a'",
    "self.mb['a'] == 1",
    "[1, 2, 3].all(x, x > 0)",
    "{'a': 1}.size() > 0",
    "self.s + self.b == ''",
    "self.lb + self.l == []",
    "string(self.n) == '1'",
    "int(self.s) > 1",
    "self.d > 1.5 && self.n < 3",
    "dyn(self.n) == 1",
    "self.s.format([1]) != ''",
    "strings.quote(self.b) != ''",
    "self.b.charAt(1) == 'a'",
    "self.b.substring(1) == 'a'",
    "self.b.trim() == 'a'",
    "self.b.upperAscii() == 'A'",
    "self == oldSelf",
    "self.s.size() > 0 ? self.s.size() < 10 : false",
    "self.l.map(x, x.split(',')).flatten().distinct().size() > 0",
    "self.l.map(x, x.split(',')).all(p, p.all(q, q.size() < 5))",
    "(self.f ? self.l : self.lb).all(x, x.size() > 0)",
    "(self.f ? self.l : ['a', 'b']).exists(x, x == 'a')",
    "(self.lb + ['x']).all(x, x.size() < 10)",
    "(['x'] + self.lb).all(x, x.size() < 10)",
    "[self.s, self.b].all(x, x.size() < 10)",
    "{'a': self.s}.all(k, k.size() < 3)",
    "{'a': self.s}['a'].size() < 3",
    "{self.b: 1}.exists(k, k.contains('z'))",
    "self.ol.map(o, o.v).flatten().all(x, x.size() < 3)",
    "self.ol.all(o, o.v.all(w, self.ol.exists(p, p.k == w)))",
    "self.ol.filter(o, o.k != '').map(o, o.k).join(',').size() < 100",
    "self.ll.all(a, a.all(b, self.ll.all(c, c.all(d, d == b))))",
    "self.ll.map(a, a.map(b, b.size())).all(x, x.all(y, y < 10))",
    "self.m.map(k, self.m[k]).all(v, v.size() < 5)",
    "self.mb.map(k, self.mb[k] + 1).all(v, v > 0)",
    "self.m.transformMap(k, v, v.split(',')).all(k, k != '')",
    "self.m.transformMapEntry(k, v, {v: k}).all(k, k != '')",
    "self.lb.transformMap(i, v, v.size()).all(k, k >= 0)",
    "self.lb.transformList(i, v, i).all(x, x >= 0)",
    "self.l.exists(x, x.matches(self.s))",
    "self.s.matches(self.l.join('|'))",
    "self.b.split('').all(c, c != 'x')",
    "self.s.split(',', 2).all(c, c != 'x')",
    "self.s.split(',', self.n).all(c, c != 'x')",
    "self.l.slice(1, 3).all(x, x != '')",
    "self.l.slice(0, self.n).all(x, x != '')",
    "lists.range(10).all(i, i < 10)",
    "lists.range(self.n).all(i, i < 10)",
    "self.ll.flatten().all(x, x != '')",
    "self.ll.flatten(2).size() >= 0",
    "self.lb.sort().all(x, x != '')",
    "self.lb.sortBy(e, e.size()).all(x, x != '')",
    "self.lb.sortBy(e, e).size() > 0",
    "self.lb.distinct().all(x, self.lb.exists(y, y == x))",
    "self.lb.reverse().reverse().size() > 0",
    "sets.contains(self.l, self.lb) && sets.intersects(self.lb, ['a'])",
    "sets.equivalent(self.l.map(x, x.lowerAscii()), self.lb)",
    "self.lb.first().orValue('') == ''",
    "self.lb.last().optMap(v, v.size()).orValue(0) > 0",
    "self.?o.?b.optFlatMap(v, optional.of(v + 'x')).hasValue()",
    "optional.ofNonZeroValue(self.s).hasValue()",
    "optional.none().orValue(1) == 1",
    "[?self.?s, ?optional.none()].size() > 0",
    "{?'a': self.?s}.size() > 0",
    "self.lb[?0].orValue('') == ''",
    "self.mb[?'a'].orValue(0) == 0",
    "self.?lb.orValue([]).size() > 0",
    "self.?mb.orValue({}).size() >= 0",
    "self.o.?c.orValue([]).all(x, x != '')",
    "self.s.indexOf(self.b) > 0",
    "self.s.lastIndexOf(self.b, 3) > 0",
    "self.b.replace(self.e, self.s) != ''",
    "self.b.replace('a', '') != ''",
    "self.b.replace('aa', 'b') != ''",
    "self.s.replace(self.b, self.b) != ''",
    "self.l.join(self.b) != ''",
    "self.lb.join(self.s) != ''",
    "self.ln.sum() > 0 && self.ln.max() > self.ln.min()",
    "self.ln.isSorted() && self.ln.indexOf(3) >= 0",
    "self.l.isSorted() && self.l.lastIndexOf('a') >= 0",
    "self.ln.map(x, double(x)).sum() > 1.0",
    "self.ln.exists_one(i, v, i == v)",
    "self.mb.exists_one(k, v, k == string(v))",
    "self.mb.all(k, v, v > 0)",
    "self.l.all(i, v, self.l[i] == v)",
    "self.m.all(k, v, self.m[k] == v)",
    "type(self.ios) == string && self.ios.size() < 5",
    "self.ios.size() < 5",
    "string(self.ios) == '1'",
    "self.ios == self.ios",
    "dyn(self.l).size() > 0",
    "dyn(self.m)['a'] == 'b'",
    "dyn(self.o).a > 0",
    "dyn(self.o).zz == 1",
    "self.t.getDayOfWeek('America/New_York') > 0",
    "timestamp(self.s) < self.t",
    "duration(self.s) > self.du",
    "self.du.getMilliseconds() > 0",
    "self.by.size() < 3 && string(self.by).size() < 3",
    "bytes(self.s) == self.by",
    "self.s.format([self.n, self.l]) != ''",
    "strings.quote(self.l.join(',')).size() > 0",
    "self.l.all(x, strings.quote(x).size() < 10)",
    "url(self.s).getQuery().all(k, url(self.s).getQuery()[k].size() > 0)",
    "cidr(self.b).containsIP(self.s)",
    "cidr(self.s).containsCIDR(self.b)",
    "ip(self.s) == cidr(self.b).ip()",
    "ip(self.s).isCanonical() == false || ip.isCanonical(self.s)",
    "semver(self.b) != semver('1.0.0')",
    "quantity(self.s).add(quantity(self.b)).isInteger()",
    "quantity(self.b).sub(1).asInteger() > 0",
    "format.named(self.b).hasValue() && format.named(self.b).value().validate(self.s).hasValue()",
    "format.named('dns1123Label') == format.named('dns1123Label')",
    "format.dns1123Label() == format.named('x').value()",
    "url(self.s) == url(self.b)",
    "self.l.map(x, url(x)).all(u, u == url('https://a'))",
    "self.l.map(x, quantity(x)).all(q, q == quantity('1'))",
    "self.l.map(x, quantity(x)).all(q, q != quantity('1'))",
    "[quantity(self.b)].all(q, q.isLessThan(quantity('1')))",
    "self.l.filter(x, isQuantity(x)).map(x, quantity(x)).exists(q, q.sign() < 0)",
    "self.objs.all(o, o.vals.all(v, v.size() <= o.name.size()))",
    "self.objsu.all(o, o.vals.exists(v, v == o.name))",
    "self.objs.map(o, o.vals).flatten().size() < 10",
    "self.emb.kind == 'Pod' && self.emb.metadata.name != ''",
    "has(self.emb.metadata.generateName)",
    "self.free.k > 0",
    "self.x__dash__y.size() < 3",
    "self.a__dot__b > 0",
    "self.__namespace__.size() > 0",
    "self.mm.all(k, self.mm[k].all(j, self.mm[k][j].size() < 2))",
    "self.lml.all(m, m.all(k, m[k].all(v, v.size() < 2)))",
    "self.deep.lst.all(l, l.in.all(i, i.v.size() < 5))",
    "self.deep.lst.exists(l, l.in.exists(i, self.deep.lst.exists(l2, l2.in.exists(i2, i2.v == i.v))))",
    "self.l.all(a, self.l.all(b, a.size() + b.size() < 10))",
    "self.l.all(a, a.split(',').all(p, self.l.exists(b, b == p)))",
    "self.s.size() > 0 ? self.s.split(',').size() > 1 : self.b.split(',').size() > 1",
    "self.l.size() > 0 && self.l[0].matches('^a') && self.l[self.l.size() - 1].matches('b$')",
    "self.m.exists(k, k.matches('^[a-z]+$') && self.m[k].matches('^[0-9]+$'))",
    "!(self.s in self.l) || self.s in self.m",
    "self.l.exists(x, x in self.m)",
    "self.lb.all(x, x in self.l)",
    "self.l.map(x, x.size()).exists(n, n in self.ln)",
    "int(self.r) + self.n > 0 && uint(self.n) > 0u && double(uint(1)) > 0.5",
    "self.n / 2 > 0 && self.n % 3 == 0 && -self.n < 0 && -self.r < 0.0",
    "self.r < self.n && self.n <= self.r && self.ln.exists(x, x > self.r)",
    "self == oldSelf",
    "oldSelf.l.all(x, x in self.l)",
    "self.l.size() >= oldSelf.l.size()",
    'duration("1x") > duration("1s")',
    'duration("1h30m") > duration("1s")',
    'duration("1.5h") > self.du',
    'duration("-1.5h") > self.du',
    'duration("1d") > self.du',
    'duration("") > self.du',
    'duration("0") > self.du',
    'duration("1µs") > self.du',
    'timestamp("2020-13-01T00:00:00Z") < self.t',
    'timestamp("2020-12-01T00:00:00.5+02:00") < self.t',
    'timestamp("2020-12-01T00:00:00") < self.t',
    'timestamp("2020-12-01") < self.t',
    'self.s.matches("[")',
    'self.s.matches("(?i)abc")',
    'self.s.matches("\\\\pL")',
    'self.s.matches("a{1001}")',
    'matches("(", self.s)',
    '[1, "a"].size() > 0',
    "[self.ios, 1].size() > 0",
    "[1, 2.0].size() > 0",
    "[self.n, self.r].size() > 0",
    '{"a": 1, "b": "x"}.size() > 0',
    '[[1], ["a"]].size() > 0',
    "[self.l, []].size() > 0",
    '[self.l, ["a"]].size() > 0',
    "timestamp('2020-01-01t00:00:00Z') < self.t",
    "timestamp('2020-01-01T00:00:00z') < self.t",
    "timestamp('2020-01-01T24:00:00Z') < self.t",
    "timestamp('0000-01-01T00:00:00Z') < self.t",
    "timestamp('0001-01-01T00:00:00Z') < self.t",
    "timestamp('9999-12-31T23:59:59Z') < self.t",
    "timestamp('2020-02-30T00:00:00Z') < self.t",
    "timestamp('2020-01-01T00:00:00+24:00') < self.t",
    "timestamp('2020-01-01T00:00:00+23:59') < self.t",
    "timestamp('2020-01-01T00:00:00.123456789123Z') < self.t",
    "timestamp('2020-01-01T00:00:60Z') < self.t",
    "timestamp(' 2020-01-01T00:00:00Z') < self.t",
    "duration('1.5µs') > self.du",
    "duration('9223372036854775807ns') > self.du",
    "duration('9223372036854775808ns') > self.du",
    "duration('-9223372036854775808ns') > self.du",
    "duration('2562047h') > self.du",
    "duration('2562048h') > self.du",
    "duration('.5s') > self.du",
    "duration('5.s') > self.du",
    "duration('.s') > self.du",
    "duration('+0') > self.du",
    "duration('1h 2m') > self.du",
    "timestamp('2020-01-01T1:00:00Z') < self.t",
    "timestamp('2020-01-01T00:00:00,5Z') < self.t",
    "timestamp('2020-01-01T00:00:00+24:60') < self.t",
    "timestamp('2020-01-01T00:00:00+25:00') < self.t",
    "timestamp('0000-02-29T00:00:00Z') < self.t",
    "timestamp('0001-01-01T00:00:00+00:01') < self.t",
    "timestamp('9999-12-31T23:59:59-00:01') < self.t",
    "timestamp('2019-02-29T00:00:00Z') < self.t",
    "timestamp('2020-02-29T00:00:00Z') < self.t",
    "timestamp('2020-1-01T00:00:00Z') < self.t",
    "timestamp(1) < self.t",
    "duration(1) < self.du",
)


def hand_written() -> list[tuple[str, dict[str, Any]]]:
    """A CRD for each of :data:`HAND_WRITTEN_RULES`, the rule at ``spec``."""
    out = []
    for i, rule in enumerate(HAND_WRITTEN_RULES):
        spec = json.loads(json.dumps(HAND_SPEC))
        spec["x-kubernetes-validations"] = [{"rule": rule}]
        out.append((f"hand-{i}", crd_document(GROUP, f"Hand{i}", spec)))
    return out
