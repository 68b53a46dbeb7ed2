"""The value parsers the Kubernetes API server validates CRD fields with, ported from their Go sources.

CEL rules call them through the Kubernetes CEL libraries (``isURL``/``url``, ``isIP``/``ip``,
``isCIDR``/``cidr``, ``isQuantity``/``quantity``, ``format.*``) and OpenAPI ``format`` keywords use some of
them too. Python's own parsers disagree with Go's in exactly the corners a validator must get right (``ip``
accepts zones, ``urllib`` accepts ``https://a:b:c/``, quantities have no stdlib parser), so each function
below follows its Go source, named in its docstring:

- ``net/url.ParseRequestURI`` / ``url.Parse`` (Go standard library) for ``isURL``, ``url()`` and ``uri``;
- ``net/netip.ParseAddr`` / ``ParsePrefix`` plus the rejections in ``k8s.io/apiserver/pkg/cel/library``
  ``ip.go`` / ``cidr.go`` (zones, IPv4-mapped IPv6);
- ``k8s.io/apimachinery/pkg/api/resource.ParseQuantity`` for ``quantity()``;
- ``k8s.io/apimachinery/pkg/util/validation`` for DNS names, qualified names and label values;
- ``k8s.io/kube-openapi/pkg/validation/strfmt`` for the ``hostname``, ``date-time`` and ``duration`` formats.
"""

from __future__ import annotations

import ipaddress
import re
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from typing import Any

import re2

__all__ = [
    "GoURL",
    "Quantity",
    "dns1035_label_errors",
    "dns1123_label_errors",
    "dns1123_subdomain_errors",
    "go_quote",
    "is_date",
    "is_date_time",
    "is_duration",
    "is_hostname",
    "label_value_errors",
    "parse_cidr",
    "parse_ip",
    "parse_quantity",
    "parse_request_uri",
    "parse_url",
    "qualified_name_errors",
    "re2_compile",
]


class FormatError(ValueError):
    """A value the Go parser rejects; the message is Go's, so it reads like the API server's."""


# ---------------------------------------------------------------------------------------------------------
# net/url
# ---------------------------------------------------------------------------------------------------------

_HEX = "0123456789abcdefABCDEF"
_HOST_OK = set("!$&'()*+,;=:[]<>\"-_.~")
_USERINFO_OK = set("-._:~!$&'()*+,;=%@")


@dataclass(frozen=True)
class GoURL:
    """The parts of a Go ``*url.URL`` the CEL URL library exposes."""

    scheme: str
    host: str
    path: str
    raw_query: str
    opaque: str = ""

    def query(self) -> dict[str, list[str]]:
        """``url.Values`` from ``u.Query()``: pairs with a bad escape or a ``;`` are dropped, as in Go."""
        values: dict[str, list[str]] = {}
        for part in self.raw_query.split("&"):
            if not part or ";" in part:
                continue
            key, _, value = part.partition("=")
            try:
                k, v = _unescape(key, query=True), _unescape(value, query=True)
            except FormatError:
                continue
            values.setdefault(k, []).append(v)
        return values


def _unescape(s: str, *, query: bool = False, host: bool = False) -> str:
    """Go's ``url.unescape``: every ``%`` must start a two-digit hex escape; hosts allow few characters."""
    out = bytearray()
    i = 0
    raw = s.encode()
    while i < len(raw):
        c = raw[i]
        if c == 0x25:  # %
            if i + 2 >= len(raw) or chr(raw[i + 1]) not in _HEX or chr(raw[i + 2]) not in _HEX:
                tail = raw[i : i + 3].decode(errors="replace")
                raise FormatError(f'invalid URL escape "{tail}"')
            if host and int(chr(raw[i + 1]), 16) < 8 and raw[i : i + 3] != b"%25":
                raise FormatError(f'invalid URL escape "{raw[i : i + 3].decode()}"')
            out.append(int(raw[i + 1 : i + 3].decode(), 16))
            i += 3
            continue
        if c == 0x2B and query:  # +
            out.append(0x20)
        else:
            if host and c < 0x80 and not (chr(c).isalnum() or chr(c) in _HOST_OK):
                raise FormatError(f'invalid character "{chr(c)}" in host name')
            out.append(c)
        i += 1
    return out.decode(errors="surrogateescape")


def _get_scheme(raw: str) -> tuple[str, str]:
    for i, ch in enumerate(raw):
        if ch.isascii() and ch.isalpha():
            continue
        if ch.isascii() and (ch.isdigit() or ch in "+-."):
            if i == 0:
                return "", raw
            continue
        if ch == ":":
            if i == 0:
                raise FormatError("missing protocol scheme")
            return raw[:i], raw[i + 1 :]
        return "", raw  # an invalid character: no scheme
    return "", raw


def _valid_optional_port(port: str) -> bool:
    if port == "":
        return True
    return port[0] == ":" and all(c.isascii() and c.isdigit() for c in port[1:])


def _parse_host(host: str) -> str:
    if host.startswith("["):
        i = host.rfind("]")
        if i < 0:
            raise FormatError("missing ']' in host")
        colon_port = host[i + 1 :]
        if not _valid_optional_port(colon_port):
            raise FormatError(f'invalid port "{colon_port}" after host')
    else:
        i = host.rfind(":")
        if i != -1 and not _valid_optional_port(host[i:]):
            raise FormatError(f'invalid port "{host[i:]}" after host')
    return _unescape(host, host=True)


def _parse_authority(authority: str) -> str:
    i = authority.rfind("@")
    if i < 0:
        return _parse_host(authority)
    host = _parse_host(authority[i + 1 :])
    userinfo = authority[:i]
    if not all(c.isascii() and (c.isalnum() or c in _USERINFO_OK) for c in userinfo):
        raise FormatError("net/url: invalid userinfo")
    _unescape(userinfo)
    return host


def _parse(raw: str, via_request: bool) -> GoURL:
    if any(ord(c) < 0x20 or ord(c) == 0x7F for c in raw):
        raise FormatError("net/url: invalid control character in URL")
    if raw == "" and via_request:
        raise FormatError("empty url")
    if raw == "*":
        return GoURL("", "", "*", "")
    scheme, rest = _get_scheme(raw)
    scheme = scheme.lower()
    if rest.endswith("?") and rest.count("?") == 1:
        rest, query = rest[:-1], ""
    else:
        rest, _, query = rest.partition("?")
    if not rest.startswith("/"):
        if scheme:
            return GoURL(scheme, "", "", query, opaque=rest)
        if via_request:
            raise FormatError("invalid URI for request")
        segment = rest.split("/", 1)[0]
        if ":" in segment:
            raise FormatError("first path segment in URL cannot contain colon")
    host = ""
    if (scheme or (not via_request and not rest.startswith("///"))) and rest.startswith("//"):
        authority, slash, tail = rest[2:].partition("/")
        rest = slash + tail
        host = _parse_authority(authority)
    _unescape(rest)
    return GoURL(scheme, host, rest, query)


def parse_request_uri(raw: str) -> GoURL:
    """Go's ``url.ParseRequestURI``: an absolute URI or an absolute path, no fragment split."""
    try:
        return _parse(raw, True)
    except FormatError as e:
        raise FormatError(f'parse "{raw}": {e}') from None


def parse_url(raw: str) -> GoURL:
    """What the CEL ``url()`` function returns: ``ParseRequestURI`` to validate, ``url.Parse`` for the parts."""
    parse_request_uri(raw)
    without_fragment, _, _ = raw.partition("#")
    return _parse(without_fragment, False)


# ---------------------------------------------------------------------------------------------------------
# net/netip, with the CEL library's rejections
# ---------------------------------------------------------------------------------------------------------

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def parse_ip(raw: str) -> IPAddress:
    """``ip()`` / ``isIP()``: IPv4 (no leading zeros) or IPv6; zones and IPv4-mapped IPv6 are rejected."""
    if "%" in raw:
        raise FormatError(f'IP address "{raw}" with zone value is not allowed')
    try:
        addr = ipaddress.ip_address(raw)
    except ValueError:
        raise FormatError(f'IP Address "{raw}" parse error during conversion from string') from None
    if isinstance(addr, ipaddress.IPv6Address) and addr.ipv4_mapped is not None:
        raise FormatError(f'IPv4-mapped IPv6 address "{raw}" is not allowed')
    return addr


_BITS = re.compile(r"^(0|[1-9][0-9]{0,2})$")


def parse_cidr(raw: str) -> tuple[IPAddress, int]:
    """``cidr()`` / ``isCIDR()``: ``netip.ParsePrefix`` (host bits may be set; ``masked()`` clears them), its
    errors worded as the library wraps them (an address netip cannot read is named without netip's detail)."""
    addr_text, slash, bits_text = raw.rpartition("/")
    wrap = "network address parse error during conversion from string: "
    prefix_error = f"{wrap}{wrap}netip.ParsePrefix({go_quote(raw)}): "
    if not slash:
        raise FormatError(prefix_error + "no '/'")
    addr = parse_ip(addr_text)
    if not _BITS.match(bits_text) or (len(bits_text) > 1 and bits_text[0] == "0"):
        raise FormatError(prefix_error + f"bad bits after slash: {go_quote(bits_text)}")
    bits = int(bits_text)
    if bits > addr.max_prefixlen:
        raise FormatError(prefix_error + "prefix length out of range")
    return addr, bits


# ---------------------------------------------------------------------------------------------------------
# resource.Quantity
# ---------------------------------------------------------------------------------------------------------

_DECIMAL_SI = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BINARY_SI = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_SUFFIX_CHARS = set("eEinumkKMGTP")
_MAX_INT64 = 2**63 - 1
_FORMAT_WRONG = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"


@dataclass(frozen=True, order=True)
class Quantity:
    """An exact quantity value; ``compareTo`` is ``Quantity.Cmp`` on it."""

    value: Fraction


def _scan_quantity(s: str) -> tuple[bool, str, str, str]:
    """Go's ``parseQuantityString``: (positive, numerator, denominator, suffix)."""
    positive, pos, end = True, 0, len(s)
    if s[:1] == "-":
        positive, pos = False, 1
    elif s[:1] == "+":
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return positive, "0", "", ""
    start = pos
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    num = s[start:pos] or "0"
    denom = ""
    if pos < end and s[pos] == ".":
        pos += 1
        start = pos
        while pos < end and s[pos].isascii() and s[pos].isdigit():
            pos += 1
        denom = s[start:pos]
    suffix_start = pos
    while pos < end and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < end and s[pos] in "+-":
        pos += 1
    while pos < end and s[pos].isascii() and s[pos].isdigit():
        pos += 1
    if pos < end:
        raise FormatError(_FORMAT_WRONG)
    return positive, num, denom, s[suffix_start:end]


def _interpret_suffix(suffix: str) -> tuple[int, int, bool] | None:
    """(base, exponent, binary) for a quantity suffix, as ``quantitySuffixer.interpret``; None if unknown."""
    if suffix in _DECIMAL_SI:
        return 10, _DECIMAL_SI[suffix], False
    if suffix in _BINARY_SI:
        return 2, _BINARY_SI[suffix], True
    if len(suffix) > 1 and suffix[0] in "eE":
        exponent = suffix[1:]
        if re.fullmatch(r"[+-]?[0-9]+", exponent) and abs(int(exponent)) < 2**31:
            return 10, int(exponent), False
    return None


def parse_quantity(s: str) -> Quantity:
    """``resource.ParseQuantity``: exact value, rounded up to nano units and capped as the Go code does."""
    if not s:
        raise FormatError(_FORMAT_WRONG)
    if s == "0":
        return Quantity(Fraction(0))
    positive, num, denom, suffix = _scan_quantity(s)
    interpreted = _interpret_suffix(suffix)
    if interpreted is None:
        raise FormatError("unable to parse quantity's suffix")
    base, exponent, binary = interpreted
    magnitude = Fraction(int(num + denom or "0"), 10 ** len(denom)) * Fraction(base) ** exponent
    # Values finer than a nano unit are rounded away from zero (resource.ParseQuantity, inf.RoundUp) and
    # binary quantities are capped at the int64 maximum.
    nanos = magnitude * 10**9
    if nanos.denominator != 1:
        magnitude = Fraction(nanos.numerator // nanos.denominator + 1, 10**9)
    if binary and magnitude > _MAX_INT64:
        magnitude = Fraction(_MAX_INT64)
    return Quantity(magnitude if positive else -magnitude)


# ---------------------------------------------------------------------------------------------------------
# k8s.io/apimachinery/pkg/util/validation
# ---------------------------------------------------------------------------------------------------------

_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_LABEL = re.compile(f"^{_DNS1123_LABEL_FMT}$")
_DNS1123_SUBDOMAIN = re.compile(f"^{_DNS1123_SUBDOMAIN_FMT}$")
_QNAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_QNAME = re.compile(f"^{_QNAME_FMT}$")
_LABEL_VALUE_FMT = f"({_QNAME_FMT})?"
_LABEL_VALUE = re.compile(f"^{_LABEL_VALUE_FMT}$")


def _regex_error(msg: str, fmt: str, *examples: str) -> str:
    shown = " or ".join(f"'{e}', " for e in examples)
    return f"{msg} (e.g. {shown}regex used for validation is '{fmt}')"


def dns1123_subdomain_errors(value: str, unit: str = "characters") -> list[str]:
    """``IsDNS1123Subdomain`` (also ``format.dns1123Subdomain()`` and custom resource names). ``unit``: the
    word of its length error, "characters" in ``util/validation``, "bytes" in ``api/validate/content`` (the
    label-key prefix since 1.35); both count bytes."""
    errs = []
    if len(value.encode()) > 253:
        errs.append(f"must be no more than 253 {unit}")
    if not _DNS1123_SUBDOMAIN.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', "
                "and must start and end with an alphanumeric character",
                _DNS1123_SUBDOMAIN_FMT,
                "example.com",
            )
        )
    return errs


def dns1123_label_errors(value: str) -> list[str]:
    """``IsDNS1123Label`` (namespaces)."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1123_LABEL.fullmatch(value):
        errs.append(
            _regex_error(
                "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must "
                "start and end with an alphanumeric character",
                _DNS1123_LABEL_FMT,
                "my-name",
                "123-abc",
            )
        )
    return errs


_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL = re.compile(f"^{_DNS1035_LABEL_FMT}$")


def dns1035_label_errors(value: str) -> list[str]:
    """``IsDNS1035Label`` (``format.dns1035Label()``)."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 characters")
    if not _DNS1035_LABEL.fullmatch(value):
        errs.append(
            _regex_error(
                "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an "
                "alphabetic character, and end with an alphanumeric character",
                _DNS1035_LABEL_FMT,
                "my-name",
                "abc-123",
            )
        )
    return errs


_QNAME_MSG = (
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric "
    "character"
)


def qualified_name_errors(value: str) -> list[str]:
    """``IsQualifiedName``, which is ``content.IsLabelKey`` since 1.35: label, annotation and finalizer keys,
    ``[prefix/]name``; lengths in bytes, worded "bytes"."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part must be non-empty")
        else:
            errs += [f"prefix part {m}" for m in dns1123_subdomain_errors(prefix, "bytes")]
    else:
        return [
            "a valid label key "
            + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc")
            + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
        ]
    if not name:
        errs.append("name part must be non-empty")
    elif len(name.encode()) > 63:
        errs.append("name part must be no more than 63 bytes")
    if not _QNAME.fullmatch(name):
        errs.append("name part " + _regex_error(_QNAME_MSG, _QNAME_FMT, "MyName", "my.name", "123-abc"))
    return errs


def label_value_errors(value: str) -> list[str]:
    """``IsValidLabelValue`` (``content.IsLabelValue`` since 1.35): at most 63 bytes, worded "bytes"."""
    errs = []
    if len(value.encode()) > 63:
        errs.append("must be no more than 63 bytes")
    if not _LABEL_VALUE.fullmatch(value):
        errs.append(
            _regex_error(
                "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character",
                _LABEL_VALUE_FMT,
                "MyValue",
                "my_value",
                "12345",
            )
        )
    return errs


# ---------------------------------------------------------------------------------------------------------
# kube-openapi strfmt: the string formats these CRDs declare
# ---------------------------------------------------------------------------------------------------------


def re2_compile(pattern: str) -> Any:
    """An RE2 program with room for the large Unicode classes Go's ``regexp`` compiles without complaint."""
    options = re2.Options()
    options.max_mem = 64 << 20
    options.log_errors = False
    return re2.compile(pattern, options)


@cache
def _hostname() -> Any:
    # kube-openapi's HostnamePattern (its last label letters only); compiled on first use, since RE2 takes
    # most of a second to build its Unicode classes.
    return re2_compile(
        r"^([a-zA-Z0-9\p{S}\p{L}]((-?[a-zA-Z0-9\p{S}\p{L}]{0,62})?)|([a-zA-Z0-9\p{S}\p{L}](([a-zA-Z0-9-\p{S}"
        r"\p{L}]{0,61}[a-zA-Z0-9\p{S}\p{L}])?)(\.)){1,}([a-zA-Z\p{L}]){2,63})$"
    )


def is_hostname(value: str) -> bool:
    """strfmt ``IsHostname``: the pattern, at most 255 bytes, labels of at most 63 bytes."""
    if not _hostname().search(value) or len(value.encode()) > 255:
        return False
    return all(len(p.encode()) <= 63 for p in value.split("."))


_DATE = re.compile(r"^([0-9]{4})-([0-9]{2})-([0-9]{2})$")
_TIME = re.compile(r"^([0-9]{2}):([0-9]{2}):([0-9]{2})(.[0-9]+)?(z|([+-][0-9]{2}:[0-9]{2}))$")


def is_date(value: str) -> bool:
    """strfmt ``IsDate``: ``time.Parse("2006-01-02", value)`` (the day checked against its month). Year 0000,
    which Go reads, is refused here: the CEL engine cannot hold a timestamp before year 1."""
    import datetime

    m = _DATE.fullmatch(value)
    if not m:
        return False
    try:
        datetime.date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


def is_date_time(value: str) -> bool:
    """strfmt ``IsDateTime``: an RFC 3339 date, ``T``, and a time with a zone."""
    if len(value) < 4:
        return False
    parts = value.lower().split("t")
    if len(parts) < 2 or not is_date(parts[0]):
        return False
    m = _TIME.fullmatch(parts[1])
    return m is not None and m[1] <= "23" and m[2] <= "59" and m[3] <= "59"


_GO_DURATION = re.compile(r"[-+]?(([0-9]+(\.[0-9]*)?|\.[0-9]+)(ns|us|µs|μs|ms|s|m|h))+|[-+]?0")
_LOOSE_DURATION = re.compile(r"(([0-9]+)[\t\n\f\r ]*([A-Za-zµ]+))")
_DURATION_UNITS = (
    ("ns", "nano"),
    ("us", "µs", "micro"),
    ("ms", "milli"),
    ("s", "sec"),
    ("m", "min"),
    ("h", "hr", "hour"),
    ("d", "day"),
    ("w", "wk", "week"),
)


def is_duration(value: str) -> bool:
    """strfmt ``ParseDuration``: Go's ``time.ParseDuration`` syntax, else ``<n> <unit>`` pairs (a count
    beyond int64 is an error, as ``strconv.Atoi`` makes it)."""
    if _GO_DURATION.fullmatch(value):
        return True
    ok = False
    for match in _LOOSE_DURATION.finditer(value):
        if int(match[2]) > _MAX_INT64:
            return False
        unit = match[3].strip().lower()
        for variants in _DURATION_UNITS:
            last = len(variants) - 1
            if any((i == last and unit.startswith(v)) or v == unit for i, v in enumerate(variants)):
                ok = True
    return ok


_GO_DURATION_PART = re.compile(r"([0-9]*(?:\.[0-9]*)?)(ns|us|µs|μs|ms|s|m|h)")
_DURATION_NANOS = {"ns": 1, "us": 10**3, "µs": 10**3, "μs": 10**3, "ms": 10**6, "s": 10**9, "m": 60 * 10**9}


def is_go_duration(value: str) -> bool:
    """Whether Go's ``time.ParseDuration`` reads ``value`` (its syntax, and at most 2^63-1 nanoseconds, or
    2^63 when negative)."""
    if not _GO_DURATION.fullmatch(value):
        return False
    body = value.lstrip("+-")
    if body == "0":
        return True
    total = 0
    for number, unit in _GO_DURATION_PART.findall(body):
        whole, _, fraction = number.partition(".")
        scale = _DURATION_NANOS.get(unit, 3600 * 10**9)
        total += int(whole or "0") * scale + (int(fraction) * scale // 10 ** len(fraction) if fraction else 0)
    return total <= _MAX_INT64 + (1 if value.startswith("-") else 0)


_DURATION_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1, "m": 60, "h": 3600}
_LOOSE_SECONDS = (1e-9, 1e-6, 1e-3, 1, 60, 3600, 86400, 7 * 86400)


def duration_seconds(value: str) -> float | None:
    """The length of a ``format: duration`` value in seconds, as strfmt's ``ParseDuration`` reads it (what
    the API server's CEL validator hands a rule as a ``duration``); None when it is not one."""
    if _GO_DURATION.fullmatch(value):
        sign = -1 if value.startswith("-") else 1
        body = value.lstrip("+-")
        if body == "0":
            return 0.0
        return sign * sum(float(n) * _DURATION_SECONDS[u] for n, u in _GO_DURATION_PART.findall(body))
    total, ok = 0.0, False
    for match in _LOOSE_DURATION.finditer(value):
        if int(match[2]) > _MAX_INT64:
            return None
        unit = match[3].strip().lower()
        for variants, seconds in zip(_DURATION_UNITS, _LOOSE_SECONDS, strict=True):
            last = len(variants) - 1
            for i, v in enumerate(variants):
                if (i == last and unit.startswith(v)) or v == unit:
                    ok = True
                    total += int(match[2]) * seconds
    return total if ok else None


_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))"
)
#: The range of CEL timestamps (0001-01-01T00:00:00Z to 9999-12-31T23:59:59Z), in seconds from the epoch.
_MIN_UNIX, _MAX_UNIX = -62135596800, 253402300799


def go_rfc3339(value: str) -> tuple[int, int] | None:
    """The instant Go's ``time.Parse(time.RFC3339, value)`` reads (seconds from the epoch, nanoseconds), or None
    when it refuses ``value``. Its general parser: a one-digit hour, a comma before the fraction and a zone
    offset up to 24:60 pass; ``T`` and ``Z`` are upper case only (Go matches layout text byte for byte)."""
    m = _RFC3339.fullmatch(value)
    return None if m is None else _instant(m, year_zero=True)


def _instant(m: re.Match[str], *, year_zero: bool) -> tuple[int, int] | None:
    """The instant a match of :data:`_RFC3339` or :data:`_PARSE_DATE_TIME` names, as Go's ``time.Parse``
    reads it (seconds from the epoch, nanoseconds; no zone is UTC), or None for a date or time Go refuses.
    Year 0, which Go reads, only with ``year_zero``: the CEL engine cannot hold it."""
    import calendar

    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    if not 1 <= month <= 12 or hour > 23 or minute > 59 or second > 59:
        return None
    if year == 0 and not year_zero:
        return None
    if not 1 <= day <= calendar.monthrange(year or 2000, month)[1]:  # year 0 is a leap year, as 2000
        return None
    offset = 0
    if m[9] is not None:
        hours, minutes = int(m[10]), int(m[11])
        if hours > 24 or minutes > 60:
            return None
        offset = (hours * 3600 + minutes * 60) * (1 if m[9] == "+" else -1)
    nanos = int((m[7] + "000000000")[:9]) if m[7] else 0  # Go keeps nine digits and drops the rest
    days = date_ordinal(year, month, day) - 719163  # days from 1970-01-01
    return days * 86400 + hour * 3600 + minute * 60 + second - offset, nanos


def is_cel_timestamp(value: str) -> bool:
    """Whether cel-go's ``timestamp(value)`` converts: Go's ``time.Parse(time.RFC3339, value)``
    (:func:`go_rfc3339`) and a result in CEL's range."""
    instant = go_rfc3339(value)
    return instant is not None and _MIN_UNIX <= instant[0] <= _MAX_UNIX


def cel_timestamp_text(value: str) -> str:
    """``value`` as the text the CEL engine here converts to the instant cel-go's ``timestamp(value)`` gives:
    that instant in UTC with nine fraction digits; ``""`` (which no engine converts) where cel-go refuses the
    spelling, e.g. a lower-case ``t`` or ``z`` the C++ engine would take; ``value`` itself where only the range
    is wrong, which both engines refuse."""
    import datetime

    instant = go_rfc3339(value)
    if instant is None:
        return ""
    seconds, nanos = instant
    if not _MIN_UNIX <= seconds <= _MAX_UNIX:
        return value
    t = datetime.datetime(1970, 1, 1, tzinfo=datetime.UTC) + datetime.timedelta(seconds=seconds)
    return f"{t.year:04d}-{t.month:02d}-{t.day:02d}T{t.hour:02d}:{t.minute:02d}:{t.second:02d}.{nanos:09d}Z"


def date_ordinal(year: int, month: int, day: int) -> int:
    """The proleptic Gregorian ordinal of a date, year 0 included (``datetime``'s, which starts at year 1)."""
    import datetime

    if year >= 1:
        return datetime.date(year, month, day).toordinal()
    return datetime.date(4, month, day).toordinal() - 1461  # year 0 is leap, as year 4 is


#: What strfmt's ``ParseDateTime`` reads: Go's ``time.Parse`` with its layouts RFC3339Micro, RFC3339Millis,
#: RFC3339, RFC3339Nano and ISO8601LocalTime, together: an upper-case ``T`` and ``Z`` only (Go matches layout
#: text byte for byte), a one- or two-digit hour, a fraction after ``.`` or ``,``, a zone offset up to 24:60 or
#: none (UTC).
_PARSE_DATE_TIME = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{1,2}):([0-9]{2}):([0-9]{2})(?:[.,]([0-9]+))?"
    r"(?:(Z)|([+-])([0-9]{2}):([0-9]{2}))?"
)


def date_time_value(value: str) -> tuple[int, int] | None:
    """A ``format: date-time`` value as the API server's CEL validator hands it to a rule: the instant strfmt's
    ``ParseDateTime`` reads (seconds from the epoch, nanoseconds), or None when it reads none and the rule
    gets a conversion error. Not :func:`is_date_time`: the format check lower-cases the value and takes any
    character before a fraction, so ``2024-01-01t00:00:00z`` passes the schema and fails the conversion."""
    if value == "":
        return 0, 0  # ParseDateTime's zero DateTime: the Unix epoch
    m = _PARSE_DATE_TIME.fullmatch(value)
    # Year 0, which Go reads, is before what the CEL engine can hold (see is_date).
    return None if m is None else _instant(m, year_zero=False)


def date_value(value: str) -> tuple[int, int] | None:
    """A ``format: date`` value as the instant the API server's CEL validator hands a rule (midnight UTC, in
    seconds from the epoch, and 0 nanoseconds), or None when it is not one."""
    if not is_date(value):
        return None
    y, mo, d = (int(p) for p in value.split("-"))
    return (date_ordinal(y, mo, d) - 719163) * 86400, 0


#: Go layout elements of the date layouts the API server's CEL conversion parses with, as (element, digits,
#: largest value or 0): ``2006-01-02`` (``format: date``) and ``2006-01-02T15:04:05`` (the last layout
#: strfmt's ``ParseDateTime`` tries, whose error it returns).
_LAYOUT_PARTS = {
    "2006": (4, 0, ""),
    "01": (2, 12, "month"),
    "02": (2, 31, "day"),
    "15": (1, 23, "hour"),
    "04": (2, 59, "minute"),
    "05": (2, 59, "second"),
}
DATE_LAYOUT = "2006-01-02"
DATE_TIME_LAYOUT = "2006-01-02T15:04:05"


def go_time_parse_error(value: str, layout: str) -> str:
    """Go's ``time.Parse(layout, value)`` error for the two layouts above, as the API server quotes it."""
    head = f'parsing time "{value}" as "{layout}"'
    rest, parts = value, re.findall(r"2006|01|02|15|04|05|[^0-9]+", layout)
    for part in parts:
        if part not in _LAYOUT_PARTS:
            if not rest.startswith(part):
                return f'{head}: cannot parse "{rest}" as "{part}"'
            rest = rest[len(part) :]
            continue
        least, largest, name = _LAYOUT_PARTS[part]
        digits = len(rest) - len(rest.lstrip("0123456789"))
        most = 4 if part == "2006" else 2
        if (
            digits < least
            or (part != "15" and digits < most and part != "2006")
            or (part == "2006" and digits < 4)
        ):
            return f'{head}: cannot parse "{rest}" as "{part}"'
        taken = min(digits, most)
        number, rest = int(rest[:taken]), rest[taken:]
        if largest and (number > largest or (name in ("month", "day") and number == 0)):
            return f'parsing time "{value}": {name} out of range'
        if part == "05" and rest.startswith(".") and rest[1:2].isdigit():
            rest = rest[1:].lstrip("0123456789")
    if rest:
        return f'parsing time "{value}": extra text: "{rest}"'
    return f'parsing time "{value}": day out of range'


# ---------------------------------------------------------------------------------------------------------
# Go's quoting
# ---------------------------------------------------------------------------------------------------------


def go_quote(text: str) -> str:
    """``text`` as Go's ``%q`` writes it (how a field error shows a string value)."""
    out = []
    for ch in text:
        code = ord(ch)
        if ch in ('"', "\\"):
            out.append("\\" + ch)
        elif ch in _SHORT_ESCAPES:
            out.append(_SHORT_ESCAPES[ch])
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable() and code > 0x7F:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


_SHORT_ESCAPES = {"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t", "\v": "\\v"}
