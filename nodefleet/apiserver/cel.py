"""CEL for CRD ``x-kubernetes-validations`` rules: the real CEL implementation plus Kubernetes' libraries.

The engine is ``cel-expr-python``, the Python binding of Google's C++ CEL implementation: it parses every
rule of the shipped CRDs (optional field selection ``self.?x`` included), its regular expressions are RE2 as
in the API server, and it evaluates a rule in microseconds. docs/crd-validation.md records the comparison with
``cel-python`` and ``common-expression-language`` that chose it.

Kubernetes adds libraries on top of standard CEL (``k8s.io/apiserver/pkg/cel/library``). Exactly the
functions the shipped CRDs call are provided here (``python -m nodefleet crds coverage`` lists them and
flags any a refreshed CRD adds): ``isURL``/``url().getScheme()/getQuery()``, ``isIP``/``ip().family()``,
``isCIDR``/``cidr().ip()/prefixLength()``, ``isQuantity``/``quantity().compareTo()``, ``string.find``, and
``format.<name>().validate()``. The C++ binding cannot carry Kubernetes' opaque types (URL, IP, CIDR,
Quantity) across to Python, so they travel as one-key maps (``{"#url": ...}``); only these functions read
them. It cannot return CEL optionals from Python either, so ``format.X().validate(s)`` is compiled as
``optional.ofNonZeroValue(<list of errors>)``, which is the same ``optional<list<string>>``.

A rule compiles once per process (:func:`compile_rule` is cached on its text). A rule that does not compile
here, or that calls something this environment lacks, yields ``None`` ("cannot evaluate") with the reason,
never a silent pass.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache
from typing import Any

from cel_expr_python import cel
from cel_expr_python.ext import ext_bindings, ext_optional, ext_strings

from nodefleet.apiserver import formats as f

__all__ = [
    "FUNCTIONS",
    "CompiledRule",
    "RuleOutcome",
    "compile_rule",
    "evaluate",
    "references_old_self",
]

_MAP = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_STR = cel.Type.STRING
_BOOL = cel.Type.BOOL
_INT = cel.Type.INT

_URL, _IP, _CIDR, _QUANTITY, _FORMAT = "#url", "#ip", "#cidr", "#quantity", "#format"


def _opaque(value: Any, key: str, what: str) -> Any:
    if isinstance(value, Mapping) and key in value:
        return value[key]
    raise TypeError(f"No matching overloads found: expected a {what}")


def _url(s: str) -> dict[str, str]:
    f.parse_url(s)
    return {_URL: s}


def _get_scheme(u: Mapping[str, Any]) -> str:
    return f.parse_url(_opaque(u, _URL, "URL")).scheme


def _get_query(u: Mapping[str, Any]) -> dict[str, list[str]]:
    return f.parse_url(_opaque(u, _URL, "URL")).query()


def _is(parse: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            parse(s)
        except f.FormatError:
            return False
        return True

    return check


def _ip(s: str) -> dict[str, str]:
    return {_IP: str(f.parse_ip(s))}


def _family(ip: Mapping[str, Any]) -> int:
    return f.parse_ip(_opaque(ip, _IP, "IP")).version


def _cidr(s: str) -> dict[str, str]:
    addr, bits = f.parse_cidr(s)
    return {_CIDR: f"{addr}/{bits}"}


def _cidr_ip(c: Mapping[str, Any]) -> dict[str, str]:
    addr, _ = f.parse_cidr(_opaque(c, _CIDR, "CIDR"))
    return {_IP: str(addr)}


def _prefix_length(c: Mapping[str, Any]) -> int:
    return f.parse_cidr(_opaque(c, _CIDR, "CIDR"))[1]


def _quantity(s: str) -> dict[str, str]:
    f.parse_quantity(s)
    return {_QUANTITY: s}


def _compare_to(a: Mapping[str, Any], b: Mapping[str, Any]) -> int:
    x = f.parse_quantity(_opaque(a, _QUANTITY, "Quantity"))
    y = f.parse_quantity(_opaque(b, _QUANTITY, "Quantity"))
    return (x > y) - (x < y)


@cache
def _find_regex(pattern: str) -> Any:
    try:
        return f.re2_compile(pattern)
    except Exception as e:  # re2.error
        raise ValueError(f"Illegal regex: {e}") from None


def _find(s: str, pattern: str) -> str:
    match = _find_regex(pattern).search(s)
    return str(match.group(0)) if match else ""


#: ``format.<name>()`` validators (``library/format.go`` ``ConstantFormats``) this environment provides.
_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": f.dns1123_label_errors,
    "dns1123Subdomain": f.dns1123_subdomain_errors,
    "qualifiedName": f.qualified_name_errors,
    "labelValue": f.label_value_errors,
}


def _format_validate(fmt: Mapping[str, Any], s: str) -> list[str]:
    return _FORMATS[_opaque(fmt, _FORMAT, "Format")](s)


def _decl(
    name: str, overload: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = False
) -> Any:
    return cel.FunctionDecl(name, [cel.Overload(overload, ret, params, is_member=member, impl=impl)])


#: Kubernetes CEL library functions provided, by name (what ``crds coverage`` checks rules against).
FUNCTIONS: tuple[str, ...] = (
    "isURL",
    "url",
    "getScheme",
    "getQuery",
    "isIP",
    "ip",
    "family",
    "isCIDR",
    "cidr",
    "prefixLength",
    "isQuantity",
    "quantity",
    "compareTo",
    "find",
    *(f"format.{name}" for name in _FORMATS),
    "validate",
)


@cache
def _env() -> Any:
    functions = [
        _decl("isURL", "is_url_string", _BOOL, [_STR], _is(f.parse_request_uri)),
        _decl("url", "string_to_url", _MAP, [_STR], _url),
        _decl("getScheme", "url_get_scheme", _STR, [_MAP], _get_scheme, member=True),
        _decl(
            "getQuery",
            "url_get_query",
            cel.Type.Map(_STR, cel.Type.List(_STR)),
            [_MAP],
            _get_query,
            member=True,
        ),
        _decl("isIP", "is_ip", _BOOL, [_STR], _is(f.parse_ip)),
        _decl("family", "ip_family", _INT, [_MAP], _family, member=True),
        cel.FunctionDecl(
            "ip",
            [
                cel.Overload("string_to_ip", _MAP, [_STR], impl=_ip),
                cel.Overload("cidr_ip", _MAP, [_MAP], is_member=True, impl=_cidr_ip),
            ],
        ),
        _decl("isCIDR", "is_cidr", _BOOL, [_STR], _is(f.parse_cidr)),
        _decl("cidr", "string_to_cidr", _MAP, [_STR], _cidr),
        _decl("prefixLength", "cidr_prefix_length", _INT, [_MAP], _prefix_length, member=True),
        _decl("isQuantity", "is_quantity_string", _BOOL, [_STR], _is(f.parse_quantity)),
        _decl("quantity", "string_to_quantity", _MAP, [_STR], _quantity),
        _decl("compareTo", "quantity_compare_to", _INT, [_MAP, _MAP], _compare_to, member=True),
        _decl("find", "string_find_string", _STR, [_STR, _STR], _find, member=True),
        _decl(
            "validate", "format_validate", cel.Type.List(_STR), [_MAP, _STR], _format_validate, member=True
        ),
    ]
    for name in _FORMATS:
        functions.append(_decl(f"format.{name}", f"format_{name}", _MAP, [], lambda n=name: {_FORMAT: n}))
    return cel.NewEnv(
        variables={
            "self": cel.Type.DYN,
            "oldSelf": cel.Type.DYN,
            "__nf_old": cel.Type.DYN,
            "__nf_has_old": cel.Type.BOOL,
        },
        extensions=[ext_optional.ExtOptional(), ext_strings.ExtStrings(), ext_bindings.ExtBindings()],
        functions=functions,
    )


_FORMAT_VALIDATE = re.compile(r"format\.[A-Za-z0-9_]+\(\)\.validate\(")
_OLD_SELF = re.compile(r"\boldSelf\b")


def _strip_strings(expression: str) -> str:
    """The expression with string literals blanked, so identifiers inside them are not mistaken for code."""
    return re.sub(r"'(?:\\.|[^'\\])*'|\"(?:\\.|[^\"\\])*\"", '""', expression)


def references_old_self(rule: str) -> bool:
    """Whether ``rule`` is a transition rule (reads ``oldSelf``), as the API server decides from the AST."""
    return bool(_OLD_SELF.search(_strip_strings(rule)))


def _close_paren(text: str, start: int) -> int:
    """Index of the parenthesis closing the one opened just before ``start``, skipping string literals."""
    depth, i = 1, start
    quote = ""
    while i < len(text):
        ch = text[i]
        if quote:
            if ch == "\\":
                i += 1
            elif ch == quote:
                quote = ""
        elif ch in "'\"":
            quote = ch
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth == 0:
                return i
        i += 1
    raise ValueError("unbalanced parentheses")


def _wrap_format_validate(expression: str) -> str:
    """``format.X().validate(s)`` as ``optional.ofNonZeroValue(...)``: the optional the library returns."""
    out, pos = [], 0
    for match in _FORMAT_VALIDATE.finditer(expression):
        if match.start() < pos:
            continue
        end = _close_paren(expression, match.end())
        out += [
            expression[pos : match.start()],
            "optional.ofNonZeroValue(",
            expression[match.start() : end + 1],
            ")",
        ]
        pos = end + 1
    out.append(expression[pos:])
    return "".join(out)


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


@cache
def _compile(expression: str, optional_old_self: bool) -> tuple[Any | None, str | None]:
    source = _wrap_format_validate(expression)
    if optional_old_self:
        # oldSelf as optional<T>: none on create, of(old) on update (KEP-4008's optionalOldSelf).
        source = f"cel.bind(oldSelf, __nf_has_old ? optional.of(__nf_old) : optional.none(), ({source}))"
    try:
        return _env().compile(source), None
    except Exception as e:  # the binding raises RuntimeError/ValueError with the checker's message
        return None, " ".join(str(e).split())


def compile_rule(spec: Mapping[str, Any]) -> CompiledRule:
    """Compile one validation entry (``rule``, ``message``, ``messageExpression``, ``fieldPath``, ...)."""
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


def _default_message(rule: CompiledRule) -> str:
    """The rule's ``message`` (trimmed), else ``failed rule: <rule>`` (cel ``ruleMessageOrDefault``)."""
    return _go_trim(rule.message) if rule.message else f"failed rule: {_go_trim(rule.rule)}"


def evaluate(rule: CompiledRule, self_value: Any, old_value: Any = _ABSENT) -> RuleOutcome:
    """Evaluate ``rule`` with ``self`` (and ``oldSelf`` when given) the way the API server does.

    False gives the rule's message (``messageExpression`` first, as Kubernetes does, falling back to
    ``message``, then to ``failed rule: <rule>``); a runtime error is a rejection with the error, as the API
    server reports it; an error caused by this environment is "cannot evaluate".
    """
    if rule.program is None:
        return RuleOutcome(None, detail=f"does not compile here: {rule.error}")
    has_old = old_value is not _ABSENT
    data = {
        "self": self_value,
        "oldSelf": old_value if has_old else None,
        "__nf_old": old_value if has_old else None,
        "__nf_has_old": has_old,
    }
    try:
        result = rule.program.eval(data=data)
    except Exception as e:
        return RuleOutcome(None, detail=f"evaluation failed here: {' '.join(str(e).split())}")
    kind = result.type().name()
    if kind == "ERROR":
        error = " ".join(str(result.value()).split())
        if any(marker in error for marker in _GAP_ERRORS):
            return RuleOutcome(None, detail=f"needs what this environment lacks: {error}")
        # As the API server words it (apiextensions-apiserver, cel/validation.go): cel-go's error text, then
        # the rule's message, or the rule when it has none (ruleErrorString).
        named = _go_trim(rule.message) if rule.message else _go_trim(rule.rule)
        words = _go_error(error)
        if _NULL_SELECT in error:
            words = _null_select(rule, data) or words
        return RuleOutcome(False, message=f"{words} evaluating rule: {named}", error=error)
    if kind != "BOOL":
        return RuleOutcome(None, detail=f"returned {kind.lower()}, not bool")
    if result.value():
        return RuleOutcome(True)
    return RuleOutcome(False, message=_message(rule, data))


_GO_ERRORS = (
    (re.compile(r"^NOT_FOUND: Key not found in map ?: ?\"?(.*?)\"?$"), "no such key: {0}"),
    (re.compile(r"^UNKNOWN: Index error: index=(-?\d+) size=\d+$"), "index out of bounds: {0}"),
    (
        re.compile(r"^INVALID_ARGUMENT: cannot convert (\w+) to (\w+)$"),
        "type conversion error from '{0}' to '{1}'",
    ),
)


#: This evaluator's error for selecting a field of null (a null item of a nullable list, say); cel-go says
#: ``no such key: <field>``, naming the field this error leaves out.
_NULL_SELECT = "Applying SELECT to non-message type"


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
        again["oldSelf"] = again["__nf_old"] = _no_nulls(data["__nf_old"])
    try:
        result = rule.program.eval(data=again)
    except Exception:
        return None
    if result.type().name() != "ERROR":
        return None
    words = _go_error(" ".join(str(result.value()).split()))
    return words if words.startswith("no such key: ") else None


def _go_error(error: str) -> str:
    """cel-go's wording of a runtime error this evaluator words its own way (the ones CRD rules hit)."""
    for pattern, words in _GO_ERRORS:
        found = pattern.match(error)
        if found:
            return words.format(*found.groups())
    return error


def _message(rule: CompiledRule, data: Mapping[str, Any]) -> str:
    unbound = not data["__nf_has_old"] and references_old_self(rule.message_expression or "")
    if rule.message_program is not None and not unbound:  # without a previous value oldSelf is unbound
        try:
            value = rule.message_program.eval(data=data)
        except Exception:
            value = None
        if value is not None and value.type().name() == "STRING":
            # As evalMessageExpression takes it: trimmed, non-empty, one line, at most 5 KiB; else the message.
            text = _go_trim(str(value.value()))
            if text and "\n" not in text and len(text.encode()) <= _MAX_MESSAGE_BYTES:
                return text
    return _default_message(rule)
