"""crd-schema's verdict on inputs of shapes the generated corpus never draws, class by class: the Kubernetes CEL
libraries (quantity, semver, IP/CIDR, URL, regex, lists, format, and cel-go's sets, lists and two-variable
comprehensions), every string format the API server checks, integers beyond int64, set lists whose items are
equal once decoded from JSON, conversion errors of ratcheted values, and messages in the API server's words.

The expectations are the Go sources' (k8s.io/apiserver/pkg/cel/library, k8s.io/apimachinery resource.Quantity,
k8s.io/kube-openapi strfmt); tests/test_crd_apiserver.py compares the same classes with the API server's own
code on the edge CRDs (tests/crd_gadgets.py). The API server refuses the edge CRD itself for its rules'
estimated cost, so objects are judged as the API server's object path alone judges them (``installed``).
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver import strfmt as crd_strfmt
from nodefleet.apiserver.schema import NOT_CHECKED, Finding, validate_object
from tests.crd_gadgets import INVALID_FORMATS, VALID_FORMATS, base, gadgets


def _eval(rule: str, self_value: Any = None) -> crd_cel.RuleOutcome:
    compiled = crd_cel.compile_rule({"rule": rule, "message": "MSG"})
    assert compiled.error is None, compiled.error
    return crd_cel.evaluate(compiled, self_value)


def _judge(
    spec: dict[str, Any] | None = None, old: dict[str, Any] | None = None, **meta: Any
) -> list[Finding]:
    obj = base()
    obj["spec"].update(spec or {})
    obj["metadata"].update(meta)
    return validate_object(obj, gadgets(), old=old, installed=True)


def _blocking(findings: list[Finding]) -> list[str]:
    return [str(f) for f in findings if f.blocking]


# --- CEL libraries ------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        # quantity.go: comparisons by value
        ("quantity(self).isLessThan(quantity('1Mi'))", "1000Ki", True),
        ("quantity(self).isGreaterThan(quantity('1M'))", "1Mi", True),
        ("quantity(self).isGreaterThan(quantity('1Mi'))", "1048576", False),
        ("sign(quantity(self)) == -1", "-1m", True),
        ("sign(quantity(self)) == 0", "0.0", True),
        # isInteger/asInteger are resource.Quantity.AsInt64: the representation decides
        ("quantity(self).isInteger()", "3k", True),
        ("quantity(self).isInteger()", "3000m", False),  # held with a negative scale
        ("quantity(self).isInteger()", "2.0", False),
        ("quantity(self).isInteger()", "1Gi", True),
        ("quantity(self).isInteger()", "0.5Gi", False),  # a binary fraction is an inf.Dec
        ("quantity(self).isInteger()", "1234567890123456789012", False),  # more than 18 digits: inf.Dec
        ("quantity(self).asInteger() == 12000", "12e3", True),
        ("quantity(self).asApproximateFloat() == 0.25", "250m", True),
        ("quantity(self).asApproximateFloat() > 0.3", "3e-1", True),  # 3 * 10^-1 in float64
        ("quantity(self).add(quantity('500m')).compareTo(quantity('2')) == 0", "1.5", True),
        ("quantity(self).add(2).isInteger()", "1", True),
        ("quantity(self).sub(quantity('1')).isInteger()", "9.3e18", False),  # overflows int64: inf.Dec
        ("quantity(self).sub(1).asInteger() == 41", "42", True),
        # semverlib.go
        ("semver(self).isLessThan(semver('1.10.0'))", "1.9.9", True),
        ("semver(self).compareTo(semver('2.0.0')) < 0", "2.0.0-rc.1", True),
        ("semver(self, true).patch() == 0", "v2.4", True),
        ("isSemver(self)", "1.02.3", False),
        ("isSemver(self, true)", "1.02.3", True),
        ("semver(self).major() == 1 && semver(self).minor() == 2", "1.2.3+build.5", True),
        # ip.go / cidr.go
        ("ip(self).isLoopback()", "::1", True),
        ("ip(self).isUnspecified()", "0.0.0.0", True),
        ("ip(self).isLinkLocalUnicast()", "fe80::1", True),
        ("ip(self).isLinkLocalMulticast()", "224.0.0.251", True),
        ("ip(self).isGlobalUnicast()", "192.168.0.1", True),
        ("ip(self).isGlobalUnicast()", "255.255.255.255", False),
        ("ip.isCanonical(self)", "2001:db8::1", True),
        ("ip.isCanonical(self)", "2001:DB8::1", False),
        ("string(ip(self)) == '2001:db8::1'", "2001:db8:0::1", True),
        ("cidr(self).containsIP('192.168.1.7')", "192.168.0.0/16", True),
        ("cidr(self).containsIP(ip('10.0.0.1'))", "192.168.0.0/16", False),
        ("cidr(self).containsCIDR('10.1.0.0/16')", "10.0.0.0/8", True),
        ("cidr(self).containsCIDR(cidr('10.0.0.0/7'))", "10.0.0.0/8", False),
        ("string(cidr(self).masked()) == '10.0.0.0/8'", "10.9.8.7/8", True),
        ("cidr(self).ip() == ip('10.9.8.7')", "10.9.8.7/8", True),
        # urls.go
        ("url(self).getHost() == 'example.com:8080'", "https://example.com:8080/p", True),
        ("url(self).getHostname() == '::1'", "http://[::1]:80/", True),
        ("url(self).getPort() == ''", "https://example.com/", True),
        ("url(self).getEscapedPath() == '/a%20b'", "https://example.com/a b", True),
        # regex.go
        ("self.findAll('[0-9]+') == ['12', '345']", "a12b345", True),
        ("self.findAll('[a-z]', 2) == ['a', 'b']", "abc", True),
        ("self.find('[0-9]+') == ''", "abc", True),
        # lists.go and cel-go's list, set and comprehension extensions
        ("self.isSorted()", [1, 2, 2, 5], True),
        ("self.isSorted()", ["b", "a"], False),
        ("self.sum() == 6", [1, 2, 3], True),
        ("self.max() == 3.5 && self.min() == 0.5", [0.5, 3.5, 1.0], True),
        ("self.indexOf(2) == 1 && self.lastIndexOf(2) == 3", [1, 2, 3, 2], True),
        ("self.indexOf('lo') == 3 && self.lastIndexOf('l') == 3", "hello", True),
        ("sets.contains(self, [1, 2]) && !sets.equivalent(self, [1])", [1, 2, 3], True),
        ("self.sort() == [1, 2, 3] && self.distinct().size() == 3", [3, 1, 2, 1], False),
        ("lists.range(3) == [0, 1, 2] && self.slice(1, 2) == [2]", [1, 2, 3], True),
        ("self.all(i, v, v > i) && self.exists(i, v, v == 3)", [1, 2, 3], True),
        ("self.transformList(i, v, v * i) == [0, 2, 6]", [1, 2, 3], True),
        # format.go
        ("!format.dns1035Label().validate(self).hasValue()", "a-1", True),
        ("!format.dns1035Label().validate(self).hasValue()", "1-a", False),
        ("!format.dns1123LabelPrefix().validate(self).hasValue()", "web-", True),
        ("!format.uri().validate(self).hasValue()", "relative/path", False),
        ("!format.uuid().validate(self).hasValue()", "123e4567-e89b-12d3-a456-426614174000", True),
        ("!format.byte().validate(self).hasValue()", "not base64", False),
        ("!format.date().validate(self).hasValue()", "2023-02-29", False),
        ("!format.datetime().validate(self).hasValue()", "2023-02-28T10:00:00Z", True),
        ("format.named(self).hasValue()", "qualifiedName", True),
        ("format.named(self).hasValue()", "nonsense", False),
        (
            "format.named('labelValue').value().validate(self).value() == ['must be no more than 63 bytes']",
            "a" * 64,
            True,
        ),
    ],
)
def test_the_kubernetes_cel_libraries_follow_their_go_sources(rule: str, value: Any, expected: bool) -> None:
    outcome = _eval(rule, value)
    assert outcome.passed is expected, outcome


@pytest.mark.parametrize(
    ("rule", "value", "error"),
    [
        ("quantity(self).asInteger() > 0", "0.5", "cannot convert value to integer"),
        ("quantity(self).isInteger()", "five", "quantities must match the regular expression"),
        ("self.min() == 0", [], "min called on empty list"),
        ("'abc'.indexOf('b', self) >= 0", -1, "index out of range: -1"),
    ],
)
def test_library_errors_read_as_the_go_functions_word_them(rule: str, value: Any, error: str) -> None:
    outcome = _eval(rule, value)
    assert outcome.passed is False
    assert outcome.message.startswith(error) and outcome.message.endswith(" evaluating rule: MSG")


def test_a_rule_the_api_server_cannot_compile_refuses_the_object_in_its_words() -> None:
    crd = gadgets()
    schema = dict(crd.schema)
    spec = dict(schema["properties"]["spec"])
    props = dict(spec["properties"])
    props["code"] = {
        **props["code"],
        "x-kubernetes-validations": [{"rule": "self.frobnicate()", "message": "m"}],
    }
    spec["properties"] = props
    schema["properties"] = {**schema["properties"], "spec": spec}
    odd = dataclasses.replace(crd, schema=schema)
    obj = base()
    obj["spec"]["code"] = "ab"
    # (Served as if the API server had installed the CRD, which it refuses: its object path then says this.)
    findings = validate_object(obj, odd, installed=True)
    assert [f.path for f in findings if f.blocking] == ["spec.code"]
    assert findings[0].message == (
        'Invalid value: "string": rule compile error: compilation failed: ERROR: <input>:1:16: undeclared '
        "reference to 'frobnicate' (in container '')\n | self.frobnicate()\n | ...............^"
    )
    refused = validate_object(obj, odd)
    assert refused and all(f.blocking and "the API server refuses this CRD" in f.message for f in refused)
    assert any("undeclared reference to 'frobnicate'" in f.message for f in refused), refused


def test_library_rules_on_the_edge_crd() -> None:
    assert _blocking(_judge()) == []
    assert _blocking(_judge({"memory": "3000m"})) == [
        'spec.memory: Invalid value: "3000m": memory must be a whole number of bytes'
    ]
    assert _blocking(_judge({"network": "10.1.2.3/16"})) == [
        'spec.network: Invalid value: "10.1.2.3/16": network has host bits set: 10.1.0.0/16'
    ]
    assert _blocking(_judge({"ports": [8080, 80, 22]})) == [
        "spec.ports: Invalid value: ports must be sorted",
        "spec.ports: Invalid value: no ssh",
    ]


# --- formats -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value"), sorted(VALID_FORMATS.items()))
def test_a_valid_value_of_every_format_is_accepted(name: str, value: str) -> None:
    assert _blocking(_judge({"formats": {**VALID_FORMATS, name: value}})) == []


@pytest.mark.parametrize(("name", "value"), INVALID_FORMATS)
def test_an_invalid_value_of_every_checked_format_is_a_type_error(name: str, value: str) -> None:
    findings = _blocking(_judge({"formats": {**VALID_FORMATS, name: value}}))
    fmt = _format_of(name)
    if crd_strfmt.normalized(fmt) not in crd_strfmt.SUPPORTED:
        assert findings == []  # the API server drops a format it does not support
        return
    shown = '"' + value + '"'
    assert findings == [
        f"spec.formats.{name}: Invalid value: {shown}: spec.formats.{name} in body must be of type {fmt}: {shown}"
    ]


def _format_of(prop: str) -> str:
    return str(gadgets().schema["properties"]["spec"]["properties"]["formats"]["properties"][prop]["format"])


def test_every_supported_format_has_a_validator_and_a_case() -> None:
    checked = {crd_strfmt.normalized(_format_of(prop)) for prop, _ in INVALID_FORMATS}
    assert crd_strfmt.SUPPORTED - {"password"} <= checked
    assert crd_strfmt.format_ok("password", "") is True
    assert crd_strfmt.format_ok("int32", "x") is None


# --- numbers as the API server decodes them -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "accepted"),
    [
        (2**63 - 1, True),
        (2**63, False),
        (-(2**63), True),
        (-(2**63) - 1, False),
        (10**30, False),
        (7.0, True),
        (7.0000000001, True),  # go-openapi's IsFloat64AJSONInteger: within a relative 1e-9
        (7.5, False),
        (2.0**60, True),  # a whole float: the client sends 1152921504606846976, an int64
        (2.0**64, False),  # beyond int64 it stays a float, and one beyond 2^53 is never an integer there
    ],
)
def test_integers_beyond_int64_are_the_wrong_type(value: Any, accepted: bool) -> None:
    findings = _blocking(_judge({"total": 1, "count": value}))
    wrong_type = [f for f in findings if 'must be of type integer: "number"' in f]
    assert (not wrong_type) is accepted, findings


def test_a_number_beyond_int64_is_a_float_the_api_server_prints_as_go_does() -> None:
    findings = _blocking(_judge({"count": -(2**63) - 1}))
    assert (
        findings[0]
        == 'spec.count: Invalid value: "number": spec.count in body must be of type integer: "number"'
    )
    assert findings[1] == (
        "spec.count: Invalid value: -9.223372036854776e+18: spec.count in body should be greater than or equal to 0"
    )


@pytest.mark.parametrize(
    ("field", "items", "duplicate"),
    [
        ("ports", [443, 443.0], "spec.ports[1]: Duplicate value: 443"),
        ("weights", [0.5, 7, 7.0], "spec.weights[2]: Duplicate value: 7"),
        ("weights", [1e20, 100000000000000000000], "spec.weights[1]: Duplicate value: 1e+20"),
    ],
)
def test_set_list_items_equal_once_decoded_from_json_are_duplicates(
    field: str, items: list[Any], duplicate: str
) -> None:
    assert duplicate in _blocking(_judge({field: items}))


def test_distinct_numbers_in_a_set_list_are_not_duplicates() -> None:
    assert _blocking(_judge({"weights": [1, 1.5, 2.5]})) == []


# --- ratcheting and CEL conversion errors ---------------------------------------------------------------------


def test_a_ratcheted_type_error_still_fails_the_rules_that_read_the_value() -> None:
    old = base()
    old["spec"]["tier"] = {"level": "seven", "name": "gold"}
    findings = _judge({"tier": {"level": "seven", "name": "platinum"}}, old=old)
    assert sorted(_blocking(findings)) == [
        'spec.tier.level: Invalid value: "integer": invalid data, expected int, got string evaluating rule: '
        "level not negative",
        'spec.tier: Invalid value: "object": invalid data, expected int, got string evaluating rule: level below 10',
    ]

    ratcheted = [f for f in findings if not f.blocking]
    assert ratcheted and ratcheted[0].message.split("\n")[0] == (
        'Invalid value: "string": spec.tier.level in body must be of type integer: "string"'
    )


def test_a_ratcheted_type_error_no_rule_reads_is_accepted() -> None:
    old = base()
    old["spec"]["tier"] = {"name": "gold", "flags": [1]}
    assert _blocking(_judge({"tier": {"name": "silver", "flags": [1]}}, old=old)) == []


def test_list_functions_over_unconvertible_items_are_overload_errors() -> None:
    old = base()
    old["spec"]["ports"] = [80, "https"]
    findings = _blocking(_judge({"ports": [80, "https"], "count": 9}, old=old))
    assert (
        "spec.ports: Invalid value: \"array\": 'no such overload: isSorted(list)': call arguments did not match a "
        "supported operator, function or macro signature for rule: ports must be sorted"
    ) in findings


def test_a_type_error_on_a_create_keeps_the_rules_from_running() -> None:
    findings = _judge({"tier": {"level": "seven", "name": "gold"}})
    assert [f.message for f in findings if not f.blocking] == [NOT_CHECKED]


# --- messages ----------------------------------------------------------------------------------------------


def test_too_long_is_reported_alone_with_the_note_on_its_own_line() -> None:
    assert _blocking(_judge({"code": "ABCDEFG"})) == [
        "spec.code: Too long: may not be more than 4 bytes\n(the API server counts characters, not bytes: this "
        "value has 7)"
    ]
    assert _blocking(_judge({"short": "A"})) == [
        'spec.short: Invalid value: "A": spec.short in body should be at least 3 chars long'
    ]


def test_unknown_fields_are_worded_as_the_api_server_words_them() -> None:
    (finding,) = _judge({"colour": "red"})
    assert finding.message.split("\n")[0] == 'unknown field "spec.colour"'


def test_label_lengths_are_in_bytes() -> None:
    findings = _blocking(_judge(labels={"k": "é" * 32}))
    assert findings[0] == 'metadata.labels: Invalid value: "' + "é" * 32 + '": must be no more than 63 bytes'
    keys = _blocking(_judge(labels={"a/b/c": "x"}))
    assert keys[0].startswith('metadata.labels: Invalid value: "a/b/c": a valid label key must consist of')


def test_a_list_type_map_item_that_is_not_an_object_is_named() -> None:
    findings = _blocking(_judge({"slots": [{"id": "x"}, 5]}))
    assert "spec.slots[1]: Invalid value: 5: must be an object for an array of list-type map" in findings


def test_replicas_errors_are_unstructured_accessor_errors() -> None:
    assert _blocking(_judge({"replicas": 2.5})) == [
        ".spec.replicas: Invalid value: 0: .spec.replicas accessor error: 2.5 is of the type float64, expected int64"
    ]
    assert _blocking(_judge({"replicas": 3.0})) == []
