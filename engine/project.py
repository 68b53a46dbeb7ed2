"""The project in a scratch folder, run on the real engine: for the engine tests and ``bench/engine.py``.

A scratch copy keeps ``pulumi stack init`` (which writes an ``encryptionsalt`` into the stack file), the
state and the rendered manifests out of the checkout. The engine is the one ``engine/bootstrap`` chose,
taken from ``.engine/env``; the state lives in the scratch folder on a file backend with the local
passphrase, and every run writes the engine's event log so results are read from events, not from text.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

from pulumi.automation.events import EngineEvent

from engine.events import read_event_log
from engine.status import PROJECT

#: What a scratch copy needs to run the program and the policy pack.
SOURCES = ("Pulumi.yaml", "__main__.py", "components", "nodefleet", "policies", "catalogs")
LOCAL_PASSPHRASE = "nodefleet-local"


def engine_environment(project: Path = PROJECT) -> dict[str, str]:
    """The process environment with ``.engine/env`` applied, exactly as ``engine/run`` sources it."""
    env_file = project / ".engine" / "env"
    out = subprocess.run(
        ["bash", "-c", '. "$1" && env -0', "bash", str(env_file)],
        capture_output=True,
        check=True,
    ).stdout
    return dict(item.split("=", 1) for item in out.decode().split("\0") if "=" in item)


@dataclass
class Run:
    args: list[str]
    returncode: int
    stdout: str
    stderr: str
    events: list[EngineEvent]
    seconds: float


@dataclass
class ScratchProject:
    root: Path
    env: dict[str, str] = field(default_factory=dict)

    @property
    def cli(self) -> str:
        return self.env["PULUMI_CLI"]

    def pulumi(
        self, *args: str, stack: str | None = None, timeout: float = 900, env: dict[str, str] | None = None
    ) -> Run:
        """One CLI command with an event log; stack-scoped when ``stack`` is given; ``env`` adds to the
        environment."""
        log = self.root / ".events" / f"{time.monotonic_ns()}.jsonl"
        log.parent.mkdir(exist_ok=True)
        argv = [self.cli, *args, "--non-interactive"]
        if stack:
            argv += ["--stack", stack]
        if args and args[0] in ("preview", "up", "destroy", "refresh"):
            argv += ["--event-log", str(log)]
        started = time.perf_counter()
        done = subprocess.run(
            argv,
            cwd=self.root,
            env={**self.env, **(env or {})},
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        elapsed = time.perf_counter() - started
        events = read_event_log(log) if log.exists() else []
        return Run(argv, done.returncode, done.stdout, done.stderr, events, elapsed)

    def init_stack(self, stack: str) -> None:
        done = self.pulumi("stack", "init", stack, "--secrets-provider", "passphrase")
        if done.returncode != 0 and "already exists" not in done.stderr:
            raise RuntimeError(f"pulumi stack init {stack} failed: {done.stderr.strip()}")


def scratch_project(dest: Path, stack_files: list[Path], project: Path = PROJECT) -> ScratchProject:
    """The program, the pack, the catalogs and ``stack_files`` (as ``stacks/<name>``) under ``dest``."""
    dest.mkdir(parents=True, exist_ok=True)
    for name in SOURCES:
        src = project / name
        if src.is_dir():
            # The bytecode comes along: the language host then does not compile the program again.
            shutil.copytree(src, dest / name, dirs_exist_ok=True)
        else:
            shutil.copy2(src, dest / name)
    (dest / "stacks").mkdir(exist_ok=True)
    for f in stack_files:
        shutil.copy2(f, dest / "stacks" / f.name)
    if not (dest / "venv").exists():
        (dest / "venv").symlink_to((project / "venv").resolve())
    (dest / "state").mkdir(exist_ok=True)
    env = engine_environment(project)
    env.update(
        {
            "PULUMI_BACKEND_URL": f"file://{dest / 'state'}",
            "PULUMI_CONFIG_PASSPHRASE": LOCAL_PASSPHRASE,
            # Registers the CLI's --event-log flag, as the Automation API does.
            "PULUMI_DEBUG_COMMANDS": "true",
        }
    )
    env.pop("PULUMI_CONFIG_PASSPHRASE_FILE", None)
    return ScratchProject(dest, env)


def stack_name(stack_file: Path) -> str:
    return stack_file.name.removeprefix("Pulumi.").removesuffix(".yaml")


def copy_tree_bytes(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` by relative path, for byte-for-byte comparison of rendered manifests."""
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


__all__ = ["Run", "ScratchProject", "copy_tree_bytes", "engine_environment", "scratch_project", "stack_name"]
