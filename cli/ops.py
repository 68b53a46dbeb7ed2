"""The operations commands (forecast, preview, up, report, fleet, upgrade), registered on the main parser."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from cli.exits import MAX_SECONDS, seconds
from cli.roots import add_roots
from cli.stacks import add_source

OPERATIONS = ("forecast", "preview", "up", "report", "fleet", "upgrade")


def _policy_config(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--policy-config",
        type=Path,
        help="policy pack config JSON, as for `pulumi preview --policy-pack-config`",
    )


def register(sub: Any) -> None:
    from cli import engine, fleet, forecast, report, upgrade

    s = sub.add_parser(
        "forecast",
        help="which nodes the stack's declaration would replace, against its last render",
        description="Which nodes the stack's current declaration would replace or reboot, why, how many and "
        "how many at a time, compared with its last render: by default the stack's output.directory, where "
        "`render` writes without --out (--rendered DIR for a render elsewhere, --state FILE for a `pulumi stack "
        "export`). A first run, with nothing to compare with, says UNKNOWN.",
    )
    add_source(s)
    prev = s.add_mutually_exclusive_group()
    prev.add_argument(
        "--rendered",
        type=Path,
        metavar="DIR",
        help="the previous render, where `render --out DIR` wrote it (default: the stack's output.directory, "
        "where `render` writes without --out)",
    )
    prev.add_argument("--state", type=Path, help="a `pulumi stack export` file to compare with instead")
    s.add_argument("--json", action="store_true", help="print the forecast as JSON")
    add_roots(s)
    s.set_defaults(run=forecast.run)

    for operation in ("preview", "up"):
        s = sub.add_parser(
            operation, help=f"pulumi {operation} --policy-pack policies through the Automation API"
        )
        add_source(s)
        s.add_argument("--json", action="store_true", help='print {"changes", "violations", ...}')
        _policy_config(s)
        s.set_defaults(run=engine.run, operation=operation)

    s = sub.add_parser(
        "report", help="Markdown/JSON report of the stacks a change touches, for a pull request"
    )
    s.add_argument("--base", required=True, help="git ref the change is compared with, e.g. origin/main")
    s.add_argument("--stacks", help="comma-separated stacks (default: the stacks the change touches)")
    s.add_argument("--out", type=Path, help="write the Markdown here")
    s.add_argument("--json-out", type=Path, help="write the JSON here")
    s.add_argument("--json", action="store_true", help="print the JSON instead of the Markdown")
    s.add_argument(
        "--stacks-dir",
        type=Path,
        default=fleet.PROJECT / "stacks",
        help="where the stack files are (default: stacks/); a folder outside the repository is reported against "
        "the base's code with its stack files as they are now",
    )
    _policy_config(s)
    s.set_defaults(run=report.run)

    _register_fleet(sub)

    s = sub.add_parser(
        "upgrade", help="stage a hosted cluster's release bump: control plane first, nodes after"
    )
    add_source(s)
    s.add_argument("--release", required=True, help="the new control-plane release, x.y.z")
    s.add_argument("--cluster", help="the hosted cluster (default: the stack's only one)")
    s.add_argument(
        "--control-plane-confirmed", action="store_true", help="render mode: the control plane has completed"
    )
    s.add_argument(
        "--kubeconfig",
        help="apply mode: the management cluster's kubeconfig (default: the cluster's managementCluster.kubeconfig, "
        "else output.kubeconfig)",
    )
    s.add_argument("--dry-run", action="store_true", help="print the step and its forecast without writing")
    add_roots(s)
    s.set_defaults(run=upgrade.run)


#: ``fleet``'s commands, each with its one-line help; ``upgrade``'s description is its own.
_FLEET_COMMANDS = {
    "check": "`check` every stack, one process per stack, wave by wave",
    "preview": "`preview` every stack on the engine, wave by wave",
    "up": "`up` every stack on the engine, wave by wave (gated by default)",
    "render": "`render` every stack, wave by wave (gated by default)",
    "forecast": "`forecast` every stack against its last render, wave by wave",
    "report": "`report` every stack against --base, one Markdown file per stack with --out-dir",
    "matrix": "print the waves as GitHub Actions matrices (JSON); runs no stack",
    "upgrade": "move every cluster of the fleet to a release, wave by wave, resumable",
}

_UPGRADE_DESCRIPTION = (
    "Move every cluster of the fleet to --release R through the waves, after judging all of them (a downgrade, "
    "a skipped minor, a release a management cluster's HyperShift operator does not run are refused, every one "
    "at once, before anything is written): per wave, the control planes (stack files edited as `upgrade` does; "
    "a standalone cluster's own upgrade is yours), the render-mode stacks re-rendered, then a gate "
    "(--health-command, or --confirmed on the next run; in apply mode the HostedClusters' status), then the nodes "
    "(and each standalone cluster's release), and a gate before the next wave. With --commit each step is one "
    "commit of exactly its paths: the stack files on the current branch, the render on the branch the GitOps "
    "tool reads (--gitops-branch, default nodefleet-rendered), without checking it out; with --push both are "
    "pushed and the gate waits until Flux or Argo CD reports the commit applied. It stops at a gate that does not "
    "pass, records where in the state file (--state), and the same command resumes there, after a crash at any "
    "point too; --dry-run prints the whole plan."
)


def _fleet_command(args: argparse.Namespace) -> int:
    """``fleet <command>``: ``upgrade`` in :mod:`cli.fleet_upgrade`, imported only here, every other command in
    :func:`cli.fleet.run`."""
    from cli import fleet

    if args.fleet_command != "upgrade":
        return fleet.run(args)
    from cli import fleet_upgrade

    known, names = fleet.selected(args)
    return fleet_upgrade.run(args, known, names)


def _register_fleet(sub: Any) -> None:
    """``fleet`` and its commands, each with its own options (``fleet check --help`` shows check's)."""
    from cli import fleet, fleet_upgrade_options

    s = sub.add_parser(
        "fleet",
        help="run a command over many stacks, one process per stack, wave by wave",
        description="Run a command over many stacks, one process per stack, wave by wave (canaries first), "
        "with a health gate between waves. `fleet matrix` prints the waves as GitHub Actions matrices; `fleet "
        "upgrade --release R` moves every cluster of the fleet to R through the waves. `fleet COMMAND --help` "
        "shows each command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="examples:\n"
        "  python -m nodefleet fleet check --parallel 2\n"
        "  python -m nodefleet fleet upgrade --release 4.22.4 --dry-run\n"
        "  python -m nodefleet fleet upgrade --release 4.22.4 --commit --health-command 'scripts/wave-healthy'\n"
        "  python -m nodefleet fleet upgrade --release 4.22.4 --commit --confirmed   # after checking the gate\n"
        "  python -m nodefleet fleet upgrade --release 4.22.4 --commit --push --gitops-tool flux "
        "--gitops-kubeconfig ~/.kube/hub",
    )
    commands = s.add_subparsers(
        dest="fleet_command", metavar="{" + ",".join(fleet.COMMANDS) + "}", required=True
    )
    made = []
    for name in fleet.COMMANDS:
        c = commands.add_parser(
            name, help=_FLEET_COMMANDS[name], description=_UPGRADE_DESCRIPTION if name == "upgrade" else None
        )
        made.append(c)
        c.set_defaults(run=_fleet_command)
        c.add_argument("--stacks", help="comma-separated stack names (default: every stack)")
        c.add_argument(
            "--stacks-dir",
            type=Path,
            default=fleet.PROJECT / "stacks",
            help="where the stack files are (default: stacks/ of the project)",
        )
        if name == "matrix":
            fleet.add_matrix_arguments(c)
            continue
        c.add_argument(
            "--parallel",
            type=int,
            default=2,
            help="stacks at a time" + (" (renders and checks)" if name == "upgrade" else ""),
        )
        c.add_argument(
            "--timeout",
            type=seconds,
            default=1800,
            help="seconds per stack before it counts as failed; also the limit of each --health-command (then "
            "killed)"
            + (", of each git push and of the wait for the GitOps tool" if name == "upgrade" else "")
            + f"; at most {MAX_SECONDS:.0f}",
        )
        c.add_argument("--json", action="store_true", help="print the summary as JSON")
        if name in ("render", "forecast", "upgrade"):
            c.add_argument(
                "--out",
                type=Path,
                help={
                    "render": "write each stack under <out>/<stack>/ (default: each stack's output.directory)",
                    "forecast": "compare with what `fleet render --out` wrote there (default: each stack's "
                    "output.directory)",
                    "upgrade": "render each stack under <out>/<stack>/ (default: each stack's output.directory)",
                }[name],
            )
        if name == "report":
            c.add_argument("--out-dir", type=Path, help="write <out-dir>/<stack>.md")
            c.add_argument("--base", help="the git ref the change is compared with (required)")
        if name == "check":
            c.add_argument(
                "--changed-files",
                help="a file listing the changed paths (`git diff --name-only BASE`), `-` for stdin: check only the "
                "stacks they touch (as `fleet matrix --changed-files` selects them), judged across the fleet with "
                "the stacks they can collide with, read from their stack files (default: every stack)",
            )
        if name in ("check", "preview", "up", "report"):
            _policy_config(c)
        if name == "upgrade":
            fleet.add_gate_arguments(c, gated_by_default=False, upgrade=True)
            fleet_upgrade_options.add_arguments(c)
        else:
            fleet.add_gate_arguments(c, gated_by_default=name in fleet.GATED)
    # The commands share one runner: every option any of them has is an attribute of every one's arguments.
    defaults = {
        a.dest: a.default
        for c in made
        for a in c._actions
        if a.option_strings and a.default is not argparse.SUPPRESS and a.dest != "help"
    }
    for c in made:
        own = {a.dest for a in c._actions}
        c.set_defaults(**{k: v for k, v in defaults.items() if k not in own})
