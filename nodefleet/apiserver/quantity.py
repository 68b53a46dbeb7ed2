"""``resource.Quantity`` as the CEL quantity library sees it: its value and its Go representation.

The library (``k8s.io/apiserver/pkg/cel/library/quantity.go``) answers some questions from the value
(``compareTo``, ``isLessThan``, ``sign``) and others from how ``k8s.io/apimachinery/pkg/api/resource`` holds it:
``isInteger``/``asInteger`` are ``AsInt64``, which fails for a quantity held as an ``inf.Dec`` (parsed with more
than 18 digits, a binary suffix on a fraction, or grown past int64 by ``add``) and for one held with a negative
scale (``1000m``, ``1.0``), whatever its value; ``asApproximateFloat`` multiplies the unscaled value by a power
of ten in floating point. So a quantity here is that representation, built by ``ParseQuantity``'s code paths,
and ``add``/``sub`` follow ``Quantity.Add``/``Sub`` (int64 fast path, else ``inf.Dec``).
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from nodefleet.apiserver import formats as f

__all__ = ["GoQuantity", "parse"]

_MAX = 2**63 - 1
_MIN = -(2**63)


def _fits(n: int) -> bool:
    return _MIN <= n <= _MAX


@dataclass(frozen=True)
class GoQuantity:
    """``unscaled * 10**exp``, held as an ``int64Amount`` (``dec`` False) or an ``inf.Dec``."""

    dec: bool
    unscaled: int
    exp: int

    @property
    def value(self) -> Fraction:
        return Fraction(self.unscaled) * Fraction(10) ** self.exp

    def encode(self) -> str:
        return f"{'d' if self.dec else 'i'}:{self.unscaled}:{self.exp}"

    @staticmethod
    def decode(text: str) -> GoQuantity:
        kind, unscaled, exp = text.split(":")
        return GoQuantity(kind == "d", int(unscaled), int(exp))

    # --- the library's functions ---------------------------------------------------------------------

    def sign(self) -> int:
        return (self.unscaled > 0) - (self.unscaled < 0)

    def cmp(self, other: GoQuantity) -> int:
        a, b = self.value, other.value
        return (a > b) - (a < b)

    def as_int64(self) -> int | None:
        """``Quantity.AsInt64``: None where Go reports it cannot."""
        if self.dec or self.exp < 0:
            return None
        v = self.unscaled * 10**self.exp
        return v if _fits(v) else None

    def approximate_float(self) -> float:
        """``AsApproximateFloat64``: float(unscaled) * ``math.Pow10(exp)``."""
        try:
            base = float(self.unscaled)
        except OverflowError:
            base = float("inf") if self.unscaled > 0 else float("-inf")
        if self.exp == 0:
            return base
        return base * _pow10(self.exp)

    def add(self, other: GoQuantity) -> GoQuantity:
        if not self.dec and not other.dec:
            done = _int_add(self, other)
            if done is not None:
                return done
        return _dec_add(self, other)

    def sub(self, other: GoQuantity) -> GoQuantity:
        return self.add(GoQuantity(other.dec, -other.unscaled, other.exp))


def _pow10(n: int) -> float:
    """Go's ``math.Pow10``: table products, as Go computes them."""
    if 0 <= n <= 308:
        return float(f"1e{32 * (n // 32)}") * float(f"1e{n % 32}")
    if -323 <= n < 0:
        return float(f"1e-{32 * (-n // 32)}") / float(f"1e{-n % 32}")
    return float("inf") if n > 0 else 0.0


def _scaled(value: int, scale: int) -> int | None:
    """``positiveScaleInt64``: value * 10**scale if it fits in int64."""
    out = value * 10**scale
    return out if _fits(out) else None


def _int_add(a: GoQuantity, b: GoQuantity) -> GoQuantity | None:
    """``int64Amount.Add``: None where it overflows (Go then adds as ``inf.Dec``)."""
    if b.unscaled == 0:
        return a
    if a.unscaled == 0:
        return b
    if a.exp == b.exp:
        c = a.unscaled + b.unscaled
        return GoQuantity(False, c, a.exp) if _fits(c) else None
    if a.exp > b.exp:
        shifted = _scaled(a.unscaled, a.exp - b.exp)
        if shifted is None or not _fits(shifted + b.unscaled):
            return None
        return GoQuantity(False, shifted + b.unscaled, b.exp)
    shifted = _scaled(b.unscaled, b.exp - a.exp)
    if shifted is None or not _fits(a.unscaled + shifted):
        return None
    return GoQuantity(False, a.unscaled + shifted, a.exp)


def _dec_add(a: GoQuantity, b: GoQuantity) -> GoQuantity:
    """``inf.Dec.Add``: exact, at the finer of the two scales."""
    exp = min(a.exp, b.exp)
    total = a.unscaled * 10 ** (a.exp - exp) + b.unscaled * 10 ** (b.exp - exp)
    return GoQuantity(True, total, exp)


def from_int(n: int) -> GoQuantity:
    """``resource.NewQuantity(n, DecimalExponent)``, what ``add(int)``/``sub(int)`` add."""
    return GoQuantity(False, n, 0)


def parse(s: str) -> GoQuantity:
    """``resource.ParseQuantity`` with its representation; ``FormatError`` with Go's message otherwise."""
    f.parse_quantity(s)  # Go's errors, in Go's words
    if s == "0":
        return GoQuantity(False, 0, 0)
    positive, num, denom, suffix = f._scan_quantity(s)
    interpreted = f._interpret_suffix(suffix)
    assert interpreted is not None
    base, exponent, binary = interpreted
    mantissa = 1
    if not binary:
        scale = exponent
        precision = 18 - (len(num) + len(denom))
    else:
        scale = 0
        if exponent >= 0 and not denom:
            mantissa = 1 << exponent
            precision = 15 - len(num) - int(exponent * 3 / 10) - 1
        else:
            precision = -1
    if precision >= 0:
        scale -= len(denom)
        if scale >= -9:
            value = int(num + denom)
            result = value * mantissa
            if _fits(result) and _fits(value):
                return GoQuantity(False, result if positive else -result, scale)
    # The inf.Dec path: the digits as written, the suffix applied, rounded up to nano units, capped.
    unscaled, inf_scale = int(num + denom), len(denom)
    if base == 10:
        inf_scale -= exponent
    else:
        unscaled <<= exponent
    if unscaled != 0:
        if inf_scale > 9:
            q, r = divmod(unscaled, 10 ** (inf_scale - 9))
            unscaled = q + (1 if r else 0)
        else:
            unscaled *= 10 ** (9 - inf_scale)
        inf_scale = 9
    if binary and Fraction(unscaled, 10**inf_scale) > _MAX:
        unscaled, inf_scale = _MAX, 0
    return GoQuantity(True, unscaled if positive else -unscaled, -inf_scale)
