"""Waiting until Flux or Argo CD reports a pushed commit applied, through the kubeconfig of the cluster they run on.

``fleet upgrade --push`` calls :func:`wait_applied` after each step's push, before the step's gate: the gate must
judge the clusters with the step applied, not a second after a commit nothing has read yet. The objects read are
the step's render folders' own Kustomizations or Applications (:func:`targets`, named as ``nodefleet gitops``
names them), and the ApplicationSet that generated an Application (its RollingSync status), judged by
:mod:`nodefleet.fleet.applied`. It polls until every one reports the commit applied and
healthy, or ``timeout`` seconds have gone; then it says, per object, what it reports.

Usable on its own::

    from cli.gitops_wait import targets, wait_applied
    verdict = wait_applied(kubeconfig, targets("flux", folders), "nodefleet-rendered", sha, timeout=600)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from cli.exits import InputError
from nodefleet.fleet.applied import (
    APPLIED,
    WAITING,
    Reading,
    argocd_application,
    flux_kustomization,
    owning_application_set,
)
from nodefleet.render.wiring import Folder

__all__ = ["TOOLS", "Target", "Waited", "targets", "wait_applied"]

TOOLS = ("flux", "argocd", "both")
#: Seconds between two reads while waiting: the first after :data:`FIRST_POLL_SECONDS`, then twice as long
#: each time up to this.
POLL_SECONDS = 5.0
FIRST_POLL_SECONDS = 0.25


@dataclass(frozen=True)
class Target:
    """One object that applies a render folder: a Flux Kustomization or an Argo CD Application."""

    kind: str  # Kustomization or Application
    namespace: str
    name: str

    @property
    def what(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name}"


@dataclass(frozen=True)
class Waited:
    """The outcome: ``applied`` True when every object reported the commit; ``lines`` one per object."""

    applied: bool
    lines: tuple[str, ...]
    readings: tuple[Reading, ...] = ()


def targets(
    tool: str,
    folders: Iterable[Folder],
    flux_namespace: str = "flux-system",
    argocd_namespace: str = "argocd",
) -> list[Target]:
    """The Kustomizations (``flux``), Applications (``argocd``) or both of ``folders``, in folder order."""
    out = []
    for folder in folders:
        if tool in ("flux", "both"):
            out.append(Target("Kustomization", flux_namespace, folder.application))
        if tool in ("argocd", "both"):
            out.append(Target("Application", argocd_namespace, folder.application))
    return out


_API = {
    "Kustomization": ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations"),
    "Application": ("argoproj.io", "v1alpha1", "applications"),
    "ApplicationSet": ("argoproj.io", "v1alpha1", "applicationsets"),
}


def brief(text: str, limit: int = 300) -> str:
    """``text`` at most ``limit`` characters, cut at a word with an ellipsis (never mid-word)."""
    if len(text) <= limit:
        return text
    cut = text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:([")
    return cut + " …"


def _read(api: Any, target: Target, timeout: float | None = None) -> dict[str, Any] | str:
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from nodefleet.files import redact

    group, version, plural = _API[target.kind]
    options: dict[str, Any] = {"_request_timeout": timeout} if timeout else {}
    try:
        found = client.CustomObjectsApi(api).get_namespaced_custom_object(
            group, version, target.namespace, plural, target.name, **options
        )
    except ApiException as exc:
        if exc.status == 404:
            return "not found (is the wiring from `nodefleet gitops` applied?)"
        return f"cannot be read: the GitOps cluster answered {exc.status} {exc.reason}"
    except Exception as exc:  # urllib3's connection errors share no base worth naming
        return f"cannot be read: the GitOps cluster is out of reach ({brief(redact(str(exc)))})"
    return found if isinstance(found, dict) else "cannot be read: not an object"


def read_once(
    api: Any, wanted: Sequence[Target], branch: str, sha: str, contains: Callable[[str], bool] | None
) -> list[Reading]:
    out = []
    appsets: dict[tuple[str, str], dict[str, Any] | str] = {}  # each owner read once per round
    for target in wanted:
        obj = _read(api, target)
        if isinstance(obj, str):
            out.append(Reading(target.what, WAITING, obj))
        elif target.kind == "Kustomization":
            out.append(flux_kustomization(obj, target.what, branch, sha, contains))
        else:
            owner = owning_application_set(obj)
            appset: dict[str, Any] | str | None = None
            if owner is not None:
                key = (target.namespace, owner)
                if key not in appsets:
                    found = _read(api, Target("ApplicationSet", target.namespace, owner))
                    appsets[key] = found if isinstance(found, dict) else f"{target.namespace}/{owner} {found}"
                appset = appsets[key]
            out.append(argocd_application(obj, target.what, sha, contains, appset))
    return out


def unreadable(kubeconfig: str | None, wanted: Sequence[Target], timeout: float) -> list[str]:
    """Before anything is pushed: each of ``wanted`` that cannot be read now (the GitOps cluster out of reach,
    refusing the kubeconfig's user, the object not there), one line each; empty when every one can be read.
    Each read is bounded by ``timeout`` seconds."""
    from cli.kube import api_client

    api = api_client(kubeconfig, "the GitOps cluster (gitops.kubeconfig, --gitops-kubeconfig)")
    try:
        lines = []
        for target in wanted:
            found = _read(api, target, timeout)
            if isinstance(found, str):
                lines.append(f"{target.what}: {found}")
                if "out of reach" in found:
                    break  # the others would say the same
        return lines
    finally:
        api.close()


def wait_applied(
    kubeconfig: str | None,
    wanted: Sequence[Target],
    branch: str,
    sha: str,
    timeout: float,
    *,
    contains: Callable[[str], bool] | None = None,
    waiting: Callable[[list[Reading]], None] | None = None,
    poll: float = POLL_SECONDS,
) -> Waited:
    """Read ``wanted`` until every one reports commit ``sha`` of ``branch`` applied, at most ``timeout`` seconds.

    ``waiting`` is called after each read that was not yet all applied (to print progress). An unusable
    kubeconfig is an :class:`InputError`; an object that cannot be read is waited for like one not applied.
    """
    from cli.kube import api_client

    api = api_client(kubeconfig, "the GitOps cluster (gitops.kubeconfig, --gitops-kubeconfig)")
    deadline = time.monotonic() + timeout
    pause = min(FIRST_POLL_SECONDS, poll)
    try:
        while True:
            readings = read_once(api, wanted, branch, sha, contains)
            if all(r.state == APPLIED for r in readings):
                return Waited(True, tuple(r.line for r in readings), tuple(readings))
            left = deadline - time.monotonic()
            if left <= 0:
                late = [r for r in readings if r.state != APPLIED]
                return Waited(False, tuple(r.line for r in late), tuple(readings))
            if waiting is not None:
                waiting(readings)
            time.sleep(min(pause, left))
            pause = min(pause * 2, poll)
    finally:
        api.close()


def check_tool(tool: str | None) -> str:
    if tool not in TOOLS:
        raise InputError(
            "--push: which GitOps tool applies the branch is not known: set gitops.tool in the fleet registry "
            "(nodefleet-fleet.yaml) or pass --gitops-tool flux|argocd|both"
        )
    return tool
