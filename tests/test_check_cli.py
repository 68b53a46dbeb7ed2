"""`python -m nodefleet check|render`: exit codes, output a user can paste, and what it refuses."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from tests.conftest import PROJECT, nodefleet, own_tree, stack_fleet
from tests.shipped import SHIPPED_STACKS

BAD = PROJECT / "tests" / "stacks"


def _nodefleet(*args: str, catalog_root: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m nodefleet`` in the project; ``catalog_root`` is passed as ``NODEFLEET_CATALOG_ROOTS``: the
    directory outside the project that a stack's catalog may come from."""
    return nodefleet(*args, env={"NODEFLEET_CATALOG_ROOTS": str(catalog_root)} if catalog_root else None)


@pytest.mark.parametrize("stack", ["dev", "rhel10", "hosted", "karpenter"])
def test_example_stacks_pass_with_zero_violations(stack: str) -> None:
    result = _nodefleet("check", "--stack", stack, "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["resources"] > 0
    assert report["violations"] == []


def test_known_bad_stacks_exit_1_with_policy_and_resource() -> None:
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.stale-boot-images.yaml"), "--json")
    assert result.returncode == 1
    (v,) = json.loads(result.stdout)["violations"]
    assert (v["policy"], v["level"]) == ("boot-image-skew", "mandatory")
    assert v["resource"].endswith("::legacy-p2n8v-worker-us-east-1a")
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.skewed-hosted.yaml"), "--json")
    assert result.returncode == 1
    found = {
        (v["policy"], v["resource"].rsplit("::", 1)[-1]) for v in json.loads(result.stdout)["violations"]
    }
    assert found == {
        ("version-skew", "skewed-nodeclass-ahead"),
        ("version-skew", "skewed-nodeclass-behind"),
        ("version-skew", "skewed-nodepool-old"),
        ("drift-budget", "skewed-karpenter-ahead"),
    }


def test_text_report_names_policy_resource_and_fix() -> None:
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.stale-boot-images.yaml"))
    assert result.returncode == 1
    assert "MANDATORY boot-image-skew  legacy-p2n8v-worker-us-east-1a" in result.stdout
    assert "1 mandatory, 0 advisory" in result.stdout


def test_policy_config_can_relax_a_policy(tmp_path: Path) -> None:
    cfg = tmp_path / "policy-config.json"
    cfg.write_text(json.dumps({"boot-image-skew": "advisory"}))
    result = _nodefleet(
        "check",
        "--config-file",
        str(BAD / "Pulumi.stale-boot-images.yaml"),
        "--policy-config",
        str(cfg),
        "--json",
    )
    assert result.returncode == 0
    assert [v["level"] for v in json.loads(result.stdout)["violations"]] == ["advisory"]


def test_invalid_configuration_exits_2_with_the_message_on_stderr(tmp_path: Path) -> None:
    bad = tmp_path / "Pulumi.typo.yaml"
    bad.write_text(
        (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text().replace("instanceType:", "instanceTyp:", 1)
    )
    result = _nodefleet("check", "--config-file", str(bad))
    assert result.returncode == 2
    assert result.stdout == ""
    # The message names the file that was read, not stacks/Pulumi.typo.yaml.
    assert result.stderr.strip() == (
        f"error: {bad}: nodefleet:fleet.clusters[0].machineSets[0].instanceTyp: unknown key "
        "'instanceTyp'; did you mean 'instanceType'?"
    )


def test_unknown_stack_exits_2() -> None:
    result = _nodefleet("check", "--stack", "prod")
    assert result.returncode == 2
    assert "stack 'prod' has no file stacks/Pulumi.prod.yaml; stacks: " in result.stderr
    # Every stack in stacks/ is listed: the shipped examples, and any of the user's own.
    listed = result.stderr.split("stacks: ", 1)[1].strip().split(", ")
    assert set(SHIPPED_STACKS) <= set(listed) and listed == sorted(listed)


def test_render_writes_the_provider_layout_and_no_secret(tmp_path: Path) -> None:
    result = _nodefleet("render", "--stack", "hosted", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    files = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.yaml"))
    assert (
        "prod-east/1-manifest/hypershift.openshift.io_v1beta1-hostedcluster-clusters-prod-east.yaml" in files
    )
    assert "prod-east-hosted/1-manifest/karpenter.sh_v1-nodepool-default-spot.yaml" in files
    assert not any("secret" in f for f in files)


def test_help_lists_both_commands_and_exit_codes() -> None:
    result = _nodefleet("--help")
    assert result.returncode == 0
    assert "check" in result.stdout and "render" in result.stdout and "2 invalid input" in result.stdout


# --- real boot image data: known-bad stacks of each class ------------------------------------------------------


@pytest.mark.parametrize(
    ("stack", "exit_code", "expected"),
    [
        # Below 4.22 the MCO does not enforce the floor: advice, exit 0.
        ("floor-before-4-22", 0, {("boot-image-advice", "advisory", "old-5tq2w-worker-us-east-1a")}),
        ("rhel9-image-rhel10-pool", 0, {("boot-image-advice", "advisory", "rebase-2hv6d-r10-us-east-1a")}),
        # The same boot image on a 4.22 cluster is a mandatory violation.
        ("stale-boot-images", 1, {("boot-image-skew", "mandatory", "legacy-p2n8v-worker-us-east-1a")}),
    ],
)
def test_boot_image_known_bad_stacks(stack: str, exit_code: int, expected: set[tuple[str, str, str]]) -> None:
    result = _nodefleet("check", "--config-file", str(BAD / f"Pulumi.{stack}.yaml"), "--json")
    assert result.returncode == exit_code, result.stderr
    found = {
        (v["policy"], v["level"], v["resource"].rsplit("::", 1)[-1])
        for v in json.loads(result.stdout)["violations"]
    }
    assert found == expected


@pytest.mark.parametrize(
    ("stack", "field", "fragment"),
    [
        (
            "rhel10-image-rhel9-pool",
            "machineSets[0].stream",
            "a RHEL 10 node in a RHEL 9 pool is not a supported state",
        ),
        ("rhel10-stream-as-default", "machineSets[0]", "OS stream 'rhel-9' is not in boot image catalog"),
        ("catalog-directory", "catalog", "Boot image catalog 'catalogs' is a directory, not a file"),
    ],
)
def test_boot_image_known_bad_configs_exit_2(stack: str, field: str, fragment: str) -> None:
    path = BAD / f"Pulumi.{stack}.yaml"
    result = _nodefleet("check", "--config-file", str(path))
    assert result.returncode == 2 and result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {path}: nodefleet:fleet.clusters[0].{field}: ")
    assert fragment in line


def test_advice_in_check_has_the_domains_wording() -> None:
    """check reports what the policy reads off the objects, in the words of nodefleet.bootimages.skew.stream_finding."""
    from nodefleet.bootimages.catalog import load_catalog
    from nodefleet.bootimages.skew import stream_finding
    from nodefleet.bootimages.versions import parse_ocp

    image = load_catalog(PROJECT / "catalogs/coreos-bootimages-5.0.yaml").resolve(
        "us-east-1", "x86_64", "rhel-9"
    )
    finding = stream_finding(image.release, parse_ocp("5.0.0-ec.2"), "rhel-10", "r10")
    assert finding is not None
    result = _nodefleet("check", "--config-file", str(BAD / "Pulumi.rhel9-image-rhel10-pool.yaml"), "--json")
    (v,) = json.loads(result.stdout)["violations"]
    assert v["message"] == f"MachineSet 'rebase-2hv6d-r10-us-east-1a': {finding.message}"


# --- the catalog the program used judges the MachineSet, wherever it is ------------------------------------------


def _catalog_elsewhere(directory: Path) -> Path:
    """The real 5.0 ConfigMap with its rhel-9 us-east-1 x86_64 AMI replaced by one no project catalog lists."""
    configmap = yaml.safe_load((PROJECT / "catalogs" / "coreos-bootimages-5.0.yaml").read_text())
    data = configmap["data"]
    stream = json.loads(data["stream"])
    streams = json.loads(data["streams"])
    for document in (stream, streams["rhel-9"]):
        document["architectures"]["x86_64"]["images"]["aws"]["regions"]["us-east-1"]["image"] = AMI_ELSEWHERE
    data["stream"], data["streams"] = json.dumps(stream), json.dumps(streams)
    path = directory / "exports" / "prod-east" / "coreos-bootimages.yaml"
    path.parent.mkdir(parents=True)
    path.write_text(yaml.safe_dump(configmap))
    return path


AMI_ELSEWHERE = "ami-0a1b2c3d4e5f60718"


def test_machine_sets_are_judged_by_the_catalog_the_stack_declared(tmp_path: Path) -> None:
    catalog = _catalog_elsewhere(tmp_path)
    stack = tmp_path / "Pulumi.prod-east.yaml"
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["catalog"] = str(catalog)
    tree = own_tree(fleet, tmp_path)
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    # The policy pack runs in its own process; its working directory must not matter.
    result = nodefleet(
        "check",
        "--config-file",
        str(stack),
        "--json",
        cwd=tmp_path,
        env={"PYTHONPATH": str(PROJECT), "NODEFLEET_CATALOG_ROOTS": str(tmp_path), **tree},
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert json.loads(result.stdout)["violations"] == []


def test_the_catalog_annotation_is_relative_to_the_project(tmp_path: Path) -> None:
    """Rendered manifests go to Git: the annotation names the catalog without this machine's absolute path."""
    catalog = _catalog_elsewhere(tmp_path)
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["catalog"] = str(catalog)
    stack = tmp_path / "Pulumi.prod-east.yaml"
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    out = tmp_path / "rendered"
    result = _nodefleet("render", "--config-file", str(stack), "--out", str(out), catalog_root=tmp_path)
    assert result.returncode == 0, result.stderr
    (manifest,) = [p for p in out.rglob("*machineset*worker-us-east-1a*.yaml")]
    annotation = yaml.safe_load(manifest.read_text())["metadata"]["annotations"][
        "nodefleet.io/boot-image-catalog"
    ]
    assert not annotation.startswith("/") and annotation.endswith("exports/prod-east/coreos-bootimages.yaml")
    assert (PROJECT / annotation).resolve() == catalog.resolve()


# --- catalog files that are not catalogs: exit 2, one line naming the stack file read, the field and the fix --


def _stack_with_catalog(directory: Path, catalog: Path) -> Path:
    fleet = stack_fleet("dev")
    fleet["clusters"][0]["catalog"] = str(catalog)
    stack = directory / "Pulumi.elsewhere.yaml"
    stack.write_text(yaml.safe_dump({"config": {"nodefleet:fleet": fleet}}))
    return stack


@pytest.mark.parametrize(
    ("name", "content", "fragment"),
    [
        ("rhcos.json.gz", gzip.compress(b'{"stream": "rhcos-4.16"}', mtime=0), "is gzip-compressed"),
        ("rhcos.img", bytes(range(256)), "is not text nodefleet reads (line 1, column 1: a NUL byte"),
        ("empty.yaml", b"", "is empty"),
        (
            "truncated.json",
            (PROJECT / "catalogs" / "rhcos-4.16.json").read_bytes()[:20000],
            "is not valid JSON (",
        ),
        (
            "credentials",
            b'aws_secret_access_key: "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY\n',
            "neither valid JSON nor valid YAML",
        ),
    ],
)
def test_unreadable_catalogs_exit_2_with_one_line(
    tmp_path: Path, name: str, content: bytes, fragment: str
) -> None:
    catalog = tmp_path / name
    catalog.write_bytes(content)
    stack = _stack_with_catalog(tmp_path, catalog)
    result = _nodefleet("check", "--config-file", str(stack), catalog_root=tmp_path)
    assert result.returncode == 2, result.stdout + result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith(
        f"error: {stack}: nodefleet:fleet.clusters[0].catalog: Boot image catalog '{catalog}' "
    )
    assert fragment in line
    assert "Traceback" not in result.stderr and "wJalrXUtnFEMI" not in result.stderr


# --- version-skew profiles: the same rule in check as at preview (policy pack config) ---------------------------


@pytest.mark.parametrize(("profile", "violations"), [(None, 1), ("rosa", 1), ("hypershift", 0)])
def test_version_skew_profile_from_policy_config(
    tmp_path: Path, profile: str | None, violations: int
) -> None:
    args = ["check", "--config-file", str(BAD / "Pulumi.hosted-three-behind.yaml"), "--json"]
    if profile is not None:
        cfg = tmp_path / "policy-config.json"
        cfg.write_text(json.dumps({"version-skew": {"profile": profile}}))
        args += ["--policy-config", str(cfg)]
    result = _nodefleet(*args)
    found = json.loads(result.stdout)["violations"]
    assert result.returncode == (1 if violations else 0)
    assert len(found) == violations
    if found:
        assert found[0]["policy"] == "version-skew" and f"profile {profile or 'ocp'}" in found[0]["message"]


def test_render_refuses_a_stack_with_mandatory_violations_and_writes_nothing(tmp_path: Path) -> None:
    """What `pulumi up --policy-pack policies` would not apply is not written for a GitOps tool either."""
    out = tmp_path / "out"
    result = _nodefleet(
        "render",
        "--config-file",
        str(PROJECT / "tests/stacks/Pulumi.stale-boot-images.yaml"),
        "--out",
        str(out),
    )
    assert result.returncode == 1, result.stderr
    first, *rest = result.stdout.splitlines()
    assert first.startswith("nodefleet render: stack 'stale-boot-images' (")
    assert "mandatory violations; nothing written" in first
    assert any(line.startswith("  MANDATORY boot-image-skew") for line in rest)
    assert not out.exists()


def test_a_reader_that_goes_away_is_not_an_internal_error() -> None:
    """`check | head -1`: the pipe closes under the command, which leaves quietly as SIGPIPE would."""
    code, err = _with_stdout_closed("check", "--stack", "hosted")
    assert code == 141
    assert err == ""


def _with_stdout_closed(*args: str) -> tuple[int, str]:
    """The exit code and stderr of a command whose reader closed its end of stdout at once."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "nodefleet", *args],
        cwd=PROJECT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.close()
    err = proc.stderr.read().decode()
    return proc.wait(timeout=120), err


def test_a_reader_that_goes_away_during_the_json_error_is_not_a_traceback(tmp_path: Path) -> None:
    """`check --json | jq` on an invalid stack, with jq gone: the error lines, then a quiet SIGPIPE exit."""
    stack = tmp_path / "Pulumi.bad.yaml"
    stack.write_text(
        (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text().replace("m6i.xlarge", "m6i.xxlarge")
    )
    code, err = _with_stdout_closed("check", "--config-file", str(stack), "--json")
    assert code == 141
    assert "Traceback" not in err
    assert err.startswith(
        f"error: {stack}: nodefleet:fleet.clusters[0].machineSets[0].instanceType: 'm6i.xxlarge'"
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            "  nodefleet:fleet:\n",
            "  nodefleet:flet:\n",
            "config.nodefleet:flet: did you mean nodefleet:fleet? nodefleet reads",
        ),
        (
            "  nodefleet:fleet:\n",
            "  fleet:\n",
            "config.fleet: did you mean nodefleet:fleet?",
        ),
        (
            "  nodefleet:fleet:\n",
            "  Nodefleet:Fleet:\n",
            "config.Nodefleet:Fleet: did you mean nodefleet:fleet?",
        ),
        ("config:\n", "confg:\n", "confg: not a key of a stack file; did you mean 'config'?"),
        ("config:\n", "Config:\n", "Config: not a key of a stack file; did you mean 'config'?"),
    ],
)
def test_a_misspelled_config_key_is_named_not_reported_missing(
    tmp_path: Path, old: str, new: str, expected: str
) -> None:
    """'no nodefleet:fleet value; add one under config:' told a user whose file has one, misspelled, to add it."""
    text = (PROJECT / "stacks" / "Pulumi.dev.yaml").read_text()
    assert old in text
    stack = tmp_path / "Pulumi.mine.yaml"
    stack.write_text(text.replace(old, new, 1))
    for command in (["check"], ["forecast"], ["render", "--out", str(tmp_path / "out")]):
        result = nodefleet(*command, "--config-file", str(stack))
        assert result.returncode == 2, result.stdout + result.stderr
        (line,) = result.stderr.splitlines()
        assert line.startswith(f"error: {stack}: ") and expected in line
    assert not (tmp_path / "out").exists()


def test_the_header_says_which_api_server_version_judges_the_objects(tmp_path: Path) -> None:
    """dev is an OpenShift 5.0 cluster: its objects are judged as Kubernetes 1.36 without any setting, and the
    header says so; a kubernetesVersion in the policy config overrides it, and the header says that instead."""
    result = _nodefleet("check", "--stack", "dev")
    assert result.returncode == 0, result.stdout + result.stderr
    line = result.stdout.splitlines()[1]
    assert line.startswith("  Kubernetes (crd-schema): 1.36 for "), result.stdout
    assert "in a cluster on OpenShift 5.0.0-ec.2, Kubernetes 1.36" in line
    assert "1.35" not in line
    cfg = tmp_path / "policy-config.json"
    cfg.write_text(json.dumps({"crd-schema": {"kubernetesVersion": "1.35"}}))
    result = _nodefleet("check", "--stack", "dev", "--policy-config", str(cfg), "--json")
    versions = json.loads(result.stdout)["kubernetesVersions"]
    assert [(v["version"], v["basis"]) for v in versions] == [
        ("1.35", "the policy config's kubernetesVersion")
    ]
