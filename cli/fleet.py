"""``fleet``: one command over many stacks, one process per stack, a bounded number at a time, wave by wave.

Stacks run in the order of their waves (``nodefleet:fleet.wave``, :mod:`nodefleet.stackfile.waves`): every stack of a
wave finishes before the next wave starts. Between waves a health gate decides whether the rollout goes
on: the wave's stacks all exited 0 and, with ``--health-command``, that command (given the wave's name and
stacks in ``NODEFLEET_WAVE`` and ``NODEFLEET_WAVE_STACKS``) exited 0 too. The gate is on for the commands
that change clusters or what a GitOps tool applies (``up``, ``render``) and off for the read-only ones
unless ``--gate`` asks for it; when it stops the rollout, the later waves' stacks are listed as not run.
``fleet matrix`` runs nothing: it prints the same waves as GitHub Actions matrices (:func:`matrix_run`);
``fleet upgrade`` stages a release bump through the waves (:mod:`cli.fleet_upgrade`, which the parser sends
``fleet`` to first).

Each stack runs as its own ``python -m nodefleet <command> --stack <name>`` process: Python programs share
global state (the Pulumi runtime, the event loop, module-level caches), so two stacks never run in one
interpreter (pulumi/pulumi#6052). For the mock-runtime commands (check, render, forecast) that process is
forked from a fork server that imported nodefleet once (:mod:`cli.forkrun`), which halves a stack's CPU time. A progress line is printed as each stack finishes, then a summary table;
``--json`` prints the summary as JSON instead. The fleet's exit code is the worst of its stacks by the
contract in :mod:`cli.exits` (3 > 2 > 1 > 0; a stack killed by a signal or a timeout counts as 3), and a
failing stack never stops the others.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from cli import forkrun
from cli.exits import EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.tree import IN_FLEET_ENV, TREE_JUDGED_ENV
from nodefleet.stackfile.waves import (
    DEFAULT_WAVE,
    WAVES,
    StackWave,
    WaveError,
    label_value,
    management_clusters_of,
    normalize_wave,
    plan_waves,
)

PROJECT = Path(__file__).resolve().parent.parent
COMMANDS = ("check", "preview", "up", "render", "forecast", "report", "matrix", "upgrade")
#: Commands that run the program under the mock runtime: each stack's process is forked from a fork server
#: that has imported them once (:mod:`cli.forkrun`), instead of a fresh interpreter.
FORKED = ("check", "render", "forecast")
#: Commands whose waves are gated by default: they change clusters, or the tree a GitOps tool applies.
GATED = ("up", "render")
_CONTRACT = (EXIT_OK, EXIT_VIOLATIONS, EXIT_INVALID, EXIT_INTERNAL)


@dataclass
class StackResult:
    stack: str
    exit: int
    seconds: float
    summary: str
    #: The last lines of the stack's stderr when it did not exit 0 or 1.
    error: str = ""
    #: CPU seconds of the stack's own process, where known (a process forked from the fork server).
    cpu: float | None = None


def discover(stacks_dir: Path) -> dict[str, Path]:
    """Stack name → stack file, for every ``Pulumi.<name>.yaml`` in ``stacks_dir``."""
    return {
        p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p
        for p in sorted(stacks_dir.glob("Pulumi.*.yaml"))
    }


def _from_project(path: Path) -> str:
    """A stack file as the stack's run, in the project, reaches it and its messages name it: relative to the
    project when inside it, as ``check`` names it, else absolute."""
    try:
        return path.resolve().relative_to(PROJECT).as_posix()
    except ValueError:
        return os.path.abspath(path)


def _command(args: argparse.Namespace, stack: str, path: Path) -> list[str]:
    source = (
        ["--stack", stack]
        if path.parent.resolve() == (PROJECT / "stacks").resolve()
        else ["--config-file", _from_project(path)]  # the stack runs from the project, not from here
    )
    cmd = [sys.executable, "-m", "nodefleet", args.fleet_command]
    if args.fleet_command in ("check", "forecast"):
        cmd += [*source, "--json"]
        if args.fleet_command == "forecast" and args.out:
            cmd += [
                "--rendered",
                os.path.join(os.path.abspath(args.out), stack),
            ]  # where `fleet render --out` put it
    elif args.fleet_command == "render":
        cmd += source
        if args.out:  # absolute: the stack runs from the project, not from here
            cmd += ["--out", os.path.join(os.path.abspath(args.out), stack)]
    elif args.fleet_command in ("preview", "up"):
        cmd += ["--stack", stack, "--json"]
    elif args.fleet_command == "report":
        cmd += ["--stacks", stack, "--stacks-dir", str(path.parent.resolve()), "--base", args.base, "--json"]
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
        differ = sum(
            len(paths) for folder in (stacks[0].get("renderDiff") or {}).values() for paths in folder.values()
        )
        return (
            f"{forecast.get('rollouts', 0)} rollouts, {len(stacks[0].get('violations', []))} policy results, "
            f"{differ} rendered file{'s' if differ != 1 else ''} differ{'s' if differ == 1 else ''} from the base"
        )
    if command == "render":
        lines = stdout.strip().splitlines()
        return lines[-1].removeprefix("nodefleet render: ") if lines else ""
    return ""


def _run_one(args: argparse.Namespace, stack: str, path: Path) -> tuple[StackResult, str]:
    started = time.perf_counter()
    command = _command(args, stack, path)
    cpu: float | None = None
    env = {**os.environ, TREE_JUDGED_ENV: "1"} if getattr(args, "tree_judged", False) else dict(os.environ)
    env[IN_FLEET_ENV] = "1"
    if args.fleet_command in FORKED and forkrun.available():
        done = forkrun.run(command[3:], cwd=PROJECT, env=env, timeout=args.timeout)
        if done is None:
            code, out, err = EXIT_INTERNAL, "", f"timed out after {args.timeout:.0f}s (--timeout)"
        else:
            code, out, err, cpu = done.code, done.stdout, done.stderr, done.cpu_seconds
    else:
        try:
            proc = subprocess.run(
                command, cwd=PROJECT, capture_output=True, text=True, timeout=args.timeout, env=env
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
    return StackResult(stack, code, seconds, _summary(args.fleet_command, code, out), error, cpu), out


def add_gate_arguments(p: argparse.ArgumentParser, *, gated_by_default: bool, upgrade: bool = False) -> None:
    """The options of a ``fleet`` command that are about the gate between waves."""
    if not upgrade:
        gate = p.add_mutually_exclusive_group()
        gate.add_argument(
            "--gate",
            dest="gate",
            action="store_true",
            default=None,
            help="stop before the next wave when a stack of this wave exits non-zero"
            + (" (on by default for this command)" if gated_by_default else ""),
        )
        gate.add_argument(
            "--no-gate",
            dest="gate",
            action="store_false",
            default=None,
            help="run every wave whatever the earlier ones did"
            + ("" if gated_by_default else " (the default for this command, unless --health-command)"),
        )
    p.add_argument(
        "--health-command",
        help="a shell command run after each wave with NODEFLEET_WAVE and NODEFLEET_WAVE_STACKS set; non-zero "
        "stops the rollout (e.g. a script that waits for the wave's nodes to be Ready)"
        + ("" if upgrade else "; turns the gate on"),
    )


def add_matrix_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fleet matrix``."""
    p.add_argument(
        "--changed-files",
        help="a file listing the changed paths (`git diff --name-only BASE`), `-` for stdin; only the stacks "
        "they touch are kept (default: every stack)",
    )
    p.add_argument(
        "--base",
        help="with --changed-files: the git ref they were listed against; a change of the fleet registry then "
        "touches only the stacks on the management clusters it changes (without it: every stack on any "
        "management cluster)",
    )
    p.add_argument("--mode", choices=("apply", "render"), help="keep only stacks with this output.mode")
    p.add_argument("--stacks-per-job", type=int, default=1, help="stacks per job (default 1)")
    p.add_argument(
        "--max-jobs-per-wave",
        type=int,
        default=256,
        help="more stacks per job when a wave would need more jobs (default 256, GitHub's limit)",
    )
    p.add_argument("--pretty", action="store_true", help="indented JSON instead of one line")


def _stack_waves(known: dict[str, Path], names: list[str], strict: bool) -> list[StackWave]:
    """Each stack's wave and output mode, read from its stack file without running anything.

    ``strict`` (``fleet matrix``): an unreadable file or an invalid wave is an error naming the file and the
    field. Otherwise the stack is put in the first wave, where its own run reports the problem (and, under
    the gate, stops the rollout before any other stack changes).
    """
    from nodefleet.stackfile.model import CONFIG_KEY
    from nodefleet.stackfile.yamlfile import YAMLFileError

    out = []
    for name in names:
        path = known[name]
        shown = _relative(path)
        try:
            fleet = _read_config(path, shown).get(CONFIG_KEY)
            fleet = fleet if isinstance(fleet, dict) else {}
            wave = normalize_wave(fleet.get("wave", DEFAULT_WAVE))
            output = fleet.get("output")
            mode = str(output.get("mode", "render")) if isinstance(output, dict) else "render"
            clusters = fleet.get("clusters")
            catalogs = tuple(
                str(c["catalog"])
                for c in (clusters if isinstance(clusters, list) else [])
                if isinstance(c, dict) and isinstance(c.get("catalog"), str)
            )
            managements = management_clusters_of(fleet)
        except YAMLFileError as e:
            if strict:
                raise InputError(str(e)) from None
            wave, mode, catalogs, managements = WAVES[0], "render", (), ()
        except WaveError as e:
            if strict:
                raise InputError(f"{shown}: {CONFIG_KEY}.wave: {e}") from None
            wave, mode, catalogs, managements = WAVES[0], "render", (), ()
        out.append(StackWave(name, wave, shown, mode, catalogs, managements))
    return out


def _read_config(path: Path, shown: str) -> dict[str, Any]:
    """A stack file's ``config:``, read as :func:`mockruntime.run.read_stack_config` reads it, with libyaml
    where PyYAML has it: planning 500 stacks reads 500 files, and the pure-Python parser takes most of the
    time."""
    from mockruntime.run import read_stack_config

    return read_stack_config(path, shown, fast=True)


def _relative(path: Path) -> str:
    """A stack file as `git diff --name-only` names it: relative to the project when inside it."""
    try:
        return path.resolve().relative_to(PROJECT.resolve()).as_posix()
    except ValueError:
        return str(path)


def matrix_run(args: argparse.Namespace, known: dict[str, Path], names: list[str]) -> int:
    """``fleet matrix``: the stacks (a change touches) in wave order, as one GitHub Actions matrix per wave."""
    from cli.stacks import registry_of
    from nodefleet.fleet.registry import registry_path
    from nodefleet.stackfile.waves import matrix, touched_stacks

    # The registry decides which stacks a change of it touches, and a broken one breaks every stack on it: a
    # matrix of a fleet whose registry does not load would schedule jobs that all fail (exit 2 here instead).
    registry = registry_of(args.stacks_dir)
    stacks = _stack_waves(known, names, strict=True)
    if args.mode:
        stacks = [s for s in stacks if s.mode == args.mode]
    touched = None
    if args.changed_files:
        from cli.fleet_changed import changed_paths

        lines = changed_paths(args.changed_files)
        changes = None
        if args.base and registry.exists:
            from cli.report import base_registry

            changes = base_registry(args.base, args.stacks_dir, registry)
        touched = touched_stacks(
            lines,
            stacks,
            registry_file=_relative(registry_path(args.stacks_dir)),
            registry_changes=changes,
        )
    try:
        out = matrix(
            stacks,
            touched=touched,
            stacks_per_job=args.stacks_per_job,
            max_jobs_per_wave=args.max_jobs_per_wave,
        )
    except ValueError as e:
        raise InputError(f"--stacks-per-job/--max-jobs-per-wave: {e}") from None
    print(json.dumps(out, indent=2 if args.pretty else None, separators=None if args.pretty else (",", ":")))
    return EXIT_OK


def _engine_incomplete(args: argparse.Namespace) -> int | None:
    """``fleet preview|up`` on an engine ``engine/bootstrap`` did not complete: one message, no stack run.

    Exit 3 as ``preview`` and ``engine/run`` exit, so a pipeline never takes it for a verdict; but the
    message says what it is (an incomplete engine here), not a defect in nodefleet.
    """
    from cli import engine
    from engine.status import CORE

    # The parts every stack needs; a stack that also needs the AWS provider says so itself when it runs.
    status = engine.engine_status(needs=CORE)
    if status.complete:
        return None
    message = (
        f"nodefleet fleet {args.fleet_command}: engine incomplete ({status.reason}); no stack was run. "
        "`python -m nodefleet fleet check` runs the same program and policies under the mock runtime; "
        "`make setup` completes the engine (docs/engine.md)."
    )
    print(message, file=sys.stderr)
    if args.json:
        print(
            json.dumps(
                {"command": args.fleet_command, "exit": EXIT_INTERNAL, "error": message, "stacks": []},
                indent=2,
            )
        )
    return EXIT_INTERNAL


def selected(args: argparse.Namespace) -> tuple[dict[str, Path], list[str]]:
    """Every stack file of ``--stacks-dir`` by name, and the stacks ``--stacks`` chooses (default: all)."""
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
    return known, names


def _check_outputs(args: argparse.Namespace) -> None:
    """``--out`` and ``--out-dir`` are judged before any stack runs, as ``output.directory`` is: never inside
    ``.git/``, never a file where a folder is meant (:func:`nodefleet.stackfile.paths.output_folder`)."""
    from nodefleet.stackfile.paths import PathError, output_folder

    for option, value, example in (
        ("--out", getattr(args, "out", None), "--out rendered/"),
        ("--out-dir", getattr(args, "out_dir", None), "--out-dir reports/"),
    ):
        if value is None:
            continue
        try:
            output_folder(value, example=example)
        except PathError as e:
            raise InputError(f"{option} {value}: {e}") from None


def run(args: argparse.Namespace) -> int:
    known, names = selected(args)
    if args.fleet_command == "matrix":
        return matrix_run(args, known, names)
    if args.parallel < 1:
        raise InputError(f"--parallel {args.parallel}: must be at least 1")
    if args.fleet_command == "report" and not args.base:
        raise InputError("fleet report needs --base <git ref> (the base of the change)")
    _check_outputs(args)
    if args.fleet_command == "check" and getattr(args, "changed_files", None):
        from cli.fleet_changed import changed_check

        names, problems = changed_check(args, known, names)
        if problems:
            raise InputError("\n".join(problems))
        args.tree_judged = True  # across the fleet, for the stacks the change touches
    elif args.fleet_command == "check" and set(names) < set(known):
        from cli.fleet_changed import across_fleet

        # Some of the folder's stacks (--stacks): judged once against the others they can collide with,
        # instead of each stack reading every stack file of the folder again.
        problems = across_fleet(args, known, names)
        if problems:
            raise InputError("\n".join(problems))
        args.tree_judged = True
    elif args.fleet_command in ("check", "preview", "up", "render"):
        problems = tree_problems(args, [(name, known[name]) for name in names])
        if problems:
            raise InputError("\n".join(problems))
        # Every stack file of the folder was judged together: each stack need not read its siblings again.
        args.tree_judged = set(names) == set(known)
    if args.fleet_command in ("preview", "up") and (code := _engine_incomplete(args)) is not None:
        return code
    health = getattr(args, "health_command", None)
    # A health command asks for the gate; --no-gate still turns it off.
    gate = (
        args.gate if getattr(args, "gate", None) is not None else args.fleet_command in GATED or bool(health)
    )
    started = time.perf_counter()
    results: list[StackResult] = []
    outputs: dict[str, str] = {}
    not_run: list[str] = []
    stopped = ""
    lock = threading.Lock()
    waves = [(w, members) for w, members in plan_waves(_stack_waves(known, names, strict=False)) if members]
    for number, (wave, members) in enumerate(waves, 1):
        if stopped:
            not_run += [m.stack for m in members]
            continue
        print(
            f"wave {number}/{len(waves)} {label_value(wave)}: {len(members)} stack{'s' if len(members) != 1 else ''} "
            f"({', '.join(m.stack for m in members)})",
            file=sys.stderr,
            flush=True,
        )
        wave_results: list[StackResult] = []
        with ThreadPoolExecutor(max_workers=args.parallel) as pool:
            futures = {pool.submit(_run_one, args, m.stack, known[m.stack]): m.stack for m in members}
            for future in as_completed(futures):
                result, out = future.result()
                with lock:
                    results.append(result)
                    wave_results.append(result)
                    outputs[result.stack] = out
                    line = (
                        f"[{len(results)}/{len(names)}] {result.stack:<24} exit {result.exit}  "
                        f"{result.seconds:6.2f}s  {result.summary}"
                    )
                    print(
                        line + (f"  -- {result.error}" if result.error else ""), file=sys.stderr, flush=True
                    )
        if not gate:
            continue
        last = number == len(waves)
        failed = sorted(r.stack for r in wave_results if r.exit != EXIT_OK)
        if failed:
            if last:
                continue  # nothing left to hold back; the exit code says it
            stopped = f"wave {label_value(wave)} failed ({', '.join(failed)})"
        elif health:
            # After the last wave too: the rollout is complete only when its last wave is healthy.
            stopped = _health_gate(health, wave, [m.stack for m in members], args.timeout)
        elif last:
            continue
        print(
            f"gate after wave {label_value(wave)}: "
            + (
                f"stop: {stopped}" + ("" if last else "; later waves not run")
                if stopped
                else ("healthy" if last else "healthy, next wave")
            ),
            file=sys.stderr,
            flush=True,
        )
    wall = round(time.perf_counter() - started, 2)
    results.sort(key=lambda r: names.index(r.stack))
    worst = max((r.exit for r in results), default=EXIT_OK)
    if stopped and worst == EXIT_OK:
        worst = EXIT_VIOLATIONS  # only the health command failed: the rollout did not complete
    if args.json:
        print(
            json.dumps(
                {
                    "command": args.fleet_command,
                    "parallel": args.parallel,
                    "wallSeconds": wall,
                    "exit": worst,
                    "gate": gate,
                    "waves": [{"wave": w, "stacks": [m.stack for m in members]} for w, members in waves],
                    "stopped": stopped or None,
                    "notRun": not_run,
                    "stacks": [asdict(r) for r in results],
                },
                indent=2,
            )
        )
    else:
        print(_table(args.fleet_command, results, wall, args.parallel, worst))
        if stopped:
            print(f"rollout stopped: {stopped}" + (f"; not run: {', '.join(not_run)}" if not_run else ""))
    if args.fleet_command == "report" and args.out_dir:
        _write_reports(args.out_dir, names, outputs)
    return worst


def tree_problems(args: argparse.Namespace, stacks: list[tuple[str, Path]]) -> list[str]:
    """Objects that two stacks rendered into one GitOps tree declare differently (:mod:`nodefleet.render.objects`),
    and what the fleet's registry refuses across the stacks (:func:`nodefleet.fleet.registry.fleet_problems`).

    Render-mode stacks share a tree when their render directories have one parent (the default
    ``rendered/{stack}`` puts every stack in ``rendered/``, which the example ApplicationSet syncs), and
    ``fleet render --out`` puts all of them in one. A stack whose own file is invalid, or contradicts the
    registry (an unknown management cluster), is left to its own run, which says why (exit 2); a registry that
    cannot be read stops the command (exit 2).
    """
    from cli.stacks import registry_of
    from nodefleet.render.objects import remembered_plans

    registry = registry_of(args.stacks_dir)
    with remembered_plans():
        return _tree_problems(args, stacks, registry)


def _tree_problems(args: argparse.Namespace, stacks: list[tuple[str, Path]], registry: Any) -> list[str]:
    from mockruntime.run import read_stack_config
    from nodefleet.fleet.registry import fleet_problems
    from nodefleet.render.objects import load_fleet, shared_namespaces
    from nodefleet.render.objects import tree_problems as problems_in
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    trees: dict[Path, list[Any]] = {}
    loaded: list[tuple[Any, str]] = []
    problems: list[str] = []
    for stack, path in stacks:
        shown = _shown(path)
        try:
            config = read_stack_config(path, shown, fast=True)
            fleet = load_fleet(config.get(CONFIG_KEY), stack, PROJECT, source=shown)
        except (ConfigError, YAMLFileError, FileNotFoundError):
            continue
        loaded.append((fleet, shown))
        if fleet.config.output.mode != "render":
            continue
        out = getattr(args, "out", None) if args.fleet_command == "render" else None
        tree = Path(out).resolve() if out else fleet.render_dir.path.parent
        trees.setdefault(tree, []).append((fleet, shown))
    problems += fleet_problems(registry, loaded)
    for fleets in trees.values():
        for line in shared_namespaces(fleets) if len(fleets) > 1 else []:
            print(f"note: {line}", file=sys.stderr)
    # A collision on a management cluster between stacks of one tree is both the tree's and the fleet's: once.
    return list(
        dict.fromkeys(
            problems + [p for fleets in trees.values() if len(fleets) > 1 for p in problems_in(fleets)]
        )
    )


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(PROJECT))
    except ValueError:
        return str(path)


#: How much of a health command's output is kept (its end): enough for the reason it gives, never a flood.
HEALTH_OUTPUT_KEPT = 4096
#: The longest line of it printed or stored.
HEALTH_LINE_CHARS = 300


@dataclass
class Bounded:
    """A shell command run with a time limit: its exit code (None when it was killed at the limit) and the end
    of its output, decoded leniently, credentials redacted."""

    code: int | None
    tail: str


def run_bounded(command: str, *, env: dict[str, str], cwd: Path, timeout: float) -> Bounded:
    """Run ``command`` in a shell, in a process group of its own, killed with the whole group after
    ``timeout`` seconds; only the last :data:`HEALTH_OUTPUT_KEPT` bytes of stdout and stderr are kept (a command
    printing without end fills neither memory nor disk), decoded with replacement characters (any bytes),
    its last two lines shortened to :data:`HEALTH_LINE_CHARS` and redacted (:func:`nodefleet.files.redact`),
    so what is printed and stored is bounded and holds no token the command printed."""
    import signal

    from nodefleet.files import redact

    proc = subprocess.Popen(
        command, shell=True, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, start_new_session=True,
    )  # fmt: skip
    kept = {"out": b"", "err": b""}

    def drain(name: str, stream: Any) -> None:
        for chunk in iter(lambda: stream.read1(65536), b""):
            kept[name] = (kept[name] + chunk)[-HEALTH_OUTPUT_KEPT:]

    readers = [
        threading.Thread(target=drain, args=(name, stream), daemon=True)
        for name, stream in (("out", proc.stdout), ("err", proc.stderr))
    ]
    for reader in readers:
        reader.start()
    try:
        code: int | None = proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        code = None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # what the command started, too, so its pipes close
    for reader in readers:
        reader.join(5)
    text = (kept["err"] or kept["out"]).decode("utf-8", "replace")
    # Control characters (a terminal's escape sequences) never reach the terminal or the state file as they are.
    text = "".join(ch if ch >= " " or ch in "\n\t" else "?" for ch in text)
    # Redacted whole, before any line is shortened: a credential cut in two by the limit is no longer one.
    lines = [line.strip()[:HEALTH_LINE_CHARS] for line in redact(text).strip().splitlines()[-2:]]
    return Bounded(code, " ".join(line for line in lines if line))


def _health_gate(
    command: str,
    wave: str,
    stacks: list[str],
    timeout: float = 1800,
    extra: dict[str, str] | None = None,
    *,
    name_wave: bool = True,
) -> str:
    """Run the user's health command after a wave, within ``timeout`` seconds (``--timeout``), with ``extra`` in
    its environment too (``fleet upgrade``'s ``NODEFLEET_UPGRADE_PHASE``); the reason to stop, or "" when it
    passed. ``name_wave``: the reason says after which wave (``fleet upgrade`` says it in its own words)."""
    env = {**os.environ, "NODEFLEET_WAVE": wave, "NODEFLEET_WAVE_STACKS": ",".join(stacks), **(extra or {})}
    try:
        done = run_bounded(command, env=env, cwd=PROJECT, timeout=timeout)
    except OSError as e:
        return f"--health-command could not start ({e.strerror})"
    if done.code == 0:
        return ""
    after = f" after wave {label_value(wave)}" if name_wave else ""
    if done.code is None:
        reason = f"--health-command did not finish within {timeout:.0f}s (--timeout){after}"
    else:
        reason = f"--health-command exited {done.code}{after}"
    return reason + (f": {done.tail}" if done.tail else "")


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
    from nodefleet.drift.forecast import Forecast, Item

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
                items = tuple(Item.from_dict(i) for i in f["items"])
                s["forecast"] = Forecast(f["before"], f["after"], items, tuple(f["notes"]))
        (out_dir / f"{name}.md").write_text(markdown(data), encoding="utf-8")
