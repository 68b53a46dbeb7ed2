"""The Kubernetes provider each cluster's objects go through: a live cluster, or a render directory."""

from __future__ import annotations

import os
import weakref
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


def cluster_provider(
    target: str,
    stack: str,
    output: OutputSettings,
    kubeconfig: str | None = None,
    opts: pulumi.ResourceOptions | None = None,
) -> k8s.Provider:
    """One provider per target cluster (a standalone cluster, a management cluster, or a hosted cluster).

    In render mode every object is written under ``<directory>/<target>`` for Argo CD or Flux instead of
    being applied; the policy pack forbids Secrets with data on such a provider, because the provider would
    write their values in plaintext. The directory obeys the same containment rule as configuration
    validation and ``nodefleet render`` (:func:`nodefleet.stackfile.paths.render_directory`): whoever builds a
    provider, it never writes outside the project or an operator-allowed root.
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
    return k8s.Provider(f"{target}-k8s", kubeconfig=kubeconfig or output.kubeconfig, opts=opts)


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
        opts=opts,
    )
