"""Stand-ins for `pulumi`, `go` and `curl`, so the bootstrap's and engine/run's decisions are tested on any
machine, with no network and no Go build.

Each stand-in is a small executable that appends what it was asked (argv and the environment variables
that matter) to a JSON-lines log, and answers the way the real tool does in the situation under test:

- `pulumi` reports its version (`pulumi version` prints ``v3.274.0``), lists and installs plugins in the
  Pulumi home it is given (``$PULUMI_HOME``, default ``~/.pulumi``; directories
  ``plugins/resource-<name>-v<version>`` as the real CLI lays them out), fails downloads like the real CLI
  when the network is off (``FAKE_NETWORK=off``), and knows the stacks listed in ``FAKE_STACKS``;
- `go` fails every module-proxy operation with the proxy's 403 when the network is off, and otherwise
  "builds" a stand-in binary at ``-o`` (a `pulumi` built with ``-X …version.Version=vX`` reports vX);
- `curl` answers the proxy's ``.info`` with an ``Origin.Hash``, or fails to resolve the host when offline.

The machine's own tools are exposed through a toolbox of symlinks, so a real `go`, `pulumi` or `curl`
installed here can never be picked up by mistake.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.conftest import PROJECT

TOOLS = [
    "bash",
    "sh",
    "env",
    "python3",
    "sed",
    "grep",
    "head",
    "tail",
    "tr",
    "cut",
    "cat",
    "mkdir",
    "dirname",
    "basename",
    "rm",
    "cp",
    "chmod",
    "install",
    "timeout",
    "ls",
    "ln",
    "mv",
    "touch",
    "sort",
    "readlink",
    "pwd",
    "date",
    "git",
    "awk",
    "paste",
    "cmp",
    "wc",
]

_LOG = """
def _log(tool, argv):
    import json, os
    path = os.environ.get("FAKE_LOG")
    if path:
        keep = ("PULUMI_HOME", "PULUMI_BACKEND_URL", "PULUMI_CONFIG_PASSPHRASE", "PULUMI_CONFIG_PASSPHRASE_FILE",
                "PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION")
        with open(path, "a") as f:
            f.write(json.dumps({"tool": tool, "argv": argv, "env": {k: os.environ[k] for k in keep if k in os.environ}}) + "\\n")
"""

FAKE_PULUMI = (
    "#!/usr/bin/env python3\n"
    "VERSION = __VERSION__\n"
    + _LOG
    + """
import json, os, shutil, sys
from pathlib import Path

args = sys.argv[1:]
_log("pulumi", args)
home = Path(os.environ.get("PULUMI_HOME") or Path(os.environ["HOME"]) / ".pulumi")
plugins = home / "plugins"
if args[:1] == ["version"]:
    print(VERSION)
elif args[:2] == ["plugin", "ls"]:
    found = []
    for d in sorted(plugins.glob("*-v*")) if plugins.is_dir() else []:
        kind, rest = d.name.split("-", 1)
        name, version = rest.rsplit("-v", 1)
        found.append({"name": name, "kind": kind, "version": version, "size": 1})
    print(json.dumps(found, indent=2))
elif args[:2] == ["plugin", "install"]:
    kind, name, version = args[2:5]
    target = plugins / f"{kind}-{name}-{version}"
    if "--file" in args:
        source = Path(args[args.index("--file") + 1])
        if not source.is_file():
            sys.exit(f"error: {source}: no such file")
        if target.exists() and "--reinstall" not in args:
            sys.exit(0)
        target.mkdir(parents=True, exist_ok=True)
        shutil.copy(source, target / f"pulumi-{kind}-{name}")
        sys.exit(0)
    elif os.environ.get("FAKE_NETWORK") == "off":
        print(f"warning: Error downloading plugin: Get \\"https://get.pulumi.com/releases/plugins/"
              f"pulumi-{kind}-{name}-{version}-linux-amd64.tar.gz\\": dial tcp: lookup get.pulumi.com: "
              "no such host", file=sys.stderr)
        sys.exit(f"error: [{kind} plugin {name}-{version[1:]}] downloading from : failed to download plugin: "
                 f"{name}-{version[1:]}: failed all 5 attempts")
    target.mkdir(parents=True, exist_ok=True)
    (target / f"pulumi-{kind}-{name}").write_text("#!/bin/sh\\n")
elif args[:2] == ["stack", "select"]:
    known = os.environ.get("FAKE_STACKS", "").split()
    if args[2] not in known:
        sys.exit(f"error: no stack named '{args[2]}' found")
elif args[:2] == ["stack", "init"]:
    pass
"""
)

FAKE_GO = (
    "#!/usr/bin/env python3\n"
    "FAKE_PULUMI = __FAKE_PULUMI__\n"
    + _LOG
    + """
import json, os, re, sys, tempfile
from pathlib import Path

args = sys.argv[1:]
_log("go", args)
offline = os.environ.get("FAKE_NETWORK") == "off"
def forbidden(module):
    return (f"{module}: invalid version: reading https://proxy.golang.org/{module.split('@')[0]}/@v/"
            f"{module.split('@')[-1]}.info: 403 Forbidden")
if args[:3] == ["mod", "download", "-json"]:
    module = args[3]
    if offline:
        print(json.dumps({"Path": module.split("@")[0], "Error": forbidden(module)}, indent="\\t"))
        sys.exit(1)
    if os.environ.get("FAKE_MODULE_DIR") and "pulumi-kubernetes/sdk" in module:  # prepared by the test
        print(json.dumps({"Path": module.split("@")[0], "Dir": os.environ["FAKE_MODULE_DIR"]}))
        sys.exit(0)
    d = Path(tempfile.mkdtemp(prefix="fake-go-mod-"))
    for rel in ("python/cmd/pulumi-language-python-exec", "python/dist/pulumi-resource-pulumi-python",
                "cmd/pulumi-resource-kubernetes/generate.go"):
        (d / rel).parent.mkdir(parents=True, exist_ok=True)
        (d / rel).write_text("stand-in\\n")
    print(json.dumps({"Path": module.split("@")[0], "Dir": str(d)}, indent="\\t"))
elif args[:1] in (["get"], ["mod"]) and offline and args[1:2] != ["edit"]:
    target = next((a for a in args if "@" in a), "github.com/pulumi/pulumi/pkg/v3@v0")
    sys.exit("go: " + forbidden(target))
elif args[:1] == ["generate"]:
    pass
elif args[:1] == ["build"]:
    out = Path(args[args.index("-o") + 1])
    flags = " ".join(args)
    if args[-1].endswith("/cmd/pulumi"):
        version = re.search(r"version\\.Version=(\\S+)", flags)[1]
        out.write_text(FAKE_PULUMI.replace("VERSION = __VERSION__", f"VERSION = {version!r}", 1))
    else:
        # What it was built from, so builds of different trees differ.
        out.write_text(f"#!/bin/sh\\necho stand-in built in {os.getcwd()}\\n")
    out.chmod(0o755)
"""
)

FAKE_CURL = (
    "#!/usr/bin/env python3\n"
    + _LOG
    + """
import json, os, sys
_log("curl", sys.argv[1:])
if os.environ.get("FAKE_NETWORK") == "off":
    sys.exit("curl: (6) Could not resolve host: proxy.golang.org")
print(json.dumps({"Version": "v0", "Origin": {"VCS": "git", "Hash": "0123456789abcdef0123456789abcdef01234567"}}))
"""
)


def exec_shim() -> Path | None:
    """The SDK's real exec shim (``pulumi-language-python-exec``) beside the language host: bundled with the
    CLI, on PATH, or installed by the bootstrap from the SDK's own module."""
    from engine.status import read_status

    cli = read_status().cli
    places = [cli.resolve().parent] if cli and cli.exists() else []
    host = shutil.which("pulumi-language-python")
    places += [Path(host).resolve().parent] if host else []
    m = re.match(r"ok built from source in (.+)$", read_status().parts.get("pulumi-language-python", ""))
    places += [Path(m[1])] if m else []
    places.append(PROJECT / ".engine" / "bin")
    return next(
        (p / "pulumi-language-python-exec" for p in places if (p / "pulumi-language-python-exec").is_file()),
        None,
    )


def fake_pulumi(version: str) -> str:
    return FAKE_PULUMI.replace("__VERSION__", repr(version), 1)


def _write_executable(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


@dataclass
class Machine:
    """A user's machine in a temporary folder: HOME, a PATH of the machine's tools plus stand-ins, and a
    checkout of the project's engine scripts with the shared venv."""

    root: Path
    project: Path
    home: Path
    fakebin: Path
    toolbox: Path
    log: Path
    network: bool = True
    extra_path: list[Path] = field(default_factory=list)

    def pulumi_on_path(self, version: str, directory: str = "fakebin", bundled_host: bool = False) -> Path:
        where = self.root / directory
        exe = _write_executable(where / "pulumi", fake_pulumi(version))
        if bundled_host:
            _write_executable(where / "pulumi-language-python", "#!/bin/sh\necho stand-in\n")
            _write_executable(where / "pulumi-language-python-exec", "#!/bin/sh\n")
        self.extra_path.append(where)
        return exe

    def go(self) -> None:
        _write_executable(self.fakebin / "go", FAKE_GO.replace("__FAKE_PULUMI__", repr(FAKE_PULUMI), 1))

    def plugin_in_home(self, name: str, version: str, home: Path | None = None) -> None:
        d = (home or self.home / ".pulumi") / "plugins" / f"resource-{name}-v{version}"
        d.mkdir(parents=True, exist_ok=True)
        (d / f"pulumi-resource-{name}").write_text("#!/bin/sh\n")

    def env(self, **extra: str) -> dict[str, str]:
        path = ":".join(str(p) for p in [self.fakebin, *self.extra_path, self.toolbox])
        env = {"PATH": path, "HOME": str(self.home), "FAKE_LOG": str(self.log), "LANG": "C.UTF-8"}
        if not self.network:
            env["FAKE_NETWORK"] = "off"
        env.update(extra)
        return env

    def run(self, script: str, *args: str, **extra_env: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(self.project / "engine" / script), *args],
            env=self.env(**extra_env),
            capture_output=True,
            text=True,
            timeout=120,
        )

    def calls(self, tool: str) -> list[dict[str, Any]]:
        if not self.log.exists():
            return []
        entries = [json.loads(line) for line in self.log.read_text().splitlines()]
        return [e for e in entries if e["tool"] == tool]

    def status(self) -> dict[str, str]:
        lines = (self.project / ".engine" / "status").read_text().splitlines()
        return dict(line.split(": ", 1) for line in lines)

    def engine_env(self) -> str:
        return (self.project / ".engine" / "env").read_text()

    def fresh_clone(self, name: str = "clone") -> Machine:
        """Another checkout of the project on the same machine (same HOME and tools), as CI clones it."""
        project = self.root / name
        (project / "engine").mkdir(parents=True)
        for f in (self.project / "engine").iterdir():
            if f.is_file():
                shutil.copy2(f, project / "engine" / f.name)
        shutil.copy2(self.project / "requirements.txt", project / "requirements.txt")
        (project / "venv").symlink_to((PROJECT / "venv").resolve())
        return Machine(
            self.root, project, self.home, self.fakebin, self.toolbox, self.log, self.network, self.extra_path
        )


def source_repo(where: Path, files: dict[str, str], tags: list[str], lacking: tuple[str, ...] = ()) -> Path:
    """A git repository of ``files`` (path -> text; ``*-exec`` and ``dist/`` files executable), each of
    ``tags`` on its one commit. ``lacking`` paths lose their git object afterwards, as in a source snapshot
    that lacks a few large files: the tree still records them, ``git cat-file`` reports them missing."""
    where.mkdir(parents=True)
    env = {
        **os.environ,
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.com",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.com",
    }

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=where, env=env, check=True, capture_output=True, text=True
        ).stdout.strip()

    git("init", "-q")
    for rel, text in files.items():
        f = where / rel
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_text(text)
        if rel.endswith("-exec") or "/dist/" in rel:
            f.chmod(0o755)
    git("add", "-A")
    git("commit", "-q", "-m", "release")
    for tag in tags:
        git("tag", tag)
    for rel in lacking:
        blob = git("rev-parse", f"HEAD:{rel}")
        (where / ".git" / "objects" / blob[:2] / blob[2:]).unlink()
    return where


def make_machine(tmp: Path, network: bool = True) -> Machine:
    """The project's engine scripts, requirements and (shared) venv under ``tmp/project``; stand-in curl."""
    project = tmp / "project"
    (project / "engine").mkdir(parents=True)
    for f in (PROJECT / "engine").iterdir():
        if f.is_file():
            shutil.copy2(f, project / "engine" / f.name)
    shutil.copy2(PROJECT / "requirements.txt", project / "requirements.txt")
    (project / "venv").symlink_to((PROJECT / "venv").resolve())
    toolbox = tmp / "toolbox"
    toolbox.mkdir()
    # The interpreter running the tests, resolved past venvs and version-manager shims (which need their
    # own PATH entries): the bootstrap needs only its standard library.
    (toolbox / "python3").symlink_to(Path(sys.executable).resolve())
    for tool in TOOLS:
        found = shutil.which(tool, path=os.environ.get("PATH", "") + ":/usr/bin:/bin")
        if found and not (toolbox / tool).exists():
            (toolbox / tool).symlink_to(found)
    home = tmp / "home"
    home.mkdir()
    fakebin = tmp / "fakebin"
    _write_executable(fakebin / "curl", FAKE_CURL)
    return Machine(tmp, project, home, fakebin, toolbox, tmp / "calls.jsonl", network)
