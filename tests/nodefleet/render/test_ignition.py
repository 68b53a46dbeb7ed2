"""Ignition pointer builders: exact shapes, canonical userData, and readable, checked S3 keys."""

from __future__ import annotations

import base64
import json

import pytest

from nodefleet.render.ignition import (
    ca_data_url,
    hypershift_stub,
    ignition_pointer,
    merge_headers,
    pointer_key,
    s3_pointer,
    user_data,
)

CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ+ab/c=\n-----END CERTIFICATE-----\n"


def test_pointer_with_ca_and_headers() -> None:
    cfg = ignition_pointer(
        "https://api-int.dev.example.com:22623/config/worker", ca_bundle_pem=CA, headers=[("Accept", "x")]
    )
    b64 = base64.b64encode(CA.encode()).decode()
    assert cfg == {
        "ignition": {
            "version": "3.2.0",
            "config": {
                "merge": [
                    {
                        "source": "https://api-int.dev.example.com:22623/config/worker",
                        "httpHeaders": [{"name": "Accept", "value": "x"}],
                    }
                ]
            },
            "security": {
                "tls": {"certificateAuthorities": [{"source": f"data:text/plain;charset=utf-8;base64,{b64}"}]}
            },
        }
    }


def test_bare_pointer_has_no_security_and_no_headers() -> None:
    assert ignition_pointer("https://h/x") == {
        "ignition": {"version": "3.2.0", "config": {"merge": [{"source": "https://h/x"}]}}
    }


@pytest.mark.parametrize(
    ("source", "kwargs", "message"),
    [
        ("s3://b/k", {"headers": [("A", "b")]}, "only apply to http"),
        ("https://h/x", {"headers": [("A", "b")], "version": "3.0.0"}, "3.1.0"),
        ("arn:aws:s3:::b/k", {}, "3.4+"),
        ("ftp://h/x", {}, "not one Ignition fetches"),
        ("https://h/x", {"version": "2.2.0"}, "not a 3.x"),
    ],
)
def test_pointer_rejects_what_ignition_would(source: str, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ignition_pointer(source, **kwargs)  # type: ignore[arg-type]


def test_pointer_needs_a_pem_ca() -> None:
    with pytest.raises(ValueError, match="not PEM"):
        ignition_pointer("https://h/x", ca_bundle_pem="not a cert")


def test_hypershift_stub_is_token_go_shape() -> None:
    token = "2f1c4d3e-0000-4000-8000-1234567890ab"
    stub = hypershift_stub(
        "ignition-server-clusters-demo.apps.mgmt.example.com",
        token=token,
        ca_pem=CA,
        node_pool="clusters-demo/gpu-karpenter",
        config_hash="8f3a2c1d",
    )
    ign = stub["ignition"]
    assert ign["version"] == "3.2.0"
    assert set(ign) == {"version", "security", "config"}
    assert ign["security"]["tls"]["certificateAuthorities"] == [
        {"source": "data:text/plain;base64," + base64.b64encode(CA.encode()).decode()}
    ]
    (merge,) = ign["config"]["merge"]
    assert merge["source"] == "https://ignition-server-clusters-demo.apps.mgmt.example.com/ignition"
    assert merge["httpHeaders"] == [
        {"name": "Authorization", "value": "Bearer " + base64.b64encode(token.encode()).decode()},
        {"name": "NodePool", "value": "clusters-demo/gpu-karpenter"},
        {"name": "TargetConfigVersionHash", "value": "8f3a2c1d"},
    ]
    assert merge_headers(user_data(stub))["TargetConfigVersionHash"] == "8f3a2c1d"


def test_hypershift_stub_endpoint_is_a_host() -> None:
    with pytest.raises(ValueError, match="without scheme"):
        hypershift_stub("https://h", token="t", ca_pem=CA, node_pool="a/b", config_hash="c")


def test_s3_pointer_carries_nothing_that_rotates() -> None:
    cfg = s3_pointer("fleet-ignition", "nodefleet/ignition/dev/general/5.0.0/rendered-worker-1.ign")
    assert cfg == {
        "ignition": {
            "version": "3.2.0",
            "config": {
                "merge": [
                    {
                        "source": "s3://fleet-ignition/nodefleet/ignition/dev/general/5.0.0/rendered-worker-1.ign"
                    }
                ]
            },
        }
    }
    assert merge_headers(cfg) == {}


@pytest.mark.parametrize(("bucket", "key"), [("", "k"), ("a/b", "k"), ("b", ""), ("b", "/k")])
def test_s3_pointer_rejects_malformed_locations(bucket: str, key: str) -> None:
    with pytest.raises(ValueError):
        s3_pointer(bucket, key)


def test_user_data_is_canonical() -> None:
    a = {"ignition": {"version": "3.2.0", "config": {"merge": [{"source": "s3://b/k"}]}}}
    b = {"ignition": {"config": {"merge": [{"source": "s3://b/k"}]}, "version": "3.2.0"}}
    assert user_data(a) == user_data(b)
    assert user_data(a) == '{"ignition":{"config":{"merge":[{"source":"s3://b/k"}]},"version":"3.2.0"}}'
    assert json.loads(user_data(a)) == a


def test_merge_headers_of_non_ignition_userdata() -> None:
    assert merge_headers("#!/bin/bash\necho hi") == {}
    assert merge_headers('{"ignition":{"version":"3.2.0"}}') == {}


def test_ca_data_url_spellings() -> None:
    assert ca_data_url(CA).startswith("data:text/plain;charset=utf-8;base64,")
    assert ca_data_url(CA, charset=False).startswith("data:text/plain;base64,")


def test_pointer_key_names_only_drift_inputs() -> None:
    key = pointer_key(
        "nodefleet/ignition", "dev", "general", release="5.0.0-ec.2", config_version="rendered-worker-5f1c"
    )
    assert key == "nodefleet/ignition/dev/general/5.0.0-ec.2/rendered-worker-5f1c.ign"
    same = pointer_key(
        "nodefleet/ignition", "dev", "general", release="5.0.0-ec.2", config_version="rendered-worker-5f1c"
    )
    assert key == same


@pytest.mark.parametrize(
    ("prefix", "cluster", "node_class", "release", "config"),
    [
        ("p", "", "c", "4.22.3", "r"),
        ("p", "a/b", "c", "4.22.3", "r"),
        ("p", "a", "c/d", "4.22.3", "r"),
        ("p", "a", "c", "4.22/3", "r"),
        ("p", "a", "c", "4.22.3", ""),
        ("p", "a", "c", "4.22.3", ".."),
        ("", "a", "c", "4.22.3", "r"),
        ("p//q", "a", "c", "4.22.3", "r"),
        ("/p", "a", "c", "4.22.3", "r"),
        ("p", "a b", "c", "4.22.3", "r"),
    ],
)
def test_pointer_key_rejects_bad_segments(
    prefix: str, cluster: str, node_class: str, release: str, config: str
) -> None:
    with pytest.raises(ValueError, match="pointer key"):
        pointer_key(prefix, cluster, node_class, release=release, config_version=config)
