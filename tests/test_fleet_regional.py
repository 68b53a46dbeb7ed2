"""A fleet as a platform team runs it: three HyperShift management clusters in two regions, hosted clusters in
HyperShift's default namespace `clusters` (tests/fleet/regional). It checks and renders with no collision, is
wired for Argo CD and Flux by `nodefleet gitops` (validated against the upstream CRDs and the API server's
name rules), and `fleet upgrade` moves it to a new release wave by wave, dry run and real run."""

from __future__ import annotations

import copy
import gzip
import json
import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pulumi
import pytest
import yaml

from mockruntime.rendering import kubernetes_objects, plan_render
from mockruntime.run import run_program
from nodefleet.apiserver.formats import dns1123_label_errors, label_value_errors, qualified_name_errors
from nodefleet.apiserver.schema import validate_object
from nodefleet.apiserver.store import CrdVersion, ShippedCrd
from nodefleet.fleet.registry import Registry, load_fleet_in, load_registry
from nodefleet.render.objects import load_fleet, shared_namespaces, tree_problems
from nodefleet.render.wiring import LABEL_SIDE, dns_label, folders
from nodefleet.render.wiring import label_value as wiring_label_value
from nodefleet.stackfile.model import ConfigError
from nodefleet.stackfile.waves import WAVE_LABEL, WAVES
from tests.argocd_template import render_template
from tests.conftest import PROJECT, nodefleet, stack_fleet

FLEET = PROJECT / "tests" / "fleet" / "regional"
CRDS = PROJECT / "tests" / "data" / "gitops-crds"
STACKS = ("Team_B", "canary-east", "east-a", "east-b")
REPO_URL = "https://git.example.com/platform/fleet.git"


def _raw(stack: str) -> dict[str, Any]:
    return yaml.safe_load((FLEET / f"Pulumi.{stack}.yaml").read_text())["config"]["nodefleet:fleet"]  # type: ignore[no-any-return]


def _fleets() -> list[tuple[Any, str]]:
    return [(load_fleet_in(_registry(), _raw(s), s, PROJECT), f"Pulumi.{s}.yaml") for s in STACKS]


# --- the management cluster: named in the stack, declared once in the registry --------------------------------


def _registry() -> Registry:
    return load_registry(FLEET, "tests/fleet/regional/nodefleet-fleet.yaml")


def test_a_management_cluster_is_named_and_reached_as_the_registry_says() -> None:
    registry = _registry()
    fleet = load_fleet_in(registry, _raw("Team_B"), "Team_B", PROJECT)
    (folder,) = folders(fleet, registry)
    assert (folder.argocd_cluster, folder.flux_secret, folder.flux_secret_key) == (
        "mgmt-euw1-a",
        "mgmt-euw1-a-kubeconfig",
        "value",
    )
    assert registry.get("mgmt-use2-a").supported_versions == ("4.22", "4.21", "4.20")
    assert registry.gitops is not None and registry.gitops.repo_url == REPO_URL


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            {"name": "mgmt-use2-a", "kubeconfig": "/etc/mgmt"},
            "clusters[0].managementCluster: a mapping (with kubeconfig) is no longer taken: a hosted cluster names "
            "its management cluster only (managementCluster: mgmt-use2-a)",
        ),
        ("Mgmt_A", "nodefleet:fleet.clusters[0].managementCluster: must be lowercase letters"),
    ],
)
def test_a_management_cluster_setting_in_the_stack_file_is_refused_with_the_fix(
    value: Any, message: str
) -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["managementCluster"] = value
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT, source="stacks/Pulumi.hosted.yaml")
    assert message in str(e.value)
    assert str(e.value).startswith("stacks/Pulumi.hosted.yaml: ")


def test_a_misspelt_management_cluster_is_refused_with_did_you_mean() -> None:
    raw = _raw("east-b")
    raw["clusters"][0]["managementCluster"] = "mgmt-use2b"
    with pytest.raises(ConfigError) as e:
        load_fleet_in(_registry(), raw, "east-b", PROJECT, source="tests/fleet/regional/Pulumi.east-b.yaml")
    assert str(e.value) == (
        "tests/fleet/regional/Pulumi.east-b.yaml: nodefleet:fleet.clusters[0].managementCluster: 'mgmt-use2b' is "
        "not a management cluster of tests/fleet/regional/nodefleet-fleet.yaml; did you mean 'mgmt-use2-b'? its "
        "management clusters are mgmt-use2-a, mgmt-use2-b, mgmt-euw1-a (add 'mgmt-use2b' there if it is a new one)"
    )


def test_without_a_registry_the_fleet_has_one_management_cluster() -> None:
    raw = stack_fleet("hosted")
    registry = load_registry(PROJECT / "tests" / "data", "nodefleet-fleet.yaml")
    assert not registry.exists and registry.names == ("management",)
    load_fleet_in(registry, raw, "hosted", PROJECT)
    raw["clusters"][0]["managementCluster"] = "mgmt-a"
    with pytest.raises(
        ConfigError, match=r"without nodefleet-fleet\.yaml the fleet has one, 'management'; declare"
    ):
        load_fleet_in(registry, raw, "hosted", PROJECT)


def test_a_hosted_cluster_outside_its_management_clusters_region_is_refused() -> None:
    raw = _raw("Team_B")
    raw["clusters"][0]["managementCluster"] = "mgmt-use2-a"
    with pytest.raises(ConfigError) as e:
        load_fleet_in(_registry(), raw, "Team_B", PROJECT, source="Pulumi.Team_B.yaml")
    assert str(e.value).startswith(
        "Pulumi.Team_B.yaml: nodefleet:fleet.clusters[0].region: 'eu-west-1', but its management cluster "
        "'mgmt-use2-a' is in us-east-2 (tests/fleet/regional/nodefleet-fleet.yaml)"
    )
    assert "Put the cluster on a management cluster of eu-west-1, or correct the region" in str(e.value)


def _apply_mode(raw: dict[str, Any]) -> dict[str, Any]:
    raw["output"] = {"mode": "apply", "kubeconfig": "/etc/default-kubeconfig"}
    raw["clusters"][0]["hostedKubeconfig"] = "/etc/hosted"
    raw["clusters"][0]["pullSecret"] = {"name": "prod-east-pull-secret"}
    raw["clusters"][0]["sshKey"] = {"name": "prod-east-ssh-key"}
    return raw


def test_apply_mode_reaches_each_management_cluster_through_the_registrys_kubeconfig(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "nodefleet-fleet.yaml").write_text(
        "managementClusters:\n  - name: mgmt-a\n    region: us-east-2\n    kubeconfig: /etc/mgmt-a\n"
    )
    raw = _apply_mode(stack_fleet("hosted"))
    raw["clusters"][0]["managementCluster"] = "mgmt-a"
    # With a registry the stack's output.kubeconfig reaches nothing here: refused, not silently overruled.
    with pytest.raises(
        pulumi.RunError, match=r"output.kubeconfig: is not the kubeconfig .* gives management"
    ):
        run_program("hosted", {"nodefleet:fleet": raw}, source=str(stacks / "Pulumi.hosted.yaml"))
    del raw["output"]["kubeconfig"]
    run = run_program("hosted", {"nodefleet:fleet": raw}, source=str(stacks / "Pulumi.hosted.yaml"))
    providers = {r.name: r.inputs for r in run.registrations if r.type == "pulumi:providers:kubernetes"}
    assert providers["prod-east-k8s"]["kubeconfig"] == "/etc/mgmt-a"
    assert providers["prod-east-hosted-k8s"]["kubeconfig"] == "/etc/hosted"
    # Without a registry: the one management cluster, through the stack's output.kubeconfig.
    raw["output"]["kubeconfig"] = "/etc/default-kubeconfig"
    del raw["clusters"][0]["managementCluster"]
    run = run_program("hosted", {"nodefleet:fleet": raw})
    providers = {r.name: r.inputs for r in run.registrations if r.type == "pulumi:providers:kubernetes"}
    assert providers["prod-east-k8s"]["kubeconfig"] == "/etc/default-kubeconfig"


def test_apply_mode_without_the_management_clusters_kubeconfig_is_refused(tmp_path: Path) -> None:
    shutil.copytree(FLEET, tmp_path / "stacks")
    raw = _apply_mode(_raw("east-b"))
    with pytest.raises(
        ConfigError,
        match=r"'mgmt-use2-b' has no kubeconfig in .*nodefleet-fleet\.yaml, and output.mode is apply",
    ):
        load_fleet_in(load_registry(tmp_path / "stacks"), raw, "east-b", PROJECT)


def _pair(mgmt_a: str, mgmt_b: str) -> list[tuple[Any, str]]:
    """Two regional stacks each declaring hosted cluster `prod` and its classic NodePool clusters/infra."""
    fleets = []
    for stack, mgmt, infra in (("east", mgmt_a, "prod-e-4kq8z"), ("west", mgmt_b, "prod-w-9zz1a")):
        raw = stack_fleet("hosted")
        raw["clusters"][0].update(name="prod", infraId=infra, managementCluster=mgmt)
        raw["clusters"][0]["nodePools"][0].update(objectName="infra", replicas=2 if stack == "east" else 3)
        fleets.append((load_fleet(raw, stack, PROJECT), f"stacks/Pulumi.{stack}.yaml"))
    return fleets


def test_collisions_are_judged_per_management_cluster() -> None:
    assert tree_problems(_pair("mgmt-use2-a", "mgmt-euw1-a")) == []
    problems = tree_problems(_pair("mgmt-use2-a", "mgmt-use2-a"))
    pools = [p for p in problems if "NodePool clusters/infra" in p]
    assert len(pools) == 1
    assert "on management cluster 'mgmt-use2-a'" in pools[0]
    assert "stack 'west'" in pools[0] and "stack 'east'" in pools[0]
    # The HostedCluster clusters/prod and its control-plane namespace collide there too.
    assert any("HostedCluster clusters/prod" in p for p in problems)
    assert any("namespace 'clusters-prod'" in p for p in problems)


def test_a_release_the_management_clusters_hypershift_operator_does_not_run_is_refused(
    tmp_path: Path,
) -> None:
    """mgmt-euw1-a runs 4.22 and 4.21 (the registry's hypershift.supportedVersions): Team_B on 4.20.5 is refused
    by check and fleet check alike, as a policy (so preview --policy-pack refuses it too: tests/engine)."""
    shutil.copytree(FLEET, tmp_path / "stacks")
    path = tmp_path / "stacks" / "Pulumi.Team_B.yaml"
    path.write_text(path.read_text().replace("release: 4.22.3", "release: 4.20.5"))
    checked = nodefleet("check", "--config-file", str(path), "--json")
    assert checked.returncode == 1, checked.stdout + checked.stderr
    found = [
        v for v in json.loads(checked.stdout)["violations"] if v["policy"] == "hypershift-supported-versions"
    ]
    assert {v["level"] for v in found} == {"mandatory"}
    assert len(found) == 1 + len(_raw("Team_B")["clusters"][0]["nodePools"]), found
    assert "runs 4.22, 4.21 (hypershift.supportedVersions in " in found[0]["message"]
    assert "'mgmt-euw1-a'" in found[0]["message"]
    fleet = nodefleet("fleet", "check", "--stacks-dir", str(tmp_path / "stacks"), "--stacks", "Team_B")
    assert fleet.returncode == 1, fleet.stdout + fleet.stderr
    assert f"{len(found)} mandatory" in fleet.stdout
    # The line it runs passes.
    path.write_text(path.read_text().replace("release: 4.20.5", "release: 4.21.9"))
    checked = nodefleet("check", "--config-file", str(path), "--json")
    assert "hypershift-supported-versions" not in checked.stdout, checked.stdout


# --- classic NodePool names --------------------------------------------------------------------------------


def _node_pools(raw: dict[str, Any]) -> dict[str, str]:
    """Pulumi resource name -> the NodePool object's name, as the program registers them."""
    run = run_program("hosted", {"nodefleet:fleet": raw})
    return {
        reg.name: m["metadata"]["name"]
        for _, _, m, reg in kubernetes_objects(run, "rendered/hosted")
        if m["kind"] == "NodePool" and m["apiVersion"].startswith("hypershift")
    }


def test_classic_node_pools_are_named_cluster_dash_pool_and_object_name_keeps_an_old_one() -> None:
    raw = stack_fleet("hosted")
    assert _node_pools(raw) == {"prod-east-nodepool-infra": "prod-east-infra"}
    # A stack whose NodePool was created as `infra` keeps it: same Pulumi resource, same object name, so
    # neither `pulumi up` nor a GitOps sync replaces the NodePool (and its nodes).
    raw["clusters"][0]["nodePools"][0]["objectName"] = "infra"
    assert _node_pools(raw) == {"prod-east-nodepool-infra": "infra"}


def test_a_node_pool_name_over_63_characters_is_refused() -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["nodePools"][0]["name"] = "i" * 54  # prod-east- + 54 = 64
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, "hosted", PROJECT)
    assert "nodePools[0].name: the NodePool object is named 'prod-east-" in str(e.value)
    assert "64 characters" in str(e.value) and "set nodePools[0].objectName" in str(e.value)
    raw["clusters"][0]["nodePools"][0]["objectName"] = "infra"
    load_fleet(raw, "hosted", PROJECT)


def test_the_documented_infra_pool_does_not_collide_across_the_fleet() -> None:
    pools = [o for f, _ in _fleets() for o in _objects(f) if o.key.kind == "NodePool"]
    names = [(o.key.destination, o.key.name) for o in pools]
    assert len(names) == len(set(names)) == 10  # five hosted clusters, two pools each
    assert ("management cluster 'mgmt-use2-a'", "edge-infra") in names


def _objects(fleet: Any) -> list[Any]:
    from nodefleet.render.objects import fleet_plan

    return fleet_plan(fleet).emitted


# --- the shared Namespace ----------------------------------------------------------------------------------


def test_a_rendered_namespace_is_never_pruned_and_apply_mode_still_patches() -> None:
    run = run_program("hosted")
    (ns,) = [r for r in run.registrations if r.type == "kubernetes:core/v1:Namespace"]
    assert ns.inputs["metadata"]["annotations"] == {
        "argocd.argoproj.io/sync-options": "Delete=false,Prune=false",
        "kustomize.toolkit.fluxcd.io/prune": "disabled",
    }
    plan = plan_render(run, "rendered/hosted")
    (rendered,) = [f for f in plan.files if f.kind == "Namespace"]
    assert rendered.content == (
        b"apiVersion: v1\nkind: Namespace\nmetadata:\n  annotations:\n"
        b"    argocd.argoproj.io/sync-options: Delete=false,Prune=false\n"
        b"    kustomize.toolkit.fluxcd.io/prune: disabled\n  name: clusters\n"
    )
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/etc/hosted"
    applied = run_program("hosted", {"nodefleet:fleet": raw})
    (patch,) = [r for r in applied.registrations if r.type == "kubernetes:core/v1:NamespacePatch"]
    assert "annotations" not in patch.inputs["metadata"]


def test_check_says_which_stacks_share_a_namespace() -> None:
    (line,) = shared_namespaces(_fleets())
    assert line.startswith("Namespace clusters on management cluster 'mgmt-use2-a' is rendered by stacks ")
    assert "canary-east, east-a:" in line and "east-b" not in line


# --- names ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stack", ["Team_B", "a" * 70, "x.y", "_lead", "A" * 100, "team-b", "Team-B", "team_b", "9", "a..b"]
)
def test_wiring_names_are_valid_for_every_stack_name_nodefleet_accepts(stack: str) -> None:
    from nodefleet.stackfile.paths import check_stack_name

    check_stack_name(stack)
    for target in ("prod-east", "prod-east-hosted", "c" * 47):
        name = dns_label(f"nodefleet-{stack}-{target}")
        assert dns1123_label_errors(name) == [], name
        assert name == dns_label(f"nodefleet-{stack}-{target}")  # deterministic
    assert label_value_errors(wiring_label_value(stack)) == []


def test_sanitised_names_do_not_collide() -> None:
    stacks = ["Team_B", "team_b", "Team-B", "team.b", "TEAM_B", "team-b"]
    names = {dns_label(f"nodefleet-{s}-shop") for s in stacks}
    assert len(names) == len(stacks)
    assert dns_label("nodefleet-team-b-shop") == "nodefleet-team-b-shop"  # a valid name is kept
    long = ["a" * 70, "a" * 69 + "b", "a" * 71]
    assert len({wiring_label_value(s) for s in long}) == 3


# --- the fleet: checked, rendered, wired -------------------------------------------------------------------


@cache
def _crd_versions() -> dict[tuple[str, str], tuple[CrdVersion, dict[str, Any]]]:
    from tests.crdschema import _strip

    found = {}
    for path in sorted(CRDS.glob("*.yaml.gz")):
        crd = yaml.safe_load(gzip.decompress(path.read_bytes()))
        spec = crd["spec"]
        shipped = ShippedCrd(path.name, crd["metadata"]["name"], spec["group"], spec["names"]["kind"],
                             spec["scope"], tuple(v["name"] for v in spec["versions"]), (), "")  # fmt: skip
        for v in spec["versions"]:
            version = CrdVersion(
                shipped, v["name"], v["schema"]["openAPIV3Schema"], "status" in (v.get("subresources") or {})
            )
            found[(f"{spec['group']}/{v['name']}", spec["names"]["kind"])] = (
                version,
                _strip(v["schema"]["openAPIV3Schema"]),
            )
    return found


def _valid(doc: Mapping[str, Any]) -> None:
    """An object as the API server would take it: its CRD's schema (JSON Schema and nodefleet's validator,
    which also reports pruned fields) and the name rules (DNS-1123 label; label keys and values)."""
    version, schema = _crd_versions()[(doc["apiVersion"], doc["kind"])]
    jsonschema.Draft202012Validator(schema).validate(doc)
    assert [str(f) for f in validate_object(dict(doc), version)] == []
    meta = doc["metadata"]
    assert dns1123_label_errors(meta["name"]) == [], meta["name"]
    for key, value in (meta.get("labels") or {}).items():
        assert qualified_name_errors(key) == [] and label_value_errors(value) == [], (key, value)


@pytest.fixture(scope="module")
def wired(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The fleet rendered as `fleet render --out` writes it (the pipeline's tree), and wired by `gitops`."""
    root = tmp_path_factory.mktemp("regional")
    result = nodefleet(
        "fleet", "render", "--stacks-dir", str(FLEET), "--out", str(root / "rendered"), timeout=900
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "note: Namespace clusters on management cluster 'mgmt-use2-a'" in result.stderr
    result = nodefleet(
        "gitops", "--repo-url", REPO_URL, "--stacks-dir", str(FLEET), "--rendered", str(root / "rendered"),
        "--repo-root", str(root), "--out", str(root / "gitops"),
    )  # fmt: skip
    assert result.returncode == 0, result.stdout + result.stderr
    return root


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _applications(root: Path) -> dict[str, dict[str, Any]]:
    """The Applications the generated ApplicationSet makes (argo-cd's git files generator: each named file,
    parsed as YAML, plus its path parameters), by folder."""
    (appset,) = _documents(root / "gitops" / "argocd" / "applicationset.yaml")
    out = {}
    for entry in appset["spec"]["generators"][0]["git"]["files"]:
        rel = entry["path"]
        params = yaml.safe_load((root / rel).read_text())
        params["path"] = {"path": rel.rsplit("/", 1)[0]}
        template = yaml.safe_load(render_template(yaml.safe_dump(appset["spec"]["template"]), params))
        patch = yaml.safe_load(render_template(appset["spec"]["templatePatch"], params))
        app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **template}
        app["spec"] = {**app["spec"], **patch["spec"]}
        out[params["path"]["path"]] = app
    return out


def _folders_with_manifests(root: Path) -> set[str]:
    return {
        p.parent.parent.relative_to(root).as_posix()
        for p in (root / "rendered").glob("*/*/1-manifest/*.yaml")
    }


def test_the_fleet_renders_and_its_wiring_validates_against_the_upstream_crds(wired: Path) -> None:
    (appset,) = _documents(wired / "gitops" / "argocd" / "applicationset.yaml")
    _valid(appset)
    flux = _documents(wired / "gitops" / "flux" / "kustomizations.yaml")
    for doc in flux:
        _valid(doc)
    apps = _applications(wired)
    assert set(apps) == _folders_with_manifests(wired)
    for app in apps.values():
        _valid(app)
    names = [a["metadata"]["name"] for a in apps.values()]
    assert len(set(names)) == len(names)
    assert "nodefleet-team-b-shop-" in " ".join(names)  # `Team_B` rewritten, with its digest


def test_each_folder_goes_to_its_management_cluster(wired: Path) -> None:
    apps = _applications(wired)
    destinations = {folder: app["spec"]["destination"]["name"] for folder, app in apps.items()}
    assert destinations == {
        "rendered/canary-east/edge": "mgmt-use2-a",
        "rendered/east-a/shop": "mgmt-use2-a",
        "rendered/east-a/pay": "mgmt-use2-a",
        "rendered/east-b/shop": "mgmt-use2-b",
        "rendered/Team_B/shop": "mgmt-euw1-a",
    }
    flux = {d["spec"]["path"]: d for d in _documents(wired / "gitops" / "flux" / "kustomizations.yaml")[1:]}
    assert {path: k["spec"]["kubeConfig"]["secretRef"]["name"] for path, k in flux.items()} == {
        f"./{folder}": f"{mgmt}-kubeconfig" for folder, mgmt in destinations.items()
    }
    for folder, app in apps.items():
        assert app["spec"]["source"]["path"] == folder
        assert app["metadata"]["labels"][LABEL_SIDE] == "management"


def test_the_waves_run_in_order_and_a_hosted_side_after_its_management_side(tmp_path: Path) -> None:
    """A fleet with AutoNode (objects inside the hosted cluster): the wiring over every folder, in order."""
    fleets = _fleets()
    raw = stack_fleet("hosted")
    raw["clusters"][0]["managementCluster"] = "mgmt-euw1-a"
    fleets.append((load_fleet(raw, "hosted", PROJECT), "stacks/Pulumi.hosted.yaml"))
    from nodefleet.render.wiring import argocd_application_set, flux_kustomizations

    all_folders = [f for fleet, _ in fleets for f in folders(fleet, _registry())]
    paths = {(f.stack, f.target): f"rendered/{f.stack}/{f.target}" for f in all_folders}
    hosted = [f for f in all_folders if f.side == "hosted"]
    assert [(f.target, f.argocd_cluster) for f in hosted] == [
        ("prod-east-hosted", "mgmt-euw1-a-clusters-prod-east")
    ]
    appset = argocd_application_set(all_folders, repo_url=REPO_URL, revision="main", paths=paths)
    _valid(appset)
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    order = [(s["matchExpressions"][0]["values"], s["matchExpressions"][1]["values"]) for s in steps]
    # A step for each wave and side the fleet has, in order (Argo CD reports a step nothing matches as
    # InvalidRolloutConfig): no stack is in the last wave, and only the main wave has a hosted side.
    both = ["standalone", "management"]
    assert order == [(["0-canary"], both), (["1-early"], both), (["2-main"], both), (["2-main"], ["hosted"])]
    assert appset["spec"]["syncPolicy"] == {"preserveResourcesOnDeletion": True}
    docs = flux_kustomizations(all_folders, repo_url=REPO_URL, revision="main", paths=paths)
    for doc in docs:
        _valid(doc)
    kustomizations = {d["metadata"]["name"]: d for d in docs if d["kind"] == "Kustomization"}
    depends = {n: {x["name"] for x in k["spec"].get("dependsOn", [])} for n, k in kustomizations.items()}

    def waits_for(name: str) -> set[str]:
        seen: set[str] = set()
        todo = list(depends[name])
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo += depends[n]
        return seen

    for name, k in kustomizations.items():
        wave = WAVES.index(k["metadata"]["labels"][WAVE_LABEL].split("-", 1)[1])
        earlier = {
            n
            for n, o in kustomizations.items()
            if WAVES.index(o["metadata"]["labels"][WAVE_LABEL].split("-", 1)[1]) < wave
        }
        assert earlier <= waits_for(name), name
        assert k["spec"]["wait"] is True
    assert "nodefleet-hosted-prod-east" in depends["nodefleet-hosted-prod-east-hosted"]
    assert kustomizations["nodefleet-hosted-prod-east-hosted"]["spec"]["kubeConfig"]["secretRef"]["name"] == (
        "mgmt-euw1-a-clusters-prod-east-kubeconfig"
    )


def test_gitops_refuses_a_fleet_whose_stacks_collide(tmp_path: Path) -> None:
    shutil.copytree(FLEET, tmp_path / "stacks")
    path = tmp_path / "stacks" / "Pulumi.east-b.yaml"
    path.write_text(
        path.read_text().replace("managementCluster: mgmt-use2-b", "managementCluster: mgmt-use2-a")
    )
    result = nodefleet(
        "gitops",
        "--repo-url",
        REPO_URL,
        "--stacks-dir",
        str(tmp_path / "stacks"),
        "--out",
        str(tmp_path / "out"),
    )
    assert result.returncode == 2, result.stdout + result.stderr
    assert (
        "HostedCluster clusters/shop" in result.stderr and "management cluster 'mgmt-use2-a'" in result.stderr
    )
    assert "Traceback" not in result.stderr and not (tmp_path / "out").exists()


# --- fleet upgrade -----------------------------------------------------------------------------------------


def test_fleet_upgrade_dry_run_prints_the_whole_plan_and_writes_nothing(tmp_path: Path) -> None:
    shutil.copytree(FLEET, tmp_path / "stacks")
    before = {p.name: p.read_bytes() for p in (tmp_path / "stacks").iterdir()}
    result = nodefleet(
        "fleet", "upgrade", "--stacks-dir", str(tmp_path / "stacks"), "--release", "4.22.4", "--dry-run"
    )
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    waves = re.findall(r"^wave \d/3 (\w+): (.*)$", out, re.M)
    assert waves == [("canary", "canary-east"), ("early", "Team_B"), ("main", "east-a, east-b")]
    assert out.count("1. control-plane") == out.count("2. nodes") == 3
    main = out[out.index("wave 3/3 main") :]
    # Control planes before nodes in each wave, the canary's whole upgrade before the main wave's.
    assert main.index("HostedCluster pay: release 4.22.3 → 4.22.4") < main.index("2. nodes")
    assert main.index("2. nodes") < main.index("NodePool infra: release 4.22.3 removed")
    assert {p.name: p.read_bytes() for p in (tmp_path / "stacks").iterdir()} == before


def _git(repo: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    return subprocess.run(
        ["git", *args], cwd=repo, env=env, check=True, capture_output=True, text=True
    ).stdout


def test_fleet_upgrade_in_render_mode_commits_each_wave_stops_at_a_gate_and_resumes(tmp_path: Path) -> None:
    """The render tracked on the branch the GitOps tool reads (--gitops-branch main): one commit per step holds the
    stack files and the render. tests/fleet/test_upgrade_*.py cover the render on a branch of its own."""
    repo = tmp_path / "repo"
    shutil.copytree(FLEET, repo / "stacks")
    rendered = nodefleet(
        "fleet", "render", "--stacks-dir", str(repo / "stacks"), "--out", str(repo / "rendered"), timeout=900
    )
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "the fleet")
    env_args = ("fleet", "upgrade", "--stacks-dir", str(repo / "stacks"), "--release", "4.22.4",
                "--out", str(repo / "rendered"), "--commit", "--gitops-branch", "main")  # fmt: skip
    git_env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com", "GIT_COMMITTER_NAME": "t",
               "GIT_COMMITTER_EMAIL": "t@example.com"}  # fmt: skip
    state_file = repo / ".git" / "nodefleet-upgrade.json"
    # The gate after the early wave's control planes does not pass: the run stops there.
    gate = 'test "$NODEFLEET_WAVE" != early -o "$NODEFLEET_UPGRADE_PHASE" != control-plane'
    first = nodefleet(*env_args, "--health-command", gate, env=git_env, timeout=900)
    assert first.returncode == 1, first.stdout + first.stderr
    assert first.stdout.splitlines() == [
        "nodefleet fleet upgrade to 4.22.4: stopped at the gate after wave 2/3 early control-plane: --health-command "
        "exited 1",
        f"  state: {state_file}",
        "  next: run the same command again once the wave is healthy; it resumes at this gate",
    ]
    state = json.loads(state_file.read_text())
    assert [(e["step"], e["event"]) for e in state["progress"]] == [
        ("canary/control-plane", "staged"), ("canary/control-plane", "gate"), ("canary/nodes", "staged"),
        ("canary/nodes", "gate"), ("early/control-plane", "staged"),
    ]  # fmt: skip
    assert state["stopped"]["reason"] == "wave 2/3 early control-plane: --health-command exited 1"
    assert _git(repo, "status", "--porcelain") == ""  # every step committed, the state file outside the tree
    log = _git(repo, "log", "--format=%s").splitlines()
    assert log == [
        "Fleet upgrade to 4.22.4: early wave, control-plane (Team_B)",
        "Fleet upgrade to 4.22.4: canary wave, nodes (canary-east)",
        "Fleet upgrade to 4.22.4: canary wave, control-plane (canary-east)",
        "the fleet",
    ]
    # The canary's control plane was committed before its nodes, each with its render.
    cp = _git(repo, "show", "HEAD~2", "--name-only", "--format=")
    assert (
        "rendered/canary-east/edge/1-manifest/hypershift.openshift.io_v1beta1-hostedcluster-clusters-edge.yaml"
        in cp
    )
    pool = "rendered/canary-east/edge/1-manifest/hypershift.openshift.io_v1beta1-nodepool-clusters-edge-infra.yaml"
    assert "ocp-release:4.22.3-multi" in _git(repo, "show", f"HEAD~2:{pool}")  # the nodes held back
    assert "ocp-release:4.22.4-multi" in _git(repo, "show", f"HEAD~1:{pool}")
    nodes = _git(repo, "show", "HEAD~1", "--name-only", "--format=")
    assert "nodepool-clusters-edge-infra" in nodes and "hostedcluster" not in nodes
    assert "Nodefleet-Wave: canary\nNodefleet-Phase: nodes\n" in _git(
        repo, "show", "-s", "--format=%B", "HEAD~1"
    )
    main_wave = (repo / "stacks" / "Pulumi.east-a.yaml").read_text()
    assert "release: 4.22.3\n" in main_wave and "4.22.4" not in main_wave  # not reached yet
    # Resumed with the gate confirmed: the rest of the fleet, from where it stopped.
    second = nodefleet(*env_args, "--confirmed", "--health-command", "true", env=git_env, timeout=900)
    assert second.returncode == 0, second.stdout + second.stderr
    assert "every wave is at 4.22.4 (3 waves" in second.stdout
    log = _git(repo, "log", "--format=%s").splitlines()
    assert log[:3] == [
        "Fleet upgrade to 4.22.4: main wave, nodes (east-a, east-b)",
        "Fleet upgrade to 4.22.4: main wave, control-plane (east-a, east-b)",
        "Fleet upgrade to 4.22.4: early wave, nodes (Team_B)",
    ]
    for stack in STACKS:
        text = (repo / "stacks" / f"Pulumi.{stack}.yaml").read_text()
        assert "nodefleet upgrade: held" not in text and "4.22.3" not in text, stack
        for hc in (repo / "rendered" / stack).glob("*/1-manifest/*hostedcluster*"):
            assert "ocp-release:4.22.4-multi" in hc.read_text()
    assert json.loads(state_file.read_text())["complete"] is True
    again = nodefleet(*env_args)
    assert again.returncode == 0 and "every cluster is at 4.22.4: nothing to do" in again.stdout


def test_an_unfinished_upgrade_to_another_release_is_not_mixed_in(tmp_path: Path) -> None:
    shutil.copytree(FLEET, tmp_path / "stacks")
    where = ("--stacks-dir", str(tmp_path / "stacks"), "--out", str(tmp_path / "rendered"))
    stopped = nodefleet("fleet", "upgrade", *where, "--release", "4.22.4", timeout=900)
    assert stopped.returncode == 1, stopped.stdout + stopped.stderr
    assert (
        "stopped at the gate after wave 1/3 canary control-plane: waiting until the control planes"
        in stopped.stdout
    )
    result = nodefleet("fleet", "upgrade", *where, "--release", "4.22.5", "--dry-run")
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == (
        f"error: {tmp_path / 'stacks' / 'nodefleet-upgrade.json'}: an upgrade to 4.22.4 is not finished (stopped at "
        "canary/control-plane: wave 1/3 canary control-plane: waiting until the control planes of wave canary "
        "(canary-east) have completed 4.22.4: run the same command again with --confirmed once it has (or give "
        "--health-command)); finish it with --release 4.22.4, or run with --restart to abandon it and plan 4.22.5 afresh\n"
    )
    # Set aside, the stack files say the same: the canary's nodes are still held at 4.22.3.
    restarted = nodefleet("fleet", "upgrade", *where, "--release", "4.22.5", "--dry-run", "--restart")
    assert restarted.returncode == 2, restarted.stdout + restarted.stderr
    assert restarted.stdout == "" and restarted.stderr.splitlines() == [
        "error: --release 4.22.5: 1 cluster still holds nodes from an earlier, unfinished upgrade (canary-east/edge "
        f"holds NodePool infra, NodePool workers ({tmp_path / 'stacks' / 'Pulumi.canary-east.yaml'}) from an upgrade "
        "to 4.22.4): finish it first (`fleet upgrade --release 4.22.4`), then upgrade to 4.22.5",
    ]


def test_check_of_one_stack_names_the_stacks_sharing_its_namespace() -> None:
    result = nodefleet("check", "--config-file", str(FLEET / "Pulumi.east-a.yaml"), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    (warning,) = [w for w in json.loads(result.stdout)["warnings"] if w.startswith("Namespace ")]
    assert (
        "Namespace clusters on management cluster 'mgmt-use2-a' is rendered by stacks canary-east, east-a"
        in warning
    )
    # east-b's hosted cluster is on another management cluster: it shares no Namespace object.
    other = nodefleet("check", "--config-file", str(FLEET / "Pulumi.east-b.yaml"), "--json")
    assert other.returncode == 0 and not [w for w in json.loads(other.stdout)["warnings"] if "Namespace" in w]


def test_every_management_side_folder_carries_its_namespace_in_render_mode(tmp_path: Path) -> None:
    """Each folder is applied by its own Application or Kustomization, in any order: the second hosted cluster's
    folder must not wait for the first one's to create `clusters` (at fleet size, real Flux failed 2 of 50 such
    folders with `namespaces "clusters" not found`). Apply mode declares it once per management cluster."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    (stacks / "nodefleet-fleet.yaml").write_text(
        "managementClusters:\n"
        + "".join(
            f"  - {{name: {n}, region: us-east-2, kubeconfig: /etc/{n}}}\n" for n in ("mgmt-a", "mgmt-b")
        )
    )
    raw = stack_fleet("hosted")
    other = copy.deepcopy(raw["clusters"][0])
    other.update(name="prod-west", infraId="prod-west-9zz1a")
    raw["clusters"].append(other)
    source = str(stacks / "Pulumi.hosted.yaml")

    def namespaces(first: str, second: str) -> list[str]:
        raw["clusters"][0]["managementCluster"], raw["clusters"][1]["managementCluster"] = first, second
        plan = plan_render(run_program("hosted", {"nodefleet:fleet": raw}, source=source), "rendered/hosted")
        return sorted(f.relpath for f in plan.files if f.kind == "Namespace")

    both = [
        "prod-east/1-manifest/v1-namespace-default-clusters.yaml",
        "prod-west/1-manifest/v1-namespace-default-clusters.yaml",
    ]
    assert namespaces("mgmt-a", "mgmt-a") == both
    assert namespaces("mgmt-a", "mgmt-b") == both
    _apply_mode(raw)
    del raw["output"]["kubeconfig"]  # the registry's reaches mgmt-a
    for cluster in raw["clusters"]:
        cluster.update(hostedKubeconfig="/etc/hosted", managementCluster="mgmt-a")
    applied = run_program("hosted", {"nodefleet:fleet": raw}, source=source)
    assert len([r for r in applied.registrations if r.type == "kubernetes:core/v1:NamespacePatch"]) == 1


def test_the_registry_says_what_a_management_cluster_runs_and_crd_schema_follows_it(tmp_path: Path) -> None:
    """mgmt-euw1-a declared at OpenShift 5.0.0 (Kubernetes 1.36): Team_B's HostedCluster and NodePools, which land
    on it, are judged as 1.36, and check's header says why; a release that is none is refused naming the field."""
    shutil.copytree(FLEET, tmp_path / "stacks")
    registry = tmp_path / "stacks" / "nodefleet-fleet.yaml"
    text = registry.read_text()
    entry = "  - name: mgmt-euw1-a\n    region: eu-west-1\n"
    assert entry in text
    registry.write_text(text.replace(entry, entry + "    release: 5.0.0\n"))
    path = tmp_path / "stacks" / "Pulumi.Team_B.yaml"
    checked = nodefleet("check", "--config-file", str(path))
    assert checked.returncode == 0, checked.stdout + checked.stderr
    header = checked.stdout.splitlines()[1]
    objects = 1 + len(_raw("Team_B")["clusters"][0]["nodePools"])
    assert header == (
        f"  Kubernetes (crd-schema): 1.36 for {objects} objects (on a management cluster on OpenShift 5.0.0, "
        "Kubernetes 1.36)"
    ), checked.stdout
    registry.write_text(text.replace(entry, entry + "    release: 5.0.x\n"))
    refused = nodefleet("check", "--config-file", str(path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "managementClusters[" in refused.stderr and "].release: " in refused.stderr, refused.stderr
    assert "Traceback" not in refused.stderr
