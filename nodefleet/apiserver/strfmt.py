"""Every string ``format`` the API server checks in a custom resource, as kube-openapi's strfmt registry checks it.

apiextensions-apiserver keeps a schema's ``format`` only when its name, dashes removed, is in its supported list
(``pkg/apiserver/validation/formats.go``; 1.34 added ``k8s-short-name`` and ``k8s-long-name``) and drops the
others unchecked. What is kept is validated on string values by ``k8s.io/kube-openapi/pkg/validation/strfmt``
(``default.go``, ``date.go``, ``time.go``, ``duration.go``, ``bson.go``, ``kubernetes-extensions.go``, and the
govalidator functions it vendors); each function below follows that source. A value that fails is a type error
to kube-openapi (``must be of type <format>``), which keeps the CEL rules from running.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable

from nodefleet.apiserver import formats as f

__all__ = ["SUPPORTED", "format_ok", "normalized"]

_A = re.ASCII


def _uri(value: str) -> bool:
    try:
        f.parse_request_uri(value)
    except f.FormatError:
        return False
    return True


# --- net/mail.ParseAddress ------------------------------------------------------------------------------

_ATEXT = set("!#$%&'*+-/=?^_`{|}~")


def _is_atext(ch: str, dot: bool) -> bool:
    if ch == ".":
        return dot
    if ord(ch) >= 0x80:
        return True
    return ch.isascii() and (ch.isalnum() or ch in _ATEXT)


def _is_vchar(ch: str) -> bool:
    return 0x21 <= ord(ch) <= 0x7E or ord(ch) >= 0x80


class _Mail:
    """The parts of Go's ``net/mail`` address parser that decide whether ``ParseAddress`` succeeds."""

    def __init__(self, s: str) -> None:
        self.s = s

    def skip_space(self) -> None:
        self.s = self.s.lstrip(" \t")

    def skip_cfws(self) -> bool:
        self.skip_space()
        while self.s.startswith("("):
            depth, i = 0, 0
            while i < len(self.s):
                ch = self.s[i]
                if ch == "\\":
                    i += 2
                    continue
                if ch == "(":
                    depth += 1
                elif ch == ")":
                    depth -= 1
                    if depth == 0:
                        break
                i += 1
            if depth != 0:
                return False
            self.s = self.s[i + 1 :]
            self.skip_space()
        return True

    def atom(self, dot: bool) -> str | None:
        i = 0
        while i < len(self.s) and _is_atext(self.s[i], dot):
            i += 1
        if i == 0:
            return None
        atom, self.s = self.s[:i], self.s[i:]
        if dot and (atom.startswith(".") or atom.endswith(".") or ".." in atom):
            return None
        return atom

    def quoted(self) -> str | None:
        if not self.s.startswith('"'):
            return None
        i, out = 1, list[str]()
        while i < len(self.s):
            ch = self.s[i]
            if ch == '"':
                self.s = self.s[i + 1 :]
                return "".join(out)
            if ch == "\\":
                if i + 1 >= len(self.s) or not (_is_vchar(self.s[i + 1]) or self.s[i + 1] in " \t"):
                    return None
                out.append(self.s[i + 1])
                i += 2
                continue
            if not (_is_vchar(ch) or ch in " \t"):
                return None
            out.append(ch)
            i += 1
        return None

    def addr_spec(self) -> bool:
        if self.s.startswith('"'):
            if self.quoted() is None:
                return False
        elif self.atom(True) is None:
            return False
        if not self.s.startswith("@"):
            return False
        self.s = self.s[1:]
        self.skip_space()
        if not self.skip_cfws():
            return False
        if self.s.startswith("["):
            end = self.s.find("]")
            if end < 0:
                return False
            self.s = self.s[end + 1 :]
            return True
        return self.atom(True) is not None

    def phrase(self) -> bool:
        words = 0
        while True:
            if not self.skip_cfws():
                return False
            if self.s.startswith('"'):
                if self.quoted() is None:
                    return False
            else:
                i = 0
                while i < len(self.s) and _is_atext(self.s[i], True):
                    i += 1
                if i == 0:
                    break
                self.s = self.s[i:]
            words += 1
        return words > 0


def is_email(value: str) -> bool:
    """strfmt ``IsEmail``: ``net/mail.ParseAddress`` accepts one address (``a@b`` or ``Name <a@b>``)."""
    whole = _Mail(value)
    whole.skip_space()
    if not whole.s:
        return False
    attempt = _Mail(whole.s)
    if attempt.skip_cfws() and attempt.addr_spec() and attempt.skip_cfws() and not attempt.s:
        return True
    named = _Mail(whole.s)
    if named.s.startswith("<") or named.phrase():
        if not named.skip_cfws() or not named.s.startswith("<"):
            return False
        named.s = named.s[1:]
        if not named.addr_spec() or not named.s.startswith(">"):
            return False
        named.s = named.s[1:]
        return named.skip_cfws() and not named.s
    return False


# --- k8s.io/utils/net ParseIPSloppy / ParseCIDRSloppy, net.ParseIP, net.ParseMAC --------------------------


def _dtoi(s: str) -> tuple[int, int, bool]:
    n, i = 0, 0
    while i < len(s) and "0" <= s[i] <= "9":
        n = n * 10 + ord(s[i]) - 48
        if n >= 0xFFFFFF:
            return 0xFFFFFF, i, False
        i += 1
    return n, i, i > 0


def _ipv4_sloppy(s: str) -> bytes | None:
    out = []
    for i in range(4):
        if not s:
            return None
        if i > 0:
            if s[0] != ".":
                return None
            s = s[1:]
        n, c, ok = _dtoi(s)
        if not ok or n > 0xFF:
            return None
        s = s[c:]
        out.append(n)
    return None if s else bytes(out)


def _ipv6(s: str, sloppy: bool) -> bool:
    if "%" in s or not s.isascii():
        return False
    head, _, tail = s.rpartition(":")
    if "." in tail:
        v4 = _ipv4_sloppy(tail) if sloppy else None
        if not sloppy:
            try:
                v4 = ipaddress.IPv4Address(tail).packed
            except ValueError:
                return False
        if v4 is None:
            return False
        s = f"{head}:{v4[0] * 256 + v4[1]:x}:{v4[2] * 256 + v4[3]:x}"
    try:
        ipaddress.IPv6Address(s)
    except ValueError:
        return False
    return True


def _is_ipv4(value: str) -> bool:
    """strfmt ``isIPv4``: ``ParseIPSloppy`` (leading zeros allowed) and a dot in the text."""
    ok = False
    for ch in value:
        if ch == ".":
            ok = _ipv4_sloppy(value) is not None
            break
        if ch == ":":
            ok = _ipv6(value, True)
            break
    return ok and "." in value


def _is_ipv6(value: str) -> bool:
    """govalidator ``IsIPv6``: ``net.ParseIP`` and a colon in the text."""
    if ":" not in value:
        return False
    for ch in value:
        if ch == ".":
            return False  # net.ParseIP reads it as IPv4, which has no colon
        if ch == ":":
            break
    return _ipv6(value, False)


def _is_cidr(value: str) -> bool:
    """strfmt ``isCIDR``: ``ParseCIDRSloppy``."""
    addr, slash, mask = value.partition("/")
    if not slash:
        return False
    bits = 32
    if _ipv4_sloppy(addr) is None:
        if not _ipv6(addr, True):
            return False
        bits = 128
    n, i, ok = _dtoi(mask)
    return ok and i == len(mask) and 0 <= n <= bits


_HEXDIGITS = set("0123456789abcdefABCDEF")


def _is_mac(value: str) -> bool:
    """govalidator ``IsMAC``: ``net.ParseMAC`` (6, 8 or 20 octets, ``:``/``-`` pairs or ``.`` quads)."""
    s = value
    if len(s) < 14:
        return False
    if s[2] in ":-":
        if (len(s) + 1) % 3 != 0 or (len(s) + 1) // 3 not in (6, 8, 20):
            return False
        for i in range(0, len(s), 3):
            if s[i] not in _HEXDIGITS or s[i + 1] not in _HEXDIGITS:
                return False
            if i + 2 < len(s) and s[i + 2] != s[2]:
                return False
        return True
    if s[4] == ".":
        if (len(s) + 1) % 5 != 0 or 2 * (len(s) + 1) // 5 not in (6, 8, 20):
            return False
        for i in range(0, len(s), 5):
            if any(c not in _HEXDIGITS for c in s[i : i + 4]):
                return False
            if i + 4 < len(s) and s[i + 4] != ".":
                return False
        return True
    return False


# --- govalidator patterns --------------------------------------------------------------------------------

_UUID = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID3 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}$")
_UUID4 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_UUID5 = re.compile(r"(?i)^[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}$")
_CREDIT_CARD = re.compile(
    r"^(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}|"
    r"3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})$",
    _A,
)
_ISBN10 = re.compile(r"^(?:[0-9]{9}X|[0-9]{10})$")
_ISBN13 = re.compile(r"^(?:[0-9]{13})$")
_HEXCOLOR = re.compile(r"^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})$")
_BYTE = r"(0|[1-9]\d?|1\d\d?|2[0-4]\d|25[0-5])"
_RGBCOLOR = re.compile(
    rf"^rgb\([\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*,[\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*,"
    rf"[\t\n\f\r ]*{_BYTE}[\t\n\f\r ]*\)$",
    _A,
)
_BASE64 = re.compile(r"^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=|[A-Za-z0-9+/]{4})$")
_SSN = re.compile(r"^\d{3}[- ]?\d{2}[- ]?\d{4}$", _A)
_NOT_NUMBER = re.compile(r"[^0-9]+")
_SPACES_AND_MINUS = re.compile(r"[\t\n\f\r -]+")
_SHORT_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LONG_NAME = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def _match(rx: re.Pattern[str]) -> Callable[[str], bool]:
    # Go's $ matches only at the end of the text; Python's also before a final newline.
    return lambda value: rx.search(value) is not None and not value.endswith("\n")


def _is_credit_card(value: str) -> bool:
    digits = _NOT_NUMBER.sub("", value)
    if not _match(_CREDIT_CARD)(digits):
        return False
    total, double = 0, False
    for ch in reversed(digits):
        n = int(ch)
        if double:
            n *= 2
            total += n % 10 + 1 if n >= 10 else n
        else:
            total += n
        double = not double
    return total % 10 == 0


def _is_isbn(value: str, version: int) -> bool:
    s = _SPACES_AND_MINUS.sub("", value)
    if version == 10:
        if not _match(_ISBN10)(s):
            return False
        checksum = sum((i + 1) * int(s[i]) for i in range(9))
        checksum += 100 if s[9] == "X" else 10 * int(s[9])
        return checksum % 11 == 0
    if not _match(_ISBN13)(s):
        return False
    checksum = sum((1, 3)[i % 2] * int(s[i]) for i in range(12))
    return int(s[12]) - (10 - checksum % 10) % 10 == 0


def _is_ssn(value: str) -> bool:
    return len(value.encode()) == 11 and _match(_SSN)(value)


def _is_bson_object_id(value: str) -> bool:
    return len(value) == 24 and all(c in _HEXDIGITS for c in value)


#: The validators by normalized name (dashes removed): every format apiextensions-apiserver keeps.
_VALIDATORS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": _is_bson_object_id,
    "uri": _uri,
    "email": is_email,
    "hostname": f.is_hostname,
    "ipv4": _is_ipv4,
    "ipv6": _is_ipv6,
    "cidr": _is_cidr,
    "mac": _is_mac,
    "uuid": _match(_UUID),
    "uuid3": _match(_UUID3),
    "uuid4": _match(_UUID4),
    "uuid5": _match(_UUID5),
    "isbn": lambda v: _is_isbn(v, 10) or _is_isbn(v, 13),
    "isbn10": lambda v: _is_isbn(v, 10),
    "isbn13": lambda v: _is_isbn(v, 13),
    "creditcard": _is_credit_card,
    "ssn": _is_ssn,
    "hexcolor": _match(_HEXCOLOR),
    "rgbcolor": _match(_RGBCOLOR),
    "byte": _match(_BASE64),
    "password": lambda v: True,
    "date": f.is_date,
    "duration": f.is_duration,
    "datetime": f.is_date_time,
    "k8sshortname": lambda v: len(v.encode()) <= 63 and _match(_SHORT_NAME)(v),
    "k8slongname": lambda v: len(v.encode()) <= 253 and _match(_LONG_NAME)(v),
}

#: The format names the API server checks (normalized), for documentation and coverage.
SUPPORTED: frozenset[str] = frozenset(_VALIDATORS)


def normalized(fmt: str) -> str:
    """strfmt's ``DefaultNameNormalizer``: the name with its dashes removed (``date-time`` is ``datetime``)."""
    return fmt.replace("-", "")


def format_ok(fmt: str, value: str) -> bool | None:
    """Whether the API server accepts string ``value`` in ``format: fmt``; None where it does not check ``fmt``
    (an unsupported format is dropped from the schema, so any string passes)."""
    check = _VALIDATORS.get(normalized(fmt))
    return check(value) if check else None


def is_uuid(value: str) -> bool:
    return _match(_UUID)(value)


def is_base64(value: str) -> bool:
    return _match(_BASE64)(value)
