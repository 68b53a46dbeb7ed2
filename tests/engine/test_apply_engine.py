"""Apply mode through the real Pulumi engine: every shipped stack without AWS resources switched to
``output.mode: apply`` and run with ``pulumi up`` (the CLI, the Python language host, the Kubernetes provider and
the policy pack) against the test API server (tests/testcluster.py).

The Python-client tests (tests/test_apply_mode.py) model the provider's requests (tests/applymode.py); these
run the provider itself and hold it to the same expectations, with the same code: ``up`` creates exactly
what ``render`` lists, as the API server stores it after defaulting; a second ``up`` changes nothing; a change
previews as ``nodefleet forecast`` says, object by object (updated, replaced or left alone), and ``up``
changes only those objects; what a controller owns survives ``up``; ``destroy`` removes what the stack made
and leaves what it shares. The ``karpenter`` stack also declares AWS resources (its S3 Ignition pointers),
which need the AWS provider and an AWS account; its Kubernetes objects stay covered by the Python-client
tests.

Each stack gets clusters of its own, prepared as OpenShift prepares them, kept for the stack's tests, which
run in the order of this file (``destroy`` last) and each start from the stack as last applied. Results are
read from the engine's event log and from the API server, never from the CLI's text.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.automation.events import EngineEvent

from engine.events import changes, step_ops
from engine.project import Run, ScratchProject, scratch_project, stack_name
from mockruntime.run import read_stack_config, run_program, stack_fleet
from nodefleet import kinds as k
from nodefleet.apiserver.store import load_index
from tests.applymode import (
    HOSTED_KARPENTER,
    HYPERSHIFT,
    KARPENTER,
    MCO,
    MCO_CONTROLLER,
    Declared,
    apply_config,
    clients,
    controller_patch,
    declared,
    differences_from_rendered,
    has_hosted,
    prepare,
    read_live,
    rendered_keys,
    second_hosted_stack,
    static_spot_pool,
)
from tests.conftest import PROJECT, nodefleet
from tests.shipped import shipped_stack_files
from tests.testcluster import ApiServer, TestClusters

PROGRAM = ("pulumi-language-python", "kubernetes")
pytestmark = [pytest.mark.engine(needs=PROGRAM), pytest.mark.apiserver]


def _kubernetes_only(stack_file: Path) -> bool:
    run = run_program(stack_name(stack_file), read_stack_config(stack_file))
    return not any(r.type.startswith("aws:") for r in run.registrations)


STACKS = tuple(stack_name(f) for f in shipped_stack_files(PROJECT) if _kubernetes_only(f))


def _output(run: Run) -> str:
    return f"{' '.join(run.args)}\n{run.stdout}\n{run.stderr}"


def _object_ops(events: list[EngineEvent]) -> dict[str, str]:
    """The engine's operation for each Kubernetes object (not the providers, components or the stack), by URN."""
    objects = {
        e.resource_pre_event.metadata.urn
        for e in events
        if e.resource_pre_event is not None
        and e.resource_pre_event.metadata.type.startswith("kubernetes:")
        and not e.resource_pre_event.metadata.type.startswith("pulumi:providers:")
    }
    return {urn: op for urn, op in step_ops(events).items() if urn in objects}


def _state_objects(export: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The Kubernetes objects of a ``pulumi stack export``, by URN: each resource's outputs (the live object
    as the provider last read it, with its ``__inputs`` and ``__fieldManager``)."""
    return {
        r["urn"]: r.get("outputs") or {}
        for r in export.get("deployment", {}).get("resources") or []
        if r["type"].startswith("kubernetes:") and not r["type"].startswith("pulumi:providers:")
    }


def _key(obj: dict[str, Any]) -> tuple[str, str, str, str]:
    meta = obj["metadata"]
    return (obj["apiVersion"], obj["kind"], meta.get("namespace") or "", meta["name"])


@dataclass
class Deployed:
    """One stack of the scratch project in apply mode against its test clusters."""

    stack: str
    project: ScratchProject
    management: ApiServer
    hosted: ApiServer | None
    #: ``nodefleet:fleet`` as last applied, and the objects the program declared with it.
    raw: dict[str, Any]
    objects: list[Declared] = field(default_factory=list)
    first: Run | None = None
    first_objects: list[Declared] = field(default_factory=list)

    @property
    def stack_file(self) -> Path:
        return self.project.root / "stacks" / f"Pulumi.{self.stack}.yaml"

    @functools.cached_property
    def clients(self) -> dict[str, Any]:
        return clients(self.management, self.hosted)

    def configure(self, raw: dict[str, Any]) -> None:
        """Write ``raw`` into the stack file in apply mode, keeping what ``pulumi stack init`` wrote there."""
        document = yaml.safe_load(self.stack_file.read_text()) if self.stack_file.exists() else {}
        document["config"] = apply_config(self.stack, self.management, self.hosted, raw)
        self.stack_file.write_text(yaml.safe_dump(document, sort_keys=False))

    def declared(self, raw: dict[str, Any]) -> list[Declared]:
        """What the program declares with ``raw``: the objects the engine hands the provider."""
        return declared(run_program(self.stack, apply_config(self.stack, self.management, self.hosted, raw)))

    def pulumi(self, *args: str) -> Run:
        run = self.project.pulumi(*args, stack=self.stack)
        assert "Traceback" not in run.stdout + run.stderr, _output(run)
        assert run.returncode == 0, _output(run)
        return run

    def preview(self, raw: dict[str, Any]) -> Run:
        self.configure(raw)
        return self.pulumi("preview", "--policy-pack", "policies")

    def up(self, raw: dict[str, Any] | None = None) -> Run:
        raw = copy.deepcopy(self.raw if raw is None else raw)
        self.configure(raw)
        run = self.pulumi("up", "--yes", "--policy-pack", "policies")
        self.raw, self.objects = raw, self.declared(raw)
        return run

    def live(self, d: Declared) -> dict[str, Any]:
        return read_live(self.clients, d)

    def versions(self) -> dict[str, str]:
        return {d.urn: self.live(d)["metadata"]["resourceVersion"] for d in self.objects}

    def export(self) -> dict[str, Any]:
        return dict(json.loads(self.pulumi("stack", "export").stdout))


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> ScratchProject:
    return scratch_project(tmp_path_factory.mktemp("apply-engine"), [])


def _new_stack(
    project: ScratchProject, stack: str, raw: dict[str, Any], management: ApiServer, hosted: ApiServer | None
) -> Deployed:
    deployed = Deployed(stack, project, management, hosted, raw)
    deployed.configure(raw)
    project.init_stack(stack)
    return deployed


@pytest.fixture(scope="module", params=STACKS)
def deployed(
    request: pytest.FixtureRequest, project: ScratchProject, test_clusters: TestClusters
) -> Iterator[Deployed]:
    """The stack applied once by ``pulumi up``, to clusters of its own, for all of its tests."""
    stack = request.param
    with ExitStack() as stop:
        management = stop.enter_context(test_clusters.fresh(f"engine-{stack}"))
        hosted = (
            stop.enter_context(test_clusters.fresh(f"engine-{stack}-hosted", HOSTED_KARPENTER))
            if has_hosted(stack)
            else None
        )
        for server in (management, hosted):
            if server is not None:
                prepare(server)
        result = _new_stack(project, stack, stack_fleet(stack), management, hosted)
        result.first = result.up()
        result.first_objects = list(result.objects)
        yield result


# --- up, and up again --------------------------------------------------------------------------------------


def test_up_creates_exactly_what_render_lists(deployed: Deployed) -> None:
    """The engine creates one object per object the program declares and nothing else, the state names the
    objects ``render`` writes, and each is the very object the API server holds."""
    assert deployed.first is not None
    created = _object_ops(deployed.first.events)
    assert set(created.values()) == {"create"}, created
    assert set(created) == {d.urn for d in deployed.first_objects}
    state = _state_objects(deployed.export())
    assert {_key(o) for o in state.values()} == rendered_keys(deployed.stack)
    for d in deployed.first_objects:
        assert deployed.live(d)["metadata"]["uid"] == state[d.urn]["metadata"]["uid"], d.urn


def _as_checked(d: Declared) -> dict[str, Any]:
    """``d`` as the provider's Check records it in the state. Check asks the API server whether the kind of the
    resource's type token is namespaced, and for a patch of a custom kind that kind
    (``MachineConfigurationPatch``) is served by no API: it assumes namespaced and records the provider's
    default namespace, ``default``. The request it sends and the object stored carry none (the Diff and the
    apply look up the object's own kind, which is cluster-scoped)."""
    manifest = copy.deepcopy(d.manifest)
    custom = load_index().for_manifest(d.type, manifest) is not None
    if d.patch and custom and not manifest["metadata"].get("namespace"):
        manifest["metadata"]["namespace"] = "default"
    return manifest


def test_live_objects_are_the_rendered_ones_after_defaulting(deployed: Deployed) -> None:
    """The provider got exactly what the program declares (the state's ``__inputs``), and the API server
    stores it plus the CRD's defaults, as crd-schema's defaulting predicts."""
    state = _state_objects(deployed.export())
    for d in deployed.objects:
        assert state[d.urn]["__inputs"] == _as_checked(d), d.urn
        assert differences_from_rendered(d, deployed.live(d)) == [], d.urn


def test_a_second_up_is_a_no_op(deployed: Deployed) -> None:
    before = deployed.versions()
    run = deployed.up()
    assert set(changes(run.events)) == {"same"}, changes(run.events)
    assert deployed.versions() == before


# --- a change --------------------------------------------------------------------------------------------


def _dev_change(raw: dict[str, Any]) -> dict[str, Any]:
    """Two more workers in us-east-1b; a bigger instance type for the managed infra MachineSet."""
    raw["clusters"][0]["machineSets"][1]["replicas"] = 5
    raw["clusters"][0]["machineSets"][2]["instanceType"] = "r6i.2xlarge"
    return raw


def _rhel10_change(raw: dict[str, Any]) -> dict[str, Any]:
    """A bigger instance type for the arm64 RHEL 10 MachineSet."""
    raw["clusters"][0]["machineSets"][2]["instanceType"] = "m7g.2xlarge"
    return raw


def _hosted_change(raw: dict[str, Any]) -> dict[str, Any]:
    """A shorter expireAfter for the on-demand pool (a template change: Karpenter drifts its nodes), the spot
    pool made static (the NodePool API refuses that in place), one more classic NodePool replica."""
    raw = static_spot_pool(raw)
    cluster = raw["clusters"][0]
    on_demand = next(pool for pool in cluster["autoNode"]["nodePools"] if pool["name"] == "on-demand")
    on_demand["expireAfter"] = "480h"
    cluster["nodePools"][0]["replicas"] = 3
    return raw


#: Per stack: the change, and the forecast's verdict for each node source it changes.
CHANGES: dict[str, tuple[Callable[[dict[str, Any]], dict[str, Any]], dict[tuple[str, str], str]]] = {
    "dev": (
        _dev_change,
        {
            ("MachineSet", "dev-7xk2p-worker-us-east-1b"): "no rollout",
            ("MachineSet", "dev-7xk2p-infra-us-east-1a"): "new machines only",
        },
    ),
    "rhel10": (_rhel10_change, {("MachineSet", "rhel10-q9d4m-rhel10-arm-us-west-2b"): "new machines only"}),
    "hosted": (
        _hosted_change,
        {
            ("NodePool (Karpenter)", "on-demand"): "replaces nodes",
            ("NodePool (Karpenter)", "spot"): "replaces nodes",
            ("NodePool (HyperShift)", "prod-east-infra"): "no rollout",
        },
    ),
}

#: The forecast's kind labels that are not the object's kind.
_LABELS = {
    ("karpenter.sh", "NodePool"): "NodePool (Karpenter)",
    ("hypershift.openshift.io", "NodePool"): "NodePool (HyperShift)",
}


def _label(d: Declared) -> tuple[str, str]:
    group = d.manifest["apiVersion"].split("/")[0]
    kind = d.manifest["kind"]
    return _LABELS.get((group, kind), kind), d.manifest["metadata"]["name"]


def _expected_op(item: dict[str, Any]) -> str:
    """The engine operation the forecast implies for its object: the object is replaced where the forecast
    says so, left alone where unchanged, else updated in place (whatever happens to its nodes)."""
    if list(item["reasons"]) == ["unchanged"]:
        return "same"
    return "replace" if item["replacesObject"] else "update"


def test_a_change_previews_as_the_forecast_says_and_up_changes_only_its_objects(
    deployed: Deployed, tmp_path: Path
) -> None:
    """The forecast, against the engine's own state (``pulumi stack export``), gives each node source the
    change touches the verdict the change is meant to have. The engine previews and applies what that implies
    object by object: ``replace`` where the forecast says the object itself is replaced, ``same`` where it is
    unchanged, ``update`` elsewhere, whatever happens to the nodes. On the API server exactly those objects
    change, each to the rendered object; the next ``up`` is a no-op."""
    change, verdicts = CHANGES[deployed.stack]
    state = tmp_path / "state.json"
    deployed.pulumi("stack", "export", "--file", str(state))
    raw = change(copy.deepcopy(deployed.raw))
    deployed.configure(raw)
    said = nodefleet("forecast", "--config-file", str(deployed.stack_file), "--state", str(state), "--json")
    assert said.returncode == 0, said.stderr
    items = {(i["kind"], i["name"]): i for i in json.loads(said.stdout)["items"]}
    assert {key: i["verdict"] for key, i in items.items() if _expected_op(i) != "same"} == verdicts

    objects = deployed.declared(raw)
    # Objects that are no node source (HostedCluster, Namespace, MachineConfiguration) are not forecast: the
    # changes above leave them alone.
    expected = {d.urn: _expected_op(items[_label(d)]) if _label(d) in items else "same" for d in objects}
    preview = deployed.preview(raw)
    assert _object_ops(preview.events) == expected

    before = {d.urn: deployed.live(d)["metadata"] for d in deployed.objects}
    run = deployed.up(raw)
    assert _object_ops(run.events) == expected
    for d in deployed.objects:
        live = deployed.live(d)
        was, now = before[d.urn], live["metadata"]
        if expected[d.urn] == "same":
            assert now["resourceVersion"] == was["resourceVersion"], d.urn
            continue
        assert differences_from_rendered(d, live) == [], d.urn
        # A replaced object is a new one (deleted first: it keeps its name); an updated one is the same object.
        assert (now["uid"] != was["uid"]) == (expected[d.urn] == "replace"), d.urn
        assert now["resourceVersion"] != was["resourceVersion"], d.urn
    assert set(changes(deployed.up().events)) == {"same"}


# --- what controllers own ----------------------------------------------------------------------------------

AMI = {"id": "ami-0controller0000001"}
KARPENTER_STAMP = {
    "karpenter.sh/nodepool-hash": "6315405235216658163",
    "karpenter.sh/nodepool-hash-version": "v3",
}
FINALIZER = "hypershift.openshift.io/finalizer"


@dataclass(frozen=True)
class Owned:
    """A field a controller wrote, and how to read it back from the live object."""

    d: Declared
    manager: str
    #: The field in managedFields' fieldsV1 notation, e.g. ("f:spec", "f:replicas").
    fields: tuple[str, ...]
    read: Callable[[dict[str, Any]], Any]
    value: Any


def _controllers_write(deployed: Deployed) -> list[Owned]:
    """Play each controller on the objects it works on: the MCO's boot image controller writes the AMI of every
    MachineSet whose AMI nodefleet leaves to it, Karpenter stamps its hash on every dynamic NodePool, the
    HyperShift operator adds its finalizer to every HostedCluster. The MCO's own fields of the
    ``MachineConfiguration`` singleton were written when the cluster was prepared."""
    owned = []
    for d in deployed.objects:
        kind, api_version = d.manifest["kind"], d.manifest["apiVersion"]
        if kind == "MachineSet" and k.AMI_PATH in d.ignore_changes:
            patch = {"spec": {"template": {"spec": {"providerSpec": {"value": {"ami": AMI}}}}}}
            controller_patch(deployed.clients, d, patch, MCO_CONTROLLER)
            path = ("f:spec", "f:template", "f:spec", "f:providerSpec", "f:value", "f:ami")
            owned.append(
                Owned(
                    d,
                    MCO_CONTROLLER,
                    path,
                    lambda o: o["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"],
                    AMI,
                )
            )
        elif (
            api_version == k.KARPENTER_NODE_POOL.api_version
            and kind == "NodePool"
            and "replicas" not in d.manifest["spec"]
        ):
            controller_patch(deployed.clients, d, {"metadata": {"annotations": KARPENTER_STAMP}}, KARPENTER)
            path = ("f:metadata", "f:annotations", "f:karpenter.sh/nodepool-hash")

            def stamp(o: dict[str, Any]) -> dict[str, Any]:
                return {key: o["metadata"]["annotations"].get(key) for key in KARPENTER_STAMP}

            owned.append(Owned(d, KARPENTER, path, stamp, KARPENTER_STAMP))
        elif kind == "HostedCluster":
            controller_patch(deployed.clients, d, {"metadata": {"finalizers": [FINALIZER]}}, HYPERSHIFT)
            owned.append(
                Owned(
                    d,
                    HYPERSHIFT,
                    ("f:metadata", "f:finalizers"),
                    lambda o: o["metadata"].get("finalizers"),
                    [FINALIZER],
                )
            )
        elif kind == k.MACHINE_CONFIGURATION.kind:
            owned.append(
                Owned(
                    d,
                    MCO,
                    ("f:spec", "f:managementState"),
                    lambda o: o["spec"].get("managementState"),
                    "Managed",
                )
            )
    return owned


def _touch(raw: dict[str, Any]) -> dict[str, Any]:
    """A change to every object a controller writes to: one more replica for each MachineSet whose AMI the MCO
    owns, a new weight for each dynamic Karpenter NodePool, a new resource tag for each HostedCluster. (The
    ``MachineConfiguration`` changes only with the boot image settings, which this leaves alone.)"""
    for cluster in raw["clusters"]:
        for ms in cluster.get("machineSets") or []:
            if ms.get("bootImage") == "managed":
                ms["replicas"] = ms.get("replicas", 1) + 1
        for pool in (cluster.get("autoNode") or {}).get("nodePools") or []:
            if "replicas" not in pool:
                pool["weight"] = (pool.get("weight") or 0) + 7
        if cluster.get("kind") == "hosted":
            cluster.setdefault("resourceTags", {})["team"] = "nodes"
    return raw


def _owns(live: dict[str, Any], manager: str, fields: tuple[str, ...]) -> bool:
    for entry in live["metadata"].get("managedFields") or []:
        if entry["manager"] != manager:
            continue
        node: Any = entry.get("fieldsV1") or {}
        for part in fields:
            node = node.get(part) if isinstance(node, dict) else None
        if node is not None:
            return True
    return False


def _still_theirs(deployed: Deployed, owned: list[Owned], when: str) -> None:
    for o in owned:
        live = deployed.live(o.d)
        assert o.read(live) == o.value, (when, o.d.urn)
        assert _owns(live, o.manager, o.fields), (when, o.d.urn, live["metadata"]["managedFields"])


def test_fields_a_controller_owns_survive_up(deployed: Deployed) -> None:
    """A change to each object a controller wrote to is applied, and keeps what the controller wrote, owned by
    the controller; the next ``up`` is a no-op: the engine neither takes the fields back nor sees a change."""
    owned = _controllers_write(deployed)
    assert owned, "every stack has objects a controller writes to"
    ops = _object_ops(deployed.up(_touch(copy.deepcopy(deployed.raw))).events)
    for o in owned:
        if o.manager != MCO:  # the MachineConfiguration is not touched: its MCO fields only have to stay
            assert ops[o.d.urn] == "update", (o.d.urn, ops[o.d.urn])
    _still_theirs(deployed, owned, "after the update")
    before = deployed.versions()
    assert set(changes(deployed.up().events)) == {"same"}
    assert deployed.versions() == before
    _still_theirs(deployed, owned, "after a second up")
    # The operator lets go of the cluster, as it does once it has cleaned up after a deletion.
    for o in owned:
        if o.manager == HYPERSHIFT:
            controller_patch(deployed.clients, o.d, {"metadata": {"finalizers": None}}, HYPERSHIFT)


# --- destroy -----------------------------------------------------------------------------------------------


def _gone(clients: dict[str, Any], d: Declared) -> bool:
    from kubernetes.dynamic.exceptions import NotFoundError

    try:
        read_live(clients, d)
    except NotFoundError:
        return True
    return False


def test_destroy_removes_what_the_stack_made_and_leaves_what_it_shares(deployed: Deployed) -> None:
    """Every object the stack created is deleted; what it only patched (the ``MachineConfiguration``
    singleton, a shared Namespace) stays, with none of the stack's fields; the Machine API's namespace stays."""
    state = _state_objects(deployed.export())
    run = deployed.pulumi("destroy", "--yes")
    deleted = {urn for urn, op in _object_ops(run.events).items() if op == "delete"}
    assert deleted == set(state) == {d.urn for d in deployed.objects}
    assert _state_objects(deployed.export()) == {}
    for d in deployed.objects:
        if not d.patch:
            assert _gone(deployed.clients, d), d.urn
            continue
        live = deployed.live(d)
        managers = {e["manager"] for e in live["metadata"].get("managedFields") or []}
        assert state[d.urn]["__fieldManager"] not in managers, d.urn
        if d.manifest["kind"] == k.MACHINE_CONFIGURATION.kind:
            assert managers == {MCO}
            assert live["spec"]["managementState"] == "Managed"
        if d.manifest["kind"] == "Namespace":
            assert live["status"]["phase"] == "Active", d.urn
    namespaces = deployed.management.dynamic().resources.get(api_version="v1", kind="Namespace")
    assert namespaces.get(name=k.MACHINE_API_NAMESPACE).status.phase == "Active"


# --- two stacks, one namespace -------------------------------------------------------------------------------


def test_two_stacks_share_a_namespace_and_either_can_be_destroyed(
    project: ScratchProject, test_clusters: TestClusters
) -> None:
    """Two stacks declare the ``clusters`` namespace (a NamespacePatch each): both apply; destroying either
    leaves the namespace and the other's objects untouched; destroying both leaves the namespace."""
    east_raw = stack_fleet("hosted")
    del east_raw["clusters"][0]["autoNode"]  # the hosted cluster's own objects play no part here
    with test_clusters.fresh("engine-shared") as management:
        prepare(management)
        east = _new_stack(project, "east", east_raw, management, None)
        west = _new_stack(project, "west", second_hosted_stack(east_raw), management, None)
        for stack in (east, west):
            assert set(_object_ops(stack.up().events).values()) == {"create"}
        (namespace,) = {d.key for d in east.objects if d.manifest["kind"] == "Namespace"} & {
            d.key for d in west.objects if d.manifest["kind"] == "Namespace"
        }

        def destroy(gone: Deployed, stays: Deployed) -> None:
            kept = stays.versions()
            deployed_objects = [d for d in gone.objects if not d.patch]
            gone.pulumi("destroy", "--yes")
            assert stays.versions() == kept, f"destroying {gone.stack} changed {stays.stack}'s objects"
            for d in deployed_objects:
                assert _gone(gone.clients, d), d.urn
            ns = next(d for d in stays.objects if d.key == namespace)
            assert stays.live(ns)["status"]["phase"] == "Active"

        destroy(west, east)
        west.up()
        destroy(east, west)
        ns = next(d for d in west.objects if d.key == namespace)
        west.pulumi("destroy", "--yes")
        assert west.live(ns)["status"]["phase"] == "Active"
