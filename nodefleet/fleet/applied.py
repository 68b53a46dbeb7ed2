"""Has the GitOps tool applied a commit? What Flux and Argo CD report on the objects that apply a render folder.

``fleet upgrade --push`` pushes a step's commit and waits, before the step's gate, until every Flux
Kustomization or Argo CD Application of the step's render folders (their names:
:attr:`nodefleet.render.wiring.Folder.application`) reports that commit applied and healthy:

- **Flux** (kustomize-controller, ``kustomize.toolkit.fluxcd.io/v1``): ``status.lastAppliedRevision`` is the
  commit, written ``<branch>@sha1:<sha>`` (Flux 2.x; ``<branch>/<sha>`` before), and the ``Ready`` condition is
  ``True`` for the object's current generation (with ``wait: true``, as the generated Kustomizations have it,
  Ready means applied and healthy);
- **Argo CD** (``argoproj.io/v1alpha1`` Application): ``status.sync.revision`` (``status.sync.revisions`` for a
  multi-source Application) is the commit, ``status.sync.status`` is ``Synced``, ``status.health.status`` is
  ``Healthy`` and no sync is running. ``Synced`` is a comparison, not an apply: with the ApplicationSet's
  RollingSync (how ``nodefleet gitops`` wires the waves) an Application whose step has not started is compared
  at the new commit as well. So an Application an ApplicationSet with RollingSync generated (its owner) counts as
  applied only when that ApplicationSet's ``status.applicationStatus`` reports it ``Healthy`` for the commit
  (``targetRevisions``): the ApplicationSet controller sets that only after the step reached it, synced it if it
  was out of sync, and saw it Healthy (argo-cd v3.6, ``applicationset/progressivesync``).

A revision newer than the commit (a later commit on the branch, which contains it) counts as applied: the
caller says which commits contain it. These functions only read the objects: polling them is ``cli/``'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "APPLIED",
    "WAITING",
    "Reading",
    "argocd_application",
    "flux_kustomization",
    "owning_application_set",
    "revision_sha",
]

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


def owning_application_set(obj: Mapping[str, Any]) -> str | None:
    """The name of the ApplicationSet that generated an Application (its owner reference), or None."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or []:
        if isinstance(ref, Mapping) and ref.get("kind") == "ApplicationSet" and ref.get("name"):
            return str(ref["name"])
    return None


def _rollout(
    appset: Mapping[str, Any] | str | None, name: str, sha: str, contains: Callable[[str], bool] | None
) -> str:
    """Why the ApplicationSet's RollingSync has not reached Application ``name`` at ``sha``; "" when it has (or
    the ApplicationSet does not roll out step by step)."""
    if appset is None:
        return ""
    if isinstance(appset, str):  # could not be read
        return f"its ApplicationSet {appset}"
    if ((appset.get("spec") or {}).get("strategy") or {}).get("type") != "RollingSync":
        return ""
    label = f"ApplicationSet {(appset.get('metadata') or {}).get('name', '')}"
    for entry in (appset.get("status") or {}).get("applicationStatus") or []:
        if not isinstance(entry, Mapping) or entry.get("application") != name:
            continue
        status, step = str(entry.get("status") or "Unknown"), entry.get("step", "?")
        at = [str(r).lower() for r in entry.get("targetRevisions") or []]
        if status == "Healthy" and any(_matches(r, sha, contains) for r in at):
            return ""
        where = ", ".join(r[:12] for r in at) or "no revision"
        return f"the {label} reports its RollingSync step {step} {status} at {where}"
    return f"the {label} does not report it in its RollingSync status yet"


def argocd_application(
    obj: Mapping[str, Any],
    what: str,
    sha: str,
    contains: Callable[[str], bool] | None = None,
    appset: Mapping[str, Any] | str | None = None,
) -> Reading:
    """An Argo CD Application against the commit ``sha``. ``appset``: the ApplicationSet that owns it
    (:func:`owning_application_set`) as read, or a sentence saying why it could not be read; None when it has
    no owner."""
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
    if obj.get("operation") or operation.get("phase") in ("Running", "Terminating"):
        return Reading(what, WAITING, f"compares Synced at {sha[:12]}, but a sync is still running ({at})")
    name = str((obj.get("metadata") or {}).get("name") or "")
    pending = _rollout(appset, name, sha, contains)
    if pending:
        return Reading(
            what, WAITING, f"compares Synced and Healthy at {sha[:12]}, but is not applied yet: {pending}"
        )
    return Reading(what, APPLIED, f"synced {sha}, Synced and Healthy")
