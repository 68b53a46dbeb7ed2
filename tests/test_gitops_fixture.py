"""The GitOps controllers' fixture on a parallel worker: controllers started again later in the session (by
another module that needs them) start on a hub of their own or on the one before reset to new, never on the
leftovers of the ones before."""

from __future__ import annotations

import pytest

from tests.gitopsctl import HUB, Controllers, namespace
from tests.testcluster import TestClusters

pytestmark = pytest.mark.apiserver


def test_controllers_started_after_others_closed_get_a_new_hub(test_clusters: TestClusters) -> None:
    """A worker runs one GitOps module, then others that keep its API servers but not its controllers, then
    another GitOps module: the second controllers install their CRDs again, which a hub kept from the first
    refuses (409 AlreadyExists)."""
    first = Controllers(test_clusters)
    try:
        first.apply([namespace("left-by-the-first")])
        assert first.hub.get("/api/v1/namespaces/left-by-the-first")[0] == 200
    finally:
        first.close()
    assert HUB not in test_clusters.clusters
    second = Controllers(test_clusters)
    try:
        assert second.hub.get("/api/v1/namespaces/left-by-the-first")[0] == 404
    finally:
        second.close()
