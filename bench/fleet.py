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
    venv/bin/python -m bench.fleet --scale 10000           # issue 40: 10,000 hosted clusters on 100 management
                                                           # clusters: matrix, gitops, the fleet judged (each
                                                           # with its stack-file cache cold, then warm), and
                                                           # `fleet check --changed-files` of ten of them

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


def _timed(
    cmd: list[str], env: dict[str, str] | None = None
) -> tuple[subprocess.CompletedProcess[str], float, float]:
    """``cmd`` run to its end: the result, wall seconds and CPU seconds (user and system) of the process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run(cmd, cwd=PROJECT_DIR, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        print(f"{' '.join(cmd[3:6])}: exit {proc.returncode}\n{proc.stderr[-2000:]}", file=sys.stderr)
    return proc, round(wall, 2), round(cpu, 2)


def _wiring_sizes(out: Path) -> dict[str, Any]:
    """The files ``gitops`` wrote and their largest objects (as JSON, the form the API server stores); each
    ApplicationSet's size with its status filled, as ``gitops`` computes it."""
    from nodefleet.render.wiring import LABEL_BARRIER, argocd_object_bytes

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    flux_file, argocd_file = out / "flux" / "kustomizations.yaml", out / "argocd" / "applicationset.yaml"
    flux = [d for d in yaml.load_all(flux_file.read_text(), Loader=loader) if d]
    appsets = [d for d in yaml.load_all(argocd_file.read_text(), Loader=loader) if d]
    kustomizations = [d for d in flux if d["kind"] == "Kustomization"]
    largest = max(kustomizations, key=lambda d: len(json.dumps(d)))
    with_status = [
        argocd_object_bytes(
            a, [f"nodefleet-{p['path'].split('/')[-3]}-{p['path'].split('/')[-2]}" for p in a["spec"]["generators"][0]["git"]["files"]]
        )
        for a in appsets
    ]  # fmt: skip
    return {
        "fluxFileBytes": flux_file.stat().st_size,
        "kustomizations": len(kustomizations),
        "barriers": sum(1 for d in kustomizations if LABEL_BARRIER in d["metadata"].get("labels", {})),
        "largestKustomization": largest["metadata"]["name"],
        "largestKustomizationBytes": len(json.dumps(largest)),
        "mostDependsOn": max(len(d["spec"].get("dependsOn", [])) for d in kustomizations),
        "argocdFileBytes": argocd_file.stat().st_size,
        "applicationSets": len(appsets),
        "largestApplicationSetBytes": max(len(json.dumps(a)) for a in appsets),
        "largestApplicationSetWithStatusBytes": max(with_status),
    }


def scale(stacks: int, management_clusters: int, upgrade: bool, as_json: bool) -> int:
    """Issue 40's fleet: ``stacks`` hosted clusters on ``management_clusters`` management clusters, from stack
    files only: ``fleet matrix``, ``gitops`` (and the size of what it writes), the registry and the tree judged
    across every stack, and with ``upgrade`` ``fleet upgrade --dry-run``."""
    result: dict[str, Any] = {"stacks": stacks, "managementClusters": management_clusters}
    with tempfile.TemporaryDirectory(prefix="nodefleet-scale-") as tmp:
        root = Path(tmp)
        started = time.perf_counter()
        write_scaled_fleet(root / "stacks", stacks, management_clusters)
        result["writeSeconds"] = round(time.perf_counter() - started, 2)
        base = [sys.executable, "-m", "nodefleet"]
        stacks_dir = ["--stacks-dir", str(root / "stacks")]
        # A cache of the stack files' values of its own: the first command that reads them through it runs cold
        # (and fills it), the next warm, as on a runner that keeps ~/.cache/nodefleet between runs.
        env = {**os.environ, "NODEFLEET_CACHE_DIR": str(root / "cache")}
        _, result["matrixWallSeconds"], result["matrixCpuSeconds"] = _timed(
            [*base, "fleet", "matrix", *stacks_dir], env
        )
        gitops = [*base, "gitops", *stacks_dir, "--rendered", str(root / "rendered"), "--repo-root", tmp]
        proc, result["gitopsColdWallSeconds"], result["gitopsColdCpuSeconds"] = _timed(
            [*gitops, "--out", str(root / "out")], env
        )
        if proc.returncode == 0:
            result |= _wiring_sizes(root / "out")
        _, result["gitopsWarmWallSeconds"], result["gitopsWarmCpuSeconds"] = _timed(
            [*gitops, "--out", str(root / "out")], env
        )
        # The registry and the tree judged across every stack, in one process: what `gitops` and `fleet check`
        # refuse across stacks, from the stack files alone.
        judge = (
            "import sys, time; from pathlib import Path; from cli.gitops import load_fleets; "
            "from cli.stacks import registry_of; from nodefleet.fleet.registry import fleet_problems; "
            "from nodefleet.render.objects import remembered_plans, tree_problems; d = Path(sys.argv[1]); "
            "r = registry_of(d)\nwith remembered_plans():\n    every = load_fleets(d, None, r); "
            "assert not fleet_problems(r, every) and not tree_problems(every)"
        )
        for cache in ("Cold", "Warm"):
            if cache == "Cold":
                shutil.rmtree(root / "cache", ignore_errors=True)
            _, result[f"judged{cache}WallSeconds"], result[f"judged{cache}CpuSeconds"] = _timed(
                [sys.executable, "-c", judge, str(root / "stacks")], env
            )
        # A change of ten stack files, checked with what they can collide with (the cache warm from the above).
        changed = root / "changed.txt"
        changed.write_text(
            "".join(
                f"{root / 'stacks' / f'Pulumi.hc-{i:05d}.yaml'}\n"
                for i in range(0, stacks, max(stacks // 10, 1))
            )
        )
        proc, result["checkChangedWallSeconds"], result["checkChangedRunnerCpuSeconds"] = _timed(
            [*base, "fleet", "check", *stacks_dir, "--changed-files", str(changed), "--json"], env
        )
        if proc.returncode == 0:
            # Each stack is checked in a process forked from the fork server, not a child of this one.
            checked = json.loads(proc.stdout)["stacks"]
            result["checkChangedStacks"] = len(checked)
            result["checkChangedStacksCpuSeconds"] = round(sum(s["cpu"] or 0 for s in checked), 2)
        if upgrade:
            for cache in ("Cold", "Warm"):
                if cache == "Cold":
                    shutil.rmtree(root / "cache", ignore_errors=True)
                _, result[f"upgradeDryRun{cache}WallSeconds"], result[f"upgradeDryRun{cache}CpuSeconds"] = (
                    _timed([*base, "fleet", "upgrade", "--release", "4.22.6", "--dry-run", *stacks_dir], env)
                )
    result["peakRssMiB"] = round(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024, 1)
    result["load1min"] = round(os.getloadavg()[0], 2)
    if as_json:
        print(json.dumps(result, indent=2))
    else:
        for key, value in result.items():
            print(f"  {key:<38} {value:,}" if isinstance(value, int | float) else f"  {key:<38} {value}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--plan", type=int, metavar="N", help="plan N synthetic stacks into waves and stop")
    parser.add_argument(
        "--scale",
        type=int,
        metavar="N",
        help="N hosted clusters on --management-clusters: matrix, gitops and its sizes, the fleet judged, and stop",
    )
    parser.add_argument("--management-clusters", type=int, default=100)
    parser.add_argument(
        "--upgrade",
        action="store_true",
        help="--scale: also time fleet upgrade --dry-run (its stack-file cache cold, then warm)",
    )
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
    if args.scale:
        return scale(args.scale, args.management_clusters, args.upgrade, args.json)
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
