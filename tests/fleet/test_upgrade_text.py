"""A fleet upgrade's edit made on the stack file's text (cli/upgrade_text.py) writes the bytes the round trip
(ruamel.yaml, which `fleet upgrade` used for every file and still uses where the text edit does not go) writes,
and says the same changes: held against real ruamel on the repository's stack files, on hand-written layouts
(comments, empty lines, quoting, flow style, anchors, other indentations, pins already held), and on a few
hundred files varied from them at random (a fixed seed), both steps one after the other as the plan makes them.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.fleet import scaled_hosted
from cli.exits import InputError
from cli.upgrade import (
    HOLD_MARK,
    StackEdit,
    dump_round_trip,
    hold_marks,
    load_round_trip,
    stage_moves,
)
from nodefleet.fleet.upgrade_plan import PHASES, ClusterMove
from tests.conftest import PROJECT

TARGET = "5.0.99"
FILES = sorted(
    [*(PROJECT / "stacks").glob("Pulumi.*.yaml"), *(PROJECT / "tests" / "fleet").glob("*/Pulumi.*.yaml")]
)


def _generated() -> str:
    return yaml.safe_dump({"config": {"nodefleet:fleet": scaled_hosted(7, 100)}}, sort_keys=False)


def _moves(text: str, keep_stream: str = "") -> list[ClusterMove]:
    fleet = yaml.safe_load(text)["config"]["nodefleet:fleet"]
    out = []
    for cluster in fleet.get("clusters") or []:
        kind = cluster.get("kind", "standalone")
        out.append(
            ClusterMove(
                "s", cluster["name"], kind, str(cluster.get("release")), TARGET, keep_stream=keep_stream
            )
        )
    return out


def _round_trip(text: str, moves: list[ClusterMove]) -> list[Any]:
    """Both steps as `fleet upgrade` made them on every file: ruamel's round trip, each step from the last's text."""
    out: list[Any] = []
    for phase in PHASES:
        try:
            y, doc = load_round_trip(text)
            held = hold_marks(doc)
            changes = stage_moves(doc, "f", moves, phase)
            text = dump_round_trip(y, doc)
        except InputError as exc:
            return [*out, ("refused", str(exc))]
        out.append((text, changes, held))
    return out


def _stepped(text: str, moves: list[ClusterMove]) -> tuple[list[Any], list[bool]]:
    """Both steps as the plan makes them now (StackEdit: the text edit where it goes, the round trip elsewhere)."""
    edit = StackEdit(text, "f")
    out: list[Any] = []
    on_text = []
    for _ in PHASES:
        try:
            held = edit.hold_marks()
            after, changes = edit.step(moves, PHASES[len(out)])
        except InputError as exc:
            return [*out, ("refused", str(exc))], on_text
        on_text.append(edit.on_text)
        out.append((after, changes, held))
        edit.accept()
    return out, on_text


def _same(text: str, keep_stream: str = "") -> list[bool]:
    moves = _moves(text, keep_stream)
    expected = _round_trip(text, moves)
    got, on_text = _stepped(text, moves)
    assert got == expected
    return on_text


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_the_repository_stack_files_as_the_round_trip_writes_them(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    # Every stack file of the repository is in the form the text edit takes (comments and flow sequences
    # included): the edit of 10,000 such files does not fall back to the round trip.
    assert _same(text) == [True, True]
    # A standalone cluster's kept OS stream goes in beside its release; among comments, the round trip puts it.
    _same(text, keep_stream="rhel-9")


def test_a_generated_fleet_stack_is_edited_on_its_text() -> None:
    text = _generated()
    moves = _moves(text)
    got, on_text = _stepped(text, moves)
    assert on_text == [True, True]
    assert got == _round_trip(text, moves)
    first, second = got[0][0], got[1][0]
    assert f"release: {TARGET}" in first and f"{HOLD_MARK} at " in first
    assert HOLD_MARK not in second and f"release: {TARGET}" in second


_HOSTED = """\
# header comment
config:
  nodefleet:fleet:
    output:
      mode: render   # rendered for GitOps
    clusters:
      - kind: hosted
        name: edge
        namespace: clusters  # HyperShift's default
        release: {release}
        releaseImage: {image}
        # a full-line comment
        nodePools:
          - name: infra
            replicas: 2
            labels: {{}}
            taints: []
          - name: pinned
            release: 4.22.1

        autoNode:
          nodeClasses:  # Karpenter's EC2NodeClasses
            - name: general
              tags: [a, "b", 'c']
            - name: batch
            - name: gpu
              instanceTypes: [g5.xlarge]
"""


def _indented(text: str, mapping: int, sequence: int, offset: int) -> str:
    """``text`` written back by ruamel with other indentation (comments kept)."""
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    return dump_round_trip(y, y.load(text))


LAYOUTS = {
    "comments-and-flow": _HOSTED.format(release="4.22.3", image="quay.io/ocp-release:4.22.3-x86_64"),
    "single-quoted": _HOSTED.format(release="'4.22.3'", image="'quay.io/ocp-release:4.22.3-x86_64'"),
    "double-quoted": _HOSTED.format(release='"4.22.3"', image='"quay.io/ocp-release:4.22.3-x86_64"'),
    "commented-release": _HOSTED.format(release="4.22.3  # the control plane", image="quay.io/r:4.22.3"),
    "flow-mapping": _HOSTED.replace("labels: {{}}", "labels: {{team: a}}").format(
        release="4.22.3", image="q:4.22.3"
    ),
    "anchors": _HOSTED.replace("- name: infra", "- &infra\n            name: infra").format(
        release="4.22.3", image="q:4.22.3"
    ),
    "indented-4": _indented(_HOSTED.format(release="4.22.3", image="q:4.22.3"), 4, 6, 4),
    "indentless-sequences": _indented(_HOSTED.format(release="4.22.3", image="q:4.22.3"), 2, 2, 0),
    "sequences-indented-past-their-dash": _indented(
        _HOSTED.format(release="4.22.3", image="q:4.22.3"), 2, 6, 2
    ),
    "extra-spaces": _HOSTED.replace("name: edge", "name:   edge").format(release="4.22.3", image="q:4.22.3"),
    "null-and-yes": _HOSTED.replace(
        "replicas: 2", "replicas: 2\n            spot: yes\n            zone: ~"
    ).format(release="4.22.3", image="q:4.22.3"),
    "block-scalar": _HOSTED.replace(
        "replicas: 2", "replicas: 2\n            note: |\n              two lines\n              here"
    ).format(release="4.22.3", image="q:4.22.3"),
    "no-final-newline": _HOSTED.format(release="4.22.3", image="q:4.22.3").rstrip("\n"),
    "held-before": _HOSTED.replace(
        "- name: infra\n",
        f"- name: infra\n            release: 4.22.2  # {HOLD_MARK} at 4.22.2 until the control plane completes 4.22.3\n",
    ).format(release="4.22.3", image="q:4.22.3"),
    "hold-mark-on-a-comment-line": _HOSTED.replace(
        "- name: infra\n", f"- name: infra\n            release: 4.22.2\n            # {HOLD_MARK}\n"
    ).format(release="4.22.3", image="q:4.22.3"),
    "leading-empty-line": "\n" + _HOSTED.format(release="4.22.3", image="q:4.22.3"),
    "explicit-document": "---\n" + _HOSTED.format(release="4.22.3", image="q:4.22.3"),
    "downgrade": _HOSTED.format(release="5.1.0", image="q:5.1.0"),
    "image-without-release": _HOSTED.format(release="4.22.3", image="q:latest"),
}


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_layouts_as_the_round_trip_writes_them(name: str) -> None:
    text = LAYOUTS[name]
    on_text = _same(text)
    if name in ("comments-and-flow", "single-quoted", "double-quoted", "indented-4", "indentless-sequences"):
        assert on_text == [True, True]


_STANDALONE = """\
config:
  nodefleet:fleet:
    clusters:
    - name: plant
      infraId: plant-7q2wx
      release: {release}
      catalog: catalogs/rhcos-4.16.json
      machineSets:
      - name: worker
        replicas: 3{tail}
"""


@pytest.mark.parametrize(
    "release,tail,on_text",
    [
        ("4.22.3", "", True),
        ("'4.22.3'", "", True),
        ("4.22.3", "\n# trailing comment", False),
        ("4.22.3  # pinned by change 123", "", False),
    ],
)
def test_a_standalone_release_and_its_kept_os_stream(release: str, tail: str, on_text: bool) -> None:
    text = _STANDALONE.format(release=release, tail=tail)
    assert _same(text, keep_stream="rhel-9")[1] is on_text


def _vary(text: str, rnd: random.Random) -> str:
    """One change a person might make to a stack file's layout."""
    lines = text.split("\n")
    i = rnd.randrange(len(lines) - 1)
    line = lines[i]
    value = re.match(r"^(\s*(?:- )?[\w:.-]+: )(\S+)$", line)
    choice = rnd.randrange(12)
    if choice == 0:
        lines.insert(i, " " * rnd.choice([0, 2, 4, 8]) + "# a comment")
    elif choice == 1 and line.strip() and "#" not in line:
        lines[i] = line + " " * rnd.choice([1, 2, 5]) + "# why"
    elif choice == 2:
        lines.insert(i, rnd.choice(["", "  "]))
    elif choice == 3 and value:
        quote = rnd.choice(["'", '"'])
        lines[i] = value.group(1) + quote + value.group(2) + quote
    elif choice == 4 and value:
        lines[i] = value.group(1) + " " + value.group(2)
    elif choice == 5 and value:
        lines[i] = value.group(1) + rnd.choice(
            ["null", "~", "True", "yes", "0o17", "1.5", "2026-01-01", "0x1f", "'it''s'", '"a\\tb"', "[a, b]",
             "[a,b]", "{}", "{a: 1}", "[]", "&x v", "!!str v", "-1", "+1", "'\u00e9'"]
        )  # fmt: skip
    elif choice == 6:
        lines.insert(i, " " * rnd.choice([0, 4, 8]) + f"# {HOLD_MARK}")
    elif choice == 7 and line.strip() and "#" not in line:
        lines[i] = line + f"  # {HOLD_MARK}"
    elif choice == 8:
        lines[i] = line + " "
    elif choice == 9:
        return text + rnd.choice(["# trailer\n", "\n", "  # t\n"])
    elif choice == 10:
        return "# header\n" + text
    else:
        return text.rstrip("\n")
    return "\n".join(lines)


def test_varied_layouts_as_the_round_trip_writes_them() -> None:
    rnd = random.Random(40)
    sources = [p.read_text(encoding="utf-8") for p in FILES] + [_generated()]
    taken = 0
    for _ in range(150):
        text = rnd.choice(sources)
        for _ in range(rnd.choice([1, 1, 2, 3])):
            text = _vary(text, rnd)
        try:
            moves = _moves(text, keep_stream=rnd.choice(["", "rhel-9"]))
        except (yaml.YAMLError, TypeError, KeyError, AttributeError):
            continue  # no longer a stack file this test can name moves for
        expected = _round_trip(text, moves)
        got, on_text = _stepped(text, moves)
        assert got == expected, text
        taken += sum(on_text)
    # Both ways were exercised: most variations stay in the form the text edit takes.
    assert 100 < taken < 300
