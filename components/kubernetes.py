"""The Kubernetes provider each cluster's objects go through: a live cluster, or a render directory."""

from __future__ import annotations

from typing import Any

import pulumi
import pulumi_kubernetes as k8s

from nodefleet.config import OutputSettings


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
    write their values in plaintext.
    """
    if output.mode == "render":
        directory = f"{output.directory.replace('{stack}', stack)}/{target}"
        return k8s.Provider(f"{target}-k8s", render_yaml_to_directory=directory, opts=opts)
    return k8s.Provider(f"{target}-k8s", kubeconfig=kubeconfig or output.kubeconfig, opts=opts)


def custom_resource(
    name: str, manifest: dict[str, Any], opts: pulumi.ResourceOptions
) -> k8s.apiextensions.CustomResource:
    return k8s.apiextensions.CustomResource(
        name,
        api_version=manifest["apiVersion"],
        kind=manifest["kind"],
        metadata=manifest["metadata"],
        spec=manifest["spec"],
        opts=opts,
    )
