"""The drift table of docs/drift-reference.md, from Karpenter's own answers on the generated pairs.

    venv/bin/python -m tests.karpenter_hash.table      # markdown on stdout

A cell says how many of the generated changes of that field (changed alone) Karpenter drifts on: "all",
"none", or "k of n" (then some changes are only spellings of the same Go value: a default spelt out, an
explicit zero on a value field, an item listed twice...). "—" where the minor has no such field.
"""

from __future__ import annotations

import sys
from collections import defaultdict

from nodefleet.drift.karpenter_hash import SUPPORTED_KARPENTER
from tests.karpenter_hash.pairs import pairs
from tests.karpenter_hash.reference import Reference


def _field(pair_id: str) -> tuple[str, str]:
    kind, rest = pair_id.split(":", 1)
    path = rest.split("#", 1)[0].removeprefix("spec.")
    parts = [p for p in path.split(".") if not p.isdigit()]
    depth = 3 if parts[:1] == ["template"] else 1
    return kind, ".".join(parts[:depth])


def table() -> str:
    counts: dict[tuple[str, str], dict[str, list[int]]] = defaultdict(dict)
    for minor in SUPPORTED_KARPENTER:
        generated = [p for p in pairs(minor) if p.category == "field"]
        answers = Reference(minor).ask_many(p.request() for p in generated)
        for pair, answer in zip(generated, answers, strict=True):
            cell = counts[_field(pair.id)].setdefault(minor, [0, 0])
            cell[0] += bool(answer["reason"])
            cell[1] += 1
    lines = [
        "| kind | field (changed alone) | " + " | ".join(SUPPORTED_KARPENTER) + " |",
        "|---|---|" + "---|" * len(SUPPORTED_KARPENTER),
    ]
    for (kind, field), by_minor in sorted(counts.items()):
        cells = []
        for minor in SUPPORTED_KARPENTER:
            if minor not in by_minor:
                cells.append("—")
                continue
            drifted, total = by_minor[minor]
            cells.append("all" if drifted == total else "none" if not drifted else f"{drifted} of {total}")
        lines.append(f"| {kind} | `{field}` | " + " | ".join(cells) + " |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    sys.exit(0)
