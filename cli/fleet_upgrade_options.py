"""The options of ``fleet upgrade``, apart from :mod:`cli.fleet_upgrade`: the command line builds its whole parser
on every run, and the upgrade's planning (the stack-file models, the drift rules) is imported only by the command
that uses it.
"""

from __future__ import annotations

import argparse
from pathlib import Path

STATE_FILE = "nodefleet-upgrade.json"
#: Where --push pushes unless --remote says otherwise.
DEFAULT_REMOTE = "origin"
#: The default branch the GitOps tool reads the render from: where ``scripts/pipeline publish`` puts it.
GITOPS_BRANCH = "nodefleet-rendered"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """The options of ``fleet upgrade`` beside those every ``fleet`` command has."""
    p.add_argument("--release", help="the release every cluster moves to, x.y.z (as in 4.22.4)")
    p.add_argument(
        "--state",
        type=Path,
        help=f"the state file, read to resume and written after every step (default: <stacks-dir>/{STATE_FILE}; "
        f"with --commit, {STATE_FILE} in the repository's git folder, as git keeps a rebase's state, since it "
        "records the commits and so cannot be in them)",
    )
    p.add_argument(
        "--commit",
        action="store_true",
        help="commit each step, exactly its own paths (never what else is staged): the stack files on the "
        "current branch and the render on the branch the GitOps tool reads (--gitops-branch), without checking it "
        "out; one commit holds both when that is the current branch. Each commit names the upgrade in git trailers "
        "(Nodefleet-Upgrade, -Plan, -Wave, -Phase; a render commit also Nodefleet-Source, the commit it renders)",
    )
    p.add_argument(
        "--gitops-branch",
        help=f"the branch Argo CD or Flux reads the render from (default: gitops.branch of the fleet "
        f"registry, else {GITOPS_BRANCH}, where `scripts/pipeline publish` puts it)",
    )
    p.add_argument(
        "--push",
        action="store_true",
        help="with --commit: push both branches to --remote after each step (both or neither, never forced: "
        "a branch someone else pushed to is refused, exit 2, with the merge to make), then wait until the GitOps "
        "tool reports the commit applied (Flux: lastAppliedRevision and Ready; Argo CD: sync.revision, Synced, "
        "Healthy) on the step's folders, at most --timeout seconds, before the gate",
    )
    p.add_argument(
        "--remote",
        help="with --push: the remote, by name or a URL without credentials (default origin; a resumed upgrade "
        "pushes where it began); checked before anything is written",
    )
    p.add_argument(
        "--gitops-kubeconfig",
        help="with --push: the kubeconfig of the cluster Argo CD or Flux runs on (default: gitops.kubeconfig "
        "of the fleet registry)",
    )
    p.add_argument(
        "--gitops-tool",
        choices=("flux", "argocd", "both"),
        help="with --push: whose objects report the commit applied (default: gitops.tool of the fleet registry)",
    )
    p.add_argument(
        "--confirmed",
        action="store_true",
        help="the gate the last run stopped at has passed (you checked the control planes, or the wave's "
        "health, yourself)",
    )
    p.add_argument(
        "--restart",
        action="store_true",
        help="set the state file aside and plan afresh from the stack files as they are (the commits made "
        "stay; a cluster already moved is not moved again)",
    )
    p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the whole plan and write nothing (but the cache of stack-file values gitops and fleet check "
        "keep too, NODEFLEET_CACHE_DIR); exit 0 only when the plan is possible",
    )
