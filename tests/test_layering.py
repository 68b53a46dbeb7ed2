"""The layers stay apart: pure domain code, thin components, policies that share the domain code."""

from __future__ import annotations

import ast
import subprocess
import sys
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
        "cli",
    }


def test_the_entry_point_only_hands_over_to_the_command_line() -> None:
    assert _imports(PROJECT / "nodefleet" / "__main__.py") == {"sys", "cli"}


def test_importing_the_domain_package_loads_no_pulumi() -> None:
    modules = [p.stem for p in _modules("nodefleet") if p.name not in ("__main__.py", "__init__.py")]
    code = (
        "import sys\n"
        + "".join(f"import nodefleet.{m}\n" for m in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'cli', 'harness')))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("path", _modules("components"), ids=lambda p: p.name)
def test_components_do_not_reach_into_policies_or_the_harness(path: Path) -> None:
    assert not _imports(path) & {"policies", "harness", "pulumi_policy", "cli"}


@pytest.mark.parametrize(
    "path", [p for p in _modules("policies") if p.name != "__main__.py"], ids=lambda p: p.name
)
def test_policies_share_domain_code_and_never_build_resources(path: Path) -> None:
    assert not _imports(path) & {"components", "pulumi_kubernetes", "pulumi_aws", "harness", "cli"}
    assert "PolicyPack(" not in path.read_text(), "only policies/__main__.py builds the PolicyPack"


def test_main_is_a_table_of_contents() -> None:
    source = (PROJECT / "__main__.py").read_text()
    assert len([line for line in source.splitlines() if line.strip()]) <= 12
    assert _imports(PROJECT / "__main__.py") <= {"pathlib", "pulumi", "components"}


@pytest.mark.parametrize("path", _modules("harness"), ids=lambda p: p.name)
def test_the_harness_is_a_library_below_the_command_line(path: Path) -> None:
    assert "cli" not in _imports(path)
