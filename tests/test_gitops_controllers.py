"""The rendered tree and its wiring on the real GitOps controllers: Flux (source-controller and
kustomize-controller v1.9.6) and Argo CD (v3.6.1: application controller, repo server, ApplicationSet
controller with progressive syncs) against test API servers (tests/gitopsctl.py).

The shipped ``dev`` (a standalone cluster, the canary wave) and ``hosted`` (a hosted cluster with AutoNode,
the main wave) stacks, published by ``scripts/pipeline publish`` to the fixture's Git server and wired by
``python -m nodefleet gitops`` as docs/gitops.md shows. Each tool gets API servers of its own: ``dev``, the
management cluster ``management`` and the hosted cluster's own ``prod-east-hosted``.
"""

from __future__ import annotations

import contextlib
import fnmatch
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
import yaml
from kubernetes.dynamic.exceptions import NotFoundError

from nodefleet.render_layout import manifest_path
from tests.applymode import HOSTED_KARPENTER, MCO_CONTROLLER, prepare
from tests.gitopsctl import ARGOCD_NAMESPACE, FLUX_NAMESPACE, Controllers
from tests.gitopsfleet import (
    TOOL_MANAGER,
    Repo,
    annotate,
    applications,
    applied_at,
    argocd_live_state,
    compare,
    condition,
    get,
    git,
    kustomizations,
    listed,
    managers,
    play_controllers,
    refresh_argocd,
    refresh_flux,
    wait_for,
)
from tests.testcluster import PROJECT, ApiServer, TestClusters

pytestmark = pytest.mark.gitops

STACKS = ("dev", "hosted")


@dataclass
class Shipped:
    """The shipped stacks' repository and the API servers their folders go to, for one tool."""

    tool: str
    repo: Repo
    servers: dict[str, ApiServer]
    #: rendered/<stack>/<folder> -> the name of the API server it goes to
    destinations: dict[str, str]


@pytest.fixture(scope="module", params=["flux", "argocd"])
def shipped(
    request: pytest.FixtureRequest,
    gitops_controllers: Controllers,
    test_clusters: TestClusters,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Shipped]:
    tool = request.param
    gitops_controllers.started(tool)
    with ExitStack() as stop:
        servers = {
            "dev": stop.enter_context(test_clusters.fresh(f"{tool}-dev")),
            "management": stop.enter_context(test_clusters.fresh(f"{tool}-management")),
            "prod-east-hosted": stop.enter_context(
                test_clusters.fresh(f"{tool}-prod-east-hosted", HOSTED_KARPENTER)
            ),
        }
        prepare(servers["dev"])  # what an OpenShift cluster has: openshift-machine-api, MachineConfiguration
        url = gitops_controllers.repository(f"shipped-{tool}")
        stacks = {s: (PROJECT / "stacks" / f"Pulumi.{s}.yaml").read_text() for s in STACKS}
        repo = Repo.create(tmp_path_factory.mktemp(f"shipped-{tool}") / "repo", url, stacks)
        yield Shipped(
            tool,
            repo,
            servers,
            {
                "rendered/dev/dev": "dev",
                "rendered/hosted/prod-east": "management",
                "rendered/hosted/prod-east-hosted": "prod-east-hosted",
            },
        )
        _remove_wiring(gitops_controllers, tool)


def _remove_wiring(ctl: Controllers, tool: str) -> None:
    """Delete the tool's objects from the hub, orphaning what they applied (finalizers dropped), so that the
    next test starts clean."""
    client = ctl.hub_client
    kinds = {
        "flux": (("kustomize.toolkit.fluxcd.io/v1", "Kustomization", FLUX_NAMESPACE),
                 ("source.toolkit.fluxcd.io/v1", "GitRepository", FLUX_NAMESPACE)),
        "argocd": (("argoproj.io/v1alpha1", "ApplicationSet", ARGOCD_NAMESPACE),
                   ("argoproj.io/v1alpha1", "Application", ARGOCD_NAMESPACE)),
    }[tool]  # fmt: skip
    for api_version, kind, namespace in kinds:
        api = client.resources.get(api_version=api_version, kind=kind)
        for item in client.get(api, namespace=namespace).items:
            name = item.metadata.name
            # An Application may be gone already, taken by its ApplicationSet's deletion.
            with contextlib.suppress(NotFoundError):
                client.delete(api, name=name, namespace=namespace)
            with contextlib.suppress(NotFoundError):
                client.patch(api, name=name, namespace=namespace, body={"metadata": {"finalizers": None}},
                             content_type="application/merge-patch+json")  # fmt: skip


def _register(
    ctl: Controllers, shipped: Shipped, wiring: list[dict[str, Any]], only: tuple[str, ...] | None = None
) -> None:
    """The credentials the wiring references, created as docs/gitops.md tells users: per API server an Argo CD
    cluster Secret named as its folders' destination, or the Flux kubeconfig Secret (CA inline) each
    Kustomization names, under the key it names (Flux's default ``value`` when it names none)."""
    for server_name, server in shipped.servers.items():
        if only is not None and server_name not in only:
            continue
        if shipped.tool == "argocd":
            ctl.argocd_cluster(server, server_name)
            continue
        for doc in wiring:
            if doc["kind"] != "Kustomization":
                continue
            folder = doc["spec"]["path"].removeprefix("./")
            if shipped.destinations[folder] == server_name:
                ref = doc["spec"]["kubeConfig"]["secretRef"]
                ctl.flux_kubeconfig_secret(server, ref["name"], ref.get("key", "value"))


def _appset_error(ctl: Controllers, name: str = "nodefleet") -> str:
    appset = get(ctl.hub_client, "argoproj.io/v1alpha1", "ApplicationSet", name, ARGOCD_NAMESPACE)
    return str(condition(appset, "ErrorOccurred").get("message", ""))


def _rollout(ctl: Controllers, name: str = "nodefleet") -> dict[str, str]:
    """The ApplicationSet's RollingSync status of each Application (Waiting, Pending, Progressing, Healthy)."""
    appset = get(ctl.hub_client, "argoproj.io/v1alpha1", "ApplicationSet", name, ARGOCD_NAMESPACE) or {}
    return {
        a["application"]: a.get("status", "")
        for a in (appset.get("status") or {}).get("applicationStatus") or []
    }


def _canary_applied_unhealthy(ctl: Controllers, tool: str, name: str, commit: str, dev: ApiServer) -> bool:
    """The canary's MachineSets are on its API server, and the tool, having applied ``commit``, waits for their
    health."""
    machine_sets = dev.dynamic().resources.get(api_version="machine.openshift.io/v1beta1", kind="MachineSet")
    if not dev.dynamic().get(machine_sets, namespace="openshift-machine-api").items:
        return False
    if tool == "flux":
        k = kustomizations(ctl).get(name) or {}
        attempted = str((k.get("status") or {}).get("lastAttemptedRevision", ""))
        return attempted.endswith(commit) and condition(k, "Ready").get("status") != "True"
    status = (applications(ctl).get(name) or {}).get("status") or {}
    sync, health = status.get("sync") or {}, status.get("health") or {}
    return bool(sync.get("status") == "Synced" and sync.get("revision") == commit
                and health.get("status") == "Progressing")  # fmt: skip


def _waiting(ctl: Controllers, tool: str, name: str) -> bool:
    if tool == "flux":
        return condition(kustomizations(ctl).get(name), "Ready").get("reason") == "DependencyNotReady"
    return _rollout(ctl).get(name) in ("Waiting", "Pending")


def test_first_sync_applies_every_folder_to_its_api_server_after_the_wave_before(
    gitops_controllers: Controllers, shipped: Shipped
) -> None:
    ctl, repo, tool = gitops_controllers, shipped.repo, shipped.tool
    commit = repo.publish()
    written = repo.gitops("--tool", tool)
    wiring = written[tool]
    if "argocd-cm" in written:  # the health checks, merged into argocd-cm as docs/gitops.md says
        ctl.apply(written["argocd-cm"], manager="nodefleet")
    # The canary's API server is not registered yet: its folder cannot apply, and the main wave must wait.
    _register(ctl, shipped, wiring, only=("management", "prod-east-hosted"))
    ctl.apply(wiring)
    names = ["nodefleet-dev-dev", "nodefleet-hosted-prod-east", "nodefleet-hosted-prod-east-hosted"]
    if tool == "flux":
        refresh_flux(ctl)
        wait_for(
            "the canary's Kustomization reports it cannot reach its cluster",
            lambda: condition(kustomizations(ctl).get(names[0]), "Ready").get("status") == "False",
            ctl,
            tool,
        )
        wait_for(
            "the main wave's Kustomizations wait for the canary",
            lambda: all(
                condition(kustomizations(ctl).get(n), "Ready").get("reason") == "DependencyNotReady"
                for n in names[1:]
            ),
            ctl,
            tool,
        )
    else:
        refresh_argocd(ctl)
        # Argo CD does not create an Application whose destination it does not know: the ApplicationSet
        # reports it, and the main wave's Applications wait at their step.
        wait_for(
            "the ApplicationSet reports the canary's unknown cluster, the main wave waiting",
            lambda: (
                "no clusters with this name: dev" in _appset_error(ctl)
                and set(names[1:]) <= set(applications(ctl))
                and all(_rollout(ctl).get(n) == "Waiting" for n in names[1:])
            ),
            ctl,
            tool,
        )
    # Held: nothing of the main wave is on its API servers.
    assert get(shipped.servers["management"], "hypershift.openshift.io/v1beta1", "HostedCluster",
               "prod-east", "clusters") is None  # fmt: skip
    _register(ctl, shipped, wiring, only=("dev",))
    if tool == "flux":
        annotate(ctl, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", names[0], FLUX_NAMESPACE,
                 {"reconcile.fluxcd.io/requestedAt": "registered"})  # fmt: skip
    else:
        refresh_argocd(ctl)
    # Registered, the canary's MachineSets are applied, but no machine is available yet (nothing plays the
    # Machine API): the canary is not healthy, and the main wave still waits, by what each tool reports.
    wait_for(
        "the canary applied at the commit but not healthy, the main wave waiting",
        lambda: (
            _canary_applied_unhealthy(ctl, tool, names[0], commit, shipped.servers["dev"])
            and all(_waiting(ctl, tool, n) for n in names[1:])
        ),
        ctl,
        tool,
    )
    assert get(shipped.servers["management"], "hypershift.openshift.io/v1beta1", "HostedCluster",
               "prod-east", "clusters") is None  # fmt: skip
    applied = wait_for(
        f"every folder applied at {commit[:12]} and healthy",
        lambda: (
            (play_controllers(*shipped.servers.values()) or True)
            and (a := applied_at(ctl, shipped.tool, commit))
            and all(a.get(n) for n in names)
            and a
        ),
        ctl,
        tool,
    )
    assert set(applied) == set(names)
    # What landed is the render after the API server's defaulting, on the API server of its folder, applied
    # by the tool's own field manager.
    problems = []
    apps = applications(ctl) if tool == "argocd" else {}
    for folder, objects in repo.rendered(commit).items():
        server = shipped.servers[shipped.destinations[folder]]
        app = apps.get(f"nodefleet-{folder.split('/')[1]}-{folder.split('/')[2]}", {})
        exclude = app.get("spec", {}).get("source", {}).get("directory", {}).get("exclude")
        for manifest in objects:
            meta = manifest["metadata"]
            live = get(server, manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace"))
            where = f"{folder}: {manifest['kind']} {meta.get('namespace', '')}/{meta['name']}"
            if exclude and fnmatch.fnmatchcase(manifest_path(manifest), exclude):
                # Applied by no Application: the one of its folder created it (its destination namespace).
                assert manifest["kind"] == "Namespace", where
                assert app["spec"]["destination"]["namespace"] == meta["name"], where
                if live is None or "argocd.argoproj.io/tracking-id" in (
                    live["metadata"].get("annotations") or {}
                ):
                    problems.append(f"{where}: not created untracked by its Application ({live})")
                continue
            shared = manifest["kind"] == "MachineConfiguration"  # the MCO's singleton, there before
            problems += [f"{where}: {p}" for p in compare(manifest, live, tool, shared)]
            if live is not None and TOOL_MANAGER[tool] not in managers(live):
                problems.append(f"{where}: not applied by {TOOL_MANAGER[tool]} ({sorted(managers(live))})")
    assert not problems, "\n".join(problems)


def _first_sync(ctl: Controllers, shipped: Shipped) -> str:
    """The stacks published and every folder applied and healthy (the first test's end state); the commit."""
    commit = shipped.repo.publish()
    wait_for(
        "the first sync",
        lambda: (
            (play_controllers(*shipped.servers.values()) or True)
            and (a := applied_at(ctl, shipped.tool, commit))
            and all(a.values())
        ),
        ctl,
        shipped.tool,
    )
    return commit


def _sync_now(ctl: Controllers, tool: str, name: str) -> str:
    """Request the next sync of one folder by hand (``flux reconcile kustomization``; ``argocd app sync``, which
    syncs with the Application's own sync options); a token that :func:`_synced` recognises."""
    token = f"by-hand-{time.time_ns()}"
    if tool == "flux":
        annotate(ctl, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, FLUX_NAMESPACE,
                 {"reconcile.fluxcd.io/requestedAt": token})  # fmt: skip
        return token
    app = applications(ctl)[name]
    api = ctl.hub_client.resources.get(api_version="argoproj.io/v1alpha1", kind="Application")
    operation = {
        "initiatedBy": {"username": token},
        "sync": {"revision": app["status"]["sync"]["revision"],
                 "syncOptions": app["spec"]["syncPolicy"]["syncOptions"]},
    }  # fmt: skip
    ctl.hub_client.patch(api, name=name, namespace=ARGOCD_NAMESPACE, body={"operation": operation},
                         content_type="application/merge-patch+json")  # fmt: skip
    return token


def _synced(ctl: Controllers, tool: str, name: str, token: str) -> bool:
    if tool == "flux":
        k = kustomizations(ctl)[name]
        status = k.get("status") or {}
        return bool(
            status.get("lastHandledReconcileAt") == token and condition(k, "Ready").get("status") == "True"
        )
    op = (applications(ctl)[name].get("status") or {}).get("operationState") or {}
    initiated = ((op.get("operation") or {}).get("initiatedBy") or {}).get("username")
    return bool(initiated == token and op.get("phase") == "Succeeded")


def test_a_controller_owned_field_survives_the_next_sync_and_a_declared_one_is_put_back(
    gitops_controllers: Controllers, shipped: Shipped
) -> None:
    ctl, tool = gitops_controllers, shipped.tool
    _first_sync(ctl, shipped)
    dev = shipped.servers["dev"].dynamic()
    machine_sets = dev.resources.get(api_version="machine.openshift.io/v1beta1", kind="MachineSet")
    managed, pinned = "dev-7xk2p-worker-us-east-1a", "dev-7xk2p-worker-us-east-1b"

    def write(name: str, patch: dict[str, Any], manager: str) -> None:
        dev.patch(machine_sets, name=name, namespace="openshift-machine-api", body=patch,
                  content_type="application/merge-patch+json", field_manager=manager)  # fmt: skip

    def ami(name: str) -> str:
        live = dev.get(machine_sets, name=name, namespace="openshift-machine-api").to_dict()
        return str(live["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"]["id"])

    rendered = {name: ami(name) for name in (managed, pinned)}
    new_ami = {
        "spec": {"template": {"spec": {"providerSpec": {"value": {"ami": {"id": "ami-0c0ffee0c0ffee000"}}}}}}
    }
    write(managed, new_ami, MCO_CONTROLLER)  # the MCO's boot image controller: the AMI is its field
    write(pinned, new_ami, "kubectl-edit")  # by hand: a pinned MachineSet's AMI is nodefleet's
    write(managed, {"spec": {"replicas": 7}}, "kubectl-edit")  # by hand: replicas are nodefleet's
    name = "nodefleet-dev-dev"
    if tool == "argocd":
        # With RespectIgnoreDifferences, a sync takes the ignored AMI from Argo CD's cache of the cluster: a
        # sync requested before the cache holds the MCO's write would put the AMI Argo CD saw last back. A user
        # syncs what Argo CD shows; so does the test, once Argo CD shows the write.
        def seen() -> bool:
            live = argocd_live_state(ctl, name, "MachineSet", managed, "openshift-machine-api") or {}
            return bool(live.get("spec", {}).get("replicas") == 7)

        wait_for(f"Argo CD's comparison of {name} showing the writes", seen, ctl, tool)
    token = _sync_now(ctl, tool, name)
    wait_for(
        f"{name} synced again ({token}) and healthy",
        lambda: (play_controllers(shipped.servers["dev"]) or True) and _synced(ctl, tool, name, token),
        ctl,
        tool,
    )
    assert ami(managed) == "ami-0c0ffee0c0ffee000", f"{tool} put its rendered AMI back over the MCO's"
    assert ami(pinned) == rendered[pinned], f"{tool} left a hand-written AMI on a pinned MachineSet"
    live = dev.get(machine_sets, name=managed, namespace="openshift-machine-api").to_dict()
    assert live["spec"]["replicas"] == 3, f"{tool} left a hand-written replica count"


#: What the ``hosted`` stack puts on each API server: (server, apiVersion, kind, namespace, name).
HOSTED_OBJECTS = (
    ("management", "hypershift.openshift.io/v1beta1", "HostedCluster", "clusters", "prod-east"),
    ("management", "hypershift.openshift.io/v1beta1", "NodePool", "clusters", "prod-east-infra"),
    ("management", "v1", "Namespace", None, "clusters"),
    ("prod-east-hosted", "karpenter.sh/v1", "NodePool", None, "on-demand"),
    ("prod-east-hosted", "karpenter.sh/v1", "NodePool", None, "spot"),
    ("prod-east-hosted", "karpenter.hypershift.openshift.io/v1", "OpenshiftEC2NodeClass", None, "general"),
)


def _uids(shipped: Shipped) -> dict[str, str | None]:
    out = {}
    for server, api_version, kind, namespace, name in HOSTED_OBJECTS:
        live = get(shipped.servers[server], api_version, kind, name, namespace)
        out[f"{kind} {namespace or ''}/{name} on {server}"] = live["metadata"]["uid"] if live else None
    return out


def _delete_wiring(ctl: Controllers, tool: str, docs: list[dict[str, Any]]) -> None:
    """``kubectl delete -f`` of a wiring file: its ApplicationSet, or its GitRepository and Kustomizations, deleted
    as a user deletes them (the tools' own finalizers and deletion policies decide what that takes with it), and
    waited for until gone, with what they generated (the ApplicationSet's Applications, garbage-collected)."""
    client = ctl.hub_client
    for doc in docs:
        api = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        with contextlib.suppress(NotFoundError):
            client.delete(api, name=doc["metadata"]["name"], namespace=doc["metadata"]["namespace"])
    gone = {d["metadata"]["name"] for d in docs if d["kind"] in ("Kustomization", "ApplicationSet")}
    owned = [d["metadata"]["name"] for d in docs if d["kind"] == "ApplicationSet"]
    wait_for(
        f"the wiring {sorted(gone)} deleted",
        lambda: (
            not gone & set(kustomizations(ctl))
            if tool == "flux"
            else not gone & _appsets(ctl)
            and not [a for a in applications(ctl).values() if _owner(a) in owned]
        ),
        ctl,
        tool,
    )


def _appsets(ctl: Controllers) -> set[str]:
    return {a["metadata"]["name"] for a in listed(ctl.hub_client, "argoproj.io/v1alpha1", "ApplicationSet",
                                                   ARGOCD_NAMESPACE)}  # fmt: skip


def _owner(app: dict[str, Any]) -> str:
    return next((o["name"] for o in app["metadata"].get("ownerReferences") or []
                 if o["kind"] == "ApplicationSet"), "")  # fmt: skip


def _wiring_file(shipped: Shipped, name: str) -> list[dict[str, Any]]:
    """The documents of the wiring file ``gitops --name <name>`` wrote for the shipped repository's tool."""
    suffix = "" if name == "nodefleet" else f"-{name}"
    rel = (
        f"argocd/applicationset{suffix}.yaml"
        if shipped.tool == "argocd"
        else f"flux/kustomizations{suffix}.yaml"
    )
    return [d for d in yaml.safe_load_all((shipped.repo.path / "gitops" / rel).read_text()) if d]


def test_wiring_only_part_of_the_fleet_deletes_nothing_of_the_rest(
    gitops_controllers: Controllers, shipped: Shipped
) -> None:
    ctl, tool, repo = gitops_controllers, shipped.tool, shipped.repo
    commit = _first_sync(ctl, shipped)
    before = _uids(shipped)
    assert all(before.values()), before
    fleet = _wiring_file(shipped, "nodefleet")
    # The fleet's wiring replaced by one of the canary stack alone, under a name of its own (docs/gitops.md,
    # "Wiring part of the fleet"): the fleet's deleted with kubectl, the partial one applied.
    result = repo.nodefleet("gitops", "--repo-url", repo.url, "--out", "gitops", "--tool", tool,
                            "--stacks", "dev", "--name", "nodefleet-canary")  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    partial = _wiring_file(shipped, "nodefleet-canary")
    _delete_wiring(ctl, tool, fleet)
    ctl.apply(partial)
    if tool == "flux":
        refresh_flux(ctl, "nodefleet-canary-rendered")
    else:
        refresh_argocd(ctl, "nodefleet-canary")
    wait_for(
        "the canary's folder applied by the partial wiring alone",
        lambda: (
            (play_controllers(*shipped.servers.values()) or True)
            and (a := applied_at(ctl, shipped.tool, commit))
            and set(a) == {"nodefleet-dev-dev"}
            and all(a.values())
        ),
        ctl,
        tool,
    )
    assert _uids(shipped) == before, "an object of a stack the partial wiring leaves out was deleted"
    # Back to the fleet's wiring: the partial one deleted, the fleet's applied again; nothing goes either way.
    _delete_wiring(ctl, tool, partial)
    ctl.apply(fleet)
    (refresh_flux if tool == "flux" else refresh_argocd)(ctl)
    _first_sync(ctl, shipped)
    assert _uids(shipped) == before, "an object was deleted when the fleet's wiring came back"


def _rewire(ctl: Controllers, shipped: Shipped) -> tuple[str, set[str]]:
    """Publish the stacks as they are now and apply the wiring ``gitops`` writes for them, as a user does:
    ``kubectl apply`` of the files, and for Flux ``kubectl delete`` of the Kustomizations the new wiring no
    longer has (Argo CD's ApplicationSet controller deletes the Applications itself). The commit and the
    names of the wiring's objects now."""
    commit = shipped.repo.publish()
    written = shipped.repo.gitops("--tool", shipped.tool)
    wiring = written[shipped.tool]
    ctl.apply(wiring)
    names = {d["metadata"]["name"] for d in wiring if d["kind"] == "Kustomization"}
    if shipped.tool == "flux":
        api = ctl.hub_client.resources.get(api_version="kustomize.toolkit.fluxcd.io/v1", kind="Kustomization")
        for stale in set(kustomizations(ctl)) - names:
            ctl.hub_client.delete(api, name=stale, namespace=FLUX_NAMESPACE)
        refresh_flux(ctl)
    else:
        names = {f"nodefleet-{f.split('/')[1]}-{f.split('/')[2]}" for f in shipped.repo.rendered(commit)}
        refresh_argocd(ctl)
    return commit, names


def test_renaming_or_removing_a_stack_deletes_none_of_its_clusters_or_capacity(
    gitops_controllers: Controllers, shipped: Shipped
) -> None:
    ctl, tool, repo = gitops_controllers, shipped.tool, shipped.repo
    _first_sync(ctl, shipped)
    before = _uids(shipped)
    assert all(before.values()), before
    # Renamed: its folders move to rendered/hosted-east, its Applications or Kustomizations get new names.
    git(repo.path, "mv", "stacks/Pulumi.hosted.yaml", "stacks/Pulumi.hosted-east.yaml")
    git(repo.path, "commit", "-qm", "rename the hosted stack")
    commit, names = _rewire(ctl, shipped)
    wait_for(
        "the renamed stack's folders applied and healthy, the old names gone",
        lambda: (
            (play_controllers(*shipped.servers.values()) or True)
            and (a := applied_at(ctl, shipped.tool, commit))
            and set(a) == names
            and all(a.values())
        ),
        ctl,
        tool,
    )
    assert _uids(shipped) == before, "an object of the renamed stack was deleted (and created again)"
    # Removed: the stack file goes; so do its folders and the wiring's objects for them.
    git(repo.path, "rm", "-q", "stacks/Pulumi.hosted-east.yaml")
    git(repo.path, "commit", "-qm", "remove the hosted stack")
    commit, names = _rewire(ctl, shipped)
    wait_for(
        "only the dev stack's wiring left, applied",
        lambda: (a := applied_at(ctl, shipped.tool, commit)) and set(a) == names and all(a.values()),
        ctl,
        tool,
    )
    assert names == {"nodefleet-dev-dev"}
    assert _uids(shipped) == before, "an object of the removed stack was deleted"
