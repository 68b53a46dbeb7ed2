"""`fleet upgrade` on input a user gets wrong or an attacker shapes: stack files that share YAML through anchors,
state files that are not the upgrade's own, health commands that hang or spew, kubeconfigs given inline. Every
case ends with one clear message and an exit code by the contract, never a traceback, a hang or a secret echoed.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from cli.fleet import HEALTH_LINE_CHARS, _health_gate
from nodefleet.fleet import upgrade_state as us
from tests.conftest import PROJECT, nodefleet
from tests.fleet.upgrade_repo import GIT_ENV, GITOPS, NEW, OLD, copy_repo, git, make_repo, upgrade

REGIONAL = PROJECT / "tests" / "fleet" / "regional"
RESTART = "run the same command with --restart to plan afresh from the stack files as they are, or remove"


def _stacks(tmp_path: Path, *names: str) -> Path:
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(REGIONAL / "nodefleet-fleet.yaml", stacks)
    for name in names:
        shutil.copy(REGIONAL / f"Pulumi.{name}.yaml", stacks)
    return stacks


def _upgrade(
    stacks: Path, *extra: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return nodefleet(
        "fleet", "upgrade", "--stacks-dir", str(stacks), "--out", str(stacks.parent / "rendered"),
        "--release", NEW, *extra, env=env, timeout=600,
    )  # fmt: skip


def _clean(result: subprocess.CompletedProcess[str]) -> None:
    assert "Traceback" not in result.stderr, result.stderr


# --- stacks read as check reads them ------------------------------------------------------------------------


def _shared_pools(stacks: Path) -> Path:
    """east-a's two hosted clusters sharing one list of node pools through a YAML anchor and alias."""
    path = stacks / "Pulumi.east-a.yaml"
    text = path.read_text()
    first = text.index("        nodePools:\n")
    second = text.index("        nodePools:\n", first + 1)
    text = text[:first] + "        nodePools: &pools\n" + text[first + len("        nodePools:\n") : second]
    path.write_text(text + "        nodePools: *pools\n")
    return path


def test_clusters_sharing_node_pools_through_an_alias_are_planned_as_check_reads_them(tmp_path: Path) -> None:
    stacks = _stacks(tmp_path, "east-a")
    path = _shared_pools(stacks)
    assert nodefleet("check", "--config-file", str(path)).returncode == 0
    dry = _upgrade(stacks, "--dry-run")
    assert dry.returncode == 0, dry.stdout + dry.stderr
    assert (
        "east-a / shop: NodePool infra: held at 4.22.3 (release) until the control plane completes 4.22.4"
        in dry.stdout
    )
    assert (
        "east-a / pay: NodePool infra: held at 4.22.3 (release), shared with another cluster of this stack file"
        in dry.stdout
    )
    # The whole upgrade, without a commit: the anchor stays, both clusters move, no pin is left.
    for confirm in ((), ("--confirmed",), ("--confirmed",)):
        step = _upgrade(stacks, *confirm)
        _clean(step)
    assert step.returncode == 0, step.stdout + step.stderr
    text = path.read_text()
    assert "nodePools: &pools" in text and "nodePools: *pools" in text
    assert OLD not in text and "nodefleet upgrade: held" not in text
    assert nodefleet("check", "--config-file", str(path)).returncode == 0


def test_clusters_sharing_node_pools_at_different_releases_are_refused_with_the_fix(tmp_path: Path) -> None:
    stacks = _stacks(tmp_path, "east-a")
    path = _shared_pools(stacks)
    text = path.read_text()
    at = text.index("release: 4.22.3", text.index("name: pay"))
    path.write_text(text[:at] + "release: 4.22.4" + text[at + len("release: 4.22.3") :])
    refused = _upgrade(stacks, "--dry-run")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.splitlines() == [
        f"error: {path}: the control-plane step would change more than the step: clusters[pay].node_pools[infra].release: "
        "4.22.3 where the step leaves None (clusters of this stack file share YAML through an anchor and alias); give "
        "each cluster its own copy of what they share, then run the upgrade again"
    ]
    assert refused.stdout == ""


# --- state files ---------------------------------------------------------------------------------------------


@pytest.fixture
def stopped(tmp_path: Path) -> Path:
    """The canary of two stacks staged without --commit, the run stopped at its gate."""
    stacks = _stacks(tmp_path, "canary-east", "east-b")
    first = _upgrade(stacks)
    assert first.returncode == 1, first.stdout + first.stderr
    return stacks


def test_a_state_file_edited_by_hand_to_skip_the_canary_is_refused(stopped: Path) -> None:
    state_file = stopped / "nodefleet-upgrade.json"
    data = json.loads(state_file.read_text())
    data["progress"] += [
        {"step": "canary/control-plane", "event": "gate", "detail": "passed"},
        {"step": "canary/nodes", "event": "staged"},
        {"step": "canary/nodes", "event": "gate", "detail": "passed"},
    ]
    state_file.write_text(json.dumps(data))
    files = {p.name: p.read_bytes() for p in stopped.iterdir()}
    refused = _upgrade(stopped)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == (
        f"error: {state_file}: was changed since nodefleet wrote it (its digest does not match its content); nodefleet "
        f"does not follow a state file edited by hand: {RESTART} {state_file}\n"
    )
    # Resealed by someone who knows how (its waves summary and digest recomputed): the stack files still say
    # where the upgrade really is.
    data.pop("digest")
    forged = us.State.model_validate(data)
    forged = forged.model_copy(update={"waves": us.summary(forged.the_plan(), forged.progress)})
    state_file.write_text(us.dump(forged))
    refused = _upgrade(stopped)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(
        f"error: {stopped / 'Pulumi.canary-east.yaml'}: changed since the upgrade planned it"
    )
    assert {p.name: p.read_bytes() for p in stopped.iterdir() if p.name != "nodefleet-upgrade.json"} == {
        k: v for k, v in files.items() if k != "nodefleet-upgrade.json"
    }


#: What a file that is not nodefleet's state is refused with: another path, never --restart (which writes over it).
NOT_OURS = (
    "and nodefleet does not write its state over a file it did not write: give --state a file of its own (for "
    "example --state ../upgrade-state.json), or move"
)


@pytest.mark.parametrize(
    ("content", "says", "ours"),
    [
        ('{"schema": "caf\xe9"}'.encode("latin-1"), "not UTF-8 text", False),
        (b'{"schema": ', "not JSON at line 1", False),
        (b"[" * 50_000 + b"]" * 50_000, "nested too deeply", False),
        (b'["a", "list"]', "JSON, but a list, not an object", False),
        (b'{"schema": "example.com/other-tool/v1"}', "its schema is 'example.com/other-tool/v1'", False),
        (json.dumps({"release": NEW, "waves": [], "stopped": None}).encode(), "it names no schema", True),
        (
            json.dumps({"schema": us.SCHEMA, "release": NEW, "waves": "all done"}).encode(),
            "not a valid fleet upgrade state file",
            True,
        ),
    ],
)
def test_a_state_file_that_is_not_one_is_refused_with_what_to_do(
    tmp_path: Path, content: bytes, says: str, ours: bool
) -> None:
    stacks = _stacks(tmp_path, "canary-east")
    (stacks / "nodefleet-upgrade.json").write_bytes(content)
    refused = _upgrade(stacks, "--dry-run")
    _clean(refused)
    assert refused.returncode == 2 and says in refused.stderr, refused.stderr
    if ours:
        # A state file nodefleet wrote (an earlier one's, or a broken one): --restart replaces it.
        assert RESTART in refused.stderr and NOT_OURS not in refused.stderr, refused.stderr
    else:
        assert refused.stderr.startswith(
            f"error: {stacks / 'nodefleet-upgrade.json'}: not a fleet upgrade state file"
        )
        assert NOT_OURS in refused.stderr and "--restart" not in refused.stderr, refused.stderr
    again = _upgrade(stacks, "--dry-run", "--restart")
    assert again.returncode == 0, again.stdout + again.stderr
    assert (stacks / "nodefleet-upgrade.json").read_bytes() == content


def test_a_state_option_naming_another_file_is_refused_and_the_file_left_alone(tmp_path: Path) -> None:
    """`--state` pointed by mistake at a file that is not a state file (a team's notes): named, said
    not to be one, another path suggested; not written, not even with --restart."""
    stacks = _stacks(tmp_path, "canary-east")
    other = tmp_path / "notes.json"
    other.write_text('{"owner": "platform team", "oncall": "#fleet"}\n')
    before = other.read_bytes()
    for extra in ((), ("--restart",)):
        refused = _upgrade(stacks, "--state", str(other), *extra)
        _clean(refused)
        assert refused.returncode == 2, refused.stdout + refused.stderr
        assert refused.stderr == (
            f"error: {other}: not a fleet upgrade state file (a JSON object that names neither a schema nor a "
            f"release), {NOT_OURS} {other} out of the way\n"
        )
        assert other.read_bytes() == before
        assert not (stacks / "nodefleet-upgrade.json").exists()
    # Given a path of its own, the upgrade runs (and stops at the canary's gate, as every upgrade without a
    # cluster does here).
    own = tmp_path / "upgrade-state.json"
    ran = _upgrade(stacks, "--state", str(own))
    assert ran.returncode == 1 and own.is_file(), ran.stdout + ran.stderr
    assert other.read_bytes() == before


def test_a_named_pipe_as_the_state_file_is_refused_without_hanging(tmp_path: Path) -> None:
    stacks = _stacks(tmp_path, "canary-east")
    os.mkfifo(stacks / "nodefleet-upgrade.json")
    refused = _upgrade(stacks, "--dry-run")
    assert refused.returncode == 2
    assert refused.stderr == (
        f"error: {stacks / 'nodefleet-upgrade.json'}: is a named pipe (FIFO), not a regular file, not a fleet upgrade "
        "state file; remove it, or give --state a file of its own\n"
    )


def test_a_state_file_of_other_stacks_is_not_followed(stopped: Path) -> None:
    refused = _upgrade(stopped, "--stacks", "east-b")
    assert refused.returncode == 2
    assert "belongs to an upgrade of other stacks" in refused.stderr and "--restart" in refused.stderr


# --- health commands -----------------------------------------------------------------------------------------


def test_a_health_command_that_hangs_is_stopped_at_the_timeout_with_what_it_started() -> None:
    reason = _health_gate("sleep 300 & sleep 300; echo never", "canary", ["canary-east"], timeout=1)
    assert reason == "--health-command did not finish within 1s (--timeout) after wave 0-canary"


def test_a_health_command_s_output_is_decoded_leniently_and_only_its_tail_kept() -> None:
    command = "printf 'first\\n\\377\\376 not utf-8 \\033[31m red\\n'; head -c 3000000 /dev/zero | tr '\\0' x >&2; exit 3"
    reason = _health_gate(command, "main", ["east-a"], timeout=60)
    assert reason.startswith("--health-command exited 3 after wave 2-main: ")
    tail = reason.removeprefix("--health-command exited 3 after wave 2-main: ")
    assert tail == "x" * HEALTH_LINE_CHARS
    out_only = _health_gate("printf 'a\\nb\\n\\377 c \\033[0m\\n'; exit 4", "main", ["east-a"], timeout=60)
    assert out_only == "--health-command exited 4 after wave 2-main: b \ufffd c ?[0m"


def test_the_upgrade_applies_the_timeout_to_its_health_command(tmp_path: Path) -> None:
    """Resumed straight at a gate (the step was recorded by a run killed right after), so nothing but the health
    command runs under the short --timeout."""
    stacks = _stacks(tmp_path, "canary-east")
    killed = _upgrade(stacks, env={"NODEFLEET_TEST_CRASH_AT": "recorded"})
    assert killed.returncode in (137, -9), killed.stdout + killed.stderr
    hung = _upgrade(stacks, "--timeout", "2", "--health-command", "sleep 300")
    assert hung.returncode == 1, hung.stdout + hung.stderr
    assert hung.stdout.splitlines()[0] == (
        f"nodefleet fleet upgrade to {NEW}: stopped at the gate after wave 1/1 canary control-plane: --health-command "
        "did not finish within 2s (--timeout)"
    )
    noisy = _upgrade(stacks, "--health-command", "head -c 3000000 /dev/zero | tr '\\0' y; exit 1")
    assert noisy.returncode == 1 and len(noisy.stdout) < 2000, noisy.stdout[:3000]
    assert len((stacks / "nodefleet-upgrade.json").read_text()) < 20_000


# --- kubeconfigs -----------------------------------------------------------------------------------------------


CANARY = "sha256~CANARY-token-never-printed"


def _apply_mode(stacks: Path, kubeconfig: str) -> None:
    """canary-east applied by nodefleet, its management cluster reached through ``kubeconfig`` (the registry's)."""
    path = stacks / "Pulumi.canary-east.yaml"
    path.write_text(path.read_text().replace("      mode: render\n", "      mode: apply\n"))
    registry = stacks / "nodefleet-fleet.yaml"
    entry = "  - name: mgmt-use2-a\n"
    registry.write_text(
        registry.read_text().replace(entry, f"{entry}    kubeconfig: {json.dumps(kubeconfig)}\n")
    )


@pytest.mark.parametrize(
    "given",
    [
        '{"apiVersion": "v1", "users": [{"name": "a", "user": {"token": "' + CANARY + '"}}]}',
        "users: [{user: {token: " + CANARY + "}}]",
    ],
)
def test_a_kubeconfig_given_inline_is_refused_and_never_echoed(tmp_path: Path, given: str) -> None:
    stacks = _stacks(tmp_path, "canary-east")
    _apply_mode(stacks, given)
    refused = _upgrade(stacks, "--dry-run")
    _clean(refused)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert "kubeconfig" in refused.stderr and CANARY not in refused.stdout + refused.stderr
    assert not (stacks / "nodefleet-upgrade.json").exists()


def test_a_broken_kubeconfig_is_named_not_echoed(tmp_path: Path) -> None:
    stacks = _stacks(tmp_path, "canary-east")
    kubeconfig = tmp_path / "mgmt.kubeconfig"
    kubeconfig.write_text(f"users:\n- user:\n    token: {CANARY}\n  : : [\n")
    _apply_mode(stacks, str(kubeconfig))
    refused = _upgrade(stacks, "--dry-run")
    _clean(refused)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr.startswith(f"error: management cluster mgmt-use2-a: kubeconfig {kubeconfig}")
    assert CANARY not in refused.stdout + refused.stderr


# --- a plan that is not possible ------------------------------------------------------------------------------


def test_clusters_ahead_are_all_named_before_any_plan_is_printed(tmp_path: Path) -> None:
    stacks = _stacks(tmp_path, "canary-east", "Team_B", "east-a", "east-b")
    for name, release in (("Team_B", "4.22.6"), ("east-b", "4.22.5")):
        path = stacks / f"Pulumi.{name}.yaml"
        path.write_text(path.read_text().replace("release: 4.22.3", f"release: {release}"))
    for extra in (("--dry-run",), ()):
        refused = _upgrade(stacks, *extra)
        assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
        assert refused.stderr.splitlines() == [
            f"error: --release {NEW} is a downgrade for 2 clusters (Team_B/shop at 4.22.6, east-b/shop at 4.22.5), and "
            "nodefleet does not stage downgrades: use a release at or above 4.22.6, or leave stacks Team_B, east-b out "
            "with --stacks canary-east,east-a",
        ]
    assert not (stacks / "nodefleet-upgrade.json").exists() and not (tmp_path / "rendered").exists()
    followed = _upgrade(stacks, "--dry-run", "--stacks", "canary-east,east-a")
    assert followed.returncode == 0, followed.stdout + followed.stderr


def test_a_release_the_registry_says_a_hyper_shift_operator_does_not_run_is_refused(tmp_path: Path) -> None:
    """Render mode: what each management cluster's operator runs is its registry entry's
    hypershift.supportedVersions (tests/fleet/regional/nodefleet-fleet.yaml: 4.22 at most)."""
    stacks = _stacks(tmp_path, "canary-east", "Team_B", "east-b")
    refused = _upgrade(stacks, "--dry-run", "--release", "5.0.0")
    assert refused.returncode == 2 and refused.stdout == "", refused.stdout + refused.stderr
    registry = stacks / "nodefleet-fleet.yaml"
    runs = "; ".join(
        f"{mgmt} runs {versions} ({registry} hypershift.supportedVersions; clusters {clusters})"
        for mgmt, versions, clusters in (
            ("mgmt-euw1-a", "4.22, 4.21", "Team_B/shop"),
            ("mgmt-use2-a", "4.22, 4.21, 4.20", "canary-east/edge"),
            ("mgmt-use2-b", "4.22, 4.21, 4.20", "east-b/shop"),
        )
    )
    assert refused.stderr.splitlines() == [
        f"error: --release 5.0.0: the HyperShift operator of 3 management clusters does not run 5.0 ({runs}): "
        "upgrade the HyperShift operator there first, or leave those stacks out with --stacks"
    ]
    registry.write_text(registry.read_text().replace('["4.22", "4.21", "4.20"]', '["5.0", "4.22", "4.21"]'))
    partly = _upgrade(stacks, "--dry-run", "--release", "5.0.0", "--stacks", "canary-east,east-b")
    assert partly.returncode == 0, partly.stdout + partly.stderr


# --- --push: the remote and the GitOps cluster, judged before anything is written -----------------------------

KUBECONFIG = """apiVersion: v1
kind: Config
clusters: [{name: hub, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: flux, user: {token: not-a-real-token}}]
contexts: [{name: hub, context: {cluster: hub, user: flux}}]
current-context: hub
"""


@pytest.fixture(scope="module")
def fleet_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The test fleet, committed and published (tests/fleet/upgrade_repo.py); each test works on a copy."""
    return make_repo(tmp_path_factory.mktemp("fleet"))


class _AnsweringHub(BaseHTTPRequestHandler):
    """A GitOps cluster that answers every read with an object that reports nothing applied: enough for
    ``--push`` to reach it before its first push (the run then pushes, and the tests end it there)."""

    def do_GET(self) -> None:
        body = json.dumps(
            {"kind": "Kustomization", "metadata": {"name": self.path.rsplit("/", 1)[-1]}}
        ).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def answering_hub(tmp_path: Path) -> Iterator[Path]:
    """The kubeconfig of a GitOps cluster that answers (a free port of this machine)."""
    server = HTTPServer(("127.0.0.1", 0), _AnsweringHub)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kubeconfig = tmp_path / "answering-hub.kubeconfig"
    kubeconfig.write_text(KUBECONFIG.replace("https://127.0.0.1:1", f"http://127.0.0.1:{server.server_port}"))
    try:
        yield kubeconfig
    finally:
        server.shutdown()


def _pushing(fleet_repo: Path, tmp_path: Path, remote: str | None) -> tuple[Path, Path]:
    """A copy of the fleet with ``remote`` as origin (None: a bare clone of it), and a kubeconfig of a GitOps
    cluster that does not answer."""
    repo = copy_repo(fleet_repo, tmp_path)
    if remote is None:
        remote = str(tmp_path / "remote.git")
        subprocess.run(
            ["git", "clone", "-q", "--bare", str(repo), remote], check=True, env={**os.environ, **GIT_ENV}
        )
    if remote:
        git(repo, "remote", "add", "origin", remote)
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(KUBECONFIG)
    return repo, kubeconfig


def _push_upgrade(repo: Path, kubeconfig: Path | str, *extra: str) -> subprocess.CompletedProcess[str]:
    return upgrade(
        repo, "--push", "--gitops-tool", "flux", "--gitops-kubeconfig", str(kubeconfig), "--health-command", "true",
        *extra,
    )  # fmt: skip


def _refuses(repo: Path, message: str, run: Callable[[], subprocess.CompletedProcess[str]]) -> None:
    """``run`` exits 2 with ``message`` as its one line, on stderr, and writes nothing."""
    before = git(repo, "log", "--all", "--format=%H %D")
    refused = run()
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert (refused.stdout, refused.stderr) == ("", f"error: {message}\n")
    _nothing_written(repo, before)


def _nothing_written(repo: Path, before: str) -> None:
    assert git(repo, "log", "--all", "--format=%H %D") == before
    assert git(repo, "status", "--porcelain=v1", "--untracked-files=all") == ""
    assert not (repo / ".git" / "nodefleet-upgrade.json").exists()


@pytest.mark.parametrize(
    ("remote", "says"),
    [
        ("", "fatal: 'origin' does not appear to be a git repository"),
        ("{tmp}/nowhere.git", "fatal: '{tmp}/nowhere.git' does not appear to be a git repository"),
        (
            "https://platform:ghp_CANARYTOKEN0123456789abcdef@127.0.0.1:1/fleet.git",
            "fatal: unable to access 'https://127.0.0.1:1/fleet.git/'",
        ),
    ],
    ids=["no-such-remote", "not-a-repository", "unreachable-with-a-token"],
)
def test_a_remote_that_cannot_be_read_is_refused_before_the_first_commit(
    fleet_repo: Path, tmp_path: Path, remote: str, says: str
) -> None:
    repo, kubeconfig = _pushing(fleet_repo, tmp_path, remote.format(tmp=tmp_path))
    before = git(repo, "log", "--all", "--format=%H %D")
    refused = _push_upgrade(repo, kubeconfig)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stdout == ""
    line = refused.stderr
    assert line.count("\n") == 1 and line.startswith("error: --remote origin: cannot be read (")
    assert says.format(tmp=tmp_path) in line
    assert line.rstrip().endswith(
        "); name a remote of "
        + str(repo.resolve())
        + " (git remote -v) that answers, with credentials git finds "
        "without asking (a credential helper, an SSH key), or add it (git remote add)"
    )
    assert "CANARYTOKEN" not in line and "Traceback" not in line
    _nothing_written(repo, before)


def test_a_gitops_kubeconfig_that_does_not_exist_is_refused_before_the_first_commit(
    fleet_repo: Path, tmp_path: Path
) -> None:
    repo, _ = _pushing(fleet_repo, tmp_path, None)
    _refuses(
        repo,
        f"the GitOps cluster (gitops.kubeconfig, --gitops-kubeconfig): kubeconfig {tmp_path}/missing.kubeconfig: no "
        "such file; check the path of the kubeconfig",
        lambda: _push_upgrade(repo, tmp_path / "missing.kubeconfig"),
    )


def _push_from_elsewhere(remote: Path, tmp_path: Path) -> str:
    """Someone else's commit on the remote's GitOps branch; its id."""
    other = tmp_path / "other"
    subprocess.run(
        ["git", "clone", "-q", "-b", GITOPS, str(remote), str(other)],
        check=True,
        env={**os.environ, **GIT_ENV},
    )
    (other / "NOTES.md").write_text("pushed by the platform team's other pipeline\n")
    git(other, "add", "NOTES.md")
    git(other, "commit", "-qm", "Notes")
    git(other, "push", "-q", "origin", GITOPS)
    return git(other, "rev-parse", "HEAD").strip()


def test_a_gitops_branch_someone_else_pushed_to_is_never_overwritten_and_the_fix_it_prints_works(
    fleet_repo: Path, tmp_path: Path, answering_hub: Path
) -> None:
    repo, _ = _pushing(fleet_repo, tmp_path, None)
    kubeconfig = answering_hub  # reached before the first push
    remote = tmp_path / "remote.git"
    theirs = _push_from_elsewhere(remote, tmp_path)
    before = git(repo, "log", "--all", "--format=%H %D")
    refused = _push_upgrade(repo, kubeconfig)
    assert refused.returncode == 2, refused.stdout + refused.stderr
    fix = (
        f"git worktree add ../nodefleet-merge {GITOPS} && git -C ../nodefleet-merge pull --no-rebase --no-edit origin "
        f"{GITOPS} && git worktree remove ../nodefleet-merge"
    )
    assert refused.stderr == (
        f"error: --push: {GITOPS} on origin is at {theirs[:12]}, which the local {GITOPS} does not contain (someone "
        "pushed to it meanwhile); nodefleet never overwrites a branch others push to, and pushed nothing. Merge it "
        f"into the local branch ({fix}), then run the same command again: the upgrade's commits stay and are pushed "
        "on top\n"
    )
    _nothing_written(repo, before)
    assert git(remote, "rev-parse", GITOPS).strip() == theirs
    # The fix as printed, run where the user runs it (the repository), then the same command: it commits the first
    # step on top of their commit and pushes it (ended right after the push: no GitOps cluster answers here).
    subprocess.run(fix, shell=True, cwd=repo, check=True, env={**os.environ, **GIT_ENV}, capture_output=True)
    resumed = upgrade(
        repo, "--push", "--gitops-tool", "flux", "--gitops-kubeconfig", str(kubeconfig), "--health-command", "true",
        env={"NODEFLEET_TEST_CRASH_AT": "pushed"},
    )  # fmt: skip
    assert resumed.returncode in (137, -9), resumed.stdout + resumed.stderr
    assert "  pushed main, nodefleet-rendered to origin\n" in resumed.stderr
    pushed = git(remote, "log", "--format=%H %s", GITOPS).splitlines()
    assert pushed[0].endswith(
        "Render of the fleet upgrade to 4.22.4: canary wave, control-plane (canary-east)"
    )
    assert pushed[1] == f"{theirs} Notes"
    assert git(remote, "rev-parse", "main") == git(repo, "rev-parse", "main")


def test_a_remote_url_with_a_token_is_refused_and_never_echoed_or_recorded(
    fleet_repo: Path, tmp_path: Path
) -> None:
    repo, kubeconfig = _pushing(fleet_repo, tmp_path, None)
    url = f"https://platform:ghp_CANARYTOKEN0123456789abcdef@{tmp_path.name}.example.com/fleet.git"
    _refuses(
        repo,
        f"--remote https://***@{tmp_path.name}.example.com/fleet.git: the URL carries credentials, which nodefleet "
        "would print and record in its state file; add the remote without them (git remote add NAME URL, the "
        "credentials in a credential helper or an SSH key) and give --remote NAME",
        lambda: _push_upgrade(repo, kubeconfig, "--remote", url),
    )


@pytest.mark.parametrize("dry_run", [True, False], ids=["dry-run", "commit"])
def test_a_release_nodefleet_does_not_know_is_refused_naming_the_range(
    fleet_repo: Path, tmp_path: Path, dry_run: bool
) -> None:
    repo = copy_repo(fleet_repo, tmp_path)
    options = ["--dry-run"] if dry_run else ["--commit", "--health-command", "true"]
    where = ["--stacks-dir", str(repo / "stacks"), "--out", str(repo / "rendered")]
    _refuses(
        repo,
        "--release 4.99.1: OCP 4.99.1 does not exist (the release after 4.22 is 5.0): use a release from 4.7 to 5.1 "
        "(the payload table in nodefleet/bootimages/versions.py ends at 5.0; 5.1 is judged by 5.0's payload), or "
        "update nodefleet.",
        lambda: nodefleet(
            "fleet", "upgrade", *where, "--release", "4.99.1", *options, env=GIT_ENV, timeout=600
        ),
    )


def test_a_missing_gitops_branch_is_refused_before_the_first_commit(fleet_repo: Path, tmp_path: Path) -> None:
    repo = copy_repo(fleet_repo, tmp_path)
    git(repo, "branch", "-q", "-D", GITOPS)
    _refuses(
        repo,
        f"--commit: the branch {GITOPS}, which the GitOps tool reads the render from, does not exist; publish the "
        "fleet's render there first (`scripts/pipeline publish`), so that the upgrade's render commits change only the "
        "stacks they move, or name the branch the wiring reads (--gitops-branch)",
        lambda: upgrade(repo, "--health-command", "true"),
    )


def test_a_resume_pushing_to_another_remote_is_refused(
    fleet_repo: Path, tmp_path: Path, answering_hub: Path
) -> None:
    """The steps an upgrade pushed went to one remote; a rerun naming another would leave them there and push
    the rest elsewhere: refused, naming both, nothing written. Without --remote it pushes where it began."""
    repo, _ = _pushing(fleet_repo, tmp_path, None)
    kubeconfig = answering_hub  # reached before the first push
    other = tmp_path / "other.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(repo), str(other)], check=True, env={**os.environ, **GIT_ENV}
    )
    git(repo, "remote", "add", "mirror", str(other))
    first = upgrade(
        repo, "--push", "--gitops-tool", "flux", "--gitops-kubeconfig", str(kubeconfig), "--health-command", "true",
        env={"NODEFLEET_TEST_CRASH_AT": "pushed"},
    )  # fmt: skip
    assert first.returncode in (137, -9), first.stdout + first.stderr
    state = (repo / ".git" / "nodefleet-upgrade.json").read_bytes()
    before = git(repo, "log", "--all", "--format=%H %D")
    refused = _push_upgrade(repo, kubeconfig, "--remote", "mirror")
    assert refused.returncode == 2, refused.stdout + refused.stderr
    assert refused.stderr == (
        "error: --remote mirror: this upgrade pushes to origin, where its earlier steps went; give that remote (or "
        "leave --remote out), or run with --restart\n"
    )
    assert git(repo, "log", "--all", "--format=%H %D") == before
    assert (repo / ".git" / "nodefleet-upgrade.json").read_bytes() == state
    assert git(other, "rev-parse", GITOPS) != git(repo, "rev-parse", GITOPS)  # nothing pushed to the mirror


def test_push_reaches_the_gitops_cluster_before_it_publishes_anything(tmp_path: Path) -> None:
    """An unreachable --gitops-kubeconfig: the run stops before its first commit and push (exit 1), saying which
    objects it could not read, instead of pushing the canary live and then failing to wait for it."""
    repo = make_repo(tmp_path, {"canary-east": "canary"})
    remote = tmp_path / "remote.git"
    subprocess.run(
        ["git", "clone", "-q", "--bare", str(repo), str(remote)], check=True, env={**os.environ, **GIT_ENV}
    )
    git(repo, "remote", "add", "origin", str(remote))
    kubeconfig = tmp_path / "hub.kubeconfig"
    kubeconfig.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: x\n"
        "clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:1\n"
        "users:\n- name: u\n  user:\n    token: t\n"
        "contexts:\n- name: x\n  context: {cluster: c, user: u}\n"
    )
    heads = {b: git(repo, "rev-parse", b).strip() for b in ("main", GITOPS)}
    remote_heads = git(remote, "for-each-ref").strip()
    done = upgrade(
        repo, "--push", "--gitops-kubeconfig", str(kubeconfig), "--gitops-tool", "flux", "--gitops-branch", GITOPS,
        "--timeout", "8",
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert "Traceback" not in done.stdout + done.stderr
    assert "stopped before the first push" in done.stdout and "out of reach" in done.stdout, done.stdout
    assert {b: git(repo, "rev-parse", b).strip() for b in ("main", GITOPS)} == heads  # nothing committed
    assert git(remote, "for-each-ref").strip() == remote_heads  # nothing pushed
    assert not (repo / ".git" / "nodefleet-upgrade.json").exists()  # nothing recorded as done


def test_a_standalone_clusters_own_upgrade_is_said_at_its_step_and_at_its_gate(tmp_path: Path) -> None:
    """The dry run says `you: … oc adm upgrade --to R`; the real run says it too, at the step, and its gate
    names what --confirmed confirms: the cluster upgraded by you, its ClusterVersion at R."""
    stacks = tmp_path / "stacks"
    stacks.mkdir()
    shutil.copy(PROJECT / "tests" / "fleet" / "upgrade" / "Pulumi.plant-last.yaml", stacks)
    done = nodefleet(
        "fleet", "upgrade", "--stacks-dir", str(stacks), "--out", str(tmp_path / "rendered"), "--release", NEW,
        timeout=900,
    )  # fmt: skip
    assert done.returncode == 1, done.stdout + done.stderr
    assert (
        f"  you: plant-last / plant: upgrade the cluster itself to {NEW} (`oc adm upgrade --to {NEW}`"
        in done.stderr
    ), done.stderr
    assert (
        f"waiting until you have upgraded standalone cluster plant-last/plant itself and its ClusterVersion has "
        f"completed {NEW} (`oc adm upgrade --to {NEW}`; the nodes step then records {NEW} in its stack file)"
    ) in done.stdout, done.stdout
