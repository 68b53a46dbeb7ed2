"""``fleet upgrade``: a release across the fleet, wave by wave, control plane before nodes, each step committed once.

The plan (:mod:`nodefleet.fleet.upgrade_plan`) is made from the stack files as ``check`` reads them, and refused
whole, before anything is written or printed as a plan, when any cluster cannot take the release (a downgrade, a
skipped minor, a release its management cluster's HyperShift operator does not run, …). Then, for each wave, two
steps, each followed by a gate:

1. **control-plane**: the wave's stack files edited (``upgrade``'s first step in every hosted cluster; a
   standalone cluster's own upgrade is the user's, ``oc adm upgrade``), the render-mode stacks re-rendered and,
   with ``--commit``, committed; with ``--push``, pushed and waited for until the GitOps tool reports the commit
   applied (:mod:`cli.gitops_wait`); then the gate: ``--health-command`` (with ``NODEFLEET_UPGRADE_PHASE``,
   ``NODEFLEET_WAVE``, ``NODEFLEET_WAVE_STACKS``), ``--confirmed`` on the next run, or, in apply mode, each
   HostedCluster read through its management cluster (:mod:`cli.upgrade_gates`);
2. **nodes**: the held pins removed and each standalone cluster's ``release`` recorded, the same way.

A step is recorded in the state file (:mod:`nodefleet.fleet.upgrade_state`) only after its commits exist. Each
commit holds exactly its step's paths and carries trailers naming the upgrade (:mod:`cli.upgrade_git`), so a run
killed between any two operations, rerun, finds what it had done and redoes exactly the rest: the same commits,
one per step, as a run that was never interrupted. With ``--commit`` the stack files go to the current branch and
the render to the branch the GitOps tool reads (``--gitops-branch``, default ``nodefleet-rendered``), without
touching the checkout; one commit holds both when that is the current branch.

With ``--push``, before anything is written, the GitOps kubeconfig is loaded and the remote read: one that cannot
be read, or a branch someone else pushed to there, is refused (exit 2), never overwritten.

Where it stops (a gate, a render, a push, the GitOps tool not reporting the commit in ``--timeout``), it prints
what holds it back and the next command, exits 1 (or the render's exit), and records it; the same command resumes.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import os
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cli import upgrade_gates
from cli.exits import EXIT_INTERNAL, EXIT_INVALID, EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.fleet_upgrade_options import DEFAULT_REMOTE, GITOPS_BRANCH, STATE_FILE
from cli.stacks import registry_of
from cli.upgrade_gates import Verdict
from cli.upgrade_git import Repo
from nodefleet.fleet import upgrade_state as us
from nodefleet.fleet.upgrade_plan import (
    PHASES,
    ClusterMove,
    FileStep,
    Plan,
    PlanError,
    StackInput,
    Step,
    Support,
    WavePlan,
    config_difference,
    expected_config,
    judge,
    parse_release,
    parse_supported_versions,
    plan_lines,
    waves_of,
)

#: Tests set it to ``<point>`` or ``<point>:<n>`` to end the process at the n-th time (default the first) the run
#: reaches that point, as a kill would: every point is a place between two operations a crash must survive.
CRASH_ENV = "NODEFLEET_TEST_CRASH_AT"
CRASH_POINTS = (
    "edited", "rendered", "added", "commit-tree", "committed", "render-committed", "index-synced", "recorded",
    "pushed", "waiting", "waited", "applied", "gate",
)  # fmt: skip
_reached: dict[str, int] = {}
#: What the kubeconfig of --push is for, as every message about it starts (the same words as cli.gitops_wait's).
GITOPS_CLUSTER = "the GitOps cluster (gitops.kubeconfig, --gitops-kubeconfig)"


def crash_point(name: str) -> None:
    """End the process here, at once, when :data:`CRASH_ENV` names this point (the tests of crash safety)."""
    assert name in CRASH_POINTS, name
    wanted = os.environ.get(CRASH_ENV)
    if not wanted:
        return
    point, _, nth = wanted.partition(":")
    if point != name:
        return
    _reached[name] = _reached.get(name, 0) + 1
    if _reached[name] == int(nth or 1):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(137)


# --- reading the stacks ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loaded:
    """One selected stack: its file and what ``check`` reads from it."""

    path: Path
    text: str
    input: StackInput


def _stack_text(path: Path) -> str:
    """A stack file's text, read as every file a user names is (regular file, bounded, UTF-8)."""
    from nodefleet.stackfile.yamlfile import YAMLFileError, read_text

    try:
        return read_text(path, _shown(path))
    except YAMLFileError as exc:
        raise InputError(str(exc)) from None


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _load_text(path: Path, shown: str, stack: str, text: str) -> Any:
    """The stack of ``text`` as ``check`` reads it (the same reader, the validated model)."""
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from nodefleet.render.objects import load_fleet
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    # The registry is judged when the stacks are read (_read_stacks): an edit changes no management cluster.
    key = (stack, _sha(text))
    if key in _LOADED:
        return _LOADED[key]
    with tempfile.TemporaryDirectory() as scratch:
        copy_of = Path(scratch) / path.name
        copy_of.write_text(text, encoding="utf-8")
        try:
            config = read_stack_config(copy_of, shown, fast=True)
            fleet = _LOADED[key] = load_fleet(config.get(CONFIG_KEY), stack, PROJECT_DIR, source=shown)
            return fleet
        except (ConfigError, YAMLFileError) as exc:
            raise InputError(str(exc)) from None


#: Stack texts already loaded by :func:`_load_text` (by stack and digest): each step's edit is read back once,
#: and the next step's starts from it.
_LOADED: dict[tuple[str, str], Any] = {}


def _read_stacks(known: dict[str, Path], names: Sequence[str], registry: Any) -> list[Loaded]:
    """Every selected stack, validated as ``check`` validates it (against the fleet's registry too); every
    invalid one named at once (exit 2)."""
    from cli.fleet import _shown
    from cli.upgrade import hold_marks_of
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from nodefleet.fleet.registry import load_fleet_in
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError, read_text

    out, problems = [], []
    for name in names:
        path = known[name]
        shown = _shown(path)
        try:
            text = read_text(path, shown)
            config = read_stack_config(path, shown, fast=True)
            fleet = load_fleet_in(registry, config.get(CONFIG_KEY), name, PROJECT_DIR, source=shown)
            _LOADED[(name, _sha(text))] = fleet
        except (ConfigError, YAMLFileError) as exc:
            problems.append(str(exc))
            continue
        marks = hold_marks_of(text)
        out.append(
            Loaded(
                path, text, StackInput(name, shown, fleet.config.wave, fleet.config.output.mode, fleet, marks)
            )
        )
    if problems:
        raise InputError("\n".join(problems))
    return out


# --- the plan -------------------------------------------------------------------------------------------------


def _support(loaded: Sequence[Loaded], target: Any, registry: Any) -> dict[str, Support | None]:
    """What the HyperShift operator of each management cluster a cluster moves on runs: read from its
    ``supported-versions`` ConfigMap where a stack on it is applied by nodefleet (apply mode), else as the fleet's
    registry declares it (``hypershift.supportedVersions``); None where neither says."""
    from nodefleet.bootimages.versions import parse_ocp
    from nodefleet.stackfile.hosted import HostedCluster

    out: dict[str, Support | None] = {}
    reach: dict[str, str | None] = {}
    for item in loaded:
        for resolved in item.input.fleet.clusters:
            cluster = resolved.config
            if not isinstance(cluster, HostedCluster) or parse_ocp(cluster.release) >= target:
                continue
            name = cluster.management_cluster
            declared = registry.get(name).supported_versions
            out.setdefault(
                name,
                Support(declared, f"{registry.source} hypershift.supportedVersions") if declared else None,
            )
            if item.input.mode == "apply":
                reach.setdefault(
                    name, upgrade_gates.management_kubeconfig(registry, item.input.fleet, cluster)
                )
    if reach:
        _refuse_server_aliases(registry)
    for name, kubeconfig in sorted(reach.items()):
        out[name] = _read_supported_versions(name, kubeconfig)
    return out


def _refuse_server_aliases(registry: Any) -> None:
    """Before any management cluster is reached: two registry entries whose kubeconfigs reach one API server
    are refused (exit 2, naming both), instead of a run that meets one cluster under two names. A kubeconfig
    that is not there yet is left to the read that needs it, which names it."""
    from cli.kube import kubeconfig_document
    from nodefleet.fleet.registry import kubeconfig_server, server_alias_problems

    servers = {}
    for entry in registry.entries if registry.exists else ():
        if entry.kubeconfig and Path(entry.kubeconfig).expanduser().is_file():
            document = kubeconfig_document(entry.kubeconfig, f"management cluster {entry.name}")
            servers[entry.name] = kubeconfig_server(document)
    problems = server_alias_problems(registry, servers)
    if problems:
        raise InputError("\n".join(problems))


class Unreadable(Exception):
    """The plan needs something a cluster did not answer: a stop (exit 1) before anything is written."""


def _read_supported_versions(management: str, kubeconfig: str | None) -> Support:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from cli.kube import api_client
    from nodefleet.files import redact

    where = f"management cluster {management}: ConfigMap hypershift/supported-versions"
    api = api_client(kubeconfig, f"management cluster {management}")
    try:
        found = client.CoreV1Api(api).read_namespaced_config_map("supported-versions", "hypershift")
    except ApiException as exc:
        raise Unreadable(
            f"{where}: the management cluster answered {exc.status} {exc.reason}; the HyperShift operator writes it "
            "when it starts: is it installed there, and may this kubeconfig read ConfigMaps in the hypershift namespace?"
        ) from None
    except Exception as exc:  # urllib3's connection errors share no base worth naming
        raise Unreadable(f"{where}: cannot reach the management cluster ({redact(str(exc))[:300]})") from None
    finally:
        api.close()
    data = found.data or {}
    try:
        return Support(
            parse_supported_versions(data.get("supported-versions"), where), f"its {where.split(': ', 1)[1]}"
        )
    except ValueError as exc:
        raise Unreadable(str(exc)) from None


def _skew_settings(args: argparse.Namespace) -> tuple[str, int | None]:
    """The version-skew profile the policy pack judges with (``--policy-config``), for the plan's own judgment."""
    from cli.verdicts import read_policy_config

    config = read_policy_config(args) or {}
    settings = config.get("version-skew")
    if not isinstance(settings, dict):
        return "ocp", None
    profile = settings.get("profile") or "ocp"
    behind = settings.get("maxMinorsBehind")
    return str(profile), behind if isinstance(behind, int) and not isinstance(behind, bool) else None


def _make_plan(
    args: argparse.Namespace, loaded: Sequence[Loaded], names: Sequence[str], target: Any, registry: Any
) -> Plan:
    from cli.upgrade import StackEdit

    profile, behind = _skew_settings(args)
    support = _support(loaded, target, registry)
    judgment = judge(
        [item.input for item in loaded],
        target,
        support,
        selected=names,
        skew_profile=profile,
        max_behind=behind,
    )
    if judgment.refusals:
        raise PlanError(judgment.refusals)
    by_stack = {item.input.stack: item for item in loaded}
    problems: list[str] = []
    waves = []
    of_stack: dict[str, list[ClusterMove]] = {}
    for move in judgment.moves:
        of_stack.setdefault(move.stack, []).append(move)
    for wave, members in waves_of([item.input for item in loaded], judgment.moves):
        in_wave = {s.stack for s in members}
        moves = tuple(m for m in judgment.moves if m.stack in in_wave)
        files: dict[str, dict[str, FileStep]] = {phase: {} for phase in PHASES}
        found: dict[str, list[str]] = {phase: [] for phase in PHASES}
        # Stack by stack, each through both steps (the second edits the first's text, kept parsed); the steps'
        # files and problems in the order of the stacks.
        for s in members:
            mine = of_stack[s.stack]
            edit = StackEdit(by_stack[s.stack].text, s.file)
            for phase in PHASES:
                before = edit.text
                held = edit.hold_marks()
                try:
                    after, changes = edit.step(mine, phase)
                except InputError as exc:
                    found[phase].append(str(exc))
                    continue
                if after == before:
                    continue
                # An edit made on the text changes only the entries the step names, in a file without anchors
                # and aliases (cli/upgrade_text.py); one made by the round trip is read back as check reads it.
                problem = (
                    "" if edit.on_text else _verify_edit(by_stack[s.stack], before, after, mine, phase, held)
                )
                if problem:
                    found[phase].append(problem)
                    continue
                files[phase][s.stack] = FileStep(_sha(before), _sha(after), tuple(changes))
                edit.accept()
        steps = []
        for phase in PHASES:
            problems += found[phase]
            instructions = tuple(
                f"{m.stack} / {m.cluster}: upgrade the cluster itself to {m.target} (`oc adm upgrade --to {m.target}`: "
                "its cluster version operator moves it); nodefleet records the release in the nodes step"
                for m in moves
                if m.kind == "standalone" and phase == "control-plane"
            )
            steps.append(Step(wave, phase, files[phase], instructions))
        stacks = {s.stack: (s.mode, tuple(m.cluster for m in of_stack[s.stack])) for s in members}
        waves.append(WavePlan(wave, stacks, tuple(steps), moves))
    if problems:
        raise PlanError(problems)
    notes = list(judgment.notes) + [f"{m.stack} / {m.cluster}: {n}" for m in judgment.moves for n in m.notes]
    return Plan(str(target), tuple(waves), judgment.left_out, tuple(notes))


def _verify_edit(
    item: Loaded,
    before: str,
    after: str,
    moves: Sequence[ClusterMove],
    phase: str,
    held: frozenset[tuple[str, str]],
) -> str:
    """Why the edit of one step is not exactly the step, read back as ``check`` reads it; "" when it is."""
    stack, shown = item.input.stack, item.input.file
    old = _load_text(item.path, shown, stack, before)
    try:
        new = _load_text(item.path, shown, stack, after)
    except InputError as exc:
        return f"{shown}: the {phase} step would leave the stack file invalid: {exc}"
    difference = config_difference(
        expected_config(old.config.model_dump(), moves, phase, held), new.config.model_dump()
    )
    if difference:
        return (
            f"{shown}: the {phase} step would change more than the step: {difference} (clusters of this stack file "
            "share YAML through an anchor and alias); give each cluster its own copy of what they share, then run the "
            "upgrade again"
        )
    return ""


# --- where things are -----------------------------------------------------------------------------------------


@dataclass
class Context:
    """One run: the options, the stacks, the plan and its state, and git (with --commit)."""

    args: argparse.Namespace
    known: dict[str, Path]
    plan: Plan
    state: us.State
    state_path: Path
    #: The fleet's registry of management clusters (nodefleet.fleet.registry.Registry).
    registry: Any
    repo: Any = None  # a Repo with --commit
    gitops_branch: str | None = None
    fleets: dict[str, Any] | None = None

    def save(self) -> None:
        _save(self.state_path, self.state)

    @property
    def digest(self) -> str:
        return self.state.plan_digest

    def label(self, step: Step) -> str:
        number = [w.wave for w in self.plan.waves].index(step.wave) + 1
        return f"wave {number}/{len(self.plan.waves)} {step.wave}"

    def wave(self, step: Step) -> WavePlan:
        return next(w for w in self.plan.waves if w.wave == step.wave)

    def fleet(self, stack: str) -> Any:
        if self.fleets is None:
            self.fleets = {}
        if stack not in self.fleets:
            from mockruntime.run import PROJECT_DIR, read_stack_config
            from nodefleet.render.objects import load_fleet
            from nodefleet.stackfile.model import CONFIG_KEY

            path = self.known[stack]
            self.fleets[stack] = load_fleet(
                read_stack_config(path, _shown(path)).get(CONFIG_KEY), stack, PROJECT_DIR
            )
        return self.fleets[stack]

    def render_dir(self, stack: str) -> Path:
        if self.args.out:
            return Path(self.args.out) / stack
        return Path(str(self.fleet(stack).render_dir.path))


def _save(path: Path, state: us.State) -> None:
    state = state.model_copy(update={"updated": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    path.parent.mkdir(parents=True, exist_ok=True)
    temp = path.with_name(f".{path.name}.tmp")
    temp.write_text(us.dump(state), encoding="utf-8")
    os.replace(temp, path)


def _state_path(args: argparse.Namespace, repo: Repo | None) -> Path:
    if args.state is None:
        if repo is not None:
            return repo.git_dir / STATE_FILE
        return Path(args.stacks_dir) / STATE_FILE
    from nodefleet.stackfile.paths import PathError, output_file

    try:
        path = output_file(args.state, example="--state ../upgrade-state.json")
    except PathError as exc:
        raise InputError(f"--state {args.state}: {exc}") from None
    if repo is not None:
        resolved = path.resolve()
        if resolved.is_relative_to(repo.git_dir):
            raise InputError(
                f"--state {path}: inside the repository's git folder, which git keeps for its own files; leave --state "
                "out (nodefleet then keeps it there under a name of its own) or choose a file elsewhere"
            )
        if repo.inside(resolved):
            ignored = (
                repo.git("check-ignore", "-q", "--no-index", "--", str(resolved), check=False).returncode == 0
            )
            if not ignored:
                raise InputError(
                    f"--state {path}: inside the repository's working tree and not ignored by git, so it would be left "
                    "modified and uncommitted after every step (it records the commits, so it cannot be in them); "
                    "leave --state out, or choose a file outside the working tree or one .gitignore ignores"
                )
    return path


def _load_state(path: Path) -> us.State | None:
    from nodefleet.files import FileKindError, FileTooLargeError, read_regular_file

    try:
        data = read_regular_file(path)
    except FileNotFoundError:
        return None
    except (FileKindError, FileTooLargeError, IsADirectoryError) as exc:
        raise InputError(
            f"{_shown(path)}: {exc}, not a fleet upgrade state file; remove it, or give --state a file of its own"
        ) from None
    except OSError as exc:
        raise InputError(f"{_shown(path)}: cannot be read ({exc.strerror or type(exc).__name__})") from None
    try:
        return us.load(data, _shown(path))
    except us.StateError as exc:
        raise InputError(str(exc)) from None


def _refuse_foreign(path: Path) -> None:
    """``--restart`` sets the state file aside by writing a new one over it: not over a file that is not
    nodefleet's state (exit 2, naming it)."""
    from nodefleet.files import read_regular_file

    try:
        us.load(read_regular_file(path), _shown(path))
    except us.ForeignFile as exc:
        raise InputError(str(exc)) from None
    except (OSError, ValueError):
        pass  # no file, or one nodefleet wrote (valid or not): what --restart replaces; the write names any other


def _shown(path: Path) -> str:
    from cli.fleet import _shown as shown

    return shown(path)


# --- the run --------------------------------------------------------------------------------------------------


class Stop(Exception):
    """A step that did not complete: where, why, the objects that hold it back, what to do, the exit code."""

    def __init__(
        self, at: str, reason: str, details: Sequence[str] = (), next_step: str = "", code: int = 1
    ) -> None:
        super().__init__(reason)
        self.at, self.reason, self.details, self.next_step, self.code = (
            at,
            reason,
            tuple(details),
            next_step,
            code,
        )


def _resume_point(ctx: Context) -> str:
    action = us.next_action(ctx.state, ctx.plan)
    if action.step is None:
        return "resuming: every wave is done"
    phase = "control planes" if action.step.phase == "control-plane" else "nodes"
    where = {
        "stage": f"before its {phase}",
        "push": f"pushing its {phase}",
        "wait": f"waiting for the GitOps tool to apply its {phase}",
        "gate": f"at the gate after its {phase}",
    }[action.kind]
    return f"resuming at {ctx.label(action.step)}, {where}"


def run(args: argparse.Namespace, known: dict[str, Path], names: list[str]) -> int:
    if not args.release:
        raise InputError("fleet upgrade needs --release x.y.z (the release every cluster moves to)")
    try:
        target = parse_release(args.release)
    except PlanError as exc:
        raise InputError(str(exc)) from None
    if args.push and not args.commit:
        raise InputError("--push pushes the commits of --commit: give both (--commit --push)")
    if args.push:
        _check_remote_option(args.remote or DEFAULT_REMOTE)
    if args.parallel < 1:
        raise InputError(f"--parallel {args.parallel}: must be at least 1")
    release = str(target)
    registry = registry_of(Path(args.stacks_dir))
    repo = _open_repo(args) if args.commit else None
    state_path = _state_path(args, repo)
    stacks_dir = str(Path(args.stacks_dir).resolve())
    if args.restart and not args.dry_run:
        _refuse_foreign(state_path)
    state = None if args.restart else _load_state(state_path)
    if state is not None and state.complete:
        state = None  # a finished upgrade is history: the release is planned afresh
    if state is not None:
        try:
            us.check_bound(
                state, str(state_path), release=release, stacks_dir=stacks_dir, selection=names,
                commit=args.commit, push=args.push,
            )  # fmt: skip
        except us.StateError as exc:
            raise InputError(str(exc)) from None
        plan = state.the_plan()
    else:
        from cli.stacks import CACHED_FLEET, many_stacks

        # A fleet's stack files read through the cache of their values, as gitops and fleet check read them (what
        # they keep then left out of the cycle collector's passes); the plan's own reading (an edit made through
        # the round trip, read back) past it, with the collector on: ruamel's loaders hold reference cycles.
        with many_stacks(
            Path(args.stacks_dir) if len(names) >= CACHED_FLEET else None,
            [(known[n], _shown(known[n])) for n in names],
        ):
            loaded = _read_stacks(known, names, registry)
        try:
            plan = _make_plan(args, loaded, names, target, registry)
        except PlanError as exc:
            raise InputError(
                "\n".join(exc.problems)
            ) from None  # one line per kind of problem, nothing written
        except Unreadable as exc:
            print(f"nodefleet fleet upgrade to {release}: stopped before anything was written: {exc}")
            return EXIT_VIOLATIONS
    if args.dry_run:
        return _print_plan(plan, state, release, commit=args.commit)
    if not plan.waves:
        print(f"nodefleet fleet upgrade: every cluster is at {release}: nothing to do")
        for line in plan_lines(plan):
            print(line)
        return EXIT_OK
    fresh = state or _new_state(args, plan, repo, stacks_dir, names, registry)
    ctx = Context(args, known, plan, fresh, state_path, registry, repo)
    if repo is not None:
        ctx.gitops_branch = _gitops_branch(args, plan, registry)
        _check_git(ctx, fresh=state is None)
    _check_files(ctx)
    if args.push:
        _check_push(ctx)
        unreached = _unreached_gitops_cluster(ctx)
        if unreached is not None:
            return unreached
    if state is not None:
        print(
            f"nodefleet fleet upgrade to {release}: {_resume_point(ctx)} ({_shown(state_path)})",
            file=sys.stderr,
        )
    ctx.save()
    return _drive(ctx)


def _check_remote_option(remote: str) -> None:
    """--remote names a remote or a URL without credentials: the state file records it, and every message shows
    it."""
    from nodefleet.files import redact

    if redact(remote) != remote:
        raise InputError(
            f"--remote {redact(remote)}: the URL carries credentials, which nodefleet would print and record in its "
            "state file; add the remote without them (git remote add NAME URL, the credentials in a credential helper "
            "or an SSH key) and give --remote NAME"
        )


def _open_repo(args: argparse.Namespace) -> Repo:
    from cli.upgrade_git import open_repo

    return open_repo(Path(args.stacks_dir).resolve())


def _new_state(
    args: argparse.Namespace,
    plan: Plan,
    repo: Repo | None,
    stacks_dir: str,
    names: Sequence[str],
    registry: Any,
) -> us.State:
    git = None
    if repo is not None:
        gitops = _gitops_branch(args, plan, registry)
        git = us.GitBinding.model_validate(
            {
                "branch": repo.branch,
                "base": repo.head(),
                "gitopsBranch": gitops,
                "gitopsBase": repo.rev(f"refs/heads/{gitops}") if gitops else None,
                "remote": (args.remote or DEFAULT_REMOTE) if args.push else None,
            }
        )
    return us.new_state(
        plan, stacks_dir=stacks_dir, selection=names, commit=args.commit, push=args.push, git=git
    )


def _gitops_branch(args: argparse.Namespace, plan: Plan, registry: Any) -> str | None:
    """Where the render is committed (--gitops-branch, else the registry's gitops.branch, else the branch the
    pipeline publishes to): None when nothing of the plan is rendered (apply mode)."""
    if not any(mode == "render" for w in plan.waves for mode in w.modes.values()):
        return None
    return str(args.gitops_branch or (registry.gitops.branch if registry.gitops else GITOPS_BRANCH))


def _check_git(ctx: Context, *, fresh: bool) -> None:
    """With --commit: the repository is the one the upgrade commits to, its recorded commits are there, and
    the step's paths can be committed alone."""
    repo, state = ctx.repo, ctx.state
    binding = state.git
    where = _shown(ctx.state_path)
    if binding is None:
        raise InputError(f"{where}: this upgrade was started without --commit; continue it without --commit")
    if repo.branch != binding.branch:
        raise InputError(
            f"--commit: this upgrade commits to the branch {binding.branch}, and {repo.branch} is checked out; check out "
            f"{binding.branch} and run the same command again"
        )
    head = repo.head()
    if not repo.is_ancestor(binding.base, head):
        raise InputError(
            f"{where}: the branch {binding.branch} no longer contains the commit the upgrade started from "
            f"({binding.base[:12]}); it was rewritten. Run with --restart to plan afresh from the stack files as they are"
        )
    if ctx.gitops_branch is not None and ctx.gitops_branch != binding.gitops_branch:
        raise InputError(
            f"--gitops-branch {ctx.gitops_branch}: this upgrade commits its render to {binding.gitops_branch}; give the "
            "same branch, or run with --restart"
        )
    if ctx.args.push and ctx.args.remote and binding.remote and ctx.args.remote != binding.remote:
        from nodefleet.files import redact

        raise InputError(
            f"--remote {redact(ctx.args.remote)}: this upgrade pushes to {redact(binding.remote)}, where its earlier "
            "steps went; give that remote (or leave --remote out), or run with --restart"
        )
    if binding.gitops_branch and binding.gitops_branch != binding.branch:
        elsewhere = repo.checked_out_elsewhere(binding.gitops_branch)
        if elsewhere:
            raise InputError(
                f"--commit: the branch {binding.gitops_branch}, which the render is committed to, is checked out in "
                f"{elsewhere}; nodefleet commits to it without a checkout and would leave that working tree behind: "
                "remove that worktree (git worktree remove) or switch it to another branch"
            )
    for event in state.progress:
        if event.commit and not _is_upgrade_commit(ctx, event.commit, event.step, binding.branch):
            raise InputError(
                f"{where}: the commit {event.commit[:12]} it records for {event.step} is not on {binding.branch} with "
                "this upgrade's trailers (the branch was reset or rewritten); run with --restart to plan afresh"
            )
        if event.render_commit and event.render_commit != event.commit:
            on = binding.gitops_branch or binding.branch
            if not _is_upgrade_commit(ctx, event.render_commit, event.step, on):
                raise InputError(
                    f"{where}: the render commit {event.render_commit[:12]} it records for {event.step} is not on {on} "
                    "with this upgrade's trailers; run with --restart to plan afresh"
                )
    paths = [
        repo.relative(ctx.known[s])
        for step in ctx.plan.steps
        for s in step.files
        if repo.inside(ctx.known[s])
    ]
    outside = [
        str(ctx.known[s]) for step in ctx.plan.steps for s in step.files if not repo.inside(ctx.known[s])
    ]
    for w in ctx.plan.waves:
        outside += [
            str(ctx.render_dir(s))
            for s, mode in w.modes.items()
            if mode == "render" and not repo.inside(ctx.render_dir(s))
        ]
    if outside:
        raise InputError(
            f"--commit: {', '.join(sorted(set(outside)))} outside the repository {repo.top}; the commits can hold only "
            "what is in it: move it in (or --out DIR inside it), or leave --commit out"
        )
    if (
        fresh
        and binding.gitops_branch
        and binding.gitops_branch != binding.branch
        and binding.gitops_base is None
    ):
        raise InputError(
            f"--commit: the branch {binding.gitops_branch}, which the GitOps tool reads the render from, does not exist; "
            "publish the fleet's render there first (`scripts/pipeline publish`), so that the upgrade's render commits "
            "change only the stacks they move, or name the branch the wiring reads (--gitops-branch)"
        )
    if fresh:
        ident = repo.git("var", "GIT_COMMITTER_IDENT", check=False)
        if ident.returncode != 0:
            raise InputError(
                "--commit: git does not know who makes the commits (user.name and user.email are not set); set them "
                "(git config user.name …, git config user.email …) and run the same command again"
            )
        dirty = repo.dirty(sorted(set(paths)))
        if dirty:
            raise InputError(
                f"--commit: {', '.join(dirty)} {'has' if len(dirty) == 1 else 'have'} changes not committed (or not "
                "tracked yet); each step's commit must hold only the step: commit or stash them first"
            )


def _check_push(ctx: Context) -> None:
    """With --push, before anything is written: the GitOps tool's objects can be read (a kubeconfig that loads),
    the remote answers, and no branch the upgrade pushes has moved there (someone else pushed to it)."""
    from cli.kube import api_client
    from cli.upgrade_git import moved_on_remote

    if ctx.gitops_branch is not None:
        _, kubeconfig, _ = _gitops_settings(ctx.args, ctx.registry)
        api_client(kubeconfig, GITOPS_CLUSTER).close()  # loads it: a missing or broken file is named now
    problem = moved_on_remote(ctx.repo, _remote(ctx), _remote_tips(ctx))
    if problem:
        raise InputError(problem)


def _unreached_gitops_cluster(ctx: Context) -> int | None:
    """Before the first push, which makes a step live for the GitOps tool: its cluster answers, and every
    Kustomization or Application the run will wait on can be read there. A run that could push but not wait
    would leave a step applied with nobody judging its gate: it stops here instead (exit 1, nothing committed,
    pushed or recorded). None when they can all be read."""
    from cli.gitops_wait import targets, unreadable
    from nodefleet.render.wiring import folders

    if ctx.gitops_branch is None:
        return None
    tool, kubeconfig, namespaces = _gitops_settings(ctx.args, ctx.registry)
    stacks = sorted({s for wave in ctx.plan.waves for s, mode in wave.modes.items() if mode == "render"})
    wanted = targets(tool, [f for s in stacks for f in folders(ctx.fleet(s))], *namespaces)
    lines = unreadable(kubeconfig, wanted, min(ctx.args.timeout, 30.0))
    if not lines:
        return None
    print(
        f"nodefleet fleet upgrade to {ctx.plan.release}: stopped before the first push: {tool}'s objects on the "
        "GitOps cluster cannot be read, so the run could push but not wait for them; nothing was committed or pushed"
    )
    for line in lines:
        print(f"  {line}")
    print(
        "  next: make them readable (the cluster reachable through the kubeconfig, the wiring from `nodefleet "
        "gitops` applied), then run the same command again"
    )
    return EXIT_VIOLATIONS


def _pushed_branches(ctx: Context) -> list[str]:
    return [ctx.repo.branch] + (
        [ctx.gitops_branch] if ctx.gitops_branch and ctx.gitops_branch != ctx.repo.branch else []
    )


def _remote(ctx: Context) -> str:
    return str(_binding(ctx).remote or ctx.args.remote or DEFAULT_REMOTE)


def _remote_tips(ctx: Context) -> dict[str, str | None]:
    from cli.upgrade_git import remote_tips

    return remote_tips(ctx.repo, _remote(ctx), _pushed_branches(ctx), ctx.args.timeout)


def _is_upgrade_commit(ctx: Context, sha: str, step_key: str, branch: str) -> bool:
    from cli.upgrade_git import find_commit

    tip = ctx.repo.rev(f"refs/heads/{branch}")
    if tip is None or ctx.repo.rev(sha) is None or not ctx.repo.is_ancestor(sha, tip):
        return False
    found = find_commit(
        ctx.repo, branch, f"{sha}^" if ctx.repo.rev(f"{sha}^") else None, _trailers(ctx, step_key)
    )
    return found is not None


def _binding(ctx: Context) -> us.GitBinding:
    assert ctx.state.git is not None  # with --commit, bound when the upgrade began (_check_git)
    return ctx.state.git


def _trailers(ctx: Context, step_key: str) -> dict[str, str]:
    wave, phase = step_key.split("/", 1)
    return {"release": ctx.plan.release, "plan": ctx.digest, "wave": wave, "phase": phase}


def _check_files(ctx: Context) -> None:
    """Every stack file of the plan is where the state says the upgrade left it (or one step further, edited by
    a run that was killed before recording it); anything else changed it, and the plan no longer holds."""
    for stack, (now, maybe) in sorted(us.expected_files(ctx.state, ctx.plan).items()):
        path = ctx.known.get(stack)
        if path is None:
            raise InputError(
                f"{_shown(ctx.state_path)}: the stack {stack} of this upgrade has no stack file any more; restore it, "
                "or run with --restart"
            )
        text = _stack_text(path)
        if _sha(text) not in (now, maybe):
            raise InputError(
                f"{_shown(path)}: changed since the upgrade planned it (by something other than this upgrade); the "
                "plan no longer holds. Restore it (git checkout), or run with --restart to plan afresh from the stack "
                "files as they are"
            )


def _drive(ctx: Context) -> int:
    release = ctx.plan.release
    while True:
        action = us.next_action(ctx.state, ctx.plan)
        if action.kind == "done":
            break
        step = action.step
        assert step is not None
        try:
            if action.kind == "stage":
                _stage(ctx, step)
            elif action.kind == "push":
                _push(ctx, step)
            elif action.kind == "wait":
                _wait(ctx, step)
            else:
                _gate_step(ctx, step)
        except Stop as stop:
            return _stopped(ctx, step, stop)
    ctx.state = ctx.state.model_copy(update={"complete": True, "stopped": None})
    ctx.save()
    print(
        f"nodefleet fleet upgrade: every wave is at {release} ({len(ctx.plan.waves)} waves; state: "
        f"{_shown(ctx.state_path)})"
    )
    for line in [f"  not moved: {x.line()}" for x in ctx.plan.left_out]:
        print(line)
    return EXIT_OK


def _stopped(ctx: Context, step: Step, stop: Stop) -> int:
    label = f"{ctx.label(step)} {step.phase}"
    where = {
        "render": f"at the render of {label}",
        "push": f"at the push of {label}",
        "applied": f"waiting for the GitOps tool to apply {label}",
        "gate": f"at the gate after {label}",
    }[stop.at]
    ctx.state = ctx.state.model_copy(
        update={
            "stopped": us.Stopped.model_validate(
                {
                    "step": step.key,
                    "at": stop.at,
                    "reason": f"{label}: {stop.reason}"[:8192],
                    "details": [d[:8192] for d in stop.details[:200]],
                    "next": stop.next_step[:8192],
                }
            )
        }
    )
    ctx.save()
    print(f"nodefleet fleet upgrade to {ctx.plan.release}: stopped {where}: {stop.reason}")
    for line in stop.details:
        print(f"  {line}")
    print(f"  state: {_shown(ctx.state_path)}")
    if stop.next_step:
        print(f"  next: {stop.next_step}")
    return stop.code


# --- one step -------------------------------------------------------------------------------------------------


def _stage(ctx: Context, step: Step) -> None:
    """Edit, render, commit, record: each part done at most once, whatever the last run finished."""
    from cli.upgrade_git import commit_paths, find_commit, sync_index

    wave = ctx.wave(step)
    rendered_stacks = [s for s in step.stacks if wave.modes[s] == "render"]
    label = f"{ctx.label(step)}: {step.phase}"
    print(f"{label}: {', '.join(step.stacks) or 'nothing to edit'}", file=sys.stderr, flush=True)
    # What nodefleet cannot do, said where it is due (as the dry run says it): the gate waits for it.
    for line in step.instructions:
        print(f"  you: {line}", file=sys.stderr, flush=True)
    repo = ctx.repo
    source = render_commit = None
    if repo is not None and step.files:
        source = find_commit(repo, repo.branch, _binding(ctx).base, _trailers(ctx, step.key))
        _no_staged_changes(ctx, step, source)
    rendered = False
    if source is None:
        _edit(ctx, step, wave)
        crash_point("edited")
        if rendered_stacks:
            _render(ctx, rendered_stacks)
            rendered = True
        crash_point("rendered")
        if repo is not None and step.files:
            source = commit_paths(
                repo, repo.branch, _source_paths(ctx, step, rendered_stacks), _subject(ctx, step),
                _body(step), _trailers(ctx, step.key), crash=crash_point,
            )  # fmt: skip
            crash_point("committed")
            if source:
                print(f"  committed {source[:12]} to {repo.branch}", file=sys.stderr)
    else:
        _at_after(ctx, step)
        print(
            f"  found {source[:12]} on {repo.branch}: committed by a run that stopped before recording it",
            file=sys.stderr,
        )
    separate = ctx.gitops_branch is not None and ctx.gitops_branch != getattr(repo, "branch", None)
    if repo is not None and source and rendered_stacks and separate:
        assert ctx.gitops_branch is not None
        trailers = {**_trailers(ctx, step.key), "source": source}
        render_commit = find_commit(repo, ctx.gitops_branch, _binding(ctx).gitops_base, trailers)
        if render_commit is None:
            if not rendered:
                _render(ctx, rendered_stacks)
            render_commit = commit_paths(
                repo, ctx.gitops_branch, [repo.relative(ctx.render_dir(s)) for s in rendered_stacks],
                _subject(ctx, step, render=True),
                [f"Renders {source} on {repo.branch} (the stack files of that commit): "
                 + ", ".join(repo.relative(ctx.render_dir(s)) for s in rendered_stacks)],
                trailers, crash=crash_point,
            )  # fmt: skip
            crash_point("render-committed")
            if render_commit:
                print(f"  committed {render_commit[:12]} to {ctx.gitops_branch}", file=sys.stderr)
    elif source and rendered_stacks:
        render_commit = source
    if repo is not None and source:
        sync_index(repo, _source_paths(ctx, step, rendered_stacks))
        crash_point("index-synced")
    fields: dict[str, Any] = {}
    if source:
        fields["commit"] = source
        if render_commit:
            fields["renderCommit"] = render_commit
    ctx.state = us.record(ctx.state, step, "staged", **fields)
    ctx.save()
    crash_point("recorded")


def _no_staged_changes(ctx: Context, step: Step, source: str | None) -> None:
    """Nothing the user staged in the step's stack files: the index has them as the branch has them (or, when the
    step's commit exists but a killed run did not bring the index in line with it, as its parent has them)."""
    paths = [ctx.repo.relative(ctx.known[s]) for s in step.files]
    staged = ctx.repo.staged(paths)
    if staged and source is not None:
        staged = [
            p for p in staged if p in ctx.repo.staged([p], f"{source}^") and p in ctx.repo.staged([p], source)
        ]
    if staged:
        raise InputError(
            f"--commit: {', '.join(staged)} {'has' if len(staged) == 1 else 'have'} changes staged in git's index; the "
            f"step's commit must hold only the step: unstage them (git restore --staged {' '.join(staged)}) and run "
            "the same command again"
        )


def _edit(ctx: Context, step: Step, wave: WavePlan) -> None:
    """Each stack file of the step to its planned text (left alone when a killed run already wrote it)."""
    from cli.upgrade import edit_step

    for stack in step.stacks:
        planned = step.files[stack]
        path = ctx.known[stack]
        text = _stack_text(path)
        if _sha(text) == planned.after:
            continue
        if _sha(text) != planned.before:
            raise InputError(
                f"{_shown(path)}: changed since the upgrade planned it; restore it, or run with --restart"
            )
        after, changes = edit_step(text, _shown(path), wave.moves_of(stack), step.phase)
        if _sha(after) != planned.after:
            raise InputError(
                f"{_shown(path)}: the edit of {step.key} does not give the text planned (nodefleet changed since the "
                "plan was made?); run with --restart to plan afresh"
            )
        temp = path.with_name(f".{path.name}.nodefleet-upgrade")
        temp.write_text(after, encoding="utf-8")
        os.replace(temp, path)
        for line in changes:
            print(f"  {stack} / {line}", file=sys.stderr)


def _at_after(ctx: Context, step: Step) -> None:
    for stack in step.stacks:
        path = ctx.known[stack]
        if _sha(_stack_text(path)) != step.files[stack].after:
            raise InputError(
                f"{_shown(path)}: the commit of {step.key} exists, but the file is not as that commit has it; restore "
                "it (git checkout HEAD -- the file), or run with --restart"
            )


def _source_paths(ctx: Context, step: Step, rendered_stacks: Sequence[str]) -> list[str]:
    """What the step's commit on the current branch holds: its stack files, and its render folders when the
    GitOps tool reads this branch or the branch already tracks them."""
    repo = ctx.repo
    paths = [repo.relative(ctx.known[s]) for s in step.stacks]
    same = ctx.gitops_branch == repo.branch
    for stack in rendered_stacks:
        folder = repo.relative(ctx.render_dir(stack))
        if same or repo.tracked(folder):
            paths.append(folder)
    return paths


def _subject(ctx: Context, step: Step, *, render: bool = False) -> str:
    what = "Render of the fleet upgrade" if render else "Fleet upgrade"
    return f"{what} to {ctx.plan.release}: {step.wave} wave, {step.phase} ({', '.join(step.stacks)})"


def _body(step: Step) -> list[str]:
    return [f"{stack}: {line}" for stack in step.stacks for line in step.files[stack].changes]


def _render(ctx: Context, stacks: Sequence[str]) -> None:
    """Re-render the step's render-mode stacks; a failure stops the run with the render's exit."""
    from concurrent.futures import ThreadPoolExecutor

    from cli.fleet import _run_one

    render_args = copy.copy(ctx.args)
    render_args.fleet_command = "render"
    with ThreadPoolExecutor(max_workers=max(1, ctx.args.parallel)) as pool:
        results = list(pool.map(lambda s: _run_one(render_args, s, ctx.known[s])[0], stacks))
    for r in results:
        print(f"    render {r.stack}: exit {r.exit} {r.summary or r.error}", file=sys.stderr, flush=True)
    failures = [r for r in results if r.exit != EXIT_OK]
    if failures:
        code = max(r.exit for r in failures)
        raise Stop(
            "render",
            "; ".join(f"render of {r.stack} exited {r.exit}: {r.error or r.summary}" for r in failures),
            next_step="fix what the render reports and run the same command again; it resumes at this step",
            code=EXIT_INTERNAL
            if code == EXIT_INTERNAL
            else (EXIT_INVALID if code == EXIT_INVALID else EXIT_VIOLATIONS),
        )


def _push(ctx: Context, step: Step) -> None:
    """Both branches to the remote, all or none, never forced; a branch someone else moved there stops the run
    (exit 2) with nothing pushed, any other failure (exit 1) with what git said."""
    from cli.upgrade_git import moved_on_remote, push

    event = next(e for e in reversed(ctx.state.progress) if e.step == step.key and e.event == "staged")
    branches = [ctx.repo.branch]
    if event.render_commit and event.render_commit != event.commit and ctx.gitops_branch:
        branches.append(ctx.gitops_branch)
    remote = _remote(ctx)
    problem, rejected = push(ctx.repo, remote, branches, ctx.args.timeout)
    moved = moved_on_remote(ctx.repo, remote, _remote_tips(ctx)) if rejected else ""
    if moved:
        raise Stop("push", moved, code=EXIT_INVALID)
    if problem:
        raise Stop(
            "push",
            problem,
            next_step=f"make `git push {remote} {' '.join(branches)}` work (the remote's URL, credentials git finds "
            "without asking), then run the same command again; the commits are made and are not made again",
        )
    print(f"  pushed {', '.join(branches)} to {remote}", file=sys.stderr, flush=True)
    crash_point("pushed")
    ctx.state = us.record(ctx.state, step, "pushed")
    ctx.save()


def _wait(ctx: Context, step: Step) -> None:
    from cli.gitops_wait import targets, wait_applied
    from cli.upgrade_git import fetch_objects
    from nodefleet.render.wiring import folders

    event = next(e for e in reversed(ctx.state.progress) if e.step == step.key and e.event == "staged")
    wave = ctx.wave(step)
    rendered = [s for s in step.stacks if wave.modes[s] == "render"]
    if not rendered or not event.render_commit:
        ctx.state = us.record(
            ctx.state, step, "applied", detail="nothing rendered in this step: the workflow applies it"
        )
        ctx.save()
        return
    tool, kubeconfig, namespaces = _gitops_settings(ctx.args, ctx.registry)
    wanted = targets(tool, [f for s in rendered for f in folders(ctx.fleet(s))], *namespaces)
    branch = ctx.gitops_branch or ctx.repo.branch
    sha = event.render_commit
    print(
        f"  waiting until {tool} reports {branch}@{sha[:12]} applied on {_count(len(wanted), 'objects')} (at most "
        f"{ctx.args.timeout:.0f}s, --timeout)",
        file=sys.stderr,
        flush=True,
    )

    fetched: set[str] = set()

    def contains(other: str) -> bool:
        if ctx.repo.rev(other) is None and other not in fetched:
            # A commit someone else pushed on top of the step: fetched (objects only, no ref moves) to be judged.
            fetched.add(other)
            fetch_objects(ctx.repo, _remote(ctx), branch, ctx.args.timeout)
        return ctx.repo.rev(other) is not None and ctx.repo.is_ancestor(sha, other)

    def waiting(readings: object) -> None:
        crash_point("waiting")

    waited = wait_applied(
        kubeconfig, wanted, branch, sha, ctx.args.timeout, contains=contains, waiting=waiting
    )
    crash_point("waited")
    if not waited.applied:
        raise Stop(
            "applied",
            f"{branch}@sha1:{sha} is not reported applied by {len(waited.lines)} of {len(wanted)} objects within "
            f"{ctx.args.timeout:.0f}s (--timeout)",
            waited.lines,
            "once they have (or after fixing what they report), run the same command again; it waits again, and "
            "nothing is committed or pushed twice",
        )
    ctx.state = us.record(
        ctx.state,
        step,
        "applied",
        detail=f"{branch}@sha1:{sha} reported applied by {_count(len(wanted), 'objects')}",
    )
    ctx.save()
    crash_point("applied")


def _gitops_settings(args: argparse.Namespace, registry: Any) -> tuple[str, str, tuple[str, str]]:
    """With --push: (the tool whose objects report a commit applied, the kubeconfig of the cluster it runs on,
    (Flux's namespace, Argo CD's)), from the options, else the fleet registry's gitops; exit 2 when unknown."""
    from cli.gitops_wait import check_tool

    settings = registry.gitops
    tool = check_tool(args.gitops_tool or (settings.tool if settings else None))
    kubeconfig = args.gitops_kubeconfig or (settings.kubeconfig if settings else None)
    if kubeconfig is None:
        raise InputError(
            "--push: where Argo CD or Flux runs is not known: set gitops.kubeconfig in the fleet registry "
            f"({registry.source}) or pass --gitops-kubeconfig"
        )
    namespaces = (
        (settings.flux_namespace, settings.argocd_namespace) if settings else ("flux-system", "argocd")
    )
    return tool, str(kubeconfig), namespaces


def _count(n: int, noun: str) -> str:
    return f"{n} {noun if n != 1 else noun.removesuffix('s')}"


def _gate_step(ctx: Context, step: Step) -> None:
    label = f"{ctx.label(step)} {step.phase}"
    gate = _gate(ctx, step)
    crash_point("gate")
    if gate.reason:
        raise Stop("gate", gate.reason, gate.details, gate.next_step)
    print(
        f"gate after {label}: passed" + (f" ({gate.passed})" if gate.passed else ""),
        file=sys.stderr,
        flush=True,
    )
    ctx.state = us.record(ctx.state, step, "gate", detail=gate.passed or "passed")
    ctx.save()


def _gate(ctx: Context, step: Step) -> Verdict:
    """The gate after ``step``: it passed when its ``reason`` is ""."""
    from cli.fleet import _health_gate

    args, wave = ctx.args, ctx.wave(step)
    stacks = sorted(wave.stacks)
    release = ctx.plan.release
    # A standalone cluster nodefleet applies is read, not taken on trust: the nodes step after this gate writes
    # the release into its stack file, which must never say a release the cluster does not run. Neither
    # --confirmed nor a health command passes a cluster whose ClusterVersion says otherwise.
    read_standalone: list[str] = []
    if step.phase == "control-plane":
        applied = {
            s: (
                ctx.fleet(s).config.output.kubeconfig,
                [m.cluster for m in wave.moves_of(s) if m.kind == "standalone"],
            )
            for s in stacks
            if wave.modes[s] == "apply"
        }
        applied = {s: v for s, v in applied.items() if v[1]}
        readings = upgrade_gates.standalone_versions(applied, release)
        behind = [r for r in readings if r.state != upgrade_gates.READY]
        if behind:
            return Verdict(
                f"{_count(len(behind), 'standalone cluster')} of wave {wave.wave} "
                f"{'have' if len(behind) != 1 else 'has'} not completed {release}: the nodes step records "
                f"{release} in the stack file only once the cluster runs it",
                tuple(r.line for r in behind),
                f"upgrade the cluster itself (`oc adm upgrade --to {release}`), and once its ClusterVersion has "
                "completed it run the same command again; it resumes at this gate (--confirmed does not pass a "
                "cluster that reports another release)",
            )
        read_standalone = [f"{s}/{name}" for s, (_, names) in applied.items() for name in names]
    if args.health_command:
        reason = _health_gate(
            args.health_command,
            wave.wave,
            stacks,
            args.timeout,
            {"NODEFLEET_UPGRADE_PHASE": step.phase},
            name_wave=False,  # the stop line names the wave and phase
        )
        return Verdict(
            reason,
            next_step="run the same command again once the wave is healthy; it resumes at this gate"
            if reason
            else "",
        )
    if args.confirmed:
        args.confirmed = False  # one confirmation passes one gate
        return Verdict("", passed="confirmed with --confirmed")
    unseen: list[str] = []
    hosted = {s: [m.cluster for m in wave.moves_of(s) if m.kind == "hosted"] for s in stacks}
    if all(mode == "apply" for mode in wave.modes.values()):
        read = upgrade_gates.load(ctx.known, {s: c for s, c in hosted.items() if c}, ctx.registry)
        if step.phase == "nodes":
            unseen += upgrade_gates.has_auto_node(read)
        unseen += [name for name in wave.standalone if name not in read_standalone]
        if not unseen:
            if not read:  # only standalone clusters, each read above
                return Verdict(
                    "",
                    passed=f"{_count(len(read_standalone), 'ClusterVersion')} of wave {wave.wave}: {release} Completed",
                )
            readings = (
                upgrade_gates.control_planes(read, release, ctx.registry)
                if step.phase == "control-plane"
                else upgrade_gates.node_pools(read, ctx.registry)
            )
            return upgrade_gates.verdict(readings, step.phase, wave.wave, release)
    if step.phase == "control-plane":
        held = sorted(s for s, c in hosted.items() if c)
        what = " and ".join(
            part
            for part in (
                f"the control planes of wave {wave.wave} ({', '.join(held)}) have completed {release}"
                if held
                else "",
                *(
                    f"you have upgraded standalone cluster {name} itself and its ClusterVersion has completed "
                    f"{release} (`oc adm upgrade --to {release}`; the nodes step then records {release} in its "
                    "stack file)"
                    for name in wave.standalone
                    if name not in read_standalone
                ),
            )
            if part
        )
    else:
        what = f"wave {wave.wave} ({', '.join(stacks)}) is healthy on {release}"
    if unseen:
        what += (
            f" (nodefleet cannot read {', '.join(unseen)}: AutoNode node classes live in the hosted cluster, and a "
            "standalone cluster's version in the cluster itself)"
        )
    return Verdict(
        f"waiting until {what}: run the same command again with --confirmed once it has (or give --health-command)"
    )


def _print_plan(plan: Plan, state: us.State | None, release: str, *, commit: bool) -> int:
    print(f"nodefleet fleet upgrade to {release}: the plan (dry run: nothing written)")
    if state is not None:
        print(f"(an upgrade in progress: {len(state.progress)} of its events done; the plan as it was made)")
    done = us.done_steps(state) if state is not None else {}
    if not plan.waves:
        print(f"every cluster is at {release}: nothing to do")
    for line in plan_lines(plan, done, commit=commit):
        print(line)
    return EXIT_OK
