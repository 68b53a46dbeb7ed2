"""A generated fleet of hosted clusters on several management API servers, through the real GitOps controllers
(tests/gitopsctl.py): what ``tests/test_gitops_scale.py`` asserts and ``bench/gitops_scale.py`` measures.

The fleet: ``stacks`` stack files of ``per_stack`` hosted clusters each (the ``hosted`` example without
AutoNode, renamed as ``bench.fleet``'s generator renames it), so one render folder per cluster, all on the
management clusters ``mgmt-000`` ... of a registry beside the stack files, a cluster to each in turn. The first
stack is the canary wave, the next sixth early, the last sixth last, the rest main. It is published by
``scripts/pipeline publish`` and wired by ``python -m nodefleet gitops --argocd-sharding group`` (one Argo CD
ApplicationSet per management cluster; Flux barrier Kustomizations for the waves of more than 10 folders), and
the wiring's ``.nodefleet-barrier`` folder committed to the rendered branch, as docs/gitops.md tells users.

:func:`roll_out` applies the wiring of one tool and polls until every folder is applied at the commit and
healthy, playing HyperShift (every HostedCluster and NodePool gets the status its controller writes), and
checks at every poll that no folder is on its API server before every folder of the waves before it is applied
and healthy, as the tool reports it (Argo CD: within its shard, the only order Argo CD keeps between
ApplicationSets). It reads the API servers and the hub with plain HTTP requests (no client objects per poll: the
poll is the test's own CPU, not the controllers'), and measures what the controllers spent: CPU and memory of
each process from ``/proc``, the time to each wave, the largest object the tools wrote.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from tests.gitopsctl import ARGOCD_NAMESPACE, FLUX_NAMESPACE, Controllers
from tests.gitopsfleet import (
    BRANCH,
    Repo,
    _current,
    git,
    healthy_status,
)
from tests.patience import STALL, Patience
from tests.testcluster import ApiServer, TestClusters

#: The wave of each generated stack, by its place in the fleet: the canary first, then early, main, last.
WAVE_ORDER = ("canary", "early", "main", "last")
HYPERSHIFT = "/apis/hypershift.openshift.io/v1beta1"
NAMESPACE = "clusters"
#: Seconds between the test's polls. Each poll lists every HostedCluster and NodePool and the tool's objects on
#: the hub, whole: at 1 s apart the test's own share was 42 of the two rollouts' 445
#: CPU-seconds at 200 folders, besides what the API servers spent answering.
POLL = 2.0


def management_cluster(m: int) -> str:
    return f"mgmt-{m:03d}"


def stack_wave(s: int, stacks: int) -> str:
    edge = max(1, stacks // 6)
    if s == 0:
        return "canary"
    if s <= edge:
        return "early"
    return "last" if s >= stacks - edge else "main"


@dataclass(frozen=True)
class Folder:
    stack: str
    cluster: str
    wave: str
    management_cluster: str

    @property
    def name(self) -> str:
        """Its Flux Kustomization's and Argo CD Application's name."""
        return f"nodefleet-{self.stack}-{self.cluster}"


def write_fleet(directory: Path, stacks: int, per_stack: int, management_clusters: int) -> list[Folder]:
    """The stack files and the registry in ``directory``; the render folders they make."""
    from bench.fleet import scaled_hosted, write_registry

    write_registry(directory, management_clusters)
    folders = []
    for s in range(stacks):
        clusters = []
        for j in range(per_stack):
            fleet = scaled_hosted(s * per_stack + j, management_clusters)
            cluster = copy.deepcopy(fleet["clusters"][0])
            cluster.pop("autoNode", None)  # one folder a cluster: its management side
            clusters.append(cluster)
            folders.append(
                Folder(f"s{s:03d}", cluster["name"], stack_wave(s, stacks), cluster["managementCluster"])
            )
        fleet = {**fleet, "clusters": clusters, "wave": stack_wave(s, stacks)}
        text = yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}, sort_keys=False)
        (directory / f"Pulumi.s{s:03d}.yaml").write_text(text)
    return folders


@dataclass
class Fleet:
    repo: Repo
    commit: str
    folders: list[Folder]
    #: management cluster name -> its API server
    servers: dict[str, ApiServer]
    #: tool -> the wiring's documents; "argocd-cm" -> the health checks
    wiring: dict[str, list[dict[str, Any]]]


@contextlib.contextmanager
def published(
    ctl: Controllers,
    clusters: TestClusters,
    where: Path,
    stacks: int,
    per_stack: int,
    management_clusters: int = 4,
    name: str = "scale",
) -> Iterator[Fleet]:
    """The fleet written, published and wired, and one API server per management cluster (sharing the session's
    etcd); the servers stopped after."""
    with ExitStack() as stop:
        servers = {
            management_cluster(m): stop.enter_context(clusters.fresh(f"{name}-{management_cluster(m)}"))
            for m in range(management_clusters)
        }
        staging = where / "stacks"
        staging.mkdir(parents=True)
        folders = write_fleet(staging, stacks, per_stack, management_clusters)
        texts = {p.name.removeprefix("Pulumi.").removesuffix(".yaml"): p.read_text()
                 for p in sorted(staging.glob("Pulumi.*.yaml"))}  # fmt: skip
        repo = Repo.create(where / "repo", ctl.repository(name), texts)
        (repo.path / "stacks" / "nodefleet-fleet.yaml").write_text(
            (staging / "nodefleet-fleet.yaml").read_text()
        )
        git(repo.path, "add", "-A")
        git(repo.path, "commit", "-q", "-m", "the management clusters")
        repo.publish()
        wiring = repo.gitops("--tool", "both", "--argocd-sharding", "group")
        commit = _commit_barrier(repo)
        yield Fleet(repo, commit, folders, servers, wiring)


def _commit_barrier(repo: Repo) -> str:
    """``gitops/.nodefleet-barrier`` committed to the rendered branch and pushed (the folder Flux's barriers
    apply; ``publish`` keeps what else the branch holds); the branch's commit."""
    tree = repo.path.parent / "rendered-branch"
    git(repo.path, "worktree", "add", "-q", str(tree), BRANCH)
    barrier = repo.path / "gitops" / ".nodefleet-barrier"
    target = tree / "gitops" / ".nodefleet-barrier"
    target.mkdir(parents=True)
    for file in barrier.iterdir():
        (target / file.name).write_text(file.read_text())
    git(tree, "add", "-A", "gitops")
    git(tree, "commit", "-q", "-m", "the wiring's barrier folder")
    git(tree, "push", "-q", "origin", f"HEAD:refs/heads/{BRANCH}")
    commit = git(tree, "rev-parse", "HEAD")
    git(repo.path, "worktree", "remove", "--force", str(tree))
    return commit


# --- plain HTTP to the API servers ---------------------------------------------------------------------------


def _request(
    server: ApiServer, method: str, path: str, body: Any = None, content_type: str = "application/json"
) -> tuple[int, bytes]:
    """One request with the admin token: (status, body). A 429 (a new CRD's watch cache still filling: "storage
    is (re)initializing") is tried again after the time the API server asks for, as clients do; a request whose
    answer timed out (the API server busy with the controllers' writes), again at once: every request here is
    idempotent (GET, PUT with a resourceVersion, DELETE, a merge patch)."""
    context = ssl.create_default_context(cafile=str(server.folder / "certs" / "apiserver.crt"))
    data = None if body is None else json.dumps(body).encode()
    headers = {"Authorization": f"Bearer {server.token}", "Content-Type": content_type}
    end = time.monotonic() + STALL
    while True:
        request = urllib.request.Request(server.url + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, context=context, timeout=30) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as e:
            if e.code != 429 or time.monotonic() > end:
                return int(e.code), bytes(e.read())
            time.sleep(float(e.headers.get("Retry-After") or 1))
        except TimeoutError:
            if time.monotonic() > end:
                raise


def items(server: ApiServer, path: str) -> list[dict[str, Any]]:
    status, body = _request(server, "GET", path)
    if status == 404:
        return []
    assert status == 200, f"GET {path}: {status} {body[:300]!r}"
    return list(json.loads(body)["items"])


def sizes(server: ApiServer, path: str) -> dict[str, int]:
    """Each object of the list at ``path`` and its size as the API server serves it (JSON)."""
    return {i["metadata"]["name"]: len(json.dumps(i, separators=(",", ":"))) for i in items(server, path)}


def play_hypershift(servers: dict[str, ApiServer], hosted: dict[str, list[dict[str, Any]]]) -> int:
    """Every HostedCluster and NodePool gets the status HyperShift writes once it is done (``healthy_status``),
    unless it has it already; how many were written. ``hosted``: each server's HostedClusters as the poll just
    read them (:func:`hosted_on`)."""
    written = 0
    for name, server in servers.items():
        for plural in ("hostedclusters", "nodepools"):
            lives = hosted[name] if plural == "hostedclusters" else items(server, f"{HYPERSHIFT}/{plural}")
            for live in lives:
                if _current(live):
                    continue
                live["status"] = healthy_status(live)
                meta = live["metadata"]
                path = f"{HYPERSHIFT}/namespaces/{meta['namespace']}/{plural}/{meta['name']}/status"
                status, _ = _request(server, "PUT", path, live)
                written += status == 200  # 409: the tool changed it meanwhile; the next poll writes
    return written


def hosted_on(servers: dict[str, ApiServer]) -> dict[str, list[dict[str, Any]]]:
    """Each management API server's HostedClusters: server name -> the objects."""
    return {name: items(server, f"{HYPERSHIFT}/hostedclusters") for name, server in servers.items()}


def on_servers(hosted: dict[str, list[dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """Each HostedCluster of :func:`hosted_on`'s reading: name -> (server, the object)."""
    return {
        live["metadata"]["name"]: {"server": name, "live": live}
        for name, lives in hosted.items()
        for live in lives
    }


# --- what the tools report -----------------------------------------------------------------------------------

KUSTOMIZATIONS = f"/apis/kustomize.toolkit.fluxcd.io/v1/namespaces/{FLUX_NAMESPACE}/kustomizations"
GIT_REPOSITORIES = f"/apis/source.toolkit.fluxcd.io/v1/namespaces/{FLUX_NAMESPACE}/gitrepositories"
APPLICATIONS = f"/apis/argoproj.io/v1alpha1/namespaces/{ARGOCD_NAMESPACE}/applications"
APPLICATION_SETS = f"/apis/argoproj.io/v1alpha1/namespaces/{ARGOCD_NAMESPACE}/applicationsets"


def _condition(obj: dict[str, Any], kind: str) -> dict[str, Any]:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c.get("type") == kind), {})


def healthy(hub: ApiServer, tool: str, commit: str) -> dict[str, bool]:
    """Per Kustomization or Application: applied at ``commit`` and healthy, as the tool reports it."""
    out = {}
    if tool == "flux":
        for k in items(hub, KUSTOMIZATIONS):
            status = k.get("status") or {}
            ok = _condition(k, "Ready").get("status") == "True"
            out[k["metadata"]["name"]] = ok and status.get("lastAppliedRevision", "").endswith(commit)
    else:
        for a in items(hub, APPLICATIONS):
            status = a.get("status") or {}
            sync, health = status.get("sync") or {}, status.get("health") or {}
            out[a["metadata"]["name"]] = (sync.get("status") == "Synced" and sync.get("revision") == commit
                                          and health.get("status") == "Healthy")  # fmt: skip
    return out


# --- what the controllers spend ------------------------------------------------------------------------------

TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User and system CPU of ``pid`` and of its children it has waited for (git, for Argo CD's repo server)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return sum(int(f) for f in fields[11:15]) / TICK


def memory_mib(pid: int) -> dict[str, float]:
    """Resident memory now and its peak (``VmRSS``, ``VmHWM``), MiB."""
    out = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            out[key] = round(int(value.split()[0]) / 1024, 1)
    return out


def processes(ctl: Controllers, tool: str, fleet: Fleet, clusters: TestClusters) -> dict[str, int]:
    """The processes whose work the rollout is: the tool's controllers, the Git server, the hub's and the
    management clusters' API servers and the etcd they share."""
    names = ("source-controller", "kustomize-controller") if tool == "flux" else (
        "argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller", "redis")  # fmt: skip
    out = {n: ctl.processes[n].pid for n in (*names, "git-server")}
    out["kube-apiserver (hub)"] = ctl.hub.process.pid
    for name, server in fleet.servers.items():
        out[f"kube-apiserver ({name})"] = server.process.pid
    assert clusters.etcd is not None
    out["etcd (shared)"] = clusters.etcd.pid
    return out


@dataclass
class Rollout:
    tool: str
    folders: int
    #: seconds from the wiring applied to the last folder applied and healthy, and to each wave's last
    seconds: float = 0.0
    waves: dict[str, float] = field(default_factory=dict)
    cpu: dict[str, float] = field(default_factory=dict)
    #: the test's own CPU over the rollout: its polls, and its playing HyperShift
    test_cpu: float = 0.0
    memory: dict[str, dict[str, float]] = field(default_factory=dict)
    #: kind -> (name, bytes) of the largest object of the wiring's kinds the tool wrote (with its status)
    largest: dict[str, tuple[str, int]] = field(default_factory=dict)
    polls: int = 0
    #: folders seen on their API server before the waves before them were healthy: (folder, what was not)
    out_of_order: list[str] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        controllers = {
            k: v for k, v in self.cpu.items() if not k.startswith(("kube-apiserver", "etcd", "git"))
        }
        return {
            "tool": self.tool,
            "folders": self.folders,
            "secondsToAllApplied": round(self.seconds, 1),
            "secondsToWave": {w: round(s, 1) for w, s in self.waves.items()},
            "controllerCpuSeconds": round(sum(controllers.values()), 1),
            "cpuSeconds": {k: round(v, 1) for k, v in self.cpu.items()},
            "testCpuSeconds": round(self.test_cpu, 1),
            "memoryMiB": self.memory,
            "largestObjects": {k: {"name": n, "bytes": b} for k, (n, b) in self.largest.items()},
        }


def roll_out(ctl: Controllers, clusters: TestClusters, fleet: Fleet, tool: str) -> Rollout:
    """The tool's wiring applied to the hub with the credentials it reads, until every folder is applied at the
    fleet's commit and healthy (every Flux barrier too); the order checked at every poll, the work measured."""
    hub, servers, commit = ctl.hub, fleet.servers, fleet.commit
    wave_of = {f.name: WAVE_ORDER.index(f.wave) for f in fleet.folders}
    by_cluster = {f.cluster: f for f in fleet.folders}
    result = Rollout(tool, len(fleet.folders))
    pids = processes(ctl, tool, fleet, clusters)
    before = {n: cpu_seconds(p) for n, p in pids.items()}
    own = time.process_time()
    if tool == "flux":
        for name, server in servers.items():
            ctl.flux_kubeconfig_secret(server, f"{name}-kubeconfig", "value")
    else:
        ctl.apply(fleet.wiring["argocd-cm"], manager="nodefleet")
        for name, server in servers.items():
            ctl.argocd_cluster(server, name)
    t0 = time.monotonic()
    ctl.apply(fleet.wiring[tool])
    if tool == "flux":
        for doc in fleet.wiring[tool]:
            if (
                doc["kind"] == "GitRepository"
            ):  # one for the fleet, or one per management cluster group and more
                _annotate(hub, "/apis/source.toolkit.fluxcd.io/v1", "gitrepositories", FLUX_NAMESPACE,
                          doc["metadata"]["name"], {"reconcile.fluxcd.io/requestedAt": str(time.time())})  # fmt: skip
    else:
        for doc in fleet.wiring[tool]:
            _annotate(hub, "/apis/argoproj.io/v1alpha1", "applicationsets", ARGOCD_NAMESPACE,
                      doc["metadata"]["name"], {"argocd.argoproj.io/application-set-refresh": "true"})  # fmt: skip
    healthy_ever: set[str] = set()
    applied_ever: set[str] = set()
    patience = Patience()
    while True:
        result.polls += 1
        hosted = hosted_on(servers)  # read first: what is on a server now was applied before what follows
        applied = on_servers(hosted)
        report = healthy(hub, tool, commit)
        healthy_ever |= {n for n, ok in report.items() if ok}
        applied_ever |= set(applied)
        for cluster, where in applied.items():
            folder = by_cluster[cluster]
            waited = [g.name for g in fleet.folders
                      if wave_of[g.name] < wave_of[folder.name] and g.name not in healthy_ever
                      and (tool == "flux" or g.management_cluster == folder.management_cluster)]  # fmt: skip
            if waited and folder.name not in {o.split(" ")[0] for o in result.out_of_order}:
                result.out_of_order.append(f"{folder.name} on {where['server']} before {sorted(waited)[:5]}")
        now = time.monotonic() - t0
        for w, wave in enumerate(WAVE_ORDER):
            names = [f.name for f in fleet.folders if wave_of[f.name] == w]
            if names and wave not in result.waves and all(n in healthy_ever for n in names):
                result.waves[wave] = now
        if report and all(report.values()) and all(f.name in report for f in fleet.folders):
            result.seconds = now
            break
        if patience.over((len(report), len(healthy_ever), len(applied_ever))):
            missing = sorted(n for n, ok in report.items() if not ok)
            raise AssertionError(
                f"{tool}: {len(missing)} of {len(report)} not applied at {commit[:12]} and healthy, "
                f"{patience}: {missing[:10]}\n{ctl.tails(None, 15)}"
            )
        play_hypershift(servers, hosted)
        time.sleep(POLL)
    result.cpu = {n: cpu_seconds(p) - before[n] for n, p in pids.items()}
    result.test_cpu = time.process_time() - own
    result.memory = {n: memory_mib(p) for n, p in pids.items()}
    kinds = {"flux": {"Kustomization": KUSTOMIZATIONS},
             "argocd": {"ApplicationSet": APPLICATION_SETS, "Application": APPLICATIONS}}[tool]  # fmt: skip
    for kind, path in kinds.items():
        name, size = max(sizes(hub, path).items(), key=lambda kv: kv[1])
        result.largest[kind] = (name, size)
    return result


def _annotate(
    server: ApiServer, group: str, plural: str, namespace: str, name: str, notes: dict[str, str]
) -> None:
    path = f"{group}/namespaces/{namespace}/{plural}/{name}"
    status, body = _merge(server, path, {"metadata": {"annotations": notes}})
    assert status == 200, f"PATCH {path}: {status} {body[:300]!r}"


def remove(ctl: Controllers, fleet: Fleet, tool: str) -> None:
    """The tool's wiring deleted from the hub, orphaning what it applied (finalizers dropped), its credentials
    deleted, and the management clusters emptied (the namespace ``clusters`` deleted and gone), so that the next
    rollout starts from nothing."""
    hub = ctl.hub
    paths = {
        "flux": (KUSTOMIZATIONS, GIT_REPOSITORIES),
        "argocd": (APPLICATION_SETS, APPLICATIONS),
    }[tool]
    for path in paths:
        for item in items(hub, path):
            one = f"{path}/{item['metadata']['name']}"
            _request(hub, "DELETE", one)
            _merge(hub, one, {"metadata": {"finalizers": None}})
    for name in fleet.servers:
        secret = f"{name}-kubeconfig" if tool == "flux" else f"cluster-{name}"
        namespace = FLUX_NAMESPACE if tool == "flux" else ARGOCD_NAMESPACE
        _request(hub, "DELETE", f"/api/v1/namespaces/{namespace}/secrets/{secret}")
    for server in fleet.servers.values():
        _request(server, "DELETE", f"/api/v1/namespaces/{NAMESPACE}")

    def holding() -> dict[str, ApiServer]:
        return {n: s for n, s in fleet.servers.items() if _request(s, "GET", f"/api/v1/namespaces/{NAMESPACE}")[0] != 404}  # fmt: skip

    patience = Patience()
    while left := holding():
        assert not patience.over(lambda: (tuple(left), sum(map(len, hosted_on(left).values())))), (
            f"namespace {NAMESPACE} not gone from {sorted(left)}: {patience}"
        )
        time.sleep(POLL)


def _merge(server: ApiServer, path: str, patch: dict[str, Any]) -> tuple[int, bytes]:
    return _request(server, "PATCH", path, patch, "application/merge-patch+json")
