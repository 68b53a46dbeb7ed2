"""The policy objects of the pack, shared by ``policies/__main__.py`` and the credential-free check."""

from __future__ import annotations

from pulumi_policy import Policy

from policies.boot_images import boot_image_ownership
from policies.secrets import no_plaintext_secrets

PACK_NAME = "nodefleet"

POLICIES: list[Policy] = [boot_image_ownership, no_plaintext_secrets]
