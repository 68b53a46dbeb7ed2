"""The state of a fleet upgrade: how far it got, bound to the plan it was made for, so a resume never merges,
repeats or skips a step, and a state file that was edited by hand or belongs to another fleet is refused.

A state file is JSON a user can read (``fleet upgrade --state``). It holds:

- the plan itself (:class:`nodefleet.fleet.upgrade_plan.Plan`, as JSON) and its digest: the stacks, the release,
  the wave order and every step's edit (the sha256 of each stack file before and after it);
- what the run was asked to do (``--commit``, ``--push``), the stacks folder and the stacks selected;
- where the commits go (:class:`GitBinding`): the branch and the commit the upgrade started from, the branch
  the GitOps tool reads;
- the progress, one event per line, in the only order a step can take (:data:`EVENTS`): ``staged`` (the stack
  files edited, rendered and, with ``--commit``, committed: the commits named), ``pushed``, ``applied`` (the
  GitOps tool reported the commit applied), ``gate`` (the gate after the step passed, and how);
- why the last run stopped, if it did (:class:`Stopped`);
- a digest of all of the above (:func:`seal`): a file changed by anything but nodefleet is refused.

:func:`load` validates all of it (shape, sizes, digest, plan digest, the order of the progress) and raises
:class:`StateError` with what to do: run with ``--restart`` to plan afresh from the stack files as they are, or
remove the file; a file that is not nodefleet's state at all (not JSON, another tool's JSON) is
:class:`ForeignFile`, whose message suggests a path of its own instead (``--restart`` would write over it). :func:`check_bound` compares a state with the run that reads it. Checking the state against
git and the stack files (the commits it names exist and carry the upgrade's trailers, each stack file is at the
step the state says) needs git and the files: ``cli/fleet_upgrade.py`` does it with :func:`expected_files`.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nodefleet.fleet.upgrade_plan import PHASES, Plan, Step
from nodefleet.stackfile.waves import WAVES

__all__ = [
    "EVENTS",
    "SCHEMA",
    "WAVE_PHASES",
    "Action",
    "Event",
    "GitBinding",
    "State",
    "StateError",
    "Stopped",
    "WaveProgress",
    "check_bound",
    "done_steps",
    "dump",
    "expected_files",
    "load",
    "new_state",
    "next_action",
    "record",
    "seal",
    "summary",
]

#: What a state file says it is; a file without it (or with another) is not read.
SCHEMA = "nodefleet.io/fleet-upgrade/v2"
#: The events of a step, in the only order they happen. ``pushed`` and ``applied`` only with ``--push``.
EVENTS = ("staged", "pushed", "applied", "gate")

_SHA256 = r"^[0-9a-f]{64}$"
_OID = r"^[0-9a-f]{40}([0-9a-f]{24})?$"
_Text = Annotated[str, Field(max_length=8192)]
_Name = Annotated[str, Field(min_length=1, max_length=255)]


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True, populate_by_name=True)


class _File(_Model):
    before: Annotated[str, Field(pattern=_SHA256)]
    after: Annotated[str, Field(pattern=_SHA256)]
    changes: Annotated[list[_Text], Field(max_length=10_000)]


class _Step(_Model):
    phase: Literal["control-plane", "nodes"]
    files: Annotated[dict[_Name, _File], Field(max_length=10_000)]
    instructions: Annotated[list[_Text], Field(max_length=10_000)]


class _Stack(_Model):
    mode: Literal["render", "apply"]
    clusters: Annotated[list[_Name], Field(max_length=10_000)]


class _Move(_Model):
    stack: _Name
    cluster: _Name
    kind: Literal["hosted", "standalone"]
    current: _Name
    target: _Name
    management: Annotated[str, Field(max_length=255)]
    namespace: Annotated[str, Field(max_length=255)]
    nodes_only: bool = Field(alias="nodesOnly")
    keep_stream: Literal["", "rhel-9", "rhel-10"] = Field(alias="keepStream")
    notes: Annotated[list[_Text], Field(max_length=1000)]


class _Wave(_Model):
    wave: Literal["canary", "early", "main", "last"]
    stacks: Annotated[dict[_Name, _Stack], Field(min_length=1, max_length=10_000)]
    moves: Annotated[list[_Move], Field(min_length=1, max_length=100_000)]
    steps: Annotated[list[_Step], Field(min_length=2, max_length=2)]


class _LeftOut(_Model):
    stack: _Name
    cluster: _Name
    reason: _Text


class _Plan(_Model):
    release: _Name
    waves: Annotated[list[_Wave], Field(max_length=len(WAVES))]
    left_out: Annotated[list[_LeftOut], Field(alias="leftOut", max_length=100_000)]
    notes: Annotated[list[_Text], Field(max_length=10_000)]


class GitBinding(_Model):
    """Where an upgrade with ``--commit`` commits: bound at its start, checked at every resume."""

    #: The branch the stack-file commits go to (the branch checked out when the upgrade began).
    branch: _Name
    #: Its commit when the upgrade began: the upgrade's commits are the ones after it.
    base: Annotated[str, Field(pattern=_OID)]
    #: The branch the GitOps tool reads the render from; None in apply mode (nothing rendered).
    gitops_branch: _Name | None = Field(None, alias="gitopsBranch")
    #: Its commit when the upgrade began (None: the branch did not exist yet).
    gitops_base: Annotated[str, Field(pattern=_OID)] | None = Field(None, alias="gitopsBase")
    #: The remote ``--push`` pushes both branches to.
    remote: _Name | None = None


class Event(_Model):
    step: Annotated[str, Field(max_length=64)]
    event: Literal["staged", "pushed", "applied", "gate"]
    #: ``staged`` with ``--commit``: the commit of the stack files on ``branch``.
    commit: Annotated[str, Field(pattern=_OID)] | None = None
    #: ``staged`` with ``--commit`` in render mode: the commit of the render on ``gitopsBranch`` (the same as
    #: ``commit`` when the GitOps tool reads the branch the stack files are on).
    render_commit: Annotated[str, Field(pattern=_OID)] | None = Field(None, alias="renderCommit")
    #: ``gate``: how it passed; ``applied``: what the GitOps tool reported.
    detail: _Text = ""


class Stopped(_Model):
    """Why the last run stopped, where, and what to do next (the text it printed)."""

    step: Annotated[str, Field(max_length=64)]
    #: ``render``, ``push``, ``applied`` (waiting for the GitOps tool) or ``gate``.
    at: Literal["render", "push", "applied", "gate"]
    reason: _Text
    details: Annotated[list[_Text], Field(max_length=200)] = []
    next: _Text = ""


#: How far a wave got, as the state file's ``waves`` summary says it.
WAVE_PHASES = ("pending", "control-plane", "control-plane-completed", "nodes", "done")


class WaveProgress(_Model):
    """One wave of the plan and how far it got: a summary of the progress, for the people reading the file."""

    wave: Literal["canary", "early", "main", "last"]
    stacks: Annotated[list[_Name], Field(max_length=10_000)]
    phase: Literal["pending", "control-plane", "control-plane-completed", "nodes", "done"]


class State(_Model):
    schema_: Literal["nodefleet.io/fleet-upgrade/v2"] = Field(alias="schema")
    release: _Name
    #: The stacks folder, resolved.
    stacks_dir: Annotated[str, Field(max_length=4096)] = Field(alias="stacksDir")
    #: The stacks the run selected (``--stacks``, else every stack of the folder).
    selection: Annotated[list[_Name], Field(max_length=100_000)]
    plan_digest: Annotated[str, Field(pattern=_SHA256)] = Field(alias="planDigest")
    plan: _Plan
    commit: bool
    push: bool
    git: GitBinding | None = None
    progress: Annotated[list[Event], Field(max_length=100_000)] = []
    #: Each wave and how far it got, derived from ``progress`` (and checked against it when read).
    waves: Annotated[list[WaveProgress], Field(max_length=len(WAVES))] = []
    stopped: Stopped | None = None
    complete: bool = False
    updated: Annotated[str, Field(max_length=64)] = ""
    digest: Annotated[str, Field(pattern=_SHA256)] | None = None

    def the_plan(self) -> Plan:
        return Plan.from_json(self.plan.model_dump(by_alias=True))


class StateError(ValueError):
    """A state file nodefleet will not follow; the message names the file, what is wrong and what to do."""


class ForeignFile(StateError):
    """A file where the state file goes that is not nodefleet's state at all: the message says so and suggests
    another path, never ``--restart`` (which would write the state over it)."""


def _foreign(where: str, why: str) -> ForeignFile:
    return ForeignFile(
        f"{where}: not a fleet upgrade state file ({why}), and nodefleet does not write its state over a file it did "
        f"not write: give --state a file of its own (for example --state ../upgrade-state.json), or move {where} "
        "out of the way"
    )


def _fix(where: str) -> str:
    return f"run the same command with --restart to plan afresh from the stack files as they are, or remove {where}"


def _canonical(data: Mapping[str, Any]) -> bytes:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode()


def seal(state: State) -> State:
    """``state`` with its digest: sha256 of everything else in it, as written."""
    body = state.model_dump(by_alias=True, exclude={"digest"}, mode="json")
    return state.model_copy(update={"digest": hashlib.sha256(_canonical(body)).hexdigest()})


def dump(state: State) -> str:
    """The text of a state file (sealed)."""
    return json.dumps(seal(state).model_dump(by_alias=True, mode="json"), indent=2) + "\n"


def load(data: bytes, where: str) -> State:
    """A state file's content, validated whole; :class:`StateError` (with what to do) otherwise."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _foreign(where, f"not UTF-8 text: byte {exc.start}") from None
    try:
        raw = json.loads(text)
    except RecursionError:
        raise _foreign(where, "nested too deeply") from None
    except ValueError as exc:
        line = getattr(exc, "lineno", None)
        at = f" at line {line}" if line else ""
        raise _foreign(where, f"not JSON{at}") from None
    if not isinstance(raw, dict):
        raise _foreign(where, f"JSON, but a {type(raw).__name__}, not an object")
    found = raw.get("schema")
    if isinstance(found, str) and not found.startswith(SCHEMA.rsplit("/", 1)[0] + "/"):
        raise _foreign(where, f"its schema is {found[:60]!r}")
    if found is None and "release" not in raw:
        raise _foreign(where, "a JSON object that names neither a schema nor a release")
    if raw.get("schema") != SCHEMA:
        found = raw.get("schema") if isinstance(raw, dict) else None
        what = (
            f"its schema is {str(found)[:60]!r}, not {SCHEMA!r}"
            if isinstance(found, str)
            else "it names no schema (an earlier nodefleet wrote it, or something else did)"
        )
        raise StateError(f"{where}: not a state file this nodefleet reads: {what}; {_fix(where)}")
    try:
        state = State.model_validate(raw)
    except ValidationError as exc:
        first = exc.errors()[0]
        place = ".".join(str(p) for p in first["loc"]) or "(top level)"
        raise StateError(
            f"{where}: not a valid fleet upgrade state file ({place}: {first['msg']}); {_fix(where)}"
        ) from None
    except RecursionError:
        raise StateError(
            f"{where}: not a fleet upgrade state file (nested too deeply); {_fix(where)}"
        ) from None
    if seal(state).digest != state.digest:
        raise StateError(
            f"{where}: was changed since nodefleet wrote it (its digest does not match its content); nodefleet does "
            f"not follow a state file edited by hand: {_fix(where)}"
        )
    try:
        plan = state.the_plan()
    except (KeyError, TypeError, ValueError):
        raise StateError(f"{where}: its plan cannot be read; {_fix(where)}") from None
    if plan.digest() != state.plan_digest or plan.release != state.release:
        raise StateError(f"{where}: its plan does not match the plan digest it names; {_fix(where)}")
    problem = _order_problem(state, plan)
    if problem:
        raise StateError(f"{where}: {problem}; {_fix(where)}")
    return state


def summary(plan: Plan, progress: Sequence[Event]) -> list[WaveProgress]:
    """Each wave of ``plan`` and how far ``progress`` took it."""
    done = {(e.step, e.event) for e in progress}
    out = []
    for wave in plan.waves:
        control, nodes = (f"{wave.wave}/{phase}" for phase in PHASES)
        reached = [
            (control, "staged"), (control, "gate"), (nodes, "staged"), (nodes, "gate"),
        ]  # fmt: skip
        phase = WAVE_PHASES[sum(1 for point in reached if point in done)]
        out.append(WaveProgress(wave=wave.wave, stacks=sorted(wave.stacks), phase=phase))  # type: ignore[arg-type]
    return out


def _sequence(plan: Plan, push: bool) -> list[tuple[str, str]]:
    """Every (step key, event) of ``plan``, in order."""
    out = []
    for step in plan.steps:
        events = ["staged", "pushed", "applied", "gate"] if push and step.files else ["staged", "gate"]
        out += [(step.key, e) for e in events]
    return out


def _order_problem(state: State, plan: Plan) -> str:
    waves = [w.wave for w in plan.waves]
    if waves != sorted(set(waves), key=WAVES.index):
        return f"its plan's waves are not in rollout order ({', '.join(waves)})"
    for wave in plan.waves:
        if [s.phase for s in wave.steps] != list(PHASES):
            return f"its plan's steps of wave {wave.wave} are not {' then '.join(PHASES)}"
    expected = _sequence(plan, state.push)
    if len(state.progress) > len(expected):
        return "its progress lists more events than its plan has"
    steps = {s.key: s for s in plan.steps}
    for i, event in enumerate(state.progress):
        if (event.step, event.event) != expected[i]:
            want = f"{expected[i][1]} of {expected[i][0]}"
            return (
                f"its progress is out of order at entry {i + 1} ({event.event} of {event.step}, where the plan has "
                f"{want} next)"
            )
        step = steps[event.step]
        if event.event == "staged" and state.commit and step.files and event.commit is None:
            return f"its progress says {event.step} was staged with --commit, but names no commit"
        if (event.commit or event.render_commit) and (event.event != "staged" or not state.commit):
            return f"its progress names a commit where it made none ({event.event} of {event.step})"
    if state.complete and len(state.progress) != len(expected):
        return "it says the upgrade is complete, but its progress is not"
    if state.waves != summary(plan, state.progress):
        return "its waves do not say what its progress says"
    return ""


def new_state(
    plan: Plan,
    *,
    stacks_dir: str,
    selection: Sequence[str],
    commit: bool,
    push: bool,
    git: GitBinding | None,
) -> State:
    state = State.model_validate(
        {
            "schema": SCHEMA,
            "release": plan.release,
            "stacksDir": stacks_dir,
            "selection": list(selection),
            "planDigest": plan.digest(),
            "plan": plan.to_json(),
            "commit": commit,
            "push": push,
            "git": git.model_dump(by_alias=True) if git else None,
        }
    )
    return state.model_copy(update={"waves": summary(plan, [])})


def check_bound(
    state: State,
    where: str,
    *,
    release: str,
    stacks_dir: str,
    selection: Sequence[str],
    commit: bool,
    push: bool,
) -> None:
    """The state belongs to this run: same release, stacks folder, stacks and flags; :class:`StateError`
    naming the difference and what to do otherwise."""
    if state.release != release:
        stopped = f" (stopped at {state.stopped.step}: {state.stopped.reason[:200]})" if state.stopped else ""
        raise StateError(
            f"{where}: an upgrade to {state.release} is not finished{stopped}; finish it with --release "
            f"{state.release}, or run with --restart to abandon it and plan {release} afresh"
        )
    if state.stacks_dir != stacks_dir or list(state.selection) != list(selection):
        raise StateError(
            f"{where}: belongs to an upgrade of other stacks ({state.stacks_dir}: {', '.join(state.selection)}); "
            f"this run is for {stacks_dir}: {', '.join(selection)}. Run it with the --stacks-dir and --stacks of "
            f"that upgrade, give this one a state file of its own (--state), or {_fix(where)}"
        )
    for flag, before, now in (("--commit", state.commit, commit), ("--push", state.push, push)):
        if before != now:
            said = "with" if before else "without"
            raise StateError(
                f"{where}: this upgrade was started {said} {flag}; continue it {said} {flag} (each step must be "
                f"recorded the same way), or {_fix(where)}"
            )


@dataclass(frozen=True)
class Action:
    """What a run does next: ``stage``, ``push``, ``wait`` (for the GitOps tool), ``gate``, or ``done``."""

    kind: str
    step: Step | None = None


def next_action(state: State, plan: Plan) -> Action:
    expected = _sequence(plan, state.push)
    if len(state.progress) >= len(expected):
        return Action("done")
    key, event = expected[len(state.progress)]
    step = next(s for s in plan.steps if s.key == key)
    return Action({"staged": "stage", "pushed": "push", "applied": "wait", "gate": "gate"}[event], step)


def record(state: State, step: Step, event: str, **fields: Any) -> State:
    """``state`` with ``event`` of ``step`` appended (it must be the next one), the stop cleared."""
    entry = Event.model_validate({"step": step.key, "event": event, **fields})
    progress = [*state.progress, entry]
    return state.model_copy(
        update={"progress": progress, "waves": summary(state.the_plan(), progress), "stopped": None}
    )


def done_steps(state: State) -> dict[str, str]:
    """Step key → the last event recorded for it."""
    out: dict[str, str] = {}
    for event in state.progress:
        out[event.step] = event.event
    return out


def expected_files(state: State, plan: Plan) -> dict[str, tuple[str, str | None]]:
    """Each stack file of the plan → (the sha256 its text must have now, the sha256 it may have instead: the
    result of the step to stage next, when a run that was killed edited it without recording it)."""
    staged = {e.step for e in state.progress if e.event == "staged"}
    action = next_action(state, plan)
    edited_maybe = action.step.key if action.kind == "stage" and action.step is not None else None
    out: dict[str, tuple[str, str | None]] = {}
    settled: set[str] = set()
    for step in plan.steps:
        for stack, f in step.files.items():
            if stack in settled:
                continue
            if step.key in staged:
                out[stack] = (f.after, None)
            else:
                out[stack] = (f.before, f.after if step.key == edited_maybe else None)
                settled.add(stack)  # its first step not staged: the file is at that step's start
    return out
