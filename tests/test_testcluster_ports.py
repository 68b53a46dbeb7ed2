"""The test API server on parallel workers: a port taken between its choice and the server's bind."""

from __future__ import annotations

import socket

import pytest

from tests import testcluster
from tests.testcluster import TestClusters

pytestmark = pytest.mark.apiserver


def test_an_api_server_whose_port_was_taken_meanwhile_starts_on_another(
    test_clusters: TestClusters, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another worker may bind the port free_port() chose before kube-apiserver does: the start tries
    again on a new port instead of failing the test."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        chosen = iter([port])
        real = testcluster.free_port
        monkeypatch.setattr(testcluster, "free_port", lambda: next(chosen, None) or real())
        with test_clusters.fresh("port-taken", new=True) as server:
            assert server.port != port
            assert server.get("/readyz")[0] == 200
