"""What ``engine/bootstrap`` put in place, read from ``.engine/status`` (one ``<part>: ok …`` or
``<part>: missing: <reason>`` line per part, and for a part whose download or build failed a
``<part>.attempt: v<version> failed <time>; inputs <fingerprint>`` line the bootstrap does not retry while
the inputs stay the same, and for a part built from a source tree a ``<part>.source: …`` line saying what
it was built from), for the engine tests, the benchmark and the command line."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = Path(__file__).resolve().parent.parent
STATUS_FILE = PROJECT / ".engine" / "status"

#: Every part the bootstrap reports, in its order.
PARTS = ("venv", "pulumi", "pulumi-language-python", "kubernetes", "aws")
#: Parts without which no stack previews: the CLI, the Python language host, the Kubernetes provider.
#: The AWS provider is needed only by stacks that declare AWS resources (self-managed Karpenter).
CORE = ("pulumi", "pulumi-language-python", "kubernetes")
#: ``<part>.attempt``: a failed acquisition the bootstrap remembers.
ATTEMPT_SUFFIX = ".attempt"
#: ``<part>.source``: where a part built from a source tree came from (release tag, commit, tree, Go modules
#: the proxy did not serve, files the tree lacked and what stood in for them).
SOURCE_SUFFIX = ".source"


@dataclass(frozen=True)
class EngineStatus:
    #: part -> "ok …" detail or "missing: reason"
    parts: dict[str, str] = field(default_factory=dict)
    #: part -> "v<version> failed <time>; inputs <fingerprint>": failed acquisitions, not retried
    attempts: dict[str, str] = field(default_factory=dict)
    #: False when the bootstrap never ran here (no status file).
    recorded: bool = True
    #: part -> where it was built from, for parts built from a source tree
    sources: dict[str, str] = field(default_factory=dict)

    def missing(self, needs: tuple[str, ...] | list[str] | set[str] = PARTS) -> dict[str, str]:
        """Needed parts that are absent, with the recorded reason."""
        out: dict[str, str] = {}
        for part in needs:
            state = self.parts.get(part)
            if state is None:
                out[part] = "not recorded in .engine/status: run `make setup`"
            elif not state.startswith("ok"):
                out[part] = state.removeprefix("missing: ")
        return out

    @property
    def cli(self) -> Path | None:
        """The Pulumi CLI the bootstrap chose (``pulumi: ok v<version> at <path>``)."""
        m = re.match(r"ok v\S+ at (.+)$", self.parts.get("pulumi", ""))
        return Path(m[1]) if m else None

    @property
    def cli_version(self) -> str | None:
        m = re.match(r"ok (v\S+)", self.parts.get("pulumi", ""))
        return m[1] if m else None


def read_status(path: Path = STATUS_FILE) -> EngineStatus:
    if not path.exists():
        return EngineStatus({}, recorded=False)
    parts: dict[str, str] = {}
    attempts: dict[str, str] = {}
    sources: dict[str, str] = {}
    for line in path.read_text().splitlines():
        part, sep, state = line.partition(": ")
        if not sep:
            continue
        part = part.strip()
        if part.endswith(ATTEMPT_SUFFIX):
            attempts[part.removesuffix(ATTEMPT_SUFFIX)] = state.strip()
        elif part.endswith(SOURCE_SUFFIX):
            sources[part.removesuffix(SOURCE_SUFFIX)] = state.strip()
        else:
            parts[part] = state.strip()
    return EngineStatus(parts, attempts, sources=sources)
