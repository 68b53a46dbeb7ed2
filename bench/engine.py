"""What a fleet costs the real engine: Kubernetes provider processes, their memory, and preview time.

Everywhere: the Kubernetes providers each stack creates (counted from the program under the mock runtime),
for the example and known-bad stacks and for synthetic fleets of N standalone clusters (``bench.scale``'s
fleet: a custom pool and six MachineSets each), with the provider memory that implies at the measured
~140 MB per process.

Where the engine is complete (.engine/status): for each fleet size, ``pulumi preview`` timed without the
policy pack, with it, and for a bare-registration floor (one provider, the same number of
CustomResources, no components, no pack), while the ``pulumi-resource-kubernetes`` processes the preview
starts are sampled from /proc for their count and peak RSS (VmHWM).

    venv/bin/python -m bench.engine                 # sizes 1, 10, 50
    venv/bin/python -m bench.engine --sizes 1 10 50 100 --json
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from bench.scale import synthetic_fleet
from engine.sizing import PROVIDER_RSS_MB, kubernetes_providers
from engine.status import CORE, PROJECT, read_status
from mockruntime.run import read_stack_config, run_program

PROVIDER_EXE = "pulumi-resource-kubernetes"


@dataclass
class ProviderCount:
    stack: str
    clusters: int
    resources: int
    kubernetes_providers: int
    provider_memory_gb: float  # at the measured per-process RSS


def provider_counts(sizes: list[int]) -> list[ProviderCount]:
    rows: list[ProviderCount] = []
    stack_files = sorted((PROJECT / "stacks").glob("Pulumi.*.yaml")) + sorted(
        (PROJECT / "tests" / "stacks").glob("Pulumi.*.yaml")
    )
    runs = [(f.name.removeprefix("Pulumi.").removesuffix(".yaml"), read_stack_config(f)) for f in stack_files]
    runs += [(f"synthetic-{n}", {"nodefleet:fleet": synthetic_fleet(n)}) for n in sizes]
    for name, config in runs:
        try:
            run = run_program(name, config)
        except pulumi.RunError:
            continue  # a known-bad stack whose configuration is refused: it starts no provider
        providers = kubernetes_providers(run.registrations)
        clusters = len(config["nodefleet:fleet"].get("clusters", []))
        rows.append(
            ProviderCount(
                name,
                clusters,
                len(run.registrations),
                providers,
                round(providers * PROVIDER_RSS_MB / 1000, 2),
            )
        )
    return rows


class ProviderSampler:
    """Polls /proc for Kubernetes provider processes descending from one process; keeps each one's VmHWM."""

    def __init__(self, root_pid: int, interval: float = 0.2) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.peak_kb: dict[int, int] = {}
        self.max_concurrent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProviderSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _descends(self, pid: int) -> bool:
        while pid > 1:
            if pid == self.root_pid:
                return True
            try:
                stat = Path(f"/proc/{pid}/stat").read_text()
            except OSError:
                return False
            pid = int(stat.rsplit(")", 1)[1].split()[1])
        return False

    def _run(self) -> None:
        while not self._stop.is_set():
            live = 0
            for proc in Path("/proc").iterdir():
                if not proc.name.isdigit():
                    continue
                try:
                    argv0 = (proc / "cmdline").read_bytes().split(b"\0", 1)[0].decode()
                    if Path(argv0).name != PROVIDER_EXE or not self._descends(int(proc.name)):
                        continue
                    status = (proc / "status").read_text()
                except OSError:
                    continue
                hwm = next(
                    (int(line.split()[1]) for line in status.splitlines() if line.startswith("VmHWM:")), 0
                )
                pid = int(proc.name)
                self.peak_kb[pid] = max(self.peak_kb.get(pid, 0), hwm)
                live += 1
            self.max_concurrent = max(self.max_concurrent, live)
            self._stop.wait(self.interval)


@dataclass
class PreviewTiming:
    clusters: int
    resources: int
    variant: str  # "floor" | "no pack" | "with pack"
    seconds: float
    exit_code: int
    provider_processes: int
    provider_peak_rss_mb_max: float
    provider_peak_rss_mb_sum: float


FLOOR_PROGRAM = '''"""Bare registration floor: N CustomResources through one render-mode Kubernetes provider."""
import pulumi
import pulumi_kubernetes as k8s

count = int(pulumi.Config().require("count"))
provider = k8s.Provider("floor-k8s", render_yaml_to_directory="rendered/floor")
for i in range(count):
    k8s.apiextensions.CustomResource(
        f"floor-{i}",
        api_version="machine.openshift.io/v1beta1",
        kind="MachineSet",
        metadata={"name": f"floor-{i}", "namespace": "openshift-machine-api"},
        spec={"replicas": 1},
        opts=pulumi.ResourceOptions(provider=provider),
    )
'''


def _timed(
    project: Any, clusters: int, resources: int, variant: str, *args: str, stack: str
) -> PreviewTiming:
    import subprocess

    log = project.root / ".events" / f"{variant.replace(' ', '-')}-{clusters}.jsonl"
    log.parent.mkdir(exist_ok=True)
    argv = [project.cli, "preview", *args, "--non-interactive", "--stack", stack, "--event-log", str(log)]
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=project.root, env=project.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    with ProviderSampler(proc.pid) as sampler:
        proc.wait(timeout=3600)
    seconds = time.perf_counter() - started
    peaks = [kb / 1024 for kb in sampler.peak_kb.values()]
    return PreviewTiming(
        clusters,
        resources,
        variant,
        round(seconds, 1),
        proc.returncode,
        len(peaks),
        round(max(peaks, default=0), 1),
        round(sum(peaks), 1),
    )


def engine_timings(sizes: list[int]) -> list[PreviewTiming]:
    from engine.project import scratch_project

    rows: list[PreviewTiming] = []
    with tempfile.TemporaryDirectory(prefix="nodefleet-bench-") as tmp:
        stack_files = []
        for n in sizes:
            f = Path(tmp) / "stacks-in" / f"Pulumi.scale-{n}.yaml"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": synthetic_fleet(n)}}))
            stack_files.append(f)
        project = scratch_project(Path(tmp) / "project", stack_files)
        floor = scratch_project(Path(tmp) / "floor", [])
        (floor.root / "__main__.py").write_text(FLOOR_PROGRAM)
        for n, f in zip(sizes, stack_files, strict=True):
            stack = f"scale-{n}"
            resources = len(run_program(stack, read_stack_config(f)).registrations)
            project.init_stack(stack)
            floor.init_stack(stack)
            floor.pulumi("config", "set", "count", str(resources), stack=stack)
            rows.append(_timed(floor, n, resources, "floor", stack=stack))
            rows.append(_timed(project, n, resources, "no pack", stack=stack))
            rows.append(_timed(project, n, resources, "with pack", "--policy-pack", "policies", stack=stack))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 10, 50])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    counts = provider_counts(args.sizes)
    missing = read_status().missing(CORE)
    timings = [] if missing else engine_timings(args.sizes)
    if args.json:
        print(
            json.dumps(
                {
                    "providerCounts": [asdict(c) for c in counts],
                    "previewTimings": [asdict(t) for t in timings],
                    "engineMissing": missing,
                },
                indent=2,
            )
        )
        return
    print(
        f"Kubernetes providers per stack (mock runtime; ~{PROVIDER_RSS_MB} MB per provider process, measured)"
    )
    print(f"{'stack':<20} {'clusters':>8} {'resources':>9} {'providers':>9} {'provider memory':>16}")
    for c in counts:
        print(
            f"{c.stack:<20} {c.clusters:>8} {c.resources:>9} {c.kubernetes_providers:>9} "
            f"{c.provider_memory_gb:>13.2f} GB"
        )
    print()
    if missing:
        print("Engine timings: not measured here; the engine lacks:")
        for part, reason in missing.items():
            print(f"  {part}: {reason}")
        return
    print("pulumi preview on the real engine (provider processes and their peak RSS sampled from /proc)")
    print(
        f"{'clusters':>8} {'resources':>9} {'variant':<10} {'seconds':>8} {'exit':>4} "
        f"{'providers':>9} {'max RSS MB':>10} {'sum RSS MB':>10}"
    )
    for t in timings:
        print(
            f"{t.clusters:>8} {t.resources:>9} {t.variant:<10} {t.seconds:>8} {t.exit_code:>4} "
            f"{t.provider_processes:>9} {t.provider_peak_rss_mb_max:>10} {t.provider_peak_rss_mb_sum:>10}"
        )


if __name__ == "__main__":
    main()
