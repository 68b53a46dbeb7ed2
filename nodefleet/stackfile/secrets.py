"""What the stack secrets nodefleet reads must hold, checked once the program has their decrypted values.

A stack secret (``pulumi config set --secret nodefleet:<key>``) is only known while the program runs, inside
an ``Output``; a wrong value (a key file instead of the CA, a pull secret that is not JSON) would otherwise
be written to S3 or into a Secret and fail on the nodes or at the API server, far from the stack file. The
program checks each value where it resolves and stops with one message naming the stack secret and the fix.
"""

from __future__ import annotations

import base64
import binascii
import re

from nodefleet.files import FileProblem, load_json

__all__ = ["CA_BUNDLE", "UNDECRYPTED_MARKER", "secret_value_problem"]

#: Kind of the MCS CA bundle of self-managed Karpenter. The other kinds are the data keys of the Secrets a
#: HostedCluster references (``HostedCluster.secret_refs``): ``.dockerconfigjson``, ``id_rsa.pub``, ``key``.
CA_BUNDLE = "ca-bundle"
#: The credential-free check runs without the stack's secrets provider and hands the program a placeholder
#: carrying this text for every ``secure:`` value (``mockruntime.run.SECRET_PLACEHOLDER``): such a value is
#: not the user's, so it is not judged.
UNDECRYPTED_MARKER = "[stack secret, not decrypted by the mock runtime]"

_PEM_BLOCK = re.compile(r"-----BEGIN ([A-Z0-9 ]+)-----\s*(.*?)\s*-----END \1-----", re.S)
_SSH_PUBLIC = re.compile(
    r"^(ssh-(rsa|ed25519|dss)|ecdsa-sha2-nistp(256|384|521)|sk-(ssh-ed25519|ecdsa-sha2-nistp256)@openssh\.com)"
    r" [A-Za-z0-9+/]+={0,3}( [^\n]*)?\n?$"
)


def _ca_bundle_problem(value: str) -> str | None:
    blocks = _PEM_BLOCK.findall(value)
    if any("PRIVATE KEY" in label for label, _ in blocks):
        return (
            "holds a private key; a CA bundle holds only CA certificates (-----BEGIN CERTIFICATE-----), which "
            "every node may read"
        )
    # The shape only: Ignition decodes the certificates on the node. What is caught here is the common mistake
    # of another file (a path, a DER file, a key, a kubeconfig) set as the secret.
    if not any(label == "CERTIFICATE" and body for label, body in blocks):
        return "is not a PEM CA bundle (no -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE----- block)"
    return None


def _docker_config_problem(value: str) -> str | None:
    try:
        doc = load_json(value, "pull secret")
    except FileProblem as exc:
        what = "is not JSON" if exc.syntax else "is JSON nested deeper than any pull secret"
        return f'{what}; a pull secret is the JSON of ~/.docker/config.json ({{"auths": {{...}}}})'
    if not isinstance(doc, dict) or not isinstance(doc.get("auths"), dict):
        return 'is JSON without an "auths" mapping; a pull secret looks like {"auths": {"quay.io": {"auth": ...}}}'
    return None


def _ssh_key_problem(value: str) -> str | None:
    if "PRIVATE KEY" in value:
        return "is a private key; give the public key (the .pub file), which the nodes' authorized_keys get"
    if not _SSH_PUBLIC.match(value):
        return "is not one OpenSSH public key line (e.g. 'ssh-ed25519 AAAA… user@host')"
    return None


def _aescbc_key_problem(value: str) -> str | None:
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        return "is not base64; an AES-CBC key is the base64 of 32 random bytes (`openssl rand -base64 32`)"
    if len(key) != 32:
        return f"decodes to {len(key)} bytes; an AES-CBC key is 32 random bytes (`openssl rand -base64 32`)"
    return None


_CHECKS = {
    CA_BUNDLE: _ca_bundle_problem,
    ".dockerconfigjson": _docker_config_problem,
    "id_rsa.pub": _ssh_key_problem,
    "key": _aescbc_key_problem,
}


def secret_value_problem(kind: str, value: str) -> str | None:
    """What is wrong with a decrypted stack secret of ``kind`` (a phrase: "is not …"), or None.

    Never quotes the value: it is a secret.
    """
    if UNDECRYPTED_MARKER in value:
        return None
    if not value.strip():
        return "is empty"
    check = _CHECKS.get(kind)
    return check(value) if check else None
