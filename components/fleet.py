"""Reads a fleet stack's configuration and builds every cluster in it."""

from __future__ import annotations

from pathlib import Path

import pulumi

from components.kubernetes import cluster_provider
from components.standalone import StandaloneCluster, StandaloneClusterArgs
from nodefleet.config import ConfigError, Fleet, load_fleet


def load_stack_fleet(project_dir: Path) -> Fleet:
    """This stack's validated ``nodefleet:fleet``; invalid config stops before anything is registered."""
    raw = pulumi.Config("nodefleet").get_object("fleet")
    try:
        return load_fleet(raw, pulumi.get_stack(), project_dir)
    except ConfigError as e:
        # RunError prints the message alone, without a Python traceback.
        raise pulumi.RunError(str(e)) from None


def build_fleet(fleet: Fleet) -> dict[str, StandaloneCluster]:
    built = {}
    for resolved in fleet.clusters:
        name = resolved.config.name
        provider = cluster_provider(name, fleet.stack, fleet.config.output)
        built[name] = StandaloneCluster(name, StandaloneClusterArgs(resolved, provider))
    return built
