"""The one guarded reader (nodefleet/files.py): every file kind that is not a regular file refused without
blocking, every encoding named, every parser bounded, every credential redacted; and the output checks of
nodefleet/stackfile/paths.py that every output option shares."""

from __future__ import annotations

import os
import socket
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodefleet import files
from nodefleet.files import (
    MAX_DEPTH,
    FastBoundedLoader,
    FileProblem,
    decode_text,
    load_json,
    load_yaml,
    looks_like_file_content,
    read_text,
    redact,
    url_without_credentials,
)
from nodefleet.stackfile.paths import PathError, output_file, output_folder
from tests.bounded import within


def _problem(call: Callable[[], Any], seconds: float = 60) -> str:
    with pytest.raises(FileProblem) as e:
        within(seconds, call)
    message = str(e.value)
    assert "\n" not in message and "Traceback" not in message
    return message


# --- what is read: regular files only ----------------------------------------------------------------


def test_a_regular_file_is_read(tmp_path: Path) -> None:
    (tmp_path / "k").write_text("apiVersion: v1\n")
    assert read_text(tmp_path / "k", what="kubeconfig") == "apiVersion: v1\n"


def test_a_named_pipe_nobody_writes_is_refused_at_once(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "kubeconfig")
    message = _problem(lambda: read_text(tmp_path / "kubeconfig", what="kubeconfig"), 10)
    assert "named pipe" in message and "save the kubeconfig as a regular file and give its path" in message


def test_a_symlink_is_followed_only_to_a_regular_file(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "to-fifo").symlink_to(tmp_path / "fifo")
    (tmp_path / "to-environ").symlink_to("/proc/self/environ")
    (tmp_path / "to-zero").symlink_to("/dev/zero")
    (tmp_path / "real").write_text("a: 1\n")
    (tmp_path / "to-real").symlink_to(tmp_path / "real")
    assert "named pipe" in _problem(lambda: read_text(tmp_path / "to-fifo"), 10)
    assert "kernel's /proc" in _problem(lambda: read_text(tmp_path / "to-environ"))
    assert "character device" in _problem(lambda: read_text(tmp_path / "to-zero"), 10)
    assert read_text(tmp_path / "to-real") == "a: 1\n"


@pytest.mark.parametrize(
    "path", ["/proc/self/environ", "/proc/self/cmdline", "/sys/devices/system/cpu/online"]
)
def test_kernel_files_are_not_read(path: str) -> None:
    if not os.path.exists(path):
        pytest.fail(f"{path} is missing on this machine; pick another kernel file")
    assert "(generated on reading)" in _problem(lambda: read_text(path))


def test_a_socket_a_directory_and_a_missing_file(tmp_path: Path) -> None:
    server = socket.socket(socket.AF_UNIX)
    server.bind(str(tmp_path / "s"))
    try:
        assert "a socket" in _problem(lambda: read_text(tmp_path / "s"))
    finally:
        server.close()
    assert "is a directory, not a file; give the path of the state file itself" in _problem(
        lambda: read_text(tmp_path, what="state file")
    )
    assert "no such file; check the path" in _problem(lambda: read_text(tmp_path / "nope"))
    assert "is not a usable path (it holds a NUL character)" in _problem(lambda: read_text("a\0b"))


def test_the_limit_is_the_kinds_own(tmp_path: Path) -> None:
    big = tmp_path / "kubeconfig"
    with big.open("wb") as out:
        out.truncate(files.KUBECONFIG_BYTES + 1)  # sparse: a huge file of NUL bytes, read no further
    message = _problem(lambda: read_text(big, what="kubeconfig", limit=files.KUBECONFIG_BYTES))
    assert "(at most 4,194,304)" in message and "larger than any kubeconfig" in message


# --- encodings ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("codec", "named"),
    [
        ("utf-16", "UTF-16 (little-endian)"),
        ("utf-16-le", "UTF-16 (little-endian)"),
        ("utf-16-be", "UTF-16 (big-endian)"),
        ("utf-32", "UTF-32 (little-endian)"),
        ("utf-32-be", "UTF-32 (big-endian)"),
    ],
)
def test_wide_encodings_are_named(codec: str, named: str) -> None:
    message = _problem(lambda: decode_text("config:\n  a: b\n".encode(codec), "stacks/Pulumi.x.yaml"))
    assert f"is {named} text; nodefleet reads UTF-8" in message and "save it as UTF-8" in message
    assert "binary" not in message


def test_a_utf8_byte_order_mark_is_dropped() -> None:
    assert decode_text("\ufeffconfig: {}\n".encode(), "x") == "config: {}\n"


def test_a_nul_byte_deep_in_a_file_says_where() -> None:
    data = b"config:\n" + b"  a: b\n" * 5000 + b"  c: d\x00e\n"
    message = _problem(lambda: decode_text(data, "stacks/Pulumi.x.yaml", what="stack file"))
    assert "stacks/Pulumi.x.yaml: line 5002, column 7: a NUL byte" in message
    assert "check that the right file was given as the stack file" in message


def test_latin1_says_where_and_how_to_convert() -> None:
    message = _problem(lambda: decode_text("a: b\nc: caf\xe9\n".encode("latin-1"), "x.yaml"))
    assert "line 2, column 7: byte 0xe9 is not UTF-8" in message and "iconv -f LATIN1" in message


def test_compressed_files_are_named() -> None:
    assert "is gzip-compressed" in _problem(lambda: decode_text(b"\x1f\x8b\x08\x00", "k.gz"))


# --- YAML: bounded ---------------------------------------------------------------------------------------


def _merge_bomb(levels: int = 12) -> str:
    text = "a0: &a0 {x: 1, y: 2}\n"
    for i in range(1, levels):
        text += f"a{i}: &a{i} {{<<: [{', '.join([f'*a{i - 1}'] * 9)}]}}\n"
    return text


def _laughs(levels: int = 9) -> str:
    text = 'l0: &l0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]\n'
    for i in range(1, levels):
        text += f"l{i}: &l{i} [{', '.join([f'*l{i - 1}'] * 9)}]\n"
    return text


@pytest.mark.parametrize("loader", [files.BoundedLoader, FastBoundedLoader], ids=["python", "libyaml"])
@pytest.mark.parametrize(
    ("text", "says"),
    [
        (_merge_bomb(), "expand to more than 1,000,000 values (an alias bomb"),
        (_laughs(), "expand to more than 1,000,000 values (an alias bomb"),
        ("a: &a [1, *a]\n", "an alias inside its own anchor"),
        ("a: " + "[" * 20_000 + "]" * 20_000 + "\n", f"nested more than {MAX_DEPTH} levels deep"),
        ("".join("  " * i + f"k{i}:\n" for i in range(300)) + "  " * 300 + "v\n", "nested more than"),
        (
            "d0: &d0 " + "[" * 60 + "]" * 60 + "\n" + "d1: &d1 " + "[" * 60 + "*d0" + "]" * 60 + "\n",
            "once its aliases are followed",
        ),
        ("a: 1\nb: x\x01y\n", "line 2, column 5: the control character U+0001"),
        ("a: " + "1" * 5000 + "\n", "a value YAML cannot build"),
    ],
    ids=[
        "merge-keys",
        "billion-laughs",
        "recursive",
        "deep-flow",
        "deep-block",
        "deep-by-alias",
        "control",
        "int",
    ],
)
def test_yaml_bombs_and_depths_are_refused(loader: type[Any], text: str, says: str) -> None:
    message = _problem(lambda: load_yaml(text, "stacks/Pulumi.x.yaml", loader=loader), 60)
    assert message.startswith("stacks/Pulumi.x.yaml: ") and says in message, message


def test_yaml_aliases_within_bounds_are_read() -> None:
    text = "pools: &p [{name: a}, {name: b}]\nc1: {pools: *p}\nc2: {<<: {x: 1}, pools: *p}\n"
    assert load_yaml(text, "x") == {
        "pools": [{"name": "a"}, {"name": "b"}],
        "c1": {"pools": [{"name": "a"}, {"name": "b"}]},
        "c2": {"x": 1, "pools": [{"name": "a"}, {"name": "b"}]},
    }


def test_yaml_at_the_depth_limit_is_read() -> None:
    text = "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1)
    value = load_yaml(text, "x")
    for _ in range(MAX_DEPTH - 2):
        (value,) = value
    assert value == []


def test_broken_yaml_says_where_without_the_content() -> None:
    message = _problem(lambda: load_yaml("users:\n- name: x\n  user: {token: s3cr3t-canary\n", "kubeconfig"))
    assert message.startswith("kubeconfig: line ") and "s3cr3t-canary" not in message


# --- JSON: bounded ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("[" * 100_000 + "]" * 100_000, f"nested more than {MAX_DEPTH} levels deep"),
        ('{"a": ' * 500 + "1" + "}" * 500, f"nested more than {MAX_DEPTH} levels deep"),
        ('{"a": NaN}', "NaN is not JSON"),
        ('{"a": 1,\n "b" 2}', "is not valid JSON (Expecting ':' delimiter: line 2, column 6)"),
        ('{"a": ' + "9" * 5000 + "}", "is not valid JSON (Exceeds the limit (4300 digits)"),
    ],
    ids=["deep-100000", "deep-500", "nan", "syntax", "huge-number"],
)
def test_json_is_bounded(text: str, says: str) -> None:
    message = _problem(lambda: load_json(text, "catalogs/x.json"))
    assert message.startswith("catalogs/x.json: ") and says in message, message


# --- secrets ---------------------------------------------------------------------------------------------

CANARY = "canary-7f3a9c1e2b"


@pytest.mark.parametrize(
    "text",
    [
        f"https://user:{CANARY}@git.example.com/fleet.git",
        f"https://{CANARY}@git.example.com/fleet.git",
        f"Authorization: Bearer {CANARY}",
        f"curl -H 'Authorization: Basic {CANARY}'",
        f"users:\n- name: admin\n  user:\n    token: {CANARY}\n",
        f'{{"users": [{{"user": {{"token": "{CANARY}"}}}}]}}',
        f"    client-key-data: {CANARY}\n",
        f"password={CANARY}",
        f"GITHUB_TOKEN={CANARY}",
        f'{{"auths": {{"quay.io": {{"auth": "{CANARY}"}}}}}}',
        f"-----BEGIN RSA PRIVATE KEY-----\n{CANARY}\n-----END RSA PRIVATE KEY-----\n",
        f"id-token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJ{CANARY}.c2lnbmF0dXJl",
        f"sha256~{CANARY}abcdefghijklmnop",
        f"ghp_{CANARY.replace('-', '')}abcdefghijklmnop",
    ],
)
def test_redact_removes_every_kind_of_credential(text: str) -> None:
    assert CANARY not in redact(text), redact(text)


#: Made-up credentials in the shapes AWS issues them (none is or was valid).
AWS_KEY_ID = "AKIAZ7Q3M5X2R4T6V8WB"
AWS_TEMP_KEY_ID = "ASIAZ7Q3M5X2R4T6V8WB"
AWS_SECRET = "q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6Jf0Gb5Yc8Ue2Ia4O/"
AWS_SESSION = (
    "IQoJb3JpZ2luX2VjEJr//////////wEaCXVzLWVhc3QtMSJHMEUCIQDq7fakeSessionTokenBody0123456789abcdefXYZ=="
)


@pytest.mark.parametrize(
    ("text", "secret"),
    [
        # The environment a health script runs in, printed (`env`, `set -x`).
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws_access_key_id={AWS_KEY_ID}", AWS_SECRET),
        (f"AWS_SECRET_ACCESS_KEY={AWS_SECRET} aws_access_key_id={AWS_KEY_ID}", AWS_KEY_ID),
        (f'export AWS_SECRET_ACCESS_KEY="{AWS_SECRET}"', AWS_SECRET),
        (f"AWS_SESSION_TOKEN={AWS_SESSION}", AWS_SESSION),
        # ~/.aws/credentials, printed.
        (f"[default]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n", AWS_SECRET),
        (f"[default]\naws_access_key_id = {AWS_KEY_ID}\naws_secret_access_key = {AWS_SECRET}\n", AWS_KEY_ID),
        # An access key id alone, anywhere (an error message, a log line).
        (f"using credentials of {AWS_TEMP_KEY_ID} for role ops", AWS_TEMP_KEY_ID),
        # `aws sts assume-role` / `get-session-token`, JSON, text and table output.
        (
            f'{{"Credentials": {{"AccessKeyId": "{AWS_TEMP_KEY_ID}", "SecretAccessKey": "{AWS_SECRET}"}}}}',
            AWS_SECRET,
        ),
        (f'{{"Credentials": {{"SessionToken": "{AWS_SESSION}"}}}}', AWS_SESSION),
        (f"CREDENTIALS\t{AWS_TEMP_KEY_ID}\t2026-11-28T23:00:00Z\t{AWS_SECRET}\t{AWS_SESSION}", AWS_SECRET),
        (f"||  SecretAccessKey |  {AWS_SECRET}  ||", AWS_SECRET),
        # The instance metadata service's role credentials (IMDS security-credentials).
        (
            f'{{"Code" : "Success", "SecretAccessKey" : "{AWS_SECRET}", "Token" : "{AWS_SESSION}"}}',
            AWS_SECRET,
        ),
        (
            f'{{"Code" : "Success", "SecretAccessKey" : "{AWS_SECRET}", "Token" : "{AWS_SESSION}"}}',
            AWS_SESSION,
        ),
        # A session token with no name beside it.
        (f"token was {AWS_SESSION} then", AWS_SESSION),
        # A secret key near its name in any other writing (detect-secrets' AWS pattern).
        (f"aws secret key is '{AWS_SECRET}'", AWS_SECRET),
        # A presigned URL (S3, `aws rds generate-db-auth-token`): its signature and security token.
        (
            "https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature="
            "9f2c4e1a7b3d5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8",
            "9f2c4e1a7b3d5f60718293a4b5c6d7e8f90a1b2c3d4e5f60718293a4b5c6d7e8",
        ),
        (f"db.example:5432/?Action=connect&X-Amz-Security-Token={AWS_SESSION}", AWS_SESSION),
        # A SigV4 Authorization header.
        (
            f"Authorization: AWS4-HMAC-SHA256 Credential={AWS_KEY_ID}/20261128/us-east-1/sts/aws4_request, "
            "SignedHeaders=host;x-amz-date, Signature=5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
            "5d672d79c15b13162d9279b0855cfba6789a8edb4c82c400e06b5924a6f2b5d7",
        ),
        # Secrets Manager's get-secret-value: the whole SecretString, escaped quotes and all.
        (
            '{"Name": "db", "SecretString": "{\\"username\\":\\"app\\",\\"password\\":\\"hunter2-xyzzy\\"}"}',
            "hunter2-xyzzy",
        ),
        # `aws ecr get-login-password` and `aws eks get-token`.
        ("eyJwYXlsb2FkIjoiQ2FuYXJ5RUNSdG9rZW5ib2R5MDEyMzQ1Njc4OWFiY2RlZg==", "Q2FuYXJ5RUNSdG9rZW5ib2R5"),
        (
            '{"status": {"token": "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9uPUdldENhbGxlcklkZW50aXR5"}}',
            "aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8",
        ),
        (
            "k8s-aws-v1.aHR0cHM6Ly9zdHMuYW1hem9uYXdzLmNvbS8_QWN0aW9uPUdldENhbGxlcklkZW50aXR5",
            "aHR0cHM6Ly9zdHMu",
        ),
        # Logins echoed by `set -x`: oc, docker.
        (
            "+ oc login https://api.example.com:6443 -u kubeadmin -p Xq7Rt-8Zb2K-mW4pY-3nVd9",
            "Xq7Rt-8Zb2K-mW4pY-3nVd9",
        ),
        (f"+ docker login -u AWS -p {AWS_SECRET} 123456789012.dkr.ecr.us-east-1.amazonaws.com", AWS_SECRET),
        (f"+ tool --password {AWS_SECRET} --region us-east-1", AWS_SECRET),
        # Vault and Slack, where scripts read secrets and send alerts.
        ("VAULT: hvs.CAESIJ7q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6Jf0Gb5Yc8Ue2Ia4O/", "CAESIJ7q8Zr4Tm2Xv7Kp1Lw9Ns3"),
        (
            "posting to https://hooks.slack.com/services/T0ABCDEF1/B0ABCDEF2/q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6J",
            "q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6J",
        ),
        ("slack xoxb-123456789012-1234567890123-q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6J", "q8Zr4Tm2Xv7Kp1Lw9Ns3Hd6J"),
    ],
)
def test_redact_removes_the_credentials_a_health_command_on_aws_prints(text: str, secret: str) -> None:
    assert secret not in redact(text), redact(text)


def test_redact_keeps_aws_names_that_are_not_credentials() -> None:
    text = (
        "arn:aws:iam::123456789012:role/shop-a-7f2k9-node-pool us-east-2 ami-0a1b2c3d4e5f60718 "
        "vpc-0a1b2c3d4e5f60702 i-0abcdef1234567890 AKIA-looking words ASIAN AKIAXX"
    )
    assert redact(text) == text


def test_redact_keeps_what_is_not_a_credential() -> None:
    text = "wave 1: stack hosted at 4.22.3; https://git.example.com/fleet.git; kind: Secret; tokens: 3"
    assert redact(text) == text


def test_a_url_loses_its_credentials_and_keeps_the_rest() -> None:
    assert url_without_credentials(f"https://u:{CANARY}@git.example.com:8443/a/b.git") == (
        "https://git.example.com:8443/a/b.git"
    )
    assert url_without_credentials("git@github.com:org/repo.git") == "git@github.com:org/repo.git"


@pytest.mark.parametrize(
    ("value", "content"),
    [
        ("apiVersion: v1\nkind: Config\n", True),
        ("clusters: []", True),
        ("-----BEGIN CERTIFICATE-----", True),
        ('{"apiVersion": "v1"}', True),
        ("kubeconfigs/prod.yaml", False),
        ("/home/ops/.kube/config", False),
    ],
)
def test_content_given_as_a_path_is_recognised(value: str, content: bool) -> None:
    assert looks_like_file_content(value) is content


# --- output options ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("check", [output_folder, output_file], ids=["folder", "file"])
@pytest.mark.parametrize(
    ("path", "says"),
    [
        (".git/wiring", "lies inside .git/"),
        ("repo/.git/hooks/x", "lies inside .git/"),
        ("sub/../.git/x", "lies inside .git/"),
        ("a\x01b", "control character"),
        ("/", "is the file system root"),
    ],
)
def test_output_options_are_refused_where_files_cannot_go(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, check: Callable[..., Path], path: str, says: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "repo" / ".git" / "hooks").mkdir(parents=True)
    with pytest.raises(PathError, match=says):
        check(path, example="gitops/")


def test_an_output_folder_that_is_a_file(tmp_path: Path) -> None:
    (tmp_path / "notes").write_text("")
    with pytest.raises(PathError, match=r"is a file, not a folder.*e\.g\. gitops/"):
        output_folder(tmp_path / "notes", example="gitops/")
    with pytest.raises(PathError, match="runs through a file"):
        output_folder(tmp_path / "notes" / "x", example="gitops/")
    assert output_folder(tmp_path / "new" / "deeper", example="gitops/") == tmp_path / "new" / "deeper"


def test_an_output_file_that_is_a_folder_or_a_pipe(tmp_path: Path) -> None:
    (tmp_path / "dir").mkdir()
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(PathError, match="is a folder; name a file"):
        output_file(tmp_path / "dir", example="state.json")
    with pytest.raises(PathError, match="not a regular file"):
        within(10, lambda: output_file(tmp_path / "fifo", example="state.json"))
    (tmp_path / "old.json").write_text("{}")
    assert output_file(tmp_path / "old.json", example="state.json") == tmp_path / "old.json"


def test_a_stream_of_documents_is_read_whole_and_bounded() -> None:
    from nodefleet.files import FileProblem, load_yaml_documents

    assert load_yaml_documents("a: 1\n---\n---\nb: [2]\n", "s.yaml") == [{"a": 1}, {"b": [2]}]
    assert load_yaml_documents("", "s.yaml") == []
    with pytest.raises(FileProblem, match=r"^s.yaml: line 4, column 1: expected the node content"):
        load_yaml_documents("a: 1\n---\nb: [\n", "s.yaml")
    bomb = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
        f"{c}: &{c} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n"
        for p, c in zip("abcdefg", "bcdefgh", strict=True)
    )
    with pytest.raises(FileProblem):
        load_yaml_documents("x: 1\n---\n" + bomb, "s.yaml")
