"""Hand-written cases for the second edge CRD (tests/data/crd-edges/gadgets.edges.nodefleet.io.yaml): inputs
of shapes the generated corpus never draws, by class:

- ``library``: rules calling each Kubernetes CEL library (quantity, semver, IP, CIDR, URL, regex, lists,
  format, sets, two-variable comprehensions), passing, failing, and failing at run time;
- ``format``: a valid and an invalid value of every string format the API server checks, and values of two
  formats it drops unchecked;
- ``big-integer``: integers beyond int64 (the API server decodes them as floats), floats near whole numbers;
- ``set-list``: duplicates that are equal only once numbers are decoded from JSON (``[8, 8.0]``);
- ``messages``: errors the API server words its own way (lengths, label keys and values, unknown fields);
- ``ratchet-cel``: updates keeping a value of the wrong type that a rule reads (the type error is ratcheted,
  the rule's conversion error is not).
"""

from __future__ import annotations

import copy
from functools import cache
from pathlib import Path
from typing import Any

from nodefleet.apiserver.store import CrdVersion

GADGETS = Path(__file__).resolve().parent / "data" / "crd-edges" / "gadgets.edges.nodefleet.io.yaml"


@cache
def gadgets() -> CrdVersion:
    from tests.crd_corpus import hand_written_crd

    return hand_written_crd(GADGETS)


#: A valid value of each format property.
VALID_FORMATS: dict[str, str] = {
    "bsonobjectid": "5f2b9c0e8d1a4b3c2d1e0f9a",
    "uri": "https://example.com/a?b=c",
    "email": "Ops Team <ops@example.com>",
    "hostname": "node-1.example.com",
    "ipv4": "010.001.1.1",
    "ipv6": "::ffff:1.2.3.4",
    "cidr": "010.0.0.0/08",
    "mac": "0000.5e00.5301",
    "uuid": "123E4567E89B12D3A456426614174000",
    "uuid3": "a3bb189e-8bf9-3888-9912-ace4e6543002",
    "uuid4": "f47ac10b-58cc-4372-a567-0e02b2c3d479",
    "uuid5": "886313e1-3b8a-5372-9b90-0c9aee199e5d",
    "isbn": "978-0-306-40615-7",
    "isbn10": "0 306 40615 2",
    "isbn13": "9780306406157",
    "creditcard": "4111 1111 1111 1111",
    "ssn": "123 45 6789",
    "hexcolor": "1a2B3c",
    "rgbcolor": "rgb(12, 200,255)",
    "byte": "aGVsbG8=",
    "password": "",
    "date": "2024-02-29",
    "duration": "5 weeks",
    "dateTime": "2024-02-29T12:00:00Z",
    "datetime": "2024-02-29t12:00:00.5+02:00",
    "shortName": "web",
    "longName": "web.example",
    "int32": "not a number",
    "fancy": "anything",
}

#: Invalid values, one or more a format (the last two formats are dropped by the API server: accepted).
INVALID_FORMATS: list[tuple[str, str]] = [
    ("bsonobjectid", "5f2b9c0e8d1a4b3c2d1e0f9"),
    ("bsonobjectid", "5f2b9c0e8d1a4b3c2d1e0fzz"),
    ("uri", "example.com/a"),
    ("uri", "https://exa mple.com/"),
    ("email", "ops@@example.com"),
    ("email", "Ops Team ops@example.com"),
    ("hostname", "-node.example.com"),
    ("hostname", "node.example.123"),
    ("ipv4", "256.1.1.1"),
    ("ipv4", "::1"),
    ("ipv6", "2001:db8::g"),
    ("ipv6", "1.2.3.4"),
    ("ipv6", "fe80::1%eth0"),
    ("cidr", "10.0.0.0/33"),
    ("cidr", "10.0.0.0"),
    ("mac", "00:1a:2b:3c:4d"),
    ("mac", "00:1a:2b-3c:4d:5e"),
    ("uuid", "123e4567-e89b-12d3-a456-42661417400"),
    ("uuid3", "f47ac10b-58cc-4372-a567-0e02b2c3d479"),
    ("uuid4", "f47ac10b-58cc-4372-c567-0e02b2c3d479"),
    ("uuid5", "a3bb189e-8bf9-3888-9912-ace4e6543002"),
    ("isbn", "0306406153"),
    ("isbn10", "030640615X"),
    ("isbn13", "9780306406158"),
    ("creditcard", "4111-1111-1111-1112"),
    ("ssn", "123 45 678"),
    ("hexcolor", "#12345"),
    ("rgbcolor", "rgb(256,0,0)"),
    ("byte", "aGVsbG8"),
    ("date", "2023-02-29"),
    ("date", "2024-2-09"),
    ("duration", "3 fortnights"),
    ("duration", "99999999999999999999 h"),
    ("dateTime", "2024-02-29 12:00:00Z"),
    ("datetime", "2024-02-29T24:00:00Z"),
    ("shortName", "Web"),
    ("longName", "web..example"),
    ("int32", "3.5"),
    ("fancy", ""),
]


def base() -> dict[str, Any]:
    return {
        "apiVersion": "edges.nodefleet.io/v1",
        "kind": "Gadget",
        "metadata": {"name": "gadget-a", "namespace": "default"},
        "spec": {
            "memory": "4Gi",
            "cpu": "2",
            "disk": "1536",
            "version": "1.10.0",
            "gateway": "10.0.0.1",
            "network": "10.0.0.0/16",
            "endpoint": "https://api.example.com/v1",
            "handle": "web-1",
            "ports": [80, 443],
            "weights": [0.5, 2],
            "ratios": [0.5, 1],
            "words": ["alpha", "beta"],
            "count": 3,
            "total": 2.5,
            "tier": {"level": 1, "name": "gold", "flags": [True]},
            "formats": dict(VALID_FORMATS),
        },
    }


def _g(spec: dict[str, Any] | None = None) -> dict[str, Any]:
    obj = base()
    for key, value in (spec or {}).items():
        obj["spec"][key] = copy.deepcopy(value)
    return obj


def _meta(**fields: Any) -> dict[str, Any]:
    obj = base()
    obj["metadata"].update(copy.deepcopy(fields))
    return obj


def _formats(**values: str) -> dict[str, Any]:
    return _g({"formats": {**VALID_FORMATS, **values}})


#: (class, tag, object, previous object or None).
CASES: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
    ("library", "valid", _g(), None),
    # quantity.go: isInteger/asInteger follow the Go representation, not the value
    ("library", "memory-millis", _g({"memory": "2000m"}), None),
    ("library", "memory-fraction-binary", _g({"memory": "1.5Ki"}), None),
    ("library", "memory-exponent", _g({"memory": "12e3"}), None),
    ("library", "memory-too-big", _g({"memory": "65Gi"}), None),
    ("library", "memory-zero", _g({"memory": "0"}), None),
    ("library", "memory-not-quantity", _g({"memory": "lots"}), None),
    ("library", "cpu-float", _g({"cpu": "64.5"}), None),
    ("library", "cpu-small", _g({"cpu": "50m"}), None),
    ("library", "cpu-under-one", _g({"cpu": "0.9"}), None),
    ("library", "cpu-not-quantity", _g({"cpu": "two"}), None),
    ("library", "disk-not-multiple", _g({"disk": "2k"}), None),
    ("library", "disk-dec", _g({"disk": "0.5Ki"}), None),
    ("library", "disk-capped", _g({"disk": "8Ei"}), None),
    ("library", "disk-overflow-add", _g({"disk": "9.3e18"}), None),
    ("library", "disk-near-int64", _g({"disk": "9e18"}), None),
    # semverlib.go
    ("library", "version-short", _g({"version": "v1.2"}), None),
    ("library", "version-leading-zero", _g({"version": "01.3.0"}), None),
    ("library", "version-major", _g({"version": "3.0.0-rc.1"}), None),
    ("library", "version-junk", _g({"version": "one.two"}), None),
    # ip.go / cidr.go
    ("library", "gateway-not-canonical", _g({"gateway": "2001:db8::0:1"}), None),
    ("library", "gateway-link-local", _g({"gateway": "169.254.1.1"}), None),
    ("library", "gateway-multicast", _g({"gateway": "ff02::1"}), None),
    ("library", "gateway-broadcast", _g({"gateway": "255.255.255.255"}), None),
    ("library", "network-host-bits", _g({"network": "10.1.2.3/16"}), None),
    ("library", "network-link-local", _g({"network": "169.254.10.0/24"}), None),
    ("library", "network-short-prefix", _g({"network": "0.0.0.0/4"}), None),
    # urls.go
    ("library", "endpoint-port", _g({"endpoint": "https://api.example.com:8443/x"}), None),
    ("library", "endpoint-escaped", _g({"endpoint": "https://api.example.com/a%2Fb"}), None),
    ("library", "endpoint-elsewhere", _g({"endpoint": "https://example.org/"}), None),
    # format.go, regex.go
    ("library", "handle-digit-first", _g({"handle": "9lives"}), None),
    ("library", "handle-digits", _g({"handle": "a1b2c3d4"}), None),
    # lists.go, ext lists, sets, two-variable comprehensions
    ("library", "ports-unsorted", _g({"ports": [443, 80]}), None),
    ("library", "ports-ssh", _g({"ports": [22, 80]}), None),
    ("library", "ports-zero", _g({"ports": [0, 80]}), None),
    ("library", "ports-8080-later", _g({"ports": [80, 8080]}), None),
    ("library", "ports-privileged", _g({"ports": [2, 80]}), None),
    ("library", "ports-empty", _g({"ports": []}), None),
    ("library", "ratios-spread", _g({"ratios": [0.5, 2]}), None),
    ("library", "ratios-empty", _g({"ratios": []}), None),
    ("library", "words-unsorted", _g({"words": ["beta", "alpha"]}), None),
    ("library", "words-end-early", _g({"words": ["end", "zeta"]}), None),
    # every format
    ("format", "all-valid", _formats(), None),
    *[
        ("format", f"{name}-{i}", _formats(**{name: value}), None)
        for i, (name, value) in enumerate(INVALID_FORMATS)
    ],
    # integers beyond int64, floats near whole numbers
    ("big-integer", "count-2^63", _g({"count": 2**63}), None),
    ("big-integer", "count-int64-max", _g({"count": 2**63 - 1}), None),
    ("big-integer", "count-below-int64", _g({"count": -(2**63) - 1}), None),
    ("big-integer", "count-2^70", _g({"count": 2**70}), None),
    ("big-integer", "count-whole-float", _g({"count": 1e3}), None),
    ("big-integer", "count-nearly-whole", _g({"count": 2.0000000001}), None),
    ("big-integer", "count-half", _g({"count": 2.5}), None),
    ("big-integer", "total-2^64", _g({"total": 2**64}), None),
    ("big-integer", "level-2^63-under-rules", _g({"tier": {"level": 2**63, "name": "gold"}}), None),
    ("big-integer", "port-2^64", _g({"ports": [80, 2**64]}), None),
    # set lists: equal once decoded from JSON
    ("set-list", "ports-int-and-float", _g({"ports": [80, 80.0]}), None),
    ("set-list", "weights-int-and-float", _g({"weights": [3, 3.0]}), None),
    ("set-list", "weights-floats", _g({"weights": [0.25, 0.25]}), None),
    ("set-list", "weights-distinct", _g({"weights": [0.25, 0.5, 1]}), None),
    ("set-list", "words-twice", _g({"words": ["alpha", "alpha"]}), None),
    ("set-list", "ports-three-equal", _g({"ports": [443, 443.0, 443]}), None),
    # the API server's own words
    ("messages", "replicas-fraction", _g({"replicas": 2.5}), None),
    ("messages", "replicas-negative", _g({"replicas": -1}), None),
    ("messages", "replicas-beyond-int32", _g({"replicas": 2**31}), None),
    ("messages", "replicas-beyond-int64", _g({"replicas": 2**64}), None),
    ("messages", "replicas-whole-float", _g({"replicas": 3.0}), None),
    ("messages", "slots-string-first", _g({"slots": ["a", {"id": "x"}]}), None),
    ("messages", "slots-number-later", _g({"slots": [{"id": "x"}, 5, "b"]}), None),
    ("messages", "slots-null-and-string", _g({"slots": [None, "b"]}), None),
    ("messages", "slots-duplicate", _g({"slots": [{"id": "x"}, {"id": "x", "size": 2}]}), None),
    ("messages", "code-too-long-and-unmatched", _g({"code": "ABCDEFG"}), None),
    ("messages", "code-too-long-multibyte", _g({"code": "ééééé"}), None),
    ("messages", "code-unmatched", _g({"code": "AB"}), None),
    ("messages", "short-too-short-and-unmatched", _g({"short": "A"}), None),
    ("messages", "unknown-spec-field", _g({"colour": "red"}), None),
    ("messages", "unknown-nested-field", _g({"tier": {"level": 1, "rank": 2}}), None),
    ("messages", "label-key-two-slashes", _meta(labels={"a/b/c": "x"}), None),
    ("messages", "label-key-empty-prefix", _meta(labels={"/x": "y"}), None),
    ("messages", "label-key-long-multibyte", _meta(labels={"k" + "é" * 31: "y"}), None),
    ("messages", "label-value-long-multibyte", _meta(labels={"k": "é" * 32}), None),
    ("messages", "label-value-long-and-bad", _meta(labels={"k": "-" * 64}), None),
    ("messages", "annotation-key-bad-prefix", _meta(annotations={"Bad_Prefix/x": "y"}), None),
    ("messages", "finalizer-bad", _meta(finalizers=["a/b/c"]), None),
    # updates keeping a mistyped value a rule reads: the type error ratchets, the conversion error does not
    (
        "ratchet-cel",
        "level-string-kept",
        _g({"tier": {"level": "high", "name": "silver"}}),
        _g({"tier": {"level": "high", "name": "gold"}}),
    ),
    (
        "ratchet-cel",
        "level-float-kept",
        _g({"tier": {"level": 2.5, "name": "silver"}, "count": 4}),
        _g({"tier": {"level": 2.5, "name": "gold"}}),
    ),
    (
        "ratchet-cel",
        "flags-mistyped-unread",
        _g({"tier": {"name": "silver", "flags": ["yes"]}}),
        _g({"tier": {"name": "gold", "flags": ["yes"]}}),
    ),
    (
        "ratchet-cel",
        "ports-string-kept",
        _g({"ports": ["http"], "count": 5}),
        _g({"ports": ["http"]}),
    ),
    (
        "ratchet-cel",
        "slots-string-kept",
        _g({"slots": ["a", {"id": "x"}], "count": 6}),
        _g({"slots": ["a", {"id": "x"}]}),
    ),
    ("ratchet-cel", "count-string-kept", _g({"count": "many", "total": 1}), _g({"count": "many"})),
    (
        "ratchet-cel",
        "memory-number-kept",
        _g({"memory": 4096, "cpu": "4"}),
        _g({"memory": 4096}),
    ),
]
