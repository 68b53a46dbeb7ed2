"""The files a render writes: every Kubernetes object of a mock run, in the provider's render layout.

The Kubernetes provider's ``renderYamlToDirectory`` writes ``<directory>/1-manifest/<file>.yaml`` per
object (``0-crd/`` for CustomResourceDefinitions), where ``<directory>`` is ``<render root>/<target>`` and
a target is one cluster's provider (a standalone cluster, a management cluster, or ``<cluster>-hosted``).
:func:`plan_render` computes the same files, with the provider's bytes, from what the program registered,
without writing anything: ``nodefleet render`` writes them (``mockruntime.render_tree``), and anything that compares
renders (tests, reports) reads them from here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import PurePosixPath
from typing import Any

from mockruntime.run import MockRun, Registration
from nodefleet.render.gitops import (
    ANNOTATION_CONTROLLER_OWNED,
    ARGOCD_IGNORE_DIFFERENCES_FILE,
    argocd_ignore_difference,
    argocd_ignore_differences_file,
    controller_owned,
    json_pointer,
)
from nodefleet.render.provider_yaml import dump_manifest
from nodefleet.render_layout import manifest_path
from nodefleet.stackfile.waves import DEFAULT_WAVE


class RenderPlanError(Exception):
    """The program's objects cannot be written as one render tree (a defect, not bad input)."""


@dataclass(frozen=True)
class ManifestFile:
    """One rendered object: its render target folder and its path and bytes inside it."""

    #: The target folder under the render root: a cluster name, or ``<cluster>-hosted``.
    target: str
    #: Path inside the target, e.g. ``1-manifest/machine.openshift.io_v1beta1-machineset-…yaml``.
    path: str
    content: bytes
    kind: str
    name: str

    @property
    def relpath(self) -> str:
        """Path under the render root, ``<target>/<path>``."""
        return f"{self.target}/{self.path}"


@dataclass(frozen=True)
class TargetFile:
    """A file of a render folder that is not a manifest: :data:`ARGOCD_IGNORE_DIFFERENCES_FILE`."""

    target: str
    name: str
    content: bytes

    @property
    def relpath(self) -> str:
        return f"{self.target}/{self.name}"


@dataclass(frozen=True)
class RenderPlan:
    files: list[ManifestFile]
    #: Every target folder the program has a provider for, even one with no objects (the provider still
    #: creates its ``0-crd/`` and ``1-manifest/`` folders when it writes; an unused target gets none).
    targets: list[str]
    #: Objects deliberately not written, as "Kind name" (Secrets: their values would be plaintext).
    skipped: list[str]
    #: One Argo CD ignoreDifferences file per folder with manifests (nodefleet.render.gitops); the provider's
    #: render mode writes none, `nodefleet render` writes them.
    target_files: list[TargetFile] = field(default_factory=list)


def _without_nulls(value: Any) -> Any:
    """The provider unmarshals inputs with ``SkipNulls``: a null property is absent, not ``null``."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value


def _is_kubernetes_object(reg: Registration) -> bool:
    return reg.custom and reg.type.startswith("kubernetes:") and not reg.type.startswith("pulumi:providers")


def kubernetes_objects(
    run: MockRun, render_dir: str
) -> Iterator[tuple[str, str, dict[str, Any], Registration]]:
    """(target, path inside it, the object as the provider receives it, its registration) for every
    Kubernetes object.

    ``render_dir`` is the stack's render directory as the program hands it to its providers; an object
    on a provider without ``renderYamlToDirectory`` (apply mode) is placed in the folder named after its
    provider, so every target cluster keeps its own folder in apply mode too.
    """
    for reg in run.registrations:
        if not _is_kubernetes_object(reg):
            continue
        manifest = _without_nulls(dict(reg.inputs))
        meta = manifest.setdefault("metadata", {})
        meta.setdefault("name", reg.name)
        yield _target_of(run, reg, render_dir), manifest_path(manifest), manifest, reg


def _target_of(run: MockRun, reg: Registration, render_dir: str) -> str:
    provider = run.provider_of(reg)
    if provider is None:
        raise RenderPlanError(
            f"{reg.type} {reg.name} has no explicit Kubernetes provider, so it has no render target"
        )
    directory = provider.inputs.get("renderYamlToDirectory")
    if not directory:
        return provider.name.removesuffix("-k8s")
    path = PurePosixPath(str(directory))
    if str(path.parent) != str(PurePosixPath(render_dir)):
        raise RenderPlanError(
            f"provider {provider.name} renders to {directory}, not to a folder of the stack's render "
            f"directory {render_dir}"
        )
    return path.name


def plan_render(run: MockRun, render_dir: str, wave: str = DEFAULT_WAVE) -> RenderPlan:
    """Every Kubernetes object ``run`` registered, as the file the provider's render mode would write.

    ``wave`` is the stack's rollout wave (``nodefleet:fleet.wave``), written into every folder's Argo CD file.

    Raises :class:`RenderPlanError` when two objects would be written to the same file: the provider
    would silently keep only the last, so a render that reports N objects always has N files.
    """
    files: list[ManifestFile] = []
    skipped: list[str] = []
    seen: dict[str, str] = {}
    ignore_differences: dict[str, list[dict[str, Any]]] = {}
    for target, path, manifest, reg in kubernetes_objects(run, render_dir):
        kind = str(manifest.get("kind"))
        name = str(manifest["metadata"]["name"])
        if kind == "Secret":
            skipped.append(f"Secret {name}")
            continue
        _check_controller_owned(reg, manifest)
        if reg.ignore_changes:
            ignore_differences.setdefault(target, []).append(
                argocd_ignore_difference(manifest, reg.ignore_changes)
            )
        file = ManifestFile(target, path, dump_manifest(manifest), kind, name)
        if file.relpath in seen:
            raise RenderPlanError(
                f"{kind} {name} and {seen[file.relpath]} would both be written to {file.relpath}"
            )
        seen[file.relpath] = f"{kind} {name}"
        files.append(file)
    targets = sorted(
        {
            reg.name.removesuffix("-k8s")
            if not reg.inputs.get("renderYamlToDirectory")
            else PurePosixPath(str(reg.inputs["renderYamlToDirectory"])).name
            for reg in run.registrations
            if reg.type == "pulumi:providers:kubernetes"
        }
        | {f.target for f in files}
    )
    target_files = [
        TargetFile(
            t,
            ARGOCD_IGNORE_DIFFERENCES_FILE,
            argocd_ignore_differences_file(ignore_differences.get(t, []), wave),
        )
        for t in sorted({f.target for f in files})
    ]
    return RenderPlan(files, targets, skipped, target_files)


def _check_controller_owned(reg: Registration, manifest: dict[str, Any]) -> None:
    """A manifest must carry every field Pulumi leaves to a controller, or the GitOps tool would fight it."""
    declared = tuple(json_pointer(p) for p in reg.ignore_changes)
    if controller_owned(manifest) != declared:
        raise RenderPlanError(
            f"{manifest.get('kind')} {manifest['metadata'].get('name')} leaves {list(declared) or 'nothing'} "
            f"to a controller (ignore_changes) but its {ANNOTATION_CONTROLLER_OWNED} annotation lists "
            f"{list(controller_owned(manifest)) or 'nothing'}: Argo CD and Flux would re-apply those fields. "
            "Build the object with components.kubernetes.custom_resource"
        )
