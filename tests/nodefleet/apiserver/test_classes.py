"""crd-schema on the hand-written class corpus (tests/crd_classes.py), without an API server: each case's verdict
and refused fields as the test API server (kube-apiserver 1.36.3) gave them by server-side dry run, which
tests/test_crd_classes_live.py checks against the running server; and the CRDs the API server refuses.
"""

from __future__ import annotations

import pytest

from nodefleet.apiserver.schema import NOT_CHECKED, validate_object
from nodefleet.apiserver.schema import crd_refusals as refusals
from tests.crd_classes import RAW_JSON, REFUSAL_CRDS, cases
from tests.crd_corpus import Case

#: (allowed, refused fields) per case, as kube-apiserver 1.36.3 answered ("<nil>" is the root).
API_SERVER = {
    "ratchet-ancestor/valid-create": (True, []),
    "ratchet-ancestor/floor-string-create": (False, ["<nil>", "spec.floor"]),
    "ratchet-ancestor/floor-string-read": (False, ["spec"]),
    "ratchet-ancestor/floor-string-unread": (True, []),
    "ratchet-ancestor/limit-string-read": (False, ["spec"]),
    "ratchet-ancestor/box-size-unread": (True, []),
    "ratchet-ancestor/box-size-compared": (False, ["spec.box"]),
    "ratchet-ancestor/mode-number-root": (False, ["<nil>"]),
    "ratchet-ancestor/slot-port-string": (False, ["spec.slots"]),
    "ratchet-ancestor/slot-null-item": (False, ["spec.slots"]),
    "ratchet-ancestor/slot-name-number-unread": (True, []),
    "ratchet-ancestor/tags-object-root": (False, ["spec.tags.a"]),
    "ratchet-ancestor/note-number-root": (False, ["<nil>"]),
    "ratchet-ancestor/tag-number-item": (True, []),
    "ratchet-ancestor/ledger-valid-create": (True, []),
    "ratchet-ancestor/count-string-map-rule": (False, ["spec.counts"]),
    "ratchet-ancestor/size-bool-spec-rule": (False, ["spec"]),
    "ratchet-ancestor/size-fraction-spec-rule": (False, ["spec"]),
    "ratchet-ancestor/when-not-a-date": (False, ["spec"]),
    "ratchet-ancestor/weight-string-item": (False, ["spec.weights", "spec.weights[0]"]),
    "ratchet-ancestor/int-string-set": (False, ["spec.ints"]),
    "ratchet-ancestor/weight-grows": (False, ["spec.weights[0]"]),
    "unreadable/valid-create": (True, []),
    "unreadable/ports-string-beside-80": (True, []),
    "unreadable/ports-only-string": (False, ["spec"]),
    "unreadable/codes-string": (False, ["spec"]),
    "unreadable/limits-cpu-string": (False, ["spec"]),
    "unreadable/limits-mem-string": (True, []),
    "unreadable/box-size-string": (False, ["spec"]),
    "unreadable/depth-string": (False, ["spec"]),
    "unreadable/when-not-a-date": (False, ["spec"]),
    "unreadable/when-kept": (False, ["spec"]),
    "unreadable/level-string": (False, ["spec"]),
    "unreadable/level-number": (True, []),
    "format-type/at-after": (True, []),
    "format-type/at-before": (False, ["spec.at"]),
    "format-type/at-offset": (False, ["spec.at"]),
    "format-type/day-recent": (True, []),
    "format-type/day-old": (False, ["spec.day"]),
    "format-type/wait-short": (True, []),
    "format-type/wait-long": (False, ["spec.wait"]),
    "format-type/wait-words": (False, ["spec.wait"]),
    "format-type/lag-negative": (False, ["spec.lag"]),
    "format-type/lag-zero": (True, []),
    "format-type/at-fraction": (True, []),
    "format-type/blob-short": (True, []),
    "format-type/blob-long": (False, ["spec.blob"]),
    "format-type/start-before-end": (True, []),
    "format-type/start-after-end": (False, ["spec"]),
    "quantity-equal/millis-and-one": (True, []),
    "quantity-equal/gi-and-mi": (True, []),
    "quantity-equal/decimal-and-binary": (False, ["spec"]),
    "quantity-equal/half": (True, []),
    "quantity-equal/exponent": (True, []),
    "quantity-equal/in-list-millis": (True, []),
    "quantity-equal/in-list-mi": (True, []),
    "quantity-equal/semver-short": (True, []),
    "quantity-equal/semver-other": (False, ["spec"]),
    "quantity-equal/not-in-list": (False, ["spec"]),
    "macro/short-distinct": (True, []),
    "macro/long-value": (False, ["spec.labels"]),
    "macro/same-values": (False, ["spec.labels"]),
    "macro/four-labels": (True, []),
    "nullable-has/opt-null": (True, []),
    "nullable-has/opt-empty": (False, ["spec"]),
    "nullable-has/inner-null": (True, []),
    "nullable-has/inner-zero": (False, ["spec"]),
    "nullable-has/map-null-value": (True, []),
    "nullable-has/map-empty-value": (False, ["spec.m"]),
    "embedded/with-meta": (True, []),
    "embedded/no-kind": (False, ["<nil>", "spec.emb.kind"]),
    "embedded/no-api-version": (False, ["<nil>", "spec.emb.apiVersion"]),
    "embedded/secret": (False, ["spec.emb"]),
    "embedded/bad-kind": (False, ["spec.emb.kind"]),
    "embedded/bad-api-version": (False, ["spec.emb.apiVersion"]),
    "embedded/bad-label": (False, ["spec.emb.metadata.labels"]),
    "embedded/meta-unknown": (False, ["spec.emb.metadata.colour"]),
    "embedded/name-slash": (False, ["spec.emb.metadata.name"]),
    "embedded/data": (True, []),
    "embedded/list-no-kind": (False, ["<nil>", "spec.more[1].kind"]),
    "embedded/list-bad-generate-name": (False, ["spec.more[0].metadata.generateName"]),
    "number/ratio-0.3": (True, []),
    "number/ratio-0.7": (True, []),
    "number/ratio-0.35": (False, ["spec.ratio"]),
    "number/ratio-integer": (False, ["spec.ratio"]),
    "number/half-integer": (False, ["spec.half"]),
    "number/half-1.5": (True, []),
    "number/half-1.25": (False, ["spec.half"]),
    "number/count-6": (True, []),
    "number/count-minus-6": (True, []),
    "number/half-minus-1.5": (True, []),
    "number/ratio-tiny-off": (False, ["spec.ratio"]),
    "number/count-7": (False, ["spec.count"]),
    "number/set-1-and-1.0": (True, []),
    "number/set-0.5-twice": (False, ["spec.set[1]"]),
    "number/set-distinct": (True, []),
    "int-format/int32-max": (True, []),
    "int-format/int32-over": (False, ["<nil>"]),
    "int-format/int32-under": (False, ["<nil>"]),
    "int-format/int64-over-int32": (True, []),
    "int-format/float-max": (True, []),
    "int-format/float-over": (False, ["<nil>"]),
    "int-format/float-under": (False, ["<nil>"]),
    "int-format/double-big": (True, []),
    "decode/tpl-valid": (True, []),
    "decode/tpl-label-number": (False, ["<nil>"]),
    "decode/item-label-number": (False, ["<nil>"]),
    "decode/item-annotations-list": (False, ["<nil>"]),
    "decode/item-name-number": (False, ["<nil>"]),
    "decode/item-finalizer-number": (False, ["<nil>"]),
    "decode/free-metadata-string": (False, ["<nil>"]),
    "decode/free-generation-string": (False, ["<nil>"]),
    "decode/free-generation-fraction": (False, ["<nil>"]),
    "decode/free-uid-number": (False, ["<nil>"]),
    "decode/map-value-kind-number": (False, ["<nil>"]),
    "decode/tpl-kind-number": (False, ["<nil>"]),
    "decode/tpl-api-version-list": (False, ["<nil>"]),
    "decode/root-label-number": (False, ["<nil>"]),
    "runtime-words/div": (False, ["spec"]),
    "runtime-words/div-ok": (True, []),
    "runtime-words/mod": (False, ["spec"]),
    "runtime-words/uint": (False, ["spec"]),
    "runtime-words/uintdbl": (False, ["spec"]),
    "runtime-words/intdbl": (False, ["spec"]),
    "runtime-words/dur": (False, ["spec"]),
    "runtime-words/dur-ok": (True, []),
    "runtime-words/ts": (False, ["spec"]),
    "runtime-words/bool": (False, ["spec"]),
    "runtime-words/bool-ok": (True, []),
    "runtime-words/fmt-d": (False, ["spec"]),
    "runtime-words/fmt-f": (False, ["spec"]),
    "runtime-words/fmt-e": (False, ["spec"]),
    "runtime-words/fmt-x": (False, ["spec"]),
    "runtime-words/fmt-b": (False, ["spec"]),
    "runtime-words/fmt-o": (False, ["spec"]),
    "runtime-words/fmt-nan": (True, []),
    "runtime-words/fmt-nan-x": (False, ["spec"]),
    "runtime-words/fmt-s": (False, ["spec"]),
    "runtime-words/fmt-map": (False, ["spec"]),
    "runtime-words/fmt-few": (False, ["spec"]),
    "runtime-words/fmt-few-ok": (True, []),
    "runtime-words/fmt-verb-q": (False, ["spec"]),
    "runtime-words/fmt-verb-dot": (False, ["spec"]),
    "runtime-words/fmt-verb-dotx": (False, ["spec"]),
    "runtime-words/fmt-verb-end": (False, ["spec"]),
    "runtime-words/fmt-verb-pct": (True, []),
    "runtime-words/fmt-verb-wide": (False, ["spec"]),
}

#: Whether the API server accepted each CRD of REFUSAL_CRDS when it was created.
ACCEPTED_CRDS = frozenset(tag for tag in REFUSAL_CRDS if tag.startswith("accepted-"))


@pytest.mark.parametrize("case", cases(), ids=lambda c: c.id)
def test_verdicts_and_fields_are_the_api_servers(case: Case) -> None:
    allowed, fields = API_SERVER[case.id]
    findings = [
        f
        for f in validate_object(
            case.obj,
            case.crd,
            old=case.old,
            kubernetes="1.36",
            request_body="json" if case.id in RAW_JSON else "client",
        )
        if f.blocking or f.message == NOT_CHECKED
    ]
    assert (not findings) == allowed, [str(f) for f in findings]
    assert sorted({f.path or "<nil>" for f in findings}) == fields, [str(f) for f in findings]


def test_kubernetes_1_35_does_not_range_check_int32_and_float() -> None:
    by_id = {c.id: c for c in cases()}
    for tag in ("int32-over", "int32-under", "float-over", "float-under"):
        case = by_id[f"int-format/{tag}"]
        assert [f for f in validate_object(case.obj, case.crd, kubernetes="1.35") if f.blocking] == []
        assert [f for f in validate_object(case.obj, case.crd, kubernetes="1.36") if f.blocking]


def test_a_json_body_keeps_a_whole_float_apart_from_an_integer() -> None:
    case = next(c for c in cases() if c.id == "number/set-1-and-1.0")
    assert not [f for f in validate_object(case.obj, case.crd, request_body="json") if f.blocking]
    (dup,) = [f for f in validate_object(case.obj, case.crd, request_body="client") if f.blocking]
    assert str(dup) == "spec.set[1]: Duplicate value: 1"


@pytest.mark.parametrize("tag", sorted(REFUSAL_CRDS))
def test_crds_the_api_server_refuses(tag: str) -> None:
    found = refusals(REFUSAL_CRDS[tag]["spec"]["versions"][0]["schema"]["openAPIV3Schema"])
    assert bool(found) == (tag not in ACCEPTED_CRDS), [str(r) for r in found]


def test_an_object_of_a_refused_crd_is_refused_with_the_reason() -> None:
    case = next(c for c in cases() if c.id == "ratchet-ancestor/valid-create")
    crd = case.crd
    schema = {**crd.schema, "x-kubernetes-validations": [{"rule": "cel.bind(x, 1, x > 0)"}]}
    refused = type(crd)(crd.crd, crd.version, schema, crd.status_subresource, crd.scale_replicas_path)
    (finding,) = validate_object(case.obj, refused)
    assert finding.blocking and "the API server refuses this CRD" in finding.message, finding
    assert "undeclared reference to 'cel'" in finding.message, finding


def test_an_object_of_a_crd_refused_for_its_rules_cost_is_refused_with_the_api_servers_words() -> None:
    case = next(c for c in cases() if c.id == "ratchet-ancestor/valid-create")
    crd = case.crd
    rule = {"rule": "self.metadata.name.split('-').join('.') != ''"}
    refused = type(crd)(
        crd.crd, crd.version, {**crd.schema, "x-kubernetes-validations": [rule]}, crd.status_subresource
    )
    findings = validate_object(case.obj, refused)
    assert all(f.blocking and "the API server refuses this CRD" in f.message for f in findings), findings
    try_ = (
        "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, and "
        "strings are declared)"
    )
    assert [f.message.split("can be created: ")[1] for f in findings] == [
        f"openAPIV3Schema.x-kubernetes-validations[0].rule: Forbidden: estimated rule cost exceeds budget by "
        f"factor of more than 100x {try_}",
        "openAPIV3Schema.x-kubernetes-validations[0].rule: Forbidden: contributed to estimated rule cost total "
        "exceeding cost limit for entire OpenAPIv3 schema",
        "openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for entire OpenAPIv3 "
        f"schema exceeds budget by factor of more than 100x {try_}",
    ]
    # The same object, judged as if the CRD were served (what the API server's object path alone does).
    assert [f for f in validate_object(case.obj, refused, installed=True) if f.blocking] == []
