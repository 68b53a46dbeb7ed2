"""nodefleet's drift verdicts against Karpenter's own ``Hash()`` and drift checks, for every supported minor.

The references (tests/karpenter_hash, built from the Go module proxy on first use) run the real
``EC2NodeClass.Hash()`` / ``NodePool.Hash()`` of aws/karpenter-provider-aws and sigs.k8s.io/karpenter, on
objects put through the CRD's defaulting as the API server stores them, and decide static drift the way
the controllers do (hash and hash-version annotations of the NodeClaim against the object's).
"""

from __future__ import annotations

import dataclasses
import json
import os
import re
import subprocess
from collections import Counter
from collections.abc import Iterable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from nodefleet.drift import karpenter_hash as kh
from nodefleet.drift.rules import (
    NODE_CLASS_DRIFT,
    NODE_POOL_DRIFTED,
    REQUIREMENTS_DRIFTED,
    drift_reasons,
    node_requirements_drifted,
    static_drift,
)
from tests.karpenter_hash import reference
from tests.karpenter_hash.pairs import Pair, RequirementCase, pairs, requirement_cases

MINORS = kh.SUPPORTED_KARPENTER
#: The issue's floor: generated pairs per Karpenter minor.
MIN_PAIRS = 1000
#: Seeds of the generated requirement changes (18 was the first; each further seed adds other combinations).
REQUIREMENT_SEEDS = (18, 1, 2)


@cache
def _ref(minor: str) -> reference.Reference:
    return reference.Reference(minor)


@cache
def _answers(minor: str) -> tuple[tuple[Pair, dict[str, Any]], ...]:
    generated = pairs(minor)
    answers = _ref(minor).ask_many(p.request() for p in generated)
    return tuple(zip(generated, answers, strict=True))


def _ours(pair: Pair, minor: str) -> str:
    return static_drift(
        pair.old,
        pair.new,
        karpenter=minor,
        launched_by=pair.old_minor,
        ca_bundle_before=pair.ca_old,
        ca_bundle_after=pair.ca_new,
    )


def _disagreements(minor: str, results: Iterable[tuple[Pair, dict[str, Any]]]) -> list[str]:
    out = []
    for pair, answer in results:
        assert not answer.get("error"), f"{pair.id}: the reference refused the pair: {answer['error']}"
        ours = _ours(pair, minor)
        if ours != answer["reason"]:
            out.append(
                f"{pair.id}: Karpenter {minor} says {answer['reason'] or 'no drift'}, nodefleet {ours or 'no drift'}"
            )
    return out


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_reference_pins_the_modules_it_claims(minor: str) -> None:
    assert _ref(minor).types()["modules"] | reference.MODULES[minor] == _ref(minor).types()["modules"]


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_shipped_hash_types_are_the_modules_types(minor: str) -> None:
    shipped = (kh.HASH_TYPES_DIR / f"karpenter-{minor}.json").read_text()
    assert shipped == reference.hash_types_text(_ref(minor).types()), (
        f"nodefleet/hashtypes/karpenter-{minor}.json is not what Karpenter {minor}'s Go types say; "
        "run `venv/bin/python -m tests.karpenter_hash.reference --write`"
    )


def _go_function(text: str, name: str) -> str:
    start = text.index(name)
    body = text[text.index("{", start) : text.index("\n}\n", start) + 2]
    return re.sub(r"\s+", " ", body.replace("awsv1.", "v1."))


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_copied_node_class_drift_check_is_the_providers(minor: str) -> None:
    """The AWS provider's static check is copied into the reference (its package needs SDK modules the
    proxy does not serve); the copy must be its body, word for word."""
    _ref(minor)  # the build downloaded the module
    found = subprocess.run(
        ["go", "list", "-m", "-json", "github.com/aws/karpenter-provider-aws"],
        cwd=reference.folder(minor),
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "GOFLAGS": "-mod=mod", "GOTOOLCHAIN": "auto"},
    )
    upstream = (Path(json.loads(found.stdout)["Dir"]) / "pkg/cloudprovider/drift.go").read_text()
    ours = reference.PROGRAM[0].read_text()
    assert _go_function(ours, "func nodeClassStaticDrift(") == _go_function(
        upstream, ") areStaticFieldsDrifted("
    )


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_verdicts_equal_karpenters_on_generated_pairs(minor: str) -> None:
    results = _answers(minor)
    assert len(results) >= MIN_PAIRS
    unknown = sorted({u for _, a in results for u in a.get("unknown") or []})
    assert not unknown, f"the generator wrote fields Karpenter {minor} does not have: {unknown}"
    verdicts = Counter(a["reason"] for _, a in results)
    # Both answers are common, so a model that always (or never) drifts cannot pass.
    assert verdicts[""] > len(results) // 5
    assert verdicts[NODE_CLASS_DRIFT] > len(results) // 10
    assert verdicts[NODE_POOL_DRIFTED] > len(results) // 20
    wrong = _disagreements(minor, results)
    assert not wrong, f"{len(wrong)} of {len(results)} verdicts differ:\n" + "\n".join(wrong[:20])


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_every_scenario_is_judged_as_karpenter_judges_it(minor: str) -> None:
    """The fleet's own events, by name: token rotations and CA bundle rotations drift upstream nodes,
    a userData byte drifts, an alias's family spelt out does not, nodefleet's S3 pointer moves only on a
    release."""
    by_id = {p.id: a["reason"] for p, a in _answers(minor)}
    assert by_id["token-rotation#0"] == NODE_CLASS_DRIFT
    assert by_id["release-bump#0"] == NODE_CLASS_DRIFT
    assert by_id["userdata-bytes#0"] == NODE_CLASS_DRIFT
    assert by_id["ca-bundle#0"] == NODE_CLASS_DRIFT
    assert by_id["ca-bundle#1"] == ""
    assert by_id["ca-bundle#2"] == ""  # no CA bundle hashes as ""
    assert by_id["ami-family#0"] == ""
    assert by_id["ami-family#1"] == NODE_CLASS_DRIFT
    assert by_id["s3-pointer#0"] == ""  # a rotation leaves nodefleet's S3 pointer as it is
    assert by_id["s3-pointer#1"] == NODE_CLASS_DRIFT
    categories = {p.category for p, _ in _answers(minor)}
    assert {"field", "token-rotation", "release-bump", "userdata-bytes", "ca-bundle"} <= categories


def _stamped_pairs(old: str, new: str) -> list[tuple[Pair, dict[str, Any]]]:
    """Pairs whose NodeClaims were stamped by Karpenter ``old`` and are judged by ``new``."""
    sample = [p for i, p in enumerate(pairs(new)) if i % 7 == 0 or p.category != "field"]
    stamps = _ref(old).ask_many({"op": "hash", "object": p.old, "caBundle": p.ca_old} for p in sample)
    requests = []
    for pair, stamp in zip(sample, stamps, strict=True):
        assert not stamp.get("error"), stamp
        requests.append({**pair.request(), "claim": {"hash": stamp["hash"], "version": stamp["version"]}})
    answers = _ref(new).ask_many(requests)
    return [(dataclasses.replace(p, old_minor=old), a) for p, a in zip(sample, answers, strict=True)]


@pytest.mark.goref
@pytest.mark.parametrize(
    ("old", "new"), [("1.12", "1.13"), ("1.13", "1.14"), ("1.14", "1.15"), ("1.12", "1.15")]
)
def test_verdicts_across_a_karpenter_upgrade(old: str, new: str) -> None:
    """Nodes launched by one Karpenter, judged by the next: equal hash versions compare hashes (an
    unchanged object must not drift), a bumped one (EC2NodeClass v5 → v6 at 1.15) never drifts."""
    results = _stamped_pairs(old, new)
    wrong = _disagreements(new, results)
    assert not wrong, f"{len(wrong)} of {len(results)} verdicts differ:\n" + "\n".join(wrong[:20])
    unchanged = [a["reason"] for p, a in results if p.category == "unchanged"]
    assert unchanged == ["", ""]
    if kh.hash_version("EC2NodeClass", old) != kh.hash_version("EC2NodeClass", new):
        assert {a["reason"] for p, a in results if p.old["kind"] == "EC2NodeClass"} == {""}
    else:
        assert any(a["reason"] == NODE_CLASS_DRIFT for _, a in results)


@pytest.mark.goref
def test_a_model_that_hashes_an_ignored_field_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential test can fail: treat ``subnetSelectorTerms`` (hash:"ignore") as hashed."""
    minor = kh.DEFAULT_KARPENTER
    real = kh.hash_types(minor)
    types = json.loads(json.dumps(real.types))
    root = types[real.roots["EC2NodeClass"]]
    for f in root["fields"]:
        if f["json"] == "subnetSelectorTerms":
            f["hash"] = ""
    wrong_types = dataclasses.replace(real, types=types)
    monkeypatch.setattr(kh, "hash_types", lambda m: wrong_types if m == minor else real)
    wrong = [p for p, a in _answers(minor) if _ours(p, minor) != a["reason"]]
    # Only pairs whose subnet terms change are judged wrongly (alone or with other fields).
    assert wrong and all(
        json.dumps(p.old["spec"].get("subnetSelectorTerms"))
        != json.dumps(p.new["spec"].get("subnetSelectorTerms"))
        for p in wrong
    )


@pytest.mark.goref
def test_a_model_blind_to_go_zero_values_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The differential test can fail: take an explicit ``false``/``0``/``""``/empty list as absent (what
    a JSON-level model does)."""
    minor = kh.DEFAULT_KARPENTER
    real_is_zero = kh._Walker.is_zero

    def json_zero(self: Any, value: Any, tid: str) -> bool:
        if value in (False, 0, "", [], {}):
            return True
        return bool(real_is_zero(self, value, tid))

    monkeypatch.setattr(kh._Walker, "is_zero", json_zero)
    wrong = _disagreements(minor, _answers(minor))
    assert len(wrong) > 20


@cache
def _requirement_answers(minor: str) -> list[tuple[RequirementCase, list[tuple[str, str]]]]:
    """Per case, per claim: Karpenter's reason under the old pool and under the new one."""
    cases = [case for seed in REQUIREMENT_SEEDS for case in requirement_cases(seed=seed)]
    requests = []
    for case in cases:
        for labels in case.claims:
            for pool in (case.old, case.new):
                requests.append({"op": "drift", "old": case.old, "new": pool, "claimLabels": labels})
    answers = iter(_ref(minor).ask_many(requests))
    out = []
    for case in cases:
        per_claim = []
        for _ in case.claims:
            under_old, under_new = next(answers), next(answers)
            assert not under_old.get("error") and not under_new.get("error"), (under_old, under_new)
            per_claim.append((under_old["reason"], under_new["reason"]))
        out.append((case, per_claim))
    return out


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_requirements_drift_per_node_equals_karpenters(minor: str) -> None:
    """Each node (label set) judged under a changed pool: nodefleet's per-node check against Karpenter's
    areRequirementsDrifted (scheduling.Requirements.Compatible), the static check passing first."""
    wrong = []
    claims = 0
    for case, per_claim in _requirement_answers(minor):
        for labels, (_, under_new) in zip(case.claims, per_claim, strict=True):
            claims += 1
            ours = REQUIREMENTS_DRIFTED if node_requirements_drifted(case.new, labels) else ""
            if ours != under_new:
                wrong.append(
                    f"{case.id} {labels}: Karpenter {under_new or 'no drift'}, nodefleet {ours or 'no drift'}"
                )
    assert claims >= MIN_PAIRS
    assert not wrong, f"{len(wrong)} of {claims} nodes differ:\n" + "\n".join(wrong[:20])


@pytest.mark.goref
@pytest.mark.parametrize("minor", MINORS)
def test_requirements_drift_per_pool_equals_karpenters(minor: str) -> None:
    """A pool drifts (some nodes) when some node the old requirements admit fails the new ones."""
    wrong = []
    drifted = 0
    for case, per_claim in _requirement_answers(minor):
        karpenter = any(old == "" and new == REQUIREMENTS_DRIFTED for old, new in per_claim)
        drifted += karpenter
        ours = REQUIREMENTS_DRIFTED in drift_reasons(case.old, case.new, karpenter=minor)
        if ours != karpenter:
            wrong.append(f"{case.id}: Karpenter {karpenter}, nodefleet {ours}")
    cases = len(_requirement_answers(minor))
    assert cases // 5 < drifted < cases - cases // 5
    assert not wrong, f"{len(wrong)} of {cases} pools differ:\n" + "\n".join(wrong[:20])


def _wrong_requirement_nodes() -> int:
    """The generated nodes on which nodefleet's requirements verdict differs from the reference's."""
    return sum(
        (REQUIREMENTS_DRIFTED if node_requirements_drifted(case.new, labels) else "") != new
        for case, per_claim in _requirement_answers(kh.DEFAULT_KARPENTER)
        for labels, (_, new) in zip(case.claims, per_claim, strict=True)
    )


@pytest.mark.goref
def test_a_requirements_model_ignoring_unlabelled_keys_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """The requirements comparison can fail: let a node without the key's label pass any requirement."""
    from nodefleet.drift import rules as drift

    real = drift._allows
    monkeypatch.setattr(drift, "_allows", lambda req, value: value is None or real(req, value))
    wrong = _wrong_requirement_nodes()
    assert wrong > 50


def _python_atoi(text: str) -> tuple[int, bool]:
    try:
        return int(text, 10), True
    except ValueError:
        return 0, False


@pytest.mark.goref
@pytest.mark.parametrize(
    ("name", "replace"),
    [("_normalized", lambda key: key), ("_go_atoi", _python_atoi)],
    ids=["deprecated-keys-as-written", "python-int"],
)
def test_a_requirements_model_reading_keys_or_numbers_otherwise_fails(
    monkeypatch: pytest.MonkeyPatch, name: str, replace: Any
) -> None:
    """The generated nodes tell apart a model that takes ``beta.kubernetes.io/arch`` as a key of its own,
    and one that reads numbers with Python's ``int`` (``1_0`` is 10, past int64 is no limit)."""
    from nodefleet.drift import rules as drift

    monkeypatch.setattr(drift, name, replace)
    wrong = _wrong_requirement_nodes()
    assert wrong > 20
