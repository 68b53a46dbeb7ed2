"""Karpenter's own ``Hash()`` and drift checks, one Go build per supported Karpenter minor.

Each ``karpenter-<minor>/`` folder is a Go module pinning one aws/karpenter-provider-aws release and the
sigs.k8s.io/karpenter release it was built with (its ``go.mod`` and ``go.sum``); all build the one program in
``src/`` (:mod:`tests.goref` assembles each build). A Go program cannot import two versions of one module,
hence one build per minor. The binaries are built on first use.

    venv/bin/python -m tests.karpenter_hash.reference --write    # rewrite nodefleet/hashtypes/ from Go
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from nodefleet.drift.karpenter_hash import HASH_TYPES_DIR, SUPPORTED_KARPENTER
from tests import goref

HERE = Path(__file__).resolve().parent
#: The program every version folder builds: the reference itself and the linkname stub it needs.
PROGRAM = (HERE / "src" / "main.go", HERE / "src" / "linkname.s")
#: The module versions each reference pins. aws v1.12.0/v1.15.0 are used where nodefleet ships the CRDs
#: of v1.12.1/v1.15.1: their pkg/apis and pkg/cloudprovider/drift.go are byte for byte the same, and the
#: later patches need modules the proxy does not serve (tools/kompat for v1.12.1, core v1.15.1).
MODULES = {
    "1.12": {"github.com/aws/karpenter-provider-aws": "v1.12.0", "sigs.k8s.io/karpenter": "v1.12.0"},
    "1.13": {"github.com/aws/karpenter-provider-aws": "v1.13.1", "sigs.k8s.io/karpenter": "v1.13.0"},
    "1.14": {"github.com/aws/karpenter-provider-aws": "v1.14.3", "sigs.k8s.io/karpenter": "v1.14.3"},
    "1.15": {"github.com/aws/karpenter-provider-aws": "v1.15.0", "sigs.k8s.io/karpenter": "v1.15.0"},
}


def folder(minor: str) -> Path:
    return HERE / f"karpenter-{minor}"


class Reference:
    """One reference binary: each batch of requests is answered by one run of it, line by line."""

    def __init__(self, minor: str) -> None:
        self.minor = minor
        self.binary = goref.build(folder(minor), shared=PROGRAM)

    def ask_many(self, requests: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
        """Answers to ``requests``, in order (one process for the batch)."""
        payload = "".join(json.dumps(r) + "\n" for r in requests)
        result = subprocess.run(
            [str(self.binary)], input=payload, capture_output=True, text=True, timeout=600, check=False
        )
        if result.returncode != 0:
            raise RuntimeError(f"reference {self.minor} failed:\n{result.stderr[-4000:]}")
        return [json.loads(line) for line in result.stdout.splitlines()]

    def ask(self, request: Mapping[str, Any]) -> dict[str, Any]:
        return self.ask_many([request])[0]

    def types(self) -> dict[str, Any]:
        """The hashed Go types, as ``nodefleet/hashtypes/karpenter-<minor>.json`` holds them."""
        doc = self.ask({"op": "types"})
        return {"minor": self.minor, **doc}


def hash_types_text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--write", action="store_true", help="rewrite nodefleet/hashtypes/ from the references"
    )
    args = parser.parse_args(argv)
    if args.write:
        HASH_TYPES_DIR.mkdir(exist_ok=True)
        for minor in SUPPORTED_KARPENTER:
            dest = HASH_TYPES_DIR / f"karpenter-{minor}.json"
            dest.write_text(hash_types_text(Reference(minor).types()))
            print(f"wrote {dest.relative_to(HERE.parent.parent)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
