"""What a fleet costs the real engine: Kubernetes provider processes, their memory, and preview time.

Everywhere: the Kubernetes providers each stack creates (counted from the program under the mock runtime),
for the example and known-bad stacks and for synthetic fleets of N standalone clusters (``bench.scale``'s
fleet: a custom pool and six MachineSets each), with the provider memory that implies (engine/sizing.py).

Where the engine is complete (.engine/status): for each fleet size, ``pulumi preview`` of four programs:
the bare-registration floor (one provider, as many CustomResources as the stack registers, a one-field
spec, no components, no pack); ``bare``, the very objects nodefleet declares through the same providers,
one per target cluster, and nothing else; the nodefleet program without the pack; and with it. Every
process of each preview is sampled from /proc: its role (CLI, language host, program, policy pack,
Kubernetes provider), its CPU time, its peak RSS and PSS, and the peak of the tree's summed PSS.

    venv/bin/python -m bench.engine                     # sizes 1, 10, 100
    venv/bin/python -m bench.engine --sizes 1 10 100 --json
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pulumi
import yaml

from bench.scale import synthetic_fleet
from engine.sizing import PROVIDER_PRIVATE_MB, PROVIDER_SHARED_MB, kubernetes_providers, provider_memory_mb
from engine.status import CORE, PROJECT, read_status
from mockruntime.run import MockRun, read_stack_config, run_program

PROVIDER_EXE = "pulumi-resource-kubernetes"


@dataclass
class ProviderCount:
    stack: str
    clusters: int
    resources: int
    kubernetes_providers: int
    provider_memory_gb: float  # the shared binary once, the measured private part per process


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
                round(provider_memory_mb(providers) / 1000, 2),
            )
        )
    return rows


#: The processes of a preview, by role: how each is recognised from its command line.
ROLES = ("cli", "language host", "program", "policy pack", "kubernetes provider", "other")


def process_role(argv: list[str]) -> str:
    """Which part of the engine a process of a preview is, from its command line."""
    name = Path(argv[0]).name if argv else ""
    if name == PROVIDER_EXE:
        return "kubernetes provider"
    if name == "pulumi":
        return "cli"
    if name == "pulumi-language-python":
        return "language host"
    if name.startswith("python"):
        if "pulumi.policy" in argv:
            return "policy pack"
        if any(Path(a).name == "pulumi-language-python-exec" for a in argv):
            return "program"
    return "other"


@dataclass
class _Seen:
    role: str
    cpu_ticks: int = 0
    peak_rss_kb: int = 0
    peak_pss_kb: int = 0
    peak_anon_kb: int = 0  # private memory: heap and stacks, nothing shared with another process


class ProcessSampler:
    """Polls /proc for the processes descending from one process (a ``pulumi preview``).

    For each process: its role, its CPU time when last seen, its peak RSS and PSS. For the tree: the largest
    number of Kubernetes provider processes alive at once and the peak of the summed PSS, the memory the
    preview really takes: RSS counts the provider binary's pages (about 120 of a provider's 140 MB, shared
    by every provider process) once per process, PSS divides shared pages among the processes sharing them.
    """

    def __init__(self, root_pid: int, interval: float = 0.2) -> None:
        self.root_pid = root_pid
        self.interval = interval
        self.seen: dict[int, _Seen] = {}
        self.max_concurrent = 0
        self.peak_total_pss_kb = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> ProcessSampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def provider_private_mb(self) -> float:
        """The largest private (anonymous) memory any one Kubernetes provider process held."""
        anon = [s.peak_anon_kb for s in self.seen.values() if s.role == "kubernetes provider"]
        return round(max(anon, default=0) / 1024, 1)

    @property
    def peak_kb(self) -> dict[int, int]:
        """Peak RSS of each Kubernetes provider process seen."""
        return {pid: s.peak_rss_kb for pid, s in self.seen.items() if s.role == "kubernetes provider"}

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

    @staticmethod
    def _field(text: str, key: str) -> int:
        return next((int(line.split()[1]) for line in text.splitlines() if line.startswith(key)), 0)

    def sample(self) -> None:
        providers = 0
        total_pss = 0
        for proc in Path("/proc").iterdir():
            if not proc.name.isdigit():
                continue
            pid = int(proc.name)
            try:
                if pid not in self.seen and not self._descends(pid):
                    continue
                if pid not in self.seen or self.seen[pid].role == "other":
                    # Read again while "other": one seen between its fork and its exec still has its parent's
                    # command line, and would never be counted as the provider it becomes.
                    argv = [a.decode() for a in (proc / "cmdline").read_bytes().split(b"\0") if a]
                    self.seen.setdefault(pid, _Seen("other")).role = process_role(argv)
                stat = (proc / "stat").read_text().rsplit(")", 1)[1].split()
                status = (proc / "status").read_text()
                rollup = (proc / "smaps_rollup").read_text()
            except (OSError, ValueError):
                continue
            s = self.seen[pid]
            s.cpu_ticks = int(stat[11]) + int(stat[12])  # utime + stime
            s.peak_rss_kb = max(s.peak_rss_kb, self._field(status, "VmHWM:"))
            s.peak_anon_kb = max(s.peak_anon_kb, self._field(status, "RssAnon:"))
            pss = self._field(rollup, "Pss:")
            s.peak_pss_kb = max(s.peak_pss_kb, pss)
            total_pss += pss
            providers += s.role == "kubernetes provider"
        self.max_concurrent = max(self.max_concurrent, providers)
        self.peak_total_pss_kb = max(self.peak_total_pss_kb, total_pss)

    def _run(self) -> None:
        while not self._stop.is_set():
            self.sample()
            self._stop.wait(self.interval)

    def cpu_seconds_by_role(self) -> dict[str, float]:
        ticks = os.sysconf("SC_CLK_TCK")
        out = dict.fromkeys(ROLES, 0.0)
        for s in self.seen.values():
            out[s.role] += s.cpu_ticks / ticks
        return {role: round(sec, 2) for role, sec in out.items() if sec}


@dataclass
class PreviewTiming:
    clusters: int
    resources: int
    variant: str  # "floor" | "bare" | "no pack" | "with pack"
    seconds: float
    exit_code: int
    cpu_seconds: float  # user + system of the CLI and every process below it
    cpu_by_role: dict[str, float]
    provider_processes: int
    provider_peak_rss_mb_max: float
    provider_peak_rss_mb_sum: float  # what RSS suggests: the shared binary counted once per provider
    peak_pss_mb: float  # what the preview's processes really held at once
    provider_private_mb_max: float


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

BARE_PROGRAM = '''"""The same objects nodefleet registers, through the same providers, with nothing else: no components,
no configuration model, no rendering. What the engine costs for these objects whoever declares them."""
import json
import pulumi
import pulumi_kubernetes as k8s

objects = json.loads(open(pulumi.Config().require("objects")).read())
providers = {}
for i, o in enumerate(objects):
    target = o["target"]
    if target not in providers:
        providers[target] = k8s.Provider(f"{target}-k8s", render_yaml_to_directory=f"rendered/bare/{target}")
    make = k8s.apiextensions.CustomResourcePatch if o["patch"] else k8s.apiextensions.CustomResource
    make(
        f"bare-{i}",
        api_version=o["apiVersion"],
        kind=o["kind"],
        metadata=o["metadata"],
        spec=o.get("spec"),
        opts=pulumi.ResourceOptions(provider=providers[target]),
    )
'''


def bare_objects(run: MockRun) -> list[dict[str, Any]]:
    """Every Kubernetes object a program run registered, with the name of the provider it goes through."""
    out: list[dict[str, Any]] = []
    for reg in run.registrations:
        if not reg.custom or not reg.type.startswith("kubernetes:"):
            continue
        provider = run.provider_of(reg)
        out.append(
            {
                "target": (provider.name if provider else "default").removesuffix("-k8s"),
                "patch": reg.type.endswith("Patch"),
                **{
                    key: reg.inputs[key]
                    for key in ("apiVersion", "kind", "metadata", "spec")
                    if key in reg.inputs
                },
            }
        )
    return out


def _timed(
    project: Any, clusters: int, resources: int, variant: str, *args: str, stack: str
) -> PreviewTiming:
    import subprocess

    log = project.root / ".events" / f"{variant.replace(' ', '-')}-{clusters}.jsonl"
    log.parent.mkdir(exist_ok=True)
    argv = [project.cli, "preview", *args, "--non-interactive", "--stack", stack, "--event-log", str(log)]
    cpu_before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.Popen(
        argv, cwd=project.root, env=project.env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    with ProcessSampler(proc.pid) as sampler:
        proc.wait(timeout=3600)
    seconds = time.perf_counter() - started
    cpu_after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (cpu_after.ru_utime - cpu_before.ru_utime) + (cpu_after.ru_stime - cpu_before.ru_stime)
    peaks = [kb / 1024 for kb in sampler.peak_kb.values()]
    return PreviewTiming(
        clusters,
        resources,
        variant,
        round(seconds, 1),
        proc.returncode,
        round(cpu, 1),
        sampler.cpu_seconds_by_role(),
        len(peaks),
        round(max(peaks, default=0), 1),
        round(sum(peaks), 1),
        round(sampler.peak_total_pss_kb / 1024, 1),
        sampler.provider_private_mb(),
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
        bare = scratch_project(Path(tmp) / "bare", [])
        (bare.root / "__main__.py").write_text(BARE_PROGRAM)
        for n, f in zip(sizes, stack_files, strict=True):
            stack = f"scale-{n}"
            run = run_program(stack, read_stack_config(f))
            resources = len(run.registrations)
            objects = Path(tmp) / f"objects-{n}.json"
            objects.write_text(json.dumps(bare_objects(run)))
            project.init_stack(stack)
            floor.init_stack(stack)
            floor.pulumi("config", "set", "count", str(resources), stack=stack)
            bare.init_stack(stack)
            bare.pulumi("config", "set", "objects", str(objects), stack=stack)
            rows.append(_timed(floor, n, resources, "floor", stack=stack))
            rows.append(_timed(bare, n, resources, "bare", stack=stack))
            rows.append(_timed(project, n, resources, "no pack", stack=stack))
            rows.append(_timed(project, n, resources, "with pack", "--policy-pack", "policies", stack=stack))
    return rows


def _clusters(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number of clusters (a whole number from 1), e.g. 10"
        )
    return int(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes", type=_clusters, nargs="+", default=[1, 10, 100], metavar="N", help="clusters per fleet"
    )
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
        f"Kubernetes providers per stack (mock runtime; memory: {PROVIDER_SHARED_MB} MB of shared provider "
        f"binary once, {PROVIDER_PRIVATE_MB} MB private per provider process, measured)"
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
    print(
        "pulumi preview on the real engine; every process below the CLI sampled from /proc. x floor: seconds "
        "over the floor's; PSS: the tree's peak (shared pages split among their processes); RSS sum: each "
        "provider's peak RSS added up (the shared binary counted once per provider)"
    )
    print(
        f"{'clusters':>8} {'resources':>9} {'variant':<10} {'seconds':>8} {'x floor':>7} {'CPU s':>6} "
        f"{'exit':>4} {'providers':>9} {'PSS MB':>7} {'RSS sum MB':>10}"
    )
    floors = {t.clusters: t.seconds for t in timings if t.variant == "floor"}
    for t in timings:
        ratio = t.seconds / floors[t.clusters] if floors.get(t.clusters) else 0.0
        print(
            f"{t.clusters:>8} {t.resources:>9} {t.variant:<10} {t.seconds:>8} {ratio:>7.2f} {t.cpu_seconds:>6} "
            f"{t.exit_code:>4} {t.provider_processes:>9} {t.peak_pss_mb:>7} {t.provider_peak_rss_mb_sum:>10}"
        )
    print()
    print("CPU seconds by process role")
    for t in timings:
        roles = ", ".join(f"{role} {sec}" for role, sec in t.cpu_by_role.items())
        print(f"{t.clusters:>8} {t.variant:<10} {roles}")


if __name__ == "__main__":
    main()
