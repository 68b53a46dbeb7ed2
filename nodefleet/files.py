"""Reading every file nodefleet reads, through one guarded reader; and the two checks on what it writes.

Why: a named pipe nobody writes to, a device (``/dev/zero``, ``/dev/tty``) or a socket given where a file was
expected made commands hang forever; a symlink to ``/proc/self/environ`` was parsed as a stack file; a
UTF-16 file was called binary; a NUL byte deep in a file got a parser's class name instead of a place; a
YAML merge-key bomb hung ``check``, and 20,000-deep YAML or 100,000-deep JSON raised ``RecursionError``;
a kubeconfig given inline was printed in an error message. Part of the root vocabulary: it imports nothing
of nodefleet, so catalogs, stack files, render records, state files and the command line share it.

The API (everything raises :class:`FileProblem`, one line: the file, what is wrong, the fix; the message
never quotes the file's content):

* :func:`read_text` ``(path, what=..., limit=..., source=...)``: the UTF-8 text of a regular file (a symlink
  is followed only to one; never a pipe, device, socket, directory or ``/proc``/``/sys`` file), at most
  ``limit`` bytes (:data:`MAX_FILE_BYTES` unless the kind has its own, e.g. :data:`KUBECONFIG_BYTES`).
  :func:`read_bytes` is the same without decoding, :func:`decode_text` the decoding alone (for text from
  standard input or a process): a UTF-8 byte order mark is dropped; UTF-16 and UTF-32 are named as such;
  a NUL byte or a byte that is not UTF-8 is reported by line and column.
* :func:`load_yaml` ``(text, source, loader=...)``: one YAML document, with anchors and aliases (merge keys
  included) expanding to at most :data:`MAX_EXPANDED_VALUES` values and nesting at most :data:`MAX_DEPTH`
  deep, aliases counted (the limits are checked on the parsed nodes, before anything is built); parser
  errors by line and column. ``loader`` is a subclass of :class:`BoundedLoader` (the stack file's strict
  one) or of :class:`FastBoundedLoader` (libyaml's parser); the default is YAML's safe loader, bounded.
* :func:`load_json` ``(text, source)``: JSON, nesting at most :data:`MAX_DEPTH` deep, ``NaN`` and
  ``Infinity`` refused (not JSON), errors by line and column.
* :func:`redact` ``(text)``: text with credentials replaced by ``***``: the user and token of a URL, bearer
  and basic ``Authorization`` values, kubeconfig ``token``/``password``/``client-key-data`` and other
  credential fields, private keys in PEM, JSON web tokens and OpenShift ``sha256~`` tokens, AWS access key
  ids, secret keys and session tokens in every form the AWS CLI and instance metadata print them, ECR and EKS
  tokens, Vault, Slack and Git forge tokens; for anything printed or stored that may hold what a user or a
  process wrote. :func:`url_without_credentials` for a URL.
* :func:`looks_like_file_content` ``(value)``: whether a value given as a path is a file's content (an
  inline kubeconfig, a PEM block), so its message can say so without echoing it.

Where an output may go is :mod:`nodefleet.stackfile.paths` (``output_folder``, ``output_file``).
"""

from __future__ import annotations

import errno
import json
import os
import re
import stat
from typing import Any

import yaml

__all__ = [
    "EXPORT_BYTES",
    "KUBECONFIG_BYTES",
    "MAX_DEPTH",
    "MAX_EXPANDED_VALUES",
    "MAX_FILE_BYTES",
    "SMALL_FILE_BYTES",
    "BoundedLoader",
    "FastBoundedLoader",
    "FileKindError",
    "FileProblem",
    "FileTooLargeError",
    "compose_bounded",
    "construct",
    "decode_text",
    "load_json",
    "load_yaml",
    "load_yaml_documents",
    "looks_like_file_content",
    "read_bytes",
    "read_regular_file",
    "read_text",
    "redact",
    "url_without_credentials",
]

#: The largest input file nodefleet reads (stack files, catalogs, render records, state files). A 100-cluster
#: stack file is well under 1 MiB and a boot image catalog under 1 MiB; a larger file is not one of them, and
#: reading an endless one (``/dev/zero``) would never end.
MAX_FILE_BYTES = 16 * 1024 * 1024
#: A kubeconfig: a few KiB per cluster, certificates included; 4 MiB holds hundreds of clusters.
KUBECONFIG_BYTES = 4 * 1024 * 1024
#: Small settings files (``--policy-config``): a few KiB.
SMALL_FILE_BYTES = 1024 * 1024
#: A ``pulumi stack export``: the state of every resource of a stack, tens of MiB for the largest fleets.
EXPORT_BYTES = 256 * 1024 * 1024

#: The most values a YAML document may expand to through anchors and aliases. A 100-cluster stack file is
#: about 10,000 and the largest shipped CRD about 60,000; an alias bomb ("billion laughs", merge keys that
#: merge a mapping many times over) is billions, and everything that walks the value afterwards would hang.
#: The Pulumi CLI's parser (yaml.v3) refuses "excessive aliasing" too.
MAX_EXPANDED_VALUES = 1_000_000
#: The deepest nesting nodefleet reads. The deepest real file it reads is a CRD's schema (30 levels); the
#: parsers and everything that walks a value recurse once or more per level, and Python's stack holds 1,000.
MAX_DEPTH = 100


class FileKindError(OSError):
    """A path that is not a regular file (a named pipe, a device, a socket): reading it may block forever."""

    def __init__(self, kind: str) -> None:
        super().__init__(f"is {kind}, not a regular file")
        self.kind = kind


class FileTooLargeError(OSError):
    """A regular file over :data:`MAX_FILE_BYTES` (or the limit asked for)."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"is {size:,} bytes or more (at most {limit:,})")
        self.size = size
        self.limit = limit


class FileProblem(ValueError):
    """A file (or text) that cannot be read or parsed: ``source: problem; fix``, on one line.

    ``problem`` and ``fix`` are kept apart so a caller can put its own fix (``point catalog at…``) after the
    problem; neither quotes the file's content.
    """

    def __init__(self, source: str, problem: str, fix: str = "", *, syntax: bool = False) -> None:
        super().__init__(f"{source}: {problem}" + (f"; {fix}" if fix else ""))
        self.source = source
        self.problem = problem
        self.fix = fix
        #: The text is not valid YAML or JSON (rather than unreadable, or beyond a bound).
        self.syntax = syntax


def _kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "a named pipe (FIFO)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a file"


def _pseudo_devices() -> dict[int, str]:
    """The devices of the kernel's pseudo file systems: their "files" are generated on reading (``/proc/self/
    environ`` holds the environment, secrets included), report a size of 0 and are not user input."""
    found = {}
    for mount in ("/proc", "/sys"):
        try:
            found[os.stat(mount).st_dev] = mount
        except OSError:
            continue
    return found


def read_regular_file(path: str | os.PathLike[str], limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of ``path`` if it is a regular file of at most ``limit`` bytes (symlinks followed).

    Opened without blocking, so a named pipe nobody writes to cannot hang the command, and judged by what
    was opened (``fstat``), so a path swapped after a check cannot slip a device in; a file of ``/proc`` or
    ``/sys`` is not a regular file here. Raises :class:`FileKindError`, :class:`FileTooLargeError`,
    ``IsADirectoryError`` or the ``OSError`` of the open (``FileNotFoundError``…); ``ValueError`` for a path
    with a NUL character.
    """
    flags = (
        os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
    )
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a Unix socket cannot be opened as a file
            raise FileKindError("a socket") from None
        raise
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise IsADirectoryError(errno.EISDIR, "Is a directory", os.fspath(path))
        if not stat.S_ISREG(info.st_mode):
            raise FileKindError(_kind(info.st_mode))
        pseudo = _pseudo_devices().get(info.st_dev)
        if pseudo is not None:
            raise FileKindError(f"a file of the kernel's {pseudo} (generated on reading)")
        if info.st_size > limit:
            raise FileTooLargeError(info.st_size, limit)
        chunks: list[bytes] = []
        total = 0
        while True:  # the size may lie (a file still being written): read to the limit, no further
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise FileTooLargeError(total, limit)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _the(what: str) -> str:
    return f"the {what}" if what else "the file"


def read_bytes(
    path: str | os.PathLike[str], *, what: str = "", limit: int = MAX_FILE_BYTES, source: str | None = None
) -> bytes:
    """:func:`read_regular_file`, every failure a :class:`FileProblem` naming ``source`` (default: the path).

    ``what`` names the kind of file in the fix ("kubeconfig", "upgrade state file").
    """
    name = source if source is not None else os.fspath(path)
    the = _the(what)
    try:
        return read_regular_file(path, limit)
    except FileNotFoundError:
        raise FileProblem(name, "no such file", f"check the path of {the}") from None
    except IsADirectoryError:
        raise FileProblem(name, "is a directory, not a file", f"give the path of {the} itself") from None
    except FileKindError as exc:
        why = " (reading a pipe or device can block forever)" if "kernel" not in exc.kind else ""
        raise FileProblem(
            name,
            f"{exc}; nodefleet reads only regular files{why}",
            f"save {the} as a regular file and give its path",
        ) from None
    except FileTooLargeError as exc:
        raise FileProblem(
            name,
            f"{exc}, larger than any {what or 'file'} nodefleet reads",
            f"check that the right file was given{' as ' + the if what else ''}",
        ) from None
    except NotADirectoryError:
        raise FileProblem(
            name, "runs through a file where a folder must be", f"check the path of {the}"
        ) from None
    except OSError as exc:
        reason = exc.strerror or type(exc).__name__
        raise FileProblem(name, f"cannot be read ({reason})", "check the path and its permissions") from None
    except ValueError:  # the OS refuses a path with a NUL character before any file is looked at
        raise FileProblem(
            repr(name).replace("\\x00", "\\0"),
            "is not a usable path (it holds a NUL character)",
            f"give the path of {the}",
        ) from None


def read_text(
    path: str | os.PathLike[str], *, what: str = "", limit: int = MAX_FILE_BYTES, source: str | None = None
) -> str:
    """The UTF-8 text of the regular file ``path`` (:func:`read_bytes`, then :func:`decode_text`)."""
    name = source if source is not None else os.fspath(path)
    return decode_text(read_bytes(path, what=what, limit=limit, source=name), name, what=what)


#: Compressed files and archives, by their first bytes: named, with the command that unpacks them.
_MAGIC = (
    (b"\x1f\x8b", "gzip-compressed", "gunzip -k"),
    (b"\xfd7zXZ\x00", "xz-compressed", "unxz -k"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed", "unzstd"),
    (b"BZh", "bzip2-compressed", "bunzip2 -k"),
    (b"PK\x03\x04", "a zip archive", "unzip"),
)

#: The byte patterns of the first four bytes that tell UTF-16 and UTF-32 from UTF-8, with or without a byte
#: order mark (the YAML 1.2 specification, section 5.2, "Character Encodings"; JSON's RFC 4627 section 3),
#: UTF-16 without one by two ASCII characters, so a binary file that starts with one NUL is not taken for it.
_WIDE = (
    (re.compile(rb"^\x00\x00\xfe\xff|^\x00\x00\x00[^\x00]", re.S), "UTF-32 (big-endian)", "UTF-32BE"),
    (re.compile(rb"^\xff\xfe\x00\x00|^[^\x00]\x00\x00\x00", re.S), "UTF-32 (little-endian)", "UTF-32LE"),
    (re.compile(rb"^\xfe\xff|^\x00[^\x00]\x00[^\x00]", re.S), "UTF-16 (big-endian)", "UTF-16BE"),
    (re.compile(rb"^\xff\xfe|^[^\x00]\x00[^\x00]\x00", re.S), "UTF-16 (little-endian)", "UTF-16LE"),
)
_UTF8_BOM = b"\xef\xbb\xbf"


def _place(data: bytes, offset: int) -> str:
    """``line L, column C`` of byte ``offset`` (columns count characters, as editors do)."""
    line_start = data.rfind(b"\n", 0, offset) + 1
    line = data.count(b"\n", 0, offset) + 1
    column = len(data[line_start:offset].decode("utf-8", "replace")) + 1
    return f"line {line}, column {column}"


def decode_text(data: bytes, source: str, *, what: str = "") -> str:
    """``data`` as UTF-8 text (a leading byte order mark dropped), or a :class:`FileProblem` that says why
    not: compressed, UTF-16 or UTF-32 (by name), a NUL byte or a byte that is not UTF-8 (by line and column).
    """
    the = _the(what)
    for magic, kind, tool in _MAGIC:
        if data.startswith(magic):
            raise FileProblem(
                source,
                f"is {kind}, not text",
                f"unpack it first (`{tool} {source}`) and give the unpacked file",
            )
    for pattern, encoding, codec in _WIDE:
        if pattern.match(data[:4]):
            raise FileProblem(
                source,
                f"is {encoding} text; nodefleet reads UTF-8",
                f"save it as UTF-8 (e.g. `iconv -f {codec} -t UTF-8 {source} > {source}.utf8`)",
            )
    if data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    nul = data.find(b"\x00")
    if nul >= 0:
        raise FileProblem(
            source,
            f"{_place(data, nul)}: a NUL byte, which text never holds: a binary file, or one cut or corrupted "
            "there",
            f"check that the right file was given{' as ' + the if what else ''}, and save it again as text",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise FileProblem(
            source,
            f"{_place(data, exc.start)}: byte 0x{data[exc.start]:02x} is not UTF-8 (the file is in another "
            "encoding, e.g. Latin-1 or Windows-1252)",
            f"save it as UTF-8 (e.g. `iconv -f LATIN1 -t UTF-8 {source} > {source}.utf8`)",
        ) from None


# --- YAML --------------------------------------------------------------------------------------------------


class _TooDeep(yaml.YAMLError):
    def __init__(self, mark: Any) -> None:
        super().__init__("too deep")
        self.mark = mark


class _DepthBound:
    """Composes at most :data:`MAX_DEPTH` levels: the composer recurses per level, and a 20,000-deep document
    would raise ``RecursionError`` before anything could judge it."""

    _depth = 0

    def compose_node(self, parent: Any, index: Any) -> Any:
        self._depth += 1
        try:
            if self._depth > MAX_DEPTH:
                raise _TooDeep(self.peek_event().start_mark)  # type: ignore[attr-defined]
            return super().compose_node(parent, index)  # type: ignore[misc]
        finally:
            self._depth -= 1


class BoundedLoader(_DepthBound, yaml.SafeLoader):
    """YAML's safe loader, bounded in depth (and, through :func:`load_yaml`, in expansion)."""


def _fast_loader() -> type[Any]:
    try:
        from yaml._yaml import CParser
    except ImportError:  # PyYAML built without libyaml
        return BoundedLoader

    class FastBoundedLoader(
        _DepthBound,
        yaml.composer.Composer,
        CParser,
        yaml.constructor.SafeConstructor,
        yaml.resolver.Resolver,
    ):
        """:class:`BoundedLoader` on libyaml's parser (several times faster; nodes composed here, bounded
        the same way). Its syntax errors are libyaml's wording: a reader that reports them parses again with
        :class:`BoundedLoader`."""

        def __init__(self, stream: str) -> None:
            CParser.__init__(self, stream)
            yaml.composer.Composer.__init__(self)
            yaml.constructor.SafeConstructor.__init__(self)
            yaml.resolver.Resolver.__init__(self)

    return FastBoundedLoader


#: :class:`BoundedLoader` on libyaml's parser where PyYAML has it (the same class where it does not).
FastBoundedLoader: type[Any] = _fast_loader()


def _too_deep(source: str, where: str, what: str) -> FileProblem:
    return FileProblem(
        source,
        f"{where}nested more than {MAX_DEPTH} levels deep{what}, deeper than any file nodefleet reads",
        "check that the right file was given; write the values out at a depth a reader can follow",
    )


def _children(node: yaml.Node) -> list[yaml.Node]:
    if isinstance(node, yaml.MappingNode):
        return [n for pair in node.value for n in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []


def _check_expansion(root: yaml.Node, source: str) -> None:
    """Refuse a node graph that expands to too many values or too deep, or that contains itself.

    The common case, a tree (no alias: no node reached twice) within the bounds, is judged in one pass; anything
    else by :func:`_check_graph`, which says what is wrong."""
    seen: set[int] = set()
    stack: list[tuple[yaml.Node, int]] = [(root, 1)]
    mapping, sequence = yaml.MappingNode, yaml.SequenceNode
    while stack:
        node, depth = stack.pop()
        key = id(node)
        if key in seen or depth > MAX_DEPTH:
            _check_graph(root, source)
            return
        seen.add(key)
        kind = type(node)
        if kind is mapping:
            for pair in node.value:
                stack.append((pair[0], depth + 1))
                stack.append((pair[1], depth + 1))
        elif kind is sequence:
            stack.extend((child, depth + 1) for child in node.value)
    if len(seen) > MAX_EXPANDED_VALUES:
        _check_graph(root, source)


def _check_graph(root: yaml.Node, source: str) -> None:
    """Refuse a node graph that expands to too many values or too deep, or that contains itself.

    Each node is measured once (post-order, memoized by identity), so the check is linear in the nodes the
    file has, however much its aliases would expand to; an alias counts what its anchor holds each time it is
    used, and a merge key what it merges, exactly as building the value would.
    """
    measured: dict[int, tuple[int, int]] = {}
    on_path: set[int] = set()
    stack: list[tuple[yaml.Node, bool]] = [(root, False)]
    while stack:
        node, done = stack.pop()
        key = id(node)
        if done:
            on_path.discard(key)
            values, depth = 1, 1
            for child in _children(node):
                child_values, child_depth = measured[id(child)]
                values += child_values
                depth = max(depth, child_depth + 1)
            if values > MAX_EXPANDED_VALUES:
                raise FileProblem(
                    source,
                    f"line {node.start_mark.line + 1}: its anchors and aliases expand to more than "
                    f"{MAX_EXPANDED_VALUES:,} values (an alias bomb: aliases or merge keys (<<) that repeat a "
                    "value many times over)",
                    "write the values out instead of aliasing them",
                )
            if depth > MAX_DEPTH:
                raise _too_deep(
                    source, f"line {node.start_mark.line + 1}: ", " once its aliases are followed"
                )
            measured[key] = (values, depth)
            continue
        if key in measured:
            continue
        if key in on_path:
            raise FileProblem(
                source,
                f"line {node.start_mark.line + 1}: an alias inside its own anchor, so the value contains itself "
                "and expands forever (anchors and aliases)",
                "write the values out instead of aliasing them",
            )
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node) if id(child) not in measured)


def _position(mark: Any) -> str:
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else "somewhere"


def load_yaml(text: str, source: str, *, loader: type[Any] = BoundedLoader) -> Any:
    """One YAML document (``None`` when empty), bounded in expansion and depth; problems raise
    :class:`FileProblem` with the line and column, never quoting the text.

    A reader that words syntax errors its own way (the stack file's) uses :func:`compose_bounded` and
    :func:`construct` and catches ``yaml.MarkedYAMLError`` itself.
    """
    try:
        node, instance = compose_bounded(text, source, loader)
        return construct(node, instance, source)
    except yaml.MarkedYAMLError as exc:
        raise _syntax_problem(source, exc) from None
    except yaml.YAMLError as exc:
        raise FileProblem(
            source, f"not valid YAML ({type(exc).__name__})", "check the file", syntax=True
        ) from None


def _syntax_problem(source: str, exc: yaml.MarkedYAMLError) -> FileProblem:
    """A YAML syntax error, worded with its line and column and the usual fix."""
    mark = exc.problem_mark or exc.context_mark
    problem = (exc.problem or exc.context or "not valid YAML").strip()
    return FileProblem(
        source,
        f"{_position(mark)}: {problem}",
        "fix the YAML syntax there (indentation, a missing ':' or an unclosed quote or bracket)",
        syntax=True,
    )


def load_yaml_documents(text: str, source: str, *, loader: type[Any] = FastBoundedLoader) -> list[Any]:
    """Every document of a multi-document YAML stream (``---`` separated; empty documents left out), each
    bounded as :func:`load_yaml` bounds one. Kubernetes dumps and ``--render`` output are such streams. Syntax
    errors are worded by :class:`BoundedLoader` (libyaml's parser, the default, words them its own way)."""
    try:
        instance = loader(text)
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, source, exc) from None
    documents: list[Any] = []
    try:
        while instance.check_node():
            try:
                node = instance.get_node()
            except _TooDeep as exc:
                raise _too_deep(source, f"{_position(exc.mark)}: ", "") from None
            except RecursionError:
                raise _too_deep(source, "", "") from None
            if node is None:
                continue
            _check_expansion(node, source)
            value = instance.construct_document(node)
            if value is not None:  # an empty document between two `---`
                documents.append(value)
    except yaml.reader.ReaderError as exc:
        raise _unreadable(text, source, exc) from None
    except yaml.MarkedYAMLError as exc:
        if loader is not BoundedLoader:
            return load_yaml_documents(text, source, loader=BoundedLoader)
        raise _syntax_problem(source, exc) from None
    except yaml.YAMLError as exc:
        if loader is not BoundedLoader:
            return load_yaml_documents(text, source, loader=BoundedLoader)
        raise FileProblem(
            source, f"not valid YAML ({type(exc).__name__})", "check the file", syntax=True
        ) from None
    except ValueError as exc:
        if isinstance(exc, FileProblem):
            raise
        raise FileProblem(
            source, f"a value YAML cannot build: {str(exc).split(';')[0]}", "check the numbers in it"
        ) from None
    finally:
        instance.dispose()
    return documents


def compose_bounded(
    text: str, source: str, loader: type[Any] = BoundedLoader, *, expansion: bool = True
) -> tuple[Any, Any]:
    """The node graph of one YAML document and the loader that composed it (to build the value with), after
    the depth and expansion checks; ``(None, None)`` for an empty document. Raises :class:`FileProblem` for
    the checks and for a character YAML does not allow (by line and column), ``yaml.MarkedYAMLError`` for
    syntax.

    ``expansion=False`` leaves out the walk over every node that finds aliases and measures depth, for a
    caller that bounds the depth itself as it builds the value and hands in a text that cannot expand: one
    without an anchor (``&``), whose graph is a tree of at most a few nodes a character."""
    try:
        instance = loader(text)
    except yaml.reader.ReaderError as exc:  # the reader checks every character before parsing
        raise _unreadable(text, source, exc) from None
    try:
        try:
            node = instance.get_single_node()
        except _TooDeep as exc:
            raise _too_deep(source, f"{_position(exc.mark)}: ", "") from None
        except yaml.reader.ReaderError as exc:
            raise _unreadable(text, source, exc) from None
        except RecursionError:  # a caller already deep in its own stack: the same answer, less deep
            raise _too_deep(source, "", "") from None
        if node is None:
            instance.dispose()
            return None, None
        if expansion:
            _check_expansion(node, source)
    except BaseException:
        instance.dispose()
        raise
    return node, instance


def construct(node: Any, instance: Any, source: str) -> Any:
    """The value of a node graph :func:`compose_bounded` returned (``None`` for none); the loader is disposed
    of. A value Python cannot build (an integer of more than 4,300 digits) is a :class:`FileProblem`."""
    if node is None:
        return None
    try:
        return instance.construct_document(node)
    except FileProblem:
        raise
    except ValueError as exc:
        raise FileProblem(
            source, f"a value YAML cannot build: {str(exc).split(';')[0]}", "check the numbers in it"
        ) from None
    finally:
        instance.dispose()


def _unreadable(text: str, source: str, exc: yaml.reader.ReaderError) -> FileProblem:
    """A character YAML does not allow in a document (a control character), by line and column."""
    before = text[: exc.position]
    line = before.count("\n") + 1
    column = exc.position - (before.rfind("\n") + 1) + 1
    character = exc.character if isinstance(exc.character, str) else chr(exc.character)
    return FileProblem(
        source,
        f"line {line}, column {column}: the control character U+{ord(character):04X}, which YAML does not allow "
        "in a document",
        "remove it (or write it as an escape, e.g. \\t, inside a double-quoted string)",
    )


# --- JSON --------------------------------------------------------------------------------------------------


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON (JSON has no NaN or Infinity)")


def _depth(value: Any) -> int:
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            item = list(item.values())
        if isinstance(item, list):
            deepest = max(deepest, depth)
            stack.extend((child, depth + 1) for child in item)
    return deepest


def load_json(text: str, source: str) -> Any:
    """JSON, nesting at most :data:`MAX_DEPTH` deep; problems raise :class:`FileProblem` with the line and
    column, never quoting the text."""
    try:
        value = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as exc:
        raise FileProblem(
            source,
            f"is not valid JSON ({exc.msg}: line {exc.lineno}, column {exc.colno})",
            "fix the JSON there, or check that the right file was given",
            syntax=True,
        ) from None
    except RecursionError:
        raise _too_deep(source, "", "") from None
    except ValueError as exc:  # NaN, or a number of more than 4,300 digits Python will not convert
        raise FileProblem(
            source, f"is not valid JSON ({str(exc).split(';')[0]})", "check the numbers in it", syntax=True
        ) from None
    if _depth(value) > MAX_DEPTH:
        raise _too_deep(source, "", "")
    return value


# --- Secrets -----------------------------------------------------------------------------------------------

_REDACTED = "***"
#: A quoted value, JSON's escapes included (an escaped quote does not end it), or a bare one.
_VALUE = r"(?:\"(?:[^\"\\\n]|\\.)*\"|'[^'\n]*'|[^\s,}\]\"']+)"
#: What a credential looks like in text nodefleet prints or stores, each with the part that is kept.
#:
#: The shapes a health command on AWS prints follow the rule sets of gitleaks (``config/gitleaks.toml``: rules
#: ``aws-access-token``, ``aws-secret-access-key``, ``slack-webhook-url``, ``slack-*-token``, ``vault-service-token``,
#: ``vault-batch-token``, ``jwt``, ``private-key``, ``github-*``, ``gitlab-pat``) and of Yelp's detect-secrets
#: (``plugins/aws.py``' AWSKeyDetector, ``plugins/keyword.py``, ``plugins/basic_auth.py``), written out here: no
#: maintained package on PyPI exposes those rules as a list to read (detect-secrets' are classes bound to its
#: scan settings, last released 2024), and a redactor must not pull in a scanner. Each shape has a test
#: (tests/nodefleet/test_files.py).
_SECRETS = (
    # PEM private keys: the whole block.
    (
        re.compile(r"-----BEGIN ([A-Z0-9 ]*PRIVATE KEY)-----.*?(-----END \1-----|\Z)", re.S),
        r"-----BEGIN \1----- " + _REDACTED,
    ),
    # user:password@ or token@ in a URL (https://user:token@git.example.com/...).
    (re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@'\"]+@"), r"\1" + _REDACTED + "@"),
    # Authorization values: Bearer, Basic, token.
    (re.compile(r"(?i)\b(bearer|basic)(\s+)[A-Za-z0-9._~+/=-]+"), r"\1\2" + _REDACTED),
    # `aws sts assume-role --output text`: the CREDENTIALS row holds the key id, secret key and session token
    # with no name beside them.
    (re.compile(r"(?m)^(\s*CREDENTIALS\t).*$"), r"\1" + _REDACTED),
    # `--output table`: | SecretAccessKey | <value> |.
    (
        re.compile(r"(?i)\b(secretaccesskey|sessiontoken|accesskeyid)(\s*\|\s*)[^\s|]+"),
        r"\1\2" + _REDACTED,
    ),
    # Credential fields of kubeconfigs, pull secrets, AWS credentials files, `aws sts` and instance-metadata JSON,
    # Secrets Manager's SecretString and environment assignments (AWS_SECRET_ACCESS_KEY=, AWS_SESSION_TOKEN=,
    # X-Amz-Security-Token=, X-Amz-Signature=), in YAML, JSON or KEY=VALUE.
    (
        re.compile(
            r"(?i)([\"']?(?:[a-z0-9_-]*(?:token|password|passwd|secret|api[_-]?key|secret[_-]?access[_-]?key|"
            r"access[_-]?key[_-]?id|secret[_-]?key|secretstring|secretbinary|signature)|client-key-data|auth|"
            r"credentials?)[\"']?\s*[:=]\s*)" + _VALUE
        ),
        r"\1" + _REDACTED,
    ),
    # A password or token given as a separate argument: `--password X`, `oc login -u kubeadmin -p X`,
    # `docker login -u AWS -p X`.
    (
        re.compile(r"(?i)(--(?:password|passwd|token|secret[a-z-]*|aws-secret-access-key)\s+)\S+"),
        r"\1" + _REDACTED,
    ),
    (re.compile(r"(\blogin\b[^\n]*?\s-p\s+)\S+"), r"\1" + _REDACTED),
    # AWS access key ids (gitleaks aws-access-token; detect-secrets AWSKeyDetector): long-term AKIA, temporary
    # ASIA (STS), ABIA, ACCA, A3T.
    (re.compile(r"\b(?:A3T[A-Z0-9]|AKIA|ASIA|ABIA|ACCA)[A-Z0-9]{16}\b"), _REDACTED),
    # An AWS secret key near its name, however written (detect-secrets AWSKeyDetector's second pattern).
    (
        re.compile(
            r"(?i)(aws.{0,20}?(?:key|pwd|pw|password|pass|token).{0,20}?['\"])[0-9a-zA-Z/+]{40}(['\"])"
        ),
        r"\1" + _REDACTED + r"\2",
    ),
    # STS session tokens, by the prefixes they are issued with (base64 of their binary header).
    (re.compile(r"\b(?:IQoJb3JpZ2lu|FwoGZXIvYXdz|FQoGZXIvYXdz|AQoDYXdz)[A-Za-z0-9/+=]{16,}"), _REDACTED),
    # `aws ecr get-login-password` (base64 of {"payload":...}) and `aws eks get-token` (k8s-aws-v1.<presigned URL>).
    (re.compile(r"\beyJwYXlsb2FkIjoi[A-Za-z0-9/+=]{16,}"), _REDACTED),
    (re.compile(r"\bk8s-aws-v1\.[A-Za-z0-9_-]{16,}"), _REDACTED),
    # JSON web tokens (service account tokens, OIDC id tokens).
    (re.compile(r"\beyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]+"), _REDACTED),
    # OpenShift OAuth access tokens (`oc whoami -t`).
    (re.compile(r"\bsha256~[A-Za-z0-9_-]{20,}"), _REDACTED),
    # Tokens of the common Git forges (GitHub, GitLab).
    (
        re.compile(r"\b(?:gh[pousr]_[A-Za-z0-9]{20,}|github_pat_[A-Za-z0-9_]{20,}|glpat-[A-Za-z0-9_-]{20,})"),
        _REDACTED,
    ),
    # HashiCorp Vault tokens (gitleaks vault-service-token, vault-batch-token).
    (re.compile(r"\bhv[sbr]\.[A-Za-z0-9_-]{20,}"), _REDACTED),
    # Slack tokens and incoming webhooks (gitleaks slack-*-token, slack-webhook-url), where alerts go.
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), _REDACTED),
    (
        re.compile(r"(hooks\.slack\.com/(?:services|workflows|triggers)/)[A-Za-z0-9+/_-]{20,}"),
        r"\1" + _REDACTED,
    ),
)


def redact(text: str) -> str:
    """``text`` with every credential it recognisably holds replaced by ``***`` (see the module docstring).

    For text nodefleet did not write itself and prints or stores: a process's output, a URL a user gave.
    It cannot recognise a bare secret with no marker around it, so values known to be secrets are never
    printed at all.
    """
    for pattern, replacement in _SECRETS:
        text = pattern.sub(replacement, text)
    return text


def url_without_credentials(url: str) -> str:
    """``url`` without the user and password (or token) before its host: what may be written into a file
    others read (Argo CD and Flux take the credentials from a Secret, never from the URL)."""
    return re.sub(r"^([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@]*@", r"\1", url)


_CONTENT = re.compile(
    r"\n|^\s*(apiVersion|kind|clusters|contexts|users|current-context)\s*:|-----BEGIN |^\s*[{\[]"
)


def looks_like_file_content(value: str) -> bool:
    """Whether ``value``, given where a path belongs, is a file's content instead (several lines, YAML keys
    of a kubeconfig, a PEM block, JSON): its message must describe it, never echo it."""
    return bool(_CONTENT.search(value)) or len(value) > 4096
