"""The files a render writes: every Kubernetes object of a mock run, in the provider's render layout.

The Kubernetes provider's ``renderYamlToDirectory`` writes ``<directory>/1-manifest/<file>.yaml`` per
object (``0-crd/`` for CustomResourceDefinitions). :func:`plan_render` computes the same files, with their
bytes, from what the program registered, without writing anything: ``nodefleet render`` writes them, and
anything that compares renders (tests, reports) reads them from here.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml

from harness.mockrun import MockRun
from nodefleet.render_layout import manifest_path

SECRET_TOKEN = "kubernetes:core/v1:Secret"


@dataclass(frozen=True)
class ManifestFile:
    """One rendered object: the render target it belongs to and its path and bytes inside it."""

    #: The provider's ``renderYamlToDirectory`` (relative to the project unless absolute).
    target: str
    #: Path inside ``target``, e.g. ``1-manifest/machine.openshift.io_v1beta1-machineset-…yaml``.
    path: str
    content: bytes
    kind: str
    name: str


@dataclass(frozen=True)
class RenderPlan:
    files: list[ManifestFile]
    #: Objects deliberately not written, as "Kind name" (Secrets: their values would be plaintext).
    skipped: list[str]


def plan_render(run: MockRun, default_target: str) -> RenderPlan:
    """Every Kubernetes object ``run`` registered, as the file the provider's render mode would write.

    Objects on a provider without ``renderYamlToDirectory`` (apply mode) go to ``default_target`` joined
    with the provider's resource name, so each target cluster keeps its own folder.
    """
    files: list[ManifestFile] = []
    skipped: list[str] = []
    for reg in run.registrations:
        if (
            not reg.custom
            or not reg.type.startswith("kubernetes:")
            or reg.type.startswith("pulumi:providers")
        ):
            continue
        meta = reg.inputs.get("metadata") or {}
        name = str(meta.get("name") or reg.name)
        if reg.type == SECRET_TOKEN:
            skipped.append(f"Secret {name}")
            continue
        provider = run.provider_of(reg)
        target = (provider.inputs.get("renderYamlToDirectory") if provider else None) or (
            f"{default_target}/{provider.name.removesuffix('-k8s')}" if provider else default_target
        )
        manifest: dict[str, Any] = {
            key: reg.inputs[key] for key in ("apiVersion", "kind", "metadata", "spec") if key in reg.inputs
        }
        file = manifest_path({**manifest, "metadata": {**meta, "name": name}})
        content = yaml.safe_dump(manifest, sort_keys=False).encode()
        files.append(ManifestFile(str(target), file, content, str(manifest["kind"]), name))
    return RenderPlan(files, skipped)
