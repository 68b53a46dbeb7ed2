"""The verdict table in docs/boot-image-catalogs.md (catalog form x stream x release x bootImage mode) is what check says today."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.conftest import PROJECT
from tests.verdict_table import Cell, markdown

BARE_RHEL10 = "bare rhel-10 stream JSON (5.0's `data.streams.rhel-10`)"
CM_410 = "ConfigMap 4.10 (`data.stream`, RHEL 8.4)"
CM_50 = "ConfigMap 5.0 (`data.stream` + `data.streams`)"


@pytest.fixture(scope="module")
def table() -> list[Cell]:
    """The cells, computed the way the copy in the docs is made (in a fresh process, as a user would)."""
    result = subprocess.run(
        [sys.executable, "-m", "tests.verdict_table", "--json"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    return [Cell(**cell) for cell in json.loads(result.stdout)]


def _cell(table: list[Cell], catalog: str, stream: str, mode: str, release: str) -> Cell:
    (cell,) = [
        c for c in table if (c.catalog, c.stream, c.mode, c.release) == (catalog, stream, mode, release)
    ]
    return cell


def test_the_docs_show_the_current_table(table: list[Cell]) -> None:
    page = (PROJECT / "docs" / "boot-image-catalogs.md").read_text()
    shown = re.search(r"<!-- verdict-table:start -->\n(.*?)<!-- verdict-table:end -->", page, re.S)
    assert shown is not None
    assert shown.group(1) == markdown(table), (
        "the verdict table in docs/boot-image-catalogs.md is stale: python -m tests.verdict_table"
    )


def test_bare_rhel_10_stream_serves_rhel_10_only(table: list[Cell]) -> None:
    assert _cell(table, BARE_RHEL10, "rhel-10", "pinned", "5.0.0-ec.2").verdict == "ok"
    default = _cell(table, BARE_RHEL10, "rhel-9", "pinned", "5.0.0-ec.2")
    assert (default.exit_code, default.verdict) == (2, "refused: stream not in catalog")


def test_floor_is_advice_below_4_22_and_mandatory_from_4_22(table: list[Cell]) -> None:
    assert _cell(table, CM_410, "rhel-9", "pinned", "4.10.3").verdict == "advice: below-floor"
    assert _cell(table, CM_410, "rhel-9", "pinned", "4.21.0").exit_code == 0
    assert _cell(table, CM_410, "rhel-9", "managed", "4.22.3").verdict == "**mandatory**: below-floor"


def test_pool_streams(table: list[Cell]) -> None:
    # 4.22's worker pool runs rhel-9: a rhel-10 boot image there is refused; in a rhel-10 pool it is fine.
    assert _cell(table, CM_50, "rhel-10", "pinned", "4.22.3").verdict == "refused: rhel-10 image, rhel-9 pool"
    assert _cell(table, CM_50, "rhel-10, pool rhel-10", "pinned", "4.22.3").verdict == "ok"
    # A fresh 5.0 install's worker pool runs rhel-10: a rhel-9 boot image works, with a rebase.
    assert (
        _cell(table, CM_50, "rhel-9", "managed", "5.0.0-ec.2").verdict == "advice: rhel-9 image, rhel-10 pool"
    )
