"""CEL for CRD ``x-kubernetes-validations`` rules: the real CEL implementation plus Kubernetes' libraries.

The engine is ``cel-expr-python``, the Python binding of Google's C++ CEL implementation: it parses every
rule of the shipped CRDs (optional field selection ``self.?x`` included), its regular expressions are RE2 as
in the API server, and it evaluates a rule in microseconds. docs/crd-validation.md records the comparison with
``cel-python`` and ``common-expression-language`` that chose it.

Kubernetes adds libraries on top of standard CEL; ``nodefleet/apiserver/cel_library.py`` provides all of them as
the API server's environment has them (``python -m nodefleet crds coverage`` lists the functions the shipped
CRDs call and flags any a refreshed CRD adds).

A rule compiles once per process (:func:`compile_rule` is cached on its text). A rule that does not compile
here, or that calls something this environment lacks, yields ``None`` ("cannot evaluate") with the reason;
apiserver.schema makes that a blocking error, never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings
from google.protobuf import duration_pb2, timestamp_pb2  # type: ignore[import-untyped]

from nodefleet.apiserver import cel_ast
from nodefleet.apiserver import cel_library as library
from nodefleet.apiserver import cel_unreadable as unreadable

FUNCTIONS = library.FUNCTIONS

__all__ = [
    "FUNCTIONS",
    "CompiledRule",
    "RuleOutcome",
    "compile_rule",
    "duration",
    "escape_property",
    "evaluate",
    "holds_invalid",
    "invalid_data",
    "references_old_self",
    "rule_field_path",
    "timestamp_at",
]


def _new_env(functions: list[Any]) -> Any:
    return cel.NewEnv(
        config=cel.NewEnvConfigFromYaml(library.CONFIG),
        variables={
            "self": cel.Type.DYN,
            "oldSelf": cel.Type.DYN,
            "__nf_old": cel.Type.DYN,
            "__nf_has_old": cel.Type.BOOL,
            # the operands of cel_unreadable's rewrites
            "__nf_x": cel.Type.DYN,
            "__nf_y": cel.Type.DYN,
        },
        extensions=[
            ext_optional.ExtOptional(),
            ext_strings.ExtStrings(version=2),
            ext_bindings.ExtBindings(),
        ],
        functions=functions,
    )


@cache
def _env() -> Any:
    return _new_env(library.declarations())


@cache
def _unreadable_env() -> Any:
    """The environment of rules rewritten to meet unconvertible values (:mod:`cel_unreadable`)."""
    return _new_env(library.declarations() + unreadable.declarations())


_OLD_SELF = re.compile(r"\boldSelf\b")


def _strip_strings(expression: str) -> str:
    """The expression with string literals blanked, so identifiers inside them are not mistaken for code."""
    return re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", '""', expression)


def references_old_self(rule: str) -> bool:
    """Whether ``rule`` is a transition rule (reads ``oldSelf``), as the API server decides from the AST."""
    return bool(_OLD_SELF.search(_strip_strings(rule)))


@dataclass(frozen=True)
class CompiledRule:
    """One ``x-kubernetes-validations`` entry, compiled; ``error`` says why it cannot be evaluated."""

    rule: str
    message: str | None
    message_expression: str | None
    field_path: str | None
    reason: str | None
    optional_old_self: bool
    transition: bool
    program: Any | None
    message_program: Any | None
    error: str | None


def _source(expression: str, optional_old_self: bool) -> str:
    """What this environment compiles for ``expression``; ValueError when it does not parse."""
    source = library.rewrite(expression)
    if optional_old_self:
        # oldSelf as optional<T>: none on create, of(old) on update (KEP-4008's optionalOldSelf).
        source = f"cel.bind(oldSelf, __nf_has_old ? optional.of(__nf_old) : optional.none(), ({source}))"
    return source


@cache
def _compile(expression: str, optional_old_self: bool) -> tuple[Any | None, str | None]:
    try:
        source = _source(expression, optional_old_self)
    except ValueError as e:
        return None, f"Syntax error: {e}"
    try:
        program = _env().compile(source)
    except Exception as e:  # the binding raises RuntimeError/ValueError with the checker's message
        return None, " ".join(str(e).split())
    if _OPAQUE_HINT.search(expression):
        redirected = cel_ast.redirect_calls(program.serialize(), library.redirect)
        if redirected is not None:
            program = _env().deserialize(redirected)
    return program, None


#: Rules that may compare opaque values or build maps (their AST is read only then).
_OPAQUE_HINT = re.compile(
    r"\b(quantity|semver|ip|cidr|url|transformMap|transformMapEntry)\s*\(|\.(add|sub|masked)\s*\("
)


def compile_rule(spec: Mapping[str, Any]) -> CompiledRule:
    """Compile one validation entry (``rule``, ``message``, ``messageExpression``, ``fieldPath``, ...); the same
    entry again gives the same compiled rule."""
    key = tuple(spec.get(k) for k in _SPEC_KEYS)
    found = _COMPILED.get(key)
    if found is None:
        found = _COMPILED[key] = _compile_rule(spec)
    return found


_SPEC_KEYS = ("rule", "message", "messageExpression", "fieldPath", "reason", "optionalOldSelf")
_COMPILED: dict[tuple[Any, ...], CompiledRule] = {}


def _compile_rule(spec: Mapping[str, Any]) -> CompiledRule:
    rule = str(spec.get("rule", ""))
    optional_old_self = bool(spec.get("optionalOldSelf", False))
    program, error = _compile(rule, optional_old_self)
    message_expression = spec.get("messageExpression")
    message_program = None
    if message_expression:
        # The API server evaluates a messageExpression with oldSelf bound as the plain previous value, also
        # under optionalOldSelf (its activation, not the optional one): oldSelf.value() there fails, and the
        # rule's message is used.
        message_program, _ = _compile(str(message_expression), False)
    return CompiledRule(
        rule=rule,
        message=spec.get("message"),
        message_expression=message_expression,
        field_path=spec.get("fieldPath"),
        reason=spec.get("reason"),
        optional_old_self=optional_old_self,
        transition=references_old_self(rule),
        program=program,
        message_program=message_program,
        error=error,
    )


@dataclass(frozen=True)
class RuleOutcome:
    """``passed`` True/False, or None when the rule cannot be evaluated here (``detail`` says why)."""

    passed: bool | None
    message: str = ""
    detail: str = ""
    #: The runtime error when the rule failed by erroring (e.g. a missing field) rather than by being false.
    error: str = ""


#: Runtime errors that mean this environment, not the object, is at fault (the API server type-checks rules
#: against the schema, so a well-typed object never meets them there).
_GAP_ERRORS = ("No matching overloads", "no matching overload", "Unimplemented", "UNIMPLEMENTED")

_ABSENT = object()

#: The keys of the marker of a value the API server's CEL validator cannot convert to its schema's type: its
#: conversion error, the raw value, whether it is an item of a ``set`` list.
_INVALID, _RAW, _IN_SET = "#invalid", "#raw", "#set"
_MARKER_KEYS = frozenset({_INVALID, _RAW, _IN_SET})


def invalid_data(message: str, raw: Any = None, in_set: bool = False) -> dict[str, Any]:
    """A value CEL cannot read (``raw``): a rule reaching it fails at run time with ``message`` (cel-go's error
    value) wherever cel-go's code would pass that error on (:mod:`nodefleet.apiserver.cel_unreadable`)."""
    return {_INVALID: message, _RAW: raw, _IN_SET: in_set}


def _is_marker(value: Any) -> bool:
    return isinstance(value, Mapping) and _INVALID in value and value.keys() <= _MARKER_KEYS


def in_set(value: Any) -> Any:
    """``value``, marked as an item of a ``set`` list (whose equality compares raw items) where it is a value
    CEL cannot read."""
    return {**value, _IN_SET: True} if _is_marker(value) else value


def timestamp_at(seconds: int, nanos: int = 0) -> Any:
    """A CEL timestamp of an instant in seconds from the Unix epoch and nanoseconds (what the binding carries
    into a rule as a timestamp; a ``datetime`` would drop the nanoseconds Go keeps)."""
    out = timestamp_pb2.Timestamp()
    out.seconds, out.nanos = seconds, nanos
    return out


def duration(nanoseconds: int) -> Any:
    """A CEL duration of that many nanoseconds."""
    out = duration_pb2.Duration()
    out.FromNanoseconds(nanoseconds)
    return out


def holds_invalid(value: Any) -> bool:
    """Whether ``value`` holds a value CEL cannot read (:func:`invalid_data`) anywhere."""
    return _invalid_in(value) is not None


def _invalid_in(value: Any) -> str | None:
    """The conversion error of the first unconvertible value inside ``value``, if any."""
    if isinstance(value, Mapping):
        if _is_marker(value):
            return str(value[_INVALID])
        value = value.values()
    elif not isinstance(value, list):
        return None
    for item in value:
        found = _invalid_in(item)
        if found is not None:
            return found
    return None


#: What Go's ``strings.TrimSpace`` removes (``unicode.IsSpace``), which the API server applies to a rule's
#: ``message`` and to what its ``messageExpression`` returns; Python's ``str.strip`` removes more.
_GO_SPACE = (
    "\t\n\v\f\r \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
)

#: The longest ``messageExpression`` result the API server uses, in bytes (``MaxEvaluatedMessageExpressionSizeBytes``).
_MAX_MESSAGE_BYTES = 5 * 1024


def _go_trim(text: str) -> str:
    """``text`` as Go's ``strings.TrimSpace`` leaves it."""
    return text.strip(_GO_SPACE)


def _named(rule: CompiledRule) -> str:
    """How a runtime error names its rule (``ruleErrorString``): the message, else the rule itself."""
    return _go_trim(rule.message) if rule.message else _go_trim(rule.rule)


def _default_message(rule: CompiledRule) -> str:
    """The rule's ``message`` (trimmed), else ``failed rule: <rule>`` (cel ``ruleMessageOrDefault``)."""
    return _go_trim(rule.message) if rule.message else f"failed rule: {_go_trim(rule.rule)}"


def _stand_ins(value: Any) -> Any:
    """``value`` with each value CEL cannot read replaced by its stand-in (:func:`cel_unreadable.stand_in`)."""
    if _is_marker(value):
        return unreadable.stand_in(str(value[_INVALID]), value.get(_RAW), bool(value.get(_IN_SET)))
    if isinstance(value, Mapping):
        return {k: _stand_ins(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_stand_ins(v) for v in value]
    return value


@cache
def _unreadable_program(expression: str, optional_old_self: bool) -> Any | None:
    """``expression`` compiled and rewritten to meet stand-ins as cel-go meets its errors; None when it does
    not compile here."""
    try:
        program = _env().compile(_source(expression, optional_old_self))
        return _unreadable_env().deserialize(unreadable.rewrite(program.serialize(), _template))
    except Exception:  # the binding raises RuntimeError/ValueError with the checker's message
        return None


@cache
def _template(source: str) -> bytes:
    """A rewrite of :mod:`cel_unreadable`, compiled."""
    return bytes(_unreadable_env().compile(source).serialize())


def _stand_in_messages(value: Any) -> list[str]:
    if unreadable.is_stand_in(value):
        return [unreadable.message_of(value)]
    items = value.values() if isinstance(value, Mapping) else value if isinstance(value, list) else ()
    return [m for item in items for m in _stand_in_messages(item)]


def _outcome_reading_invalid(
    rule: CompiledRule, self_value: Any, old_value: Any, rule_old: Any, error: str
) -> RuleOutcome:
    """The outcome of a rule whose ``self`` or ``oldSelf`` holds a value the API server cannot convert to its
    schema's type (a string in an integer field kept by ratcheting, say): evaluated with the value's stand-in,
    as cel-go evaluates it with the conversion error (:mod:`nodefleet.apiserver.cel_unreadable`). A rule
    reaching the value fails with ``error`` (or the error of the value it reached), at any level."""
    program = _unreadable_program(rule.rule, rule.optional_old_self)
    if program is None:
        return RuleOutcome(None, detail="does not compile here")
    has_old = old_value is not _ABSENT
    data = {
        "self": _stand_ins(self_value),
        "oldSelf": _stand_ins(old_value) if has_old else None,
        "__nf_old": _stand_ins(rule_old) if has_old else None,
        "__nf_has_old": has_old,
    }
    try:
        result = program.eval(data=data)
    except Exception as e:
        return RuleOutcome(None, detail=f"evaluation failed here: {' '.join(str(e).split())}")
    kind = result.type().name()
    if kind == "BOOL":
        if result.value():
            return RuleOutcome(True)
        message_program = None
        if rule.message_expression:
            message_program = _unreadable_program(str(rule.message_expression), False)
        return RuleOutcome(False, message=_message(rule, data, message_program))
    words = _error_text(result) if kind == "ERROR" else ""
    go_words = _go_error(words)
    if go_words.startswith("no such overload"):
        # A list function given such items refuses them as cel-go's dispatch does.
        return _no_overload(go_words, rule, words)
    messages = _stand_in_messages(data["self"]) + _stand_in_messages(data["__nf_old"])
    reached = next((m for m in messages if m in words), None)
    if reached is not None:
        error = reached
    elif go_words != words:
        error = go_words  # an error of its own (a field the object lacks), in cel-go's words
    return RuleOutcome(False, message=f"{error} evaluating rule: {_named(rule)}", error=error)


def evaluate(
    rule: CompiledRule,
    self_value: Any,
    old_value: Any = _ABSENT,
    *,
    holds_invalid: bool = False,
    raw_old: Any = _ABSENT,
) -> RuleOutcome:
    """Evaluate ``rule`` with ``self`` (and ``oldSelf`` when given) the way the API server does.

    False gives the rule's message (``messageExpression`` first, as Kubernetes does, falling back to
    ``message``, then to ``failed rule: <rule>``); a runtime error is a rejection with the error, as the API
    server reports it; an error caused by this environment is "cannot evaluate". ``holds_invalid``: ``self`` or
    ``oldSelf`` holds a value the API server cannot convert (:func:`invalid_data`) below its top. ``raw_old``:
    the previous value as stored (its JSON), which a rule under ``optionalOldSelf`` reads unconverted: the
    API server wraps it in an optional, and cel-go reads through an optional into the stored JSON (a
    ``date-time`` stays a string there, a mistyped value is read as it is).
    """
    if rule.program is None:
        return RuleOutcome(None, detail=f"does not compile here: {rule.error}")
    has_old = old_value is not _ABSENT
    if _is_marker(self_value):
        # cel-go binds self to the conversion error: the rule evaluates to it.
        error = str(self_value[_INVALID])
        return RuleOutcome(False, message=f"{error} evaluating rule: {_named(rule)}", error=error)
    rule_old = raw_old if rule.optional_old_self and raw_old is not _ABSENT else old_value
    if holds_invalid:
        invalid = _invalid_in(self_value) or (_invalid_in(rule_old) if has_old else None)
        if invalid is not None:
            return _outcome_reading_invalid(rule, self_value, old_value, rule_old, invalid)
    data = {
        "self": self_value,
        "oldSelf": old_value if has_old else None,
        "__nf_old": rule_old if has_old else None,
        "__nf_has_old": has_old,
    }
    try:
        result = rule.program.eval(data=data)
    except Exception as e:
        return RuleOutcome(None, detail=f"evaluation failed here: {' '.join(str(e).split())}")
    kind = result.type().name()
    error = _error_text(result) if kind == "ERROR" else ""
    if kind == "ERROR":
        if any(marker in error for marker in _GAP_ERRORS) and not _go_error(error).startswith(
            "no such overload"
        ):
            return RuleOutcome(None, detail=f"needs what this environment lacks: {error}")
        # As the API server words it (apiextensions-apiserver, cel/validation.go): cel-go's error text, then
        # the rule's message, or the rule when it has none (ruleErrorString).
        named = _named(rule)
        words = _go_error(error)
        if words.startswith("no such overload"):
            return _no_overload(words, rule, error)
        if _NULL_SELECT in error:
            words = _null_select(rule, data) or words
        elif any(marker in error for marker in _RUNTIME_WORDS):
            words = _go_words(rule, data) or words
        return RuleOutcome(False, message=f"{words} evaluating rule: {named}", error=error)
    if kind != "BOOL":
        return RuleOutcome(None, detail=f"returned {kind.lower()}, not bool")
    if result.value():
        return RuleOutcome(True)
    return RuleOutcome(False, message=_message(rule, data))


def _no_overload(words: str, rule: CompiledRule, error: str) -> RuleOutcome:
    """A refusal for a call cel-go's dispatch finds no overload for, as the API server words it."""
    return RuleOutcome(
        False,
        message=f"'{words}': call arguments did not match a supported operator, function or macro signature for "
        f"rule: {_named(rule)}",
        error=error,
    )


def _error_text(result: Any) -> str:
    """An error value's message, on one line. The binding cannot hand over one that is not UTF-8 (the C++
    formatter cuts a multi-byte character in two): it stays an error, worded as such."""
    try:
        return " ".join(str(result.value()).split())
    except (TypeError, UnicodeDecodeError):
        return "evaluation failed (an error message that is not UTF-8)"


_GO_ERRORS = (
    (re.compile(r"^NOT_FOUND: Key not found in map ?: ?\"?(.*?)\"?$"), "no such key: {0}"),
    (re.compile(r"^UNKNOWN: Index error: index=(-?\d+) size=\d+$"), "index out of bounds: {0}"),
    (
        re.compile(r"^INVALID_ARGUMENT: cannot convert (\w+) to (\w+)$"),
        "type conversion error from '{0}' to '{1}'",
    ),
    # The C++ runtime's words for errors cel-go words otherwise (common/types: int.go, uint.go, double.go,
    # string.go; the conversions of common/types/err.go).
    (re.compile(r"^INVALID_ARGUMENT: divide by zero$"), "division by zero"),
    (re.compile(r"^INVALID_ARGUMENT: modulus by zero$"), "modulus by zero"),
    (re.compile(r"^(?:\w+: )?(?:int64|double) out of uint64 range$"), "unsigned integer overflow"),
    (re.compile(r"^(?:\w+: )?(?:uint64|double) out of int64 range$"), "integer overflow"),
    (
        re.compile(r"^INVALID_ARGUMENT: String to (Duration|Timestamp) conversion failed$"),
        "type conversion error from 'string' to 'google.protobuf.{0}'",
    ),
    (
        re.compile(r"^INVALID_ARGUMENT: Type conversion error from '(\w+)' to '(\w+)'$"),
        "type conversion error from '{0}' to '{1}'",
    ),
    # An error a Kubernetes library function raised (apiserver.cel_library): its message is the Go function's.
    (re.compile(r"^(?:OUT_OF_RANGE|UNKNOWN|INVALID_ARGUMENT): (no such overload.*)$"), "{0}"),
    (re.compile(r"^(?:OUT_OF_RANGE|UNKNOWN|FAILED_PRECONDITION): (.*)$"), "{0}"),
)


#: This evaluator's error for selecting a field of null (a null item of a nullable list, say); cel-go says
#: ``no such key: <field>``, naming the field this error leaves out.
_NULL_SELECT = "Applying SELECT to non-message type"


#: This evaluator's errors for a value of the wrong kind where cel-go iterates or indexes it (a value the type
#: checker could not see: an int-or-string, the stored JSON under optionalOldSelf), which name neither the
#: value's type nor the key as cel-go's words do.
_RUNTIME_WORDS = ("Invalid container type", "<iter_range>")


def _go_words(rule: CompiledRule, data: Mapping[str, Any]) -> str | None:
    """cel-go's words for such an error: the rule evaluated again as :mod:`cel_unreadable` rewrites it, which
    words them."""
    program = _unreadable_program(rule.rule, rule.optional_old_self)
    if program is None:
        return None
    try:
        result = program.eval(data=data)
    except Exception:
        return None
    if result.type().name() != "ERROR":
        return None
    return _go_error(_error_text(result))


def _no_nulls(value: Any) -> Any:
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {k: _no_nulls(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_no_nulls(v) for v in value]
    return value


def _null_select(rule: CompiledRule, data: Mapping[str, Any]) -> str | None:
    """cel-go's words for a field selected of null: the rule evaluated again with each null an empty map,
    where the same selection names its field."""
    assert rule.program is not None
    again = {**data, "self": _no_nulls(data["self"])}
    if data["__nf_has_old"]:
        again["oldSelf"], again["__nf_old"] = _no_nulls(data["oldSelf"]), _no_nulls(data["__nf_old"])
    try:
        result = rule.program.eval(data=again)
    except Exception:
        return None
    if result.type().name() != "ERROR":
        return None
    words = _go_error(_error_text(result))
    return words if words.startswith("no such key: ") else None


#: The C++ runtime's error for a call whose arguments' runtime types match no overload (``f(int64)``,
#: ``(int64).f(string)``).
_NO_MATCHING = re.compile(r"^UNKNOWN: No matching overloads found : (?:\([^)]*\)\.)?([^\s(]+)")
#: Functions cel-go dispatches on a trait of their one argument, which name themselves when it lacks it.
_TRAIT_DISPATCHED = frozenset({"size"})


def _go_error(error: str) -> str:
    """cel-go's wording of a runtime error this evaluator words its own way (the ones CRD rules hit)."""
    found = _NO_MATCHING.match(error)
    if found and found.group(1) not in library.FUNCTIONS and not found.group(1).startswith("__nf"):
        # A function of CEL itself or of cel-go's extensions, as the API server's environment has them, given
        # values the type checker could not see (an int-or-string, the stored JSON under optionalOldSelf):
        # cel-go's dispatch fails the same way.
        name = found.group(1)
        return f"no such overload: {name}" if name in _TRAIT_DISPATCHED else "no such overload"
    for pattern, words in _GO_ERRORS:
        found = pattern.match(error)
        if found:
            return words.format(*found.groups())
    return error


def _message(rule: CompiledRule, data: Mapping[str, Any], program: Any | None = None) -> str:
    """The message of a rule that evaluated to false: its ``messageExpression`` (``program`` when given) if
    that yields one the API server takes, else its message."""
    program = program or rule.message_program
    unbound = not data["__nf_has_old"] and references_old_self(rule.message_expression or "")
    if program is not None and not unbound:  # without a previous value oldSelf is unbound
        try:
            value = program.eval(data=data)
        except Exception:
            value = None
        if value is not None and value.type().name() == "STRING":
            # As evalMessageExpression takes it: trimmed, non-empty, one line, at most 5 KiB; else the message.
            text = _go_trim(str(value.value()))
            if text and "\n" not in text and len(text.encode()) <= _MAX_MESSAGE_BYTES:
                return text
    return _default_message(rule)


# ---------------------------------------------------------------------------------------------------------
# CEL property-name escaping (k8s.io/apiserver/pkg/cel/escaping.go)
# ---------------------------------------------------------------------------------------------------------

_CEL_RESERVED = frozenset(
    [
        "true",
        "false",
        "null",
        "in",
        "as",
        "break",
        "const",
        "continue",
        "else",
        "for",
        "function",
        "if",
        "import",
        "let",
        "loop",
        "package",
        "namespace",
        "return",
        "var",
        "void",
        "while",
    ]
)
_ESCAPES = {"__": "__underscores__", ".": "__dot__", "-": "__dash__", "/": "__slash__"}


@cache
def escape_property(name: str) -> str | None:
    """How CEL sees an object property named ``name``; None when the API server makes it inaccessible."""
    if not name or name[0].isdigit():
        return None
    if name in _CEL_RESERVED:
        return f"__{name}__"
    out, i = [], 0
    while i < len(name):
        if name.startswith("__", i):
            out.append(_ESCAPES["__"])
            i += 2
            continue
        ch = name[i]
        if ch in _ESCAPES:
            out.append(_ESCAPES[ch])
        elif ch.isascii() and (ch.isalnum() or ch == "_"):
            out.append(ch)
        else:
            return None
        i += 1
    return "".join(out)


# ---------------------------------------------------------------------------------------------------------
# a rule's fieldPath (apiextensions cel.ValidFieldPath)
# ---------------------------------------------------------------------------------------------------------

_ESCAPED = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v", "'": "'", "\\": "\\"}


def _field_path_tokens(text: str) -> list[str]:
    """The tokens of a rule's ``fieldPath``: ``.``, ``[``, ``]``, single-quoted strings, names between them."""
    out, i = [], 0
    while i < len(text):
        if text[i] == "'":
            end = i + 1
            while end < len(text) and not (text[end] == "'" and text[end - 1] != "\\"):
                end += 1
            out.append(text[i : end + 1])
            i = end + 1
        elif text[i] in ".[]":
            out.append(text[i])
            i += 1
        else:
            end = i
            while end < len(text) and text[end] not in ".[]":
                end += 1
            out.append(text[i:end])
            i = end
    return out


def _normalized_field_path(field_path: str, schema: Mapping[str, Any]) -> str | None:
    parts: list[str] = []
    tokens = iter(_field_path_tokens(field_path))
    for tok in tokens:
        if tok == "[":
            quoted = next(tokens, "")
            if len(quoted) < 2 or quoted[0] != "'" or quoted[-1] != "'" or next(tokens, "") != "]":
                return None
            name, bad = "", False
            body = quoted[1:-1]
            j = 0
            while j < len(body):
                if body[j] == "\\" and j + 1 < len(body):
                    if body[j + 1] not in _ESCAPED:
                        bad = True
                    name += _ESCAPED.get(body[j + 1], "")
                    j += 2
                else:
                    name += body[j]
                    j += 1
            if bad:
                return None
        elif tok == ".":
            following = next(tokens, None)
            if following is None:
                return None
            name = following
        else:
            return None
        props = schema.get("properties")
        addl = schema.get("additionalProperties")
        if props is not None:
            if name not in props:
                return None
            parts.append(f".{name}" if parts else name)
            schema = props[name]
        elif isinstance(addl, dict):
            parts.append(f"[{name}]")
            schema = addl
        else:
            return None
    return "".join(parts) or None


def rule_field_path(field_path: str, schema: Mapping[str, Any]) -> str | None:
    """A rule's ``fieldPath`` as the API server appends it to the rule's node (cel ``ValidFieldPath``): a
    property as ``.name``, a map key as ``[key]`` (``spec.m.[key]`` when it comes first: the API server's
    quirk, kept); None when it does not name a field of ``schema``, and the error is at the node."""
    key = (field_path, id(schema))
    cached = _FIELD_PATHS.get(key)
    if cached is None or cached[0] is not schema:
        cached = _FIELD_PATHS[key] = (schema, _normalized_field_path(field_path, schema))
    return cached[1]


#: Normalized rule field paths by (fieldPath, schema identity); the schema is kept to check the identity.
_FIELD_PATHS: dict[tuple[str, int], tuple[Mapping[str, Any], str | None]] = {}
