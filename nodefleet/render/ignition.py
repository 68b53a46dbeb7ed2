"""Ignition configs that point somewhere else: the small stubs that go into EC2 userData.

A node's userData should carry only what identifies *which* configuration it boots, never what rotates
(bearer tokens, CA bundles), because Karpenter hashes ``EC2NodeClass.spec.userData`` and replaces every
node when a byte of it changes. The builders here produce the three pointer shapes nodefleet deals with:

* :func:`ignition_pointer`: a generic ``ignition.config.merge`` pointer with optional CA and headers;
* :func:`hypershift_stub`: the exact stub HyperShift's ``token.go`` (``ignConfig()``) writes, token inline;
* :func:`s3_pointer`: ``s3://bucket/key``, fetched with the instance role, nothing secret inline.

All default to Ignition spec 3.2.0 (what HyperShift writes and RHCOS 4.6+ reads). Facts: coreos/ignition
``docs/configuration-v3_*.md`` and ``docs/operator-notes.md``; HyperShift ``hypershift-operator/controllers/
nodepool/token.go``.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

from nodefleet.files import load_json
from nodefleet.stackfile.modelbase import key_segment, prefix_segments

__all__ = [
    "IGNITION_VERSION",
    "TARGET_CONFIG_VERSION_HASH",
    "ca_data_url",
    "hypershift_stub",
    "ignition_pointer",
    "key_segment",
    "merge_headers",
    "pointer_key",
    "prefix_segments",
    "s3_pointer",
    "user_data",
]

#: The spec version HyperShift's stub and nodefleet's pointers declare.
IGNITION_VERSION = "3.2.0"
#: The header that names the configuration a HyperShift node boots (the only part the fork carry hashes).
TARGET_CONFIG_VERSION_HASH = "TargetConfigVersionHash"

_VERSION = re.compile(r"^3\.(\d+)\.\d+(-experimental)?$")
# URL schemes a merge source may use, by minimum 3.x minor (operator-notes / configuration-v3_*.md).
_SCHEMES_SINCE = {"http": 0, "https": 0, "tftp": 0, "s3": 0, "data": 0, "gs": 2, "arn": 4}


def _minor(version: str) -> int:
    m = _VERSION.match(version)
    if not m:
        raise ValueError(f"Ignition version '{version}' is not a 3.x spec version (e.g. 3.2.0)")
    return int(m.group(1))


def ca_data_url(pem: str, *, charset: bool = True) -> str:
    """A PEM bundle as an Ignition ``data:`` URL (base64, so newlines and ``+`` survive).

    ``charset=False`` gives HyperShift's spelling, ``data:text/plain;base64,...``.
    """
    if "-----BEGIN" not in pem:
        raise ValueError("the CA bundle is not PEM (no '-----BEGIN' line)")
    encoded = base64.b64encode(pem.encode()).decode()
    media = "text/plain;charset=utf-8" if charset else "text/plain"
    return f"data:{media};base64,{encoded}"


def ignition_pointer(
    source: str,
    *,
    ca_bundle_pem: str | None = None,
    headers: Sequence[tuple[str, str]] = (),
    version: str = IGNITION_VERSION,
) -> dict[str, Any]:
    """An Ignition config whose only content is ``config.merge[0].source`` (plus CA and headers).

    ``httpHeaders`` need spec 3.1+ and an http(s) source; the CA goes to
    ``ignition.security.tls.certificateAuthorities`` (3.0+). Raises ``ValueError`` on a combination
    Ignition would reject.
    """
    minor = _minor(version)
    scheme = source.split(":", 1)[0].lower() if ":" in source else ""
    if scheme not in _SCHEMES_SINCE:
        raise ValueError(f"merge source '{source}': scheme '{scheme}' is not one Ignition fetches")
    if minor < _SCHEMES_SINCE[scheme]:
        raise ValueError(
            f"merge source '{source}': scheme '{scheme}' needs Ignition 3.{_SCHEMES_SINCE[scheme]}+"
        )
    resource: dict[str, Any] = {"source": source}
    if headers:
        if minor < 1:
            raise ValueError("httpHeaders need Ignition spec 3.1.0 or newer")
        if scheme not in ("http", "https"):
            raise ValueError(f"httpHeaders only apply to http(s) sources, not '{scheme}'")
        resource["httpHeaders"] = [{"name": name, "value": value} for name, value in headers]
    ignition: dict[str, Any] = {"version": version, "config": {"merge": [resource]}}
    if ca_bundle_pem is not None:
        ignition["security"] = {"tls": {"certificateAuthorities": [{"source": ca_data_url(ca_bundle_pem)}]}}
    return {"ignition": ignition}


def hypershift_stub(
    endpoint: str, *, token: str, ca_pem: str, node_pool: str, config_hash: str
) -> dict[str, Any]:
    """The Ignition stub HyperShift puts in a node's userData (``token.go`` ``ignConfig()``, spec 3.2.0).

    ``endpoint`` is the ignition-server host (no scheme), ``token`` the raw token (a UUID; HyperShift
    base64-encodes it into the bearer value), ``node_pool`` ``<namespace>/<name>`` and ``config_hash`` the
    NodePool's ``ConfigGenerator.Hash()``. The optional proxy block is not modelled.
    """
    if "://" in endpoint or "/" in endpoint:
        raise ValueError(f"endpoint '{endpoint}' must be a host[:port], without scheme or path")
    bearer = base64.b64encode(token.encode()).decode()
    return {
        "ignition": {
            "version": IGNITION_VERSION,
            "security": {"tls": {"certificateAuthorities": [{"source": ca_data_url(ca_pem, charset=False)}]}},
            "config": {
                "merge": [
                    {
                        "source": f"https://{endpoint}/ignition",
                        "httpHeaders": [
                            {"name": "Authorization", "value": f"Bearer {bearer}"},
                            {"name": "NodePool", "value": node_pool},
                            {"name": TARGET_CONFIG_VERSION_HASH, "value": config_hash},
                        ],
                    }
                ]
            },
        }
    }


def s3_pointer(bucket: str, key: str) -> dict[str, Any]:
    """``merge: [{source: s3://bucket/key}]``: Ignition fetches it with the instance's IAM role (3.0+).

    No headers and no CA: S3 is reached over AWS's own TLS, and nothing that rotates is inline, so the
    userData built from this stays byte-identical until ``key`` moves.
    """
    if not bucket or "/" in bucket:
        raise ValueError(f"bucket '{bucket}' must be a bare bucket name")
    if not key or key.startswith("/"):
        raise ValueError(f"key '{key}' must be a relative object key")
    return ignition_pointer(f"s3://{bucket}/{key}")


def user_data(config: Mapping[str, Any]) -> str:
    """Canonical compact JSON of an Ignition config: equal configs always give byte-equal userData."""
    return json.dumps(config, sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def merge_headers(config: Mapping[str, Any] | str) -> dict[str, str]:
    """The ``httpHeaders`` of ``ignition.config.merge[0]`` as a dict; empty if there are none.

    Accepts a config or its JSON text (non-JSON text, e.g. a shell script, has no headers).
    """
    parsed: Any = config
    if isinstance(config, str):
        try:
            parsed = load_json(config, "userData")
        except ValueError:
            return {}
    try:
        first = parsed["ignition"]["config"]["merge"][0]
        return {str(h["name"]): str(h.get("value", "")) for h in first.get("httpHeaders") or []}
    except (KeyError, IndexError, TypeError, AttributeError):
        return {}


def pointer_key(prefix: str, cluster: str, node_class: str, *, release: str, config_version: str) -> str:
    """The S3 key of a node class's Ignition payload, naming only the inputs that should replace nodes.

    ``<prefix>/<cluster>/<node_class>/<release>/<config_version>.ign``: the same inputs always give the
    same key (the object is rewritten in place when only rotating parts change), and a new release or
    rendered config gives a new key, so the userData pointing at it changes exactly once.
    ``prefix`` may have several ``/``-separated segments; each is checked like the other arguments, which
    must be single segments (not empty, no ``/``). Raises ``ValueError`` otherwise.
    """
    parts = prefix_segments(prefix)
    tail = [
        key_segment("cluster", cluster),
        key_segment("node class", node_class),
        key_segment("release", release),
        key_segment("config version", config_version),
    ]
    return "/".join([*parts, *tail]) + ".ign"
