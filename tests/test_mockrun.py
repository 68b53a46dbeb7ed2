"""What the mock runtime records is what the engine would see: its URNs and the options policies get."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from pulumi_policy import (
    EnforcementLevel,
    PolicyResourceOptions,
    ResourceValidationArgs,
    ResourceValidationPolicy,
    StackValidationArgs,
    StackValidationPolicy,
)

from engine.events import findings, read_event_log, step_urns
from mockruntime.evaluate import evaluate_run
from mockruntime.run import make_urn, project_name, read_stack_config, run_program
from nodefleet.stackfile.yamlfile import YAMLFileError
from tests.conftest import PROJECT, nodefleet

EVENTS = PROJECT / "tests" / "engine" / "data"

# A program with a component inside a component, and every option the engine acts on or passes to policies.
PROGRAM = """
import pulumi

class Outer(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("test:index:Outer", name, None, opts)
        inner = Inner(f"{name}-inner", pulumi.ResourceOptions(parent=self))
        self.register_outputs({})

class Inner(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("test:index:Inner", name, None, opts)
        Thing(f"{name}-plain", {}, pulumi.ResourceOptions(parent=self))
        Thing(
            f"{name}-everything",
            {"spec": {"a": 1}},
            pulumi.ResourceOptions(
                parent=self,
                ignore_changes=["spec.a"],
                replace_on_changes=["spec.kind"],
                delete_before_replace=True,
                additional_secret_outputs=["spec"],
                custom_timeouts=pulumi.CustomTimeouts(create="10m", update="1h30m", delete="90s"),
                aliases=[pulumi.Alias(name="old-name"), pulumi.Alias(parent=pulumi.ROOT_STACK_RESOURCE)],
            ),
        )
        self.register_outputs({})

class Thing(pulumi.CustomResource):
    def __init__(self, name, props, opts=None):
        super().__init__("test:index:Thing", name, props, opts)

guarded = Outer("guarded", pulumi.ResourceOptions(protect=True, retain_on_delete=True))
Thing("top", {})
"""


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("program")
    (root / "Pulumi.yaml").write_text("name: options-test\nruntime: python\n")
    (root / "__main__.py").write_text(PROGRAM)
    return root


def _by_name(project_dir: Path) -> dict[str, Any]:
    return {r.name: r for r in run_program("qa", {}, project_dir=project_dir).registrations}


def test_urns_name_the_stack_the_project_and_the_whole_parent_chain(program: Path) -> None:
    regs = _by_name(program)
    assert regs["top"].urn == "urn:pulumi:qa::options-test::test:index:Thing::top"
    assert regs["guarded"].urn == "urn:pulumi:qa::options-test::test:index:Outer::guarded"
    assert (
        regs["guarded-inner-plain"].urn
        == "urn:pulumi:qa::options-test::test:index:Outer$test:index:Inner$test:index:Thing::guarded-inner-plain"
    )


def test_the_engines_urn_rule() -> None:
    stack = "urn:pulumi:s::p::pulumi:pulumi:Stack::p-s"
    assert make_urn("s", "p", "", "pulumi:pulumi:Stack", "p-s") == stack
    assert make_urn("s", "p", stack, "a:b:C", "n") == "urn:pulumi:s::p::a:b:C::n"
    assert make_urn("s", "p", "urn:pulumi:s::p::x:y:Z$a:b:C::n", "d:e:F", "m") == (
        "urn:pulumi:s::p::x:y:Z$a:b:C$d:e:F::m"
    )


def test_the_project_name_comes_from_pulumi_yaml(tmp_path: Path) -> None:
    assert project_name() == "nodefleet"
    (tmp_path / "Pulumi.yaml").write_text("runtime: python\n")
    with pytest.raises(YAMLFileError, match="no `name:`"):
        project_name(tmp_path)


@pytest.mark.parametrize(
    ("events_file", "stack"),
    [
        ("preview-stale-boot-images.jsonl", "stale-boot-images"),
        ("preview-stack-and-advisory-findings.jsonl", "skewed-hosted"),
    ],
)
def test_check_names_resources_as_the_engine_does(events_file: str, stack: str) -> None:
    """Engine event logs of previews (engine format, tests/engine/data) name the same resources, by the same
    URNs, as `check --json`; every resource the engine planned is one the mock run registered."""
    events = read_event_log(EVENTS / events_file)
    stack_file = PROJECT / "tests" / "stacks" / f"Pulumi.{stack}.yaml"
    done = nodefleet("check", "--config-file", str(stack_file), "--json")
    assert done.returncode == 1, done.stderr
    engine = {(f.policy, f.level, f.resource) for f in findings(events) if f.resource}
    checked = {(v["policy"], v["level"], v["resource"]) for v in json.loads(done.stdout)["violations"]}
    assert engine and engine <= checked
    registered = {r.urn for r in run_program(stack, read_stack_config(stack_file)).registrations}
    root = f"urn:pulumi:{stack}::nodefleet::pulumi:pulumi:Stack::nodefleet-{stack}"
    assert step_urns(events) - {root} <= registered


def test_every_option_is_recorded_with_what_children_inherit(program: Path) -> None:
    regs = _by_name(program)
    everything = regs["guarded-inner-everything"]
    assert everything.ignore_changes == ["spec.a"]
    assert everything.replace_on_changes == ["spec.kind"]
    assert everything.delete_before_replace is True
    assert everything.additional_secret_outputs == ["spec"]
    assert (everything.custom_timeouts.create, everything.custom_timeouts.update) == (600.0, 5400.0)
    assert everything.custom_timeouts.delete == 90.0
    inner = "urn:pulumi:qa::options-test::test:index:Outer$test:index:Inner::guarded-inner"
    assert everything.aliases == [
        f"{inner.rsplit('::', 1)[0]}$test:index:Thing::old-name",
        "urn:pulumi:qa::options-test::test:index:Thing::guarded-inner-everything",
    ]
    # protect and retainOnDelete flow from the component to every descendant, as the engine's
    # inheritFromParent does; a resource outside the component keeps the defaults.
    assert all(regs[n].protect and regs[n].retain_on_delete for n in ("guarded-inner", "guarded-inner-plain"))
    plain, top = regs["guarded-inner-plain"], regs["top"]
    assert plain.delete_before_replace is None and plain.replace_on_changes == [] and plain.aliases == []
    assert (top.protect, top.retain_on_delete, top.deleted_with) == (False, False, "")


class _Recorder:
    """A resource policy and a stack policy that keep the options the evaluator hands them."""

    def __init__(self) -> None:
        self.seen: dict[str, PolicyResourceOptions] = {}
        self.stack_seen: dict[str, PolicyResourceOptions] = {}
        self.resource = ResourceValidationPolicy(
            "record-options", "records options", self._resource, EnforcementLevel.ADVISORY
        )
        self.stack = StackValidationPolicy("record-stack", "records options", self._stack)

    def _resource(self, args: ResourceValidationArgs, report: Any) -> None:
        self.seen[args.name] = args.opts

    def _stack(self, args: StackValidationArgs, report: Any) -> None:
        self.stack_seen = {r.name: r.opts for r in args.resources}


def test_policies_get_the_options_the_engine_passes(program: Path) -> None:
    recorder = _Recorder()
    evaluate_run(run_program("qa", {}, project_dir=program), [recorder.resource, recorder.stack])
    for seen in (recorder.seen, recorder.stack_seen):
        opts = seen["guarded-inner-everything"]
        assert opts.protect is True
        assert opts.ignore_changes == ["spec.a"]
        assert opts.delete_before_replace is True
        assert opts.additional_secret_outputs == ["spec"]
        assert len(opts.aliases) == 2
        assert (opts.custom_timeouts.create_seconds, opts.custom_timeouts.delete_seconds) == (600.0, 90.0)
        assert opts.parent and opts.parent.endswith("::guarded-inner")
        # Not set by the program: None, as pulumi-policy decodes deleteBeforeReplaceDefined=false.
        assert seen["top"].delete_before_replace is None and seen["top"].protect is False


COMPONENT_OUTPUTS = """
import pulumi

class Box(pulumi.ComponentResource):
    def __init__(self, name, opts=None):
        super().__init__("test:index:Box", name, {"given": "as an input"}, opts)
        Thing(f"{name}-thing", {"spec": {"a": 1}}, pulumi.ResourceOptions(parent=self))
        self.register_outputs({"recorded": "as an output", "lines": ["4.22", "4.21"]})

class Thing(pulumi.CustomResource):
    def __init__(self, name, props, opts=None):
        super().__init__("test:index:Thing", name, props, opts)

Box("box")
"""


def test_a_stack_policy_sees_a_components_registered_outputs_not_its_inputs(tmp_path: Path) -> None:
    """The engine's AnalyzeStack hands every resource's outputs to a stack policy; a component's outputs are
    what it registered with ``register_outputs``, its inputs never reach the policy. check must see the same,
    or a stack policy reading a component (hypershift-supported-versions) passes check and fails preview."""
    (tmp_path / "Pulumi.yaml").write_text("name: outputs-test\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(COMPONENT_OUTPUTS)
    seen: dict[str, dict[str, Any]] = {}

    def _stack(args: StackValidationArgs, report: Any) -> None:
        seen.update({r.name: dict(r.props) for r in args.resources})

    policy = StackValidationPolicy(
        name="record", description="records", validate=_stack, enforcement_level=EnforcementLevel.ADVISORY
    )
    evaluate_run(run_program("qa", {}, project_dir=tmp_path), [policy])
    assert set(seen["box"]) == {"recorded", "lines"}
    assert seen["box"]["recorded"] == "as an output" and list(seen["box"]["lines"]) == ["4.22", "4.21"]
    assert set(seen["box-thing"]) == {"spec"}


FAILS_WHILE_REGISTERING = """
import pulumi

class Thing(pulumi.CustomResource):
    def __init__(self, name, props, opts=None):
        super().__init__("test:index:Thing", name, props, opts)

Thing("slow", {"spec": {"a": 1}})
Thing("refused", {"spec": {"a": 2}})
"""


def test_a_registration_that_fails_while_another_is_in_flight_reports_its_error_after_both_end(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The SDK stops waiting for registrations at the first that fails; another may still be on a gRPC
    worker thread, running that thread's event loop to serialize its outputs. The run must report the
    failure, not an error of its own cleanup ("Cannot close a running event loop", which render showed as
    an internal error), and must not return while that thread still uses a loop the cleanup closes."""
    import threading

    from mockruntime import run as runmod

    ended: list[str] = []
    original, cancel_pending = runmod._EchoMocks.new_resource, runmod._cancel_pending
    cleanup, returned = threading.Event(), threading.Event()

    def new_resource(self: Any, args: Any) -> Any:
        if args.name == "refused":
            raise ValueError("the refused registration")
        # In flight until the run, failed by the other registration, has begun its cleanup, and then until
        # the run returns: a run that waits for it never does, and the wait ends by itself after a second.
        assert cleanup.wait(60), "the run never began its cleanup"
        returned.wait(1)
        try:
            return original(self, args)
        finally:
            ended.append(args.name)

    def cancelling(loop: Any) -> None:
        cleanup.set()
        cancel_pending(loop)

    monkeypatch.setattr(runmod._EchoMocks, "new_resource", new_resource)
    monkeypatch.setattr(runmod, "_cancel_pending", cancelling)
    (tmp_path / "Pulumi.yaml").write_text("name: fails-test\nruntime: python\n")
    (tmp_path / "__main__.py").write_text(FAILS_WHILE_REGISTERING)
    try:
        with pytest.raises(Exception, match="the refused registration"):
            run_program("qa", {}, project_dir=tmp_path)
        at_return = list(ended)
    finally:
        returned.set()
    assert at_return == ["slow"]
