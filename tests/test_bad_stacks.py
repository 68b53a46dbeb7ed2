"""The bad-stack corpus: every file in tests/bad_stacks/ through `check`, `check --json` and `render`, and
through the operations commands: `forecast`, `upgrade` on every file, `fleet *` and `report` on one file of
each class.

Each file breaks one thing and says in its header what (``# section:``, ``# class:``), the exit code the
contract gives it (``# expect: exit N``) and what the message must name (``# field:``; for exit 1 also the
CRD's words, ``# says:``; ``# never:`` a secret that must not be printed; ``# policy-config:`` a
``--policy-config`` file beside the stack; ``# encode:`` the encoding the file is saved in before the run, for
a file Git keeps as UTF-8 to be read as UTF-16). All files run in one process of a fresh copy of the project,
with the project's parent directory snapshotted around every command, so a write anywhere shows.

What every run must show:
- no traceback, no internal error (exit 3), the expected exit code from all three commands;
- exit 2: one ``error:`` line on stderr naming the file, the field path and a fix (:data:`FIX`), nothing
  on stdout (with ``--json``: the same line as a JSON error document);
- exit 1: the stack file named in the output (``stackFile`` in JSON), a mandatory violation naming the
  object's field and quoting the CRD, a fix, and ``render`` refusing with the same violations;
- no file written, changed or removed anywhere (the render directory included: every file fails);
- from `forecast` and `upgrade`, the same one ``error:`` line for every exit-2 file; for an exit-1 file
  (the CRD refuses an object: only the policy pack sees it) a forecast, and from `upgrade` a step or an
  exit 2 saying why none can be staged.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import PROJECT, copy_project

CORPUS = PROJECT / "tests" / "bad_stacks"
FILES = sorted(CORPUS.glob("*.yaml"))
COMMANDS = ("check", "check --json", "render")
#: The operations commands that read a stack file, run on every file whose stack (not its policy config) is
#: bad. ``upgrade`` stages a step for a release no stack has, without writing (``--dry-run``).
OPS = {
    "forecast": ["forecast"],
    "forecast --json": ["forecast", "--json"],
    "upgrade": ["upgrade", "--release", "4.22.9", "--dry-run"],
}
#: The config's sections and the classes of bad input the corpus must cover (docs/policies.md, "Bad input").
SECTIONS = {
    "yaml", "output", "clusters", "standalone", "pools", "machineSets", "bootImageManagement", "skewEnforcement",
    "karpenter", "karpenterOperator", "hosted", "autoNode", "policy-config",
}  # fmt: skip
CLASSES = {
    "yaml", "types", "unknown-keys", "cross-reference", "path-escape", "secrets", "over-long-nul", "crd",
    "accepted-before", "special-file", "render-target", "controller-values", "lookalike",
}  # fmt: skip

#: A fix: an imperative (use/set/add/…) starting a clause, or the allowed values or an example.
FIX = re.compile(
    r"(?:^|[;:.,(]\s*|\bor\s+|\bthen\s+)(use|set|add|remove|declare|rename|change|point|give|keep|quote|write|"
    r"shorten|save|fix|replace|pin|upgrade|update|reference|enable|correct|name|check|put|move|delete)\b"
    r"|did you mean|known keys|one of|e\.g\.|such as",
    re.IGNORECASE,
)


def make(project: Path, meta: dict[str, str]) -> None:
    """What a corpus file needs on disk that Git cannot hold (``# make:``, several separated by ``; ``):
    ``fifo PATH`` (a named pipe), ``symlink PATH -> TARGET``, ``file PATH`` (an empty file), PATH relative to
    the project. Each file makes its own paths."""
    for item in filter(None, meta.get("make", "").split("; ")):
        what, _, rest = item.partition(" ")
        path, _, target = rest.partition(" -> ")
        dest = project / path
        dest.parent.mkdir(parents=True, exist_ok=True)
        if what == "fifo":
            os.mkfifo(dest)
        elif what == "symlink":
            dest.symlink_to(target)
        elif what == "file":
            dest.write_text("")
        else:
            raise ValueError(f"unknown # make: {item}")


def encode(path: Path, meta: dict[str, str]) -> None:
    """Save ``path`` (a copy of a corpus file) in the encoding its ``# encode:`` line names, if any."""
    if "encode" in meta:
        path.write_bytes(path.read_bytes().decode("utf-8").encode(meta["encode"]))


def header(path: Path) -> dict[str, str]:
    """The ``# key: value`` lines of a corpus file's leading comment, and its description."""
    fields: dict[str, str] = {}
    what: list[str] = []
    for line in path.read_bytes().decode("utf-8", "replace").splitlines():
        if not line.startswith("#"):
            break
        m = re.match(r"^# (section|class|expect|field|says|never|policy-config|make|encode): (.*)$", line)
        if m:
            fields[m.group(1)] = m.group(2)
        else:
            what.append(line[2:])
    fields["what"] = " ".join(what)
    return fields


_DRIVER = """
import contextlib, io, json, os, sys, traceback
from pathlib import Path
from cli.main import main

base = Path.cwd().parent

def snapshot():
    out = {}
    skip = len(str(base)) + 1  # a path's part below base, cut rather than computed: this runs twice a command
    for root, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != '__pycache__']
        for f in files:
            p = root + '/' + f
            st = os.lstat(p)
            out[p[skip:]] = (st.st_size, st.st_mtime_ns)
    return out

results = {}
for name, runs in json.loads(Path(sys.argv[1]).read_text()).items():
    if name == '_frozen':
        import gc
        gc.freeze()  # what the warm-up loaded stays: the interpreter's own collections then skip it
        continue
    for label, argv in runs.items():
        before = snapshot()
        o, e = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(o), contextlib.redirect_stderr(e):
            try:
                code = main(argv)
            except SystemExit as x:
                code = x.code
            except BaseException:
                code = 'escaped'
                traceback.print_exc()
        after = snapshot()
        changed = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        results[f'{name}|{label}'] = {'code': code, 'stdout': o.getvalue(), 'stderr': e.getvalue(), 'changed': changed}
print(json.dumps(results))
"""


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Every corpus file through the three commands, in one process of a fresh copy of the project."""
    base = tmp_path_factory.mktemp("corpus")
    project = copy_project(base / "project")
    shutil.copytree(CORPUS, project / "tests" / "bad_stacks")
    (base / "outside").mkdir()
    runs: dict[str, dict[str, list[str]]] = {}
    for path in FILES:
        meta = header(path)
        make(project, meta)
        encode(project / "tests" / "bad_stacks" / path.name, meta)
        rel = f"tests/bad_stacks/{path.name}"
        extra = (
            ["--policy-config", f"tests/bad_stacks/{meta['policy-config']}"]
            if "policy-config" in meta
            else []
        )
        runs[path.stem] = {command: [*command.split(), "--config-file", rel, *extra] for command in COMMANDS}
        if "policy-config" not in meta:
            runs[path.stem] |= {label: [*argv, "--config-file", rel] for label, argv in OPS.items()}
    # Import everything once, so the first file's snapshot does not see the interpreter's own caches.
    warm = ["check", "--stack", "dev"]
    (project / "stacks").mkdir()
    shutil.copy2(PROJECT / "stacks" / "Pulumi.dev.yaml", project / "stacks")
    plan = base / "runs.json"  # too long for a command line
    plan.write_text(json.dumps({"_warm": {"warm": warm}, "_frozen": {}, **runs}))
    result = subprocess.run(
        [sys.executable, "-c", _DRIVER, str(plan)],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=1800,  # a bound on a hang: one process runs the whole corpus, ~30 s idle
        env={k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_")},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.splitlines()[-1])  # type: ignore[no-any-return]


def test_the_corpus_covers_every_section_and_class() -> None:
    metas = [header(p) for p in FILES]
    assert len(FILES) >= 120
    sections = Counter(m["section"] for m in metas)
    classes = Counter(m["class"] for m in metas)
    assert set(sections) == SECTIONS, set(sections) ^ SECTIONS
    assert set(classes) == CLASSES, set(classes) ^ CLASSES
    for m in metas:
        assert m["expect"] in ("exit 1", "exit 2") and m["field"] and m["what"], m
        assert (m["class"] == "crd") == (m["expect"] == "exit 1"), m
    print(f"\n{len(FILES)} bad stack files; by section {dict(sections)}; by class {dict(classes)}")


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_bad_stack(results: dict[str, dict[str, Any]], path: Path) -> None:
    meta = header(path)
    expected = int(meta["expect"].removeprefix("exit "))
    rel = f"tests/bad_stacks/{path.name}"
    named = f"tests/bad_stacks/{meta['policy-config']}" if "policy-config" in meta else rel
    for command in COMMANDS:
        r = results[f"{path.stem}|{command}"]
        out, err = r["stdout"], r["stderr"]
        where = f"{command}: exit {r['code']}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
        assert "Traceback" not in out + err and "internal error" not in err, where
        assert r["code"] == expected, where
        assert r["changed"] == [], f"{command} wrote {r['changed']}"
        if "never" in meta:
            assert meta["never"] not in out + err, where
        if expected == 2:
            (line,) = err.strip().splitlines()
            assert line.startswith(
                f"error: {'--policy-config ' if 'policy-config' in meta else ''}{named}: "
            ), where
            assert meta["field"] in line, where
            assert FIX.search(line.split(meta["field"], 1)[1]), f"no fix after the field: {line}"
            assert meta.get("says", "") in line, where
            _json_error_or_nothing(command, out, line, named)
            continue
        mandatory = _mandatory(command, out)
        assert mandatory, where
        hits = [m for m in mandatory if meta["field"] in m and meta.get("says", "") in m]
        assert hits, where
        assert all(FIX.search(m) for m in hits), hits
        if command == "check --json":
            assert json.loads(out)["stackFile"] == rel
        else:
            assert f"({rel})" in out.splitlines()[0], where
        if command == "render":
            assert "nothing written" in out.splitlines()[0], where


@pytest.mark.parametrize("path", [p for p in FILES if "policy-config" not in header(p)], ids=lambda p: p.stem)
def test_bad_stack_through_the_operations(results: dict[str, dict[str, Any]], path: Path) -> None:
    meta = header(path)
    expected = int(meta["expect"].removeprefix("exit "))
    rel = f"tests/bad_stacks/{path.name}"
    for command in OPS:
        r = results[f"{path.stem}|{command}"]
        out, err = r["stdout"], r["stderr"]
        where = f"{command}: exit {r['code']}\nstdout: {out[-1500:]}\nstderr: {err[-1500:]}"
        assert "Traceback" not in out + err and "internal error" not in err, where
        assert r["changed"] == [], f"{command} wrote {r['changed']}"
        if "never" in meta:
            assert meta["never"] not in out + err, where
        if expected == 1:
            # The configuration is valid; the CRD's verdict is the policy pack's, which these do not run.
            if command.startswith("forecast"):
                assert r["code"] == 0 and path.stem in out, where
            else:
                assert r["code"] in (0, 2), where
                assert r["code"] == 0 or (out == "" and err.startswith(f"error: {rel}: ")), where
            continue
        assert r["code"] == 2, where
        (line,) = err.strip().splitlines()
        assert line.startswith(f"error: {rel}: "), where
        assert meta["field"] in line, where
        assert FIX.search(line.split(meta["field"], 1)[1]), f"no fix after the field: {line}"
        _json_error_or_nothing(command, out, line, rel)


def _json_error_or_nothing(command: str, out: str, line: str, named: str) -> None:
    """Exit 2: nothing on stdout, except with --json: the error document (docs/cli-and-forecast.md)."""
    if not command.endswith("--json"):
        assert out == "", out
        return
    doc = json.loads(out)
    assert doc["error"] == "invalid-input" and doc["exit"] == 2, doc
    (problem,) = doc["problems"]
    assert problem["message"] == line.removeprefix("error: ") and problem["file"] == named, problem


def _mandatory(command: str, out: str) -> list[str]:
    """The messages of the mandatory violations in a command's output."""
    if command == "check --json":
        return [v["message"] for v in json.loads(out)["violations"] if v["level"] == "mandatory"]
    found, current = [], None
    for line in out.splitlines():
        if line.startswith("  MANDATORY"):
            current = []
            found.append(current)
        elif line.startswith("  ") and not line.startswith("      "):
            current = None
        elif current is not None:
            current.append(line.strip())
    return [" ".join(lines) for lines in found]


# --- fleet and report: one file of each class ---------------------------------------------------------


def _sample() -> list[Path]:
    """One stack file of each class, as users keep them: in stacks/ (``fleet`` and ``report`` work there)."""
    chosen: dict[str, Path] = {}
    for path in FILES:
        meta = header(path)
        if "policy-config" not in meta:
            chosen.setdefault(meta["class"], path)
    return sorted(chosen.values())


SAMPLE = _sample()


@pytest.fixture(scope="module")
def fleet_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh copy of the project in a git repository (its base for `report`), the sample in stacks/."""
    project = copy_project(tmp_path_factory.mktemp("fleet") / "project")
    (project / "stacks").mkdir()
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    for args in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "base"]):
        subprocess.run(["git", *args], cwd=project, check=True, capture_output=True, env=env)
    for path in SAMPLE:
        shutil.copy2(path, project / "stacks" / f"Pulumi.{path.stem}.yaml")
        make(project, header(path))
        encode(project / "stacks" / f"Pulumi.{path.stem}.yaml", header(path))
    return project


def _run_cli(project: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("NODEFLEET_")}
    return subprocess.run(
        [sys.executable, "-m", "nodefleet", *args], cwd=project, capture_output=True, text=True, timeout=900,
        env=env,
    )  # fmt: skip


#: What each fleet command gives a stack the CRD refuses (exit 1 from check): the policy verdict where it runs.
_FLEET_CRD_EXIT = {"check": 1, "render": 1, "forecast": 0, "report": 1}


@pytest.mark.parametrize("command", sorted(_FLEET_CRD_EXIT))
def test_fleet_over_bad_stacks(fleet_project: Path, command: str) -> None:
    names = ",".join(p.stem for p in SAMPLE)
    extra = ["--base", "HEAD"] if command == "report" else []
    # Every stack must answer for itself here, so the gate that stops later waves after a failing one
    # (tests/test_fleet_waves.py) is off: a stack file that cannot be read is put in the first wave.
    result = _run_cli(fleet_project, "fleet", command, "--stacks", names, "--json", "--no-gate", *extra)
    assert "Traceback" not in result.stdout + result.stderr, result.stderr[-3000:]
    by = {s["stack"]: s for s in json.loads(result.stdout)["stacks"]}
    assert result.returncode == max(s["exit"] for s in by.values()) == 2
    for path in SAMPLE:
        meta, s = header(path), by[path.stem]
        said = f"{s['summary']} {s['error']}"
        if "never" in meta:
            assert meta["never"] not in result.stdout + result.stderr
        if meta["expect"] == "exit 1":
            assert s["exit"] == _FLEET_CRD_EXIT[command], s
            continue
        assert s["exit"] == 2, s
        assert f"stacks/Pulumi.{path.stem}.yaml: " in said and meta["field"] in said, s
        assert FIX.search(said.split(meta["field"], 1)[1]), s


def test_report_on_bad_stacks(fleet_project: Path) -> None:
    names = ",".join(p.stem for p in SAMPLE)
    result = _run_cli(fleet_project, "report", "--base", "HEAD", "--stacks", names, "--json")
    assert "Traceback" not in result.stdout + result.stderr and result.returncode == 2, result.stderr[-3000:]
    by = {s["stack"]: s for s in json.loads(result.stdout)["stacks"]}
    for path in SAMPLE:
        meta, s = header(path), by[path.stem]
        if "never" in meta:
            assert meta["never"] not in result.stdout
        if meta["expect"] == "exit 1":
            assert s["exit"] == 1 and any(v["level"] == "mandatory" for v in s["violations"]), s
            continue
        assert s["exit"] == 2, s
        assert (
            s["invalid"].startswith(f"stacks/Pulumi.{path.stem}.yaml: ") and meta["field"] in s["invalid"]
        ), s
        assert FIX.search(s["invalid"].split(meta["field"], 1)[1]), s
