"""Tolerant readers of resource properties: hand-written objects may lack any field, and must not crash."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

ReportViolation = Callable[[str, str | None], None]


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_seq(value: Any) -> Sequence[Any]:
    return value if isinstance(value, Sequence) and not isinstance(value, str | bytes) else ()


def metadata_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(props.get("metadata"))


def annotations_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return as_map(metadata_of(props).get("annotations"))


def name_of(props: Mapping[str, Any], fallback: str) -> str:
    """``metadata.name``, else the Pulumi resource name."""
    return str(metadata_of(props).get("name") or fallback)
