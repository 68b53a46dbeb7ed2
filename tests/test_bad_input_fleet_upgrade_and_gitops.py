"""Bad input `fleet upgrade` and `gitops` must refuse, and secrets they must never print or store.

These are the cases the code of cli/fleet_upgrade.py, cli/upgrade.py, cli/upgrade_gates.py, cli/gitops.py and
nodefleet/render/wiring.py guards; each test fails until that code refuses its input with one line naming the
file or option and the fix (exit 2), within a bound, writing nothing, and keeps every canary secret out of its
output and files. Run as a user runs the commands, in a scratch repository of the example fleet
(tests/badrun.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from tests.badrun import CANARY, Run, git, no_secret, refused, run, scratch
from tests.test_bad_stacks import FIX

REPO_URL = "https://git.example.com/platform/fleet.git"
STATE = "stacks/nodefleet-upgrade.json"
#: The gate after the canary wave's control plane does not pass: a real run stops there, its state written.
STOP_AFTER_CANARY = 'test "$NODEFLEET_WAVE" != canary'


@pytest.fixture
def base(tmp_path: Path) -> Path:
    scratch(tmp_path)
    return tmp_path


def _upgrade(base: Path, *extra: str, release: str = "4.22.4", bound: float = 600) -> Run:
    """``fleet upgrade`` of the scratch fleet; a real run renders into the scratch repository, never the
    project's own ``rendered/``."""
    out = [] if "--dry-run" in extra else ["--out", "rendered"]
    return run(
        base, "fleet", "upgrade", "--stacks-dir", "stacks", "--release", release, *extra, *out, bound=bound
    )


def _gitops(base: Path, *extra: str, repo_url: str = REPO_URL) -> Run:
    return run(base, "gitops", "--repo-url", repo_url, "--stacks-dir", "stacks", *extra)


def _fix_after(line: str, word: str) -> None:
    assert FIX.search(line.split(word, 1)[1]), f"no fix after {word!r}: {line}"


# --- the state file --------------------------------------------------------------------------------------


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "real"])
def test_a_state_file_that_is_a_pipe(base: Path, dry_run: bool) -> None:
    os.mkfifo(base / "repo" / STATE)
    result = _upgrade(base, *(["--dry-run"] if dry_run else []), bound=120)
    refused(result, "nodefleet-upgrade.json")
    assert "named pipe" in result.stderr


@pytest.mark.parametrize(
    "content",
    [
        b"[]",
        b'{"release": 5, "waves": {}}',
        '{"release": "4.22.4", "waves": [{"wave": "canary", "phase": "caf\xe9"}]}'.encode("latin-1"),
        b'{"release": "4.22.4", "waves": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
        b'{"release": "4.22.4", "waves": [{"wave": "canary", "stacks": {"canary-east": ["edge"]}, "phase": "exploded"}]}',
        b'{"release": "4.22.4", "waves": [{"wave": "main", "stacks": {"someone-else": ["x"]}, "phase": "done"}]}',
    ],
    ids=["list", "wrong-types", "latin-1", "deep", "unknown-phase", "another-fleet"],
)
def test_a_state_file_that_does_not_fit_is_refused_with_what_to_do(base: Path, content: bytes) -> None:
    (base / "repo" / STATE).write_bytes(content)
    for extra in (["--dry-run"], []):
        result = _upgrade(base, *extra)
        refused(result, "nodefleet-upgrade.json")
        # nodefleet's own state (valid or not): --restart or the file to remove; a file that is not a state file at
        # all (not JSON, a list, not UTF-8): another path, never --restart, which would write over it.
        assert (
            "--restart" in result.stderr
            or "remove" in result.stderr
            or "give --state a file of its own" in result.stderr
        ), result.where()


def test_a_state_file_marked_done_by_hand_is_refused(base: Path) -> None:
    first = _upgrade(base, "--health-command", STOP_AFTER_CANARY)
    assert first.code == 1, first.where()
    state = json.loads((base / "repo" / STATE).read_text())
    for wave in state["waves"]:
        if wave["wave"] == "canary":
            wave["phase"] = "done"  # the canary's nodes were never upgraded
    (base / "repo" / STATE).write_text(json.dumps(state))
    second = _upgrade(base, "--health-command", "true", "--confirmed")
    refused(second, "nodefleet-upgrade.json")


@pytest.mark.parametrize("place", [".git/state.json", "stacks"], ids=["inside-git", "a-folder"])
def test_a_state_option_where_no_file_may_go(base: Path, place: str) -> None:
    refused(_upgrade(base, "--state", place), f"--state {place}")


# --- the release ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("release", "says"),
    [("4.22.4-multi", "4.22.4"), ("4.22.04", "4.22.4"), ("5.1.0", "5.0"), ("4.22", "x.y.z")],
    ids=["image-tag", "leading-zero", "skips-a-minor", "no-patch"],
)
def test_a_release_the_fleet_cannot_move_to(base: Path, release: str, says: str) -> None:
    result = _upgrade(base, "--dry-run", release=release)
    refused(result, "--release")
    assert says in result.stderr and "'x.y' (4.16)" not in result.stderr, result.where()


def test_a_downgrade_says_what_to_do(base: Path) -> None:
    result = _upgrade(base, "--dry-run", release="4.22.2")
    refused(result, "downgrade")
    _fix_after(result.stderr, "downgrade")


def _share_pools(text: str) -> str:
    """The stack file with its second hosted cluster's ``nodePools`` an alias of the first's."""
    lines = text.splitlines(keepends=True)
    starts = [i for i, line in enumerate(lines) if line == "        nodePools:\n"]
    assert len(starts) == 2, "the example changed: east-a has two hosted clusters with node pools"
    end = next(
        (i for i in range(starts[1] + 1, len(lines)) if not lines[i].startswith("          ")), len(lines)
    )
    lines[starts[0]] = "        nodePools: &pools\n"
    return "".join([*lines[: starts[1]], "        nodePools: *pools\n", *lines[end:]])


def test_clusters_sharing_pools_through_an_alias_plan_as_check_reads_them(base: Path) -> None:
    path = base / "repo" / "stacks" / "Pulumi.east-a.yaml"
    path.write_text(_share_pools(path.read_text()))
    git(base / "repo", "commit", "-qam", "shared pools")
    assert run(base, "check", "--config-file", "stacks/Pulumi.east-a.yaml").code == 0
    result = _upgrade(base, "--dry-run")
    assert result.code == 0 and "still has nodes held" not in result.stderr, result.where()


# --- health commands ------------------------------------------------------------------------------------


def test_a_health_command_runs_within_the_timeout(base: Path) -> None:
    result = _upgrade(base, "--health-command", "sleep 600", "--timeout", "5", bound=300)
    assert not result.hung and "Traceback" not in result.stderr, result.where()
    assert result.code == 1 and "did not finish within 5s (--timeout)" in result.stdout, result.where()


def test_health_output_that_is_not_utf8_or_huge_is_bounded(base: Path) -> None:
    command = "printf 'caf\\351 '; head -c 3000000 /dev/zero | tr '\\0' x; exit 1"
    result = _upgrade(base, "--health-command", command)
    assert not result.hung and "Traceback" not in result.stdout + result.stderr, result.where()
    assert result.code == 1, result.where()
    assert len(result.stdout) + len(result.stderr) < 200_000, "the whole output was printed"
    assert (base / "repo" / STATE).stat().st_size < 200_000, "the whole output was stored"


# --- secrets --------------------------------------------------------------------------------------------


def _apply_mode_with_kubeconfig(base: Path, kubeconfig: str) -> None:
    path = base / "repo" / "stacks" / "Pulumi.canary-east.yaml"
    text = path.read_text().replace("      mode: render\n", "      mode: apply\n")
    text = text.replace(
        "        managementCluster: mgmt-use2-a\n",
        f"        managementCluster:\n          name: mgmt-use2-a\n          kubeconfig: '{kubeconfig}'\n",
    )
    path.write_text(text)
    git(base / "repo", "commit", "-qam", "apply mode")


@pytest.mark.parametrize("inline", [True, False], ids=["inline", "by-path"])
def test_a_kubeconfig_is_never_printed_or_stored(base: Path, inline: bool) -> None:
    content = (
        '{"apiVersion": "v1", "kind": "Config", "clusters": [{"name": "c", "cluster": {"server": '
        '"https://127.0.0.1:1"}}], "users": [{"name": "u", "user": {"token": "' + CANARY + '"}}], '
        '"contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}], "current-context": "x"}'
    )
    if not inline:
        (base / "kubeconfig").write_text(content)
    _apply_mode_with_kubeconfig(base, content if inline else str(base / "kubeconfig"))
    for extra in (["--dry-run"], [], ["--confirmed"]):
        result = _upgrade(base, *extra, "--stacks", "canary-east")
        assert "Traceback" not in result.stdout + result.stderr, result.where()
        no_secret(result, base)


def test_health_output_with_a_token_is_redacted(base: Path) -> None:
    command = f"echo 'Authorization: Bearer {CANARY}'; echo https://ci:{CANARY}@git.example.com >&2; exit 1"
    result = _upgrade(base, "--health-command", command)
    assert result.code == 1, result.where()
    no_secret(result, base)


#: Made-up AWS credentials (none is or was valid) a health script on AWS may print: its environment, the STS
#: JSON of an assumed role, a key id the line's length limit cuts in two.
_AWS_SECRET = "q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6Jf0Gb5Yc8Ue2Ia4O/"
_AWS_SESSION = (
    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDq7fakeSessionTokenBody0123456789abcdefXYZ=="
)
_AWS_KEY_ID = "AKIAZ7Q3M5X2R4T6V8WB"


def test_health_output_with_aws_credentials_is_redacted(base: Path) -> None:
    command = (
        f"echo 'AWS_SECRET_ACCESS_KEY={_AWS_SECRET} aws_access_key_id={_AWS_KEY_ID} "
        f'{{"SessionToken": "{_AWS_SESSION}"}}\' >&2; '
        f"echo '{'x' * 290} {_AWS_KEY_ID}' >&2; exit 1"
    )
    result = _upgrade(base, "--health-command", command)
    assert result.code == 1, result.where()
    for secret in (_AWS_SECRET, _AWS_SESSION, _AWS_KEY_ID, _AWS_KEY_ID[:9]):
        no_secret(result, base, canary=secret)


def test_a_token_in_the_repository_url_is_not_written(base: Path) -> None:
    result = _gitops(
        base, "--out", "wiring", repo_url=f"https://ci:{CANARY}@git.example.com/platform/fleet.git"
    )
    assert result.code in (0, 2) and "Traceback" not in result.stderr, result.where()
    no_secret(result, base)
    if result.code == 0:
        text = (base / "repo" / "wiring" / "argocd" / "applicationset.yaml").read_text()
        assert "https://git.example.com/platform/fleet.git" in text


@pytest.mark.parametrize("value", ["-1", "0", "nan", "inf", "ten"])
def test_a_timeout_that_is_not_a_number_of_seconds(base: Path, value: str) -> None:
    """--timeout bounds every stack, health command, push and wait: a value that bounds nothing (or cannot be
    compared) is refused before anything runs."""
    result = _upgrade(base, f"--timeout={value}", "--dry-run")
    assert not result.hung and result.code == 2, result.where()
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr, result.where()
    assert f"argument --timeout: '{value}' is not a number of seconds above 0" in result.stderr, (
        result.where()
    )
    assert result.changed == [], result.where()


# --- gitops options ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("url", "form"),
    [
        ("git@github.com:org/fleet.git", "ssh://git@github.com/org/fleet.git"),
        ("git.example.com:platform/fleet.git", "ssh://git.example.com/platform/fleet.git"),
        ("/srv/git/fleet.git", "https://host/org/repo.git or ssh://git@host/org/repo.git"),
    ],
)
def test_a_repository_url_flux_cannot_take(base: Path, url: str, form: str) -> None:
    """Flux's GitRepository takes http(s):// and ssh:// URLs only: another form is refused with the one to
    write, for the default tool (both) and for flux; Argo CD alone takes it."""
    for tool in ([], ["--tool", "flux"]):
        result = _gitops(base, "--out", "wiring", *tool, repo_url=url)
        refused(result, f"--repo-url {url}: Flux's GitRepository takes only")
        assert f"write it as {form}" in result.stderr, result.where()
    result = _gitops(base, "--out", "wiring", "--tool", "argocd", repo_url=url)
    assert result.code == 0, result.where()


def test_gitops_out_inside_git_or_onto_a_file(base: Path) -> None:
    (base / "repo" / "notes.md").write_text("")
    refused(_gitops(base, "--out", ".git/wiring"), "--out .git/wiring")
    result = _gitops(base, "--out", "notes.md")
    refused(result, "--out notes.md")
    assert "NotADirectoryError" not in result.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("--argocd-namespace", "Argo_CD"), ("--flux-namespace", "flux system"), ("--argocd-project", "-bad-")],
)
def test_gitops_names_that_are_not_kubernetes_names(base: Path, option: str, value: str) -> None:
    result = _gitops(base, "--out", "wiring", f"{option}={value}")
    refused(result, option)
    _fix_after(result.stderr, option)


def test_colliding_application_names_name_the_stack_files(base: Path) -> None:
    stacks = base / "repo" / "stacks"
    east_a = (stacks / "Pulumi.east-a.yaml").read_text()
    names = re.findall(r"^      - kind: hosted\n        name: (\S+)$", east_a, re.M)
    assert names, "the example changed: east-a has hosted clusters"
    # Stack 'east' with a cluster 'a-<name>' renders folder a-<name>: Application nodefleet-east-a-<name>, the
    # same name as stack east-a's folder <name>.
    twin = (
        (stacks / "Pulumi.canary-east.yaml")
        .read_text()
        .replace("        name: edge\n", f"        name: a-{names[0]}\n")
        .replace("infraId: edge-", "infraId: twin-")  # a cluster of its own: only the names meet
    )
    (stacks / "Pulumi.east.yaml").write_text(twin.replace("    wave: canary\n", "    wave: main\n"))
    result = _gitops(base, "--out", "wiring")
    refused(result, "stacks/Pulumi.east.yaml")
    assert "stacks/Pulumi.east-a.yaml" in result.stderr, result.where()
