"""Whether Flux or Argo CD reports a commit applied, read as their controllers write status
(nodefleet/fleet/applied.py)."""

from __future__ import annotations

from typing import Any

from nodefleet.fleet.applied import APPLIED, WAITING, argocd_application, flux_kustomization, revision_sha

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
