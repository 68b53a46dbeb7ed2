"""``fleet upgrade``: a hosted-cluster release bump across the fleet, wave by wave, control plane before nodes.

For each wave (canaries first, :mod:`nodefleet.stackfile.waves`), with the stacks of the wave whose hosted clusters are
not at the release yet:

1. **control planes**: ``upgrade``'s first step in every such stack file (the HostedCluster's ``release``
   bumped, the nodes that follow it held at the old release, marked), then the stacks re-rendered (render
   mode) and, with ``--commit``, one commit: Argo CD or Flux picks it up; in apply mode the commit is what the
   workflow's wave matrix applies;
2. **gate**: the control planes have completed the release: ``--health-command`` exits 0 (run with
   ``NODEFLEET_UPGRADE_PHASE=control-plane``, ``NODEFLEET_WAVE`` and ``NODEFLEET_WAVE_STACKS``), or, without one,
   the user confirms it by running the command again with ``--confirmed``; in apply mode, without either, each
   HostedCluster is read through its management cluster's kubeconfig (:mod:`cli.upgrade_gates`);
3. **nodes**: ``upgrade``'s second step (the held pins removed), re-rendered, committed;
4. **gate**: the wave is healthy (``NODEFLEET_UPGRADE_PHASE=nodes``), as in 2 (in apply mode: each classic
   NodePool read); then the next wave.

Where a gate does not pass (or a render fails), the run stops, exit 1 (or the render's exit), prints one line
per object that holds it back, and the state file (``--state``, default ``<stacks dir>/nodefleet-upgrade.json``,
JSON the user can read) says which wave and phase it stopped at and why. The same command resumes from there;
a step already in a stack file is not staged twice. ``--dry-run`` prints the whole plan, every wave, phase and
change, and writes nothing.
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli import upgrade_gates
from cli.exits import EXIT_INTERNAL, EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.upgrade_gates import Verdict

STATE_FILE = "nodefleet-upgrade.json"
#: The phases of a wave, in order; a wave's ``phase`` is the last one completed.
PHASES = ("pending", "control-plane", "control-plane-completed", "nodes", "done")


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fleet upgrade`` (the ``fleet`` parser is shared with the other fleet commands)."""
    p.add_argument("--release", help="upgrade: the release every hosted cluster moves to, x.y.z")
    p.add_argument(
        "--state",
        type=Path,
        help=f"upgrade: the state file, read to resume and written after every step (default: <stacks-dir>/{STATE_FILE})",
    )
    p.add_argument(
        "--commit",
        action="store_true",
        help="upgrade: commit each step (stack files, render folders, state) in the stack files' git repository, "
        "one commit per wave and phase, for Argo CD or Flux (render mode) or the workflow (apply mode) to pick up",
    )
    p.add_argument(
        "--confirmed",
        action="store_true",
        help="upgrade: the gate the last run stopped at has passed (you checked the control planes, or the wave's "
        "health, yourself)",
    )
    p.add_argument("--dry-run", action="store_true", help="upgrade: print the whole plan and write nothing")


@dataclass
class ClusterStep:
    stack: str
    cluster: str
    #: ``upgrade``'s changes, as it prints them.
    changes: list[str] = field(default_factory=list)


def _doc(path: Path) -> tuple[Any, Any, str]:
    from cli.upgrade import _yaml

    text = path.read_text(encoding="utf-8")
    y = _yaml(text)
    return y, y.load(text), text


def _hosted_names(doc: Any) -> list[str]:
    fleet = ((doc or {}).get("config") or {}).get("nodefleet:fleet") or {}
    return [
        str(c.get("name"))
        for c in fleet.get("clusters") or []
        if isinstance(c, dict) and c.get("kind") == "hosted"
    ]


def _stage(path: Path, shown: str, release: str, phase: str, write: bool) -> list[ClusterStep]:
    """One phase in one stack file (every hosted cluster of it); what changed. Idempotent: a cluster already at
    ``release`` is not bumped again, one with no held node is not released again."""
    from cli.upgrade import _followers, _held, _hosted, _step_one, _step_two

    y, doc, _ = _doc(path)
    steps = []
    for name in _hosted_names(doc):
        cluster = _hosted(doc, shown, name)
        held = any(key in m and _held(m, key) for m, key, _ in _followers(cluster))
        if phase == "control-plane" and str(cluster.get("release")) != release:
            if held:
                raise InputError(
                    f"{shown}: hosted cluster {name} still has nodes held from an earlier upgrade to "
                    f"{cluster.get('release')}; finish it (`upgrade --cluster {name} --release {cluster.get('release')}`) first"
                )
            steps.append(ClusterStep(shown, name, _step_one(cluster, release, shown)))
        elif phase == "nodes" and str(cluster.get("release")) == release and held:
            steps.append(ClusterStep(shown, name, _step_two(cluster)))
    if steps and write:
        out = io.StringIO()
        y.dump(doc, out)
        path.write_text(out.getvalue(), encoding="utf-8")
    return steps


def _needs_upgrade(path: Path, release: str) -> list[str]:
    from cli.upgrade import _followers, _held

    _, doc, _ = _doc(path)
    fleet = ((doc or {}).get("config") or {}).get("nodefleet:fleet") or {}
    out = []
    for c in fleet.get("clusters") or []:
        if not (isinstance(c, dict) and c.get("kind") == "hosted"):
            continue
        held = any(key in m and _held(m, key) for m, key, _ in _followers(c))
        if str(c.get("release")) != release or held:
            out.append(str(c.get("name")))
    return out


def _plan(known: dict[str, Path], names: list[str], release: str) -> list[dict[str, Any]]:
    """Every wave with the stacks (and their hosted clusters) not at ``release`` yet."""
    from cli.fleet import _stack_waves
    from nodefleet.stackfile.waves import plan_waves

    waves = []
    for wave, members in plan_waves(_stack_waves(known, names, strict=True)):
        stacks = {m.stack: _needs_upgrade(known[m.stack], release) for m in members}
        stacks = {s: clusters for s, clusters in stacks.items() if clusters}
        modes = {m.stack: m.mode for m in members if m.stack in stacks}
        if stacks:
            waves.append({"wave": wave, "stacks": stacks, "modes": modes, "phase": "pending"})
    return waves


def _load_state(path: Path, release: str) -> dict[str, Any] | None:
    if not path.exists():
        return None
    try:
        state: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as e:
        raise InputError(f"{path}: not a fleet upgrade state file ({e}); remove it to plan afresh") from None
    if not isinstance(state, dict) or "waves" not in state or "release" not in state:
        raise InputError(f"{path}: not a fleet upgrade state file; remove it to plan afresh")
    if state["release"] != release and not state.get("complete"):
        raise InputError(
            f"{path}: an upgrade to {state['release']} is not finished (stopped at "
            f"{state.get('stopped') or 'its last step'}); finish it with --release {state['release']}, or remove "
            "the file to abandon it"
        )
    # A finished upgrade is history: the same release is planned afresh (a stack added since, or moved back).
    return state if state["release"] == release and not state.get("complete") else None


def _save(path: Path, state: dict[str, Any]) -> None:
    state["updated"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(json.dumps(state, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


def _render(args: argparse.Namespace, known: dict[str, Path], stacks: list[str]) -> list[str]:
    """Re-render the render-mode stacks of a step; the failures, one line each."""
    from concurrent.futures import ThreadPoolExecutor

    from cli.fleet import _run_one

    render_args = copy.copy(args)
    render_args.fleet_command = "render"
    with ThreadPoolExecutor(max_workers=max(1, args.parallel)) as pool:
        results = list(pool.map(lambda s: _run_one(render_args, s, known[s])[0], stacks))
    for r in results:
        print(f"    render {r.stack}: exit {r.exit} {r.summary or r.error}", file=sys.stderr, flush=True)
    return [
        f"render of {r.stack} exited {r.exit}: {r.error or r.summary}" for r in results if r.exit != EXIT_OK
    ]


def _render_dirs(args: argparse.Namespace, known: dict[str, Path], stacks: list[str]) -> list[Path]:
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from nodefleet.render.objects import load_fleet
    from nodefleet.stackfile.model import CONFIG_KEY

    if args.out:
        return [args.out / s for s in stacks]
    out = []
    for s in stacks:
        fleet = load_fleet(read_stack_config(known[s], str(known[s])).get(CONFIG_KEY), s, PROJECT_DIR)
        out.append(fleet.render_dir.path)
    return out


def _commit(paths: list[Path], message: str) -> str:
    """Commit ``paths`` in their git repository; the commit's id, or "" when nothing changed."""
    top = subprocess.run(
        ["git", "rev-parse", "--show-toplevel"], cwd=paths[0].parent, capture_output=True, text=True
    )
    if top.returncode != 0:
        raise InputError(f"--commit: {paths[0].parent} is not in a git repository ({top.stderr.strip()})")
    root = Path(top.stdout.strip())
    inside = [str(p) for p in paths if p.resolve().is_relative_to(root.resolve())]
    subprocess.run(["git", "add", "-A", "--", *inside], cwd=root, check=True, capture_output=True)
    staged = subprocess.run(["git", "diff", "--cached", "--quiet"], cwd=root)
    if staged.returncode == 0:
        return ""
    done = subprocess.run(["git", "commit", "-q", "-m", message], cwd=root, capture_output=True, text=True)
    if done.returncode != 0:
        raise InputError(f"--commit: git commit failed: {done.stderr.strip()}")
    return subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True
    ).stdout.strip()


def _gate(
    args: argparse.Namespace, known: dict[str, Path], wave: dict[str, Any], phase: str, release: str
) -> Verdict:
    """The gate after ``phase`` of ``wave``: it passed when its ``reason`` is ""."""
    from cli.fleet import _health_gate

    stacks = sorted(wave["stacks"])
    if args.health_command:
        os.environ["NODEFLEET_UPGRADE_PHASE"] = phase
        try:
            return Verdict(_health_gate(args.health_command, wave["wave"], stacks))
        finally:
            os.environ.pop("NODEFLEET_UPGRADE_PHASE", None)
    if args.confirmed:
        args.confirmed = False  # one confirmation passes one gate
        return Verdict("", passed="confirmed with --confirmed")
    unseen = ""
    if all(m == "apply" for m in wave["modes"].values()):
        from cli.stacks import registry_of

        registry = registry_of(args.stacks_dir)
        read = upgrade_gates.load(known, wave, registry)
        unseen = ", ".join(upgrade_gates.has_auto_node(read)) if phase == "nodes" else ""
        if not unseen:
            readings = (
                upgrade_gates.control_planes(read, release, registry)
                if phase == "control-plane"
                else upgrade_gates.node_pools(read, registry)
            )
            return upgrade_gates.verdict(readings, phase, wave["wave"], release)
    if phase == "control-plane":
        what = f"the control planes of wave {wave['wave']} ({', '.join(stacks)}) have completed {release}"
    else:
        what = f"wave {wave['wave']} ({', '.join(stacks)}) is healthy on {release}"
        if unseen:
            what += f" (the AutoNode node classes of {unseen} live in the hosted cluster, which nodefleet does not read)"
    return Verdict(
        f"waiting until {what}: run the same command again with --confirmed once it has (or give --health-command)"
    )


def _print_plan(known: dict[str, Path], state: dict[str, Any], release: str) -> None:
    print(f"nodefleet fleet upgrade to {release}: the plan (dry run: nothing written)")
    for number, wave in enumerate(state["waves"], 1):
        done = PHASES.index(wave["phase"])
        print(
            f"wave {number}/{len(state['waves'])} {wave['wave']}: {', '.join(sorted(wave['stacks']))}"
            + (f" (at phase {wave['phase']})" if done else "")
        )
        for phase, gate in (
            ("control-plane", "the control planes report it Completed"),
            ("nodes", "the wave is healthy"),
        ):
            if done >= PHASES.index(phase):
                continue
            print(f"  {'1' if phase == 'control-plane' else '2'}. {phase}: edit, render, commit")
            for stack in sorted(wave["stacks"]):
                with tempfile.TemporaryDirectory() as scratch_dir:
                    scratch = Path(scratch_dir) / known[stack].name
                    scratch.write_text(known[stack].read_text(encoding="utf-8"), encoding="utf-8")
                    if phase == "nodes":
                        _stage(scratch, stack, release, "control-plane", write=True)
                    steps = _stage(scratch, stack, release, phase, write=False)
                for step in steps:
                    print(f"     {stack} / {step.cluster}:")
                    for line in step.changes:
                        print(f"       {line}")
            print(f"     gate: {gate}")


def _shown(path: Path) -> str:
    """``path`` as the user reads it: relative to the project when inside it (the default stacks folder)."""
    from cli.fleet import _shown as shown

    return shown(path)


def _resume_point(state: dict[str, Any]) -> str:
    """Where a run from ``state`` goes on, in words."""
    waves = state["waves"]
    for number, wave in enumerate(waves, 1):
        where = {
            "pending": "before its control planes",
            "control-plane": "at the gate after its control planes",
            "control-plane-completed": "before its nodes",
            "nodes": "at the gate after its nodes",
        }.get(wave["phase"])
        if where:
            return f"resuming at wave {number}/{len(waves)} {wave['wave']}, {where}"
    return "resuming: every wave is done"


def fleet_command(args: argparse.Namespace) -> int:
    """``fleet <command>``: ``upgrade`` here, every other command in :func:`cli.fleet.run`."""
    from cli import fleet

    if args.fleet_command != "upgrade":
        return fleet.run(args)
    known, names = fleet.selected(args)
    return run(args, known, names)


def run(args: argparse.Namespace, known: dict[str, Path], names: list[str]) -> int:
    from nodefleet.bootimages.versions import VersionError, known_release, parse_ocp

    if not args.release:
        raise InputError("fleet upgrade needs --release x.y.z (the release every hosted cluster moves to)")
    try:
        parsed = parse_ocp(args.release)
        if not parsed.has_patch:
            raise VersionError("no patch level")
        known_release(parsed)
    except VersionError as exc:
        raise InputError(f"--release {args.release}: not a release nodefleet can place ({exc})") from None
    release = str(parsed)
    state_path = args.state or (args.stacks_dir / STATE_FILE)
    state = _load_state(state_path, release)
    resumed = state is not None
    if state is None:
        state = {"release": release, "waves": _plan(known, names, release), "stopped": None, "commits": []}
    if args.dry_run:
        _print_plan(known, state, release)
        return EXIT_OK
    if not state["waves"]:
        print(f"nodefleet fleet upgrade: every hosted cluster is at {release}: nothing to do")
        return EXIT_OK
    if resumed:
        print(
            f"nodefleet fleet upgrade to {release}: {_resume_point(state)} ({_shown(state_path)})",
            file=sys.stderr,
        )
    _save(state_path, state)
    for number, wave in enumerate(state["waves"], 1):
        label = f"wave {number}/{len(state['waves'])} {wave['wave']}"
        stacks = sorted(wave["stacks"])
        while wave["phase"] != "done":
            phase = wave["phase"]
            if phase in ("pending", "control-plane-completed"):
                step = "control-plane" if phase == "pending" else "nodes"
                print(f"{label}: {step}: {', '.join(stacks)}", file=sys.stderr, flush=True)
                for stack in stacks:
                    for s in _stage(known[stack], stack, release, step, write=True):
                        for line in s.changes:
                            print(f"  {stack} / {s.cluster}: {line}", file=sys.stderr)
                rendered = [s for s in stacks if wave["modes"].get(s) == "render"]
                failures = _render(args, known, rendered)
                if failures:
                    state["stopped"] = f"{label} {step}: " + "; ".join(failures)
                    _save(state_path, state)
                    print(
                        f"nodefleet fleet upgrade: stopped: {state['stopped']}; fix it and run the same command again"
                    )
                    return EXIT_INTERNAL if any("exited 3" in f for f in failures) else EXIT_VIOLATIONS
                wave["phase"] = step
                state["stopped"] = None
                if args.commit:
                    paths = [known[s] for s in stacks] + _render_dirs(args, known, rendered) + [state_path]
                    _save(state_path, state)
                    commit = _commit(
                        paths,
                        f"Fleet upgrade to {release}: {wave['wave']} wave, {step} ({', '.join(stacks)})",
                    )
                    if commit:
                        state["commits"].append({"wave": wave["wave"], "phase": step, "commit": commit})
                        print(f"  committed {commit}", file=sys.stderr)
                _save(state_path, state)
                continue
            gate = _gate(args, known, wave, phase, release)
            if gate.reason:
                state["stopped"] = f"{label} after {phase}: " + "; ".join([gate.reason, *gate.details])
                _save(state_path, state)
                print(
                    f"nodefleet fleet upgrade to {release}: stopped at the gate after {label} {phase}: {gate.reason}"
                )
                for line in gate.details:
                    print(f"  {line}")
                print(f"  state: {_shown(state_path)}")
                if gate.next_step:
                    print(f"  next: {gate.next_step}")
                return EXIT_VIOLATIONS
            print(
                f"gate after {label} {phase}: passed" + (f" ({gate.passed})" if gate.passed else ""),
                file=sys.stderr,
                flush=True,
            )
            wave["phase"] = "control-plane-completed" if phase == "control-plane" else "done"
            _save(state_path, state)
    state["complete"] = True
    state["stopped"] = None
    _save(state_path, state)
    print(
        f"nodefleet fleet upgrade: every wave is at {release} ({len(state['waves'])} waves; state: {_shown(state_path)})"
    )
    return EXIT_OK
