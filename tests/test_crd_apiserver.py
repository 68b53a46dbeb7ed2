"""``crd-schema`` against the API server's own validation code, on a generated corpus of creates and updates.

The reference (tests/apiserver_reference) is k8s.io/apiextensions-apiserver and k8s.io/apiserver from the Go
module proxy, running the request path of a custom resource: decoding, pruning, defaulting, then
``rest.BeforeCreate`` / ``rest.BeforeUpdate`` with the real strategy, validation ratcheting on. The corpus
(tests/crd_corpus.py) covers every served version of every shipped CRD file, Karpenter sets included, and a
test CRD with the schema features the shipped ones lack (tests/data/crd-edges/).
Verdicts must be equal on every case, and the field paths equal on every rejection.
"""

from __future__ import annotations

import json
import re
import subprocess
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from nodefleet.apiserver.schema import NOT_CHECKED, validate_object
from tests import goref
from tests.conftest import PROJECT
from tests.crd_corpus import EDGES, Case, corpus, reference_case

REFERENCE = PROJECT / "tests" / "apiserver_reference"


@dataclass(frozen=True)
class Outcome:
    case: Case
    ref_allowed: bool
    ref_paths: frozenset[str]
    ref_errors: tuple[dict[str, str], ...]
    ratcheted: bool
    ours_allowed: bool
    our_paths: frozenset[str]
    our_messages: tuple[str, ...]

    @property
    def verdict_equal(self) -> bool:
        return self.ref_allowed == self.ours_allowed

    @property
    def paths_equal(self) -> bool:
        return self.ref_allowed or self.ref_paths == self.our_paths


def _ref_path(field: str) -> str:
    return "" if field in ("<nil>", "") else field


def run_reference(cases: Iterable[Case]) -> dict[str, dict[str, Any]]:
    """The reference's verdict for each case, by id."""
    binary = goref.build(REFERENCE)
    lines = "".join(json.dumps(reference_case(c), separators=(",", ":")) + "\n" for c in cases)
    done = subprocess.run(
        [str(binary)], input=lines, capture_output=True, text=True, check=False, timeout=1800
    )
    if done.returncode != 0:
        raise RuntimeError(f"the API server reference failed: {done.stderr[-2000:]}")
    return {v["id"]: v for v in map(json.loads, done.stdout.splitlines())}


def compare(cases: list[Case]) -> list[Outcome]:
    verdicts = run_reference(cases)
    out = []
    for case in cases:
        ref = verdicts[case.id]
        # The API server lists its "not checked" note among the errors; crd-schema makes it a note.
        findings = [
            f
            for f in validate_object(case.obj, case.crd, old=case.old)
            if f.blocking or f.message == NOT_CHECKED
        ]
        out.append(
            Outcome(
                case,
                bool(ref["allowed"]),
                frozenset(_ref_path(e["field"]) for e in ref["errors"]),
                tuple(ref["errors"]),
                bool(ref.get("ratcheted")),
                not findings,
                frozenset(f.path for f in findings),
                tuple(str(f) for f in findings),
            )
        )
    return out


def summary(outcomes: list[Outcome]) -> str:
    by_class: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_class[o.case.cls].append(o)
    rows = [f"{'class':<18} {'cases':>6} {'refused':>8} {'verdict=':>9} {'paths=':>7}"]
    for cls, group in sorted(by_class.items()):
        refused = [o for o in group if not o.ref_allowed]
        rows.append(
            f"{cls:<18} {len(group):>6} {len(refused):>8} {sum(o.verdict_equal for o in group):>9} "
            f"{sum(o.paths_equal for o in refused):>7}"
        )
    for label, group in (
        ("creates", [o for o in outcomes if o.case.old is None]),
        ("updates", [o for o in outcomes if o.case.old is not None]),
    ):
        refused = [o for o in group if not o.ref_allowed]
        rows.append(
            f"{label}: {len(group)} cases, verdicts equal {sum(o.verdict_equal for o in group)} "
            f"({100 * sum(o.verdict_equal for o in group) / max(len(group), 1):.1f}%), "
            f"paths equal on {sum(o.paths_equal for o in refused)} of {len(refused)} rejections, "
            f"ratcheted {sum(o.ratcheted for o in group)}"
        )
    return "\n".join(rows)


#: Where crd-schema's words differ from the API server's, on purpose or for want of a model; each is named
#: in docs/crd-validation-apiserver.md. Everything else must read as the API server writes it.
_WORDED_OTHERWISE = (
    # kube-openapi names an int-or-string's type "integer" or "integer,string", depending on map order.
    re.compile(r'in body must be of type integer: "'),
    # ...and adds an anyOf error at the root for it.
    re.compile(r"must validate at least one schema \(anyOf\)$"),
    # Go type names in the scale subresource's accessor error.
    re.compile(r"accessor error: "),
    # structural listtype's words for a non-object item; crd-schema reports the type error at the same path.
    re.compile(r"must be an object for an array of list-type map$"),
)


def message_differences(o: Outcome) -> list[tuple[str, str]]:
    """(path, the API server's words) of each error crd-schema words otherwise at that path."""
    ours: dict[str, list[str]] = defaultdict(list)
    for message in o.our_messages:
        path, _, text = message.partition(": ")
        ours["" if path == "<root>" else path].append(text)
    out = []
    for error in o.ref_errors:
        path, detail = _ref_path(error["field"]), error["detail"]
        if any(text.startswith(detail) for text in ours.get(path, ())):
            continue
        if not any(p.search(detail) for p in _WORDED_OTHERWISE):
            out.append((path, detail))
    return out


def _explain(o: Outcome) -> str:
    return (
        f"{o.case.id}: API server {'accepts' if o.ref_allowed else 'refuses'} "
        f"{json.dumps(list(o.ref_errors))[:600]}; crd-schema {'accepts' if o.ours_allowed else 'refuses'} "
        f"{list(o.our_messages)[:6]}"
    )


@cache
def _outcomes() -> list[Outcome]:
    return compare(corpus())


@pytest.mark.goref
def test_corpus_covers_every_shipped_crd_and_class() -> None:
    from nodefleet.apiserver.store import load_index

    cases = corpus()
    creates = [c for c in cases if c.old is None]
    updates = [c for c in cases if c.old is not None]
    assert len(creates) >= 2000 and len(updates) >= 500
    served = {(v.crd.file, v.version) for v in load_index().all_versions()}
    edges = {(str(EDGES), "v1")}
    assert {(c.crd.crd.file, c.crd.version) for c in cases} == served | edges
    outcomes = _outcomes()
    refused = {o.case.cls for o in outcomes if not o.ref_allowed}
    for cls in ("null-list-item", "null-map-entry", "missing-name", "blocking+cel", "ratchet-changed"):
        assert cls in refused, f"the corpus has no {cls} case the API server refuses"
    assert any(o.ratcheted for o in outcomes), "no update the API server accepts only by ratcheting"


@pytest.mark.goref
def test_verdicts_and_paths_equal_the_api_server() -> None:
    outcomes = _outcomes()
    print("\n" + summary(outcomes))
    wrong = [o for o in outcomes if not o.verdict_equal]
    assert not wrong, f"{len(wrong)} verdicts differ:\n" + "\n".join(_explain(o) for o in wrong[:15])
    paths = [o for o in outcomes if not o.paths_equal]
    assert not paths, f"{len(paths)} rejections name other fields:\n" + "\n".join(
        _explain(o) for o in paths[:15]
    )


@pytest.mark.goref
def test_messages_read_as_the_api_server_writes_them() -> None:
    """What a user compares with kubectl's output: map keys as `tags.Name`, lengths in the API server's words,
    messageExpression evaluated, cel-go's runtime errors, values shown as Go shows them."""
    worded = [(o.case.id, d) for o in _outcomes() if not o.ref_allowed for d in message_differences(o)]
    assert not worded, f"{len(worded)} messages differ:\n" + "\n".join(map(str, worded[:15]))
