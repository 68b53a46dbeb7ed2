"""Apply mode on a real API server: every shipped stack switched to ``output.mode: apply`` and applied, through
the Kubernetes Python client, as the Kubernetes provider applies it (tests/applymode.py), to kube-apiserver and
etcd with nodefleet's shipped CRDs (tests/testcluster.py).

Each stack gets clusters of its own: its management (or standalone) cluster, and for a hosted cluster the
hosted cluster, which serves HyperShift's Karpenter CRDs. The cluster is given what OpenShift gives every
cluster before nodefleet runs: the ``openshift-machine-api`` namespace and the MCO's ``MachineConfiguration``
singleton, written by the MCO's own field manager.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from mockruntime.run import MockRun, run_program, stack_fleet
from nodefleet import kinds as k
from tests.applymode import (
    HOSTED_KARPENTER,
    HYPERSHIFT,
    KARPENTER,
    MCO,
    MCO_CONTROLLER,
    Declared,
    Stack,
    apply_config,
    clients,
    comparable,
    controller_patch,
    declared,
    differences_from_rendered,
    has_hosted,
    prepare,
    rendered_keys,
    second_hosted_stack,
    static_spot_pool,
)
from tests.testcluster import ApiServer, TestClusters

pytestmark = pytest.mark.apiserver

EXAMPLES = ("dev", "hosted", "karpenter", "rhel10")


@dataclass
class Applied:
    """A stack after its first ``up``."""

    stack: str
    state: Stack
    objects: list[Declared]
    run: MockRun
    management: ApiServer
    hosted: ApiServer | None
    first: list[Any]

    def up(self, raw: dict[str, Any] | None = None) -> list[Any]:
        run = run_program(self.stack, apply_config(self.stack, self.management, self.hosted, raw))
        self.objects = declared(run)
        return self.state.up(self.objects)

    def live(self, d: Declared) -> dict[str, Any]:
        return self.state._read(d)


@contextmanager
def applied_stack(
    test_clusters: TestClusters, stack: str, tag: str, raw: dict[str, Any] | None = None
) -> Iterator[Applied]:
    """``stack`` applied once to clusters of its own, stopped afterwards."""
    with ExitStack() as stop:
        management = stop.enter_context(test_clusters.fresh(f"{stack}-{tag}"))
        hosted = (
            stop.enter_context(test_clusters.fresh(f"{stack}-{tag}-hosted", HOSTED_KARPENTER))
            if has_hosted(stack, raw)
            else None
        )
        for server in (management, hosted):
            if server is not None:
                prepare(server)
        run = run_program(stack, apply_config(stack, management, hosted, raw))
        objects = declared(run)
        state = Stack(stack, clients(management, hosted))
        first = state.up(objects)
        yield Applied(stack, state, objects, run, management, hosted, first)


@pytest.fixture(scope="module", params=EXAMPLES)
def applied(request: pytest.FixtureRequest, test_clusters: TestClusters) -> Iterator[Applied]:
    """Each shipped stack applied once, for the tests that only read."""
    with applied_stack(test_clusters, request.param, "read") as result:
        yield result


def test_up_creates_exactly_what_render_lists(applied: Applied) -> None:
    assert {d.key for d in applied.objects} == rendered_keys(applied.stack)
    assert [s.op for s in applied.first] == ["create"] * len(applied.objects)
    for d in applied.objects:
        assert applied.live(d)["metadata"]["name"] == d.manifest["metadata"]["name"]


def test_live_objects_are_the_rendered_ones_after_defaulting(applied: Applied) -> None:
    """What the API server stores is the rendered object plus the CRD's defaults, exactly as crd-schema's
    defaulting predicts; a patch's fields are all in the live object."""
    for d in applied.objects:
        assert differences_from_rendered(d, applied.live(d)) == [], d.urn


def test_second_up_is_a_no_op(applied: Applied) -> None:
    before = {d.urn: applied.live(d)["metadata"]["resourceVersion"] for d in applied.objects}
    steps = applied.up()
    assert {s.op for s in steps} == {"same"}, [(s.op, s.urn) for s in steps if s.op != "same"]
    after = {d.urn: applied.live(d)["metadata"]["resourceVersion"] for d in applied.objects}
    assert after == before


def test_a_server_side_reapply_changes_no_resource_version(applied: Applied) -> None:
    """The API server itself sees nothing to do when a patch is applied again by its manager, with one
    exception it makes for a NamespacePatch, which declares only the namespace's name: the apply that created
    the Namespace records no field manager at all (the name is identity, not a field), so the next apply
    records the fields the API server set itself (the ``kubernetes.io/metadata.name`` label, the
    ``kubernetes`` finalizer) under ``before-first-apply`` and writes the object once; every later apply is
    a no-op."""
    for d in applied.objects:
        if not d.patch:
            continue
        res = applied.state.state[d.urn]
        before = applied.live(d)
        again = applied.state._apply(d, d.manifest, res.manager)
        managers = {e["manager"] for e in again["metadata"].get("managedFields") or []}
        if d.manifest["kind"] == "Namespace":
            assert res.manager not in managers, d.urn
            assert comparable(again) == comparable(before), d.urn
            before = again
            again = applied.state._apply(d, d.manifest, res.manager)
        else:
            assert res.manager in managers, d.urn
        assert again["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"], d.urn


# --- changes, controllers, destroy ------------------------------------------------------------------------


def _by_kind(applied: Applied, kind: str) -> list[Declared]:
    return [d for d in applied.objects if d.manifest["kind"] == kind]


def _controller_patch(
    applied: Applied, d: Declared, patch: dict[str, Any], manager: str, subresource: str = ""
) -> dict[str, Any]:
    return controller_patch(applied.state.clients, d, patch, manager, subresource)


def test_a_change_updates_only_the_changed_object(test_clusters: TestClusters) -> None:
    with applied_stack(test_clusters, "dev", "change") as applied:
        raw = stack_fleet("dev")
        raw["clusters"][0]["machineSets"][1]["replicas"] = 5
        steps = applied.up(raw)
        changed = [s.urn for s in steps if s.op != "same"]
        (machine_set,) = [d for d in applied.objects if d.urn in changed]
        assert [s.op for s in steps if s.op != "same"] == ["update"]
        assert applied.live(machine_set)["spec"]["replicas"] == 5
        # ... and the next `up` is a no-op again.
        assert {s.op for s in applied.up(raw)} == {"same"}


def test_a_pool_switching_to_static_is_replaced(test_clusters: TestClusters) -> None:
    """The NodePool API refuses to switch a pool between dynamic and static in place (CEL
    ``has(self.replicas) == has(oldSelf.replicas)``), so the program replaces it (``replace_on_changes`` on its
    provisioning annotation): the provider deletes the pool first, since it keeps its name, and creates it
    again, as the engine does (tests/engine/test_apply_engine.py). Nothing else changes."""
    raw = stack_fleet("hosted")
    raw["clusters"][0]["autoNode"]["karpenter"]["featureGates"] = ["StaticCapacity"]
    with applied_stack(test_clusters, "hosted", "switch", raw) as hosted:
        spot = next(
            d
            for d in hosted.objects
            if d.manifest["apiVersion"] == k.KARPENTER_NODE_POOL.api_version
            and d.manifest["metadata"]["name"] == "spot"
        )
        was = hosted.live(spot)["metadata"]["uid"]
        static = static_spot_pool(raw)
        steps = {s.urn: s.op for s in hosted.up(static)}
        assert {urn: op for urn, op in steps.items() if op != "same"} == {spot.urn: "replace"}
        live = hosted.live(spot)
        assert live["spec"]["replicas"] == 2 and "weight" not in live["spec"]
        assert live["metadata"]["uid"] != was
        assert {s.op for s in hosted.up(static)} == {"same"}


def test_controller_owned_fields_are_never_taken_back(test_clusters: TestClusters) -> None:
    """The MCO's boot image controller rewrites the AMI of a managed MachineSet, Karpenter stamps its hash on
    a NodePool, the HyperShift operator adds its finalizer to a HostedCluster: `up` with a change to each of
    those objects keeps what the controller wrote, and the controller still owns it."""
    with applied_stack(test_clusters, "dev", "owned") as dev:
        # machineSets[0] of the dev stack: bootImage managed, so its AMI is left to the MCO (ignore_changes).
        (managed,) = [d for d in _by_kind(dev, "MachineSet") if d.key[3] == "dev-7xk2p-worker-us-east-1a"]
        assert managed.ignore_changes == (k.AMI_PATH,)
        ami = {"id": "ami-0controller0000001"}
        _controller_patch(
            dev,
            managed,
            {"spec": {"template": {"spec": {"providerSpec": {"value": {"ami": ami}}}}}},
            MCO_CONTROLLER,
        )
        raw = stack_fleet("dev")
        raw["clusters"][0]["machineSets"][0]["replicas"] = 4
        steps = {s.urn: s.op for s in dev.up(raw)}
        assert steps[managed.urn] == "update"
        live = dev.live(managed)
        assert live["spec"]["replicas"] == 4
        assert live["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] == ami
        assert {s.op for s in dev.up(raw)} == {"same"}
        assert dev.live(managed)["spec"]["template"]["spec"]["providerSpec"]["value"]["ami"] == ami
    with applied_stack(test_clusters, "hosted", "owned") as hosted:
        # By name: the order in which the program registers its two pools is not fixed.
        pool = next(
            d
            for d in hosted.objects
            if d.manifest["apiVersion"] == k.KARPENTER_NODE_POOL.api_version
            and d.manifest["metadata"]["name"] == "on-demand"
        )
        stamp = {
            "karpenter.sh/nodepool-hash": "6315405235216658163",
            "karpenter.sh/nodepool-hash-version": "v3",
        }
        _controller_patch(hosted, pool, {"metadata": {"annotations": stamp}}, KARPENTER)
        (hc,) = _by_kind(hosted, "HostedCluster")
        _controller_patch(
            hosted, hc, {"metadata": {"finalizers": ["hypershift.openshift.io/finalizer"]}}, HYPERSHIFT
        )
        raw = stack_fleet("hosted")
        cluster = raw["clusters"][0]
        cluster["autoNode"]["nodePools"][0]["weight"] = 7
        cluster["resourceTags"]["team"] = "nodes"
        steps = {s.urn: s.op for s in hosted.up(raw)}
        assert (steps[pool.urn], steps[hc.urn]) == ("update", "update"), steps
        live_pool = hosted.live(pool)
        assert live_pool["spec"]["weight"] == 7
        assert {key: live_pool["metadata"]["annotations"].get(key) for key in stamp} == stamp
        assert hosted.live(hc)["metadata"]["finalizers"] == ["hypershift.openshift.io/finalizer"]
        # Destroy: the HostedCluster waits for the operator to finish with it, as on a cluster.
        _controller_patch(hosted, hc, {"metadata": {"finalizers": None}}, HYPERSHIFT)
        hosted.state.destroy()


def test_destroy_relinquishes_the_machine_configuration_and_deletes_what_the_stack_made(
    test_clusters: TestClusters,
) -> None:
    with applied_stack(test_clusters, "dev", "destroy") as dev:
        (patch,) = [d for d in dev.objects if d.patch]
        made = [d for d in dev.objects if not d.patch]
        dev.state.destroy()
        client = dev.management.dynamic()
        for d in made:
            api = client.resources.get(api_version=d.manifest["apiVersion"], kind=d.manifest["kind"])
            names = [
                o.metadata.name for o in api.get(namespace=d.manifest["metadata"].get("namespace")).items
            ]
            assert d.manifest["metadata"]["name"] not in names, d.urn
        live = dev.state._read(patch)
        # The singleton stays with the MCO's fields; nodefleet's manager owns nothing on it any more.
        assert live["spec"]["managementState"] == "Managed"
        assert "managedBootImages" not in live["spec"] and "bootImageSkewEnforcement" not in live["spec"]
        assert {e["manager"] for e in live["metadata"]["managedFields"]} == {MCO}
        namespaces = client.resources.get(api_version="v1", kind="Namespace")
        assert namespaces.get(name=k.MACHINE_API_NAMESPACE).metadata.name == k.MACHINE_API_NAMESPACE


def test_two_stacks_share_a_namespace_and_either_can_be_destroyed(test_clusters: TestClusters) -> None:
    """Two stacks declare the `clusters` namespace (a NamespacePatch each): both apply, and destroying either
    leaves the namespace and the other stack's objects; destroying both leaves the namespace too."""
    with applied_stack(test_clusters, "hosted", "shared") as east:
        west_raw = second_hosted_stack(stack_fleet("hosted"))
        run = run_program("hosted", apply_config("hosted", east.management, None, west_raw))
        west_objects = declared(run)
        west = Stack("west", clients(east.management))
        assert {s.op for s in west.up(west_objects)} == {"create"}
        namespace = next(d for d in west_objects if d.manifest["kind"] == "Namespace")
        east_namespace = next(d for d in east.objects if d.manifest["kind"] == "Namespace")
        assert namespace.patch and east_namespace.patch and namespace.key == east_namespace.key
        # Neither stack's field manager owns a field of the Namespace (a NamespacePatch declares only its
        # name, which is identity): no record on the namespace says that two stacks declare it.
        live_ns = east.live(namespace)
        managers = {e["manager"] for e in live_ns["metadata"].get("managedFields") or []}
        assert not managers & {
            east.state.state[east_namespace.urn].manager,
            west.state[namespace.urn].manager,
        }
        east_management = [d for d in east.objects if d.kubeconfig == str(east.management.kubeconfig)]
        # Destroy east: west's objects and the namespace stay.
        east.state.destroy()
        for d in west_objects:
            assert west._read(d)["metadata"]["name"] == d.manifest["metadata"]["name"]
        from kubernetes.dynamic.exceptions import NotFoundError

        for d in east_management:
            if d.patch:
                continue
            with pytest.raises(NotFoundError):
                east.state._read(d)
        # Destroy west: the namespace, which neither stack owns, stays.
        west.destroy()
        assert east.live(namespace)["status"]["phase"] == "Active"


# --- upgrade in apply mode ----------------------------------------------------------------------------------


def _history(*entries: tuple[str, str]) -> list[dict[str, Any]]:
    out = []
    for version, state in entries:
        image = f"quay.io/openshift-release-dev/ocp-release:{version}-multi"
        out.append(
            {
                "version": version,
                "image": image,
                "state": state,
                "verified": True,
                "startedTime": "2026-11-26T10:00:00Z",
                "completionTime": "2026-11-26T10:40:00Z" if state == "Completed" else None,
            }
        )
    return out


def _operator_reports(
    applied: Applied,
    hc: Declared,
    desired: str,
    *history: tuple[str, str],
    conditions: tuple[dict[str, str], ...] = (),
) -> None:
    """Play the HyperShift operator: the HostedCluster's version status and conditions (``conditions``
    added to the usual two), written through the status subresource by the operator's field manager."""
    progressing = history[0][1] != "Completed"
    now = "2026-11-26T10:40:00Z"
    status = {
        "version": {
            "desired": {
                "version": desired,
                "image": f"quay.io/openshift-release-dev/ocp-release:{desired}-multi",
            },
            "history": _history(*history),
            "observedGeneration": 1,
            "availableUpdates": [],
        },
        "conditions": [
            {
                "type": "Available",
                "status": "True",
                "reason": "AsExpected",
                "message": "",
                "lastTransitionTime": now,
            },
            {
                "type": "ClusterVersionProgressing",
                "status": "True" if progressing else "False",
                "reason": "ClusterOperatorsUpdating" if progressing else "FromClusterVersion",
                "message": f"Working towards {desired}" if progressing else f"Cluster version is {desired}",
                "lastTransitionTime": now,
            },
            *({**c, "lastTransitionTime": now} for c in conditions),
        ],
    }
    # As controller-runtime's Status().Update does it: the whole object, PUT to the status subresource (a
    # Partial entry's completionTime is null, which a merge patch would read as "remove").
    client, api = applied.state._api(hc)
    live = applied.live(hc)
    live["status"] = status
    client.replace(api.subresources["status"], body=live, field_manager=HYPERSHIFT)


def _release_images(applied: Applied) -> dict[str, str]:
    return {
        f"{d.manifest['kind']} {d.manifest['metadata']['name']}": applied.live(d)["spec"]["release"]["image"]
        for d in applied.objects
        if d.manifest["apiVersion"] == k.HOSTED_CLUSTER.api_version
    }


def test_upgrade_waits_for_the_control_plane_the_api_server_reports(
    test_clusters: TestClusters, tmp_path: Path
) -> None:
    """`upgrade` in apply mode: step 1 moves the control plane only; step 2 waits while the HyperShift
    operator reports the new release Partial, proceeds once it reports it Completed, and then stops."""
    from mockruntime.run import read_stack_config
    from tests.conftest import PROJECT, nodefleet

    with applied_stack(test_clusters, "hosted", "upgrade") as hosted:
        (hc,) = _by_kind(hosted, "HostedCluster")
        _operator_reports(hosted, hc, "4.22.3", ("4.22.3", "Completed"))
        text = (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text(encoding="utf-8")
        assert text.count("      mode: render\n") == 1 and text.count("        name: prod-east\n") == 1
        text = text.replace(
            "      mode: render\n", f"      mode: apply\n      kubeconfig: {hosted.management.kubeconfig}\n"
        )
        text = text.replace(
            "        name: prod-east\n",
            f"        name: prod-east\n        hostedKubeconfig: {hosted.hosted.kubeconfig}\n",
        )
        path = tmp_path / "Pulumi.hosted.yaml"
        path.write_text(text, encoding="utf-8")

        def upgrade() -> Any:
            return nodefleet("upgrade", "--config-file", str(path), "--release", "4.22.4")

        def up() -> None:
            hosted.up(read_stack_config(path)["nodefleet:fleet"])

        step1 = upgrade()
        assert step1.returncode == 0, step1.stderr
        up()
        images = _release_images(hosted)
        assert images["HostedCluster prod-east"].endswith(":4.22.4-multi")
        assert images["NodePool prod-east-infra"].endswith(":4.22.3-multi")  # held

        # The operator has started but not finished: the nodes stay held, the file is left alone.
        _operator_reports(hosted, hc, "4.22.4", ("4.22.4", "Partial"), ("4.22.3", "Completed"))
        held = path.read_text(encoding="utf-8")
        waiting = upgrade()
        assert waiting.returncode == 1, waiting.stdout + waiting.stderr
        assert "has not completed 4.22.4 yet" in waiting.stderr
        assert "desired 4.22.4; history: 4.22.4 Partial, 4.22.3 Completed" in waiting.stderr
        assert path.read_text(encoding="utf-8") == held

        # Completed, but degraded: the nodes must not follow a control plane the operator reports failing.
        degraded = {
            "type": "Degraded",
            "status": "True",
            "reason": "EtcdQuorumLost",
            "message": "etcd-1 down",
        }
        _operator_reports(
            hosted, hc, "4.22.4", ("4.22.4", "Completed"), ("4.22.3", "Completed"), conditions=(degraded,)
        )
        failing = upgrade()
        assert failing.returncode == 1, failing.stdout + failing.stderr
        assert "the operator reports Degraded=True (EtcdQuorumLost: etcd-1 down)" in failing.stderr
        assert "its nodes stay held" in failing.stderr
        assert path.read_text(encoding="utf-8") == held

        # Completed: step 2 releases the nodes, which follow the control plane.
        _operator_reports(hosted, hc, "4.22.4", ("4.22.4", "Completed"), ("4.22.3", "Completed"))
        step2 = upgrade()
        assert step2.returncode == 0, step2.stderr
        assert "reports 4.22.4 Completed" in step2.stdout and "step 2 of 2" in step2.stdout
        up()
        assert _release_images(hosted)["NodePool prod-east-infra"].endswith(":4.22.4-multi")

        done = upgrade()
        assert done.returncode == 0 and "nothing to do" in done.stdout
