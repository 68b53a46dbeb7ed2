"""A test API server's CRDs are waited for until they serve (tests/testcluster.py), however long the API server
takes to answer their first list on a busy machine, and a CRD that never serves fails the wait by its name."""

from __future__ import annotations

import pytest

from tests.testcluster import _wait_served

WIDGETS = {
    "group": "example.com",
    "scope": "Namespaced",
    "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
    "versions": [{"name": "v1", "served": True, "storage": True}],
}


class _SlowFirstList:
    """An API server whose first ``slow`` lists of a CRD get no answer within the request's timeout, as when the
    API server builds the CRD's handler on a machine busy with a dozen others (measured in CI: over 5 s). A
    stand-in: a real server cannot be made that slow on purpose."""

    def __init__(self, slow: int) -> None:
        self.slow = slow
        self.timeouts: list[float] = []

    def get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        assert path == "/apis/example.com/v1/widgets?limit=1", path
        self.timeouts.append(timeout)
        if len(self.timeouts) <= self.slow:
            raise TimeoutError("The read operation timed out")
        return 200, b'{"items": []}'


def test_a_crd_whose_first_list_is_slow_to_answer_is_waited_for_until_it_serves() -> None:
    server = _SlowFirstList(slow=2)
    _wait_served(server, [WIDGETS])  # type: ignore[arg-type]
    assert len(server.timeouts) == 3
    # Each request may take what is left of the wait, not a fixed few seconds.
    assert all(t > 60 for t in server.timeouts), server.timeouts


def test_a_crd_that_never_answers_fails_the_wait_naming_it() -> None:
    server = _SlowFirstList(slow=10**6)
    with pytest.raises(
        RuntimeError, match=r"^widgets\.example\.com not served 0.5s after a reset or a start$"
    ):
        _wait_served(server, [WIDGETS], timeout=0.5)  # type: ignore[arg-type]
    assert server.timeouts and all(t == 1 for t in server.timeouts), server.timeouts
