"""`fleet upgrade` in apply mode against a real API server (tests/testcluster.py).

The example fleet of tests/fleet/regional switched to ``output.mode: apply``, each hosted cluster's
``managementCluster`` whose registry entry names the kubeconfig of a test API server, applied as the Kubernetes provider applies it
(tests/applymode.py), and moved to a release with the real command line, ``python -m nodefleet fleet upgrade``.
The tests play the HyperShift operator: they write the HostedClusters' ``status.version`` and conditions and the
NodePools' ``status.version`` and conditions through the status subresource, with the operator's field
manager, and nothing else moves them.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator, Mapping
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from mockruntime.run import read_stack_config, run_program
from nodefleet import kinds as k
from tests.applymode import Declared, Stack, declared
from tests.conftest import PROJECT, nodefleet
from tests.testcluster import ApiServer, TestClusters

pytestmark = pytest.mark.apiserver

FLEET = PROJECT / "tests" / "fleet" / "regional"
OLD, NEW = "4.22.3", "4.22.4"
#: The field manager the tests write status with when they play the HyperShift operator.
HYPERSHIFT = "hypershift-operator"
NOW = "2026-11-26T10:40:00Z"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip


@dataclass
class Managers:
    """The two management clusters of the tests, by the name the stack files give them."""

    servers: dict[str, ApiServer]

    def clients(self) -> dict[str, Any]:
        return {str(s.kubeconfig): s.dynamic() for s in self.servers.values()}


#: What the HyperShift operator of each management cluster runs (its `supported-versions` ConfigMap).
SUPPORTED = ["4.22", "4.21", "4.20"]


def _operator_installed(server: ApiServer) -> None:
    """The `supported-versions` ConfigMap the HyperShift operator writes in its namespace when it starts, as it
    writes it (openshift/hypershift docs/content/reference/versioning-support.md)."""
    from kubernetes import client

    core = client.CoreV1Api(server.api_client())
    core.create_namespace({"metadata": {"name": "hypershift"}})
    core.create_namespaced_config_map(
        "hypershift",
        {
            "metadata": {
                "name": "supported-versions",
                "labels": {"hypershift.openshift.io/supported-versions": "true"},
            },
            "data": {
                "server-version": "2f6cfe21a0861dea3130f3bed0d3ae5553b8c28b",
                "supported-versions": json.dumps({"versions": SUPPORTED}),
            },
        },
        field_manager=HYPERSHIFT,
    )


@pytest.fixture(scope="module")
def managers(test_clusters: TestClusters) -> Iterator[Managers]:
    with ExitStack() as stop:
        servers = {
            name: stop.enter_context(test_clusters.fresh(f"fleet-upgrade-{name}"))
            for name in ("mgmt-use2-a", "mgmt-euw1-a")
        }
        for server in servers.values():
            _operator_installed(server)
        yield Managers(servers)


def _apply_mode(text: str, namespace: str | None) -> str:
    """A stack file of the example fleet, in apply mode; ``namespace`` (when given) puts the hosted clusters in a
    namespace of the test's own."""
    assert text.count("      mode: render\n") == 1
    text = text.replace("      mode: render\n", "      mode: apply\n")
    if namespace:
        text = text.replace(
            "      - kind: hosted\n", f"      - kind: hosted\n        namespace: {namespace}\n"
        )
    return text


def _registry(managers: Managers) -> str:
    """The example fleet's registry with each test API server's kubeconfig as its management cluster's."""
    text = (FLEET / "nodefleet-fleet.yaml").read_text()
    for name, server in managers.servers.items():
        entry = f"  - name: {name}\n"
        assert entry in text
        text = text.replace(entry, f"{entry}    kubeconfig: {server.kubeconfig}\n")
    return text


@dataclass
class Fleet:
    """The scratch repository's stacks, applied: one Pulumi state per stack."""

    repo: Path
    managers: Managers
    stacks: dict[str, Stack] = field(default_factory=dict)
    objects: dict[str, list[Declared]] = field(default_factory=dict)

    @property
    def stacks_dir(self) -> Path:
        return self.repo / "stacks"

    def path(self, stack: str) -> Path:
        return self.stacks_dir / f"Pulumi.{stack}.yaml"

    def up(self, *stacks: str) -> None:
        """``pulumi up`` of ``stacks`` from their stack files as they are now (the workflow's apply)."""
        for stack in stacks:
            run = run_program(stack, read_stack_config(self.path(stack)), source=str(self.path(stack)))
            self.objects[stack] = declared(run)
            state = self.stacks.setdefault(stack, Stack(stack, self.managers.clients()))
            state.up(self.objects[stack])

    def find(self, stack: str, kind: str, name: str) -> Declared:
        (found,) = [
            d
            for d in self.objects[stack]
            if d.manifest["kind"] == kind
            and d.manifest["apiVersion"].startswith("hypershift.openshift.io/")
            and d.manifest["metadata"]["name"] == name
        ]
        return found

    def live(self, stack: str, d: Declared) -> dict[str, Any]:
        return self.stacks[stack]._read(d)

    def images(self, stack: str) -> dict[str, str]:
        """``<kind> <name>`` → the release image of each live HostedCluster and NodePool of ``stack``."""
        return {
            f"{d.manifest['kind']} {d.manifest['metadata']['name']}": self.live(stack, d)["spec"]["release"][
                "image"
            ]
            for d in self.objects[stack]
            if d.manifest["apiVersion"] == k.HOSTED_CLUSTER.api_version
        }

    def upgrade(self, *extra: str) -> subprocess.CompletedProcess[str]:
        return nodefleet(
            "fleet", "upgrade", "--stacks-dir", str(self.stacks_dir), "--release", NEW, "--commit", *extra,
            env=GIT_ENV,
        )  # fmt: skip

    def state(self) -> dict[str, Any]:
        return json.loads(self.state_file.read_text())  # type: ignore[no-any-return]

    @property
    def state_file(self) -> Path:
        """With --commit, in the git folder: it records the commits, so it is never in them."""
        return self.repo / ".git" / "nodefleet-upgrade.json"

    def events(self) -> list[tuple[str, str]]:
        return [(e["step"], e["event"]) for e in self.state()["progress"]]

    def log(self) -> list[str]:
        return _git(self.repo, "log", "--format=%s").splitlines()


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=repo, env={**os.environ, **GIT_ENV}, check=True, capture_output=True, text=True
    ).stdout


def _fleet(tmp_path: Path, managers: Managers, stacks: Mapping[str, str], namespace: str | None) -> Fleet:
    """The example stacks (name → wave) in a scratch git repository, in apply mode, not applied yet."""
    repo = tmp_path / "repo"
    (repo / "stacks").mkdir(parents=True)
    (repo / "stacks" / "nodefleet-fleet.yaml").write_text(_registry(managers))
    for stack, wave in stacks.items():
        text = _apply_mode((FLEET / f"Pulumi.{stack}.yaml").read_text(), namespace)
        text = re.sub(r"^    wave: \w+$", f"    wave: {wave}", text, count=1, flags=re.M)
        (repo / "stacks" / f"Pulumi.{stack}.yaml").write_text(text)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the fleet")
    return Fleet(repo, managers)


# --- playing the HyperShift operator ------------------------------------------------------------------------


def _condition(kind: str, status: str, reason: str = "AsExpected", message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": reason, "message": message, "lastTransitionTime": NOW}


def _write_status(fleet: Fleet, stack: str, d: Declared, status: dict[str, Any]) -> None:
    """As controller-runtime's Status().Update does it: the whole object, PUT to the status subresource by the
    operator's field manager."""
    client, api = fleet.stacks[stack]._api(d)
    live = fleet.live(stack, d)
    live["status"] = status
    client.replace(api.subresources["status"], body=live, field_manager=HYPERSHIFT)


def control_plane_reports(
    fleet: Fleet,
    stack: str,
    cluster: str,
    desired: str,
    *history: tuple[str, str],
    conditions: list[dict[str, Any]] | None = None,
) -> None:
    """The HostedCluster's ``status.version`` (history newest first) and conditions."""
    progressing = history[0][1] != "Completed"
    entries = [
        {
            "version": version,
            "image": f"quay.io/openshift-release-dev/ocp-release:{version}-multi",
            "state": state,
            "verified": True,
            "startedTime": "2026-11-26T10:00:00Z",
            "completionTime": NOW if state == "Completed" else None,
        }
        for version, state in history
    ]
    status = {
        "version": {
            "desired": {
                "version": desired,
                "image": f"quay.io/openshift-release-dev/ocp-release:{desired}-multi",
            },
            "history": entries,
            "observedGeneration": 1,
            "availableUpdates": [],
        },
        "conditions": conditions
        if conditions is not None
        else [
            _condition("Available", "True"),
            _condition("Degraded", "False"),
            _condition(
                "ClusterVersionProgressing",
                "True" if progressing else "False",
                "ClusterOperatorsUpdating" if progressing else "FromClusterVersion",
                f"Working towards {desired}" if progressing else f"Cluster version is {desired}",
            ),
        ],
    }
    _write_status(fleet, stack, fleet.find(stack, "HostedCluster", cluster), status)


def node_pool_reports(
    fleet: Fleet,
    stack: str,
    pool: str,
    version: str,
    *,
    updating: str | None = None,
    conditions: list[dict[str, Any]] | None = None,
) -> None:
    """The NodePool's ``status.version`` (the release its nodes run) and conditions; ``updating``: the
    release it is rolling out (``UpdatingVersion=True``); ``conditions`` replace those of their type."""
    found = {
        c["type"]: c
        for c in (
            _condition("Ready", "True"),
            _condition("ValidReleaseImage", "True"),
            _condition("ValidPlatformImage", "True"),
            _condition("SupportedVersionSkew", "True"),
            _condition(
                "UpdatingVersion",
                "True" if updating else "False",
                "AsExpected",
                f"Updating version in progress. Target version: {updating}" if updating else "",
            ),
            *(conditions or []),
        )
    }
    status = {"version": version, "replicas": 2, "conditions": list(found.values())}
    _write_status(fleet, stack, fleet.find(stack, "NodePool", pool), status)


# --- the tests ---------------------------------------------------------------------------------------------


def _image(version: str) -> str:
    return f"quay.io/openshift-release-dev/ocp-release:{version}-multi"


def _stopped(result: subprocess.CompletedProcess[str]) -> list[str]:
    """The lines `fleet upgrade` prints on stdout when it stops: headline, one line per object, state, next."""
    assert result.returncode == 1, result.stdout + result.stderr
    assert "Traceback" not in result.stderr and result.stderr.count("error:") == 0, result.stderr
    return result.stdout.splitlines()


#: The example fleet's stacks in this test (the wave each is given) and their hosted clusters.
WAVES = {"canary-east": "canary", "east-a": "main", "Team_B": "main"}
CLUSTERS = {"canary-east": ("edge",), "east-a": ("shop", "pay"), "Team_B": ("shop",)}
#: The classic NodePools of each stack, by object name: Team_B's infra pool keeps its old name (objectName).
POOLS = {
    "canary-east": ("edge-infra", "edge-workers"),
    "east-a": ("shop-infra", "shop-workers", "pay-infra", "pay-workers"),
    "Team_B": ("infra", "shop-workers"),
}


def test_each_gate_reads_the_operator_through_its_management_cluster_and_resumes_wave_by_wave(
    managers: Managers, tmp_path: Path
) -> None:
    """Two waves, three stacks, four hosted clusters on two management clusters (one name, ``clusters/shop``,
    on both). Every gate stops while the objects do not report the release, says which and what they
    report, and the same command resumes there; nothing of a wave starts before the wave before it is done."""
    fleet = _fleet(tmp_path, managers, WAVES, None)
    fleet.up(*WAVES)
    for stack, clusters in CLUSTERS.items():
        for cluster in clusters:
            control_plane_reports(fleet, stack, cluster, OLD, (OLD, "Completed"))
        for pool in POOLS[stack]:
            node_pool_reports(fleet, stack, pool, OLD)
    state_file = fleet.state_file
    main_files = {s: fleet.path(s).read_bytes() for s in ("east-a", "Team_B")}

    # 1. The canary's control plane is staged and committed; nothing has applied it yet, so the operator
    #    still reconciles the old release: the gate stops, and says so.
    first = fleet.upgrade()
    assert _stopped(first) == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary control-plane: "
        f"1 of 1 control planes of wave canary have not completed {NEW} yet",
        "  canary-east: HostedCluster clusters/edge on management cluster mgmt-use2-a: "
        f"not started on {NEW} yet (desired {OLD}; history: {OLD} Completed)",
        f"  state: {state_file}",
        "  next: once the committed step is applied (`fleet up`, or the workflow's wave) and the HyperShift "
        "operator reports it done, run the same command again; it resumes at this gate",
    ]
    assert f"canary-east / edge: HostedCluster edge: release {OLD} → {NEW}" in first.stderr
    assert f"canary-east / edge: NodePool infra: held at {OLD} (release)" in first.stderr
    state = fleet.state()
    assert fleet.events() == [("canary/control-plane", "staged")]
    assert state["stopped"]["reason"].startswith("wave 1/2 canary control-plane: 1 of 1 control planes")
    assert "HostedCluster clusters/edge on management cluster mgmt-use2-a" in state["stopped"]["details"][0]
    assert fleet.log() == [f"Fleet upgrade to {NEW}: canary wave, control-plane (canary-east)", "the fleet"]

    # 2. Applied: the control plane moves, its nodes stay held. The operator is upgrading: still waiting.
    fleet.up("canary-east")
    assert fleet.images("canary-east") == {
        "HostedCluster edge": _image(NEW),
        "NodePool edge-infra": _image(OLD),
        "NodePool edge-workers": _image(OLD),
    }
    control_plane_reports(fleet, "canary-east", "edge", NEW, (NEW, "Partial"), (OLD, "Completed"))
    held = fleet.path("canary-east").read_bytes()
    waiting = fleet.upgrade()
    assert _stopped(waiting)[:2] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary control-plane: "
        f"1 of 1 control planes of wave canary have not completed {NEW} yet",
        "  canary-east: HostedCluster clusters/edge on management cluster mgmt-use2-a: "
        f"has not completed {NEW} yet (desired {NEW}; history: {NEW} Partial, {OLD} Completed)",
    ]
    assert waiting.stderr.startswith(
        f"nodefleet fleet upgrade to {NEW}: resuming at wave 1/2 canary, at the gate after its control planes"
    )
    assert fleet.path("canary-east").read_bytes() == held and len(fleet.log()) == 2

    # 3. Completed: the gate passes, the nodes are released and committed; the gate after them reads the
    #    NodePools, which still run the old release.
    control_plane_reports(fleet, "canary-east", "edge", NEW, (NEW, "Completed"), (OLD, "Completed"))
    nodes = fleet.upgrade()
    assert _stopped(nodes)[:4] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary nodes: "
        f"2 of 2 NodePools of wave canary have not rolled out {NEW} yet",
        "  canary-east: NodePool clusters/edge-infra on management cluster mgmt-use2-a: "
        f"not at {NEW} yet (status.version {OLD})",
        "  canary-east: NodePool clusters/edge-workers on management cluster mgmt-use2-a: "
        f"not at {NEW} yet (status.version {OLD})",
        f"  state: {state_file}",
    ]
    assert (
        f"gate after wave 1/2 canary control-plane: passed (1 control plane of wave canary: {NEW} Completed)"
        in nodes.stderr
    )
    assert f"canary-east / edge: NodePool infra: release {OLD} removed" in nodes.stderr
    assert "nodefleet upgrade: held" not in fleet.path("canary-east").read_text()
    assert fleet.log()[0] == f"Fleet upgrade to {NEW}: canary wave, nodes (canary-east)"
    assert {s: fleet.path(s).read_bytes() for s in main_files} == main_files  # the main wave waits

    # 4. Applied; one pool is rolling out, one is done: still waiting, for that one only.
    fleet.up("canary-east")
    assert set(fleet.images("canary-east").values()) == {_image(NEW)}
    node_pool_reports(fleet, "canary-east", "edge-infra", OLD, updating=NEW)
    node_pool_reports(fleet, "canary-east", "edge-workers", NEW)
    rolling = fleet.upgrade()
    assert _stopped(rolling)[:2] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary nodes: "
        f"1 of 2 NodePools of wave canary have not rolled out {NEW} yet",
        "  canary-east: NodePool clusters/edge-infra on management cluster mgmt-use2-a: "
        f"updating (Updating version in progress. Target version: {NEW}); status.version {OLD}",
    ]
    assert {s: fleet.path(s).read_bytes() for s in main_files} == main_files

    # 5. The canary is done: the main wave's control planes, in two stacks on two management clusters.
    node_pool_reports(fleet, "canary-east", "edge-infra", NEW)
    main = fleet.upgrade()
    assert "gate after wave 1/2 canary nodes: passed (2 NodePools of wave canary: " in main.stderr
    assert _stopped(main) == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 2/2 main control-plane: "
        f"3 of 3 control planes of wave main have not completed {NEW} yet",
        *(
            f"  {stack}: HostedCluster clusters/{cluster} on management cluster {mgmt}: "
            f"not started on {NEW} yet (desired {OLD}; history: {OLD} Completed)"
            for stack, cluster, mgmt in (
                ("Team_B", "shop", "mgmt-euw1-a"),
                ("east-a", "shop", "mgmt-use2-a"),
                ("east-a", "pay", "mgmt-use2-a"),
            )
        ),
        f"  state: {state_file}",
        main.stdout.splitlines()[-1],
    ]
    assert fleet.log()[0] == f"Fleet upgrade to {NEW}: main wave, control-plane (Team_B, east-a)"

    # 6. Applied. clusters/shop has completed on mgmt-use2-a but not on mgmt-euw1-a: each HostedCluster is
    #    read through its own management cluster's kubeconfig.
    fleet.up("east-a", "Team_B")
    for stack, clusters in (("east-a", ("shop", "pay")), ("Team_B", ("shop",))):
        for cluster in clusters:
            state_of = "Partial" if stack == "Team_B" else "Completed"
            control_plane_reports(fleet, stack, cluster, NEW, (NEW, state_of), (OLD, "Completed"))
    one_left = fleet.upgrade()
    assert _stopped(one_left)[:2] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 2/2 main control-plane: "
        f"1 of 3 control planes of wave main have not completed {NEW} yet",
        "  Team_B: HostedCluster clusters/shop on management cluster mgmt-euw1-a: "
        f"has not completed {NEW} yet (desired {NEW}; history: {NEW} Partial, {OLD} Completed)",
    ]
    assert "nodefleet upgrade: held" in fleet.path("east-a").read_text()  # no nodes before the whole wave

    # 7. The rest of the fleet: nodes released, applied, reported; the upgrade is complete.
    control_plane_reports(fleet, "Team_B", "shop", NEW, (NEW, "Completed"), (OLD, "Completed"))
    assert _stopped(fleet.upgrade())[0].endswith(
        f"6 of 6 NodePools of wave main have not rolled out {NEW} yet"
    )
    fleet.up("east-a", "Team_B")
    for stack in ("east-a", "Team_B"):
        for pool in POOLS[stack]:
            node_pool_reports(fleet, stack, pool, NEW)
    done = fleet.upgrade()
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout == f"nodefleet fleet upgrade: every wave is at {NEW} (2 waves; state: {state_file})\n"
    assert fleet.state()["complete"] is True and fleet.state()["stopped"] is None
    assert fleet.log() == [
        f"Fleet upgrade to {NEW}: main wave, nodes (Team_B, east-a)",
        f"Fleet upgrade to {NEW}: main wave, control-plane (Team_B, east-a)",
        f"Fleet upgrade to {NEW}: canary wave, nodes (canary-east)",
        f"Fleet upgrade to {NEW}: canary wave, control-plane (canary-east)",
        "the fleet",
    ]
    for stack in WAVES:
        assert set(fleet.images(stack).values()) == {_image(NEW)}, stack
        text = fleet.path(stack).read_text()
        assert OLD not in text and "nodefleet upgrade: held" not in text, stack
    again = fleet.upgrade()
    assert (
        again.returncode == 0
        and again.stdout == f"nodefleet fleet upgrade: every cluster is at {NEW}: nothing to do\n"
    )


def test_a_failure_the_operator_reports_or_an_object_not_there_stops_the_gate_and_the_next_wave_waits(
    managers: Managers, tmp_path: Path
) -> None:
    """The canary's HostedCluster not applied yet (404), failing its upgrade (``ClusterVersionFailing``),
    completed but ``Degraded``; then a NodePool whose boot image the operator cannot find and one that is not
    Ready: each stops the gate (exit 1, the state saying where), names the object and the operator's reason
    and message, and the next wave's stack is not touched until the canary is healthy. In a namespace of its
    own (``failing``), beside the other test's objects."""
    fleet = _fleet(tmp_path, managers, {"canary-east": "canary", "Team_B": "main"}, "failing")
    team_b = fleet.path("Team_B").read_bytes()
    edge = "canary-east: HostedCluster failing/edge on management cluster mgmt-use2-a"

    # Staged and committed, but not applied: the HostedCluster is not on the management cluster.
    missing = fleet.upgrade()
    assert _stopped(missing)[:2] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary control-plane: "
        f"1 of 1 control planes of wave canary have not completed {NEW} yet",
        f"  {edge}: cannot be read: the management cluster answered 404 Not Found",
    ]
    assert "404 Not Found" in fleet.state()["stopped"]["details"][0]
    assert fleet.events() == [("canary/control-plane", "staged")]

    fleet.up("canary-east", "Team_B")
    failing = _condition(
        "ClusterVersionFailing",
        "True",
        "ClusterOperatorDegraded",
        "Cluster operator kube-apiserver is degraded",
    )
    control_plane_reports(
        fleet, "canary-east", "edge", NEW, (NEW, "Partial"), (OLD, "Completed"),
        conditions=[_condition("Available", "True"), failing],
    )  # fmt: skip
    failed = fleet.upgrade()
    assert _stopped(failed) == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary control-plane: "
        "the HyperShift operator reports a failure on 1 of 1 control planes of wave canary",
        f"  {edge}: the operator reports ClusterVersionFailing=True (ClusterOperatorDegraded: Cluster operator "
        f"kube-apiserver is degraded); desired {NEW}; history: {NEW} Partial, {OLD} Completed",
        f"  state: {fleet.state_file}",
        "  next: fix what the operator reports (above), or wait until it reports it resolved, then run the same "
        "command again; it resumes at this gate",
    ]
    assert "ClusterVersionFailing=True (ClusterOperatorDegraded" in fleet.state()["stopped"]["details"][0]

    # Completed, but Degraded: a canary that is not healthy does not release its nodes.
    degraded = _condition(
        "Degraded", "True", "UnavailableReplicas", "kube-apiserver has 1 unavailable replica"
    )
    control_plane_reports(
        fleet, "canary-east", "edge", NEW, (NEW, "Completed"), (OLD, "Completed"),
        conditions=[_condition("Available", "True"), degraded],
    )  # fmt: skip
    assert _stopped(fleet.upgrade())[1] == (
        f"  {edge}: the operator reports Degraded=True (UnavailableReplicas: kube-apiserver has 1 unavailable "
        f"replica); desired {NEW}; history: {NEW} Completed, {OLD} Completed"
    )
    assert "nodefleet upgrade: held" in fleet.path("canary-east").read_text()

    # Healthy: the nodes are released and applied; the operator cannot find one pool's boot image, and the
    # other reached the release with a node short.
    control_plane_reports(fleet, "canary-east", "edge", NEW, (NEW, "Completed"), (OLD, "Completed"))
    assert _stopped(fleet.upgrade())[0].endswith(
        f"2 of 2 NodePools of wave canary have not rolled out {NEW} yet"
    )
    fleet.up("canary-east")
    no_ami = _condition("ValidPlatformImage", "False", "NotFound", f"no AMI for {NEW} in us-east-2")
    not_ready = _condition("Ready", "False", "WaitingForAvailableMachines", "1 of 2 machines available")
    node_pool_reports(fleet, "canary-east", "edge-infra", NEW, conditions=[not_ready])
    node_pool_reports(fleet, "canary-east", "edge-workers", OLD, conditions=[no_ami])
    pools = fleet.upgrade()
    assert _stopped(pools)[:3] == [
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/2 canary nodes: "
        "the HyperShift operator reports a failure on 1 of 2 NodePools of wave canary",
        "  canary-east: NodePool failing/edge-workers on management cluster mgmt-use2-a: the operator reports "
        f"ValidPlatformImage=False (NotFound: no AMI for {NEW} in us-east-2); status.version {OLD}",
        "  canary-east: NodePool failing/edge-infra on management cluster mgmt-use2-a: "
        f"at {NEW} but not Ready (WaitingForAvailableMachines: 1 of 2 machines available)",
    ]
    assert fleet.path("Team_B").read_bytes() == team_b  # the next wave has not started

    # Fixed: the canary passes and the next wave begins.
    node_pool_reports(fleet, "canary-east", "edge-infra", NEW)
    node_pool_reports(fleet, "canary-east", "edge-workers", NEW)
    nxt = fleet.upgrade()
    assert _stopped(nxt)[1] == (
        "  Team_B: HostedCluster failing/shop on management cluster mgmt-euw1-a: "
        f"not started on {NEW} yet (no version reported yet)"
    )
    assert fleet.path("Team_B").read_bytes() != team_b
    assert fleet.log()[0] == f"Fleet upgrade to {NEW}: main wave, control-plane (Team_B)"
