"""How long a test waits on real controllers: until what it watches stops changing, not for a fixed total.

A rollout through Flux or Argo CD is many steps (a folder applied, a folder healthy, a wave's step begun), each
slower on a slower machine or beside a busier suite. A fixed total for all of them fails a rollout that is still
advancing: Argo CD at 200 folders took 192 s on one two-core machine, 286 s alone on a machine half as fast per
core, and more than 600 s on that machine in CI beside the rest of the suite, 187 of its 200 folders healthy at
the bound and the rest following. :class:`Patience` fails a wait only when the state it is shown has not changed for
``stall`` seconds (the controllers stopped), or after ``ceiling`` seconds in all (a state that keeps changing
without ever reaching the condition, so that a wait always ends).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable

#: Seconds a wait on the controllers may see nothing change before it fails.
STALL = 300.0
#: Seconds after which a wait fails even while its state still changes.
CEILING = 1800.0


class Patience:
    """A wait's bound. ``over(state)`` is asked at each poll, after the condition was found unmet. ``state`` is
    the state itself, or a function giving it, called at most once every ``stall`` seconds (it may read the API
    server)."""

    def __init__(
        self, stall: float = STALL, ceiling: float = CEILING, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.stall, self.ceiling, self.clock = stall, ceiling, clock
        self.started = self.since = clock()
        self.state: Hashable | None = None
        self.watched = False

    def over(self, state: Hashable | Callable[[], Hashable]) -> bool:
        """Whether the wait has gone on long enough: ``state()`` the same as ``stall`` seconds ago, or
        ``ceiling`` passed. The first call records the state the wait starts from."""
        now = self.clock()
        if not self.watched:
            self.state, self.since, self.watched = _read(state), now, True
            return False
        if now - self.started > self.ceiling:
            return True
        if now - self.since <= self.stall:
            return False
        current = _read(state)
        if current == self.state:
            return True
        self.state, self.since = current, now
        return False

    def __str__(self) -> str:
        elapsed = self.clock() - self.started
        if elapsed > self.ceiling:
            return f"not within {self.ceiling:.0f}s, though what it waits on still changed"
        return f"nothing changed for {self.clock() - self.since:.0f}s ({elapsed:.0f}s in all)"


def _read(state: Hashable | Callable[[], Hashable]) -> Hashable:
    return state() if callable(state) else state
