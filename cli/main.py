"""``python -m nodefleet``: the credential-free companion of ``pulumi preview --policy-pack policies``.

``check`` runs the program under Pulumi's mock runtime and evaluates the policy pack's own policy objects:
no CLI, no providers, no cloud or cluster credentials, seconds per stack. ``render`` writes the manifests
the program declares, for review. ``pulumi preview --policy-pack policies`` stays the gate: it also runs
the providers' checks, which the mock runtime does not.

Every command keeps the exit-code contract in :mod:`cli.exits`.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import re
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from cli import adopt, check, crds, gitops, ops, render
from cli.exits import CONTRACT, EXIT_INTERNAL, EXIT_INVALID, InputError, seconds
from cli.roots import add_roots, allowed_roots
from cli.stacks import add_source
from engine.sizing import DEFAULT_MAX_PROVIDERS, MAX_PROVIDERS_ENV

Command = Callable[[argparse.Namespace], int]


@functools.cache
def _parser() -> argparse.ArgumentParser:
    """The command line's parser, built once per process (about 9 ms): nothing in it depends on the
    environment or the working directory, so the commands the fork server of ``fleet`` forks
    (:mod:`cli.forkrun`, which imports this module) share the one it built."""
    p = argparse.ArgumentParser(
        prog="python -m nodefleet",
        description="nodefleet's command line: check and render stacks without the Pulumi CLI, providers or "
        "credentials; forecast which nodes a change replaces; report on a pull request; run many stacks; "
        "stage hosted-cluster upgrades; preview and up through the real engine where it is complete.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=(
            "examples:\n"
            "  python -m nodefleet check --stack dev\n"
            "  python -m nodefleet check --config-file path/Pulumi.prod.yaml --json\n"
            "  python -m nodefleet render --stack hosted --out /tmp/manifests\n"
            "  NODEFLEET_RENDER_ROOT=../gitops python -m nodefleet render --config-file prod/Pulumi.prod.yaml\n"
            "  python -m nodefleet forecast --stack hosted\n"
            "  python -m nodefleet import --stack prod-east --from-file mgmt.yaml --from-file inside.yaml\n"
            "  python -m nodefleet report --base origin/main --out report.md\n"
            "  python -m nodefleet fleet check --parallel 2\n"
            "  python -m nodefleet gitops --repo-url https://git.example.com/platform/fleet.git --out gitops/\n"
            "  python -m nodefleet fleet upgrade --release 4.22.4 --dry-run\n"
            "  python -m nodefleet crds coverage\n\n"
            f"{CONTRACT}\n"
            "`pulumi preview --policy-pack policies` stays the gate: it also runs the providers' checks."
        ),
    )
    p.add_argument("--debug", action="store_true", help="on an internal error, print the full traceback")
    p.formatter_class = _HelpFormatter
    commands = ",".join(("check", "render", "import", "gitops", "crds", *ops.OPERATIONS))
    sub = p.add_subparsers(dest="command", required=True, metavar="{" + commands + "}")

    s = sub.add_parser("check", help="run the program under the mock runtime and evaluate the policy pack")
    add_source(s)
    add_roots(s)
    s.add_argument("--json", action="store_true", help='print {"resources": N, "violations": [...]}')
    s.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON, as for `pulumi preview --policy-pack-config`",
    )
    s.add_argument(
        "--max-providers",
        type=_positive_int,
        metavar="N",
        help="warn when the stack runs more Kubernetes provider processes than N, one per target cluster "
        f"(default: ${MAX_PROVIDERS_ENV}, else {DEFAULT_MAX_PROVIDERS})",
    )
    s.set_defaults(run=check.run)

    s = sub.add_parser("render", help="write the Kubernetes manifests the program declares to a directory")
    add_source(s)
    add_roots(s)
    s.add_argument("--out", type=Path, help="output directory (default: the stack's output.directory)")
    s.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON, as for `pulumi preview --policy-pack-config`; a stack with mandatory "
        "violations is not rendered",
    )
    s.add_argument(
        "--lock-timeout",
        type=seconds,
        default=60.0,
        metavar="SECONDS",
        help="wait this long for another render of the same directory to finish (default: 60)",
    )
    s.set_defaults(run=render.run)
    adopt.add_parser(sub)
    gitops.add_parser(sub)
    ops.register(sub)

    crds.add_parser(sub)
    _describe_commands(p, ("python -m nodefleet",))
    # The whole command line, for a command that runs another in this process (`import` runs `fleet check` of
    # the stacks it wrote); handed down rather than imported, since cli.main imports every command.
    p.set_defaults(command_line=main)
    return p


#: What each command's exit code means, beyond the shared contract (shown in its --help).
EXIT_CODES = {
    "check": "0 no mandatory violation, 1 mandatory violations, 2 invalid input, 3 internal error",
    "render": "0 rendered, 1 mandatory violations (nothing written), 2 invalid input, 3 internal error",
    "forecast": "0 forecast printed (whatever it forecasts), 2 invalid input, 3 internal error",
    "preview": "0 no mandatory violation, 1 mandatory violations, 2 invalid input, 3 internal error or the "
    "engine is incomplete or failed",
    "up": "0 applied, 1 mandatory violations, 2 invalid input, 3 internal error or the engine is incomplete "
    "or failed",
    "report": "the worst of the stacks it reports on: 0 clean, 1 mandatory violations, 2 invalid stack or "
    "input; 3 internal error",
    "fleet": "the worst exit of its stacks (3 > 2 > 1 > 0); a stack killed or timed out counts as 3; 2 also "
    "for invalid fleet options. fleet upgrade: 0 every wave at the release (or nothing to do), 1 stopped at a "
    "gate or by a render's violations (the state file says where; run it again to resume), 2 invalid input, 3 "
    "internal error",
    "upgrade": "0 step staged (or nothing to do), 1 the control plane has not completed the release yet (the "
    "nodes stay held), 2 invalid input, 3 internal error",
    "crds": "0 done, 2 invalid input (nothing changed), 3 internal error",
    "import": "0 stack written, 1 stack written and its policy violations reported, 2 refused (a source that "
    "cannot be adopted, a field the render would not reproduce, an existing stack file; nothing written), 3 "
    "internal error",
    "gitops": "0 wiring written, 2 invalid input (an invalid stack, colliding stacks, a folder outside "
    "--repo-root; nothing written), 3 internal error",
}

_DEBUG_HELP = "on an internal error, print the full traceback (also accepted before the command)"


class _HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Keeps the descriptions' layout and shows each option's default where it has a meaningful one."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        if (
            action.option_strings
            and default not in (None, False, [], argparse.SUPPRESS)
            and "default" not in text
            and "%(default)" not in text
        ):
            text += " (default: %(default)s)"
        return text


def _describe_commands(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> None:
    """Every command's --help: a description (its one-line help where it has none), option defaults, its exit
    codes, and ``--debug`` after the command as well as before it."""
    for action in parser._actions:
        if not isinstance(action, argparse._SubParsersAction):
            continue
        helps = {a.dest: a.help for a in action._choices_actions}
        for name, child in action.choices.items():
            child.formatter_class = _HelpFormatter
            if not child.description:
                text = helps.get(name) or name
                child.description = text[:1].upper() + text[1:] + "."
            top = path[1] if len(path) > 1 else name
            codes = f"exit codes: {EXIT_CODES.get(top, CONTRACT.removeprefix('exit codes: '))}"
            child.epilog = f"{child.epilog}\n\n{codes}" if child.epilog else codes
            if not any("--debug" in a.option_strings for a in child._actions):
                child.add_argument(
                    "--debug", action="store_true", default=argparse.SUPPRESS, help=_DEBUG_HELP
                )
            _describe_commands(child, (*path, name))


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number, e.g. --max-providers 30")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        code = _run(args)
        # With stdout buffered (a pipe, PYTHONUNBUFFERED unset) a reader that went away is only seen here,
        # not at the interpreter's own flush at exit, which would end with status 120.
        sys.stdout.flush()
        return code
    except BrokenPipeError:
        # The reader went away (`check | head -1`), while the command or its error report was printing:
        # nothing to report, as for any command killed by SIGPIPE. stdout points at /dev/null from here, so
        # the interpreter's own flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141


def _run(args: argparse.Namespace) -> int:
    command: Command = args.run
    try:
        with allowed_roots(args):
            return command(args)
    except InputError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps(error_document(args, EXIT_INVALID, str(exc).splitlines()), indent=2))
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        raise
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        message = (
            f"internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno}). "
            "This is a defect in nodefleet, not in your input: rerun with --debug and report the traceback "
            "with the command line you used."
        )
        print(message, file=sys.stderr)
        if getattr(args, "json", False):
            print(json.dumps(error_document(args, EXIT_INTERNAL, [message]), indent=2))
        return EXIT_INTERNAL


#: ``<field>: …`` after the file in an error line: a config path, a policy name, or a YAML position.
_FIELD = re.compile(r"^(?P<field>line \d+(?:, column \d+)?|[^\s]+?): ")
_FILE = re.compile(r"^(?P<file>--policy-config \S+|\S+\.(?:ya?ml|json)): ")


def error_document(args: argparse.Namespace, code: int, lines: list[str]) -> dict[str, object]:
    """What a command run with ``--json`` prints on stdout when it fails before its verdict (exit 2 or 3).

    ``{"error": "invalid-input" | "internal-error", "exit": 2 | 3, "stack": name | null, "stackFile": path |
    null, "problems": [{"message": line, "file": path | null, "field": field | null}]}``: one problem per
    line printed on stderr, without its ``error:`` prefix; ``file`` and ``field`` are the leading parts of the
    line where it names them (``tests/x.yaml: nodefleet:fleet.clusters[0].name: …``).
    """
    problems = []
    for line in lines:
        file = field = None
        rest = line
        m = _FILE.match(line)
        if m:
            file = m.group("file").removeprefix("--policy-config ")
            rest = line[m.end() :]
            f = _FIELD.match(rest)
            field = f.group("field") if f else None
        problems.append({"message": line, "file": file, "field": field})
    stack_file = getattr(args, "config_file", None)
    stack = getattr(args, "stack", None)
    if stack_file is None and isinstance(stack, str):
        stack_file = f"stacks/Pulumi.{stack}.yaml"
    elif stack_file is not None:
        stack = Path(stack_file).name.removeprefix("Pulumi.").removesuffix(".yaml").removesuffix(".yml")
    return {
        "error": "invalid-input" if code == EXIT_INVALID else "internal-error",
        "exit": code,
        "stack": stack if isinstance(stack, str) else None,
        "stackFile": str(stack_file) if stack_file is not None else None,
        "problems": problems,
    }


_parser()  # built at import: in the fork server, once for every command it forks
