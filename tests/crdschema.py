"""Validates manifests against the OpenAPI schemas of the shipped CRDs (``nodefleet/crds/``) with jsonschema.

An independent second opinion on the structural schema only; ``nodefleet.apiserver.schema`` is what the policy
pack uses, CEL rules included. A Karpenter object is checked against the set its ``nodefleet.io/karpenter``
annotation names (or ``karpenter``, or the shipped default), as the policy picks it.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema

from nodefleet.apiserver.store import CrdVersion, load_index


def _strip(schema: Any) -> Any:
    """OpenAPI v3 to JSON Schema: drop the Kubernetes extensions (CEL rules are not checked here)."""
    if isinstance(schema, dict):
        out = {k: _strip(v) for k, v in schema.items() if not k.startswith("x-kubernetes-")}
        if schema.get("x-kubernetes-preserve-unknown-fields") and "properties" not in schema:
            out.setdefault("type", "object")
        return out
    if isinstance(schema, list):
        return [_strip(v) for v in schema]
    return schema


@cache
def _validator(file: str, api_version: str) -> jsonschema.Draft202012Validator:
    crd = next(v for v in load_index().all_versions() if v.crd.file == file and v.api_version == api_version)
    # The validator class directly: some CRDs use regex classes (\p{L}) that jsonschema's own meta-schema
    # check rejects, while validating instances against them works.
    return jsonschema.Draft202012Validator(_strip(dict(crd.schema)))


def crd_of(manifest: dict[str, Any], karpenter: str | None = None) -> CrdVersion:
    """The shipped CRD ``manifest`` is judged by; KeyError if none is shipped for its kind."""
    found = load_index().for_manifest(
        f"kubernetes:{manifest['apiVersion']}:{manifest['kind']}", manifest, karpenter
    )
    if found is None:
        raise KeyError((manifest["apiVersion"], manifest["kind"]))
    return found.crd


def validate_manifest(manifest: dict[str, Any], karpenter: str | None = None) -> None:
    """Raise ``jsonschema.ValidationError`` if ``manifest`` does not fit its CRD; KeyError if no CRD."""
    crd = crd_of(manifest, karpenter)
    _validator(crd.crd.file, crd.api_version).validate(manifest)


def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    """(apiVersion, kind) -> JSON schema of every per-kind CRD and of the default Karpenter set."""
    index = load_index()
    found: dict[tuple[str, str], dict[str, Any]] = {}
    for v in index.all_versions():
        key = (v.api_version, v.crd.kind)
        if index.is_karpenter_kind(*key) and index.for_object(*key) is not v:
            continue
        found[key] = _strip(dict(v.schema))
    return found
