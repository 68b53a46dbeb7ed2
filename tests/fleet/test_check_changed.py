"""`fleet check --changed-files`: the stacks a change touches are checked, the others are not run, and a collision
between a touched stack and an untouched one is still found, from the stack files."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from bench.fleet import write_scaled_fleet
from tests.conftest import PROJECT, nodefleet


@pytest.fixture
def fleet(tmp_path: Path) -> Path:
    """Six hosted clusters on three management clusters, and an untouched stack with a mandatory violation."""
    stacks = tmp_path / "stacks"
    write_scaled_fleet(stacks, 6, 3)
    shutil.copy(PROJECT / "tests" / "stacks" / "Pulumi.stale-boot-images.yaml", stacks)
    return stacks


def _check(stacks: Path, changed: Path, *paths: Path) -> tuple[int, dict | None, str]:
    changed.write_text("".join(f"{p}\n" for p in paths) + "README.md\n")
    result = nodefleet(
        "fleet", "check", "--stacks-dir", str(stacks), "--changed-files", str(changed), "--json"
    )
    summary = json.loads(result.stdout) if result.stdout.strip() else None
    return result.returncode, summary, result.stderr


def test_only_the_touched_stack_is_checked(fleet: Path, tmp_path: Path) -> None:
    code, summary, err = _check(fleet, tmp_path / "changed.txt", fleet / "Pulumi.hc-00001.yaml")
    assert code == 0, err
    assert summary is not None and [s["stack"] for s in summary["stacks"]] == ["hc-00001"]
    assert "1 of 7 stacks touched by the change (hc-00001)" in err
    # The broken stack is there: a change to it is judged, and fails as `fleet check` fails it.
    code, summary, err = _check(fleet, tmp_path / "changed.txt", fleet / "Pulumi.stale-boot-images.yaml")
    assert code == 1, err
    assert summary is not None and [(s["stack"], s["exit"]) for s in summary["stacks"]] == [
        ("stale-boot-images", 1)
    ]


def test_a_collision_with_an_untouched_stack_is_reported(fleet: Path, tmp_path: Path) -> None:
    changed = fleet / "Pulumi.hc-00001.yaml"
    changed.write_text(changed.read_text().replace("hc00001-4kq8z", "hc00004-4kq8z"))
    code, summary, err = _check(fleet, tmp_path / "changed.txt", changed)
    assert code == 2, err
    (line,) = [x for x in err.splitlines() if x.startswith("error:")]
    assert "hc00004-4kq8z" in line and "Pulumi.hc-00001.yaml" in line and "Pulumi.hc-00004.yaml" in line
    # Without the change touching it, the same fleet's other stacks pass on their own.
    code, summary, err = _check(fleet, tmp_path / "changed.txt", fleet / "Pulumi.hc-00002.yaml")
    assert code == 0, err
    assert summary is not None and [s["stack"] for s in summary["stacks"]] == ["hc-00002"]
