"""Where a stack file may send output and read catalogs: inside the project, or inside a root the operator
allowed outside the stack file.

A stack file is input that anyone with a pull request can change, and what it names is written or read by
CI with CI's permissions. So a path from a stack file (``output.directory``, a cluster's ``catalog``)
resolves inside the project, or inside a root the operator allowed where a stack file cannot: a
command-line option (``--root``, ``--catalog-root``) or an environment variable the pipeline sets
(``NODEFLEET_RENDER_ROOT``, ``NODEFLEET_CATALOG_ROOTS``; several roots separated by ``:``). The same
function decides for configuration validation, the Pulumi program (the provider's
``renderYamlToDirectory``) and ``nodefleet render``, so the three cannot disagree.

Symlinks are resolved before deciding, and a path whose symlinks make ``..`` point elsewhere than it reads
is refused, because the Kubernetes provider joins paths lexically (Go ``filepath.Join``) while the file
system follows links.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import unicodedata
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

RENDER_ROOTS_ENV = "NODEFLEET_RENDER_ROOT"
CATALOG_ROOTS_ENV = "NODEFLEET_CATALOG_ROOTS"

#: Longer paths are refused before the file system refuses them halfway through a render (Linux PATH_MAX is
#: 4096; the render adds ``<cluster>/1-manifest/<up to 300 characters>.yaml`` below the directory).
MAX_PATH_CHARS = 1024
#: NAME_MAX of every common Linux and macOS file system, in bytes.
MAX_COMPONENT_BYTES = 255

# Pulumi's rule for stack names (letters, digits, '-', '_', '.'; at most 100 characters).
_STACK_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")


class PathError(ValueError):
    """A path that may not be used. The message says what is wrong and what to do, without the field."""


@dataclass(frozen=True)
class ContainedPath:
    """A path checked by :func:`contain`."""

    #: As the user wrote it, normalized; relative paths stay relative to the project, so the provider's
    #: state (and its diff) does not change when the project is checked out elsewhere.
    text: str
    #: Absolute, every symlink resolved: where files are actually written or read.
    path: Path
    #: The allowed root it lies in.
    root: Path


def check_stack_name(stack: str) -> None:
    """Stack names become folder names (``{stack}``): Pulumi's own rule, and never ``.`` or ``..``."""
    if not _STACK_NAME.match(stack) or stack in (".", ".."):
        raise PathError(
            f"stack name {stack!r} cannot name a folder: a stack name has letters, digits, '-', '_' and '.' "
            "only (at most 100, not '.' or '..'); rename the stack file to Pulumi.<name>.yaml with such a name"
        )


def roots_from(environ: Mapping[str, str], variable: str, extra: Sequence[str | Path] = ()) -> list[Path]:
    """The operator's allowed roots: ``extra`` (command-line options) and the ``variable`` list."""
    listed = [part for part in environ.get(variable, "").split(os.pathsep) if part.strip()]
    return [Path(p) for p in [*map(str, extra), *listed]]


def contain(
    value: str,
    *,
    project_dir: Path,
    roots: Sequence[Path],
    allow: str,
    example: str,
    project_itself: bool = False,
) -> ContainedPath:
    """``value`` (relative to the project, or absolute) if it resolves inside the project or an allowed root.

    ``allow`` names the option and variable that allow a root (for the message), ``example`` a good value.
    ``project_itself`` permits the project directory itself (never for a render directory: the render
    would put cluster folders among the project's own).
    """
    _check_form(value, allow, example)
    project = Path(os.path.realpath(project_dir))
    given = Path(value)
    joined = given if given.is_absolute() else project_dir / given
    physical = Path(os.path.realpath(joined))
    lexical = Path(os.path.normpath(joined))
    if Path(os.path.realpath(lexical)) != physical:
        raise PathError(
            f"{value!r} contains '..' after a symlink, so it means one folder to the file system and another "
            f"to the Kubernetes provider; write the path without '..' (e.g. {example})"
        )
    allowed = [project, *(Path(os.path.realpath(project_dir / r)) for r in roots)]
    for root in allowed:
        if physical == root and (root != project or project_itself):
            return ContainedPath(_text(value), physical, root)
        if root in physical.parents:
            return ContainedPath(_text(value), physical, root)
    if physical == project:
        raise PathError(
            f"{value!r} is the project directory itself; name a folder inside it (e.g. {example})"
        )
    how = _how_it_escapes(value, joined, physical)
    raise PathError(
        f"{value!r} {how}, outside the project ({project}) and outside every allowed root. A stack file "
        f"cannot send output or read files elsewhere: use a path inside the project (e.g. {example}), or "
        f"allow a root outside the stack file with {allow}"
    )


def _text(value: str) -> str:
    return os.path.normpath(value)


def _how_it_escapes(value: str, joined: Path, physical: Path) -> str:
    if ".." in Path(value).parts:
        return f"leads out with '..' to {physical}"
    if Path(os.path.normpath(joined)) != physical:
        return f"resolves through a symlink to {physical}"
    return f"is {physical}"


def _check_form(value: str, allow: str, example: str) -> None:
    if not value.strip():
        raise PathError(f"is empty; name a folder inside the project (e.g. {example})")
    bad = next((c for c in value if unicodedata.category(c) in ("Cc", "Cf", "Zl", "Zp")), None)
    if bad is not None:
        raise PathError(
            f"contains the control character U+{ord(bad):04X}; a path has printable characters only "
            f"(e.g. {example})"
        )
    if len(value) > MAX_PATH_CHARS:
        raise PathError(
            f"is {len(value)} characters long (at most {MAX_PATH_CHARS}); use a shorter path (e.g. {example})"
        )
    long_part = next((p for p in Path(value).parts if len(p.encode("utf-8")) > MAX_COMPONENT_BYTES), None)
    if long_part is not None:
        raise PathError(
            f"has a folder name of {len(long_part.encode('utf-8'))} bytes (at most {MAX_COMPONENT_BYTES}); "
            f"use shorter names (e.g. {example})"
        )
    if value.startswith("~"):
        raise PathError(
            f"{value!r} starts with '~', which is not expanded (neither nodefleet nor the Kubernetes provider "
            f"runs a shell); use a path inside the project (e.g. {example}), or an absolute path inside a root "
            f"allowed with {allow}"
        )


RENDER_ALLOW = f"`--root DIR` or {RENDER_ROOTS_ENV}=DIR"
CATALOG_ALLOW = f"`--catalog-root DIR` or {CATALOG_ROOTS_ENV}=DIR"


#: ``{word}``: a placeholder, of which ``output.directory`` knows one, ``{stack}``.
_PLACEHOLDER = re.compile(r"\{[^{}/]*\}")


def render_directory(
    template: str, stack: str, *, project_dir: Path, environ: Mapping[str, str], roots: Sequence[Path] = ()
) -> ContainedPath:
    """``output.directory`` for ``stack`` (``{stack}`` replaced), inside the project or an allowed root."""
    check_stack_name(stack)
    unknown = _PLACEHOLDER.search(template.replace("{stack}", ""))
    if unknown:
        raise PathError(
            f"{template!r} has the placeholder {unknown.group(0)}, which nodefleet does not replace (the folder would "
            "be named so, braces and all); the only placeholder is {stack}, in lowercase (each cluster gets its own "
            "folder below the directory anyway), e.g. rendered/{stack}"
        )
    value = template.replace("{stack}", stack)
    contained = contain(
        value,
        project_dir=project_dir,
        roots=[*roots, *roots_from(environ, RENDER_ROOTS_ENV)],
        allow=RENDER_ALLOW,
        example="rendered/{stack}",
    )
    given = Path(value)
    problem = _version_control_problem(contained) or writable_folder_problem(
        given if given.is_absolute() else project_dir / given
    )
    if problem:
        raise PathError(f"{value!r} {problem}")
    return contained


#: Folders of version control systems: a render written into one rewrites the repository's own files
#: (``.git/hooks/`` runs on the next commit).
_VCS_FOLDERS = (".git", ".hg", ".svn")


def _version_control_problem(contained: ContainedPath) -> str | None:
    parts = [*Path(contained.text).parts, *contained.path.relative_to(contained.root).parts]
    vcs = next((p for p in parts if p.lower() in _VCS_FOLDERS), None)
    if vcs is None:
        return None
    return (
        f"lies inside {vcs}/, the repository's own files (a render there could write into {vcs}/hooks, which "
        "Git runs); use a folder of the work tree, e.g. rendered/{stack}"
    )


def writable_folder_problem(
    path: Path,
    *,
    example: str = "rendered/{stack}",
    needs: str = "the render writes a folder per cluster below it",
) -> str | None:
    """Why files cannot be written in folder ``path`` (created where missing), or None: a file where a
    folder must be, or a symlink loop. Judged on what is on disk now, so ``check`` says it before ``render``
    fails halfway. ``example`` is a good folder, ``needs`` why a folder is needed."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return None  # created by the render
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return (
                "goes through a symlink loop (a link that points back at itself); remove the link or name "
                f"another folder, e.g. {example}"
            )
        if exc.errno == errno.ENOTDIR:
            parent = next((p for p in path.parents if os.path.lexists(p) and not os.path.isdir(p)), None)
            where = f" ({parent} is a file)" if parent is not None else ""
            return f"runs through a file where a folder must be{where}; name a folder, e.g. {example}"
        return f"cannot be used ({exc.strerror}); name another folder, e.g. {example}"
    if not stat.S_ISDIR(mode):
        return f"is a file, not a folder: {needs}; name a folder (or move the file away), e.g. {example}"
    return None


def catalog_file(
    value: str, *, project_dir: Path, environ: Mapping[str, str], roots: Sequence[Path] = ()
) -> ContainedPath:
    """A cluster's ``catalog``, inside the project or a root allowed for catalogs."""
    return contain(
        value,
        project_dir=project_dir,
        roots=[*roots, *roots_from(environ, CATALOG_ROOTS_ENV)],
        allow=CATALOG_ALLOW,
        example="catalogs/<cluster>.yaml",
    )


def check_folder_name(name: str) -> None:
    """A render target becomes one folder below the render directory: one plain path component."""
    if not name or name in (".", "..") or "/" in name or "\\" in name or "\0" in name:
        raise PathError(f"{name!r} cannot name a render folder; a folder name is one plain path component")


def _output_problem(value: str, example: str) -> tuple[Path, str | None]:
    """The absolute path an output option names (``~`` expanded: a shell would have), and why it cannot be
    written, judged as ``output.directory`` is: the path's form, ``..`` after a symlink, a version control
    folder; not containment, for an option is the operator's own choice, not a stack file's."""
    expanded = os.path.expanduser(value) if value.startswith("~") else value
    try:
        contained = contain(
            str(Path(os.path.abspath(expanded))),
            project_dir=Path(os.getcwd()),
            roots=[Path(os.path.abspath(expanded))],
            allow="it",
            example=example,
            project_itself=True,
        )
    except PathError as exc:
        return Path(os.path.abspath(expanded)), str(exc)
    if contained.path == Path(contained.path.anchor):
        return contained.path, f"is the file system root; name a folder of its own, e.g. {example}"
    vcs = next((p for p in contained.path.parts if p.lower() in _VCS_FOLDERS), None)
    vcs = vcs or next((p for p in Path(os.path.normpath(expanded)).parts if p.lower() in _VCS_FOLDERS), None)
    if vcs is not None:
        return contained.path, (
            f"lies inside {vcs}/, the repository's own files (Git runs what lands in {vcs}/hooks); name a "
            f"folder of the work tree, e.g. {example}"
        )
    return contained.path, None


def output_folder(value: str | os.PathLike[str], *, example: str) -> Path:
    """The folder an output option names (``render --out``, ``gitops --out``, ``fleet report --out-dir``),
    absolute and resolved, or :class:`PathError` saying why files cannot be written there: the checks of
    ``output.directory`` (the path's form, ``..`` after a symlink, never inside ``.git/``, never through or
    onto an existing file, never a symlink loop) except containment. The message starts after the option;
    the caller names it (``--out DIR: …``)."""
    text = os.fspath(value)
    path, problem = _output_problem(text, example)
    problem = problem or writable_folder_problem(
        Path(os.path.abspath(os.path.expanduser(text))), example=example, needs="the files go below it"
    )
    if problem:
        raise PathError(problem)
    return path


def output_file(value: str | os.PathLike[str], *, example: str) -> Path:
    """The file an output option names (``report --out``, ``fleet upgrade --state``), absolute and resolved,
    or :class:`PathError`: the checks of :func:`output_folder` on its folder, never inside ``.git/``, and
    the file itself, where it exists, a regular file (writing into a named pipe blocks; into a device or a
    folder fails)."""
    text = os.fspath(value)
    path, problem = _output_problem(text, example)
    if problem:
        raise PathError(problem)
    folder = writable_folder_problem(path.parent, example=example, needs="the file is written in it")
    if folder:
        raise PathError(f"its folder {folder}")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        return path
    except OSError as exc:
        raise PathError(f"cannot be used ({exc.strerror}); name another file, e.g. {example}") from None
    if stat.S_ISDIR(mode):
        raise PathError(f"is a folder; name a file (in it, e.g. {path.name}/…), e.g. {example}")
    if not stat.S_ISREG(mode):
        raise PathError(
            "exists and is not a regular file (a named pipe, device or socket: writing there blocks or fails); "
            f"name a file, e.g. {example}"
        )
    return path
