"""Where the Kubernetes provider's render mode puts an object: one file per object, named from the object.

``renderYamlToDirectory`` writes ``<directory>/0-crd/`` (CustomResourceDefinitions) and
``<directory>/1-manifest/`` (everything else), each object in ``<apiVersion with / as _>-<kind lowercased>-
<namespace or "default">-<name>.yaml``. The render command, anything that reads a previous render back and
the policies that look for the last rendered copy of an object all name files with this one function.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

CRD_DIR = "0-crd"
MANIFEST_DIR = "1-manifest"


def manifest_path(manifest: Mapping[str, Any]) -> str:
    """``1-manifest/<file>.yaml`` (or ``0-crd/…``) for ``manifest``, relative to its render directory."""
    meta = manifest.get("metadata") or {}
    kind = str(manifest.get("kind", ""))
    folder = CRD_DIR if kind == "CustomResourceDefinition" else MANIFEST_DIR
    api = str(manifest.get("apiVersion", "")).replace("/", "_")
    return f"{folder}/{api}-{kind.lower()}-{meta.get('namespace') or 'default'}-{meta.get('name')}.yaml"
