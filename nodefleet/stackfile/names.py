"""Kubernetes names derived from names nodefleet accepts that Kubernetes does not (a stack ``Team_B``, a 70-character
stack name): kept when valid, else rewritten deterministically with a digest of the original, so two different
inputs never meet by the rewriting alone."""

from __future__ import annotations

import hashlib
import re

__all__ = ["dns_label", "label_value"]

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_MAX_LABEL = 63
_DIGEST = 8


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_DIGEST]


def dns_label(text: str) -> str:
    """``text`` as a Kubernetes object name valid everywhere nodefleet's wiring uses one (an RFC 1123 DNS
    label: ``[a-z0-9-]``, at most 63 characters, alphanumeric at both ends): unchanged when it already is one,
    else lowercased, other characters replaced by ``-``, shortened, and ended with ``-`` and 8 hex digits of
    the SHA-256 of ``text`` itself, so two different inputs never give one name by the rewriting alone."""
    if _DNS_LABEL.match(text) and len(text) <= _MAX_LABEL:
        return text
    clean = re.sub(r"[^a-z0-9-]+", "-", text.lower())
    head = clean[: _MAX_LABEL - _DIGEST - 1].strip("-")
    return f"{head}-{_digest(text)}" if head else f"x{_digest(text)}"


def label_value(text: str) -> str:
    """``text`` as a label value (at most 63 of ``[A-Za-z0-9_.-]``, alphanumeric at both ends): unchanged
    when it already is one, else rewritten as :func:`dns_label` does, keeping case, ``_`` and ``.``."""
    if _LABEL_VALUE.match(text) and len(text) <= _MAX_LABEL:
        return text
    clean = re.sub(r"[^A-Za-z0-9_.-]+", "-", text)
    head = re.sub(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$", "", clean[: _MAX_LABEL - _DIGEST - 1])
    return f"{head}-{_digest(text)}" if head else _digest(text)
