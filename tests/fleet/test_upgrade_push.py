"""`fleet upgrade --commit --push`: each step pushed, then waited for until the GitOps tool reports it applied,
before its gate; against a real API server (tests/testcluster.py) with the upstream Flux and Argo CD CRDs
(tests/data/gitops-crds), the objects created from what `nodefleet gitops` generates.

The tests play the controllers: a thread watches the remote's GitOps branch and, for each commit pushed, writes the
status Flux's kustomize-controller writes on every Kustomization (``lastAppliedRevision`` ``<branch>@sha1:<sha>``,
``Ready=True`` for the object's generation, through the status subresource), or the status Argo CD's application
controller writes on every Application (``sync.revision``, ``Synced``, ``Healthy``). Nothing else moves them.
"""

from __future__ import annotations

import gzip
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT, nodefleet
from tests.fleet.upgrade_repo import GIT_ENV, GITOPS, NEW, copy_repo, git, make_repo, snapshot, state, upgrade
from tests.testcluster import ApiServer, TestClusters, install_crd_documents

pytestmark = pytest.mark.apiserver

CRDS = PROJECT / "tests" / "data" / "gitops-crds"
NOW = "2026-11-26T10:40:00Z"


@pytest.fixture(scope="module")
def hub(test_clusters: TestClusters) -> Iterator[ApiServer]:
    """The cluster Argo CD and Flux run on: their CRDs and namespaces, nothing else."""
    from kubernetes import client

    with test_clusters.fresh("fleet-upgrade-gitops") as server:
        crds = [yaml.safe_load(gzip.decompress(p.read_bytes())) for p in sorted(CRDS.glob("*.yaml.gz"))]
        install_crd_documents(server, crds)
        core = client.CoreV1Api(server.api_client())
        for namespace in ("flux-system", "argocd"):
            core.create_namespace({"metadata": {"name": namespace}})
        yield server


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return make_repo(tmp_path_factory.mktemp("template"))


def _with_remote(repo: Path) -> Path:
    """A bare remote (``origin``) with both branches as they are."""
    remote = repo.parent / "remote.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(repo), str(remote)], check=True, env={**GIT_ENV})
    git(repo, "remote", "add", "origin", str(remote))
    return remote


class Controllers(threading.Thread):
    """Plays Flux's kustomize-controller or Argo CD's application controller: every commit the remote's GitOps
    branch gets, written as applied on every object, and logged (``applied <sha>``) in ``log``."""

    def __init__(self, server: ApiServer, remote: Path, tool: str, log: Path) -> None:
        super().__init__(daemon=True)
        self.server, self.remote, self.tool, self.log = server, remote, tool, log
        self.done = threading.Event()
        self.error: BaseException | None = None

    def run(self) -> None:
        from kubernetes import client

        api = client.CustomObjectsApi(self.server.api_client())
        seen = ""
        try:
            while not self.done.wait(0.05):
                sha = subprocess.run(
                    ["git", "rev-parse", f"refs/heads/{GITOPS}"],
                    cwd=self.remote,
                    capture_output=True,
                    text=True,
                ).stdout.strip()
                if sha and sha != seen:
                    # Logged before the status is written: a gate logged after it ran after the status said so.
                    with self.log.open("a") as out:
                        out.write(f"applied {sha}\n")
                    self._applied(api, sha)
                    seen = sha
        except BaseException as exc:  # reported by stop()
            self.error = exc

    def _applied(self, api: Any, sha: str) -> None:
        revision = f"{GITOPS}@sha1:{sha}"
        if self.tool == "flux":
            found = api.list_namespaced_custom_object(
                "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations"
            )
            for k in found["items"]:
                generation = k["metadata"]["generation"]
                status = {
                    "observedGeneration": generation,
                    "lastAppliedRevision": revision,
                    "lastAttemptedRevision": revision,
                    "conditions": [
                        {"type": "Ready", "status": "True", "reason": "ReconciliationSucceeded",
                         "message": f"Applied revision: {revision}", "lastTransitionTime": NOW,
                         "observedGeneration": generation},
                    ],
                }  # fmt: skip
                api.patch_namespaced_custom_object_status(
                    "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", k["metadata"]["name"],
                    {"status": status}, field_manager="gotk-kustomize-controller",
                )  # fmt: skip
        else:
            found = api.list_namespaced_custom_object("argoproj.io", "v1alpha1", "argocd", "applications")
            for app in found["items"]:
                app["status"] = {
                    "sync": {"status": "Synced", "revision": sha},
                    "health": {"status": "Healthy"},
                    "operationState": {"operation": {"sync": {"revision": sha}, "initiatedBy": {"automated": True}},
                                       "phase": "Succeeded", "message": "successfully synced (all tasks run)",
                                       "startedAt": NOW, "finishedAt": NOW},
                }  # fmt: skip
                api.replace_namespaced_custom_object(
                    "argoproj.io", "v1alpha1", "argocd", "applications", app["metadata"]["name"], app,
                    field_manager="argocd-application-controller",
                )  # fmt: skip

    def stop(self) -> None:
        self.done.set()
        self.join(timeout=60)
        assert self.error is None, self.error


def _wire(server: ApiServer, repo: Path, tool: str) -> list[str]:
    """The wiring `nodefleet gitops` generates for the test fleet, applied on ``server``: the Flux Kustomizations
    as generated, or the Applications the generated ApplicationSet would make (one per folder, its name and
    destination from the folder's argocd-ignore-differences file). Their names."""
    from kubernetes import client

    out = repo.parent / "wiring"
    made = nodefleet(
        "gitops", "--repo-url", "https://git.example.com/platform/fleet.git", "--stacks-dir", str(repo / "stacks"),
        "--rendered", str(repo / "rendered"), "--repo-root", str(repo), "--tool", tool, "--out", str(out),
    )  # fmt: skip
    assert made.returncode == 0, made.stdout + made.stderr
    api = client.CustomObjectsApi(server.api_client())
    names = []
    if tool == "flux":
        for doc in yaml.safe_load_all((out / "flux" / "kustomizations.yaml").read_text()):
            if doc and doc["kind"] == "Kustomization":
                _replace(api, "kustomize.toolkit.fluxcd.io", "v1", "flux-system", "kustomizations", doc)
                names.append(doc["metadata"]["name"])
        return names
    appset = yaml.safe_load((out / "argocd" / "applicationset.yaml").read_text())
    for entry in appset["spec"]["generators"][0]["git"]["files"]:
        folder = yaml.safe_load((repo / entry["path"]).read_text())
        path = entry["path"].removesuffix("/argocd-ignore-differences")
        app = {
            "apiVersion": "argoproj.io/v1alpha1",
            "kind": "Application",
            "metadata": {"name": folder["application"], "namespace": "argocd", "labels": folder["labels"]},
            "spec": {
                "project": "default",
                "source": {"repoURL": "https://git.example.com/platform/fleet.git", "targetRevision": GITOPS,
                           "path": path, "directory": {"recurse": True}},
                "destination": folder["destination"],
            },
        }  # fmt: skip
        _replace(api, "argoproj.io", "v1alpha1", "argocd", "applications", app)
        names.append(folder["application"])
    return names


def _replace(api: Any, group: str, version: str, namespace: str, plural: str, doc: dict[str, Any]) -> None:
    from kubernetes.client.exceptions import ApiException

    try:
        api.delete_namespaced_custom_object(group, version, namespace, plural, doc["metadata"]["name"])
    except ApiException as exc:
        assert exc.status == 404, exc
    api.create_namespaced_custom_object(group, version, namespace, plural, doc)


def _push(repo: Path, server: ApiServer, tool: str, *extra: str, env: dict[str, str] | None = None) -> Any:
    log = repo.parent / "order.log"
    gate = (
        f'echo "gate $NODEFLEET_WAVE $NODEFLEET_UPGRADE_PHASE $(git -C {repo} rev-parse {GITOPS})" >> {log}'
    )
    # --timeout well below the test's own: a controller of the test that failed shows as a stop, not a hang.
    return upgrade(
        repo, "--push", "--gitops-kubeconfig", str(server.kubeconfig), "--gitops-tool", tool,
        "--health-command", gate, "--timeout", "300", *extra, env=env,
    )  # fmt: skip


def _run_with_controllers(
    server: ApiServer, repo: Path, remote: Path, tool: str, *extra: str, env: dict[str, str] | None = None
) -> Any:
    controllers = Controllers(server, remote, tool, repo.parent / "order.log")
    controllers.start()
    try:
        return _push(repo, server, tool, *extra, env=env)
    finally:
        controllers.stop()


@pytest.fixture(scope="module")
def pushed(hub: ApiServer, template: Path, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """One uninterrupted run of the whole fleet with --push, Flux applying each commit."""
    repo = copy_repo(template, tmp_path_factory.mktemp("pushed"))
    remote = _with_remote(repo)
    _wire(hub, repo, "flux")
    done = _run_with_controllers(hub, repo, remote, "flux")
    assert done.returncode == 0, done.stdout + done.stderr
    return {"repo": repo, "remote": remote, "snapshot": snapshot(repo), "result": done}


def test_each_step_is_pushed_and_applied_before_its_gate(pushed: dict[str, Any]) -> None:
    repo, remote = pushed["repo"], pushed["remote"]
    for branch in ("main", GITOPS):
        assert git(remote, "rev-parse", branch) == git(repo, "rev-parse", branch)
    order = (repo.parent / "order.log").read_text().splitlines()
    gates = [line for line in order if line.startswith("gate ")]
    assert len(gates) == 8
    for line in gates:
        sha = line.split()[-1]
        assert f"applied {sha}" in order[: order.index(line)], line  # applied before the gate judged it
    events = [(e["step"], e["event"]) for e in state(repo)["progress"]]
    assert events[:4] == [("canary/control-plane", e) for e in ("staged", "pushed", "applied", "gate")]
    # The standalone cluster's control-plane step commits nothing: nothing to push or wait for.
    assert ("last/control-plane", "pushed") not in events and len(events) == 4 * 7 + 2
    first = state(repo)["progress"]
    assert first[2]["detail"] == f"{GITOPS}@sha1:{first[0]['renderCommit']} reported applied by 1 object"


def test_the_run_stops_when_the_gitops_tool_does_not_report_the_commit_and_resumes_without_pushing_twice(
    hub: ApiServer, template: Path, tmp_path: Path
) -> None:
    repo = copy_repo(template, tmp_path)
    remote = _with_remote(repo)
    names = _wire(hub, repo, "flux")
    stacks = ("--stacks", "canary-east,plant-last")
    # Pushed, then killed while it waits (no controller runs): the next run has nothing left to do but wait.
    killed = _push(repo, hub, "flux", *stacks, env={"NODEFLEET_TEST_CRASH_AT": "waiting"})
    assert killed.returncode in (137, -9), killed.stdout + killed.stderr
    # --timeout bounds the wait that times out here, and also the git calls before it (a local remote):
    # generous, so that no load makes those take it.
    stopped = _push(repo, hub, "flux", *stacks, "--timeout", "20")
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    sha = git(repo, "rev-parse", GITOPS).strip()
    lines = stopped.stdout.splitlines()
    assert lines[0] == (
        f"nodefleet fleet upgrade to {NEW}: stopped waiting for the GitOps tool to apply wave 1/2 canary "
        f"control-plane: {GITOPS}@sha1:{sha} is not reported applied by 1 of 1 objects within 20s (--timeout)"
    )
    assert lines[1].startswith(
        f"  Kustomization flux-system/nodefleet-canary-east-edge: has not applied {GITOPS}@sha1:{sha} yet "
        "(lastAppliedRevision none yet; Ready=Unknown)"
    )
    assert "nodefleet-canary-east-edge" in names
    assert git(remote, "rev-parse", GITOPS) == git(repo, "rev-parse", GITOPS)  # pushed before waiting
    assert state(repo)["stopped"]["at"] == "applied"
    before = git(repo, "log", "--all", "--format=%H")
    resumed = _run_with_controllers(hub, repo, remote, "flux", *stacks)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert (
        "resuming at wave 1/2 canary, waiting for the GitOps tool to apply its control planes"
        in resumed.stderr
    )
    assert git(repo, "log", "--format=%H", f"{before.split()[0]}..main") != ""  # the later steps only
    assert set(before.split()) <= set(git(repo, "log", "--all", "--format=%H").split())


def test_argo_cd_applications_report_each_step_synced_and_healthy(
    hub: ApiServer, template: Path, tmp_path: Path
) -> None:
    repo = copy_repo(template, tmp_path)
    remote = _with_remote(repo)
    _wire(hub, repo, "argocd")
    done = _run_with_controllers(hub, repo, remote, "argocd", "--stacks", "canary-east")
    assert done.returncode == 0, done.stdout + done.stderr
    applied = [e for e in state(repo)["progress"] if e["event"] == "applied"]
    assert len(applied) == 2 and all(e["detail"].endswith("reported applied by 1 object") for e in applied)


def _each_step_applied_alone(repo: Path) -> None:
    """Every step's render commit was, on its own, the remote's tip the GitOps tool applied, and every gate ran
    after the tool had applied the commit it judged: no step skipped or pushed together with the next."""
    order = (repo.parent / "order.log").read_text().splitlines()
    applied = {line.split()[1] for line in order if line.startswith("applied ")}
    log = git(repo, "log", "--format=%H %s", GITOPS).splitlines()
    renders = [line.split()[0] for line in log if " Render of the fleet upgrade " in line]
    assert len(renders) == 7 and set(renders) <= applied, (renders, order)
    for line in order:
        if line.startswith("gate "):
            assert f"applied {line.split()[-1]}" in order[: order.index(line)], line


@pytest.mark.parametrize(
    "point",
    [
        "committed:3",  # the stack files committed, the render not, nothing pushed
        "render-committed:3",  # both committed, not recorded, not pushed
        "recorded:3",  # recorded, not pushed
        "pushed:3",  # pushed, not recorded
        "waiting:1",  # pushed and recorded, the GitOps tool not applying it (no controller runs in this run)
        "waited:3",  # the GitOps tool reported it applied, not recorded
        "applied:3",  # recorded as applied, the gate not run
        "gate:3",  # the gate passed, not recorded
        "pushed:7",  # the standalone cluster's release (the last push), not recorded
    ],
)
def test_a_pushed_run_killed_at_a_point_resumes_to_the_same_commits_and_remote(
    hub: ApiServer, template: Path, tmp_path: Path, point: str, pushed: dict[str, Any]
) -> None:
    repo = copy_repo(template, tmp_path)
    remote = _with_remote(repo)
    _wire(hub, repo, "flux")
    crash = {"NODEFLEET_TEST_CRASH_AT": point}
    # While it waits: reached only when a read finds the commit not applied yet, so no controller applies it.
    crashed = (
        _push(repo, hub, "flux", env=crash)
        if point.startswith("waiting")
        else _run_with_controllers(hub, repo, remote, "flux", env=crash)
    )
    assert crashed.returncode in (137, -9), crashed.stdout + crashed.stderr
    assert "Traceback" not in crashed.stderr
    resumed = _run_with_controllers(hub, repo, remote, "flux")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "Traceback" not in resumed.stderr and "error:" not in resumed.stderr
    assert snapshot(repo) == pushed["snapshot"]
    for branch in ("main", GITOPS):
        assert git(remote, "rev-parse", branch) == git(repo, "rev-parse", branch)
    _each_step_applied_alone(repo)


def test_a_gitops_branch_someone_pushed_to_during_the_run_stops_it_and_the_printed_fix_resumes_it(
    hub: ApiServer, template: Path, tmp_path: Path
) -> None:
    """Another pipeline pushes to the GitOps branch while the canary's last gate runs: the next push is refused by
    the remote (never forced), the run stops there (exit 2) with nothing of the step pushed, and after the merge it
    prints, the same command pushes each remaining step on top of their commit, once."""
    repo = copy_repo(template, tmp_path)
    remote = _with_remote(repo)
    _wire(hub, repo, "flux")
    other, marker = tmp_path / "other", tmp_path / "pushed-by-other"
    subprocess.run(["git", "clone", "-q", "-b", GITOPS, str(remote), str(other)], check=True, env={**GIT_ENV})
    (other / "NOTES.md").write_text("pushed by the platform team's other pipeline\n")
    git(other, "add", "NOTES.md")
    git(other, "commit", "-qm", "Notes")
    theirs = git(other, "rev-parse", "HEAD").strip()
    health = (
        f'if [ "$NODEFLEET_WAVE" = canary ] && [ "$NODEFLEET_UPGRADE_PHASE" = nodes ] && [ ! -e {marker} ]; then '
        f"touch {marker}; git -C {other} pull -q --no-rebase --no-edit origin {GITOPS} && git -C {other} push -q origin "
        f"{GITOPS}; fi"
    )
    stopped = _run_with_controllers(hub, repo, remote, "flux", "--health-command", health)
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert marker.exists()
    merged = git(remote, "rev-parse", GITOPS).strip()
    first = stopped.stdout.splitlines()[0]
    assert first.startswith(
        f"nodefleet fleet upgrade to {NEW}: stopped at the push of wave 2/4 early control-plane: --push: {GITOPS} on "
        f"origin is at {merged[:12]}, which the local {GITOPS} does not contain (someone pushed to it meanwhile); "
        "nodefleet never overwrites a branch others push to, and pushed nothing. Merge it into the local branch ("
    ), stopped.stdout
    assert (
        git(remote, "log", "--format=%s", "-1", "main").strip().endswith("canary wave, nodes (canary-east)")
    )
    assert state(repo)["stopped"]["at"] == "push"
    fix = first.split("Merge it into the local branch (", 1)[1].split("), then run", 1)[0]
    subprocess.run(fix, shell=True, cwd=repo, check=True, env={**GIT_ENV}, capture_output=True)
    resumed = _run_with_controllers(hub, repo, remote, "flux", "--health-command", "true")
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    for branch in ("main", GITOPS):
        assert git(remote, "rev-parse", branch) == git(repo, "rev-parse", branch)
    assert theirs in git(remote, "log", "--format=%H", GITOPS).split()
    subjects = git(remote, "log", "--format=%s", GITOPS).splitlines()
    steps = [s for s in subjects if s.startswith("Render of the fleet upgrade")]
    assert len(steps) == len(set(steps)) == 7  # each step once, none lost
    assert "Notes" in subjects


class Overtaken(Controllers):
    """As :class:`Controllers`, but when the early wave's control planes are pushed, another pipeline pushes a
    commit on top of them before the tool applies anything, so the tool reports that commit, which the
    repository running the upgrade has never seen."""

    def __init__(self, server: ApiServer, remote: Path, tool: str, log: Path, other: Path) -> None:
        super().__init__(server, remote, tool, log)
        self.other, self.theirs = other, ""

    def _applied(self, api: Any, sha: str) -> None:
        subject = git(self.remote, "log", "-1", "--format=%s", sha)
        if not self.theirs and "early wave, control-plane" in subject:
            git(self.other, "pull", "-q", "--no-rebase", "--no-edit", "origin", GITOPS)
            (self.other / "NOTES.md").write_text("pushed by the platform team's other pipeline\n")
            git(self.other, "add", "NOTES.md")
            git(self.other, "commit", "-qm", "Notes")
            git(self.other, "push", "-q", "origin", GITOPS)
            self.theirs = sha = git(self.other, "rev-parse", "HEAD").strip()
            with self.log.open("a") as out:
                out.write(f"applied {sha}\n")
        super()._applied(api, sha)


def test_a_commit_someone_pushed_on_top_of_a_step_counts_as_applying_it_and_stops_the_next_push(
    hub: ApiServer, template: Path, tmp_path: Path
) -> None:
    """The tool reports a commit the repository does not have: it is fetched and judged (it contains the step, so
    the step is applied and its gate runs), not waited for until --timeout; the next push is refused (exit 2)."""
    repo = copy_repo(template, tmp_path)
    remote = _with_remote(repo)
    _wire(hub, repo, "flux")
    other = tmp_path / "other"
    subprocess.run(["git", "clone", "-q", "-b", GITOPS, str(remote), str(other)], check=True, env={**GIT_ENV})
    controllers = Overtaken(hub, remote, "flux", repo.parent / "order.log", other)
    controllers.start()
    try:
        stopped = _push(repo, hub, "flux")
    finally:
        controllers.stop()
    assert stopped.returncode == 2, stopped.stdout + stopped.stderr
    assert controllers.theirs
    assert stopped.stdout.startswith(
        f"nodefleet fleet upgrade to {NEW}: stopped at the push of wave 2/4 early nodes: --push: {GITOPS} on origin is "
        f"at {controllers.theirs[:12]}, which the local {GITOPS} does not contain"
    ), stopped.stdout
    events = [(e["step"], e["event"], e.get("detail", "")) for e in state(repo)["progress"]]
    early = [e for e in events if e[0] == "early/control-plane"]
    assert [e[1] for e in early] == ["staged", "pushed", "applied", "gate"], events
    assert (
        git(repo, "rev-parse", "-q", "--verify", f"{controllers.theirs}^{{commit}}").strip()
        == controllers.theirs
    )
    # Fetched as objects only: no ref of the repository names their commit.
    assert controllers.theirs not in git(repo, "for-each-ref", "--format=%(objectname)").split()
