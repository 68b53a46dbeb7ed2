"""What a stack costs the real engine, per target cluster, and when to split a fleet.

Measured on the engine built from source (``python -m bench.engine``, docs/measurements.md): every explicit
Kubernetes provider the program declares, one per target cluster (a standalone cluster; a hosted cluster's
management and hosted sides), runs as its own ``pulumi-resource-kubernetes`` process during preview and
update. Each shows about 140 MB resident, but about 120 MB of that is the provider binary's pages, which
every provider process shares: the memory a stack really takes grows by the private part, about 17 MB a
provider. A stack of 100 standalone clusters held 2.4 GB at its peak, the CLI, program and pack included
(the sum of each process's RSS, 14 GB, counts the shared binary 100 times).
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Protocol

#: Pages of the provider binary resident during preview, shared by every provider process (MB, measured).
PROVIDER_SHARED_MB = 120
#: Private (anonymous) memory of one provider process at its peak during preview (MB, measured).
PROVIDER_PRIVATE_MB = 17
#: CPU one provider process takes to start and serve a preview of its cluster's objects (s, measured).
PROVIDER_CPU_S = 0.13
#: Providers above which ``check`` warns. Memory is not what limits a stack (100 providers: about 1.8 GB);
#: time and blast radius are: 30 providers are about 4 s of CPU before a preview has judged one object,
#: and a stack that large previews, fails and rolls back as one.
DEFAULT_MAX_PROVIDERS = 30
MAX_PROVIDERS_ENV = "NODEFLEET_MAX_PROVIDERS"
PROVIDER_TYPE = "pulumi:providers:kubernetes"


class _Registration(Protocol):
    type: str


def kubernetes_providers(registrations: Iterable[_Registration]) -> int:
    """Kubernetes provider resources a program run registered: the provider processes the engine starts."""
    return sum(1 for r in registrations if r.type == PROVIDER_TYPE)


def provider_memory_mb(providers: int) -> int:
    """The memory ``providers`` provider processes hold at once: the shared binary once, the private part each."""
    return PROVIDER_SHARED_MB + providers * PROVIDER_PRIVATE_MB if providers else 0


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
    gb = provider_memory_mb(providers) / 1000
    cpu = providers * PROVIDER_CPU_S
    return (
        f"{providers} Kubernetes providers (one per target cluster): the engine runs each as its own process "
        f"(~{cpu:.0f} s of CPU and ~{gb:.1f} GB for all of them at preview), above the limit of {limit} "
        f"(--max-providers or {MAX_PROVIDERS_ENV}). Split the fleet into smaller stacks, one per cluster or "
        "per group of clusters rolled out together (docs/engine.md, 'Fleet size')."
    )
