"""Has the GitOps tool applied a commit? What Flux and Argo CD report on the objects that apply a render folder.

``fleet upgrade --push`` pushes a step's commit and waits, before the step's gate, until every Flux
Kustomization or Argo CD Application of the step's render folders (their names:
:attr:`nodefleet.render.wiring.Folder.application`) reports that commit applied and healthy:

- **Flux** (kustomize-controller, ``kustomize.toolkit.fluxcd.io/v1``): ``status.lastAppliedRevision`` is the
  commit, written ``<branch>@sha1:<sha>`` (Flux 2.x; ``<branch>/<sha>`` before), and the ``Ready`` condition is
  ``True`` for the object's current generation (with ``wait: true``, as the generated Kustomizations have it,
  Ready means applied and healthy);
- **Argo CD** (``argoproj.io/v1alpha1`` Application): ``status.sync.revision`` (``status.sync.revisions`` for a
  multi-source Application) is the commit, ``status.sync.status`` is ``Synced`` and ``status.health.status`` is
  ``Healthy``.

A revision newer than the commit (a later commit on the branch, which contains it) counts as applied: the
caller says which commits contain it. These functions only read the objects: polling them is ``cli/``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["APPLIED", "WAITING", "Reading", "argocd_application", "flux_kustomization", "revision_sha"]

APPLIED, WAITING = "applied", "waiting"


@dataclass(frozen=True)
class Reading:
    """One object as read: ``Kustomization flux-system/nodefleet-edge-edge``, whether it applied, and what it says."""

    what: str
    state: str
    account: str

    @property
    def line(self) -> str:
        return f"{self.what}: {self.account}"


def revision_sha(revision: str) -> str:
    """The commit of a Flux revision: ``main@sha1:<sha>`` (Flux 2), ``main/<sha>`` (before), or a bare sha."""
    text = revision.strip()
    for sep in (":", "/", "@"):
        if sep in text:
            text = text.rsplit(sep, 1)[1]
    return text.lower()


def _conditions(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, Mapping)}


def _said(condition: Mapping[str, Any]) -> str:
    return ": ".join(str(p)[:300] for p in (condition.get("reason"), condition.get("message")) if p)


def _matches(found: str, sha: str, contains: Callable[[str], bool] | None) -> bool:
    if not found:
        return False
    return found == sha or (contains is not None and contains(found))


def flux_kustomization(
    obj: Mapping[str, Any], what: str, branch: str, sha: str, contains: Callable[[str], bool] | None = None
) -> Reading:
    """A Flux Kustomization against the commit ``sha`` of ``branch``; ``contains(other)`` says whether commit
    ``other`` contains ``sha`` (a later commit of the branch)."""
    status = obj.get("status") or {}
    applied = str(status.get("lastAppliedRevision") or "")
    ready = _conditions(obj).get("Ready") or {}
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    said = f"Ready={ready.get('status', 'Unknown')}" + (f" ({_said(ready)})" if _said(ready) else "")
    at = f"lastAppliedRevision {applied or 'none yet'}"
    if not _matches(revision_sha(applied), sha, contains):
        return Reading(what, WAITING, f"has not applied {branch}@sha1:{sha} yet ({at}; {said})")
    if generation is not None and observed is not None and observed != generation:
        return Reading(
            what, WAITING, f"applied it, but has not reconciled its generation {generation} yet ({said})"
        )
    if ready.get("status") != "True":
        return Reading(what, WAITING, f"applied it, but is not Ready ({said})")
    return Reading(what, APPLIED, f"applied {applied}, Ready")


def argocd_application(
    obj: Mapping[str, Any], what: str, sha: str, contains: Callable[[str], bool] | None = None
) -> Reading:
    """An Argo CD Application against the commit ``sha``."""
    status = obj.get("status") or {}
    sync = status.get("sync") or {}
    health = (status.get("health") or {}).get("status") or "Unknown"
    revisions = [str(sync.get("revision") or "")] + [str(r) for r in sync.get("revisions") or []]
    synced = str(sync.get("status") or "Unknown")
    operation = status.get("operationState") or {}
    failed = ""
    if operation.get("phase") in ("Failed", "Error"):
        failed = f"; its last sync {operation.get('phase')}: {str(operation.get('message') or '')[:300]}"
    at = f"sync.revision {revisions[0] or 'none yet'}, {synced}, health {health}{failed}"
    if not any(_matches(r.lower(), sha, contains) for r in revisions if r):
        return Reading(what, WAITING, f"has not synced {sha} yet ({at})")
    if synced != "Synced" or health != "Healthy":
        return Reading(what, WAITING, f"synced it, but is not Synced and Healthy ({at})")
    return Reading(what, APPLIED, f"synced {sha}, Synced and Healthy")
