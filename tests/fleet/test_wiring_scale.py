"""The GitOps wiring of a large fleet grows with the fleet, not its square, and is split where the tools need it.

Fleets of hosted clusters (a management and a hosted folder each) spread over 100 management clusters and the
four waves as `bench.fleet` spreads them, wired by the real generators: Flux's waves are gated by barrier
Kustomizations (no object's ``dependsOn`` grows with the fleet, and every Kustomization still waits,
transitively, for every folder of every earlier wave), Argo CD's ApplicationSets each stay under the status-size
budget with their RollingSync steps in wave order, and ``fleet upgrade --push`` reads every shard."""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.fleet import management_cluster
from nodefleet.render.wiring import (
    ARGOCD_OBJECT_BUDGET,
    BARRIER_FOLDER,
    BARRIER_README,
    ETCD_REQUEST_LIMIT,
    FLUX_BARRIER_FAN_IN,
    FLUX_SHARD_LABEL,
    LABEL_BARRIER,
    Folder,
    WiringError,
    argocd_application_sets,
    argocd_object_bytes,
    controller_shard,
    flux_kustomizations,
)
from nodefleet.stackfile.waves import WAVES
from tests.conftest import nodefleet
from tests.test_fleet_regional import _valid

REPO_URL = "https://git.example.com/platform/fleet.git"


def _wave(i: int) -> str:
    """As `bench.fleet` spreads a fleet: 1 in 50 a canary, 1 in 10 early, 1 in 20 last, the rest main."""
    if i % 50 == 0:
        return "canary"
    if i % 10 == 1:
        return "early"
    return "last" if i % 20 == 7 else "main"


def fleet_folders(stacks: int, management_clusters: int = 100) -> list[Folder]:
    """The folders of ``stacks`` stacks of one hosted cluster with AutoNode each, as :func:`nodefleet.render.
    wiring.folders` gives them for the generated fleet of `bench.fleet`."""
    out = []
    for i in range(stacks):
        stack, mc = f"hc-{i:05d}", management_cluster(i % management_clusters)
        out += [
            Folder(stack, stack, "management", stack, _wave(i), mc, f"{mc}-kubeconfig", mc, "rendered/{stack}",
                   "value", "clusters"),
            Folder(stack, f"{stack}-hosted", "hosted", stack, _wave(i), f"{mc}-clusters-{stack}",
                   f"{mc}-clusters-{stack}-kubeconfig", mc, "rendered/{stack}", "kubeconfig"),
        ]  # fmt: skip
    return out


def _paths(all_folders: Sequence[Folder]) -> dict[tuple[str, str], str]:
    return {(f.stack, f.target): f"rendered/{f.stack}/{f.target}" for f in all_folders}


def _flux(all_folders: Sequence[Folder], **kw: Any) -> list[dict[str, Any]]:
    barriers = {f.stack: f"rendered/{f.stack}/.nodefleet-barrier" for f in all_folders}
    return flux_kustomizations(
        all_folders,
        repo_url=REPO_URL,
        revision="main",
        paths=_paths(all_folders),
        barrier_paths=barriers,
        **kw,
    )


def _size(doc: Any) -> int:
    return len(json.dumps(doc))


@pytest.mark.parametrize("tool", ["flux", "argocd"])
def test_the_wirings_size_per_folder_does_not_grow_with_the_fleet(tool: str) -> None:
    sizes = {}
    for stacks in (100, 1000):
        all_folders = fleet_folders(stacks)
        if tool == "flux":
            docs = _flux(all_folders)
        else:
            # One ApplicationSet per management cluster at both sizes: the same shape, ten times the stacks.
            docs, _ = argocd_application_sets(
                all_folders, repo_url=REPO_URL, revision="main", paths=_paths(all_folders), shard=True
            )
        sizes[stacks] = (sum(_size(d) for d in docs) / len(all_folders), max(_size(d) for d in docs))
    per_folder_100, largest_100 = sizes[100]
    per_folder_1000, largest_1000 = sizes[1000]
    assert per_folder_1000 <= 1.1 * per_folder_100, sizes
    if tool == "flux":  # no object grows with the fleet either
        assert largest_1000 <= 1.1 * largest_100, sizes


def _depends(docs: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    return {
        d["metadata"]["name"]: [x["name"] for x in d["spec"].get("dependsOn", [])]
        for d in docs
        if d["kind"] == "Kustomization"
    }


def _closure(depends: dict[str, list[str]]) -> Callable[[str], set[str]]:
    memo: dict[str, set[str]] = {}

    def below(name: str) -> set[str]:
        if name not in memo:
            seen: set[str] = set()
            for d in depends[name]:
                seen |= {d} | below(d)
            memo[name] = seen
        return memo[name]

    return below


def test_every_kustomization_waits_for_every_folder_of_every_earlier_wave_through_the_barriers() -> None:
    all_folders = fleet_folders(1000)
    docs = _flux(all_folders)
    kustomizations = [d for d in docs if d["kind"] == "Kustomization"]
    depends = _depends(docs)
    below = _closure(depends)
    barriers = {d["metadata"]["name"] for d in kustomizations if LABEL_BARRIER in d["metadata"]["labels"]}
    assert barriers and len(barriers) < len(all_folders) / 10
    assert max(len(v) for v in depends.values()) <= FLUX_BARRIER_FAN_IN
    wave_of = {f.application: WAVES.index(f.wave) for f in all_folders}
    earlier = {w: {n for n, v in wave_of.items() if v < w} for w in range(len(WAVES))}
    for f in all_folders:
        waited = below(f.application) - barriers
        assert earlier[wave_of[f.application]] <= waited, f.application
        # ... and never for a folder of its own wave or a later one, but its own management side
        same = {n for n in waited if wave_of[n] >= wave_of[f.application]}
        assert same == ({dns(f.stack, f.stack)} if f.side == "hosted" else set()), f.application
    for d in kustomizations:
        if d["metadata"]["name"] in barriers or d["metadata"]["name"] in list(wave_of)[:10]:
            _valid(d)
        if d["metadata"]["name"] in barriers:
            spec = d["spec"]
            assert spec["path"].endswith("/.nodefleet-barrier") and "kubeConfig" not in spec
            assert (spec["prune"], spec["deletionPolicy"]) == (False, "Orphan")


def _sources(docs: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {d["metadata"]["name"]: d for d in docs if d["kind"] == "GitRepository"}


def test_each_management_cluster_group_reads_a_source_of_its_own_folders() -> None:
    """kustomize-controller unpacks its source's whole artifact on every reconcile: a large fleet's folders read
    a GitRepository per management cluster group whose artifact holds that group's folders only (sparse
    checkout), so what a Kustomization unpacks grows with its group, not with the fleet."""
    for stacks in (300, 1000):
        all_folders = fleet_folders(stacks)
        docs = _flux(all_folders)
        sources = _sources(docs)
        assert len(sources) == 101  # the barriers' own, and one per management cluster
        kustomizations = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Kustomization"}
        for f in all_folders:
            ref = kustomizations[f.application]["spec"]["sourceRef"]
            assert ref == {"kind": "GitRepository", "name": f"nodefleet-rendered-{f.management_cluster}"}
        for name, k in kustomizations.items():
            source = sources[k["spec"]["sourceRef"]["name"]]
            assert source["spec"]["ref"] == {"branch": "main"} and source["spec"]["url"] == REPO_URL
            assert k["spec"]["path"].removeprefix("./") in source["spec"]["sparseCheckout"], name
        for name, source in sources.items():
            _valid(source)
            readers = [k for k in kustomizations.values() if k["spec"]["sourceRef"]["name"] == name]
            assert sorted(source["spec"]["sparseCheckout"]) == sorted(
                {k["spec"]["path"].removeprefix("./") for k in readers}
            ), name  # nothing more than its readers' folders
        # the upper barriers read the fleet's source, which holds no folder of a cluster
        shared = sources["nodefleet-rendered"]["spec"]["sparseCheckout"]
        assert shared and all(p.endswith("/.nodefleet-barrier") for p in shared)
        per_group = max(
            len(s["spec"]["sparseCheckout"]) for n, s in sources.items() if n != "nodefleet-rendered"
        )
        assert per_group <= 2 * stacks / 100 + 4 * len(WAVES)


def test_a_small_fleet_keeps_one_source_of_the_whole_branch() -> None:
    for all_folders in (fleet_folders(5, management_clusters=2), fleet_folders(300, management_clusters=1)):
        docs = _flux(all_folders)
        assert list(_sources(docs)) == ["nodefleet-rendered"]
        assert "sparseCheckout" not in _sources(docs)["nodefleet-rendered"]["spec"]
        assert {d["spec"]["sourceRef"]["name"] for d in docs if d["kind"] == "Kustomization"} == {
            "nodefleet-rendered"
        }


def dns(stack: str, target: str) -> str:
    return f"nodefleet-{stack}-{target}"


def test_a_barrier_is_ready_only_when_its_wave_is() -> None:
    """Flux's dependency rule played on the wiring (kustomize-controller ``checkDependencies``: every dependency
    Ready for its generation and, sharing the source, at the source's revision): at the first rollout, one
    canary folder that never gets healthy, and nothing of a later wave applies; once it is healthy, everything
    does. At a later commit, with everything Ready at the one before, a dependency on another source counts as
    Ready at once: the order still holds within the stuck folder's management cluster group."""
    all_folders = fleet_folders(300, management_clusters=7)  # every group with folders of several waves
    docs = _flux(all_folders)
    depends = _depends(docs)
    source = {
        d["metadata"]["name"]: d["spec"]["sourceRef"]["name"] for d in docs if d["kind"] == "Kustomization"
    }
    barriers = {n for n in depends if n not in {f.application for f in all_folders}}
    stuck_folder = next(f for f in all_folders if f.wave == "canary")
    stuck = stuck_folder.application

    def play(healthy: Callable[[str], bool], ready_before: bool = False) -> dict[str, bool]:
        at_commit = dict.fromkeys(depends, False)  # applied the new commit, and Ready

        def met(name: str, dep: str) -> bool:
            if ready_before and source[dep] != source[name]:
                return at_commit[dep] or healthy(dep)  # Ready at the commit before, and no revision compared
            return at_commit[dep]

        changed = True
        while changed:
            changed = False
            for name, deps in depends.items():
                if not at_commit[name] and all(met(name, d) for d in deps) and healthy(name):
                    at_commit[name] = changed = True
        return at_commit

    # Through the dependencies on its own source alone, a folder waits for every earlier folder of its group,
    # also when its group has no folder in the wave just before.
    gap = [f for f in all_folders if not (f.management_cluster == "mgmt-000" and f.wave == "main")]
    for fleet in (all_folders, gap):
        fleet_docs = _flux(fleet)
        own = {
            d["metadata"]["name"]: d["spec"]["sourceRef"]["name"]
            for d in fleet_docs
            if d["kind"] == "Kustomization"
        }
        below_same = _closure(
            {n: [d for d in deps if own[d] == own[n]] for n, deps in _depends(fleet_docs).items()}
        )
        for f in fleet:
            earlier_in_group = {
                g.application
                for g in fleet
                if g.management_cluster == f.management_cluster and WAVES.index(g.wave) < WAVES.index(f.wave)
            }
            assert earlier_in_group <= below_same(f.application), f.application
    later = play(lambda name: name != stuck, ready_before=True)
    group = [f for f in all_folders if f.management_cluster == stuck_folder.management_cluster]
    assert len(group) > 2 and not any(later[f.application] for f in group if f.wave != "canary")
    held = play(lambda name: name != stuck)
    canary = {f.application for f in all_folders if f.wave == "canary"}
    assert not any(held[f.application] for f in all_folders if f.wave != "canary")
    assert all(held[n] for n in canary - {stuck, f"{stuck}-hosted"})  # its hosted side waits for it
    assert not held[f"{stuck}-hosted"]
    assert not any(held[b] for b in barriers if "canary" not in b)
    assert all(play(lambda name: True).values())


def test_small_waves_keep_their_direct_dependencies() -> None:
    all_folders = fleet_folders(5, management_clusters=2)
    docs = _flux(all_folders)
    assert not [d for d in docs if LABEL_BARRIER in d["metadata"].get("labels", {})]


def test_flux_shards_label_every_kustomization_by_its_management_cluster_group() -> None:
    all_folders = fleet_folders(300)
    docs = _flux(all_folders, shards=lambda f: controller_shard(f.management_cluster, 4))
    kustomizations = [d for d in docs if d["kind"] == "Kustomization"]
    folder_labels = {
        d["metadata"]["labels"][FLUX_SHARD_LABEL]
        for d in kustomizations
        if LABEL_BARRIER not in d["metadata"]["labels"]
    }
    assert folder_labels <= {f"shard-{k}" for k in range(4)} and len(folder_labels) > 1
    for f in all_folders:
        (doc,) = [d for d in kustomizations if d["metadata"]["name"] == f.application]
        assert doc["metadata"]["labels"][FLUX_SHARD_LABEL] == controller_shard(f.management_cluster, 4)


def _appsets(all_folders: Sequence[Folder], **kw: Any) -> tuple[list[dict[str, Any]], list[Any]]:
    return argocd_application_sets(
        all_folders, repo_url=REPO_URL, revision="main", paths=_paths(all_folders), **kw
    )


def test_a_fleet_that_fits_keeps_one_applicationset() -> None:
    docs, shards = _appsets(fleet_folders(100))
    assert [d["metadata"]["name"] for d in docs] == ["nodefleet"] and len(shards) == 1
    assert shards[0].bytes < ARGOCD_OBJECT_BUDGET


def test_applicationsets_are_split_per_management_cluster_under_the_status_budget() -> None:
    all_folders = fleet_folders(2000)
    docs, shards = _appsets(all_folders)
    assert len(docs) == 100
    seen: list[str] = []
    for doc, shard in zip(docs, shards, strict=True):
        if shard is shards[0]:
            _valid(doc)
        assert doc["metadata"]["name"] == f"nodefleet-{shard.group}"
        assert shard.bytes == argocd_object_bytes(doc, (f.application for f in shard.folders))
        assert shard.bytes < ARGOCD_OBJECT_BUDGET < ETCD_REQUEST_LIMIT
        assert {f.management_cluster for f in shard.folders} == {shard.group}
        steps = doc["spec"]["strategy"]["rollingSync"]["steps"]
        waves = [WAVES.index(s["matchExpressions"][0]["values"][0].split("-", 1)[1]) for s in steps]
        assert waves == sorted(waves)  # in wave order, a step only for what the shard has
        assert {w for w in waves} == {WAVES.index(f.wave) for f in shard.folders}
        seen += [p["path"] for p in doc["spec"]["generators"][0]["git"]["files"]]
    assert sorted(seen) == sorted(
        f"rendered/{f.stack}/{f.target}/argocd-ignore-differences" for f in all_folders
    )


def test_a_group_too_large_for_one_applicationset_is_split_into_whole_stacks() -> None:
    all_folders = fleet_folders(400, management_clusters=1)
    docs, shards = _appsets(all_folders, budget=200 * 1024)
    assert len(docs) > 1 and all(s.bytes <= 200 * 1024 for s in shards)
    assert [d["metadata"]["name"] for d in docs][:2] == ["nodefleet-mgmt-000-0", "nodefleet-mgmt-000-1"]
    for shard in shards:  # a hosted side in the same ApplicationSet as its management side
        assert {f.stack for f in shard.folders if f.side == "hosted"} <= {
            f.stack for f in shard.folders if f.side == "management"
        }
    with pytest.raises(
        WiringError, match=r"above nodefleet's budget of 1,024 bytes under etcd's request limit"
    ):
        _appsets(all_folders, budget=1024)


def test_the_upgrade_wait_reads_every_shard(monkeypatch: pytest.MonkeyPatch) -> None:
    """`fleet upgrade --push` reads each Application's own ApplicationSet (its owner): one read per shard."""
    from cli import gitops_wait

    all_folders = fleet_folders(2000)
    _, shards = _appsets(all_folders)
    owner = {f.application: s.name for s in shards for f in s.folders}
    sha = "a" * 40
    read: list[str] = []

    def fake_read(api: Any, target: Any) -> dict[str, Any]:
        read.append(f"{target.kind}/{target.name}")
        if target.kind == "ApplicationSet":
            apps = [f.application for s in shards if s.name == target.name for f in s.folders]
            return {
                "metadata": {"name": target.name},
                "spec": {"strategy": {"type": "RollingSync"}},
                "status": {
                    "applicationStatus": [
                        {"application": a, "status": "Healthy", "step": "1", "targetRevisions": [sha]}
                        for a in apps
                    ]
                },
            }
        return {
            "metadata": {
                "name": target.name,
                "ownerReferences": [{"kind": "ApplicationSet", "name": owner[target.name]}],
            },
            "status": {"sync": {"revision": sha, "status": "Synced"}, "health": {"status": "Healthy"}},
        }

    monkeypatch.setattr(gitops_wait, "_read", fake_read)
    readings = gitops_wait.read_once(None, gitops_wait.targets("argocd", all_folders), "main", sha, None)
    assert all(r.state == "applied" for r in readings) and len(readings) == len(all_folders)
    assert sorted(r for r in read if r.startswith("ApplicationSet/")) == sorted(
        f"ApplicationSet/{s.name}" for s in shards
    )


def test_gitops_shards_by_the_registrys_groups_and_labels_the_controller_shards(tmp_path: Path) -> None:
    """The example fleet (three management clusters), sharded on request: an ApplicationSet per management
    cluster, each Kustomization and Argo CD cluster on its group's controller shard."""
    fleet = Path(__file__).resolve().parent / "regional"
    result = nodefleet(
        "gitops", "--stacks-dir", str(fleet), "--out", str(tmp_path), "--argocd-sharding", "group",
        "--controller-shards", "2",
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    assert "note: Argo CD: 3 ApplicationSets, one per management cluster group;" in result.stderr
    appsets = [d for d in yaml.safe_load_all((tmp_path / "argocd" / "applicationset.yaml").read_text()) if d]
    assert [a["metadata"]["name"] for a in appsets] == [
        "nodefleet-mgmt-euw1-a",
        "nodefleet-mgmt-use2-a",
        "nodefleet-mgmt-use2-b",
    ]
    flux = [d for d in yaml.safe_load_all((tmp_path / "flux" / "kustomizations.yaml").read_text()) if d]
    for k in flux[1:]:
        mc = k["metadata"]["labels"]["nodefleet.io/management-cluster"]
        assert k["metadata"]["labels"][FLUX_SHARD_LABEL] == controller_shard(mc, 2)
    script = (tmp_path / "secrets.sh").read_text()
    for mc in ("mgmt-use2-a", "mgmt-use2-b", "mgmt-euw1-a"):
        assert (
            f"--name {mc} --upsert --yes --shard {controller_shard(mc, 2).removeprefix('shard-')}" in script
        )


def test_gitops_writes_the_empty_folder_the_barriers_apply(tmp_path: Path) -> None:
    """The folder belongs to the wiring: a render (by `render` or by `pulumi up`) has nothing of it."""
    from cli.gitops import write_barrier_folder

    assert write_barrier_folder(tmp_path) is True
    assert (tmp_path / BARRIER_FOLDER / "README").read_text() == BARRIER_README
    assert [p.name for p in (tmp_path / BARRIER_FOLDER).iterdir()] == ["README"]  # no manifest in it
    assert write_barrier_folder(tmp_path) is False  # unchanged: not written again
