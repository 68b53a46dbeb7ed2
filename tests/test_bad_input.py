"""Bad input a user can write, by class: files that are not files, render folders that cannot be written,
values a controller cannot parse or AWS refuses, and messages that name the real cause.

The corpus in tests/bad_stacks/ runs each class through every command; these tests judge the rules
themselves on other spellings of each class, in-process.
"""

from __future__ import annotations

import copy
import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from mockruntime.run import read_stack_config
from nodefleet.bootimages.catalog import CatalogError, load_catalog
from nodefleet.files import FileKindError, FileTooLargeError, read_regular_file
from nodefleet.render.objects import load_fleet
from nodefleet.stackfile.model import ConfigError, escaped, suggest_key
from nodefleet.stackfile.modelbase import go_duration_nanoseconds, zone_advice
from nodefleet.stackfile.paths import CATALOG_ROOTS_ENV, RENDER_ROOTS_ENV
from nodefleet.stackfile.yamlfile import YAMLFileError, load_yaml
from tests.bounded import within
from tests.conftest import PROJECT, stack_fleet


def _error(raw: dict[str, Any], stack: str = "dev", environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as e:
        load_fleet(raw, stack, PROJECT, environ=environ or {})
    return str(e.value)


# --- 13: files that are not regular files ----------------------------------------------------------------


def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    pipe = tmp_path / "catalog.json"
    os.mkfifo(pipe)
    with pytest.raises(FileKindError, match="named pipe"):
        within(30, lambda: read_regular_file(pipe))
    with pytest.raises(CatalogError, match=r"named pipe .* regular file.*point catalog"):
        within(30, lambda: load_catalog(pipe, "catalogs/edge.json"))
    with pytest.raises(YAMLFileError, match=r"Pulumi\.edge\.yaml: is a named pipe.*give its path"):
        within(30, lambda: read_stack_config(pipe, "stacks/Pulumi.edge.yaml"))


@pytest.mark.parametrize("device", ["/dev/urandom", "/dev/null"])
def test_a_device_is_refused(device: str) -> None:
    with pytest.raises(FileKindError, match="character device"):
        within(30, lambda: read_regular_file(device))


def test_a_socket_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "s"
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(path))
    try:
        with pytest.raises(FileKindError, match="socket"):
            read_regular_file(path)
    finally:
        server.close()


def test_a_file_over_the_limit_is_refused(tmp_path: Path) -> None:
    big = tmp_path / "catalog.yaml"
    big.write_bytes(b"a: b\n" * 300)
    assert read_regular_file(big, limit=1500) == b"a: b\n" * 300
    with pytest.raises(FileTooLargeError, match="at most 1,000"):
        read_regular_file(big, limit=1000)


def test_a_device_named_as_catalog_under_an_allowed_root_gets_one_message() -> None:
    """Even where the operator allowed a root outside the project, a catalog must be a regular file."""
    raw = stack_fleet("dev")
    raw["clusters"][0]["catalog"] = "/dev/zero"
    msg = within(60, lambda: _error(raw, environ={CATALOG_ROOTS_ENV: "/dev"}))
    assert "nodefleet:fleet.clusters[0].catalog" in msg and "character device" in msg and "\n" not in msg


# --- 14: render folders that cannot be written -----------------------------------------------------------


def _render_into(tmp_path: Path, directory: str) -> str:
    raw = stack_fleet("dev")
    raw["output"]["directory"] = str(tmp_path / directory)
    return _error(raw, environ={RENDER_ROOTS_ENV: str(tmp_path)})


def test_render_directory_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "manifests.yaml").write_text("")
    msg = _render_into(tmp_path, "manifests.yaml")
    assert "output.directory" in msg and "is a file, not a folder" in msg


def test_render_directory_below_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("")
    assert "runs through a file" in _render_into(tmp_path, "notes/{stack}")


def test_render_directory_through_a_symlink_loop(tmp_path: Path) -> None:
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    assert "symlink loop" in _render_into(tmp_path, "a/{stack}")


@pytest.mark.parametrize("directory", [".git/{stack}", "repo/.git/refs/{stack}", "work/.Git", "x/.hg/y"])
def test_render_directory_inside_version_control(tmp_path: Path, directory: str) -> None:
    msg = _render_into(tmp_path, directory)
    assert "the repository's own files" in msg and "use a folder of the work tree" in msg


def test_a_cluster_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "tree" / "dev").mkdir(parents=True)
    (tmp_path / "tree" / "dev" / "dev").write_text("")
    msg = _render_into(tmp_path, "tree/{stack}")
    assert "the folder of clusters[0] 'dev'" in msg and "is a file" in msg


def test_a_layout_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "tree" / "dev" / "dev").mkdir(parents=True)
    (tmp_path / "tree" / "dev" / "dev" / "1-manifest").write_text("")
    assert "dev/1-manifest" in _render_into(tmp_path, "tree/{stack}")


def test_an_existing_render_directory_is_fine(tmp_path: Path) -> None:
    (tmp_path / "tree" / "dev" / "dev" / "1-manifest").mkdir(parents=True)
    raw = stack_fleet("dev")
    raw["output"]["directory"] = str(tmp_path / "tree/{stack}")
    load_fleet(raw, "dev", PROJECT, environ={RENDER_ROOTS_ENV: str(tmp_path)})


# --- 15: values the controllers cannot parse, or AWS refuses ---------------------------------------------


@pytest.mark.parametrize(
    ("text", "fits"),
    [
        ("2562047h47m16.854775807s", True),
        ("2562047h47m16.854775808s", False),
        ("153722867m", True),
        ("153722868m", False),
        ("106751d", None),  # not a Go unit: the pattern's to refuse
        ("1.5h", True),
        ("0", True),
    ],
)
def test_go_duration_bounds(text: str, fits: bool | None) -> None:
    ns = go_duration_nanoseconds(text)
    assert (None if ns is None else ns <= 2**63 - 1) == fits


def _hosted() -> dict[str, Any]:
    return copy.deepcopy(stack_fleet("hosted"))


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (
            lambda c: c["autoNode"]["nodePools"][1].__setitem__("terminationGracePeriod", "2600000h"),
            "terminationGracePeriod",
        ),
        (
            lambda c: c["autoNode"]["nodePools"][1]["disruption"].__setitem__(
                "consolidateAfter", "9999999999999s"
            ),
            "consolidateAfter",
        ),
        (
            lambda c: c["nodePools"][0].__setitem__("nodeVolumeDetachTimeout", "110000000000000000ms"),
            "nodeVolumeDetachTimeout",
        ),
    ],
    ids=["termination-grace", "consolidate-after", "volume-detach"],
)
def test_durations_beyond_go_are_refused(edit: Callable[[dict[str, Any]], None], field: str) -> None:
    raw = _hosted()
    edit(raw["clusters"][0])
    msg = _error(raw, "hosted")
    assert f".{field}:" in msg and "time.Duration" in msg and "use a shorter duration" in msg


@pytest.mark.parametrize(
    ("tags", "says"),
    [
        ({"owner": "é" * 257}, "257 characters"),
        ({"k" * 129: "v"}, "1 to 128"),
        ({"AWS:cost": "x"}, "'aws:'"),
    ],
    ids=["value-257-unicode", "key-129", "aws-prefix"],
)
def test_tags_aws_refuses(tags: dict[str, str], says: str) -> None:
    raw = _hosted()
    raw["clusters"][0]["autoNode"]["nodeClasses"][1]["tags"] = tags
    msg = _error(raw, "hosted")
    assert "nodeClasses[1].tags" in msg and says in msg


def test_a_tag_value_of_256_characters_is_accepted() -> None:
    raw = _hosted()
    raw["clusters"][0]["resourceTags"] = {"cost-center": "x" * 256}
    load_fleet(raw, "hosted", PROJECT, environ={})


def test_a_zone_past_f_is_refused_and_an_undocumented_one_is_advice(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][1]["zone"] = "us-east-1g"
    msg = _error(dev_fleet)
    assert "machineSets[1].zone" in msg and "no AWS region has a zone past 'f'" in msg
    assert zone_advice("us-west-2e") is not None and "describe-availability-zones" in str(
        zone_advice("us-west-2e")
    )
    assert zone_advice("us-west-2d") is None and zone_advice("mx-central-1c") is None


def test_zone_advice_reaches_check(dev_fleet: dict[str, Any]) -> None:
    """us-west-2 documents a-d: us-west-2e is advice (only AWS can tell for the account), not an error."""
    cluster = dev_fleet["clusters"][0]
    cluster["region"] = "us-west-2"
    for ms in cluster["machineSets"]:
        ms["zone"] = "us-west-2" + ms["zone"][-1]
    cluster["machineSets"][2]["zone"] = "us-west-2e"
    fleet = load_fleet(dev_fleet, "dev", PROJECT, environ={})
    (advice,) = fleet.zone_advice()
    assert advice.startswith("nodefleet:fleet.clusters[0].machineSets[2].zone: 'us-west-2e'"), advice


@pytest.mark.parametrize("namespace", ["kube-node-lease", "kube-tenants", "openshift", "openshift-clusters"])
def test_hosted_cluster_in_a_platform_namespace(namespace: str) -> None:
    raw = _hosted()
    raw["clusters"][0]["namespace"] = namespace
    msg = _error(raw, "hosted")
    assert ".namespace:" in msg and "reserved" in msg and "e.g. clusters" in msg


@pytest.mark.parametrize("namespace", ["default", "hosted-clusters", "kubernetes"])
def test_hosted_cluster_namespaces_neither_reserves(namespace: str) -> None:
    raw = _hosted()
    raw["clusters"][0]["namespace"] = namespace
    load_fleet(raw, "hosted", PROJECT, environ={})


@pytest.mark.parametrize("release", ["4.20", "5.0", "4.22-rc.1"])
def test_a_release_without_its_patch_number(release: str, dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["release"] = release
    msg = _error(dev_fleet)
    assert ".release:" in msg and "patch number" in msg


def test_a_self_managed_node_class_named_default() -> None:
    raw = copy.deepcopy(stack_fleet("karpenter"))
    raw["clusters"][0]["karpenter"]["nodeClasses"][0]["name"] = "default"
    raw["clusters"][0]["karpenter"]["nodePools"][0]["nodeClass"] = "default"
    msg = _error(raw, "karpenter")
    assert "karpenter.nodeClasses[0].name" in msg and "give the class its own name" in msg


@pytest.mark.parametrize(
    ("scalar", "reads"),
    [
        ("07", "7 (a leading 0"),
        ("-017", "-15 (a leading 0"),
        ("+0x1A", "26 (hexadecimal)"),
        ("0b101", "5 (binary)"),
        ("2_000", "2000 (YAML drops the underscores)"),
        ("2:00", "120 (YAML 1.1 reads a:b"),
        ("1_0.5", "10.5"),
        ("Off", "false by YAML 1.1"),
        ("NO", "false by YAML 1.1"),
    ],
)
def test_numbers_and_booleans_yaml_reads_otherwise(scalar: str, reads: str) -> None:
    with pytest.raises(YAMLFileError) as e:
        load_yaml(f"config:\n  value: {scalar}\n", "stacks/Pulumi.x.yaml")
    assert "line 2, column 10" in str(e.value) and reads in str(e.value) and "quote it" in str(e.value)


@pytest.mark.parametrize("scalar", ["'010'", '"0x1f"', "10", "-3", "0", "1.5", "true", "False", "no-sql"])
def test_plain_and_quoted_values_stay_accepted(scalar: str) -> None:
    load_yaml(f"config:\n  value: {scalar}\n", "stacks/Pulumi.x.yaml")


# --- 16: messages that name the real cause ---------------------------------------------------------------


def test_a_lookalike_letter_is_escaped_and_named(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["infraId"] = "dev-7xk2\u03bf"  # Greek omicron for 'o'... at the end
    msg = _error(dev_fleet)
    assert "'dev-7xk2\\u03bf'" in msg and "\u03bf" not in msg
    assert "character 9 is U+03BF (GREEK SMALL LETTER OMICRON), which looks like 'o'" in msg


def test_a_lookalike_in_a_key_is_escaped(dev_fleet: dict[str, Any]) -> None:
    dev_fleet["clusters"][0]["machineSets"][0]["r\u0435plicas"] = 2
    msg = _error(dev_fleet)
    assert "unknown key 'r\\u0435plicas'" in msg and "U+0435" in msg and "did you mean 'replicas'" in msg


def test_escaping_leaves_ascii_alone() -> None:
    assert escaped("us-east-1") == ("us-east-1", "")


@pytest.mark.parametrize(
    ("bad", "known", "meant"),
    [
        ("dir", ["directory", "kubeconfig", "mode"], "directory"),
        ("Kubeconfig", ["directory", "kubeconfig", "mode"], "kubeconfig"),
        ("infra_id", ["infraId", "name"], "infraId"),
        ("ami", ["instanceType", "zone"], None),
    ],
)
def test_did_you_mean_for_abbreviations_and_case(bad: str, known: list[str], meant: str | None) -> None:
    assert suggest_key(bad, known) == ([meant] if meant else [])


@pytest.mark.parametrize(
    ("text", "says"),
    [
        (
            "config:\n  a: 1\n...\n---\nconfig:\n  b: 2\n",
            "line 4, column 1: a second YAML document starts here",
        ),
        (
            "config: !!python/object:os.environ {}\n",
            "the tag '!!python/object:os.environ' asks YAML to build a Python object",
        ),
        (
            "config:\n  x: !vault secret\n",
            "the tag '!vault' is a YAML type neither nodefleet nor the Pulumi CLI reads",
        ),
    ],
    ids=["document-end-then-second", "python-object", "custom-tag"],
)
def test_yaml_errors_name_the_real_cause(text: str, says: str) -> None:
    with pytest.raises(YAMLFileError) as e:
        load_yaml(text, "stacks/Pulumi.x.yaml")
    assert says in str(e.value) and "indentation" not in str(e.value)


def test_a_lookalike_quoted_by_a_validator_is_escaped_too(dev_fleet: dict[str, Any]) -> None:
    """A label key refused by the model's own check: its message quotes the key, escaped, and names the letter."""
    dev_fleet["clusters"][0]["machineSets"][0]["labels"] = {"n\u043ede-tier": "infra"}  # Cyrillic o
    msg = _error(dev_fleet)
    assert "'n\\u043ede-tier'" in msg and "\u043e" not in msg and "U+043E (CYRILLIC SMALL LETTER O)" in msg


# --- 17: every file nodefleet reads goes through the guarded reader ------------------------------------


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    from cli.main import main

    code = within(120, lambda: main(list(argv)))
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err and "internal error" not in err, err
    return code, out, err


def test_a_render_record_that_is_a_pipe_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / ".nodefleet-render-dev")
    code, _, err = _run(capsys, "render", "--stack", "dev", "--out", str(out))
    assert code == 2 and ".nodefleet-render-dev: the render record is a named pipe" in err, err
    assert "restore it from version control, or remove it" in err


def test_a_render_journal_in_latin1_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    out.mkdir()
    (out / ".nodefleet-render-dev.journal").write_bytes("write dev/caf\xe9\n".encode("latin-1"))
    code, _, err = _run(capsys, "render", "--stack", "dev", "--out", str(out))
    assert code == 2 and "the journal of an interrupted render" in err and "is not UTF-8" in err, err
    assert "remove it and render again" in err


def test_a_pipe_where_a_manifest_goes_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "out"
    assert _run(capsys, "render", "--stack", "dev", "--out", str(out))[0] == 0
    manifest = next((out / "dev" / "1-manifest").glob("*.yaml"))
    manifest.unlink()
    os.mkfifo(manifest)
    code, _, err = _run(capsys, "render", "--stack", "dev", "--out", str(out))
    assert code == 2 and "is a named pipe (FIFO), not a regular file where a manifest goes; remove it" in err


def test_a_state_export_too_deep_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    state = tmp_path / "state.json"
    state.write_text("[" * 100_000 + "]" * 100_000)
    code, out, err = _run(capsys, "forecast", "--stack", "dev", "--state", str(state))
    assert code == 2 and out == "" and "nested more than 100 levels deep" in err, err
    latin1 = tmp_path / "latin1.json"
    latin1.write_bytes('{"deployment": "caf\xe9"}'.encode("latin-1"))
    code, _, err = _run(capsys, "forecast", "--stack", "dev", "--state", str(latin1))
    assert code == 2 and "byte 0xe9 is not UTF-8" in err, err


def test_a_previous_state_for_the_crd_policy_is_read_bounded(tmp_path: Path) -> None:
    from nodefleet.apiserver.previous import PreviousStateError, load_checkpoint

    state = tmp_path / "state.json"
    state.write_text('{"deployment": {"resources": ' + "[" * 5000 + "]" * 5000 + "}}")
    with pytest.raises(PreviousStateError, match="nested more than 100 levels deep"):
        load_checkpoint(state, tmp_path)
    os.mkfifo(tmp_path / "fifo.json")
    with pytest.raises(PreviousStateError, match="named pipe"):
        within(30, lambda: load_checkpoint(tmp_path / "fifo.json", tmp_path))


def test_json_a_user_wrote_into_a_value_is_read_bounded() -> None:
    """A pull secret and userData hold JSON a user wrote: deep JSON is refused or ignored, never a crash."""
    from nodefleet.render.ignition import merge_headers
    from nodefleet.stackfile.secrets import secret_value_problem

    deep = '{"auths": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert "nested deeper than any pull secret" in str(secret_value_problem(".dockerconfigjson", deep))
    assert merge_headers('{"ignition": ' + "[" * 100_000 + "]" * 100_000 + "}") == {}


def test_report_reads_every_stack_file_guarded(tmp_path: Path) -> None:
    """`report` looks at every stack file for the catalogs it names: a pipe among them must not hang it."""
    from cli.report import touched_stacks

    project = tmp_path / "project"
    (project / "stacks").mkdir(parents=True)
    (project / "stacks" / "Pulumi.ok.yaml").write_text(
        "config:\n  nodefleet:fleet:\n    clusters:\n    - {name: a, catalog: catalogs/a.yaml}\n"
    )
    os.mkfifo(project / "stacks" / "Pulumi.pipe.yaml")
    (project / "stacks" / "Pulumi.deep.yaml").write_text("config: " + "[" * 20_000 + "]" * 20_000 + "\n")
    stacks, _ = within(60, lambda: touched_stacks(["catalogs/a.yaml"], project))
    assert stacks == ["ok"]


# --- 18: releases in the stack file: one accepted form ----------------------------------------------------

_RELEASE_FIELDS = {
    "cluster": ("dev", lambda f, v: f["clusters"][0].__setitem__("release", v), ".release:"),
    "hosted": ("hosted", lambda f, v: f["clusters"][0].__setitem__("release", v), ".release:"),
    "nodePool": (
        "hosted",
        lambda f, v: f["clusters"][0]["nodePools"][0].__setitem__("release", v),
        ".release:",
    ),
    "nodeClass": (
        "hosted",
        lambda f, v: f["clusters"][0]["autoNode"]["nodeClasses"][0].__setitem__("version", v),
        ".version:",
    ),
}


@pytest.mark.parametrize("field", sorted(_RELEASE_FIELDS))
@pytest.mark.parametrize(
    ("release", "says"),
    [
        ("4.22.03", "'4.22.03' has a leading zero, which no release has; write 4.22.3"),
        ("04.22.3", "has a leading zero, which no release has; write 4.22.3"),
        (
            "4.22.4-multi",
            "'4.22.4-multi' is a release image tag (the multi payload of 4.22.4), not a release; write 4.22.4",
        ),
        ("4.22.4-x86_64", "is a release image tag"),
        ("4.22.4-hotfix", "'-hotfix', which is not a pre-release OpenShift publishes; write 4.22.4"),
        ("v4.22.3", "no 'v'"),
        ("4.22", "a release line, not a release"),
        ("4.22.3.1", "is not a release"),
    ],
)
def test_a_release_is_refused_with_the_one_form(field: str, release: str, says: str) -> None:
    stack, edit, key = _RELEASE_FIELDS[field]
    raw = copy.deepcopy(stack_fleet(stack))
    edit(raw, release)
    msg = _error(raw, stack)
    assert key in msg and says in msg and "x.y.z, e.g. 4.22.3" in msg, msg
    assert "'x.y'" not in msg and "(4.16)" not in msg, msg


@pytest.mark.parametrize(
    "release", ["4.22.3", "4.22.0-rc.1", "4.22.0-ec.2", "4.22.0-0.nightly-2026-05-20-043516"]
)
def test_published_releases_are_accepted(release: str) -> None:
    raw = copy.deepcopy(stack_fleet("hosted"))
    raw["clusters"][0]["nodePools"][0]["release"] = release
    load_fleet(raw, "hosted", PROJECT, environ={})


# --- 19: what the CRDs accept but Karpenter can never act on ------------------------------------------------


def _karpenter() -> dict[str, Any]:
    return copy.deepcopy(stack_fleet("karpenter"))


def test_an_arm64_class_under_an_amd64_pool_is_refused() -> None:
    raw = _karpenter()
    pool = raw["clusters"][0]["karpenter"]["nodePools"][0]
    pool["nodeClass"] = "arm"  # an arm64 class; the pool's architectures default to [amd64]
    msg = _error(raw, "karpenter")
    assert (
        "karpenter.nodePools[0]: its node class 'arm' boots arm64 images (nodeClasses[1].architecture)" in msg
    )
    assert "no instance type can ever launch" in msg and "set architectures: [arm64] on the pool" in msg


@pytest.mark.parametrize(
    "edit",
    [
        lambda p: p.update(
            requirements=[{"key": "kubernetes.io/arch", "operator": "In", "values": ["arm64"]}]
        ),
        lambda p: p.update(
            requirements=[{"key": "kubernetes.io/arch", "operator": "NotIn", "values": ["amd64"]}]
        ),
        lambda p: p.update(
            architectures=["amd64", "arm64"],
            requirements=[
                {"key": "node.kubernetes.io/instance-type", "operator": "In", "values": ["m7g.large"]}
            ],
        ),
    ],
    ids=["arch-requirement", "arch-notin", "arm64-instance-type"],
)
def test_a_pool_whose_requirements_leave_no_launchable_type(edit: Callable[[dict[str, Any]], None]) -> None:
    raw = _karpenter()
    edit(raw["clusters"][0]["karpenter"]["nodePools"][0])  # the amd64 class 'general'
    msg = _error(raw, "karpenter")
    assert "karpenter.nodePools[0]" in msg and ("never launch" in msg or "can ever launch" in msg), msg


def test_reserved_capacity_alone_never_launches() -> None:
    raw = _hosted()
    raw["clusters"][0]["autoNode"]["nodePools"][0]["capacityTypes"] = ["reserved"]
    msg = _error(raw, "hosted")
    assert "capacityTypes: only 'reserved'" in msg and "capacityReservationSelectorTerms" in msg
    assert "add on-demand (or spot)" in msg


@pytest.mark.parametrize(
    ("schedule", "says"),
    [
        ("0 0 9 * * mon-fri", "has six fields (seconds first"),
        ("0 9 * * 1-5 2026", "has six fields"),
        ("CRON_TZ=Europe/Paris 0 9 * * *", "names a time zone (CRON_TZ=Europe/Paris)"),
        ("@dailyish", "is not a descriptor robfig/cron knows"),
        ("0 24 * * *", "the hour field: '24' ends above 23"),
        ("0 9 * * 7", "Sunday is 0 (or sun)"),
        ("*/0 * * * *", "has a step of 0"),
        ("0 0 31 4,6,9,11 *", "never comes"),
        ("0 0 30 2 *", "never comes"),
    ],
)
@pytest.mark.parametrize("where", ["driftWindows", "windows"])
def test_a_budget_schedule_karpenter_cannot_act_on(where: str, schedule: str, says: str) -> None:
    raw = _hosted()
    raw["clusters"][0]["autoNode"]["nodePools"][0]["disruption"][where][0]["schedule"] = schedule
    msg = _error(raw, "hosted")
    assert f"disruption.{where}[0].schedule" in msg and says in msg, msg


@pytest.mark.parametrize(
    "schedule",
    [
        "0 9 * * mon-fri",
        "@daily",
        "@annually",
        "*/15 * * * *",
        "0 0 29 2 *",
        "0 0 31 4 1",
        "5/15 0 ? JAN sun",
    ],
)
def test_budget_schedules_karpenter_reads_stay_accepted(schedule: str) -> None:
    raw = _hosted()
    raw["clusters"][0]["autoNode"]["nodePools"][0]["disruption"]["driftWindows"][0]["schedule"] = schedule
    load_fleet(raw, "hosted", PROJECT, environ={})
