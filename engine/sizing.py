"""What a stack costs the real engine, per target cluster, and when to split a fleet.

Measured on a complete engine (CLI 3.259.0, its Python language host, the Kubernetes provider): every
explicit Kubernetes provider the program declares, one per target cluster (a standalone cluster; a hosted
cluster's management and hosted sides), runs as its own ``pulumi-resource-kubernetes`` process during
preview and update, about 140 MB each; a stack of 100 standalone clusters ran 100 of them, 14 GB peak RSS.
``bench/engine.py`` re-measures this wherever the engine is complete.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

#: Peak resident memory of one Kubernetes provider process during preview, measured (MB).
PROVIDER_RSS_MB = 140
#: Providers above which ``check`` warns: about 4.2 GB of provider processes, which with the CLI, the
#: language host, the program and the policy pack still fits an 8 GB CI runner.
DEFAULT_MAX_PROVIDERS = 30
MAX_PROVIDERS_ENV = "NODEFLEET_MAX_PROVIDERS"
PROVIDER_TYPE = "pulumi:providers:kubernetes"


class _Registration(Protocol):
    type: str


def kubernetes_providers(registrations: Iterable[_Registration]) -> int:
    """Kubernetes provider resources a program run registered: the provider processes the engine starts."""
    return sum(1 for r in registrations if r.type == PROVIDER_TYPE)


def max_providers(option: int | None) -> int:
    """The limit: the command-line option, else ``$NODEFLEET_MAX_PROVIDERS``, else the default.

    Raises ValueError with a complete message when the environment variable is not a positive whole number.
    """
    if option is not None:
        return option
    raw = os.environ.get(MAX_PROVIDERS_ENV, "").strip()
    if not raw:
        return DEFAULT_MAX_PROVIDERS
    if not raw.isdigit() or int(raw) < 1:
        raise ValueError(
            f"{MAX_PROVIDERS_ENV}={raw!r}: not a positive whole number; set the most Kubernetes providers "
            f"one stack may run, e.g. {MAX_PROVIDERS_ENV}={DEFAULT_MAX_PROVIDERS}, or unset it for the default"
        )
    return int(raw)


def fleet_size_warning(providers: int, limit: int) -> str | None:
    """The advisory when a stack would run more provider processes than the limit, else None."""
    if providers <= limit:
        return None
    gb = providers * PROVIDER_RSS_MB / 1000
    return (
        f"{providers} Kubernetes providers (one per target cluster): the engine runs each as its own process, "
        f"about {PROVIDER_RSS_MB} MB (~{gb:.1f} GB at preview), above the limit of {limit} "
        f"(--max-providers or {MAX_PROVIDERS_ENV}). Split the fleet into smaller stacks, one per cluster or "
        "per group of clusters rolled out together (docs/engine.md, 'Fleet size')."
    )
