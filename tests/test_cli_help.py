"""The command line as a user meets it: every command's --help, --debug anywhere, JSON errors for pipelines."""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from cli.main import EXIT_CODES, _parser, main
from tests.conftest import PROJECT, nodefleet


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, child in action.choices.items():
                yield (*path, name)
                yield from _commands(child, (*path, name))


COMMANDS = sorted(_commands(_parser()))


def _subparser(path: tuple[str, ...]) -> argparse.ArgumentParser:
    parser = _parser()
    for name in path:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return parser


def test_every_command_is_walked() -> None:
    tops = {path[0] for path in COMMANDS}
    assert tops == set(EXIT_CODES), tops ^ set(EXIT_CODES)
    assert ("crds", "refresh") in COMMANDS and ("crds", "coverage") in COMMANDS


@pytest.mark.parametrize("path", COMMANDS, ids=" ".join)
def test_help_has_a_description_defaults_and_exit_codes(
    path: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main([*path, "--help"])
    assert done.value.code == 0
    text = capsys.readouterr().out
    usage, _, rest = text.partition("\n\n")
    assert usage.startswith(f"usage: python -m nodefleet {' '.join(path)}")
    description = rest.split("\n\n", 1)[0].strip()
    assert description and not description.startswith(("options:", "positional arguments:")), text
    assert f"exit codes: {EXIT_CODES[path[0]]}" in " ".join(text.split()), text
    for action in _subparser(path)._actions:
        default = action.default
        if action.option_strings and default not in (None, False, [], argparse.SUPPRESS, True):
            flag = action.option_strings[-1]
            options = text.split("\noptions:\n", 1)[1]
            shown = options.split(f"\n  {action.option_strings[0]}", 1)[1].split("\n  -", 1)[0]
            assert "default" in shown, f"{' '.join(path)} {flag}: its default {default!r} is not shown"


def test_debug_is_accepted_after_the_command_as_before_it() -> None:
    parser = _parser()
    assert parser.parse_args(["--debug", "check", "--stack", "dev"]).debug is True
    assert parser.parse_args(["check", "--stack", "dev", "--debug"]).debug is True
    assert parser.parse_args(["crds", "coverage", "--debug"]).debug is True
    assert parser.parse_args(["check", "--stack", "dev"]).debug is False


def test_debug_after_the_command_prints_the_traceback_of_an_internal_error(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], request: pytest.FixtureRequest
) -> None:
    import cli.check

    def broken(args: argparse.Namespace) -> int:
        raise RuntimeError("boom")

    # The parser binds check.run when it is built (once per process): built again after the patch, and again
    # by the next test that needs it.
    monkeypatch.setattr(cli.check, "run", broken)
    _parser.cache_clear()
    request.addfinalizer(_parser.cache_clear)
    assert main(["check", "--stack", "dev", "--debug"]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and "internal error: RuntimeError: boom" in err


def test_check_json_on_invalid_input_prints_a_json_error(tmp_path: Path) -> None:
    """As a pipeline runs it: exit 2, the error document on stdout, the error line on stderr."""
    stack = tmp_path / "Pulumi.typo.yaml"
    stack.write_text(
        (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text().replace("instanceType:", "instanceTyp:", 1)
    )
    result = nodefleet("check", "--config-file", str(stack), "--json")
    assert result.returncode == 2
    doc = json.loads(result.stdout)
    field = "nodefleet:fleet.clusters[0].machineSets[0].instanceTyp"
    assert doc == {
        "error": "invalid-input",
        "exit": 2,
        "stack": "typo",
        "stackFile": str(stack),
        "problems": [
            {"message": result.stderr.strip().removeprefix("error: "), "file": str(stack), "field": field}
        ],
    }
    assert "did you mean 'instanceType'" in doc["problems"][0]["message"]


def test_a_json_error_for_a_missing_stack_and_without_json_nothing_on_stdout() -> None:
    result = nodefleet("check", "--stack", "nope", "--json")
    assert result.returncode == 2
    doc = json.loads(result.stdout)
    assert doc["stack"] == "nope" and doc["stackFile"] == "stacks/Pulumi.nope.yaml"
    assert doc["problems"][0]["file"] is None and "stacks: " in doc["problems"][0]["message"]
    plain = nodefleet("check", "--stack", "nope")
    assert plain.returncode == 2 and plain.stdout == ""


@pytest.mark.parametrize("operation", ["preview", "up"])
def test_preview_and_up_take_a_config_file(operation: str, tmp_path: Path) -> None:
    missing = nodefleet(operation, "--config-file", str(tmp_path / "Pulumi.x.yaml"))
    assert missing.returncode == 2 and f"{tmp_path / 'Pulumi.x.yaml'}: " in missing.stderr
    stack = tmp_path / "Pulumi.mine.yaml"
    stack.write_text((PROJECT / "stacks" / "Pulumi.dev.yaml").read_text())
    parsed = _parser().parse_args([operation, "--config-file", str(stack)])
    assert parsed.config_file == stack and parsed.stack is None


@pytest.mark.parametrize(
    ("command", "has", "lacks"),
    [
        (
            "check",
            ["--policy-config", "--health-command", "--gate", "--changed-files"],
            ["--release", "--out-dir", "--base"],
        ),
        ("upgrade", ["--release", "--commit", "--out", "--health-command"], ["--out-dir", "--changed-files"]),
        ("report", ["--base", "--out-dir", "--policy-config"], ["--release", "--changed-files"]),
        ("matrix", ["--changed-files", "--stacks-per-job"], ["--release", "--health-command", "--timeout"]),
    ],
)
def test_each_fleet_command_has_its_own_help(
    command: str, has: list[str], lacks: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit):
        main(["fleet", command, "--help"])
    text = capsys.readouterr().out
    options = text.split("\noptions:\n", 1)[1]
    for flag in has:
        assert f"  {flag}" in options, (command, flag)
    for flag in lacks:
        assert f"  {flag}" not in options, (command, flag)
    assert "(default: True)" not in text  # --no-gate: the gate's default depends on the command


def test_the_gate_help_says_which_commands_are_gated(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["fleet", "render", "--help"])
    assert "on by default for this command" in " ".join(capsys.readouterr().out.split())


@pytest.mark.parametrize(
    "argv",
    [
        ["fleet", "check", "--timeout", "2200000"],
        ["fleet", "upgrade", "--release", "4.22.4", "--timeout", "1e9"],
    ],
)
def test_a_timeout_above_the_stated_maximum_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err
    assert "is more than a week (604800 seconds)" in err and "give at most 604800" in err, err
    assert "OverflowError" not in err and "internal error" not in err


def test_the_parser_is_built_without_the_engine_sdk_the_forecast_or_the_upgrade_planning() -> None:
    """Every run builds the whole parser (every command's options), so what the parser imports is paid by every
    command, `--help` included: the Pulumi SDK, the forecast and the upgrade's planning are imported only by the
    commands that use them (about 0.4 CPU-seconds of every start on a 2-core machine)."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "nodefleet", "fleet", "upgrade", "--help"],
        cwd=PROJECT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "--release" in proc.stdout and "--gitops-branch" in proc.stdout
    imported = {
        line.rpartition("|")[2].strip()
        for line in proc.stderr.splitlines()
        if line.startswith("import time:")
    }
    assert {"cli.ops", "cli.fleet", "cli.forecast", "cli.fleet_upgrade_options"} <= imported
    heavy = {
        "pulumi",
        "mockruntime.evaluate",
        "nodefleet.drift.forecast",
        "nodefleet.fleet.upgrade_plan",
        "nodefleet.fleet.upgrade_state",
        "cli.fleet_upgrade",
    }
    assert heavy & imported == set()
