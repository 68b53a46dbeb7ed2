"""crd-schema against a running kube-apiserver 1.36 on the hand-written class corpus (tests/crd_classes.py):
small CRDs, one class of API server behaviour each, every case sent by server-side dry run and its verdict,
field paths and words compared with crd-schema's, judged as Kubernetes 1.36 (the test API server's version).

    venv/bin/python -m pytest tests/test_crd_classes_live.py -q -s     # prints the table by class
"""

from __future__ import annotations

import json
import re
from collections import Counter
from typing import Any

import pytest

from nodefleet.apiserver.schema import crd_refusals as refusals
from tests.crd_classes import CRDS, FOLDER, RAW_JSON, REFUSAL_CRDS, cases, crd_text
from tests.crd_corpus import Case
from tests.crd_live import Answer, Sender
from tests.test_crd_apiserver import Outcome, _explain, judge, message_differences, summary
from tests.testcluster import TestClusters

pytestmark = pytest.mark.apiserver

#: The test API server's Kubernetes version, which crd-schema is told to follow here.
VERSION = "1.36"
#: The API server names a rule's type ``selfType`` and its clock's nanoseconds.
_SELF_TYPE = re.compile(r"selfType\d+")


def send_classes(test_clusters: TestClusters) -> dict[str, Answer]:
    """Every case's answer from a fresh test API server, by case id."""
    corpus = cases()
    with test_clusters.fresh("crd-classes") as server:
        sender = Sender(server, sorted({str(FOLDER / f"{name}.yaml") for name in CRDS}))
        return {case.id: sender.send(case, raw=case.id in RAW_JSON) for case in corpus}


def judge_classes(corpus: list[Case], answers: dict[str, Any]) -> list[Outcome]:
    """crd-schema's verdict on each case (as Kubernetes 1.36, each body read as it was sent) beside the API
    server's (``answers``: :class:`Answer`\\ s or their dicts)."""
    verdicts = {
        case_id: a if isinstance(a, dict) else {"allowed": a.allowed, "errors": a.errors}
        for case_id, a in answers.items()
    }
    return judge(
        corpus,
        verdicts,
        lambda case: {"kubernetes": VERSION, "request_body": "json" if case.id in RAW_JSON else "client"},
    )


@pytest.fixture(scope="module")
def outcomes(test_clusters: TestClusters) -> list[Outcome]:
    return judge_classes(cases(), send_classes(test_clusters))


def test_the_class_crds_are_the_files_installed() -> None:
    for name in CRDS:
        assert (FOLDER / f"{name}.yaml").read_text(encoding="utf-8") == crd_text(name), (
            f"{name}.yaml is stale: run `venv/bin/python -m tests.crd_classes`"
        )


def test_every_class_has_cases_the_api_server_refuses_and_accepts(outcomes: list[Outcome]) -> None:
    for cls in {o.case.cls for o in outcomes}:
        group = [o for o in outcomes if o.case.cls == cls]
        assert any(o.ref_allowed for o in group) and any(not o.ref_allowed for o in group), cls


def test_verdicts_and_paths_equal_the_api_server_by_class(outcomes: list[Outcome]) -> None:
    print("\n" + summary(outcomes, words=True))
    wrong = [o for o in outcomes if not o.verdict_equal]
    assert not wrong, f"{len(wrong)} verdicts differ:\n" + "\n".join(_explain(o) for o in wrong)
    paths = [o for o in outcomes if not o.paths_equal]
    assert not paths, f"{len(paths)} rejections name other fields:\n" + "\n".join(_explain(o) for o in paths)


def test_messages_read_as_the_api_server_writes_them(outcomes: list[Outcome]) -> None:
    worded = [(o.case.id, d) for o in outcomes if not o.ref_allowed for d in message_differences(o)]
    assert not worded, f"{len(worded)} messages differ:\n" + "\n".join(map(str, worded))


def _causes(body: str) -> list[tuple[str, str]]:
    """The API server's field errors in a refusal's body: (field, message)."""
    details = (json.loads(body) if body else {}).get("details") or {}
    return [(c.get("field", ""), c.get("message", "")) for c in details.get("causes") or []]


def test_crds_are_refused_as_the_api_server_refuses_them(test_clusters: TestClusters) -> None:
    """Each CRD of REFUSAL_CRDS created on the API server: crd-schema refuses exactly those it refuses, every
    cause at its field in its words (rules that do not compile, their fields, defaults, estimated cost; but the
    number the API server names a rule's type with, its clock's nanoseconds)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    differ = []
    counts: Counter[str] = Counter()
    with test_clusters.fresh("crd-refusals") as server:
        ext = client.ApiextensionsV1Api(server.api_client())
        for tag, crd in REFUSAL_CRDS.items():
            try:
                ext.create_custom_resource_definition(crd)
                accepted, why = True, ""
                ext.delete_custom_resource_definition(crd["metadata"]["name"])
            except ApiException as e:
                assert e.status == 422, e.body
                accepted, why = False, e.body
            schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
            ours = refusals(schema, "spec.validation.openAPIV3Schema")
            counts["crds"] += 1
            counts["verdicts equal"] += accepted == (not ours)
            theirs = sorted((field, _SELF_TYPE.sub("selfType", words)) for field, words in _causes(why))
            mine = sorted((r.where, _SELF_TYPE.sub("selfType", r.message)) for r in ours)
            counts["refused for cost"] += any("cost" in words for _, words in theirs)
            counts["every cause word for word"] += theirs == mine
            if theirs != mine:
                differ.append(f"{tag}: API server {theirs}; crd-schema {mine}")
    print(f"\nCRDs created: {dict(counts)}")
    assert not differ, "\n".join(differ)
