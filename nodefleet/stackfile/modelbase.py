"""The base every stack-config model shares: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from nodefleet.apiserver.formats import qualified_name_errors
from nodefleet.bootimages.versions import VersionError, known_release, parse_release

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
    """An OCP release nodefleet can place: x.y.z (published pre-releases too), inside what its payload table
    knows; every other spelling is refused with the one form (:func:`nodefleet.bootimages.versions.parse_release`)."""
    problem = _release_problem(v)
    if problem:
        raise ValueError(problem)
    return v


@functools.lru_cache(maxsize=4096)
def _release_problem(v: str) -> str | None:
    # Remembered per text: a fleet of thousands of stacks names a handful of releases.
    try:
        known_release(parse_release(v))
    except VersionError as e:
        return str(e)
    return None


OCPRelease = Annotated[str, AfterValidator(_release_parses)]


def refused_when(problem_of: Callable[[str], str | None]) -> AfterValidator:
    """A validator that refuses a value when ``problem_of`` finds a problem with it (the message is the problem)."""

    # ``problem_of`` is a function of the text alone, remembered per text: a fleet's stacks repeat their values.
    remembered = functools.lru_cache(maxsize=4096)(problem_of)

    def check(value: str) -> str:
        problem = remembered(value)
        if problem:
            raise ValueError(problem)
        return value

    return AfterValidator(check)


# --- values the controllers cannot parse, or AWS refuses ------------------------------------------------

#: Go's ``time.Duration`` is an int64 of nanoseconds: ``time.ParseDuration`` refuses anything longer than this
#: (about 292 years), so a controller could not read the object, though the CRD's pattern admits it.
GO_DURATION_MAX_NS = 2**63 - 1
_GO_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9}
_GO_UNITS["h"] = 3600 * 10**9
_GO_PART = re.compile(r"([0-9]*)(?:\.([0-9]*))?(ns|us|µs|μs|ms|s|m|h)")


def go_duration_nanoseconds(text: str) -> int | None:
    """The nanoseconds of a Go duration string as ``time.ParseDuration`` reads it before its int64 check,
    or None where it is not one (the patterns say what a duration looks like)."""
    body = text.lstrip("+-")
    if body == "0":
        return 0
    if not body:
        return None
    total, pos = 0, 0
    while pos < len(body):
        m = _GO_PART.match(body, pos)
        if not m or not (m.group(1) or m.group(2)):
            return None
        unit = _GO_UNITS[m.group(3)]
        whole, frac = m.group(1) or "0", m.group(2) or ""
        total += int(whole) * unit + (int(frac) * unit // 10 ** len(frac) if frac else 0)
        pos = m.end()
    return total


def fits_go_duration(value: str | None) -> str | None:
    if value is None:
        return value
    ns = go_duration_nanoseconds(value)
    if ns is not None and ns > GO_DURATION_MAX_NS:
        raise ValueError(
            f"'{value}' is longer than Go's time.Duration holds (at most 2562047h47m16s, about 292 years): the "
            "API server would store it, and the controller could not read the object; use a shorter duration, "
            "e.g. 8760h for a year"
        )
    return value


#: A duration a Go controller reads with ``time.ParseDuration`` (Karpenter, HyperShift, the machine-api).
GoDurationValue = Annotated[str, AfterValidator(fits_go_duration)]

#: AWS tag limits (EC2 ``CreateTags``, IAM, S3 alike): keys 1-128 characters, values 0-256, counted in
#: Unicode characters; ``aws:`` keys are AWS's own.
MAX_TAG_KEY = 128
MAX_TAG_VALUE = 256


def _aws_tags(tags: dict[str, str]) -> dict[str, str]:
    for key, value in tags.items():
        if not key or len(key) > MAX_TAG_KEY:
            raise ValueError(
                f"tag key '{key[:40]}…' is {len(key)} characters long; AWS takes tag keys of 1 to {MAX_TAG_KEY} "
                "characters: shorten it"
                if key
                else "a tag key is empty; AWS takes tag keys of 1 to 128 characters: name it"
            )
        if key.lower().startswith("aws:"):
            raise ValueError(
                f"tag key '{key}' starts with 'aws:', which AWS keeps for its own tags; rename it"
            )
        if len(value) > MAX_TAG_VALUE:
            raise ValueError(
                f"the value of tag '{key}' is {len(value)} characters long; AWS refuses tag values over "
                f"{MAX_TAG_VALUE} characters (every instance launch with it would fail): shorten it"
            )
    return tags


#: Tags nodefleet passes to AWS (on instances, volumes, the hosted cluster's resources).
AwsTags = Annotated[dict[str, str], AfterValidator(_aws_tags)]

#: No AWS region has a zone past ``f`` (us-east-1 has six, a-f; most have three). Which letters a region has
#: for an account only AWS can tell (``aws ec2 describe-availability-zones``): see :func:`zone_advice`.
LAST_ZONE_LETTER = "f"
#: The zone letters AWS documents for regions nodefleet's users run in (AWS, "Regions and Zones"). An account
#: may see fewer (us-west-1 shows two of a, b, c): a zone outside these is advice, never an error.
REGION_ZONES = {
    "us-east-1": "abcdef",
    "us-east-2": "abc",
    "us-west-1": "abc",
    "us-west-2": "abcd",
    "ca-central-1": "abd",
    "eu-west-1": "abc",
    "eu-west-2": "abc",
    "eu-west-3": "abc",
    "eu-central-1": "abc",
    "eu-north-1": "abc",
    "ap-northeast-1": "acd",
    "ap-northeast-2": "abcd",
    "ap-southeast-1": "abc",
    "ap-southeast-2": "abc",
    "ap-south-1": "abc",
    "sa-east-1": "abc",
}


def _zone_exists(zone: str) -> str:
    letter = zone[-1]
    if letter > LAST_ZONE_LETTER:
        raise ValueError(
            f"'{zone}' names zone '{letter}', and no AWS region has a zone past '{LAST_ZONE_LETTER}'; use a zone "
            f"the region lists (`aws ec2 describe-availability-zones --region {zone[:-1]}`), e.g. {zone[:-1]}a"
        )
    return zone


#: An availability zone: the pattern, and a letter some region can have.
Zone = Annotated[str, Field(pattern=ZONE), AfterValidator(_zone_exists)]


def zone_advice(zone: str) -> str | None:
    """Advice for a zone its region is not documented to have (only AWS can tell for an account), or None."""
    letters = REGION_ZONES.get(zone[:-1])
    if letters is None or zone[-1] in letters:
        return None
    known = ", ".join(zone[:-1] + c for c in letters)
    return (
        f"'{zone}' is not among the zones AWS documents for {zone[:-1]} ({known}); check it with `aws ec2 "
        f"describe-availability-zones --region {zone[:-1]}` (zone letters differ per account), or use one of those"
    )


#: Namespace prefixes Kubernetes and OpenShift keep for themselves: ``kube-`` (Kubernetes' system namespaces,
#: kube-system, kube-public, kube-node-lease) and ``openshift-`` (and ``openshift``), which OpenShift refuses
#: as a project name and runs its platform in (other pod security and monitoring rules apply there).
RESERVED_NAMESPACE_PREFIXES = ("kube-", "openshift-")
RESERVED_NAMESPACES = ("openshift",)


def reserved_namespace_problem(namespace: str) -> str | None:
    prefix = next((p for p in RESERVED_NAMESPACE_PREFIXES if namespace.startswith(p)), None)
    if prefix is None and namespace not in RESERVED_NAMESPACES:
        return None
    why = f"the '{prefix}' prefix is reserved" if prefix else f"'{namespace}' is reserved"
    return (
        f"'{namespace}' is a namespace of the platform itself ({why}: Kubernetes and OpenShift run their own "
        "components there, OpenShift refuses such project names, and HyperShift would put the control plane in "
        f"'{namespace}-<name>' under the platform's rules); use a namespace of your own, e.g. clusters"
    )


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
