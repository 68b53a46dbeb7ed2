"""The layers stay apart: pure domain code, thin components, policies that share the domain code."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import PROJECT


def _imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {a.name.split(".")[0] for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found


def _modules(package: str) -> list[Path]:
    return sorted((PROJECT / package).glob("*.py"))


@pytest.mark.parametrize(
    "path", [p for p in _modules("nodefleet") if p.name != "__main__.py"], ids=lambda p: p.name
)
def test_domain_code_imports_no_pulumi(path: Path) -> None:
    assert not _imports(path) & {
        "pulumi",
        "pulumi_kubernetes",
        "pulumi_aws",
        "pulumi_policy",
        "components",
        "policies",
        "harness",
    }


@pytest.mark.parametrize("path", _modules("components"), ids=lambda p: p.name)
def test_components_do_not_reach_into_policies_or_the_harness(path: Path) -> None:
    assert not _imports(path) & {"policies", "harness", "pulumi_policy"}


@pytest.mark.parametrize(
    "path", [p for p in _modules("policies") if p.name != "__main__.py"], ids=lambda p: p.name
)
def test_policies_share_domain_code_and_never_build_resources(path: Path) -> None:
    assert not _imports(path) & {"components", "pulumi_kubernetes", "pulumi_aws", "harness"}
    assert "PolicyPack(" not in path.read_text(), "only policies/__main__.py builds the PolicyPack"


def test_main_is_a_table_of_contents() -> None:
    source = (PROJECT / "__main__.py").read_text()
    assert len([line for line in source.splitlines() if line.strip()]) <= 12
    assert _imports(PROJECT / "__main__.py") <= {"pathlib", "pulumi", "components"}
