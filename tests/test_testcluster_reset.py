"""A test API server one test gave back is the next test's only after a reset to new (tests/testcluster.py):
what the first test created, changed or deleted is as it was when the server started, the shipped CRDs
serve and validate, a server GitOps controllers could still write to is handed on only after they stop, and a
spare nobody lends for a minute is stopped."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

import pytest

from tests.testcluster import SPARE_IDLE, ApiServer, TestClusters, install_crd_documents

pytestmark = pytest.mark.apiserver

WIDGETS = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "schema": {
                    "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
                },
            }
        ],
    },
}
POOLS = "/apis/hypershift.openshift.io/v1beta1/namespaces/default/nodepools"
EMPTY_POOL = {
    "apiVersion": "hypershift.openshift.io/v1beta1",
    "kind": "NodePool",
    "metadata": {"name": "p"},
    "spec": {},
}
NODEPOOLS = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/nodepools.hypershift.openshift.io"


@pytest.fixture(autouse=True)
def _no_reaping(test_clusters: TestClusters) -> Iterator[None]:
    """The tests below read which servers are spares: the worker's reaper must not stop one meanwhile, however
    long the machine keeps this test waiting. The test of the reaping calls :meth:`TestClusters.reap` itself."""
    test_clusters.spare_idle = math.inf
    yield
    test_clusters.spare_idle = SPARE_IDLE


def _call(server: ApiServer, method: str, path: str, body: Any = None) -> tuple[int, dict[str, Any]]:
    from tests.gitopsscale import _request

    content = "application/merge-patch+json" if method == "PATCH" else "application/json"
    status, answer = _request(server, method, path, body, content)
    return status, json.loads(answer or b"{}")


def _dirty(server: ApiServer) -> None:
    """What tests do to a server of their own: objects in a namespace of theirs, a label on a namespace the
    server made, a CRD of their own with an object, a shipped CRD deleted."""
    assert _call(server, "POST", "/api/v1/namespaces", {"metadata": {"name": "mine"}})[0] == 201
    cm = {"metadata": {"name": "settings"}, "data": {"a": "b"}}
    assert _call(server, "POST", "/api/v1/namespaces/mine/configmaps", cm)[0] == 201
    assert (
        _call(server, "PATCH", "/api/v1/namespaces/default", {"metadata": {"labels": {"x": "y"}}})[0] == 200
    )
    install_crd_documents(server, [WIDGETS])
    widget = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}
    assert _call(server, "POST", "/apis/example.com/v1/namespaces/mine/widgets", widget)[0] == 201
    assert _call(server, "DELETE", NODEPOOLS)[0] == 200


def test_a_server_given_back_is_reset_to_new_before_the_next_test_gets_it(
    test_clusters: TestClusters,
) -> None:
    with test_clusters.fresh("reset-first", new=True) as first:
        started = first.process.pid
        uid = _call(first, "GET", "/api/v1/namespaces/default")[1]["metadata"]["uid"]
        refused = _call(first, "POST", POOLS, EMPTY_POOL)
        assert refused[0] == 422
        _dirty(first)
    assert first in test_clusters.spares
    with test_clusters.fresh("reset-second") as second:
        assert second is first and second.process.pid == started and second.name == "reset-second"
        assert _call(second, "GET", "/api/v1/namespaces/mine")[0] == 404
        assert (
            _call(
                second, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com"
            )[0]
            == 404
        )
        default = _call(second, "GET", "/api/v1/namespaces/default")[1]["metadata"]
        assert default["uid"] == uid and "x" not in default.get("labels", {})
        # The deleted CRD is back, served, and validates as before: an empty NodePool is refused by its schema.
        assert _call(second, "GET", NODEPOOLS)[0] == 200
        assert _call(second, "GET", "/apis/hypershift.openshift.io/v1beta1/nodepools")[0] == 200
        assert _call(second, "POST", POOLS, EMPTY_POOL) == refused
        # What the first test made can be made again.
        assert _call(second, "POST", "/api/v1/namespaces", {"metadata": {"name": "mine"}})[0] == 201
        assert install_crd_documents(second, [WIDGETS]) == ["widgets.example.com"]


def test_a_server_given_back_while_gitops_controllers_run_is_held_until_they_stop(
    test_clusters: TestClusters,
) -> None:
    """Flux or Argo CD may still apply to a server registered with them: it is no other test's until the
    controllers have stopped (tests/gitopsctl.py), and then it is reset before it is handed on."""
    test_clusters.watched = True
    try:
        with test_clusters.fresh("reset-watched", new=True) as watched:
            _dirty(watched)
        assert watched in test_clusters.held and watched not in test_clusters.spares
        with test_clusters.fresh("reset-while-watched") as other:
            assert other is not watched
        # Untouched while held: what a controller applied after the test is still there.
        assert _call(watched, "GET", "/api/v1/namespaces/mine")[0] == 200
    finally:
        test_clusters.unwatch()
    assert not test_clusters.held and watched in test_clusters.spares and watched.process.poll() is None
    assert _call(watched, "GET", "/api/v1/namespaces/mine")[0] == 404
    assert _call(watched, "GET", NODEPOOLS)[0] == 200


def test_a_server_of_another_karpenter_set_is_not_handed_out(test_clusters: TestClusters) -> None:
    with test_clusters.fresh("reset-default", new=True) as default:
        pass
    with test_clusters.fresh("reset-hosted", karpenter_set="hypershift/1.13") as hosted:
        assert hosted is not default and hosted.karpenter_set == "hypershift/1.13"
    assert default in test_clusters.spares and hosted in test_clusters.spares


def test_a_new_server_starts_on_a_copy_of_a_new_ones_keys_not_on_what_was_done_to_it(
    test_clusters: TestClusters,
) -> None:
    """A server started after the first of its Karpenter set starts on the keys that one had when it was new (its
    CRDs are not created again through the API): the same CRDs, served and validating, none of what a test did to
    the first since, and the server's own state (its identity lease) its own."""
    crds = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions"
    with test_clusters.fresh("seed-first", new=True) as first:
        refused = _call(first, "POST", POOLS, EMPTY_POOL)
        pools_uid = _call(first, "GET", NODEPOOLS)[1]["metadata"]["uid"]
        names = sorted(c["metadata"]["name"] for c in _call(first, "GET", crds)[1]["items"])
        _dirty(first)
        with test_clusters.fresh("seed-second", new=True) as second:
            assert second is not first and second.etcd_prefix != first.etcd_prefix
            assert sorted(c["metadata"]["name"] for c in _call(second, "GET", crds)[1]["items"]) == names
            assert sorted(second.crds) == sorted(first.crds)
            # Copied, not created again: the same object, down to its uid.
            assert _call(second, "GET", NODEPOOLS)[1]["metadata"]["uid"] == pools_uid
            assert _call(second, "GET", NODEPOOLS)[0] == 200
            assert _call(second, "POST", POOLS, EMPTY_POOL) == refused
            assert _call(second, "GET", "/api/v1/namespaces/mine")[0] == 404
            assert "x" not in _call(second, "GET", "/api/v1/namespaces/default")[1]["metadata"].get(
                "labels", {}
            )
            # The identity lease of the API server is its own: the first one's was not copied.
            assert _identity(second) and _identity(second) != _identity(first)
            # It is a server like any other: what the first test made can be made on it.
            assert _call(second, "POST", "/api/v1/namespaces", {"metadata": {"name": "mine"}})[0] == 201
            assert install_crd_documents(second, [WIDGETS]) == ["widgets.example.com"]


def _identity(server: ApiServer) -> list[str]:
    """The holders of the API servers' identity leases ``server`` holds (one: itself; the name of the lease is the
    machine's, the holder the process's)."""
    leases = _call(server, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases")[1]["items"]
    return [
        lease["spec"]["holderIdentity"]
        for lease in leases
        if lease["metadata"].get("labels", {}).get("apiserver.kubernetes.io/identity") == "kube-apiserver"
    ]


def test_a_server_given_back_right_after_a_shipped_crd_was_deleted_comes_back_with_it(
    test_clusters: TestClusters,
) -> None:
    """The API server deletes a CRD in steps (its objects, then the CRD). A server given back at once is reset once
    the deletion is done (a CRD written back while it terminates was seen deleted after, under load), and the next
    test finds the CRD serving and empty. The race itself is not reproduced here; the reset's wait is what this
    exercises."""
    sets = "/apis/machine.openshift.io/v1beta1/namespaces/default/machinesets"
    crd = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/machinesets.machine.openshift.io"
    for _ in range(2):
        with test_clusters.fresh("reset-deleted-crd") as server:
            for i in range(30):  # objects the deletion removes first: it takes a while
                body = {
                    "apiVersion": "machine.openshift.io/v1beta1",
                    "kind": "MachineSet",
                    "metadata": {"name": f"s{i}"},
                }
                created = _call(server, "POST", sets, body)
                assert created[0] == 201, created
            assert _call(server, "DELETE", crd)[0] == 200
        assert server in test_clusters.spares
        assert _call(server, "GET", crd)[0] == 200 and _call(server, "GET", sets)[1]["items"] == []


def test_a_spare_nobody_lends_for_a_minute_is_stopped_and_the_next_test_gets_a_new_server(
    test_clusters: TestClusters,
) -> None:
    """A spare costs its idle CPU for as long as it is kept: one not lent within :data:`SPARE_IDLE` seconds of
    being given back is stopped and its folder removed; one given back less than that before is kept. The clock
    is the test's: ``reap`` is given the time to judge by."""
    with test_clusters.fresh("reap-first", new=True) as first:
        pass
    given_back = first.spare_since
    test_clusters.spare_idle = SPARE_IDLE
    # Spares given back by earlier tests may go too; this one is judged by when it was given back.
    assert first not in test_clusters.reap(now=given_back + SPARE_IDLE - 1)
    assert first in test_clusters.spares and first.process.poll() is None
    reaped = test_clusters.reaped
    stopped = test_clusters.reap(now=given_back + SPARE_IDLE + 1)
    assert first in stopped and first not in test_clusters.spares
    assert test_clusters.reaped == reaped + len(stopped)
    assert first.process.poll() is not None and (
        first.controllers is None or first.controllers.poll() is not None
    )
    assert not first.folder.exists()
    with test_clusters.fresh("reap-second") as second:
        assert second is not first and second.process.poll() is None
        assert _call(second, "GET", NODEPOOLS)[0] == 200
