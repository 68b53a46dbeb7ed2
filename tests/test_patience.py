"""The bound of the tests' waits on real controllers (tests/patience.py), on a clock the test moves."""

from __future__ import annotations

from tests.patience import Patience


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_a_wait_whose_state_does_not_change_ends_after_the_stall_and_not_before() -> None:
    clock = Clock()
    patience = Patience(stall=300, ceiling=1800, clock=clock)
    assert not patience.over(("3 of 200",))
    clock.now += 300
    assert not patience.over(("3 of 200",))
    clock.now += 1
    assert patience.over(("3 of 200",))
    assert str(patience) == "nothing changed for 301s (301s in all)"


def test_a_wait_whose_state_keeps_changing_goes_on_past_any_fixed_total_until_the_ceiling() -> None:
    clock = Clock()
    patience = Patience(stall=300, ceiling=1800, clock=clock)
    healthy = 0
    assert not patience.over(healthy)
    while clock.now - 1000 < 1800:  # a folder healthy every 100 s: slow, but advancing
        clock.now += 100
        healthy += 1
        assert not patience.over(healthy), clock.now - 1000
    clock.now += 100
    healthy += 1
    assert patience.over(healthy)
    assert "not within 1800s, though what it waits on still changed" in str(patience)


def test_a_change_renews_the_wait_from_when_it_was_seen() -> None:
    clock = Clock()
    patience = Patience(stall=300, ceiling=1800, clock=clock)
    assert not patience.over("waiting")
    clock.now += 301
    assert not patience.over("applied")  # changed: the stall counts from here
    clock.now += 300
    assert not patience.over("applied")
    clock.now += 1
    assert patience.over("applied")


def test_a_state_read_from_a_server_is_read_once_to_start_and_then_only_when_the_stall_is_up() -> None:
    clock, reads = Clock(), []

    def state() -> int:
        reads.append(clock.now)
        return len(reads)  # changes at every read

    patience = Patience(stall=300, ceiling=1800, clock=clock)
    for _ in range(10):  # polls every 60 s
        assert not patience.over(state)
        clock.now += 60
    assert reads == [1000.0, 1360.0]
