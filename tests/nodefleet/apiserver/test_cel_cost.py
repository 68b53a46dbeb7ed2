"""The estimated cost of CRD rules without the Go reference: numbers the API server's own code gave for the
same rules (tests/test_cel_cost_reference.py compares every rule of its corpora; these hold the estimator to a
few of them where `go` is not on PATH), and what the refusals say."""

from __future__ import annotations

import pytest

from nodefleet.apiserver import cel_check, cel_cost
from tests.cel_cost_corpus import HAND_SPEC
from tests.crd_classes import REFUSAL_CRDS


def _schema(tag: str) -> dict:
    return REFUSAL_CRDS[tag]["spec"]["versions"][0]["schema"]["openAPIV3Schema"]


@pytest.mark.parametrize(
    ("rule", "estimated"),
    [
        # two fields of the same iteration variable share a Go slice: the inner loop's size is read through
        # the path of the field selected last (o.name, maxLength 20), not o.vals (3 items)
        ("self.objs.all(o, o.vals.all(v, v.size() <= o.name.size()))", 3633),
        # `!=` on quantities has no cost of its own: unknown sizes
        ("quantity(self.s) != quantity('1')", 1844674407371269840),
        ("quantity(self.b) == quantity('1')", 8),
        ("self.s.split('-').join('.') != ''", 1844674407371584412),
        # a type name's path is the rule node itself: an int-or-string's 3 MiB
        ("type(self.ios) == int", 4),
        ("self.lb.sortBy(e, e.size()).all(x, x != '')", 257),
        ("self.b.replace('a', 'bb') != ''", 10),
        ("self.?o.?y.orValue('') == ''", 4),
    ],
)
def test_estimates_are_the_api_servers(rule: str, estimated: int) -> None:
    decl = cel_check.schema_decl(HAND_SPEC, False)
    assert decl is not None
    assert cel_cost.estimate(rule, decl) == estimated


@pytest.mark.parametrize(
    ("tag", "costs", "total"),
    [
        ("accepted-cost-rule-under", [9999831], 9999831),
        ("cost-rule-over", [10000043], 10000043),
        ("accepted-cost-crd-under", [9999831] * 10, 99998310),
        ("cost-crd-over", [9999831] * 11, 109998141),
        ("accepted-cost-items-bounded", [9999814], 9999814),
        ("cost-items-unbounded", [219152384], 219152384),
        ("cost-grid-over", [10168170], 10168170),
    ],
)
def test_costs_near_the_budgets_are_the_api_servers(tag: str, costs: list[int], total: int) -> None:
    found = cel_cost.rule_costs(_schema(tag))
    assert [rc.cost for rc in found] == costs
    assert sum(costs) == total


def test_a_rule_over_budget_and_the_total_are_refused_in_the_api_servers_words() -> None:
    try_ = (
        "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
        "strings are declared)"
    )
    rule = "openAPIV3Schema.properties[spec].x-kubernetes-validations[0].rule"
    assert cel_cost.refusals(_schema("cost-rule-over")) == [
        (rule, f"Forbidden: estimated rule cost exceeds budget by factor of 1.000004x {try_}")
    ]
    assert cel_cost.refusals(_schema("cost-rule-over-2x")) == [
        (rule, f"Forbidden: estimated rule cost exceeds budget by factor of 2.5x {try_}")
    ]
    found = cel_cost.refusals(_schema("cost-crd-over"))
    contributed = (
        "Forbidden: contributed to estimated rule cost total exceeding cost limit for entire OpenAPIv3 schema"
    )
    assert found == [
        *[(rule.replace("[0]", f"[{i}]"), contributed) for i in range(4)],
        (
            "openAPIV3Schema",
            "Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 schema exceeds "
            f"budget by factor of 1.099981x {try_}",
        ),
    ]
    assert cel_cost.refusals(_schema("accepted-cost-crd-under")) == []


def test_a_rule_that_does_not_type_check_is_not_estimated() -> None:
    decl = cel_check.schema_decl(HAND_SPEC, False)
    assert decl is not None
    for rule in ("self.nope > 0", "[1, 'a'].size() > 0", "duration('1x') > self.du", "self.s.matches('[')"):
        with pytest.raises(cel_check.CheckError):
            cel_cost.estimate(rule, decl)
    (rc,) = cel_cost.rule_costs({"type": "object", "x-kubernetes-validations": [{"rule": "self.nope > 0"}]})
    assert rc.estimated is None and rc.cost is None and "undefined field 'nope'" in rc.unestimated


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"type": "string", "maxLength": "ten"}}},
        {"type": "object", "properties": {"a": {"type": "array"}}},
        {"type": "object", "properties": {"a": {"type": "array", "items": True, "maxItems": 2.5}}},
        {"type": "object", "properties": {"a": None, "b": "text"}},
        {"type": "object", "properties": {"a": {"type": "object", "additionalProperties": False}}},
    ],
)
def test_a_schema_the_api_server_refuses_for_its_shape_is_not_a_crash(schema: dict) -> None:
    """Such a CRD is refused for its schema (which crd-schema does not model); its rules are estimated where
    they can be, and never crash the check."""
    from nodefleet.apiserver.schema import crd_refusals as refusals

    for rule in ("self.a.size() > 0", "has(self.a)", "self.a.all(x, x == x)"):
        assert refusals({**schema, "x-kubernetes-validations": [{"rule": rule}]}) is not None
