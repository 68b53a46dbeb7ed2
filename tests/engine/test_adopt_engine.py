"""Adopting in apply mode on the real engine: objects nobody here wrote run on the test API servers (HyperShift's
own ``hypershift create cluster aws --render`` fixture on a management cluster, Karpenter's upstream example
NodePools and an AutoNode node class inside its hosted cluster), ``nodefleet import`` writes the stack, the stack
is switched to apply mode on those servers (the edit docs/operations.md documents), and ``pulumi up`` (the CLI,
the Python language host, the Kubernetes provider built here, the policy pack) adopts them: the engine imports
every object ``output.adopt`` lists, creates, replaces and deletes none, every object keeps its uid, ``preview``
after it shows no change and a second ``up`` changes nothing.

Before that, the failing case on the same servers: one live object changed after the import (a NodePool's instance
type, by another field manager), and the ``up`` refuses with the API server's conflict naming the field, before
anything is written (no object's ``resourceVersion`` moves, the state holds no object). The object set back, the
adoption goes through. A standalone cluster as the installer made it (its worker MachineSets and the
``MachineConfiguration`` singleton) is adopted as it is, the Go zero values the installer writes into each block
device included: the API server compares that list whole, so an import that dropped them would be refused with a
conflict on it. Each sequence runs once
in a module fixture (engine runs are slow); the tests read its results. Results are read from the engine's event log and from the API servers, never from the CLI's text
(except the refusal's message, which is the contract).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml
from pulumi.automation.events import EngineEvent

from engine.events import changes, step_ops
from engine.project import Run, ScratchProject, scratch_project
from nodefleet.stackfile.model import CONFIG_KEY
from tests.conftest import nodefleet
from tests.nodefleet.adopt.roundtrip import DATA, autonode_cesar
from tests.testcluster import TestClusters

PROGRAM = ("pulumi-language-python", "kubernetes")
pytestmark = [pytest.mark.engine(needs=PROGRAM), pytest.mark.apiserver]

STACK = "cesar"
#: The object changed behind the import's back, the field, its value then, and who changed it.
DRIFTED = ("hypershift.openshift.io/v1beta1", "NodePool", "clusters", "cesar-us-east-2a")
DRIFT_PATH = ("spec", "platform", "aws", "instanceType")
DRIFT_VALUE = "m6i.4xlarge"
DRIFT_MANAGER = "kubectl-edit"

#: The engine's own resources of a new stack, created in its state whatever the program declares.
BOOKKEEPING_TYPES = ("pulumi:pulumi:Stack", "pulumi:providers:", "nodefleet:")
#: Resources that patch an object that exists (the shared Namespace, the MachineConfiguration singleton): never
#: created on the API server.
PATCH_SUFFIX = "Patch"

Key = tuple[str, str, str, str]  # apiVersion, kind, namespace, name


def _key(manifest: dict[str, Any]) -> Key:
    meta = manifest["metadata"]
    return (manifest["apiVersion"], manifest["kind"], meta.get("namespace") or "", meta["name"])


def _as_created(manifest: dict[str, Any]) -> dict[str, Any]:
    """A manifest as a user (or HyperShift's CLI) creates it: nothing the API server or a controller writes."""
    body = copy.deepcopy(manifest)
    body.pop("status", None)
    for key in ("uid", "resourceVersion", "generation", "creationTimestamp", "managedFields", "finalizers"):
        body["metadata"].pop(key, None)
    return body


def _management_objects() -> list[dict[str, Any]]:
    """HyperShift's fixture for ``cesar`` made an AutoNode cluster; its Secrets
    are left out (nodefleet references them by name)."""
    docs = autonode_cesar()
    return [d for d in docs if d["kind"] != "Secret"]


def _hosted_objects() -> list[dict[str, Any]]:
    inside = [d for d in yaml.safe_load_all((DATA / "karpenter-upstream-nodepools.yaml").read_text()) if d]
    inside += [
        d
        for d in yaml.safe_load_all((DATA / "autonode-classes.yaml").read_text())
        if d and d["metadata"]["name"] == "batch"
    ]
    return inside


@dataclass
class Adopted:
    """The sequence's results: the stack as ``import`` wrote it, each engine run, the live objects before and
    after each step."""

    written: dict[str, Any]
    refused: Run
    first: Run
    preview: Run
    second: Run
    #: uid and resourceVersion of every object, by key: as created, after the refused up, before the first up
    #: (the drifted object set back), after the first up, after the second up.
    created: dict[Key, tuple[str, str]] = field(default_factory=dict)
    after_refusal: dict[Key, tuple[str, str]] = field(default_factory=dict)
    before_up: dict[Key, tuple[str, str]] = field(default_factory=dict)
    after_up: dict[Key, tuple[str, str]] = field(default_factory=dict)
    after_second: dict[Key, tuple[str, str]] = field(default_factory=dict)
    state_after_refusal: list[str] = field(default_factory=list)
    state: dict[str, dict[str, Any]] = field(default_factory=dict)


def _state(project: ScratchProject) -> dict[str, dict[str, Any]]:
    """The Kubernetes objects of the stack's state (``pulumi stack export``), by URN."""
    export = project.pulumi("stack", "export", stack=STACK)
    assert export.returncode == 0, export.stderr
    resources = json.loads(export.stdout).get("deployment", {}).get("resources") or []
    return {
        r["urn"]: r
        for r in resources
        if r["type"].startswith("kubernetes:") and not r["type"].startswith("pulumi:providers:")
    }


def _switch_to_apply(stack_file: Path, management: Path, hosted: Path) -> dict[str, Any]:
    """The documented edit: ``output.mode: apply`` with the management cluster's kubeconfig, and the hosted
    cluster's kubeconfig for the objects inside it. ``output.adopt`` stays as ``import`` wrote it."""
    document = yaml.safe_load(stack_file.read_text())
    written = copy.deepcopy(document["config"][CONFIG_KEY])
    fleet = document["config"][CONFIG_KEY]
    fleet["output"].update({"mode": "apply", "kubeconfig": str(management)})
    fleet["clusters"][0]["hostedKubeconfig"] = str(hosted)
    stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
    return written


@pytest.fixture(scope="module")
def adopted(tmp_path_factory: pytest.TempPathFactory, test_clusters: TestClusters) -> Iterator[Adopted]:
    project = scratch_project(tmp_path_factory.mktemp("adopt-engine"), [])
    objects = {"management": _management_objects(), "hosted": _hosted_objects()}
    with (
        test_clusters.fresh("engine-adopt-management") as management,
        test_clusters.fresh("engine-adopt-hosted", karpenter_set="hypershift/1.13") as hosted,
    ):
        clients = {"management": management.dynamic(), "hosted": hosted.dynamic()}

        def api(side: str, key: Key) -> Any:
            return clients[side].resources.get(api_version=key[0], kind=key[1])

        def live(side: str, key: Key) -> dict[str, Any]:
            found: dict[str, Any] = (
                clients[side].get(api(side, key), name=key[3], namespace=key[2] or None).to_dict()
            )
            return found

        def ids() -> dict[Key, tuple[str, str]]:
            out = {}
            for side, manifests in objects.items():
                for m in manifests:
                    meta = live(side, _key(m))["metadata"]
                    out[_key(m)] = (meta["uid"], meta["resourceVersion"])
            return out

        def set_instance_type(value: str) -> None:
            body: dict[str, Any] = {"spec": {"platform": {"aws": {"instanceType": value}}}}
            clients["management"].patch(
                api("management", DRIFTED),
                name=DRIFTED[3],
                namespace=DRIFTED[2],
                body=body,
                content_type="application/merge-patch+json",
                field_manager=DRIFT_MANAGER,
            )

        for side, manifests in objects.items():
            for m in manifests:
                clients[side].create(
                    api(side, _key(m)), body=_as_created(m), namespace=m["metadata"].get("namespace")
                )
        imported = nodefleet(
            "import",
            "--stack",
            STACK,
            "--stacks-dir",
            str(project.root / "stacks"),
            "--kubeconfig",
            str(management.kubeconfig),
            "--cluster",
            STACK,
            "--hosted-kubeconfig",
            str(hosted.kubeconfig),
        )
        assert imported.returncode == 0, imported.stdout + imported.stderr
        stack_file = project.root / "stacks" / f"Pulumi.{STACK}.yaml"
        written = _switch_to_apply(stack_file, management.kubeconfig, hosted.kubeconfig)
        project.init_stack(STACK)

        original = live("management", DRIFTED)
        for part in DRIFT_PATH:
            original = original[part]
        created = ids()
        set_instance_type(DRIFT_VALUE)
        drifted = ids()
        refused = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=STACK)
        after_refusal = ids()
        state_after_refusal = sorted(_state(project))
        set_instance_type(original)

        result = Adopted(written, refused, *(Run([], 0, "", "", [], 0.0),) * 3)
        result.created, result.state_after_refusal = created, state_after_refusal
        # Against the drifted objects: the refusal must leave every object as it found it.
        result.after_refusal = {k: v for k, v in after_refusal.items() if drifted[k] != v}
        result.before_up = ids()
        result.first = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=STACK)
        result.after_up = ids()
        result.state = _state(project)
        result.preview = project.pulumi("preview", "--policy-pack", "policies", stack=STACK)
        result.second = project.pulumi("up", "--yes", "--policy-pack", "policies", stack=STACK)
        result.after_second = ids()
        yield result


def _output(run: Run) -> str:
    return f"{' '.join(run.args)}\n{run.stdout}\n{run.stderr}"


def _ok(run: Run) -> None:
    assert run.returncode == 0, _output(run)
    assert "Traceback" not in run.stdout + run.stderr, _output(run)


def _kubernetes_ops(events: list[EngineEvent]) -> dict[str, str]:
    """The engine's operation for each resource that is not its own bookkeeping (the stack, providers, nodefleet's
    components), by URN."""
    return {
        urn: op
        for urn, op in step_ops(events).items()
        if not urn.split("::")[2].split("$")[-1].startswith(BOOKKEEPING_TYPES)
    }


def test_import_writes_what_to_adopt(adopted: Adopted) -> None:
    """Every live object the stack declares, by the provider it goes through: the management cluster's under the
    cluster's name, the hosted cluster's under ``<name>-hosted``; the shared Namespace, which apply mode patches
    and never creates, is not listed."""
    assert adopted.written["output"]["adopt"] == {
        "cesar": [
            "HostedCluster.hypershift.openshift.io clusters/cesar",
            "NodePool.hypershift.openshift.io clusters/cesar-us-east-2a",
        ],
        "cesar-hosted": [
            "OpenshiftEC2NodeClass.karpenter.hypershift.openshift.io batch",
            "NodePool.karpenter.sh default",
            "NodePool.karpenter.sh general-purpose",
            "NodePool.karpenter.sh spot",
        ],
    }


def test_a_live_object_that_differs_is_refused_and_nothing_is_written(adopted: Adopted) -> None:
    """The provider applies the stack over the adopted object without forcing: a field another manager set to
    another value is the API server's conflict, which stops ``up`` in its preview, naming the object, the field
    and the manager."""
    run = adopted.refused
    assert run.returncode != 0, _output(run)
    text = run.stdout + run.stderr
    assert "Traceback" not in text
    assert f'"{DRIFTED[2]}/{DRIFTED[3]}"' in text, text
    assert f'conflict with "{DRIFT_MANAGER}"' in text and ".spec.platform.aws.instanceType" in text, text
    assert adopted.after_refusal == {}, "the refused up changed objects on the API server"
    assert adopted.state_after_refusal == [], "the refused up recorded objects in the state"


def test_up_adopts_every_object_and_creates_replaces_deletes_none(adopted: Adopted) -> None:
    _ok(adopted.first)
    ops = _kubernetes_ops(adopted.first.events)
    adopt = {urn: op for urn, op in ops.items() if not urn.split("::")[2].endswith(PATCH_SUFFIX)}
    assert len(adopt) == 6, ops
    # The engine imports each object, then applies the stack's fields over it (the provider's Read returns no
    # inputs, so the first diff is against nothing): an import step and an update step, never a create.
    assert {op for op in adopt.values()} <= {"update", "import"}, ops
    import_steps = [
        e.resource_pre_event.metadata.urn
        for e in adopted.first.events
        if e.resource_pre_event is not None
        and str(getattr(e.resource_pre_event.metadata.op, "value", "")) == "import"
    ]
    assert sorted(import_steps) == sorted(adopt), ops
    summary = changes(adopted.first.events)
    assert summary.get("import") == 6, summary
    assert not {"replace", "delete", "create-replacement", "delete-replaced"} & set(summary), summary
    # What the engine counts as created is its own bookkeeping and the Namespace patch, which creates nothing.
    created = {urn for urn, op in step_ops(adopted.first.events).items() if op == "create"}
    assert all(
        urn.split("::")[2].split("$")[-1].startswith(BOOKKEEPING_TYPES) or urn.endswith("-namespace")
        for urn in created
    ), created


def test_every_object_keeps_its_uid_and_the_state_holds_the_live_object(adopted: Adopted) -> None:
    uids = {k: uid for k, (uid, _) in adopted.created.items()}
    assert {k: uid for k, (uid, _) in adopted.after_up.items()} == uids
    assert {k: uid for k, (uid, _) in adopted.after_second.items()} == uids
    in_state = {r["outputs"]["metadata"]["uid"] for r in adopted.state.values() if r.get("id")}
    assert set(uids.values()) <= in_state | {
        uid for k, (uid, _) in adopted.created.items() if k[1] == "Namespace"
    }
    assert all(r.get("id") for r in adopted.state.values())


def test_preview_after_shows_no_change_and_a_second_up_is_a_no_op(adopted: Adopted) -> None:
    _ok(adopted.preview)
    assert set(changes(adopted.preview.events)) == {"same"}, changes(adopted.preview.events)
    _ok(adopted.second)
    assert set(changes(adopted.second.events)) == {"same"}, changes(adopted.second.events)
    assert adopted.after_second == adopted.after_up


# --- a standalone cluster ----------------------------------------------------------------------------------


@dataclass
class Standalone:
    written: dict[str, Any]
    first: Run
    preview: Run
    second: Run
    created: dict[Key, tuple[str, str]]
    after_up: dict[Key, tuple[str, str]]
    after_second: dict[Key, tuple[str, str]]


@pytest.fixture(scope="module")
def standalone(tmp_path_factory: pytest.TempPathFactory, test_clusters: TestClusters) -> Iterator[Standalone]:
    """The installer's worker MachineSets of a 4.16 cluster and its ``MachineConfiguration`` singleton, as ``oc
    get -o yaml`` shows them (tests/nodefleet/adopt/data/standalone-4.16.yaml, without its custom pool), imported
    with the defaults nodefleet adds accepted, then ``up``, ``preview`` and a second ``up``."""
    project = scratch_project(tmp_path_factory.mktemp("adopt-engine-standalone"), [])
    items = yaml.safe_load((DATA / "standalone-4.16.yaml").read_text())["items"]
    objects = [
        i
        for i in items
        if i["kind"] in ("MachineSet", "MachineConfiguration") and "infra" not in i["metadata"]["name"]
    ]
    with test_clusters.fresh("engine-adopt-standalone") as server:
        client = server.dynamic()
        namespaces = client.resources.get(api_version="v1", kind="Namespace")
        namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "openshift-machine-api"}}
        client.create(namespaces, body=namespace)

        def api(key: Key) -> Any:
            return client.resources.get(api_version=key[0], kind=key[1])

        def ids() -> dict[Key, tuple[str, str]]:
            out = {}
            for m in objects:
                key = _key(m)
                meta = client.get(api(key), name=key[3], namespace=key[2] or None).to_dict()["metadata"]
                out[key] = (meta["uid"], meta["resourceVersion"])
            return out

        for m in objects:
            client.create(api(_key(m)), body=_as_created(m), namespace=m["metadata"].get("namespace"))
        imported = nodefleet(
            "import",
            "--stack",
            "shop",
            "--stacks-dir",
            str(project.root / "stacks"),
            "--kubeconfig",
            str(server.kubeconfig),
            "--catalog",
            "catalogs/rhcos-4.16.json",
            "--release",
            "4.16.3",
            "--adopt-defaults",
        )
        assert imported.returncode == 0, imported.stdout + imported.stderr
        stack_file = project.root / "stacks" / "Pulumi.shop.yaml"
        document = yaml.safe_load(stack_file.read_text())
        written = copy.deepcopy(document["config"][CONFIG_KEY])
        document["config"][CONFIG_KEY]["output"].update(
            {"mode": "apply", "kubeconfig": str(server.kubeconfig)}
        )
        stack_file.write_text(yaml.safe_dump(document, sort_keys=False))
        project.init_stack("shop")
        created = ids()
        first = project.pulumi("up", "--yes", "--policy-pack", "policies", stack="shop")
        after_up = ids()
        preview = project.pulumi("preview", "--policy-pack", "policies", stack="shop")
        second = project.pulumi("up", "--yes", "--policy-pack", "policies", stack="shop")
        yield Standalone(written, first, preview, second, created, after_up, ids())


def test_the_installers_machine_sets_are_adopted_as_they_are(standalone: Standalone) -> None:
    """The installer writes Go zero values into each block device (``iops: 0``, ``kmsKey: {arn: ""}``); the stack
    keeps them, so the unforced apply over the live list changes nothing: the API server compares that list whole
    (it sits in the providerSpec's raw value) and refuses an apply that would drop them. The MachineSets are
    imported (the ``MachineConfiguration`` singleton is patched, as apply mode always does), nothing else is
    created, replaced or deleted, every object keeps its uid; afterwards nothing changes."""
    assert standalone.written["output"]["adopt"] == {
        "shop": [
            "MachineSet.machine.openshift.io openshift-machine-api/shop-4kq8z-worker-us-east-1a",
            "MachineSet.machine.openshift.io openshift-machine-api/shop-4kq8z-worker-us-east-1b",
        ]
    }
    _ok(standalone.first)
    ops = _kubernetes_ops(standalone.first.events)
    patches = {urn for urn in ops if urn.split("::")[2].endswith(PATCH_SUFFIX)}
    assert len(patches) == 1 and all(ops[urn] == "create" for urn in patches), ops
    assert {op for urn, op in ops.items() if urn not in patches} == {"update"}, ops
    summary = changes(standalone.first.events)
    assert summary.get("import") == 2, summary
    assert not {"replace", "delete", "create-replacement", "delete-replaced"} & set(summary), summary
    uids = {k: uid for k, (uid, _) in standalone.created.items()}
    assert {k: uid for k, (uid, _) in standalone.after_up.items()} == uids
    for run in (standalone.preview, standalone.second):
        _ok(run)
        assert set(step_ops(run.events).values()) == {"same"}, step_ops(run.events)
    assert standalone.after_second == standalone.after_up
