"""The policy objects of the pack, shared by ``policies/__main__.py`` and the credential-free check.

Each rule runs behind the pack's safety net (:mod:`policies.guard`): an exception in a policy becomes a
mandatory violation naming the policy and the resource, never a failed analyzer. ``policy-defects`` comes
last so that it runs after every other policy.
"""

from __future__ import annotations

from pulumi_policy import Policy

from policies.boot_images import boot_image_advice, boot_image_ownership, boot_image_skew
from policies.crd_schema import crd_schema, crd_schema_unchecked
from policies.guard import guarded, policy_defects
from policies.hosted import hypershift_supported_versions, version_skew
from policies.karpenter import (
    drift_budget,
    karpenter_autonode_classes,
    karpenter_operator_fields,
    karpenter_provisioning_switch,
    karpenter_token_carry,
    karpenter_userdata,
)
from policies.pools import custom_pool_early_labels, custom_pool_labeling
from policies.secrets import no_plaintext_secrets
from policies.skew_record import skew_record

PACK_NAME = "nodefleet"

RULES: list[Policy] = [
    boot_image_ownership,
    no_plaintext_secrets,
    boot_image_skew,
    boot_image_advice,
    skew_record,
    custom_pool_labeling,
    custom_pool_early_labels,
    version_skew,
    hypershift_supported_versions,
    karpenter_userdata,
    karpenter_autonode_classes,
    karpenter_token_carry,
    drift_budget,
    karpenter_provisioning_switch,
    karpenter_operator_fields,
    crd_schema,
    crd_schema_unchecked,
]

POLICIES: list[Policy] = [*(guarded(rule) for rule in RULES), policy_defects]
