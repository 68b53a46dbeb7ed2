"""`fleet` over waves, as a user runs it: the wave key, the matrix a workflow reads, the local runner's gate,
and `fleet preview` on an engine that is not complete."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT, nodefleet
from tests.shipped import SHIPPED_STACKS

BAD = PROJECT / "tests" / "stacks"
#: The examples, named: users' own stacks in stacks/ have waves and modes of their own.
EXAMPLES = ("--stacks", ",".join(SHIPPED_STACKS))


def _with_wave(text: str, wave: str) -> str:
    """A stack file's text with `wave:` set under nodefleet:fleet."""
    assert "  nodefleet:fleet:\n" in text
    return text.replace("  nodefleet:fleet:\n", f"  nodefleet:fleet:\n    wave: {wave}\n", 1)


def test_the_example_stacks_name_their_waves() -> None:
    result = nodefleet("fleet", "matrix", *EXAMPLES)
    assert result.returncode == 0, result.stderr
    out = json.loads(result.stdout)
    assert len(result.stdout.strip().splitlines()) == 1, "one line, for $GITHUB_OUTPUT"
    assert [(s["stack"], s["wave"]) for s in out["stacks"]][:2] == [("dev", "canary"), ("karpenter", "early")]
    assert {s["stack"] for s in out["stacks"] if s["wave"] == "main"} >= {"hosted", "rhel10"}
    assert out["waves"]["canary"]["matrix"]["include"] == [
        {"wave": "canary", "job": "0-canary-001", "stacks": "dev", "count": 1}
    ]


def test_the_matrix_keeps_the_stacks_a_change_touches(tmp_path: Path) -> None:
    changed = tmp_path / "changed.txt"
    changed.write_text("stacks/Pulumi.hosted.yaml\nREADME.md\ndocs/fleet-waves.md\n")
    out = json.loads(nodefleet("fleet", "matrix", "--changed-files", str(changed)).stdout)
    assert [s["stack"] for s in out["stacks"]] == ["hosted"]
    assert out["stacks"][0]["reason"] == "stacks/Pulumi.hosted.yaml"
    assert [w["size"] for w in out["waves"].values()] == [0, 0, 1, 0]
    changed.write_text("docs/fleet-waves.md\n")
    none = json.loads(nodefleet("fleet", "matrix", "--changed-files", str(changed)).stdout)
    assert none["total"] == 0 and all(w["matrix"] == {"include": []} for w in none["waves"].values())
    changed.write_text("components/machinesets.py\n")
    every = json.loads(
        nodefleet("fleet", "matrix", *EXAMPLES, "--changed-files", str(changed), "--mode", "apply").stdout
    )
    assert every["total"] == 0, "the example stacks all render; none is applied by a job"


def test_a_bad_wave_is_refused_with_file_field_and_fix(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    bad = stacks / "Pulumi.dev.yaml"
    bad.write_text(
        _with_wave(
            (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text().replace("    wave: canary\n", ""), "canery"
        )
    )
    result = nodefleet("fleet", "matrix", "--stacks-dir", str(stacks))
    assert result.returncode == 2 and result.stdout == ""
    assert f"{bad}: nodefleet:fleet.wave: not a wave; did you mean 'canary'?" in result.stderr
    check = nodefleet("check", "--config-file", str(bad))
    assert check.returncode == 2
    assert "nodefleet:fleet.wave: not a wave; did you mean 'canary'?" in check.stderr
    assert "Traceback" not in check.stderr + result.stderr


def test_render_labels_every_folder_with_the_stacks_wave(tmp_path: Path) -> None:
    assert nodefleet("render", "--stack", "hosted", "--out", str(tmp_path)).returncode == 0
    for folder, side, destination in (
        # The management side's Application creates the Namespace the folder renders (Argo CD applies none).
        ("prod-east", "management", {"name": "management", "namespace": "clusters"}),
        ("prod-east-hosted", "hosted", {"name": "prod-east-hosted"}),
    ):
        params = yaml.safe_load((tmp_path / folder / "argocd-ignore-differences").read_text())
        assert params["labels"] == {
            "nodefleet.io/wave": "2-main",
            "nodefleet.io/stack": "hosted",
            "nodefleet.io/side": side,
            "nodefleet.io/management-cluster": "management",
        }
        assert params["destination"] == destination
        assert params["application"] == f"nodefleet-hosted-{folder}"


@pytest.fixture
def waves_dir(tmp_path: Path) -> Path:
    """A canary with a mandatory violation, and a clean stack in the main wave."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.stale-boot-images.yaml").write_text(
        _with_wave((BAD / "Pulumi.stale-boot-images.yaml").read_text(), "canary")
    )
    shutil.copy(PROJECT / "stacks" / "Pulumi.rhel10.yaml", stacks)
    return stacks


def test_a_failing_wave_stops_the_later_ones(waves_dir: Path, tmp_path: Path) -> None:
    # render is gated by default: it writes the tree a GitOps tool applies.
    result = nodefleet(
        "fleet", "render", "--stacks-dir", str(waves_dir), "--out", str(tmp_path / "out"), "--json"
    )
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert [s["stack"] for s in summary["stacks"]] == ["stale-boot-images"]
    assert (
        summary["notRun"] == ["rhel10"] and summary["stopped"] == "wave 0-canary failed (stale-boot-images)"
    )
    assert "wave 1/2 0-canary: 1 stack (stale-boot-images)" in result.stderr
    assert "gate after wave 0-canary: stop" in result.stderr
    assert not (tmp_path / "out" / "rhel10").exists()


def test_read_only_commands_run_every_wave_unless_gated(waves_dir: Path) -> None:
    result = nodefleet("fleet", "check", "--stacks-dir", str(waves_dir))
    assert result.returncode == 1
    assert "2 stacks in" in result.stdout and "rollout stopped" not in result.stdout
    lines = result.stderr.splitlines()
    assert lines.index("wave 1/2 0-canary: 1 stack (stale-boot-images)") < lines.index(
        "wave 2/2 2-main: 1 stack (rhel10)"
    )
    gated = nodefleet("fleet", "check", "--stacks-dir", str(waves_dir), "--gate")
    assert gated.returncode == 1 and "rollout stopped: wave 0-canary failed" in gated.stdout
    assert "not run: rhel10" in gated.stdout


def test_a_failing_health_command_stops_the_rollout(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT / "stacks" / "Pulumi.dev.yaml", stacks)  # canary
    shutil.copy(PROJECT / "stacks" / "Pulumi.rhel10.yaml", stacks)  # main
    health = 'echo "checked $NODEFLEET_WAVE: $NODEFLEET_WAVE_STACKS" >&2; exit 4'
    result = nodefleet(
        "fleet", "render", "--stacks-dir", str(stacks), "--out", str(tmp_path / "out"),
        "--health-command", health, "--json",
    )  # fmt: skip
    assert result.returncode == 1, result.stderr
    summary = json.loads(result.stdout)
    assert [(s["stack"], s["exit"]) for s in summary["stacks"]] == [("dev", 0)]
    assert summary["stopped"] == "--health-command exited 4 after wave 0-canary: checked canary: dev"
    assert summary["notRun"] == ["rhel10"]


def test_fleet_preview_on_an_incomplete_engine_says_engine_incomplete(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from cli import engine, fleet
    from cli.main import main

    monkeypatch.setattr(
        engine,
        "engine_status",
        lambda project=engine.PROJECT, needs=None: engine.EngineStatus(False, ("kubernetes: missing",)),
    )

    def never(*_: object) -> None:
        raise AssertionError("no stack runs on an incomplete engine")

    monkeypatch.setattr(fleet, "_run_one", never)
    shipped = ",".join(SHIPPED_STACKS)  # a user's own stacks beside them may collide with an example
    assert main(["fleet", "preview", "--stacks", shipped]) == 3
    captured = capsys.readouterr()
    assert captured.err.startswith(
        "nodefleet fleet preview: engine incomplete (kubernetes: missing); no stack"
    )
    assert "internal error" not in captured.err
    assert "python -m nodefleet fleet check" in captured.err
    assert main(["fleet", "up", "--stacks", shipped, "--json"]) == 3
    out = json.loads(capsys.readouterr().out)
    assert out["exit"] == 3 and out["error"].startswith("nodefleet fleet up: engine incomplete")


def test_the_health_command_also_judges_the_last_wave(tmp_path: Path) -> None:
    """A health command given to a read-only command turns the gate on, and the last wave is judged too: the
    rollout is complete only when it is healthy."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT / "stacks" / "Pulumi.rhel10.yaml", stacks)  # main, the only wave
    result = nodefleet("fleet", "check", "--stacks-dir", str(stacks), "--health-command", "exit 5")
    assert result.returncode == 1, result.stderr
    assert "gate after wave 2-main: stop: --health-command exited 5 after wave 2-main" in result.stderr
    assert "rollout stopped: --health-command exited 5 after wave 2-main" in result.stdout
    assert (
        nodefleet("fleet", "check", "--stacks-dir", str(stacks), "--health-command", "true").returncode == 0
    )
