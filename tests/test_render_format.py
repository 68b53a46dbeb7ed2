"""`nodefleet render` writes the bytes the Kubernetes provider's render mode writes.

The reference in tests/render_format/expected.json was produced by the provider's own two calls
(encoding/json, then sigs.k8s.io/yaml.JSONToYAML; see main.go there) for every object of the example stacks
and for a corpus of awkward values. The hand-written expectations below pin the rules a reviewer can check
by eye.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mockruntime.rendering import plan_render
from mockruntime.run import run_program
from nodefleet.render.provider_yaml import dump_manifest, go_number
from tests.conftest import PROJECT
from tests.crdschema import _schemas

REFERENCE = PROJECT / "tests" / "render_format"


@cache
def _reference() -> tuple[dict[str, Any], dict[str, str]]:
    cases = json.loads((REFERENCE / "cases.json").read_text())
    expected = json.loads((REFERENCE / "expected.json").read_text())
    return cases, expected


@pytest.mark.parametrize("case", sorted(_reference()[0]))
def test_bytes_equal_the_providers(case: str) -> None:
    cases, expected = _reference()
    want = expected[case]
    if want.startswith("error: "):
        with pytest.raises(ValueError, match="cannot be rendered"):
            dump_manifest(cases[case])
        return
    assert dump_manifest(cases[case]).decode() == want


def test_the_reference_covers_every_example_stack() -> None:
    cases, _ = _reference()
    stacks = {name.split(":")[0] for name in cases}
    assert {"dev", "hosted", "karpenter", "rhel10"} <= stacks
    assert sum(name.startswith("dev:") for name in cases) == 6


def _dump(obj: dict[str, Any]) -> str:
    return dump_manifest(obj).decode()


def test_scalars_that_would_read_back_as_another_type_are_double_quoted() -> None:
    assert _dump({"a": "", "b": "0", "c": "true", "d": "1.5", "e": "yes", "f": "null", "g": "12:30"}) == (
        'a: ""\nb: "0"\nc: "true"\nd: "1.5"\ne: "yes"\nf: "null"\ng: "12:30"\n'
    )
    # Text that reads back as text stays plain, even when it looks like a version or a percentage.
    assert _dump({"a": "5.0.0-ec.2", "b": "10%", "c": "720h", "d": "0 9 * * mon-fri"}) == (
        "a: 5.0.0-ec.2\nb: 10%\nc: 720h\nd: 0 9 * * mon-fri\n"
    )
    # Indicators make the emitter fall back to single quotes, as libyaml does.
    assert _dump({"a": "- x", "b": "a: b", "c": "#c", "d": "x "}) == "a: '- x'\nb: 'a: b'\nc: '#c'\nd: 'x '\n"


def test_numbers_are_written_as_gos_json_writes_them() -> None:
    # The mock runtime (like the engine) carries every number as a float64.
    assert _dump({"replicas": 3.0, "volumeSize": 120.0, "zero": -0.0, "half": 1.5}) == (
        "half: 1.5\nreplicas: 3\nvolumeSize: 120\nzero: 0\n"
    )
    assert [go_number(v) for v in (1e20, 1e21, 1.5e-7, 1234567.5, 2.0**63, 2.0**64)] == [
        "1e+20",  # integer text beyond uint64: go-yaml reads it back as a float
        "1e+21",
        "1.5e-07",
        "1.2345675e+06",
        "9223372036854776000",  # shortest digits, then read back as a uint64
        "1.8446744073709552e+19",
    ]
    assert _dump({"t": True, "f": False}) == "f: false\nt: true\n"
    with pytest.raises(ValueError, match="infinity or NaN"):
        dump_manifest({"x": float("inf")})


def test_lists_sit_at_their_keys_column_and_empty_collections_are_flow() -> None:
    obj = {"blockDevices": [{"ebs": {"volumeSize": 120.0}}], "nested": [[1.0], []], "m": {}, "l": []}
    assert _dump(obj) == ("blockDevices:\n- ebs:\n    volumeSize: 120\nl: []\nm: {}\nnested:\n- - 1\n- []\n")


def test_multi_line_text_is_a_literal_block_with_the_right_chomping() -> None:
    pem = "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\n"
    assert _dump({"ca": pem}) == "ca: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\n"
    assert _dump({"a": "x\ny"}) == "a: |-\n  x\n  y\n"
    assert _dump({"a": "x\n\n"}) == "a: |+\n  x\n\n"
    # A line ending in a space cannot be a block: double quotes with escapes.
    assert _dump({"a": "x \ny\n"}) == 'a: "x \\ny\\n"\n'


def test_long_text_folds_at_80_columns() -> None:
    text = " ".join(["word"] * 30)
    out = _dump({"k": text})
    assert out.splitlines()[0] == "k: " + " ".join(["word"] * 16)
    assert max(len(line) for line in out.splitlines()) <= 84
    assert yaml.safe_load(out) == {"k": text}
    # No space, no fold.
    assert _dump({"k": "x" * 150}) == "k: " + "x" * 150 + "\n"


def test_keys_are_sorted_the_way_go_yaml_sorts_them() -> None:
    # Letters after other characters, digit runs by value: neither plain code-point order nor natural sort.
    assert list(yaml.safe_load(_dump(dict.fromkeys(["aB", "a_b", "a10", "a9", "b", "B"], 1)))) == [
        "B",
        "a_b",
        "a9",
        "a10",
        "aB",
        "b",
    ]


# --- every example stack, through the command's own plan ---------------------------------------------


def _strict_validator(schema: dict[str, Any]) -> jsonschema.Draft202012Validator:
    """JSON Schema counts 3.0 as an integer; the API server's structural schemas do not."""
    checker = jsonschema.Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _, v: isinstance(v, int) and not isinstance(v, bool)
    )
    cls = jsonschema.validators.extend(jsonschema.Draft202012Validator, type_checker=checker)
    return cls(schema)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stack", ["dev", "hosted", "karpenter", "rhel10"])
def test_rendered_files_have_integers_wherever_the_crd_says_integer(stack: str) -> None:
    plan = plan_render(run_program(stack), f"rendered/{stack}")
    assert plan.files
    for f in plan.files:
        text = f.content.decode()
        assert ".0\n" not in text, f"{f.relpath} still carries a float: {text}"
        manifest = yaml.safe_load(text)
        if manifest["apiVersion"] == "v1":
            assert manifest["kind"] == "Namespace"  # core kinds have no CRD; a Namespace has no integers
        else:
            _strict_validator(_schemas()[(manifest["apiVersion"], manifest["kind"])]).validate(manifest)
        # The bytes are a fixed point: what the provider would write for what it would read.
        assert dump_manifest(manifest) == f.content


def test_dev_renders_the_measured_file_set() -> None:
    plan = plan_render(run_program("dev"), "rendered/dev")
    assert sorted(f.relpath for f in plan.files) == [
        "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-infra-us-east-1a.yaml",
        "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-infra-us-east-1b.yaml",
        "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-worker-us-east-1a.yaml",
        "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-worker-us-east-1b.yaml",
        "dev/1-manifest/machineconfiguration.openshift.io_v1-machineconfigpool-default-infra.yaml",
        "dev/1-manifest/operator.openshift.io_v1-machineconfiguration-default-cluster.yaml",
    ]
    worker = next(f for f in plan.files if f.name == "dev-7xk2p-worker-us-east-1a").content.decode()
    assert "  replicas: 3\n" in worker
    assert "          blockDevices:\n          - ebs:\n" in worker
    assert worker.startswith("apiVersion: machine.openshift.io/v1beta1\nkind: MachineSet\nmetadata:\n")


def test_reference_program_is_the_one_described() -> None:
    main = (REFERENCE / "main.go").read_text()
    assert "yaml.JSONToYAML" in main and "json.NewEncoder" in main
    assert "sigs.k8s.io/yaml v1.6.0" in (REFERENCE / "go.mod").read_text()
    assert Path(REFERENCE / "go.sum").exists()
