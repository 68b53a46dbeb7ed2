"""``crd-schema`` against a running kube-apiserver on the generated CRD corpus: creates and updates, ratcheting
on, sent with server-side dry-run (tests/crd_live.py). The same comparison as tests/test_crd_apiserver.py,
whose reference is the API server's validation code (Kubernetes 1.35) called in-process; here it is the API
server itself (1.36), over HTTP, with the request handlers, admission and storage on the path.

Where the two references differ, each difference is listed here with its cause (docs/crd-validation-apiserver.md):

- :data:`NAME_FROM_URL`: an update whose body has no name is refused by the update handler before any
  validation (400), where the in-process reference and crd-schema report ``metadata.name``;
- crd-schema judges as Kubernetes 1.36 here (its ``kubernetesVersion``), so 1.36's words for a number in an
  integer field (the root's ``Checked value must be of type ...``, an ``int64`` field's type error in Go's
  types) are compared like any other;
- a ``generateName`` gets a random suffix from the server, a fixed one from the references: messages quoting
  the generated name are compared with the suffix masked.

The test CRD of ``tests/crd_corpus.EDGES`` cannot be installed at all (its rules' estimated cost exceeds the
budget), so its cases stay with the Go reference.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.crd_corpus import corpus
from tests.crd_live import Answer, install_edges, send_corpus, shipped
from tests.test_crd_apiserver import Outcome, _explain, judge, message_differences, summary
from tests.testcluster import TestClusters

pytestmark = pytest.mark.apiserver

NAME_FROM_URL = re.compile(
    r"^the name of the object \(\S+ based on URL\) was undeterminable: name must be provided$"
)
#: The test API server's Kubernetes version, which crd-schema follows here.
VERSION = "1.36"
_GENERATED = re.compile(r'(Invalid value: "[^"]*)[a-z0-9]{5}(")')


def _fixed_suffix(error: dict[str, str]) -> dict[str, str]:
    """A metadata.name error with the server's random generateName suffix replaced by the references' fixed one."""
    if error["field"] != "metadata.name":
        return error
    return {**error, "detail": _GENERATED.sub(r"\1x7k2q\2", error["detail"], count=1)}


def _verdicts(answers: dict[str, Answer]) -> dict[str, dict[str, Any]]:
    return {
        case_id: {
            "allowed": a.allowed,
            "errors": [_fixed_suffix(e) for e in a.errors],
            "ratcheted": False,
        }
        for case_id, a in answers.items()
    }


@pytest.fixture(scope="module")
def live(test_clusters: TestClusters) -> tuple[list[Outcome], dict[str, Answer]]:
    cases = shipped(corpus())
    answers = send_corpus(test_clusters, cases)
    return judge(cases, _verdicts(answers), lambda case: {"kubernetes": VERSION}), answers


def _named_by_url(o: Outcome) -> bool:
    return o.case.old is not None and any(NAME_FROM_URL.match(e["detail"]) for e in o.ref_errors)


def test_every_previous_object_is_stored(live: tuple[list[Outcome], dict[str, Answer]]) -> None:
    """The store version keeps every previous object of the corpus, so every update reaches validation."""
    outcomes, answers = live
    assert len(outcomes) >= 2500 and sum(o.case.old is not None for o in outcomes) >= 500
    failed = {i: a.errors for i, a in answers.items() if a.stage == "store-old"}
    assert not failed, failed


def test_verdicts_and_paths_equal_the_running_api_server(
    live: tuple[list[Outcome], dict[str, Answer]],
) -> None:
    outcomes, _ = live
    print("\n" + summary(outcomes))
    wrong = [o for o in outcomes if not o.verdict_equal]
    assert not wrong, f"{len(wrong)} verdicts differ:\n" + "\n".join(_explain(o) for o in wrong[:15])
    paths = [o for o in outcomes if not o.paths_equal and not _named_by_url(o)]
    assert not paths, f"{len(paths)} rejections name other fields:\n" + "\n".join(
        _explain(o) for o in paths[:15]
    )
    # The handler's refusal of a nameless update: crd-schema names metadata.name, as the in-process reference.
    for o in outcomes:
        if _named_by_url(o):
            assert "metadata.name" in o.our_paths and o.ref_paths == {""}, o.case.id


def test_messages_read_as_the_running_api_server_writes_them(
    live: tuple[list[Outcome], dict[str, Answer]],
) -> None:
    outcomes, _ = live
    worded = [
        (o.case.id, d)
        for o in outcomes
        if not o.ref_allowed and not _named_by_url(o)
        for d in message_differences(o)
    ]
    assert not worded, f"{len(worded)} messages differ:\n" + "\n".join(map(str, worded[:15]))


def test_the_edge_crd_is_refused_for_its_rule_cost(test_clusters: TestClusters) -> None:
    """Why the test CRD's cases are answered by the Go reference only."""
    with test_clusters.fresh("corpus-edges") as server:
        status, answer = install_edges(server)
    assert status == 422, answer
    messages = [c["message"] for c in answer["details"]["causes"]]
    assert any("exceeds budget by factor of more than 100x" in m for m in messages), messages
