"""The README and docs/ stay true: every relative link resolves, every command they show exists, and the
README's walkthrough runs as shown.

Links are checked as GitHub renders them: a path relative to the page, and an ``#anchor`` that one of the
target page's headings produces. Commands are read from ```sh, ```bash and ```console blocks; a line whose
first word (after ``VAR=value`` assignments) is ``make``, ``nodefleet``, ``python -m nodefleet`` or
``venv/bin/python -m nodefleet`` is parsed by the real argument parser of ``cli/main.py`` (or, for ``make``,
looked up in the Makefile's targets), so a doc that names a removed command, subcommand or flag fails here;
in running text, inline code naming a command is checked for the targets, subcommand and flags it names.
The walkthrough (the README's "A 5-minute walkthrough") is run command by command in a fresh copy of the
project, and each ```text block after a command block is an excerpt of that block's output.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from cli.main import _parser
from tests.conftest import PROJECT, copy_project

README = PROJECT / "README.md"
DOCS = PROJECT / "docs"
WALKTHROUGH = "A 5-minute walkthrough"


def doc_pages() -> list[Path]:
    return [README, *sorted(DOCS.glob("*.md"))]


# --- Markdown, read the way GitHub renders it ---------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A fenced code block: its language, its lines, and the heading it sits under."""

    lang: str
    lines: tuple[str, ...]
    section: str


def _outside_fences(text: str) -> list[str]:
    """The page's lines outside fenced code blocks (fenced lines replaced by empty ones)."""
    out, fence = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fence = not fence
            out.append("")
        else:
            out.append("" if fence else line)
    return out


def blocks(text: str) -> list[Block]:
    result: list[Block] = []
    section, lang, body = "", None, []
    for line in text.splitlines():
        if lang is None:
            heading = re.match(r"#{1,6} (.*)", line)
            if heading:
                section = heading.group(1).strip()
            elif line.startswith("```"):
                lang, body = line[3:].strip(), []
        elif line.startswith("```"):
            result.append(Block(lang, tuple(body), section))
            lang = None
        else:
            body.append(line)
    return result


def _heading_text(markdown: str) -> str:
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", markdown)
    return text.replace("`", "").replace("**", "").replace("*", "").strip()


def anchors(text: str) -> set[str]:
    """The ``#anchors`` GitHub gives the page's headings (lower case, punctuation dropped, spaces to
    hyphens, ``-1``, ``-2`` … for repeats)."""
    seen: dict[str, int] = {}
    result = set()
    for line in _outside_fences(text):
        heading = re.match(r"#{1,6} (.*)", line)
        if not heading:
            continue
        slug = re.sub(r"[^\w\- ]", "", _heading_text(heading.group(1)).lower()).replace(" ", "-")
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        result.add(slug if n == 0 else f"{slug}-{n}")
    return result


def links(text: str) -> list[str]:
    """Link targets outside code (fenced blocks and inline code spans are not rendered as links)."""
    found = []
    for line in _outside_fences(text):
        line = re.sub(r"`[^`]*`", "", line)
        found += re.findall(r"\]\(([^)\s]+)\)", line)
    return found


def broken_links(page: Path, text: str | None = None) -> list[str]:
    """Every relative link of ``page`` that does not resolve, with why."""
    text = page.read_text(encoding="utf-8") if text is None else text
    problems = []
    for target in links(text):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):  # https:, mailto: …
            continue
        path, _, anchor = target.partition("#")
        if not path:
            if anchor not in anchors(text):
                problems.append(f"{page.name}: ({target}): no heading with anchor #{anchor} on this page")
            continue
        dest = (page.parent / path).resolve()
        if not dest.exists():
            problems.append(f"{page.name}: ({target}): no file {path}")
            continue
        if anchor:
            if dest.is_dir() or dest.suffix != ".md":
                problems.append(f"{page.name}: ({target}): an anchor into something that is not a page")
            elif anchor not in anchors(dest.read_text(encoding="utf-8")):
                problems.append(f"{page.name}: ({target}): {dest.name} has no heading with anchor #{anchor}")
    return problems


# --- Commands -------------------------------------------------------------------------------------------------


def commands(block: Block) -> list[str]:
    """The shell commands of a block: continuation lines joined, ``$ `` prompts in console blocks (whose other
    lines are output)."""
    lines = list(block.lines)
    if block.lang == "console":
        lines = [line[2:] for line in lines if line.startswith("$ ")]
    result, pending = [], ""
    for line in lines:
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        line, pending = pending + line, ""
        if line.strip() and not line.lstrip().startswith("#"):
            result.append(line.strip())
    return result


def _words(command: str) -> list[str]:
    words = shlex.split(command, comments=True)
    while words and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", words[0]):
        words.pop(0)
    return words


def _nodefleet_args(words: list[str]) -> list[str] | None:
    """The arguments after ``nodefleet``, ``python -m nodefleet`` or ``venv/bin/python -m nodefleet``."""
    if words[:1] == ["nodefleet"]:
        return words[1:]
    if (
        len(words) >= 3
        and words[0] in ("python", "python3", "venv/bin/python")
        and words[1:3] == ["-m", "nodefleet"]
    ):
        return words[3:]
    return None


def _make_targets() -> set[str]:
    text = (PROJECT / "Makefile").read_text(encoding="utf-8")
    return set(re.findall(r"^([a-z][a-z0-9-]*):", text, re.M))


def command_problem(command: str) -> str | None:
    """Why a documented command would not run, or None. Commands of other tools are not judged."""
    words = _words(command)
    if not words:
        return None
    if words[0] == "make":
        unknown = [
            w for w in words[1:] if "=" not in w and not w.startswith("-") and w not in _make_targets()
        ]
        return f"make has no target {', '.join(unknown)}" if unknown else None
    if len(words) >= 3 and words[0] in ("python", "python3", "venv/bin/python") and words[1] == "-m":
        module = words[2]
        if module != "nodefleet" and importlib.util.find_spec(module) is None:
            return f"no module {module}"
    args = _nodefleet_args(words)
    if args is None:
        return None
    stderr = io.StringIO()
    try:
        with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
            _parser().parse_args(args)
    except SystemExit as exc:
        if exc.code not in (0, None):
            return stderr.getvalue().strip().splitlines()[-1]
    return None


def _subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    (action,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(action.choices)


def _children(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """A command's own commands (``fleet``'s ``check`` …), none for most."""
    return {
        n: c
        for a in parser._actions
        if isinstance(a, argparse._SubParsersAction)
        for n, c in a.choices.items()
    }


def inline_commands(text: str) -> list[str]:
    """Commands named in running text: inline code spans (joined across line breaks) that start like one."""
    prose = re.sub(r"\n(?!\n)", " ", "\n".join(_outside_fences(text)))
    return re.findall(r"`((?:(?:venv/bin/)?python3? -m nodefleet|nodefleet|make)(?: [^`]*)?)`", prose)


def inline_problem(span: str) -> str | None:
    """Why a command named in running text names something that does not exist, or None. Such a span is often
    a fragment (``python -m nodefleet check --json``, ``make preview/up``), so only what it names is checked:
    the make targets, the subcommand (``a|b`` for either) and each ``--flag``; ``<placeholders>`` pass."""
    try:
        words = _words(span)
    except ValueError:
        return None
    if words[:1] == ["make"]:
        targets = [t for w in words[1:] if "=" not in w and not w.startswith("-") for t in w.split("/")]
        unknown = [t for t in targets if t not in _make_targets()]
        return f"make has no target {', '.join(unknown)}" if unknown else None
    args = _nodefleet_args(words)
    if not args or args[0].startswith(("<", "-")):
        return None
    parser = _parser()
    commands = _subcommands(parser)
    for name in args[0].split("|"):
        if name not in commands:
            return f"no command {name!r}"
    sub = commands[args[0].split("|")[0]]
    known = set(sub._option_string_actions) | set(parser._option_string_actions)
    rest = args[1:]
    # A command of a command (`fleet check`): its own options.
    while rest and rest[0] in _children(sub):
        sub = _children(sub)[rest[0]]
        known |= set(sub._option_string_actions)
        rest = rest[1:]
    unknown = [w.split("=")[0] for w in rest if w.startswith("--") and w.split("=")[0] not in known]
    return f"{args[0]} has no option {', '.join(unknown)}" if unknown else None


# --- The checks on the shipped pages --------------------------------------------------------------------------


def test_the_readme_starts_with_the_two_commands_for_a_fresh_machine() -> None:
    text = README.read_text(encoding="utf-8")
    first = next(b for b in blocks(text) if b.lang in ("sh", "bash", "console"))
    assert first.section == "On a fresh machine"
    assert [_words(c)[:2] for c in commands(first)] == [["make", "demo"], ["make", "test"]]
    # The first screen: the two commands come before the 30th line.
    assert (
        text.splitlines().index(
            "make test    # set everything up, then run every test (CI runs `make lint`, then this)"
        )
        < 30
    )


def test_every_relative_link_resolves() -> None:
    problems = [p for page in doc_pages() for p in broken_links(page)]
    assert problems == []


def test_every_docs_page_opens_with_its_contents() -> None:
    for page in sorted(DOCS.glob("*.md")):
        text = page.read_text(encoding="utf-8")
        lines = _outside_fences(text)
        assert lines[0].startswith("# "), f"{page.name}: no title"
        assert "## Contents" in lines, f"{page.name}: no contents"
        start = lines.index("## Contents")
        listed = set(re.findall(r"\]\(#([^)]+)\)", "\n".join(lines[start : start + 60])))
        headings = {
            a for a in anchors("\n".join(line for line in lines if line.startswith("## "))) if a != "contents"
        }
        assert headings - listed == set(), f"{page.name}: sections missing from its contents"
        assert all(not line.startswith("## ") for line in lines[1:start]), (
            f"{page.name}: contents not at the top"
        )


def test_the_index_links_every_page() -> None:
    index = (DOCS / "README.md").read_text(encoding="utf-8")
    linked = {t.partition("#")[0] for t in links(index)}
    pages = {p.name for p in DOCS.glob("*.md")} - {"README.md"}
    assert pages - linked == set()


def test_every_command_shown_exists() -> None:
    shown = [
        (page.name, command)
        for page in doc_pages()
        for block in blocks(page.read_text(encoding="utf-8"))
        if block.lang in ("sh", "bash", "console")
        for command in commands(block)
    ]
    assert len([c for _, c in shown if _nodefleet_args(_words(c)) is not None]) >= 20
    problems = [f"{page}: {command}: {why}" for page, command in shown if (why := command_problem(command))]
    assert problems == []


def test_every_command_named_in_the_text_exists() -> None:
    named = [
        (page.name, span)
        for page in doc_pages()
        for span in inline_commands(page.read_text(encoding="utf-8"))
    ]
    assert len(named) >= 20
    problems = [f"{page}: `{span}`: {why}" for page, span in named if (why := inline_problem(span))]
    assert problems == []


# --- The checks can fail ---------------------------------------------------------------------------------------


def test_a_removed_flag_or_subcommand_is_caught() -> None:
    assert command_problem("python -m nodefleet check --stack dev --no-such-flag") is not None
    assert command_problem("venv/bin/python -m nodefleet chek --stack dev") is not None
    assert command_problem("python -m nodefleet fleet chek") is not None
    assert command_problem("make dmeo") is not None
    assert command_problem("python -m bench.no_such_benchmark") is not None
    assert (
        command_problem(
            "NODEFLEET_RENDER_ROOT=../gitops python -m nodefleet render --stack prod --root ../gitops"
        )
        is None
    )
    assert command_problem("python -m nodefleet check --help") is None
    # Named in running text: fragments pass, names that do not exist do not.
    assert inline_problem("python -m nodefleet check --json") is None
    assert inline_problem("python -m nodefleet preview|up --stack X") is None
    assert inline_problem("make preview/up") is None
    assert inline_problem("python -m nodefleet check --jsn") is not None
    assert inline_problem("python -m nodefleet preview|upp --stack X") is not None
    assert inline_problem("make preview/upp") is not None
    assert inline_commands("run `python -m nodefleet\ncheck --json` or `make lint`; `pulumi up`") == [
        "python -m nodefleet check --json",
        "make lint",
    ]


def test_a_broken_link_or_anchor_is_caught(tmp_path: Path) -> None:
    page = DOCS / "example.md"  # never written: the text is passed in
    text = (
        "# Example\n\n## A `section`: here\n\n"
        "[ok](#a-section-here) [ok](configuration.md#example-stacks) [ok](../README.md)\n"
        "[bad](#no-such-section) [bad](no-such-page.md) [bad](configuration.md#no-such-heading)\n"
        "`[code](not-a-link.md)`\n\n```sh\n# [also](not-a-link.md)\n```\n"
    )
    problems = broken_links(page, text)
    assert len(problems) == 3, problems


# --- The walkthrough, run as a user runs it -------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    commands: tuple[str, ...]
    excerpt: tuple[str, ...]  # the ```text block after the commands; empty when none
    output: str
    exit_codes: tuple[int, ...]


def _normalise(line: str) -> str:
    """Times aside (``0.9s``), whitespace runs as one space."""
    return re.sub(r"\s+", " ", re.sub(r"\b\d+(\.\d+)?s\b", "<t>s", line)).strip()


def excerpt_problem(excerpt: tuple[str, ...], output: str) -> str | None:
    """None when every line of the excerpt appears in the output, in order; ``…`` alone on a line stands for
    lines left out, and a line ending in ``…`` for the rest of that line."""
    got = [_normalise(line) for line in output.splitlines()]
    at = 0
    for wanted in excerpt:
        want = _normalise(wanted)
        if want in ("…", ""):
            continue
        prefix = want.endswith("…")
        want = want.rstrip("…").rstrip()
        for i in range(at, len(got)):
            if got[i].startswith(want) if prefix else got[i] == want:
                at = i + 1
                break
        else:
            return f"not in the output (after line {at}): {wanted!r}"
    return None


def walkthrough_blocks() -> list[Block]:
    return [b for b in blocks(README.read_text(encoding="utf-8")) if b.section == WALKTHROUGH]


@pytest.fixture(scope="module")
def walkthrough(tmp_path_factory: pytest.TempPathFactory) -> list[Step]:
    """The walkthrough's commands, in a fresh copy of the project that is a git repository (as a clone is),
    with ``venv/bin/python`` standing for the interpreter running the tests."""
    project = copy_project(tmp_path_factory.mktemp("walkthrough") / "project")
    shutil.copytree(PROJECT / "stacks", project / "stacks")
    shutil.copytree(PROJECT / "examples", project / "examples")
    for args in (
        ["init", "-q"],
        ["add", "."],
        ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "x"],
    ):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True)
    steps: list[Step] = []
    pending: list[str] = []
    for block in walkthrough_blocks():
        if block.lang in ("sh", "bash", "console"):
            pending = commands(block)
            output, codes = "", []
            for command in pending:
                run = command.replace("venv/bin/python", shlex.quote(sys.executable), 1)
                result = subprocess.run(
                    ["bash", "-c", run], cwd=project, capture_output=True, text=True, timeout=300
                )
                output += result.stdout + result.stderr
                codes.append(result.returncode)
            steps.append(Step(tuple(pending), (), output, tuple(codes)))
        elif block.lang == "text" and steps and not steps[-1].excerpt:
            last = steps[-1]
            steps[-1] = Step(last.commands, block.lines, last.output, last.exit_codes)
    return steps


def _step(steps: list[Step], words: str) -> Step:
    (step,) = [s for s in steps if any(words in c for c in s.commands)]
    return step


def test_the_walkthrough_shows_check_render_forecast_report_on_a_shipped_stack(
    walkthrough: list[Step],
) -> None:
    shown = [c for s in walkthrough for c in s.commands if _nodefleet_args(_words(c)) is not None]
    assert [_nodefleet_args(_words(c))[0] for c in shown] == [  # type: ignore[index]
        "check",
        "render",
        "forecast",
        "report",
        "import",
    ]
    # As a user runs them: the stack by name, no path flags.
    assert all("--rendered" not in c and "--state" not in c and "--out " not in c for c in shown)


def test_every_walkthrough_command_succeeds(walkthrough: list[Step]) -> None:
    failed = [(s.commands, s.exit_codes, s.output[-2000:]) for s in walkthrough if any(s.exit_codes)]
    assert failed == []


@pytest.mark.parametrize(
    "command", ["check --stack dev", "render --stack dev", "report --base HEAD", "import --stack prod-west"]
)
def test_the_walkthrough_output_is_what_the_readme_shows(walkthrough: list[Step], command: str) -> None:
    step = _step(walkthrough, command)
    assert step.excerpt, f"the README shows no output for {command}"
    assert excerpt_problem(step.excerpt, step.output) is None, step.output


def test_the_walkthrough_forecast_is_what_the_readme_shows(walkthrough: list[Step]) -> None:
    step = _step(walkthrough, "forecast --stack dev")
    assert step.excerpt
    assert excerpt_problem(step.excerpt, step.output) is None, step.output


def test_an_excerpt_that_differs_from_the_output_is_caught() -> None:
    output = "nodefleet check: 8 resources, 0.9s\n  0 mandatory, 0 advisory\n"
    assert (
        excerpt_problem(("nodefleet check: 8 resources, 1.4s", "…", "  0 mandatory, 0 advisory"), output)
        is None
    )
    assert excerpt_problem(("nodefleet check: 8 resources, …",), output) is None
    assert excerpt_problem(("  0 mandatory, 1 advisory",), output) is not None
    assert (
        excerpt_problem(("  0 mandatory, 0 advisory", "nodefleet check: 8 resources, 0.9s"), output)
        is not None
    )


CODE_MAP = DOCS / "code-map.md"


def _code_paths(text: str) -> set[str]:
    return set(re.findall(r"`((?:nodefleet|cli|mockruntime|components|policies)/[\w/]*\.py)`", text))


def test_the_code_map_names_every_module_and_only_real_ones() -> None:
    named = _code_paths(CODE_MAP.read_text(encoding="utf-8"))
    modules = {
        p.relative_to(PROJECT).as_posix()
        for package in ("nodefleet", "cli", "mockruntime", "components", "policies")
        for p in (PROJECT / package).rglob("*.py")
        if p.name not in ("__init__.py", "__main__.py")
    }
    assert sorted(named - modules) == [], "the code map names modules that do not exist"
    assert sorted(modules - named) == [], "docs/code-map.md: add these modules to the map"


def test_the_code_map_check_sees_a_missing_module() -> None:
    assert _code_paths("`nodefleet/render/objects.py` and `cli/check.py`") == {
        "nodefleet/render/objects.py",
        "cli/check.py",
    }
