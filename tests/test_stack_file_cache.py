"""The cache of stack-file values a fleet of hundreds of stack files is read through
(``nodefleet.stackfile.yamlfile.remembered_values``): the values it gives are the files' own, a changed file is
read anew, what the strict reading does not take whole is never kept, and an empty ``NODEFLEET_CACHE_DIR`` keeps
nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mockruntime.run import read_stack_config
from nodefleet.stackfile.yamlfile import YAMLFileError, remembered_values

STACK = """config:
  nodefleet:fleet:
    wave: main
    clusters:
    - kind: hosted
      name: {name}
      replicas: 3
      enabled: true
      note: null
"""


def _read(folder: Path, name: str) -> dict:
    return read_stack_config(folder / f"Pulumi.{name}.yaml", fast=True)


def _cache_files(cache: Path) -> list[Path]:
    return sorted((cache / "stackfiles").glob("*.json")) if (cache / "stackfiles").exists() else []


def test_values_come_back_the_same_and_a_changed_file_is_read_anew(tmp_path, monkeypatch):
    cache, stacks = tmp_path / "cache", tmp_path / "stacks"
    stacks.mkdir()
    monkeypatch.setenv("NODEFLEET_CACHE_DIR", str(cache))
    (stacks / "Pulumi.a.yaml").write_text(STACK.format(name="a"))
    (stacks / "Pulumi.b.yaml").write_text(STACK.format(name="b"))
    plain = {n: _read(stacks, n) for n in "ab"}
    with remembered_values(stacks):
        first = {n: _read(stacks, n) for n in "ab"}
    (kept,) = _cache_files(cache)
    assert len(json.loads(kept.read_text())) == 2
    with remembered_values(stacks):
        again = {n: _read(stacks, n) for n in "ab"}
        again["a"]["nodefleet:fleet"]["wave"] = "changed by a caller"
        third = _read(stacks, "a")
    assert first == again | {"a": plain["a"]} == plain
    assert third == plain["a"]  # each read hands out its own objects
    (stacks / "Pulumi.a.yaml").write_text(STACK.format(name="a").replace("replicas: 3", "replicas: 5"))
    with remembered_values(stacks):
        changed = _read(stacks, "a")
    assert changed["nodefleet:fleet"]["clusters"][0]["replicas"] == 5
    # One entry per file: the old text's value is gone, b's (not read this time) is kept.
    entries = json.loads(kept.read_text())
    assert len(entries) == 2
    assert (
        json.loads(next(v for k, v in entries.items() if k.endswith("Pulumi.a.yaml"))[1])["config"] == changed
    )


def test_a_value_is_taken_from_the_cache_by_the_text_it_was_read_from(tmp_path, monkeypatch):
    cache, stacks = tmp_path / "cache", tmp_path / "stacks"
    stacks.mkdir()
    monkeypatch.setenv("NODEFLEET_CACHE_DIR", str(cache))
    (stacks / "Pulumi.a.yaml").write_text(STACK.format(name="a"))
    with remembered_values(stacks):
        _read(stacks, "a")
    (kept,) = _cache_files(cache)
    entries = json.loads(kept.read_text())
    (source,) = entries
    # What the cache says for that text is what the next read gives: proof that the YAML is not parsed again.
    entries[source][1] = json.dumps({"config": {"nodefleet:fleet": {"wave": "from-the-cache"}}})
    kept.write_text(json.dumps(entries))
    with remembered_values(stacks):
        assert _read(stacks, "a")["nodefleet:fleet"] == {"wave": "from-the-cache"}
    assert _read(stacks, "a")["nodefleet:fleet"]["wave"] == "main"  # outside the block: the file itself


def test_what_the_strict_reading_refuses_or_builds_otherwise_is_not_kept(tmp_path, monkeypatch):
    cache, stacks = tmp_path / "cache", tmp_path / "stacks"
    stacks.mkdir()
    monkeypatch.setenv("NODEFLEET_CACHE_DIR", str(cache))
    (stacks / "Pulumi.dup.yaml").write_text("config:\n  a: 1\n  a: 2\n")
    (stacks / "Pulumi.alias.yaml").write_text("config:\n  a: &x {b: 1.5}\n  c: *x\n")
    with remembered_values(stacks), pytest.raises(YAMLFileError, match="appears twice"):
        _read(stacks, "dup")
        assert _read(stacks, "alias") == {"a": {"b": 1.5}, "c": {"b": 1.5}}
    assert _cache_files(cache) == []
    with remembered_values(stacks), pytest.raises(YAMLFileError, match="appears twice"):
        _read(stacks, "dup")


def test_an_empty_cache_variable_keeps_nothing(tmp_path, monkeypatch):
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    monkeypatch.setenv("NODEFLEET_CACHE_DIR", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    (stacks / "Pulumi.a.yaml").write_text(STACK.format(name="a"))
    with remembered_values(stacks):
        assert _read(stacks, "a")["nodefleet:fleet"]["wave"] == "main"
    assert not (tmp_path / "xdg").exists()
