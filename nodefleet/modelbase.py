"""The base every stack-config model shares: camelCase keys, unknown keys rejected, immutable."""

from __future__ import annotations

from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict
from pydantic.alias_generators import to_camel

from nodefleet.versions import VersionError, parse_ocp

DNS_LABEL = r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$"
ZONE = r"^[a-z]{2}(-gov)?-[a-z]+-\d[a-z]$"
REGION = r"^[a-z]{2}(-gov)?-[a-z]+-\d$"
OCP_XYZ = r"^\d+\.\d+\.\d+$"


class ConfigModel(BaseModel):
    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True, strict=True
    )


def _release_parses(v: str) -> str:
    try:
        parse_ocp(v)
    except VersionError as e:
        raise ValueError(str(e)) from None
    return v


OCPRelease = Annotated[str, AfterValidator(_release_parses)]


#: What a value matching each pattern the config models use looks like, for messages: users read "a DNS
#: label such as worker-1", not a regular expression.
PATTERN_HELP: dict[str, str] = {
    DNS_LABEL: "lowercase letters, digits and '-', starting and ending with a letter or digit (a DNS label), "
    "e.g. 'worker-1'",
    ZONE: "an AWS availability zone, e.g. 'us-east-1a'",
    REGION: "an AWS region, e.g. 'us-east-1'",
    OCP_XYZ: "an OCP release x.y.z, e.g. '4.22.3'",
    r"^[a-z0-9-]+\.[a-z0-9]+$": "an EC2 instance type, e.g. 'm6i.xlarge'",
    r"^arn:(aws|aws-cn|aws-us-gov):iam::[0-9]{12}:role/.+$": "an IAM role ARN, e.g. "
    "'arn:aws:iam::123456789012:role/my-role'",
    r"^vpc-[0-9a-f]+$": "a VPC id, e.g. 'vpc-0a1b2c3d4e5f60718'",
    r"^subnet-[0-9a-f]+$": "a subnet id, e.g. 'subnet-0f1e2d3c4b5a69788'",
    r"^((([0-9]+(h|m))|([0-9]+h[0-9]+m))(0s)?)$": "a duration in hours and/or minutes, e.g. '8h' or '1h30m'",
    r"^((100|[0-9]{1,2})%|[0-9]+)$": "a node count such as '5' or a percentage such as '10%'",
    r"^(([0-9]+(s|m|h))+|Never)$": "a duration such as '30s', '5m' or '720h', or 'Never'",
    r"^([0-9]+(s|m|h))+$": "a duration such as '30s', '5m' or '24h'",
    r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$": "an S3 bucket name: 3-63 lowercase letters, digits, '.' and '-'",
}
