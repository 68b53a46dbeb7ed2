"""Fleet runner timing: every example stack plus generated ones, one process per stack, ``--parallel N``;
and the wave plan of a large synthetic fleet.

The generated stacks are variations of the example stacks (standalone and hosted, renamed, with other
infra IDs, zones and replica counts), written with the example stacks into a scratch stacks directory.
``--broken`` adds one stack with a typo (exit 2) and one with a stale boot image (exit 1), to show what a
failing stack does to the others: nothing; they run and report as usual, and the fleet exits with the
worst code.

    venv/bin/python -m bench.fleet                       # 4 examples + 20 generated, --parallel 2
    venv/bin/python -m bench.fleet --generated 20 --broken --command check --json
    venv/bin/python -m bench.fleet --generated 96          # `fleet check` over 100 stacks
    venv/bin/python -m bench.fleet --plan 500              # 500 stacks planned into waves (`fleet matrix`)

Generated stacks are spread over the waves as a fleet would be: 1 in 50 a canary, 1 in 10 early, 1 in 20
last, the rest main. Peak memory is the largest resident set of any process the fleet ran (each stack's own
process, or the runner), from ``getrusage(RUSAGE_CHILDREN)``: the memory one job of the workflow needs per
stack it runs at a time.
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from mockruntime.run import PROJECT_DIR, stack_fleet

_ZONES = ("a", "b", "c")
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def _standalone(i: int) -> dict[str, Any]:
    fleet = stack_fleet("dev")
    cluster = fleet["clusters"][0]
    cluster["name"] = f"std-{i:02d}"
    cluster["infraId"] = f"std{i:02d}-x7k2p"
    for j, ms in enumerate(cluster["machineSets"]):
        ms["zone"] = f"us-east-1{_ZONES[(i + j) % 3]}" if j < 2 else ms["zone"]
        ms["replicas"] = 1 + (i + j) % 4
    # Two MachineSets may land in one zone after the shuffle; keep names unique by role and zone.
    seen = set()
    for ms in cluster["machineSets"]:
        while (ms["name"], ms["zone"]) in seen:
            ms["zone"] = f"us-east-1{_ZONES[(_ZONES.index(ms['zone'][-1]) + 1) % 3]}"
        seen.add((ms["name"], ms["zone"]))
    return fleet


def _hosted(i: int) -> dict[str, Any]:
    fleet = stack_fleet("hosted")
    cluster = fleet["clusters"][0]
    cluster["name"] = f"hcp-{i:02d}"
    cluster["infraId"] = f"hcp{i:02d}-4kq8z"
    cluster["release"] = ("4.22.3", "4.22.4", "4.22.5")[i % 3]
    cluster["nodePools"][0]["replicas"] = 1 + i % 3
    return fleet


def _wave(i: int) -> str:
    if i % 50 == 0:
        return "canary"
    if i % 10 == 1:
        return "early"
    return "last" if i % 20 == 7 else "main"


def write_fleet(directory: Path, generated: int, broken: bool) -> list[str]:
    """The example stacks and ``generated`` variations in ``directory``; returns the stack names."""
    directory.mkdir(parents=True, exist_ok=True)
    for path in sorted((PROJECT_DIR / "stacks").glob("Pulumi.*.yaml")):
        shutil.copy(path, directory / path.name)
    for i in range(generated):
        fleet = _hosted(i) if i % 2 else _standalone(i)
        fleet["wave"] = _wave(i)
        name = f"gen-{i:02d}"
        (directory / f"Pulumi.{name}.yaml").write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    if broken:
        typo = copy.deepcopy(stack_fleet("dev"))
        typo["clusters"][0]["machineSets"][0]["instanceTyp"] = typo["clusters"][0]["machineSets"][0].pop(
            "instanceType"
        )
        (directory / "Pulumi.broken-typo.yaml").write_text(
            yaml.safe_dump({"config": {"nodefleet:fleet": typo}})
        )
        shutil.copy(PROJECT_DIR / "tests" / "stacks" / "Pulumi.stale-boot-images.yaml", directory)
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in directory.glob("Pulumi.*.yaml")
    )


#: Regions of the generated management clusters, in turn (a hosted cluster lives in its management cluster's).
_REGIONS = ("us-east-2", "us-west-2", "eu-west-1", "ap-southeast-1")


def management_cluster(m: int) -> str:
    return f"mgmt-{m:03d}"


def write_registry(directory: Path, management_clusters: int) -> None:
    """``nodefleet-fleet.yaml`` with ``management_clusters`` HyperShift management clusters over four regions."""
    registry = {
        "managementClusters": [
            {
                "name": management_cluster(m),
                "region": _REGIONS[m % len(_REGIONS)],
                "hypershift": {"supportedVersions": ["4.22", "4.21", "4.20"]},
            }
            for m in range(management_clusters)
        ],
        "gitops": {"repoURL": "https://git.example.com/platform/fleet.git", "branch": "nodefleet-rendered"},
    }
    (directory / "nodefleet-fleet.yaml").write_text(yaml.safe_dump(registry, sort_keys=False))


@functools.cache
def _hosted_example() -> dict[str, Any]:
    return stack_fleet("hosted")


def scaled_hosted(i: int, management_clusters: int) -> dict[str, Any]:
    """Hosted cluster ``i`` of a generated fleet: the ``hosted`` example (AutoNode, so a management and a hosted
    folder), renamed, on management cluster ``i mod management_clusters`` in that cluster's region."""
    fleet = copy.deepcopy(_hosted_example())
    cluster = fleet["clusters"][0]
    m = i % management_clusters
    region = _REGIONS[m % len(_REGIONS)]
    name = f"hc-{i:05d}"
    cluster["name"] = name
    cluster["infraId"] = f"hc{i:05d}-4kq8z"
    cluster["region"] = region
    cluster["zone"] = f"{region}a"
    cluster["managementCluster"] = management_cluster(m)
    cluster["issuerUrl"] = f"https://{name}-oidc.s3.{region}.amazonaws.com/{name}"
    cluster["release"] = ("4.22.3", "4.22.4", "4.22.5")[i % 3]
    kms = (cluster.get("secretEncryption") or {}).get("kms")
    if kms:
        kms["activeKeyARN"] = kms["activeKeyARN"].replace("us-east-2", region)
    fleet["wave"] = _wave(i)
    return fleet


def write_scaled_fleet(directory: Path, stacks: int, management_clusters: int) -> list[str]:
    """``stacks`` stack files, one hosted cluster each, spread over ``management_clusters`` management clusters
    declared in the registry beside them (the shape of issue 40: 10,000 hosted clusters on 100 management
    clusters); returns the stack names."""
    directory.mkdir(parents=True, exist_ok=True)
    write_registry(directory, management_clusters)
    names = []
    for i in range(stacks):
        name = f"hc-{i:05d}"
        text = yaml.dump(
            {"config": {"nodefleet:fleet": scaled_hosted(i, management_clusters)}},
            Dumper=_DUMPER,
            sort_keys=False,
        )
        (directory / f"Pulumi.{name}.yaml").write_text(text)
        names.append(name)
    return names


def plan(count: int, as_json: bool) -> int:
    """``count`` synthetic stacks (the examples and variations of them) planned into waves by ``fleet
    matrix``, as the workflow's first job runs it: one process, reading every stack file."""
    with tempfile.TemporaryDirectory(prefix="nodefleet-plan-") as tmp:
        stacks = Path(tmp) / "stacks"
        started = time.perf_counter()
        names = write_fleet(stacks, count - len(list((PROJECT_DIR / "stacks").glob("Pulumi.*.yaml"))), False)
        written = time.perf_counter() - started
        cmd = [sys.executable, "-m", "nodefleet", "fleet", "matrix", "--stacks-dir", str(stacks)]
        started = time.perf_counter()
        proc = subprocess.run(cmd, cwd=PROJECT_DIR, capture_output=True, text=True)
        wall = time.perf_counter() - started
        changed = Path(tmp) / "changed.txt"
        # Every seventh stack file changed, named as the matrix names files outside the project: by path.
        changed.write_text("".join(f"{stacks / f'Pulumi.{n}.yaml'}\n" for n in names[::7]))
        started = time.perf_counter()
        touched = subprocess.run(
            [*cmd, "--changed-files", str(changed)], cwd=PROJECT_DIR, capture_output=True, text=True
        )
        touched_total = json.loads(touched.stdout)["total"] if touched.returncode == 0 else None
        wall_touched = time.perf_counter() - started
    if proc.returncode != 0:
        print(proc.stderr, file=sys.stderr)
        return proc.returncode
    out = json.loads(proc.stdout)
    result: dict[str, Any] = {
        "stacks": len(names),
        "touchedByChange": touched_total,
        "writeSeconds": round(written, 2),
        "matrixWallSeconds": round(wall, 2),
        "matrixChangedFilesWallSeconds": round(wall_touched, 2),
        "waves": {w: {"stacks": v["size"], "jobs": v["jobs"]} for w, v in out["waves"].items()},
        "peakRssMiB": round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1),
    }
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        print(
            f"fleet matrix: {result['stacks']} stacks planned into waves in {result['matrixWallSeconds']} s wall "
            f"(one process, every stack file read); with --changed-files touching {result['touchedByChange']}: "
            f"{result['matrixChangedFilesWallSeconds']} s; "
            f"peak RSS {result['peakRssMiB']} MiB"
        )
        for wave, v in result["waves"].items():
            print(f"  {wave:<7} {v['stacks']:>4} stacks in {v['jobs']:>3} jobs")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=int, metavar="N", help="plan N synthetic stacks into waves and stop")
    parser.add_argument("--generated", type=int, default=20)
    parser.add_argument("--parallel", type=int, default=2)
    parser.add_argument("--command", default="check", choices=("check", "forecast", "render"))
    parser.add_argument(
        "--broken", action="store_true", help="add a stack with a typo and one with violations"
    )
    parser.add_argument(
        "--no-fork", action="store_true", help="a fresh interpreter per stack, as before the fork server"
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    if args.plan:
        return plan(args.plan, args.json)
    with tempfile.TemporaryDirectory(prefix="nodefleet-fleet-") as tmp:
        names = write_fleet(Path(tmp) / "stacks", args.generated, args.broken)
        cmd = [
            sys.executable, "-m", "nodefleet", "fleet", args.command, "--stacks-dir", str(Path(tmp) / "stacks"),
            "--parallel", str(args.parallel), "--json",
        ]  # fmt: skip
        if args.command == "render":
            cmd += ["--out", str(Path(tmp) / "rendered")]
        env = {**os.environ, "NODEFLEET_FLEET_FORK": "0"} if args.no_fork else None
        proc = subprocess.run(cmd, cwd=PROJECT_DIR, capture_output=True, text=True, env=env)
    summary = json.loads(proc.stdout)
    if "stacks" not in summary:  # the fleet refused the generated stacks as a whole
        print(
            f"fleet {args.command} refused the fleet (exit {proc.returncode}):\n{proc.stderr}",
            file=sys.stderr,
        )
        return proc.returncode or 1
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    summary["peakRssMiB"] = round(usage.ru_maxrss / 1024, 1)
    # CPU time of every process the fleet ran (the runner included): on a busy machine wall times stretch,
    # CPU time per stack is what a runner of its own would spend.
    # Forked stacks are the fork server's children, not ours: their CPU time comes from the fleet's JSON. The
    # fork server's one-time imports (about 1.3 s) are not counted.
    forked = sum(s["cpu"] or 0 for s in summary["stacks"])
    summary["cpuSeconds"] = round(usage.ru_utime + usage.ru_stime + forked, 1)
    if args.json:
        print(json.dumps(summary, indent=2))
        return 0
    times = sorted(s["seconds"] for s in summary["stacks"])
    median = statistics.median(times)
    print(
        f"fleet {args.command}: {len(names)} stacks, --parallel {args.parallel}: wall {summary['wallSeconds']} s, "
        f"per stack min {times[0]} / median {median:.2f} / max {times[-1]} s, "
        f"sum {sum(times):.1f} s; CPU {summary['cpuSeconds']} s in all ({summary['cpuSeconds'] / len(names):.2f} s "
        f"a stack); peak RSS of one process {summary['peakRssMiB']} MiB; fleet exit {proc.returncode}"
    )
    print("  waves: " + ", ".join(f"{w['wave']} {len(w['stacks'])}" for w in summary["waves"]))
    for s in summary["stacks"]:
        print(f"  {s['stack']:<22} exit {s['exit']}  {s['seconds']:6.2f} s  {s['summary'] or s['error']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
