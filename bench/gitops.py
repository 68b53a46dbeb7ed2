"""How long the GitOps controllers take: their builds, the fixture's start-up, and a push to applied, per wave.

    venv/bin/python -m bench.gitops [--tools flux argocd] [--build-into DIR]

Uses the suite's own fixture (tests/gitopsctl.py) and pipeline helpers (tests/gitopsfleet.py): the shipped
``dev`` (canary) and ``hosted`` (main) stacks, published by ``scripts/pipeline publish`` and wired by
``python -m nodefleet gitops``, every cluster registered first. Prints one JSON object: seconds to build
(0 when the binaries are cached; ``--build-into`` builds into an empty folder to time a build with a warm Go
build cache), to start the hub and each tool, and from the push (the ``publish`` commit being pushed) to each
folder reported applied and healthy at that commit, per folder, with the wave it is in. Needs Go, git and
openssl, like the tests.
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

PROJECT = Path(__file__).resolve().parent.parent
STACKS = ("dev", "hosted")
#: The folder of each shipped stack and the test API server it goes to, as the wiring says.
DESTINATIONS = {
    "nodefleet-dev-dev": ("dev", "0-canary"),
    "nodefleet-hosted-prod-east": ("management", "2-main"),
    "nodefleet-hosted-prod-east-hosted": ("prod-east-hosted", "2-main"),
}


def _applied(fleet: Any, ctl: Any, tool: str, commit: str) -> dict[str, bool]:
    out = {}
    if tool == "flux":
        for name, k in fleet.kustomizations(ctl).items():
            status = k.get("status") or {}
            ready = fleet.condition(k, "Ready").get("status") == "True"
            out[name] = bool(ready and status.get("lastAppliedRevision", "").endswith(commit))
    else:
        for name, a in fleet.applications(ctl).items():
            status = a.get("status") or {}
            sync, health = status.get("sync") or {}, status.get("health") or {}
            out[name] = (sync.get("status"), sync.get("revision"), health.get("status")) == (
                "Synced",
                commit,
                "Healthy",
            )
    return out


def run_tool(ctl: Any, clusters: Any, tool: str, work: Path) -> dict[str, Any]:
    fleet = importlib.import_module("tests.gitopsfleet")
    applymode = importlib.import_module("tests.applymode")
    t0 = time.monotonic()
    ctl.started(tool)
    started = time.monotonic() - t0
    servers = {
        "dev": clusters.cluster(f"bench-{tool}-dev"),
        "management": clusters.cluster(f"bench-{tool}-management"),
        "prod-east-hosted": clusters.cluster(f"bench-{tool}-prod-east-hosted", applymode.HOSTED_KARPENTER),
    }
    applymode.prepare(servers["dev"])
    stacks = {s: (PROJECT / "stacks" / f"Pulumi.{s}.yaml").read_text() for s in STACKS}
    repo = fleet.Repo.create(work / tool, ctl.repository(f"bench-{tool}"), stacks)
    written = repo.gitops("--tool", tool)
    wiring = written[tool]
    if "argocd-cm" in written:
        ctl.apply(written["argocd-cm"], manager="nodefleet")
    for doc in wiring:  # the Secret (name, key) each Kustomization reads; an Argo CD cluster per server
        if doc["kind"] == "Kustomization":
            ref = doc["spec"]["kubeConfig"]["secretRef"]
            server = DESTINATIONS[doc["metadata"]["name"]][0]
            ctl.flux_kubeconfig_secret(servers[server], ref["name"], ref.get("key", "value"))
    if tool == "argocd":
        for name, server in servers.items():
            ctl.argocd_cluster(server, name)
    commit = repo.publish()
    pushed = time.monotonic()
    ctl.apply(wiring)
    first = _until_applied(fleet, ctl, tool, commit, pushed, servers)
    # A change to every folder (replica counts), pushed; the tools told at once, as a Git webhook does.
    for stack, old, new in (("dev", "replicas: 3", "replicas: 4"), ("hosted", "replicas: 2", "replicas: 3")):
        path = repo.path / "stacks" / f"Pulumi.{stack}.yaml"
        path.write_text(path.read_text().replace(old, new, 1))
    fleet.git(repo.path, "commit", "-qam", "more replicas")
    commit = repo.publish()
    pushed = time.monotonic()
    if tool == "flux":
        fleet.refresh_flux(ctl)
    else:
        fleet.refresh_argocd(ctl)
    second = _until_applied(fleet, ctl, tool, commit, pushed, servers)
    return {
        "start_seconds": round(started, 1),
        "first_sync_seconds": first,
        "push_to_applied_seconds": second,
    }


def _until_applied(
    fleet: Any, ctl: Any, tool: str, commit: str, since: float, servers: dict[str, Any]
) -> dict[str, Any]:
    """Seconds from ``since`` until each folder reports ``commit`` applied and healthy, with its wave."""
    done: dict[str, float] = {}
    deadline = since + importlib.import_module("tests.patience").STALL
    while len(done) < len(DESTINATIONS) and time.monotonic() < deadline:
        fleet.play_controllers(*servers.values())
        for name, ok in _applied(fleet, ctl, tool, commit).items():
            if ok and name not in done:
                done[name] = round(time.monotonic() - since, 1)
        time.sleep(0.2)
    return {n: {"wave": DESTINATIONS[n][1], "seconds": done.get(n)} for n in DESTINATIONS}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tools", nargs="+", choices=("flux", "argocd"), default=["flux", "argocd"])
    parser.add_argument(
        "--build-into", type=Path, help="build every controller into this (empty) folder first"
    )
    args = parser.parse_args()
    gitopsctl = importlib.import_module("tests.gitopsctl")
    testcluster = importlib.import_module("tests.testcluster")
    out: dict[str, Any] = {}
    if args.build_into:
        for recipe in gitopsctl.RECIPES:
            t0 = time.monotonic()
            gitopsctl.build(recipe, into=args.build_into)
            out[f"build_{recipe.name}_seconds"] = round(time.monotonic() - t0, 1)
    clusters = testcluster.TestClusters()
    try:
        t0 = time.monotonic()
        ctl = gitopsctl.Controllers(clusters)
        out["hub_start_seconds"] = round(time.monotonic() - t0, 1)
        try:
            with tempfile.TemporaryDirectory() as work:
                for tool in args.tools:
                    out[tool] = run_tool(ctl, clusters, tool, Path(work))
                    out[tool]["build_seconds"] = round(ctl.build_seconds[tool], 1)
        finally:
            ctl.close()
    finally:
        clusters.close()
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
