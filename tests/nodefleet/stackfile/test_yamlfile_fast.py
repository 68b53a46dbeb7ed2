"""The fast reader of stack files (libyaml, for thousands of them) gives every value and message the strict
reader gives."""

from __future__ import annotations

import pytest

from nodefleet.stackfile.yamlfile import YAMLFileError, load_yaml

CASES = [
    "a: 010\n",  # octal to YAML 1.1: refused, not read as 8
    "a: 0x1f\n",
    "a: 1_000\n",
    "a: 1:30\n",
    "a: yes\n",
    "a: 1\na: 2\n",
    "a: !!python/name:os.system x\n",
    "a: &x [1, 2]\nb: *x\n",
    "base: &b {k: v}\nc:\n  <<: *b\n  k: w\n",
    "a: '010'\nb: 1.5\nc: ~\nd: true\ne: [x, {f: -3}]\n",
    "a: [1\n",
    "a:\n" + "  " * 0 + "[" * 150 + "]" * 150 + "\n",
    "a: " + "1" * 5000 + "\n",  # more digits than Python converts to an integer
]


def _read(text: str, fast: bool) -> object:
    try:
        return load_yaml(text, "s.yaml", fast=fast)
    except YAMLFileError as exc:
        return f"refused: {exc}"


@pytest.mark.parametrize("text", CASES)
def test_the_fast_reader_reads_as_the_strict_one(text: str) -> None:
    assert _read(text, fast=True) == _read(text, fast=False)


def test_a_leading_zero_is_refused_by_the_fast_reader_too() -> None:
    assert str(_read("a: 010\n", fast=True)).startswith(
        "refused: s.yaml: line 1, column 4: 010 is read as the number 8"
    )
