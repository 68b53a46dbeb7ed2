"""engine/bootstrap building the language host and the Kubernetes provider from source trees the user points
at, with stand-in `pulumi`, `go` and `curl`, real git repositories in a temporary folder and a temporary HOME
(tests/engine/fakes.py): which release it builds and how loudly it says so when the tree lacks the pin, what
it does with files a snapshot lacks, and that another checkout on the same machine finds the built parts
instead of building them again. Nothing here touches the network or builds Go code."""

from __future__ import annotations

import hashlib
import json
import re
import subprocess
from pathlib import Path

import pytest

from engine.status import read_status
from tests.conftest import PROJECT
from tests.engine.fakes import Machine, make_machine, source_repo


def _pin(package: str) -> str:
    return next(
        line.split("==")[1].strip()
        for line in (PROJECT / "requirements.txt").read_text().splitlines()
        if line.startswith(f"{package}==")
    )


PIN, K8S, AWS = _pin("pulumi"), _pin("pulumi-kubernetes"), _pin("pulumi-aws")
NEWER = "v" + ".".join([PIN.split(".")[0], str(int(PIN.split(".")[1]) + 15), "0"])
K8S_OLDER = ".".join([K8S.split(".")[0], str(int(K8S.split(".")[1]) - 2), "0"])  # e.g. 4.32.0

PULUMI_FILES = {
    "sdk/python/cmd/pulumi-language-python/main.go": "package main\n",
    "sdk/python/cmd/pulumi-language-python/go.mod": "module x\n",
    "sdk/python/cmd/pulumi-language-python-exec": "#!/usr/bin/env python3\n# the SDK's exec shim\n",
    "sdk/python/dist/pulumi-resource-pulumi-python": "#!/bin/sh\n",
    "pkg/go.mod": "module y\n",
    "pkg/backend/testdata/large.json": "{}\n",
}
SCHEMA = "provider/cmd/pulumi-resource-kubernetes/schema.json"
TYPES = "sdk/go/kubernetes/core/v1/pulumiTypes.go"
K8S_FILES = {
    "provider/go.mod": "module github.com/pulumi/pulumi-kubernetes/provider/v4\n",
    "provider/cmd/pulumi-resource-kubernetes/main.go": "package main\n",
    "provider/cmd/pulumi-resource-kubernetes/generate.go": "package main\n",
    SCHEMA: '{"name": "kubernetes", "resources": {}}\n',
    "sdk/go.mod": "module github.com/pulumi/pulumi-kubernetes/sdk/v4\n",
    TYPES: "package v1\n// generated\n",
}


@pytest.fixture
def machine(tmp_path: Path) -> Machine:
    m = make_machine(tmp_path)
    m.pulumi_on_path(NEWER)  # a CLI without a bundled language host
    m.go()
    m.plugin_in_home("aws", AWS)
    return m


def _builds(m: Machine) -> list[str]:
    return [" ".join(c["argv"]) for c in m.calls("go") if c["argv"][:1] in (["build"], ["generate"])]


def _cache(m: Machine) -> Path:
    return m.home / ".cache" / "nodefleet" / "engine"


def _commit(repo: Path, tag: str) -> str:
    return subprocess.run(
        ["git", "-C", str(repo), "rev-parse", f"{tag}^{{commit}}"], capture_output=True, text=True, check=True
    ).stdout.strip()


def test_the_language_host_is_built_from_the_pin_tag_and_a_fresh_clone_finds_it(machine: Machine) -> None:
    repo = source_repo(machine.root / "src" / "pulumi", PULUMI_FILES, [f"v{PIN}", "v3.1.0"])
    machine.plugin_in_home("kubernetes", K8S)
    result = machine.run("bootstrap", "--pulumi-src", str(repo))
    assert result.returncode == 0, result.stderr
    built = _cache(machine) / "pulumi-language-python" / f"v{PIN}-{_commit(repo, f'v{PIN}')[:12]}"
    status = machine.status()
    assert status["pulumi-language-python"] == f"ok built from source in {built}"
    assert status["pulumi-language-python.source"].startswith(f"pulumi/pulumi v{PIN} (the pin) at commit ")
    assert f"of {repo}" in status["pulumi-language-python.source"]
    for exe in ("pulumi-language-python", "pulumi-language-python-exec", "pulumi-resource-pulumi-python"):
        assert (built / exe).is_file() and (built / exe).stat().st_mode & 0o111, exe
    assert f'export PATH="{built}:' in machine.engine_env()
    (build,) = [b for b in _builds(machine) if "pulumi-language-python" in b]
    assert f"Version=v{PIN}" in build
    assert "NOT THE PIN" not in result.stderr + json.dumps(status)

    clone = machine.fresh_clone()
    tried = len(machine.calls("go"))
    again = clone.run("bootstrap")  # no flag, no variable: what CI runs on a fresh clone
    assert again.returncode == 0, again.stderr
    assert clone.status()["pulumi-language-python"] == f"ok built from source in {built}"
    assert clone.status()["pulumi-language-python.source"] == status["pulumi-language-python.source"]
    assert [c for c in clone.calls("go")[tried:] if c["argv"][:1] == ["build"]] == []


def test_a_tree_without_the_pinned_tag_builds_the_nearest_and_says_so_loudly(machine: Machine) -> None:
    older = f"v{K8S_OLDER}"
    repo = source_repo(machine.root / "src" / "k8s", K8S_FILES, ["v4.1.0", older, "sdk/v9.9.9"])
    result = machine.run("bootstrap", "--kubernetes-src", str(repo))
    assert result.returncode == 0, result.stderr
    status = machine.status()
    home = machine.home / ".pulumi"
    assert status["kubernetes"] == (
        f"ok v{K8S} in {home}/plugins, built from source that is NOT THE PIN (see kubernetes.source)"
    )
    source = status["kubernetes.source"]
    assert source.startswith(
        f"pulumi/pulumi-kubernetes {older}, NOT THE PIN v{K8S} (the source tree has no tag"
    )
    assert f"installed as v{K8S}" in source
    assert "NOT THE PIN" in result.stderr
    generate, build = [b for b in _builds(machine) if "kubernetes" in b or b.startswith("generate")]
    assert generate.startswith("generate") and f"Version={K8S_OLDER}" in build
    installs = [c["argv"] for c in machine.calls("pulumi") if c["argv"][:2] == ["plugin", "install"]]
    assert installs[0][:5] == ["plugin", "install", "resource", "kubernetes", f"v{K8S}"]
    assert "--file" in installs[0] and "--reinstall" in installs[0]
    assert not [i for i in installs if "--exact" in i], "a source tree is the user's choice: no download"
    # The plugin in the Pulumi home is that build, byte for byte.
    plugin = home / "plugins" / f"resource-kubernetes-v{K8S}" / "pulumi-resource-kubernetes"
    built = (
        _cache(machine) / "kubernetes" / f"{older}-{_commit(repo, older)[:12]}" / "pulumi-resource-kubernetes"
    )
    assert plugin.read_bytes() == built.read_bytes()

    clone = machine.fresh_clone()
    tried = len(machine.calls("go"))
    clone.run("bootstrap")
    assert clone.status()["kubernetes.source"] == source, "a fresh clone says where the plugin came from"
    assert [c for c in clone.calls("go")[tried:] if "kubernetes" in " ".join(c["argv"])] == []


def _module_dir(where: Path, text: str) -> Path:
    f = where / TYPES.removeprefix("sdk/")
    f.parent.mkdir(parents=True)
    f.write_text(text)
    return where


def test_files_a_snapshot_lacks_are_restored_byte_for_byte_or_stood_in_for(machine: Machine) -> None:
    repo = source_repo(machine.root / "src" / "k8s", K8S_FILES, [f"v{K8S}"], lacking=(SCHEMA, TYPES))
    module = _module_dir(machine.root / "sdk-module", K8S_FILES[TYPES])
    result = machine.run("bootstrap", "--kubernetes-src", str(repo), FAKE_MODULE_DIR=str(module))
    assert "kubernetes provider: cannot" not in result.stderr, result.stderr
    status = machine.status()
    assert status["kubernetes"] == f"ok v{K8S} in {machine.home / '.pulumi'}/plugins, built from source"
    source = status["kubernetes.source"]
    blob = hashlib.sha1(f"blob {len(K8S_FILES[TYPES])}\0{K8S_FILES[TYPES]}".encode()).hexdigest()
    assert (
        f"{TYPES} restored from the Go module proxy's github.com/pulumi/pulumi-kubernetes/sdk/v4@v{K8S}"
        in source
    )
    assert f"(the same git blob {blob})" in source
    assert f"{SCHEMA} (blob " in source and 'the minimal package schema {"name":"kubernetes"}' in source
    checkout = _cache(machine) / "src" / f"pulumi-kubernetes-{_commit(repo, f'v{K8S}')}"
    assert (checkout / TYPES).read_text() == K8S_FILES[TYPES]
    assert json.loads((checkout / SCHEMA).read_text()) == {"name": "kubernetes"}


def test_a_restored_file_must_be_the_same_blob(machine: Machine) -> None:
    repo = source_repo(machine.root / "src" / "k8s", K8S_FILES, [f"v{K8S}"], lacking=(TYPES,))
    module = _module_dir(machine.root / "sdk-module", "package v1\n// another release\n")
    result = machine.run("bootstrap", "--kubernetes-src", str(repo), FAKE_MODULE_DIR=str(module))
    assert result.returncode == 3
    assert f"{TYPES} is absent from the source tree and not found with git blob" in result.stderr
    assert machine.status()["kubernetes"].startswith(
        f"missing: cannot be built from {repo}: {TYPES} is absent"
    )
    assert not [c for c in machine.calls("pulumi") if c["argv"][:2] == ["plugin", "install"]], (
        "the user chose a source tree: its failure is reported, nothing is downloaded instead"
    )


def test_source_trees_are_found_in_the_documented_place_without_flags(machine: Machine) -> None:
    sources = machine.home / ".cache" / "nodefleet" / "sources"
    source_repo(machine.root / "mirror" / "pulumi", PULUMI_FILES, [f"v{PIN}"])
    source_repo(machine.root / "mirror" / "k8s", K8S_FILES, [f"v{K8S}"])
    sources.mkdir(parents=True)
    (sources / "pulumi").symlink_to(machine.root / "mirror" / "pulumi")
    (sources / "pulumi-kubernetes").symlink_to(machine.root / "mirror" / "k8s")
    result = machine.run("bootstrap")
    assert result.returncode == 0, result.stderr
    status = machine.status()
    assert status["pulumi-language-python"].startswith("ok built from source in ")
    assert status["kubernetes"].endswith(", built from source")
    assert read_status(machine.project / ".engine" / "status").sources.keys() == {
        "pulumi-language-python",
        "kubernetes",
    }
    # NODEFLEET_SOURCES names another place; an empty one means no source trees at all.
    other = machine.fresh_clone("elsewhere")
    (machine.root / "empty").mkdir()
    other.run(
        "bootstrap", NODEFLEET_SOURCES=str(machine.root / "empty"), XDG_CACHE_HOME=str(machine.root / "c")
    )
    assert not other.status()["pulumi-language-python"].startswith("ok built from source")


def test_a_source_tree_without_git_history_is_refused_with_the_reason(machine: Machine) -> None:
    plain = machine.root / "plain"
    plain.mkdir()
    machine.plugin_in_home("kubernetes", K8S)
    result = machine.run("bootstrap", f"--pulumi-src={plain}")
    assert result.returncode == 3
    assert re.search(r"not a git checkout or git directory of pulumi/pulumi", result.stderr)
    assert machine.status()["pulumi-language-python"].startswith(f"missing: cannot be built from {plain}: ")


def test_help_names_the_flags_and_variables_and_a_flag_needs_its_directory(tmp_path: Path) -> None:
    m = make_machine(tmp_path)
    shown = m.run("bootstrap", "--help")
    assert shown.returncode == 0
    for text in (
        "--pulumi-src DIR",
        "--kubernetes-src DIR",
        "NODEFLEET_PULUMI_SRC",
        "NODEFLEET_KUBERNETES_SRC",
        "NODEFLEET_SOURCES",
        "NODEFLEET_ENGINE_CACHE",
        "--force",
    ):
        assert text in shown.stdout, text
    refused = m.run("bootstrap", "--kubernetes-src")
    assert refused.returncode == 2 and "--kubernetes-src needs a directory" in refused.stderr
