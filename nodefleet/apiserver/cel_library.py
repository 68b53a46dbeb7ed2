"""Kubernetes' CEL libraries, whole, as the API server's CEL environment for CRD rules has them.

``k8s.io/apiserver/pkg/cel/environment/base.go`` (1.35) builds that environment from cel-go's standard library
plus: ``library.URLs``, ``Regex``, ``Lists``, ``Quantity``, ``IP``, ``CIDR``, ``Format``, ``SemverLib``, and
cel-go's extensions ``ext.Strings`` (version 2), ``ext.Sets``, ``ext.TwoVarComprehensions``, ``ext.Lists``
(version 3) and optional types. (``library.Authz`` and ``AuthzSelectors`` are there too, but act only on the
``authorizer`` variable, which CRD rules do not have.) Each function below follows its Go source in
``k8s.io/apiserver/pkg/cel/library`` (``urls.go``, ``regex.go``, ``lists.go``, ``quantity.go``, ``ip.go``,
``cidr.go``, ``format.go``, ``semverlib.go``); the cel-go extensions come from the C++ CEL implementation's own
``lists``, ``sets`` and ``two-var-comprehensions`` extensions.

The C++ binding cannot carry Kubernetes' opaque types (URL, IP, CIDR, Quantity, Semver, Format) across to
Python, so they travel as one-key maps (``{"#quantity": ...}``) that only these functions read; functions that
two libraries share a name for (``compareTo``, ``isLessThan``, ``isGreaterThan`` for quantities and semvers)
dispatch on that key. Where the binding cannot declare what Go declares, the rule's text is rewritten before
compiling (:func:`rewrite`): ``format.X().validate(s)`` returns ``optional<list<string>>``, and
``format.named(n)`` ``optional<Format>``, through ``optional.ofNonZeroValue``; ``string(ip)``/``string(cidr)``
convert the opaque value; the list library's ``indexOf``/``lastIndexOf`` share their names with the strings
extension's, so both are served by one function.
"""

from __future__ import annotations

import datetime
import ipaddress
import itertools
import re
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from cel_expr_python import cel
from google.protobuf.message import Message  # type: ignore[import-untyped]

from nodefleet.apiserver import formats as f
from nodefleet.apiserver import quantity as q
from nodefleet.apiserver import strfmt as crd_strfmt

__all__ = ["CONFIG", "FUNCTIONS", "declarations", "equal", "is_opaque", "redirect", "rewrite"]

_MAP = cel.Type.Map(cel.Type.STRING, cel.Type.DYN)
_STR = cel.Type.STRING
_BOOL = cel.Type.BOOL
_INT = cel.Type.INT
_DBL = cel.Type.DOUBLE
_DYN = cel.Type.DYN
_LIST = cel.Type.List(cel.Type.DYN)
_STRS = cel.Type.List(cel.Type.STRING)
_ANY_MAP = cel.Type.Map(cel.Type.DYN, cel.Type.DYN)

_URL, _IP, _CIDR, _QUANTITY, _SEMVER, _FORMAT = "#url", "#ip", "#cidr", "#quantity", "#semver", "#format"

#: cel-go extensions the C++ implementation provides under these names (an ``EnvConfig``).
CONFIG = 'extensions:\n  - name: "lists"\n  - name: "sets"\n  - name: "two-var-comprehensions"\n'


class _NoOverload(TypeError):
    pass


def _opaque(value: Any, key: str, what: str) -> Any:
    if isinstance(value, Mapping) and key in value:
        return value[key]
    raise _NoOverload(f"no such overload: expected a {what}")


def _kind(value: Any) -> str | None:
    if isinstance(value, Mapping) and len(value) == 1:
        key = next(iter(value))
        if isinstance(key, str) and key.startswith("#"):
            return key
    return None


def _is(parse: Callable[[str], Any]) -> Callable[[str], bool]:
    def check(s: str) -> bool:
        try:
            parse(s)
        except (f.FormatError, ValueError):
            return False
        return True

    return check


# --- urls.go ---------------------------------------------------------------------------------------------


def _url(s: str) -> dict[str, str]:
    try:
        f.parse_url(s)
    except f.FormatError as e:
        raise ValueError(f"URL parse error during conversion from string: {e}") from None
    return {_URL: s}


def _u(u: Mapping[str, Any]) -> f.GoURL:
    return f.parse_url(_opaque(u, _URL, "URL"))


def _split_host_port(host: str) -> tuple[str, str]:
    port = ""
    colon = host.rfind(":")
    if colon != -1 and all(c.isascii() and c.isdigit() for c in host[colon + 1 :]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    return host, port


_PATH_OK = set("!$&'()*+,;=:@[]/-_.~%")
_PATH_KEEP = set("-_.~$&+,/:;=@")


def _escaped_path(u: f.GoURL) -> str:
    """``URL.EscapedPath``: the path as written when it is validly escaped, else Go's escaping of it."""
    raw = u.path if not u.opaque else ""
    if all(c.isascii() and (c.isalnum() or c in _PATH_OK) for c in raw):
        return raw
    out = []
    for byte in f._unescape(raw).encode(errors="surrogateescape"):
        ch = chr(byte)
        out.append(ch if ch.isascii() and (ch.isalnum() or ch in _PATH_KEEP) else f"%{byte:02X}")
    return "".join(out)


# --- regex.go --------------------------------------------------------------------------------------------


@cache
def _regex(pattern: str) -> Any:
    try:
        return f.re2_compile(pattern)
    except Exception as e:  # re2.error
        raise ValueError(f"Illegal regex: {e}") from None


def _find(s: str, pattern: str) -> str:
    match = _regex(pattern).search(s)
    return str(match.group(0)) if match else ""


def _find_all(s: str, pattern: str, n: int = -1) -> list[str]:
    """Go's ``Regexp.FindAllString``: leftmost matches, an empty match right after a match skipped."""
    rx, out, pos, prev_end = _regex(pattern), list[str](), 0, -1
    while (n < 0 or len(out) < n) and pos <= len(s):
        m = rx.search(s, pos)
        if m is None:
            break
        start, end = m.span()
        if end == start and start == prev_end:
            pos = start + 1
            continue
        out.append(s[start:end])
        prev_end = end
        pos = end if end > start else end + 1
    return out


# --- lists.go and the strings extension's indexOf ----------------------------------------------------------


def _cel_eq(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, int | float) and isinstance(b, int | float):
        return bool(a == b)
    if type(a) is not type(b) and not (isinstance(a, Mapping) and isinstance(b, Mapping)):
        return False
    if isinstance(a, list):
        return len(a) == len(b) and all(_cel_eq(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, Mapping):
        return a.keys() == b.keys() and all(_cel_eq(a[k], b[k]) for k in a)
    return bool(a == b)


def _comparable(items: list[Any], name: str) -> None:
    """cel-go's dispatch: every item must be comparable (an unconvertible item is an error value, not one, and
    reaches a function as a message: nodefleet.apiserver.cel_unreadable)."""
    kinds = {type(x) for x in items}
    if (kinds - {int, float} and len(kinds) > 1) or any(
        isinstance(x, list | Mapping | type(None) | Message) for x in items
    ):
        raise _NoOverload(f"no such overload: {name}(list)")


def _is_sorted(items: list[Any]) -> bool:
    _comparable(items, "isSorted")
    return all(not (a > b) for a, b in itertools.pairwise(items))


def _sum(items: list[Any]) -> Any:
    if any(isinstance(x, bool) or not isinstance(x, int | float) for x in items):
        raise _NoOverload("no such overload: sum(list)")
    total: Any = 0
    for x in items:
        total = total + x
    if isinstance(total, int) and not (-(2**63) <= total < 2**63):
        raise ValueError("integer overflow")
    return total


def _extreme(name: str, prefer: int) -> Callable[[list[Any]], Any]:
    def pick(items: list[Any]) -> Any:
        _comparable(items, name)
        if not items:
            raise ValueError(f"{name} called on empty list")
        best = items[0]
        for x in items[1:]:
            if (best > x) - (best < x) == prefer:
                best = x
        return best

    return pick


def _index_of(recv: Any, item: Any, offset: int | None = None, last: bool = False) -> int:
    if isinstance(recv, list):
        if offset is not None:
            raise _NoOverload("no such overload")
        order = range(len(recv) - 1, -1, -1) if last else range(len(recv))
        return next((i for i in order if _cel_eq(recv[i], item)), -1)
    if not isinstance(recv, str) or not isinstance(item, str):
        raise _NoOverload("no such overload")
    # cel-go ext/strings.go indexOfOffset / lastIndexOfOffset, on code points.
    if item == "":
        return offset if offset is not None else (len(recv) if last else 0)
    off = offset if offset is not None else (len(recv) - 1 if last else 0)
    if off < 0:
        raise ValueError(f"index out of range: {off}")
    if off >= len(recv):
        return -1
    if not last:
        return recv.find(item, off)
    if offset is None and len(recv.encode()) < len(item.encode()):
        return -1
    off = min(off, len(recv) - len(item))
    return recv.rfind(item, 0, off + len(item)) if off >= 0 else -1


# --- quantity.go and semverlib.go --------------------------------------------------------------------------


def _quantity(s: str) -> dict[str, str]:
    return {_QUANTITY: q.parse(s).encode()}


def _qty(v: Any) -> q.GoQuantity:
    return q.GoQuantity.decode(_opaque(v, _QUANTITY, "Quantity"))


_ALNUM = set("-ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789")


def _semver_parse(s: str) -> tuple[int, int, int, tuple[tuple[bool, int, str], ...]]:
    """blang/semver v4 ``Parse``; the build metadata is checked and dropped (it does not compare)."""
    if not s:
        raise ValueError("Version string empty")
    parts = s.split(".", 2)
    if len(parts) != 3:
        raise ValueError("No Major.Minor.Patch elements found")
    nums = []
    patch = parts[2]
    build: list[str] = []
    pre: list[str] = []
    if "+" in patch:
        patch, _, rest = patch.partition("+")
        build = rest.split(".")
    if "-" in patch:
        patch, _, rest = patch.partition("-")
        pre = rest.split(".")
    for name, text in (("major", parts[0]), ("minor", parts[1]), ("patch", patch)):
        if any(c not in "0123456789" for c in text):
            raise ValueError(f"Invalid character(s) found in {name} number {f.go_quote(text)}")
        if len(text) > 1 and text[0] == "0":
            raise ValueError(f"{name.capitalize()} number must not contain leading zeroes {f.go_quote(text)}")
        if not text or int(text) >= 2**64:
            raise ValueError(f'strconv.ParseUint: parsing "{text}": invalid syntax')
        nums.append(int(text))
    prs = []
    for p in pre:
        if not p:
            raise ValueError("Prerelease is empty")
        if all(c in "0123456789" for c in p):
            if len(p) > 1 and p[0] == "0":
                raise ValueError(
                    f"Numeric PreRelease version must not contain leading zeroes {f.go_quote(p)}"
                )
            prs.append((True, int(p), ""))
        elif all(c in _ALNUM for c in p):
            prs.append((False, 0, p))
        else:
            raise ValueError(f"Invalid character(s) found in prerelease {f.go_quote(p)}")
    for b in build:
        if not b:
            raise ValueError("Build meta data is empty")
        if any(c not in _ALNUM for c in b):
            raise ValueError(f"Invalid character(s) found in build meta data {f.go_quote(b)}")
    return nums[0], nums[1], nums[2], tuple(prs)


def _semver_normalize(s: str) -> str:
    """``normalizeAndParse``: ``v`` dropped, leading zeros trimmed, missing minor/patch added."""
    s = s.removeprefix("v")
    parts = s.split(".", 2)
    for i, p in enumerate(parts):
        if len(p) > 1:
            p = p.lstrip("0")
            if not p or p[0] not in "0123456789":
                p = "0" + p
            parts[i] = p
    if len(parts) < 3:
        if any(c in parts[-1] for c in "+-"):
            raise ValueError("short version cannot contain PreRelease/Build meta data")
        parts += ["0"] * (3 - len(parts))
    return ".".join(parts)


def _semver(s: str, normalize: bool = False) -> dict[str, str]:
    text = _semver_normalize(s) if normalize else s
    major, minor, patch, pre = _semver_parse(text)
    shown = ".".join(str(p[1]) if p[0] else p[2] for p in pre)
    return {_SEMVER: f"{major}.{minor}.{patch}" + (f"-{shown}" if pre else "")}


def _sv(v: Any) -> tuple[int, int, int, tuple[tuple[bool, int, str], ...]]:
    return _semver_parse(_opaque(v, _SEMVER, "Semver"))


def _semver_cmp(a: Any, b: Any) -> int:
    x, y = _sv(a), _sv(b)
    if x[:3] != y[:3]:
        return 1 if x[:3] > y[:3] else -1
    if not x[3] or not y[3]:
        return (not x[3]) - (not y[3])
    for p, r in zip(x[3], y[3], strict=False):
        if p != r:
            if p[0] != r[0]:
                return -1 if p[0] else 1
            return 1 if p[1:] > r[1:] else -1
    return (len(x[3]) > len(y[3])) - (len(x[3]) < len(y[3]))


def _compare(a: Any, b: Any) -> int:
    kind = _kind(a)
    if kind == _QUANTITY:
        return _qty(a).cmp(_qty(b))
    if kind == _SEMVER:
        return _semver_cmp(a, b)
    raise _NoOverload("no such overload")


def _as_integer(v: Any) -> int:
    n = _qty(v).as_int64()
    if n is None:
        raise ValueError("cannot convert value to integer")
    return n


def _add(a: Any, b: Any) -> dict[str, str]:
    other = q.from_int(b) if isinstance(b, int) and not isinstance(b, bool) else _qty(b)
    return {_QUANTITY: _qty(a).add(other).encode()}


def _sub(a: Any, b: Any) -> dict[str, str]:
    other = q.from_int(b) if isinstance(b, int) and not isinstance(b, bool) else _qty(b)
    return {_QUANTITY: _qty(a).sub(other).encode()}


# --- ip.go and cidr.go -------------------------------------------------------------------------------------

Addr = ipaddress.IPv4Address | ipaddress.IPv6Address


def _ip(s: str) -> dict[str, str]:
    return {_IP: str(f.parse_ip(s))}


def _addr(v: Any) -> Addr:
    return ipaddress.ip_address(_opaque(v, _IP, "IP"))


def _is_canonical(s: str) -> bool:
    return str(f.parse_ip(s)) == s


def _link_local_multicast(a: Addr) -> bool:
    if a.version == 4:
        return int(a) >> 8 == 0xE00000
    return (int(a) >> 112) & 0xFF0F == 0xFF02


def _global_unicast(a: Addr) -> bool:
    """netip ``IsGlobalUnicast``: not unspecified, loopback, multicast, link-local, or the IPv4 broadcast."""
    if a.version == 4 and int(a) == 0xFFFFFFFF:
        return False
    if a.is_unspecified or a.is_loopback or a.is_multicast:
        return False
    link_local = int(a) >> 16 == 0xA9FE if a.version == 4 else (int(a) >> 112) & 0xFFC0 == 0xFE80
    return not link_local


def _cidr(s: str) -> dict[str, str]:
    addr, bits = f.parse_cidr(s)
    return {_CIDR: f"{addr}/{bits}"}


def _prefix(v: Any) -> tuple[Addr, int]:
    text = _opaque(v, _CIDR, "CIDR")
    addr, _, bits = text.rpartition("/")
    return ipaddress.ip_address(addr), int(bits)


def _network(v: Any) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
    addr, bits = _prefix(v)
    return ipaddress.ip_network(f"{addr}/{bits}", strict=False)


def _contains_ip(c: Any, ip: Any) -> bool:
    addr = _addr(_ip(ip) if isinstance(ip, str) else ip)
    net = _network(c)
    return addr.version == net.version and addr in net


def _contains_cidr(c: Any, other: Any) -> bool:
    inner = _network(_cidr(other) if isinstance(other, str) else other)
    net = _network(c)
    return net.version == inner.version and net.overlaps(inner) and net.prefixlen <= inner.prefixlen


def _masked(c: Any) -> dict[str, str]:
    net = _network(c)
    return {_CIDR: f"{net.network_address}/{net.prefixlen}"}


def _opaque_string(v: Any) -> str:
    kind = _kind(v)
    if kind == _IP:
        return str(v[_IP])
    if kind == _CIDR:
        return str(v[_CIDR])
    raise _NoOverload("no such overload")


# --- format.go ---------------------------------------------------------------------------------------------


def _mask_trailing_dash(name: str) -> str:
    return name[:-2] + "a" if len(name) > 1 and name.endswith("-") else name


def _uri_errors(s: str) -> list[str]:
    try:
        f.parse_request_uri(s)
    except f.FormatError as e:
        return [str(e)]
    return []


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": f.dns1123_label_errors,
    "dns1123Subdomain": f.dns1123_subdomain_errors,
    "dns1035Label": f.dns1035_label_errors,
    "qualifiedName": f.qualified_name_errors,
    "dns1123LabelPrefix": lambda s: f.dns1123_label_errors(_mask_trailing_dash(s)),
    "dns1123SubdomainPrefix": lambda s: f.dns1123_subdomain_errors(_mask_trailing_dash(s)),
    "dns1035LabelPrefix": lambda s: f.dns1035_label_errors(_mask_trailing_dash(s)),
    "labelValue": f.label_value_errors,
    "uri": _uri_errors,
    "uuid": lambda s: [] if crd_strfmt.format_ok("uuid", s) else ["does not match the UUID format"],
    "byte": lambda s: [] if crd_strfmt.format_ok("byte", s) else ["invalid base64"],
    "date": lambda s: [] if crd_strfmt.format_ok("date", s) else ["invalid date"],
    "datetime": lambda s: [] if crd_strfmt.format_ok("datetime", s) else ["invalid datetime"],
}


def _format_validate(fmt: Mapping[str, Any], s: str) -> list[str]:
    return _FORMATS[_opaque(fmt, _FORMAT, "Format")](s)


def _format_named(name: str) -> dict[str, str]:
    """The format, or an empty map (``optional.none()`` once wrapped) for a name the library lacks."""
    return {_FORMAT: name} if name in _FORMATS else {}


def _map_insert(m: Mapping[Any, Any], key: Any, value: Any = None, *more: Any) -> dict[Any, Any]:
    entries = key if isinstance(key, Mapping) and value is None and not more else {key: value}
    out = dict(m)
    for k, v in entries.items():
        if k in out:
            raise ValueError(f"insert failed: key {k} already exists")
        out[k] = v
    return out


def _opaque_equal(a: Any, b: Any) -> bool:
    """cel-go's ``==`` of two opaque values: quantities and semvers by value (``Cmp``/``Compare``), the others
    (URL, IP, CIDR) by their canonical form."""
    kind = _kind(a)
    if kind != _kind(b):
        return False
    if kind == _QUANTITY:
        return _qty(a).cmp(_qty(b)) == 0
    if kind == _SEMVER:
        return _semver_cmp(a, b) == 0
    return _cel_eq(a, b)


def is_opaque(value: Any) -> bool:
    """Whether ``value`` is one of Kubernetes' opaque values (a quantity, semver, URL, IP, CIDR, format)."""
    return _kind(value) is not None


def equal(a: Any, b: Any) -> bool:
    """CEL's ``==`` of two values as cel-go answers it: opaque values by value, numbers across their types."""
    if _kind(a) is not None and _kind(a) == _kind(b):
        return _opaque_equal(a, b)
    return _cel_eq(a, b)


#: The type names cel-go gives Kubernetes' opaque values (k8s.io/apiserver/pkg/cel: url.go, ip.go, cidr.go,
#: quantity.go, semver.go, format.go).
_OPAQUE_NAMES = {
    _URL: "kubernetes.URL",
    _IP: "net.IP",
    _CIDR: "net.CIDR",
    _QUANTITY: "kubernetes.Quantity",
    _SEMVER: "kubernetes.Semver",
    _FORMAT: "kubernetes.NamedFormat",
}


def _type_name(value: Any) -> str:
    """cel-go's ``TypeName()`` of a value as this binding hands it over (an int and a uint both arrive as ``int``)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if isinstance(value, bytes):
        return "bytes"
    if value is None:
        return "null_type"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return _OPAQUE_NAMES.get(_kind(value) or "", "map")
    if isinstance(value, Message):
        return str(value.DESCRIPTOR.full_name)
    if isinstance(value, datetime.datetime):
        return "google.protobuf.Timestamp"
    if isinstance(value, datetime.timedelta):
        return "google.protobuf.Duration"
    return "type"


#: What each clause of ``<string>.format()`` takes in cel-go's formatter (ext/formatting.go), and its words
#: for a value it does not take (``%f``/``%e`` take the strings NaN, Infinity and -Infinity too).
_CLAUSES: dict[str, tuple[frozenset[str], str]] = {
    "d": (frozenset({"int"}), "decimal clause can only be used on integers"),
    "f": (frozenset({"double"}), "fixed-point clause can only be used on doubles"),
    "e": (frozenset({"double"}), "scientific clause can only be used on doubles"),
    "b": (frozenset({"int", "bool"}), "only integers and bools can be formatted as binary"),
    "x": (
        frozenset({"int", "string", "bytes"}),
        "only integers, byte buffers, and strings can be formatted as hex",
    ),
    "o": (frozenset({"int"}), "octal clause can only be used on integers"),
}
_SCALARS = frozenset(
    {"int", "double", "bool", "string", "bytes", "null_type", "type", "google.protobuf.Timestamp",
     "google.protobuf.Duration"}
)  # fmt: skip


def _format_member(value: Any) -> None:
    """cel-go's ``clauseForType`` on an item of a list or a value of a map that ``%s`` formats."""
    name = _type_name(value)
    if isinstance(value, list):
        for item in value:
            _format_member(item)
    elif name == "map":
        for key, item in value.items():
            if not isinstance(key, str | bool | int):
                raise ValueError(
                    f"error during formatting: no formatting function for map key of type {_type_name(key)}"
                )
            _format_member(item)
    elif name not in _SCALARS:
        raise ValueError(f"error during formatting: no formatting function for {name}")


def _format_args(text: str, args: list[Any]) -> list[Any]:
    """``args`` when cel-go's ``<string>.format(args)`` formats them without an error; else cel-go's error, in
    its words (``parseFormatString`` of ext/formatting.go, the strings extension version 2 the API server
    enables): a clause given a value it does not take (``%d`` of a double, ``%f`` of an int), a clause it
    does not know, a precision without its end, more clauses than values. The C++ implementation formats what
    passes (:func:`rewrite` calls this on the arguments first); it takes more than cel-go does."""
    data = text.encode()  # Go walks the format string byte by byte
    i = index = 0
    while i < len(data):
        if data[i] != ord("%"):
            i += 1
            continue
        if i + 1 < len(data) and data[i + 1] == ord("%"):
            i += 2
            continue
        if index >= len(args):
            raise ValueError(f"index {index} out of range")
        if i + 1 >= len(data):
            raise ValueError("unexpected end of string")
        i += 1
        if data[i] == ord("."):
            digits = i + 1
            while digits < len(data) and chr(data[digits]).isdigit():
                digits += 1
            if digits >= len(data):
                raise ValueError(
                    "could not parse formatting clause: error while parsing precision: could not find end of "
                    "precision specifier"
                )
            if digits == i + 1:
                raise ValueError(
                    "could not parse formatting clause: error while parsing precision: error while converting "
                    'precision to integer: strconv.Atoi: parsing "": invalid syntax'
                )
            i = digits
        verb = chr(data[i])
        i += 1
        value, name = args[index], _type_name(args[index])
        if verb == "s":
            if name not in _SCALARS and name not in ("list", "map"):
                raise ValueError(
                    "error during formatting: string clause can only be used on strings, bools, bytes, ints, "
                    f"doubles, maps, lists, types, durations, and timestamps, was given {name}"
                )
            if name in ("list", "map"):
                _format_member(value)
        elif verb.lower() in _CLAUSES:
            takes, words = _CLAUSES[verb.lower()]
            special = verb in "fe" and value in ("NaN", "Infinity", "-Infinity")
            if name not in takes and not special:
                raise ValueError(f"error during formatting: {words}, was given {name}")
        else:
            raise ValueError(f'could not parse formatting clause: unrecognized formatting clause "{verb}"')
        index += 1
    return args


def _opaque_in(item: Any, items: list[Any]) -> bool:
    return any(_opaque_equal(item, other) for other in items)


#: The type the checker gives an opaque value here (``map(string, dyn)``) and a list of them, as
#: ``cel.expr.Type`` bytes (map_type: key primitive STRING, value dyn): where ``==``/``!=``/``in`` meet them,
#: the comparison is sent to :func:`_opaque_equal` (nodefleet.apiserver.cel_ast).
OPAQUE_TYPE = b"\x3a\x08\x0a\x02\x18\x05\x12\x02\x0a\x00"
OPAQUE_LIST_TYPE = b"\x32" + bytes([len(OPAQUE_TYPE) + 2]) + b"\x0a" + bytes([len(OPAQUE_TYPE)]) + OPAQUE_TYPE


def redirect(function: str, arg_types: list[bytes]) -> tuple[str, tuple[str, ...]] | None:
    """Where a call goes instead (a ``cel_ast`` redirect): a comparison of opaque values to one by value, and
    ``cel.@mapInsert`` (transformMap's accumulator, which the C++ runtime lacks) to :func:`_map_insert`."""
    if function in ("_==_", "_!=_") and arg_types == [OPAQUE_TYPE, OPAQUE_TYPE]:
        name = "__nf_opaque_eq" if function == "_==_" else "__nf_opaque_ne"
        return name, (name,)
    if function == "@in" and arg_types == [OPAQUE_TYPE, OPAQUE_LIST_TYPE]:
        return "__nf_opaque_in", ("__nf_opaque_in",)
    if function == "cel.@mapInsert":
        return "__nf_map_insert", _MAP_INSERT_IDS
    return None


_KEY_TYPES = {"string": cel.Type.STRING, "int": cel.Type.INT, "uint": cel.Type.UINT, "bool": cel.Type.BOOL}


# --- declarations ------------------------------------------------------------------------------------------


def _o(overload: str, ret: Any, params: list[Any], impl: Callable[..., Any], member: bool = False) -> Any:
    return cel.Overload(overload, ret, params, is_member=member, impl=impl)


def _fn(name: str, *overloads: Any) -> Any:
    return cel.FunctionDecl(name, list(overloads))


def _pred(test: Callable[[Addr], bool]) -> Callable[[Any], bool]:
    return lambda v: bool(test(_addr(v)))


#: The binding matches no value to a ``dyn`` parameter, so a list function taking any item declares each kind.
_ITEM_TYPES = {
    "int": cel.Type.INT,
    "uint": cel.Type.UINT,
    "double": cel.Type.DOUBLE,
    "string": cel.Type.STRING,
    "bool": cel.Type.BOOL,
    "bytes": cel.Type.BYTES,
    "null": cel.Type.NULL,
    "list": _LIST,
    "map": cel.Type.Map(_DYN, _DYN),
    "timestamp": cel.Type.TIMESTAMP,
    "duration": cel.Type.DURATION,
}


def _index_overloads(name: str, last: bool) -> list[Any]:
    out = [
        _o(f"nf_list_{name}_{kind}", _INT, [_LIST, t], lambda r, i: _index_of(r, i, None, last), True)
        for kind, t in _ITEM_TYPES.items()
    ]
    out.append(_o(f"nf_string_{name}", _INT, [_STR, _STR], lambda r, i: _index_of(r, i, None, last), True))
    out.append(
        _o(
            f"nf_string_{name}_offset",
            _INT,
            [_STR, _STR, _INT],
            lambda r, i, o: _index_of(r, i, o, last),
            True,
        )
    )
    return out


def _map_insert_overloads() -> list[Any]:
    out = [_o("nf_map_insert_map", _ANY_MAP, [_ANY_MAP, _ANY_MAP], _map_insert)]
    for key_name, key_type in _KEY_TYPES.items():
        for value_name, value_type in _ITEM_TYPES.items():
            out.append(
                _o(
                    f"nf_map_insert_{key_name}_{value_name}",
                    _ANY_MAP,
                    [_ANY_MAP, key_type, value_type],
                    _map_insert,
                )
            )
    return out


_MAP_INSERT_IDS = ("nf_map_insert_map", *(f"nf_map_insert_{k}_{v}" for k in _KEY_TYPES for v in _ITEM_TYPES))


def declarations() -> list[Any]:
    """The function declarations, with their implementations, for ``cel.NewEnv``."""
    m = True
    out = [
        # urls.go
        _fn("url", _o("string_to_url", _MAP, [_STR], _url)),
        _fn("isURL", _o("is_url_string", _BOOL, [_STR], _is(f.parse_request_uri))),
        _fn("getScheme", _o("url_get_scheme", _STR, [_MAP], lambda u: _u(u).scheme, m)),
        _fn("getHost", _o("url_get_host", _STR, [_MAP], lambda u: _u(u).host, m)),
        _fn(
            "getHostname", _o("url_get_hostname", _STR, [_MAP], lambda u: _split_host_port(_u(u).host)[0], m)
        ),
        _fn("getPort", _o("url_get_port", _STR, [_MAP], lambda u: _split_host_port(_u(u).host)[1], m)),
        _fn("getEscapedPath", _o("url_get_escaped_path", _STR, [_MAP], lambda u: _escaped_path(_u(u)), m)),
        _fn(
            "getQuery",
            _o("url_get_query", cel.Type.Map(_STR, _STRS), [_MAP], lambda u: _u(u).query(), m),
        ),
        # regex.go
        _fn("find", _o("string_find_string", _STR, [_STR, _STR], _find, m)),
        _fn(
            "findAll",
            _o("string_find_all_string", _STRS, [_STR, _STR], _find_all, m),
            _o("string_find_all_string_int", _STRS, [_STR, _STR, _INT], _find_all, m),
        ),
        # lists.go (indexOf and lastIndexOf: see rewrite)
        _fn("isSorted", _o("list_is_sorted_bool", _BOOL, [_LIST], _is_sorted, m)),
        _fn("sum", _o("list_sum", _DYN, [_LIST], _sum, m)),
        _fn("min", _o("list_min", _DYN, [_LIST], _extreme("min", 1), m)),
        _fn("max", _o("list_max", _DYN, [_LIST], _extreme("max", -1), m)),
        _fn("__nf_indexOf", *_index_overloads("index_of", False)),
        _fn("__nf_lastIndexOf", *_index_overloads("last_index_of", True)),
        # quantity.go
        _fn("quantity", _o("string_to_quantity", _MAP, [_STR], _quantity)),
        _fn("isQuantity", _o("is_quantity_string", _BOOL, [_STR], _is(f.parse_quantity))),
        _fn("sign", _o("quantity_sign", _INT, [_MAP], lambda v: _qty(v).sign())),
        _fn(
            "asApproximateFloat",
            _o("quantity_get_float", _DBL, [_MAP], lambda v: _qty(v).approximate_float(), m),
        ),
        _fn("asInteger", _o("quantity_get_int", _INT, [_MAP], _as_integer, m)),
        _fn(
            "isInteger", _o("quantity_is_integer", _BOOL, [_MAP], lambda v: _qty(v).as_int64() is not None, m)
        ),
        _fn(
            "add",
            _o("quantity_add", _MAP, [_MAP, _MAP], _add, m),
            _o("quantity_add_int", _MAP, [_MAP, _INT], _add, m),
        ),
        _fn(
            "sub",
            _o("quantity_sub", _MAP, [_MAP, _MAP], _sub, m),
            _o("quantity_sub_int", _MAP, [_MAP, _INT], _sub, m),
        ),
        # quantity.go and semverlib.go share these
        _fn("compareTo", _o("opaque_compare_to", _INT, [_MAP, _MAP], _compare, m)),
        _fn(
            "isGreaterThan",
            _o("opaque_is_greater_than", _BOOL, [_MAP, _MAP], lambda a, b: _compare(a, b) == 1, m),
        ),
        _fn(
            "isLessThan", _o("opaque_is_less_than", _BOOL, [_MAP, _MAP], lambda a, b: _compare(a, b) == -1, m)
        ),
        # semverlib.go
        _fn(
            "semver",
            _o("string_to_semver", _MAP, [_STR], _semver),
            _o("string_bool_to_semver", _MAP, [_STR, _BOOL], _semver),
        ),
        _fn(
            "isSemver",
            _o("is_semver_string", _BOOL, [_STR], _is(_semver)),
            _o("is_semver_string_bool", _BOOL, [_STR, _BOOL], lambda s, n: _is(lambda t: _semver(t, n))(s)),
        ),
        _fn("major", _o("semver_major", _INT, [_MAP], lambda v: _sv(v)[0], m)),
        _fn("minor", _o("semver_minor", _INT, [_MAP], lambda v: _sv(v)[1], m)),
        _fn("patch", _o("semver_patch", _INT, [_MAP], lambda v: _sv(v)[2], m)),
        # ip.go and cidr.go
        _fn(
            "ip",
            _o("string_to_ip", _MAP, [_STR], _ip),
            _o("cidr_ip", _MAP, [_MAP], lambda c: {_IP: str(_prefix(c)[0])}, m),
        ),
        _fn("isIP", _o("is_ip", _BOOL, [_STR], _is(f.parse_ip))),
        _fn("ip.isCanonical", _o("ip_is_canonical", _BOOL, [_STR], _is_canonical)),
        _fn("family", _o("ip_family", _INT, [_MAP], lambda v: _addr(v).version, m)),
        _fn("isUnspecified", _o("ip_is_unspecified", _BOOL, [_MAP], _pred(lambda a: a.is_unspecified), m)),
        _fn("isLoopback", _o("ip_is_loopback", _BOOL, [_MAP], _pred(lambda a: a.is_loopback), m)),
        _fn("isLinkLocalMulticast", _o("ip_is_llm", _BOOL, [_MAP], _pred(_link_local_multicast), m)),
        _fn(
            "isLinkLocalUnicast",
            _o(
                "ip_is_llu",
                _BOOL,
                [_MAP],
                _pred(
                    lambda a: int(a) >> 16 == 0xA9FE if a.version == 4 else (int(a) >> 112) & 0xFFC0 == 0xFE80
                ),
                m,
            ),
        ),
        _fn("isGlobalUnicast", _o("ip_is_global_unicast", _BOOL, [_MAP], _pred(_global_unicast), m)),
        _fn("cidr", _o("string_to_cidr", _MAP, [_STR], _cidr)),
        _fn("isCIDR", _o("is_cidr", _BOOL, [_STR], _is(f.parse_cidr))),
        _fn(
            "containsIP",
            _o("cidr_contains_ip_string", _BOOL, [_MAP, _STR], _contains_ip, m),
            _o("cidr_contains_ip_ip", _BOOL, [_MAP, _MAP], _contains_ip, m),
        ),
        _fn(
            "containsCIDR",
            _o("cidr_contains_cidr_string", _BOOL, [_MAP, _STR], _contains_cidr, m),
            _o("cidr_contains_cidr", _BOOL, [_MAP, _MAP], _contains_cidr, m),
        ),
        _fn("prefixLength", _o("cidr_prefix_length", _INT, [_MAP], lambda c: _prefix(c)[1], m)),
        _fn("masked", _o("cidr_masked", _MAP, [_MAP], _masked, m)),
        _fn("__nf_is_opaque", _o("nf_is_opaque", _BOOL, [_ANY_MAP], lambda v: _kind(v) in (_IP, _CIDR))),
        _fn("__nf_opaque_string", _o("nf_opaque_string", _STR, [_ANY_MAP], _opaque_string)),
        # opaque values compared by value (see opaque_comparison)
        _fn("__nf_opaque_eq", _o("__nf_opaque_eq", _BOOL, [_MAP, _MAP], _opaque_equal)),
        _fn(
            "__nf_opaque_ne", _o("__nf_opaque_ne", _BOOL, [_MAP, _MAP], lambda a, b: not _opaque_equal(a, b))
        ),
        _fn("__nf_opaque_in", _o("__nf_opaque_in", _BOOL, [_MAP, cel.Type.List(_MAP)], _opaque_in)),
        # ext TwoVarComprehensions: transformMap and transformMapEntry accumulate with cel.@mapInsert
        _fn("__nf_map_insert", *_map_insert_overloads()),
        # format.go
        _fn("__nf_validate", _o("format_validate", _STRS, [_MAP, _STR], _format_validate, m)),
        _fn("__nf_format_named", _o("nf_format_named", _MAP, [_STR], _format_named)),
        _fn("__nf_format_args", _o("nf_format_args", _LIST, [_STR, _LIST], _format_args)),
        _fn("__nf_cel_timestamp_text", _o("nf_cel_timestamp_text", _STR, [_STR], f.cel_timestamp_text)),
    ]
    for name in _FORMATS:
        out.append(_fn(f"format.{name}", _o(f"format_{name}", _MAP, [], lambda n=name: {_FORMAT: n})))
    return out


#: Kubernetes CEL library functions provided, by name (what ``crds coverage`` checks rules against).
FUNCTIONS: tuple[str, ...] = (
    "url", "isURL", "getScheme", "getHost", "getHostname", "getPort", "getEscapedPath", "getQuery",
    "find", "findAll",
    "isSorted", "sum", "min", "max", "indexOf", "lastIndexOf",
    "quantity", "isQuantity", "sign", "asApproximateFloat", "asInteger", "isInteger", "add", "sub",
    "compareTo", "isGreaterThan", "isLessThan",
    "semver", "isSemver", "major", "minor", "patch",
    "ip", "isIP", "ip.isCanonical", "family", "isUnspecified", "isLoopback", "isLinkLocalMulticast",
    "isLinkLocalUnicast", "isGlobalUnicast", "string",
    "cidr", "isCIDR", "containsIP", "containsCIDR", "prefixLength", "masked",
    "validate", "format.named", *(f"format.{name}" for name in _FORMATS),
)  # fmt: skip


# --- rewriting what the binding cannot declare -------------------------------------------------------------

_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def _code_mask(text: str) -> list[int]:
    """For each character, the start of the string literal it is in, or -1 outside literals."""
    mask = [-1] * len(text)
    i = 0
    while i < len(text):
        ch = text[i]
        prefix = 0
        if ch in "rRbB" and i + 1 < len(text) and text[i + 1] in "'\"" and (i == 0 or not _word(text[i - 1])):
            prefix = 1
        if ch in "'\"" or prefix:
            start = i
            i += prefix
            quote = text[i]
            triple = text[i : i + 3] == quote * 3
            close = quote * 3 if triple else quote
            i += len(close)
            raw = prefix and text[start] in "rR"
            while i < len(text) and text[i : i + len(close)] != close:
                i += 2 if text[i] == "\\" and not raw else 1
            i = min(len(text), i + len(close))
            for k in range(start, i):
                mask[k] = start
            continue
        i += 1
    return mask


def _word(ch: str) -> bool:
    return ch.isalnum() or ch == "_"


def _close(text: str, mask: list[int], open_at: int) -> int:
    """Index of the bracket closing the one at ``open_at``."""
    pairs = {"(": ")", "[": "]", "{": "}"}
    depth = 0
    for i in range(open_at, len(text)):
        if mask[i] >= 0:
            continue
        if text[i] in pairs:
            depth += 1
        elif text[i] in ")]}":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced brackets")


def _receiver_start(text: str, mask: list[int], dot: int) -> int:
    """Where the operand ending just before ``text[dot]`` (a member call's ``.``) starts."""
    i = dot
    while True:
        j = i - 1
        while j >= 0 and text[j].isspace():
            j -= 1
        if j < 0:
            return i
        if mask[j] >= 0:
            start = mask[j]
        elif text[j] in ")]}":
            depth, start = 0, j
            while start >= 0:
                if mask[start] < 0:
                    if text[start] in ")]}":
                        depth += 1
                    elif text[start] in "([{":
                        depth -= 1
                        if depth == 0:
                            break
                start -= 1
            b = start - 1
            while b >= 0 and text[b].isspace():
                b -= 1
            if b >= 0 and (mask[b] >= 0 or _word(text[b]) or text[b] in ")]}"):
                i = b + 1  # a call or an index: its callee or operand is part of the receiver
                continue
        elif _word(text[j]):
            start = j
            while start > 0 and _word(text[start - 1]):
                start -= 1
        else:
            return i
        before = _dotted(text, mask, start)
        if not before:
            return start
        i = before


def _dotted(text: str, mask: list[int], start: int) -> int:
    """The index of a selecting ``.`` (or ``.?``) just before ``start``, or 0 when there is none."""
    b = start - 1
    while b >= 0 and text[b].isspace():
        b -= 1
    if b >= 0 and mask[b] < 0 and text[b] == "?":
        b -= 1
    if b > 0 and mask[b] < 0 and text[b] == "." and not text[b - 1].isdigit():
        return b
    return 0


_MEMBER_CALL = re.compile(r"\.\s*(validate|indexOf|lastIndexOf|format)\s*\(")
_GLOBAL_CALL = re.compile(r"(?<![\w.])(format\s*\.\s*named|string|timestamp)\s*\(")


def rewrite(expression: str) -> str:
    """The expression with the calls the binding cannot declare as Go does expressed with what it can."""
    text = expression
    for _ in range(64):  # one call per pass, innermost last; a rule has few
        mask = _code_mask(text)
        edit = None
        for match in _MEMBER_CALL.finditer(text):
            if mask[match.start()] >= 0:
                continue
            name = match.group(1)
            paren = match.end() - 1
            if name == "format":
                if text[match.end() :].lstrip().startswith("__nf_format_args("):
                    continue  # checked already
                # cel-go's checks of the arguments first (_format_args), then the C++ formatter.
                end = _close(text, mask, paren)
                receiver = text[_receiver_start(text, mask, match.start()) : match.start()]
                edit = (paren + 1, end, f"__nf_format_args({receiver}, {text[paren + 1 : end]})")
            elif name == "validate":
                end = _close(text, mask, paren)
                start = _receiver_start(text, mask, match.start())
                edit = (
                    start,
                    end + 1,
                    f"optional.ofNonZeroValue({text[start : match.start()]}.__nf_validate{text[match.end() - 1 : end + 1]})",
                )
            else:
                edit = (match.start(), match.end(), f".__nf_{name}(")
            break
        if edit is None:
            for match in _GLOBAL_CALL.finditer(text):
                if mask[match.start()] >= 0:
                    continue
                paren = match.end() - 1
                end = _close(text, mask, paren)
                inner = text[paren + 1 : end]
                if match.group(1) == "string":
                    new = (
                        f"cel.bind(__nf_v, dyn({inner}), type(__nf_v) == map && __nf_is_opaque(__nf_v) ? "
                        f"__nf_opaque_string(__nf_v) : __nf_string(__nf_v))"
                    )
                elif match.group(1) == "timestamp":
                    # cel-go parses a string with Go's time.Parse(RFC3339), which takes only an upper-case T
                    # and Z; the C++ engine takes either case and refuses a comma fraction or a +24:00 offset
                    # Go reads: hand it the instant Go reads, or a string it refuses where Go refuses.
                    new = (
                        f"cel.bind(__nf_ts, dyn({inner}), type(__nf_ts) == string ? "
                        f"__nf_timestamp(__nf_cel_timestamp_text(__nf_ts)) : __nf_timestamp(__nf_ts))"
                    )
                else:
                    new = f"optional.ofNonZeroValue(__nf_format_named({inner}))"
                edit = (match.start(), end + 1, new)
                break
        if edit is None:
            break
        start, end, new = edit
        text = text[:start] + new + text[end:]
    return text.replace("__nf_string(", "string(").replace("__nf_timestamp(", "timestamp(")
