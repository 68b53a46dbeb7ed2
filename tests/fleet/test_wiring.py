"""The GitOps wiring of a fleet can never cascade-delete capacity, gates its waves on what each kind's controller
reports, refuses bad options before it writes, and `check` of one stack predicts `fleet check` of its fleet.

On the example fleet of tests/fleet/regional (its registry: three management clusters in two regions)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockruntime.rendering import plan_render
from mockruntime.run import read_stack_config, run_program
from nodefleet.render.gitops import (
    ANNOTATION_ARGOCD_SYNC_OPTIONS,
    ANNOTATION_FLUX_PRUNE,
    deletion_protected,
)
from nodefleet.render.health import argocd_health_customizations, flux_health_check_exprs
from tests.conftest import nodefleet

FLEET = Path(__file__).resolve().parent / "regional"
TOKEN = "ghp_canary0123456789"


def _docs(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _gitops(*args: str) -> Any:
    return nodefleet("gitops", "--stacks-dir", str(FLEET), *args)


def test_the_wiring_deletes_nothing_when_an_application_or_kustomization_goes(tmp_path: Path) -> None:
    result = _gitops("--out", str(tmp_path))  # repoURL and branch from the registry's gitops section
    assert result.returncode == 0, result.stdout + result.stderr
    (appset,) = _docs(tmp_path / "argocd" / "applicationset.yaml")
    assert appset["spec"]["syncPolicy"] == {"preserveResourcesOnDeletion": True}
    template = appset["spec"]["template"]
    assert "finalizers" not in template["metadata"]  # with one, Argo CD would keep its own finalizer choice
    assert template["spec"]["syncPolicy"]["automated"]["prune"] is False
    assert template["spec"]["source"]["repoURL"] == "https://git.example.com/platform/fleet.git"
    kustomizations = [
        d for d in _docs(tmp_path / "flux" / "kustomizations.yaml") if d["kind"] == "Kustomization"
    ]
    assert len(kustomizations) == 5
    for k in kustomizations:
        spec = k["spec"]
        assert (spec["prune"], spec["deletionPolicy"], spec["retryInterval"], spec["wait"]) == (
            False,
            "Orphan",
            "1m",
            True,
        )
        assert spec["healthCheckExprs"] == flux_health_check_exprs()
        assert spec["kubeConfig"]["secretRef"]["key"] == "value"
    (cm,) = _docs(tmp_path / "argocd" / "argocd-cm.yaml")
    assert (cm["kind"], cm["metadata"]["name"], cm["data"]) == (
        "ConfigMap",
        "argocd-cm",
        argocd_health_customizations(),
    )


def test_every_object_whose_deletion_destroys_capacity_is_rendered_undeletable_by_the_tools() -> None:
    seen = set()
    for stack in ("east-a", "hosted"):
        if stack == "hosted":
            run = run_program("hosted")
        else:
            path = FLEET / f"Pulumi.{stack}.yaml"
            run = run_program(stack, read_stack_config(path), source=str(path))
        for f in plan_render(run, f"rendered/{stack}").files:
            manifest = yaml.safe_load(f.content)
            annotations = manifest["metadata"].get("annotations") or {}
            protected = deletion_protected(manifest) or manifest["kind"] == "Namespace"
            assert (
                annotations.get(ANNOTATION_ARGOCD_SYNC_OPTIONS) == "Delete=false,Prune=false"
            ) is protected, f.relpath
            assert (annotations.get(ANNOTATION_FLUX_PRUNE) == "disabled") is protected, f.relpath
            seen.add(manifest["kind"])
    assert {"HostedCluster", "NodePool", "OpenshiftEC2NodeClass", "Namespace"} <= seen
    dev = plan_render(run_program("dev"), "rendered/dev").files
    machine_sets = [yaml.safe_load(f.content) for f in dev if f.kind == "MachineSet"]
    assert machine_sets and all(
        m["metadata"]["annotations"][ANNOTATION_FLUX_PRUNE] == "disabled" for m in machine_sets
    )
    pools = [yaml.safe_load(f.content) for f in dev if f.kind == "MachineConfigPool"]
    assert pools and not any(ANNOTATION_FLUX_PRUNE in (p["metadata"].get("annotations") or {}) for p in pools)


def test_a_partial_wiring_never_replaces_the_fleets(tmp_path: Path) -> None:
    assert _gitops("--out", str(tmp_path)).returncode == 0
    fleet = {p: p.read_bytes() for p in tmp_path.rglob("*.yaml")}
    refused = _gitops("--stacks", "canary-east", "--out", str(tmp_path))
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "--stacks: wires 1 of the fleet's 4 render-mode stacks" in refused.stderr
    assert "Give the partial wiring a name of its own with --name" in refused.stderr
    assert {p: p.read_bytes() for p in tmp_path.rglob("*.yaml")} == fleet
    partial = _gitops("--stacks", "canary-east", "--name", "nodefleet-canary", "--out", str(tmp_path))
    assert partial.returncode == 0, partial.stdout + partial.stderr
    assert "a partial wiring 'nodefleet-canary'" in partial.stderr
    assert "not wired here: Team_B, east-a, east-b" in partial.stderr
    for path, content in fleet.items():
        assert path.read_bytes() == content  # the fleet's wiring, untouched
    (appset,) = _docs(tmp_path / "argocd" / "applicationset-nodefleet-canary.yaml")
    assert appset["metadata"]["name"] == "nodefleet-canary"
    assert [f["path"] for f in appset["spec"]["generators"][0]["git"]["files"]] == [
        "rendered/canary-east/edge/argocd-ignore-differences"
    ]
    flux = _docs(tmp_path / "flux" / "kustomizations-nodefleet-canary.yaml")
    assert [d["metadata"]["name"] for d in flux] == [
        "nodefleet-canary-rendered",
        "nodefleet-canary-east-edge",
    ]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--out", "{tmp}/repo/.git/wiring"), "lies inside .git/"),
        (("--out", "{tmp}/a-file"), "is a file, not a folder"),
        (("--out", "{tmp}/a-file/below"), "runs through a file where a folder must be"),
        (("--argocd-namespace", "Argo_CD"), "--argocd-namespace 'Argo_CD': not a Kubernetes namespace"),
        (("--flux-namespace", "flux.system"), "--flux-namespace 'flux.system': not a Kubernetes namespace"),
        (("--name", "Fleet"), "--name 'Fleet': not a Kubernetes namespace or object name"),
        (
            ("--repo-url", f"https://bot:{TOKEN}@git.example.com/fleet.git"),
            "--repo-url https://***@git.example.com",
        ),
        (("--revision=-x",), "--revision '-x': not a branch name"),
    ],
)
def test_bad_options_are_refused_before_anything_is_written(
    tmp_path: Path, args: tuple[str, ...], message: str
) -> None:
    (tmp_path / "repo" / ".git").mkdir(parents=True)
    (tmp_path / "a-file").write_text("mine\n")
    argv = [a.replace("{tmp}", str(tmp_path)) for a in args]
    if "--out" not in argv:
        argv += ["--out", str(tmp_path / "out")]
    result = _gitops(*argv)
    assert result.returncode == 2, result.stdout + result.stderr
    assert message in result.stderr and "Traceback" not in result.stderr
    assert TOKEN not in result.stdout + result.stderr
    assert (tmp_path / "a-file").read_text() == "mine\n"
    assert not (tmp_path / "out").exists() and list((tmp_path / "repo" / ".git").iterdir()) == []


def _fleet_copy(tmp_path: Path) -> Path:
    """The example fleet in a folder of its own, rendering into a tree of its own."""
    stacks = tmp_path / "stacks"
    shutil.copytree(FLEET, stacks)
    for path in stacks.glob("Pulumi.*.yaml"):
        path.write_text(
            path.read_text().replace(
                "      mode: render\n",
                f"      mode: render\n      directory: {tmp_path}/rendered/{{stack}}\n",
            )
        )
    return stacks


def test_a_misspelt_management_cluster_stops_gitops_and_fleet_check(tmp_path: Path) -> None:
    stacks = _fleet_copy(tmp_path)
    east_b = stacks / "Pulumi.east-b.yaml"
    east_b.write_text(
        east_b.read_text().replace("managementCluster: mgmt-use2-b", "managementCluster: mgmt-use2b")
    )
    env = {"NODEFLEET_RENDER_ROOT": str(tmp_path)}
    want = "nodefleet:fleet.clusters[0].managementCluster: 'mgmt-use2b' is not a management cluster of"
    wired = nodefleet("gitops", "--stacks-dir", str(stacks), "--out", str(tmp_path / "out"), env=env)
    assert wired.returncode == 2 and want in wired.stderr and "did you mean 'mgmt-use2-b'?" in wired.stderr
    checked = nodefleet("fleet", "check", "--stacks-dir", str(stacks), "--json", env=env, timeout=900)
    assert checked.returncode == 2
    (east_b_result,) = [s for s in json.loads(checked.stdout)["stacks"] if s["stack"] == "east-b"]
    assert east_b_result["exit"] == 2 and "did you mean 'mgmt-use2-b'?" in east_b_result["error"]
    one = nodefleet("check", "--config-file", str(east_b), env=env)
    assert one.returncode == 2 and want in one.stderr


_IDENTITY = re.compile(
    r"declares (\S+ \S+)(?: \([^)]*\))? on (management cluster '[^']+')|namespace '([^']+)'"
)


def _identities(stderr: str) -> set[str]:
    return {"".join(m) for m in _IDENTITY.findall(stderr)}


def test_check_of_one_stack_predicts_fleet_check_despite_an_older_render_of_a_neighbour(
    tmp_path: Path,
) -> None:
    """A neighbour's stack file is the source of truth: its older render in the tree is not what `check` judges,
    so a single stack finds the collisions `fleet check` finds, the shared control-plane namespace included."""
    stacks = _fleet_copy(tmp_path)
    env = {"NODEFLEET_RENDER_ROOT": str(tmp_path)}
    rendered = nodefleet("fleet", "render", "--stacks-dir", str(stacks), env=env, timeout=900)
    assert rendered.returncode == 0, rendered.stdout + rendered.stderr
    east_a = stacks / "Pulumi.east-a.yaml"
    east_a.write_text(east_a.read_text().replace("replicas: 2", "replicas: 3"))  # its render is older now
    east_b = stacks / "Pulumi.east-b.yaml"
    east_b.write_text(
        east_b.read_text().replace("managementCluster: mgmt-use2-b", "managementCluster: mgmt-use2-a")
    )
    fleet = nodefleet("fleet", "check", "--stacks-dir", str(stacks), env=env, timeout=900)
    one = nodefleet("check", "--config-file", str(east_b), env=env)
    assert fleet.returncode == one.returncode == 2, fleet.stderr + one.stderr
    assert "its last render" not in one.stderr
    found = _identities(one.stderr)
    assert found == _identities(fleet.stderr)
    assert "clusters-shop" in found and "HostedCluster clusters/shopmanagement cluster 'mgmt-use2-a'" in found


def test_check_counts_the_advisories_it_prints_and_notes_what_is_not_one() -> None:
    result = nodefleet("check", "--config-file", str(FLEET / "Pulumi.east-a.yaml"))
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    advisories = [ln for ln in lines if ln.startswith("  ADVISORY")]
    notes = [ln for ln in lines if ln.startswith("  NOTE")]
    assert any("shared-namespace" in n for n in notes) and any("  NOTE  secret  " in n for n in notes)
    assert "clusters/shop-pull-secret (pullSecret of shop)" in result.stdout
    assert lines[-1] == f"  0 mandatory, {len(advisories)} advisory, {len(notes)} notes"


_FAKE = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$NODEFLEET_TEST_LOG"
case "$*" in
  *"config view"*) echo "apiVersion: v1 # flattened" ;;
  *"config current-context"*) echo ctx ;;
  *"get secret"*) printf 'a2luZDogQ29uZmln' ;;
  *"--dry-run=client"*) echo "kind: Secret" ;;
  *apply*|*replace*) cat > /dev/null ;;
esac
"""


def test_the_secrets_script_creates_every_secret_the_wiring_reads(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    shutil.copytree(FLEET, stacks)
    hosted = (FLEET.parent.parent.parent / "stacks" / "Pulumi.hosted.yaml").read_text()
    (stacks / "Pulumi.hosted.yaml").write_text(
        hosted.replace(
            "        region: us-east-2\n",
            "        region: us-east-2\n        managementCluster: mgmt-use2-a\n",
            1,
        )
    )
    result = nodefleet("gitops", "--stacks-dir", str(stacks), "--out", str(tmp_path / "out"))
    assert result.returncode == 0, result.stdout + result.stderr
    script = tmp_path / "out" / "secrets.sh"
    assert TOKEN not in script.read_text() and "BEGIN" not in script.read_text()
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for tool in ("kubectl", "argocd"):
        (bin_dir / tool).write_text(_FAKE)
        (bin_dir / tool).chmod(0o755)
    log = tmp_path / "calls.log"
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "NODEFLEET_TEST_LOG": str(log),
        **{f"NODEFLEET_KUBECONFIG_MGMT_{n}": f"/etc/{n}" for n in ("USE2_A", "USE2_B", "EUW1_A")},
    }
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    calls = log.read_text().splitlines()
    created = {
        (m[1], m[2])
        for c in calls
        if (m := re.search(r"create secret generic (\S+) --from-file=([^=]+)=", c))
    }
    kustomizations = [
        d for d in _docs(tmp_path / "out" / "flux" / "kustomizations.yaml") if d["kind"] == "Kustomization"
    ]
    wanted = {
        (k["spec"]["kubeConfig"]["secretRef"]["name"], k["spec"]["kubeConfig"]["secretRef"]["key"])
        for k in kustomizations
    }
    assert created == wanted
    assert ("mgmt-use2-a-clusters-prod-east-kubeconfig", "kubeconfig") in created  # the hosted side
    assert "kubectl --kubeconfig /etc/USE2_A config view --raw --minify --flatten" in calls
    assert any(
        "-n clusters get secret prod-east-admin-kubeconfig -o jsonpath={.data.kubeconfig}" in c for c in calls
    )
    added = {
        m[1] for c in calls if (m := re.search(r"^argocd cluster add .* --name (\S+) --upsert --yes$", c))
    }
    # Every Argo CD destination the wiring sends a folder to, registered under that name.
    assert added == {"mgmt-use2-a", "mgmt-use2-b", "mgmt-euw1-a", "mgmt-use2-a-clusters-prod-east"}
    missing = subprocess.run(
        ["bash", str(script)],
        env={**env, "NODEFLEET_KUBECONFIG_MGMT_USE2_B": ""},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        missing.returncode != 0
        and "NODEFLEET_KUBECONFIG_MGMT_USE2_B: set it to the kubeconfig of mgmt-use2-b" in missing.stderr
    )


def test_check_names_the_secrets_nodefleet_does_not_write_in_either_mode() -> None:
    from nodefleet.render.objects import load_fleet
    from nodefleet.render.wiring import secrets_not_written
    from tests.conftest import PROJECT, stack_fleet

    raw = stack_fleet("hosted")
    assert secrets_not_written(load_fleet(raw, "hosted", PROJECT)) == {
        "management": [
            "clusters/prod-east-pull-secret (pullSecret of prod-east)",
            "clusters/prod-east-ssh-key (sshKey of prod-east)",
        ]
    }
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0].update(
        hostedKubeconfig="/etc/hosted", pullSecret={"name": "pull", "fromConfig": "pullSecret"}
    )
    assert secrets_not_written(load_fleet(raw, "hosted", PROJECT)) == {
        "management": [
            "clusters/prod-east-ssh-key (sshKey of prod-east)"
        ]  # the pull secret is written from the stack secret
    }


def test_gitops_counts_in_words_that_agree(tmp_path: Path) -> None:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    for name in ("Pulumi.canary-east.yaml", "nodefleet-fleet.yaml"):
        shutil.copy2(FLEET / name, stacks / name)
    wired = nodefleet("gitops", "--stacks-dir", str(stacks), "--out", str(tmp_path / "out"))
    assert wired.returncode == 0, wired.stderr
    assert re.search(r"nodefleet gitops: \d+ render folders? of 1 stack wired", wired.stderr), wired.stderr


_FAKE_ONE_DOWN = """#!/usr/bin/env bash
echo "$(basename "$0") $*" >> "$NODEFLEET_TEST_LOG"
case "$*" in
  *"config view"*) echo "apiVersion: v1 # flattened" ;;
  *"config current-context"*) echo ctx ;;
  *"get secret prod-east-admin-kubeconfig"*) exit 1 ;;
  *"-n flux-system get secret"*) exit 1 ;;
  *"get secret"*) printf 'a2luZDogQ29uZmln' ;;
  *"--dry-run=client"*) echo "kind: Secret" ;;
  *apply*|*replace*) cat > /dev/null ;;
esac
"""


def _two_hosted(tmp_path: Path, tool: str) -> tuple[Path, dict[str, str], Path]:
    """The fleet with two AutoNode hosted clusters on mgmt-use2-a (prod-east, prod-west), wired for ``tool``, and
    fake kubectl and argocd under which prod-east's control plane is not up yet."""
    stacks = tmp_path / "stacks"
    shutil.copytree(FLEET, stacks)
    hosted = (FLEET.parent.parent.parent / "stacks" / "Pulumi.hosted.yaml").read_text()
    hosted = hosted.replace(
        "        region: us-east-2\n",
        "        region: us-east-2\n        managementCluster: mgmt-use2-a\n",
        1,
    )
    (stacks / "Pulumi.hosted.yaml").write_text(hosted)
    (stacks / "Pulumi.hosted2.yaml").write_text(hosted.replace("prod-east", "prod-west"))
    result = nodefleet("gitops", "--stacks-dir", str(stacks), "--out", str(tmp_path / "out"), "--tool", tool)
    assert result.returncode == 0, result.stdout + result.stderr
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in ("kubectl", "argocd"):
        (bin_dir / name).write_text(_FAKE_ONE_DOWN)
        (bin_dir / name).chmod(0o755)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "NODEFLEET_TEST_LOG": str(tmp_path / "calls.log"),
        **{f"NODEFLEET_KUBECONFIG_MGMT_{n}": f"/etc/{n}" for n in ("USE2_A", "USE2_B", "EUW1_A")},
    }
    return tmp_path / "out" / "secrets.sh", env, tmp_path / "calls.log"


def test_the_secrets_script_keeps_one_copy_and_one_hosted_cluster_down_holds_back_no_other(
    tmp_path: Path,
) -> None:
    script, env, log = _two_hosted(tmp_path, "both")
    run = subprocess.run(["bash", str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert run.returncode == 1, run.stdout + run.stderr
    assert (
        "not registered yet: prod-east;" in run.stderr
        and "prod-west" not in run.stderr.split("not registered")[1]
    )
    calls = log.read_text().splitlines()
    # The cluster after the one that is not up is registered all the same.
    assert any("create secret generic mgmt-use2-a-clusters-prod-west-kubeconfig" in c for c in calls), calls
    assert any(re.search(r"argocd cluster add .* --name mgmt-use2-a-clusters-prod-west ", c) for c in calls)
    # Created, or replaced where it exists: never `kubectl apply`, whose annotation would copy the kubeconfig.
    assert not [c for c in calls if re.search(r"^kubectl .*\bapply\b", c)], calls
    assert "apply" not in script.read_text().replace("applied", "")


def test_the_secrets_script_for_argo_cd_speaks_of_argo_cd_only(tmp_path: Path) -> None:
    script, _, _ = _two_hosted(tmp_path, "argocd")
    header = [line for line in script.read_text().splitlines() if line.startswith("#")]
    assert not [line for line in header if "Flux" in line or "NODEFLEET_HUB_KUBECONFIG" in line], header
