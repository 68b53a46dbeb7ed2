"""`fleet upgrade` of a standalone cluster nodefleet applies: the release goes into its stack file only once the
cluster runs it.

A standalone cluster is upgraded by its own cluster version operator (`oc adm upgrade`), not by nodefleet; the
nodes step then records the release in the stack file (its MachineSets' boot images follow). In apply mode the
gate before that step reads the cluster's ``ClusterVersion`` through the stack's ``output.kubeconfig``, here a
test API server (tests/testcluster.py) serving ``config.openshift.io/v1`` ClusterVersions, whose status the test
writes as the cluster version operator does. ``--confirmed`` does not pass a cluster that reports another release.
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import PROJECT, nodefleet
from tests.fleet.upgrade_repo import NEW, OLD
from tests.testcluster import ApiServer, TestClusters

pytestmark = pytest.mark.apiserver

#: The field manager the test writes status with when it plays the cluster version operator.
CVO = "cluster-version-operator"

#: The ClusterVersion API as the test server serves it: group, version, plural, scope and the status
#: subresource of config.openshift.io/v1 ClusterVersion; the schema keeps what the operator writes.
CLUSTER_VERSION_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "clusterversions.config.openshift.io"},
    "spec": {
        "group": "config.openshift.io",
        "names": {"kind": "ClusterVersion", "listKind": "ClusterVersionList", "plural": "clusterversions",
                  "singular": "clusterversion"},
        "scope": "Cluster",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
            }
        ],
    },
}  # fmt: skip


@pytest.fixture
def plant(test_clusters: TestClusters) -> Iterator[ApiServer]:
    """The standalone cluster: an API server with its ClusterVersion, at OLD."""
    from kubernetes import client

    with test_clusters.fresh("fleet-upgrade-plant") as server:
        api = server.api_client()
        client.ApiextensionsV1Api(api).create_custom_resource_definition(CLUSTER_VERSION_CRD)
        objects = client.CustomObjectsApi(api)
        for _ in range(100):  # the CRD is served a moment after it is created
            try:
                objects.list_cluster_custom_object("config.openshift.io", "v1", "clusterversions")
                break
            except client.exceptions.ApiException:
                import time

                time.sleep(0.1)
        objects.create_cluster_custom_object(
            "config.openshift.io", "v1", "clusterversions",
            {"apiVersion": "config.openshift.io/v1", "kind": "ClusterVersion", "metadata": {"name": "version"},
             "spec": {"clusterID": "6a1b0f4e-0d6f-4a55-9d59-3b1f7c1d2e11", "channel": "stable-4.22"}},
        )  # fmt: skip
        _report(server, [(OLD, "Completed")])
        yield server


def _report(server: ApiServer, history: list[tuple[str, str]], failing: bool = False) -> None:
    """The ClusterVersion's status as the cluster version operator writes it: newest first."""
    from kubernetes import client

    status: dict[str, Any] = {
        "desired": {"version": history[0][0], "image": f"quay.io/openshift-release-dev/ocp-release:{history[0][0]}-multi"},
        "history": [
            {"version": v, "state": state, "startedTime": "2026-11-26T10:00:00Z", "verified": True,
             "image": f"quay.io/openshift-release-dev/ocp-release:{v}-multi"}
            for v, state in history
        ],
        "conditions": [
            {"type": "Failing", "status": "True" if failing else "False",
             "reason": "ClusterOperatorDegraded" if failing else "", "message": "machine-config is degraded" if failing else "",
             "lastTransitionTime": "2026-11-26T10:00:00Z"},
        ],
    }  # fmt: skip
    objects = client.CustomObjectsApi(server.api_client())
    current = objects.get_cluster_custom_object("config.openshift.io", "v1", "clusterversions", "version")
    current["status"] = status
    objects.replace_cluster_custom_object_status(
        "config.openshift.io", "v1", "clusterversions", "version", current, field_manager=CVO
    )


def _stacks(tmp_path: Path, server: ApiServer) -> Path:
    """The standalone stack of the upgrade tests, in apply mode through the plant's kubeconfig."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    text = (PROJECT / "tests" / "fleet" / "upgrade" / "Pulumi.plant-last.yaml").read_text()
    assert text.count("      mode: render\n") == 1
    text = text.replace("      mode: render\n", f"      mode: apply\n      kubeconfig: {server.kubeconfig}\n")
    (stacks / "Pulumi.plant-last.yaml").write_text(text)
    return stacks


def _release(stacks: Path) -> str:
    doc = yaml.safe_load((stacks / "Pulumi.plant-last.yaml").read_text())
    return str(doc["config"]["nodefleet:fleet"]["clusters"][0]["release"])


def _upgrade(stacks: Path, tmp_path: Path, *extra: str) -> Any:
    return nodefleet(
        "fleet", "upgrade", "--stacks-dir", str(stacks), "--release", NEW,
        "--state", str(tmp_path / "upgrade.json"), *extra, timeout=900,
    )  # fmt: skip


def test_the_nodes_step_records_the_release_only_once_the_clusterversion_has_completed_it(
    tmp_path: Path, plant: ApiServer
) -> None:
    stacks = _stacks(tmp_path, plant)
    first = _upgrade(stacks, tmp_path)
    assert first.returncode == 1, first.stdout + first.stderr
    assert "Traceback" not in first.stdout + first.stderr
    # The manual step, said at the step; the gate names what the cluster reports.
    assert f"  you: plant-last / plant: upgrade the cluster itself to {NEW}" in first.stderr, first.stderr
    assert f"1 standalone cluster of wave last has not completed {NEW}" in first.stdout, first.stdout
    assert f"ClusterVersion of standalone cluster plant-last/plant: runs {OLD}, not {NEW}" in first.stdout
    assert _release(stacks) == OLD

    # A confirmation given before the cluster was upgraded does not make the stack file say what is not so.
    confirmed = _upgrade(stacks, tmp_path, "--confirmed")
    assert confirmed.returncode == 1, confirmed.stdout + confirmed.stderr
    assert f"runs {OLD}, not {NEW}" in confirmed.stdout, confirmed.stdout
    assert "--confirmed does not pass a cluster that reports another release" in confirmed.stdout
    assert _release(stacks) == OLD

    # Upgrading, not completed yet: still held.
    _report(plant, [(NEW, "Partial"), (OLD, "Completed")])
    partial = _upgrade(stacks, tmp_path, "--confirmed")
    assert partial.returncode == 1 and _release(stacks) == OLD, partial.stdout + partial.stderr
    assert f"desired {NEW}; history: {NEW} Partial, {OLD} Completed" in partial.stdout, partial.stdout

    # Completed but the operator reports a failure: held, in its words.
    _report(plant, [(NEW, "Completed"), (OLD, "Completed")], failing=True)
    failing = _upgrade(stacks, tmp_path)
    assert failing.returncode == 1 and _release(stacks) == OLD, failing.stdout + failing.stderr
    assert "reports Failing (ClusterOperatorDegraded: machine-config is degraded)" in failing.stdout

    # Completed: the gate passes on what the cluster says, no confirmation needed, and the nodes step records it.
    _report(plant, [(NEW, "Completed"), (OLD, "Completed")])
    done = _upgrade(stacks, tmp_path)
    assert (
        f"gate after wave 1/1 last control-plane: passed (1 ClusterVersion of wave last: {NEW} Completed)"
        in (done.stderr)
    ), done.stdout + done.stderr
    assert _release(stacks) == NEW


def test_an_unreachable_standalone_cluster_holds_the_gate(tmp_path: Path, plant: ApiServer) -> None:
    """The stack's kubeconfig reaches no API server: the gate waits, naming the cluster, and records nothing."""
    stacks = _stacks(tmp_path, plant)
    broken = tmp_path / "gone.kubeconfig"
    broken.write_text(
        plant.kubeconfig.read_text().replace(
            yaml.safe_load(plant.kubeconfig.read_text())["clusters"][0]["cluster"]["server"],
            "https://127.0.0.1:1",
        )
    )
    path = stacks / "Pulumi.plant-last.yaml"
    path.write_text(path.read_text().replace(str(plant.kubeconfig), str(broken)))
    done = _upgrade(stacks, tmp_path, "--confirmed")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert (
        "ClusterVersion of standalone cluster plant-last/plant: cannot be read: cannot reach the cluster"
        in (done.stdout)
    ), done.stdout
    assert _release(stacks) == OLD
    shutil.rmtree(stacks)
