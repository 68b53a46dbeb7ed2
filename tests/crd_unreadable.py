"""Hand-written cases for the third edge CRD (tests/data/crd-edges/keepers.edges.nodefleet.io.yaml): updates that
keep values of the wrong type (validation ratcheting lets them stay) under 140 rules that reach them in every
way cel-go's code can, judged by the Go reference only (the API server would refuse the CRD for its rules' cost).

The API server's CEL validator converts a field when a rule reaches it, and a failed conversion is cel-go's error
value, which each operation passes on or absorbs as its Go code does: membership, ``sets.*``, ``indexOf``,
``distinct``, ``==`` and ``!=`` of lists, maps and objects with such an item (on either side), ``has()``, ``.?``
and optional chains, list and map literals, ``type()``, comprehensions, format conversions (``date-time``,
``duration``), int-or-string values no overload takes, and ``optionalOldSelf``, under which a rule reads the
stored JSON. Every case meets every rule; the test compares each rule's outcome word for word.

``python -m tests.crd_unreadable`` writes the CRD file; a test checks it is current.
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from nodefleet.apiserver.store import CrdVersion
from tests.crd_classes import crd_document

KEEPERS = Path(__file__).resolve().parent / "data" / "crd-edges" / "keepers.edges.nodefleet.io.yaml"

_I = {"type": "integer"}
_S = {"type": "string", "maxLength": 16}

_PROPERTIES: dict[str, Any] = {
    "num": _I,
    "k": _S,
    "l": {"type": "array", "maxItems": 8, "items": _I},
    "s": {"type": "array", "maxItems": 8, "x-kubernetes-list-type": "set", "items": _I},
    "m": {"type": "object", "maxProperties": 8, "additionalProperties": _I},
    "o": {"type": "object", "properties": {"a": _I, "b": _S}},
    "ml": {
        "type": "array",
        "maxItems": 8,
        "x-kubernetes-list-type": "map",
        "x-kubernetes-list-map-keys": ["name"],
        "items": {"type": "object", "required": ["name"], "properties": {"name": _S, "v": _I}},
    },
    "good": {"type": "array", "maxItems": 8, "items": _I},
    "when": {"type": "string", "format": "date-time"},
    "wait": {"type": "string", "format": "duration"},
    "ios": {"x-kubernetes-int-or-string": True},
    "deep": {"type": "object", "properties": {"inner": {"type": "object", "properties": {"c": _I, "d": _S}}}},
    "lol": {"type": "array", "maxItems": 4, "items": {"type": "array", "maxItems": 4, "items": _I}},
    "mo": {
        "type": "object",
        "maxProperties": 4,
        "additionalProperties": {"type": "object", "properties": {"c": _I}},
    },
}


def _r(rule: str, **extra: Any) -> dict[str, Any]:
    return {"rule": rule, **extra}


#: The rules, each at ``spec`` with the message ``R<index>`` unless it has a ``messageExpression``.
RULES: list[dict[str, Any]] = [
    _r("self.l.size() == 2"),
    _r("has(self.l)"),
    _r("self.l[0] == 1"),
    _r("self.l[1] == 1"),
    _r("self.l == [1, 2]"),
    _r("[1, 2] == self.l"),
    _r("self.l == [5, 2]"),
    _r("[5, 2] == self.l"),
    _r("1 in self.l"),
    _r("5 in self.l"),
    _r("sets.intersects(self.l, [1])"),
    _r("sets.intersects(self.l, [5])"),
    _r("sets.intersects([5], self.l)"),
    _r("sets.intersects([1], self.l)"),
    _r("sets.contains(self.l, [1])"),
    _r("sets.contains(self.l, [5])"),
    _r("sets.contains([1, 2], self.l)"),
    _r("sets.equivalent(self.l, [1])"),
    _r("self.l.indexOf(1) == 0"),
    _r("self.l.indexOf(5) == -1"),
    _r("self.l.exists(x, x == 1)"),
    _r("self.l.exists(x, x == 5)"),
    _r("self.l.all(x, x == 5)"),
    _r("self.l.all(x, x > 0)"),
    # (Guarded: the API server fails a rule whose distinct(), sort() or sortBy() is given a value that failed,
    # with its cost tracker's "internal error: interface conversion", which crd-schema does not word.)
    _r("has(self.l) && type(self.l) == list ? self.l.distinct().size() == 2 : true"),
    _r("self.l.slice(0, 1) == [1]"),
    _r("self.l.slice(1, 2).size() == 1"),
    _r("self.l + [3] == [1, 2, 3]"),
    _r("(self.l + [3]).size() == 3"),
    _r("self.l.exists_one(x, x == 1)"),
    _r("self.l.map(x, x).size() == 2"),
    _r("self.l.filter(x, x == 1).size() == 1"),
    _r("self.l.reverse().size() == 2"),
    _r("self.l == self.l"),
    _r("self.l != [1, 2]"),
    _r("self.good == self.l"),
    _r("self.l.all(i, x, i == 0 || x != 1)"),
    _r("has(self.num)"),
    _r("has(self.o.a)"),
    _r("self.num == 1"),
    _r("self.num != 1"),
    _r("[self.num].size() == 1"),
    _r("{'a': self.num}.size() == 1"),
    _r("type(self.num) == int"),
    _r("dyn(self.num) == 1"),
    _r("self.?num.hasValue()"),
    _r("self.?num.orValue(5) == 5"),
    _r("self.?o.a.hasValue()"),
    _r("true ? 1 == 1 : self.num == 1"),
    _r("self.num == 1 ? true : true"),
    _r("self.num > 0 || true"),
    _r("self.o == self.o"),
    _r("self.o.b == 'q'"),
    _r("'p' in self.m"),
    _r("'q' in self.m"),
    _r("'z' in self.m"),
    _r("self.m.all(k, k != 'z')"),
    _r("self.m.q == 2"),
    _r("self.m == {'p': 1, 'q': 2}"),
    _r("{'p': 1, 'q': 2} == self.m"),
    _r("self.m.size() == 2"),
    _r("self.s == [1, 2]"),
    _r("self.s == self.s"),
    _r("self.s.size() == 2"),
    _r("1 in self.s"),
    _r("self.ml == self.ml"),
    _r("self.ml.exists(i, i.name == 'a')"),
    _r("self.ml.all(i, i.name == 'a')"),
    _r("self.ml[0].name == 'a'"),
    _r("self.ml.map(i, i.name) == ['a']"),
    _r("self.ml.filter(i, has(i.v)).size() == 1"),
    _r("string(self.num) == 'x'"),
    _r("int(self.num) == 1"),
    _r("self.num in [1, 2]"),
    _r("[1, 2].exists(x, x == self.num)"),
    _r("self.?deep.inner.c.orValue(0) == 0"),
    _r("self.?deep.inner.d.orValue('') == ''"),
    _r("self.?deep.?inner.?c.hasValue()"),
    _r("self.deep.?inner.c.hasValue()"),
    _r("has(self.deep.inner)"),
    _r("self.deep.inner == self.deep.inner"),
    _r("self.deep != self.deep"),
    _r("self.when > timestamp('2020-01-01T00:00:00Z')"),
    _r("has(self.when)"),
    _r("self.wait < duration('1h')"),
    _r("self.ios == 1"),
    _r("has(self.ios)"),
    _r("self.lol.all(x, x.size() > 0)"),
    _r("self.lol.exists(x, 1 in x)"),
    _r("self.lol[0] == [1, 2]"),
    _r("[[1, 2]] == self.lol"),
    _r("self.lol.all(x, x.all(y, y > 0))"),
    _r("self.mo.all(k, self.mo[k].c > 0)"),
    _r("self.mo.all(k, has(self.mo[k].c))"),
    _r("self.mo.a == self.mo.a"),
    _r("'a' in self.mo"),
    _r("self.l.size() > 0"),
    _r("self.?l.hasValue()"),
    _r("self.l.all(x, true)"),
    _r("self.?deep.?inner.?d.hasValue()"),
    _r("self.?deep.inner.?d.orValue('') == 'q'"),
    _r("self.?deep.?inner.d.orValue('') == 'q'"),
    _r("self.deep.?inner.?d.orValue('') == 'q'"),
    _r("self.?mo['a'].c.orValue(1) == 1"),
    _r("self.mo[?'a'].?c.hasValue()"),
    _r("self.mo[?'b'].?c.hasValue()"),
    _r("self.?mo[?'a'].c.hasValue()"),
    _r("optional.of(self.deep).?inner.d.hasValue()"),
    _r("self == oldSelf"),
    _r("self.l == oldSelf.l"),
    _r("self.num == oldSelf.num"),
    _r("self.o == oldSelf.o"),
    _r("self.s == oldSelf.s"),
    _r("oldSelf.l.size() == 2"),
    _r("oldSelf.num > 0 || true"),
    _r("self.m != oldSelf.m"),
    _r("self.num > 5", messageExpression="'R0 ' + string(self.num)"),
    _r("self.k == 'x'", messageExpression="'R1 ' + string(self.num)"),
    _r("oldSelf.hasValue() && oldSelf.value().l == self.l", optionalOldSelf=True),
    _r("!oldSelf.hasValue() || oldSelf.value().k == self.k", optionalOldSelf=True),
    _r("oldSelf.?num.orValue(0) == 0", optionalOldSelf=True),
    _r("oldSelf == optional.none() || true", optionalOldSelf=True),
    _r("oldSelf.value().l[1] == 1", optionalOldSelf=True),
    _r("oldSelf.value().num == 1", optionalOldSelf=True),
    _r("oldSelf.value().l == self.l", optionalOldSelf=True),
    _r("oldSelf.value().l == [1, 2]", optionalOldSelf=True),
    _r("oldSelf.value().num > 1", optionalOldSelf=True),
    _r("oldSelf.?num.orValue(0) > 0", optionalOldSelf=True),
    _r("has(oldSelf.value().num)", optionalOldSelf=True),
    _r("oldSelf.value().l.all(x, x > 0)", optionalOldSelf=True),
    _r("oldSelf.value().when > timestamp('2020-01-01T00:00:00Z')", optionalOldSelf=True),
    _r("oldSelf.value().when == self.when", optionalOldSelf=True),
    _r("oldSelf.value() == self", optionalOldSelf=True),
    _r("oldSelf.value().o == self.o", optionalOldSelf=True),
    _r("oldSelf.value().num == self.num", optionalOldSelf=True),
    _r("self.ios > 1"),
    _r("self.ios + 1 > 0"),
    _r("self.ios.startsWith('a')"),
    _r("size(self.ios) > 0"),
    _r("int(self.ios) > 0"),
]


def crd() -> dict[str, Any]:
    """The CRD: ``spec`` of :data:`_PROPERTIES` under :data:`RULES`."""
    validations = [{"message": f"R{i}", **rule} for i, rule in enumerate(RULES)]
    properties = copy.deepcopy(_PROPERTIES)  # no YAML anchors: each node written out
    spec = {"type": "object", "properties": properties, "x-kubernetes-validations": validations}
    return crd_document("edges.nodefleet.io", "Keeper", spec)


def crd_text() -> str:
    header = (
        "# A third CRD for tests/crd_corpus.py, written by tests/crd_unreadable.py: rules reaching values a stored\n"
        "# object holds with the wrong type. Not a CRD nodefleet ships or renders.\n"
    )
    return header + yaml.safe_dump(crd(), sort_keys=False)


@cache
def keepers() -> CrdVersion:
    from tests.crd_corpus import hand_written_crd

    return hand_written_crd(KEEPERS)


def _keep(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "edges.nodefleet.io/v1",
        "kind": "Keeper",
        "metadata": {"name": "keeper-a", "namespace": "default"},
        "spec": copy.deepcopy(spec),
    }


def _kept(tag: str, **spec: Any) -> tuple[str, str, dict[str, Any], dict[str, Any]]:
    """An update that keeps ``spec`` and changes ``k``."""
    old = _keep(**spec)
    new = copy.deepcopy(old)
    new["spec"]["k"] = "changed"
    return "unreadable", tag, new, old


_BAD = {
    "num": "x",
    "o": {"a": "x", "b": "q"},
    "m": {"p": "x", "q": 2},
    "s": [1, "x"],
    "ml": [{"name": "a", "v": "x"}],
    "deep": {"inner": {"c": "x", "d": "q"}},
    "mo": {"a": {"c": "x"}},
}

#: (class, tag, object, previous object or None).
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
    ("unreadable", "valid-create", _keep(num=1, l=[1, 2], good=[1, 2], when="2024-01-01T00:00:00Z"), None),
    _kept("list-item-string", num=1, l=[1, "x"], good=[1, 2]),
    _kept("fields-items-values-strings", **_BAD),
    _kept(
        "formats-int-or-string-nested",
        when="soon",
        wait="forever",
        ios=True,
        deep={"inner": {"c": "x", "d": "q"}},
        lol=[[1, "x"]],
        mo={"a": {"c": "x"}},
        l="abc",
    ),
    _kept("everything-kept", num="x", l=[1, "x"], o={"a": "x"}, s=[1, "x"], m={"p": "x"}),
    _kept("valid-kept", num=3, when="2024-01-01T00:00:00Z", o={"a": 1}),
    _kept("int-or-string-string", ios="abc"),
    _kept("int-or-string-number", ios=5),
]


if __name__ == "__main__":
    KEEPERS.write_text(crd_text(), encoding="utf-8")
