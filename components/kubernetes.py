"""The Kubernetes provider each cluster's objects go through: a live cluster, or a render directory."""

from __future__ import annotations

import pulumi
import pulumi_kubernetes as k8s

from nodefleet.config import OutputSettings


def cluster_provider(
    cluster: str, stack: str, output: OutputSettings, opts: pulumi.ResourceOptions | None = None
) -> k8s.Provider:
    """One provider per cluster, so a fleet stack can address many clusters.

    In render mode every object is written under ``<directory>/<cluster>`` for Argo CD or Flux instead of
    being applied; the policy pack forbids Secrets with data on such a provider, because the provider would
    write their values in plaintext.
    """
    if output.mode == "render":
        directory = f"{output.directory.replace('{stack}', stack)}/{cluster}"
        return k8s.Provider(f"{cluster}-k8s", render_yaml_to_directory=directory, opts=opts)
    return k8s.Provider(f"{cluster}-k8s", kubeconfig=output.kubeconfig, opts=opts)
