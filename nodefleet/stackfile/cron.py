"""A disruption budget's ``schedule`` as Karpenter reads it, so a schedule the NodePool CRD accepts but
Karpenter cannot act on is refused with the fix.

Why: the CRD's pattern (``^(@(annually|…|hourly))|((.+)\\s(.+)\\s(.+)\\s(.+)\\s(.+))$``) is a search, anchored
at one end per alternative, so it accepts six fields (a seconds field first), ``CRON_TZ=`` prefixes,
``@dailyx`` and out-of-range values. Karpenter parses the schedule only when it computes a budget
(sigs.k8s.io/karpenter ``pkg/apis/v1/nodepool.go``, ``Budget.IsActive``:
``cron.ParseStandard("TZ=UTC " + schedule)``, robfig/cron v3.0.1), and a schedule it cannot parse makes
the budget "fail closed": 0 nodes, for every reason the budget names, forever. A schedule that parses but
never comes (``0 0 30 2 *``) is the opposite: robfig's ``Next`` finds no time within five years and returns
the zero time, which ``IsActive`` takes as "started", so the window is open all the time.

:func:`schedule_problem` follows robfig/cron's standard parser (``parser.go``: ``Parse``, ``getField``,
``getRange``, ``parseDescriptor``; ``spec.go``: ``dayMatches``) for what the CRD lets through; what the CRD
refuses is left to the ``crd-schema`` policy, which quotes the CRD.
"""

from __future__ import annotations

import re

__all__ = ["CRD_SCHEDULE_PATTERN", "schedule_problem"]

#: The NodePool CRD's pattern for ``spec.disruption.budgets[].schedule`` (Karpenter v1.x).
CRD_SCHEDULE_PATTERN = re.compile(
    r"^(@(annually|yearly|monthly|weekly|daily|midnight|hourly))|((.+)\s(.+)\s(.+)\s(.+)\s(.+))$"
)
#: robfig/cron's descriptors (``parseDescriptor``); ``@every`` is one too, but the CRD's pattern refuses it.
_DESCRIPTORS = ("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly")
_MONTHS = {
    m: i
    for i, m in enumerate(
        ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"], 1
    )
}
_DAYS = {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])}
#: (name, minimum, maximum, names) of the five fields, robfig's ``minutes``, ``hours``, ``dom``, ``months``, ``dow``.
_FIELDS = (
    ("minute", 0, 59, None),
    ("hour", 0, 23, None),
    ("day of month", 1, 31, None),
    ("month", 1, 12, _MONTHS),
    ("day of week", 0, 6, _DAYS),
)
#: The most days each month has in some year within robfig's five-year search (February: a leap year).
_MONTH_DAYS = (31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31)
_FORM = (
    "Karpenter takes five fields in UTC (minute hour day-of-month month day-of-week: robfig/cron's standard "
    "parser), e.g. '0 9 * * mon-fri', or @yearly, @monthly, @weekly, @daily, @hourly"
)
_FAILS_CLOSED = "Karpenter cannot read it, and a budget it cannot read allows 0 disruptions, for good"


class _Refused(ValueError):
    pass


def _number(text: str, low: int, high: int, names: dict[str, int] | None, expr: str) -> int:
    if names is not None and text.lower() in names:
        return names[text.lower()]
    if not re.fullmatch(r"[+-]?[0-9]+", text):
        raise _Refused(f"'{text}' in '{expr}' is not a number" + (" or a name" if names else ""))
    value = int(text)
    if value < 0:
        raise _Refused(f"'{expr}' has a negative number")
    return value


def _values(expr_list: str, low: int, high: int, names: dict[str, int] | None) -> tuple[set[int], bool]:
    """The values a field selects, and whether it is a star (``*``/``?`` with no step above 1): robfig's
    ``getField``/``getRange``."""
    selected: set[int] = set()
    star = False
    for expr in filter(None, expr_list.split(",")):  # robfig splits with strings.FieldsFunc: no empty parts
        range_and_step = expr.split("/")
        low_high = range_and_step[0].split("-")
        this_star = False
        if low_high[0] in ("*", "?"):
            start, end, this_star = low, high, True
        else:
            start = _number(low_high[0], low, high, names, expr)
            if len(low_high) == 1:
                end = start
            elif len(low_high) == 2:
                end = _number(low_high[1], low, high, names, expr)
            else:
                raise _Refused(f"'{expr}' has too many hyphens")
        if len(range_and_step) == 1:
            step = 1
        elif len(range_and_step) == 2:
            step = _number(range_and_step[1], 0, 2**31, None, expr)
            if len(low_high) == 1:
                end = high  # "N/step" runs from N to the field's maximum
            if step > 1:
                this_star = False
        else:
            raise _Refused(f"'{expr}' has too many slashes")
        if start < low:
            raise _Refused(f"'{expr}' starts below {low}")
        if end > high:
            raise _Refused(f"'{expr}' ends above {high}")
        if start > end:
            raise _Refused(f"'{expr}' starts after it ends")
        if step == 0:
            raise _Refused(f"'{expr}' has a step of 0")
        selected |= set(range(start, end + 1, step))
        star = star or this_star
    return selected, star


def _ever_comes(selected: list[tuple[set[int], bool]]) -> bool:
    """Whether a parsed schedule has a time at all, by robfig's ``dayMatches``: when day of month or day of
    week is a star both must match, otherwise either may; every month has every weekday."""
    (minutes, _), (hours, _), (doms, dom_star), (months, _), (dows, dow_star) = selected
    if not (minutes and hours and months):
        return False
    some_day = any(day <= _MONTH_DAYS[month - 1] for month in months for day in doms)
    if dom_star or dow_star:
        return some_day and bool(dows)
    return some_day or bool(dows)


def schedule_problem(schedule: str) -> str | None:
    """Why Karpenter cannot act on ``schedule`` as written (the fix included), or None: for a schedule the
    CRD refuses too (the ``crd-schema`` policy says so, quoting the CRD) and for one Karpenter reads."""
    if not CRD_SCHEDULE_PATTERN.search(schedule):
        return None
    spec = schedule.strip()
    zone = re.match(r"^(CRON_TZ|TZ)=\S*", spec)
    if zone:
        return (
            f"'{schedule}' names a time zone ({zone.group(0)}), but Karpenter prefixes TZ=UTC itself, so "
            f"{_FAILS_CLOSED}; remove {zone.group(1)}= and write the time in UTC. {_FORM}"
        )
    if spec.startswith("@"):
        if spec in _DESCRIPTORS:
            return None
        return f"'{schedule}' is not a descriptor robfig/cron knows, so {_FAILS_CLOSED}; use one of them. {_FORM}"
    fields = spec.split()
    if len(fields) != 5:
        if len(fields) == 6:
            return (
                f"'{schedule}' has six fields (seconds first, as Quartz and Spring write cron), so {_FAILS_CLOSED}; "
                f"drop the seconds: write '{' '.join(fields[1:])}'. {_FORM}"
            )
        return f"'{schedule}' has {len(fields)} fields, so {_FAILS_CLOSED}; write five. {_FORM}"
    selected = []
    for text, (name, low, high, names) in zip(fields, _FIELDS, strict=True):
        try:
            selected.append(_values(text, low, high, names))
        except _Refused as exc:
            sunday = "; Sunday is 0 (or sun)" if name == "day of week" and "7" in text else ""
            return (
                f"'{schedule}': the {name} field: {exc} (it takes {low}-{high}{sunday}), so {_FAILS_CLOSED}; "
                f"correct it. {_FORM}"
            )
    if not _ever_comes(selected):
        return (
            f"'{schedule}' never comes (no time matches all its fields, e.g. a day the months do not have): "
            "robfig/cron finds no time for it and Karpenter then holds the window open all the time; pick days "
            "the months have, e.g. '0 0 28 2 *'"
        )
    return None
