"""Adopting replaces nothing, in render mode, on the real GitOps controllers (tests/gitopsctl.py).

Objects nobody here wrote are created first on test API servers: HyperShift's ``hypershift create cluster aws
--render`` fixture (a HostedCluster and its NodePool) on a management cluster, and a standalone cluster's
installer MachineSets, an ``infra`` MachineSet and MachineConfigPool as OpenShift's documentation writes them,
and its ``MachineConfiguration``. Then, as a team adopting them does: ``import`` from each API server, the
stacks committed, ``scripts/pipeline publish`` and ``gitops``; Flux or Argo CD (one each, so the two run on
two workers) syncs the render over the live objects.

What must hold: the tool reports every folder applied and healthy; no object's ``uid`` or ``generation``
changes; its ``resourceVersion`` changes only by the metadata named here (what the tool adds to every object
it applies, nodefleet's own bookkeeping annotations that ``import`` lists, and the field managers' records),
and a second sync changes no ``resourceVersion`` at all; and a server-side dry-run apply of the render, with
the tool's field manager, over the live objects changes nothing but that metadata.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import pytest
import yaml

from tests.gitopsctl import FLUX_NAMESPACE, Controllers
from tests.gitopsfleet import (
    TOOL_MANAGER,
    TOOL_METADATA,
    Repo,
    annotate,
    applications,
    applied_at,
    get,
    git,
    play_controllers,
    refresh_argocd,
    refresh_flux,
    wait_for,
)
from tests.nodefleet.adopt.roundtrip import DATA, hypershift_fixture
from tests.test_gitops_controllers import _remove_wiring
from tests.testcluster import ApiServer, TestClusters

pytestmark = pytest.mark.gitops

#: What the render puts on every object nodefleet declares and the live objects lack: nodefleet's own
#: annotations (``import`` prints them: they change no behaviour) and the tools' per-object options.
BOOKKEEPING = ("nodefleet.io/", "argocd.argoproj.io/sync-options", "kustomize.toolkit.fluxcd.io/prune")
#: What the API server writes on any write, whoever makes it: not a field any declaring side set.
SERVER_WRITTEN = ("resourceVersion", "managedFields")
RELEASE_IMAGE = "quay.io/openshift-release-dev/ocp-release:4.22.3-multi"


def _hosted_sources() -> list[dict[str, Any]]:
    """HyperShift's fixture for `--name cesar`, without its Secrets (import references them by name)."""
    return [d for d in hypershift_fixture("default_creation_flags_for_cesar") if d["kind"] != "Secret"]


def _standalone_sources() -> list[dict[str, Any]]:
    """The standalone 4.16 cluster of tests/nodefleet/adopt/data, as a cluster kept the way the policy pack asks
    looks: the infra MachineSet boots its pool's own config and carries the architecture annotation the Machine
    API writes, the pool carries the label the MCO's docs give custom pools, and the ``MachineConfiguration``
    states boot image management and the skew record. (As the file has them, ``import`` reports a policy
    violation and needs ``--adopt-defaults``: tests/test_import_live.py covers that.) This API server serves no
    ClusterVersion or Infrastructure: the release is given to ``import``."""
    items = yaml.safe_load((DATA / "standalone-4.16.yaml").read_text())["items"]
    out = []
    for item in copy.deepcopy(items):
        kind, meta = item["kind"], item["metadata"]
        if kind in ("ClusterVersion", "Infrastructure"):
            continue
        if kind == "MachineSet" and "-infra-" in meta["name"]:
            meta.setdefault("annotations", {})["capacity.cluster-autoscaler.kubernetes.io/labels"] = (
                "kubernetes.io/arch=amd64"
            )
            item["spec"]["template"]["spec"]["providerSpec"]["value"]["userDataSecret"] = {
                "name": "infra-user-data-managed"
            }
        if kind == "MachineConfigPool":
            meta.setdefault("labels", {})["pools.operator.machineconfiguration.openshift.io/infra"] = ""
        if kind == "MachineConfiguration":
            item["spec"]["managedBootImages"] = {
                "machineManagers": [
                    {
                        "resource": "machinesets",
                        "apiGroup": "machine.openshift.io",
                        "selection": {"mode": "None"},
                    }
                ]
            }
            item["spec"]["bootImageSkewEnforcement"] = {
                "mode": "Manual",
                "manual": {"mode": "RHCOSVersion", "rhcosVersion": "416.94.202405291527-0"},
            }
        out.append(item)
    return out


def _create(server: ApiServer, manifests: list[dict[str, Any]]) -> None:
    """Created as their owners created them (not by nodefleet, not by the GitOps tool)."""
    dyn = server.dynamic()
    for manifest in manifests:
        body = copy.deepcopy(manifest)
        body.pop("status", None)
        for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields"):
            body["metadata"].pop(key, None)
        api = dyn.resources.get(api_version=body["apiVersion"], kind=body["kind"])
        dyn.create(api, body=body, namespace=body["metadata"].get("namespace"), field_manager="installer")


@dataclass
class Adopted:
    tool: str
    repo: Repo
    servers: dict[str, ApiServer]
    #: the import's standard output, per stack
    printed: dict[str, str]


@pytest.fixture(scope="module", params=["flux", "argocd"])
def adopted(
    request: pytest.FixtureRequest,
    gitops_controllers: Controllers,
    test_clusters: TestClusters,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Adopted]:
    tool = request.param
    gitops_controllers.started(tool)
    with ExitStack() as stop:
        servers = {
            "management": stop.enter_context(test_clusters.fresh(f"{tool}-adopt-management")),
            "shop": stop.enter_context(test_clusters.fresh(f"{tool}-adopt-shop")),
        }
        _create(servers["management"], _hosted_sources())
        _create(
            servers["shop"],
            [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-machine-api"}}],
        )
        _create(servers["shop"], _standalone_sources())
        # Their controllers report them done before anything is adopted: the status they write is theirs.
        play_controllers(*servers.values())
        url = gitops_controllers.repository(f"adopt-{tool}")
        repo = Repo.create(tmp_path_factory.mktemp(f"adopt-{tool}") / "repo", url, {})
        printed = {}
        for stack, server, extra in (
            ("cesar", servers["management"], ["--cluster", "cesar"]),
            ("shop", servers["shop"], ["--release", "4.16.3", "--catalog", "catalogs/rhcos-4.16.json"]),
        ):
            result = repo.nodefleet("import", "--stack", stack, "--stacks-dir", "stacks",
                                    "--kubeconfig", str(server.kubeconfig), *extra)  # fmt: skip
            assert result.returncode == 0, result.stdout + result.stderr
            printed[stack] = result.stdout
        git(repo.path, "add", "stacks")
        git(repo.path, "commit", "-qm", "adopt the running clusters")
        git(repo.path, "push", "-q", "origin", "main")
        yield Adopted(tool, repo, servers, printed)
        _remove_wiring(gitops_controllers, tool)


def _snapshot(servers: dict[str, ApiServer], rendered: dict[str, list[dict[str, Any]]],
              where: dict[str, str]) -> dict[str, dict[str, Any]]:  # fmt: skip
    """Every rendered object as it is live now, by ``<server> <kind> <namespace>/<name>``."""
    out = {}
    for folder, objects in rendered.items():
        server = where[folder]
        for manifest in objects:
            meta = manifest["metadata"]
            live = get(
                servers[server], manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace")
            )
            out[f"{server} {manifest['kind']} {meta.get('namespace', '')}/{meta['name']}"] = live
    return out


def _named_metadata(tool: str, key: str, name: str) -> bool:
    """The metadata this test allows a sync to add: the tool's own and nodefleet's bookkeeping."""
    return name in TOOL_METADATA[tool].get(key, set()) or name.startswith(BOOKKEEPING)


def _changes(tool: str, before: dict[str, Any], after: dict[str, Any]) -> list[str]:
    """What differs between two states of one object, other than the metadata named above."""
    problems = []
    for k in sorted(set(before) | set(after)):
        if k not in ("metadata", "status") and before.get(k) != after.get(k):
            problems.append(f"{k}: {before.get(k)!r} -> {after.get(k)!r}")
    b, a = before["metadata"], after["metadata"]
    for k in sorted(set(b) | set(a)):
        if k in SERVER_WRITTEN or k in ("labels", "annotations"):
            continue
        if b.get(k) != a.get(k):
            problems.append(f"metadata.{k}: {b.get(k)!r} -> {a.get(k)!r}")
    for key in ("labels", "annotations"):
        bm, am = b.get(key) or {}, a.get(key) or {}
        for name in sorted(set(bm) | set(am)):
            if bm.get(name) != am.get(name) and not _named_metadata(tool, key, name):
                problems.append(f"metadata.{key}[{name}]: {bm.get(name)!r} -> {am.get(name)!r}")
    if before.get("status") != after.get("status"):
        problems.append("status changed (its controller was made to write again)")
    return problems


def _dry_run(server: ApiServer, manifest: dict[str, Any], manager: str) -> dict[str, Any]:
    """``kubectl apply --server-side --dry-run=server --force-conflicts`` with the tool's field manager: the object
    the API server would store."""
    dyn = server.dynamic()
    meta = manifest["metadata"]
    api = dyn.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    stored: dict[str, Any] = dyn.server_side_apply(
        api, body=manifest, name=meta["name"], namespace=meta.get("namespace"),
        field_manager=manager, force_conflicts=True, dry_run="All",
    ).to_dict()  # fmt: skip
    return stored


def _sync_again(ctl: Controllers, tool: str, names: set[str]) -> str:
    """Ask for the next sync of every folder now (``flux reconcile kustomization``; ``argocd app sync``, with the
    Application's own sync options); the token :func:`_synced_again` waits for."""
    import time

    token = f"again-{time.time_ns()}"
    if tool == "flux":
        for name in names:
            annotate(ctl, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", name, FLUX_NAMESPACE,
                     {"reconcile.fluxcd.io/requestedAt": token})  # fmt: skip
        return token
    for name in names:
        _argocd_sync(ctl, name, token)
    return token


def _argocd_sync(ctl: Controllers, name: str, token: str) -> None:
    from tests.gitopsctl import ARGOCD_NAMESPACE

    app = applications(ctl)[name]
    api = ctl.hub_client.resources.get(api_version="argoproj.io/v1alpha1", kind="Application")
    operation = {
        "initiatedBy": {"username": token},
        "sync": {"revision": app["status"]["sync"]["revision"],
                 "syncOptions": app["spec"]["syncPolicy"]["syncOptions"]},
    }  # fmt: skip
    ctl.hub_client.patch(api, name=name, namespace=ARGOCD_NAMESPACE, body={"operation": operation},
                         content_type="application/merge-patch+json")  # fmt: skip


def _synced_again(ctl: Controllers, tool: str, names: set[str], token: str) -> bool:
    from tests.gitopsfleet import condition, kustomizations

    if tool == "flux":
        found = kustomizations(ctl)
        return all(
            (found[n].get("status") or {}).get("lastHandledReconcileAt") == token
            and condition(found[n], "Ready").get("status") == "True"
            for n in names
        )
    done = True
    for name, app in applications(ctl).items():
        if name not in names:
            continue
        op = (app.get("status") or {}).get("operationState") or {}
        ours = ((op.get("operation") or {}).get("initiatedBy") or {}).get("username") == token
        if ours and op.get("phase") == "Succeeded":
            continue
        done = False
        if not ours and not app.get("operation") and op.get("phase") != "Running":
            # The request was taken over by an operation of the controller's own (its automated sync, still
            # running when it was made): ask again, as a user re-running `argocd app sync` does.
            _argocd_sync(ctl, name, token)
    return done


def test_flux_and_argocd_adopt_the_imported_render_and_change_nothing(
    gitops_controllers: Controllers, adopted: Adopted
) -> None:
    ctl, tool, repo = gitops_controllers, adopted.tool, adopted.repo
    # import said what it adopted from each API server, and which of nodefleet's annotations it adds.
    assert (
        "adopted  HostedCluster clusters/cesar (live hostedclusters.hypershift.openshift.io)"
        in adopted.printed["cesar"]
    )
    assert "adopted  MachineConfigPool infra (live machineconfigpools." in adopted.printed["shop"]
    commit = repo.publish()
    rendered = repo.rendered(commit)
    where = {"rendered/cesar/cesar": "management", "rendered/shop/shop": "shop"}
    assert set(rendered) == set(where), sorted(rendered)
    kinds = sorted(m["kind"] for objects in rendered.values() for m in objects)
    assert kinds == ["HostedCluster", "MachineConfigPool", "MachineConfiguration", "MachineSet", "MachineSet",
                     "MachineSet", "Namespace", "NodePool"], kinds  # fmt: skip

    before = _snapshot(adopted.servers, rendered, where)
    assert all(before.values()), [k for k, v in before.items() if v is None]
    # The render, server-side applied as a dry run with the tool's field manager, changes nothing on the live
    # objects but the named metadata.
    problems = []
    for folder, objects in rendered.items():
        for manifest in objects:
            meta = manifest["metadata"]
            key = f"{where[folder]} {manifest['kind']} {meta.get('namespace', '')}/{meta['name']}"
            would = _dry_run(adopted.servers[where[folder]], manifest, TOOL_MANAGER[tool])
            problems += [f"{key} (dry run): {p}" for p in _changes(tool, before[key], would)]
    assert not problems, "\n".join(problems)

    written = repo.gitops("--tool", tool)
    wiring = written[tool]
    if tool == "argocd":
        ctl.apply(written["argocd-cm"], manager="nodefleet")
        for name in ("management", "shop"):
            ctl.argocd_cluster(adopted.servers[name], name)
    else:
        for doc in wiring:
            if doc["kind"] == "Kustomization" and doc["spec"].get("kubeConfig"):
                folder = doc["spec"]["path"].removeprefix("./")
                ref = doc["spec"]["kubeConfig"]["secretRef"]
                ctl.flux_kubeconfig_secret(
                    adopted.servers[where[folder]], ref["name"], ref.get("key", "value")
                )
    ctl.apply(wiring)
    (refresh_flux if tool == "flux" else refresh_argocd)(ctl)
    names = {"nodefleet-cesar-cesar", "nodefleet-shop-shop"}
    applied = wait_for(
        f"both folders applied at {commit[:12]} and healthy",
        lambda: (a := applied_at(ctl, tool, commit)) and names <= set(a) and all(a[n] for n in names) and a,
        ctl,
        tool,
    )
    assert names <= set(applied)

    after = _snapshot(adopted.servers, rendered, where)
    problems = []
    for key, live in before.items():
        now = after[key]
        assert now is not None, f"{key}: gone after the sync"
        if now["metadata"]["uid"] != live["metadata"]["uid"]:
            problems.append(f"{key}: replaced (uid {live['metadata']['uid']} -> {now['metadata']['uid']})")
        if now["metadata"].get("generation") != live["metadata"].get("generation"):
            problems.append(f"{key}: generation {live['metadata'].get('generation')} -> "
                            f"{now['metadata'].get('generation')}")  # fmt: skip
        problems += [f"{key}: {p}" for p in _changes(tool, live, now)]
    assert not problems, "\n".join(problems)
    # The tool applied the objects (its field manager is recorded): adopted, not left alone.
    for key, now in after.items():
        if now["kind"] == "Namespace" and tool == "argocd":
            continue  # the Application's destination namespace: Argo CD leaves an existing one alone
        managers = {m.get("manager") for m in now["metadata"].get("managedFields") or []}
        assert TOOL_MANAGER[tool] in managers, (
            f"{key}: not applied by {TOOL_MANAGER[tool]} ({sorted(managers)})"
        )

    # Adopted, a sync is a no-op: not one resourceVersion moves.
    token = _sync_again(ctl, tool, names)
    wait_for(
        f"both folders synced again ({token})", lambda: _synced_again(ctl, tool, names, token), ctl, tool
    )
    again = _snapshot(adopted.servers, rendered, where)
    moved = [
        k
        for k, v in again.items()
        if v["metadata"]["resourceVersion"] != after[k]["metadata"]["resourceVersion"]
    ]
    assert not moved, "\n".join(f"{k}: {_changes(tool, after[k], again[k])}" for k in moved)
