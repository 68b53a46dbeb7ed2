"""The cache of stack-file values a fleet of hundreds of stack files is read through
(``nodefleet.stackfile.yamlfile.remembered_values``): the values it gives are the files' own, a changed file is
read anew, what the strict reading does not take whole is never kept, and an empty ``NODEFLEET_CACHE_DIR`` keeps
nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
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


#: Reads every stack file of a folder as a fleet command does (``cli.stacks.many_stacks`` with the files it will
#: read, then ``read_stack_config(fast=True)`` each) in a fresh single-threaded interpreter, and prints what each
#: read gave, how many values a forked child handed in, and which processes ran their exit handlers.
READ_FLEET = """
import _thread, atexit, json, os, sys, threading
from pathlib import Path
from cli.stacks import many_stacks
from mockruntime.run import read_stack_config
from nodefleet.stackfile import yamlfile

folder, mode, exits = Path(sys.argv[1]), sys.argv[2], Path(sys.argv[3])
atexit.register(lambda: exits.open("a").write(f"{os.getpid()}\\n"))
print("reading", end=" ")  # buffered (stdout is a pipe): a child that flushed it would print it twice
if mode == "thread":
    stop = threading.Event()
    threading.Thread(target=stop.wait, daemon=True).start()
if mode == "unlisted-thread":  # a thread started outside the threading module, as a library's own would be
    held = _thread.allocate_lock()
    held.acquire()
    _thread.start_new_thread(held.acquire, ())
    assert threading.active_count() == 1
if mode.startswith("child-dies"):
    parent, real, done = os.getpid(), yamlfile.plain_values, []
    def dying(texts):
        done.append(texts)
        if os.getpid() != parent and len(done) > (0 if mode == "child-dies" else 20):
            os._exit(3)
        return real(texts)
    yamlfile.plain_values = dying
handed_in, remember = [], yamlfile.remember
yamlfile.remember = lambda values: handed_in.append(remember(values)) or handed_in[-1]
files = sorted(folder.glob("Pulumi.*.yaml"))
read = {}
with many_stacks(folder, [(p, p.name) for p in files]):
    if mode in ("child-finishes", "child-dies-later"):  # the reads start once the child has left
        import select
        child = yamlfile._BEFORE_READ.__self__
        while child.pid:
            select.select([child.readable], [], [])
            child.before_read("")
    for p in files:
        try:
            read[p.name] = read_stack_config(p, p.name, fast=True)
        except yamlfile.YAMLFileError as exc:
            read[p.name] = f"refused: {exc}"
if mode == "thread":
    stop.set()
print(json.dumps({"handed_in": sum(handed_in), "read": read, "pid": os.getpid()}))
"""

GOOD = 240
BROKEN = {
    "syntax": "config:\n  nodefleet:fleet: [1\n",
    "duplicate": "config:\n  nodefleet:fleet:\n    wave: main\n    wave: last\n",
    "deep": "config:\n  nodefleet:fleet: " + "[" * 150 + "]" * 150 + "\n",
    "bomb": "config:\n  a: &a [x, x, x, x, x, x, x, x, x, x]\n"
    + "".join(f"  {chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6)),
    "strict": "config:\n  nodefleet:fleet:\n    ratio: 1.5\n    when: !!str 2024\n",
    "tab": "config:\n\tnodefleet:fleet: {}\n",
    "latin1": "config:\n  nodefleet:fleet: {note: caf\xe9}\n",
}
#: Read whole by the fast reading, an alias among them.
ALIASED = "config:\n  nodefleet:fleet:\n    base: &b {wave: main}\n    again: *b\n"


def _fleet(folder: Path) -> None:
    folder.mkdir()
    for i in range(GOOD):
        (folder / f"Pulumi.s{i:03}.yaml").write_text(STACK.format(name=f"s{i:03}"))
    (folder / "Pulumi.aliased.yaml").write_text(ALIASED)
    for name, text in BROKEN.items():
        (folder / f"Pulumi.{name}.yaml").write_bytes(text.encode("latin-1" if name == "latin1" else "utf-8"))


def _read_fleet(folder: Path, cache: Path, mode: str, tmp_path: Path, **env: str) -> dict:
    exits = tmp_path / f"exits-{mode}-{cache.name}"
    exits.unlink(missing_ok=True)
    environ = {k: v for k, v in os.environ.items() if k not in ("PYTHONUNBUFFERED", "NODEFLEET_SERIAL_READ")}
    done = subprocess.run(
        [sys.executable, "-c", READ_FLEET, str(folder), mode, str(exits)],
        env={**environ, "NODEFLEET_CACHE_DIR": str(cache), **env},
        cwd=Path(__file__).resolve().parents[1],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert done.stderr == ""
    assert done.stdout.startswith("reading {")  # printed once: no child flushed this process's output
    out = json.loads(done.stdout.removeprefix("reading "))
    assert exits.read_text().split() == [str(out["pid"])]  # the exit handlers ran in this process only
    return out


def test_a_cold_fleet_read_on_two_processes_gives_every_value_and_message_a_serial_read_gives(tmp_path):
    stacks = tmp_path / "stacks"
    _fleet(stacks)
    serial = _read_fleet(stacks, tmp_path / "serial", "plain", tmp_path, NODEFLEET_SERIAL_READ="1")
    forked = _read_fleet(stacks, tmp_path / "forked", "plain", tmp_path)
    assert serial["handed_in"] == 0
    # How many values the child hands in before the reads meet it depends on how the two processes are scheduled:
    # every share gives the same values. The child's own work is counted exactly once it has left (below).
    assert 0 <= forked["handed_in"] <= GOOD + 1
    assert forked["read"] == serial["read"]
    read = forked["read"]
    assert read["Pulumi.s007.yaml"]["nodefleet:fleet"]["clusters"][0]["name"] == "s007"
    assert read["Pulumi.aliased.yaml"]["nodefleet:fleet"]["again"] == {"wave": "main"}
    assert read["Pulumi.strict.yaml"]["nodefleet:fleet"] == {"ratio": 1.5, "when": "2024"}
    for name, problem in {
        "syntax": "line 3, column 1: expected ',' or ']'",
        "duplicate": "appears twice",
        "deep": "nested more than 100 levels deep",
        "bomb": "alias bomb",
        "tab": "never tabs",
        "latin1": "UTF-8",
    }.items():
        assert read[f"Pulumi.{name}.yaml"].startswith(f"refused: Pulumi.{name}.yaml: "), name
        assert problem in read[f"Pulumi.{name}.yaml"], name
    # The cache it leaves is the one the serial read leaves; the next read takes every value from it.
    (serial_cache,) = _cache_files(tmp_path / "serial")
    (forked_cache,) = _cache_files(tmp_path / "forked")
    assert json.loads(forked_cache.read_text()) == json.loads(serial_cache.read_text())
    # A child that gets to the end of its files leaves the same way as one stopped on the way.
    finished = _read_fleet(stacks, tmp_path / "finished", "child-finishes", tmp_path)
    assert finished["handed_in"] == GOOD + 1 and finished["read"] == serial["read"]
    warm = _read_fleet(stacks, tmp_path / "forked", "plain", tmp_path)
    assert warm["handed_in"] == 0 and warm["read"] == serial["read"]  # nothing to parse: no child


def test_a_fleet_read_does_not_fork_beside_another_thread_and_survives_a_child_that_dies(tmp_path):
    stacks = tmp_path / "stacks"
    _fleet(stacks)
    serial = _read_fleet(stacks, tmp_path / "serial", "plain", tmp_path, NODEFLEET_SERIAL_READ="1")
    threaded = _read_fleet(stacks, tmp_path / "threaded", "thread", tmp_path)
    assert threaded["handed_in"] == 0  # read one file at a time, as without the fork
    assert threaded["read"] == serial["read"]
    unlisted = _read_fleet(stacks, tmp_path / "unlisted", "unlisted-thread", tmp_path)
    assert unlisted["handed_in"] == 0 and unlisted["read"] == serial["read"]
    # A child that dies at once, or after 20 files: what it did not hand in is read here, to the same values.
    orphaned = _read_fleet(stacks, tmp_path / "orphaned", "child-dies", tmp_path)
    assert orphaned["handed_in"] == 0
    assert orphaned["read"] == serial["read"]
    halfway = _read_fleet(stacks, tmp_path / "halfway", "child-dies-later", tmp_path)
    # From the last file back: tab, syntax and strict, which it leaves to the reads, then 17 values; the 21st kills it.
    assert halfway["handed_in"] == 17
    assert halfway["read"] == serial["read"]
