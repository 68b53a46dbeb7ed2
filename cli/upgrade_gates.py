"""The apply-mode gates of ``fleet upgrade``: what the HyperShift operator reports on the management clusters.

A wave whose stacks are all applied by nodefleet (``output.mode: apply``) is judged by the objects themselves,
each read through its hosted cluster's management cluster (its ``kubeconfig`` in the fleet's registry; without a
registry the stack's ``output.kubeconfig``, else ``$KUBECONFIG`` / ``~/.kube/config``):

- after the control planes: every HostedCluster of the wave has the release as its last ``Completed`` entry of
  ``status.version.history`` (:func:`cli.upgrade.completed_version`, HyperShift's own reading);
- after the nodes: every classic NodePool of those clusters reports its release (the cluster's, or the one
  pinned on it) in ``status.version``, no version update in progress (``UpdatingVersion``) and is not
  ``Ready=False``.

Either gate stops, whatever the version says, on what the operator reports as a failure
(:data:`HOSTED_CLUSTER_FAILURES`, :data:`NODE_POOL_FAILURES`): a canary that completed its upgrade degraded
must not take the next wave with it. An object that cannot be read (not applied yet, a management cluster out
of reach) stops the gate too. AutoNode node classes live in the hosted cluster, which the management cluster
does not show: a wave with them is confirmed by the user or a health command, as a render-mode wave is. A
standalone cluster's version lives in the cluster itself: in apply mode its ``ClusterVersion`` is read (through
the stack's ``output.kubeconfig``) after the control-plane step, before the nodes step records the release in
its stack file (:func:`standalone_versions`), and no confirmation passes a cluster that says it runs another
release.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cli.exits import InputError
from cli.upgrade import (
    HOSTED_CLUSTER_FAILURES,
    NODE_POOL_FAILURES,
    completed_version,
    conditions_of,
    operator_failures,
    read_cluster_version,
    read_hypershift_object,
)

if TYPE_CHECKING:
    from nodefleet.fleet.registry import Registry
    from nodefleet.stackfile.hosted import HostedCluster
    from nodefleet.stackfile.model import Fleet

#: Each stack of a wave: its validated stack file and the hosted clusters the wave upgrades in it.
WaveStacks = Mapping[str, "tuple[Fleet, list[str]]"]

READY, WAITING, FAILED = "ready", "waiting", "failed"


@dataclass(frozen=True)
class Reading:
    """One object a gate read, and what it makes of it."""

    stack: str
    #: ``HostedCluster clusters/edge on management cluster mgmt-use2-a``
    what: str
    state: str  # READY, WAITING or FAILED
    #: What the operator reports, in its own words (versions, conditions with reason and message).
    account: str

    @property
    def line(self) -> str:
        return f"{self.stack}: {self.what}: {self.account}"


@dataclass(frozen=True)
class Verdict:
    """A gate's outcome: ``reason`` is "" when it passed; ``details`` one line per object not ready."""

    reason: str
    details: tuple[str, ...] = ()
    #: What the user does next, when it stopped.
    next_step: str = ""
    #: One line on what was read, when it passed.
    passed: str = ""


def _where(kind: str, namespace: str, name: str, management: str) -> str:
    return f"{kind} {namespace}/{name} on management cluster {management}"


def management_kubeconfig(registry: Registry, fleet: Fleet, cluster: HostedCluster) -> str | None:
    """The kubeconfig that reaches a hosted cluster's management cluster in apply mode: the one the fleet's
    registry gives it, without one the stack's output.kubeconfig (None: the ambient one)."""
    return registry.kubeconfig(cluster.management_cluster, fleet.config.output.kubeconfig)


def _hosted_clusters(
    stacks: WaveStacks, registry: Registry | None = None
) -> Iterable[tuple[str, HostedCluster, str | None]]:
    """(stack, hosted cluster, kubeconfig) of the named clusters of each stack, in stack order: each management
    cluster through the kubeconfig the fleet's registry gives it (without one: the stack's output.kubeconfig)."""
    from nodefleet.fleet.registry import Registry
    from nodefleet.stackfile.hosted import HostedCluster

    registry = registry or Registry("", exists=False)
    for stack, (fleet, names) in sorted(stacks.items()):
        for cluster in fleet.config.clusters:
            if isinstance(cluster, HostedCluster) and cluster.name in names:
                yield stack, cluster, management_kubeconfig(registry, fleet, cluster)


def _read(kubeconfig: str | None, kind: str, namespace: str, name: str) -> tuple[dict[str, Any] | None, str]:
    try:
        return read_hypershift_object(kubeconfig, kind, namespace, name), ""
    except InputError as exc:
        return None, f"cannot be read: {str(exc).removeprefix(f'{kind} {namespace}/{name}: ')}"


def control_planes(stacks: WaveStacks, release: str, registry: Registry | None = None) -> list[Reading]:
    """Each HostedCluster of ``stacks`` (stack → (its validated fleet, the clusters of the wave)) as read."""
    out = []
    for stack, cluster, kubeconfig in _hosted_clusters(stacks, registry):
        what = _where("HostedCluster", cluster.namespace, cluster.name, cluster.management_cluster)
        obj, problem = _read(kubeconfig, "HostedCluster", cluster.namespace, cluster.name)
        if obj is None:
            out.append(Reading(stack, what, WAITING, problem))
            continue
        completed, status = completed_version(obj)
        desired = (((obj.get("status") or {}).get("version") or {}).get("desired") or {}).get("version")
        failures = operator_failures(obj, HOSTED_CLUSTER_FAILURES)
        if failures:
            out.append(Reading(stack, what, FAILED, f"the operator reports {'; '.join(failures)}; {status}"))
        elif completed == release:
            out.append(Reading(stack, what, READY, f"{release} Completed ({status})"))
        elif desired != release:
            out.append(Reading(stack, what, WAITING, f"not started on {release} yet ({status})"))
        else:
            out.append(Reading(stack, what, WAITING, f"has not completed {release} yet ({status})"))
    return out


def node_pools(stacks: WaveStacks, registry: Registry | None = None) -> list[Reading]:
    """Each classic NodePool of the hosted clusters of ``stacks`` as read, against the release it should run."""
    from nodefleet.stackfile.hosted import node_pool_object_name

    out = []
    for stack, cluster, kubeconfig in _hosted_clusters(stacks, registry):
        for pool in cluster.node_pools:
            name = node_pool_object_name(cluster.name, pool)
            target = str(pool.release or cluster.release)
            what = _where("NodePool", cluster.namespace, name, cluster.management_cluster)
            obj, problem = _read(kubeconfig, "NodePool", cluster.namespace, name)
            if obj is None:
                out.append(Reading(stack, what, WAITING, problem))
                continue
            version = (obj.get("status") or {}).get("version")
            conditions = conditions_of(obj)
            updating = conditions.get("UpdatingVersion") or {}
            ready = conditions.get("Ready") or {}
            failures = operator_failures(obj, NODE_POOL_FAILURES)
            at = f"status.version {version or 'not reported yet'}"
            if failures:
                out.append(Reading(stack, what, FAILED, f"the operator reports {'; '.join(failures)}; {at}"))
            elif updating.get("status") == "True":
                message = updating.get("message") or "UpdatingVersion=True"
                out.append(Reading(stack, what, WAITING, f"updating ({message}); {at}"))
            elif version != target:
                out.append(Reading(stack, what, WAITING, f"not at {target} yet ({at})"))
            elif ready.get("status") == "False":
                why = ": ".join(str(p) for p in (ready.get("reason"), ready.get("message")) if p)
                out.append(Reading(stack, what, WAITING, f"at {target} but not Ready ({why})"))
            else:
                out.append(Reading(stack, what, READY, f"at {target}"))
    return out


def standalone_versions(
    clusters: Mapping[str, tuple[str | None, Sequence[str]]], release: str
) -> list[Reading]:
    """Each standalone cluster (stack → (its ``output.kubeconfig``, its clusters)) as its ClusterVersion reports
    it: READY once ``release`` is its last completed version (the same reading as a HostedCluster's
    ``status.version``), WAITING while it runs another or cannot be read, FAILED when its cluster version
    operator reports ``Failing``."""
    out = []
    for stack, (kubeconfig, names) in sorted(clusters.items()):
        for name in names:
            what = f"ClusterVersion of standalone cluster {stack}/{name}"
            try:
                obj = read_cluster_version(kubeconfig, f"{stack}/{name}")
            except InputError as exc:
                out.append(Reading(stack, what, WAITING, f"cannot be read: {str(exc).split(': ', 1)[-1]}"))
                continue
            # A ClusterVersion's status holds desired and history where a HostedCluster's status.version does.
            completed, status = completed_version({"status": {"version": obj.get("status") or {}}})
            fail = conditions_of(obj).get("Failing")
            if fail is not None and fail.get("status") == "True":
                why = ": ".join(str(p) for p in (fail.get("reason"), fail.get("message")) if p)
                out.append(
                    Reading(
                        stack, what, FAILED, f"its cluster version operator reports Failing ({why}); {status}"
                    )
                )
            elif completed == release:
                out.append(Reading(stack, what, READY, f"{release} Completed ({status})"))
            else:
                out.append(
                    Reading(
                        stack,
                        what,
                        WAITING,
                        f"runs {completed or 'no completed release'}, not {release} ({status})",
                    )
                )
    return out


def verdict(readings: list[Reading], phase: str, wave: str, release: str) -> Verdict:
    """The gate after ``phase`` of ``wave`` from what was read."""
    noun = "control planes" if phase == "control-plane" else "NodePools"
    waiting = [r for r in readings if r.state != READY]
    failed = [r for r in readings if r.state == FAILED]
    if not waiting:
        done = f"{release} Completed" if phase == "control-plane" else "their release, no update in progress"
        return Verdict("", passed=f"{_count(len(readings), noun)} of wave {wave}: {done}")
    details = tuple(r.line for r in failed + [r for r in waiting if r.state != FAILED])
    if failed:
        return Verdict(
            f"the HyperShift operator reports a failure on {len(failed)} of {len(readings)} {noun} of wave {wave}",
            details,
            "fix what the operator reports (above), or wait until it reports it resolved, then run the same "
            "command again; it resumes at this gate",
        )
    verb = "completed" if phase == "control-plane" else "rolled out"
    return Verdict(
        f"{len(waiting)} of {len(readings)} {noun} of wave {wave} have not {verb} {release} yet",
        details,
        "once the committed step is applied (`fleet up`, or the workflow's wave) and the HyperShift operator "
        "reports it done, run the same command again; it resumes at this gate",
    )


def _count(n: int, noun: str) -> str:
    return f"{n} {noun if n != 1 else noun.removesuffix('s')}"


def has_auto_node(stacks: WaveStacks) -> list[str]:
    """``stack/cluster`` of every hosted cluster of ``stacks`` with AutoNode node classes."""
    return [
        f"{stack}/{cluster.name}"
        for stack, cluster, _ in _hosted_clusters(stacks)
        if cluster.auto_node is not None and cluster.auto_node.node_classes
    ]


def load(
    known: Mapping[str, Path], clusters: Mapping[str, Sequence[str]], registry: Registry | None = None
) -> dict[str, tuple[Fleet, list[str]]]:
    """Each stack (→ the hosted clusters the wave upgrades in it), validated as the program reads it (against
    the fleet's ``registry``)."""
    from cli.fleet import _shown
    from mockruntime.run import PROJECT_DIR, read_stack_config
    from nodefleet.fleet.registry import Registry, load_fleet_in
    from nodefleet.stackfile.model import CONFIG_KEY, ConfigError
    from nodefleet.stackfile.yamlfile import YAMLFileError

    registry = registry or Registry("", exists=False)
    out = {}
    for stack, names in clusters.items():
        path = known[stack]
        try:
            raw = read_stack_config(path, _shown(path)).get(CONFIG_KEY)
            out[stack] = (load_fleet_in(registry, raw, stack, PROJECT_DIR, source=_shown(path)), list(names))
        except (ConfigError, YAMLFileError) as exc:
            raise InputError(str(exc)) from None
    return out
