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
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["redirect_calls"]

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
