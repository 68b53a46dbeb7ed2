"""``python -m nodefleet``: the credential-free companion of ``pulumi preview --policy-pack policies``.

``check`` runs the program under Pulumi's mock runtime and evaluates the policy pack's own policy objects:
no CLI, no providers, no cloud or cluster credentials, seconds per stack. ``render`` writes the manifests
the program declares, for review. ``pulumi preview --policy-pack policies`` stays the gate: it also runs
the providers' checks, which the mock runtime does not.

Every command keeps the exit-code contract in :mod:`cli.exits`.
"""

from __future__ import annotations

import argparse
import os
import sys
import traceback
from collections.abc import Callable
from pathlib import Path

from cli import check, crds, ops, render
from cli.exits import CONTRACT, EXIT_INTERNAL, EXIT_INVALID, InputError
from cli.roots import add_roots, allowed_roots
from cli.stacks import add_source
from engine.sizing import DEFAULT_MAX_PROVIDERS, MAX_PROVIDERS_ENV

Command = Callable[[argparse.Namespace], int]


def _parser() -> argparse.ArgumentParser:
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
            "  python -m nodefleet report --base origin/main --out report.md\n"
            "  python -m nodefleet fleet check --parallel 2\n"
            "  python -m nodefleet crds coverage\n\n"
            f"{CONTRACT}\n"
            "`pulumi preview --policy-pack policies` stays the gate: it also runs the providers' checks."
        ),
    )
    p.add_argument("--debug", action="store_true", help="on an internal error, print the full traceback")
    commands = ",".join(("check", "render", "crds", *ops.OPERATIONS))
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
        help="warn when the stack runs more Kubernetes provider processes than N, about 140 MB each "
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
        type=float,
        default=60.0,
        metavar="SECONDS",
        help="wait this long for another render of the same directory to finish (default: 60)",
    )
    s.set_defaults(run=render.run)
    ops.register(sub)

    crds.add_parser(sub)
    return p


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive whole number, e.g. --max-providers 30")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    command: Command = args.run
    try:
        with allowed_roots(args):
            return command(args)
    except InputError as exc:
        for line in str(exc).splitlines():
            print(f"error: {line}", file=sys.stderr)
        return EXIT_INVALID
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`check | head -1`): nothing to report, as for any command killed by SIGPIPE.
        # stdout points at /dev/null from here, so the interpreter's own flush at exit cannot fail again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as exc:
        if args.debug:
            traceback.print_exc()
        where = traceback.extract_tb(exc.__traceback__)[-1]
        print(
            f"internal error: {type(exc).__name__}: {exc} (at {Path(where.filename).name}:{where.lineno}). "
            "This is a defect in nodefleet, not in your input: rerun with --debug and report the traceback "
            "with the command line you used.",
            file=sys.stderr,
        )
        return EXIT_INTERNAL
