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
    return sorted((PROJECT / package).rglob("*.py"))


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
        "mockruntime",
        "cli",
    }


def test_the_entry_point_only_hands_over_to_the_command_line() -> None:
    assert _imports(PROJECT / "nodefleet" / "__main__.py") == {"sys", "cli"}


def test_importing_the_domain_package_loads_no_pulumi() -> None:
    modules = [_module_name(p) for p in _modules("nodefleet") if p.name != "__main__.py"]
    code = (
        "import sys\n"
        + "".join(f"import {m}\n" for m in modules)
        + "print(sorted(m for m in sys.modules if m.split('.')[0] in ('pulumi', 'cli', 'mockruntime')))"
    )
    result = subprocess.run([sys.executable, "-c", code], cwd=PROJECT, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "[]"


@pytest.mark.parametrize("path", _modules("components"), ids=lambda p: p.name)
def test_components_do_not_reach_into_policies_or_the_harness(path: Path) -> None:
    assert not _imports(path) & {"policies", "mockruntime", "pulumi_policy", "cli"}


@pytest.mark.parametrize(
    "path", [p for p in _modules("policies") if p.name != "__main__.py"], ids=lambda p: p.name
)
def test_policies_share_domain_code_and_never_build_resources(path: Path) -> None:
    assert not _imports(path) & {"components", "pulumi_kubernetes", "pulumi_aws", "mockruntime", "cli"}
    assert "PolicyPack(" not in path.read_text(), "only policies/__main__.py builds the PolicyPack"


def test_main_is_a_table_of_contents() -> None:
    source = (PROJECT / "__main__.py").read_text()
    assert len([line for line in source.splitlines() if line.strip()]) <= 12
    assert _imports(PROJECT / "__main__.py") <= {"pathlib", "pulumi", "components"}


@pytest.mark.parametrize("path", _modules("mockruntime"), ids=lambda p: p.name)
def test_the_mock_runtime_is_a_library_below_the_command_line(path: Path) -> None:
    assert "cli" not in _imports(path)


#: The project's own packages, whose modules the import graph below is built from.
PACKAGES = ("nodefleet", "mockruntime", "cli", "policies", "components", "engine", "bench")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PROJECT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _graph() -> dict[str, set[str]]:
    """Every import between the project's modules, those inside functions included (a lazy import still
    makes a circle, it only hides it until run time)."""
    paths = {_module_name(p): p for package in PACKAGES for p in _modules(package)}
    graph: dict[str, set[str]] = {}
    for name, path in paths.items():
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        edges: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(
                        [*package.split(".")[: len(package.split(".")) - node.level + 1], base]
                    ).strip(".")
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in paths else base for a in node.names]
            for target in targets:
                while target and target not in paths:
                    target = target.rpartition(".")[0]
                if target and target != name and not name.startswith(f"{target}."):
                    edges.add(target)
        graph[name] = edges
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph[node]):
            if state.get(nxt) == 1:
                return [*stack[stack.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_no_import_circle_anywhere() -> None:
    cycle = _cycle(_graph())
    assert cycle is None, "import circle: " + " -> ".join(cycle or [])


def test_the_cycle_finder_finds_a_circle() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


#: The domain package's layers, bottom first: a module imports only from layers below its own, or from
#: its own subpackage. The root vocabulary (kinds, the render layout, reading files) imports nothing of nodefleet.
LAYERS = (
    ("nodefleet.kinds", "nodefleet.render_layout", "nodefleet.files"),
    ("nodefleet.bootimages", "nodefleet.apiserver"),
    ("nodefleet.stackfile",),
    ("nodefleet.render",),
    ("nodefleet.drift", "nodefleet.fleet", "nodefleet.adopt"),
)


def _layer(module: str) -> tuple[int, str] | None:
    for rank, members in enumerate(LAYERS):
        for member in members:
            if module == member or module.startswith(f"{member}."):
                return rank, member
    return None


def _climbs(graph: dict[str, set[str]]) -> list[str]:
    found = []
    for module, targets in sorted(graph.items()):
        here = _layer(module)
        if here is None:
            continue
        for target in sorted(targets):
            there = _layer(target)
            if there is not None and there[1] != here[1] and there[0] >= here[0]:
                found.append(f"{module} imports {target}")
    return found


def test_the_domain_layers_only_point_down() -> None:
    assert _climbs(_graph()) == []


def test_every_domain_module_has_a_layer() -> None:
    graph = _graph()
    assert [
        m for m in graph if m.startswith("nodefleet.") and m != "nodefleet.__main__" and _layer(m) is None
    ] == []


def test_the_layer_check_sees_a_climb() -> None:
    assert _climbs({"nodefleet.stackfile.model": {"nodefleet.render.objects"}}) == [
        "nodefleet.stackfile.model imports nodefleet.render.objects"
    ]
    assert _climbs({"nodefleet.apiserver.store": {"nodefleet.bootimages.versions"}}) != []


@pytest.mark.parametrize(
    "package",
    [
        "nodefleet.bootimages",
        "nodefleet.apiserver",
        "nodefleet.stackfile",
        "nodefleet.render",
        "nodefleet.drift",
        "nodefleet.adopt",
        "mockruntime",
    ],
)
def test_every_subpackage_says_what_it_owns(package: str) -> None:
    init = PROJECT.joinpath(*package.split("."), "__init__.py")
    doc = ast.get_docstring(ast.parse(init.read_text())) or ""
    assert len(doc) > 120, f"{init}: say what the package owns and what it may import"
