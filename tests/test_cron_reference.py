"""A budget schedule as Karpenter reads it: nodefleet/stackfile/cron.py against robfig/cron itself.

tests/cron_reference is a Go program built from the module proxy (tests/goref.py) that parses each schedule as
Karpenter's ``Budget.IsActive`` does (``cron.ParseStandard("TZ=UTC " + schedule)``, robfig/cron v3.0.1) and
says whether it ever comes. For every schedule the NodePool CRD's pattern lets through, nodefleet refuses it
exactly when Karpenter could not read it or it never comes.
"""

from __future__ import annotations

import json
import random
import subprocess

import pytest

from nodefleet.stackfile.cron import CRD_SCHEDULE_PATTERN, schedule_problem
from tests.conftest import PROJECT
from tests.goref import build

pytestmark = pytest.mark.goref

#: Field spellings, valid and not, that the corpus combines: names, ranges, steps, lists, out of range.
_TOKENS = [
    "*", "?", "0", "5", "7", "12", "23", "24", "29", "30", "31", "32", "59", "60", "-1", "+3", "1-5", "5-1",
    "1-2-3", "*/15", "*/0", "5/15", "1-10/3", "1/2/3", "mon-fri", "MON", "sun", "sat", "jan", "Feb", "dec",
    "jan-mar", "1,15", "4,6,9,11", "2", "x", "", "1,,2", ",", ",5", "mon-7", "0-6",
]  # fmt: skip
_HANDWRITTEN = [
    "0 9 * * mon-fri", "0 0 9 * * mon-fri", "@daily", "@dailyx", "@every 1h", "@hourly",
    "CRON_TZ=Europe/Paris 0 9 * * *", "TZ=UTC 0 9 * * *", "0 0 30 2 *", "0 0 29 2 *", "0 0 31 4,6 *",
    "0 0 31 4,6 1", "0 0 31 4 */2", "0 0 31 4 */1", "0 0 31 4 ?", "0  9 * *  mon", " 0 9 * * * ",
    "0 9 * * 1 2026", "0 0 * * * * *",
]  # fmt: skip


#: Valid spellings per field (minute, hour, day of month, month, day of week), so the corpus holds both kinds.
_VALID = [
    ["*", "0", "5", "59", "*/15", "1-10/3", "5/15", "0,30"],
    ["*", "0", "9", "23", "1-5", "*/2", "?"],
    ["*", "?", "1", "15", "28", "29", "30", "31", "1,15", "1-10", "30-31"],
    ["*", "1", "2", "feb", "jan-mar", "4,6,9,11", "*/3", "Apr,jun"],
    ["*", "?", "0", "6", "mon-fri", "sun", "1-5", "0-6", "*/2"],
]  # fmt: skip


def _corpus() -> list[str]:
    rng = random.Random(32)
    generated = [
        " ".join(rng.choice(field) if rng.random() < 0.9 else rng.choice(_TOKENS) or "*" for field in _VALID)
        for _ in range(600)
    ]
    generated += [" ".join(rng.choice(_TOKENS) or "*" for _ in range(rng.choice((4, 6)))) for _ in range(60)]
    return [s for s in _HANDWRITTEN + generated if CRD_SCHEDULE_PATTERN.search(s)]


def test_nodefleet_refuses_exactly_what_karpenter_cannot_act_on() -> None:
    schedules = _corpus()
    binary = build(PROJECT / "tests" / "cron_reference")
    result = subprocess.run(
        [str(binary)], input=json.dumps(schedules), capture_output=True, text=True, timeout=120, check=True
    )
    verdicts = json.loads(result.stdout)
    assert len(verdicts) == len(schedules) > 500
    disagree = []
    for schedule, verdict in zip(schedules, verdicts, strict=True):
        karpenter_acts = verdict["parses"] and not verdict["never"]
        if (schedule_problem(schedule) is None) != karpenter_acts:
            disagree.append((schedule, verdict, schedule_problem(schedule)))
    refused = sum(1 for s in schedules if schedule_problem(s))
    print(f"\n{len(schedules)} schedules the CRD admits; Karpenter cannot act on {refused}; 0 disagreements")
    assert not disagree, disagree[:10]
    assert 50 < refused < len(schedules) - 50  # both kinds are well represented
