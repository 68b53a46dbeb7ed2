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
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True)


def _release_parses(v: str) -> str:
    try:
        parse_ocp(v)
    except VersionError as e:
        raise ValueError(str(e)) from None
    return v


OCPRelease = Annotated[str, AfterValidator(_release_parses)]
