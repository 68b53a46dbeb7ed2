"""The exact bytes the Kubernetes provider's render mode writes for one object.

``pulumi up`` on a provider with ``renderYamlToDirectory`` writes each object with ``renderYaml``
(pulumi-kubernetes ``provider/pkg/provider/provider.go``): ``Unstructured.MarshalJSON`` (Go's
``encoding/json``, over a property map in which every number is a float64) and then
``sigs.k8s.io/yaml.JSONToYAML``, which parses that JSON with go-yaml v2 and marshals it again
(sigs.k8s.io/yaml v1.6.0 ``yaml.go``; go.yaml.in/yaml/v2 v2.4.2, the versions k8s.io/apimachinery v0.34
requires). ``nodefleet render`` must write the same bytes, so Argo CD or Flux see no diff between a
tree written by ``nodefleet render`` and one written by ``pulumi up``.

PyYAML's emitter is, like go-yaml's, a port of libyaml's, so it does the layout (indentation, block
sequences at their parent key's column, the 80-column line folding, literal blocks and their chomping
hints). What differs is the part go-yaml decides before emitting, and that is done here, each rule with
its upstream source:

* numbers: Go's JSON text of a float64, re-read by go-yaml's resolver (whole floats become integers);
* scalar styles: go-yaml's ``stringv`` (plain unless the text would read back as another type, then
  double-quoted; literal block when it has a line break) and its printable-character set;
* mapping key order: go-yaml's ``keyList.Less`` (letters before other runes, digit runs compared as
  numbers: ``a9`` before ``a10``), not plain code-point order;
* a mapping key is "simple" up to 128 bytes (go-yaml ``yaml_emitter_check_simple_key``), and
  double-quoted scalars fold the way go-yaml's ``yaml_emitter_write_double_quoted_scalar`` does.

``tests/render_format`` holds the reference: a small Go program calling the same two functions, and the
bytes it produced for every object of the example stacks and for a corpus of awkward values.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
import unicodedata
from collections.abc import Mapping, Sequence
from decimal import Decimal
from functools import cmp_to_key
from typing import Any

import yaml
from yaml.emitter import Emitter
from yaml.events import MappingStartEvent, ScalarEvent, SequenceStartEvent
from yaml.nodes import MappingNode, Node, ScalarNode, SequenceNode
from yaml.representer import BaseRepresenter
from yaml.resolver import BaseResolver
from yaml.serializer import Serializer

_STR = "tag:yaml.org,2002:str"
_MAP = "tag:yaml.org,2002:map"
_SEQ = "tag:yaml.org,2002:seq"

_INT64 = (-(2**63), 2**63 - 1)
_UINT64_MAX = 2**64 - 1


def dump_manifest(manifest: Mapping[str, Any]) -> bytes:
    """One object as ``renderYaml`` writes it: a single YAML document, no ``---``, ending in a newline.

    Raises ``ValueError`` for what the provider cannot render either: infinities and NaN (encoding/json
    refuses them) and text with characters go-yaml's reader refuses (see :func:`as_read_back`).
    """
    text = yaml.dump(_read_back(manifest), Dumper=_ProviderDumper, allow_unicode=True, width=80, indent=2)
    return text.encode("utf-8")


# --- text, as go-yaml reads it back from Go's JSON ----------------------------------------------------

# encoding/json escapes C0 controls, '"', '\\', U+2028/U+2029 and (HTML-safe) '<', '>', '&', and leaves
# everything else raw; go-yaml's reader then refuses a raw DEL, C1 control other than NEL, U+FFFE or U+FFFF
# ("control characters are not allowed", readerc.go yaml_parser_update_buffer).
_UNREADABLE = re.compile("[\x7f\x80-\x84\x86-\x9f\ufffe\uffff\ud800-\udfff]")
# A raw NEL inside the JSON string is a YAML 1.1 line break in a double-quoted scalar, so go-yaml folds it
# (with the blanks around it) like any line break: one becomes a space, n of them n-1 newlines.
_NEL_RUN = re.compile("[ \t]*(?:\x85[ \t]*)+")


def as_read_back(text: str) -> str:
    """``text`` as the provider's YAML step sees it after Go's JSON step."""
    bad = _UNREADABLE.search(text)
    if bad:
        raise ValueError(
            f"character U+{ord(bad.group()):04X} in {text[:40]!r} cannot be rendered: the Kubernetes "
            "provider's YAML reader refuses it"
        )
    if "\x85" not in text:
        return text
    return _NEL_RUN.sub(
        lambda m: " " if m.group().count("\x85") == 1 else "\n" * (m.group().count("\x85") - 1), text
    )


def _read_back(value: Any) -> Any:
    if isinstance(value, str):
        return as_read_back(value)
    if isinstance(value, Mapping):
        return {as_read_back(str(k)): _read_back(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_read_back(v) for v in value]
    return value


# --- numbers ------------------------------------------------------------------------------------------


def go_number(value: float | int) -> str:
    """A number as it comes out of ``json.Marshal`` (float64) followed by go-yaml's resolve and marshal.

    encoding/json writes a float64 in ``'f'`` form when 1e-6 <= |v| < 1e21 and in ``'e'`` form otherwise,
    always with the shortest digits that read back to the same value (Go ``encoding/json`` ``floatEncoder``).
    go-yaml's ``resolve`` then reads integer text with ``strconv.ParseInt``/``ParseUint`` (so ``3.0``
    becomes ``3``) and anything else as a float64, which it writes with ``strconv.FormatFloat(v, 'g', -1,
    64)`` (go-yaml ``encode.go`` ``floatv``).
    """
    f = float(value)
    if not math.isfinite(f):
        # encoding/json refuses them ("unsupported value"); the provider would fail to render the object.
        raise ValueError(f"{value!r} cannot be rendered: JSON has no infinity or NaN")
    if f == 0:
        return "0"
    digits, dp = _shortest(f)
    if 1e-6 <= abs(f) < 1e21 and dp >= len(digits):
        # Integer text: ParseInt, else ParseUint, else (beyond 64 bits) a float again.
        n = int(digits) * 10 ** (dp - len(digits)) * (-1 if f < 0 else 1)
        if _INT64[0] <= n <= _INT64[1] or 0 <= n <= _UINT64_MAX:
            return str(n)
    return _format_g(f < 0, digits, dp)


def _shortest(f: float) -> tuple[str, int]:
    """Shortest round-trip decimal digits of |f| and the position of the decimal point (Go's digs.dp)."""
    _, digit_tuple, exponent = Decimal(repr(abs(f))).normalize().as_tuple()
    digits = "".join(map(str, digit_tuple))
    assert isinstance(exponent, int)
    return digits, len(digits) + exponent


def _format_g(negative: bool, digits: str, dp: int) -> str:
    """``strconv.FormatFloat(v, 'g', -1, 64)`` (Go strconv ``ftoa.go``): with the shortest precision, %e
    when the decimal exponent is below -4 or at least 6, else %f; exponents have at least two digits."""
    sign = "-" if negative else ""
    nd = len(digits)
    exp = dp - 1
    if exp < -4 or exp >= 6:
        mantissa = digits[0] + ("." + digits[1:] if nd > 1 else "")
        return f"{sign}{mantissa}e{'-' if exp < 0 else '+'}{abs(exp):02d}"
    if dp <= 0:
        return f"{sign}0.{'0' * -dp}{digits}"
    if dp >= nd:
        return f"{sign}{digits}{'0' * (dp - nd)}"
    return f"{sign}{digits[:dp]}.{digits[dp:]}"


# --- how go-yaml reads a plain scalar back (resolve.go) ---------------------------------------------

_RESOLVE_MAP = {
    *("y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"),
    *("n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"),
    *("", "~", "null", "Null", "NULL"),
    *(".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF"),
    "<<",
}
_HINTED = set("+-0123456789yYnNtTfFoO~.")
_GO_INT = re.compile(r"^[+-]?(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_GO_UINT = re.compile(r"^(0[xX][0-9a-fA-F]+|0[oO][0-7]+|0[bB][01]+|0[0-7]*|[1-9][0-9]*)$")
_YAML_STYLE_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_DOT_FLOAT = re.compile(r"^\.[0-9]+([eE][-+]?[0-9]+)?$")
_BASE60_FLOAT = re.compile(r"^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$")
# The layouts go-yaml's parseTimestamp tries after its "four digits and a dash" fast check.
_TIMESTAMP = re.compile(
    r"^(?P<y>[0-9]{4})-(?P<m>[0-9]{1,2})-(?P<d>[0-9]{1,2})"
    r"(?:(?:(?P<sep>[Tt ]))(?P<H>[0-9]{1,2}):(?P<M>[0-9]{1,2}):(?P<S>[0-9]{1,2})(?:[.,][0-9]+)?"
    r"(?P<tz>Z|[+-][0-9]{2}:[0-9]{2})?)?$"
)


def _go_int(text: str) -> int | None:
    if not _GO_INT.match(text):
        return None
    sign = -1 if text.startswith("-") else 1
    body = text.lstrip("+-")
    base = 10
    if body[:2].lower() in ("0x", "0o", "0b"):
        base = {"x": 16, "o": 8, "b": 2}[body[1].lower()]
        body = body[2:]
    elif len(body) > 1 and body.startswith("0"):
        base = 8
    return sign * int(body, base)


def _is_timestamp(s: str) -> bool:
    """go-yaml ``parseTimestamp``: one of its layouts, with a real date and time (Go's time.Parse)."""
    m = _TIMESTAMP.match(s)
    if not m:
        return False
    # "2006-1-2T15:4:5.999999999Z07:00" needs the zone; "2006-1-2 15:4:5.999999999" has none.
    if (m["sep"] == " ") == (m["tz"] is not None) and m["sep"] is not None:
        return False
    try:
        _dt.date(int(m["y"]), int(m["m"]), int(m["d"]))
    except ValueError:
        return False
    return m["H"] is None or (int(m["H"]) < 24 and int(m["M"]) < 60 and int(m["S"]) < 60)


def resolves_to_string(s: str) -> bool:
    """Whether go-yaml reads ``s``, written plain, back as a string (go-yaml ``resolve.go`` ``resolve``)."""
    hint = s[0] if s else "N"
    if hint not in _HINTED and s:
        return True
    if s in _RESOLVE_MAP:
        return False
    if hint == ".":
        return not (_DOT_FLOAT.match(s) and math.isfinite(float(s)))
    if hint in "+-0123456789":
        if _is_timestamp(s):
            return False
        plain = s.replace("_", "")
        n = _go_int(plain)
        if n is not None and (
            _INT64[0] <= n <= _INT64[1] or (0 <= n <= _UINT64_MAX and _GO_UINT.match(plain))
        ):
            return False
        if _YAML_STYLE_FLOAT.match(plain) and math.isfinite(float(plain)):
            return False
    return True


def _is_base60_float(s: str) -> bool:
    """go-yaml ``encode.go`` ``isBase60Float``: YAML 1.1 sexagesimal numbers are quoted for other parsers."""
    return bool(s) and (s[0] in "+-0123456789") and ":" in s and bool(_BASE60_FLOAT.match(s))


def _go_printable(ch: str) -> bool:
    """go-yaml ``yamlprivateh.go`` ``is_printable``: no C0/C1 controls (tab, CR and NEL included), no BOM,
    no surrogates or U+FFFE/U+FFFF, and no characters beyond the BMP."""
    o = ord(ch)
    return o == 0x0A or 0x20 <= o <= 0x7E or 0xA0 <= o <= 0xD7FF or (0xE000 <= o <= 0xFFFD and o != 0xFEFF)


def scalar_style(s: str) -> str | None:
    """The style go-yaml's ``stringv`` asks for, settled where PyYAML would decide differently.

    ``'|'`` for text with a line break, ``None`` (plain when the emitter allows it, else single-quoted) for
    text that reads back as a string, ``'"'`` otherwise. Text with a character go-yaml does not print as
    is ends up double-quoted whatever was asked, so it is asked for directly.
    """
    if not all(_go_printable(c) for c in s):
        return '"'
    if "\n" in s:
        return "|"
    if resolves_to_string(s) and not _is_base60_float(s):
        return None
    return '"'


# --- mapping key order (sorter.go) --------------------------------------------------------------------


def _go_key_less(a: str, b: str) -> bool:
    """go-yaml ``sorter.go`` ``keyList.Less`` for two string keys."""
    ar, br = a, b
    for i in range(min(len(ar), len(br))):
        if ar[i] == br[i]:
            continue
        al, bl = ar[i].isalpha(), br[i].isalpha()
        if al and bl:
            return ar[i] < br[i]
        if al or bl:
            return bl
        an = bn = 0
        if ar[i] == "0" or br[i] == "0":
            j = i - 1
            while j >= 0 and _is_go_digit(ar[j]):
                if ar[j] != "0":
                    an = bn = 1
                    break
                j -= 1
        ai = i
        while ai < len(ar) and _is_go_digit(ar[ai]):
            an = an * 10 + (ord(ar[ai]) - ord("0"))
            ai += 1
        bi = i
        while bi < len(br) and _is_go_digit(br[bi]):
            bn = bn * 10 + (ord(br[bi]) - ord("0"))
            bi += 1
        if an != bn:
            return an < bn
        if ai != bi:
            return ai < bi
        return ar[i] < br[i]
    return len(ar) < len(br)


def _is_go_digit(ch: str) -> bool:
    return unicodedata.category(ch) == "Nd"  # Go unicode.IsDigit


def _go_key_order(a: str, b: str) -> int:
    return -1 if _go_key_less(a, b) else (1 if _go_key_less(b, a) else 0)


_KEY_ORDER = cmp_to_key(_go_key_order)


# --- PyYAML plumbing ----------------------------------------------------------------------------------


class _Representer(BaseRepresenter):
    """Every scalar is tagged as a string and given its final text, so the emitter never adds a tag and
    a number or boolean comes out plain; the style is chosen by :func:`scalar_style` for real strings."""

    def represent_data(self, data: Any) -> Node:
        if isinstance(data, str):
            return ScalarNode(_STR, data, style=scalar_style(data))
        if isinstance(data, bool):
            return ScalarNode(_STR, "true" if data else "false")
        if isinstance(data, int | float):
            return ScalarNode(_STR, go_number(data))
        if data is None:
            return ScalarNode(_STR, "null")
        if isinstance(data, Mapping):
            items = sorted(((str(k), v) for k, v in data.items()), key=lambda kv: _KEY_ORDER(kv[0]))
            return MappingNode(
                _MAP, [(self.represent_data(k), self.represent_data(v)) for k, v in items], flow_style=False
            )
        if isinstance(data, Sequence):
            return SequenceNode(_SEQ, [self.represent_data(v) for v in data], flow_style=False)
        raise TypeError(f"cannot render a {type(data).__name__} as YAML")


class _GoEmitter(Emitter):
    """PyYAML's emitter with the three places where go-yaml's port of libyaml behaves differently."""

    def check_simple_key(self) -> bool:
        # go-yaml yaml_emitter_check_simple_key: a one-line scalar of at most 128 bytes (PyYAML: < 128
        # characters including the tag it will not print, and never an empty key).
        event = self.event
        if isinstance(event, ScalarEvent):
            if self.analysis is None:
                self.analysis = self.analyze_scalar(event.value)
            return not self.analysis.multiline and len(event.value.encode("utf-8")) <= 128
        if isinstance(event, SequenceStartEvent):
            return bool(self.check_empty_sequence())
        if isinstance(event, MappingStartEvent):
            return bool(self.check_empty_mapping())
        return False

    def write_literal(self, text: str) -> None:
        # go-yaml writes the chomping hint through write_indicator, which clears open_ended, so a document
        # ending in a "|+" block gets no "..." marker (PyYAML would add one).
        super().write_literal(text)
        self.open_ended = False

    def write_double_quoted(self, text: str, split: bool = True) -> None:
        # go-yaml yaml_emitter_write_double_quoted_scalar: escape what is_printable rejects (and breaks,
        # '"' and '\\'), and fold at a single space past the best width by a line break, adding '\\' only
        # when the next character is another space. PyYAML folds with a trailing '\\' instead.
        self.write_indicator('"', True)
        spaces = False
        # go-yaml's is_bom looks at the first three bytes of the value whatever the position, so a value
        # that starts with a BOM has every character escaped.
        bom_first = text.startswith("\ufeff")
        i = 0
        n = len(text)
        while i < n:
            ch = text[i]
            if bom_first or not _go_printable(ch) or ch in '\n\r\x85\u2028\u2029"\\':
                self._write_raw("\\" + _go_escape(ord(ch)))
                spaces = False
            elif ch == " ":
                if split and not spaces and self.column > self.best_width and 0 < i < n - 1:
                    self.write_indent()
                    if i + 1 < n and text[i + 1] == " ":
                        self._write_raw("\\")
                else:
                    self._write_raw(ch)
                spaces = True
            else:
                self._write_raw(ch)
                spaces = False
            i += 1
        self.write_indicator('"', False)

    def _write_raw(self, data: str) -> None:
        self.column += len(data)
        self.whitespace = False
        self.indention = False
        self.stream.write(data)


_ESCAPES = {
    0x00: "0",
    0x07: "a",
    0x08: "b",
    0x09: "t",
    0x0A: "n",
    0x0B: "v",
    0x0C: "f",
    0x0D: "r",
    0x1B: "e",
    0x22: '"',
    0x5C: "\\",
    0x85: "N",
    0xA0: "_",
    0x2028: "L",
    0x2029: "P",
}


def _go_escape(o: int) -> str:
    if o in _ESCAPES:
        return _ESCAPES[o]
    if o <= 0xFF:
        return f"x{o:02X}"
    if o <= 0xFFFF:
        return f"u{o:04X}"
    return f"U{o:08X}"


class _ProviderDumper(_GoEmitter, Serializer, _Representer, BaseResolver):
    """Emitter + serializer + the representer above, with no implicit resolvers: every scalar is a
    string to PyYAML, and the text chosen above is what gets written."""

    def __init__(self, stream: Any, **kwargs: Any) -> None:
        _GoEmitter.__init__(
            self,
            stream,
            canonical=False,
            indent=kwargs.get("indent"),
            width=kwargs.get("width"),
            allow_unicode=kwargs.get("allow_unicode"),
            line_break=None,
        )
        Serializer.__init__(
            self, encoding=None, explicit_start=False, explicit_end=False, version=None, tags=None
        )
        _Representer.__init__(self, default_style=None, default_flow_style=False, sort_keys=False)
        BaseResolver.__init__(self)
