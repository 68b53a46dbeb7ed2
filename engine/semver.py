"""Semantic-version precedence for Pulumi CLI versions, so the bootstrap accepts any CLI at least the SDK pin.

`pulumi version` prints SemVer 2.0 strings: ``v3.274.0``, dev builds such as ``v3.275.0-alpha.xaea75eb`` and
occasionally build metadata (``+dirty``). PEP 440 tools cannot read the alphanumeric pre-releases and
``sort -V`` orders ``3.259.0-alpha`` after ``3.259.0``, so precedence follows semver.org §11 here: numeric
core first; a pre-release sorts below its release; pre-release identifiers compare numerically when both
are numeric, numbers below words, and a longer list wins a tie; build metadata is ignored.

Command line, used by ``engine/bootstrap`` (stdlib only, so it runs before the venv exists)::

    python3 engine/semver.py at-least v3.274.0 3.259.0    # exit 0: fits; 1: older; 2: not a version
    git tag -l | python3 engine/semver.py nearest 4.34.0  # the tag of that release, else the nearest one
"""

from __future__ import annotations

import re
import sys

_SEMVER = re.compile(
    r"^v?(?P<core>\d+\.\d+\.\d+)(?:-(?P<pre>[0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$",
)


class NotAVersion(ValueError):
    """The text is not a SemVer version (with or without a leading ``v``)."""


def parse(text: str) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """(major, minor, patch) and the pre-release identifiers (empty for a release)."""
    m = _SEMVER.match(text.strip())
    if not m:
        raise NotAVersion(f"{text.strip()!r} is not a version like v3.259.0")
    pre = tuple(m["pre"].split(".")) if m["pre"] else ()
    if any(not part for part in pre):
        raise NotAVersion(f"{text.strip()!r} has an empty pre-release identifier")
    return tuple(int(x) for x in m["core"].split(".")), pre


def _pre_key(ident: str) -> tuple[int, int, str]:
    # Numeric identifiers sort below alphanumeric ones and compare as numbers.
    return (0, int(ident), "") if ident.isdigit() else (1, 0, ident)


def compare(a: str, b: str) -> int:
    """-1, 0 or 1 as ``a`` has lower, equal or higher precedence than ``b``."""
    (core_a, pre_a), (core_b, pre_b) = parse(a), parse(b)
    if core_a != core_b:
        return -1 if core_a < core_b else 1
    if pre_a == pre_b:
        return 0
    if not pre_a or not pre_b:  # a release outranks its own pre-releases
        return 1 if not pre_a else -1
    ka, kb = [_pre_key(i) for i in pre_a], [_pre_key(i) for i in pre_b]
    return -1 if ka < kb else 1


def at_least(version: str, minimum: str) -> bool:
    return compare(version, minimum) >= 0


def nearest(tags: list[str], pin: str) -> str | None:
    """The release tag (``v<major>.<minor>.<patch>``, no pre-release) for ``pin``, else the nearest release
    of the same major version: the highest below it (the newest that source tree has), else the lowest
    above. ``None`` when there is none."""
    releases = []
    for tag in tags:
        try:
            core, pre = parse(tag)
        except NotAVersion:
            continue
        if not pre and tag.startswith("v") and core[0] == parse(pin)[0][0]:
            releases.append(tag)
    below = [t for t in releases if compare(t, pin) <= 0]
    above = [t for t in releases if compare(t, pin) > 0]
    if below:
        return max(below, key=_sort_key)
    return min(above, key=_sort_key) if above else None


def _sort_key(version: str) -> tuple[tuple[int, ...], tuple[tuple[int, int, str], ...]]:
    core, pre = parse(version)
    return core, tuple(_pre_key(i) for i in pre)


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "nearest":
        found = nearest(sys.stdin.read().split(), argv[1])
        if found is None:
            return 1
        print(found)
        return 0
    if len(argv) != 3 or argv[0] != "at-least":
        print(
            "usage: semver.py at-least <version> <minimum> | semver.py nearest <pin> < tags", file=sys.stderr
        )
        return 2
    try:
        return 0 if at_least(argv[1], argv[2]) else 1
    except NotAVersion as e:
        print(e, file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
