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
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import cache
from typing import Any

import pytest

from nodefleet.apiserver.schema import NOT_CHECKED, validate_object
from tests import goref
from tests.conftest import PROJECT
from tests.crd_corpus import EDGES, Case, corpus, reference_case
from tests.crd_gadgets import GADGETS
from tests.crd_unreadable import KEEPERS, crd_text

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
    return judge(cases, run_reference(cases))


def judge(
    cases: list[Case],
    verdicts: dict[str, dict[str, Any]],
    options: Callable[[Case], dict[str, Any]] = lambda case: {},
) -> list[Outcome]:
    """crd-schema's verdict on each case beside the reference's (``verdicts``: the Go reference's, or the API
    server's in the same terms: ``allowed``, ``errors`` of ``field`` and ``detail``, ``ratcheted``);
    ``options`` are validate_object's for a case (the Kubernetes version, the request body). Objects are judged
    as if their CRD were installed, as the references judge them: the edge CRDs, which the API server refuses
    for their rules' cost, are served by the in-process reference's object path alone."""
    out = []
    for case in cases:
        ref = verdicts[case.id]
        # The API server lists its "not checked" note among the errors; crd-schema makes it a note.
        findings = [
            f
            for f in validate_object(case.obj, case.crd, old=case.old, installed=True, **options(case))
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


def summary(outcomes: list[Outcome], words: bool = False) -> str:
    """A table by class: cases, refused, verdicts equal, paths equal on refusals (and, with ``words``, refusals
    whose every API server message crd-schema writes)."""
    by_class: dict[str, list[Outcome]] = defaultdict(list)
    for o in outcomes:
        by_class[o.case.cls].append(o)
    rows = [
        f"{'class':<18} {'cases':>6} {'refused':>8} {'verdict=':>9} {'paths=':>7}"
        + (" words=" if words else "")
    ]
    for cls, group in sorted(by_class.items()):
        refused = [o for o in group if not o.ref_allowed]
        worded = f" {sum(not message_differences(o) for o in refused):>6}" if words else ""
        rows.append(
            f"{cls:<18} {len(group):>6} {len(refused):>8} {sum(o.verdict_equal for o in group):>9} "
            f"{sum(o.paths_equal for o in refused):>7}{worded}"
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


def extra_messages(o: Outcome) -> list[str]:
    """crd-schema's blocking messages that start with none of the API server's at their path: an error the API
    server does not report there (a pattern error beside "Too long", say)."""
    ref: dict[str, list[str]] = defaultdict(list)
    for error in o.ref_errors:
        ref[_ref_path(error["field"])].append(error["detail"])
    out = []
    for message in o.our_messages:
        path, _, text = message.partition(": ")
        details = ref.get("" if path == "<root>" else path, [])
        if text == NOT_CHECKED or any(text.startswith(d) for d in details):
            continue
        if not any(p.search(d) for d in details for p in _WORDED_OTHERWISE):
            out.append(message)
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
    edges = {(str(EDGES), "v1"), (str(GADGETS), "v1"), (str(KEEPERS), "v1")}
    assert {(c.crd.crd.file, c.crd.version) for c in cases} == served | edges
    outcomes = _outcomes()
    refused = {o.case.cls for o in outcomes if not o.ref_allowed}
    for cls in (
        "null-list-item",
        "null-map-entry",
        "missing-name",
        "blocking+cel",
        "ratchet-changed",
        "library",
        "format",
        "big-integer",
        "set-list",
        "ratchet-cel",
        "messages",
        "unreadable",
    ):
        assert cls in refused, f"the corpus has no {cls} case the API server refuses"
    assert any(o.ratcheted for o in outcomes), "no update the API server accepts only by ratcheting"


def test_the_keeper_crd_is_the_file_the_reference_reads() -> None:
    assert KEEPERS.read_text(encoding="utf-8") == crd_text(), (
        f"{KEEPERS.name} is stale: run `venv/bin/python -m tests.crd_unreadable`"
    )


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
    # ...and no error the API server does not report; an explanation of nodefleet's own goes on a line after
    # the API server's words.
    extra = [(o.case.id, m) for o in _outcomes() if not o.ref_allowed for m in extra_messages(o)]
    assert not extra, f"{len(extra)} messages the API server does not write:\n" + "\n".join(
        map(str, extra[:15])
    )


#: ``format: date-time`` spellings the format check (strfmt ``IsDateTime``: lower-cased, any character before a
#: fraction) and the CEL conversion (strfmt ``ParseDateTime``: Go's ``time.Parse``, byte for byte) tell apart,
#: and the edges of Go's parser: a rule reaching the field sees a timestamp or the conversion error.
DATE_TIME_SPELLINGS = (
    "2024-01-01T00:00:00Z",
    "2024-01-01t00:00:00z",
    "2024-01-01t00:00:00Z",
    "2024-01-01T00:00:00z",
    "2024-01-01T00:00:00x5Z",
    "2024-01-01T00:00:00,5Z",
    "2024-01-01T00:00:00.123456789123Z",
    "2024-01-01T00:00:00.5+00:00",
    "2024-01-01T00:00:00+24:00",
    "2024-01-01T00:00:00+25:00",
    "2024-01-01T00:00:00+05:60",
    "2024-01-01T00:00:00+0000",
    "2024-01-01T00:00:00",
    "2024-01-01T1:00:00Z",
    "2024-01-01 00:00:00Z",
    "2024-02-30T00:00:00Z",
    "2024-01-01T00:00:60Z",
    "",
    "2020-01-01T00:00:00Z",
    "2020-01-01T00:00:00.0000001Z",
)


@pytest.mark.goref
def test_date_time_spellings_reach_rules_as_the_api_server_converts_them() -> None:
    """The keeper CRD's rules on its date-time field (``self.when > timestamp(...)``), for each spelling: the
    same verdict, fields and messages as the API server's code, so a lower-case ``t`` or ``z`` the format check
    lets through is the conversion error a rule meets there, not a timestamp."""
    from tests.crd_unreadable import _keep, keepers

    version = keepers()
    cases = [
        Case(f"date-time/{i}", "date-time", version, _keep(num=1, l=[1, 2], good=[1, 2], when=spelling))
        for i, spelling in enumerate(DATE_TIME_SPELLINGS)
    ]
    wrong = [
        (DATE_TIME_SPELLINGS[int(o.case.id.split("/")[1])], message_differences(o), extra_messages(o))
        for o in compare(cases)
        if not (o.verdict_equal and o.paths_equal) or message_differences(o) or extra_messages(o)
    ]
    assert not wrong, "\n".join(map(str, wrong))


_STAMPS_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: stamps.edges.nodefleet.io
spec:
  group: edges.nodefleet.io
  names: {kind: Stamp, listKind: StampList, plural: stamps, singular: stamp}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          apiVersion: {type: string}
          kind: {type: string}
          metadata: {type: object}
          spec:
            type: object
            properties:
              s: {type: string, maxLength: 64}
            x-kubernetes-validations:
            - rule: "!has(self.s) || timestamp(self.s) > timestamp('2020-01-01T00:00:00Z')"
            - rule: "!has(self.s) || timestamp(self.s).getHours() < 23"
"""


@pytest.mark.goref
def test_cel_timestamp_of_a_string_converts_what_go_converts(tmp_path: Any) -> None:
    """``timestamp(<string>)`` in a rule: cel-go reads the string with Go's ``time.Parse(time.RFC3339, ...)``,
    which refuses a lower-case ``t`` or ``z`` and takes a comma fraction or a ``+24:00`` offset; the C++ engine
    crd-schema evaluates with reads the other way round unless told. Each spelling as the API server's code."""
    from tests.crd_corpus import hand_written_crd

    path = tmp_path / "stamps.edges.nodefleet.io.yaml"
    path.write_text(_STAMPS_CRD, encoding="utf-8")
    version = hand_written_crd(path)
    cases = [
        Case(
            f"stamp/{i}",
            "timestamp",
            version,
            {
                "apiVersion": "edges.nodefleet.io/v1",
                "kind": "Stamp",
                "metadata": {"name": "stamp-a", "namespace": "default"},
                "spec": {"s": spelling},
            },
        )
        for i, spelling in enumerate(DATE_TIME_SPELLINGS)
    ]
    outcomes = compare(cases)
    wrong = [
        (DATE_TIME_SPELLINGS[int(o.case.id.split("/")[1])], o.ref_errors, o.our_messages)
        for o in outcomes
        if not (o.verdict_equal and o.paths_equal) or message_differences(o) or extra_messages(o)
    ]
    assert not wrong, "\n".join(map(str, wrong))
    # The spellings tell the two parsers apart: some pass, some are refused.
    assert {o.ref_allowed for o in outcomes} == {True, False}
