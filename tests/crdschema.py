"""Validates manifests against the OpenAPI schemas of the shipped CRDs (``nodefleet/crds/``) with jsonschema.

An independent second opinion on the structural schema only; ``nodefleet.crd_schema`` is what the policy
pack uses, CEL rules included.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema
import yaml

from nodefleet.crdstore import CRD_DIR, SOURCES_FILE


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
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(CRD_DIR.glob("*.yaml")):
        if path.name == SOURCES_FILE:
            continue
        crd = yaml.safe_load(path.read_text())
        group, kind = crd["spec"]["group"], crd["spec"]["names"]["kind"]
        for version in crd["spec"]["versions"]:
            found[(f"{group}/{version['name']}", kind)] = _strip(version["schema"]["openAPIV3Schema"])
    return found


def validate_manifest(manifest: dict[str, Any]) -> None:
    """Raise ``jsonschema.ValidationError`` if ``manifest`` does not fit its CRD; KeyError if no CRD."""
    schema = _schemas()[(manifest["apiVersion"], manifest["kind"])]
    # The validator class directly: some CRDs use regex classes (\p{L}) that jsonschema's own meta-schema
    # check rejects, while validating instances against them works.
    jsonschema.Draft202012Validator(schema).validate(manifest)
