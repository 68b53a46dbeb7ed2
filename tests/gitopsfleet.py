"""A fleet in a GitOps repository, applied by the real controllers (tests/gitopsctl.py): what the GitOps tests
share.

:class:`Repo` is a scratch copy of the project with the stack files of a test, in a git repository whose
``origin`` is the fixture's Git server: ``publish`` runs ``scripts/pipeline publish`` (``fleet render`` of every
stack into a fresh tree, committed to ``nodefleet-rendered`` and pushed) and ``gitops`` runs ``python -m
nodefleet gitops``, exactly as a user does. The rest reads what the tools report (Flux's ``Ready`` and
``lastAppliedRevision``, Argo CD's sync revision and health), waits for it as long as the tools advance
(tests/patience.py), with the controllers' logs in the failure message, and compares what landed with what was
rendered.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import shutil
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from kubernetes.dynamic.exceptions import ConflictError

from nodefleet.apiserver.schema import _default
from nodefleet.apiserver.store import load_index
from tests.applymode import missing_from
from tests.conftest import copy_project
from tests.gitopsctl import ARGOCD_NAMESPACE, FLUX_NAMESPACE, Controllers
from tests.patience import Patience
from tests.testcluster import PROJECT, ApiServer

BRANCH = "nodefleet-rendered"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
#: What a GitOps tool adds to the objects it applies, beside what the manifest says.
TOOL_METADATA = {
    "flux": {"labels": {"kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace"}},
    "argocd": {"annotations": {"argocd.argoproj.io/tracking-id"}},
}
#: The field managers the tools apply with.
TOOL_MANAGER = {"flux": "kustomize-controller", "argocd": "argocd-controller"}


def run(cmd: list[str], cwd: Path, timeout: float = 600, **env: str) -> subprocess.CompletedProcess[str]:
    full = {**os.environ, "PYTHON": sys.executable, **GIT_ENV, **env}
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout, env=full)


def git(cwd: Path, *args: str) -> str:
    result = run(["git", *args], cwd)
    assert result.returncode == 0, f"git {' '.join(args)}: {result.stderr}"
    return result.stdout.strip()


@dataclass
class Repo:
    """The project copy the fleet lives in, its ``origin`` on the fixture's Git server."""

    path: Path
    url: str

    @classmethod
    def create(cls, path: Path, url: str, stacks: Mapping[str, str]) -> Repo:
        """A copy of the project with ``stacks`` (name -> stack file text) as its only stacks, committed on
        ``main`` and pushed."""
        path.parent.mkdir(parents=True, exist_ok=True)
        copy_project(path)
        shutil.copytree(PROJECT / "scripts", path / "scripts")  # the pipeline's publish step
        (path / "stacks").mkdir()
        for name, text in stacks.items():
            (path / "stacks" / f"Pulumi.{name}.yaml").write_text(text)
        (path / ".gitignore").write_text("__pycache__/\n.engine/\n")
        git(path, "init", "-q", "-b", "main")
        git(path, "add", "-A")
        git(path, "commit", "-q", "-m", "the fleet")
        git(path, "remote", "add", "origin", url)
        git(path, "push", "-q", "origin", "main")
        return cls(path, url)

    def nodefleet(self, *args: str, timeout: float = 600) -> subprocess.CompletedProcess[str]:
        return run([sys.executable, "-m", "nodefleet", *args], self.path, timeout=timeout)

    def publish(self) -> str:
        """``scripts/pipeline publish``: every stack rendered and pushed to ``nodefleet-rendered``; the commit."""
        result = run(["scripts/pipeline", "publish", BRANCH], self.path)
        assert result.returncode == 0, result.stdout + result.stderr
        return git(self.path, "rev-parse", BRANCH)

    def gitops(self, *args: str) -> dict[str, list[dict[str, Any]]]:
        """``python -m nodefleet gitops --repo-url <origin> --out gitops`` (plus ``args``); the documents of
        each file it wrote, by tool."""
        result = self.nodefleet("gitops", "--repo-url", self.url, "--out", "gitops", *args)
        assert result.returncode == 0, result.stdout + result.stderr
        out = {}
        for tool, rel in (
            ("argocd", "argocd/applicationset.yaml"),
            ("argocd-cm", "argocd/argocd-cm.yaml"),
            ("flux", "flux/kustomizations.yaml"),
        ):
            file = self.path / "gitops" / rel
            if file.exists():
                out[tool] = [d for d in yaml.safe_load_all(file.read_text()) if d]
        return out

    def rendered(self, commit: str) -> dict[str, list[dict[str, Any]]]:
        """The manifests of each render folder at ``commit`` (``rendered/<stack>/<folder>`` -> objects)."""
        names = git(self.path, "ls-tree", "-r", "--name-only", commit, "rendered").splitlines()
        out: dict[str, list[dict[str, Any]]] = {}
        for name in names:
            parts = name.split("/")
            if not name.endswith(".yaml") or len(parts) < 5:
                continue
            folder = "/".join(parts[:3])
            out.setdefault(folder, []).append(yaml.safe_load(git(self.path, "show", f"{commit}:{name}")))
        return out


# --- reading the tools' status --------------------------------------------------------------------------


def get(server: ApiServer | Any, api_version: str, kind: str, name: str, namespace: str | None = None) -> Any:
    """The live object as a dict, or None when it does not exist."""
    from kubernetes.dynamic.exceptions import NotFoundError

    client = server if not isinstance(server, ApiServer) else server.dynamic()
    api = client.resources.get(api_version=api_version, kind=kind)
    try:
        return client.get(api, name=name, namespace=namespace).to_dict()
    except NotFoundError:
        return None


def listed(client: Any, api_version: str, kind: str, namespace: str | None = None) -> list[dict[str, Any]]:
    api = client.resources.get(api_version=api_version, kind=kind)
    return [i.to_dict() for i in client.get(api, namespace=namespace).items]


def condition(obj: Mapping[str, Any] | None, kind: str) -> dict[str, Any]:
    for c in ((obj or {}).get("status") or {}).get("conditions") or []:
        if c.get("type") == kind:
            return dict(c)
    return {}


def kustomizations(ctl: Controllers) -> dict[str, dict[str, Any]]:
    return {
        k["metadata"]["name"]: k
        for k in listed(ctl.hub_client, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", FLUX_NAMESPACE)
    }


def applications(ctl: Controllers) -> dict[str, dict[str, Any]]:
    return {
        a["metadata"]["name"]: a
        for a in listed(ctl.hub_client, "argoproj.io/v1alpha1", "Application", ARGOCD_NAMESPACE)
    }


def argocd_live_state(
    ctl: Controllers, app: str, kind: str, name: str, namespace: str
) -> dict[str, Any] | None:
    """The live state of one of ``app``'s objects as Argo CD last compared it (``argocd app manifests --source
    live``: the API server's ``managed-resources``, which the application controller stores after each
    comparison from its cache of the cluster). A write Argo CD has not seen yet is not in it."""
    address = ctl.argocd_server()
    secret = get(ctl.hub_client, "v1", "Secret", "argocd-initial-admin-secret", ARGOCD_NAMESPACE)
    password = base64.b64decode(secret["data"]["password"]).decode()
    login = urllib.request.Request(
        f"http://{address}/api/v1/session",
        data=json.dumps({"username": "admin", "password": password}).encode(),
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(login, timeout=30) as response:
        token = json.load(response)["token"]
    query = urllib.parse.urlencode({"appNamespace": ARGOCD_NAMESPACE, "kind": kind, "name": name,
                                    "namespace": namespace})  # fmt: skip
    request = urllib.request.Request(
        f"http://{address}/api/v1/applications/{app}/managed-resources?{query}",
        headers={"Authorization": f"Bearer {token}"},
    )
    with urllib.request.urlopen(request, timeout=30) as response:
        items = json.load(response).get("items") or []
    for item in items:
        if item.get("kind") == kind and item.get("name") == name and item.get("liveState"):
            return json.loads(item["liveState"])  # type: ignore[no-any-return]
    return None


def flux_summary(ctl: Controllers) -> str:
    lines = []
    for name, k in sorted(kustomizations(ctl).items()):
        ready = condition(k, "Ready")
        revision = (k.get("status") or {}).get("lastAppliedRevision", "")
        lines.append(f"  {name}: Ready={ready.get('status')} {ready.get('reason')}: "
                     f"{(ready.get('message') or '')[:300]} (applied {revision})")  # fmt: skip
    for g in listed(ctl.hub_client, "source.toolkit.fluxcd.io/v1", "GitRepository", FLUX_NAMESPACE):
        ready = condition(g, "Ready")
        artifact = ((g.get("status") or {}).get("artifact") or {}).get("revision", "")
        lines.append(f"  GitRepository {g['metadata']['name']}: Ready={ready.get('status')} "
                     f"{(ready.get('message') or '')[:200]} (artifact {artifact})")  # fmt: skip
    return "\n".join(lines)


def argocd_summary(ctl: Controllers) -> str:
    lines = []
    for name, a in sorted(applications(ctl).items()):
        status = a.get("status") or {}
        sync, health = status.get("sync") or {}, status.get("health") or {}
        conditions = "; ".join(
            f"{c.get('type')}: {c.get('message', '')[:200]}" for c in status.get("conditions") or []
        )
        op = status.get("operationState") or {}
        lines.append(f"  {name}: sync={sync.get('status')} at {str(sync.get('revision', ''))[:12]} "
                     f"health={health.get('status')} {health.get('message', '')} "
                     f"operation={op.get('phase')} {str(op.get('message', ''))[:200]} {conditions}")  # fmt: skip
    for s in listed(ctl.hub_client, "argoproj.io/v1alpha1", "ApplicationSet", ARGOCD_NAMESPACE):
        status = s.get("status") or {}
        conds = "; ".join(f"{c.get('type')}={c.get('status')} {c.get('reason')}: {c.get('message', '')[:200]}"
                          for c in status.get("conditions") or [])  # fmt: skip
        steps = ", ".join(f"{a.get('application')}:{a.get('status')}@{a.get('step')}"
                          for a in status.get("applicationStatus") or [])  # fmt: skip
        lines.append(f"  ApplicationSet {s['metadata']['name']}: {conds} [{steps}]")
    return "\n".join(lines)


def applied_at(ctl: Controllers, tool: str, commit: str) -> dict[str, bool]:
    """Per wiring object (Kustomization or Application), whether it reports ``commit`` applied and healthy
    (Flux ``lastAppliedRevision`` and ``Ready``; Argo CD sync revision, ``Synced`` and ``Healthy``)."""
    out: dict[str, bool] = {}
    if tool == "flux":
        for name, k in kustomizations(ctl).items():
            status = k.get("status") or {}
            ok = condition(k, "Ready").get("status") == "True"
            out[name] = status.get("lastAppliedRevision", "").endswith(commit) and ok
    else:
        for name, a in applications(ctl).items():
            status = a.get("status") or {}
            sync, health = status.get("sync") or {}, status.get("health") or {}
            out[name] = (sync.get("status") == "Synced" and sync.get("revision") == commit
                         and health.get("status") == "Healthy")  # fmt: skip
    return out


def wait_for(what: str, check: Callable[[], Any], ctl: Controllers, tool: str) -> Any:
    """Poll ``check`` until it returns something true; its value. Fails naming ``what``, with the tool's objects
    and the tails of its controllers' logs, once the tool's objects (:func:`progress`) stop changing for
    :data:`tests.patience.STALL` seconds: a slower machine makes each step slower, not the wait wrong."""
    patience = Patience()
    while True:
        value = check()
        if value:
            return value
        if patience.over(lambda: progress(ctl, tool)):
            summary = flux_summary(ctl) if tool == "flux" else argocd_summary(ctl)
            names = ["source-controller", "kustomize-controller"] if tool == "flux" else [
                "argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller"]  # fmt: skip
            raise AssertionError(f"{what}: {patience}.\n{summary}\n{ctl.tails(names, 40)}")
        time.sleep(0.5)


def progress(ctl: Controllers, tool: str) -> frozenset[tuple[Any, ...]]:
    """What the tool reports of its work, without the times it writes on every reconcile: each Kustomization's
    ``Ready`` status and reason and applied revision; each Application's sync status and revision, health and
    operation phase, and each ApplicationSet's step statuses. It changes while the tool advances."""
    if tool == "flux":
        return frozenset(
            (
                name,
                ready.get("status"),
                ready.get("reason"),
                (k.get("status") or {}).get("lastAppliedRevision"),
            )
            for name, k in kustomizations(ctl).items()
            for ready in [condition(k, "Ready")]
        )
    out: set[tuple[Any, ...]] = set()
    for name, a in applications(ctl).items():
        status = a.get("status") or {}
        sync, health = status.get("sync") or {}, status.get("health") or {}
        out.add((name, sync.get("status"), str(sync.get("revision")), health.get("status"),
                 (status.get("operationState") or {}).get("phase")))  # fmt: skip
    for s in listed(ctl.hub_client, "argoproj.io/v1alpha1", "ApplicationSet", ARGOCD_NAMESPACE):
        for step in (s.get("status") or {}).get("applicationStatus") or []:
            out.add((s["metadata"]["name"], step.get("application"), step.get("status"), step.get("step")))
    return frozenset(out)


def refresh_flux(ctl: Controllers, name: str = "nodefleet-rendered") -> None:
    """Ask source-controller to fetch now (``flux reconcile source git``; a webhook Receiver does the same)."""
    annotate(ctl, "source.toolkit.fluxcd.io/v1", "GitRepository", name, FLUX_NAMESPACE,
             {"reconcile.fluxcd.io/requestedAt": str(time.time())})  # fmt: skip


def refresh_argocd(ctl: Controllers, appset: str = "nodefleet") -> None:
    """Ask the ApplicationSet controller to read Git now, and each Application to compare again (what Argo
    CD's Git webhook does)."""
    annotate(ctl, "argoproj.io/v1alpha1", "ApplicationSet", appset, ARGOCD_NAMESPACE,
             {"argocd.argoproj.io/application-set-refresh": "true"})  # fmt: skip
    for name in applications(ctl):
        annotate(ctl, "argoproj.io/v1alpha1", "Application", name, ARGOCD_NAMESPACE,
                 {"argocd.argoproj.io/refresh": "normal"})  # fmt: skip


def annotate(ctl: Controllers, api_version: str, kind: str, name: str, namespace: str,
             annotations: dict[str, str]) -> None:  # fmt: skip
    api = ctl.hub_client.resources.get(api_version=api_version, kind=kind)
    ctl.hub_client.patch(api, name=name, namespace=namespace, body={"metadata": {"annotations": annotations}},
                         content_type="application/merge-patch+json")  # fmt: skip


# --- what landed ----------------------------------------------------------------------------------------


def predicted(manifest: Mapping[str, Any]) -> dict[str, Any]:
    """``manifest`` with the defaults the API server gives it: its CRD's (crd-schema's defaulting), or for a
    Namespace the finalizer and the name label every Namespace gets."""
    out = copy.deepcopy(dict(manifest))
    if out["apiVersion"] == "v1" and out["kind"] == "Namespace":
        out.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
        labels = out["metadata"].setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", out["metadata"]["name"])
        return out
    selection = load_index().for_manifest(f"kubernetes:{out['apiVersion']}:{out['kind']}", out)
    if selection is not None and not selection.patch:
        _default(out, selection.crd.schema)
    return out


@dataclass
class Landed:
    """Where one rendered object is on its API server, and how it differs from the render."""

    manifest: dict[str, Any]
    live: dict[str, Any] | None
    problems: list[str] = field(default_factory=list)


def compare(
    manifest: Mapping[str, Any], live: Mapping[str, Any] | None, tool: str, shared: bool = False
) -> list[str]:
    """How ``live`` differs from ``manifest`` after the API server's defaulting: its spec (everything but
    metadata and status) must be equal, the manifest's labels and annotations present, and the only other
    labels and annotations the tool's own. ``shared``: an object the cluster had before (the MCO's
    ``MachineConfiguration``), where the manifest's fields must be in it beside its owner's."""
    if live is None:
        return ["not on the API server"]
    want = predicted(manifest)
    problems = []
    body = {k: v for k, v in live.items() if k not in ("metadata", "status")}
    expected = {k: v for k, v in want.items() if k != "metadata"}
    if shared:
        problems += [f"{p} (rendered, not on the API server)" for p in missing_from(expected, body)]
    elif body != expected:
        problems.append(f"body {json.dumps(body, sort_keys=True)[:400]} != rendered+defaults "
                        f"{json.dumps(expected, sort_keys=True)[:400]}")  # fmt: skip
    meta, live_meta = want["metadata"], live["metadata"]
    for key in ("labels", "annotations"):
        declared = meta.get(key) or {}
        got = live_meta.get(key) or {}
        for name, value in declared.items():
            if got.get(name) != value:
                problems.append(f"metadata.{key}[{name}] = {got.get(name)!r}, rendered {value!r}")
        extra = set(got) - set(declared) - TOOL_METADATA[tool].get(key, set())
        if extra and not shared:
            problems.append(f"metadata.{key}: {sorted(extra)} neither rendered nor {tool}'s own")
    return problems


def managers(live: Mapping[str, Any]) -> set[str]:
    return {m.get("manager", "") for m in live["metadata"].get("managedFields") or []}


def servers_by_folder(folders: Iterable[str], servers: Mapping[str, ApiServer]) -> dict[str, ApiServer]:
    """``rendered/<stack>/<folder>`` -> the API server it must land on (by the folder's last part)."""
    return {f: servers[f.rsplit("/", 1)[1]] for f in folders}


# --- playing the clusters' own controllers ----------------------------------------------------------------

NOW = "2026-11-27T10:00:00Z"
#: The field manager each kind's status is written with when a test plays its controller.
STATUS_WRITERS = {
    ("karpenter.sh/v1", "NodePool"): "karpenter",
    ("karpenter.hypershift.openshift.io/v1", "OpenshiftEC2NodeClass"): "karpenter",
    ("karpenter.k8s.aws/v1", "EC2NodeClass"): "karpenter",
    ("hypershift.openshift.io/v1beta1", "HostedCluster"): "hypershift-operator",
    ("hypershift.openshift.io/v1beta1", "NodePool"): "hypershift-operator",
    ("machine.openshift.io/v1beta1", "MachineSet"): "machineset-controller",
}


def _condition(kind: str, status: str, generation: int, message: str = "") -> dict[str, Any]:
    return {"type": kind, "status": status, "reason": "AsExpected", "message": message,
            "lastTransitionTime": NOW, "observedGeneration": generation}  # fmt: skip


def release_version(image: str) -> str:
    """``4.22.3`` of ``quay.io/openshift-release-dev/ocp-release:4.22.3-multi``."""
    return image.rsplit(":", 1)[-1].removesuffix("-multi").removesuffix("-x86_64")


def healthy_status(live: Mapping[str, Any]) -> dict[str, Any]:
    """The status the object's controller writes once it has done what the spec asks: HyperShift's for a
    HostedCluster (the release Completed, ``Available``) and a NodePool (``Ready``, its release), Karpenter's
    ``Ready``, the Machine API's available replicas."""
    kind, spec = live["kind"], live.get("spec") or {}
    generation = int(live["metadata"].get("generation", 1))
    group = live["apiVersion"].split("/")[0]
    if kind == "HostedCluster":
        image = (spec.get("release") or {}).get("image", "")
        version = release_version(image)
        history = [h for h in ((live.get("status") or {}).get("version") or {}).get("history") or []
                   if h.get("image") != image]  # fmt: skip
        entry = {"version": version, "image": image, "state": "Completed", "verified": True,
                 "startedTime": NOW, "completionTime": NOW}  # fmt: skip
        return {
            "version": {
                "desired": {"version": version, "image": image},
                "history": [entry, *history],
                "observedGeneration": generation,
                "availableUpdates": [],
            },
            "conditions": [
                _condition("Available", "True", generation),
                _condition("Progressing", "False", generation),
                _condition("Degraded", "False", generation),
            ],
        }
    if kind == "NodePool" and group == "hypershift.openshift.io":
        image = (spec.get("release") or {}).get("image", "")
        return {
            "version": release_version(image),
            "replicas": spec.get("replicas", 0),
            "conditions": [
                _condition("Ready", "True", generation),
                _condition("UpdatingVersion", "False", generation),
                _condition("UpdatingConfig", "False", generation),
            ],
        }
    if kind == "MachineSet":
        replicas = spec.get("replicas", 1)
        return {"replicas": replicas, "availableReplicas": replicas, "readyReplicas": replicas,
                "fullyLabeledReplicas": replicas, "observedGeneration": generation}  # fmt: skip
    return {"conditions": [_condition("Ready", "True", generation)]}


def _current(live: Mapping[str, Any]) -> bool:
    """The object's status already answers its latest generation."""
    status = live.get("status") or {}
    generation = live["metadata"].get("generation", 1)
    if live["kind"] == "MachineSet":
        return bool(status.get("observedGeneration") == generation)
    if live["kind"] == "HostedCluster":
        image = ((live.get("spec") or {}).get("release") or {}).get("image")
        history = (status.get("version") or {}).get("history") or [{}]
        return bool(
            history[0].get("image") == image
            and condition(live, "Available").get("observedGeneration") == generation
        )
    return bool(condition(live, "Ready").get("observedGeneration") == generation)


def play_controllers(*servers: ApiServer, holding: Iterable[str] = ()) -> int:
    """Play the clusters' own controllers once: every object of the kinds whose health gates a wave gets the
    status its controller writes when done (:func:`healthy_status`), through the status subresource with that
    controller's field manager, unless it is current already or ``<kind>/<name>`` is in ``holding`` (a
    controller still working on it). How many were written."""
    held = set(holding)
    written = 0
    for server in servers:
        client = server.dynamic()
        for (api_version, kind), manager in STATUS_WRITERS.items():
            try:
                api = client.resources.get(api_version=api_version, kind=kind)
            except Exception:
                continue
            for item in client.get(api).items:
                live = item.to_dict()
                if f"{kind}/{live['metadata']['name']}" in held or _current(live):
                    continue
                live["status"] = healthy_status(live)
                try:
                    client.replace(api.subresources["status"], body=live, field_manager=manager)
                except ConflictError:
                    # Changed since it was listed (the GitOps tool syncing it): a controller requeues and
                    # writes the next time; every caller plays the controllers inside a poll.
                    continue
                written += 1
    return written
