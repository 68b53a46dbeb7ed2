"""The nodefleet program under Pulumi's mock runtime, recording every registration with its options."""

from __future__ import annotations

import asyncio
import functools
import gc
import json
import os
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc, settings

from nodefleet.config import STACK_FILE_ENV
from nodefleet.yamlfile import YAMLFileError, load_yaml, read_text

PROJECT_DIR = Path(__file__).resolve().parent.parent
# Stack secrets (`secure:` values) need the stack's secrets provider, which the mock runtime does not have. It
# hands the program this marker instead: PEM-shaped, because CA bundles are the secrets nodefleet builds with,
# and no policy reads a secret's value.
SECRET_PLACEHOLDER = "-----BEGIN CERTIFICATE-----\n[stack secret, not decrypted by the mock runtime]\n-----END CERTIFICATE-----\n"


@dataclass
class Registration:
    """One RegisterResource call: what the engine (and a policy) would see before any provider runs."""

    type: str
    name: str
    urn: str
    custom: bool
    inputs: dict[str, Any]
    parent: str = ""
    provider: str = ""
    ignore_changes: list[str] = field(default_factory=list)
    depends_on: list[str] = field(default_factory=list)
    #: Top-level input names whose value is (or contains) a Pulumi secret; the values above are unwrapped.
    secret_inputs: list[str] = field(default_factory=list)


class DuplicateURNError(Exception):
    """Two registrations with one URN: the engine refuses the second, so the mock runtime does too."""


class _EchoMocks(mocks.Mocks):
    """Every resource's outputs are its inputs, so previews and applies resolve the same values."""

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        return {}, None


class _RecordingMonitor(mocks.MockMonitor):
    def __init__(self) -> None:
        super().__init__(_EchoMocks())
        self.registrations: list[Registration] = []
        #: Event loops made for the gRPC worker threads, closed after the run rather than at interpreter exit.
        self.thread_loops: list[asyncio.AbstractEventLoop] = []

    def RegisterResource(self, request: Any) -> Any:
        try:
            asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.thread_loops.append(loop)
        if request.type != "pulumi:pulumi:Stack":
            urn = self.make_urn(request.parent, request.type, request.name)
            if urn in self.resources:
                # The engine refuses a second registration of one URN; the mock runtime would overwrite it.
                raise DuplicateURNError(
                    f"Duplicate resource URN '{urn}'; the Pulumi engine rejects it: two objects of one type "
                    "got the same resource name"
                )
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            state = self.resources[response.urn].state
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    custom=bool(request.custom),
                    inputs={key: _unwrap(value) for key, value in state.items()},
                    parent=request.parent,
                    provider=request.provider,
                    ignore_changes=list(request.ignoreChanges),
                    depends_on=list(request.dependencies),
                    secret_inputs=sorted(key for key, value in state.items() if _has_secret(value)),
                )
            )
        return response


def _is_secret(value: Any) -> bool:
    return isinstance(value, dict) and value.get(rpc._special_sig_key) == rpc._special_secret_sig


def _has_secret(value: Any) -> bool:
    if _is_secret(value):
        return True
    if isinstance(value, dict):
        return any(_has_secret(v) for v in value.values())
    return isinstance(value, list) and any(_has_secret(v) for v in value)


def _unwrap(value: Any) -> Any:
    """Secret values as plain values, the way a policy sees them after the engine decrypts them."""
    if _is_secret(value):
        return _unwrap(value.get("value"))
    if isinstance(value, dict):
        return {k: _unwrap(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_unwrap(v) for v in value]
    return value


@dataclass
class MockRun:
    stack: str
    registrations: list[Registration]

    def of_type(self, token: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == token]

    def by_urn(self, urn: str) -> Registration | None:
        return next((r for r in self.registrations if r.urn == urn), None)

    def provider_of(self, reg: Registration) -> Registration | None:
        """The provider resource a registration names (``urn::id`` reference), if any."""
        return self.by_urn(reg.provider.rsplit("::", 1)[0]) if reg.provider else None


def stack_path(stack: str, project_dir: Path = PROJECT_DIR) -> Path:
    path = project_dir / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(
            p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in path.parent.glob("Pulumi.*.yaml")
        )
        raise FileNotFoundError(f"stack '{stack}' has no file stacks/{path.name}; stacks: {', '.join(known)}")
    return path


def read_stack_config(path: Path, source: str | None = None) -> dict[str, Any]:
    """The ``config:`` block of a stack file, as the CLI would hand it to the program.

    Read as strictly as the Pulumi CLI reads it (duplicate keys are errors); problems raise
    :class:`nodefleet.yamlfile.YAMLFileError` naming ``source`` (default: the path), never echoing content.
    """
    name = source or str(path)
    document = load_yaml(read_text(path, name), name)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise YAMLFileError(
            f"{name}: the top level is a {type(document).__name__}; a stack file is a mapping: put `config:` "
            "on the first line and nodefleet:fleet under it (see README, 'Stack configuration')"
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise YAMLFileError(
            f"{name}: config: is a {type(config).__name__}; write it as a mapping of keys such as "
            "nodefleet:fleet to their values"
        )
    return {
        str(key): SECRET_PLACEHOLDER if isinstance(v, dict) and set(v) == {"secure"} else v
        for key, v in config.items()
    }


def run_program(
    stack: str,
    config: dict[str, Any] | None = None,
    *,
    preview: bool = False,
    project_dir: Path = PROJECT_DIR,
    source: str | None = None,
) -> MockRun:
    """Run ``__main__.py`` for ``stack`` with ``config`` (default: the stack file's) and record registrations.

    ``source`` is the file the config was read from when it is not ``stacks/Pulumi.<stack>.yaml``: the
    program names it in its messages. Raises whatever the program raises, e.g. ``pulumi.RunError`` for
    invalid configuration.
    """
    values = read_stack_config(stack_path(stack, project_dir)) if config is None else config
    monitor = _RecordingMonitor()
    own_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(own_loop)
    settings.reset_options(project="nodefleet", stack=stack, preview=preview)
    mocks.set_mocks(monitor.mocks, project="nodefleet", stack=stack, preview=preview, monitor=monitor)
    pulumi.runtime.set_all_config(
        {key: value if isinstance(value, str) else json.dumps(value) for key, value in values.items()}
    )
    if str(project_dir) not in sys.path:
        sys.path.insert(0, str(project_dir))

    @mocks.test  # type: ignore[untyped-decorator]
    def _program() -> None:
        runpy.run_path(str(project_dir / "__main__.py"), run_name="__main__")

    raised: BaseException | None = None
    previous = os.environ.get(STACK_FILE_ENV)
    if source is not None:
        os.environ[STACK_FILE_ENV] = source
    else:
        os.environ.pop(STACK_FILE_ENV, None)
    try:
        _program()
    except Exception as e:
        # What was registered before the failure, for callers that must show nothing was.
        e.registrations = monitor.registrations  # type: ignore[attr-defined]
        raised = e
        raise
    finally:
        if previous is None:
            os.environ.pop(STACK_FILE_ENV, None)
        else:
            os.environ[STACK_FILE_ENV] = previous
        for loop in {own_loop, asyncio.get_event_loop(), *monitor.thread_loops}:
            if loop.is_running():
                continue  # a gRPC worker thread is still inside it (a registration the failure overtook)
            _cancel_pending(loop)
            loop.set_exception_handler(functools.partial(_quiet_about_reported_errors, raised))
            loop.close()
        # Loops the runtime made on its own threads are unreachable now; collecting them here closes them
        # while their sockets still exist, instead of noisily at interpreter exit.
        gc.collect()
    return MockRun(stack, monitor.registrations)


def _quiet_about_reported_errors(
    raised: BaseException | None, loop: asyncio.AbstractEventLoop, context: dict[str, Any]
) -> None:
    """The outputs a failure failed keep its exception in futures nobody awaits any more; when they are
    collected, in whatever runs next in this process, asyncio would log it again (with its traceback) as
    "Future exception was never retrieved". What :func:`run_program` raised to its caller, or caused it, and
    any ``RunError`` (the program's own message) are not logged again; everything else is."""
    exception = context.get("exception")
    chain = {id(raised), id(getattr(raised, "__cause__", None))} if raised is not None else set()
    if isinstance(exception, pulumi.RunError) or id(exception) in chain - {id(None)}:
        return
    if raised is not None and getattr(exception, "__cause__", None) is raised:
        return
    loop.default_exception_handler(context)


def _cancel_pending(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what a failed program left running (RPCs waiting on the output that failed), so no task is
    destroyed pending: asyncio would print "Task was destroyed but it is pending!" under the program's error."""
    if loop.is_closed():
        return
    pending = [task for task in asyncio.all_tasks(loop) if not task.done()]
    for task in pending:
        task.cancel()
    if pending:
        loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))


def stack_fleet(stack: str, project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    """A deep copy of a committed stack's ``nodefleet:fleet`` value, for tests and benchmarks to vary."""
    import copy

    return copy.deepcopy(read_stack_config(stack_path(stack, project_dir))["nodefleet:fleet"])
