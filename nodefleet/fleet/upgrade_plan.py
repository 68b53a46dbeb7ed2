"""The plan of a fleet upgrade: which clusters move to a release, in which wave and phase, and why the others do not.

``fleet upgrade --release R`` moves a fleet through its waves (:mod:`nodefleet.stackfile.waves`), each wave in two
steps, each step one edit of the wave's stack files (one commit with ``--commit``) followed by a gate:

1. **control-plane**: every HostedCluster of the wave moves to R; the NodePools and AutoNode classes that follow
   it are held at the release they run by a marked pin (HyperShift lets nodes run ahead of a control plane that
   is still upgrading). A standalone cluster is moved by its own cluster version operator (``oc adm upgrade``):
   the plan says so, and nodefleet changes nothing of it yet.
2. **nodes**: the held pins go, the nodes follow the control plane; a standalone cluster's ``release`` becomes R
   in its stack file, once its cluster version operator has completed it (the gate before this step).

The plan is computed from each stack as ``check`` reads it: the validated model
(:func:`nodefleet.render.objects.load_fleet`), YAML anchors and aliases resolved, plus the hold marks (comments,
which the model does not keep). Everything that would make a step wrong is refused before anything is written,
every cluster at once, each with its fix (:func:`judge`):

- a release that is not ``x.y.z`` (:func:`parse_release`);
- a cluster already past R (a downgrade): the stacks to leave out with ``--stacks`` are named;
- a control plane that would skip a minor: control planes move one minor at a time (OCP 5.0 counts as 4.23,
  :func:`nodefleet.bootimages.versions.linear_minor`, so 4.22 → 5.0 is one hop and 4.21 → 5.0 is not). nodefleet
  does not plan the intermediate hop itself: it cannot know which patch of the intermediate line exists and is
  an update edge; it names the line to upgrade to first;
- a release the management cluster's HyperShift operator does not run (its supported versions, from the
  registry in render mode or the operator's ``supported-versions`` ConfigMap in apply mode);
- a node pool the user pinned that the move would put outside the node/control-plane skew
  (:func:`nodefleet.bootimages.skew.node_version_skew`, the profile the policy pack uses);
- nodes still held from an earlier, unfinished upgrade.

A standalone cluster whose boot images would fall outside the boot image skew of R
(:func:`nodefleet.bootimages.skew.evaluate_skew`, the rule the ``boot-image-skew`` policy applies) is left out of
the plan, with the reason and the fix, instead of being moved into a state the policies refuse (:class:`LeftOut`).

Nothing here writes or runs anything: the edits themselves (the bytes of a ruamel round trip that keeps comments
and layout, made on the text where that gives the same bytes: ``cli/upgrade_text.py``) and git stay in ``cli/``. The plan is plain data with a stable digest (:meth:`Plan.digest`) that the state of
the upgrade (:mod:`nodefleet.fleet.upgrade_state`) and the commits it makes are bound to.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodefleet.bootimages.skew import DEFAULT_SKEW_POLICY, SkewPolicy, evaluate_skew, node_version_skew
from nodefleet.bootimages.versions import (
    OCPVersion,
    VersionError,
    default_stream,
    known_release,
    linear_minor,
    parse_ocp,
)
from nodefleet.stackfile.hosted import HostedCluster
from nodefleet.stackfile.model import Fleet, ResolvedCluster
from nodefleet.stackfile.waves import WAVES

__all__ = [
    "PHASES",
    "RELEASE_FORM",
    "ClusterMove",
    "FileStep",
    "Judgment",
    "LeftOut",
    "Plan",
    "PlanError",
    "StackInput",
    "Step",
    "Support",
    "WavePlan",
    "config_difference",
    "expected_config",
    "judge",
    "line_name",
    "parse_release",
    "parse_supported_versions",
    "plan_lines",
    "waves_of",
]

#: The steps of a wave, in order.
PHASES = ("control-plane", "nodes")
#: The one form ``--release`` takes.
RELEASE_FORM = "x.y.z, as in 4.22.4 (numbers without leading zeros, no suffix such as -multi or -rc.1)"
_RELEASE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")
_LINE = re.compile(r"(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)")


class PlanError(ValueError):
    """A plan that cannot be made: one line per problem, each naming the cluster (or option) and the fix."""

    def __init__(self, problems: Sequence[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = tuple(problems)


def parse_release(text: str) -> OCPVersion:
    """The release a fleet upgrade moves to: exactly ``x.y.z``, a release nodefleet can place.

    An image tag suffix (``4.22.4-multi``), a pre-release (``5.0.0-ec.2``), a leading zero (``4.22.04``) or a
    release line without its patch (``4.22``) is refused with the accepted form: a release moves every
    cluster of a fleet, and a value that reads one way to a person and another to a parser must not.
    """
    shown = text if len(text) <= 40 else text[:40] + "…"
    if not isinstance(text, str) or not _RELEASE.fullmatch(text):
        raise PlanError([f"--release {shown!r}: not a release; use {RELEASE_FORM}"])
    version = parse_ocp(text)
    try:
        known_release(version)
    except VersionError as exc:
        raise PlanError([f"--release {text}: {exc}"]) from None
    return version


def line_name(position: int) -> str:
    """The release line at ``position`` on :func:`~nodefleet.bootimages.versions.linear_minor`'s count."""
    return f"5.{position - 23}" if position >= 23 else f"4.{position}"


def parse_supported_versions(value: Any, where: str) -> tuple[str, ...]:
    """The release lines (``x.y``) a HyperShift operator runs, from its ``supported-versions`` ConfigMap's
    ``data["supported-versions"]`` (JSON ``{"versions": ["4.22", "4.21", …]}``, newest first; openshift/hypershift
    docs/content/reference/versioning-support.md), or a list as the registry declares it."""
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except (ValueError, RecursionError):
            raise ValueError(f'{where}: not JSON; the operator writes {{"versions": ["4.22", …]}}') from None
        if not isinstance(value, dict) or not isinstance(value.get("versions"), list):
            raise ValueError(f'{where}: no "versions" list; the operator writes {{"versions": ["4.22", …]}}')
        value = value["versions"]
    if not isinstance(value, (list, tuple)) or not value:
        raise ValueError(f'{where}: not a list of release lines such as ["4.22", "4.21"]')
    out = []
    for item in value:
        if not isinstance(item, str) or not _LINE.fullmatch(item):
            raise ValueError(f"{where}: {str(item)[:20]!r} is not a release line x.y (as in 4.22)")
        out.append(item)
    return tuple(out)


@dataclass(frozen=True)
class Support:
    """What a management cluster's HyperShift operator runs: release lines, and where that was read."""

    versions: tuple[str, ...]
    #: ``nodefleet-fleet.yaml hypershift.supportedVersions`` or ``ConfigMap hypershift/supported-versions``.
    source: str


@dataclass(frozen=True)
class StackInput:
    """One selected stack as the plan reads it."""

    stack: str
    #: The stack file as messages name it.
    file: str
    wave: str
    #: ``render`` or ``apply``.
    mode: str
    fleet: Fleet
    #: (hosted cluster, node source) pairs carrying nodefleet's hold mark, e.g. ``("edge", "NodePool infra")``.
    held: frozenset[tuple[str, str]] = frozenset()


@dataclass(frozen=True)
class ClusterMove:
    """A cluster the plan moves to the release."""

    stack: str
    cluster: str
    #: ``hosted`` or ``standalone``.
    kind: str
    current: str
    target: str
    #: The management cluster (hosted clusters), "" for a standalone cluster.
    management: str = ""
    namespace: str = ""
    #: Already at the release with nodes still held: only the nodes move (a resumed or restarted upgrade).
    nodes_only: bool = False
    #: A standalone cluster whose OS stream the stack does not declare, and whose release would change the
    #: default: the stream it runs, pinned so that the move changes no pool's OS (an upgraded cluster keeps it).
    keep_stream: str = ""
    notes: tuple[str, ...] = ()

    @property
    def what(self) -> str:
        if self.kind == "hosted":
            return f"HostedCluster {self.namespace}/{self.cluster} of {self.stack}"
        return f"standalone cluster {self.cluster} of {self.stack}"


@dataclass(frozen=True)
class LeftOut:
    """A cluster below the release that the plan does not move, and why (with the fix)."""

    stack: str
    cluster: str
    reason: str

    def line(self) -> str:
        return f"{self.stack} / {self.cluster}: {self.reason}"


@dataclass(frozen=True)
class Judgment:
    moves: tuple[ClusterMove, ...]
    left_out: tuple[LeftOut, ...]
    #: Problems that make the whole plan impossible (every one of them, each with its fix).
    refusals: tuple[str, ...]
    notes: tuple[str, ...] = ()


def _followers(cluster: HostedCluster) -> list[tuple[str, str | None]]:
    """(label, the release the user pinned or None) of each node source that may follow the control plane."""
    out: list[tuple[str, str | None]] = [(f"NodePool {p.name}", p.release) for p in cluster.node_pools]
    if cluster.auto_node is not None:
        out += [(f"node class {c.name}", c.version) for c in cluster.auto_node.node_classes]
    return out


def judge(
    stacks: Sequence[StackInput],
    target: OCPVersion,
    support: Mapping[str, Support | None],
    *,
    selected: Sequence[str] = (),
    skew_profile: str = "ocp",
    max_behind: int | None = None,
    boot_image_policy: SkewPolicy = DEFAULT_SKEW_POLICY,
) -> Judgment:
    """Every cluster of ``stacks`` judged against ``target``; ``support`` maps a management cluster's name to what
    its operator runs (None: not known, said in the notes). ``selected`` is every stack the user chose, for the
    ``--stacks`` a refusal suggests."""
    release = str(target)
    moves: list[ClusterMove] = []
    left: list[LeftOut] = []
    notes: list[str] = []
    ahead: dict[str, list[str]] = {}  # stack → "<stack>/<cluster> at <release>"
    newest = target
    skipping: list[tuple[str, OCPVersion]] = []
    holding: list[tuple[str, str]] = []
    pinned: list[str] = []
    on_management: dict[str, list[str]] = {}
    for s in stacks:
        for resolved in s.fleet.clusters:
            config = resolved.config
            current = parse_ocp(config.release)
            name = f"{s.stack}/{config.name}"
            held = (
                [label for label, _ in _followers(config) if (config.name, label) in s.held]
                if isinstance(config, HostedCluster)
                else []
            )
            if current > target:
                ahead.setdefault(s.stack, []).append(f"{name} at {current}")
                newest = max(newest, current)
                continue
            if current == target and not held:
                continue
            if current == target:
                assert isinstance(config, HostedCluster)  # only hosted clusters hold nodes
                moves.append(_hosted_move(s, config, release, nodes_only=True))
                continue
            if held:
                holding.append(
                    (f"{name} holds {', '.join(held)} ({s.file}) from an upgrade to {current}", str(current))
                )
                continue
            if linear_minor(target) - linear_minor(current) > 1:
                skipping.append(
                    (f"{name} at {current} would skip {_lines_between(current, target)}", current)
                )
                continue
            if isinstance(config, HostedCluster):
                problems = _pinned_out_of_skew(config, target, skew_profile, max_behind)
                if problems:
                    pinned += [f"{name}: {p}" for p in problems]
                    continue
                on_management.setdefault(config.management_cluster, []).append(name)
                moves.append(_hosted_move(s, config, release, nodes_only=False))
            else:
                assert isinstance(resolved, ResolvedCluster)
                outcome = _standalone(s, resolved, current, target, boot_image_policy)
                if isinstance(outcome, LeftOut):
                    left.append(outcome)
                else:
                    moves.append(outcome)
    refusals: list[str] = []
    if ahead:
        found = [item for items in ahead.values() for item in items]
        keep = [n for n in selected if n not in ahead]
        refusals.append(
            f"--release {release} is a downgrade for {_clusters(len(found))} ({', '.join(found)}), and nodefleet does "
            f"not stage downgrades: use a release at or above {newest}"
            + (f", or leave {_stacks_word(ahead)} out with --stacks {','.join(keep)}" if keep else "")
        )
    if skipping:
        first = min(linear_minor(current) for _, current in skipping) + 1
        refusals.append(
            f"--release {release} skips a minor release for {_clusters(len(skipping))} "
            f"({'; '.join(line for line, _ in skipping)}), and a control plane moves one minor at a time: upgrade to "
            f"a {line_name(first)} release first (`fleet upgrade --release {line_name(first)}.z`), then to {release}"
        )
    if holding:
        earlier = sorted({r for _, r in holding}, key=parse_ocp)
        finish = (
            f"`fleet upgrade --release {earlier[0]}`"
            if len(earlier) == 1
            else "`fleet upgrade --release` of each"
        )
        refusals.append(
            f"--release {release}: {_clusters(len(holding))} still {'holds' if len(holding) == 1 else 'hold'} nodes "
            "from an earlier, unfinished upgrade "
            f"({'; '.join(line for line, _ in holding)}): finish it first ({finish}), then upgrade to {release}"
        )
    if pinned:
        refusals.append(
            f"--release {release} would put {len(pinned)} node source{'s' if len(pinned) != 1 else ''} pinned in "
            f"their stack files outside the node skew: {'; '.join(pinned)}"
        )
    line = f"{target.major}.{target.minor}"
    unsupported = []
    for management, clusters in sorted(on_management.items()):
        known = support.get(management)
        if known is None:
            notes.append(
                f"management cluster {management}: the release lines its HyperShift operator runs are not declared "
                "(hypershift.supportedVersions in the fleet registry), so the plan could not check them"
            )
        elif line not in known.versions:
            unsupported.append(
                f"{management} runs {', '.join(known.versions)} ({known.source}; clusters {', '.join(clusters)})"
            )
    if unsupported:
        refusals.append(
            f"--release {release}: the HyperShift operator of {len(unsupported)} management "
            f"cluster{'s' if len(unsupported) != 1 else ''} does not run {line} ({'; '.join(unsupported)}): upgrade "
            "the HyperShift operator there first, or leave those stacks out with --stacks"
        )
    return Judgment(tuple(moves), tuple(left), tuple(refusals), tuple(notes))


def _clusters(n: int) -> str:
    return f"{n} cluster{'s' if n != 1 else ''}"


def _stacks_word(ahead: Mapping[str, object]) -> str:
    names = ", ".join(ahead)
    return f"stack {names}" if len(ahead) == 1 else f"stacks {names}"


def _lines_between(current: OCPVersion, target: OCPVersion) -> str:
    skipped = [line_name(p) for p in range(linear_minor(current) + 1, linear_minor(target))]
    return ", ".join(skipped)


def _hosted_move(s: StackInput, cluster: HostedCluster, release: str, *, nodes_only: bool) -> ClusterMove:
    return ClusterMove(
        s.stack,
        cluster.name,
        "hosted",
        cluster.release,
        release,
        management=cluster.management_cluster,
        namespace=cluster.namespace,
        nodes_only=nodes_only,
    )


def _pinned_out_of_skew(
    cluster: HostedCluster, target: OCPVersion, profile: str, max_behind: int | None
) -> list[str]:
    out = []
    for label, pinned in _followers(cluster):
        if pinned is None:
            continue
        problem = node_version_skew(parse_ocp(pinned), target, profile, max_behind)
        if problem:
            out.append(
                f"{label} is pinned at {pinned} by its stack file; with the control plane at {target} it would be "
                f"{problem}"
            )
    return out


def _standalone(
    s: StackInput, resolved: ResolvedCluster, current: OCPVersion, target: OCPVersion, policy: SkewPolicy
) -> ClusterMove | LeftOut:
    """A standalone cluster's move, or why it cannot move inside the boot image skew of ``target``."""
    config = resolved.config
    keep = ""
    if config.os_image_stream is None:
        try:
            before, after = default_stream(current), default_stream(target)
        except VersionError:
            before = after = "rhel-9"
        keep = before if before != after else ""
    images = [
        (f"MachineSet {ms.name}", ms.boot_image.release, ms.pool_stream, ms.spec.pool)
        for ms in resolved.machine_sets
    ]
    if config.karpenter is not None:
        images += [
            (f"Karpenter node class {nc.name}", resolved.karpenter_images[nc.name].release,
             config.pool_stream(nc.pool), nc.pool)
            for nc in config.karpenter.node_classes
        ]  # fmt: skip
    errors: list[str] = []
    warnings: list[str] = []
    for what, image, stream, pool in images:
        for finding in evaluate_skew(image, target, policy, stream, pool):
            (errors if finding.level == "error" else warnings).append(f"{what}: {finding.message}")
    if errors:
        return LeftOut(
            s.stack,
            config.name,
            f"not moved: at {target} its boot images would be outside the boot image skew the cluster enforces "
            f"({'; '.join(errors)}). Update the catalog ({config.catalog}) to boot images of {target.major}."
            f"{target.minor} first (the cluster's coreos-bootimages ConfigMap), then run the upgrade again",
        )
    notes = [f"at {target}: {w}" for w in warnings]
    if keep:
        notes.append(
            f"osImageStream: {keep} is written into its stack file: a cluster upgraded to {target.major}."
            f"{target.minor} keeps the OS stream it runs, while the stack file's default would follow the release"
        )
    return ClusterMove(
        s.stack, config.name, "standalone", config.release, str(target), keep_stream=keep, notes=tuple(notes)
    )


def waves_of(
    stacks: Sequence[StackInput], moves: Iterable[ClusterMove]
) -> list[tuple[str, list[StackInput]]]:
    """The waves, in order, with the stacks that have a cluster to move (by name); empty waves left out."""
    moving = {m.stack for m in moves}
    out = []
    for wave in WAVES:
        members = sorted((s for s in stacks if s.wave == wave and s.stack in moving), key=lambda s: s.stack)
        if members:
            out.append((wave, members))
    return out


def expected_config(
    before: Mapping[str, Any], moves: Sequence[ClusterMove], phase: str, held: frozenset[tuple[str, str]]
) -> dict[str, Any]:
    """The stack's validated configuration (``FleetConfig.model_dump()``) as ``phase`` of ``moves`` must leave it,
    from ``before``: what a step's edit is checked against, read back as ``check`` reads the file, so that an
    edit that changes anything else (a node pool shared with another cluster through a YAML alias) is caught
    before anything is written. ``held``: the node sources carrying the hold mark before the edit."""
    after = copy.deepcopy(dict(before))
    by_cluster = {(m.kind, m.cluster): m for m in moves}
    for cluster in after["clusters"]:
        move = by_cluster.get((cluster["kind"], cluster["name"]))
        if move is None:
            continue
        if cluster["kind"] == "standalone":
            if phase == "nodes":
                cluster["release"] = move.target
                if move.keep_stream:
                    cluster["os_image_stream"] = move.keep_stream
            continue
        followers = [(f"NodePool {p['name']}", p, "release") for p in cluster["node_pools"]]
        auto = cluster.get("auto_node") or {}
        followers += [(f"node class {c['name']}", c, "version") for c in auto.get("node_classes") or []]
        if phase == "control-plane" and not move.nodes_only:
            current = cluster["release"]
            cluster["release"] = move.target
            if cluster.get("release_image"):
                cluster["release_image"] = cluster["release_image"].replace(current, move.target)
            for _, follower, key in followers:
                if follower[key] is None:
                    follower[key] = current
        elif phase == "nodes":
            for label, follower, key in followers:
                if (cluster["name"], label) in held:
                    follower[key] = None
    return after


def config_difference(expected: Mapping[str, Any], actual: Mapping[str, Any]) -> str:
    """Where ``actual`` differs from ``expected`` first, as ``clusters[<name>].<field>``; "" when equal."""

    def walk(a: Any, b: Any, path: str) -> str:
        if isinstance(a, Mapping) and isinstance(b, Mapping):
            for key in sorted(set(a) | set(b)):
                found = walk(a.get(key), b.get(key), f"{path}.{key}" if path else str(key))
                if found:
                    return found
            return ""
        if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
            for i, (x, y) in enumerate(zip(a, b, strict=True)):
                name = x.get("name") if isinstance(x, Mapping) else None
                found = walk(x, y, f"{path}[{name if name is not None else i}]")
                if found:
                    return found
            return ""
        return "" if a == b else f"{path}: {str(b)[:80]} where the step leaves {str(a)[:80]}"

    return walk(expected, actual, "")


# --- the plan, as data --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class FileStep:
    """One stack file in one step: the sha256 of its text before and after the step's edit, and what changes."""

    before: str
    after: str
    changes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Step:
    wave: str
    phase: str
    #: Stack → its file's edit (only the stacks the step changes).
    files: Mapping[str, FileStep] = field(default_factory=dict)
    #: What the user does in this step that nodefleet cannot (a standalone cluster's own upgrade).
    instructions: tuple[str, ...] = ()

    @property
    def stacks(self) -> list[str]:
        return sorted(self.files)

    @property
    def key(self) -> str:
        return f"{self.wave}/{self.phase}"


@dataclass(frozen=True)
class WavePlan:
    wave: str
    #: Stack → (mode, the clusters it moves).
    stacks: Mapping[str, tuple[str, tuple[str, ...]]]
    steps: tuple[Step, ...]
    #: Every cluster the wave moves, as judged (each step's edit is made from these).
    moves: tuple[ClusterMove, ...] = ()

    @property
    def modes(self) -> dict[str, str]:
        return {stack: mode for stack, (mode, _) in self.stacks.items()}

    def moves_of(self, stack: str) -> list[ClusterMove]:
        return [m for m in self.moves if m.stack == stack]

    @property
    def standalone(self) -> list[str]:
        """``stack/cluster`` of the wave's standalone clusters (the gates cannot read their cluster version)."""
        return [f"{m.stack}/{m.cluster}" for m in self.moves if m.kind == "standalone"]


@dataclass(frozen=True)
class Plan:
    release: str
    waves: tuple[WavePlan, ...]
    left_out: tuple[LeftOut, ...] = ()
    notes: tuple[str, ...] = ()

    @property
    def steps(self) -> list[Step]:
        return [step for wave in self.waves for step in wave.steps]

    def to_json(self) -> dict[str, Any]:
        return {
            "release": self.release,
            "waves": [
                {
                    "wave": w.wave,
                    "stacks": {
                        s: {"mode": mode, "clusters": list(c)} for s, (mode, c) in sorted(w.stacks.items())
                    },
                    "moves": [_move_json(m) for m in w.moves],
                    "steps": [
                        {
                            "phase": step.phase,
                            "files": {
                                stack: {"before": f.before, "after": f.after, "changes": list(f.changes)}
                                for stack, f in sorted(step.files.items())
                            },
                            "instructions": list(step.instructions),
                        }
                        for step in w.steps
                    ],
                }
                for w in self.waves
            ],
            "leftOut": [{"stack": x.stack, "cluster": x.cluster, "reason": x.reason} for x in self.left_out],
            "notes": list(self.notes),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Plan:
        """The plan :meth:`to_json` wrote (the caller validated its shape)."""
        waves = []
        for w in data["waves"]:
            steps = tuple(
                Step(
                    w["wave"],
                    step["phase"],
                    {
                        stack: FileStep(f["before"], f["after"], tuple(f["changes"]))
                        for stack, f in step["files"].items()
                    },
                    tuple(step["instructions"]),
                )
                for step in w["steps"]
            )
            stacks = {s: (v["mode"], tuple(v["clusters"])) for s, v in w["stacks"].items()}
            moves = tuple(_move_from_json(m) for m in w["moves"])
            waves.append(WavePlan(w["wave"], stacks, steps, moves))
        left = tuple(LeftOut(x["stack"], x["cluster"], x["reason"]) for x in data["leftOut"])
        return cls(data["release"], tuple(waves), left, tuple(data["notes"]))

    def digest(self) -> str:
        """sha256 of the plan's canonical JSON: what the state file and every commit of the upgrade name."""
        text = json.dumps(self.to_json(), sort_keys=True, separators=(",", ":"), ensure_ascii=True)
        return hashlib.sha256(text.encode()).hexdigest()


_MOVE_FIELDS = {"stack": "stack", "cluster": "cluster", "kind": "kind", "current": "current", "target": "target",
                "management": "management", "namespace": "namespace", "nodesOnly": "nodes_only",
                "keepStream": "keep_stream", "notes": "notes"}  # fmt: skip


def _move_from_json(data: Mapping[str, Any]) -> ClusterMove:
    fields: dict[str, Any] = {_MOVE_FIELDS[k]: tuple(v) if k == "notes" else v for k, v in data.items()}
    return ClusterMove(**fields)


def _move_json(move: ClusterMove) -> dict[str, Any]:
    return {
        key: list(getattr(move, name)) if key == "notes" else getattr(move, name)
        for key, name in _MOVE_FIELDS.items()
    }


GATES = {
    "control-plane": "the control planes report {release} Completed",
    "nodes": "the wave is healthy on {release}",
}


def plan_lines(plan: Plan, done: Mapping[str, str] | None = None, *, commit: bool = False) -> list[str]:
    """The plan as a user reads it (and pastes into a ticket): every wave, each step's changes per stack, what
    the user does, each gate; then the clusters left out and the notes. ``done`` (step key → how far) marks
    the steps a resumed upgrade has behind it."""
    done = done or {}
    out = []
    for number, wave in enumerate(plan.waves, 1):
        out.append(f"wave {number}/{len(plan.waves)} {wave.wave}: {', '.join(sorted(wave.stacks))}")
        for index, step in enumerate(wave.steps, 1):
            verbs = ["edit"]
            if any(wave.stacks[s][0] == "render" for s in step.files):
                verbs.append("render")
            if commit and step.files:
                verbs.append("commit")
            status = done.get(step.key)
            tail = f" (done: {status})" if status else ""
            out.append(
                f"  {index}. {step.phase}: {', '.join(verbs) if step.files else 'nothing to edit'}{tail}"
            )
            for stack in step.stacks:
                out += [f"     {stack} / {line}" for line in step.files[stack].changes]
            out += [f"     you: {line}" for line in step.instructions]
            out.append(f"     gate: {GATES[step.phase].format(release=plan.release)}")
    if plan.left_out:
        out.append(f"not moved to {plan.release} ({len(plan.left_out)}):")
        out += [f"  {x.line()}" for x in plan.left_out]
    out += [f"note: {n}" for n in plan.notes]
    return out
