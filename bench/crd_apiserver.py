"""``crd-schema`` against the API server's own Go strategy, side by side, on the differential corpus.

Both judge the same cases (tests/crd_corpus.py: every served version of every shipped CRD, the edge CRDs,
creates by default), each in a process of its own that starts cold, reads the CRD files it needs and judges
every case: the Go reference (tests/apiserver_reference, k8s.io/apiextensions-apiserver's decoding and
``customresource`` strategy, built by tests/goref.py) reading JSON lines, and ``python -m bench.crd_apiserver
--judge`` running ``crd_schema.validate_object`` over the same objects. The CPU seconds of each process
(user + system, from ``getrusage(RUSAGE_CHILDREN)``) are compared, with the Python side's start-up (imports,
CRD loading) measured on its own, so what a change cuts is visible. Runs alternate, so load on a shared
machine sways both alike.

    venv/bin/python -m bench.crd_apiserver                 # creates, 3 runs each
    venv/bin/python -m bench.crd_apiserver --updates --runs 5 --json
"""

from __future__ import annotations

import argparse
import importlib
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _timed(argv: list[str], stdin: Path) -> tuple[float, float, str]:
    """(CPU seconds, wall seconds, stdout) of one child process."""
    before, started = _cpu(), time.perf_counter()
    with stdin.open("rb") as source:
        done = subprocess.run(argv, stdin=source, capture_output=True, check=True)
    return _cpu() - before, time.perf_counter() - started, done.stdout.decode()


def _crd_versions(cases: list[dict[str, Any]]) -> dict[tuple[str, str], Any]:
    """The CrdVersion of each (CRD file, version) the cases name: the shipped index's, else read from the file
    as the index reads one (the edge CRDs)."""
    import yaml

    from nodefleet.apiserver.store import CRD_DIR, CrdVersion, ShippedCrd, load_index

    shipped = {(str(CRD_DIR / v.crd.file), v.version): v for v in load_index().all_versions()}
    out: dict[tuple[str, str], Any] = {}
    for key in {(c["crd"], c["version"]) for c in cases}:
        if key in shipped:
            out[key] = shipped[key]
            continue
        doc = yaml.load(Path(key[0]).read_text(encoding="utf-8"), Loader=yaml.CSafeLoader)
        version = next(v for v in doc["spec"]["versions"] if v["name"] == key[1])
        sub = version.get("subresources") or {}
        crd = ShippedCrd(
            file=key[0],
            name=doc["metadata"]["name"],
            group=doc["spec"]["group"],
            kind=doc["spec"]["names"]["kind"],
            scope=doc["spec"]["scope"],
            versions=(key[1],),
            sources=(),
            sha256="",
        )
        out[key] = CrdVersion(
            crd=crd,
            version=key[1],
            schema=version["schema"]["openAPIV3Schema"],
            status_subresource="status" in sub,
            scale_replicas_path=str((sub.get("scale") or {}).get("specReplicasPath") or ""),
        )
    return out


def judge(lines: Iterator[str]) -> dict[str, Any]:
    """crd-schema over the reference's JSON lines; the counts, and the CPU seconds start-up took."""
    started = time.process_time()
    from nodefleet.apiserver.schema import validate_object

    cases = [json.loads(line) for line in lines if line.strip()]
    crds = _crd_versions(cases)
    startup = time.process_time() - started
    refused = 0
    for case in cases:
        findings = validate_object(
            case["object"], crds[(case["crd"], case["version"])], old=case.get("oldObject"), installed=True
        )
        refused += any(f.blocking for f in findings)
    return {"cases": len(cases), "refused": refused, "startupCpu": round(startup, 3)}


def _corpus_file(seed: int, updates: bool, folder: Path) -> tuple[Path, int]:
    # The test suite's corpus and reference builder (imported by name: the suite is not part of the typed code).
    corpus_module = importlib.import_module("tests.crd_corpus")
    cases = [c for c in corpus_module.corpus(seed) if (c.old is not None) == updates]
    path = folder / "cases.jsonl"
    lines = (json.dumps(corpus_module.reference_case(c), separators=(",", ":")) + "\n" for c in cases)
    path.write_text("".join(lines))
    return path, len(cases)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.crd_apiserver", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--seed", type=int, default=17)
    parser.add_argument("--updates", action="store_true", help="the corpus's updates instead of its creates")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--judge", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.judge:
        print(json.dumps(judge(iter(sys.stdin.readline, ""))))
        return 0
    goref = importlib.import_module("tests.goref")
    reference = goref.build(Path(__file__).resolve().parent.parent / "tests" / "apiserver_reference")
    rows: dict[str, list[tuple[float, float]]] = {"go": [], "crd-schema": []}
    startups: list[float] = []
    with tempfile.TemporaryDirectory() as tmp:
        path, n = _corpus_file(args.seed, args.updates, Path(tmp))
        for _ in range(args.runs):
            cpu, wall, _ = _timed([str(reference)], path)
            rows["go"].append((cpu, wall))
            cpu, wall, out = _timed([sys.executable, "-m", "bench.crd_apiserver", "--judge"], path)
            rows["crd-schema"].append((cpu, wall))
            startups.append(float(json.loads(out)["startupCpu"]))
    result = {
        "cases": n,
        "kind": "updates" if args.updates else "creates",
        "seed": args.seed,
        "runs": args.runs,
        "goCpu": [round(c, 2) for c, _ in rows["go"]],
        "crdSchemaCpu": [round(c, 2) for c, _ in rows["crd-schema"]],
        "crdSchemaStartupCpu": [round(s, 2) for s in startups],
        "goWall": [round(w, 2) for _, w in rows["go"]],
        "crdSchemaWall": [round(w, 2) for _, w in rows["crd-schema"]],
    }
    go, ours = statistics.median(result["goCpu"]), statistics.median(result["crdSchemaCpu"])
    result["ratio"] = round(ours / go, 2) if go else None
    if args.json:
        print(json.dumps(result, indent=2))
    else:
        print(f"{n} {result['kind']} (seed {args.seed}), {args.runs} alternating runs, CPU seconds (median):")
        print(f"  API server strategy (Go): {go:.2f}   runs {result['goCpu']}")
        print(f"  crd-schema (Python):      {ours:.2f}   runs {result['crdSchemaCpu']}")
        print(f"  crd-schema start-up:      {statistics.median(startups):.2f}   (imports, CRD loading)")
        print(f"  ratio crd-schema / Go:    {result['ratio']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
