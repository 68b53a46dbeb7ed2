"""Which CRD rules a run evaluated, and how they came out: the input of the exercised-rule coverage figure.

With ``NODEFLEET_RULE_LOG`` set to a directory, every process that evaluates CEL rules of the shipped CRDs
writes there, when it exits, one JSON-lines file (``rules-<pid>.jsonl``): per rule (CRD file, version,
schema path, rule text) how often it passed, failed, or could not be evaluated. ``nodefleet crds coverage
--exercised DIR`` reads them all. Without the variable nothing is recorded and nothing is written.
"""

from __future__ import annotations

import atexit
import json
import os
from collections import Counter
from collections.abc import Mapping
from pathlib import Path

__all__ = ["ENV", "active", "read", "record"]

ENV = "NODEFLEET_RULE_LOG"

#: (file, version, schema path, rule, outcome) -> count; outcome is "pass", "fail" or "cannot".
_counts: Counter[tuple[str, str, str, str, str]] = Counter()
_registered = False


def active() -> bool:
    return bool(os.environ.get(ENV))


def record(file: str, version: str, path: str, rule: str, passed: bool | None) -> None:
    global _registered
    outcome = "cannot" if passed is None else "pass" if passed else "fail"
    _counts[(file, version, path, rule, outcome)] += 1
    if not _registered:
        atexit.register(flush)
        _registered = True


def flush() -> None:
    """Write what this process recorded (at exit; tests may call it earlier)."""
    directory = os.environ.get(ENV)
    if not directory or not _counts:
        return
    rows: dict[tuple[str, str, str, str], dict[str, int]] = {}
    for (file, version, path, rule, outcome), n in _counts.items():
        rows.setdefault((file, version, path, rule), {"pass": 0, "fail": 0, "cannot": 0})[outcome] += n
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / f"rules-{os.getpid()}.jsonl"
    with target.open("a", encoding="utf-8") as out:
        for (file, version, path, rule), counts in sorted(rows.items()):
            out.write(
                json.dumps({"file": file, "version": version, "path": path, "rule": rule, **counts}) + "\n"
            )
    _counts.clear()


def read(directory: Path) -> Mapping[tuple[str, str, str, str], Mapping[str, int]]:
    """(file, version, schema path, rule) -> {"pass", "fail", "cannot"} summed over every log in ``directory``."""
    found: dict[tuple[str, str, str, str], dict[str, int]] = {}
    for log in sorted(directory.glob("rules-*.jsonl")):
        for line in log.read_text(encoding="utf-8").splitlines():
            try:
                row = json.loads(line)
                key = (str(row["file"]), str(row["version"]), str(row["path"]), str(row["rule"]))
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a process that was killed while writing
            into = found.setdefault(key, {"pass": 0, "fail": 0, "cannot": 0})
            for outcome in into:
                into[outcome] += int(row.get(outcome, 0))
    return found
