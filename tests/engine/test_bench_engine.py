"""bench/engine.py's measuring parts: provider counts from the mock runtime, and the /proc sampler that
records the Kubernetes provider processes a preview starts."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from bench.engine import PROVIDER_EXE, ProcessSampler, process_role, provider_counts
from tests.conftest import PROJECT


def test_provider_counts_grow_one_per_standalone_cluster() -> None:
    rows = {r.stack: r for r in provider_counts([1, 10])}
    assert rows["synthetic-1"].kubernetes_providers == 1
    assert rows["synthetic-10"].kubernetes_providers == 10
    assert rows["synthetic-10"].provider_memory_gb == 0.29  # 120 MB shared + 10 x 17 MB
    assert rows["hosted"].kubernetes_providers == 2
    assert rows["stale-boot-images"].clusters == 1


def _stand_in_cli(exe: Path) -> subprocess.Popen[bytes]:
    """A stand-in CLI that starts two providers, in a session of its own so that both go with it."""
    return subprocess.Popen(["sh", "-c", f'"{exe}" 600 & "{exe}" 600 & wait'], start_new_session=True)


def _stop(cli: subprocess.Popen[bytes]) -> None:
    os.killpg(cli.pid, signal.SIGKILL)
    cli.wait()


def _until(what: str, done: Callable[[], bool]) -> None:
    """Wait until ``done()``, however busy the machine; fail after a minute."""
    deadline = time.monotonic() + 60
    while not done():
        assert time.monotonic() < deadline, f"not seen within a minute: {what}"
        time.sleep(0.05)


def test_the_sampler_finds_provider_processes_below_the_cli_only(tmp_path: Path) -> None:
    exe = tmp_path / PROVIDER_EXE
    exe.symlink_to("/bin/sleep")  # a process whose argv[0] names the provider binary
    # A third provider outside the stand-in CLI's process tree must not count.
    cli = _stand_in_cli(exe)
    stranger = subprocess.Popen([str(exe), "600"])
    try:
        with ProcessSampler(cli.pid, interval=0.05) as sampler:
            _until("two providers alive together", lambda: sampler.max_concurrent >= 2)
        assert sampler.max_concurrent == 2
        assert len(sampler.peak_kb) == 2 and stranger.pid not in sampler.peak_kb
        assert all(kb > 0 for kb in sampler.peak_kb.values())
    finally:
        _stop(cli)
        stranger.kill()
        stranger.wait()


def test_a_process_seen_before_its_exec_is_counted_as_what_it_becomes(tmp_path: Path) -> None:
    """Between its fork and its exec a provider still has its parent's command line: first seen then, it is
    still counted as a provider once it is one."""
    exe = tmp_path / PROVIDER_EXE
    exe.symlink_to("/bin/sleep")
    shell = subprocess.Popen(
        ["sh", "-c", f'read go; exec "{exe}" 600'], stdin=subprocess.PIPE, start_new_session=True
    )
    assert shell.stdin is not None
    try:
        sampler = ProcessSampler(os.getpid())  # sampled by hand, not by its thread
        sampler.sample()
        assert sampler.seen[shell.pid].role == "other" and sampler.max_concurrent == 0
        shell.stdin.write(b"go\n")
        shell.stdin.close()
        cmdline = Path(f"/proc/{shell.pid}/cmdline")
        _until("the exec", lambda: cmdline.read_bytes().startswith(str(exe).encode()))
        sampler.sample()
        assert sampler.seen[shell.pid].role == "kubernetes provider" and sampler.max_concurrent == 1
    finally:
        _stop(shell)


def test_each_process_of_a_preview_is_given_its_role() -> None:
    assert process_role(
        ["/home/u/.pulumi/plugins/resource-kubernetes-v4.34.0/pulumi-resource-kubernetes"]
    ) == ("kubernetes provider")
    assert process_role(["/usr/local/bin/pulumi", "preview"]) == "cli"
    assert process_role(["/x/pulumi-language-python", "127.0.0.1:1"]) == "language host"
    assert process_role(
        ["/p/venv/bin/python", "-u", "-m", "pulumi.policy", "127.0.0.1:1", "/p/policies"]
    ) == ("policy pack")
    assert (
        process_role(["/p/venv/bin/python", "/x/pulumi-language-python-exec", "--monitor", "1"]) == "program"
    )
    assert process_role(["/p/venv/bin/python", "-m", "pip", "list", "--format", "json"]) == "other"


def test_the_tree_memory_is_the_summed_pss_of_processes_alive_together(tmp_path: Path) -> None:
    exe = tmp_path / PROVIDER_EXE
    exe.symlink_to("/bin/sleep")
    cli = _stand_in_cli(exe)
    try:
        with ProcessSampler(cli.pid, interval=0.05) as sampler:
            _until("two providers alive together", lambda: sampler.max_concurrent >= 2)
        providers = [s for s in sampler.seen.values() if s.role == "kubernetes provider"]
        assert len(providers) == 2
        # PSS splits the shared pages of the two sleeps (and the shell): the tree's total is below RSS summed.
        assert 0 < sampler.peak_total_pss_kb < sum(s.peak_rss_kb for s in sampler.seen.values())
        assert sampler.provider_private_mb() > 0
        assert sampler.cpu_seconds_by_role().keys() <= {"cli", "kubernetes provider", "other"}
    finally:
        _stop(cli)


@pytest.mark.parametrize("size", ["0", "-3", "ten"])
def test_a_fleet_size_that_is_not_a_number_of_clusters_is_refused_before_anything_runs(size: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bench.engine", "--sizes", "1", size],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and f"'{size}' is not a number of clusters" in done.stderr
    assert "Traceback" not in done.stderr and done.stdout == ""
