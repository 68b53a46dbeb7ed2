"""Waves: the order in which a fleet's stacks roll out, canaries first, with a health gate between waves.

A stack names its wave in its stack file (``nodefleet:fleet.wave``). nodefleet schedules nothing itself: the
wave is handed to the engines that do, in the shape each one reads:

- render mode: every render folder of the stack carries the label :data:`WAVE_LABEL` (in the folder's
  :data:`nodefleet.render.gitops.ARGOCD_IGNORE_DIFFERENCES_FILE`, which the Argo CD ApplicationSet reads), so
  Argo CD's progressive syncs (``RollingSync``) and Flux's ``dependsOn`` between Kustomizations of
  consecutive waves roll the clusters out wave by wave (examples/);
- apply mode: ``nodefleet fleet matrix`` prints the stacks a change touches as one GitHub Actions matrix per
  wave (:func:`matrix`), and the workflow runs the waves one after the other;
- on one machine: ``nodefleet fleet`` runs the waves in order and stops at the first wave that fails.

The waves are a closed, ordered set (:data:`WAVES`), so every consumer can list all of them: an Argo CD
step, a Flux Kustomization or a workflow job per wave leaves no stack unscheduled. A stack without a
``wave`` is in :data:`DEFAULT_WAVE`, with the bulk of the fleet: canaries are chosen, never defaulted into.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

__all__ = [
    "DEFAULT_WAVE",
    "SHARED_PATHS",
    "WAVES",
    "WAVE_LABEL",
    "StackWave",
    "WaveError",
    "WaveSetting",
    "is_shared",
    "label_value",
    "management_clusters_of",
    "matrix",
    "normalize_wave",
    "plan_waves",
    "touched_stacks",
    "wave_index",
]

#: The waves, in rollout order: a few canary clusters, an early share, the bulk, the clusters that go last.
WAVES = ("canary", "early", "main", "last")
#: The wave of a stack that names none.
DEFAULT_WAVE = "main"
#: Label on every Argo CD Application (and Flux Kustomization) of a render folder: ``<index>-<name>``.
WAVE_LABEL = "nodefleet.io/wave"
#: Paths (relative to the project) that every stack is built from: a change to one touches every stack. The
#: same list as the pull request report's (cli/report.py). A stack file touches its own stack, a catalog the
#: stacks whose clusters name it; anything else (docs, tests, the command line, examples) touches none.
SHARED_PATHS = ("__main__.py", "Pulumi.yaml", "requirements.txt", "nodefleet/", "components/", "policies/")


class WaveError(ValueError):
    """A ``wave`` value that is not one of :data:`WAVES` or their indices (the message says what is)."""


def normalize_wave(value: Any) -> str:
    """The wave's name for ``value``: a name of :data:`WAVES` or its index (0 = ``canary``)."""
    if isinstance(value, bool):
        raise WaveError(_expected(value))
    if isinstance(value, int):
        if 0 <= value < len(WAVES):
            return WAVES[value]
        raise WaveError(_expected(value))
    if isinstance(value, str):
        name = value.strip().lower()
        if name in WAVES:
            return name
        if name.isdigit() and int(name) < len(WAVES):
            return WAVES[int(name)]
        # A label value read back from a render folder or a matrix entry: "<index>-<name>".
        index, _, rest = name.partition("-")
        if index.isdigit() and int(index) < len(WAVES) and WAVES[int(index)] == rest:
            return rest
    raise WaveError(_expected(value))


def _expected(value: Any) -> str:
    order = ", ".join(f"{name} ({i})" for i, name in enumerate(WAVES))
    close = difflib.get_close_matches(value.strip().lower(), WAVES, n=1) if isinstance(value, str) else []
    hint = f"did you mean '{close[0]}'? " if close else ""
    return (
        f"not a wave; {hint}use one of {order}, in rollout order (default {DEFAULT_WAVE}: a stack joins the "
        "canaries only when its file says so)"
    )


#: The ``wave`` field of a stack's configuration: any spelling :func:`normalize_wave` accepts, stored by name.
WaveSetting = Annotated[str, BeforeValidator(normalize_wave)]


def wave_index(name: str) -> int:
    return WAVES.index(normalize_wave(name))


def label_value(name: str) -> str:
    """The :data:`WAVE_LABEL` value of a wave, ``0-canary`` … ``3-last``: sortable, and readable in a UI."""
    return f"{wave_index(name)}-{normalize_wave(name)}"


@dataclass(frozen=True)
class StackWave:
    """One stack of the fleet and what scheduling it needs."""

    stack: str
    wave: str
    #: The stack file, relative to the project where it lies inside it (as `git diff --name-only` names it).
    file: str
    #: ``output.mode``: ``render`` (the GitOps tool rolls it out) or ``apply`` (a job runs ``up``).
    mode: str = "render"
    #: The boot image catalogs its clusters name (``clusters[].catalog``), relative to the project.
    catalogs: tuple[str, ...] = ()
    #: The management clusters its hosted clusters are on (``clusters[].managementCluster``).
    management_clusters: tuple[str, ...] = ()


def management_clusters_of(fleet_config: Any) -> tuple[str, ...]:
    """The management clusters the hosted clusters of a stack's raw ``nodefleet:fleet`` are on (without reading
    it whole: scheduling reads hundreds of stack files); the default one where a hosted cluster names none."""
    from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER

    clusters = fleet_config.get("clusters") if isinstance(fleet_config, Mapping) else None
    names = []
    for c in clusters if isinstance(clusters, list) else []:
        if isinstance(c, Mapping) and c.get("kind") == "hosted":
            name = c.get("managementCluster", DEFAULT_MANAGEMENT_CLUSTER)
            if isinstance(name, str) and name not in names:
                names.append(name)
    return tuple(names)


def plan_waves(stacks: Iterable[StackWave]) -> list[tuple[str, list[StackWave]]]:
    """Every wave of :data:`WAVES`, in order, with its stacks sorted by name (a wave may be empty)."""
    by_wave: dict[str, list[StackWave]] = {w: [] for w in WAVES}
    for s in stacks:
        by_wave[normalize_wave(s.wave)].append(s)
    return [(w, sorted(by_wave[w], key=lambda s: s.stack)) for w in WAVES]


def is_shared(path: str) -> bool:
    """Whether a changed path (as `git diff --name-only` names it) is one every stack is built from."""
    path = path.strip().removeprefix("./")
    return any(path == p or (p.endswith("/") and path.startswith(p)) for p in SHARED_PATHS)


def touched_stacks(
    changed: Iterable[str],
    stacks: Sequence[StackWave],
    *,
    registry_file: str | None = None,
    registry_changes: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """Stack name -> the first changed path that touches it, for the files of a change.

    ``changed`` is what ``git diff --name-only <base>`` prints: paths relative to the repository root. A stack
    file touches its stack, a catalog the stacks that name it; a path under :data:`SHARED_PATHS` (the
    program, the policies) touches every stack, because every stack is built from it. The fleet's registry
    (``registry_file``) touches every stack on a management cluster it changes: those of
    ``registry_changes`` (management cluster -> what changed) when the base's registry was compared, else
    every stack on any management cluster.
    """
    by_file = {s.file: s.stack for s in stacks}
    out: dict[str, str] = {}
    for raw in changed:
        path = raw.strip().removeprefix("./")
        if not path:
            continue
        if registry_file is not None and path == registry_file:
            for s in stacks:
                hit = [m for m in s.management_clusters if registry_changes is None or m in registry_changes]
                if hit:
                    what = (
                        f" ({'; '.join(f'{m}: {registry_changes[m]}' for m in hit)})"
                        if registry_changes
                        else ""
                    )
                    out.setdefault(s.stack, path + what)
        elif path in by_file:
            out.setdefault(by_file[path], path)
        elif is_shared(path):
            for s in stacks:
                out.setdefault(s.stack, path)
        else:
            for s in stacks:
                if path in (c.removeprefix("./") for c in s.catalogs):
                    out.setdefault(s.stack, path)
    return out


#: GitHub Actions runs at most 256 jobs from one matrix.
GITHUB_MAX_JOBS = 256


def matrix(
    stacks: Sequence[StackWave],
    *,
    touched: Mapping[str, str] | None = None,
    stacks_per_job: int = 1,
    max_jobs_per_wave: int = GITHUB_MAX_JOBS,
) -> dict[str, Any]:
    """The fleet as GitHub Actions matrices, one per wave, each consumed as ``fromJSON(...).waves.<name>.matrix``.

    ``touched`` (stack -> reason) keeps only the stacks a change touches; ``None`` keeps every stack. A job
    gets ``stacks_per_job`` stacks, more when a wave would otherwise need more than ``max_jobs_per_wave``
    jobs (a GitHub matrix runs at most 256). Every wave of :data:`WAVES` is present, with ``size`` 0 when no
    stack of it is touched, so a workflow can skip it by ``size`` instead of indexing a list that shifts.
    """
    if stacks_per_job < 1:
        raise ValueError(f"stacks per job must be at least 1, not {stacks_per_job}")
    if max_jobs_per_wave < 1:
        raise ValueError(f"jobs per wave must be at least 1, not {max_jobs_per_wave}")
    selected = [s for s in stacks if touched is None or s.stack in touched]
    waves: dict[str, Any] = {}
    ordered: list[dict[str, Any]] = []
    for name, members in plan_waves(selected):
        per_job = (
            max(stacks_per_job, math.ceil(len(members) / max_jobs_per_wave)) if members else stacks_per_job
        )
        jobs = [members[i : i + per_job] for i in range(0, len(members), per_job)]
        include = [
            {
                "wave": name,
                "job": f"{label_value(name)}-{j + 1:03d}",
                "stacks": ",".join(s.stack for s in batch),
                "count": len(batch),
            }
            for j, batch in enumerate(jobs)
        ]
        waves[name] = {
            "index": WAVES.index(name),
            "label": label_value(name),
            "size": len(members),
            "jobs": len(include),
            "stacks": [s.stack for s in members],
            "matrix": {"include": include},
        }
        ordered += [
            {"stack": s.stack, "wave": name, "file": s.file, "mode": s.mode}
            | ({"reason": touched[s.stack]} if touched is not None else {})
            for s in members
        ]
    return {"order": list(WAVES), "waves": waves, "stacks": ordered, "total": len(ordered)}
