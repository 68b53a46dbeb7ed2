"""The fleet commands name a file inside the project as `check` names it, relative to the project, however the
folder or file was given (a path relative to the working directory, or absolute); a file outside it by its
absolute path."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import PROJECT, nodefleet

#: A stack `check` refuses (exit 2), inside the project.
INVALID = "tests/stacks/Pulumi.catalog-directory.yaml"


def test_fleet_check_names_an_invalid_stack_file_as_check_does() -> None:
    checked = nodefleet("check", "--config-file", INVALID)
    assert checked.returncode == 2 and checked.stderr.startswith(f"error: {INVALID}: "), checked.stderr
    for stacks_dir in ("tests/stacks", str(PROJECT / "tests" / "stacks")):
        fleet = nodefleet("fleet", "check", "--stacks-dir", stacks_dir, "--stacks", "catalog-directory")
        assert fleet.returncode == 2, fleet.stdout + fleet.stderr
        assert f"error: {INVALID}: nodefleet:fleet.clusters[0].catalog: " in fleet.stdout, fleet.stdout
        assert str(PROJECT) not in fleet.stdout + fleet.stderr


def test_fleet_check_names_a_stack_file_outside_the_project_by_its_absolute_path(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "Pulumi.catalog-directory.yaml").write_text((PROJECT / INVALID).read_text())
    fleet = nodefleet("fleet", "check", "--stacks-dir", str(stacks), "--stacks", "catalog-directory")
    assert fleet.returncode == 2, fleet.stdout + fleet.stderr
    assert f"error: {stacks / 'Pulumi.catalog-directory.yaml'}: " in fleet.stdout, fleet.stdout


def test_a_state_file_error_names_the_file_relative_to_the_project() -> None:
    """--state given as an absolute path to a file of the project that is no state file: refused (exit 2) naming
    it as check would; a dry run writes nothing."""
    state = PROJECT / INVALID
    before = state.read_bytes()
    refused = nodefleet(
        "fleet", "upgrade", "--stacks-dir", "tests/fleet/regional", "--release", "4.22.4", "--dry-run",
        "--state", str(state),
    )  # fmt: skip
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"error: {INVALID}: not a fleet upgrade state file"), refused.stderr
    assert str(PROJECT) not in refused.stderr
    assert state.read_bytes() == before
