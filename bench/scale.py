"""Fleet-scale benchmark of the credential-free check: a synthetic fleet of N standalone clusters.

Each cluster has a custom pool and six MachineSets over three zones (managed and pinned), so about ten
registrations per cluster. The check runs the real program under the mock runtime and evaluates every
policy of the pack, exactly as `python -m nodefleet check` does; the time of each run and the per-object
cost are reported, so linear growth is visible.

    venv/bin/python -m bench.scale                 # 10, 25, 50, 100 clusters
    venv/bin/python -m bench.scale --sizes 100 --json
"""

from __future__ import annotations

import argparse
import json
import time
from typing import Any

from harness.evaluate import evaluate_run
from harness.mockrun import run_program
from policies.pack import POLICIES


def synthetic_fleet(clusters: int) -> dict[str, Any]:
    def cluster(i: int) -> dict[str, Any]:
        return {
            "name": f"c{i:03d}",
            "infraId": f"c{i:03d}-x7k2p",
            "region": "us-east-1",
            "release": "5.0.0-ec.2",
            "catalog": "catalogs/coreos-bootimages-5.0.yaml",
            "osImageStream": "rhel-9",  # upgraded from 4.x, like the dev stack: no stream advice to report
            "pools": [{"name": "infra"}],
            "machineSets": [
                {
                    "name": role,
                    "zone": f"us-east-1{zone}",
                    "pool": "infra" if role == "infra" else "worker",
                    "bootImage": "managed" if zone == "a" else "pinned",
                }
                for role in ("worker", "infra")
                for zone in "abc"
            ],
        }

    return {"output": {"mode": "render"}, "clusters": [cluster(i) for i in range(clusters)]}


def measure(clusters: int) -> dict[str, Any]:
    config = {"nodefleet:fleet": synthetic_fleet(clusters)}
    started = time.perf_counter()
    run = run_program("scale", config)
    program = time.perf_counter() - started
    violations = evaluate_run(run, POLICIES)
    total = time.perf_counter() - started
    return {
        "clusters": clusters,
        "resources": len(run.registrations),
        "mandatory": sum(v.level == "mandatory" for v in violations),
        "program_s": round(program, 3),
        "policies_s": round(total - program, 3),
        "total_s": round(total, 3),
        "ms_per_resource": round(1000 * total / len(run.registrations), 3),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(n) for n in args.sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{'clusters':>8} {'resources':>9} {'program s':>9} {'policies s':>10} {'total s':>8} {'ms/res':>7}"
    )
    for r in rows:
        print(
            f"{r['clusters']:>8} {r['resources']:>9} {r['program_s']:>9} {r['policies_s']:>10} "
            f"{r['total_s']:>8} {r['ms_per_resource']:>7}"
        )


if __name__ == "__main__":
    main()
