"""Whether Flux or Argo CD reports a commit applied, read as their controllers write status
(nodefleet/fleet/applied.py)."""

from __future__ import annotations

from typing import Any

from nodefleet.fleet.applied import (
    APPLIED,
    WAITING,
    argocd_application,
    flux_kustomization,
    owning_application_set,
    revision_sha,
)

SHA = "3f1c9e8a0b7d6c5e4f3a2b1c0d9e8f7a6b5c4d3e"
OLDER = "0" * 39 + "1"


def _kustomization(
    revision: str, ready: str = "True", generation: int = 2, observed: int = 2
) -> dict[str, Any]:
    return {
        "metadata": {"name": "nodefleet-canary-east-edge", "generation": generation},
        "status": {
            "observedGeneration": observed,
            "lastAppliedRevision": revision,
            "conditions": [
                {
                    "type": "Ready",
                    "status": ready,
                    "reason": "ReconciliationSucceeded" if ready == "True" else "HealthCheckFailed",
                    "message": f"Applied revision: {revision}",
                },
            ],
        },
    }


def test_flux_revisions_of_each_format() -> None:
    assert revision_sha(f"nodefleet-rendered@sha1:{SHA}") == SHA
    assert revision_sha(f"feature/x@sha1:{SHA}") == SHA
    assert revision_sha(f"main/{SHA}") == SHA
    assert revision_sha(SHA.upper()) == SHA


def test_a_kustomization_is_applied_at_the_commit_when_ready_for_its_generation() -> None:
    what = "Kustomization flux-system/nodefleet-canary-east-edge"
    applied = flux_kustomization(
        _kustomization(f"nodefleet-rendered@sha1:{SHA}"), what, "nodefleet-rendered", SHA
    )
    assert (applied.state, applied.line) == (APPLIED, f"{what}: applied nodefleet-rendered@sha1:{SHA}, Ready")
    old = flux_kustomization(
        _kustomization(f"nodefleet-rendered@sha1:{OLDER}"), what, "nodefleet-rendered", SHA
    )
    assert old.state == WAITING and old.account == (
        f"has not applied nodefleet-rendered@sha1:{SHA} yet (lastAppliedRevision nodefleet-rendered@sha1:{OLDER}; "
        f"Ready=True (ReconciliationSucceeded: Applied revision: nodefleet-rendered@sha1:{OLDER}))"
    )
    unhealthy = flux_kustomization(_kustomization(f"b@sha1:{SHA}", ready="False"), what, "b", SHA)
    assert unhealthy.state == WAITING and unhealthy.account.startswith(
        "applied it, but is not Ready (Ready=False (HealthCheckFailed"
    )
    stale = flux_kustomization(_kustomization(f"b@sha1:{SHA}", generation=3), what, "b", SHA)
    assert stale.state == WAITING and "generation 3" in stale.account
    newer = flux_kustomization(
        _kustomization(f"b@sha1:{OLDER}"), what, "b", SHA, contains=lambda other: other == OLDER
    )
    assert newer.state == APPLIED
    assert flux_kustomization({}, what, "b", SHA).account.startswith("has not applied b@sha1:")


def test_an_application_is_applied_at_the_commit_when_synced_and_healthy() -> None:
    def app(revision: str, sync: str = "Synced", health: str = "Healthy", **extra: Any) -> dict[str, Any]:
        return {
            "status": {"sync": {"status": sync, "revision": revision}, "health": {"status": health}, **extra}
        }

    what = "Application argocd/nodefleet-canary-east-edge"
    assert argocd_application(app(SHA), what, SHA).state == APPLIED
    progressing = argocd_application(app(SHA, health="Progressing"), what, SHA)
    assert progressing.state == WAITING and progressing.account == (
        f"synced it, but is not Synced and Healthy (sync.revision {SHA}, Synced, health Progressing)"
    )
    failed = argocd_application(
        app(
            OLDER,
            sync="OutOfSync",
            operationState={"phase": "Failed", "message": "one or more objects failed"},
        ),
        what,
        SHA,
    )
    assert failed.account == (
        f"has not synced {SHA} yet (sync.revision {OLDER}, OutOfSync, health Healthy; its last sync Failed: one or more "
        "objects failed)"
    )
    multi = {
        "status": {"sync": {"status": "Synced", "revisions": [OLDER, SHA]}, "health": {"status": "Healthy"}}
    }
    assert argocd_application(multi, what, SHA).state == APPLIED


def _owned(revision: str) -> dict[str, Any]:
    """An Application the ApplicationSet ``nodefleet`` generated, compared Synced and Healthy at ``revision``."""
    return {
        "metadata": {
            "name": "nodefleet-hosted-prod-east",
            "ownerReferences": [
                {"apiVersion": "argoproj.io/v1alpha1", "kind": "ApplicationSet", "name": "nodefleet"}
            ],
        },
        "status": {
            "sync": {"status": "Synced", "revision": revision},
            "health": {"status": "Healthy"},
            "operationState": {"phase": "Succeeded", "syncResult": {"revision": OLDER}},
        },
    }


def _appset(status: str, revisions: list[str], strategy: str = "RollingSync") -> dict[str, Any]:
    return {
        "metadata": {"name": "nodefleet"},
        "spec": {"strategy": {"type": strategy}},
        "status": {
            "applicationStatus": [
                {"application": "nodefleet-canary-edge", "status": "Healthy", "step": "1", "targetRevisions": [SHA]},
                {"application": "nodefleet-hosted-prod-east", "status": status, "step": "2",
                 "targetRevisions": revisions},
            ]
        },
    }  # fmt: skip


def test_an_application_of_a_rolling_sync_step_that_has_not_started_is_not_applied() -> None:
    # Argo CD compares every Application at the new commit, so one of a later step reads Synced there before its
    # step has started; only the ApplicationSet's RollingSync status says the step reached it.
    what = "Application argocd/nodefleet-hosted-prod-east"
    assert owning_application_set(_owned(SHA)) == "nodefleet"
    for status in ("Waiting", "Pending", "Progressing"):
        reading = argocd_application(_owned(SHA), what, SHA, appset=_appset(status, [SHA]))
        assert reading.state == WAITING, status
        assert reading.account == (
            f"compares Synced and Healthy at {SHA[:12]}, but is not applied yet: the ApplicationSet nodefleet "
            f"reports its RollingSync step 2 {status} at {SHA[:12]}"
        )
    older = argocd_application(_owned(SHA), what, SHA, appset=_appset("Healthy", [OLDER]))
    assert older.state == WAITING and older.account.endswith(f"step 2 Healthy at {OLDER[:12]}")
    assert argocd_application(_owned(SHA), what, SHA, appset=_appset("Healthy", [SHA])).state == APPLIED
    newer = argocd_application(
        _owned(OLDER), what, SHA, contains=lambda other: other == OLDER, appset=_appset("Healthy", [OLDER])
    )
    assert newer.state == APPLIED
    missing = {"metadata": {"name": "nodefleet"}, "spec": {"strategy": {"type": "RollingSync"}}, "status": {}}
    assert argocd_application(_owned(SHA), what, SHA, appset=missing).account.endswith(
        "the ApplicationSet nodefleet does not report it in its RollingSync status yet"
    )
    unread = argocd_application(_owned(SHA), what, SHA, appset="argocd/nodefleet not found")
    assert unread.state == WAITING and unread.account.endswith(
        "its ApplicationSet argocd/nodefleet not found"
    )
    # Without RollingSync an ApplicationSet syncs every Application itself: Synced and Healthy is applied.
    all_at_once = _appset("Waiting", [], strategy="AllAtOnce")
    assert argocd_application(_owned(SHA), what, SHA, appset=all_at_once).state == APPLIED


def test_an_application_with_a_sync_running_is_not_applied() -> None:
    app = _owned(SHA)
    app["status"]["operationState"] = {"phase": "Running"}
    reading = argocd_application(app, "Application argocd/x", SHA)
    assert reading.state == WAITING and "a sync is still running" in reading.account
