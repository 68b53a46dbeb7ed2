"""A fleet upgrade's step made on a stack file's text, where the file is in the plain form the round trip keeps.

:func:`cli.upgrade.stage_moves` edits a stack file through ruamel.yaml's round trip (pure Python: about 25 ms to
load and 10 to dump a stack file, twice a stack in a plan; minutes for a fleet of 10,000). The same edit is made
here on the text, from the positions libyaml's parser (C) reports: a scalar replaced, a marked pin inserted after
a key, a marked pin's line removed. It is made only where the result is byte for byte what the round trip writes,
and that is so when the file is in the form ruamel writes itself:

- one block-style document: no flow collections, anchors, aliases, tags, directives or ``---``/``...`` markers;
- every line a key (``key: value``, ``key:`` before its nested block), a sequence item (``- value``, ``- key: …``),
  a comment or empty; each scalar on one line, plain or quoted as ruamel writes it back; one space after each
  ``:`` and ``-``; indentation the one the round trip writes with (the mapping indent, the sequence indent and
  the dash offset :func:`cli.upgrade._yaml` reads from the file);
- plain scalars that YAML 1.1 (libyaml) and YAML 1.2 (ruamel) read alike: strings, decimal integers, ``true``,
  ``false``, and the empty value; printable ASCII;
- around every place an edit touches: no comment or empty line (ruamel attaches them to the keys around, and
  moves or drops them with the keys), the hold mark only as a pin's own end-of-line comment.

Anything else (and every refusal :func:`cli.upgrade.stage_moves` makes) returns None, and the caller takes the
round trip, which writes what it always wrote. ``tests/fleet/test_upgrade_text.py`` holds the two to the same
bytes on stack files with and without comments, quoting, flow style, anchors and other layouts.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import yaml

_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
#: A YAML 1.1 resolver (libyaml's schema), asked how a plain scalar reads.
_RESOLVER = yaml.resolver.Resolver()
_INT = re.compile(r"-?(?:0|[1-9][0-9]*)")
#: What YAML 1.2 (ruamel) reads as a number that YAML 1.1 reads as a string.
_OCTAL_12 = re.compile(r"[-+]?0o[0-7_]+")
_PRINTABLE = re.compile(r"[ -~]*")
_COMMENT = re.compile(r" +#.*")
#: A string ruamel writes plain, as it is (what an edit writes: releases, release images).
_PLAIN_NEW = re.compile(r"[A-Za-z0-9][A-Za-z0-9._/@+=-]*(?::[A-Za-z0-9._/@+=-]+)*")
_BREAKS = ("\r", "\t", "\x85", "\u2028", "\u2029", "\ufeff")


class NotPlain(Exception):
    """The text is not in the form this module edits: the round trip edits it."""


@dataclass(eq=False, slots=True)
class Scalar:
    value: Any
    line: int
    start: int
    end: int
    #: "" plain, "'" or '"'.
    style: str


@dataclass(eq=False, slots=True)
class Block:
    """A block mapping (``keys``) or sequence (``keys`` empty): its entries and the lines it spans."""

    column: int
    first: int
    last: int = -1
    keys: list[Scalar] = field(default_factory=list)
    values: list[Any] = field(default_factory=list)
    #: A mapping whose first key is on its sequence item's ``- `` line.
    dashed: bool = False

    @property
    def is_mapping(self) -> bool:
        return bool(self.keys)

    def index(self, key: str) -> int:
        for i, k in enumerate(self.keys):
            if k.value == key:
                return i
        return -1

    def node(self, key: str) -> Any:
        i = self.index(key)
        return self.values[i] if i >= 0 else None

    def scalar(self, key: str) -> Any:
        """The key's scalar value (None when absent), as a message shows it; a collection is not shown here."""
        found = self.node(key)
        if found is not None and not isinstance(found, Scalar):
            raise NotPlain
        return found.value if found is not None else None

    def get(self, key: str) -> Any:
        """The key's value as the round trip's mapping gives it: a scalar's value, a block itself, or None."""
        found = self.node(key)
        return found.value if isinstance(found, Scalar) else found


@dataclass(eq=False, slots=True)
class Flow:
    """A flow sequence of scalars (``[a, b]``) or an empty flow mapping (``{}``), on its key's line."""

    items: list[Scalar]

    def __bool__(self) -> bool:
        return bool(self.items)


class Document:
    """A stack file's text in the plain form, with what is where."""

    def __init__(self, text: str, mapping_indent: int, sequence: int, offset: int) -> None:
        if not text.endswith("\n") or any(c in text for c in _BREAKS) or sequence - offset != 2:
            raise NotPlain
        self.lines = text.split("\n")[:-1]
        self.indent, self.offset = mapping_indent, offset
        self.indent_settings = (mapping_indent, sequence, offset)
        self.claimed: dict[int, str] = {}  # line → its end-of-line comment ("" none)
        try:
            self.events = _events(text)
        except yaml.YAMLError:
            raise NotPlain from None
        self.position = 0
        self._expect(yaml.StreamStartEvent)
        start = self._expect(yaml.DocumentStartEvent)
        if start.explicit or start.version or start.tags:
            raise NotPlain
        first = self._peek()
        if not isinstance(first, yaml.MappingStartEvent):
            raise NotPlain
        self.root = self._mapping(0, _line(first), dashed=False)
        if "" in self.lines[: self.root.first]:
            raise NotPlain  # ruamel drops empty lines before the first key
        end = self._expect(yaml.DocumentEndEvent)
        if end.explicit:
            raise NotPlain
        self._expect(yaml.StreamEndEvent)
        for number, line in enumerate(self.lines):
            if number not in self.claimed and line and not line.lstrip(" ").startswith("#"):
                raise NotPlain
        self._clear()

    def _clear(self) -> None:
        self.replaced: dict[int, str] = {}
        self.inserted: dict[int, list[str]] = {}
        self.removed: set[int] = set()
        self.operations: list[tuple[Any, ...]] = []

    # --- reading -------------------------------------------------------------------------------------------

    def _peek(self) -> Any:
        return self.events[self.position]

    def _expect(self, kind: type) -> Any:
        event = self.events[self.position]
        if not isinstance(event, kind):
            raise NotPlain
        self.position += 1
        return event

    def _claim(self, line: int, rest: str) -> None:
        if line in self.claimed or (rest and not _COMMENT.fullmatch(rest)):
            raise NotPlain
        self.claimed[line] = rest

    def _mapping(self, column: int, line: int, *, dashed: bool) -> Block:
        start = self._expect(yaml.MappingStartEvent)
        if start.anchor or start.flow_style or not start.implicit:
            raise NotPlain
        block = Block(column, line, dashed=dashed)
        while not isinstance(self._peek(), yaml.MappingEndEvent):
            key = self._scalar(self._expect(yaml.ScalarEvent))
            if key.style or not isinstance(key.value, str) or key.start != column or key.line <= block.last:
                raise NotPlain
            text = self.lines[key.line]
            if not block.keys and key.line != line:
                raise NotPlain
            if not block.keys and dashed:
                if text[: column - 2].strip(" ") or text[column - 2 : column] != "- ":
                    raise NotPlain
            elif text[:column].strip(" "):
                raise NotPlain
            if text[key.end : key.end + 1] != ":":
                raise NotPlain
            block.keys.append(key)
            value = self._value(key)
            block.values.append(value)
            block.last = value.last if isinstance(value, Block) else key.line
        self.position += 1
        if not block.keys:
            raise NotPlain
        return block

    def _value(self, key: Scalar) -> Any:
        event = self._peek()
        text = self.lines[key.line]
        colon = key.end + 1
        if isinstance(event, yaml.ScalarEvent):
            self.position += 1
            value = self._scalar(event, empty=True)
            if value.value is None:
                value.line = key.line
                self._claim(key.line, text[colon:])
                return value
            if value.line != key.line or value.start != colon + 1 or text[colon] != " ":
                raise NotPlain
            self._claim(key.line, text[value.end :])
            return value
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)) and event.flow_style:
            return self._flow(key, text, colon)
        self._claim(key.line, text[colon:])
        if isinstance(event, yaml.MappingStartEvent):
            line = _line(event)
            if line <= key.line:
                raise NotPlain
            return self._mapping(key.start + self.indent, line, dashed=False)
        if isinstance(event, yaml.SequenceStartEvent):
            return self._sequence(key.start + self.offset, key.line)
        raise NotPlain

    def _flow(self, key: Scalar, text: str, colon: int) -> Flow:
        start = self.events[self.position]
        self.position += 1
        if (
            start.anchor
            or start.tag
            or start.start_mark.line != key.line
            or start.start_mark.column != colon + 1
        ):
            raise NotPlain
        items = []
        end_kind = (
            yaml.SequenceEndEvent if isinstance(start, yaml.SequenceStartEvent) else yaml.MappingEndEvent
        )
        while not isinstance(self._peek(), end_kind):
            if end_kind is yaml.MappingEndEvent:
                raise NotPlain  # a flow mapping with keys: how ruamel spaces it is not held here
            items.append(self._scalar(self._expect(yaml.ScalarEvent)))
        end = self._expect(end_kind)
        raws = [text[i.start : i.end] for i in items]
        brackets = "[]" if end_kind is yaml.SequenceEndEvent else "{}"
        if (
            text[colon] != " "
            or end.end_mark.line != key.line
            or text[colon + 1 : end.end_mark.column] != brackets[0] + ", ".join(raws) + brackets[1]
            or any(i.line != key.line for i in items)
        ):
            raise NotPlain
        self._claim(key.line, text[end.end_mark.column :])
        return Flow(items)

    def _sequence(self, dash: int, after: int) -> Block:
        start = self._expect(yaml.SequenceStartEvent)
        if start.anchor or start.flow_style or not start.implicit:
            raise NotPlain
        block = Block(dash, start.start_mark.line)
        previous = after
        while not isinstance(self._peek(), yaml.SequenceEndEvent):
            event = self._peek()
            line = event.start_mark.line
            text = self.lines[line] if line < len(self.lines) else ""
            if (
                line <= previous
                or event.start_mark.column != dash + 2
                or text[:dash].strip(" ")
                or text[dash : dash + 2] != "- "
            ):
                raise NotPlain
            if isinstance(event, yaml.ScalarEvent):
                self.position += 1
                item: Any = self._scalar(event)
                self._claim(line, text[item.end :])
                previous = line
            elif isinstance(event, yaml.MappingStartEvent):
                item = self._mapping(dash + 2, line, dashed=True)
                previous = item.last
            else:
                raise NotPlain
            block.values.append(item)
        self.position += 1
        if not block.values:
            raise NotPlain
        block.last = previous
        return block

    def _scalar(self, event: Any, *, empty: bool = False) -> Scalar:
        if event.anchor or event.tag or not any(event.implicit):
            raise NotPlain
        start, end = event.start_mark, event.end_mark
        style = event.style or ""
        raw = event.value
        if raw == "" and style == "" and empty:
            return Scalar(None, start.line, start.column, start.column, "")
        if start.line != end.line or not _PRINTABLE.fullmatch(raw):
            raise NotPlain
        text = self.lines[start.line][start.column : end.column]
        if style == "":
            value = _plain(raw)
            if text != raw:
                raise NotPlain
        elif style == "'":
            value = raw
            if text != "'" + raw.replace("'", "''") + "'":
                raise NotPlain
        elif style == '"':
            value = raw
            if "\\" in raw or '"' in raw or text != f'"{raw}"':
                raise NotPlain
        else:
            raise NotPlain
        return Scalar(value, start.line, start.column, end.column, style)

    # --- editing -------------------------------------------------------------------------------------------

    def _quiet(self, block: Block) -> bool:
        """No comment or empty line in ``block``'s lines, nor right after them (ruamel would attach one to a
        key of it, and keep it with that key or align a new comment with it)."""
        for number in range(block.first, min(block.last + 2, len(self.lines))):
            if self.claimed.get(number, None) != "":
                return False
        return True

    def set_scalar(self, block: Block, key: str, value: str) -> None:
        node = block.node(key)
        if not isinstance(node, Scalar) or node.value is None or not _new_plain(value):
            raise NotPlain
        # ruamel keeps a quoted string's quotes when a key is set to a new string (CommentedMap.__setitem__).
        raw = node.style + value + node.style
        line = self.replaced.get(node.line, self.lines[node.line])
        if self.claimed[node.line] and len(raw) != node.end - node.start:
            raise NotPlain
        self.replaced[node.line] = line[: node.start] + raw + line[node.end :]
        self.operations.append((node, value, raw))

    def insert_after(self, block: Block, after: str, key: str, value: str, comment: str) -> None:
        node = block.node(after)
        if (
            not isinstance(node, Scalar)
            or block.index(key) >= 0
            or not _new_plain(value)
            or not self._quiet(block)
            or node.line in self.inserted
        ):
            raise NotPlain
        self.inserted[node.line] = [f"{' ' * block.column}{key}: {value}  # {comment}"]
        self.operations.append((block, after, key, value, comment))

    def remove(self, block: Block, key: str) -> None:
        node = block.node(key)
        if not isinstance(node, Scalar) or (block.dashed and block.index(key) == 0):
            raise NotPlain
        after = node.line + 1
        if after < len(self.lines) and after not in self.claimed:
            raise NotPlain
        self.removed.add(node.line)
        self.operations.append((block, key))

    def eol_comment(self, block: Block, key: str) -> str:
        node = block.node(key)
        return self.claimed.get(node.line, "") if isinstance(node, Scalar) else ""

    def text(self) -> str:
        out = []
        for number, line in enumerate(self.lines):
            if number not in self.removed:
                out.append(self.replaced.get(number, line))
            out += self.inserted.get(number, [])
        return "\n".join(out) + "\n"

    def commit(self) -> None:
        """The document becomes the text :meth:`text` writes, without reading it again: the lines renumbered,
        the entries inserted and removed, the scalars replaced (what the next step of the plan edits)."""
        lines: list[str] = []
        moved: dict[int, int] = {}
        claimed: dict[int, str] = {}
        for number, line in enumerate(self.lines):
            if number in self.removed:
                moved[number] = len(lines) - 1
            else:
                moved[number] = len(lines)
                if number in self.claimed:
                    claimed[len(lines)] = self.claimed[number]
                lines.append(self.replaced.get(number, line))
            for new in self.inserted.get(number, []):
                claimed[len(lines)] = new[new.index("  # ") :]
                lines.append(new)
        for operation in self.operations:
            if len(operation) == 3:
                node, value, raw = operation
                node.value, node.end = value, node.start + len(raw)
            elif len(operation) == 2:
                block, key = operation
                i = block.index(key)
                del block.keys[i], block.values[i]
            else:
                block, after, key, value, _ = operation
                i = block.index(after)
                line = block.keys[i].line
                column = block.column
                block.keys.insert(i + 1, Scalar(key, -1 - line, column, column + len(key), ""))
                start = column + len(key) + 2
                block.values.insert(i + 1, Scalar(value, -1 - line, start, start + len(value), ""))
        _renumber(self.root, moved)
        self.lines, self.claimed = lines, claimed
        self._clear()


def _renumber(block: Block, moved: dict[int, int]) -> int:
    """Every line of ``block`` as :meth:`Document.commit` moved it (an inserted entry, at ``-1 - line``, goes
    right after that line); its last line."""
    block.first = last = moved[block.first]
    for i, value in enumerate(block.values):
        if block.keys:
            key = block.keys[i]
            key.line = last = _moved(key.line, moved)
        if isinstance(value, Block):
            last = _renumber(value, moved)
        elif isinstance(value, Flow):
            for item in value.items:
                item.line = moved[item.line]
        else:
            value.line = last = _moved(value.line, moved)
    block.last = last
    return last


def _moved(line: int, moved: dict[int, int]) -> int:
    return moved[line] if line >= 0 else moved[-1 - line] + 1


def _line(event: Any) -> int:
    """The line an event starts on (libyaml gives every event its marks)."""
    return int(event.start_mark.line)


def _events(text: str) -> list[Any]:
    loader = _LOADER(text)
    out: list[Any] = []
    append, get, end, alias = out.append, loader.get_event, yaml.StreamEndEvent, yaml.AliasEvent
    try:
        while True:
            event = get()
            append(event)
            kind = type(event)
            if kind is end:
                return out
            if kind is alias:
                raise NotPlain
    finally:
        loader.dispose()


def _plain(raw: str) -> Any:
    """A plain scalar's value, where YAML 1.1 and 1.2 read it alike and ruamel writes it back as it is."""
    found = _PLAIN_SEEN.get(raw, _PLAIN_SEEN)
    if found is _PLAIN_SEEN:
        try:
            found = _PLAIN_SEEN[raw] = _plain_value(raw)
        except NotPlain:
            found = _PLAIN_SEEN[raw] = NotPlain
    if found is NotPlain:
        raise NotPlain
    return found


#: :func:`_plain` of the texts seen so far (keys, names, releases repeat across a fleet's stack files).
_PLAIN_SEEN: dict[str, Any] = {}


def _plain_value(raw: str) -> Any:
    if raw in ("true", "false"):
        return raw == "true"
    if _INT.fullmatch(raw):
        return int(raw)
    tag = _RESOLVER.resolve(yaml.ScalarNode, raw, (True, False))  # type: ignore[no-untyped-call]
    if tag != "tag:yaml.org,2002:str" or _OCTAL_12.fullmatch(raw):
        raise NotPlain
    return raw


def _new_plain(value: str) -> bool:
    if not _PLAIN_NEW.fullmatch(value):
        return False
    try:
        return isinstance(_plain(value), str)
    except NotPlain:
        return False


# --- the step, as cli.upgrade.stage_moves makes it ----------------------------------------------------------


def _clusters(doc: Document) -> list[Block]:
    config = doc.root.get("config")
    fleet = config.get("nodefleet:fleet") if isinstance(config, Block) and config.is_mapping else None
    if not isinstance(fleet, Block) or not fleet.is_mapping:
        raise NotPlain
    clusters = fleet.get("clusters")
    if not isinstance(clusters, Block) and not clusters:
        return []
    if not isinstance(clusters, Block) or clusters.is_mapping:
        raise NotPlain
    return [c for c in clusters.values if isinstance(c, Block) and c.is_mapping]


def _cluster(doc: Document, kind: str, name: str) -> Block:
    for cluster in _clusters(doc):
        if (
            cluster.get("name") == name
            and (cluster.get("kind") if cluster.index("kind") >= 0 else "standalone") == kind
        ):
            return cluster
    raise NotPlain


def _items(block: Block, key: str) -> list[Block]:
    found = block.get(key)
    if not isinstance(found, Block) and not found:
        return []
    if not isinstance(found, Block) or found.is_mapping:
        raise NotPlain
    if not all(isinstance(item, Block) and item.is_mapping for item in found.values):
        raise NotPlain
    return list(found.values)


def _followers(cluster: Block) -> list[tuple[Block, str, str]]:
    found = [(np, "release", f"NodePool {np.scalar('name')}") for np in _items(cluster, "nodePools")]
    auto = cluster.get("autoNode")
    if isinstance(auto, Block) and auto.is_mapping:
        found += [(nc, "version", f"node class {nc.scalar('name')}") for nc in _items(auto, "nodeClasses")]
    elif auto:
        raise NotPlain
    return found


def _held(doc: Document, mapping: Block, key: str, mark: str) -> bool:
    node = mapping.node(key)
    if node is None:
        return False
    if not isinstance(node, Scalar):
        raise NotPlain
    return mark in doc.eol_comment(mapping, key)


def _step_one(doc: Document, cluster: Block, target: str, hold_mark: str) -> list[str]:
    from nodefleet.bootimages.versions import parse_ocp

    release = cluster.node("release")
    if not isinstance(release, Scalar) or release.value is None:
        raise NotPlain
    current = str(release.value)
    try:
        if parse_ocp(target) < parse_ocp(current):
            raise NotPlain
    except Exception:
        raise NotPlain from None
    changes = [f"HostedCluster {cluster.scalar('name')}: release {current} → {target}"]
    image = cluster.get("releaseImage")
    if isinstance(image, Block):
        raise NotPlain
    if isinstance(image, Flow):
        raise NotPlain
    if image:
        if current not in str(image):
            raise NotPlain
        doc.set_scalar(cluster, "releaseImage", str(image).replace(current, target))
        changes.append(f"releaseImage → {str(image).replace(current, target)}")
    doc.set_scalar(cluster, "release", target)
    for mapping, key, label in _followers(cluster):
        pinned = mapping.get(key)
        if isinstance(pinned, (Block, Flow)):
            raise NotPlain
        if pinned:
            changes.append(f"{label}: pinned at {pinned} by you: left alone")
            continue
        if mapping.index("name") < 0:
            raise NotPlain
        doc.insert_after(
            mapping,
            "name",
            key,
            current,
            f"{hold_mark} at {current} until the control plane completes {target}",
        )
        changes.append(f"{label}: held at {current} ({key}) until the control plane completes {target}")
    return changes


def _step_two(doc: Document, cluster: Block, hold_mark: str) -> list[str]:
    changes = []
    for mapping, key, label in _followers(cluster):
        if _held(doc, mapping, key, hold_mark):
            changes.append(
                f"{label}: {key} {mapping.get(key)} removed: follows the control plane at {cluster.scalar('release')}"
            )
            doc.remove(mapping, key)
    return changes


def _document(text: str, indents: tuple[int, int, int], hold_mark: str) -> Document:
    doc = Document(text, *indents)
    # The hold mark counts only as a pin's own end-of-line comment here; on a comment line ruamel would attach it
    # to the key before it.
    for number, line in enumerate(doc.lines):
        if hold_mark in line and number not in doc.claimed:
            raise NotPlain
    return doc


def parse(text: str, indents: tuple[int, int, int], hold_mark: str) -> Document | None:
    """The document of ``text``, or None where it is not in the plain form (the round trip edits it).
    ``indents``: the mapping indent, sequence indent and dash offset the round trip writes with."""
    try:
        return _document(text, indents, hold_mark)
    except NotPlain:
        return None


def stage_moves(
    text: str,
    indents: tuple[int, int, int],
    moves: Sequence[Any],
    phase: str,
    *,
    hold_mark: str,
    keep_stream_mark: str,
) -> tuple[str, list[str]] | None:
    """:func:`cli.upgrade.stage_moves` of ``text`` and the dump that follows it: (the text after the step, what
    changed), or None where the round trip makes the step."""
    doc = parse(text, indents, hold_mark)
    return (
        None
        if doc is None
        else stage(doc, moves, phase, hold_mark=hold_mark, keep_stream_mark=keep_stream_mark)
    )


def stage(
    doc: Document, moves: Sequence[Any], phase: str, *, hold_mark: str, keep_stream_mark: str
) -> tuple[str, list[str]] | None:
    """The step on ``doc``: (the text after it, what changed), and ``doc`` that text's document once
    :meth:`Document.commit` is called; or None where the round trip makes the step (``doc`` is then spent)."""
    try:
        changes: list[str] = []
        for move in moves:
            cluster = _cluster(doc, move.kind, move.cluster)
            if move.kind == "hosted":
                if phase == "control-plane" and not move.nodes_only:
                    lines = _step_one(doc, cluster, move.target, hold_mark)
                elif phase == "nodes":
                    lines = _step_two(doc, cluster, hold_mark)
                else:
                    lines = []
            elif phase == "nodes":
                lines = [
                    f"release {cluster.scalar('release')} → {move.target} (its cluster version operator completed it)"
                ]
                doc.set_scalar(cluster, "release", move.target)
                if move.keep_stream:
                    doc.insert_after(cluster, "release", "osImageStream", move.keep_stream, keep_stream_mark)
                    lines.append(
                        f"osImageStream: {move.keep_stream} written: the OS stream the cluster keeps"
                    )
            else:
                lines = []
            changes += [f"{move.cluster}: {line}" for line in lines]
        return doc.text(), changes
    except NotPlain:
        return None


def hold_marks(text: str, indents: tuple[int, int, int], hold_mark: str) -> frozenset[tuple[str, str]] | None:
    """:func:`cli.upgrade.hold_marks` of ``text``, or None where the round trip reads them."""
    doc = parse(text, indents, hold_mark)
    return None if doc is None else held(doc, hold_mark)


def held(doc: Document, hold_mark: str) -> frozenset[tuple[str, str]] | None:
    """:func:`cli.upgrade.hold_marks` of ``doc``, or None where the round trip reads them."""
    try:
        out = set()
        for cluster in _clusters(doc):
            if cluster.get("kind") == "hosted":
                for mapping, key, label in _followers(cluster):
                    if _held(doc, mapping, key, hold_mark):
                        out.add((str(cluster.scalar("name")), label))
        return frozenset(out)
    except NotPlain:
        return None
