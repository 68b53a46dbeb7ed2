"""The CEL environment: every rule of the shipped CRDs compiles, and the Kubernetes library functions the
rules call behave as their Go sources document (examples from ``k8s.io/apiserver/pkg/cel/library``)."""

from __future__ import annotations

from typing import Any

import pytest

from nodefleet.apiserver import cel as crd_cel
from nodefleet.apiserver.coverage import coverage, rule_sites
from nodefleet.apiserver.store import load_index


def _eval(rule: str, self_value: Any = None, old: Any = crd_cel._ABSENT, **extra: Any) -> crd_cel.RuleOutcome:
    compiled = crd_cel.compile_rule({"rule": rule, "message": "MSG", **extra})
    assert compiled.error is None, compiled.error
    return crd_cel.evaluate(compiled, self_value, old)


def test_every_rule_of_every_shipped_crd_compiles_once() -> None:
    sites = [
        (v.crd.kind, path, rule) for v in load_index().all_versions() for path, rule in rule_sites(v.schema)
    ]
    # Each shipped file once: the per-kind CRDs (427 rules) and the Karpenter sets' distinct files (304).
    assert len(sites) == 731
    failing = [
        (kind, path, crd_cel.compile_rule(rule).error)
        for kind, path, rule in sites
        if crd_cel.compile_rule(rule).error
    ]
    assert failing == []
    # Compiled once per process: the same rule text gives the same program object.
    first = sites[0][2]
    assert crd_cel.compile_rule(first).program is crd_cel.compile_rule(dict(first)).program


def test_coverage_counts_transition_rules_per_crd() -> None:
    rows = coverage(load_index())
    by_kind = {(r.kind, r.api_version): r for r in rows if not r.sets}
    assert by_kind[("HostedCluster", "hypershift.openshift.io/v1beta1")].transition == 71
    karpenter = {(r.kind, s): r for r in rows for s in r.sets}
    assert karpenter[("NodePool", "aws/1.15")].rules == 20
    assert karpenter[("NodePool", "aws/1.15")].transition == 3
    # HyperShift's relaxed EC2NodeClass has fewer rules than upstream's of the same Karpenter (43 vs 54).
    assert (
        karpenter[("EC2NodeClass", "hypershift/1.13")].rules < karpenter[("EC2NodeClass", "aws/1.13")].rules
    )
    assert all(not r.cannot for r in rows)


@pytest.mark.parametrize(
    ("rule", "value", "expected"),
    [
        # urls.go
        ("isURL(self)", "https://user:pass@example.com:80/path?query=val#fragment", True),
        ("isURL(self)", "/absolute-path", True),
        ("isURL(self)", "https://a:b:c/", False),
        ("isURL(self)", "../relative-path", False),
        ("url(self).getScheme() == 'https'", "https://example.com/", True),
        ("url(self).getScheme() == ''", "/path", True),
        (
            "url(self).getQuery() == {'k1': ['a'], 'k2': ['b', 'c']}",
            "https://example.com/path?k1=a&k2=b&k2=c",
            True,
        ),
        ("url(self).getQuery() == {}", "https://example.com/path?", True),
        (
            "url(self).getQuery() == {'key with spaces': ['value with spaces']}",
            "https://example.com/path?key with spaces=value with spaces",
            True,
        ),
        # ip.go
        ("isIP(self)", "127.0.0.1", True),
        ("isIP(self)", "127.0.0.256", False),
        ("isIP(self)", ":::1", False),
        ("isIP(self)", "::ffff:1.2.3.4", False),
        ("isIP(self)", "fe80::1%eth0", False),
        ("isIP(self)", "010.0.0.1", False),
        ("ip(self).family() == 6", "::1", True),
        # cidr.go
        ("isCIDR(self)", "192.168.0.0/16", True),
        ("isCIDR(self)", "192.168.0.0/33", False),
        ("isCIDR(self)", "::1/129", False),
        ("cidr(self).prefixLength() == 16", "192.168.0.0/16", True),
        ("cidr(self).ip().family() == 4", "192.168.0.1/24", True),
        ("cidr(self).ip().family() == 6", "::1/128", True),
        # quantity.go
        ("isQuantity(self)", "1.3G", True),
        ("isQuantity(self)", "1.3Gi", True),
        ("isQuantity(self)", "1,3G", False),
        ("isQuantity(self)", "200K", False),
        ("isQuantity(self)", "Three", False),
        ("quantity('200M').compareTo(quantity('0.2G')) == 0", None, True),
        ("quantity('50M').compareTo(quantity('50Mi')) == -1", None, True),
        ("quantity('50Mi').compareTo(quantity('50M')) == 1", None, True),
        # regex.go
        ("self.find('[0-9]+') == '123'", "abc 123", True),
        ("self.find('xyz') == ''", "abc 123", True),
        ('self.find("^([^/]+)") == "karpenter.sh"', "karpenter.sh/capacity-type", True),
        # format.go (IsDNS1123Subdomain)
        ("!format.dns1123Subdomain().validate(self).hasValue()", "apiextensions.k8s.io", True),
        ("!format.dns1123Subdomain().validate(self).hasValue()", "Not_A_Subdomain", False),
        ("format.dns1123Subdomain().validate(self).value().size() == 1", "-bad", True),
    ],
)
def test_kubernetes_library_functions_follow_their_go_source(rule: str, value: Any, expected: bool) -> None:
    assert _eval(rule, value).passed is expected


def test_a_runtime_error_is_a_rejection_worded_as_the_api_server_words_it() -> None:
    outcome = _eval("url(self).getScheme() == 'https'", "not a url")
    assert outcome.passed is False
    # cel/validation.go ruleErrorString: the rule's message names it, the rule itself only without one.
    assert outcome.message.endswith("evaluating rule: MSG")
    missing = _eval("self.min <= self.max", {"max": 1})
    assert missing.passed is False and missing.error


def test_what_this_environment_lacks_is_cannot_evaluate_never_a_pass() -> None:
    undeclared = crd_cel.compile_rule({"rule": "self.frobnicate() == 1"})
    assert undeclared.error and "frobnicate" in undeclared.error
    assert crd_cel.evaluate(undeclared, "1.0.0").passed is None
    # A call on a value of a type no overload takes (an int-or-string the type checker sees as dyn): cel-go's
    # dispatch fails, and so does the rule, in its words.
    refused = _eval("self.size() > 0", 5)
    assert refused.passed is False and refused.message.startswith("'no such overload: size'"), refused


def test_message_expression_wins_over_message_and_falls_back_when_unusable() -> None:
    assert _eval("self.x == 2", {"x": 1}, messageExpression="'x is ' + string(self.x)").message == "x is 1"
    assert _eval("self.x == 2", {"x": 1}, messageExpression="'two\\nlines'").message == "MSG"
    assert _eval("self.x == 2", {"x": 1}, messageExpression="self.nope").message == "MSG"
    bare = crd_cel.compile_rule({"rule": "self.x == 2"})
    assert crd_cel.evaluate(bare, {"x": 1}).message == "failed rule: self.x == 2"


def test_old_self_is_optional_only_with_optional_old_self() -> None:
    rule = "!oldSelf.hasValue() || self >= oldSelf.value()"
    assert _eval(rule, 1, optionalOldSelf=True).passed is True  # create: oldSelf is none
    assert _eval(rule, 1, 2, optionalOldSelf=True).passed is False
    assert _eval(rule, 3, 2, optionalOldSelf=True).passed is True
    assert crd_cel.compile_rule({"rule": rule}).transition


@pytest.mark.parametrize(
    ("rule", "transition"),
    [
        ("self == oldSelf", True),
        ("self.x == 'oldSelf'", False),
        ("has(oldSelf.x)", True),
        ("self.oldSelfish", False),
    ],
)
def test_transition_rules_are_those_reading_old_self(rule: str, transition: bool) -> None:
    assert crd_cel.references_old_self(rule) is transition


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        ("quantity('1000m') == quantity('1')", True),
        ("quantity('1Gi') != quantity('1024Mi')", False),
        ("quantity('1G') == quantity('1Gi')", False),
        ("quantity('500m') in [quantity('0.5'), quantity('2')]", True),
        ("semver('v1.2', true) == semver('1.2.0')", True),
        ("ip('2001:db8::1') == ip('2001:db8:0::1')", True),
        # A map literal compares as a map, not as an opaque value.
        ("{'#quantity': '1'} == {'#quantity': '1000m'}", False),
    ],
)
def test_opaque_values_compare_by_value_as_cel_go_compares_them(rule: str, expected: bool) -> None:
    outcome = crd_cel.evaluate(crd_cel.compile_rule({"rule": rule}), {})
    assert outcome.passed is expected, outcome


def test_transform_map_evaluates_and_a_duplicate_key_fails_as_cel_go_words_it() -> None:
    rule = crd_cel.compile_rule({"rule": "self.transformMapEntry(k, v, {v: k}).size() == self.size()"})
    assert crd_cel.evaluate(rule, {"a": "x", "b": "y"}).passed is True
    failed = crd_cel.evaluate(rule, {"a": "x", "b": "x"})
    assert failed.passed is False and failed.message.startswith("insert failed: key x already exists"), failed
    mapped = crd_cel.compile_rule({"rule": "self.transformMap(k, v, k != 'b', v + '!') == {'a': 'x!'}"})
    assert crd_cel.evaluate(mapped, {"a": "x", "b": "y"}).passed is True


def test_the_strings_extension_is_the_api_servers_version_2() -> None:
    assert crd_cel.compile_rule({"rule": "'abc'.reverse() == 'cba'"}).error  # version 3
    assert crd_cel.compile_rule({"rule": "['a'].reverse() == ['a']"}).error is None  # the lists extension's
    assert crd_cel.compile_rule({"rule": "'a,b'.split(',').join('-') == 'a-b'"}).error is None


def test_an_error_whose_message_is_not_utf8_is_still_an_error() -> None:
    """The binding raises TypeError for an error message it cannot decode; the rule is refused, not crashed."""

    class _Undecodable:
        def value(self) -> str:
            raise TypeError("Unable to convert function return value to a Python type!")

    from nodefleet.apiserver.cel import _error_text

    assert _error_text(_Undecodable()) == "evaluation failed (an error message that is not UTF-8)"
