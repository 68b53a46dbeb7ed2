"""The base every stack-config model shares: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

import re
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from nodefleet.apiserver.formats import qualified_name_errors
from nodefleet.bootimages.versions import VersionError, known_release, parse_ocp

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
#: A DNS name (``validation.IsDNS1123Subdomain``): what a cluster domain, a base domain or an API server name is.
DNS_SUBDOMAIN = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$"
ROLE_ARN = r"^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/.+$"
INSTANCE_TYPE = r"^[a-z0-9-]+\.[a-z0-9]+$"
KMS_KEY_ARN = r"^arn:(aws|aws-cn|aws-us-gov):kms:[a-z0-9-]+:[0-9]{12}:(key|alias)/.+$"
#: A Go duration as metav1.Duration parses it ("0s", "30m", "1h30m").
GO_DURATION = r"^(0|([0-9]+(\.[0-9]+)?(ns|us|µs|ms|s|m|h))+)$"
VOLUME_SIZE = r"^[0-9]+(Mi|Gi|Ti)$"
KARPENTER_MINOR = r"^1\.[0-9]+$"
SUBNET_ID = r"^subnet-[0-9a-f]+$"
SECURITY_GROUP_ID = r"^sg-[0-9a-f]+$"
#: IAM role and instance profile names (AWS IAM: ``[\w+=,.@-]+``, 64 and 128 characters at most).
IAM_NAME = r"^[A-Za-z0-9_+=,.@-]+$"
#: A stack config key under the ``nodefleet:`` namespace (``pulumi config set --secret nodefleet:<key>``).
CONFIG_KEY_NAME = r"^[A-Za-z][A-Za-z0-9_.-]*$"
ZONE = r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$"
REGION = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"


class ConfigModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True
    )


def _release_parses(v: str) -> str:
    """An OCP release nodefleet can place: parseable, and inside what its payload table knows."""
    try:
        known_release(parse_ocp(v))
    except VersionError as e:
        raise ValueError(str(e)) from None
    return v


OCPRelease = Annotated[str, AfterValidator(_release_parses)]

_LABEL_KEY_RULE = (
    "use [prefix/]name: the name up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter "
    "or digit; the optional prefix a DNS name, e.g. 'team' or 'example.com/team'"
)


def _short_problems(errors: list[str]) -> str:
    """apimachinery's own findings that say something beyond the rule (lengths, empty parts), for messages."""
    shown = [e for e in errors if "regex used" not in e]
    return f" ({'; '.join(shown)})" if shown else ""


def label_key_problem(key: str, what: str = "label key") -> str | None:
    """Why ``key`` is not a Kubernetes label (or annotation) key (``IsQualifiedName``), or None."""
    errors = qualified_name_errors(key)
    if not errors:
        return None
    return f"key '{key}' is not a Kubernetes {what}{_short_problems(errors)}; {_LABEL_KEY_RULE}"


def _label_keys(labels: dict[str, str]) -> dict[str, str]:
    for key in labels:
        problem = label_key_problem(key)
        if problem:
            raise ValueError(problem)
    return labels


#: Labels a NodePool puts on its nodes (``spec.template.metadata.labels``). The NodePool CRD judges their
#: values (the crd-schema policy reports them) but not their keys, which only the nodes' registration would
#: refuse, long after the apply: nodefleet checks the keys. An object's own ``metadata`` labels and
#: annotations are judged by the crd-schema policy, as the API server judges them.
LabelKeys = Annotated[dict[str, str], AfterValidator(_label_keys)]


#: What a value matching each pattern the config models use looks like, for messages: users read "a DNS
#: label such as worker-1", not a regular expression.
PATTERN_HELP: dict[str, str] = {
    DNS_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or digit (a DNS label), "
    "e.g. 'worker-1'",
    ZONE: "an AWS availability zone, e.g. 'us-east-1a'",
    REGION: "an AWS region, e.g. 'us-east-1'",
    INSTANCE_TYPE: "an EC2 instance type, e.g. 'm6i.xlarge'",
    ROLE_ARN: "an IAM role ARN, e.g. 'arn:aws:iam::123456789012:role/my-role'",
    DNS_SUBDOMAIN: "a DNS name such as 'edge.example.com': lowercase letters, digits, '-' and '.', without "
    "scheme, port or path",
    IAM_NAME: "an IAM name such as 'edge-karpenter-node': letters, digits and _ + = , . @ -, not an ARN",
    CONFIG_KEY_NAME: "a stack config key such as 'mcsCaBundle': letters, digits, '_', '.' and '-', starting "
    "with a letter (the value is set with `pulumi config set --secret nodefleet:<key>`)",
    r"^vpc-[0-9a-f]+$": "a VPC id, e.g. 'vpc-0a1b2c3d4e5f60718'",
    SUBNET_ID: "a subnet id, e.g. 'subnet-0f1e2d3c4b5a69788'",
    SECURITY_GROUP_ID: "a security group id, e.g. 'sg-0123456789abcdef0'",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": "an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-', "
    "e.g. 'edge-m2x7c-ignition'",
    KMS_KEY_ARN: "a KMS key or alias ARN, e.g. 'arn:aws:kms:us-east-2:123456789012:key/6f1c2a9e-…'",
    GO_DURATION: "a Go duration such as '30m', '1h30m' or '0s'",
    VOLUME_SIZE: "a size in Mi, Gi or Ti, such as '8Gi'",
    KARPENTER_MINOR: "a Karpenter minor version such as '1.15', quoted so YAML keeps it a string",
}


#: One S3 key segment nodefleet writes (the Ignition pointer keys of nodefleet.render.ignition).
_SEGMENT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+=@-]*$")

#: What an S3 key segment nodefleet writes may hold, for messages.
SEGMENT_RULE = "letters, digits and . _ + = @ -, starting with a letter or digit"


def key_segment(what: str, value: str, example: str = "rendered-worker-5f1c0e4b2a9d") -> str:
    """``value`` when it is one S3 key segment nodefleet writes, else ``ValueError`` naming ``what`` and the fix.

    One segment: not empty, no ``/``, not ``.`` or ``..`` (an object key is not a path, but a reader that
    treats it as one must not climb out of the prefix), only :data:`SEGMENT_RULE`.
    """
    if not value:
        raise ValueError(f"pointer key: {what} is empty; use {SEGMENT_RULE}, e.g. '{example}'")
    if "/" in value:
        raise ValueError(f"pointer key: {what} '{value}' contains '/'; use one segment of {SEGMENT_RULE}")
    if value in (".", "..") or not _SEGMENT.match(value):
        raise ValueError(f"pointer key: {what} '{value}' must use only {SEGMENT_RULE}, e.g. '{example}'")
    return value


def prefix_segments(prefix: str) -> list[str]:
    """The ``/``-separated segments of a key prefix, each checked (no empty, leading or trailing segment)."""
    parts = prefix.split("/")
    for i, part in enumerate(parts):
        key_segment(f"prefix '{prefix}' segment {i + 1}", part, "nodefleet/ignition")
    return parts
