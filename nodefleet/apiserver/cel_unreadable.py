"""A rule that reads a value the API server cannot convert, evaluated as cel-go evaluates it.

An update may keep a value of the wrong type: validation ratcheting lets a string stay in an integer field.
The API server's CEL validator converts a field only when a rule reaches it (apiserver
``cel/common/valuesunstructured.go``, ``UnstructuredToVal``), and a failed conversion is cel-go's error value,
which then goes through the rule as cel-go's own code passes it on:

- a function or operator given it as an argument returns it (cel-go's calls are strict: ``==`` and ``!=``,
  ``type()``, ``dyn()``, ``optional.of()`` too), and so does a list or map literal holding it;
- ``&&``, ``||`` and ``?:`` absorb it where the other operand decides, as any error;
- ``has()`` and ``.?`` of a field holding it fail: the field is found and its value is an error;
- inside a list or map of the object, each operation's own code decides: membership (``in``,
  ``sets.contains``) fails at it unless another item matches, ``sets.intersects`` and ``indexOf`` pass over it,
  ``==`` fails at it when the object's list or map is on the left and is false when a literal is, ``!=`` is
  true unless the two are equal, and a ``set`` list compares the raw items it holds.

cel-expr-python has no such value, so it is carried as a stand-in, a ``FieldMask`` message holding the error,
the raw value and whether it is an item of a ``set`` list, which that runtime refuses in every function but a
few; :func:`rewrite` sends those few, and the operations above, to the Python functions of
:func:`declarations`, written after cel-go's (``interpreter/interpretable.go``, ``interpreter/attributes.go``,
``common/types``, ``ext/sets.go``, ``ext/lists.go``) and the apiserver's unstructured values.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Callable, Mapping
from typing import Any

from cel_expr_python import cel
from google.protobuf import duration_pb2, field_mask_pb2, timestamp_pb2  # type: ignore[import-untyped]

from nodefleet.apiserver import cel_ast
from nodefleet.apiserver import cel_library as library
from nodefleet.apiserver.cel_ast import Node

__all__ = ["declarations", "is_stand_in", "message_of", "rewrite", "stand_in"]


def stand_in(message: str, raw: Any, in_set: bool) -> Any:
    """The value a rule sees for an unconvertible ``raw`` value whose conversion error is ``message``."""
    return field_mask_pb2.FieldMask(paths=[message, json.dumps(raw, default=repr), "set" if in_set else ""])


def is_stand_in(value: Any) -> bool:
    return isinstance(value, field_mask_pb2.FieldMask)


def message_of(value: Any) -> str:
    return str(value.paths[0])


class _Err:
    """cel-go's error value, where an operation of an unstructured list or map returns it."""

    def __init__(self, stand: Any) -> None:
        self.stand = stand


def _fail(found: Any) -> Any:
    """Raise the conversion error of ``found`` (a stand-in or an :class:`_Err`): the rule fails with it."""
    stand = found.stand if isinstance(found, _Err) else found
    raise ValueError(message_of(stand))


def _strict(*values: Any) -> None:
    for value in values:
        if is_stand_in(value):
            _fail(value)


def _is_map(value: Any) -> bool:
    return isinstance(value, Mapping) and not library.is_opaque(value)


def _go_key(value: Any) -> tuple[str, Any]:
    """A set item as the Go map of ``unstructuredSetList`` keys it: its raw JSON value, typed."""
    if is_stand_in(value):
        value = json.loads(value.paths[1])
    if isinstance(value, bool):
        return "bool", value
    if isinstance(value, int):
        return "int64", value
    if isinstance(value, float):
        return "float64", value
    if isinstance(value, str):
        return "string", value
    return "other", json.dumps(value, sort_keys=True, default=repr)


def _set_equal(items: list[Any], other: list[Any]) -> bool:
    """``unstructuredSetList.Equal``: every item of ``other`` (an error never) among the raw items."""
    raw = {_go_key(v) for v in items}
    return all(not is_stand_in(v) and _go_key(v) in raw for v in other)


def _equal(a: Any, b: Any, of_object: bool) -> bool | _Err:
    """``a.Equal(b)`` in cel-go: ``of_object`` when ``a`` comes from the object (an unstructured list or map,
    which fails at an error inside it), else ``a`` is a literal's (which is unequal to an error)."""
    if is_stand_in(a):
        return _Err(a)
    if isinstance(a, list) or _is_map(a):
        kind = list if isinstance(a, list) else Mapping
        if not isinstance(b, kind) or library.is_opaque(b):
            return _Err(b) if of_object and is_stand_in(b) else False
        if len(a) != len(b):
            return False
        if isinstance(a, list):
            if of_object and any(is_stand_in(v) and v.paths[2] for v in a):
                return _set_equal(a, list(b))
            pairs = list(zip(a, b, strict=True))
        else:
            if any(k not in b for k in a):
                return False
            pairs = [(v, b[k]) for k, v in a.items()]
        for x, y in pairs:
            found = _equal(x, y, of_object)
            if of_object and found is not True:
                return found
            if not of_object and found is False:
                return False
        return True
    if is_stand_in(b):
        return False
    return library.equal(a, b)


def _contains(items: Any, x: Any, of_object: bool) -> bool | _Err:
    """``items.Contains(x)``: an unstructured list's (an error inside fails unless another item matches), a
    literal list's (``x.Equal`` of each item), a map's (a key whose value is an error fails)."""
    if _is_map(items):
        try:
            key = x in items
        except TypeError:  # an unhashable value is no key
            return False
        return _Err(items[x]) if key and is_stand_in(items[x]) else key
    if not isinstance(items, list):
        return False
    if not of_object:
        return any(_equal(x, v, True) is True for v in items)
    if is_stand_in(x):
        return _Err(x)
    error: _Err | None = None
    for v in items:
        found = _equal(v, x, True)
        if found is True:
            return True
        if isinstance(found, _Err) and error is None:
            error = found
    return error if error is not None else False


def _result(found: bool | _Err) -> bool:
    if isinstance(found, _Err):
        _fail(found)
    return bool(found)


def _eq(of_object: bool) -> Any:
    def impl(args: list[Any]) -> bool:
        _strict(*args)
        a, b = args
        return _result(_equal(a, b, of_object) if a is not None and b is not None else a is b)

    return impl


def _ne(of_object: bool) -> Any:
    def impl(args: list[Any]) -> bool:
        _strict(*args)
        a, b = args
        return (_equal(a, b, of_object) if a is not None and b is not None else a is b) is not True

    return impl


def _in(of_object: bool) -> Any:
    def impl(args: list[Any]) -> bool:
        _strict(*args)
        return _result(_contains(args[1], args[0], of_object))

    return impl


def _sets_contains(a: Any, b: Any, a_object: bool) -> bool | _Err:
    for item in b if isinstance(b, list) else ():
        found = _contains(a, item, a_object)
        if found is not True:
            return found
    return True


def _sets(function: str, a_object: bool, b_object: bool) -> Any:
    def impl(args: list[Any]) -> bool:
        _strict(*args)
        a, b = args
        if function == "contains":
            return _result(_sets_contains(a, b, a_object))
        if function == "equivalent":
            found = _sets_contains(a, b, a_object)
            return _result(found if found is not True else _sets_contains(b, a, b_object))
        return any(_contains(b, item, b_object) is True for item in a if isinstance(a, list))

    return impl


def _distinct(args: list[Any]) -> Any:
    _strict(*args)
    unique: list[Any] = []
    for value in args[0]:
        if not any(_equal(value, u, True) is True for u in unique):
            unique.append(value)
    return _to_cel(unique)


def _fail_with(value: Any) -> Any:
    _fail(value)


def _error(message: str) -> Any:
    raise ValueError(message)


def _to_cel(value: Any) -> Any:
    """``value`` as cel-expr-python takes it back from a function (it hands timestamps and durations to Python
    as ``datetime`` values, and takes them as messages)."""
    if isinstance(value, datetime.datetime):
        stamp = timestamp_pb2.Timestamp()
        stamp.FromDatetime(value)
        return stamp
    if isinstance(value, datetime.timedelta):
        span = duration_pb2.Duration()
        span.FromTimedelta(value)
        return span
    if isinstance(value, bytearray):
        return bytes(value)
    if isinstance(value, list):
        return [_to_cel(v) for v in value]
    if isinstance(value, dict):
        return {k: _to_cel(v) for k, v in value.items()}
    return value


_LIST = cel.Type.List(cel.Type.DYN)
_MAP = cel.Type.Map(cel.Type.DYN, cel.Type.DYN)
_FLAGS = ("oo", "ob", "bo", "bb")


def _packed_functions() -> dict[str, tuple[Any, Any]]:
    """The functions :func:`rewrite` calls with their arguments packed in one list, by name: (implementation,
    result type). A name ends in a letter per argument: ``o`` the object's value, ``b`` a literal's."""
    out: dict[str, tuple[Any, Any]] = {}
    for flags in _FLAGS:
        first, second = (f == "o" for f in flags)
        out[f"__nf_go_eq_{flags}"] = (_eq(first), cel.Type.BOOL)
        out[f"__nf_go_ne_{flags}"] = (_ne(first), cel.Type.BOOL)
        out[f"__nf_go_in_{flags}"] = (_in(second), cel.Type.BOOL)
        for function in ("contains", "equivalent", "intersects"):
            out[f"__nf_go_{function}_{flags}"] = (_sets(function, first, second), cel.Type.BOOL)
    out["__nf_go_distinct"] = (_distinct, _LIST)
    return out


def declarations() -> list[Any]:
    """The functions the rewritten rules call, for ``cel.NewEnv``."""
    out = [
        cel.FunctionDecl(name, [cel.Overload(name, result, [_LIST], impl=impl)])
        for name, (impl, result) in _packed_functions().items()
    ]
    stand = cel.Type("google.protobuf.FieldMask")
    out.append(
        cel.FunctionDecl("__nf_fail", [cel.Overload("__nf_fail", cel.Type.DYN, [stand], impl=_fail_with)])
    )
    out.append(
        cel.FunctionDecl(
            "__nf_error", [cel.Overload("__nf_error", cel.Type.DYN, [cel.Type.STRING], impl=_error)]
        )
    )
    return out


# ---------------------------------------------------------------------------------------------------------
# the rewrite
# ---------------------------------------------------------------------------------------------------------

#: Calls whose arguments go to a Python function in one list: their short names.
_PACKED = {
    "_==_": "eq",
    "_!=_": "ne",
    "@in": "in",
    "sets.contains": "contains",
    "sets.equivalent": "equivalent",
    "sets.intersects": "intersects",
}
#: cel-go's non-strict functions: an error operand is absorbed where the other decides, as cel-expr-python
#: absorbs a message operand.
_ABSORBING = frozenset({"_&&_", "_||_", "@not_strictly_false", "__not_strictly_false__"})
#: Expressions whose value is built by the rule (a literal or a comprehension's), not read from the object.
_BUILT = frozenset({"list", "map", "comprehension"})
#: Functions whose result is (or may hold) an optional value, which cel-expr-python cannot hand to Python.
_OPTIONAL = frozenset(
    {"_?._", "_[?_]", "optional.of", "optional.ofNonZeroValue", "optional.none", "or", "first", "last"}
    | {"format.named", "validate"}
)

#: The rewrites as CEL, compiled once (:data:`Templates`): ``__nf_x`` and ``__nf_y`` stand for the rewritten
#: operands, ``FIELD`` for a field's name. A stand-in is a ``google.protobuf.FieldMask``, found by its type
#: without leaving the runtime; a value goes to Python (``__nf_fail``, the functions of :data:`_PACKED`) only
#: where it cannot be an optional value, which cel-expr-python cannot hand to Python.
_IS = "type({0}) == google.protobuf.FieldMask"
CHECKED = f"cel.bind(__nf_v, __nf_x, {_IS.format('__nf_v')} ? __nf_fail(__nf_v) : __nf_v)"
_FIELD = f"has(__nf_v.FIELD) && {_IS.format('__nf_v.FIELD')} ? __nf_fail(__nf_v.FIELD)"
HAS = f"cel.bind(__nf_v, __nf_x, {_FIELD} : has(__nf_v.FIELD))"
SELECT = f"cel.bind(__nf_v, __nf_x, {_FIELD} : __nf_v.?FIELD)"
_KEY = "type(__nf_v) == map && __nf_k in __nf_v && " + _IS.format("__nf_v[__nf_k]")
INDEX = f"cel.bind(__nf_v, __nf_x, cel.bind(__nf_k, __nf_y, {_KEY} ? __nf_fail(__nf_v[__nf_k]) : __nf_v[?__nf_k]))"
_ON_VALUE = (
    "cel.bind(__nf_o, __nf_x, __nf_o.hasValue() ? cel.bind(__nf_v, __nf_o.value(), {0}) : optional.none())"
)
SELECT_OF_OPTIONAL = _ON_VALUE.format(f"{_FIELD} : __nf_v.?FIELD")
INDEX_OF_OPTIONAL = _ON_VALUE.format(
    f"cel.bind(__nf_k, __nf_y, {_KEY} ? __nf_fail(__nf_v[__nf_k]) : __nf_v[?__nf_k])"
)
#: A comparison of two values that are not optional at the top (below, :func:`_may_hold_optional` says).
PACKED = (
    "cel.bind(__nf_a, __nf_x, cel.bind(__nf_b, __nf_y, type(__nf_a) == optional_type || type(__nf_b) == "
    "optional_type ? FUNCTION_NATIVE : FUNCTION([__nf_a, __nf_b])))"
)

#: A comprehension's range or an index's operand: cel-go iterates and indexes lists and maps (an optional is
#: the runtime's own), and words what it cannot as ``interpreter`` does.
_CONTAINER = "type({0}) == list || type({0}) == map || type({0}) == optional_type"
_GO_TYPES = (
    ("string", "types.String"),
    ("int", "types.Int"),
    ("uint", "types.Uint"),
    ("double", "types.Double"),
    ("bool", "types.Bool"),
    ("bytes", "types.Bytes"),
    ("null_type", "types.Null"),
    ("google.protobuf.Timestamp", "types.Timestamp"),
    ("google.protobuf.Duration", "types.Duration"),
)
_GO_TYPE = "".join(f"type(__nf_r) == {cel} ? '{go}' : " for cel, go in _GO_TYPES) + "'types.Object'"
RANGE = (
    f"cel.bind(__nf_r, __nf_x, {_CONTAINER.format('__nf_r')} ? __nf_r : "
    f'__nf_error("got \'" + ({_GO_TYPE}) + "\', expected iterable type"))'
)
INDEX_OF_ANY = (
    f"cel.bind(__nf_c, __nf_x, cel.bind(__nf_k, __nf_y, {_CONTAINER.format('__nf_c')} ? __nf_c[__nf_k] : "
    "__nf_error('no such key: ' + string(__nf_k))))"
)

#: A compiled template by its source (the environment's ``compile(...).serialize()``).
Templates = Callable[[str], bytes]


def rewrite(serialized: bytes, templates: Templates) -> bytes:
    """A compiled rule (``Expression.serialize``) rewritten to meet stand-ins as cel-go meets its errors."""
    ast = cel_ast.checked_ast(serialized)
    ast.tree = _Rewriter(ast, templates).rewrite(ast.tree, frozenset())
    return cel_ast.serialized(ast)


class _Rewriter:
    def __init__(self, ast: cel_ast.CheckedAst, templates: Templates) -> None:
        self.ast = ast
        self.templates = templates

    def splice(self, source: str, result: bytes | None = None, **operands: Node) -> Node:
        """The compiled ``source`` as nodes of this rule (new ids), its ``__nf_<name>`` identifiers replaced by
        ``operands``, of type ``result`` (``cel.expr.Type`` bytes) when given."""
        template = cel_ast.checked_ast(self.templates(source))
        root = self._copy(template.tree, template, operands)
        if result is not None:
            self.ast.types[root.id] = result
        return root

    def _copy(self, node: Node, template: cel_ast.CheckedAst, operands: dict[str, Node]) -> Node:
        if node.kind == "ident" and node.name.startswith("__nf_") and node.name[5:] in operands:
            return operands[node.name[5:]]
        ast = self.ast
        copy = Node(ast.next_id(), node.kind, name=node.name, value=node.value, literal=node.literal)
        copy.test_only, copy.optional = node.test_only, node.optional
        copy.iter_var, copy.iter_var2, copy.accu_var = node.iter_var, node.iter_var2, node.accu_var
        for attr in ("target", "iter_range", "accu_init", "condition", "step", "result"):
            child = getattr(node, attr)
            if child is not None:
                setattr(copy, attr, self._copy(child, template, operands))
        copy.args = [self._copy(a, template, operands) for a in node.args]
        copy.entries = [
            cel_ast.Entry(
                ast.next_id(),
                self._copy(e.key, template, operands) if e.key is not None else None,
                e.field,
                self._copy(e.value, template, operands),
                e.optional,
            )
            for e in node.entries
        ]
        if node.id in template.types:
            ast.types[copy.id] = template.types[node.id]
        if node.id in template.references:
            ast.references[copy.id] = template.references[node.id]
        return copy

    def checked(self, node: Node) -> Node:
        """``node``, failing with a stand-in's error where its value is one (a value of ``dyn`` type may be;
        ``self`` is checked before it is bound, and the comprehensions' own variables hold what was checked)."""
        if self.ast.types.get(node.id) != cel_ast.DYN_TYPE:
            return node
        if node.kind == "ident" and (node.name == "self" or node.name.startswith(("__", "@"))):
            return node
        return self.splice(CHECKED, x=node)

    def rewrite(self, node: Node, tainted: frozenset[str]) -> Node:
        """``node`` rewritten, its children first: every value of ``dyn`` type an operation is given is checked,
        so the rule fails with the error of the stand-in it meets, as cel-go's does. ``tainted``: the
        variables in scope that may hold an optional value."""
        if node.kind == "comprehension":
            return self._comprehension(node, tainted)
        # What an operand is, before it is rewritten: read from the object, or built by the rule.
        built = "".join("b" if a.kind in _BUILT else "o" for a in node.args)
        if node.target is not None:
            node.target = self.rewrite(node.target, tainted)
        node.args = [self.rewrite(a, tainted) for a in node.args]
        for entry in node.entries:
            if entry.key is not None:
                entry.key = self.checked(self.rewrite(entry.key, tainted))
            entry.value = self.rewrite(entry.value, tainted)
            if not entry.optional:
                entry.value = self.checked(entry.value)
        if node.kind == "select" and node.target is not None:
            return self._select(node)
        if node.kind == "list":
            node.args = [a if i in node.optional else self.checked(a) for i, a in enumerate(node.args)]
            return node
        if node.kind != "call":
            return node
        return self._call(node, tainted, built)

    def _comprehension(self, node: Node, tainted: frozenset[str]) -> Node:
        assert node.iter_range and node.accu_init and node.condition and node.step and node.result
        inner = _scope(node, tainted)
        node.iter_range = self.splice(
            RANGE,
            self.ast.types.get(node.iter_range.id),
            x=self.checked(self.rewrite(node.iter_range, tainted)),
        )
        node.accu_init = self.rewrite(node.accu_init, tainted)
        node.condition = self.rewrite(node.condition, inner)
        node.step = self.rewrite(node.step, inner)
        node.result = self.rewrite(node.result, inner)
        return node

    def _select(self, node: Node) -> Node:
        assert node.target is not None
        field = node.name
        if node.test_only:
            return self.splice(HAS.replace("FIELD", field), cel_ast.BOOL_TYPE, x=self.checked(node.target))
        if cel_ast.is_optional_type(self.ast.types.get(node.target.id, b"")):
            return self.splice(
                SELECT_OF_OPTIONAL.replace("FIELD", field), cel_ast.OPTIONAL_DYN_TYPE, x=node.target
            )
        node.target = self.checked(node.target)
        return node

    def _call(self, node: Node, tainted: frozenset[str], built: str) -> Node:
        name, args = node.name, node.args
        if name in _PACKED and node.target is None and len(args) == 2:
            if any(_may_hold_optional(a, tainted) for a in args):
                node.args = [self.checked(a) for a in args]
                return node
            # These Python functions meet the stand-ins inside lists and maps as cel-go's code does.
            function = f"__nf_go_{_PACKED[name]}_{built}"
            native = {"eq": "__nf_a == __nf_b", "ne": "__nf_a != __nf_b", "in": "__nf_a in __nf_b"}.get(
                _PACKED[name], f"{name}(__nf_a, __nf_b)"
            )
            source = PACKED.replace("FUNCTION_NATIVE", native).replace("FUNCTION", function)
            return self.splice(source, cel_ast.BOOL_TYPE, x=self.checked(args[0]), y=self.checked(args[1]))
        if name == "distinct" and node.target is not None and not args:
            if _may_hold_optional(node.target, tainted):
                node.target = self.checked(node.target)
                return node
            return self.splice(
                "__nf_go_distinct([__nf_x])", cel_ast.LIST_DYN_TYPE, x=self.checked(node.target)
            )
        if name in _ABSORBING:
            return node
        if name == "_?_:_":
            args[0] = self.checked(args[0])
            return node
        if name in ("_?._", "_[?_]") and node.target is None and len(args) == 2:
            optional = cel_ast.is_optional_type(self.ast.types.get(args[0].id, b""))
            operand = args[0] if optional else self.checked(args[0])
            if name == "_?._":
                source = (SELECT_OF_OPTIONAL if optional else SELECT).replace("FIELD", str(args[1].value))
                return self.splice(source, cel_ast.OPTIONAL_DYN_TYPE, x=operand)
            source = INDEX_OF_OPTIONAL if optional else INDEX
            return self.splice(source, cel_ast.OPTIONAL_DYN_TYPE, x=operand, y=args[1])
        if node.target is not None:
            node.target = self.checked(node.target)
        node.args = [self.checked(a) for a in args]
        if name == "_[_]" and node.target is None and len(node.args) == 2:
            return self.splice(INDEX_OF_ANY, self.ast.types.get(node.id), x=node.args[0], y=node.args[1])
        target = library.redirect(name, [self.ast.types.get(a.id, b"") for a in node.args])
        if target is not None:
            self.ast.redirect(node, target[0], target[1])
        return node


def _may_hold_optional(node: Node, tainted: frozenset[str]) -> bool:
    """Whether ``node``'s value may be or hold an optional value (a conservative answer)."""
    if node.kind == "ident":
        return node.name in tainted
    if node.kind == "call" and node.name in _OPTIONAL:
        return True
    if node.kind == "comprehension":
        assert node.result is not None
        return _may_hold_optional(node.result, _scope(node, tainted))
    return any(_may_hold_optional(child, tainted) for child in node.children())


def _scope(node: Node, tainted: frozenset[str]) -> frozenset[str]:
    """The variables that may hold an optional value in a comprehension's loop and result."""
    assert node.iter_range and node.accu_init and node.step
    inner = tainted - {node.iter_var, node.iter_var2, node.accu_var}
    if _may_hold_optional(node.iter_range, tainted):
        inner |= {v for v in (node.iter_var, node.iter_var2) if v}
    if _may_hold_optional(node.accu_init, tainted) or _may_hold_optional(node.step, inner):
        inner |= {node.accu_var}
    return inner
