"""Fleet-scale benchmark of the credential-free check: a synthetic fleet of N standalone clusters.

Each cluster has a custom pool and six MachineSets over three zones (managed and pinned), so about ten
registrations per cluster. With ``--karpenter`` every cluster also runs self-managed Karpenter (two node
classes booting through S3 pointers, a dynamic and a static NodePool), its declared version cycling through
every Karpenter minor nodefleet ships CRDs for, so ``crd-schema`` loads and applies every upstream Karpenter
CRD set (18 registrations per cluster). The check runs the real program under the mock runtime and evaluates
every policy of the pack, exactly as `python -m nodefleet check` does; the time of each run (wall, and CPU
seconds of the process, which other work on a shared machine sways less) and the per-object cost are
reported, so linear growth is visible.

    venv/bin/python -m bench.scale                 # 10, 25, 50, 100 clusters
    venv/bin/python -m bench.scale --sizes 100 --json
    venv/bin/python -m bench.scale --karpenter     # with self-managed Karpenter on every cluster
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from mockruntime.evaluate import evaluate_run
from mockruntime.run import run_program
from nodefleet.apiserver.store import load_index
from policies.pack import POLICIES

#: A stand-in for the MCS CA bundle the Karpenter payloads carry (a stack secret in real stacks).
_CA = "-----BEGIN CERTIFICATE-----\nMIIB-bench\n-----END CERTIFICATE-----\n"


def _karpenter(i: int, infra: str, minors: list[str]) -> dict[str, Any]:
    version = minors[i % len(minors)]
    dynamic: dict[str, Any] = {
        "name": "general",
        "nodeClass": "general",
        "capacityTypes": ["on-demand", "spot"],
    }
    if int(version.split(".")[1]) >= 14:
        dynamic["disruption"] = {"consolidationPolicy": "Balanced"}
    return {
        "bucket": f"{infra}-ignition",
        "nodeRole": f"{infra}-karpenter-node",
        "instanceProfile": f"{infra}-karpenter-node",
        "clusterDomain": f"c{i:03d}.example.com",
        "version": version,
        "featureGates": ["StaticCapacity"],
        "nodeClasses": [
            {"name": "general", "configVersion": "rendered-worker-5f1c0e4b2a9d"},
            {"name": "arm", "architecture": "arm64", "configVersion": "rendered-worker-5f1c0e4b2a9d"},
        ],
        "nodePools": [
            dynamic,
            {
                "name": "arm",
                "nodeClass": "arm",
                "architectures": ["arm64"],
                "replicas": 3,
                "limits": {"nodes": 4},
            },
        ],
    }


def synthetic_fleet(clusters: int, *, karpenter: bool = False) -> dict[str, Any]:
    minors = load_index().karpenter_minors("aws")

    def cluster(i: int) -> dict[str, Any]:
        infra = f"c{i:03d}-x7k2p"
        out: dict[str, Any] = {
            "name": f"c{i:03d}",
            "infraId": infra,
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
        if karpenter:
            out["karpenter"] = _karpenter(i, infra, minors)
        return out

    return {"output": {"mode": "render"}, "clusters": [cluster(i) for i in range(clusters)]}


def measure(clusters: int, *, karpenter: bool = False) -> dict[str, Any]:
    config: dict[str, Any] = {"nodefleet:fleet": synthetic_fleet(clusters, karpenter=karpenter)}
    if karpenter:
        config["nodefleet:mcsCaBundle"] = _CA
    started, cpu_started = time.perf_counter(), time.process_time()
    run = run_program("scale", config)
    program, program_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    violations = evaluate_run(run, POLICIES)
    total, total_cpu = time.perf_counter() - started, time.process_time() - cpu_started
    return {
        "clusters": clusters,
        "resources": len(run.registrations),
        "policies": len(POLICIES),
        "mandatory": sum(v.level == "mandatory" for v in violations),
        "program_s": round(program, 3),
        "policies_s": round(total - program, 3),
        "total_s": round(total, 3),
        "ms_per_resource": round(1000 * total / len(run.registrations), 3),
        # CPU seconds of this process: on a shared machine, less swayed by other work than wall time.
        "program_cpu_s": round(program_cpu, 3),
        "policies_cpu_s": round(total_cpu - program_cpu, 3),
        "load_1min": round(os.getloadavg()[0], 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[10, 25, 50, 100])
    parser.add_argument(
        "--karpenter",
        action="store_true",
        help="self-managed Karpenter on every cluster, every shipped minor",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(n, karpenter=args.karpenter) for n in args.sizes]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    print(
        f"{'clusters':>8} {'resources':>9} {'program s':>9} {'policies s':>10} {'total s':>8} {'ms/res':>7} "
        f"{'load':>5}"
    )
    for r in rows:
        print(
            f"{r['clusters']:>8} {r['resources']:>9} {r['program_s']:>9} {r['policies_s']:>10} "
            f"{r['total_s']:>8} {r['ms_per_resource']:>7} {r['load_1min']:>5}"
        )
    print(
        f"{rows[0]['policies']} policies; mandatory violations: {', '.join(str(r['mandatory']) for r in rows)}"
    )


if __name__ == "__main__":
    main()
