"""What the API server refuses in a CRD's ``x-kubernetes-validations`` when the CRD itself is created or
updated (apiextensions-apiserver ``validation.ValidateCustomResourceDefinition``), in its words.

A CRD the API server refuses is never installed, so no object of it can be created; crd-schema says so for
every object judged by such a CRD, and ``crds refresh`` does not ship one. Checked here, each against the API
server's own code (tests/test_cel_cost_reference.py) and the test API server (tests/test_crd_classes_live.py):

- an empty rule, message, messageExpression or fieldPath, a message with a line break or a multi-line rule
  without one, a ``reason`` other than the four field error types, a ``fieldPath`` naming no field of the
  node's schema (the API server then compiles none of the node's rules);
- every rule and ``messageExpression`` compiled as the API server compiles it
  (:mod:`nodefleet.apiserver.cel_check`: its parser, cel-go's type checker over the schema's CEL types and the
  environment's functions, and its AST validators: literals of one type, valid ``duration``, ``timestamp`` and
  ``matches`` literals, the strings extension's format strings), with cel-go's errors, located and shown as it
  shows them; a rule that is not a ``bool``, a ``messageExpression`` that is not a ``string``;
- the ``x-kubernetes-*`` extensions of every node: a list or map type on a node of another type or unknown,
  map keys without ``list-type: map``, a map list without keys, of items that are not objects, keyed by a
  property that is missing, an object, nullable, or neither required nor defaulted, a set of nullable items
  or of items that are not atomic, ``x-kubernetes-preserve-unknown-fields: false``;
- a transition rule (``oldSelf``) under the items of a list the API server cannot correlate (``set`` and
  ``atomic`` lists), and ``optionalOldSelf`` on a rule that does not read ``oldSelf``;
- a rule whose estimated cost exceeds the per-expression limit, and rules whose costs together exceed the
  per-CRD limit (:mod:`nodefleet.apiserver.cel_cost`).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import metadata
from pathlib import Path
from typing import Any

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver import cel_cost
from nodefleet.apiserver.formats import go_quote

__all__ = ["Refusal", "analysis_digest", "bad_value", "go_json", "refusals"]

_REASONS = ("FieldValueDuplicate", "FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired")


@dataclass(frozen=True)
class Refusal:
    """Why the API server refuses the CRD: the schema node's path (``properties[spec]...``), and its words."""

    where: str
    message: str

    def __str__(self) -> str:
        return f"{self.where}: {self.message}"


def go_json(value: Any, sort_keys: bool = False) -> str:
    """``value`` as Go's ``json.Marshal`` writes it: compact, ``<``, ``>``, ``&`` and the line and paragraph
    separators escaped, other control characters as ``\\u00XX``; a Go map's keys sorted (``sort_keys``), a
    struct's fields in their order."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=sort_keys)
    for ch, escaped in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026")):
        text = text.replace(ch, escaped)
    return (
        text.replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
        .replace("\\b", "\\u0008")
        .replace("\\f", "\\u000c")
    )


def _rule_json(entry: Mapping[str, Any]) -> str:
    """The rule as a field error shows it: the internal ``ValidationRule`` marshalled by Go."""
    reason, optional = entry.get("reason"), entry.get("optionalOldSelf")
    return go_json(
        {
            "Rule": str(entry.get("rule") or ""),
            "Message": str(entry.get("message") or ""),
            "MessageExpression": str(entry.get("messageExpression") or ""),
            "Reason": None if reason is None else str(reason),
            "FieldPath": str(entry.get("fieldPath") or ""),
            "OptionalOldSelf": None if optional is None else bool(optional),
        }
    )


def _has_newlines(text: str) -> bool:
    return "\n" in text or "\r" in text


#: What Go's ``strings.TrimSpace`` removes.
_GO_SPACE = "\t\n\v\f\r \x85\xa0"


def _schema_errors(entry: Mapping[str, Any], schema: Mapping[str, Any], at: str) -> Iterator[Refusal]:
    """The checks of a rule's fields before any is compiled (``validation.go``), in its order."""
    rule = str(entry.get("rule") or "")
    message = str(entry.get("message") or "")
    trimmed_rule, trimmed_message = rule.strip(_GO_SPACE), message.strip(_GO_SPACE)
    if not trimmed_rule:
        yield Refusal(f"{at}.rule", "Required value: rule is not specified")
    elif message and not trimmed_message:
        yield Refusal(f"{at}.message", f"Invalid value: {go_quote(message)}: must be non-empty if specified")
    elif _has_newlines(trimmed_message):
        yield Refusal(f"{at}.message", f"Invalid value: {go_quote(message)}: must not contain line breaks")
    elif _has_newlines(trimmed_rule) and not trimmed_message:
        yield Refusal(
            f"{at}.message", "Required value: message must be specified if rule contains line breaks"
        )
    expression = str(entry.get("messageExpression") or "")
    if expression and not expression.strip(_GO_SPACE):
        yield Refusal(
            f"{at}.messageExpression", "Required value: messageExpression must be non-empty if specified"
        )
    reason = entry.get("reason")
    if reason is not None and reason not in _REASONS:
        supported = ", ".join(f'"{r}"' for r in _REASONS)
        yield Refusal(f"{at}.reason", f'Unsupported value: "{reason}": supported values: {supported}')
    field_path = str(entry.get("fieldPath") or "")
    if field_path and not field_path.strip(_GO_SPACE):
        yield Refusal(
            f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must be non-empty if specified"
        )
    if _has_newlines(field_path):
        yield Refusal(
            f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must not contain line breaks"
        )
    if field_path and crd_cel.rule_field_path(field_path, schema) is None:
        yield Refusal(f"{at}.fieldPath", f"Invalid value: {go_quote(field_path)}: must be a valid path")


def _type_errors(schema: Mapping[str, Any], at: str, extension: str, wanted: str) -> Iterator[Refusal]:
    kind = schema.get("type") or ""
    if kind != wanted:
        detail = f"must be {wanted} if {extension} is specified"
        yield Refusal(
            f"{at}.type",
            f"Invalid value: {go_quote(str(kind))}: {detail}" if kind else f"Required value: {detail}",
        )


def _extension_errors(schema: Mapping[str, Any], at: str) -> Iterator[Refusal]:
    """The checks of a node's ``x-kubernetes-*`` extensions (``validation.go``, ``specStandardValidatorV3``
    and ``validateMapListKeysMapSet``), in its order: what list and map types, map keys and their items
    must be."""
    preserve = schema.get("x-kubernetes-preserve-unknown-fields")
    if preserve is False:
        yield Refusal(
            f"{at}.x-kubernetes-preserve-unknown-fields", "Invalid value: false: must be true or undefined"
        )
    map_type = schema.get("x-kubernetes-map-type")
    if map_type is not None:
        yield from _type_errors(schema, at, "x-kubernetes-map-type", "object")
        if map_type not in ("atomic", "granular"):
            yield Refusal(
                f"{at}.x-kubernetes-map-type",
                f'Unsupported value: {bad_value(map_type)}: supported values: "atomic", "granular"',
            )
    list_type = schema.get("x-kubernetes-list-type")
    raw_items = schema.get("items")
    items: Mapping[str, Any] = raw_items if isinstance(raw_items, Mapping) else {}
    if list_type is not None and schema.get("type") != "array":
        yield from _type_errors(schema, at, "x-kubernetes-list-type", "array")
    elif list_type == "set" and items:
        inner = "x-kubernetes-list-type" if items.get("type") == "array" else "x-kubernetes-map-type"
        if (items.get("type") == "array" and items.get(inner) not in (None, "atomic")) or (
            items.get("type") == "object" and items.get(inner) != "atomic"
        ):
            # (Go shows the item's list type in both: null for an object item.)
            shown = (
                bad_value(items.get("x-kubernetes-list-type"))
                if items.get("x-kubernetes-list-type")
                else "null"
            )
            yield Refusal(
                f"{at}.items.{inner}",
                f"Invalid value: {shown}: must be atomic as item of a list with x-kubernetes-list-type=set",
            )
    if list_type is not None and list_type not in ("atomic", "set", "map"):
        yield Refusal(
            f"{at}.x-kubernetes-list-type",
            f'Unsupported value: {bad_value(list_type)}: supported values: "atomic", "set", "map"',
        )
    keys = [str(k) for k in schema.get("x-kubernetes-list-map-keys") or ()]
    if keys and list_type is None:
        yield Refusal(
            f"{at}.x-kubernetes-list-type",
            "Required value: must be map if x-kubernetes-list-map-keys is non-empty",
        )
    elif keys and list_type != "map":
        yield Refusal(
            f"{at}.x-kubernetes-list-type",
            f"Invalid value: {bad_value(list_type)}: must be map if x-kubernetes-list-map-keys is non-empty",
        )
    properties = items.get("properties") or {}
    if list_type == "map":
        if not keys:
            yield Refusal(
                f"{at}.x-kubernetes-list-map-keys",
                "Required value: must not be empty if x-kubernetes-list-type is map",
            )
        if not items:
            yield Refusal(
                f"{at}.items", "Required value: must have a schema if x-kubernetes-list-type is map"
            )
        elif items.get("type") != "object":
            yield Refusal(
                f"{at}.items.type",
                f"Invalid value: {bad_value(str(items.get('type') or ''))}: must be object if parent array's "
                "x-kubernetes-list-type is map",
            )
        else:
            seen: set[str] = set()
            for key in keys:
                prop = properties.get(key)
                if isinstance(prop, Mapping):
                    if prop.get("type") in ("array", "object"):
                        yield Refusal(
                            f"{at}.items.properties[{key}].type",
                            'Invalid value: "object": must be a scalar type if parent array\'s x-kubernetes-list-type '
                            "is map",
                        )
                else:
                    yield Refusal(
                        f"{at}.x-kubernetes-list-map-keys",
                        f"Invalid value: {go_json(keys)}: entries must all be names of item properties",
                    )
                if key in seen:
                    yield Refusal(
                        f"{at}.x-kubernetes-list-map-keys",
                        f"Invalid value: {go_json(keys)}: must not contain duplicate entries",
                    )
                seen.add(key)
    if list_type in ("set", "map") and items:
        if items.get("nullable"):
            yield Refusal(
                f"{at}.items.nullable",
                f"Forbidden: cannot be nullable when x-kubernetes-list-type is {list_type}",
            )
        if list_type == "map":
            required = set(items.get("required") or ())
            for key in keys:
                prop = properties.get(key)
                if not isinstance(prop, Mapping):
                    continue
                if key not in required and prop.get("default") is None:
                    yield Refusal(
                        f"{at}.items.properties[{key}].default",
                        "Required value: this property is in x-kubernetes-list-map-keys, so it must have a default "
                        "or be a required property",
                    )
                if prop.get("nullable"):
                    yield Refusal(
                        f"{at}.items.properties[{key}].nullable",
                        "Forbidden: this property is in x-kubernetes-list-map-keys, so it cannot be nullable",
                    )


def _walk_schema_errors(schema: Mapping[str, Any], where: str, out: dict[str, list[Refusal]]) -> bool:
    """The rule-field errors of every node under ``schema`` into ``out`` (by node path); whether there are any
    at this node or below it, where the API server compiles none of the node's rules."""
    below = False
    for step, sub in _children(schema):
        below = _walk_schema_errors(sub, f"{where}.{step}", out) or below
    found = list(_extension_errors(schema, where)) + [
        r
        for i, entry in enumerate(schema.get("x-kubernetes-validations") or ())
        if isinstance(entry, Mapping)
        for r in _schema_errors(entry, schema, f"{where}.x-kubernetes-validations[{i}]")
    ]
    out[where] = found
    return below or bool(found)


def _children(schema: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for name, sub in (schema.get("properties") or {}).items():
        if isinstance(sub, Mapping):
            yield f"properties[{name}]", sub
    addl = schema.get("additionalProperties")
    if isinstance(addl, Mapping):
        yield "additionalProperties", addl
    items = schema.get("items")
    if isinstance(items, Mapping):
        yield "items", items


def _uncorrelatable(schema: Mapping[str, Any], where: str, within: str | None, out: dict[str, str]) -> None:
    """The nearest list above each node whose items the API server cannot correlate (``set`` and ``atomic``
    lists), by node path."""
    if within is not None:
        out[where] = within
    for step, sub in _children(schema):
        inner = within
        if step == "items" and within is None and schema.get("x-kubernetes-list-type") != "map":
            inner = where
        _uncorrelatable(sub, f"{where}.{step}", inner, out)


def _blocked(where: str, errors: dict[str, list[Refusal]]) -> bool:
    """Whether the node ``where`` or one below it has rule-field errors (the API server then compiles none of
    the node's rules)."""
    return any(found and (node == where or node.startswith(f"{where}.")) for node, found in errors.items())


def _cel_errors(rc: cel_cost.RuleCost, within: str | None) -> Iterator[Refusal]:
    """The API server's refusals of a compiled rule (``validation.go`` after ``cel.Compile``)."""
    at = rc.path.removesuffix(".rule")
    entry = rc.entry or {"rule": rc.rule}
    if rc.error:
        yield Refusal(rc.path, f"Invalid value: {_rule_json(entry)}: {rc.error}")
    if rc.message_error:
        yield Refusal(f"{at}.messageExpression", f"Invalid value: {_rule_json(entry)}: {rc.message_error}")
    if rc.uses_old_self:
        if within is not None:
            yield Refusal(
                rc.path,
                f"Invalid value: {go_quote(rc.rule)}: oldSelf cannot be used on the uncorrelatable portion of the "
                f"schema within {within}",
            )
    elif entry.get("optionalOldSelf") is not None:
        optional = "true" if entry.get("optionalOldSelf") else "false"
        yield Refusal(
            f"{at}.optionalOldSelf",
            f"Invalid value: {optional}: may not be set if oldSelf is not used in rule",
        )


def bad_value(value: Any) -> str:
    """A value as a field error shows it (``field.Error.ErrorBody``): a string quoted as Go quotes it, a number
    or bool as Go prints it, anything else as its JSON."""
    if isinstance(value, str):
        return go_quote(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return go_json(value)
    return go_json(value, sort_keys=True)


def refusals(
    schema: Mapping[str, Any],
    where: str = "openAPIV3Schema",
    *,
    defaults: Callable[[Mapping[str, Any], str], Iterable[Refusal]],
) -> list[Refusal]:
    """Why the API server refuses a CRD version whose schema is ``schema`` (empty: it accepts it): its
    defaults (``defaults`` finds those refused: :func:`nodefleet.apiserver.schema.crd_refusals` passes the
    validation of values, which sits above this module), its rules' fields, their compilation, then their
    estimated costs (none of which it checks where a default is refused)."""
    errors: dict[str, list[Refusal]] = {}
    _walk_schema_errors(schema, where, errors)
    found = [r for node_errors in errors.values() for r in node_errors]
    refused_defaults = list(defaults(schema, where))
    if refused_defaults:
        return found + refused_defaults
    uncorrelatable: dict[str, str] = {}
    _uncorrelatable(schema, where, None, uncorrelatable)
    for rc in cel_cost.rule_costs(schema, where):
        node = rc.path.rsplit(".x-kubernetes-validations[", 1)[0]
        if not _blocked(node, errors):
            found += _cel_errors(rc, uncorrelatable.get(node))
    found += [Refusal(path, words) for path, words in cel_cost.refusals(schema, where)]
    return found


#: The modules whose code decides what :func:`refusals` answers.
_ANALYSIS_MODULES = (
    "crd_rules.py",
    "cel_cost.py",
    "cel_check.py",
    "cel_ast.py",
    "cel_library.py",
    "cel.py",
    "cel_unreadable.py",
    "schema.py",
    "formats.py",
    "strfmt.py",
    "quantity.py",
)


@cache
def analysis_digest() -> str:
    """A digest of the code that decides :func:`refusals` (these modules and the CEL engine's version): an
    answer kept under it is the one this code gives."""
    h = hashlib.sha256(metadata.version("cel-expr-python").encode())
    here = Path(__file__).parent
    for name in _ANALYSIS_MODULES:
        h.update((here / name).read_bytes())
    return h.hexdigest()[:16]
