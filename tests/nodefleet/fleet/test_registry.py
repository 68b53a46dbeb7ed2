"""The registry of management clusters (nodefleet/fleet/registry.py): read strictly, every refusal one line naming
the file, the field and the fix, never echoing a value that may be a credential."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from nodefleet.fleet.registry import (
    Registry,
    RegistryError,
    fleet_problems,
    kubeconfig_server,
    load_fleet_in,
    load_registry,
    redact_url,
    server_alias_problems,
    url_credentials_problem,
)
from nodefleet.stackfile.model import ConfigError
from tests.conftest import PROJECT, stack_fleet

SOURCE = "stacks/nodefleet-fleet.yaml"
TOKEN = "ghp_canary0123456789"  # a credential-shaped canary that must never be printed


def _write(tmp_path: Path, document: Any) -> Path:
    text = document if isinstance(document, str) else yaml.safe_dump(document, sort_keys=False)
    (tmp_path / "nodefleet-fleet.yaml").write_text(text)
    return tmp_path


def _entry(name: str = "mgmt-use1-a", **extra: Any) -> dict[str, Any]:
    return {"name": name, "region": "us-east-1", **extra}


def _error(tmp_path: Path, document: Any) -> str:
    with pytest.raises(RegistryError) as e:
        load_registry(_write(tmp_path, document), SOURCE)
    return str(e.value)


def test_the_documented_registry_loads_with_its_defaults(tmp_path: Path) -> None:
    registry = load_registry(
        _write(
            tmp_path,
            {
                "managementClusters": [
                    _entry(
                        kubeconfig="~/.kube/mgmt-use1-a", hypershift={"supportedVersions": ["4.22", "4.21"]}
                    ),
                    _entry(
                        "mgmt-use1-b", argocdCluster="hub-b", fluxKubeConfig={"secretName": "b", "key": "kc"}
                    ),
                ],
                "gitops": {"repoURL": "https://git.example.com/platform/fleet.git", "tool": "flux"},
            },
        ),
        SOURCE,
    )
    a, b = registry.get("mgmt-use1-a"), registry.get("mgmt-use1-b")
    assert (a.argocd_cluster, a.flux_secret_name, a.flux_secret_key) == (
        "mgmt-use1-a",
        "mgmt-use1-a-kubeconfig",
        "value",
    )
    assert (b.argocd_cluster, b.flux_secret_name, b.flux_secret_key) == ("hub-b", "b", "kc")
    assert a.supported_versions == ("4.22", "4.21") and b.supported_versions == ()
    assert registry.kubeconfig("mgmt-use1-a", "/etc/ignored") == "~/.kube/mgmt-use1-a"
    assert registry.gitops is not None
    assert (registry.gitops.branch, registry.gitops.tool, registry.gitops.flux_namespace) == (
        "nodefleet-rendered",
        "flux",
        "flux-system",
    )


def test_without_a_file_the_fleet_has_one_management_cluster(tmp_path: Path) -> None:
    registry = load_registry(tmp_path, SOURCE)
    assert (registry.exists, registry.names) == (False, ("management",))
    assert registry.kubeconfig("management", "/etc/kc") == "/etc/kc"  # the stack's output.kubeconfig
    with pytest.raises(
        RegistryError, match=f"without {SOURCE} the fleet has one, 'management'; declare 'mgmt-a'"
    ):
        registry.get("mgmt-a")


@pytest.mark.parametrize(
    ("document", "message"),
    [
        (
            {"managementClusters": [{"name": "mgmt-a", "regoin": "us-east-1"}]},
            "managementClusters[0].regoin: unknown key 'regoin'; did you mean 'region'?",
        ),
        ({"managementClusters": [{"name": "mgmt-a"}]}, "managementClusters[0].region: required but missing"),
        ({"managementClusters": [_entry("Mgmt_A")]}, "managementClusters[0].name: must be lowercase letters"),
        ({"managementClusters": []}, "managementClusters: List should have at least 1 item"),
        (
            {"managmentClusters": [_entry()]},
            "managmentClusters: unknown key 'managmentClusters'; did you mean 'managementClusters'?",
        ),
        (
            {"managementClusters": [_entry(), _entry()]},
            "managementClusters[1].name: 'mgmt-use1-a' is also managementClusters[0]'s",
        ),
        (
            {"managementClusters": [_entry(), _entry("mgmt-b", argocdCluster="mgmt-use1-a")]},
            "managementClusters[1].argocdCluster: 'mgmt-use1-a' is also managementClusters[0]'s",
        ),
        (
            {"managementClusters": [_entry(kubeconfig="/k"), _entry("mgmt-b", kubeconfig="/k")]},
            "managementClusters[1].kubeconfig: the same kubeconfig path is also managementClusters[0]'s",
        ),
        (
            {"managementClusters": [_entry(kubeconfig="kube/mgmt-a")]},
            "managementClusters[0].kubeconfig: 'kube/mgmt-a' is a relative path",
        ),
        (
            {"managementClusters": [_entry(hypershift={"supportedVersions": ["4.22.1"]})]},
            "managementClusters[0].hypershift.supportedVersions[0]: must be",
        ),
        (
            {"managementClusters": [_entry(kubernetesVersion="1.35")]},
            "managementClusters[0].kubernetesVersion: unknown key 'kubernetesVersion'",
        ),
        (
            {"managementClusters": [_entry()], "gitops": {"tool": "jenkins"}},
            "gitops.tool: Input should be 'flux', 'argocd' or 'both'",
        ),
        ([_entry()], "the top level is a list; the registry is a mapping with managementClusters"),
        ("", "the top level is empty"),
        ("managementClusters: [\n", f"{SOURCE}: line 2, column 1"),
    ],
)
def test_a_bad_registry_is_refused_with_file_field_and_fix(
    tmp_path: Path, document: Any, message: str
) -> None:
    error = _error(tmp_path, document)
    assert error.startswith(f"{SOURCE}: ") and message in error, error
    assert "\n" not in error


@pytest.mark.parametrize(
    "value",
    [
        f"apiVersion: v1\nusers:\n- user:\n    token: {TOKEN}\n",
        f'{{"apiVersion": "v1", "users": [{{"user": {{"token": "{TOKEN}"}}}}]}}',
        f"clusters: []\n# {TOKEN}",
    ],
)
def test_a_kubeconfigs_content_is_refused_and_never_echoed(tmp_path: Path, value: str) -> None:
    for document in (
        {"managementClusters": [_entry(kubeconfig=value)]},
        {"managementClusters": [_entry()], "gitops": {"kubeconfig": value}},
    ):
        error = _error(tmp_path, document)
        assert "kubeconfig: " in error and "not the path of one" in error and "save it to a file" in error
        assert TOKEN not in error


@pytest.mark.parametrize(
    "url", [f"https://user:{TOKEN}@git.example.com/fleet.git", f"https://{TOKEN}@git.example.com/fleet.git"]
)
def test_a_repository_url_with_credentials_is_refused_and_never_echoed(tmp_path: Path, url: str) -> None:
    error = _error(tmp_path, {"managementClusters": [_entry()], "gitops": {"repoURL": url}})
    assert (
        "gitops.repoURL: carries credentials" in error
        and "argocd.argoproj.io/secret-type: repository" in error
    )
    assert TOKEN not in error and TOKEN not in redact_url(url)
    assert redact_url(url) == "https://***@git.example.com/fleet.git"
    assert url_credentials_problem("ssh://git@git.example.com/fleet.git") is None  # a user, not a credential
    assert url_credentials_problem("https://git.example.com/fleet.git") is None


def test_a_registry_that_is_not_a_regular_file_is_refused(tmp_path: Path) -> None:
    (tmp_path / "nodefleet-fleet.yaml").mkdir()
    with pytest.raises(RegistryError, match="is a directory, not a file"):
        load_registry(tmp_path, SOURCE)


def _registry(tmp_path: Path, **extra: Any) -> Registry:
    entries = [_entry("mgmt-use2-a", region="us-east-2", **extra), _entry("mgmt-euw1-a", region="eu-west-1")]
    return load_registry(_write(tmp_path, {"managementClusters": entries}), SOURCE)


def test_a_stack_names_management_clusters_the_registry_declares(tmp_path: Path) -> None:
    registry = _registry(tmp_path)
    raw = stack_fleet("hosted")
    raw["clusters"][0]["managementCluster"] = "mgmt-use2-a"
    load_fleet_in(registry, raw, "hosted", PROJECT)
    raw["clusters"][0]["managementCluster"] = "mgmt-use2a"
    with pytest.raises(
        ConfigError, match=r"'mgmt-use2a' is not a management cluster of .*; did you mean 'mgmt-use2-a'"
    ):
        load_fleet_in(registry, raw, "hosted", PROJECT)
    del raw["clusters"][0][
        "managementCluster"
    ]  # the default name must be declared too, once there is a registry
    with pytest.raises(ConfigError, match="'management' is not a management cluster of"):
        load_fleet_in(registry, raw, "hosted", PROJECT)


def test_one_infra_id_in_two_stacks_is_refused(tmp_path: Path) -> None:
    registry = _registry(tmp_path)
    raw = stack_fleet("hosted")
    raw["clusters"][0]["managementCluster"] = "mgmt-use2-a"
    first = load_fleet_in(registry, raw, "east", PROJECT)
    other = copy.deepcopy(raw)
    other["clusters"][0]["name"] = "prod-west"
    second = load_fleet_in(registry, other, "west", PROJECT)
    (problem,) = fleet_problems(
        registry, [(first, "stacks/Pulumi.east.yaml"), (second, "stacks/Pulumi.west.yaml")]
    )
    assert problem.startswith(
        "stacks/Pulumi.west.yaml: nodefleet:fleet.clusters[0].infraId: 'prod-east-4kq8z' is also the infraId of "
        "stacks/Pulumi.east.yaml nodefleet:fleet.clusters[0]"
    )
    other["clusters"][0]["infraId"] = "prod-west-9zz1a"
    second = load_fleet_in(registry, other, "west", PROJECT)
    assert fleet_problems(registry, [(first, "a"), (second, "b")]) == []


def test_without_a_registry_two_apply_mode_stacks_may_not_reach_management_differently(
    tmp_path: Path,
) -> None:
    registry = load_registry(tmp_path, SOURCE)
    fleets = []
    for stack, kubeconfig, infra in (
        ("east", "/etc/a", "prod-east-4kq8z"),
        ("west", "/etc/b", "prod-west-9zz1a"),
    ):
        raw = stack_fleet("hosted")
        raw["output"] = {"mode": "apply", "kubeconfig": kubeconfig}
        # A cluster of its own in each stack: one HostedCluster in both would be a collision on the management
        # cluster as well (judged by the fleet: test_objects_on_one_management_cluster_collide_across_trees).
        raw["clusters"][0].update(name=f"prod-{stack}", infraId=infra, hostedKubeconfig="/etc/hosted")
        fleets.append((load_fleet_in(registry, raw, stack, PROJECT), f"stacks/Pulumi.{stack}.yaml"))
    (problem,) = fleet_problems(registry, fleets)
    assert problem.startswith(
        "stacks/Pulumi.west.yaml: nodefleet:fleet.output.kubeconfig: its hosted clusters are on"
    )
    assert f"Declare the fleet's management clusters in {SOURCE}" in problem


# --- messages ----------------------------------------------------------------------------------------------


def test_a_duplicate_entry_is_named_without_a_leading_dot(tmp_path: Path) -> None:
    error = _error(tmp_path, {"managementClusters": [_entry(), _entry("b"), _entry()]})
    assert error.startswith(f"{SOURCE}: managementClusters[2].name: 'mgmt-use1-a' is also"), error


def test_a_registry_too_large_is_named_as_a_registry(tmp_path: Path) -> None:
    (tmp_path / "nodefleet-fleet.yaml").write_bytes(b"#" * (17 * 1024 * 1024))
    with pytest.raises(RegistryError) as e:
        load_registry(tmp_path, SOURCE)
    assert "larger than any fleet registry nodefleet reads" in str(e.value)
    assert "stack file" not in str(e.value)


def _in_sydney(registry: Registry, name: str) -> str:
    raw = stack_fleet("hosted")
    raw["clusters"][0].update(managementCluster=name, region="ap-southeast-2", zone="ap-southeast-2a")
    with pytest.raises(ConfigError) as e:
        load_fleet_in(registry, raw, "hosted", PROJECT)
    return str(e.value)


def test_did_you_mean_suggests_a_management_cluster_of_the_clusters_region(tmp_path: Path) -> None:
    only_virginia = load_registry(_write(tmp_path, {"managementClusters": [_entry()]}), SOURCE)
    error = _in_sydney(only_virginia, "mgmt-apse2-a")
    assert "did you mean" not in error, error
    assert "none of them is in ap-southeast-2, the cluster's region" in error
    both = load_registry(
        _write(tmp_path, {"managementClusters": [_entry(), _entry("mgmt-apse2-b", region="ap-southeast-2")]}),
        SOURCE,
    )
    assert "did you mean 'mgmt-apse2-b'?" in _in_sydney(both, "mgmt-apse2-a")


# --- two names for one API server, destinations that collide (issue 39, item 3) ---------------------------


def _kubeconfig(server: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "c", "cluster": {"server": server}}],
        "users": [{"name": "u", "user": {"token": TOKEN}}],
        "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
        "current-context": "x",
    }


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ("https://api.mgmt-a.example.com:6443", "https://API.mgmt-a.example.com:6443/"),
        ("https://api.mgmt-a.example.com", "https://api.mgmt-a.example.com:443"),
    ],
)
def test_two_entries_whose_kubeconfigs_reach_one_server_are_refused_naming_both(
    tmp_path: Path, a: str, b: str
) -> None:
    registry = load_registry(
        _write(tmp_path, {"managementClusters": [_entry(), _entry("b"), _entry("mgmt-use1-c")]}), SOURCE
    )
    servers = {
        "mgmt-use1-a": kubeconfig_server(_kubeconfig(a)),
        "b": kubeconfig_server(_kubeconfig("https://api.b.example.com:6443")),
        "mgmt-use1-c": kubeconfig_server(_kubeconfig(b)),
    }
    (problem,) = server_alias_problems(registry, servers)
    assert problem.startswith(
        f"{SOURCE}: managementClusters[0] ('mgmt-use1-a') and managementClusters[2] ('mgmt-use1-c'): their "
        "kubeconfigs reach one API server"
    ), problem
    assert TOKEN not in problem
    assert kubeconfig_server({"current-context": "nowhere"}) is None
    assert kubeconfig_server("not a kubeconfig") is None


def test_one_kubeconfig_written_two_ways_is_one_kubeconfig(tmp_path: Path) -> None:
    home = str(Path("~").expanduser())
    error = _error(
        tmp_path,
        {
            "managementClusters": [
                _entry(kubeconfig="~/.kube/mgmt"),
                _entry("mgmt-use1-b", kubeconfig=f"{home}/.kube/../.kube/mgmt"),
            ]
        },
    )
    assert (
        "managementClusters[1].kubeconfig: the same kubeconfig path is also managementClusters[0]'s" in error
    )
    assert "starts with an environment variable" in _error(
        tmp_path, {"managementClusters": [_entry(kubeconfig="$HOME/.kube/mgmt")]}
    )


@pytest.mark.parametrize(
    "name", ["default/api-mgmt-use2-a-example-com:6443/kube:admin", "in-cluster", "Mgmt A (prod)"]
)
def test_an_argocd_cluster_name_is_what_argocd_accepts(tmp_path: Path, name: str) -> None:
    registry = load_registry(_write(tmp_path, {"managementClusters": [_entry(argocdCluster=name)]}), SOURCE)
    assert registry.get("mgmt-use1-a").argocd_cluster == name


@pytest.mark.parametrize(
    ("name", "says"),
    [
        (" mgmt-a", "begins or ends with a space"),
        ("mgmt\na", "has a line break or control character"),
        ("  ", "is empty"),
    ],
)
def test_an_argocd_cluster_name_that_breaks_the_wiring_is_refused_saying_why(
    tmp_path: Path, name: str, says: str
) -> None:
    error = _error(tmp_path, {"managementClusters": [_entry(argocdCluster=name)]})
    assert f"{SOURCE}: managementClusters[0].argocdCluster: " in error and says in error, error


def test_a_folder_sent_to_a_management_clusters_destination_is_refused(tmp_path: Path) -> None:
    """A registry argocdCluster (or Flux Secret) equal to a hosted cluster's own generated destination
    (<management cluster>-<namespace>-<cluster>): both folders would go to one cluster."""
    raw = stack_fleet("hosted")
    raw["clusters"][0]["managementCluster"] = "mgmt-use2-a"
    hosted = "mgmt-use2-a-clusters-prod-east"
    for extra, field in (
        ({"argocdCluster": hosted}, "argocdCluster"),
        ({"fluxKubeConfig": {"secretName": f"{hosted}-kubeconfig"}}, "fluxKubeConfig.secretName"),
    ):
        entries = [
            _entry("mgmt-use2-a", region="us-east-2"),
            _entry("mgmt-use2-b", region="us-east-2", **extra),
        ]
        registry = load_registry(_write(tmp_path, {"managementClusters": entries}), SOURCE)
        with pytest.raises(ConfigError) as e:
            load_fleet_in(registry, copy.deepcopy(raw), "hosted", PROJECT, source="stacks/Pulumi.hosted.yaml")
        assert (
            "stacks/Pulumi.hosted.yaml: nodefleet:fleet.clusters[0] (cluster 'prod-east'): its render folder "
            in (str(e.value))
        )
        assert f"which {SOURCE} gives management cluster 'mgmt-use2-b' too ({field})" in str(e.value)


def test_an_output_kubeconfig_the_registry_overrules_is_refused(tmp_path: Path) -> None:
    registry = _registry(tmp_path, kubeconfig="/etc/mgmt-use2-a")
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply", "kubeconfig": "/etc/other"}
    raw["clusters"][0].update(managementCluster="mgmt-use2-a", hostedKubeconfig="/etc/hosted")
    for ref in ("pullSecret", "sshKey"):
        raw["clusters"][0].get(ref, {}).pop("fromConfig", None)
    with pytest.raises(
        ConfigError, match=r"output.kubeconfig: is not the kubeconfig .* gives management cluster "
    ):
        load_fleet_in(registry, raw, "hosted", PROJECT)
    raw["output"]["kubeconfig"] = "/etc/mgmt-use2-a"  # the same one: said twice, not contradicted
    load_fleet_in(registry, raw, "hosted", PROJECT)


def test_a_hosted_kubeconfig_in_render_mode_is_refused(tmp_path: Path) -> None:
    raw = stack_fleet("hosted")
    raw["clusters"][0]["hostedKubeconfig"] = "/etc/hosted"
    with pytest.raises(
        ConfigError, match=r"clusters\[0\]\.hostedKubeconfig: is set but output.mode is render"
    ):
        load_fleet_in(load_registry(tmp_path, SOURCE), raw, "hosted", PROJECT)


def test_objects_on_one_management_cluster_collide_across_trees(tmp_path: Path) -> None:
    """Two stacks declaring NodePool clusters/infra differently on one management cluster, rendering into
    different trees: judged per management cluster, not per render folder."""
    registry = _registry(tmp_path)
    fleets = []
    for stack, infra, replicas in (("east", "prod-e-4kq8z", 2), ("west", "prod-w-9zz1a", 3)):
        raw = stack_fleet("hosted")
        raw["output"] = {"mode": "render", "directory": f"tree-{stack}/{{stack}}"}
        raw["clusters"][0].update(name="prod", infraId=infra, managementCluster="mgmt-use2-a")
        raw["clusters"][0]["nodePools"][0].update(objectName="infra", replicas=replicas)
        fleets.append((load_fleet_in(registry, raw, stack, PROJECT), f"stacks/Pulumi.{stack}.yaml"))
    problems = fleet_problems(registry, fleets)
    assert any(
        "NodePool clusters/infra" in p and "on management cluster 'mgmt-use2-a'" in p for p in problems
    )
    assert all("Namespace clusters " not in p for p in problems)  # shared by design
