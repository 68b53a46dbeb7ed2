"""How the real GitOps controllers' work grows with the fleet: the scenario of tests/test_gitops_scale.py (hosted
clusters, ten to a stack, over four management API servers; Flux then Argo CD on the same servers) at several
sizes, and what the growth predicts for 10,000 folders.

    venv/bin/python -m bench.gitops_scale                      # 50 and 200 folders, both tools
    venv/bin/python -m bench.gitops_scale --folders 50 100 200 300 --tools flux

Prints one JSON object: per size and tool the seconds from the wiring applied to every folder applied and
healthy (and to each wave), the CPU seconds of each process (the tool's controllers, the Git server, the hub's and
the management clusters' API servers, the etcd they share) and their resident memory, and the largest object of
the wiring's kinds with its status; then, per tool, the controllers' CPU per folder between the smallest and the
largest size and the straight line through them at 10,000 folders. Needs Go, git and openssl, like the tests.
"""

from __future__ import annotations

import argparse
import importlib
import json
import tempfile
import time
from pathlib import Path
from typing import Any

PER_STACK = 10


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--folders", nargs="+", type=int, default=[50, 200], help="fleet sizes (multiples of 10)"
    )
    parser.add_argument("--tools", nargs="+", choices=("flux", "argocd"), default=["flux", "argocd"])
    parser.add_argument("--management-clusters", type=int, default=4)
    args = parser.parse_args()
    gitopsctl = importlib.import_module("tests.gitopsctl")
    testcluster = importlib.import_module("tests.testcluster")
    scale = importlib.import_module("tests.gitopsscale")
    out: dict[str, Any] = {"sizes": {}}
    clusters = testcluster.TestClusters()
    try:
        ctl = gitopsctl.Controllers(clusters)
        try:
            for tool in args.tools:
                ctl.started(tool)
            with tempfile.TemporaryDirectory() as work:
                for n in args.folders:
                    t0 = time.monotonic()
                    with scale.published(ctl, clusters, Path(work) / str(n), n // PER_STACK, PER_STACK,
                                         args.management_clusters, name=f"bench{n}") as fleet:  # fmt: skip
                        size: dict[str, Any] = {"publishAndWireSeconds": round(time.monotonic() - t0, 1)}
                        for tool in args.tools:
                            rollout = scale.roll_out(ctl, clusters, fleet, tool)
                            size[tool] = rollout.figures()
                            size[tool]["outOfOrder"] = rollout.out_of_order[:5]
                            scale.remove(ctl, fleet, tool)
                        out["sizes"][n] = size
        finally:
            ctl.close()
    finally:
        clusters.close()
    small, large = min(args.folders), max(args.folders)
    if small != large:
        out["growth"] = {}
        for tool in args.tools:
            a, b = out["sizes"][small][tool], out["sizes"][large][tool]
            per = (b["controllerCpuSeconds"] - a["controllerCpuSeconds"]) / (large - small)
            seconds = (b["secondsToAllApplied"] - a["secondsToAllApplied"]) / (large - small)
            out["growth"][tool] = {
                "controllerCpuSecondsPerFolder": round(per, 3),
                "controllerCpuSecondsAt10000": round(a["controllerCpuSeconds"] + per * (10000 - small)),
                "secondsPerFolder": round(seconds, 3),
                "secondsAt10000": round(a["secondsToAllApplied"] + seconds * (10000 - small)),
            }
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
