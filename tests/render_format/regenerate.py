"""Rebuild the render-format reference: ``python -m tests.render_format.regenerate`` (needs Go).

Writes ``cases.json`` (every Kubernetes object the example stacks register, exactly as the program hands it
to the provider, plus a corpus of values that exercise each serialization rule) and runs ``main.go``, which
writes ``expected.json`` with the bytes the Kubernetes provider's render mode produces for each case.
``tests/test_render_format.py`` checks nodefleet's serializer against every case.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
EXAMPLE_STACKS = ("dev", "hosted", "karpenter", "rhel10")

PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIBszCCAVmgAwIBAgIUQ2V0LWNhLWZvci10ZXN0cy1vbmx5MAoGCCqGSM49BAMC\n"
    "MA8xDTALBgNVBAMMBHRlc3QwHhcNMjYwMTAxMDAwMDAwWhcNMzYwMTAxMDAwMDAw\n"
    "-----END CERTIFICATE-----\n"
)
LONG_WORDS = " ".join(["nodefleet renders every MachineSet of the stack"] * 4)

#: Values that exercise one rule each: quoting of text that reads back as another type, folding of long
#: text, block scalars and their chomping hints, escapes, numbers as Go's JSON writes them, key order.
CORPUS: dict[str, Any] = {
    "strings-that-read-back-as-other-types": {
        "data": {
            f"k{i:02d}": v
            for i, v in enumerate(
                [
                    "",
                    "0",
                    "00",
                    "08",
                    "1",
                    "-1",
                    "+1",
                    "1.5",
                    ".5",
                    "1.",
                    "1e3",
                    "1e999",
                    "0x1F",
                    "0o17",
                    "0b101",
                    "1_000",
                    "12:30",
                    "190:20:30.15",
                    "true",
                    "True",
                    "yes",
                    "no",
                    "on",
                    "off",
                    "y",
                    "n",
                    "null",
                    "Null",
                    "~",
                    ".inf",
                    "-.inf",
                    ".nan",
                    "<<",
                    "2001-12-14",
                    "2001-12-14t21:59:43.10-05:00",
                    "2001-12-14 21:59:43.10",
                    "2001-02-30",
                    "2001-12-14T21:59:43Z",
                    "2001-12-14T21:59:43",
                    "2001-12-14 21:59:43,10",
                    "2001-12-14 25:00:00",
                    "2001-12-14 21:59:43Z",
                    "inf",
                    "+inf",
                    "nan",
                    "5.0.0-ec.2",
                    "4.22.3",
                    "1000",
                    "10%",
                    "720h",
                    "ami-06a6b025350ff1e23",
                ]
            )
        }
    },
    "strings-with-indicators": {
        "data": {
            f"k{i:02d}": v
            for i, v in enumerate(
                [
                    "- a",
                    "-a",
                    ": x",
                    "a: b",
                    "a:b",
                    "#c",
                    "a #b",
                    "a#b",
                    "*x",
                    "&a",
                    "!t",
                    "%p",
                    "@x",
                    "`x",
                    "'q",
                    "it's",
                    '"dq',
                    "[a]",
                    "{a}",
                    "a, b",
                    "?x",
                    "? x",
                    "|x",
                    ">x",
                    "---",
                    "...",
                    "x ",
                    " x",
                    "a  b",
                    "0 9 * * mon-fri",
                    "kubernetes.io/arch=amd64",
                    "s3://bucket/prefix/key.ign",
                    "https://api-int.example.com:22623/config/worker",
                ]
            )
        }
    },
    "multi-line-strings": {
        "pem": PEM,
        "noTrailingNewline": "line one\nline two",
        "twoTrailingNewlines": "line one\n\n",
        "onlyNewline": "\n",
        "leadingSpace": "  indented\nnext\n",
        "leadingNewline": "\nafter a blank line\n",
        "trailingSpaceOnALine": "a \nb\n",
        "crlfPem": PEM.replace("\n", "\r\n"),
        "tab": "a\tb",
        "lineSeparator": "a\u2028b",
        "lastIsPlus": "end\n\n",
    },
    "long-strings": {
        "plain": LONG_WORDS,
        "noSpaces": "x" * 150,
        "url": "https://" + "a" * 70 + ".example.com/" + "b" * 40,
        "singleQuoted": "'" + LONG_WORDS,
        "doubleQuoted": "\t" + LONG_WORDS,
        "doubleSpaces": LONG_WORDS.replace(" ", "  "),
        "nested": {"deeper": {"still": {"text": LONG_WORDS}}},
        "inList": [LONG_WORDS, {"k": LONG_WORDS}],
    },
    "unicode": {
        "latin": "é à ü",
        "cjk": "節点",
        "emoji": "nodes 🚀",
        "nel": "a\x85b",
        "bom": "\ufeffx",
        "nbsp": "a\xa0b",
        "control": "a\x01b",
        "nul": "a\x00b",
        "escapedByJson": "<a & b>",
    },
    # encoding/json leaves these raw, and go-yaml's reader refuses them: the provider cannot render them.
    "unrenderable-del": {"data": {"k": "a\x7fb"}},
    "unrenderable-c1": {"data": {"k": "a\x80b"}},
    "unrenderable-noncharacter": {"data": {"k": "a\uffffb"}},
    "unrenderable-key": {"data": {"a\x7fb": "v"}},
    "numbers": {
        "replicas": 3.0,
        "volumeSize": 120.0,
        "zero": 0.0,
        "negativeZero": -0.0,
        "half": 1.5,
        "tenth": 0.1,
        "negative": -2.0,
        "big": 1e20,
        "bigger": 1e21,
        "small": 1.5e-7,
        "micro": 1e-6,
        "fractional": 123456789.5,
        "million": 1234567.5,
        "twoTo53": 9007199254740992.0,
        "twoTo60PlusSome": 1152921504606847232.0,
        "twoTo63": 9223372036854775808.0,
        "tenTo19": 1e19,
        "twoTo64": 18446744073709551616.0,
        "minusTenTo19": -1e19,
        "true": True,
        "false": False,
        "null": None,
    },
    "collections": {
        "emptyMap": {},
        "emptyList": [],
        "nestedLists": [[1, 2], [], [["a"]], [{}]],
        "listOfMaps": [{"b": 1, "a": 2}, {"c": [{"d": []}]}],
        "mapInMap": {"x": {"y": {"z": {}}}},
    },
    "key-order": {
        "data": {
            k: 1
            for k in [
                "a10",
                "a9",
                "a_b",
                "aB",
                "A",
                "_x",
                "1",
                "10",
                "2",
                "a0",
                "a00",
                "a01",
                "a1",
                "b",
                "B",
                "é",
                "z",
                "-",
                ".",
                "a.b",
                "a-b",
                "a/b",
                "machine.openshift.io/cluster-api-machine-role",
                "machine.openshift.io/cluster-api-machine-type",
                "machine.openshift.io/cluster-api-machineset",
                "node-role.kubernetes.io/infra",
                "x2y10",
                "x2y9",
                "x02",
                "x2",
            ]
        }
    },
    "keys-that-need-quotes": {
        "data": {
            "": "empty key",
            "true": 1,
            "a: b": 2,
            "k" * 128: "128-byte key",
            "k" * 129: "129-byte key",
            "é" * 64: "128 bytes in 64 characters",
            "line\nbreak": 3,
        }
    },
}


def example_objects() -> dict[str, Any]:
    """Every Kubernetes object of every example stack, as the program registers it (numbers as floats)."""
    from mockruntime.rendering import kubernetes_objects
    from mockruntime.run import run_program

    cases: dict[str, Any] = {}
    for stack in EXAMPLE_STACKS:
        for target, path, manifest, _ in kubernetes_objects(run_program(stack), "rendered/" + stack):
            cases[f"{stack}:{Path(target).name}/{path}"] = manifest
    return cases


def main() -> None:
    cases = {**{f"corpus:{k}": v for k, v in CORPUS.items()}, **example_objects()}
    (HERE / "cases.json").write_text(json.dumps(cases, indent=1, sort_keys=True, ensure_ascii=False) + "\n")
    subprocess.run(["go", "run", "."], cwd=HERE, check=True)
    print(f"{len(cases)} cases -> {HERE / 'expected.json'}")


if __name__ == "__main__":
    main()
