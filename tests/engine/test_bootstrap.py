"""engine/bootstrap's decisions on a user's machine, with stand-in `pulumi`, `go` and `curl` and a temporary
HOME (tests/engine/fakes.py): which CLI it takes, what it says when none fits, where plugins come from, and
what it records when the network is off. Nothing here touches the network or builds Go code."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engine.semver import at_least
from engine.status import CORE, PARTS, read_status
from tests.conftest import PROJECT
from tests.engine.fakes import Machine, make_machine

PIN = next(
    line.split("==")[1].strip()
    for line in (PROJECT / "requirements.txt").read_text().splitlines()
    if line.startswith("pulumi==")
)
K8S = next(
    line.split("==")[1].strip()
    for line in (PROJECT / "requirements.txt").read_text().splitlines()
    if line.startswith("pulumi-kubernetes==")
)
AWS = next(
    line.split("==")[1].strip()
    for line in (PROJECT / "requirements.txt").read_text().splitlines()
    if line.startswith("pulumi-aws==")
)


def _bump_minor(version: str, by: int) -> str:
    major, minor, _ = version.split(".")
    return f"{major}.{int(minor) + by}.0"


NEWER = f"v{_bump_minor(PIN, 15)}"  # e.g. v3.274.0 for the 3.259.0 pin
OLDER = f"v{_bump_minor(PIN, -59)}"


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    return make_machine(tmp_path)


def _plugins_at_pins(m: Machine, home: Path | None = None) -> None:
    m.plugin_in_home("kubernetes", K8S, home)
    m.plugin_in_home("aws", AWS, home)


@pytest.mark.parametrize("version", [NEWER, f"{_bump_minor(PIN, 16)}-alpha.xaea75eb"])
def test_a_pulumi_on_path_at_least_the_pin_is_used_without_building(machine: Machine, version: str) -> None:
    cli = machine.pulumi_on_path(version, bundled_host=True)
    machine.go()
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    assert machine.status()["pulumi"] == f"ok {version} at {cli}"
    assert f"using {cli}" in result.stderr
    assert machine.calls("go") == [], "no Go build when a fitting CLI is on PATH"
    assert not (machine.project / ".engine" / "bin" / "pulumi").exists()
    assert f'export PULUMI_CLI="{cli}"' in machine.engine_env()
    assert machine.status()["pulumi-language-python"] == f"ok beside the CLI in {cli.parent}"


@pytest.mark.parametrize("version", [OLDER, f"v{PIN}-rc.1"])
def test_an_older_pulumi_is_named_the_installers_are_suggested_and_the_pin_is_built(
    machine: Machine, version: str
) -> None:
    old = machine.pulumi_on_path(version, directory="usr-local-bin", bundled_host=True)
    machine.go()
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    assert f"{old} ({version})" in result.stderr, "the rejected CLI is named with its version"
    assert "curl -fsSL https://get.pulumi.com | sh" in result.stderr
    assert "brew install pulumi/tap/pulumi" in result.stderr
    # Built into the machine's cache, where every checkout finds it (a fresh clone builds nothing).
    built = machine.home / ".cache" / "nodefleet" / "engine" / "cli" / f"v{PIN}" / "bin" / "pulumi"
    assert machine.status()["pulumi"] == f"ok v{PIN} at {built}"
    clone = machine.fresh_clone()
    tried = len(machine.calls("go"))
    assert clone.run("bootstrap").returncode == 0
    assert clone.status()["pulumi"] == f"ok v{PIN} at {built}"
    assert not [c for c in machine.calls("go")[tried:] if c["argv"][-1].endswith("/cmd/pulumi")]
    builds = [c["argv"] for c in machine.calls("go") if c["argv"][:1] == ["build"]]
    assert any(argv[-1].endswith("/cmd/pulumi") and f"Version=v{PIN}" in " ".join(argv) for argv in builds)


def test_the_installers_are_suggested_before_the_go_build(machine: Machine) -> None:
    machine.go()
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    advice = result.stderr.index("https://get.pulumi.com")
    assert advice < result.stderr.index("building v" + PIN), "say how to install before building"
    assert machine.status()["pulumi"].startswith(f"ok v{PIN} at ")


def test_no_pulumi_and_no_go_stops_with_the_installers(machine: Machine) -> None:
    result = machine.run("bootstrap")
    assert result.returncode == 1
    assert "curl -fsSL https://get.pulumi.com | sh" in result.stderr
    assert "brew install pulumi/tap/pulumi" in result.stderr
    assert machine.status()["pulumi"].startswith("missing: no pulumi >= v")


def test_the_official_installers_place_counts_even_off_path(machine: Machine) -> None:
    cli = machine.pulumi_on_path(NEWER, directory="home/.pulumi/bin", bundled_host=True)
    machine.extra_path.remove(cli.parent)  # installed, but the shell profile that adds it was not read
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    assert machine.status()["pulumi"] == f"ok {NEWER} at {cli}"


def test_plugins_already_in_the_users_pulumi_home_are_used_and_the_home_is_not_replaced(
    machine: Machine,
) -> None:
    machine.pulumi_on_path(NEWER, bundled_host=True)
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    home = machine.home / ".pulumi"
    assert machine.status()["kubernetes"] == f"ok v{K8S} in {home}/plugins"
    assert machine.status()["aws"] == f"ok v{AWS} in {home}/plugins"
    assert not [c for c in machine.calls("pulumi") if c["argv"][:2] == ["plugin", "install"]]
    assert all("PULUMI_HOME" not in c["env"] for c in machine.calls("pulumi"))
    assert "PULUMI_HOME" not in machine.engine_env()


def test_a_pulumi_home_the_user_chose_is_where_plugins_are_looked_for(machine: Machine) -> None:
    machine.pulumi_on_path(NEWER, bundled_host=True)
    custom = machine.root / "team-pulumi-home"
    _plugins_at_pins(machine, custom)
    result = machine.run("bootstrap", PULUMI_HOME=str(custom))
    assert result.returncode == 0, result.stderr
    assert machine.status()["kubernetes"] == f"ok v{K8S} in {custom}/plugins"


def test_a_plugin_at_another_version_does_not_count(machine: Machine) -> None:
    machine.pulumi_on_path(NEWER, bundled_host=True)
    machine.plugin_in_home("kubernetes", _bump_minor(K8S, -2))
    machine.plugin_in_home("aws", AWS)
    machine.run("bootstrap")
    installs = [c["argv"] for c in machine.calls("pulumi") if c["argv"][:2] == ["plugin", "install"]]
    assert installs == [["plugin", "install", "resource", "kubernetes", f"v{K8S}", "--exact"]]


def test_with_network_missing_plugins_are_installed_at_the_pins_before_any_build(machine: Machine) -> None:
    machine.pulumi_on_path(NEWER, bundled_host=True)
    machine.go()
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    installs = [c["argv"] for c in machine.calls("pulumi") if c["argv"][:2] == ["plugin", "install"]]
    assert installs == [
        ["plugin", "install", "resource", "kubernetes", f"v{K8S}", "--exact"],
        ["plugin", "install", "resource", "aws", f"v{AWS}", "--exact"],
    ]
    assert machine.calls("go") == []
    assert machine.status()["kubernetes"].startswith(f"ok v{K8S} installed into ")


def test_without_network_the_status_is_partial_and_says_why(tmp_path: Path) -> None:
    machine = make_machine(tmp_path, network=False)
    machine.pulumi_on_path(NEWER)  # a CLI without a bundled language host
    machine.go()
    result = machine.run("bootstrap")
    assert result.returncode == 3, result.stderr
    status = machine.status()
    assert status["venv"] == "ok"
    assert status["pulumi"].startswith(f"ok {NEWER} at ")
    assert (
        status["pulumi-language-python"].startswith("missing: ")
        and "403 Forbidden" in status["pulumi-language-python"]
    )
    k8s = status["kubernetes"]
    assert k8s.startswith("missing: pulumi plugin install: ") and "failed all 5 attempts" in k8s
    assert "Go module proxy: " in k8s and "403 Forbidden" in k8s
    assert status["aws"].startswith("missing: pulumi plugin install: ")
    assert "patched submodule" in status["aws"]
    # Tried in order: the download, then the Go build (Kubernetes only).
    calls = [(c["tool"], " ".join(c["argv"])) for c in _calls_in_order(machine)]
    download = calls.index(("pulumi", f"plugin install resource kubernetes v{K8S} --exact"))
    build = next(
        i for i, (tool, argv) in enumerate(calls) if tool == "go" and "pulumi-kubernetes/provider/v4" in argv
    )
    assert download < build
    env = machine.engine_env()
    assert "PULUMI_CLI=" in env and "PULUMI_BACKEND_URL" not in env and "PULUMI_CONFIG_PASSPHRASE" not in env


def _calls_in_order(m: Machine) -> list[dict[str, Any]]:
    return [json.loads(line) for line in m.log.read_text().splitlines()]


def test_a_language_host_built_here_is_put_on_path_and_only_then(tmp_path: Path) -> None:
    machine = make_machine(tmp_path)
    machine.pulumi_on_path(NEWER)
    machine.go()
    _plugins_at_pins(machine)
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    bin_dir = machine.project / ".engine" / "bin"
    assert machine.status()["pulumi-language-python"] == "ok built into .engine/bin"
    assert (bin_dir / "pulumi-language-python-exec").exists(), "the exec shim sits beside the host"
    assert f'export PATH="{bin_dir}:' in machine.engine_env()

    bundled = make_machine(tmp_path / "second")
    bundled.pulumi_on_path(NEWER, bundled_host=True)
    _plugins_at_pins(bundled)
    assert bundled.run("bootstrap").returncode == 0
    assert ".engine/bin:" not in bundled.engine_env()


def test_the_version_rule_is_semver_precedence() -> None:
    assert at_least("v3.274.0", "3.259.0") and at_least("3.274.0", "v3.259.0")
    assert not at_least("v3.258.9", "3.259.0") and not at_least("v2.300.0", "3.259.0")
    assert at_least("3.259.0", "3.259.0") and at_least("3.259.0+dirty", "3.259.0")
    assert not at_least("3.259.0-alpha.1", "3.259.0"), "a pre-release of the pin is older than the pin"
    assert at_least("3.260.0-alpha.xaea75eb", "3.259.0")
    assert at_least("3.259.0-rc.10", "3.259.0-rc.9"), "numeric identifiers compare as numbers"
    assert at_least("3.259.0-rc.a", "3.259.0-rc.9"), "words sort above numbers"
    assert at_least("3.259.0-rc.1.1", "3.259.0-rc.1"), "a longer identifier list wins a tie"
    assert at_least("3.100.0", "3.99.0"), "minor versions compare as numbers, not strings"


# --- failed acquisitions are remembered ----------------------------------------------------------------

ACQUISITIONS = ("plugin install", "mod download", "get ", "build ", "mod tidy")


def _acquisitions(m: Machine, since: int = 0) -> list[str]:
    """Downloads and builds tried (stand-in `pulumi plugin install`, Go module operations, proxy lookups)."""
    calls = [f"{c['tool']} {' '.join(c['argv'])}" for c in _calls_in_order(m)[since:]]
    return [c for c in calls if c.startswith("curl ") or any(f" {a}" in c for a in ACQUISITIONS)]


def _offline_partial_machine(tmp_path: Path) -> Machine:
    machine = make_machine(tmp_path, network=False)
    machine.pulumi_on_path(NEWER)  # no bundled language host: it would be built
    machine.go()
    first = machine.run("bootstrap")
    assert first.returncode == 3, first.stderr
    return machine


def test_a_failed_acquisition_is_remembered_with_its_version_and_not_retried(tmp_path: Path) -> None:
    machine = _offline_partial_machine(tmp_path)
    first = machine.status()
    assert first["kubernetes.attempt"].startswith(f"v{K8S} failed ")
    assert first["aws.attempt"].startswith(f"v{AWS} failed ")
    assert first["pulumi-language-python.attempt"].startswith(f"v{PIN} failed ")
    tried = len(_calls_in_order(machine))

    again = machine.run("bootstrap")
    assert again.returncode == 3, "still partial, and says so"
    assert _acquisitions(machine, tried) == [], "nothing is downloaded or built again"
    assert machine.status() == first, "the same reasons and the same remembered attempts"
    for part, version in (("kubernetes", K8S), ("aws", AWS), ("pulumi-language-python", PIN)):
        assert f"{part}: v{version} not tried again" in again.stderr
    assert "make setup FORCE=1" in again.stderr
    # What the engine tests and the command line read: the parts, and the attempts beside them.
    recorded = read_status(machine.project / ".engine" / "status")
    assert list(recorded.parts) == list(PARTS) and recorded.missing(CORE).keys() == set(CORE) - {"pulumi"}
    assert set(recorded.attempts) == {"pulumi-language-python", "kubernetes", "aws"}


def test_force_tries_every_failed_acquisition_again(tmp_path: Path) -> None:
    machine = _offline_partial_machine(tmp_path)
    tried = len(_calls_in_order(machine))
    forced = machine.run("bootstrap", "--force")
    assert forced.returncode == 3
    again = _acquisitions(machine, tried)
    assert f"pulumi plugin install resource kubernetes v{K8S} --exact" in again
    assert f"pulumi plugin install resource aws v{AWS} --exact" in again
    assert any("pulumi-language-python" in c for c in again if c.startswith("go get"))


def test_force_is_what_brings_back_a_network_that_returned(tmp_path: Path) -> None:
    """Remembering is deliberate: the network coming back is not an input, FORCE=1 is the way to retry."""
    machine = _offline_partial_machine(tmp_path)
    machine.network = True
    assert machine.run("bootstrap").returncode == 3
    assert machine.status()["kubernetes"].startswith("missing: ")
    assert machine.run("bootstrap", "--force").returncode == 0
    assert machine.status()["kubernetes"].startswith(f"ok v{K8S} installed into ")
    assert "kubernetes.attempt" not in machine.status()


def test_changed_inputs_are_tried_again(tmp_path: Path) -> None:
    """A newer CLI (it installs plugins) or another Pulumi home is a new attempt; the pin is part of the
    remembered attempt itself (`v<version> failed …`)."""
    machine = _offline_partial_machine(tmp_path)
    upgraded = f"v{_bump_minor(PIN, 20)}"
    machine.pulumi_on_path(upgraded)  # the user upgrades the CLI in place
    tried = len(_calls_in_order(machine))
    machine.run("bootstrap")
    installs = [c for c in _acquisitions(machine, tried) if "plugin install" in c]
    assert installs == [
        f"pulumi plugin install resource kubernetes v{K8S} --exact",
        f"pulumi plugin install resource aws v{AWS} --exact",
    ]
    assert machine.status()["pulumi"].startswith(f"ok {upgraded} at ")

    tried = len(_calls_in_order(machine))
    machine.run("bootstrap")
    assert _acquisitions(machine, tried) == [], "remembered again under the new inputs"

    machine.run("bootstrap", PULUMI_HOME=str(machine.root / "another-home"))
    installs = [c for c in _acquisitions(machine, tried) if "plugin install" in c]
    assert len(installs) == 2, "another Pulumi home is another place to install into: both are tried"


def test_a_plugin_that_appeared_meanwhile_is_used(tmp_path: Path) -> None:
    machine = _offline_partial_machine(tmp_path)
    machine.plugin_in_home("kubernetes", K8S)
    machine.run("bootstrap")
    assert machine.status()["kubernetes"] == f"ok v{K8S} in {machine.home / '.pulumi'}/plugins"
    assert "kubernetes.attempt" not in machine.status()


def test_a_failed_cli_build_is_remembered_too(tmp_path: Path) -> None:
    machine = make_machine(tmp_path, network=False)
    machine.go()
    assert machine.run("bootstrap").returncode == 1
    assert machine.status()["pulumi.attempt"].startswith(f"v{PIN} failed ")
    tried = len(_calls_in_order(machine))
    again = machine.run("bootstrap")
    assert again.returncode == 1
    assert "curl -fsSL https://get.pulumi.com | sh" in again.stderr, "the installers are still suggested"
    assert _acquisitions(machine, tried) == []
    assert machine.status()["pulumi"].startswith(f"missing: no pulumi >= v{PIN} and the Go build failed")


def test_make_setup_force_passes_force_and_a_bad_argument_is_refused(tmp_path: Path) -> None:
    import shutil
    import subprocess

    make = shutil.which("make")
    assert make, "make is part of the build tools the project documents"
    dry = [make, "-n", "-C", str(PROJECT), "setup"]
    assert (
        "engine/bootstrap --force" in subprocess.run([*dry, "FORCE=1"], capture_output=True, text=True).stdout
    )
    assert "--force" not in subprocess.run(dry, capture_output=True, text=True).stdout
    machine = make_machine(tmp_path)
    refused = machine.run("bootstrap", "--forse")
    assert refused.returncode == 2 and "unknown argument --forse" in refused.stderr


def test_the_status_is_never_half_written_while_a_bootstrap_runs_or_after_one_is_killed(
    machine: Machine,
) -> None:
    """Engine tests and `engine/run` read `.engine/status` while a bootstrap may be running (`make test` runs
    one in another checkout's shell, a user reruns `make setup`): they see the last complete record, never
    the few lines a running or killed bootstrap has written so far."""
    import os
    import signal
    import subprocess
    import time

    assert machine.run("bootstrap").returncode == 1  # no pulumi and no Go: a complete record
    complete = machine.status()
    assert complete["pulumi"].startswith("missing: no pulumi >= v")

    started = machine.root / "go-started"
    hang = f"#!/bin/sh\ntouch {started}\nexec sleep 600\n"  # a Go build that takes its time
    (machine.fakebin / "go").write_text(hang)
    (machine.fakebin / "go").chmod(0o755)
    running = subprocess.Popen(
        [str(machine.project / "engine" / "bootstrap")],
        env=machine.env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 60
        while not started.exists():
            assert running.poll() is None, "the bootstrap ended before its Go build"
            assert time.monotonic() < deadline, "the bootstrap never reached its Go build"
            time.sleep(0.05)
        assert machine.status() == complete, "a running bootstrap's partial record was visible"
    finally:
        os.killpg(running.pid, signal.SIGKILL)
        running.wait()
    assert machine.status() == complete, "a killed bootstrap left its partial record in place"

    (machine.fakebin / "go").unlink()
    assert machine.run("bootstrap").returncode == 1
    assert machine.status() == complete
    left = [p.name for p in (machine.project / ".engine").iterdir() if p.name.startswith("status.")]
    assert left == [], f"the killed run's unfinished record was not cleared: {left}"
