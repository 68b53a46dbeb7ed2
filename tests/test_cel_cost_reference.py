"""The estimated cost of CRD rules (nodefleet/apiserver/cel_cost.py) against the API server's own code.

The reference (tests/celcost_reference) is k8s.io/apiextensions-apiserver and k8s.io/apiserver v0.36.3 (the
test API server's Kubernetes, 1.36.3, and its cel-go 0.26.0) from the Go module proxy: for every rule of a CRD
it compiles the rule as the API server does and reports the estimated cost, the cardinality and the cost the
limits are checked against, and it validates the CRD as the API server does when it is created. The numbers
must be equal, not only the verdicts, on:

- the generated corpus (tests/cel_cost_corpus.py): rules of every shape over schemas with and without bounds;
- every rule of every shipped CRD;
- the hand-written CRDs near the budgets (tests/crd_classes.py ``REFUSAL_CRDS``) and the edge CRDs;

and every refusal of a CRD must be the API server's, word for word, at the same field: for its rules' cost,
rules that do not compile (cel-go's errors, located and shown as it shows them), a rule's fields, defaults its
schema or rules refuse (nodefleet/apiserver/crd_rules.py). The functions the
estimator type-checks against (nodefleet/apiserver/cel_check.py ``DECLARATIONS``) must be the API server's
environment's, overload for overload, and its parser must expand the same macros.

    venv/bin/python -m pytest tests/test_cel_cost_reference.py -q -s     # prints the counts
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import Counter
from functools import cache
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.apiserver import cel_check, cel_cost
from nodefleet.apiserver.schema import crd_refusals
from nodefleet.apiserver.store import CRD_DIR, load_index
from tests import goref
from tests.cel_cost_corpus import HAND_WRITTEN_RULES, corpus, hand_written
from tests.conftest import PROJECT
from tests.crd_classes import REFUSAL_CRDS

pytestmark = pytest.mark.goref

REFERENCE = PROJECT / "tests" / "celcost_reference"
#: Seeds and sizes of the generated corpus.
SEEDS = ((7, 600), (8, 600), (9, 600))
#: The API server names a rule's type ``selfType`` and its clock's nanoseconds.
_SELF_TYPE = re.compile(r"selfType\d+")
#: The refusals for cost are those whose words name it.
_COST_WORDS = (
    "estimated rule cost",
    "estimated messageExpression cost",
    "contributed to estimated rule cost",
)


@cache
def _binary() -> Path:
    return goref.build(REFERENCE)


def _run(args: list[str], stdin: str = "") -> str:
    done = subprocess.run(
        [str(_binary()), *args], input=stdin, capture_output=True, text=True, check=False, timeout=1800
    )
    if done.returncode != 0:
        raise RuntimeError(f"the cost reference failed: {done.stderr[-2000:]}")
    return done.stdout


def reference(crds: list[tuple[str, dict[str, Any]]]) -> dict[str, dict[str, Any]]:
    """The reference's answer for each CRD, by id."""
    lines = "".join(json.dumps({"id": i, "crd": c}, separators=(",", ":")) + "\n" for i, c in crds)
    return {d["id"]: d for d in map(json.loads, _run([], lines).splitlines())}


def _schemas(crd: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Each schema the API server validates, named as it names it: ``spec.validation`` when every version has
    the same one (the internal form hoists it), else per version."""
    versions = crd["spec"]["versions"]
    if all(v.get("schema") == versions[0].get("schema") for v in versions):
        return [("spec.validation.openAPIV3Schema", versions[0]["schema"]["openAPIV3Schema"])]
    return [
        (f"spec.versions[{i}].schema.openAPIV3Schema", v["schema"]["openAPIV3Schema"])
        for i, v in enumerate(versions)
    ]


def compare(crds: list[tuple[str, dict[str, Any]]]) -> tuple[Counter[str], list[str]]:
    """Counts of rules and CRDs whose numbers and refusals equal the reference's, and what differs."""
    answers = reference(crds)
    counts: Counter[str] = Counter()
    differ: list[str] = []
    for cid, crd in crds:
        answer = answers[cid]
        assert not answer.get("error"), answer
        ours = {rc.path: rc for where, schema in _schemas(crd) for rc in cel_cost.rule_costs(schema, where)}
        for go in answer["rules"]:
            counts["rules"] += 1
            rc = ours.get(go["path"])
            if str(go.get("error") or "").startswith("internal error: "):
                # The reference builds no CEL types for this schema (an extension the API server refuses, such as
                # x-kubernetes-preserve-unknown-fields: false): the API server compiles none of its rules, and
                # the refusal is the schema's (compared in test_crd_classes_live).
                counts["schema refused, rules not compiled"] += 1
                continue
            if go.get("error") and not go["estimated"]:
                # It does not compile there: no cost; here it must not type-check either (or not be a bool).
                counts["not compiled"] += 1
                if rc is None or rc.estimated not in (None, 0):
                    differ.append(f"{cid} {go['path']}: {go['rule']!r} does not compile there, here {rc}")
                continue
            got = (rc.estimated, rc.cost, rc.message_expression_cost) if rc else None
            want = (go["estimated"], go["cost"], go.get("messageExpressionCost"))
            if got == want:
                counts["equal"] += 1
            else:
                differ.append(f"{cid} {go['path']}: {go['rule']!r}: API server {want}, here {got}")
        counts["crds"] += 1
        counts["refused for cost"] += any(w in e["detail"] for e in answer["errors"] for w in _COST_WORDS)
        counts["refused otherwise"] += any(
            not any(w in e["detail"] for w in _COST_WORDS) for e in answer["errors"]
        )
        # Every refusal, for cost or anything else crd_rules checks, at the same field in the same words (but
        # the number the API server names a rule's type with, its clock's nanoseconds).
        want_words = sorted((e["field"], _SELF_TYPE.sub("selfType", e["detail"])) for e in answer["errors"])
        got_words = sorted(
            (r.where, _SELF_TYPE.sub("selfType", r.message))
            for where, schema in _schemas(crd)
            for r in crd_refusals(schema, where)
        )
        if got_words == want_words:
            counts["refusals equal"] += 1
        else:
            differ.append(f"{cid}: API server {want_words}, here {got_words}")
    return counts, differ


def _report(name: str, counts: Counter[str], differ: list[str]) -> None:
    print(f"\n{name}: {dict(counts)}")
    assert not differ, f"{len(differ)} differ:\n" + "\n".join(differ[:40])


def test_the_declarations_are_the_api_servers_environment() -> None:
    env = json.loads(_run(["declarations"]))
    kinds = {"duration": "duration", "timestamp": "timestamp", "null": "null"}

    def text(t: dict[str, Any]) -> str:
        base = t["name"] if t["kind"] not in kinds else kinds[t["kind"]]
        params = t.get("params") or []
        return f"{base}({','.join(map(text, params))})" if params else base

    want = []
    for name in sorted(env["functions"]):
        for o in env["functions"][name]:
            args = [text(a) for a in o["args"] or []]
            signature = f"{args[0]}.({','.join(args[1:])})" if o["member"] else f"({','.join(args)})"
            want.append(f"{name} {o['id']} {signature} {text(o['result'])}")
    assert cel_check.DECLARATIONS.strip().splitlines() == want
    for t in {t for o in cel_check.FUNCTIONS.values() for v in o for t in (*v.args, v.result)}:
        assert t.kind != "struct" or t.name.startswith("kubernetes."), t
    kinds_of = {
        (t["kind"], t["name"])
        for fn in env["functions"].values()
        for o in fn
        for t in [*(o["args"] or []), o["result"]]
        if t["kind"] in ("struct", "opaque")
    }
    assert kinds_of <= {("struct", n) for n in cel_check._STRUCTS} | {
        ("opaque", n) for n in cel_check._OPAQUES
    }


def test_the_parser_expands_the_api_servers_macros_and_no_others() -> None:
    env = json.loads(_run(["declarations"]))
    macros = set(env["macros"])
    for name, count, member in [
        ("all", 2, True), ("all", 3, True), ("exists", 2, True), ("exists", 3, True), ("exists_one", 2, True),
        ("exists_one", 3, True), ("existsOne", 2, True), ("existsOne", 3, True), ("map", 2, True),
        ("map", 3, True), ("filter", 2, True), ("optMap", 2, True), ("optFlatMap", 2, True), ("sortBy", 2, True),
        ("transformList", 3, True), ("transformList", 4, True), ("transformMap", 3, True),
        ("transformMap", 4, True), ("transformMapEntry", 3, True), ("transformMapEntry", 4, True),
        ("has", 1, False), ("bind", 3, True),
    ]:  # fmt: skip
        args = ", ".join([*["a", "b", "c"][: count - 1], "a.b" if name == "has" else "true"])
        text = f"x.{name}({args})" if member else f"{name}({args})"
        if name == "bind":
            text = "cel.bind(a, 1, a)"
        tree = cel_check.parse(text)
        expanded = tree.kind != "call" or tree.name != name
        assert expanded == (f"{name}:{count}:{str(member).lower()}" in macros), text


def test_costs_equal_the_api_servers_on_the_generated_corpus() -> None:
    total: Counter[str] = Counter()
    differ: list[str] = []
    for seed, count in SEEDS:
        counts, found = compare(corpus(seed, count))
        total += counts
        differ += found
    assert total["rules"] >= 3000 and total["refused for cost"] >= 300 and total["not compiled"] >= 10, total
    assert total["refused otherwise"] >= 100, total  # rules that do not compile, defaults refused
    _report("generated corpus", total, differ)


def test_costs_equal_the_api_servers_on_the_hand_written_rules() -> None:
    counts, differ = compare(hand_written())
    assert counts["rules"] == len(HAND_WRITTEN_RULES) and counts["not compiled"] >= 15, counts
    _report("hand-written rules", counts, differ)


def test_costs_equal_the_api_servers_on_every_shipped_crd() -> None:
    crds = [
        (c.file, yaml.safe_load((CRD_DIR / c.file).read_text(encoding="utf-8"))) for c in load_index().crds
    ]
    counts, differ = compare(crds)
    assert counts["rules"] >= 700 and counts["refused for cost"] == 0, counts
    _report("shipped CRDs", counts, differ)


def test_costs_equal_the_api_servers_on_the_hand_written_crds() -> None:
    crds = list(REFUSAL_CRDS.items())
    edges = PROJECT / "tests" / "data" / "crd-edges"
    crds += [(p.name, yaml.safe_load(p.read_text(encoding="utf-8"))) for p in sorted(edges.glob("*.yaml"))]
    counts, differ = compare(crds)
    assert counts["refused for cost"] >= 13 and counts["refused otherwise"] >= 40, counts
    _report("hand-written CRDs", counts, differ)
