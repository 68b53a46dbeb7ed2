"""The checked AST of a compiled rule, read and rewritten where cel-expr-python's runtime cannot do what cel-go
does with the same expression.

cel-expr-python serializes a compiled expression as a ``google.protobuf.Any`` holding a ``cel.expr.CheckedExpr``
(the AST, the type of every node and the overload each call resolved to) and builds a program from such bytes
(``Env.deserialize``). This module reads that protobuf with a small wire-format codec (only the fields of
``cel/expr/checked.proto`` and ``syntax.proto`` it needs: the expression tree, the reference map and the type
map) and redirects calls:

- ``==``, ``!=`` and ``in`` on Kubernetes' opaque values (a quantity, a semver, an IP, a CIDR, a URL), which
  cel-expr-python carries as one-key maps (:mod:`nodefleet.apiserver.cel_library`): cel-go compares them by
  value (``quantity('1000m') == quantity('1')``), a map compares by representation;
- ``cel.@mapInsert``, the accumulator of ``transformMap`` and ``transformMapEntry``, which the C++ runtime
  declares but does not implement.

It also reads a parsed expression (a ``cel.expr.ParsedExpr``: the tree after macro expansion, before type
checking) into :class:`Node` objects, which :mod:`nodefleet.apiserver.cel_check` type-checks as cel-go does,
and a checked one into a :class:`CheckedAst` and back, which :mod:`nodefleet.apiserver.cel_unreadable`
rewrites.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "CheckedAst",
    "Entry",
    "Node",
    "checked_ast",
    "is_optional_type",
    "parsed_tree",
    "redirect_calls",
    "serialized",
    "source_positions",
]

Field = tuple[int, int, Any]  # (field number, wire type, value: int for varints, bytes otherwise)


def _varint(data: bytes, i: int) -> tuple[int, int]:
    shift = result = 0
    while True:
        byte = data[i]
        i += 1
        result |= (byte & 0x7F) << shift
        if byte < 0x80:
            return result, i
        shift += 7


def _decode(data: bytes) -> list[Field]:
    out: list[Field] = []
    i = 0
    while i < len(data):
        key, i = _varint(data, i)
        number, wire = key >> 3, key & 7
        value: Any
        if wire == 0:
            value, i = _varint(data, i)
        elif wire == 2:
            size, i = _varint(data, i)
            value, i = data[i : i + size], i + size
        elif wire == 1:
            value, i = data[i : i + 8], i + 8
        elif wire == 5:
            value, i = data[i : i + 4], i + 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        out.append((number, wire, value))
    return out


def _put_varint(value: int) -> bytes:
    out = bytearray()
    value &= (1 << 64) - 1
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def _encode(fields: list[Field]) -> bytes:
    out = bytearray()
    for number, wire, value in fields:
        out += _put_varint(number << 3 | wire)
        if wire == 0:
            out += _put_varint(value)
        elif wire == 2:
            out += _put_varint(len(value)) + value
        else:
            out += value
    return bytes(out)


def _field(fields: list[Field], number: int) -> Any:
    return next((v for n, _, v in fields if n == number), None)


#: Expression fields of each node kind that hold expressions (syntax.proto): Select.operand; Call.target and
#: args; CreateList.elements; CreateStruct.Entry.map_key and value; Comprehension's iter_range, accu_init,
#: loop_condition, loop_step and result.
_CHILDREN = {5: (1,), 6: (1, 3), 7: (1,), 9: (2, 4, 5, 6, 7)}

#: A call to redirect: (function, argument types) -> (new function, its overload ids), or None to leave it.
Redirect = Callable[[str, list[bytes]], tuple[str, tuple[str, ...]] | None]


def _walk(
    expr: bytes, types: dict[int, bytes], redirect: Redirect, refs: dict[int, tuple[str, ...]]
) -> bytes:
    fields = _decode(expr)
    changed = False
    out: list[Field] = []
    for number, wire, value in fields:
        if wire == 2 and number in _CHILDREN:
            inner = _decode(value)
            inner_out: list[Field] = []
            for n, w, v in inner:
                if w == 2 and n in _CHILDREN[number]:
                    v = _walk(v, types, redirect, refs)
                elif w == 2 and number == 8 and n == 2:  # CreateStruct entry: map_key, value
                    entry = [
                        (en, ew, _walk(ev, types, redirect, refs) if en in (3, 4) else ev)
                        for en, ew, ev in _decode(v)
                    ]
                    v = _encode(entry)
                inner_out.append((n, w, v))
            if number == 6:
                function = _field(inner_out, 2)
                args = [v for n, _, v in inner_out if n == 3]
                arg_types = [types.get(_field(_decode(a), 2) or 0, b"") for a in args]
                target = redirect(function.decode(), arg_types) if isinstance(function, bytes) else None
                if target is not None:
                    inner_out = [(n, w, target[0].encode() if n == 2 else v) for n, w, v in inner_out]
                    refs[int(_field(fields, 2) or 0)] = target[1]
            value = _encode(inner_out)
            changed = True
        out.append((number, wire, value))
    return _encode(out) if changed else expr


def redirect_calls(serialized: bytes, redirect: Redirect) -> bytes | None:
    """``serialized`` (an ``Any`` of a ``CheckedExpr``) with each call ``redirect`` names sent to another
    function and overload; None when no call was redirected."""
    outer = _decode(serialized)
    checked = _decode(_field(outer, 2))
    types = {}
    for number, _, value in checked:
        if number == 3:
            entry = _decode(value)
            types[int(_field(entry, 1) or 0)] = _field(entry, 2) or b""
    refs: dict[int, tuple[str, ...]] = {}
    expr = _walk(_field(checked, 4), types, redirect, refs)
    if not refs:
        return None
    rebuilt: list[Field] = []
    for number, wire, value in checked:
        if number == 2:
            entry = _decode(value)
            key = int(_field(entry, 1) or 0)
            if key in refs:
                reference = [(n, w, v) for n, w, v in _decode(_field(entry, 2)) if n != 3]
                reference += [(3, 2, overload.encode()) for overload in refs[key]]
                value = _encode([(1, 0, key), (2, 2, _encode(reference))])
        elif number == 4:
            value = expr
        rebuilt.append((number, wire, value))
    return _encode([(n, w, _encode(rebuilt) if n == 2 else v) for n, w, v in outer])


# ---------------------------------------------------------------------------------------------------------
# a parsed expression as a tree
# ---------------------------------------------------------------------------------------------------------


@dataclass(eq=False, slots=True)
class Entry:
    """An entry of a map literal (``key``) or of a message literal (``field``)."""

    id: int
    key: Node | None
    field: str
    value: Node
    optional: bool


@dataclass(eq=False, slots=True)
class Node:
    """One expression of a CEL tree (syntax.proto's ``Expr``), as cel-go's ``ast.Expr`` sees it.

    ``kind`` is ``literal`` (``value``, of CEL type ``literal``), ``ident`` (``name``), ``select`` (``target``
    the operand, ``name`` the field, ``test_only`` for ``has()``), ``call`` (``name`` the function, ``target``
    the receiver of a member call, ``args``), ``list`` (``args`` the elements, ``optional`` the optional
    indices), ``map`` and ``struct`` (``entries``, ``name`` the message type) or ``comprehension``.
    """

    id: int
    kind: str
    name: str = ""
    value: Any = None
    literal: str = ""
    target: Node | None = None
    args: list[Node] = field(default_factory=list)
    test_only: bool = False
    optional: tuple[int, ...] = ()
    entries: list[Entry] = field(default_factory=list)
    iter_var: str = ""
    iter_var2: str = ""
    accu_var: str = ""
    iter_range: Node | None = None
    accu_init: Node | None = None
    condition: Node | None = None
    step: Node | None = None
    result: Node | None = None

    def children(self) -> list[Node]:
        """The expressions directly under this one."""
        out = [c for c in (self.target, *self.args, self.iter_range, self.accu_init) if c is not None]
        out += [c for c in (self.condition, self.step, self.result) if c is not None]
        for entry in self.entries:
            out += [entry.key, entry.value] if entry.key is not None else [entry.value]
        return out


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


#: Constant fields (syntax.proto): the CEL type of each and how its value reads.
_CONSTANTS: dict[int, tuple[str, Callable[[Any], Any]]] = {
    1: ("null", lambda v: None),
    2: ("bool", bool),
    3: ("int", _signed),
    4: ("uint", int),
    5: ("double", lambda v: struct.unpack("<d", v)[0]),
    6: ("string", lambda v: v.decode("utf-8", errors="surrogateescape")),
    7: ("bytes", bytes),
}


def _node(data: bytes) -> Node:
    fields = _decode(data)
    node_id = int(_field(fields, 2) or 0)
    for number, _, value in fields:
        inner = _decode(value) if isinstance(value, bytes) and number >= 3 else []
        if number == 3:
            kind, read = next(((_CONSTANTS[n][0], _CONSTANTS[n][1](v)) for n, _, v in inner), ("null", None))
            return Node(node_id, "literal", value=read, literal=kind)
        if number == 4:
            return Node(node_id, "ident", name=_text(_field(inner, 1)))
        if number == 5:
            return Node(
                node_id,
                "select",
                name=_text(_field(inner, 2)),
                target=_node(_field(inner, 1)),
                test_only=bool(_field(inner, 3)),
            )
        if number == 6:
            target = _field(inner, 1)
            return Node(
                node_id,
                "call",
                name=_text(_field(inner, 2)),
                target=_node(target) if target is not None else None,
                args=[_node(v) for n, _, v in inner if n == 3],
            )
        if number == 7:
            return Node(
                node_id,
                "list",
                args=[_node(v) for n, _, v in inner if n == 1],
                optional=tuple(_packed(inner, 2)),
            )
        if number == 8:
            entries = []
            for n, _, v in inner:
                if n != 2:
                    continue
                entry = _decode(v)
                key = _field(entry, 3)
                entries.append(
                    Entry(
                        int(_field(entry, 1) or 0),
                        _node(key) if key is not None else None,
                        _text(_field(entry, 2)),
                        _node(_field(entry, 4)),
                        bool(_field(entry, 5)),
                    )
                )
            name = _text(_field(inner, 1))
            return Node(node_id, "struct" if name else "map", name=name, entries=entries)
        if number == 9:
            return Node(
                node_id,
                "comprehension",
                iter_var=_text(_field(inner, 1)),
                iter_var2=_text(_field(inner, 8)),
                accu_var=_text(_field(inner, 3)),
                iter_range=_node(_field(inner, 2)),
                accu_init=_node(_field(inner, 4)),
                condition=_node(_field(inner, 5)),
                step=_node(_field(inner, 6)),
                result=_node(_field(inner, 7)),
            )
    raise ValueError(f"expression {node_id} has no kind")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else ""


def _packed(fields: list[Field], number: int) -> list[int]:
    out: list[int] = []
    for n, wire, value in fields:
        if n != number:
            continue
        if wire == 0:
            out.append(int(value))
            continue
        i = 0
        while i < len(value):
            item, i = _varint(value, i)
            out.append(item)
    return out


def source_positions(serialized: bytes) -> tuple[dict[int, int], list[int]]:
    """The source info of ``serialized`` (an ``Any`` holding a ``ParsedExpr``): each expression's offset in
    code points, by id, and the offsets at which the lines after the first start (and one past the end)."""
    outer = _decode(serialized)
    message = _decode(_field(outer, 2))
    info = _decode(_field(message, 3) or b"")
    positions: dict[int, int] = {}
    for number, _, value in info:
        if number == 4:
            entry = _decode(value)
            positions[_signed(int(_field(entry, 1) or 0))] = int(_field(entry, 2) or 0)
    return positions, _packed(info, 3)


def parsed_tree(serialized: bytes) -> Node:
    """The expression of ``serialized``, an ``Any`` holding a ``ParsedExpr`` (or a ``CheckedExpr``)."""
    outer = _decode(serialized)
    type_url = _text(_field(outer, 1))
    message = _decode(_field(outer, 2))
    return _node(_field(message, 4 if type_url.endswith("CheckedExpr") else 2))


# ---------------------------------------------------------------------------------------------------------
# a checked expression as a tree, and back
# ---------------------------------------------------------------------------------------------------------

#: ``cel.expr.Type`` bytes of the types a rewritten tree gives its new nodes: ``dyn``, ``bool``, ``string``,
#: ``list(dyn)``, ``optional_type(dyn)``.
DYN_TYPE = b"\x0a\x00"
BOOL_TYPE = b"\x18\x01"
STRING_TYPE = b"\x18\x05"
LIST_DYN_TYPE = b"\x32\x04\x0a\x02" + DYN_TYPE
OPTIONAL_DYN_TYPE = b"\x72\x13\x0a\x0doptional_type\x12\x02" + DYN_TYPE


@dataclass
class CheckedAst:
    """A ``CheckedExpr`` as a tree to rewrite: the expression, the type of every node and the reference of
    every identifier and call (``cel.expr.Type`` and ``Reference`` bytes, by expression id), and the other
    fields (source info) as they were."""

    tree: Node
    types: dict[int, bytes]
    references: dict[int, bytes]
    type_url: bytes
    rest: list[Field]

    def next_id(self) -> int:
        """An expression id no node of the tree has."""
        self._last = max(getattr(self, "_last", 0), *self.types, *self.references, *_ids(self.tree)) + 1
        return self._last

    def call(
        self,
        function: str,
        args: list[Node],
        overloads: tuple[str, ...],
        result: bytes,
        target: Node | None = None,
    ) -> Node:
        """A new call node of ``function`` (on ``target``, a member call) with ``args``, resolved to
        ``overloads``, of type ``result``."""
        node = Node(self.next_id(), "call", name=function, target=target, args=args)
        self.types[node.id] = result
        self.redirect(node, function, overloads)
        return node

    def string(self, text: str) -> Node:
        """A new string literal."""
        node = Node(self.next_id(), "literal", value=text, literal="string")
        self.types[node.id] = STRING_TYPE
        return node

    def redirect(self, node: Node, function: str, overloads: tuple[str, ...]) -> None:
        """Send the call ``node`` to ``function``, resolved to ``overloads``."""
        node.name = function
        reference = [(1, 2, function.encode())] + [(3, 2, o.encode()) for o in overloads]
        self.references[node.id] = _encode(reference)


def is_optional_type(t: bytes) -> bool:
    """Whether ``t`` (``cel.expr.Type`` bytes) is ``optional_type(...)``."""
    fields = _decode(t) if t else []
    return any(n == 14 and _field(_decode(v), 1) == b"optional_type" for n, _, v in fields)


def _ids(node: Node) -> Iterator[int]:
    yield node.id
    for entry in node.entries:
        yield entry.id
    for child in node.children():
        yield from _ids(child)


def checked_ast(serialized: bytes) -> CheckedAst:
    """The ``CheckedExpr`` of ``serialized`` (an ``Any``, as ``Expression.serialize`` writes it) as a tree."""
    outer = _decode(serialized)
    checked = _decode(_field(outer, 2))
    types: dict[int, bytes] = {}
    references: dict[int, bytes] = {}
    rest: list[Field] = []
    for number, wire, value in checked:
        if number in (2, 3):
            entry = _decode(value)
            key = _signed(int(_field(entry, 1) or 0))
            (references if number == 2 else types)[key] = _field(entry, 2) or b""
        elif number != 4:
            rest.append((number, wire, value))
    return CheckedAst(_node(_field(checked, 4)), types, references, _field(outer, 1) or b"", rest)


def serialized(ast: CheckedAst) -> bytes:
    """``ast`` as ``Env.deserialize`` reads it."""
    fields: list[Field] = [(4, 2, _expr(ast.tree))]
    fields += [(2, 2, _encode([(1, 0, k), (2, 2, v)])) for k, v in sorted(ast.references.items())]
    fields += [(3, 2, _encode([(1, 0, k), (2, 2, v)])) for k, v in sorted(ast.types.items())]
    fields += ast.rest
    return _encode([(1, 2, ast.type_url), (2, 2, _encode(fields))])


def _constant(node: Node) -> bytes:
    kind, value = node.literal, node.value
    if kind == "null":
        return _encode([(1, 0, 0)])
    if kind == "bool":
        return _encode([(2, 0, int(bool(value)))])
    if kind in ("int", "uint"):
        return _encode([(3 if kind == "int" else 4, 0, int(value))])
    if kind == "double":
        return _encode([(5, 1, struct.pack("<d", value))])
    if kind == "string":
        return _encode([(6, 2, str(value).encode("utf-8", errors="surrogateescape"))])
    return _encode([(7, 2, bytes(value))])


def _expr(node: Node) -> bytes:
    """``node`` as a ``cel.expr.Expr``."""
    fields: list[Field] = [(2, 0, node.id)]
    kind = node.kind
    if kind == "literal":
        fields.append((3, 2, _constant(node)))
    elif kind == "ident":
        fields.append((4, 2, _encode([(1, 2, node.name.encode())])))
    elif kind == "select":
        assert node.target is not None
        inner: list[Field] = [(1, 2, _expr(node.target)), (2, 2, node.name.encode())]
        if node.test_only:
            inner.append((3, 0, 1))
        fields.append((5, 2, _encode(inner)))
    elif kind == "call":
        inner = [(1, 2, _expr(node.target))] if node.target is not None else []
        inner.append((2, 2, node.name.encode()))
        inner += [(3, 2, _expr(a)) for a in node.args]
        fields.append((6, 2, _encode(inner)))
    elif kind == "list":
        inner = [(1, 2, _expr(a)) for a in node.args]
        if node.optional:
            inner.append((2, 2, b"".join(_put_varint(i) for i in node.optional)))
        fields.append((7, 2, _encode(inner)))
    elif kind in ("map", "struct"):
        inner = [(1, 2, node.name.encode())] if node.name else []
        for entry in node.entries:
            e: list[Field] = [(1, 0, entry.id)]
            e.append((2, 2, entry.field.encode()) if entry.key is None else (3, 2, _expr(entry.key)))
            e.append((4, 2, _expr(entry.value)))
            if entry.optional:
                e.append((5, 0, 1))
            inner.append((2, 2, _encode(e)))
        fields.append((8, 2, _encode(inner)))
    else:
        assert node.iter_range and node.accu_init and node.condition and node.step and node.result
        inner = [(1, 2, node.iter_var.encode()), (2, 2, _expr(node.iter_range))]
        inner += [(3, 2, node.accu_var.encode()), (4, 2, _expr(node.accu_init))]
        inner += [(5, 2, _expr(node.condition)), (6, 2, _expr(node.step)), (7, 2, _expr(node.result))]
        if node.iter_var2:
            inner.append((8, 2, node.iter_var2.encode()))
        fields.append((9, 2, _encode(inner)))
    return _encode(fields)
