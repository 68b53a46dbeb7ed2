"""bench/engine.py's measuring parts: provider counts from the mock runtime, and the /proc sampler that
records the Kubernetes provider processes a preview starts."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

from bench.engine import PROVIDER_EXE, ProviderSampler, provider_counts


def test_provider_counts_grow_one_per_standalone_cluster() -> None:
    rows = {r.stack: r for r in provider_counts([1, 10])}
    assert rows["synthetic-1"].kubernetes_providers == 1
    assert rows["synthetic-10"].kubernetes_providers == 10
    assert rows["synthetic-10"].provider_memory_gb == 1.4
    assert rows["hosted"].kubernetes_providers == 2
    assert rows["stale-boot-images"].clusters == 1


def test_the_sampler_finds_provider_processes_below_the_cli_only(tmp_path: Path) -> None:
    exe = tmp_path / PROVIDER_EXE
    exe.symlink_to("/bin/sleep")  # a process whose argv[0] names the provider binary
    # A stand-in CLI that starts two providers; a third provider outside its process tree must not count.
    cli = subprocess.Popen(["sh", "-c", f'"{exe}" 3 & "{exe}" 3 & wait'])
    stranger = subprocess.Popen([str(exe), "3"])
    try:
        with ProviderSampler(cli.pid, interval=0.05) as sampler:
            time.sleep(1.0)
        assert sampler.max_concurrent == 2
        assert len(sampler.peak_kb) == 2 and stranger.pid not in sampler.peak_kb
        assert all(kb > 0 for kb in sampler.peak_kb.values())
    finally:
        for p in (cli, stranger):
            p.kill()
            p.wait()
