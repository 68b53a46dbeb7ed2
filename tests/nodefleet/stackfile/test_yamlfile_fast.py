"""The fast reader of stack files (libyaml, for thousands of them) gives every value and message the strict
reader gives."""

from __future__ import annotations

import pytest

from nodefleet import files
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
    # At the depth bound and one past it, without an anchor (the fast reader bounds the depth as it builds) and
    # with one (the expansion check does): the root is level 1, `a` and its value level 2.
    "a: " + "[" * 99 + "]" * 99 + "\n",
    "a: " + "[" * 100 + "]" * 100 + "\n",
    "a: " + "{b: " * 98 + "c" + "}" * 98 + "\n",
    "a: " + "{b: " * 99 + "c" + "}" * 99 + "\n",
    "a: &x " + "[" * 99 + "]" * 99 + "\n",
    "a: &x " + "[" * 100 + "]" * 100 + "\n",
    "a: 'R&D'\nb: " + "[" * 100 + "]" * 100 + "\n",
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


def test_a_text_without_an_anchor_is_not_walked_for_aliases_and_one_with_an_anchor_is(monkeypatch) -> None:
    walked: list[str] = []
    check = files._check_expansion
    monkeypatch.setattr(
        files, "_check_expansion", lambda root, source: (walked.append(source), check(root, source))[1]
    )
    assert load_yaml("a: [1, {b: c}]\nd: 'R and D'\n", "tree.yaml", fast=True) == {
        "a": [1, {"b": "c"}],
        "d": "R and D",
    }
    assert walked == []
    assert load_yaml("a: 'R&D'\n", "ampersand.yaml", fast=True) == {"a": "R&D"}
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{chr(98 + i)}: &{chr(98 + i)} [{', '.join([f'*{chr(97 + i)}'] * 10)}]\n" for i in range(6)
    )
    with pytest.raises(YAMLFileError, match="alias bomb"):
        load_yaml(bomb, "bomb.yaml", fast=True)
    assert walked[0] == "ampersand.yaml" and "bomb.yaml" in walked


def test_a_too_deep_text_without_an_anchor_gets_the_message_it_always_got() -> None:
    text = "config:\n  a: " + "[" * 150 + "]" * 150 + "\n"
    with pytest.raises(YAMLFileError) as fast:
        load_yaml(text, "deep.yaml", fast=True)
    assert str(fast.value) == (
        f"deep.yaml: line 2, column 104: nested more than {files.MAX_DEPTH} levels deep, deeper than any file "
        "nodefleet reads; check that the right file was given; write the values out at a depth a reader can "
        "follow"
    )
    assert str(_read(text, fast=False)) == "refused: " + str(fast.value).replace("deep.yaml", "s.yaml")


def test_a_long_text_without_an_anchor_is_still_bounded_in_values(monkeypatch) -> None:
    # A tree expands to its node count: past the bound, as an alias bomb would, the fast reader refuses it with the
    # strict reader's message. (At the real bound such a text is megabytes long; the bound is lowered here.)
    monkeypatch.setattr(files, "MAX_EXPANDED_VALUES", 1000)
    text = "a: [" + "1, " * 1000 + "1]\n"
    fast = _read(text, fast=True)
    assert str(fast).startswith(
        "refused: s.yaml: line 1: its anchors and aliases expand to more than 1,000 values"
    )
    assert fast == _read(text, fast=False)
    assert _read("a: [" + "1, " * 900 + "1]\n", fast=True) == {"a": [1] * 901}
