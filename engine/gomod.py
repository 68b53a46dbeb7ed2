"""Fits a Go module's requirements to what the Go module proxy serves, for builds from source trees.

A source tree pins its dependencies in ``go.mod``; a mirror (or the public proxy, for some versions) may not
serve every one of them: ``pulumi/pulumi-kubernetes`` v4.32.0 requires ``github.com/pulumi/pulumi/pkg/v3``
v3.243.0 and a dozen pseudo-versions, and a proxy answering ``403 Forbidden`` for one of them stops the build.
``fit`` lists what a build of the given packages needs (``go list -deps``: the module graph's go.mod files,
the zips of the modules whose packages are built); for each version the proxy refuses it takes the **nearest
served version**, the lowest served one above it (a later release keeps the APIs the tree uses), else the
highest below, sets it in ``go.mod`` and tries again, and prints one line per substitution::

    python3 engine/gomod.py fit <module dir> <package or .go file>...
    # prints "<module> <pinned> -> <served>" lines; exit 0
    # exit 1 (reason on stderr) when a module has no served version near the pinned one

Stdlib only: it runs before the virtualenv exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Mapping

_REFUSED = re.compile(
    r"(?P<module>[^\s@:]+)@(?P<version>v[^\s:]+): (?:reading|verifying) \S+: (?:403|404|410)\b[^\n]*"
)
_RELEASE = re.compile(r"^v(\d+)\.(\d+)\.(\d+)")
MAX_ROUNDS = 60


def proxy_url() -> str:
    for entry in re.split(r"[,|]", os.environ.get("GOPROXY") or _go_env("GOPROXY") or ""):
        if entry.startswith(("https://", "http://")):
            return entry.rstrip("/")
    return "https://proxy.golang.org"


def _go_env(name: str) -> str:
    try:
        return subprocess.run(["go", "env", name], capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return ""


def _escape(module: str) -> str:
    """The proxy's case encoding: an upper-case letter becomes ``!`` and the lower-case letter."""
    return re.sub(r"[A-Z]", lambda m: "!" + m[0].lower(), module)


def served(module: str, version: str) -> bool:
    """The proxy hands out the module's zip at that version."""
    url = f"{proxy_url()}/{_escape(module)}/@v/{_escape(version)}.zip"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, method="HEAD"), timeout=30) as r:
            return bool(r.status == 200)
    except (urllib.error.URLError, TimeoutError):
        return False


def listed(module: str) -> list[str]:
    try:
        with urllib.request.urlopen(f"{proxy_url()}/{_escape(module)}/@v/list", timeout=30) as r:
            return [v for v in r.read().decode().split() if _RELEASE.match(v)]
    except (urllib.error.URLError, TimeoutError):
        return []


def _key(version: str) -> tuple[int, int, int, int, str]:
    m = _RELEASE.match(version)
    assert m
    major, minor, patch = (int(x) for x in m.groups())
    rest = version[m.end() :]
    # v1.2.3-pre and pseudo-versions sort below v1.2.3; v1.2.4-0.<time>-<hash> is after v1.2.3.
    return (major, minor, patch, 0 if rest.startswith("-") else 1, rest)


def nearest(module: str, version: str) -> str | None:
    """The lowest served release above ``version``, else the highest served one below it."""
    m = _RELEASE.match(version)
    if not m:
        return None
    major, minor, patch = (int(x) for x in m.groups())
    guesses = {f"v{major}.{minor}.{patch}", f"v{major}.{minor}.{patch + 1}"}
    guesses |= {f"v{major}.{minor + d}.0" for d in range(1, 16)}
    guesses |= {f"v{major}.{minor - d}.0" for d in range(1, 16) if minor - d >= 0}
    guesses |= {f"v{major}.{minor}.{p}" for p in range(patch)}
    candidates = sorted(
        {v for v in guesses | set(listed(module)) if v.startswith(f"v{major}.") and "-" not in v},
        key=_key,
    )
    above = [v for v in candidates if _key(v) > _key(version)]
    below = [v for v in reversed(candidates) if _key(v) < _key(version)]
    for v in above + below:
        if served(module, v):
            return v
    return None


def _list(moddir: str, pattern: str, env: dict[str, str]) -> str:
    """What ``go list -deps`` says about the packages a build of ``pattern`` needs (errors only)."""
    run = subprocess.run(
        ["go", "list", "-e", "-deps", "-f", "{{with .Error}}{{.Err}}{{end}}", pattern],
        cwd=moddir,
        env=env,
        capture_output=True,
        text=True,
    )
    return run.stdout + run.stderr


def fit(moddir: str, patterns: list[str], env: Mapping[str, str] | None = None) -> list[tuple[str, str, str]]:
    """Substitute refused requirements until every module the packages of ``patterns`` need (their go.mod
    for the module graph, their zips for the packages built) comes from the proxy; the substitutions made.

    Only what the build needs is fetched: a module of the graph whose packages are not built (the
    provider's .NET code generator, say) is not substituted, so it drags no other module forward. ``env``
    replaces the environment of the ``go`` commands (to choose a toolchain with ``GOTOOLCHAIN``, say)."""
    base = os.environ if env is None else env
    goenv = {**base, "GOFLAGS": (base.get("GOFLAGS", "") + " -mod=mod").strip()}
    done: list[tuple[str, str, str]] = []
    for _ in range(MAX_ROUNDS):
        said = "".join(_list(moddir, pattern, goenv) for pattern in patterns)
        refused = _REFUSED.search(said)
        if not refused:
            return done
        module, version = refused["module"], refused["version"]
        if any(m == module and new == version for m, _, new in done):
            raise RuntimeError(
                f"{module}@{version}: refused by the module proxy after it was chosen as served"
            )
        choice = nearest(module, version)
        if choice is None:
            raise RuntimeError(
                f"{module}@{version} is not served by the module proxy, nor any version near it"
            )
        subprocess.run(
            ["go", "mod", "edit", f"-require={module}@{choice}"], cwd=moddir, env=goenv, check=True
        )
        done.append((module, version, choice))
    raise RuntimeError(f"more than {MAX_ROUNDS} refused versions; giving up")


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[0] != "fit":
        print("usage: gomod.py fit <module dir> <package or .go file>...", file=sys.stderr)
        return 2
    try:
        for module, old, new in fit(argv[1], argv[2:]):
            print(f"{module} {old} -> {new}")
    except RuntimeError as e:
        print(e, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
