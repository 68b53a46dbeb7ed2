"""Where the Kubernetes provider's render mode puts an object: one file per object, named from the object.

``renderYamlToDirectory`` writes ``<directory>/0-crd/`` (CustomResourceDefinitions) and
``<directory>/1-manifest/`` (everything else), each object in ``<apiVersion>-<kind lowercased>-<namespace or
"default">-<name>.yaml`` with ``/`` and ``:`` in the apiVersion replaced by ``_`` (pulumi-kubernetes
``provider/pkg/provider/provider.go``, ``renderPathForResource``). The render command, anything that reads a
previous render back and the policies that look for the last rendered copy of an object all name files with
this one function.

The render directory itself is the stack's ``output.directory`` (:func:`nodefleet.stackfile.paths.render_directory`);
whoever writes a render (``nodefleet render``, the provider) and whoever reads the last one back
(``forecast``, ``fleet forecast``, the policies' transition checks) finds a target's files in
:func:`target_folder` of it.

A stack renders each *target* (a provider: a standalone cluster, a hosted cluster's management side, or its
``<cluster>-hosted`` side) into its own folder under the render directory; :func:`render_targets` names them,
so the configuration can refuse two clusters whose folders would coincide.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

CRD_DIR = "0-crd"
MANIFEST_DIR = "1-manifest"
LAYOUT_DIRS = (CRD_DIR, MANIFEST_DIR)
#: Suffix of the folder (and provider) for the objects that live inside a hosted cluster.
HOSTED_SUFFIX = "-hosted"


def manifest_path(manifest: Mapping[str, Any]) -> str:
    """``1-manifest/<file>.yaml`` (or ``0-crd/…``) for ``manifest``, relative to its render directory."""
    meta = manifest.get("metadata") or {}
    kind = str(manifest.get("kind", ""))
    folder = CRD_DIR if kind == "CustomResourceDefinition" else MANIFEST_DIR
    api = str(manifest.get("apiVersion", "")).replace("/", "_").replace(":", "_")
    return f"{folder}/{api}-{kind.lower()}-{meta.get('namespace') or 'default'}-{meta.get('name')}.yaml"


def render_targets(cluster_name: str, hosted: bool) -> tuple[str, ...]:
    """The render folders of one cluster: its own, and for a hosted cluster also ``<name>-hosted``."""
    return (cluster_name, f"{cluster_name}{HOSTED_SUFFIX}") if hosted else (cluster_name,)


def target_folder(render_directory: Path, target: str) -> Path:
    """The folder of one render target: ``<render directory>/<target>``, the provider's
    ``renderYamlToDirectory`` for that target."""
    return render_directory / target
