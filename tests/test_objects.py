"""No two declarations of one Kubernetes object: refused with both places named, shared ones declared once."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from cli.tree import TREE_JUDGED_ENV
from mockruntime.rendering import kubernetes_objects
from mockruntime.run import run_program
from nodefleet.render.objects import load_fleet, stack_objects, tree_problems
from nodefleet.stackfile.model import ConfigError
from tests.conftest import PROJECT, copy_project, nodefleet, stack_fleet

EXAMPLES = ("dev", "hosted", "karpenter", "rhel10")


def _second_hosted(
    raw: dict[str, Any], name: str = "prod-west", infra: str = "prod-west-9zz1a"
) -> dict[str, Any]:
    """The hosted example plus a copy of its cluster under another name, in the same namespace, both keeping
    their classic NodePool's object name `infra` (objectName, as a stack written before NodePools were named
    <cluster>-<pool> does)."""
    raw = copy.deepcopy(raw)
    raw["clusters"][0]["nodePools"][0]["objectName"] = "infra"
    other = copy.deepcopy(raw["clusters"][0])
    other["name"], other["infraId"] = name, infra
    raw["clusters"].append(other)
    return raw


def _stack_file(path: Path, fleet: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}), encoding="utf-8")
    return path


def test_check_refuses_two_hosted_clusters_declaring_one_node_pool(tmp_path: Path) -> None:
    stack = _stack_file(tmp_path / "Pulumi.two.yaml", _second_hosted(stack_fleet("hosted")))
    result = nodefleet("check", "--config-file", str(stack))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    (line,) = [ln for ln in result.stderr.splitlines() if "NodePool clusters/infra" in ln]
    assert str(stack) in line
    assert "clusters[1].nodePools[0] (cluster 'prod-west')" in line
    assert "clusters[0].nodePools[0] (cluster 'prod-east')" in line
    assert "Rename one of the NodePools" in line


def test_two_hosted_clusters_share_their_namespace_declared_once() -> None:
    raw = _second_hosted(stack_fleet("hosted"))
    del raw["clusters"][1]["nodePools"][0]["objectName"]
    fleet = load_fleet(raw, "hosted", PROJECT)
    namespaces = [o for o in stack_objects(fleet) if o.key.kind == "Namespace"]
    assert [o.cluster for o in namespaces] == ["prod-east", "prod-west"]
    # Render mode: each management-side folder carries it (each is applied on its own, in any order).
    run = run_program("hosted", {"nodefleet:fleet": raw})
    declared = [
        (target, m["metadata"]["name"])
        for target, _, m, _ in kubernetes_objects(run, fleet.render_directory)
        if m["kind"] == "Namespace"
    ]
    # (the mock runtime registers the two clusters' objects in either order)
    assert sorted(declared) == [("prod-east", "clusters"), ("prod-west", "clusters")]
    # Apply mode: declared once (a NamespacePatch), the second cluster waits for it.
    applied = _apply(raw)
    for c in applied["clusters"]:
        c["pullSecret"] = {"name": f"{c['name']}-pull-secret"}
    run = run_program("hosted", {"nodefleet:fleet": applied})
    assert len([r for r in run.registrations if r.type == "kubernetes:core/v1:NamespacePatch"]) == 1


def _apply(raw: dict[str, Any]) -> dict[str, Any]:
    raw["output"] = {"mode": "apply"}
    for c in raw["clusters"]:
        c["hostedKubeconfig"] = f"~/.kube/{c['name']}"
        c["pullSecret"] = {"name": "pull-secret", "fromConfig": "pullSecret"}
    return raw


def test_apply_mode_refuses_one_pull_secret_owned_by_two_clusters() -> None:
    raw = _apply(_second_hosted(stack_fleet("hosted")))
    del raw["clusters"][1]["nodePools"][0]["objectName"]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "Secret clusters/pull-secret" in str(e.value)
    assert "clusters[1].pullSecret" in str(e.value) and "clusters[0].pullSecret" in str(e.value)
    assert "deleteWithCluster: false" in str(e.value)


def test_apply_mode_shares_one_pull_secret_declared_identically() -> None:
    raw = _apply(_second_hosted(stack_fleet("hosted")))
    del raw["clusters"][1]["nodePools"][0]["objectName"]
    for c in raw["clusters"]:
        c["pullSecret"]["deleteWithCluster"] = False
    fleet = load_fleet(raw, "hosted", PROJECT)
    assert [o.cluster for o in stack_objects(fleet) if o.key.kind == "Secret"] == ["prod-east", "prod-west"]
    run = run_program("hosted", {"nodefleet:fleet": raw, "nodefleet:pullSecret": '{"auths":{}}'})
    (secret,) = run.of_type("kubernetes:core/v1:Secret")
    (namespace,) = run.of_type("kubernetes:core/v1:NamespacePatch")
    west = next(
        r
        for r in run.of_type("kubernetes:hypershift.openshift.io/v1beta1:HostedCluster")
        if r.name.startswith("prod-west")
    )
    # The second cluster declares neither again, and still waits for both.
    assert secret.urn in west.depends_on and namespace.urn in west.depends_on


def test_two_standalone_clusters_with_one_pool_name_are_separate_clusters() -> None:
    raw = stack_fleet("dev")
    other = copy.deepcopy(raw["clusters"][0])
    other["name"], other["infraId"] = "dev-b", "dev-b-1a2b3"
    raw["clusters"].append(other)
    load_fleet(raw, "dev", PROJECT)


@pytest.mark.parametrize("stack", EXAMPLES)
def test_the_object_list_is_what_the_program_declares(stack: str) -> None:
    """The identities the check judges are exactly the Kubernetes objects the program registers."""
    raw = stack_fleet(stack)
    if stack == "hosted":
        raw = _second_hosted(raw)
        del raw["clusters"][1]["nodePools"][0]["objectName"]
    fleet = load_fleet(raw, stack, PROJECT)
    run = run_program(stack, {"nodefleet:fleet": raw}) if stack == "hosted" else run_program(stack)
    registered = sorted(
        (target, m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"])
        for target, _, m, _ in kubernetes_objects(run, fleet.render_directory)
    )
    planned = sorted((o.target, o.key.kind, o.key.namespace, o.key.name) for o in stack_objects(fleet))
    assert registered == planned


def test_stacks_in_one_gitops_tree_refuse_each_others_objects(tmp_path: Path) -> None:
    for name, infra in (("prod-east", "prod-east-4kq8z"), ("prod-west", "prod-west-9zz1a")):
        raw = stack_fleet("hosted")
        raw["clusters"][0]["name"], raw["clusters"][0]["infraId"] = name, infra
        raw["clusters"][0]["nodePools"][0]["objectName"] = "infra"
        _stack_file(tmp_path / f"Pulumi.{name.removeprefix('prod-')}.yaml", raw)
    result = nodefleet("fleet", "check", "--stacks-dir", str(tmp_path))
    assert result.returncode == 2, result.stdout + result.stderr
    assert "stack 'west'" in result.stderr and "stack 'east'" in result.stderr
    assert "NodePool clusters/infra" in result.stderr and "Traceback" not in result.stderr


def test_stacks_sharing_only_identical_objects_pass_the_tree_check() -> None:
    fleets = []
    for name, infra in (("prod-east", "prod-east-4kq8z"), ("prod-west", "prod-west-9zz1a")):
        raw = stack_fleet("hosted")
        raw["clusters"][0]["name"], raw["clusters"][0]["infraId"] = name, infra
        # The pools keep their name `infra`: the objects are <cluster>-infra, one per cluster.
        fleets.append((load_fleet(raw, name, PROJECT), f"stacks/Pulumi.{name}.yaml"))
    assert tree_problems(fleets) == []


def _east_and_west(tmp_path: Path) -> Path:
    """A project copy whose stacks/ holds 'east' and 'west': the hosted example as prod-east and prod-west, both
    declaring the classic NodePool clusters/infra."""
    project = copy_project(tmp_path / "project")
    (project / "stacks").mkdir()
    for name, infra in (("prod-east", "prod-east-4kq8z"), ("prod-west", "prod-west-9zz1a")):
        raw = stack_fleet("hosted")
        raw["clusters"][0]["name"], raw["clusters"][0]["infraId"] = name, infra
        raw["clusters"][0]["nodePools"][0]["objectName"] = "infra"
        _stack_file(project / "stacks" / f"Pulumi.{name.removeprefix('prod-')}.yaml", raw)
    return project


def test_render_refuses_an_object_another_stack_rendered_into_the_tree(tmp_path: Path) -> None:
    project = _east_and_west(tmp_path)
    west = project / "stacks" / "Pulumi.west.yaml"
    aside = west.rename(tmp_path / west.name)  # east alone in stacks/: it renders
    first = nodefleet("render", "--stack", "east", cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    aside.rename(west)
    second = nodefleet("render", "--stack", "west", cwd=project)
    assert second.returncode == 2, second.stdout + second.stderr
    assert "stack 'west'" in second.stderr and "stack 'east' (stacks/Pulumi.east.yaml)" in second.stderr
    assert "NodePool clusters/infra" in second.stderr
    assert not (project / "rendered" / "west").exists()


def test_apply_mode_refuses_two_standalone_clusters_through_one_kubeconfig() -> None:
    """In apply mode every standalone cluster goes through output.kubeconfig: two would share one cluster."""
    raw = stack_fleet("dev")
    other = copy.deepcopy(raw["clusters"][0])
    other["name"], other["infraId"] = "dev-b", "dev-b-1a2b3"
    raw["clusters"].append(other)
    raw["output"] = {"mode": "apply", "kubeconfig": "/tmp/kubeconfig"}
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "dev", PROJECT)
    assert "clusters[1]: in apply mode every standalone cluster is applied through output.kubeconfig" in str(
        e.value
    )
    assert "one stack per standalone cluster" in str(e.value)


def test_render_refuses_an_object_a_stack_from_outside_stacks_rendered_into_the_tree(tmp_path: Path) -> None:
    """A stack rendered with --config-file from another folder has no file beside the next stack's: what its
    last render left in the tree is compared instead, each object named by its file."""
    project = copy_project(tmp_path / "project")
    (project / "stacks").mkdir()
    elsewhere = tmp_path / "team-stacks"
    files = {}
    for name, replicas in (("east", 2), ("west", 3)):
        raw = stack_fleet("hosted")
        raw["clusters"][0]["nodePools"][0]["replicas"] = replicas
        (elsewhere / name).mkdir(parents=True)
        files[name] = _stack_file(elsewhere / name / f"Pulumi.{name}.yaml", raw)
    first = nodefleet("render", "--config-file", str(files["east"]), cwd=project)
    assert first.returncode == 0, first.stdout + first.stderr
    second = nodefleet("render", "--config-file", str(files["west"]), cwd=project)
    assert second.returncode == 2, second.stdout + second.stderr
    assert "Traceback" not in second.stderr
    lines = [ln for ln in second.stderr.splitlines() if "NodePool clusters/prod-east-infra" in ln]
    assert lines, second.stderr
    assert f"stack 'east' (its last render; its stack file is not in {elsewhere / 'west'})" in lines[0]
    assert "rendered/east/prod-east/1-manifest/" in lines[0]
    assert f"stack 'west' ({files['west']}) nodefleet:fleet.clusters[0].nodePools[0]" in lines[0]
    assert not (project / "rendered" / "west").exists()
    # The same declaration from a third stack is the one object, shared: not a collision.
    same = stack_fleet("hosted")
    same["clusters"][0]["nodePools"][0]["replicas"] = 2
    (elsewhere / "third").mkdir()
    third = nodefleet(
        "render",
        "--config-file",
        str(_stack_file(elsewhere / "third" / "Pulumi.east2.yaml", same)),
        cwd=project,
    )
    assert third.returncode == 0, third.stdout + third.stderr


def test_two_hosted_clusters_whose_control_plane_namespaces_coincide_are_refused() -> None:
    """HyperShift puts a control plane in <namespace>-<name>: clusters-a/prod and clusters/a-prod both make
    clusters-a-prod, two different objects of the stack that pass every name check on their own."""
    raw = _second_hosted(stack_fleet("hosted"), name="a-prod", infra="a-prod-9zz1a")
    raw["clusters"][0]["name"], raw["clusters"][0]["namespace"] = "prod", "clusters-a"
    raw["clusters"][1]["nodePools"][0]["objectName"] = "infra-a"
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    (line,) = str(e.value).splitlines()
    assert line.startswith("stacks/Pulumi.hosted.yaml: nodefleet:fleet.clusters[1] (cluster 'a-prod'): ")
    assert "namespace 'clusters-a-prod'" in line and "nodefleet:fleet.clusters[0] (cluster 'prod')" in line


def test_a_hosted_cluster_in_another_clusters_control_plane_namespace_is_refused() -> None:
    raw = _second_hosted(stack_fleet("hosted"), name="other", infra="other-9zz1a")
    raw["clusters"][1]["namespace"] = "clusters-prod-east"
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    (line,) = str(e.value).splitlines()
    assert "clusters[1] (cluster 'other'): its namespace 'clusters-prod-east'" in line
    assert "control plane of nodefleet:fleet.clusters[0] (cluster 'prod-east')" in line


def test_control_plane_namespaces_coincide_across_stacks_of_one_tree() -> None:
    fleets = []
    for stack, namespace, name in (("a", "clusters-a", "prod"), ("b", "clusters", "a-prod")):
        raw = stack_fleet("hosted")
        raw["clusters"][0].update(namespace=namespace, name=name, infraId=f"{name}-4kq8z")
        fleets.append((load_fleet(raw, stack, PROJECT), f"stacks/Pulumi.{stack}.yaml"))
    (problem,) = tree_problems(fleets)
    assert "stack 'b' (stacks/Pulumi.b.yaml) nodefleet:fleet.clusters[0] (cluster 'a-prod')" in problem
    assert "stack 'a' (stacks/Pulumi.a.yaml) nodefleet:fleet.clusters[0] (cluster 'prod')" in problem


def test_a_control_plane_namespace_over_63_characters_is_refused() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0].update(name="p" * 40, namespace="n" * 23)  # 40 + 1 + 23 = 64
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    (line,) = str(e.value).splitlines()
    assert "nodefleet:fleet.clusters[0].name: HyperShift puts the control plane" in line
    assert "(<namespace>-<name>, 64 characters)" in line and "(1 too many between them)" in line
    raw["clusters"][0]["namespace"] = "n" * 22
    load_fleet(raw, "hosted", PROJECT)


def test_a_custom_pool_named_like_the_karpenter_operators_pool_is_refused() -> None:
    """The karpenter-operator creates and owns MachineConfigPool karpenter-<class> for each node class; a stack
    declaring a pool of that name was accepted, and the two owners would overwrite each other."""
    from tests.variants import karpenter_operator_fleet

    raw = karpenter_operator_fleet()
    raw["clusters"][0]["pools"] = [{"name": "infra"}, {"name": "karpenter-general"}]
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "karpenter", PROJECT)
    (line,) = str(e.value).splitlines()
    assert line.startswith("stacks/Pulumi.karpenter.yaml: nodefleet:fleet.clusters[0].pools[1].name: ")
    assert "karpenterOperator.nodeClasses[0] 'general'" in line and "Rename the pool" in line
    raw["clusters"][0]["pools"] = [{"name": "karpenter-batch"}]  # no class 'batch': an ordinary pool
    load_fleet(raw, "karpenter", PROJECT)


def test_two_stacks_rendering_one_cluster_folder_are_refused_before_either_renders() -> None:
    """Two stacks sharing output.directory (no {stack}) with a cluster of one name passed fleet check, even
    with identical objects; the second render then stopped at the folder the first one's record claims."""
    fleets = []
    for stack in ("one", "two"):
        raw = stack_fleet("dev")
        raw["output"] = {"mode": "render", "directory": "rendered/clusters"}
        fleets.append((load_fleet(raw, stack, PROJECT), f"stacks/Pulumi.{stack}.yaml"))
    (problem,) = tree_problems(fleets)
    assert problem.startswith(
        "stack 'two' (stacks/Pulumi.two.yaml) nodefleet:fleet.clusters[0] (cluster 'dev'): "
    )
    assert "renders into rendered/clusters/dev, which stack 'one' (stacks/Pulumi.one.yaml)" in problem
    assert "Put {stack} in output.directory" in problem
    other = stack_fleet("dev")
    other["output"] = {"mode": "render", "directory": "rendered/clusters"}
    other["clusters"][0].update(name="dev-b", infraId="dev-b-7xk2p")
    assert tree_problems([fleets[0], (load_fleet(other, "two", PROJECT), "stacks/Pulumi.two.yaml")]) == []


def test_check_refuses_what_render_would_refuse_in_the_tree(tmp_path: Path) -> None:
    """check passed a stack whose render then stopped at another stack's object in the same tree: the gate
    and the render disagreed."""
    project = _east_and_west(tmp_path)
    west = project / "stacks" / "Pulumi.west.yaml"
    aside = west.rename(tmp_path / west.name)
    assert nodefleet("render", "--stack", "east", cwd=project).returncode == 0
    aside.rename(west)
    for args in (("check", "--stack", "west"), ("check", "--stack", "west", "--json")):
        result = nodefleet(*args, cwd=project)
        assert result.returncode == 2, result.stdout + result.stderr
        lines = [ln for ln in result.stderr.splitlines() if "NodePool clusters/infra" in ln]
        assert lines and "stack 'east' (stacks/Pulumi.east.yaml)" in lines[0] and "stack 'west'" in lines[0]


def test_a_single_stack_check_predicts_the_fleet_check(tmp_path: Path) -> None:
    """check --stack X passed while fleet check (and CI) refused the same file, because another stack file of
    the tree, not rendered yet, declares the same object: a single stack's check now reads the other stack
    files of its tree, and so does render."""
    project = _east_and_west(tmp_path)
    alone = {TREE_JUDGED_ENV: "0"}  # as a user runs it (the suite turns the comparison off elsewhere)
    fleet = nodefleet("fleet", "check", cwd=project, env=alone)
    assert fleet.returncode == 2, fleet.stdout + fleet.stderr
    for stack, other in (("east", "west"), ("west", "east")):
        for command in ("check", "render"):
            result = nodefleet(command, "--stack", stack, cwd=project, env=alone)
            assert result.returncode == 2, result.stdout + result.stderr
            assert f"stack '{other}' (stacks/Pulumi.{other}.yaml)" in result.stderr
            assert "NodePool clusters/infra" in result.stderr
    assert not (project / "rendered").exists()
    # A stack file rendering into another tree still lands on the same management cluster: the collision is
    # judged per management cluster (the API server), not per render folder.
    west = project / "stacks" / "Pulumi.west.yaml"
    raw = yaml.safe_load(west.read_text())
    raw["config"]["nodefleet:fleet"]["output"] = {"mode": "render", "directory": "elsewhere/{stack}"}
    west.write_text(yaml.safe_dump(raw))
    for result in (
        nodefleet("check", "--stack", "east", cwd=project, env=alone),
        nodefleet("fleet", "check", cwd=project, env=alone),
    ):
        assert result.returncode == 2, result.stdout + result.stderr
        assert "NodePool clusters/infra" in result.stdout + result.stderr
        assert "on management cluster 'management'" in result.stdout + result.stderr
