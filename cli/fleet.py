"""``fleet``: one command over many stacks, one process per stack, a bounded number at a time.

Each stack runs as its own ``python -m nodefleet <command> --stack <name>`` process: Python programs share
global state (the Pulumi runtime, the event loop, module-level caches), so two stacks never run in one
interpreter (pulumi/pulumi#6052). A progress line is printed as each stack finishes, then a summary table;
``--json`` prints the summary as JSON instead. The fleet's exit code is the worst of its stacks by the
contract in :mod:`cli.exits` (3 > 2 > 1 > 0; a stack killed by a signal or a timeout counts as 3), and a
failing stack never stops the others.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cli.exits import EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, EXIT_VIOLATIONS, InputError

PROJECT = Path(__file__).resolve().parent.parent
COMMANDS = ("check", "preview", "up", "render", "forecast", "report")
_CONTRACT = (EXIT_OK, EXIT_VIOLATIONS, EXIT_INVALID, EXIT_INTERNAL)


@dataclass
class StackResult:
    stack: str
    exit: int
    seconds: float
    summary: str
    #: The last lines of the stack's stderr when it did not exit 0 or 1.
    error: str = ""


def discover(stacks_dir: Path) -> dict[str, Path]:
    """Stack name → stack file, for every ``Pulumi.<name>.yaml`` in ``stacks_dir``."""
    return {
        p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p
        for p in sorted(stacks_dir.glob("Pulumi.*.yaml"))
    }


def _command(args: argparse.Namespace, stack: str, path: Path) -> list[str]:
    source = (
        ["--stack", stack]
        if path.parent.resolve() == (PROJECT / "stacks").resolve()
        else ["--config-file", str(path)]
    )
    cmd = [sys.executable, "-m", "nodefleet", args.fleet_command]
    if args.fleet_command in ("check", "forecast"):
        cmd += [*source, "--json"]
        if args.fleet_command == "forecast" and args.out:
            cmd += ["--rendered", str(args.out / stack)]  # where `fleet render --out` put the stack
    elif args.fleet_command == "render":
        cmd += source
        if args.out:
            cmd += ["--out", str(args.out / stack)]
    elif args.fleet_command in ("preview", "up"):
        cmd += ["--stack", stack, "--json"]
    elif args.fleet_command == "report":
        cmd += ["--stacks", stack, "--base", args.base, "--json"]
    if getattr(args, "policy_config", None) and args.fleet_command in ("check", "preview", "up", "report"):
        cmd += ["--policy-config", str(args.policy_config)]
    return cmd


def _summary(command: str, code: int, stdout: str) -> str:
    try:
        data = json.loads(stdout) if stdout.strip().startswith("{") else None
    except json.JSONDecodeError:
        data = None
    if data is not None and "error" in data:
        return ""  # a stack that failed before its verdict: its error line says why
    if command in ("check", "preview", "up") and data is not None:
        levels = [v["level"] for v in data.get("violations", [])]
        text = f"{levels.count('mandatory')} mandatory, {len(levels) - levels.count('mandatory')} advisory"
        if "resources" in data:
            text = f"{data['resources']} resources, {text}"
        if data.get("changes") is not None:
            text += f", changes {data['changes']}"
        return text
    if command == "forecast" and data is not None:
        return f"{data['rollouts']} of {len(data['items'])} node sources roll" + (
            "" if data["before"] else " (no previous render: unknown)"
        )
    if command == "report" and data is not None:
        stacks = data.get("stacks") or [{}]
        if stacks[0].get("invalid"):
            return f"invalid: {stacks[0]['invalid'].splitlines()[0]}"
        forecast = stacks[0].get("forecast") or {}
        return (
            f"{forecast.get('rollouts', 0)} rollouts, {len(stacks[0].get('violations', []))} policy results"
        )
    if command == "render":
        lines = stdout.strip().splitlines()
        return lines[-1].removeprefix("nodefleet render: ") if lines else ""
    return ""


def _run_one(args: argparse.Namespace, stack: str, path: Path) -> tuple[StackResult, str]:
    started = time.perf_counter()
    try:
        proc = subprocess.run(
            _command(args, stack, path), cwd=PROJECT, capture_output=True, text=True, timeout=args.timeout
        )
        code, out, err = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code, out = EXIT_INTERNAL, ""
        err = f"timed out after {exc.timeout:.0f}s (--timeout)"
    seconds = round(time.perf_counter() - started, 2)
    if code not in _CONTRACT:
        err = f"exited {code} (signal or crash); counted as 3. {err}"
        code = EXIT_INTERNAL
    error = "" if code in (EXIT_OK, EXIT_VIOLATIONS) else " ".join(err.strip().splitlines()[-3:])
    return StackResult(stack, code, seconds, _summary(args.fleet_command, code, out), error), out


def run(args: argparse.Namespace) -> int:
    known = discover(args.stacks_dir)
    if not known:
        raise InputError(f"--stacks-dir {args.stacks_dir}: no Pulumi.<stack>.yaml files")
    if args.stacks:
        names = [s for s in args.stacks.split(",") if s]
        unknown = [s for s in names if s not in known]
        if unknown:
            raise InputError(
                f"--stacks: no stack file for {', '.join(unknown)} in {args.stacks_dir}; stacks: {', '.join(known)}"
            )
    else:
        names = list(known)
    if args.parallel < 1:
        raise InputError(f"--parallel {args.parallel}: must be at least 1")
    if args.fleet_command == "report" and not args.base:
        raise InputError("fleet report needs --base <git ref> (the base of the change)")
    if args.fleet_command in ("check", "preview", "up", "render"):
        problems = tree_problems(args, [(name, known[name]) for name in names])
        if problems:
            raise InputError("\n".join(problems))
    started = time.perf_counter()
    results: list[StackResult] = []
    outputs: dict[str, str] = {}
    lock = threading.Lock()
    with ThreadPoolExecutor(max_workers=args.parallel) as pool:
        futures = {pool.submit(_run_one, args, name, known[name]): name for name in names}
        for future in as_completed(futures):
            result, out = future.result()
            with lock:
                results.append(result)
                outputs[result.stack] = out
                line = (
                    f"[{len(results)}/{len(names)}] {result.stack:<24} exit {result.exit}  "
                    f"{result.seconds:6.2f}s  {result.summary}"
                )
                print(line + (f"  -- {result.error}" if result.error else ""), file=sys.stderr, flush=True)
    wall = round(time.perf_counter() - started, 2)
    results.sort(key=lambda r: names.index(r.stack))
    worst = max((r.exit for r in results), default=EXIT_OK)
    if args.json:
        print(
            json.dumps(
                {
                    "command": args.fleet_command,
                    "parallel": args.parallel,
                    "wallSeconds": wall,
                    "exit": worst,
                    "stacks": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
    else:
        print(_table(args.fleet_command, results, wall, args.parallel, worst))
    if args.fleet_command == "report" and args.out_dir:
        _write_reports(args.out_dir, names, outputs)
    return worst


def tree_problems(args: argparse.Namespace, stacks: list[tuple[str, Path]]) -> list[str]:
    """Objects that two stacks rendered into one GitOps tree declare differently (:mod:`nodefleet.objects`).

    Render-mode stacks share a tree when their render directories have one parent (the default
    ``rendered/{stack}`` puts every stack in ``rendered/``, which the example ApplicationSet syncs), and
    ``fleet render --out`` puts all of them in one. A stack whose own file is invalid is left to its own run,
    which says why.
    """
    from harness.mockrun import read_stack_config
    from nodefleet.config import CONFIG_KEY, ConfigError, load_fleet
    from nodefleet.objects import tree_problems as problems_in
    from nodefleet.yamlfile import YAMLFileError

    trees: dict[Path, list[Any]] = {}
    for stack, path in stacks:
        shown = _shown(path)
        try:
            config = read_stack_config(path, shown)
            fleet = load_fleet(config.get(CONFIG_KEY), stack, PROJECT, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            continue
        if fleet.config.output.mode != "render":
            continue
        out = getattr(args, "out", None) if args.fleet_command == "render" else None
        tree = Path(out).resolve() if out else fleet.render_dir.path.parent
        trees.setdefault(tree, []).append((fleet, shown))
    return [p for fleets in trees.values() if len(fleets) > 1 for p in problems_in(fleets)]


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT))
    except ValueError:
        return str(path)


def _table(command: str, results: list[StackResult], wall: float, parallel: int, worst: int) -> str:
    width = max([len(r.stack) for r in results] + [5])
    lines = [f"{'stack':<{width}}  exit  seconds  {command}"]
    for r in results:
        lines.append(f"{r.stack:<{width}}  {r.exit:>4}  {r.seconds:7.2f}  {r.summary or r.error}")
    counts = {code: sum(r.exit == code for r in results) for code in _CONTRACT}
    lines.append(
        f"{len(results)} stacks in {wall:.2f}s with --parallel {parallel}: {counts[0]} clean, {counts[1]} with "
        f"mandatory violations, {counts[2]} invalid, {counts[3]} internal errors; fleet exit {worst}"
    )
    return "\n".join(lines)


def _write_reports(out_dir: Path, names: list[str], outputs: dict[str, str]) -> None:
    from cli.report import markdown
    from nodefleet.forecast import Forecast, Item

    out_dir.mkdir(parents=True, exist_ok=True)
    for name in names:
        try:
            data: dict[str, Any] = json.loads(outputs.get(name) or "{}")
        except json.JSONDecodeError:
            continue
        if not data.get("stacks"):
            continue
        for s in data["stacks"]:
            f = s.get("forecast")
            if f:
                items = tuple(
                    Item(
                        i["cluster"], i["kind"], i["name"], i["verdict"], tuple(i["reasons"]), i["nodes"],
                        i["nodeCount"], i["pacedBy"],
                    )
                    for i in f["items"]
                )  # fmt: skip
                s["forecast"] = Forecast(f["before"], f["after"], items, tuple(f["notes"]))
        (out_dir / f"{name}.md").write_text(markdown(data), encoding="utf-8")
