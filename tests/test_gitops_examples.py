"""The Argo CD and Flux examples: valid against the upstream CRDs, and pointing at folders the render creates."""

from __future__ import annotations

import fnmatch
import gzip
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from harness.mockrun import run_program
from harness.snapshots import plan_of
from tests.conftest import PROJECT
from tests.crdschema import _strip

CRDS = PROJECT / "tests" / "data" / "gitops-crds"
EXAMPLES = PROJECT / "examples"
STACKS = sorted(
    p.name.removeprefix("Pulumi.").removesuffix(".yaml") for p in (PROJECT / "stacks").glob("Pulumi.*.yaml")
)


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(CRDS.glob("*.yaml.gz")):
        crd = yaml.safe_load(gzip.decompress(path.read_bytes()))
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            found[key] = _strip(version["schema"]["openAPIV3Schema"])
    return found


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


@cache
def _render_folders() -> frozenset[str]:
    """rendered/<stack>/<cluster> for every folder the example stacks render (as `scripts/pipeline publish`)."""
    folders = set()
    for stack in STACKS:
        for f in plan_of(run_program(stack)).files:
            folders.add(f"rendered/{stack}/{Path(f.target).name}")
    return frozenset(folders)


@pytest.mark.parametrize(
    "path", sorted(EXAMPLES.rglob("*.yaml")), ids=lambda p: p.relative_to(EXAMPLES).as_posix()
)
def test_examples_are_valid_against_the_upstream_crds(path: Path) -> None:
    for doc in _documents(path):
        schema = _schemas()[(doc["apiVersion"], doc["kind"])]
        jsonschema.Draft202012Validator(schema).validate(doc)


def test_a_schema_violation_is_caught() -> None:
    (appset,) = _documents(EXAMPLES / "argocd" / "applicationset.yaml")
    appset["spec"]["generators"][0]["git"]["directories"] = "rendered/*/*"  # a string, not a list
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_schemas()[("argoproj.io/v1alpha1", "ApplicationSet")]).validate(
            appset
        )


def test_applicationset_selects_exactly_the_render_folders() -> None:
    (appset,) = _documents(EXAMPLES / "argocd" / "applicationset.yaml")
    patterns = [d["path"] for g in appset["spec"]["generators"] for d in g["git"]["directories"]]
    folders = _render_folders()
    # Argo CD's git generator matches directories with path.Match semantics: `*` never crosses a `/`.
    candidates = folders | {f"{f}/1-manifest" for f in folders} | {str(Path(f).parent) for f in folders}
    matched = {
        c for c in candidates if any(fnmatch.fnmatch(c, p) and c.count("/") == p.count("/") for p in patterns)
    }
    assert matched == folders
    assert appset["spec"]["template"]["spec"]["source"]["directory"]["recurse"] is True


def test_flux_kustomizations_point_at_render_folders() -> None:
    docs = _documents(EXAMPLES / "flux" / "kustomizations.yaml")
    sources = {d["metadata"]["name"] for d in docs if d["kind"] == "GitRepository"}
    kustomizations = [d for d in docs if d["kind"] == "Kustomization"]
    assert kustomizations
    for k in kustomizations:
        assert k["spec"]["sourceRef"]["name"] in sources
        assert k["spec"]["path"].removeprefix("./") in _render_folders(), k["spec"]["path"]
    names = {k["metadata"]["name"] for k in kustomizations}
    assert all(dep["name"] in names for k in kustomizations for dep in k["spec"].get("dependsOn", []))


def test_both_examples_follow_the_branch_the_pipeline_publishes() -> None:
    workflow = yaml.safe_load((PROJECT / ".github" / "workflows" / "nodefleet.yaml").read_text())
    branch = workflow["env"]["GITOPS_BRANCH"]
    (appset,) = _documents(EXAMPLES / "argocd" / "applicationset.yaml")
    assert appset["spec"]["template"]["spec"]["source"]["targetRevision"] == branch
    repo = next(
        d for d in _documents(EXAMPLES / "flux" / "kustomizations.yaml") if d["kind"] == "GitRepository"
    )
    assert repo["spec"]["ref"]["branch"] == branch
