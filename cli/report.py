"""``report``: what a change does to the stacks it touches, for a reviewer of the pull request.

For every touched stack: the policy results, the drift forecast (which nodes the change replaces) and the
render diff (manifests added, changed, removed per cluster folder), each against the base of the change.
The base is rendered by the base's own code, from ``git archive`` of the merge base, so a change of the
program is judged as fairly as a change of a stack file. Policy results come from the credential-free
check, and from ``pulumi preview --policy-pack`` too where the engine is complete; the report says which.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cli.exits import EXIT_INVALID, EXIT_OK, EXIT_VIOLATIONS, InputError

PROJECT = Path(__file__).resolve().parent.parent


def _git(*args: str, cwd: Path = PROJECT) -> str:
    result = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if result.returncode != 0:
        raise InputError(f"git {' '.join(args)}: {result.stderr.strip() or 'failed'}")
    return result.stdout


def all_stacks(project: Path = PROJECT, stacks_dir: Path | None = None) -> list[str]:
    return sorted(
        p.name.removeprefix("Pulumi.").removesuffix(".yaml")
        for p in (stacks_dir or project / "stacks").glob("Pulumi.*.yaml")
    )


def in_repository(stacks_dir: Path, project: Path = PROJECT) -> str | None:
    """``stacks_dir`` relative to the project (as ``git diff --name-only`` names its files), or None outside it."""
    try:
        return stacks_dir.resolve().relative_to(project.resolve()).as_posix()
    except ValueError:
        return None


def base_registry(
    ref: str, stacks_dir: Path, registry: Any, project: Path = PROJECT
) -> dict[str, str] | None:
    """What a change since ``ref`` (its merge base with HEAD) did to the fleet's registry beside the stack files
    of ``stacks_dir``, by management cluster (:func:`nodefleet.fleet.registry.registry_changes`); None when the
    base's registry cannot be read (every management cluster then counts as changed)."""
    from nodefleet.fleet.registry import (
        REGISTRY_FILE,
        Registry,
        RegistryError,
        load_registry,
        registry_changes,
    )

    rel = in_repository(stacks_dir, project)
    if rel is None:
        return {}  # not in the repository: no change of it is in the diff
    base = _git("merge-base", ref, "HEAD", cwd=project).strip()
    shown = f"{rel}/{REGISTRY_FILE} at {base[:12]}"
    done = subprocess.run(
        ["git", "show", f"{base}:{rel}/{REGISTRY_FILE}"], cwd=project, capture_output=True, timeout=60
    )
    if done.returncode != 0:
        before = Registry(shown, exists=False)  # the base has none: the one implicit management cluster
    else:
        with tempfile.TemporaryDirectory(prefix="nodefleet-registry-") as tmp:
            (Path(tmp) / REGISTRY_FILE).write_bytes(done.stdout)
            try:
                before = load_registry(Path(tmp), shown)
            except RegistryError:
                return None
    return registry_changes(before, registry)


def touched_stacks(
    changed: list[str], project: Path = PROJECT, stacks_dir: Path | None = None, base: str | None = None
) -> tuple[list[str], str]:
    """The stacks a change touches, and why: their stack file, a catalog they use, or the program itself.

    The rules are ``fleet matrix``'s (:func:`nodefleet.stackfile.waves.touched_stacks`), so the report covers exactly the
    stacks the rollout would run.
    """
    from cli.stacks import registry_of
    from mockruntime.run import read_stack_config
    from mockruntime.snapshots import shown_path
    from nodefleet.fleet.registry import registry_path
    from nodefleet.stackfile.model import CONFIG_KEY
    from nodefleet.stackfile.waves import DEFAULT_WAVE, StackWave, is_shared, management_clusters_of
    from nodefleet.stackfile.waves import touched_stacks as touching
    from nodefleet.stackfile.yamlfile import YAMLFileError

    folder = stacks_dir or project / "stacks"
    rel = in_repository(folder, project)
    stacks = all_stacks(project, folder)
    if any(is_shared(f) for f in changed):
        return stacks, "the program or the policy pack changed: every stack"
    if rel is None:
        return [], f"only the program touches the stacks of {folder}, which lies outside the repository"
    fleet = []
    for stack in stacks:
        path = folder / f"Pulumi.{stack}.yaml"
        try:  # a stack file that does not load has no catalogs here; its own check says why
            config = read_stack_config(path, shown_path(path), fast=True).get(CONFIG_KEY) or {}
        except YAMLFileError:
            config = {}
        clusters = config.get("clusters") if isinstance(config, dict) else None
        catalogs = tuple(
            str(c["catalog"])
            for c in clusters or []
            if isinstance(c, dict) and isinstance(c.get("catalog"), str)
        )
        fleet.append(
            StackWave(
                stack,
                DEFAULT_WAVE,
                f"{rel}/Pulumi.{stack}.yaml",
                catalogs=catalogs,
                management_clusters=management_clusters_of(config),
            )
        )
    registry_file = f"{rel}/{registry_path(Path()).name}"
    changes = None
    if registry_file in changed:
        registry = registry_of(folder)
        changes = base_registry(base, folder, registry, project) if base else None
    touched = touching(changed, fleet, registry_file=registry_file, registry_changes=changes)
    removed = sorted(
        {
            f.removeprefix(f"{rel}/Pulumi.").removesuffix(".yaml")
            for f in changed
            if f.startswith(f"{rel}/Pulumi.")
        }
        - set(stacks)
    )
    why = "stack files and catalogs changed" + (f" (removed: {', '.join(removed)})" if removed else "")
    if registry_file in changed:
        said = (
            "; ".join(f"{m}: {w}" for m, w in changes.items())
            if changes
            else "which management clusters: unknown"
        )
        why += f"; the fleet registry changed ({said}): the stacks on the management clusters it changes"
    return sorted(touched), why


@dataclass
class BaseRender:
    """The base's render of one stack: its files by (cluster folder, path), or why there is none."""

    files: dict[tuple[str, str], bytes] = field(default_factory=dict)
    root: Path | None = None
    missing: str = ""
    label: str = "the base's render"


def export_base(ref: str, into: Path) -> str:
    """The merge base of ``ref`` and HEAD, exported (``git archive``) into ``into``; returns its commit."""
    base = _git("merge-base", ref, "HEAD").strip()
    archive = into / "base.tar"
    with archive.open("wb") as out:
        result = subprocess.run(["git", "archive", "--format=tar", base], cwd=PROJECT, stdout=out)
    if result.returncode != 0:
        raise InputError(f"git archive {base}: failed")
    with tarfile.open(archive) as tar:
        # The "data" filter (no absolute paths, links out of the tree or devices) is in Python 3.11.4 and later;
        # the archive is of the user's own repository, so an earlier 3.11 extracts it as it is.
        safe: dict[str, Any] = {"filter": "data"} if hasattr(tarfile, "data_filter") else {}
        tar.extractall(into / "tree", **safe)
    archive.unlink()
    return base


def render_base(tree: Path, stack: str, out: Path, stack_file: Path | None = None) -> BaseRender:
    """The base's own `nodefleet render` of ``stack`` into ``out``: its stack file in the base's ``stacks/``, or
    ``stack_file`` (the base's copy of a file in another folder of the repository, or a file outside it)."""
    source = ["--stack", stack]
    if stack_file is not None:
        source = ["--config-file", str(stack_file)]
    if not (stack_file or tree / "stacks" / f"Pulumi.{stack}.yaml").is_file():
        return BaseRender(missing="new stack: the base has no stack file")
    result = subprocess.run(
        [sys.executable, "-m", "nodefleet", "render", *source, "--out", str(out)],
        cwd=tree,
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        return BaseRender(
            missing=f"the base does not render (exit {result.returncode}): {result.stderr.strip()}"
        )
    from nodefleet.render.gitops import ARGOCD_IGNORE_DIFFERENCES_FILE

    # The manifests, and each folder's Argo CD file: where the folder goes (destination) is in it.
    files = {
        (p.relative_to(out).parts[0], "/".join(p.relative_to(out).parts[1:])): p.read_bytes()
        for p in sorted(out.rglob("*"))
        if p.is_file() and (p.suffix == ".yaml" or p.name == ARGOCD_IGNORE_DIFFERENCES_FILE)
    }
    return BaseRender(files, out)


def render_diff(plan: Any, base: BaseRender) -> dict[str, dict[str, list[str]]]:
    """Files added, changed and removed per cluster folder, head's plan against the base's render: the manifests
    and each folder's Argo CD file, which says where the folder goes (a registry change moves it)."""
    head = {(Path(f.target).name, f.path): f.content for f in plan.files}
    head |= {(t.target, t.name): t.content for t in getattr(plan, "target_files", ())}
    diff: dict[str, dict[str, list[str]]] = {}
    for key in sorted(set(head) | set(base.files)):
        cluster, path = key
        entry = diff.setdefault(cluster, {"added": [], "changed": [], "removed": []})
        if key not in base.files:
            entry["added"].append(path)
        elif key not in head:
            entry["removed"].append(path)
        elif head[key] != base.files[key]:
            entry["changed"].append(path)
    return diff


def _stack_report(
    stack: str, base: BaseRender, policy_config: dict[str, Any] | None, stacks_dir: Path | None = None
) -> dict[str, Any]:
    import pulumi

    from cli.engine import engine_status
    from mockruntime.evaluate import evaluate_run
    from mockruntime.run import read_stack_config, run_program, stack_path
    from mockruntime.snapshots import (
        deployer_of,
        plan_of,
        shown_path,
        snapshot_from_plan,
        snapshot_from_render_dir,
    )
    from nodefleet.drift.forecast import Snapshot, forecast
    from nodefleet.stackfile.yamlfile import YAMLFileError
    from policies.pack import POLICIES

    started = time.perf_counter()
    own = stacks_dir is None or stacks_dir.resolve() == (PROJECT / "stacks").resolve()
    path = stack_path(stack) if own or stacks_dir is None else stacks_dir / f"Pulumi.{stack}.yaml"
    shown = f"stacks/Pulumi.{stack}.yaml" if own else shown_path(path)
    try:
        mock = run_program(stack, read_stack_config(path, shown), source=None if own else str(path))
    except (pulumi.RunError, YAMLFileError) as exc:
        return {"stack": stack, "invalid": str(exc), "exit": EXIT_INVALID}
    violations = [v.as_dict() for v in evaluate_run(mock, POLICIES, policy_config)]
    engine = engine_status()
    checks = ["credential-free check (program under the mock runtime + the policy pack)"]
    if not own:
        checks.append(
            f"no pulumi preview: Pulumi reads stack files from stacks/ only, and this one is {shown}"
        )
    elif engine.complete:
        preview = subprocess.run(
            [sys.executable, "-m", "nodefleet", "preview", "--stack", stack, "--json"],
            cwd=PROJECT, capture_output=True, text=True, timeout=1800,
        )  # fmt: skip
        checks.append(f"pulumi preview --policy-pack policies (exit {preview.returncode})")
        if preview.stdout.strip().startswith("{"):
            violations += [
                {**v, "source": "preview"} for v in json.loads(preview.stdout).get("violations", [])
            ]
    else:
        checks.append(f"no pulumi preview: the engine is incomplete here ({engine.reason})")
    plan = plan_of(mock)
    wired = _as_rendered(stack, mock, path, shown, None if own else str(path), stacks_dir) or plan
    before = snapshot_from_render_dir(plan, base.root) if base.root else None
    if before is not None:
        before = Snapshot(base.label, before.objects)
    result = forecast(before, snapshot_from_plan(plan, "this change"), deployer=deployer_of(mock))
    mandatory = [v for v in violations if v["level"] == "mandatory"]
    return {
        "stack": stack,
        "checks": checks,
        "violations": violations,
        "forecast": result,
        "renderDiff": render_diff(wired, base),
        "baseMissing": base.missing,
        "exit": EXIT_VIOLATIONS if mandatory else EXIT_OK,
        "seconds": round(time.perf_counter() - started, 1),
    }


def _as_rendered(
    stack: str, mock: Any, path: Path, shown: str, source: str | None, stacks_dir: Path | None
) -> Any:
    """The files ``nodefleet render`` would write for the stack, its folders' Argo CD files included (their
    destination from the fleet's registry, their wave); None when the stack does not load as a fleet (its
    report says why)."""
    from cli.stacks import fleet_of, registry_of
    from mockruntime.rendering import RenderPlanError, plan_render
    from mockruntime.run import read_stack_config
    from nodefleet.render.wiring import folder_fields
    from nodefleet.stackfile.yamlfile import YAMLFileError

    try:
        registry = registry_of(stacks_dir or PROJECT / "stacks")
        fleet = fleet_of(stack, read_stack_config(path, shown), source, registry)
        return plan_render(mock, fleet.render_directory, fleet.config.wave, folder_fields(fleet, registry))
    except (InputError, YAMLFileError, RenderPlanError):
        return None


def markdown(report: dict[str, Any]) -> str:
    from cli.forecast import markdown as forecast_markdown

    lines = [
        "## nodefleet report",
        "",
        f"Base: `{report['base']}` (merge base `{report['mergeBase'][:12]}`). Stacks: {report['why']}.",
    ]
    if not report["stacks"]:
        lines += ["", "This change touches no stack."]
    for s in report["stacks"]:
        lines += ["", f"### Stack `{s['stack']}`", ""]
        if "invalid" in s:
            lines += ["**Invalid configuration** (exit 2):", "", "```", s["invalid"], "```"]
            continue
        mandatory = [v for v in s["violations"] if v["level"] == "mandatory"]
        advisory = [v for v in s["violations"] if v["level"] != "mandatory"]
        verdict = "❌ fails" if mandatory else "✅ passes"
        lines += [
            f"**Policies: {verdict}** ({len(mandatory)} mandatory, {len(advisory)} advisory). Checked by:"
        ]
        lines += [f"- {c}" for c in s["checks"]]
        if s["violations"]:
            lines += ["", "| level | policy | resource | message |", "|---|---|---|---|"]
            for v in sorted(s["violations"], key=lambda v: (v["level"] != "mandatory", v["policy"])):
                resource = v["resource"].rsplit("::", 1)[-1] or "(stack)"
                message = v["message"].replace("|", "\\|").replace("\n", " ")
                lines.append(f"| {v['level']} | `{v['policy']}` | `{resource}` | {message} |")
        lines += ["", "**Drift forecast**", "", forecast_markdown(s["forecast"])]
        lines += ["", "**Render diff** (per cluster folder, against the base's render)", ""]
        if s["baseMissing"]:
            lines += [f"Base: {s['baseMissing']}.", ""]
        lines += ["| cluster | added | changed | removed |", "|---|---|---|---|"]
        for cluster, d in s["renderDiff"].items():
            lines.append(f"| `{cluster}` | {len(d['added'])} | {len(d['changed'])} | {len(d['removed'])} |")
        touched = [
            (c, kind, p)
            for c, d in s["renderDiff"].items()
            for kind in ("added", "changed", "removed")
            for p in d[kind]
        ]
        if touched:
            lines += ["", "<details><summary>files</summary>", ""]
            lines += [f"- {kind} `{c}/{p}`" for c, kind, p in touched]
            lines += ["", "</details>"]
    return "\n".join(lines) + "\n"


def as_json(report: dict[str, Any]) -> dict[str, Any]:
    return {
        **report,
        "stacks": [
            {**s, "forecast": s["forecast"].as_dict()} if "forecast" in s else s for s in report["stacks"]
        ],
    }


def run(args: argparse.Namespace) -> int:
    from cli.verdicts import read_policy_config
    from nodefleet.stackfile.paths import PathError, output_file

    for option, value, example in (
        ("--out", args.out, "report.md"),
        ("--json-out", args.json_out, "report.json"),
    ):
        try:
            if value is not None:
                output_file(value, example=f"{option} {example}")
        except PathError as e:
            raise InputError(f"{option} {value}: {e}") from None

    changed = [
        line
        for line in _git("diff", "--name-only", _git("merge-base", args.base, "HEAD").strip()).splitlines()
        if line
    ]
    stacks_dir: Path = getattr(args, "stacks_dir", None) or PROJECT / "stacks"
    if not stacks_dir.is_dir():
        raise InputError(
            f"--stacks-dir {stacks_dir}: not a folder; give the folder of the Pulumi.<stack>.yaml files"
        )
    known = all_stacks(PROJECT, stacks_dir)
    if args.stacks:
        from cli.tree import IN_FLEET_ENV

        stacks = [s for s in args.stacks.split(",") if s]
        # `fleet report` reports each stack it was given on its own: none was named by the user here.
        why = (
            "one report per stack of `fleet report`"
            if os.environ.get(IN_FLEET_ENV)
            else "named with --stacks"
        )
        unknown = sorted(set(stacks) - set(known))
        if unknown:
            raise InputError(
                f"--stacks: no stack file for {', '.join(unknown)} in {stacks_dir}; stacks: {', '.join(known)}"
            )
    else:
        stacks, why = touched_stacks(changed, PROJECT, stacks_dir, args.base)
    rel = in_repository(stacks_dir)
    policy_config = read_policy_config(args)
    with tempfile.TemporaryDirectory(prefix="nodefleet-report-") as tmp:
        merge_base = export_base(args.base, Path(tmp))
        results = []
        for stack in stacks:
            tree = Path(tmp) / "tree"
            if rel is None:
                # Outside the repository: the base's code on the stack file as it is now, so the report shows
                # what the change of the program does to these stacks.
                file: Path | None = stacks_dir.resolve() / f"Pulumi.{stack}.yaml"
                label = f"the render of {args.base}'s code (merge base {merge_base[:12]}) of the stack file as it is now"
            else:
                file = None if rel == "stacks" else tree / rel / f"Pulumi.{stack}.yaml"
                label = f"the render of {args.base} (merge base {merge_base[:12]})"
            base = render_base(tree, stack, Path(tmp) / "render" / stack, file)
            base.label = label
            results.append(_stack_report(stack, base, policy_config, stacks_dir))
        report = {
            "base": args.base,
            "mergeBase": merge_base,
            "why": why,
            "changedFiles": changed,
            "stacks": results,
        }
        text = markdown(report)
    if args.out:
        args.out.write_text(text, encoding="utf-8")
    if args.json_out:
        args.json_out.write_text(json.dumps(as_json(report), indent=2, default=str), encoding="utf-8")
    if args.json:
        print(json.dumps(as_json(report), indent=2, default=str))
    elif not args.out:
        print(text, end="")
    else:
        print(f"nodefleet report: {len(results)} stack(s) → {args.out}")
    return max((s["exit"] for s in results), default=EXIT_OK)
