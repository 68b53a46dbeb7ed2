"""A generated fleet of 200 render folders on four management API servers through the real controllers: Flux
(source-controller and kustomize-controller v1.9.6) and Argo CD (v3.6.1: application controller, repo server,
ApplicationSet controller with progressive syncs), one after the other on the same API servers
(tests/gitopsscale.py).

The fleet is 20 stacks of 10 hosted clusters (one management-side folder each): the canary stack's 10 folders
keep their direct ``dependsOn``, the early, main and last waves are gated by Flux's barrier Kustomizations (a
leaf per management cluster, a root per wave), each management cluster's folders read a Flux GitRepository of
their own (sparse checkout of its folders), and Argo CD gets one ApplicationSet per management cluster
(``--argocd-sharding group``), each rolling its waves in order. What the rollouts cost is printed (``-s``);
bench/gitops_scale.py measures it at other sizes, and docs/measurements.md has the figures.
"""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator

import pytest

from tests.gitopsctl import Controllers
from tests.gitopsfleet import TOOL_MANAGER, managers
from tests.gitopsscale import (
    APPLICATION_SETS,
    GIT_REPOSITORIES,
    HYPERSHIFT,
    KUSTOMIZATIONS,
    WAVE_ORDER,
    Fleet,
    items,
    published,
    remove,
    roll_out,
)
from tests.patience import Patience
from tests.testcluster import TestClusters

pytestmark = pytest.mark.gitops

PER_STACK, MANAGEMENT_CLUSTERS = 10, 4
#: How many render folders the suite runs (``NODEFLEET_GITOPS_SCALE`` sets another: a multiple of 10, 50 or more).
FOLDERS = 200


def folders() -> int:
    text = os.environ.get("NODEFLEET_GITOPS_SCALE", str(FOLDERS))
    if not text.isdigit() or int(text) < 50 or int(text) % PER_STACK:
        raise pytest.UsageError(
            f"NODEFLEET_GITOPS_SCALE={text!r}: the number of render folders of tests/test_gitops_scale.py, a "
            f"multiple of {PER_STACK} from 50 up (unset: {FOLDERS})"
        )
    return int(text)


@pytest.fixture(scope="module")
def fleet(
    gitops_controllers: Controllers, test_clusters: TestClusters, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Fleet]:
    gitops_controllers.started("flux")
    gitops_controllers.started("argocd")
    where = tmp_path_factory.mktemp("scale")
    stacks = folders() // PER_STACK
    with published(gitops_controllers, test_clusters, where, stacks, PER_STACK, MANAGEMENT_CLUSTERS) as f:
        yield f


def _waves(fleet: Fleet) -> dict[str, int]:
    return {f.name: WAVE_ORDER.index(f.wave) for f in fleet.folders}


@pytest.mark.parametrize("tool", ["flux", "argocd"])
def test_a_generated_fleet_on_four_api_servers_applies_each_folder_to_its_server_wave_after_wave(
    gitops_controllers: Controllers, test_clusters: TestClusters, fleet: Fleet, tool: str
) -> None:
    ctl = gitops_controllers
    assert len(fleet.folders) == folders() and len(fleet.servers) == MANAGEMENT_CLUSTERS
    for server in fleet.servers.values():  # a clean start: the other tool's rollout removed what it applied
        assert items(server, f"{HYPERSHIFT}/hostedclusters") == []
    try:
        rollout = roll_out(ctl, test_clusters, fleet, tool)
        print(f"\n{json.dumps(rollout.figures(), indent=1)}")
        # Waves in order (for Argo CD, within each management cluster's ApplicationSet), as seen at every poll.
        assert not rollout.out_of_order, "\n".join(rollout.out_of_order[:20])
        # Every folder on its own API server and on no other, applied by the tool's field manager.
        for name, server in fleet.servers.items():
            mine = {f.cluster for f in fleet.folders if f.management_cluster == name}
            hosted = items(server, f"{HYPERSHIFT}/hostedclusters")
            pools = items(server, f"{HYPERSHIFT}/nodepools")
            assert {h["metadata"]["name"] for h in hosted} == mine, name
            assert {p["metadata"]["name"] for p in pools} == {f"{c}-infra" for c in mine}, name
            wrong = [o["metadata"]["name"] for o in hosted + pools if TOOL_MANAGER[tool] not in managers(o)]
            assert not wrong, f"{name}: not applied by {TOOL_MANAGER[tool]}: {wrong[:5]}"
        if tool == "flux":
            _flux_barriers(ctl, fleet)
        else:
            _argocd_shards(ctl, fleet)
    finally:
        remove(ctl, fleet, tool)


def _flux_barriers(ctl: Controllers, fleet: Fleet) -> None:
    """The waves of more than 10 folders went through a barrier per wave and management cluster and one root per
    wave, all applied at the commit; a wave of at most 10 folders is waited for directly. Each management
    cluster's folders and barriers read a GitRepository of their own, whose artifact is their folders (sparse
    checkout), and each folder waits also for its own management cluster's barrier of the wave before."""
    live = {k["metadata"]["name"]: k for k in items(ctl.hub, KUSTOMIZATIONS)}
    barriers = {n for n, k in live.items() if (k["metadata"].get("labels") or {}).get("nodefleet.io/barrier")}
    of_wave = {w: {f.name for f in fleet.folders if f.wave == w} for w in WAVE_ORDER}
    gated = [w for w in WAVE_ORDER if len(of_wave[w]) > 10]
    expected = {f"nodefleet--wave-{w}" for w in gated} | {
        f"nodefleet--wave-{w}-{f.management_cluster}-0" for w in gated for f in fleet.folders if f.wave == w
    }
    assert gated and barriers == expected
    has = {(f.wave, f.management_cluster) for f in fleet.folders}
    assert has == {(w, m) for w in WAVE_ORDER for m in fleet.servers}  # so the wave before is the group's too
    for f in fleet.folders:
        depends = {d["name"] for d in live[f.name]["spec"].get("dependsOn") or []}
        wave = WAVE_ORDER.index(f.wave)
        before = WAVE_ORDER[wave - 1] if wave else None
        want = (
            set()
            if before is None
            else {f"nodefleet--wave-{before}", f"nodefleet--wave-{before}-{f.management_cluster}-0"}
            if before in gated
            else of_wave[before]
        )
        assert depends == want, f.name
        assert live[f.name]["spec"]["sourceRef"]["name"] == f"nodefleet-rendered-{f.management_cluster}", (
            f.name
        )
    for name in barriers:
        revision = (live[name].get("status") or {}).get("lastAppliedRevision", "")
        assert revision.endswith(fleet.commit), name
    sources = {g["metadata"]["name"]: g for g in items(ctl.hub, GIT_REPOSITORIES)}
    assert set(sources) == {"nodefleet-rendered"} | {f"nodefleet-rendered-{m}" for m in fleet.servers}
    for name, source in sources.items():
        status = source.get("status") or {}
        assert (status.get("artifact") or {}).get("revision", "").endswith(fleet.commit), name
        assert status.get("observedSparseCheckout") == source["spec"]["sparseCheckout"], name
        readers = {
            k["spec"]["path"].removeprefix("./")
            for k in live.values()
            if k["spec"]["sourceRef"]["name"] == name
        }
        assert set(source["spec"]["sparseCheckout"]) == readers, name


def _argocd_shards(ctl: Controllers, fleet: Fleet) -> None:
    """One ApplicationSet per management cluster, its RollingSync status naming exactly that cluster's
    Applications, each Healthy, at steps in wave order. The ApplicationSet controller writes an Application's
    step status on its own reconcile after the Application's health, so the last may still say Progressing when
    every Application is Healthy: read until none does, or until the steps stop changing (tests/patience.py)."""
    waves = _waves(fleet)
    patience = Patience()
    while True:
        appsets = {a["metadata"]["name"]: a for a in items(ctl.hub, APPLICATION_SETS)}
        steps = sorted(
            (name, s.get("application", ""), s.get("status", ""))
            for name, a in appsets.items()
            for s in (a.get("status") or {}).get("applicationStatus") or []
        )
        if {status for _, _, status in steps} == {"Healthy"} or patience.over(tuple(steps)):
            break
        time.sleep(2)
    assert set(appsets) == {f"nodefleet-{m}" for m in fleet.servers}
    for m in fleet.servers:
        status = (appsets[f"nodefleet-{m}"].get("status") or {}).get("applicationStatus") or []
        steps = {s["application"]: int(s["step"]) for s in status}
        assert set(steps) == {f.name for f in fleet.folders if f.management_cluster == m}, m
        assert {s.get("status") for s in status} == {"Healthy"}, m
        ordered = sorted(steps, key=lambda a: steps[a])
        assert [waves[a] for a in ordered] == sorted(waves[a] for a in ordered), m
