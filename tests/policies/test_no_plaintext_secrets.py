"""no-plaintext-secrets: render mode never writes Secret values to disk."""

from __future__ import annotations

from pulumi_policy.proxy import UNKNOWN_STRING_VALUE

from policies.secrets import SECRET_TOKEN, no_plaintext_secrets
from tests.policies.helpers import run_policy

SECRET = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "pull-secret"}, "data": {"x": "eA=="}}
RENDER = {"renderYamlToDirectory": "rendered/dev/dev"}


def test_secret_with_data_on_render_provider() -> None:
    (v,) = run_policy(no_plaintext_secrets, SECRET_TOKEN, SECRET, provider_props=RENDER)
    assert v.level == "mandatory" and "pull-secret" in v.message and "rendered/dev/dev" in v.message


def test_string_data_counts_too() -> None:
    props = {**{k: v for k, v in SECRET.items() if k != "data"}, "stringData": {"x": "y"}}
    assert len(run_policy(no_plaintext_secrets, SECRET_TOKEN, props, provider_props=RENDER)) == 1


def test_apply_mode_and_empty_secrets_pass() -> None:
    assert run_policy(no_plaintext_secrets, SECRET_TOKEN, SECRET, provider_props={"kubeconfig": "x"}) == []
    assert run_policy(no_plaintext_secrets, SECRET_TOKEN, SECRET) == []
    empty = {"metadata": {"name": "placeholder"}}
    assert run_policy(no_plaintext_secrets, SECRET_TOKEN, empty, provider_props=RENDER) == []


def test_unknown_data_is_advisory() -> None:
    props = {**SECRET, "data": UNKNOWN_STRING_VALUE}
    (v,) = run_policy(no_plaintext_secrets, SECRET_TOKEN, props, provider_props=RENDER)
    assert v.level == "advisory"


def test_other_types_ignored() -> None:
    assert (
        run_policy(no_plaintext_secrets, "kubernetes:core/v1:ConfigMap", SECRET, provider_props=RENDER) == []
    )


def test_judged_by_what_is_written_not_the_type_token() -> None:
    """A SecretPatch, a CustomResource of kind Secret and a SecretList all write plaintext values."""
    patch = run_policy(no_plaintext_secrets, f"{SECRET_TOKEN}Patch", SECRET, provider_props=RENDER)
    custom = run_policy(no_plaintext_secrets, "kubernetes:v1:Secret", SECRET, provider_props=RENDER)
    listed = run_policy(
        no_plaintext_secrets,
        f"{SECRET_TOKEN}List",
        {"kind": "SecretList", "items": [SECRET, {"metadata": {"name": "empty"}}]},
        provider_props=RENDER,
    )
    for found in (patch, custom, listed):
        (v,) = found
        assert "pull-secret" in v.message and "SealedSecret" in v.message and "ExternalSecret" in v.message


def test_malformed_shapes_give_a_verdict_not_a_crash() -> None:
    for props in (
        {"kind": "Secret", "metadata": "pull-secret", "data": {"x": "eA=="}},
        {"kind": "SecretList", "items": "nope"},
        {"kind": "SecretList", "items": ["x", 3]},
    ):
        found = run_policy(no_plaintext_secrets, "kubernetes:v1:Secret", props, provider_props=RENDER)
        assert all(v.level == "mandatory" for v in found)
    (v,) = run_policy(
        no_plaintext_secrets,
        SECRET_TOKEN,
        {"kind": "Secret", "metadata": "pull-secret", "data": {"x": "eA=="}},
        provider_props=RENDER,
    )
    assert "Secret 'test'" in v.message
