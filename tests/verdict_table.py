"""The verdict table: catalog form x stream x release x bootImage mode -> what ``check --json`` says.

Each cell is one small stack file run through ``python -m nodefleet check --json`` (in process): one
standalone cluster in us-east-1 whose default OS stream is left to its release, with one MachineSet in the
worker pool or in a custom pool with ``osImageStream: rhel-10``. ``python -m tests.verdict_table`` prints
the Markdown table docs/boot-image-catalogs.md shows (``--json``: the cells); ``tests/test_verdict_table.py``
checks cells of it and that the copy in the docs is current.
"""

from __future__ import annotations

import contextlib
import io
import json
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from cli.main import main

#: (label, catalog path relative to the project): every catalog the project ships.
CATALOGS: tuple[tuple[str, str], ...] = (
    ("ConfigMap 4.10 (`data.stream`, RHEL 8.4)", "catalogs/coreos-bootimages-4.10.yaml"),
    ("stream JSON 4.16 (RHEL 9.4)", "catalogs/rhcos-4.16.json"),
    ("ConfigMap 5.0 (`data.stream` + `data.streams`)", "catalogs/coreos-bootimages-5.0.yaml"),
    ("bare rhel-10 stream JSON (5.0's `data.streams.rhel-10`)", "catalogs/coreos-rhel-10-5.0.0-ec.2.json"),
)
#: (label, MachineSet stream, osImageStream of the custom pool it joins; None: the worker pool).
STREAMS: tuple[tuple[str, str, str | None], ...] = (
    ("rhel-9", "rhel-9", None),
    ("rhel-10", "rhel-10", None),
    ("rhel-10, pool rhel-10", "rhel-10", "rhel-10"),
)
MODES = ("managed", "pinned")
RELEASES = ("4.10.3", "4.21.0", "4.22.3", "5.0.0-ec.2")

#: Message phrase -> short verdict, for findings of check and for configuration errors (exit 2).
_FINDINGS = (
    ("older than the boot image floor", "below-floor"),
    ("cross-stream rebase", "rhel-9 image, rhel-10 pool"),
    ("not a supported state", "rhel-10 image, rhel-9 pool"),
    ("downgrade their OS", "newer RHEL than the release"),
    ("RHEL 8 -> 10", "RHEL 8 -> 10"),
    ("records a Manual boot image skew record", "skew record"),
    ("does not ship", "stream not shipped"),
)
_REFUSALS = (
    ("not a supported state", "rhel-10 image, rhel-9 pool"),
    ("downgrade their OS", "newer RHEL than the release"),
    ("only possible on the rhel-9 stream", "managed needs rhel-9"),
    ("is not in boot image catalog", "stream not in catalog"),
)


@dataclass(frozen=True)
class Cell:
    catalog: str
    stream: str
    mode: str
    release: str
    exit_code: int
    verdict: str


def _stack(catalog: str, stream: str, pool_stream: str | None, mode: str, release: str) -> dict[str, object]:
    machine_set = {"name": "worker", "zone": "us-east-1a", "stream": stream, "bootImage": mode}
    pools = []
    if pool_stream is not None:
        pools = [{"name": "custom", "osImageStream": pool_stream}]
        machine_set["pool"] = "custom"
    return {
        "config": {
            "nodefleet:fleet": {
                "clusters": [
                    {
                        "name": "t",
                        "infraId": "t-4x9q2",
                        "region": "us-east-1",
                        "release": release,
                        "catalog": catalog,
                        "pools": pools,
                        "machineSets": [machine_set],
                    }
                ]
            }
        }
    }


def _check(stack_file: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["check", "--config-file", str(stack_file), "--json"])
    return code, out.getvalue(), err.getvalue()


def _verdict(code: int, stdout: str, stderr: str) -> str:
    if code == 2:
        reason = next((short for phrase, short in _REFUSALS if phrase in stderr), stderr.strip())
        return f"refused: {reason}"
    found = []
    for v in json.loads(stdout)["violations"]:
        short = next((s for phrase, s in _FINDINGS if phrase in v["message"]), v["policy"])
        found.append(f"{'**mandatory**' if v['level'] == 'mandatory' else 'advice'}: {short}")
    return "; ".join(dict.fromkeys(found)) or "ok"


def cells() -> Iterator[Cell]:
    with tempfile.TemporaryDirectory() as tmp:
        for label, catalog in CATALOGS:
            for stream_label, stream, pool_stream in STREAMS:
                for mode in MODES if pool_stream is None else ("pinned",):
                    for release in RELEASES:
                        stack = _stack(catalog, stream, pool_stream, mode, release)
                        stack_file = Path(tmp) / "Pulumi.verdict.yaml"
                        stack_file.write_text(yaml.safe_dump(stack))
                        code, stdout, stderr = _check(stack_file)
                        yield Cell(label, stream_label, mode, release, code, _verdict(code, stdout, stderr))


def markdown(table: list[Cell]) -> str:
    lines = [
        f"| catalog | stream | bootImage | {' | '.join(RELEASES)} |",
        f"|---|---|---|{'---|' * len(RELEASES)}",
    ]
    rows: dict[tuple[str, str, str], dict[str, Cell]] = {}
    for cell in table:
        rows.setdefault((cell.catalog, cell.stream, cell.mode), {})[cell.release] = cell
    for (catalog, stream, mode), by_release in rows.items():
        verdicts = " | ".join(by_release[r].verdict for r in RELEASES)
        lines.append(f"| {catalog} | {stream} | {mode} | {verdicts} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    table = list(cells())
    if sys.argv[1:] == ["--json"]:
        json.dump([asdict(c) for c in table], sys.stdout, indent=1)
    else:
        sys.stdout.write(markdown(table))
