"""What the API server refuses in a CRD's ``x-kubernetes-validations`` when the CRD itself is created or
updated (apiextensions-apiserver ``validation.ValidateCustomResourceDefinition``), as far as crd-schema can
tell without cel-go's type checker and cost estimator.

A CRD the API server refuses is never installed, so no object of it can be created; crd-schema says so for
every object judged by such a CRD, and ``crds refresh`` does not ship one. Checked here (each against the
test API server, tests/test_crd_classes_live.py):

- a rule or ``messageExpression`` that does not parse; a macro or library the API server does not enable
  (``cel.bind``, ``math.*``, ``base64.*``, ``proto.*``);
- a field a rule selects that its node's schema does not declare (``self.metadata.labels`` at the root or in
  an embedded resource, where only ``name`` and ``generateName`` exist; an undeclared field of an object with
  properties, ``x-kubernetes-preserve-unknown-fields`` or not);
- a rule whose type is known and is not ``bool``; a ``messageExpression`` whose type is known and is not
  ``string``;
- a ``fieldPath`` that names no field of the node's schema, a ``reason`` other than the four field error types;
- a transition rule (``oldSelf``) under the items of a list the API server cannot correlate (``set`` and
  ``atomic`` lists).

Not checked: type errors that need the schema's types (``int == 2.5``, ``string == 1``, a list literal of
mixed types) and the estimated cost of rules (cel-go's ``checker.Cost`` with Kubernetes' size estimates),
which the API server refuses over budget: docs/crd-validation.md says what that means for a CRD a user brings.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver import cel_library as library

__all__ = ["Refusal", "refusals"]

_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")

#: Namespaces of cel-go extensions the API server's CRD environment does not include.
_NOT_ENABLED = re.compile(r"(?<![\w.])(cel\s*\.\s*bind|math|base64|proto)\s*\.?\s*\w*\s*\(")

#: ``self`` followed by field selections (``self.a.b``, ``self.?a``).
_SELF_CHAIN = re.compile(r"(?<![\w.])self((?:\s*\.\s*\??\s*[A-Za-z_][A-Za-z0-9_]*(?![\w(])(?!\s*\())+)")

#: What CEL sees of ObjectMeta at the root and in an embedded resource.
_META = {"type": "object", "properties": {"name": {"type": "string"}, "generateName": {"type": "string"}}}


@dataclass(frozen=True)
class Refusal:
    """Why the API server refuses the CRD: the schema node's path (``properties[spec]...``), and its words."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def _code(expression: str) -> str:
    """``expression`` with its string literals blanked."""
    return re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", '""', expression)


def _resolved(schema: Mapping[str, Any], root: bool) -> Mapping[str, Any]:
    """The schema as CEL types it: type and ObjectMeta fields of the root and embedded resources added."""
    if not (root or schema.get("x-kubernetes-embedded-resource")):
        return schema
    props = dict(schema.get("properties") or {})
    props.setdefault("apiVersion", {"type": "string"})
    props.setdefault("kind", {"type": "string"})
    props["metadata"] = _META
    return {**schema, "properties": props}


def _chain(
    names: list[str], schema: Mapping[str, Any], root: bool
) -> tuple[Mapping[str, Any] | None, str | None]:
    """(the schema ``self.<names>`` selects, or None where it cannot say; the first undeclared field)."""
    node: Mapping[str, Any] | None = _resolved(schema, root)
    for name in names:
        if node is None:
            return None, None
        props = node.get("properties")
        if props is not None:
            by_cel_name = {crd_cel_name(k): v for k, v in props.items()}
            if name not in by_cel_name:
                return None, name
            node = _resolved(by_cel_name[name], False)
        elif isinstance(node.get("additionalProperties"), Mapping):
            node = node["additionalProperties"]
        else:
            return None, None  # a list, a scalar (the checker says more), or an object of unknown fields
    return node, None


def _undefined_fields(expression: str, schema: Mapping[str, Any], root: bool) -> Iterator[str]:
    """Fields ``self.a.b...`` selects that the schema does not declare."""
    for match in _SELF_CHAIN.finditer(_code(expression)):
        _, undefined = _chain(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(1)), schema, root)
        if undefined is not None:
            yield undefined


#: CEL's type of a scalar schema (a string of a converted format is a timestamp, duration or bytes).
_SCALARS = {"integer": "int", "number": "double", "string": "string", "boolean": "bool"}
_STRING_FORMATS = {
    "date-time": "google.protobuf.Timestamp",
    "date": "google.protobuf.Timestamp",
    "duration": "google.protobuf.Duration",
    "byte": "bytes",
}


def _cel_type(node: Mapping[str, Any] | None) -> str | None:
    if node is None or node.get("x-kubernetes-int-or-string") or node.get("nullable"):
        return None
    kind = _SCALARS.get(str(node.get("type")))
    if kind == "string" and node.get("format") in _STRING_FORMATS:
        return _STRING_FORMATS[str(node["format"])]
    return kind


_LITERAL = r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"|-?\d+\.\d+(?:[eE][-+]?\d+)?|-?\d+u?|true|false|null"
_COMPARED = re.compile(
    r"(?<![\w.])self((?:\s*\.\s*[A-Za-z_][A-Za-z0-9_]*)+)\s*(==|!=)\s*(" + _LITERAL + r")(?![\w.])"
)
_LIST_LITERAL = re.compile(r"\[\s*((?:" + _LITERAL + r")(?:\s*,\s*(?:" + _LITERAL + r"))+)\s*\]")


def _literal_type(text: str) -> str:
    if text[0] in "'\"":
        return "string"
    if text in ("true", "false"):
        return "bool"
    if text == "null":
        return "null_type"
    if text.endswith("u"):
        return "uint"
    return "double" if "." in text or "e" in text.lower() else "int"


def _type_errors(expression: str, schema: Mapping[str, Any], root: bool) -> Iterator[str]:
    """The checker's errors this can see without cel-go: ``self.<field> == <constant>`` of another type, and a
    list literal of constants of more than one type."""
    for match in _COMPARED.finditer(expression):
        node, _ = _chain(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(1)), schema, root)
        left, right = _cel_type(node), _literal_type(match.group(3))
        if left is not None and left != right:
            operator = "_==_" if match.group(2) == "==" else "_!=_"
            yield f"found no matching overload for '{operator}' applied to '({left}, {right})'"
    for match in _LIST_LITERAL.finditer(expression):
        kinds = [_literal_type(t) for t in re.findall(_LITERAL, match.group(1))]
        different = next((k for k in kinds if k != kinds[0]), None)
        if different is not None:
            yield f"expected type '{kinds[0]}' but found '{different}'"


def _bare_chain_type(expression: str, schema: Mapping[str, Any], root: bool) -> str | None:
    """The CEL type of an expression that is only ``self.<fields>``, when the schema says."""
    match = _SELF_CHAIN.fullmatch(expression.strip())
    if not match or "?" in match.group(1):
        return None
    node, _ = _chain(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", match.group(1)), schema, root)
    return _cel_type(node)


def crd_cel_name(name: str) -> str:
    return crd_cel.escape_property(name) or name


def _rule_refusals(
    entry: Mapping[str, Any], schema: Mapping[str, Any], where: str, root: bool, uncorrelatable: str | None
) -> Iterator[Refusal]:
    rule = str(entry.get("rule", ""))
    at = f"{where}.x-kubernetes-validations"
    for part, text in (("rule", rule), ("messageExpression", entry.get("messageExpression"))):
        if not text:
            continue
        text = str(text)
        found = _NOT_ENABLED.search(_code(text))
        if found:
            name = found.group(1).split(".")[0].strip()
            yield Refusal(f"{at}.{part}", f"compilation failed: undeclared reference to '{name}'")
            continue
        for field in _undefined_fields(text, schema, root):
            yield Refusal(f"{at}.{part}", f"compilation failed: undefined field '{field}'")
        for error in _type_errors(text, schema, root):
            yield Refusal(f"{at}.{part}", f"compilation failed: {error}")
        bare = _bare_chain_type(text, schema, root)
        if part == "messageExpression" and bare is not None and bare != "string":
            yield Refusal(f"{at}.messageExpression", "messageExpression must evaluate to a string")
            continue
        if part == "rule" and bare is not None and bare != "bool":
            yield Refusal(f"{at}.rule", "cel expression must evaluate to a bool")
            continue
        kind = _return_type(text)
        if kind is None:
            continue
        if kind.startswith("ERROR:"):
            yield Refusal(f"{at}.{part}", f"compilation failed: {kind[6:]}")
        elif part == "rule" and kind not in ("BOOL", "DYN"):
            yield Refusal(f"{at}.rule", "cel expression must evaluate to a bool")
        elif part == "messageExpression" and kind not in ("STRING", "DYN"):
            yield Refusal(f"{at}.messageExpression", "messageExpression must evaluate to a string")
    field_path = entry.get("fieldPath")
    if field_path and crd_cel.rule_field_path(str(field_path), schema) is None:
        yield Refusal(f"{at}.fieldPath", f'Invalid value: "{field_path}": must be a valid path')
    reason = entry.get("reason")
    if reason is not None and reason not in _REASONS:
        supported = ", ".join(f'"{r}"' for r in _REASONS)
        yield Refusal(f"{at}.reason", f'Unsupported value: "{reason}": supported values: {supported}')
    if uncorrelatable is not None and crd_cel.references_old_self(rule):
        yield Refusal(
            f"{at}.rule",
            f'Invalid value: "{rule}": oldSelf cannot be used on the uncorrelatable portion of the schema '
            f"within {uncorrelatable}",
        )


@cache
def _return_type(expression: str) -> str | None:
    """The type cel-expr-python gives ``expression`` (``BOOL``, ``DYN``, ...), ``ERROR:<why>`` when it does not
    parse, None when this environment cannot say (it lacks something the expression calls)."""
    try:
        program = crd_cel._env().compile(library.rewrite(expression))
    except Exception as e:  # the binding raises with the parser's or checker's words
        words = " ".join(str(e).split())
        if "Syntax error" in words:
            return "ERROR:" + words.split("Syntax error", 1)[1].join(["Syntax error", ""]).split(" | ")[0]
        return None
    return str(program.return_type().name())


def _walk(schema: Mapping[str, Any], where: str, root: bool, uncorrelatable: str | None) -> Iterator[Refusal]:
    for entry in schema.get("x-kubernetes-validations") or ():
        if isinstance(entry, Mapping):
            yield from _rule_refusals(entry, schema, where, root, uncorrelatable)
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield from _walk(sub, f"{where}.properties[{name}]", False, uncorrelatable)
    addl = schema.get("additionalProperties")
    if isinstance(addl, Mapping):
        yield from _walk(addl, f"{where}.additionalProperties", False, uncorrelatable)
    items = schema.get("items")
    if isinstance(items, Mapping):
        correlates = schema.get("x-kubernetes-list-type") == "map"
        yield from _walk(
            items, f"{where}.items", False, uncorrelatable if correlates or uncorrelatable else where
        )


def refusals(schema: Mapping[str, Any], where: str = "openAPIV3Schema") -> list[Refusal]:
    """Why the API server refuses a CRD version whose schema is ``schema`` (empty: it accepts it, as far as
    this can tell)."""
    return list(_walk(schema, where, True, None))
