"""Shared fixtures: the project and shared data folders, and stack configs to mutate."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

PROJECT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT.parent / "shared" / "data"


def stack_fleet(stack: str) -> dict[str, Any]:
    """A deep copy of the ``nodefleet:fleet`` value of a committed stack, for tests to change."""
    config = yaml.safe_load((PROJECT / "stacks" / f"Pulumi.{stack}.yaml").read_text())["config"]
    return copy.deepcopy(config["nodefleet:fleet"])


@pytest.fixture
def project_dir() -> Path:
    return PROJECT


@pytest.fixture
def dev_fleet() -> dict[str, Any]:
    return stack_fleet("dev")
