"""The credentials the wiring reads, made by ``gitops``'s ``secrets.sh`` with the real ``kubectl`` (v1.36.3) and
``argocd`` CLI (v3.6.1, logged in to ``argocd-server``), for a fleet with two management clusters, each its own
test API server, then used by the real Flux and Argo CD (tests/gitopsctl.py).

The fleet: the registry ``stacks/nodefleet-fleet.yaml`` names ``mgmt-use2-a`` and ``mgmt-use2-b`` with the paths
of their kubeconfigs (a CA file each, as a user's kubeconfig has) and the hub's; the shipped ``hosted`` stack
(AutoNode) on ``mgmt-use2-a``, its hosted side on an API server of its own, and the example fleet's ``east-b``
(a hosted cluster ``shop``) on ``mgmt-use2-b``. The test plays HyperShift by writing the hosted cluster's
``prod-east-admin-kubeconfig`` on its management cluster; everything else is made by the script as
docs/gitops.md tells users to run it.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.applymode import HOSTED_KARPENTER
from tests.gitopsctl import ARGOCD_NAMESPACE, FLUX_NAMESPACE, Controllers, apply_objects, flattened_kubeconfig
from tests.gitopsfleet import (
    TOOL_MANAGER,
    Repo,
    annotate,
    applications,
    applied_at,
    compare,
    get,
    git,
    listed,
    managers,
    play_controllers,
    refresh_argocd,
    refresh_flux,
    wait_for,
)
from tests.test_gitops_controllers import _remove_wiring
from tests.testcluster import PROJECT, ApiServer, TestClusters, kubectl

pytestmark = pytest.mark.gitops

MANAGEMENT = ("mgmt-use2-a", "mgmt-use2-b")
HOSTED_SIDE = "prod-east-hosted"
#: rendered/<stack>/<folder> -> the API server it must land on.
DESTINATIONS = {
    "rendered/hosted/prod-east": "mgmt-use2-a",
    "rendered/hosted/prod-east-hosted": HOSTED_SIDE,
    "rendered/east-b/shop": "mgmt-use2-b",
}


@dataclass
class Fleet:
    """The two-management-cluster fleet's repository, its API servers and the environment ``secrets.sh`` runs
    in, for one tool."""

    tool: str
    repo: Repo
    servers: dict[str, ApiServer]
    env: dict[str, str]


def _registry(servers: dict[str, ApiServer], hub: ApiServer) -> str:
    return yaml.safe_dump(
        {
            "managementClusters": [
                {"name": name, "region": "us-east-2", "kubeconfig": str(servers[name].kubeconfig),
                 "hypershift": {"supportedVersions": ["4.22", "4.21"]}}
                for name in MANAGEMENT
            ],
            "gitops": {"branch": "nodefleet-rendered", "kubeconfig": str(hub.kubeconfig)},
        },
        sort_keys=False,
    )  # fmt: skip


def _stacks() -> dict[str, str]:
    hosted = (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text()
    hosted, n = re.subn(
        r"(\n( +)namespace: clusters\n)", r"\1\2managementCluster: mgmt-use2-a\n", hosted, count=1
    )
    assert n == 1, "the shipped hosted stack no longer names its namespace: place managementCluster elsewhere"
    east_b = (PROJECT / "tests" / "fleet" / "regional" / "Pulumi.east-b.yaml").read_text()
    return {"hosted": hosted, "east-b": east_b}


@pytest.fixture(scope="module", params=["flux", "argocd"])
def fleet(
    request: pytest.FixtureRequest,
    gitops_controllers: Controllers,
    test_clusters: TestClusters,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Fleet]:
    tool = request.param
    ctl = gitops_controllers.started(tool)
    tmp = tmp_path_factory.mktemp(f"credentials-{tool}")
    # The user's tools: the real kubectl and argocd, first on PATH; a HOME of its own (no ~/.kube/config,
    # no earlier `argocd login`).
    bin_dir, home = tmp / "bin", tmp / "home"
    bin_dir.mkdir()
    home.mkdir()
    (bin_dir / "kubectl").symlink_to(kubectl())
    env = {"PATH": f"{bin_dir}:{os.environ.get('PATH', '')}", "HOME": str(home),
           "NODEFLEET_HUB_KUBECONFIG": str(ctl.hub.kubeconfig)}  # fmt: skip
    if tool == "argocd":
        (bin_dir / "argocd").symlink_to(ctl.built["argocd"].binary)
        address = ctl.argocd_server()
        initial = get(ctl.hub_client, "v1", "Secret", "argocd-initial-admin-secret", ARGOCD_NAMESPACE)
        password = base64.b64decode(initial["data"]["password"]).decode()
        login = _run(["argocd", "login", address, "--plaintext", "--username", "admin", "--password", password],
                     env)  # fmt: skip
        assert login.returncode == 0, login.stdout + login.stderr
    with ExitStack() as stop:
        servers = {
            "mgmt-use2-a": stop.enter_context(test_clusters.fresh(f"credentials-{tool}-mgmt-use2-a")),
            "mgmt-use2-b": stop.enter_context(test_clusters.fresh(f"credentials-{tool}-mgmt-use2-b")),
            HOSTED_SIDE: stop.enter_context(
                test_clusters.fresh(f"credentials-{tool}-{HOSTED_SIDE}", HOSTED_KARPENTER)
            ),
        }
        repo = Repo.create(tmp / "repo", ctl.repository(f"credentials-{tool}"), _stacks())
        (repo.path / "stacks" / "nodefleet-fleet.yaml").write_text(_registry(servers, ctl.hub))
        git(repo.path, "add", "-A")
        git(repo.path, "commit", "-qm", "the registry")
        before = set(_credentials(ctl, tool))
        yield Fleet(tool, repo, servers, env)
        # The hub is the session's: leave it as the next module expects it, without this fleet's wiring or
        # the Secrets pointing at API servers about to stop.
        _remove_wiring(ctl, tool)
        namespace = FLUX_NAMESPACE if tool == "flux" else ARGOCD_NAMESPACE
        api = ctl.hub_client.resources.get(api_version="v1", kind="Secret")
        for name in set(_credentials(ctl, tool)) - before:
            ctl.hub_client.delete(api, name=name, namespace=namespace)


def _run(argv: list[str], env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env={**os.environ, **env}, capture_output=True, text=True, timeout=600
    )


def _play_hypershift_kubeconfig(fleet: Fleet) -> None:
    """What HyperShift writes once the hosted control plane is up: ``<cluster>-admin-kubeconfig`` in the
    HostedCluster's namespace on its management cluster, the kubeconfig (CA inline) under ``kubeconfig``."""
    client = fleet.servers["mgmt-use2-a"].dynamic()
    apply_objects(
        client,
        [
            {
                "apiVersion": "v1",
                "kind": "Secret",
                "metadata": {"name": "prod-east-admin-kubeconfig", "namespace": "clusters"},
                "stringData": {"kubeconfig": flattened_kubeconfig(fleet.servers[HOSTED_SIDE])},
            }
        ],
        manager="hypershift-operator",
    )


def _credentials(ctl: Controllers, tool: str) -> dict[str, tuple[str, dict[str, str]]]:
    """The Secrets the tool reads credentials from on the hub: name -> (resourceVersion, data)."""
    if tool == "flux":
        secrets = listed(ctl.hub_client, "v1", "Secret", FLUX_NAMESPACE)
    else:
        secrets = [s for s in listed(ctl.hub_client, "v1", "Secret", ARGOCD_NAMESPACE)
                   if (s["metadata"].get("labels") or {}).get("argocd.argoproj.io/secret-type") == "cluster"]  # fmt: skip
    return {s["metadata"]["name"]: (s["metadata"]["resourceVersion"], s.get("data") or {}) for s in secrets}


def test_secrets_sh_on_the_real_tools_wires_two_management_clusters_and_a_hosted_side(
    gitops_controllers: Controllers, fleet: Fleet
) -> None:
    ctl, repo, tool = gitops_controllers, fleet.repo, fleet.tool
    commit = repo.publish()
    written = repo.gitops("--tool", tool)
    wiring = written[tool]
    if "argocd-cm" in written:
        ctl.apply(written["argocd-cm"], manager="nodefleet")
    script = repo.path / "gitops" / "secrets.sh"
    before = _credentials(ctl, tool)  # the hub is the session's: other tests' Secrets are there too

    def changed() -> dict[str, tuple[str, dict[str, str]]]:
        return {name: v for name, v in _credentials(ctl, tool).items() if before.get(name) != v}

    # Run before the hosted control plane is up: the management clusters are registered, and the script
    # stops at the hosted cluster whose admin kubeconfig HyperShift has not written, naming it.
    early = _run(["bash", str(script)], fleet.env, cwd=repo.path)
    said = "HyperShift has not written clusters/prod-east-admin-kubeconfig (key kubeconfig) on management cluster"
    assert early.returncode == 1 and said in early.stderr, early.stdout + early.stderr
    assert len(changed()) == 2, sorted(changed())
    # The wiring, applied: both management sides sync through the Secrets the script made.
    ctl.apply(wiring)
    names = {f"nodefleet-{folder.split('/')[1]}-{folder.split('/')[2]}" for folder in DESTINATIONS}
    hosted_side = f"nodefleet-hosted-{HOSTED_SIDE}"
    refresh = refresh_flux if tool == "flux" else refresh_argocd
    refresh(ctl)
    wait_for(
        f"both management sides applied at {commit[:12]} and healthy",
        lambda: (
            (play_controllers(*fleet.servers.values()) or True)
            and (a := applied_at(ctl, tool, commit))
            and all(a.get(n) for n in names - {hosted_side})
        ),
        ctl,
        tool,
    )
    # HyperShift brings the control plane up and writes its admin kubeconfig; the script, run again, registers
    # the hosted side.
    _play_hypershift_kubeconfig(fleet)
    first = _run(["bash", str(script)], fleet.env, cwd=repo.path)
    assert first.returncode == 0, f"secrets.sh failed ({first.returncode}):\n{first.stdout}\n{first.stderr}"
    made = changed()
    # One Secret per destination, under the name (and for Flux the key) the wiring reads: both management
    # clusters and the hosted side.
    if tool == "flux":
        refs = {d["spec"]["kubeConfig"]["secretRef"]["name"]: d["spec"]["kubeConfig"]["secretRef"].get("key", "value")
                for d in wiring if d["kind"] == "Kustomization"}  # fmt: skip
        assert len(refs) == 3 and set(made) == set(refs), (sorted(made), refs)
        assert all(key in made[name][1] for name, key in refs.items()), (made, refs)
        # `flux reconcile kustomization`: not the minute of its retryInterval
        annotate(ctl, "kustomize.toolkit.fluxcd.io/v1", "Kustomization", hosted_side, FLUX_NAMESPACE,
                 {"reconcile.fluxcd.io/requestedAt": "registered"})  # fmt: skip
    else:
        assert len(made) == 3, sorted(made)
        refresh(ctl)
    wait_for(
        f"every folder applied at {commit[:12]} and healthy, through the Secrets secrets.sh made",
        lambda: (
            (play_controllers(*fleet.servers.values()) or True)
            and (a := applied_at(ctl, tool, commit))
            and set(a) == names
            and all(a.values())
        ),
        ctl,
        tool,
    )
    # Each folder's objects are on its own API server, applied by the tool, and not on the other management
    # cluster's.
    problems = []
    for folder, objects in repo.rendered(commit).items():
        home = DESTINATIONS[folder]
        others = [name for name in MANAGEMENT if name != home]
        for manifest in objects:
            meta = manifest["metadata"]
            where = f"{folder}: {manifest['kind']} {meta.get('namespace', '')}/{meta['name']}"
            live = get(fleet.servers[home], manifest["apiVersion"], manifest["kind"], meta["name"],
                       meta.get("namespace"))  # fmt: skip
            if tool == "argocd" and manifest["kind"] == "Namespace":
                # Applied by no Application: the one of its folder creates it (its destination namespace).
                if live is None:
                    problems.append(f"{where}: not created")
                continue
            problems += [f"{where}: {p}" for p in compare(manifest, live, tool)]
            if live is not None and TOOL_MANAGER[tool] not in managers(live):
                problems.append(f"{where}: not applied by {TOOL_MANAGER[tool]} ({sorted(managers(live))})")
            for other in others:
                if manifest["kind"] == "Namespace" and meta["name"] == "clusters":
                    continue  # both management clusters' folders render HyperShift's namespace
                if _exists(fleet.servers[other], manifest, meta):
                    problems.append(f"{where}: also on {other}")
    assert not problems, "\n".join(problems)
    if tool == "argocd":
        # Registered under the destination names the Applications use, Argo CD reaches each cluster as the
        # ServiceAccount `argocd cluster add` made there, not as its admin.
        registered = {base64.b64decode(data["name"]).decode() for _, data in made.values()}
        destinations = {a["spec"]["destination"]["name"] for a in applications(ctl).values()}
        assert registered == destinations, (registered, destinations)
        for name, (_, data) in made.items():
            config = base64.b64decode(data["config"]).decode()
            assert not any(s.token in config for s in fleet.servers.values()), (
                f"{name} carries an admin token"
            )

    again = _run(["bash", str(script)], fleet.env, cwd=repo.path)
    assert again.returncode == 0, (
        f"secrets.sh rerun failed ({again.returncode}):\n{again.stdout}\n{again.stderr}"
    )
    after = _credentials(ctl, tool)
    assert {name: after.get(name) for name in made} == made, "a rerun of secrets.sh changed the Secrets"


def _exists(server: ApiServer, manifest: dict[str, Any], meta: dict[str, Any]) -> bool:
    client = server.dynamic()
    try:
        client.resources.get(api_version=manifest["apiVersion"], kind=manifest["kind"])
    except Exception:
        return False  # the kind is not served there: nothing of it can be there
    return (
        get(client, manifest["apiVersion"], manifest["kind"], meta["name"], meta.get("namespace")) is not None
    )
