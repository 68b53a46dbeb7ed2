"""Bad input on the surfaces around the single stack, run as a user runs them (tests/badrun.py): files that are
not files, encodings, bombs and output options of `check`, `render`, `forecast`, `report` and `fleet`, each
bounded in time, with every write seen. What `gitops` and `fleet upgrade` must refuse is in
tests/test_bad_input_fleet_upgrade_and_gitops.py.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path

import pytest

from tests.badrun import CANARY, git, no_secret, refused, run, scratch
from tests.conftest import PROJECT

CANARY_STACK = "stacks/Pulumi.canary-east.yaml"
#: ``fleet check`` of the canary stack alone.
FLEET_CHECK = ["fleet", "check", "--stacks-dir", "stacks", "--stacks", "canary-east"]


@pytest.fixture
def base(tmp_path: Path) -> Path:
    scratch(tmp_path)
    return tmp_path


def _merge_bomb() -> str:
    text = "config:\n  a0: &a0 {x: 1, y: 2}\n"
    for i in range(1, 13):
        text += f"  a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 9)}]}}\n"
    return text + "  nodefleet:fleet: *a12\n"


# --- files that are not files, and files that are not text -------------------------------------------------


def test_a_stack_file_that_links_to_the_environment_of_a_process(base: Path) -> None:
    (base / "repo" / "stacks" / "Pulumi.environ.yaml").symlink_to("/proc/self/environ")
    result = run(base, "check", "--config-file", "stacks/Pulumi.environ.yaml")
    refused(result, "stacks/Pulumi.environ.yaml: is a file of the kernel's /proc")


@pytest.mark.parametrize(
    ("codec", "says"),
    [("utf-16", "is UTF-16 (little-endian) text"), ("utf-32-be", "is UTF-32 (big-endian) text")],
)
def test_a_stack_file_in_another_encoding_is_named(base: Path, codec: str, says: str) -> None:
    path = base / "repo" / CANARY_STACK
    path.write_bytes(path.read_text().encode(codec))
    for command in (["check"], ["render", "--out", str(base / "out")], ["forecast"]):
        refused(run(base, *command, "--config-file", CANARY_STACK), f"{CANARY_STACK}: {says}")


def test_a_merge_key_bomb_through_fleet_check_ends(base: Path) -> None:
    (base / "repo" / "stacks" / "Pulumi.bomb.yaml").write_text(_merge_bomb())
    result = run(base, "fleet", "check", "--stacks-dir", "stacks", "--stacks", "bomb,canary-east", "--json")
    assert not result.hung and "Traceback" not in result.stdout + result.stderr, result.where()
    assert result.code == 2, result.where()
    assert "stacks/Pulumi.bomb.yaml: line " in result.stdout and "anchors and aliases expand" in result.stdout
    assert '"exit": 0' in result.stdout  # the other stack, beside it, was checked


def test_a_stack_file_that_is_a_pipe_through_fleet(base: Path) -> None:
    os.mkfifo(base / "repo" / "stacks" / "Pulumi.pipe.yaml")
    result = run(base, "fleet", "check", "--stacks-dir", "stacks", "--stacks", "pipe", "--json")
    assert not result.hung and "Traceback" not in result.stdout + result.stderr, result.where()
    assert result.code == 2 and "named pipe" in result.stdout, result.where()
    refused(
        run(base, "fleet", "matrix", "--stacks-dir", "stacks"), "stacks/Pulumi.pipe.yaml: is a named pipe"
    )


def test_changed_files_that_are_a_pipe_or_utf16(base: Path) -> None:
    os.mkfifo(base / "changed.txt")
    refused(
        run(base, "fleet", "matrix", "--stacks-dir", "stacks", "--changed-files", str(base / "changed.txt")),
        "is a named pipe",
    )
    result = run(
        base, "fleet", "matrix", "--stacks-dir", "stacks", "--changed-files", "-", stdin="stacks/x\n" * 1
    )
    assert result.code == 0, result.where()
    utf16 = base / "changed16.txt"
    utf16.write_bytes("stacks/Pulumi.east-a.yaml\n".encode("utf-16"))
    refused(
        run(base, "fleet", "matrix", "--stacks-dir", "stacks", "--changed-files", str(utf16)),
        "is UTF-16 (little-endian) text",
    )


def test_a_state_export_or_policy_config_that_is_not_a_file(base: Path) -> None:
    os.mkfifo(base / "state.json")
    refused(
        run(base, "forecast", "--config-file", CANARY_STACK, "--state", str(base / "state.json")),
        "named pipe",
    )
    refused(
        run(base, "check", "--config-file", CANARY_STACK, "--policy-config", "/proc/self/environ"),
        "--policy-config /proc/self/environ: is a file of the kernel's /proc",
    )


# --- output options ----------------------------------------------------------------------------------------


def test_output_options_inside_git_or_onto_a_file_are_refused(base: Path) -> None:
    repo = base / "repo"
    (repo / "notes.md").write_text("")
    refused(run(base, "render", "--config-file", CANARY_STACK, "--out", ".git/out"), "lies inside .git/")
    refused(
        run(base, "report", "--base", "HEAD", "--out", ".git/report.md"), "--out .git/report.md: lies inside"
    )
    refused(run(base, "report", "--base", "HEAD", "--json-out", "stacks"), "--json-out stacks: is a folder")
    refused(
        run(base, "fleet", "report", "--stacks-dir", "stacks", "--base", "HEAD", "--out-dir", "notes.md"),
        "--out-dir notes.md: is a file, not a folder",
    )
    refused(
        run(base, "fleet", "render", "--stacks-dir", "stacks", "--out", ".git/hooks"),
        "--out .git/hooks: lies inside .git/",
    )


# --- secrets never reach output or files ------------------------------------------------------------------


def _with_canaries(base: Path) -> dict[str, str]:
    """A stack secret as `pulumi config set --secret` leaves it, a kubeconfig and credentials in the
    environment, each holding the canary; the environment to run with."""
    path = base / "repo" / CANARY_STACK
    path.write_text(path.read_text() + f"  nodefleet:mcsCaBundle:\n    secure: v1:{CANARY}\n")
    git(base / "repo", "commit", "-qam", "a stack secret")
    kubeconfig = base / "kubeconfig"
    kubeconfig.write_text(f"apiVersion: v1\nkind: Config\nusers:\n- name: u\n  user:\n    token: {CANARY}\n")
    return {
        "AWS_SECRET_ACCESS_KEY": CANARY,
        "GITHUB_TOKEN": CANARY,
        "PULUMI_CONFIG_PASSPHRASE": CANARY,
        "KUBECONFIG": str(kubeconfig),
    }


@pytest.mark.parametrize(
    "argv",
    [
        ["check", "--config-file", CANARY_STACK],
        ["check", "--config-file", CANARY_STACK, "--json"],
        ["render", "--config-file", CANARY_STACK, "--out", "rendered"],
        ["forecast", "--config-file", CANARY_STACK, "--json"],
        [*FLEET_CHECK, "--json"],
        ["fleet", "render", "--stacks-dir", "stacks", "--stacks", "canary-east", "--out", "tree"],
        ["fleet", "forecast", "--stacks-dir", "stacks", "--stacks", "canary-east"],
        ["fleet", "matrix", "--stacks-dir", "stacks", "--pretty"],
        [*FLEET_CHECK, "--health-command", "env; exit 1"],
    ],
    ids=[
        "check",
        "check-json",
        "render",
        "forecast",
        "fleet-check",
        "fleet-render",
        "fleet-forecast",
        "matrix",
        "health-command",
    ],
)
def test_secrets_reach_no_output_and_no_file(base: Path, argv: list[str]) -> None:
    env = _with_canaries(base)
    result = run(base, *argv, env=env)
    assert result.code in (0, 1) and "Traceback" not in result.stdout + result.stderr, result.where()
    no_secret(result, base)


# --- health commands ---------------------------------------------------------------------------------------


def test_a_health_command_is_bounded_in_time_and_output(base: Path) -> None:
    fleet = [*FLEET_CHECK, "--json", "--timeout", "60"]
    slow = run(base, *fleet, "--health-command", "sleep 600 & sleep 600", bound=300)
    assert slow.code == 1 and "Traceback" not in slow.stdout + slow.stderr, slow.where()
    assert "--health-command did not finish within 60s (--timeout)" in slow.stdout, slow.where()
    command = f"printf 'caf\\351 Bearer {CANARY} '; head -c 3000000 /dev/zero | tr '\\0' x; exit 1"
    loud = run(base, *fleet, "--health-command", command)
    assert loud.code == 1 and "Traceback" not in loud.stdout + loud.stderr, loud.where()
    assert len(loud.stdout) + len(loud.stderr) < 20_000, "the whole output was printed"
    assert "--health-command exited 1 after wave" in loud.stdout
    no_secret(loud, base)


# --- the registry: two names for one API server, destinations that collide ------------------------------------


def _registry_with(base: Path, entry: str, lines: str) -> None:
    """The scratch registry with ``lines`` added under management cluster ``entry``, committed."""
    path = base / "repo" / "stacks" / "nodefleet-fleet.yaml"
    text = path.read_text()
    head = f"  - name: {entry}\n"
    assert head in text
    path.write_text(text.replace(head, head + lines, 1))
    git(base / "repo", "commit", "-qam", "registry")


def _kubeconfig(path: Path, server: str) -> None:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        f"clusters:\n- name: c\n  cluster:\n    server: {server}\n"
        f"users:\n- name: u\n  user:\n    token: {CANARY}\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
    )


def test_two_registry_entries_for_one_api_server_stop_fleet_upgrade_naming_both(base: Path) -> None:
    """Two kubeconfigs, spelt differently, reach one API server: refused before any cluster is reached (exit 2)
    instead of 'cannot reach the management cluster'."""
    _kubeconfig(base / "a.kubeconfig", "https://api.mgmt.example.com:6443")
    _kubeconfig(base / "b.kubeconfig", "https://API.mgmt.example.com:6443/")
    path = base / "repo" / CANARY_STACK
    path.write_text(path.read_text().replace("      mode: render\n", "      mode: apply\n"))
    _registry_with(base, "mgmt-use2-a", f"    kubeconfig: {base / 'a.kubeconfig'}\n")
    _registry_with(base, "mgmt-use2-b", f"    kubeconfig: {base / 'b.kubeconfig'}\n")
    result = run(
        base, "fleet", "upgrade", "--stacks-dir", "stacks", "--stacks", "canary-east", "--release", "4.22.4",
        "--dry-run",
    )  # fmt: skip
    refused(
        result,
        "managementClusters[0] ('mgmt-use2-a') and managementClusters[1] ('mgmt-use2-b'): their kubeconfigs reach "
        "one API server, https://api.mgmt.example.com:6443",
    )
    no_secret(result, base)


def test_one_kubeconfig_under_two_names_is_refused(base: Path) -> None:
    _registry_with(base, "mgmt-use2-a", "    kubeconfig: ~/.kube/mgmt\n")
    _registry_with(base, "mgmt-use2-b", f"    kubeconfig: {Path('~').expanduser()}/.kube/./mgmt\n")
    refused(
        run(base, *FLEET_CHECK),
        "managementClusters[1].kubeconfig: the same kubeconfig path is also managementClusters[0]'s",
    )


def test_a_hosted_clusters_destination_taken_by_a_management_cluster_is_refused(base: Path) -> None:
    """The registry sends mgmt-use2-b's folders to the Argo CD cluster the wiring generates for the AutoNode
    hosted cluster prod-east's own API server (<management cluster>-<namespace>-<cluster>)."""
    hosted = (PROJECT / "stacks" / "Pulumi.hosted.yaml").read_text()
    hosted = hosted.replace(
        "        namespace: clusters\n",
        "        namespace: clusters\n        managementCluster: mgmt-use2-a\n",
    )
    (base / "repo" / "stacks" / "Pulumi.hosted.yaml").write_text(hosted)
    _registry_with(base, "mgmt-use2-b", "    argocdCluster: mgmt-use2-a-clusters-prod-east\n")
    says = (
        "goes to its own API server through the Argo CD cluster 'mgmt-use2-a-clusters-prod-east', which "
        "stacks/nodefleet-fleet.yaml gives management cluster 'mgmt-use2-b' too (argocdCluster)"
    )
    refused(
        run(base, "gitops", "--repo-url", "https://git.example.com/f.git", "--stacks-dir", "stacks"), says
    )
    checked = run(base, "fleet", "check", "--stacks-dir", "stacks", "--stacks", "hosted", "--json")
    # fleet check names the files absolute (its stacks run from the project): the rest of the line is the same.
    assert checked.code == 2 and says.split(", which ")[0] in checked.stdout, checked.where()
    assert "gives management cluster 'mgmt-use2-b' too (argocdCluster)" in checked.stdout


def test_an_argocd_cluster_named_as_argocd_names_it_is_accepted(base: Path) -> None:
    name = "default/api-mgmt-use2-a-example-com:6443/kube:admin"
    _registry_with(base, "mgmt-use2-a", f"    argocdCluster: '{name}'\n")
    result = run(
        base,
        "gitops",
        "--repo-url",
        "https://git.example.com/f.git",
        "--stacks-dir",
        "stacks",
        "--out",
        "wiring",
    )
    assert result.code == 0, result.where()
    assert f"--name {shlex.quote(name)} --upsert" in (base / "repo" / "wiring" / "secrets.sh").read_text()
