"""A call that must come back: what a pipe nobody writes to, or a parser bomb, would make block or loop."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any


def within(seconds: float, call: Callable[[], Any]) -> Any:
    """``call()``'s result (or its exception, raised here), failing the test instead of hanging when ``call``
    has not returned after ``seconds``: a bound for a hang, not a measure of speed."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["value"] = call()
        except BaseException as exc:  # handed to the test below
            box["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"still running after {seconds}s: it blocks or loops"
    if "error" in box:
        raise box["error"]
    return box.get("value")
