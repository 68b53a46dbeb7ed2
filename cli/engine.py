"""``preview`` and ``up`` of one stack on the real engine, through Pulumi's Automation API.

The engine is the one ``engine/bootstrap`` chose or built (the CLI its ``.engine/status`` names, its environment in
``.engine/env``, what is missing in ``.engine/status``). When a part is missing, nothing is attempted: the
command names the part and exits 3, as ``engine/run`` does, so a pipeline never mistakes an incomplete
engine for a verdict. One process runs one stack: Python programs share global state, so ``fleet`` starts
one process per stack instead of running several in this one (pulumi/pulumi#6052).

Policy results are read from the engine's event stream (``policyEvent``), because ``pulumi preview
--json`` leaves them out (pulumi/pulumi#18851).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Collection
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli.exits import EXIT_INTERNAL, EXIT_OK, EXIT_VIOLATIONS

PROJECT = Path(__file__).resolve().parent.parent
POLICY_PACK = "policies"


@dataclass(frozen=True)
class EngineStatus:
    complete: bool
    #: What is missing, one line per part (empty when complete).
    missing: tuple[str, ...]

    @property
    def reason(self) -> str:
        return "; ".join(self.missing) or "complete"


def engine_dir(project: Path = PROJECT) -> Path:
    return project / ".engine"


def engine_cli(project: Path = PROJECT) -> Path:
    """The CLI ``engine/bootstrap`` chose (its ``pulumi: ok <version> at <path>`` line: one on PATH, or one it
    built into the machine's cache), else ``.engine/bin/pulumi``."""
    from engine.status import read_status

    return read_status(engine_dir(project) / "status").cli or engine_dir(project) / "bin" / "pulumi"


def engine_status(project: Path = PROJECT, needs: Collection[str] | None = None) -> EngineStatus:
    """Whether ``engine/bootstrap`` completed the engine here, from its ``.engine/status``: every part, or
    the parts in ``needs`` (a stack without AWS resources runs without the AWS provider)."""
    status = engine_dir(project) / "status"
    if not (engine_dir(project) / "env").is_file() or not status.is_file():
        return EngineStatus(False, ("no engine: run `make setup` (engine/bootstrap) first",))
    # Each part once: two bootstraps that ran at once (two checkouts' `make test`) both append their lines.
    missing = tuple(
        dict.fromkeys(
            line.split(": missing:", 1)[0].strip() + ": missing"
            for line in status.read_text(encoding="utf-8").splitlines()
            if ": missing:" in line and (needs is None or line.split(":", 1)[0].strip() in needs)
        )
    )
    return EngineStatus(not missing, missing)


def engine_parts(stack: str, config: dict[str, Any]) -> tuple[str, ...]:
    """The engine parts a stack needs: the CLI, the language host and the Kubernetes provider, and the AWS
    provider when its program declares AWS resources (a self-managed Karpenter's Ignition objects and the
    policy that lets nodes read them), found by running the program under the mock runtime."""
    import pulumi

    from engine.status import CORE
    from mockruntime.run import run_program

    try:
        registrations = run_program(stack, config).registrations
    except pulumi.RunError:
        return CORE  # the engine will refuse the configuration the same way, before any provider starts
    return CORE + (("aws",) if any(r.type.startswith("aws:") for r in registrations) else ())


def engine_env(project: Path = PROJECT) -> dict[str, str]:
    """The environment ``.engine/env`` sets up (PATH, PULUMI_HOME, backend, passphrase), as a shell sees it.

    The file is shell (it keeps a caller's PULUMI_BACKEND_URL and passphrase), so a shell evaluates it.
    """
    env_file = engine_dir(project) / "env"
    out = subprocess.run(
        ["bash", "-c", f'. "{env_file}" && env -0'], capture_output=True, check=True, env=os.environ.copy()
    ).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


def policy_violations(events: list[Any]) -> list[dict[str, str]]:
    """Violations from Automation API engine events, in the ``check --json`` shape."""
    out = []
    for event in events:
        policy = getattr(event, "policy_event", None)
        if policy is None:
            continue
        out.append(
            {
                "policy": policy.policy_name,
                "level": policy.enforcement_level,
                "resource": policy.resource_urn or "",
                "message": policy.message,
            }
        )
    return out


def open_stack(stack: str, project: Path = PROJECT, extra_env: dict[str, str] | None = None) -> Any:
    """The stack through the Automation API, on the engine's own CLI and environment (created if new)."""
    from pulumi import automation as auto

    env = {**engine_env(project), **(extra_env or {})}
    return auto.create_or_select_stack(
        stack_name=stack,
        work_dir=str(project),
        opts=auto.LocalWorkspaceOptions(
            work_dir=str(project),
            env_vars=env,
            pulumi_home=env.get("PULUMI_HOME"),
            # PulumiCommand runs <root>/bin/pulumi.
            pulumi_command=auto.PulumiCommand(root=str(engine_cli(project).parent.parent)),
            secrets_provider="passphrase",
        ),
    )


def run(args: argparse.Namespace) -> int:
    """``preview`` / ``up`` of one stack."""
    from pulumi import automation as auto

    from cli.stacks import fleet_of, load
    from nodefleet.fleet.registry import STACKS_DIR_ENV
    from nodefleet.stackfile.model import STACK_FILE_ENV

    operation: str = args.operation
    # The stack file is read and validated as every command does it (a missing, malformed or invalid file is
    # exit 2, named), before the engine is asked for: a wrong stack file is wrong on every engine.
    name, config, source = load(args)
    fleet_of(name, config, source)
    config_file = getattr(args, "config_file", None)
    source = f"--config-file {config_file}" if config_file else f"--stack {name}"
    status = engine_status(needs=engine_parts(name, config))
    if not status.complete:
        print(
            f"error: the Pulumi engine on this machine is incomplete, so `{operation}` cannot run "
            f"({status.reason}). `python -m nodefleet check {source}` runs the same program and "
            "policies under the mock runtime; see docs/engine.md.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
    events: list[Any] = []
    started = time.perf_counter()
    # A stack file elsewhere is handed to the engine as `pulumi --config-file` would take it, and named in
    # the program's messages (nodefleet.stackfile.model.STACK_FILE_ENV).
    stack = open_stack(
        name,
        extra_env={STACK_FILE_ENV: str(config_file), STACKS_DIR_ENV: str(Path(config_file).resolve().parent)}
        if config_file
        else None,
    )
    kwargs: dict[str, Any] = {
        "policy_packs": [str(PROJECT / POLICY_PACK)],
        "on_event": events.append,
        "color": "never",
    }
    if config_file:
        kwargs["config_file"] = str(Path(config_file).resolve())
    if args.policy_config:
        kwargs["policy_pack_configs"] = [str(args.policy_config)]
    failed = None
    try:
        result = stack.preview(**kwargs) if operation == "preview" else stack.up(**kwargs)
        summary = result.change_summary if operation == "preview" else result.summary.resource_changes
    except auto.errors.CommandError as exc:
        failed, summary = exc, None
    violations = policy_violations(events)
    mandatory = [v for v in violations if v["level"] == "mandatory"]
    report = {
        "stack": name,
        "operation": operation,
        "engine": "pulumi",
        "changes": summary,
        "violations": violations,
        "seconds": round(time.perf_counter() - started, 1),
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(f"nodefleet {operation}: stack '{name}': changes {summary}, {report['seconds']}s (engine)")
        for v in violations:
            print(f"  {v['level'].upper():9} {v['policy']}  {v['resource'].rsplit('::', 1)[-1] or '(stack)'}")
            print(f"      {v['message']}")
    if mandatory:
        return EXIT_VIOLATIONS
    if failed is not None:
        print(f"error: pulumi {operation} failed: {str(failed).strip()[-2000:]}", file=sys.stderr)
        return EXIT_INTERNAL
    return EXIT_OK
