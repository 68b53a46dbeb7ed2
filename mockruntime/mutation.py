"""Policy mutation runs: every policy over malformed copies of the manifests the example stacks produce.

A policy reads hand-written or half-written objects as well as nodefleet's own, so every field may hold any
shape. The run replaces one field of one object at a time (every field path, by a string, an int, a float,
a bool, None, an empty and a one-item list, an empty and a one-key mapping, or deletes it) and evaluates
the resource policies on the mutated object and the stack policies on the whole stack with that one object
mutated, the way the analyzer would. Every exception a policy raises is a crash, whether it escapes or is
caught by the pack's safety net (:mod:`policies.guard`): the net keeps a verdict, it does not make the
policy right. Shared by ``tests/policies/test_mutation.py`` (a deterministic sample) and
``bench/policy_mutation.py`` (the full run).
"""

from __future__ import annotations

import copy
import functools
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pulumi_policy import (
    Policy,
    PolicyProviderResource,
    PolicyResource,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)
from pulumi_policy.proxy import UnknownValueError, unknown_checking_proxy

from mockruntime.evaluate import _policy_config, policy_options, provider_resource, stack_resources
from mockruntime.run import MockRun, Registration, read_stack_config, run_program

PROJECT_DIR = Path(__file__).resolve().parent.parent

Path_ = tuple[str | int, ...]

_DELETE = object()
KUBERNETES_PROVIDER = "pulumi:providers:kubernetes"

#: (label, replacement) of every mutation; ``deleted`` removes the field.
MUTATIONS: tuple[tuple[str, Any], ...] = (
    ("string", "x"),
    ("int", 7),
    ("float", 2.5),
    ("bool", True),
    ("None", None),
    ("[]", []),
    ('["x"]', ["x"]),
    ("{}", {}),
    ('{"x": "y"}', {"x": "y"}),
    ("deleted", _DELETE),
)
#: Beyond the shapes: a string no path, name or version may contain (a file name with it raises ValueError).
HOSTILE = (("NUL string", "../x\x00y"),)


def field_paths(value: Any, prefix: Path_ = ()) -> Iterator[Path_]:
    """Every path to a field below ``value`` (mapping keys and list indices), parents before children."""
    if isinstance(value, Mapping):
        for key, item in value.items():
            yield (*prefix, key)
            yield from field_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*prefix, i)
            yield from field_paths(item, (*prefix, i))


def mutated(obj: Mapping[str, Any], path: Path_, replacement: Any) -> dict[str, Any]:
    """A deep copy of ``obj`` with the field at ``path`` replaced (or removed, for ``deleted``)."""
    out: Any = copy.deepcopy(dict(obj))
    parent = out
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if replacement is _DELETE:
        del parent[last]
    else:
        parent[last] = copy.deepcopy(replacement)
    return out  # type: ignore[no-any-return]


def show_path(path: Path_) -> str:
    return "".join(f"[{p}]" if isinstance(p, int) else (f".{p}" if i else str(p)) for i, p in enumerate(path))


@dataclass(frozen=True)
class Crash:
    """One exception a policy raised on a mutated object."""

    policy: str
    stack: str
    resource_type: str
    path: str
    mutation: str
    error: str
    where: str

    def __str__(self) -> str:
        return (
            f"{self.policy} on {self.resource_type} ({self.stack}) with {self.path} = {self.mutation}: "
            f"{self.error} at {self.where}"
        )


@dataclass
class MutationReport:
    stacks: list[str] = field(default_factory=list)
    objects: int = 0
    paths: int = 0
    mutations: int = 0
    evaluations: int = 0
    crashes: list[Crash] = field(default_factory=list)
    seconds: float = 0.0

    def by_policy(self) -> Counter[str]:
        return Counter(c.policy for c in self.crashes)


def example_runs(project_dir: Path = PROJECT_DIR) -> list[MockRun]:
    """The program run for every example stack whose configuration is valid (stacks/ and tests/stacks/)."""
    import pulumi

    runs = []
    for path in sorted((project_dir / "stacks").glob("Pulumi.*.yaml")) + sorted(
        (project_dir / "tests" / "stacks").glob("Pulumi.*.yaml")
    ):
        stack = path.name.removeprefix("Pulumi.").removesuffix(".yaml")
        source = str(path.relative_to(project_dir))
        try:
            runs.append(run_program(stack, read_stack_config(path, source), source=source))
        except pulumi.RunError:
            continue  # a known-bad configuration: nothing is registered, so there is nothing to mutate
    return runs


def _is_manifest(reg: Registration) -> bool:
    return reg.type.startswith("kubernetes:") and reg.custom


def _where(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)
    frame = next((f for f in reversed(frames) if "/policies/" in f.filename), frames[-1] if frames else None)
    return f"{Path(frame.filename).name}:{frame.lineno}" if frame else "?"


def _ignore(message: str, urn: str | None = None) -> None:
    return None


def run_mutations(
    runs: Sequence[MockRun],
    policies: Iterable[Policy],
    *,
    keep: Callable[[int], bool] = lambda _: True,
    net_firings: Callable[[], list[tuple[str, str]]] = list,
    mutations: Sequence[tuple[str, Any]] = MUTATIONS + HOSTILE,
    once_per_field: bool = False,
) -> MutationReport:
    """Every policy over every mutation of every manifest (and Kubernetes provider) of ``runs``.

    ``keep(i)`` samples mutation ``i`` (numbered from 1 in a fixed order); ``once_per_field`` mutates each
    field path of each resource type only where it first occurs (the example stacks share most shapes: a
    MachineSet of one stack has the fields of another's), in stack order. A provider's mutations are judged
    on every object that goes through it. ``net_firings`` returns (and forgets) what the pack's safety net
    caught since the last call, as (policy, error) pairs: each is counted as a crash, as is any exception
    that escapes a policy.
    """
    policies = list(policies)
    resource_policies = [p for p in policies if isinstance(p, ResourceValidationPolicy)]
    stack_policies = [p for p in policies if isinstance(p, StackValidationPolicy)]
    configs = {p.name: _policy_config(p, None) for p in policies}
    report = MutationReport(stacks=[r.stack for r in runs])
    started = time.perf_counter()
    index = 0
    net_firings()

    def judge(
        run: MockRun,
        stack: dict[str, PolicyResource],
        objects: list[tuple[Registration, Mapping[str, Any], PolicyProviderResource | None]],
        context: tuple[str, str, str, str],
    ) -> None:
        def crashed(policy: str, error: str, where: str) -> None:
            report.crashes.append(Crash(policy, *context, error, where))

        def attempt(policy: Policy, call: Callable[[], Any]) -> None:
            report.evaluations += 1
            try:
                call()
            except UnknownValueError:
                pass
            except Exception as exc:
                crashed(policy.name, f"{type(exc).__name__}: {exc}", _where(exc))
            for name, error in net_firings():
                crashed(name, error, "caught by the pack's safety net")

        saved = {}
        for reg, props, provider in objects:
            for policy in resource_policies:
                args = ResourceValidationArgs(
                    reg.type,
                    unknown_checking_proxy(dict(props)),
                    reg.urn,
                    reg.name,
                    policy_options(reg),
                    provider,
                    configs[policy.name],
                )
                attempt(policy, functools.partial(policy.validate, args, _ignore))
            resource = stack[reg.urn]
            saved[reg.urn] = (resource.props, resource.provider)
            resource.props, resource.provider = unknown_checking_proxy(dict(props)), provider
        try:
            for stack_policy in stack_policies:
                stack_args = StackValidationArgs(list(stack.values()), configs[stack_policy.name])
                attempt(stack_policy, functools.partial(stack_policy.validate, stack_args, _ignore))
        finally:
            for urn, (props, provider) in saved.items():
                stack[urn].props, stack[urn].provider = props, provider

    seen: set[tuple[str, Path_]] = set()
    for run in runs:
        stack = stack_resources(run)
        for reg in run.registrations:
            if _is_manifest(reg):
                users = None
            elif reg.type == KUBERNETES_PROVIDER:
                users = [r for r in run.registrations if _is_manifest(r) and run.provider_of(r) is reg]
            else:
                continue
            report.objects += 1
            for path in list(field_paths(reg.inputs)):
                if once_per_field:
                    if (reg.type, path) in seen:
                        continue
                    seen.add((reg.type, path))
                report.paths += 1
                for label, replacement in mutations:
                    index += 1
                    if not keep(index):
                        continue
                    report.mutations += 1
                    changed = mutated(reg.inputs, path, replacement)
                    context = (run.stack, reg.type, show_path(path), label)
                    if users is None:
                        judge(run, stack, [(reg, changed, provider_resource(run, reg))], context)
                    else:
                        provider = PolicyProviderResource(reg.type, changed, reg.urn, reg.name)
                        judge(run, stack, [(u, u.inputs, provider) for u in users], context)
    report.seconds = time.perf_counter() - started
    return report
