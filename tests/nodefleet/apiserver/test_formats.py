"""Go-compatible parsers: the corners where Python's own parsers disagree with the API server's."""

from __future__ import annotations

from fractions import Fraction

import pytest

from nodefleet.apiserver import formats as f


@pytest.mark.parametrize(
    ("raw", "ok"),
    [
        ("https://example.com/path", True),
        ("/absolute-path", True),
        ("*", True),
        ("mailto:a@example.com", True),  # opaque, accepted with a scheme
        ("https://a:b:c/", False),  # invalid port
        ("https://[::1]:80/", True),
        ("https://[::1/", False),  # missing ']'
        ("relative/path", False),
        ("", False),
        ("https://exa mple.com/", False),  # space in host
        ("https://example.com/%zz", False),  # bad escape
        ("1http://example.com", False),
        ("https://user@name@example.com/", True),  # the last '@' splits; Go's userinfo allows '@'
        ("https://us er@example.com/", False),  # a space is not valid userinfo
    ],
)
def test_parse_request_uri_matches_go(raw: str, ok: bool) -> None:
    if ok:
        f.parse_request_uri(raw)
    else:
        with pytest.raises(f.FormatError):
            f.parse_request_uri(raw)


def test_url_parts() -> None:
    u = f.parse_url("HTTPS://example.com:8443/a%20b?x=1&x=2&y=%zz&z=a+b#frag")
    assert u.scheme == "https"
    assert u.host == "example.com:8443"
    assert u.query() == {"x": ["1", "2"], "z": ["a b"]}  # the pair with a bad escape is dropped, as in Go


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("0", Fraction(0)),
        ("100m", Fraction(1, 10)),
        ("1.5G", Fraction(1_500_000_000)),
        ("1Ki", Fraction(1024)),
        ("1e3", Fraction(1000)),
        ("-2Mi", Fraction(-2 * 2**20)),
        ("0.5n", Fraction(1, 10**9)),  # rounded up to one nano unit
        ("1.", Fraction(1)),  # Go accepts a bare decimal point
    ],
)
def test_quantities_parse_like_resource_parse_quantity(text: str, value: Fraction) -> None:
    assert f.parse_quantity(text).value == value


@pytest.mark.parametrize("text", ["", "200K", "1,3G", "Three", "1.2.3", "5 Gi", "1e"])
def test_malformed_quantities_are_rejected(text: str) -> None:
    with pytest.raises(f.FormatError):
        f.parse_quantity(text)


def test_names_and_labels() -> None:
    assert f.dns1123_subdomain_errors("a.example.com") == []
    assert f.dns1123_subdomain_errors("x" * 254)[0] == "must be no more than 253 characters"
    assert f.qualified_name_errors("example.com/MyName") == []
    assert f.qualified_name_errors("a/b/c")[0].startswith("a qualified name must consist of")
    assert any(
        e.startswith("prefix part a lowercase RFC 1123") for e in f.qualified_name_errors("Bad_Prefix/x")
    )
    assert f.label_value_errors("") == []
    assert f.label_value_errors("-x")


@pytest.mark.parametrize(
    ("check", "value", "ok"),
    [
        (f.is_hostname, "quay.io", True),
        (f.is_hostname, "registry-1.example.com", True),
        (f.is_hostname, "not a host", False),
        (f.is_date_time, "2026-11-21T10:00:00Z", True),
        (f.is_date_time, "2026-11-21T10:00:00.5+01:00", True),
        (f.is_date_time, "2026-02-30T10:00:00Z", False),
        (f.is_date_time, "yesterday", False),
        (f.is_duration, "1h30m", True),
        (f.is_duration, "3 days", True),  # strfmt's lenient form
        (f.is_duration, "forever", False),
    ],
)
def test_openapi_string_formats(check: object, value: str, ok: bool) -> None:
    assert check(value) is ok  # type: ignore[operator]
