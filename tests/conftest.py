"""Shared fixtures: the project and shared data folders, and stack configs to mutate."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from harness.mockrun import stack_fleet

__all__ = ["PROJECT", "SHARED_DATA", "stack_fleet"]

PROJECT = Path(__file__).resolve().parent.parent
SHARED_DATA = PROJECT.parent / "shared" / "data"


@pytest.fixture
def project_dir() -> Path:
    return PROJECT


@pytest.fixture
def dev_fleet() -> dict[str, Any]:
    return stack_fleet("dev")
