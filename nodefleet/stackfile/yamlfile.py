"""Reading the YAML files users hand nodefleet (stack files, catalogs) strictly, with messages that fit
on one line and never echo the file's content.

Why: PyYAML silently keeps the last of two equal keys, where the Pulumi CLI (Go yaml.v3) rejects the
file, so a stack could mean one thing to ``check`` and another to ``pulumi up``. And PyYAML's errors quote
the offending line: a secrets file passed where a catalog was expected would be printed into a CI log.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from nodefleet import files
from nodefleet.files import MAX_EXPANDED_VALUES, MAX_FILE_BYTES, FileProblem

#: The variable naming nodefleet's cache folder (:mod:`nodefleet.apiserver.store` keeps parsed CRDs there).
CACHE_ENV = "NODEFLEET_CACHE_DIR"

__all__ = [
    "MAX_EXPANDED_VALUES",
    "MAX_FILE_BYTES",
    "YAMLFileError",
    "load_yaml",
    "read_text",
]


class YAMLFileError(FileProblem):
    """A file that cannot be read or parsed; the message names the file, the place and the fix."""

    def __init__(self, message: str) -> None:
        source, _, problem = message.partition(": ")
        if problem:
            super().__init__(source, problem)
        else:
            ValueError.__init__(self, message)
            self.source, self.problem, self.fix = "", message, ""


class _StrictLoader(files.BoundedLoader):
    """The bounded safe loader (:class:`nodefleet.files.BoundedLoader`), refusing duplicate mapping keys as
    the Pulumi CLI does."""


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

#: Plain scalars every reader takes for the same number: decimal digits, no leading zero, a sign at most.
_PLAIN_INT = re.compile(r"^[-+]?(0|[1-9][0-9]*)$")
_PLAIN_FLOAT = re.compile(
    r"^[-+]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][-+]?[0-9]+)?$|^[-+]?\.(inf|Inf|INF)$|^\.(nan|NaN|NAN)$"
)


def _read_otherwise(node: yaml.ScalarNode, problem: str) -> yaml.constructor.ConstructorError:
    return yaml.constructor.ConstructorError(None, None, problem, node.start_mark)


def _construct_int(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    """A YAML 1.1 integer whose spelling means something other than its digits: refused, not guessed.

    ``010`` is the octal 8 to PyYAML and to the Pulumi CLI (yaml.v3 keeps 1.1 octals), ``0x1f`` hex, ``1_000``
    a thousand with the underscore dropped, ``1:30`` the base-60 number 90 to PyYAML and text to yaml.v3. No
    stack-config value is written so on purpose."""
    text = str(node.value)
    value = loader.construct_yaml_int(node)
    if node.style is None and not _PLAIN_INT.match(text):
        why = _int_reading(text, value)
        raise _read_otherwise(
            node,
            f"{text} is read as the number {value} ({why}); write {value} if that is meant, or quote it "
            f"('{text}') if it is text",
        )
    return value


def _int_reading(text: str, value: int) -> str:
    body = text.lstrip("+-")
    if ":" in body:
        return "YAML 1.1 reads a:b as a base-60 number, and the Pulumi CLI reads it as text"
    if "_" in body:
        return "YAML drops the underscores"
    if body[:2].lower() in ("0x", "0o", "0b"):
        return {"0x": "hexadecimal", "0o": "octal", "0b": "binary"}[body[:2].lower()]
    return "a leading 0 makes it octal in YAML 1.1, which PyYAML and the Pulumi CLI both follow"


def _construct_float(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    text = str(node.value)
    value = loader.construct_yaml_float(node)
    if node.style is None and not _PLAIN_FLOAT.match(text):
        why = "YAML 1.1 reads a:b as a base-60 number" if ":" in text else "YAML drops the underscores"
        raise _read_otherwise(
            node, f"{text} is read as the number {value} ({why}); write {value} if that is meant, or quote it"
        )
    return value


def _construct_bool(loader: _StrictLoader, node: yaml.ScalarNode) -> Any:
    text = str(node.value)
    value = loader.construct_yaml_bool(node)
    if text.lower() not in ("true", "false"):
        raise _read_otherwise(
            node,
            f"{text} is read as {str(value).lower()} by YAML 1.1 (PyYAML) and as the text '{text}' by the Pulumi "
            f"CLI (YAML 1.2); write {str(value).lower()} if a boolean is meant, or quote it ('{text}')",
        )
    return value


_StrictLoader.add_constructor("tag:yaml.org,2002:int", _construct_int)
_StrictLoader.add_constructor("tag:yaml.org,2002:float", _construct_float)
_StrictLoader.add_constructor("tag:yaml.org,2002:bool", _construct_bool)
_FastStrictLoader = type(
    "_FastStrictLoader",
    (files.FastBoundedLoader,),
    {"yaml_constructors": dict(_StrictLoader.yaml_constructors)},
)


def _c_composed() -> type[Any] | None:
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        return None

    class CComposedStrictLoader(CParser, yaml.constructor.SafeConstructor, yaml.resolver.Resolver):
        """The strict loader on libyaml's parser and composer: only for text whose nesting cannot exhaust the
        C stack (:func:`_c_safe`); the depth and expansion bounds are checked on its nodes afterwards."""

        yaml_constructors = dict(_StrictLoader.yaml_constructors)

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

        # No path resolvers are registered on this loader: the resolver's per-node path bookkeeping and its
        # lookups for non-plain nodes come down to the default tags, given here without the calls (libyaml
        # calls back into Python for every node, and a fleet's stack files have millions).
        def descend_resolver(self, current_node: Any, current_index: Any) -> None:
            return None

        def ascend_resolver(self) -> None:
            return None

        def resolve(self, kind: Any, value: Any, implicit: Any) -> Any:
            """The resolver's tag, remembered per plain scalar text (the keys and values stack files repeat)."""
            if kind is not yaml.ScalarNode:
                return _DEFAULT_TAGS[kind]
            if not implicit[0]:
                return yaml.resolver.BaseResolver.DEFAULT_SCALAR_TAG
            if len(value) > 64:
                return yaml.resolver.Resolver.resolve(self, kind, value, implicit)  # type: ignore[no-untyped-call]
            key = (value, implicit[1])
            tag = _RESOLVED.get(key)
            if tag is None:
                tag = yaml.resolver.Resolver.resolve(self, kind, value, implicit)  # type: ignore[no-untyped-call]
                if len(_RESOLVED) < 100_000:
                    _RESOLVED[key] = tag
            return tag

    return CComposedStrictLoader


_RESOLVED: dict[tuple[str, bool], str] = {}
_DEFAULT_TAGS = {
    yaml.SequenceNode: yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG,
    yaml.MappingNode: yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG,
}


_CComposedStrictLoader = _c_composed()
#: libyaml's composer recurses in C once per level, unbounded: only text that cannot nest deeper than this is
#: composed there.
_C_SAFE_NESTING = 2000


def _c_safe(text: str) -> bool:
    """Whether ``text`` cannot nest more than :data:`_C_SAFE_NESTING` levels: a level needs a line of its own, a
    flow bracket or an indicator (``-``, ``?``, ``:``), so their count bounds the depth."""
    bound = sum(text.count(c) for c in "\n[{-?:")
    return bound <= _C_SAFE_NESTING


class _NotPlain(Exception):
    """A node :func:`_plain` leaves to the constructors (which build it, or say what is wrong with it)."""


_TAG = "tag:yaml.org,2002:"


def _plain(node: yaml.Node, depth: int = 1) -> Any:
    """The value of a node graph of plain mappings, sequences and scalars, as the strict constructors build it,
    in one pass without their per-node dispatch: anything else (a duplicate key, a merge key, a number or
    boolean spelt otherwise than plainly, another tag, nesting deeper than :data:`nodefleet.files.MAX_DEPTH`,
    ``depth`` being the node's own) raises :class:`_NotPlain`."""
    if depth > files.MAX_DEPTH:
        raise _NotPlain  # the strict reading says how deep, and where
    tag = node.tag
    if type(node) is yaml.ScalarNode:
        text = node.value
        if tag == _TAG + "str":
            return text
        if node.style:  # libyaml marks a plain scalar '', the Python parser None
            raise _NotPlain
        if tag == _TAG + "int" and _PLAIN_INT.match(text):
            try:
                return int(text)
            except ValueError:  # more digits than Python converts: the strict reading says so
                raise _NotPlain from None
        if tag == _TAG + "bool" and text in ("true", "false", "True", "False", "TRUE", "FALSE"):
            return text.lower() == "true"
        if tag == _TAG + "null":
            return None
        raise _NotPlain
    if type(node) is yaml.MappingNode and tag == _TAG + "map":
        out: dict[Any, Any] = {}
        below = depth + 1  # a key's level is its value's, which is checked
        for key_node, value_node in node.value:
            if type(key_node) is not yaml.ScalarNode or key_node.tag != _TAG + "str":
                raise _NotPlain
            if key_node.value in out:
                raise _NotPlain
            out[key_node.value] = _plain(value_node, below)
        return out
    if type(node) is yaml.SequenceNode and tag == _TAG + "seq":
        below = depth + 1
        return [_plain(child, below) for child in node.value]
    raise _NotPlain


#: A text without an anchor (``&``) has no alias: its node graph is a tree of at most about two nodes a
#: character (an empty key and value after one ``?`` or ``:``), so up to a quarter of
#: :data:`nodefleet.files.MAX_EXPANDED_VALUES` characters it cannot expand past that bound, and :func:`_plain`
#: bounds its depth as it builds it.
_NODES_A_CHAR = 4
#: What :func:`_fast_value` gives for a text the fast reading leaves to the strict one.
_UNREAD = object()


def _fast_value(text: str, source: str) -> Any:
    """The value libyaml and :func:`_plain` build from ``text`` (None for an empty document), or :data:`_UNREAD`
    for a text the strict reading must build or judge: the same value, and for a broken file its message.

    A text that cannot hold an alias is not walked for aliases and depth (about a sixth of the reading's time
    at 10,000 stack files): :func:`_plain` refuses one nested too deep, for the strict reading to say so."""
    tree = "&" not in text and len(text) * _NODES_A_CHAR <= files.MAX_EXPANDED_VALUES
    try:
        fastest = _CComposedStrictLoader if _CComposedStrictLoader and _c_safe(text) else _FastStrictLoader
        node, loader = files.compose_bounded(text, source, fastest, expansion=not tree)
    except (FileProblem, yaml.YAMLError):
        return _UNREAD
    if node is None:
        return None
    try:
        return _plain(node)
    except _NotPlain:
        return _UNREAD  # built and judged by the strict constructors, on nodes they read as they expect
    finally:
        loader.dispose()


#: Inside :func:`remembered_values`: per stack file (as messages name it), the :func:`_digest` of the text its
#: value was read from and the value as JSON, from the cache and as read in the block; and whether it changed.
_REMEMBERED: dict[str, list[str]] | None = None
_CHANGED = False
#: Inside :func:`remembered_values`: the texts :func:`read_ahead` read, by (path, name in messages), until read.
_AHEAD: dict[tuple[str, str], str] | None = None
#: Inside :func:`remembered_values`: called with a stack file's name before its value is looked for in the cache.
_BEFORE_READ: Callable[[str], None] | None = None
#: Names what :func:`_plain` builds: change it when its values change, so that no earlier value is taken.
_PLAIN_FORM = "plain-1"


def _digest(text: str) -> str:
    return hashlib.sha256(f"{_PLAIN_FORM}\0{yaml.__version__}\0{text}".encode()).hexdigest()


def _cache_file(folder: Path) -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured is not None and not configured:
        return None
    home = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodefleet"
    base = Path(configured) if configured else home
    key = hashlib.sha256(os.fsencode(os.path.realpath(folder))).hexdigest()[:32]
    return base / "stackfiles" / f"{key}.json"


@contextmanager
def remembered_values(folder: Path) -> Iterator[None]:
    """Within the block, stack files read with ``fast`` take their value from the cache of ``folder``'s stack
    files when their text is one read before; after it, the cache holds the values of the files the block read.

    The cache is one JSON file per folder of stack files (in ``NODEFLEET_CACHE_DIR``, default
    ``~/.cache/nodefleet``, beside the parsed CRDs; empty: no cache) mapping each file to the SHA-256 of its text
    (with PyYAML's version and :data:`_PLAIN_FORM`) and the value :func:`_plain` built from it: JSON holds exactly its
    mappings of text keys, lists, text, integers, booleans and nulls, and parses about twenty times faster than
    YAML does, which at 10,000 stack files is seconds (docs/measurements.md, "Fleet commands at 10,000 stacks").
    Only values the strict reading accepted whole are kept; every other file is read as without the cache."""
    global _REMEMBERED, _CHANGED, _AHEAD, _BEFORE_READ
    if _REMEMBERED is not None:
        yield
        return
    path = _cache_file(folder)
    kept: dict[str, list[str]] = {}
    if path is not None:
        try:
            loaded = json.loads(path.read_bytes())
            kept = loaded if isinstance(loaded, dict) else {}
        except (OSError, ValueError, RecursionError):
            kept = {}
    _REMEMBERED, _CHANGED, _AHEAD = kept, False, {}
    try:
        yield
        if path is not None and _CHANGED:
            _write_cache(path, _REMEMBERED)
    finally:
        _REMEMBERED, _CHANGED, _AHEAD, _BEFORE_READ = None, False, None, None


def _write_cache(path: Path, values: dict[str, list[str]]) -> None:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        staging = path.with_name(f"{path.stem}.{os.getpid()}.tmp")
        staging.write_text(json.dumps(values, separators=(",", ":")), encoding="utf-8")
        staging.replace(path)
    except (OSError, TypeError, ValueError):
        return  # a read-only or full disk only costs the next run the YAML parse


def _kept(source: str, digest: str) -> Any:
    """The value kept for ``source`` when it was read from a text of ``digest`` (new objects each time: a caller
    may change what it is handed), or None."""
    entry = _REMEMBERED.get(source) if _REMEMBERED is not None else None
    if not isinstance(entry, list) or len(entry) != 2 or entry[0] != digest or not isinstance(entry[1], str):
        return None
    try:
        return json.loads(entry[1])
    except (ValueError, RecursionError):
        return None


def _keep(source: str, digest: str, value: Any) -> None:
    global _CHANGED
    if _REMEMBERED is not None and value is not None:
        _REMEMBERED[source] = [digest, json.dumps(value, separators=(",", ":"))]
        _CHANGED = True


def read_ahead(paths: Iterable[tuple[str | os.PathLike[str], str]]) -> list[tuple[str, str]]:
    """(name in messages, text) of each of the stack files ``paths`` (path, name in messages) that
    :func:`read_text` reads (the others are left to their own read, which says why); inside a
    :func:`remembered_values` block, each text is kept for that read to take, so that a fleet's files are read
    from the disk once."""
    out = []
    for path, source in paths:
        try:
            text = read_text(path, source)
        except (YAMLFileError, OSError):
            continue
        out.append((source, text))
        if _AHEAD is not None:
            _AHEAD[(os.fspath(path), source)] = text
    return out


def not_remembered(texts: Iterable[tuple[str, str]]) -> list[tuple[str, str]]:
    """Of the (stack file as messages name it, text) pairs ``texts``, those whose value the cache of the
    :func:`remembered_values` block does not hold (every one outside such a block)."""
    if _REMEMBERED is None:
        return list(texts)
    remembered = _REMEMBERED
    out = []
    for source, text in texts:
        entry = remembered.get(source)
        if not isinstance(entry, list) or len(entry) != 2 or entry[0] != _digest(text):
            out.append((source, text))
    return out


def plain_values(texts: Iterable[tuple[str, str]]) -> list[list[str]]:
    """``[source, digest, value as JSON]`` for each of the (stack file as messages name it, text) pairs
    ``texts`` whose value the fast reading of :func:`load_yaml` builds whole: what the cache keeps of it. A text
    it leaves to the strict reading (a broken file, one with a tag, a duplicate key, a merge key) has none and
    is read as before. Pure: for reading part of a fleet in another process."""
    out = []
    for source, text in texts:
        value = _fast_value(text, source)
        if value is not _UNREAD and value is not None:
            out.append([source, _digest(text), json.dumps(value, separators=(",", ":"))])
    return out


def before_reads(hook: Callable[[str], None] | None) -> None:
    """Inside a :func:`remembered_values` block, have ``hook`` called with each stack file's name (as messages
    name it) before a read looks for its value in the cache: for values another process is still handing in
    (:func:`remember`); ``None`` stops it. Outside a block: nothing."""
    global _BEFORE_READ
    if _REMEMBERED is not None:
        _BEFORE_READ = hook


def remember(values: Iterable[Any]) -> int:
    """Keep the ``[source, digest, value as JSON]`` entries :func:`plain_values` gave in the cache of the
    :func:`remembered_values` block, for its reads to take (nothing outside one); entries of another shape are
    left out. The number kept."""
    global _CHANGED
    if _REMEMBERED is None:
        return 0
    kept = 0
    for entry in values:
        if isinstance(entry, list) and len(entry) == 3 and all(isinstance(part, str) for part in entry):
            _REMEMBERED[entry[0]] = [entry[1], entry[2]]
            kept += 1
    _CHANGED = _CHANGED or kept > 0
    return kept


def read_text(path: str | os.PathLike[str], source: str | None = None, *, what: str = "stack file") -> str:
    """The UTF-8 text of the stack file (or project file) ``path``, read by :func:`nodefleet.files.read_text`;
    ``source`` names it in messages (default: the path), ``what`` the kind of file (the fleet registry)."""
    if _AHEAD and what == "stack file" and source is not None:
        ahead = _AHEAD.pop((os.fspath(path), source), None)
        if ahead is not None:
            return ahead
    try:
        return files.read_text(path, what=what, source=source)
    except FileProblem as exc:
        raise YAMLFileError(str(exc)) from None


def load_yaml(text: str, source: str, *, fast: bool = False) -> Any:
    """Parse YAML (or JSON, a subset of it) strictly: duplicate keys are errors, messages carry no content,
    anchors, aliases and nesting bounded (:func:`nodefleet.files.compose_bounded`).

    ``fast`` parses with libyaml first (for reading thousands of stack files) and builds plain values in one
    pass (:func:`_plain`); a file it cannot read, or holding anything else, is parsed again by the strict
    loader, so every value and message is the same."""
    if fast:
        if _BEFORE_READ is not None:
            _BEFORE_READ(source)
        digest = _digest(text) if _REMEMBERED is not None else ""
        kept = _kept(source, digest) if digest else None
        if kept is not None:
            return kept
        value = _fast_value(text, source)
        if value is not _UNREAD:
            if digest:
                _keep(source, digest, value)
            return value
    try:
        node, loader = files.compose_bounded(text, source, _StrictLoader)
        return files.construct(node, loader, source)
    except FileProblem as exc:
        raise YAMLFileError(str(exc)) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"
        problem = (exc.problem or exc.context or "invalid YAML").strip()
        cause = _cause(exc, problem)
        if cause:
            raise YAMLFileError(f"{source}: {where}: {cause}") from None
        hint = _hint(problem)
        raise YAMLFileError(f"{source}: {where}: {problem}{hint}") from None
    except yaml.YAMLError as exc:
        raise YAMLFileError(f"{source}: not valid YAML ({type(exc).__name__})") from None


_UNKNOWN_TAG = re.compile(r"could not determine a constructor for the tag '([^']*)'")


def _cause(exc: yaml.MarkedYAMLError, problem: str) -> str | None:
    """What is really wrong, for the errors whose PyYAML wording points elsewhere; None for the others."""
    if exc.context == "expected a single document in the stream":
        first = exc.context_mark.line + 1 if exc.context_mark is not None else 1
        return (
            f"a second YAML document starts here (after a '---' line; the first starts on line {first}); the "
            "Pulumi CLI and nodefleet read one document per file: remove the '---' and merge what follows into "
            "the first document, or move it to a file of its own"
        )
    tag = _UNKNOWN_TAG.search(problem)
    if tag:
        name = tag.group(1).replace("tag:yaml.org,2002:", "!!")
        what = (
            "asks YAML to build a Python object"
            if name.startswith("!!python")
            else "is a YAML type neither nodefleet nor the Pulumi CLI reads"
        )
        return (
            f"the tag '{name[:80]}' {what}; stack files hold plain values (text, numbers, true/false, lists, "
            "mappings): remove the tag"
        )
    return None


def _hint(problem: str) -> str:
    if "'\\t'" in problem or "\\t" in problem:
        return "; YAML indents with spaces, never tabs: replace the tabs with spaces"
    if "appears twice" in problem or " is read as " in problem:
        return ""
    return "; fix the YAML syntax there (indentation, a missing ':' or an unclosed quote or bracket)"
