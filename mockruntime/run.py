"""The nodefleet program under Pulumi's mock runtime, recording every registration with its options.

What is recorded is what the engine would see: URNs built as the engine builds them, for the stack and the
project of ``Pulumi.yaml`` (so ``check --json`` names resources exactly as ``pulumi preview`` does), and the
resource options the engine passes on to policies (``PolicyResourceOptions``) or acts on when it diffs,
replaces and deletes, with the values a resource inherits from its parent.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import json
import os
import re
import runpy
import sys
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks, rpc, settings

from nodefleet.stackfile.model import CONFIG_KEY, STACK_FILE_ENV
from nodefleet.stackfile.yamlfile import YAMLFileError, load_yaml, read_text

PROJECT_DIR = Path(__file__).resolve().parent.parent
# Stack secrets (`secure:` values) need the stack's secrets provider, which the mock runtime does not have. It
# hands the program this marker instead: PEM-shaped, because CA bundles are the secrets nodefleet builds with,
# and no policy reads a secret's value.
SECRET_PLACEHOLDER = "-----BEGIN CERTIFICATE-----\n[stack secret, not decrypted by the mock runtime]\n-----END CERTIFICATE-----\n"


@dataclass(frozen=True)
class CustomTimeouts:
    """Seconds, as the engine hands them to policies (0: not set)."""

    create: float = 0.0
    update: float = 0.0
    delete: float = 0.0


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
    #: Property paths whose change replaces the resource instead of updating it.
    replace_on_changes: list[str] = field(default_factory=list)
    #: None when the program did not say (the engine then creates the replacement first).
    delete_before_replace: bool | None = None
    protect: bool = False
    retain_on_delete: bool = False
    #: URN of the resource whose deletion deletes this one, or "".
    deleted_with: str = ""
    additional_secret_outputs: list[str] = field(default_factory=list)
    #: Alias URNs, resolved from the program's alias specs the way the engine resolves them.
    aliases: list[str] = field(default_factory=list)
    custom_timeouts: CustomTimeouts = field(default_factory=CustomTimeouts)
    #: The ``import`` option: the ID of a live object the engine adopts instead of creating, or "".
    import_id: str = ""
    #: A component's registered outputs (``register_outputs``), which is what the engine hands a stack policy
    #: for it; a custom resource's outputs are its inputs under these mocks.
    outputs: dict[str, Any] = field(default_factory=dict)

    @property
    def stack_props(self) -> dict[str, Any]:
        """What a stack policy sees as the resource's properties: the engine's ``AnalyzeStack`` reads each
        resource's outputs, so a component shows what it registered as outputs, never its inputs."""
        return self.inputs if self.custom else self.outputs


class DuplicateURNError(Exception):
    """Two registrations with one URN: the engine refuses the second, so the mock runtime does too."""


class _EchoMocks(mocks.Mocks):
    """Every resource's outputs are its inputs, so previews and applies resolve the same values."""

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str, dict[str, Any]]:
        return f"{args.name}-id", dict(args.inputs)

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[Any, Any], list[tuple[str, str]] | None]:
        return {}, None


ROOT_STACK_TYPE = "pulumi:pulumi:Stack"


def make_urn(stack: str, project: str, parent: str, type_: str, name: str) -> str:
    """The URN the engine gives a resource: the parent's whole qualified type chain before the resource's
    own type, except for the root stack's (pulumi/pulumi ``pkg/resource/deploy/deployment.go``
    ``generateURN`` and ``sdk/go/common/resource/urn/urn.go`` ``New``)."""
    qualified = type_
    if parent:
        parent_type = parent.split("::")[2]
        if parent_type != ROOT_STACK_TYPE:
            qualified = f"{parent_type}${type_}"
    return f"urn:pulumi:{stack}::{project}::{qualified}::{name}"


def _alias_urn(stack: str, project: str, name: str, type_: str, parent: str, alias: Any) -> str:
    """One alias as a URN, as the engine collapses it for a run without previous state (pulumi/pulumi
    ``pkg/resource/deploy/step_generator.go`` ``collapseAliasToUrn``, ``sdk/go/common/resource/alias.go``
    ``CreateURN``): unset parts default to the resource's own name, type, parent, stack and project."""
    if alias.WhichOneof("alias") == "urn":
        return str(alias.urn)
    spec = alias.spec
    alias_parent = spec.parentUrn if spec.WhichOneof("parent") == "parentUrn" and spec.parentUrn else parent
    if spec.WhichOneof("parent") == "noParent" and spec.noParent:
        alias_parent = ""
    if alias_parent and alias_parent.split("::")[2] == ROOT_STACK_TYPE:
        alias_parent = ""
    alias_type = spec.type or type_
    if alias_parent:
        prefix = alias_parent[: alias_parent.rindex("::")] + "$"
    else:
        prefix = f"urn:pulumi:{spec.stack or stack}::{spec.project or project}::"
    return f"{prefix}{alias_type}::{spec.name or name}"


_GO_DURATION = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)")
_GO_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "μs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def _seconds(duration: str) -> float:
    """A Go duration string (``"10m"``, ``"1h30m"``) in seconds, as the engine reads custom timeouts."""
    if not duration:
        return 0.0
    sign = -1.0 if duration.startswith("-") else 1.0
    body = duration.lstrip("+-")
    if body == "0":
        return 0.0
    parts = _GO_DURATION.findall(body)
    if not parts or "".join(n + u for n, u in parts) != body:
        raise ValueError(f"unable to parse customTimeout value {duration!r}")
    return sign * sum(float(n) * _GO_UNITS[u] for n, u in parts)


class _RecordingMonitor(mocks.MockMonitor):
    def __init__(self, stack: str, project: str) -> None:
        super().__init__(_EchoMocks())
        self.stack = stack
        self.project = project
        self.registrations: list[Registration] = []
        #: Every registration by URN, components and the root stack included: children inherit from them.
        self.by_urn: dict[str, Registration] = {}
        #: Event loops made for the gRPC worker threads, closed after the run rather than at interpreter exit.
        self.thread_loops: list[asyncio.AbstractEventLoop] = []
        #: URNs claimed so far. Registrations arrive on several worker threads at once, so a URN is claimed
        #: under a lock before it is registered: a check of ``self.resources`` alone would race.
        self._claimed: set[str] = set()
        self._claim_lock = threading.Lock()

    def make_urn(self, parent: str, type_: str, name: str) -> str:
        # The SDK's mock names every stack "stack" and project "project" (its settings are context variables
        # the gRPC worker thread does not see) and keeps only the parent's last type.
        return make_urn(self.stack, self.project, parent, type_, name)

    def RegisterResource(self, request: Any) -> Any:
        try:
            asyncio.get_event_loop()
        except RuntimeError:
            loop = asyncio.new_event_loop()
            asyncio.set_event_loop(loop)
            self.thread_loops.append(loop)
        if request.type != "pulumi:pulumi:Stack":
            urn = self.make_urn(request.parent, request.type, request.name)
            with self._claim_lock:
                duplicate = urn in self._claimed
                self._claimed.add(urn)
            if duplicate:
                # The engine refuses a second registration of one URN; the mock runtime would overwrite it.
                raise DuplicateURNError(
                    f"Duplicate resource URN '{urn}'; the Pulumi engine rejects it: two objects of one type "
                    "got the same resource name"
                )
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        registered = self.resources.get(response.urn)  # the mock keeps no state for the root stack
        state = registered.state if registered else {}
        # Options a child does not set come from its parent (pulumi/pulumi pkg/resource/deploy/source_eval.go,
        # inheritFromParent: protect, retainOnDelete, deletedWith).
        parent = self.by_urn.get(request.parent)
        reg = Registration(
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
            replace_on_changes=list(request.replaceOnChanges),
            # The engine also takes a bare `true` without the Defined flag (the Go SDK does not set it).
            delete_before_replace=bool(request.deleteBeforeReplace)
            if request.deleteBeforeReplaceDefined or request.deleteBeforeReplace
            else None,
            protect=request.protect if request.HasField("protect") else (parent.protect if parent else False),
            retain_on_delete=request.retainOnDelete
            if request.HasField("retainOnDelete")
            else (parent.retain_on_delete if parent else False),
            deleted_with=request.deletedWith or (parent.deleted_with if parent else ""),
            import_id=request.importId,
            additional_secret_outputs=list(request.additionalSecretOutputs),
            aliases=[
                *request.aliasURNs,
                *(
                    _alias_urn(self.stack, self.project, request.name, request.type, request.parent, a)
                    for a in request.aliases
                ),
            ],
            custom_timeouts=CustomTimeouts(
                _seconds(request.customTimeouts.create),
                _seconds(request.customTimeouts.update),
                _seconds(request.customTimeouts.delete),
            ),
        )
        self.by_urn[reg.urn] = reg
        if request.type != ROOT_STACK_TYPE:
            self.registrations.append(reg)
        return response

    def RegisterResourceOutputs(self, request: Any) -> Any:
        reg = self.by_urn.get(request.urn)
        if reg is not None and not reg.custom:
            outputs = rpc.deserialize_properties(request.outputs)
            reg.outputs = {key: _unwrap(value) for key, value in outputs.items()}
        return super().RegisterResourceOutputs(request)  # type: ignore[no-untyped-call]


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


def project_name(project_dir: Path = PROJECT_DIR) -> str:
    """The project's name from its ``Pulumi.yaml``, the second part of every URN the engine makes."""
    source = project_dir / "Pulumi.yaml"
    document = load_yaml(read_text(source, str(source)), str(source))
    name = document.get("name") if isinstance(document, dict) else None
    if not isinstance(name, str) or not name:
        raise YAMLFileError(f"{source}: no `name:`; a Pulumi project file names its project")
    return name


def stack_path(stack: str, project_dir: Path = PROJECT_DIR) -> Path:
    path = project_dir / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(
            p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in path.parent.glob("Pulumi.*.yaml")
        )
        raise FileNotFoundError(f"stack '{stack}' has no file stacks/{path.name}; stacks: {', '.join(known)}")
    return path


def read_stack_config(path: Path, source: str | None = None, *, fast: bool = False) -> dict[str, Any]:
    """The ``config:`` block of a stack file, as the CLI would hand it to the program.

    Read as strictly as the Pulumi CLI reads it (duplicate keys are errors), through the guarded reader
    (:mod:`nodefleet.files`: a regular file, bounded, UTF-8, bounded anchors and depth); problems raise
    :class:`nodefleet.stackfile.yamlfile.YAMLFileError` naming ``source`` (default: the path), never echoing
    content. ``fast``: parse with libyaml where PyYAML has it (the same value and messages; for reading many).
    """
    name = source or str(path)
    document = load_yaml(read_text(path, name), name, fast=fast)
    if document is None:
        document = {}
    if not isinstance(document, dict):
        raise YAMLFileError(
            f"{name}: the top level is a {type(document).__name__}; a stack file is a mapping: put `config:` "
            "on the first line and nodefleet:fleet under it (see docs/configuration.md)"
        )
    config = document.get("config") or {}
    if not isinstance(config, dict):
        raise YAMLFileError(
            f"{name}: config: is a {type(config).__name__}; write it as a mapping of keys such as "
            "nodefleet:fleet to their values"
        )
    if CONFIG_KEY not in config:
        _misspelled_config_key(name, document, config)
    return {
        str(key): SECRET_PLACEHOLDER if isinstance(v, dict) and set(v) == {"secure"} else v
        for key, v in config.items()
    }


#: The top-level keys of a Pulumi stack file (pulumi/pulumi ``sdk/go/common/workspace/project.go``,
#: ``ProjectStack``); a key close to ``config`` that is none of them is a misspelling of it.
_STACK_FILE_KEYS = ("config", "secretsprovider", "encryptedkey", "encryptionsalt", "environment")


def _misspelled_config_key(name: str, document: dict[Any, Any], config: dict[Any, Any]) -> None:
    """Without ``nodefleet:fleet``, a key that is nearly it (``nodefleet:flet``, ``fleet``, ``Nodefleet:Fleet``)
    or a top-level key that is nearly ``config`` is named with the fix, rather than reported as absent."""
    keys = [str(k) for k in config]
    near = [k for k in keys if k.lower() in (CONFIG_KEY, "fleet") or k.lower().endswith(":fleet")]
    near += difflib.get_close_matches(CONFIG_KEY, keys, n=1, cutoff=0.8)
    if near:
        raise YAMLFileError(
            f"{name}: config.{near[0]}: did you mean {CONFIG_KEY}? nodefleet reads its stack from that key only; "
            "rename it (the project name, nodefleet, and the value's name, fleet: see docs/configuration.md)"
        )
    if "config" not in document:
        top = [str(k) for k in document if str(k) not in _STACK_FILE_KEYS]
        hint = difflib.get_close_matches("config", [k.lower() for k in top], n=1, cutoff=0.6)
        if hint:
            written = next(k for k in top if k.lower() == hint[0])
            raise YAMLFileError(
                f"{name}: {written}: not a key of a stack file; did you mean 'config'? Rename it, with "
                f"{CONFIG_KEY} under it (see docs/configuration.md)"
            )


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
    project = project_name(project_dir)
    monitor = _RecordingMonitor(stack, project)
    own_loop = asyncio.new_event_loop()
    asyncio.set_event_loop(own_loop)
    settings.reset_options(project=project, stack=stack, preview=preview)
    mocks.set_mocks(monitor.mocks, project=project, stack=stack, preview=preview, monitor=monitor)
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
        _cancel_pending(own_loop)
        _join_workers(own_loop)
        for loop in {own_loop, asyncio.get_event_loop(), *monitor.thread_loops}:
            _cancel_pending(loop)
            loop.set_exception_handler(functools.partial(_quiet_about_reported_errors, raised))
            loop.close()
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


def _join_workers(loop: asyncio.AbstractEventLoop) -> None:
    """Wait for the gRPC worker threads of ``loop``'s default executor. The SDK stops waiting for registrations
    at the first that fails, and another may still be on a worker thread, running that thread's own event
    loop to serialize its outputs: closing that loop under it fails ("Cannot close a running event loop"), and
    closing it before the thread reaches it fails the thread. The mock monitor's calls do not block, so the
    wait is as long as the registration still in flight."""
    if not loop.is_closed():
        loop.run_until_complete(loop.shutdown_default_executor())


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
