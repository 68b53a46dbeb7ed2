"""What a stack secret must hold, judged without ever quoting it."""

from __future__ import annotations

import base64

import pytest

from mockruntime.run import SECRET_PLACEHOLDER
from nodefleet.stackfile.secrets import CA_BUNDLE, UNDECRYPTED_MARKER, secret_value_problem

CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ+ab/c=\n-----END CERTIFICATE-----\n"
KEY_32 = base64.b64encode(bytes(range(32))).decode()


@pytest.mark.parametrize(
    ("kind", "value"),
    [
        (CA_BUNDLE, CA),
        (CA_BUNDLE, CA + CA),
        (".dockerconfigjson", '{"auths": {"quay.io": {"auth": "dXNlcjpwYXNz"}}}'),
        ("id_rsa.pub", "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIHkq me@host\n"),
        ("key", KEY_32),
    ],
)
def test_good_values_pass(kind: str, value: str) -> None:
    assert secret_value_problem(kind, value) is None


@pytest.mark.parametrize(
    ("kind", "value", "says"),
    [
        (CA_BUNDLE, "/home/me/mcs-ca.pem", "is not a PEM CA bundle"),
        (
            CA_BUNDLE,
            "-----BEGIN RSA PRIVATE KEY-----\nsecretbody\n-----END RSA PRIVATE KEY-----\n",
            "private key",
        ),
        (
            CA_BUNDLE,
            CA + "-----BEGIN PRIVATE KEY-----\nsecretbody\n-----END PRIVATE KEY-----\n",
            "private key",
        ),
        (CA_BUNDLE, "  \n", "is empty"),
        (".dockerconfigjson", "secretbody", "is not JSON"),
        (".dockerconfigjson", '{"secretbody": 1}', 'without an "auths" mapping'),
        (
            "id_rsa.pub",
            "-----BEGIN OPENSSH PRIVATE KEY-----\nsecretbody\n-----END OPENSSH PRIVATE KEY-----",
            "private",
        ),
        ("id_rsa.pub", "secretbody", "not one OpenSSH public key line"),
        ("key", "secretbody!", "is not base64"),
        ("key", base64.b64encode(b"secretbody").decode(), "decodes to 10 bytes"),
    ],
)
def test_bad_values_say_what_is_wrong_without_quoting_them(kind: str, value: str, says: str) -> None:
    problem = secret_value_problem(kind, value)
    assert problem is not None and says in problem
    assert "secretbody" not in problem


def test_the_credential_free_checks_placeholder_is_not_judged() -> None:
    """The mock runtime cannot decrypt `secure:` values; what it hands the program is not the user's."""
    assert UNDECRYPTED_MARKER in SECRET_PLACEHOLDER
    for kind in (CA_BUNDLE, ".dockerconfigjson", "id_rsa.pub", "key"):
        assert secret_value_problem(kind, SECRET_PLACEHOLDER) is None
