"""Which stack a command works on, loaded once: its file, its validated model and the program run under the
mock runtime, in one value (:class:`LoadedStack`) that ``check``, ``render`` and ``forecast`` hand down."""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import gc
import json
import os
import signal
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.exits import InputError


def add_source(parser: argparse.ArgumentParser) -> None:
    src = parser.add_mutually_exclusive_group(required=True)
    src.add_argument("--stack", help="stack name: reads stacks/Pulumi.<stack>.yaml")
    src.add_argument("--config-file", type=Path, help="a stack file elsewhere (Pulumi.<name>.yaml)")


def load(args: argparse.Namespace) -> tuple[str, dict[str, Any], str | None]:
    """(stack name, the stack file's ``config:`` block, the file as messages must name it).

    The file is ``None`` for ``--stack``: the program's default, ``stacks/Pulumi.<stack>.yaml``, is right.
    """
    from mockruntime.run import read_stack_config, stack_path
    from nodefleet.stackfile.yamlfile import YAMLFileError

    try:
        if args.stack:
            return (
                args.stack,
                read_stack_config(stack_path(args.stack), f"stacks/Pulumi.{args.stack}.yaml"),
                None,
            )
        path: Path = args.config_file
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
        return stack, read_stack_config(path), str(path)
    except (FileNotFoundError, YAMLFileError) as exc:
        raise InputError(str(exc)) from None


#: From this many stack files on, a fleet command reads them through the cache of their values
#: (:func:`nodefleet.stackfile.yamlfile.remembered_values`); fewer read faster without it.
CACHED_FLEET = 100


#: From this many stack files whose values the cache does not hold, a fleet read through it parses them on two
#: cores (:func:`_read_ahead`).
FORKED_READ = 200
#: ``1``: a fleet read never forks (every file parsed in the command's own process, as fewer files are).
SERIAL_READ_ENV = "NODEFLEET_SERIAL_READ"


@contextmanager
def many_stacks(stacks_dir: Path | None = None, files: Sequence[tuple[Path, str]] = ()) -> Iterator[None]:
    """Within the block, which reads and validates a whole fleet's stack files, Python's cycle collector does not
    run; after it, what the block kept (the fleet, alive to the command's end) is left out of its later passes.

    Why: every stack file read allocates a few hundred YAML nodes and marks, then models and manifests, and the
    collector runs every 700 allocations, its older generations over every object kept so far: at 10,000 stack
    files it took a third of the time of reading them (docs/measurements.md, "Fleet commands at 10,000 stacks").
    None of these values holds a reference cycle; memory is still freed as each value is let go.

    ``stacks_dir``: the stack files of that folder are read through the cache of their values
    (:func:`nodefleet.stackfile.yamlfile.remembered_values`); ``files``, the (path, name in messages) of those the
    block reads in that order, lets a read that finds many of them not in the cache parse them on two cores
    (:func:`_read_ahead`)."""
    from nodefleet.stackfile.yamlfile import remembered_values

    with remembered_values(stacks_dir) if stacks_dir is not None else contextlib.nullcontext():
        collecting = gc.isenabled()
        gc.disable()
        try:
            with _read_ahead(files if stacks_dir is not None else ()):
                yield
        finally:
            if collecting:
                gc.freeze()
                gc.enable()


@contextmanager
def _read_ahead(files: Sequence[tuple[Path, str]]) -> Iterator[None]:
    """Within the block, the values of the stack files ``files`` (in the order the block reads them) that the
    cache does not hold, when they are at least :data:`FORKED_READ`, are parsed on two cores: a forked child
    parses them from the last one back and hands in each value as the cache's entry, while this process reads
    from the first one on as without it, until it reaches the files the child has done and takes those from the
    cache as a warm read does (docs/measurements.md, "Fleet commands at 10,000 stacks"). A file the child cannot
    read whole (a broken one, one with a tag) is left to this process's read, which gives its message: every value
    and message is the serial read's.

    Only the libyaml reading of :func:`nodefleet.stackfile.yamlfile.plain_values` runs in the child, which
    leaves by ``os._exit`` (no exit handler, no buffered output of this process written twice) and is stopped
    once it is no longer needed; a child that fails or dies costs only time: this process reads those files
    itself. Never forked where another thread runs (a fork copies no thread, and a lock one held would stay held
    in the child), nor with ``NODEFLEET_SERIAL_READ=1``."""
    if len(files) < FORKED_READ or os.environ.get(SERIAL_READ_ENV) == "1" or not hasattr(os, "fork"):
        yield
        return
    from nodefleet.stackfile.yamlfile import before_reads, not_remembered, plain_values, read_ahead, remember

    missing = not_remembered(read_ahead(files))
    if len(missing) < FORKED_READ or not _only_thread():
        yield
        return
    readable, writable = os.pipe()
    with contextlib.suppress(AttributeError, OSError):  # Linux: room for the child to run ahead of the reads
        fcntl.fcntl(writable, fcntl.F_SETPIPE_SZ, 1 << 20)
    try:
        pid = os.fork()
    except OSError:
        os.close(readable)
        os.close(writable)
        yield
        return
    if pid == 0:  # the child: each value down the pipe as one JSON line, last file first, then gone
        code = 1
        try:
            os.close(readable)
            with os.fdopen(writable, "wb", buffering=0) as out:
                for source, text in reversed(missing):
                    # An entry of the name alone: a file left to the parent's read, passed all the same.
                    entry = plain_values([(source, text)]) or [[source]]
                    out.write(json.dumps(entry[0]).encode() + b"\n")
            code = 0
        except BaseException:  # whatever it is, the parent reads these files itself
            pass
        finally:
            os._exit(code)
    os.close(writable)
    os.set_blocking(readable, False)
    child = _Child(pid, readable, remember)
    before_reads(child.before_read)
    try:
        yield
    finally:
        before_reads(None)
        child.stop()


class _Child:
    """The parent's side of :func:`_read_ahead`: before each read, the entries the child has written so far are
    kept in the cache; once a read finds its file among those the child has passed (every later file then is),
    the child is stopped."""

    def __init__(self, pid: int, readable: int, remember: Any) -> None:
        self.pid, self.readable, self.remember = pid, readable, remember
        self.passed: set[str] = set()
        self.partial = b""

    def before_read(self, source: str) -> None:
        if self.pid and source not in self.passed:
            self._take()
        if self.pid and source in self.passed:
            self.stop()

    def _take(self) -> None:
        chunks = [self.partial]
        while True:
            try:
                chunk = os.read(self.readable, 1 << 20)
            except BlockingIOError:
                break
            except OSError:
                chunk = b""
            if not chunk:  # the child is done, or dead: what it wrote is all there is
                self.stop(kill=False)
                break
            chunks.append(chunk)
        *lines, self.partial = b"".join(chunks).split(b"\n")
        entries = []
        for line in lines:
            try:
                entry = json.loads(line)
            except (ValueError, RecursionError):
                continue
            if isinstance(entry, list) and entry and isinstance(entry[0], str):
                self.passed.add(entry[0])
                entries.append(entry)
        self.remember(entries)

    def stop(self, *, kill: bool = True) -> None:
        """Reap the child; ``kill`` it first unless it has closed its end of the pipe (it is leaving then)."""
        if self.pid:
            pid, self.pid = self.pid, 0
            if kill:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(OSError):
                os.waitpid(pid, 0)
            with contextlib.suppress(OSError):
                os.close(self.readable)


def _only_thread() -> bool:
    """Whether the main thread is this process's only one. Linux lists every thread in ``/proc/self/task``, those a
    library starts outside :mod:`threading` too (gRPC's, a native pool's), which :func:`threading.active_count`
    does not count; elsewhere that count is what there is."""
    try:
        return len(os.listdir("/proc/self/task")) == 1
    except OSError:
        return threading.active_count() == 1


def stack_file_shown(args: argparse.Namespace) -> str:
    """The stack file as messages name it: the ``--config-file`` path, else ``stacks/Pulumi.<stack>.yaml``."""
    return str(args.config_file) if getattr(args, "config_file", None) else f"stacks/Pulumi.{args.stack}.yaml"


def run_loaded(stack: str, config: dict[str, Any], source: str | None) -> Any:
    """The program run under the mock runtime for a stack :func:`load` has read."""
    import pulumi

    from mockruntime.run import run_program

    try:
        return run_program(stack, config, source=source)
    except pulumi.RunError as exc:
        raise InputError(str(exc)) from None


def stacks_dir_of(args: argparse.Namespace) -> Path:
    """The folder of the chosen stack's file: ``stacks/``, or the folder of a ``--config-file``."""
    from mockruntime.run import PROJECT_DIR

    config_file = getattr(args, "config_file", None)
    return Path(config_file).parent if config_file else PROJECT_DIR / "stacks"


def registry_of(stacks_dir: Path) -> Any:
    """The fleet's registry of management clusters beside the stack files of ``stacks_dir`` (a
    ``nodefleet.fleet.registry.Registry``); one that cannot be read stops with its message (exit 2)."""
    from mockruntime.snapshots import shown_path
    from nodefleet.fleet.registry import RegistryError, load_registry, registry_path

    try:
        return load_registry(stacks_dir, shown_path(registry_path(stacks_dir).absolute()))
    except RegistryError as e:
        raise InputError(str(e)) from None


def fleet_of(stack: str, config: dict[str, Any], source: str | None, registry: Any = None) -> Any:
    """The validated stack (a ``nodefleet.stackfile.model.Fleet``) for a stack :func:`load` has read, judged
    against the fleet's ``registry`` (default: the one in ``stacks/``)."""
    from mockruntime.run import PROJECT_DIR
    from nodefleet.fleet.registry import load_fleet_in
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError

    if registry is None:
        registry = registry_of(Path(source).parent if source else PROJECT_DIR / "stacks")
    try:
        return load_fleet_in(registry, config.get(CONFIG_KEY), stack, PROJECT_DIR, source=source)
    except ConfigError as e:
        raise InputError(str(e)) from None


@dataclass(frozen=True)
class LoadedStack:
    """A stack as the commands use it: read once, run once under the mock runtime, validated once."""

    name: str
    #: The stack file's ``config:`` block.
    config: dict[str, Any]
    #: The file as the program must name it: ``None`` for ``stacks/Pulumi.<stack>.yaml``, its default.
    source: str | None
    #: The file as messages name it.
    shown: str
    #: The program's run under the mock runtime (a ``mockruntime.run.MockRun``).
    run: Any
    #: The validated stack, its objects planned (a ``nodefleet.stackfile.model.Fleet``).
    fleet: Any
    #: The fleet's registry of management clusters (a ``nodefleet.fleet.registry.Registry``).
    registry: Any = None

    @property
    def siblings(self) -> Path | None:
        """The folder of a ``--config-file``, whose other stack files may share its GitOps tree; ``None`` for
        ``stacks/``, the default."""
        return Path(self.source).resolve().parent if self.source else None


def load_stack(args: argparse.Namespace) -> LoadedStack:
    """The chosen stack, loaded once. The program runs first, so a stack file it refuses is told as the program
    tells it (``InputError``); the model it validated is then read into the same value."""
    name, config, source = load(args)
    pending = getattr(args, "secrets_to_set", ())
    if pending:
        from mockruntime.run import SECRET_PLACEHOLDER

        # `import`: stack secrets no live object holds, set by the user once the stack is written. The mock
        # runtime reads no secret's value (every `secure:` value is this placeholder), so the check runs as it
        # will once they are set.
        config = {**{f"nodefleet:{key}": SECRET_PLACEHOLDER for key in pending}, **config}
    registry = registry_of(stacks_dir_of(args))
    run = run_loaded(name, config, source)
    fleet = fleet_of(name, config, source, registry)
    return LoadedStack(name, config, source, stack_file_shown(args), run, fleet, registry)
