"""The estimated cost of CRD rules, and the CRDs the API server refuses for it.

When a CRD is created the API server estimates, for every ``x-kubernetes-validations`` rule, the worst-case
cost of evaluating it (apiextensions-apiserver ``schema/cel/compilation.go``: cel-go's ``checker.Cost`` over
the checked rule, with Kubernetes' ``library.CostEstimator`` and the schema's size estimates), multiplies it
by how many times the rule's node can occur (the ``maxItems``/``maxProperties`` of the lists and maps above
it, or when one is unbounded the largest request divided by the node's smallest serialized size), and refuses
the CRD when a rule costs more than ``StaticEstimatedCostLimit`` or all rules of a schema more than
``StaticEstimatedCRDCostLimit`` (``apis/apiextensions/validation``). This module follows that code:

- :class:`_Coster` is ``checker/cost.go`` (cel-go 0.26): the cost of each expression kind, the sizes it tracks
  through calls, comprehensions and local variables, and the field paths it hands the size estimator — Go
  slices whose appends may share storage, which this models as Go does, since the API server's estimates
  depend on it;
- :func:`_kubernetes_call` is ``k8s.io/apiserver/pkg/cel/library/cost.go``'s ``EstimateCallCost`` (strings,
  regex, lists, quantity, IP/CIDR, URL, format, semver), :data:`_EXTENSIONS` the estimators cel-go's lists and
  sets extensions register, :meth:`_Coster.estimate_size` the CRD size estimator (``sizeEstimator``);
- :func:`refusals` walks a schema as ``ValidateCustomResourceDefinitionOpenAPISchema`` does and words each
  refusal as the API server does.

The types and overloads the estimate reads come from :mod:`nodefleet.apiserver.cel_check`. A rule this cannot
type-check is not estimated (and not refused for its cost); tests/test_cel_cost_reference.py compares the
numbers with the API server's own code.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver import cel_check as ck
from nodefleet.apiserver.cel_ast import Node

__all__ = [
    "PER_CRD_LIMIT",
    "PER_RULE_LIMIT",
    "RuleCost",
    "estimate",
    "refusals",
    "rule_costs",
]

#: ``StaticEstimatedCostLimit`` and ``StaticEstimatedCRDCostLimit`` (apiextensions validation).
PER_RULE_LIMIT = 10_000_000
PER_CRD_LIMIT = 100_000_000

MAX = (1 << 64) - 1
_TWO_TO_64 = float(1 << 64)
Est = tuple[int, int]  # a size or cost estimate: (min, max), uint64 arithmetic saturating at MAX
UNKNOWN: Est = (0, MAX)

# cel-go common/cost.go
_SELECT_AND_IDENT = 1
_LIST_CREATE = 10
_MAP_CREATE = 30
_STRUCT_CREATE = 40
_STRING_TRAVERSAL = 0.1
_REGEX_LENGTH = 0.25
# k8s.io/apiserver/pkg/cel/limits.go
_MAX_FORMAT_SIZE = 64
_MAX_NAME_FORMAT_REGEX = 128


def _add(a: Est, b: Est) -> Est:
    return min(a[0] + b[0], MAX), min(a[1] + b[1], MAX)


def _mul(a: Est, b: Est) -> Est:
    return min(a[0] * b[0], MAX), min(a[1] * b[1], MAX)


def _factor_one(x: int, y: float) -> int:
    """cel-go ``multiplyByCostFactor``: ``x * y`` in float64, rounded up, saturating."""
    xf = float(x)
    if xf > 0 and y > 0 and xf > _TWO_TO_64 / y:
        return MAX
    product = math.ceil(xf * y)
    return MAX if product >= _TWO_TO_64 else int(product)


def _factor(a: Est, y: float) -> Est:
    return _factor_one(a[0], y), _factor_one(a[1], y)


def _union(a: Est, b: Est) -> Est:
    return min(a[0], b[0]), max(a[1], b[1])


def _fixed(n: int) -> Est:
    return n, n


# ---------------------------------------------------------------------------------------------------------
# Go slices: the field paths the estimator tracks
# ---------------------------------------------------------------------------------------------------------


class _Slice:
    """A Go ``[]string`` header: ``append`` writes into the shared array while it has room, as Go's does, so
    two paths appended to the same parent may see each other's last element (the API server's estimates do)."""

    __slots__ = ("array", "length")

    def __init__(self, array: list[str], length: int) -> None:
        self.array = array
        self.length = length

    def items(self) -> list[str]:
        return self.array[: self.length]

    def first(self) -> str | None:
        return self.array[0] if self.length else None


def _append(path: _Slice | None, item: str) -> _Slice:
    if path is None or (path.length == 0 and not path.array):
        return _Slice([item], 1)
    if path.length < len(path.array):
        path.array[path.length] = item
        return _Slice(path.array, path.length + 1)
    # growslice: double the capacity (16-byte strings: the doubled sizes are exact size classes)
    array = path.array[: path.length] + [item] + [""] * (len(path.array) * 2 - path.length - 1)
    return _Slice(array, path.length + 1)


# ---------------------------------------------------------------------------------------------------------
# the cost estimator (cel-go checker/cost.go)
# ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _AstNode:
    """cel-go's ``checker.AstNode``: a path (read when asked, as Go reads the slice), a type, the expression
    and the size computed when the node was made."""

    path: _Slice | None
    type: ck.Type
    expr: Node | None
    size: Est | None

    def path_items(self) -> list[str] | None:
        return self.path.items() if self.path is not None else None


@dataclass(slots=True)
class _Entry:
    """``entrySizeEstimate``: a container's kind and the sizes of its keys (or indices) and values."""

    container: str
    key: Est
    value: Est


def _entry_union(a: _Entry | None, b: _Entry | None) -> _Entry | None:
    if a is None or b is None:
        return None
    return _Entry(a.container, _union(a.key, b.key), _union(a.value, b.value))


@dataclass(slots=True)
class _Local:
    path: _Slice | None
    size: Est | None
    entry: _Entry | None


_SCALARS = frozenset({"bool", "double", "duration", "int", "timestamp", "uint"})


def _is_scalar(t: ck.Type) -> bool:
    if t.kind in _SCALARS:
        return True
    if t.kind == "opaque" and t.name == "optional_type":
        return _is_scalar(t.params[0])
    return False


def _literal_size(node: Node) -> Est | None:
    """``computeExprSize``: the exact size of a literal, list or map literal."""
    if node.kind == "literal":
        if node.literal == "string":
            return _fixed(len(node.value))
        if node.literal == "bytes":
            return _fixed(len(node.value))
        return _fixed(1)
    if node.kind == "list":
        return _fixed(len(node.args))
    if node.kind == "map":
        return _fixed(len(node.entries))
    return None


def _is_accumulator(name: str | None) -> bool:
    return name in (ck.ACCUMULATOR, "__result__")


class _Coster:
    def __init__(self, checked: ck.Checked, root: ck.Decl) -> None:
        self.types = checked.types
        self.overloads = checked.overloads
        self.root = root
        self.paths: dict[int, _Slice] = {}
        self.locals: dict[str, list[_Local]] = {}
        self.sizes: dict[int, Est] = {}
        self.entries: dict[int, _Entry] = {}

    # -- the CRD size estimator (apiextensions schema/cel/compilation.go sizeEstimator)

    def estimate_size(self, path: list[str] | None) -> Est | None:
        if not path:
            return None
        decl: ck.Decl | None = self.root
        for name in path[1:]:
            assert decl is not None
            if name in ("@items", "@values"):
                decl = decl.elem
            elif name == "@keys":
                decl = decl.key
            else:
                decl = decl.fields.get(name) if decl.fields is not None else None
            if decl is None:
                return None
        assert decl is not None
        return 0, decl.max_elements

    def node_size(self, node: _AstNode | _Items) -> Est:
        """``library.CostEstimator.sizeEstimate``: the computed size, else the estimator's, else unknown."""
        if node.size is not None:
            return node.size
        found = self.estimate_size(node.path_items())
        return found if found is not None else UNKNOWN

    # -- bookkeeping

    def type_of(self, node: Node) -> ck.Type:
        return self.types.get(node.id, ck.DYN)

    def get_path(self, node: Node) -> _Slice | None:
        if node.kind == "ident":
            local = self.peek(node.name)
            if local is not None:
                return local.path
        return self.paths.get(node.id)

    def peek(self, name: str) -> _Local | None:
        stack = self.locals.get(name)
        return stack[-1] if stack else None

    def push(self, name: str, path: _Slice | None, size: Est | None, entry: _Entry | None) -> None:
        self.locals.setdefault(name, []).append(_Local(path, size, entry))

    def pop(self, name: str) -> None:
        self.locals[name].pop()

    def ast_node(self, node: Node) -> _AstNode:
        path = self.get_path(node)
        if path is not None and _is_accumulator(path.first()):
            path = None
        return _AstNode(path, self.type_of(node), node, self.compute_size(node))

    def compute_size(self, node: Node) -> Est | None:
        found = self.sizes.get(node.id)
        if found is not None:
            return found
        literal = _literal_size(node)
        if literal is not None:
            return literal
        path = self.get_path(node)
        estimated = self.estimate_size(path.items() if path is not None else None)
        if estimated is not None:
            self.sizes[node.id] = estimated
            return estimated
        if _is_scalar(self.type_of(node)):
            return _fixed(1)
        if node.kind == "ident":
            local = self.peek(node.name)
            if local is not None and local.size is not None:
                return local.size
        return None

    def size_or_unknown(self, node: Node | _AstNode) -> Est:
        found = self.compute_size(node) if isinstance(node, Node) else node.size
        return found if found is not None else UNKNOWN

    def entry_size(self, node: Node) -> _Entry | None:
        found = self.entries.get(node.id)
        if found is not None:
            return found
        if node.kind == "ident":
            local = self.peek(node.name)
            if local is not None and local.entry is not None:
                return local.entry
        return None

    def set_size(self, node: Node, size: Est | None) -> None:
        if size is not None:
            self.sizes[node.id] = size

    def set_entry(self, node: Node, entry: _Entry | None) -> None:
        if entry is not None:
            self.entries[node.id] = entry

    # -- expressions

    def cost(self, node: Node | None) -> Est:
        if node is None:
            return 0, 0
        kind = node.kind
        if kind == "literal":
            return 0, 0
        if kind == "ident":
            local = self.peek(node.name)
            self.paths[node.id] = local.path if local is not None else _Slice([node.name], 1)  # type: ignore[assignment]
            return _fixed(_SELECT_AND_IDENT)
        if kind == "select":
            return self.cost_select(node)
        if kind == "call":
            return self.cost_call(node)
        if kind == "list":
            return self.cost_list(node)
        if kind == "map":
            return self.cost_map(node)
        if kind == "struct":
            total: Est = (0, 0)
            for entry in node.entries:
                total = _add(total, self.cost(entry.value))
            return _add(total, _fixed(_STRUCT_CREATE))
        if kind == "comprehension":
            return self.cost_bind(node) if self.is_bind(node) else self.cost_comprehension(node)
        return 0, 0

    def cost_select(self, node: Node) -> Est:
        assert node.target is not None
        if node.test_only:
            return self.cost(node.target)  # presence tests cost nothing (PresenceTestHasCost(false))
        total = self.cost(node.target)
        if self.type_of(node.target).kind in ("map", "struct", "param"):
            total = _add(total, _fixed(_SELECT_AND_IDENT))
        self.paths[node.id] = _append(self.get_path(node.target), node.name)
        return total

    def cost_call(self, node: Node) -> Est:
        if node.name == "dyn" and node.target is None and len(node.args) == 1:
            arg = node.args[0]
            arg_cost = self.cost(arg)
            self.set_size(node, self.compute_size(arg))
            self.set_entry(node, self.entry_size(arg))
            return _add(_fixed(1), arg_cost)
        arg_costs: list[Est] = []
        args: list[_AstNode] = []
        for arg in node.args:
            arg_costs.append(self.cost(arg))
            args.append(self.ast_node(arg))
        ids = self.overloads.get(node.id)
        if not ids:
            return 0, 0
        total: Est = (0, 0)
        target: _AstNode | None = None
        if node.target is not None:
            total = _add(total, self.cost(node.target))
            target = self.ast_node(node.target)
        fn_cost: Est = (MAX, 0)
        result: Est | None = None
        for overload in ids:
            call_cost, size = self.function_cost(node, overload, target, args, arg_costs)
            fn_cost = _union(fn_cost, call_cost)
            if size is not None:
                result = size if result is None else _union(result, size)
            if overload in ("index_list", "index_map") and node.args:
                entry = self.entry_size(node.args[0])
                result = entry.value if entry is not None else None
                sub = "@items" if overload == "index_list" else "@values"
                self.paths[node.id] = _append(self.get_path(node.args[0]), sub)
            if result is None:
                result = self.compute_size(node)
        self.set_size(node, result)
        return _add(total, fn_cost)

    def cost_list(self, node: Node) -> Est:
        total: Est = (0, 0)
        item: Est = (0 if not node.args else MAX, 0)
        for elem in node.args:
            total = _add(total, self.cost(elem))
            item = _union(item, self.size_or_unknown(elem))
        self.set_entry(node, _Entry("list", _fixed(1), item))
        return _add(total, _fixed(_LIST_CREATE))

    def cost_map(self, node: Node) -> Est:
        total: Est = (0, 0)
        empty = 0 if not node.entries else MAX
        key: Est = (empty, 0)
        value: Est = (empty, 0)
        for entry in node.entries:
            assert entry.key is not None
            total = _add(total, self.cost(entry.key))
            total = _add(total, self.cost(entry.value))
            key = _union(key, self.size_or_unknown(entry.key))
            value = _union(value, self.size_or_unknown(entry.value))
        self.set_entry(node, _Entry("map", key, value))
        return _add(total, _fixed(_MAP_CREATE))

    def push_local(self, name: str, node: Node) -> None:
        self.push(name, self.get_path(node), self.compute_size(node), self.entry_size(node))

    def container(self, entry: _Entry | None, range_node: Node) -> str:
        if entry is not None:
            return entry.container
        return self.type_of(range_node).kind

    def cost_comprehension(self, node: Node) -> Est:
        assert node.iter_range is not None and node.accu_init is not None
        total = _add(self.cost(node.iter_range), self.cost(node.accu_init))
        self.push_local(node.accu_var, node.accu_init)
        iter_range = node.iter_range
        if node.iter_var2:
            # pushIterKey, then pushIterValue: each appends to the range's path anew
            for var, is_key in ((node.iter_var, True), (node.iter_var2, False)):
                entry = self.entry_size(iter_range)
                is_list = self.container(entry, iter_range) == "list"
                sub = ("@indices" if is_list else "@keys") if is_key else ("@items" if is_list else "@values")
                size = (entry.key if is_key else entry.value) if entry is not None else None
                self.push(var, _append(self.get_path(iter_range), sub), size, None)
        else:
            entry = self.entry_size(iter_range)
            size = entry.key if entry is not None else None
            sub = "@keys"
            if self.container(entry, iter_range) == "list":
                size = entry.value if entry is not None else None
                sub = "@items"
            self.push(node.iter_var, _append(self.get_path(iter_range), sub), size, None)
        loop = self.cost(node.condition)
        step = self.cost(node.step)
        self.pop(node.iter_var)
        if node.iter_var2:
            self.pop(node.iter_var2)
        total = _add(total, self.cost(node.result))
        self.pop(node.accu_var)
        count = self.size_or_unknown(iter_range)
        total = _add(total, _mul(count, _add(step, loop)))
        init = node.accu_init
        if init.kind == "literal":
            self.set_size(node, self.compute_size(init))
        elif init.kind in ("list", "map"):
            self.set_size(node, count)
            assert node.step is not None
            self.set_entry(node, self.entry_size(node.step))
        return total

    def is_bind(self, node: Node) -> bool:
        r, c = node.iter_range, node.condition
        return (
            r is not None
            and r.kind == "list"
            and not r.args
            and c is not None
            and c.kind == "literal"
            and c.value is False
            and c.literal == "bool"
            and node.accu_var != "__result__"
        )

    def cost_bind(self, node: Node) -> Est:
        assert node.accu_init is not None and node.result is not None
        total = _add(self.cost(node.iter_range), self.cost(node.accu_init))
        self.push_local(node.accu_var, node.accu_init)
        total = _add(total, self.cost(node.result))
        self.pop(node.accu_var)
        self.set_size(node, self.compute_size(node.result))
        self.set_entry(node, self.entry_size(node.result))
        return total

    def function_cost(
        self, node: Node, overload: str, target: _AstNode | None, args: list[_AstNode], arg_costs: list[Est]
    ) -> tuple[Est, Est | None]:
        arg_sum: Est = (0, 0)
        for c in arg_costs:
            arg_sum = _add(arg_sum, c)
        extension = _EXTENSIONS.get(overload)
        if extension is not None:
            found = extension(self, target, args)
            if found is not None:
                return _add(found[0], arg_sum), found[1]
        found = _kubernetes_call(self, node.name, overload, target, args)
        if found is not None:
            return _add(found[0], arg_sum), found[1]
        return self.standard_call(node, overload, target, args, arg_costs, arg_sum)

    def standard_call(
        self,
        node: Node,
        overload: str,
        target: _AstNode | None,
        args: list[_AstNode],
        arg_costs: list[Est],
        arg_sum: Est,
    ) -> tuple[Est, Est | None]:
        size = self.size_or_unknown
        if overload == "string_format" and target is not None:
            return _add(_factor(size(target), _STRING_TRAVERSAL), arg_sum), None
        if overload == "string_to_bytes" and len(args) == 1:
            sz = size(args[0])
            return _add(_factor(sz, _STRING_TRAVERSAL), arg_sum), (sz[0], _go_u64(sz[1] * 4))
        if overload == "bytes_to_string" and len(args) == 1:
            sz = size(args[0])
            return _add(_factor(sz, _STRING_TRAVERSAL), arg_sum), (sz[0] // 4, sz[1])
        if overload == "strings_quote" and len(args) == 1:
            sz = size(args[0])
            return _add(_factor(sz, _STRING_TRAVERSAL), arg_sum), (_go_u64(sz[0] + 2), _go_u64(sz[1] * 2 + 2))
        if overload in ("starts_with_string", "ends_with_string") and len(args) == 1:
            return _add(_factor(size(args[0]), _STRING_TRAVERSAL), arg_sum), None
        if overload == "in_list" and len(args) == 2:
            return _add(_factor(size(args[1]), 1), arg_sum), None
        if overload == "matches_string" and target is not None and len(args) == 1:
            text = _factor(_add(size(target), (1, 1)), _STRING_TRAVERSAL)
            regex = _factor(size(args[0]), _REGEX_LENGTH)
            return _add(_mul(text, regex), arg_sum), None
        if overload == "contains_string" and target is not None and len(args) == 1:
            text = _factor(size(target), _STRING_TRAVERSAL)
            sub = _factor(size(args[0]), _STRING_TRAVERSAL)
            return _add(_mul(text, sub), arg_sum), None
        if overload in ("logical_or", "logical_and"):
            lhs, rhs = arg_costs[0], arg_costs[1]
            return (lhs[0], _add(lhs, rhs)[1]), None
        if overload == "conditional":
            sz = _union(size(args[1]), size(args[2]))
            assert args[1].expr is not None and args[2].expr is not None
            self.set_entry(node, _entry_union(self.entry_size(args[1].expr), self.entry_size(args[2].expr)))
            return _add(arg_costs[0], _union(arg_costs[1], arg_costs[2])), sz
        if overload in ("add_string", "add_bytes", "add_list") and len(args) == 2:
            result = _add(size(args[0]), size(args[1]))
            assert args[0].expr is not None and args[1].expr is not None
            entry = _entry_union(self.entry_size(args[0].expr), self.entry_size(args[1].expr))
            self.set_entry(node, entry)
            if overload == "add_list":
                return _add(_fixed(1), arg_sum), result
            return _add(_factor(result, _STRING_TRAVERSAL), arg_sum), result
        if overload in _COMPARISONS:
            lhs, rhs = size(args[0]), size(args[1])
            smallest = min(lhs[1], rhs[1])
            return _add(_factor((1 if smallest > 0 else 0, smallest), _STRING_TRAVERSAL), arg_sum), None
        return _add(_fixed(1), arg_sum), None


def _go_u64(value: int) -> int:
    """A uint64 computed without a saturating guard in Go wraps around."""
    return value & MAX


_COMPARISONS = frozenset(
    {
        "less_string",
        "greater_string",
        "less_equals_string",
        "greater_equals_string",
        "less_bytes",
        "greater_bytes",
        "less_equals_bytes",
        "greater_equals_bytes",
        "equals",
        "not_equals",
    }
)


# ---------------------------------------------------------------------------------------------------------
# cel-go's lists and sets extensions (ext/lists.go, ext/sets.go CostEstimatorOptions)
# ---------------------------------------------------------------------------------------------------------


def _int_literal(node: _AstNode, default: int) -> int:
    """``nodeAsIntValue``: an int literal argument (negative as 0), else ``default``."""
    expr = node.expr
    if expr is None or expr.kind != "literal" or expr.literal != "int":
        return default
    return max(int(expr.value), 0)


def _allocating_list(factor: float, size: Est) -> tuple[Est, Est]:
    cost = _add(_add(_factor(size, factor), _fixed(1)), _fixed(_LIST_CREATE))
    return cost, size


def _slice(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is None or len(args) != 2:
        return None
    size = c.node_size(target)
    start = _int_literal(args[0], 0)
    end = _int_literal(args[1], size[1])
    return _allocating_list(1, _fixed(_go_u64(end - start)))


def _range(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is not None or len(args) != 1:
        return None
    return _allocating_list(1, _fixed(_int_literal(args[0], MAX)))


def _reverse(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is None or args:
        return None
    return _allocating_list(1, c.node_size(target))


def _flatten(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is None or len(args) > 1:
        return None
    depth = _int_literal(args[0], MAX) if args else 1
    return _allocating_list(float(depth), c.node_size(target))


def _distinct(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is None or args:
        return None
    size = c.node_size(target)
    return _allocating_list(2.0, _mul(size, size))


def _sort_cost(c: _Coster, node: _AstNode, element: str) -> tuple[Est, Est]:
    size = c.node_size(node)
    factor = 2.0 + (_STRING_TRAVERSAL if element in ("string", "bytes") else 0)
    return _allocating_list(factor, _mul(size, size))


def _sort(element: str) -> Any:
    def estimate(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
        if target is None or args:
            return None
        return _sort_cost(c, target, element)

    return estimate


def _sort_by(element: str) -> Any:
    def estimate(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
        if target is None or len(args) != 1:
            return None
        return _sort_cost(c, args[0], element)

    return estimate


def _sets(factor: float) -> Any:
    def estimate(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, None] | None:
        if len(args) != 2:
            return None
        product = _mul(c.node_size(args[0]), c.node_size(args[1]))
        return _add(_factor(product, factor), _fixed(1)), None

    return estimate


_COMPARABLE = {
    "int": "int",
    "uint": "uint",
    "double": "double",
    "bool": "bool",
    "google.protobuf.Duration": "duration",
    "google.protobuf.Timestamp": "timestamp",
    "string": "string",
    "bytes": "bytes",
}

#: Overload estimators the lists (version 3) and sets extensions register, by overload id.
_EXTENSIONS: dict[str, Any] = {
    "list_slice": _slice,
    "list_flatten": _flatten,
    "list_flatten_int": _flatten,
    "lists_range": _range,
    "list_reverse": _reverse,
    "list_distinct": _distinct,
    **{f"list_{name}_sort": _sort(kind) for name, kind in _COMPARABLE.items()},
    **{f"list_{name}_sortByAssociatedKeys": _sort_by(kind) for name, kind in _COMPARABLE.items()},
    "list_sets_contains_list": _sets(1),
    "list_sets_intersects_list": _sets(1),
    "list_sets_equivalent_list": _sets(2),
}


# ---------------------------------------------------------------------------------------------------------
# Kubernetes' libraries (k8s.io/apiserver/pkg/cel/library/cost.go EstimateCallCost)
# ---------------------------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Items:
    """``itemsNode``: a list's element, with the list's path and ``@items`` when it has one."""

    path: list[str] | None
    type: ck.Type
    size: None = None

    def path_items(self) -> list[str] | None:
        return self.path


def _element(list_node: _AstNode) -> _Items | None:
    if not list_node.type.params:
        return None
    path = list_node.path_items()
    return _Items([*path, "@items"] if path is not None else None, list_node.type.params[0])


def _selector(length: Est) -> Est:
    parse = _factor(length, _STRING_TRAVERSAL)
    requirements = _factor(_factor(length, 0.5), float(_LIST_CREATE + _STRUCT_CREATE))
    return _add(_add(_fixed(_LIST_CREATE), parse), requirements)


_NOMINAL = frozenset(
    {
        "serviceAccount", "path", "group", "resource", "subresource", "namespace", "name", "allowed",
        "reason", "error", "errored",
        "masked", "prefixLength", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
        "isLinkLocalUnicast", "isGlobalUnicast",
        "format.named",
        "sign", "asInteger", "isInteger", "asApproximateFloat", "isGreaterThan", "isLessThan", "compareTo",
        "add", "sub", "major", "minor", "patch",
        "getScheme", "getHostname", "getHost", "getPort", "getEscapedPath", "getQuery",
    }
)  # fmt: skip

_EQUAL_IN_ONE = frozenset(
    {
        "kubernetes.Quantity",
        "kubernetes.Semver",
        "kubernetes.authorization.Authorizer",
        "kubernetes.authorization.PathCheck",
        "kubernetes.authorization.GroupCheck",
        "kubernetes.authorization.ResourceCheck",
        "kubernetes.authorization.Decision",
    }
)


def _kubernetes_call(
    c: _Coster, function: str, overload: str, target: _AstNode | None, args: list[_AstNode]
) -> tuple[Est, Est | None] | None:
    size = c.node_size
    if function == "check":
        return _fixed(350000), None
    if function in _NOMINAL:
        return _fixed(1), None
    if function in ("fieldSelector", "labelSelector"):
        return (_selector(size(args[0])), None) if len(args) == 1 else None
    if function in ("isSorted", "sum", "max", "min", "indexOf", "lastIndexOf"):
        if target is None:
            return None
        element = _element(target)
        if element is not None:
            each: Est = (1, 1)
            if element.type.kind in ("string", "bytes"):
                each = _add(each, _factor(size(element), _STRING_TRAVERSAL))
            return _mul(size(target), each), None
        return _factor(size(target), _STRING_TRAVERSAL), None
    if function in ("url", "jsonpatch.escapeKey"):
        if len(args) != 1:
            return None
        sz = size(args[0])
        return _factor(sz, _STRING_TRAVERSAL), sz
    if function in ("lowerAscii", "upperAscii", "substring", "trim"):
        if target is None:
            return None
        sz = size(target)
        return _factor(sz, _STRING_TRAVERSAL), sz
    if function == "replace":
        return _replace(c, target, args)
    if function == "split":
        if target is None:
            return None
        sz = size(target)
        most = sz[1]
        limit = args[1].expr if len(args) > 1 else None
        if limit is not None and limit.kind == "literal" and limit.literal == "int":
            most = _go_u64(int(limit.value))
        return _factor(sz, 2 * _STRING_TRAVERSAL), (0, most)
    if function == "join":
        if target is None:
            return None
        joined: Est = (0, 0)
        count = size(target)
        element = _element(target)
        if element is not None:
            joined = _mul(count, size(element))
        if args:
            separators = (max(count[0] - 1, 0), max(count[1] - 1, 0))
            joined = _add(joined, _mul(size(args[0]), separators))
        return _factor(joined, _STRING_TRAVERSAL), joined
    if function in ("find", "findAll"):
        if target is None or not args:
            return None
        sz = size(target)
        text = _factor(_add(sz, (1, 1)), _STRING_TRAVERSAL)
        regex = _factor(size(args[0]), _REGEX_LENGTH)
        return _mul(text, regex), (0, sz[1])
    if function in ("cidr", "isIP", "isCIDR"):
        return (_factor(size(args[0]), _STRING_TRAVERSAL), None) if args else None
    if function == "ip":
        if overload == "cidr_ip":
            return _fixed(1), None
        return (_factor(size(args[0]), _STRING_TRAVERSAL), None) if args else None
    if function == "ip.isCanonical":
        return (_factor(size(args[0]), 2 * _STRING_TRAVERSAL), None) if args else None
    if function in ("containsIP", "containsCIDR"):
        if not args:
            return None
        ip: Est = (4, 16)
        cost = _factor(_add(ip, ip), _STRING_TRAVERSAL)
        if function == "containsCIDR":
            cost = _add(_add(cost, _factor(ip, _STRING_TRAVERSAL)), (1, 1))
        if overload in ("cidr_contains_ip_string", "cidr_contains_cidr_string"):
            cost = _add(cost, _factor(size(args[0]), _STRING_TRAVERSAL))
        return cost, None
    if function in ("quantity", "isQuantity", "semver", "isSemver"):
        return (_factor(size(args[0]), _STRING_TRAVERSAL), None) if args else None
    if function == "validate":
        if not args:
            return None
        per_char = _factor(size(args[0]), _STRING_TRAVERSAL)
        return _factor(per_char, _MAX_NAME_FORMAT_REGEX * _REGEX_LENGTH), None
    if function == "_==_" and len(args) == 2:
        return _equal(args[0], args[1])
    return None


def _equal(lhs: _AstNode, rhs: _AstNode) -> tuple[Est, None] | None:
    t = lhs.type
    if t.name != rhs.type.name:  # cel-go's Type.Equal compares type names only
        return None
    if t.kind == "opaque" and t.name in ("net.IP", "net.CIDR"):
        return _fixed(1), None
    if t.kind == "struct":
        if t.name in _EQUAL_IN_ONE:
            return _fixed(1), None
        if t.name == "kubernetes.NamedFormat":
            return _factor((1, _MAX_FORMAT_SIZE), _STRING_TRAVERSAL), None
        if t.name == "kubernetes.URL":
            size: Est = (1, 1)
            if rhs.size is not None:  # (the API server reads the right side's size for both)
                size = _union(rhs.size, rhs.size)
            return _factor((1, size[1]), _STRING_TRAVERSAL), None
    return None


def _replace(c: _Coster, target: _AstNode | None, args: list[_AstNode]) -> tuple[Est, Est] | None:
    if target is None or len(args) < 2:
        return None
    sz = c.node_size(target)
    old = c.node_size(args[0])
    new = c.node_size(args[1])
    # the longest result replaces the shortest matches, the shortest result the longest
    count_max, kept_max = _replaced(sz[1], old[0], new[1] <= old[0])
    count_min, kept_min = _replaced(sz[0], old[1], old[1] <= new[0])
    result = _add(_mul((count_min, count_max), new), (kept_min, kept_max))
    return _factor(sz, 2 * _STRING_TRAVERSAL), result


def _replaced(length: int, old_length: int, not_longer: bool) -> tuple[int, int]:
    """How many replacements a string of ``length`` gets, and how much of it is kept: an empty string replaced
    surrounds every character, a replacement no longer than what it replaces keeps the length."""
    if old_length == 0:
        return (length + 1 if length < MAX else length), length
    if not_longer:
        return 0, length
    return _go_ceil_div(length, old_length), 0


def _go_ceil_div(a: int, b: int) -> int:
    """``uint64(math.Ceil(float64(a) / float64(b)))``."""
    value = math.ceil(float(a) / float(b))
    return MAX if value >= _TWO_TO_64 else int(value)


# ---------------------------------------------------------------------------------------------------------
# a rule, a schema
# ---------------------------------------------------------------------------------------------------------


def estimate(expression: str, decl: ck.Decl, optional_old_self: bool = False) -> int:
    """The API server's estimated cost (``MaxCost``) of ``expression`` with ``self`` of ``decl``'s type;
    :class:`~nodefleet.apiserver.cel_check.CheckError` when it does not type-check here."""
    checked = ck.check(expression, decl, optional_old_self)
    return _Coster(checked, decl).cost(checked.tree)[1]


@dataclass(frozen=True)
class RuleCost:
    """What the API server computes for one rule: where it is, its estimated cost, the cardinality it is
    multiplied by, the product the limits are checked against, a messageExpression's estimated cost, and why
    it could not be estimated here (then the costs are None); and where it refuses the rule when the CRD is
    created, why, in its words (``error`` for the rule, ``message_error`` for its messageExpression), and
    whether the rule reads ``oldSelf``."""

    path: str
    rule: str
    estimated: int | None
    cardinality: int | None
    cost: int | None
    message_expression_cost: int | None = None
    unestimated: str = ""
    error: str = ""
    message_error: str = ""
    uses_old_self: bool = False
    entry: Mapping[str, Any] | None = field(default=None, compare=False)


def _guarded(cost: int, cardinality: int) -> int:
    """``multiplyWithOverflowGuard``."""
    return 0 if cost == 0 else min(cost * cardinality, MAX)


def _max_elements(schema: Mapping[str, Any]) -> int | None:
    """``extractMaxElements``: how many times a node's children occur per occurrence of the node (None:
    unbounded)."""
    kind = schema.get("type")
    if kind == "object":
        return ck.bound(schema, "maxProperties") if schema.get("additionalProperties") is not None else 1
    if kind == "array":
        return ck.bound(schema, "maxItems")
    return 1


def _children(
    schema: Mapping[str, Any], decl: ck.Decl | None
) -> Iterator[tuple[str, Mapping[str, Any], ck.Decl | None]]:
    """The child schemas the API server walks for CEL (additionalProperties, properties, items), with their
    declared types where the parent's give them."""
    addl = schema.get("additionalProperties")
    if isinstance(addl, Mapping):
        yield "additionalProperties", addl, decl.elem if decl is not None else None
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            cel_name = crd_cel.escape_property(name)
            fields = decl.fields if decl is not None else None
            found = fields.get(cel_name) if fields is not None and cel_name is not None else None
            yield f"properties[{name}]", sub, found
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield "items", items, decl.elem if decl is not None else None


def _has_rules(schema: Mapping[str, Any]) -> bool:
    if schema.get("x-kubernetes-validations"):
        return True
    return any(_has_rules(sub) for _, sub, _ in _children(schema, None))


def rule_costs(schema: Mapping[str, Any], where: str = "openAPIV3Schema") -> list[RuleCost]:
    """The cost the API server computes for every rule of ``schema`` (a CRD version's ``openAPIV3Schema``),
    in the order it walks them."""
    out: list[RuleCost] = []
    if _has_rules(schema):
        _walk(schema, where, None, False, 1, True, out)
    return out


def _walk(
    schema: Mapping[str, Any],
    where: str,
    decl: ck.Decl | None,
    in_scope: bool,
    cardinality: int | None,
    root: bool,
    out: list[RuleCost],
) -> None:
    """One node of ``ValidateCustomResourceDefinitionOpenAPISchema``'s walk with its ``CELSchemaContext``: a
    node under a rule (``in_scope``) takes its declared type from its parent's, as the API server does, any
    other node with rules converts its own schema."""
    rules = schema.get("x-kubernetes-validations") or ()
    in_scope = in_scope or bool(rules)
    if decl is None and in_scope:
        decl = ck.schema_decl(schema, root or bool(schema.get("x-kubernetes-embedded-resource")))
    if rules and decl is not None:
        unbounded = ck.MAX_REQUEST_BYTES // (decl.min_size + 1)
        named = ck.renamed(decl)
        for i, entry in enumerate(rules):
            if isinstance(entry, Mapping):
                path = f"{where}.x-kubernetes-validations[{i}].rule"
                out.append(_rule_cost(entry, path, named, cardinality, unbounded))
    factor = _max_elements(schema)
    for step, sub, sub_decl in _children(schema, decl if in_scope else None):
        child = None if cardinality is None or factor is None else min(cardinality * factor, MAX)
        _walk(sub, f"{where}.{step}", sub_decl, in_scope, child, False, out)


def _rule_cost(
    entry: Mapping[str, Any], path: str, decl: ck.Decl, cardinality: int | None, unbounded: int
) -> RuleCost:
    """``compileRule``: the rule compiled and estimated as the API server does, its messageExpression only when
    the rule compiles to a bool."""
    rule = str(entry.get("rule") or "")
    if not rule.strip():
        return RuleCost(path, rule, 0, cardinality, 0, entry=entry)
    optional_old_self = bool(entry.get("optionalOldSelf"))
    try:
        checked = ck.check(rule, decl, optional_old_self)
    except ck.CheckError as e:
        return RuleCost(
            path, rule, None, cardinality, None, unestimated=str(e), error=f"compilation failed: {e.display}",
            entry=entry,
        )  # fmt: skip
    except _UNKNOWN_SHAPE as e:
        # A shape this checker does not know: never refuse for it (the comparison with the API server's code,
        # tests/test_cel_cost_reference.py, fails on any rule left unchecked there).
        return RuleCost(
            path, rule, None, cardinality, None, unestimated=f"not checked here: {e!r}", entry=entry
        )
    uses_old_self = any(n.kind == "ident" and n.name == "oldSelf" for n in _all_nodes(checked.tree))
    if checked.types.get(checked.tree.id) != ck.BOOL:
        return RuleCost(
            path, rule, 0, cardinality, 0, error="cel expression must evaluate to a bool",
            uses_old_self=uses_old_self, entry=entry,
        )  # fmt: skip
    try:
        estimated = _Coster(checked, decl).cost(checked.tree)[1]
    except _UNKNOWN_SHAPE as e:
        return RuleCost(
            path, rule, None, cardinality, None, unestimated=f"not estimated here: {e!r}",
            uses_old_self=uses_old_self, entry=entry,
        )  # fmt: skip
    cost = _guarded(estimated, cardinality if cardinality is not None else unbounded)
    message_cost, message_error = None, ""
    message_expression = entry.get("messageExpression")
    if message_expression:
        try:
            # compiled in the rule's environment: oldSelf is optional there too
            message_cost = _estimate(str(message_expression), decl, optional_old_self, ck.STRING)
            if message_cost is None:
                message_error = "messageExpression must evaluate to a string"
        except ck.CheckError as e:
            message_error = f"messageExpression compilation failed: {e.display}"
        except _UNKNOWN_SHAPE:
            message_cost = None
    return RuleCost(
        path, rule, estimated, cardinality, cost, message_cost, error="", message_error=message_error,
        uses_old_self=uses_old_self, entry=entry,
    )  # fmt: skip


#: What a shape this code does not know raises; it is never a reason to refuse a CRD.
_UNKNOWN_SHAPE = (LookupError, TypeError, ValueError, AttributeError, AssertionError, RecursionError)


def _all_nodes(node: Node) -> Iterator[Node]:
    yield node
    for child in node.children():
        yield from _all_nodes(child)


def _estimate(expression: str, decl: ck.Decl, optional_old_self: bool, output: ck.Type) -> int | None:
    """The estimated cost of an expression the API server compiles, None when its type is not ``output`` (the
    API server then refuses it without estimating it)."""
    checked = ck.check(expression, decl, optional_old_self)
    if checked.types.get(checked.tree.id) != output:
        return None
    return _Coster(checked, decl).cost(checked.tree)[1]


def _factor_words(cost: int, limit: int) -> str:
    """``getCostErrorMessage``'s factor: ``more than 100x``, ``1.234567x`` below 1.5, else ``2.5x``."""
    ratio = float(cost) / float(limit)
    if ratio > 100.0:
        return "more than 100x"
    if ratio < 1.5:
        return f"{ratio:f}x"
    return f"{ratio:.1f}x"


_TRY = (
    "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
    "strings are declared)"
)


def _cost_words(name: str, cost: int, limit: int) -> str:
    return f"Forbidden: {name} exceeds budget by factor of {_factor_words(cost, limit)} {_TRY}"


def refusals(schema: Mapping[str, Any], where: str = "openAPIV3Schema") -> list[tuple[str, str]]:
    """The API server's refusals of ``schema`` for the estimated cost of its rules, as (path, words): a rule
    over the per-expression limit, and when all rules together exceed the per-CRD limit, the four most
    expensive rules that contributed and the schema itself."""
    costs = rule_costs(schema, where)
    out: list[tuple[str, str]] = []
    total = 0
    expensive: list[tuple[int, str]] = []
    for rc in costs:
        if rc.cost is None:
            continue
        if rc.cost > PER_RULE_LIMIT:
            out.append((rc.path, _cost_words("estimated rule cost", rc.cost, PER_RULE_LIMIT)))
        observed = [(rc.path, rc.cost)]
        if rc.message_expression_cost is not None:
            message_path = rc.path.removesuffix(".rule") + ".messageExpression"
            if rc.message_expression_cost > PER_RULE_LIMIT:
                out.append(
                    (
                        message_path,
                        _cost_words(
                            "estimated messageExpression cost", rc.message_expression_cost, PER_RULE_LIMIT
                        ),
                    )
                )
            observed.append((message_path, rc.message_expression_cost))
        for path, cost in observed:
            total = min(total + cost, MAX)
            if cost >= PER_CRD_LIMIT // 100:
                expensive.append((cost, path))
    if total > PER_CRD_LIMIT:
        expensive.sort(key=lambda e: -e[0])
        for _, path in expensive[:4]:
            out.append(
                (
                    path,
                    "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema",
                )
            )
        out.append(
            (
                where,
                _cost_words(
                    "x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema",
                    total,
                    PER_CRD_LIMIT,
                ),
            )
        )
    return out
