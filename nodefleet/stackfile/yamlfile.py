"""Reading the YAML files users hand nodefleet (stack files, catalogs) strictly, with messages that fit
on one line and never echo the file's content.

Why: PyYAML silently keeps the last of two equal keys, where the Pulumi CLI (Go yaml.v3) rejects the
file, so a stack could mean one thing to ``check`` and another to ``pulumi up``. And PyYAML's errors quote
the offending line: a secrets file passed where a catalog was expected would be printed into a CI log.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import yaml

__all__ = ["YAMLFileError", "load_yaml", "read_text"]


class YAMLFileError(ValueError):
    """A file that cannot be read or parsed; the message names the file, the place and the fix."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that refuses duplicate mapping keys, as the Pulumi CLI does."""


def _construct_mapping(loader: _StrictLoader, node: yaml.MappingNode, deep: bool = False) -> Any:
    seen: dict[Any, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":
            continue  # `<<: *anchor` merges are resolved (and may override keys) by construct_mapping
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:
            continue  # an unhashable key: the constructor below reports it
        if first is not None:
            raise yaml.constructor.ConstructorError(
                None,
                None,
                f"key '{key}' appears twice in one mapping (first on line {first + 1}); YAML keeps only "
                "one of them and the Pulumi CLI rejects the file. Remove or rename one",
                key_node.start_mark,
            )
        seen[key] = key_node.start_mark.line
    return loader.construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)


def read_text(path: str | os.PathLike[str], source: str | None = None) -> str:
    """The UTF-8 text of ``path``; ``source`` names it in messages (default: the path)."""
    name = source or os.fspath(path)
    p = Path(path)
    try:
        data = p.read_bytes()
    except FileNotFoundError:
        raise YAMLFileError(f"{name}: no such file; check the path") from None
    except IsADirectoryError:
        raise YAMLFileError(f"{name}: is a directory, not a file; give the path of the file") from None
    except OSError as exc:
        raise YAMLFileError(f"{name}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    if b"\x00" in data[:8192]:
        raise YAMLFileError(
            f"{name}: is a binary file, not YAML or JSON text; check that the right file was given"
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise YAMLFileError(
            f"{name}: is not UTF-8 text (byte 0x{data[exc.start]:02x} at offset {exc.start}); save it as UTF-8"
        ) from None


#: The most values a document may expand to through anchors and aliases. A 100-cluster stack file is about
#: 10,000; an alias bomb ("billion laughs", or an alias inside its own anchor) is billions or endless, and
#: everything that walks the value afterwards would hang. The Pulumi CLI's parser (yaml.v3) refuses
#: "excessive aliasing" too.
MAX_EXPANDED_VALUES = 1_000_000


def _too_many_values(document: Any) -> bool:
    """Whether walking ``document`` (aliases followed each time, as every reader will) exceeds the limit."""
    count, stack = 0, [document]
    while stack:
        value = stack.pop()
        count += 1
        if count > MAX_EXPANDED_VALUES:
            return True
        if isinstance(value, dict):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return False


def load_yaml(text: str, source: str) -> Any:
    """Parse YAML (or JSON, a subset of it) strictly: duplicate keys are errors, messages carry no content."""
    try:
        document = yaml.load(text, Loader=_StrictLoader)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        hint = _hint(problem)
        raise YAMLFileError(f"{source}: {where}: {problem}{hint}") from None
    except yaml.YAMLError as exc:
        raise YAMLFileError(f"{source}: not valid YAML ({type(exc).__name__})") from None
    if _too_many_values(document):
        raise YAMLFileError(
            f"{source}: its anchors and aliases expand to more than {MAX_EXPANDED_VALUES:,} values (an alias "
            "bomb, or an alias inside its own anchor); write the values out instead of aliasing them"
        )
    return document


def _hint(problem: str) -> str:
    if "'\\t'" in problem or "\\t" in problem:
        return "; YAML indents with spaces, never tabs: replace the tabs with spaces"
    if "appears twice" in problem:
        return ""
    return "; fix the YAML syntax there (indentation, a missing ':' or an unclosed quote or bracket)"
