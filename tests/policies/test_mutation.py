"""Every policy gives a verdict for any object shape: the pack over mutated copies of the example manifests.

Each field of each manifest (and Kubernetes provider) the example stacks produce is replaced by a string,
an int, a float, a bool, None, [], ["x"], {}, {"x": "y"}, a string with a NUL, or deleted
(``mockruntime.mutation``); the resource policies judge the mutated object and the stack policies the stack
with it. A crash is any exception a policy raises, including those the pack's safety net catches
(``policies.guard``): the net keeps a verdict, it does not make a policy right.

The suite mutates every field path of every resource type once, where it first occurs in the example
stacks (deterministic; about 85,000 evaluations in ~5 s here). ``python -m bench.policy_mutation`` runs every
occurrence (about 380,000 evaluations, ~20 s).
"""

from __future__ import annotations

import pytest

from mockruntime.mutation import MutationReport, example_runs, run_mutations
from mockruntime.run import MockRun
from nodefleet import kinds as k
from policies.guard import take_defects
from policies.pack import POLICIES


def _net_firings() -> list[tuple[str, str]]:
    return [(d.policy, d.error) for d in take_defects()]


@pytest.fixture(scope="module")
def runs() -> list[MockRun]:
    return example_runs()


@pytest.fixture(scope="module")
def report(runs: list[MockRun]) -> MutationReport:
    return run_mutations(runs, POLICIES, net_firings=_net_firings, once_per_field=True)


def test_every_policy_gives_a_verdict_on_every_mutated_manifest(report: MutationReport) -> None:
    print(
        f"\npolicy mutation (once per field): {report.objects} objects, {report.paths} field paths, "
        f"{report.mutations} mutations, {report.evaluations} evaluations, {len(report.crashes)} crashes, "
        f"{report.seconds:.1f}s"
    )
    shown = "\n".join(str(c) for c in report.crashes[:20])
    assert report.crashes == [], (
        f"{len(report.crashes)} crashes, by policy {dict(report.by_policy())}:\n{shown}"
    )


def test_the_run_covers_every_example_stack_kind_and_policy(
    runs: list[MockRun], report: MutationReport
) -> None:
    """A run that judged nothing would also have no crashes: it must reach every kind the stacks produce."""
    assert {"dev", "hosted", "karpenter", "rhel10", "skewed-hosted"} <= set(report.stacks)
    kinds = {r.type for run in runs for r in run.registrations}
    for kind in (
        k.MACHINE_SET,
        k.MACHINE_CONFIG_POOL,
        k.HOSTED_CLUSTER,
        k.HYPERSHIFT_NODE_POOL,
        k.OPENSHIFT_EC2_NODE_CLASS,
        k.KARPENTER_NODE_POOL,
        k.EC2_NODE_CLASS,
    ):
        assert kind.token in kinds
    assert report.paths > 400 and report.mutations == report.paths * 11
    # Every mutation is judged by every policy of the pack at least once (a provider's, once per object on it).
    assert report.evaluations >= report.mutations * len(POLICIES)


def test_a_crash_is_counted_whether_it_escapes_or_the_net_catches_it(runs: list[MockRun]) -> None:
    """The counter must be able to fail: a policy that raises on one shape is found, behind the net or not."""
    from pulumi_policy import EnforcementLevel, ResourceValidationArgs, ResourceValidationPolicy

    from policies.guard import guarded
    from policies.props import ReportViolation

    def fragile(args: ResourceValidationArgs, report: ReportViolation) -> None:
        if args.resource_type == k.MACHINE_SET.token:
            args.props.get("spec", {}).get("replicas")  # only a mapping (or an absent spec) has .get

    bare = ResourceValidationPolicy(
        name="fragile", description="d", validate=fragile, enforcement_level=EnforcementLevel.ADVISORY
    )
    dev = [r for r in runs if r.stack == "dev"]
    for policy in (bare, guarded(bare)):
        found = run_mutations(dev, [policy], net_firings=_net_firings, once_per_field=True)
        # spec replaced by "x", 7, 2.5, True, None, [], ["x"] or the NUL string; {} and deletion are harmless.
        assert {c.path for c in found.crashes} == {"spec"}
        assert sorted(c.mutation for c in found.crashes) == sorted(
            ["string", "int", "float", "bool", "None", "[]", '["x"]', "NUL string"]
        )
        assert all(c.policy == "fragile" for c in found.crashes)


# --- A malformed field is judged, not skipped -----------------------------------------------------------------


def test_a_provider_spec_that_is_not_a_mapping_is_an_ami_not_referenced_by_id() -> None:
    from policies.boot_images import boot_image_ownership
    from tests.crdobjects import rendered
    from tests.policies.helpers import run_policy

    ms = rendered(k.MACHINE_SET.token)
    ms["spec"]["template"]["spec"]["providerSpec"] = "ami-0123456789abcdef0"
    messages = [v.message for v in run_policy(boot_image_ownership, k.MACHINE_SET.token, ms)]
    assert any(
        "references its AMI by nothing; set providerSpec.value.ami to {id: ami-...}" in m for m in messages
    )


@pytest.mark.parametrize(
    ("budgets", "says"),
    [
        (
            "10%",
            "spec.disruption.budgets is a string, not a list of budgets, so no disruption reason is bounded",
        ),
        ({"nodes": "10%"}, "spec.disruption.budgets is a mapping, not a list of budgets"),
    ],
)
def test_malformed_budgets_are_a_finding_with_what_they_mean(budgets: object, says: str) -> None:
    from policies.karpenter import drift_budget
    from tests.crdobjects import rendered
    from tests.policies.helpers import run_policy

    pool = rendered(k.KARPENTER_NODE_POOL.token)
    pool["spec"]["disruption"] = {"consolidationPolicy": "WhenEmptyOrUnderutilized", "budgets": budgets}
    messages = [v.message for v in run_policy(drift_budget, k.KARPENTER_NODE_POOL.token, pool)]
    assert any(says in m for m in messages), messages


def test_a_malformed_budget_count_is_the_crds_verdict_alone() -> None:
    """`nodes: 2.5` breaks the NodePool CRD's type and pattern: crd-schema says so, drift-budget does not repeat it."""
    from policies.crd_schema import crd_schema
    from policies.karpenter import drift_budget
    from tests.crdobjects import rendered
    from tests.policies.helpers import run_policy

    pool = rendered(k.KARPENTER_NODE_POOL.token)
    pool["spec"]["disruption"] = {
        "consolidationPolicy": "WhenEmptyOrUnderutilized",
        "budgets": [{"nodes": 2.5}],
    }
    assert not [v for v in run_policy(drift_budget, k.KARPENTER_NODE_POOL.token, pool) if "2.5" in v.message]
    assert any("nodes" in v.message for v in run_policy(crd_schema, k.KARPENTER_NODE_POOL.token, pool))
