"""`fleet upgrade --commit --push` through the waves on the real GitOps controllers (tests/gitopsctl.py): Flux
(source-controller and kustomize-controller v1.9.6) and Argo CD (v3.6.1, the ApplicationSet's RollingSync).

One fleet of two hosted clusters on one management cluster: ``canary`` (the cluster ``edge``, wave canary, a
classic NodePool) and the shipped ``hosted`` stack (``prod-east``, wave main, with AutoNode, so its hosted side
has a folder of its own on the hosted cluster's API server). Rendered, published and wired as docs/gitops.md
shows, then upgraded from 4.22.3 to 4.22.4 as docs/operations.md shows, with ``--push`` to the fixture's Git
server and the tool's own status read through the hub's kubeconfig.

The test plays HyperShift and Karpenter (``play_controllers``) between its polls, and requests the tool's refresh
when the branch moves (what a Git webhook does), nothing else: which step reaches the API servers when is the
tools' doing, and nodefleet's waiting on them.
"""

from __future__ import annotations

import itertools
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from nodefleet.render.health import HEALTH_RULES, health
from tests.applymode import HOSTED_KARPENTER
from tests.gitopsctl import ARGOCD_NAMESPACE, Controllers
from tests.gitopsfleet import (
    GIT_ENV,
    Repo,
    _current,
    applications,
    get,
    git,
    kustomizations,
    play_controllers,
    refresh_argocd,
    refresh_flux,
    release_version,
    wait_for,
)
from tests.patience import STALL, Patience
from tests.testcluster import PROJECT, ApiServer, TestClusters

pytestmark = pytest.mark.gitops

OLD, NEW = "4.22.3", "4.22.4"
BRANCH = "nodefleet-rendered"
#: The objects whose release moves, in the order the upgrade must reach them: (name in the test, kind, name).
MOVES = (
    ("canary control plane", "HostedCluster", "clusters/edge"),
    ("canary nodes", "NodePool", "clusters/edge-infra"),
    ("main control plane", "HostedCluster", "clusters/prod-east"),
    ("main nodes", "NodePool", "clusters/prod-east-infra"),
)
HYPERSHIFT = "hypershift.openshift.io/v1beta1"
RULES = {rule.kind: rule for rule in HEALTH_RULES if rule.api_version == HYPERSHIFT}
#: The wiring's objects, by folder: the canary's management side, the main stack's two sides.
WIRING = ("nodefleet-canary-edge", "nodefleet-hosted-prod-east", "nodefleet-hosted-prod-east-hosted")


def canary_stack() -> str:
    """The shipped ``hosted`` stack as a canary of its own: the cluster ``edge``, wave canary, no AutoNode."""
    text = (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text()
    # In HyperShift's namespace `clusters`, as the main stack's cluster: both stacks' folders render it.
    text = text.replace("wave: main", "wave: canary").replace("prod-east", "edge").replace("4kq8z", "9tq2m")
    start = text.index("        autoNode:")
    end = text.index("\n        nodePools:\n          - name: infra") + 1
    return text[:start] + text[end:]


@dataclass
class Fleet:
    tool: str
    repo: Repo
    bare: Path
    servers: dict[str, ApiServer]
    log: Path
    #: Per poll: (object -> (release of its spec, health by the wiring's rule)).
    readings: list[dict[str, tuple[str, str]]] = field(default_factory=list)


def _register(
    ctl: Controllers, tool: str, servers: dict[str, ApiServer], wiring: list[dict[str, Any]]
) -> None:
    """The credentials the wiring references: Argo CD cluster Secrets named as the folders' destinations, or the
    Flux kubeconfig Secret each Kustomization names, under the key it names."""
    if tool == "argocd":
        for name, server in servers.items():
            ctl.argocd_cluster(server, name)
        return
    for doc in wiring:
        if doc["kind"] == "Kustomization":
            target = servers["prod-east-hosted" if doc["spec"]["path"].endswith("-hosted") else "management"]
            ref = doc["spec"]["kubeConfig"]["secretRef"]
            ctl.flux_kubeconfig_secret(target, ref["name"], ref.get("key", "value"))


def _applied_everywhere(ctl: Controllers, tool: str, commit: str) -> bool:
    if tool == "flux":
        found = kustomizations(ctl)
        return all(
            (found.get(n, {}).get("status") or {}).get("lastAppliedRevision", "").endswith(commit)
            and any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (found[n].get("status") or {}).get("conditions") or []
            )
            for n in WIRING
        )
    # Argo CD: as `fleet upgrade --push` reads it (the ApplicationSet's RollingSync status included).
    from cli.gitops_wait import Target, read_once
    from nodefleet.fleet.applied import APPLIED

    wanted = [Target("Application", ARGOCD_NAMESPACE, n) for n in WIRING]
    api = ctl.hub.api_client()
    try:
        return all(r.state == APPLIED for r in read_once(api, wanted, BRANCH, commit, None))
    finally:
        api.close()


@pytest.fixture(scope="module", params=["flux", "argocd"])
def fleet(
    request: pytest.FixtureRequest,
    gitops_controllers: Controllers,
    test_clusters: TestClusters,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Fleet]:
    """The fleet published, wired and applied by ``tool`` (first sync done, every object healthy at OLD)."""
    from tests.test_gitops_controllers import _remove_wiring

    tool = request.param
    ctl = gitops_controllers.started(tool)
    with ExitStack() as stop:
        servers = {
            "management": stop.enter_context(test_clusters.fresh(f"upgrade-{tool}-management")),
            "prod-east-hosted": stop.enter_context(
                test_clusters.fresh(f"upgrade-{tool}-prod-east-hosted", HOSTED_KARPENTER)
            ),
        }
        name = f"upgrade-{tool}"
        url = ctl.repository(name)
        stacks = {"canary": canary_stack(), "hosted": (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text()}
        repo = Repo.create(tmp_path_factory.mktemp(name) / "repo", url, stacks)
        commit = repo.publish()
        written = repo.gitops("--tool", tool)
        if "argocd-cm" in written:
            ctl.apply(written["argocd-cm"], manager="nodefleet")
        _register(ctl, tool, servers, written[tool])
        ctl.apply(written[tool])
        (refresh_flux if tool == "flux" else refresh_argocd)(ctl)
        wait_for(
            f"the first sync of {commit[:12]}, every folder applied and healthy",
            lambda: (play_controllers(*servers.values()) or True) and _applied_everywhere(ctl, tool, commit),
            ctl,
            tool,
        )
        yield Fleet(tool, repo, ctl.git_root / f"{name}.git", servers, repo.path.parent / "gates.log")
        _remove_wiring(ctl, tool)


def _read(fleet: Fleet) -> dict[str, tuple[str, str]]:
    """Each moving object's release (by its spec) and whether HyperShift reports it done (``done``: its status
    answers this generation of the spec, and the wiring's health rule calls it Healthy)."""
    out = {}
    for what, kind, where in MOVES:
        namespace, name = where.split("/")
        live = get(fleet.servers["management"], HYPERSHIFT, kind, name, namespace)
        image = ((live or {}).get("spec") or {}).get("release", {}).get("image", "")
        done = live is not None and _current(live) and health(RULES[kind], live) == "Healthy"
        out[what] = (release_version(image), "done" if done else "not done")
    return out


def _upgrade(fleet: Fleet, ctl: Controllers, *, holding: tuple[str, ...] = (), timeout: int = 600) -> Any:
    """``fleet upgrade --release NEW --commit --push`` as docs/operations.md shows it, the health command only
    logging the gate (the tools' health is the gate here); while it runs, the test plays the clusters'
    controllers (except ``holding``) and refreshes the tool when the branch moves. The finished process."""
    gate = f'echo "gate $NODEFLEET_WAVE $NODEFLEET_UPGRADE_PHASE" >> {fleet.log}'
    argv = [
        sys.executable, "-m", "nodefleet", "fleet", "upgrade", "--release", NEW, "--commit", "--push",
        "--gitops-tool", fleet.tool, "--gitops-kubeconfig", str(ctl.hub.kubeconfig),
        "--health-command", gate, "--timeout", str(timeout),
    ]  # fmt: skip
    env = {**os.environ, **GIT_ENV, "PYTHON": sys.executable}
    proc = subprocess.Popen(
        argv, cwd=fleet.repo.path, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    seen = ""
    patience = Patience(stall=timeout + STALL)  # the command waits up to ``timeout`` on a wave by itself
    try:
        while proc.poll() is None:
            fleet.readings.append(_read(fleet))
            tip = git(fleet.bare, "rev-parse", BRANCH)
            assert not patience.over((tip, tuple(sorted(fleet.readings[-1].items())))), (
                f"fleet upgrade did not finish: {patience}"
            )
            if tip != seen:  # what a Git webhook does
                (refresh_flux if fleet.tool == "flux" else refresh_argocd)(ctl)
                seen = tip
            play_controllers(*fleet.servers.values(), holding=holding)
            time.sleep(0.5)
        out, err = proc.communicate()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    return subprocess.CompletedProcess(argv, proc.returncode, out, err)


def _first(readings: list[dict[str, tuple[str, str]]], what: str, state: tuple[str, str]) -> int | None:
    return next((i for i, r in enumerate(readings) if r[what] == state), None)


def test_fleet_upgrade_push_moves_each_wave_after_the_one_before_is_applied_and_healthy(
    gitops_controllers: Controllers, fleet: Fleet
) -> None:
    ctl, repo = gitops_controllers, fleet.repo
    namespace = get(fleet.servers["management"], "v1", "Namespace", "clusters")
    assert namespace is not None
    start = {what: state for what, state in _read(fleet).items()}
    assert start == {what: (OLD, "done") for what, _, _ in MOVES}, start
    main_before = git(repo.path, "rev-parse", "main")
    rendered_before = git(repo.path, "rev-parse", BRANCH)

    # HyperShift has not completed the canary's control plane: the canary is not healthy, the run stops.
    held = _upgrade(fleet, ctl, holding=("HostedCluster/edge",), timeout=120)
    assert held.returncode == 1, held.stdout + held.stderr
    first = held.stdout.splitlines()[0]
    assert first.startswith(
        f"nodefleet fleet upgrade to {NEW}: stopped waiting for the GitOps tool to apply wave 1/2 canary "
        "control-plane: "
    ), held.stdout
    assert "not reported applied by 1 of 1 objects within 120s (--timeout)" in first, held.stdout
    # The tool applied the canary's control plane (or applies it now, if it was slow): held, never done.
    wait_for(
        f"the canary's HostedCluster at {NEW} on its API server",
        lambda: _read(fleet)["canary control plane"][0] == NEW,
        ctl,
        fleet.tool,
    )
    now = _read(fleet)
    assert now["canary control plane"] == (NEW, "not done"), now
    assert now["canary nodes"][0] == OLD and now["main control plane"][0] == OLD, now
    # Nothing of a later step committed: one commit on each branch, the canary's control plane.
    assert git(repo.path, "rev-list", "--count", f"{main_before}..main") == "1"
    assert git(repo.path, "rev-list", "--count", f"{rendered_before}..{BRANCH}") == "1"
    changed = git(repo.path, "diff", "--name-only", rendered_before, BRANCH).splitlines()
    assert changed and all(p.startswith("rendered/canary/") for p in changed), changed
    assert "gate" not in (fleet.log.read_text() if fleet.log.exists() else "")

    # HyperShift completes it; the same command resumes and finishes.
    done = _upgrade(fleet, ctl)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "resuming at wave 1/2 canary" in done.stderr, done.stderr
    gates = fleet.log.read_text().splitlines()
    assert gates == [
        "gate canary control-plane",
        "gate canary nodes",
        "gate main control-plane",
        "gate main nodes",
    ], gates
    readings = fleet.readings
    # Each object reaches the API server only after the one before it is there at NEW and healthy, as polled.
    for (before, _, _), (after, _, _) in itertools.pairwise(MOVES):
        moved = next((i for i, r in enumerate(readings) if r[after][0] == NEW), None)
        healthy = _first(readings, before, (NEW, "done"))
        assert moved is not None and healthy is not None, (before, after, readings[-1])
        assert healthy < moved, f"{after} reached the API server (poll {moved}) before {before} was healthy"
    wait_for(
        f"every object at {NEW}, done",
        lambda: (
            (play_controllers(*fleet.servers.values()) or True)
            and _read(fleet) == {what: (NEW, "done") for what, _, _ in MOVES}
        ),
        ctl,
        fleet.tool,
    )
    # The Namespace both stacks render is the one of the first sync, and no tool's object is stuck on it: on Argo
    # CD no Application applies it (each creates it when missing), so none reports it shared and each is Synced.
    live = get(fleet.servers["management"], "v1", "Namespace", "clusters")
    assert live["metadata"]["uid"] == namespace["metadata"]["uid"]
    if fleet.tool == "argocd":
        wait_for(
            "every Application Synced, none sharing an object with another",
            lambda: (
                (apps := applications(ctl)).keys() >= set(WIRING)
                and all(_synced_alone(apps[n]) for n in WIRING)
            ),
            ctl,
            fleet.tool,
        )
        assert "argocd.argoproj.io/tracking-id" not in (live["metadata"].get("annotations") or {}), live


def _synced_alone(app: dict[str, Any]) -> bool:
    status = app.get("status") or {}
    shared = [c for c in status.get("conditions") or [] if c.get("type") == "SharedResourceWarning"]
    return not shared and (status.get("sync") or {}).get("status") == "Synced"
