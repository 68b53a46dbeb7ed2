"""Policy mutation benchmark: the whole pack over every mutation of every manifest the example stacks produce.

The suite (``tests/policies/test_mutation.py``) mutates each field path of each resource type once; this
mutates every occurrence, in every example stack, with every mutation of ``mockruntime.mutation.MUTATIONS`` and
``HOSTILE``, and prints evaluations, crashes (any exception a policy raised, escaped or caught by the pack's
safety net) by policy and location, and the run time. Exit 1 when a policy crashed.

    venv/bin/python -m bench.policy_mutation            # every occurrence
    venv/bin/python -m bench.policy_mutation --once     # what the suite runs
    venv/bin/python -m bench.policy_mutation --json
"""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter

from mockruntime.mutation import example_runs, run_mutations
from policies.guard import take_defects
from policies.pack import POLICIES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.policy_mutation", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--once", action="store_true", help="each field path of each resource type once")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    runs = example_runs()
    report = run_mutations(
        runs,
        POLICIES,
        net_firings=lambda: [(d.policy, d.error) for d in take_defects()],
        once_per_field=args.once,
    )
    where = Counter((c.policy, c.where, c.error.split(":")[0]) for c in report.crashes)
    summary = {
        "stacks": report.stacks,
        "policies": len(POLICIES),
        "objects": report.objects,
        "fieldPaths": report.paths,
        "mutations": report.mutations,
        "evaluations": report.evaluations,
        "crashes": len(report.crashes),
        "crashesByPolicy": dict(report.by_policy()),
        "seconds": round(report.seconds, 1),
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(
            f"policy mutation: {len(report.stacks)} stacks ({', '.join(report.stacks)}), {len(POLICIES)} policies, "
            f"{report.objects} objects, {report.paths} field paths, {report.mutations} mutations, "
            f"{report.evaluations} evaluations, {len(report.crashes)} crashes, {report.seconds:.1f}s"
        )
        for (policy, at, error), n in where.most_common():
            print(f"  {n:6}  {policy}  {error}  {at}")
    return 1 if report.crashes else 0


if __name__ == "__main__":
    sys.exit(main())
