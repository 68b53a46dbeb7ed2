"""Tolerant readers of resource properties: hand-written objects may lack any field or give it any shape.

Every policy reads through these, so a string where a mapping belongs, a list where a string belongs or a
missing parent never raises: the reader answers "absent" (an empty mapping, an empty sequence, None), the
policy judges what is there, and the ``crd-schema`` policy names the malformed field with the CRD's own
message. ``tests/policies/test_mutation.py`` holds every policy to it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

ReportViolation = Callable[[str, str | None], None]


def as_map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def is_list(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def as_seq(value: Any) -> Sequence[Any]:
    return value if is_list(value) else ()


def as_text(value: Any) -> str | None:
    """``value`` when it is a non-empty string, else None (a number or a mapping is not a name or a version)."""
    return value if isinstance(value, str) and value else None


def map_at(value: Any, *keys: str) -> Mapping[str, Any]:
    """The mapping at ``keys`` below ``value``, or an empty one when any step is absent or not a mapping."""
    for key in keys:
        value = as_map(value).get(key)
    return as_map(value)


def value_at(value: Any, *keys: str) -> Any:
    """The value at ``keys`` below ``value`` (any shape), or None when a step on the way is not a mapping."""
    for key in keys[:-1]:
        value = as_map(value).get(key)
    return as_map(value).get(keys[-1]) if keys else value


def metadata_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return map_at(props, "metadata")


def annotations_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return map_at(props, "metadata", "annotations")


def labels_of(props: Mapping[str, Any]) -> Mapping[str, Any]:
    return map_at(props, "metadata", "labels")


def name_of(props: Mapping[str, Any], fallback: str) -> str:
    """``metadata.name`` when it is a string, else the Pulumi resource name."""
    return as_text(metadata_of(props).get("name")) or fallback
