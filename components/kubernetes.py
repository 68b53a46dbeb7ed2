"""The Kubernetes provider each cluster's objects go through: a live cluster, or a render directory."""

from __future__ import annotations

import os
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from nodefleet.render.gitops import with_controller_owned, with_deletion_protection
from nodefleet.stackfile.model import OutputSettings
from nodefleet.stackfile.paths import PathError, check_folder_name, render_directory

#: The project directory (this package's parent): where a relative render directory starts.
PROJECT_DIR = Path(__file__).resolve().parent.parent

#: The providers :func:`cluster_provider` made in render mode: objects declared through them are written for a
#: GitOps tool, and :func:`custom_resource` marks the ones whose deletion destroys capacity.
_RENDER_PROVIDERS: weakref.WeakSet[k8s.Provider] = weakref.WeakSet()

#: Per apply-mode provider, the live objects the stack adopts through it (``output.adopt``), by (group, kind,
#: namespace, name): their import IDs.
_ADOPTING: weakref.WeakKeyDictionary[k8s.Provider, Mapping[tuple[str, str, str, str], str]] = (
    weakref.WeakKeyDictionary()
)


def cluster_provider(
    target: str,
    stack: str,
    output: OutputSettings,
    kubeconfig: str | None = None,
    opts: pulumi.ResourceOptions | None = None,
    adopting: Mapping[tuple[str, str, str, str], str] | None = None,
) -> k8s.Provider:
    """One provider per target cluster (a standalone cluster, a management cluster, or a hosted cluster).

    In render mode every object is written under ``<directory>/<target>`` for Argo CD or Flux instead of
    being applied; the policy pack forbids Secrets with data on such a provider, because the provider would
    write their values in plaintext. The directory obeys the same containment rule as configuration
    validation and ``nodefleet render`` (:func:`nodefleet.stackfile.paths.render_directory`): whoever builds a
    provider, it never writes outside the project or an operator-allowed root.

    In apply mode ``adopting`` holds the import IDs of the live objects the stack adopts through this provider
    (``output.adopt``, by group, kind, namespace and name): :func:`adopted` gives them Pulumi's ``import`` option.
    """
    if output.mode == "render":
        try:
            check_folder_name(target)
            root = render_directory(output.directory, stack, project_dir=PROJECT_DIR, environ=os.environ)
        except PathError as e:
            raise pulumi.RunError(
                f"output.directory of stack {stack}, render folder {target!r}: {e}"
            ) from None
        provider = k8s.Provider(f"{target}-k8s", render_yaml_to_directory=f"{root.text}/{target}", opts=opts)
        _RENDER_PROVIDERS.add(provider)
        return provider
    provider = k8s.Provider(f"{target}-k8s", kubeconfig=kubeconfig or output.kubeconfig, opts=opts)
    if adopting:
        _ADOPTING[provider] = dict(adopting)
    return provider


def adopted(manifest: dict[str, Any], opts: pulumi.ResourceOptions) -> pulumi.ResourceOptions:
    """``opts``, with Pulumi's ``import`` option when the stack adopts this object through this provider
    (``output.adopt``, :func:`nodefleet.stackfile.adopt.import_ids`): the engine reads the live object into its
    state instead of creating it. Once the object is in the state the engine ignores the option (the ID it
    recorded is the same), so it stays harmless on every later ``up``."""
    ids = _ADOPTING.get(opts.provider) if isinstance(opts.provider, k8s.Provider) else None
    if not ids:
        return opts
    meta = manifest["metadata"]
    group = manifest["apiVersion"].rpartition("/")[0]
    import_id = ids.get((group, manifest["kind"], meta.get("namespace") or "", meta["name"]))
    return (
        pulumi.ResourceOptions.merge(opts, pulumi.ResourceOptions(import_=import_id)) if import_id else opts
    )


def custom_resource(
    name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    """A Kubernetes object from its rendered manifest.

    Fields the options leave to a controller (``ignore_changes``) are also listed on the object, in the
    ``nodefleet.io/controller-owned`` annotation (:mod:`nodefleet.render.gitops`): in render mode the manifest is all
    a GitOps tool sees, and without it Argo CD or Flux would re-apply nodefleet's initial value on every sync.

    Through a render-mode provider, an object whose deletion destroys capacity (a HostedCluster, a NodePool, a
    MachineSet, a node class) also carries the annotations that keep Argo CD and Flux from ever deleting or
    pruning it (:func:`nodefleet.render.gitops.with_deletion_protection`).
    """
    manifest = with_controller_owned(manifest, list(opts.ignore_changes or []))
    if opts.provider is not None and opts.provider in _RENDER_PROVIDERS:
        manifest = with_deletion_protection(manifest)
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=adopted(manifest, opts),
    )
