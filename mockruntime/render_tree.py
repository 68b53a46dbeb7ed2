"""Writing a render plan to disk as a GitOps tree: exactly the current manifests, atomically, one render at a time.

The tree under a render root is ``<root>/<target>/{0-crd,1-manifest}/<file>.yaml``, the Kubernetes provider's
layout. A render leaves exactly the current program's manifests in the folders it owns, and nothing else
of its own:

* **Ownership.** ``<root>/.nodefleet-render-<stack>`` records the targets and files the stack's last render
  wrote. It lives beside the manifests (commit it with them, so a render on a fresh clone in CI still knows
  what it wrote) and has no ``.yaml``/``.yml``/``.json`` extension, so neither Argo CD's directory source
  nor Flux's generated kustomization ever applies it. A file the render did not write (a README, a
  ``kustomization.yaml``, anything else) is never changed or removed. One exception, by design: in the
  layout folders (``0-crd/``, ``1-manifest/``) of this stack's own targets, a file whose name is exactly the
  provider's name for the object it contains was written by a render of this stack, by ``nodefleet render``
  or by ``pulumi up`` in render mode, and is removed when the stack no longer declares that object.
* **Pruning.** Files of objects the program no longer declares are removed; a target folder left empty
  (a removed cluster) is removed with its layout folders.
* **Beside the manifests**, each target folder gets ``argocd-ignore-differences``
  (:data:`nodefleet.render.gitops.ARGOCD_IGNORE_DIFFERENCES_FILE`), Argo CD's ``ignoreDifferences`` for the folder's
  controller-owned fields. It belongs to the target (the record's ``target`` line stands for it, so the
  record keeps its format), is rewritten with the target and removed with it.
* **Atomicity.** Every changed file is first written beside its destination as
  ``.<name>.nodefleet-tmp`` and synced (phase 1; a failure here removes the temporaries and leaves the
  previous tree untouched). Then a journal listing every rename and removal is written atomically: that is
  the commit point. Renames and removals follow (phase 2, a few milliseconds), then the record, then the
  journal is removed. A failure in phase 2 is finished from the journal by the same process, and a
  process killed in phase 2 leaves the journal, which the next render of the root completes before
  anything else. So an interrupted render leaves the previous complete set or the new one.
* **One at a time.** A render holds an exclusive ``flock`` on the root directory itself (no lock file to
  commit or to go stale: the kernel releases it when the process dies); a second render waits for it, up to
  a timeout.

Files and folders are created with the provider's modes (0600, 0700); git records neither.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mockruntime.rendering import RenderPlan
from nodefleet import files as reader
from nodefleet.render.gitops import ARGOCD_IGNORE_DIFFERENCES_FILE
from nodefleet.render_layout import LAYOUT_DIRS, manifest_path

RECORD_PREFIX = ".nodefleet-render-"
JOURNAL_SUFFIX = ".journal"
TEMP_SUFFIX = ".nodefleet-tmp"
_RECORD_HEADER = (
    "# Files `nodefleet render` wrote for stack {stack}; the next render removes those whose objects the\n"
    "# stack no longer declares, and never touches other files. Commit this file with the manifests.\n"
    "# It is not a manifest: Argo CD and Flux read only .yaml, .yml and .json files.\n"
)


class RenderTreeError(Exception):
    """A tree that cannot be written as asked (the message says why and what to do)."""


@dataclass
class TreeResult:
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    #: Files that existed at a planned path without being in the record (e.g. written by `pulumi up`).
    adopted: list[str] = field(default_factory=list)
    removed_folders: list[str] = field(default_factory=list)
    #: Target files beside the manifests (Argo CD's ignoreDifferences) written, i.e. new or changed.
    beside_written: list[str] = field(default_factory=list)
    #: An interrupted render whose journal this render completed first.
    recovered: bool = False


def record_path(root: Path, stack: str) -> Path:
    return root / f"{RECORD_PREFIX}{stack}"


def write_tree(
    root: Path,
    stack: str,
    plan: RenderPlan,
    *,
    lock_timeout: float = 60.0,
    on_wait: Callable[[], None] | None = None,
) -> TreeResult:
    """Make ``root`` hold exactly ``plan``'s files for ``stack`` (see the module docstring)."""
    _make_dirs(root)
    with _locked(root, lock_timeout, on_wait):
        result = TreeResult()
        result.recovered = _recover(root)
        _write(root, stack, plan, result)
        return result


# --- locking ------------------------------------------------------------------------------------------


@contextlib.contextmanager
def _locked(root: Path, timeout: float, on_wait: Callable[[], None] | None) -> Iterator[None]:
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    try:
        deadline = time.monotonic() + timeout
        waited = False
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if not waited and on_wait:
                    on_wait()
                waited = True
                if time.monotonic() >= deadline:
                    raise RenderTreeError(
                        f"another nodefleet render of {root} is still running after {timeout:.0f} s; "
                        "run again when it has finished"
                    ) from None
                time.sleep(0.05)
        yield
    finally:
        os.close(fd)


# --- the record ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Record:
    targets: frozenset[str]
    files: frozenset[str]


def _read_record(path: Path) -> _Record:
    if not os.path.lexists(path):
        return _Record(frozenset(), frozenset())
    try:
        text = reader.read_text(path, what="render record")
    except reader.FileProblem as exc:
        raise RenderTreeError(
            f"{exc.source}: the render record {exc.problem}; restore it from version control, or remove it (the "
            "next render then adopts the manifests it finds)"
        ) from None
    targets, files = set(), set()
    for line in text.splitlines():
        kind, _, value = line.partition(" ")
        if kind == "target" and _plain_relpath(value, 1):
            targets.add(value)
        elif kind == "file" and _plain_relpath(value, 3):
            files.add(value)
    return _Record(frozenset(targets), frozenset(files))


def recorded_targets(root: Path) -> dict[str, frozenset[str]]:
    """Stack → the target folders its last ``nodefleet render`` into ``root`` wrote, from the records."""
    return {
        record.name.removeprefix(RECORD_PREFIX): _read_record(record).targets
        for record in sorted(root.glob(f"{RECORD_PREFIX}*"))
        if not record.name.endswith(JOURNAL_SUFFIX)
    }


def recorded_files(root: Path) -> dict[str, frozenset[str]]:
    """Stack → the manifests (``<target>/<layout dir>/<file>``) its last ``nodefleet render`` into ``root`` wrote."""
    return {
        record.name.removeprefix(RECORD_PREFIX): _read_record(record).files
        for record in sorted(root.glob(f"{RECORD_PREFIX}*"))
        if not record.name.endswith(JOURNAL_SUFFIX)
    }


def _record_text(stack: str, targets: list[str], files: list[str]) -> str:
    lines = [_RECORD_HEADER.format(stack=stack)]
    lines += [f"target {t}\n" for t in sorted(targets)]
    lines += [f"file {f}\n" for f in sorted(files)]
    return "".join(lines)


def _plain_relpath(value: str, parts: int) -> bool:
    """A record line names ``<target>[/<layout dir>/<file>]`` below the root, nothing else."""
    pieces = value.split("/")
    return len(pieces) == parts and all(p and p not in (".", "..") for p in pieces)


def _owned_file(value: str) -> bool:
    """A file a journal may write or remove: a manifest, or a target's Argo CD ignoreDifferences file."""
    return _plain_relpath(value, 3) or (
        _plain_relpath(value, 2) and value.split("/")[1] == ARGOCD_IGNORE_DIFFERENCES_FILE
    )


# --- writing ------------------------------------------------------------------------------------------


def _write(root: Path, stack: str, plan: RenderPlan, result: TreeResult) -> None:
    record_file = record_path(root, stack)
    previous = _read_record(record_file)
    targets = sorted({f.target for f in plan.files})
    _refuse_foreign_targets(root, stack, targets)
    for target in {*targets, *previous.targets}:
        _refuse_symlinks(root, target)

    wanted = {f.relpath: f.content for f in plan.files}
    beside = {f.relpath: f.content for f in plan.target_files}
    to_write: dict[str, bytes] = {}
    for rel, content in {**wanted, **beside}.items():
        path = root / rel
        if path.is_symlink() or path.is_dir():
            raise RenderTreeError(f"{path} is a symlink or a folder where a manifest goes; remove it")
        if path.exists():
            if _existing(path) == content:
                if rel in wanted:
                    result.unchanged.append(rel)
                continue
            if rel in wanted and rel not in previous.files:
                result.adopted.append(rel)
        to_write[rel] = content

    stale = {rel for rel in previous.files if rel not in wanted}
    stale |= _provider_written(root, {*targets, *previous.targets}, skip={*wanted, *previous.files})
    emptied = sorted((set(previous.targets) | {r.split("/")[0] for r in stale}) - set(targets))
    stale |= {f"{t}/{ARGOCD_IGNORE_DIFFERENCES_FILE}" for t in emptied}
    to_remove = sorted(rel for rel in stale if (root / rel).is_file() and not (root / rel).is_symlink())

    temps = _prepare(root, to_write)
    journal = _journal_path(root, stack)
    ops = [f"write {rel}\n" for rel in sorted(temps)] + [f"remove {rel}\n" for rel in to_remove]
    ops += [f"prune {t}\n" for t in emptied] + [f"keep {t}\n" for t in targets]
    record = _record_text(stack, targets, list(wanted))
    try:
        _atomic_write(journal, ("".join(ops) + "record\n" + record).encode("utf-8"))
    except BaseException:
        _discard(temps)
        raise
    try:
        _apply_journal(root, journal)
    except Exception as exc:
        try:
            _apply_journal(root, journal)
        except Exception:
            raise RenderTreeError(
                f"the render of {root} was interrupted after its commit point ({exc}); the next "
                f"`nodefleet render` completes it from {journal.name} before doing anything else"
            ) from exc
    result.written = sorted(rel for rel in temps if rel in wanted)
    result.removed = [rel for rel in to_remove if _plain_relpath(rel, 3)]
    result.beside_written = sorted(rel for rel in temps if rel in beside)
    result.removed_folders = [t for t in emptied if not (root / t).exists()]


def _prepare(root: Path, to_write: dict[str, bytes]) -> dict[str, Path]:
    """Phase 1: every new file as a synced temporary beside its destination; nothing visible changes."""
    temps: dict[str, Path] = {}
    try:
        for rel, content in sorted(to_write.items()):
            path = root / rel
            _make_dirs(path.parent)
            temp = _temp_path(path)
            _write_new_file(temp, content)
            temps[rel] = temp
    except BaseException:
        _discard(temps)
        raise
    return temps


def _existing(path: Path) -> bytes | None:
    """What a manifest file holds now (None when it is too large to be one); a pipe or device is refused."""
    try:
        return reader.read_regular_file(path)
    except reader.FileTooLargeError:
        return None
    except reader.FileKindError as exc:
        raise RenderTreeError(f"{path} {exc} where a manifest goes; remove it") from None
    except OSError as exc:
        raise RenderTreeError(
            f"{path} cannot be read ({exc.strerror}) where a manifest goes; remove it"
        ) from None


def _apply_journal(root: Path, journal: Path) -> None:
    """Phase 2 (and recovery): renames, removals, folders, the record; then the journal goes."""
    try:
        text = reader.read_text(journal, what="render journal")
    except reader.FileProblem as exc:
        raise RenderTreeError(
            f"{exc.source}: the journal of an interrupted render {exc.problem}; remove it and render again"
        ) from None
    ops, _, record = text.partition("record\n")
    keep: list[str] = []
    prune: list[str] = []
    touched: set[Path] = set()
    for line in ops.splitlines():
        verb, _, rel = line.partition(" ")
        if verb in ("write", "remove") and not _owned_file(rel):
            continue
        path = root / rel
        if verb == "write":
            temp = _temp_path(path)
            if temp.exists():
                os.replace(temp, path)
                touched.add(path.parent)
        elif verb == "remove":
            with contextlib.suppress(FileNotFoundError):
                path.unlink()
            touched.add(path.parent)
        elif verb == "prune" and _plain_relpath(rel, 1):
            prune.append(rel)
        elif verb == "keep" and _plain_relpath(rel, 1):
            keep.append(rel)
    for target in keep:
        # The provider creates both layout folders for every target it writes to.
        for layout in LAYOUT_DIRS:
            _make_dirs(root / target / layout)
    for target in prune:
        for layout in LAYOUT_DIRS:
            _remove_if_empty(root / target / layout)
        _remove_if_empty(root / target)
    for folder in touched:
        _sync_dir(folder)
    stack = journal.name.removeprefix(RECORD_PREFIX).removesuffix(JOURNAL_SUFFIX)
    _atomic_write(record_path(root, stack), record.encode("utf-8"))
    journal.unlink()
    _sync_dir(root)


def _recover(root: Path) -> bool:
    """Finish a render interrupted after its commit point; drop temporaries of one interrupted before."""
    journals = sorted(root.glob(f"{RECORD_PREFIX}*{JOURNAL_SUFFIX}"))
    for journal in journals:
        _apply_journal(root, journal)
    for temp in [
        *root.glob(f".*{TEMP_SUFFIX}"),
        *root.glob(f"*/.*{TEMP_SUFFIX}"),
        *root.glob(f"*/*/.*{TEMP_SUFFIX}"),
    ]:
        temp.unlink()
    return bool(journals)


def _provider_written(root: Path, targets: set[str], skip: set[str]) -> set[str]:
    """Files in these targets' layout folders, other than ``skip``, that are render output: each named
    exactly as the provider names the object it holds (``pulumi up`` in render mode wrote it)."""
    found: set[str] = set()
    for target in targets:
        for layout in LAYOUT_DIRS:
            folder = root / target / layout
            if not folder.is_dir() or folder.is_symlink():
                continue
            for path in folder.glob("*.yaml"):
                rel = f"{target}/{layout}/{path.name}"
                if rel in skip or path.is_symlink() or not path.is_file():
                    continue
                try:
                    obj = reader.load_yaml(reader.read_text(path), str(path), loader=reader.FastBoundedLoader)
                except reader.FileProblem:
                    continue
                if (
                    isinstance(obj, dict)
                    and isinstance(obj.get("metadata"), dict)
                    and obj.get("kind")
                    and manifest_path(obj) == f"{layout}/{path.name}"
                ):
                    found.add(rel)
    return found


def _refuse_foreign_targets(root: Path, stack: str, targets: list[str]) -> None:
    for other in root.glob(f"{RECORD_PREFIX}*"):
        name = other.name.removeprefix(RECORD_PREFIX)
        if name == stack or name.endswith(JOURNAL_SUFFIX):
            continue
        shared = sorted(set(targets) & _read_record(other).targets)
        if shared:
            raise RenderTreeError(
                f"{root / shared[0]} belongs to the render of stack '{name}' ({other.name}); two stacks "
                "cannot render the same cluster folder: give them different output.directory values"
            )


def _refuse_symlinks(root: Path, target: str) -> None:
    for path in (root / target, *(root / target / layout for layout in LAYOUT_DIRS)):
        if path.is_symlink():
            raise RenderTreeError(
                f"{path} is a symlink; a render writes only into real folders below {root}, so replace it "
                "with a folder (or remove it)"
            )


# --- file system primitives ---------------------------------------------------------------------------


def _journal_path(root: Path, stack: str) -> Path:
    return root / f"{RECORD_PREFIX}{stack}{JOURNAL_SUFFIX}"


def _temp_path(path: Path) -> Path:
    return path.with_name(f".{path.name}{TEMP_SUFFIX}")


def _write_new_file(path: Path, content: bytes) -> None:
    with contextlib.suppress(FileNotFoundError):
        path.unlink()
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        view = memoryview(content)
        while view:
            view = view[os.write(fd, view) :]
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(path: Path, content: bytes) -> None:
    temp = _temp_path(path)
    _write_new_file(temp, content)
    os.replace(temp, path)
    _sync_dir(path.parent)


def _discard(temps: dict[str, Path]) -> None:
    for temp in temps.values():
        with contextlib.suppress(FileNotFoundError):
            temp.unlink()


def _make_dirs(path: Path) -> None:
    """Like the provider's os.MkdirAll(dir, 0700): every missing folder on the way gets mode 0700."""
    missing = []
    while not path.exists():
        missing.append(path)
        path = path.parent
    for folder in reversed(missing):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700)


def _remove_if_empty(path: Path) -> None:
    try:
        path.rmdir()
    except OSError as e:
        if e.errno not in (errno.ENOENT, errno.ENOTEMPTY, errno.EEXIST):
            raise


def _sync_dir(path: Path) -> None:
    with contextlib.suppress(FileNotFoundError):
        fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
