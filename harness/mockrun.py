"""The nodefleet program under Pulumi's mock runtime, recording every registration with its options."""

from __future__ import annotations

import asyncio
import json
import runpy
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
from pulumi.runtime import mocks, settings

PROJECT_DIR = Path(__file__).resolve().parent.parent


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

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)  # type: ignore[no-untyped-call]
        if request.type != "pulumi:pulumi:Stack":
            self.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    urn=response.urn,
                    custom=bool(request.custom),
                    inputs=self.resources[response.urn].state,
                    parent=request.parent,
                    provider=request.provider,
                    ignore_changes=list(request.ignoreChanges),
                    depends_on=list(request.dependencies),
                )
            )
        return response


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


def read_stack_config(stack: str, project_dir: Path = PROJECT_DIR) -> dict[str, Any]:
    """The ``config:`` block of ``stacks/Pulumi.<stack>.yaml``, as the CLI would hand it to the program."""
    import yaml

    path = project_dir / "stacks" / f"Pulumi.{stack}.yaml"
    if not path.exists():
        known = sorted(
            p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in path.parent.glob("Pulumi.*.yaml")
        )
        raise FileNotFoundError(
            f"stack '{stack}' has no file {path.relative_to(project_dir)}; stacks: {', '.join(known)}"
        )
    return (yaml.safe_load(path.read_text()) or {}).get("config") or {}


def run_program(
    stack: str,
    config: dict[str, Any] | None = None,
    *,
    preview: bool = False,
    project_dir: Path = PROJECT_DIR,
) -> MockRun:
    """Run ``__main__.py`` for ``stack`` with ``config`` (default: the stack file's) and record registrations.

    Raises whatever the program raises, e.g. ``pulumi.RunError`` for invalid configuration.
    """
    values = read_stack_config(stack, project_dir) if config is None else config
    monitor = _RecordingMonitor()
    asyncio.set_event_loop(asyncio.new_event_loop())
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

    try:
        _program()
    except Exception as e:
        # What was registered before the failure, for callers that must show nothing was.
        e.registrations = monitor.registrations  # type: ignore[attr-defined]
        raise
    finally:
        asyncio.get_event_loop().close()
    return MockRun(stack, monitor.registrations)
