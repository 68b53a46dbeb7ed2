"""The API server's rules in `check`, and `crds refresh|coverage`: what the config accepts but a CRD
rejects fails `check` with the CRD's message; the shipped CRDs are exactly what SOURCES.yaml records."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from mockruntime.run import stack_fleet
from nodefleet import kinds as k
from nodefleet.apiserver.store import CRD_DIR, SOURCES_FILE
from tests.conftest import PROJECT, copy_project, nodefleet, own_tree
from tests.crdobjects import rendered


def _nodefleet(*args: str) -> subprocess.CompletedProcess[str]:
    """The command line on a stack file of :func:`_stack`, whose GitOps tree is beside it."""
    stack = Path(args[args.index("--config-file") + 1]) if "--config-file" in args else None
    return nodefleet(*args, env={"NODEFLEET_RENDER_ROOT": str(stack.parent)} if stack else None)


def _stack(tmp_path: Path, name: str, fleet: dict[str, Any]) -> Path:
    own_tree(fleet, tmp_path)
    path = tmp_path / f"Pulumi.{name}.yaml"
    path.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    return path


def _autoscaling(fleet: dict[str, Any]) -> None:
    pool = fleet["clusters"][0]["nodePools"][0]
    pool.pop("replicas", None)
    pool["autoScaling"] = {"min": 5, "max": 1}


def _schedule(fleet: dict[str, Any]) -> None:
    fleet["clusters"][0]["autoNode"]["nodePools"][0]["disruption"]["driftWindows"] = [
        {"schedule": "whenever", "duration": "8h", "nodes": "0"}
    ]


def _label(fleet: dict[str, Any]) -> None:
    fleet["clusters"][0]["autoNode"]["nodePools"][0]["labels"] = {"karpenter.k8s.aws/team": "batch"}


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (_autoscaling, "spec.autoScaling: Invalid value: max must be equal or greater than min"),
        (_schedule, "schedule in body should match"),
        (
            _label,
            'spec.template.metadata.labels: Invalid value: label domain "karpenter.k8s.aws" is restricted',
        ),
    ],
    ids=["autoscaling-min-above-max", "drift-window-schedule", "label-key"],
)
def test_what_the_crd_rejects_fails_check(
    tmp_path: Path, change: Callable[[dict[str, Any]], None], expected: str
) -> None:
    fleet = stack_fleet("hosted")
    change(fleet)
    result = _nodefleet("check", "--config-file", str(_stack(tmp_path, "crd-bad", fleet)), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    found = [v for v in json.loads(result.stdout)["violations"] if v["policy"] == "crd-schema"]
    assert len(found) == 1 and expected in found[0]["message"], found
    assert found[0]["level"] == "mandatory"


def test_check_evaluates_transition_rules_against_a_checkpoint(tmp_path: Path) -> None:
    """A stack export where the HostedCluster has another infraID: changing it is refused."""
    fleet = stack_fleet("hosted")
    stack = _stack(tmp_path, "crd-moved", fleet)
    report = json.loads(_nodefleet("check", "--config-file", str(stack), "--json").stdout)
    assert report["violations"] == []
    # As `pulumi stack export` names it; the check's own run names stack and project differently.
    hc_urn = "urn:pulumi:prod::nodefleet::nodefleet:hosted:Cluster$kubernetes:hypershift.openshift.io/v1beta1:HostedCluster::prod-east-hostedcluster"
    previous = rendered(k.HOSTED_CLUSTER.token)  # the same cluster, as created with another infraID
    previous["spec"]["infraID"] = "prod-east-zzzzz"
    state = tmp_path / "state.json"
    state.write_text(
        json.dumps({"version": 3, "deployment": {"resources": [{"urn": hc_urn, "outputs": previous}]}})
    )
    config = tmp_path / "policy.json"
    config.write_text(json.dumps({"crd-schema": {"previousState": str(state)}}))
    result = _nodefleet("check", "--config-file", str(stack), "--policy-config", str(config), "--json")
    assert result.returncode == 1, result.stdout + result.stderr
    (v,) = json.loads(result.stdout)["violations"]
    assert v["resource"].endswith("HostedCluster::prod-east-hostedcluster")
    assert "spec.infraID: Invalid value: " in v["message"] and "infraID is immutable" in v["message"]


def test_check_refuses_the_objects_of_a_crd_refused_for_its_rules_cost(tmp_path: Path) -> None:
    """A NodePool CRD edited by hand with a rule the API server estimates over budget: `check` as the README
    shows it refuses the stack's NodePool with the API server's words, and says the fix is the CRD's."""
    project = copy_project(tmp_path / "project")
    (project / "stacks").mkdir()
    shutil.copy2(PROJECT / "stacks" / "Pulumi.hosted.yaml", project / "stacks")
    path = project / "nodefleet" / "crds" / "hypershift.openshift.io_nodepools.yaml"
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["note"] = {"type": "string"}
    rules = spec.setdefault("x-kubernetes-validations", [])
    rules.append(
        {"rule": "!has(self.note) || self.note.split(',').all(a, self.note.split(',').exists(b, a == b))"}
    )
    path.write_text(yaml.safe_dump(doc))
    result = nodefleet("check", "--stack", "hosted", cwd=project, env={"NODEFLEET_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        "the API server refuses this CRD (hypershift.openshift.io_nodepools.yaml, v1beta1), so no object of it "
        f"can be created: openAPIV3Schema.properties[spec].x-kubernetes-validations[{len(rules) - 1}].rule: "
        "Forbidden: estimated rule cost exceeds budget by factor of more than 100x (try simplifying the rule, "
        "or adding maxItems, maxProperties, and maxLength where arrays, maps, and strings are declared)"
    ) in " ".join(result.stdout.split()), result.stdout
    assert "`nodefleet crds refresh`" in result.stdout


def _edited_nodepool_crd(project: Path, note: dict[str, Any], rule: dict[str, Any]) -> int:
    """The project's NodePool CRD with a property ``note`` under ``spec`` and ``rule`` on it; the rule's index."""
    path = project / "nodefleet" / "crds" / "hypershift.openshift.io_nodepools.yaml"
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["note"] = note
    rules = spec.setdefault("x-kubernetes-validations", [])
    rules.append(rule)
    path.write_text(yaml.safe_dump(doc))
    return len(rules) - 1


def test_check_refuses_the_objects_of_a_crd_whose_rule_does_not_compile(tmp_path: Path) -> None:
    """A rule the API server does not compile (reverse() on a string: a strings extension newer than the
    server's) keeps the CRD from being installed: `check` refuses the stack's NodePool with cel-go's error,
    located as the API server shows it."""
    project = copy_project(tmp_path / "project")
    (project / "stacks").mkdir()
    shutil.copy2(PROJECT / "stacks" / "Pulumi.hosted.yaml", project / "stacks")
    index = _edited_nodepool_crd(
        project, {"type": "string", "maxLength": 16}, {"rule": "!has(self.note) || self.note.reverse() != ''"}
    )
    result = nodefleet("check", "--stack", "hosted", cwd=project, env={"NODEFLEET_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 1, result.stdout + result.stderr
    words = " ".join(result.stdout.split())
    assert (
        f"can be created: openAPIV3Schema.properties[spec].x-kubernetes-validations[{index}].rule: Invalid value: "
        '{"Rule":"!has(self.note) || self.note.reverse() != \'\'","Message":"","MessageExpression":"",'
        '"Reason":null,"FieldPath":"","OptionalOldSelf":null}: compilation failed: ERROR: <input>:1:37: found '
        "no matching overload for 'reverse' applied to 'string.()' | !has(self.note) || self.note.reverse() != "
        "'' | " + "." * 36 + "^"
    ) in words, result.stdout
    assert "`nodefleet crds refresh`" in result.stdout


def test_check_refuses_the_objects_of_a_crd_whose_default_its_rule_refuses(tmp_path: Path) -> None:
    """A default the node's own rule refuses: the API server checks every default when the CRD is created."""
    project = copy_project(tmp_path / "project")
    (project / "stacks").mkdir()
    shutil.copy2(PROJECT / "stacks" / "Pulumi.hosted.yaml", project / "stacks")
    path = project / "nodefleet" / "crds" / "hypershift.openshift.io_nodepools.yaml"
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["note"] = {
        "type": "string",
        "maxLength": 16,
        "default": "x",
        "x-kubernetes-validations": [{"rule": "self.startsWith('n')", "message": "note starts with n"}],
    }
    path.write_text(yaml.safe_dump(doc))
    result = nodefleet("check", "--stack", "hosted", cwd=project, env={"NODEFLEET_CACHE_DIR": str(tmp_path)})
    assert result.returncode == 1, result.stdout + result.stderr
    assert (
        'can be created: openAPIV3Schema.properties[spec].properties[note].default: Invalid value: "x": note '
        "starts with n"
    ) in " ".join(result.stdout.split()), result.stdout


def test_refresh_refuses_a_crd_whose_rule_does_not_compile_in_one_line(tmp_path: Path) -> None:
    upstream = _upstream_copy(tmp_path)
    path = upstream / "hypershift.openshift.io_nodepools.yaml"
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    rules = spec.setdefault("x-kubernetes-validations", [])
    rules.append({"rule": "self.nope == 1"})
    index = len(rules) - 1
    path.write_text(yaml.safe_dump(doc))
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _nodefleet("crds", "refresh", "--from", str(upstream), "--to", str(dest))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: {path}: the API server refuses this CRD: spec.validation.openAPIV3Schema"
        f".properties[spec].x-kubernetes-validations[{index}].rule: Invalid value: "
        '{"Rule":"self.nope == 1","Message":"","MessageExpression":"","Reason":null,"FieldPath":"",'
        "\"OptionalOldSelf\":null}: compilation failed: ERROR: <input>:1:5: undefined field 'nope'; nothing was "
        "changed"
    ]


def test_shipped_crds_are_the_recorded_upstream_files() -> None:
    doc = yaml.safe_load((CRD_DIR / SOURCES_FILE).read_text())
    recorded = doc["crds"]
    files = sorted(
        p.relative_to(CRD_DIR).as_posix() for p in CRD_DIR.rglob("*.yaml") if p.name != SOURCES_FILE
    )
    assert files == sorted(e["file"] for e in recorded)
    for entry in recorded:
        digest = hashlib.sha256((CRD_DIR / entry["file"]).read_bytes()).hexdigest()
        assert digest == entry["sha256"], (
            f"{entry['file']} differs from what SOURCES.yaml records: refresh it"
        )
        assert entry["sources"]
        for source in entry["sources"]:
            assert source["path"]
            assert (source.get("repository") and source.get("commit")) or (
                source.get("module") and source.get("version") and source.get("sum", "").startswith("h1:")
            ), source
    # No two shipped files have the same bytes: a file the sets share is shipped once.
    assert len({e["sha256"] for e in recorded}) == len(recorded)
    karpenter = doc["karpenter"]
    assert karpenter["default"] in {s["name"] for s in karpenter["sets"]}
    for ks in karpenter["sets"]:
        assert sorted(m["kind"] for m in ks["crds"]) == ["EC2NodeClass", "NodeClaim", "NodePool"], ks["name"]


def test_the_sets_ship_what_each_cluster_serves() -> None:
    """aws: the upstream AWS provider's releases; hypershift and openshift: HyperShift v0.1.82's copies, whose
    NodePool is byte for byte the AWS provider's v1.13.1 and whose EC2NodeClass is its own relaxed one."""
    from nodefleet.apiserver.store import load_index

    index = load_index()
    assert index.karpenter_minors("aws") == ["1.12", "1.13", "1.14", "1.15"]
    assert index.karpenter_minors("hypershift") == index.karpenter_minors("openshift") == ["1.13"]
    assert {(s.module, s.version) for s in index.karpenter_sets.values() if s.flavour != "aws"} == {
        ("github.com/openshift/hypershift", "v0.1.82")
    }
    pool = k.KARPENTER_NODE_POOL
    assert index.for_object(pool.api_version, pool.kind, "hypershift/1.13") is index.for_object(
        pool.api_version, pool.kind, "aws/1.13"
    )
    ec2 = k.EC2_NODE_CLASS
    assert index.for_object(ec2.api_version, ec2.kind, "hypershift/1.13") is not index.for_object(
        ec2.api_version, ec2.kind, "aws/1.13"
    )
    assert index.default_karpenter == "aws/1.15"


def _upstream_copy(tmp_path: Path) -> Path:
    """The shipped per-kind CRDs as an upstream directory with its SOURCES.md provenance table."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    rows = ["| file | upstream repository | path | commit |", "|---|---|---|---|"]
    for entry in yaml.safe_load((CRD_DIR / SOURCES_FILE).read_text())["crds"]:
        git = [s for s in entry["sources"] if s.get("repository")]
        if not git or "/" in entry["file"]:
            continue
        shutil.copy(CRD_DIR / entry["file"], upstream / entry["file"])
        rows.append(f"| {entry['file']} | {git[0]['repository']} | {git[0]['path']} | {git[0]['commit']} |")
    # A Karpenter CRD in the directory is not a per-kind CRD: ignored, its sets come from modules.
    shutil.copy(CRD_DIR / "karpenter" / "karpenter.sh_nodepools.aws-v1.15.1.yaml", upstream / "np.yaml")
    (upstream / "SOURCES.md").write_text("\n".join(rows) + "\n")
    return upstream


def test_refresh_from_the_same_upstream_files_changes_nothing(tmp_path: Path) -> None:
    upstream = _upstream_copy(tmp_path)
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _nodefleet("crds", "refresh", "--from", str(upstream), "--to", str(dest))
    assert result.returncode == 0, result.stderr
    assert "6 CRDs, 0 updated" in result.stdout
    assert "ignored   np.yaml" in result.stdout
    # Module copies recorded for an unchanged file stay; the Karpenter sets are untouched.
    assert (dest / SOURCES_FILE).read_text() == (CRD_DIR / SOURCES_FILE).read_text()
    fresh = tmp_path / "fresh"
    result = _nodefleet("crds", "refresh", "--from", str(upstream), "--to", str(fresh))
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in fresh.iterdir()) == sorted(p.name for p in CRD_DIR.iterdir() if p.is_file())
    assert "karpenter:" not in (fresh / SOURCES_FILE).read_text()


def test_refresh_refuses_an_incomplete_or_unrecorded_source(tmp_path: Path) -> None:
    upstream = _upstream_copy(tmp_path)
    partial = tmp_path / "partial"
    partial.mkdir()
    shutil.copy(upstream / "hypershift.openshift.io_hostedclusters.yaml", partial)
    result = _nodefleet("crds", "refresh", "--from", str(partial), "--to", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no CRD for MachineSet" in result.stderr and "nothing was changed" in result.stderr
    (upstream / "SOURCES.md").unlink()
    result = _nodefleet("crds", "refresh", "--from", str(upstream), "--to", str(tmp_path / "out"))
    assert result.returncode == 2
    assert "no upstream source recorded" in result.stderr
    assert not (tmp_path / "out").exists()


def test_refresh_refuses_a_crd_whose_rule_costs_more_than_the_api_server_allows(tmp_path: Path) -> None:
    """A rule the API server estimates over its per-expression budget (a nested loop over the parts of an
    unbounded string) keeps the CRD from being installed, so the refresh ships nothing."""
    upstream = _upstream_copy(tmp_path)
    path = upstream / "hypershift.openshift.io_nodepools.yaml"
    doc = yaml.safe_load(path.read_text())
    spec = doc["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    spec["properties"]["note"] = {"type": "string"}
    spec.setdefault("x-kubernetes-validations", []).append(
        {"rule": "!has(self.note) || self.note.split(',').all(a, self.note.split(',').exists(b, a == b))"}
    )
    path.write_text(yaml.safe_dump(doc))
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _nodefleet("crds", "refresh", "--from", str(upstream), "--to", str(dest))
    assert result.returncode == 2, result.stderr
    index = len(spec["x-kubernetes-validations"]) - 1
    assert result.stderr.strip().splitlines() == [
        f"error: {path}: the API server refuses this CRD: spec.validation.openAPIV3Schema"
        f".properties[spec].x-kubernetes-validations[{index}].rule: Forbidden: estimated rule cost exceeds "
        "budget by factor of more than 100x (try simplifying the rule, or adding maxItems, maxProperties, and "
        "maxLength where arrays, maps, and strings are declared); nothing was changed"
    ]
    assert (dest / SOURCES_FILE).read_text() == (CRD_DIR / SOURCES_FILE).read_text()


def test_coverage_lists_every_crd_and_no_missing_function() -> None:
    result = _nodefleet("crds", "coverage")
    assert result.returncode == 0, result.stderr
    assert "HostedCluster" in result.stdout and "MachineConfiguration" in result.stdout
    assert "  731      95      731      0" in result.stdout  # each shipped file once
    assert "[aws/1.13 hypershift/1.13 openshift/1.13]" in result.stdout  # one NodePool file, three sets
    assert "judged by aws/1.15" in result.stdout
    assert "missing: none" in result.stdout


# --- crds refresh --karpenter: a set from a Go module, through the go command ------------------------------

AWS = "github.com/aws/karpenter-provider-aws"


def _module_proxy(tmp_path: Path, version: str, files: dict[str, bytes]) -> dict[str, str]:
    """A Go module proxy on disk (GOPROXY=file://…) serving ``AWS@version`` with ``files``, and the go
    command's environment for it: no network, its own module cache, no checksum database (off)."""
    import zipfile

    proxy = tmp_path / "proxy" / AWS / "@v"
    proxy.mkdir(parents=True)
    gomod = f"module {AWS}\n\ngo 1.22\n".encode()
    (proxy / "list").write_text(f"{version}\n")
    (proxy / f"{version}.info").write_text(json.dumps({"Version": version, "Time": "2026-11-01T00:00:00Z"}))
    (proxy / f"{version}.mod").write_bytes(gomod)
    with zipfile.ZipFile(proxy / f"{version}.zip", "w") as z:
        for name, data in {"go.mod": gomod, **files}.items():
            z.writestr(f"{AWS}@{version}/{name}", data)
    return {
        "GOPROXY": f"file://{tmp_path / 'proxy'}",
        "GOSUMDB": "off",
        "GOMODCACHE": str(tmp_path / "modcache"),
        "GOFLAGS": "-modcacherw",
        "GOCACHE": str(tmp_path / "gocache"),
        "GOPATH": str(tmp_path / "gopath"),
    }


def _crd_files(*sets_files: str) -> dict[str, bytes]:
    return {
        f"pkg/apis/crds/{Path(f).name.split('.aws-')[0].split('.hypershift-')[0]}.yaml": (
            CRD_DIR / f
        ).read_bytes()
        for f in sets_files
    }


def _refresh_karpenter(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return nodefleet("crds", "refresh", *args, env=env)


def test_refresh_karpenter_adds_a_set_from_a_module_sharing_identical_files(tmp_path: Path) -> None:
    from nodefleet.apiserver.store import load_index, module_zip_hash

    # A new release whose NodePool changed and whose NodeClaim and EC2NodeClass did not.
    nodepool = (CRD_DIR / "karpenter/karpenter.sh_nodepools.aws-v1.15.1.yaml").read_text()
    files = _crd_files(
        "karpenter/karpenter.sh_nodeclaims.aws-v1.15.1.yaml",
        "karpenter/karpenter.k8s.aws_ec2nodeclasses.aws-v1.15.1.yaml",
    )
    files["pkg/apis/crds/karpenter.sh_nodepools.yaml"] = nodepool.replace(
        "- Unhealthy\n", "- Unhealthy\n                                - Expired\n"
    ).encode()
    files["pkg/apis/crds/README.md"] = b"not a CRD\n"
    env = _module_proxy(tmp_path, "v1.16.0", files)
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _refresh_karpenter(
        env, "--karpenter", "aws/1.16", "--module", f"{AWS}@v1.16.0", "--default", "--to", str(dest)
    )
    assert result.returncode == 0, result.stderr
    assert "added   karpenter/karpenter.sh_nodepools.aws-v1.16.0.yaml" in result.stdout
    assert "shared  karpenter/karpenter.sh_nodeclaims.aws-v1.15.1.yaml" in result.stdout
    assert "NOT checked against a checksum database" in result.stdout  # GOSUMDB=off
    index = load_index(dest)
    ks = index.karpenter_sets["aws/1.16"]
    zip_file = tmp_path / "modcache" / "cache" / "download" / AWS / "@v" / "v1.16.0.zip"
    assert ks.sum == module_zip_hash(zip_file) and not ks.verified
    assert index.default_karpenter == "aws/1.16"
    crd = index.for_object("karpenter.sh/v1", "NodePool")
    assert crd is not None and "Expired" in json.dumps(dict(crd.schema))
    recorded = yaml.safe_load((dest / SOURCES_FILE).read_text())
    shared = next(e for e in recorded["crds"] if e["file"].endswith("nodeclaims.aws-v1.15.1.yaml"))
    assert {(s["module"], s["version"]) for s in shared["sources"]} == {(AWS, "v1.15.1"), (AWS, "v1.16.0")}
    # The default set cannot be removed until another one is the default.
    result = _refresh_karpenter(env, "--remove", "aws/1.16", "--to", str(dest))
    assert result.returncode == 2 and "it is the default set" in result.stderr


def test_refresh_karpenter_refuses_a_module_without_the_crds(tmp_path: Path) -> None:
    env = _module_proxy(tmp_path, "v1.16.0", _crd_files("karpenter/karpenter.sh_nodepools.aws-v1.15.1.yaml"))
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    before = (dest / SOURCES_FILE).read_text()
    result = _refresh_karpenter(
        env, "--karpenter", "aws/1.16", "--module", f"{AWS}@v1.16.0", "--to", str(dest)
    )
    assert result.returncode == 2
    assert "no NodeClaim, EC2NodeClass CRD in pkg/apis/crds/; nothing was changed" in result.stderr
    assert (dest / SOURCES_FILE).read_text() == before
    result = _refresh_karpenter(
        env, "--karpenter", "aws/1.17", "--module", f"{AWS}@v1.17.0", "--to", str(dest)
    )
    assert result.returncode == 2 and "go mod download" in result.stderr and "v1.17.0" in result.stderr


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (
            ["--karpenter", "upstream/1.16", "--module", f"{AWS}@v1.16.0"],
            "flavour one of aws, hypershift, openshift",
        ),
        (["--karpenter", "aws/1.16"], "--karpenter needs --module MODULE@VERSION"),
        (["--karpenter", "aws/1.16", "--module", AWS], "give module@version"),
        (["--karpenter", "aws/1.16", "--module", "example.com/other@v1.0.0"], "pass --path-in-module"),
        (["--remove", "aws/1.9"], "no such Karpenter set (shipped: aws/1.12"),
        (["--from", "x", "--module", f"{AWS}@v1.16.0"], "--module does not go with --from"),
    ],
)
def test_refresh_karpenter_input_errors(tmp_path: Path, args: list[str], expected: str) -> None:
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _nodefleet("crds", "refresh", *args, "--to", str(dest))
    assert result.returncode == 2, result.stdout
    assert expected in result.stderr
    assert "Traceback" not in result.stderr


def test_remove_karpenter_drops_files_no_other_set_uses(tmp_path: Path) -> None:
    dest = tmp_path / "crds"
    shutil.copytree(CRD_DIR, dest)
    result = _nodefleet("crds", "refresh", "--remove", "aws/1.14", "--to", str(dest))
    assert result.returncode == 0, result.stderr
    assert not (dest / "karpenter/karpenter.sh_nodepools.aws-v1.14.3.yaml").exists()
    # aws/1.14's NodeClaim and EC2NodeClass are aws/1.13's files, which stay.
    assert (dest / "karpenter/karpenter.k8s.aws_ec2nodeclasses.aws-v1.13.1.yaml").exists()
    from nodefleet.apiserver.store import load_index

    assert "aws/1.14" not in load_index(dest).karpenter_sets


@pytest.mark.parametrize(
    ("env", "skipped"),
    [
        ({}, False),
        ({"GOSUMDB": "off"}, True),
        ({"GONOSUMDB": "github.com/aws"}, True),
        ({"GONOSUMDB": "github.com/aws/karpenter-provider-aws"}, True),
        ({"GOPRIVATE": "*.corp.example.com,github.com/*/karpenter-*"}, True),
        ({"GONOSUMDB": "github.com/awslabs,github.com/aws/karpenter"}, False),
        ({"GOPRIVATE": "github.com/aws/karpenter-provider-aws/sub"}, False),
    ],
)
def test_a_set_is_recorded_verified_only_when_the_checksum_database_was_consulted(
    env: dict[str, str], skipped: bool
) -> None:
    """As the go command matches GONOSUMDB/GOPRIVATE (module.MatchPrefixPatterns): globs over leading path
    elements."""
    from nodefleet.apiserver.store import _sumdb_skips

    assert _sumdb_skips(AWS, env) is skipped


def test_coverage_counts_the_rules_a_run_exercised(tmp_path: Path) -> None:
    """`crds coverage --exercised`: per CRD, the rules a logged run evaluated, passing and failing."""
    log = tmp_path / "log"
    result = nodefleet("check", "--stack", "hosted", env={"NODEFLEET_RULE_LOG": str(log)})
    assert result.returncode == 0, result.stderr
    assert list(log.glob("rules-*.jsonl")), "check evaluated rules but wrote no log"
    shown = _nodefleet("crds", "coverage", "--exercised", str(log))
    assert shown.returncode == 0, shown.stderr
    rows = {
        line.split()[0]: [int(n) for n in line.split()[1:6]]
        for line in shown.stdout.splitlines()
        if line.split() and line.split()[0].endswith(".yaml")
    }
    rules, exercised, _, _, _ = rows["karpenter.hypershift.openshift.io_openshiftec2nodeclasses.yaml"]
    assert 0 < exercised <= rules
    assert rows["machine.openshift.io_machinesets.yaml"][1] == 0  # not in the hosted stack
    assert "not exercised:" in shown.stdout
    missing = _nodefleet("crds", "coverage", "--exercised", str(tmp_path / "none"))
    assert missing.returncode == 2 and "NODEFLEET_RULE_LOG" in missing.stderr
