"""Config rejections say what a valid value looks like, never just a regular expression or a type name."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from nodefleet.config import ConfigError, load_fleet
from tests.conftest import PROJECT

Mutation = Callable[[dict[str, Any]], None]


def _ms(key: str, value: Any) -> Mutation:
    return lambda f: f["clusters"][0]["machineSets"][0].__setitem__(key, value)


def _cluster(key: str, value: Any) -> Mutation:
    return lambda f: f["clusters"][0].__setitem__(key, value)


@pytest.mark.parametrize(
    ("mutate", "expected"),
    [
        (
            _ms("replicas", True),
            "machineSets[0].replicas: Input should be a valid integer; use a whole number",
        ),
        (_ms("replicas", "3"), "use a whole number without quotes (got '3')"),
        (_ms("name", "Worker_1"), "machineSets[0].name: must be lowercase letters, digits and '-'"),
        (_ms("instanceType", "huge"), "must be an EC2 instance type, e.g. 'm6i.xlarge' (got 'huge')"),
        (_cluster("region", "US-east"), "region: must be an AWS region, e.g. 'us-east-1' (got 'US-east')"),
        (_cluster("pools", "infra"), "pools: Input should be a valid list; use a list"),
        (
            _cluster("pools", [{"name": "infra"}, {"name": "infra"}]),
            "pools: pools[0], pools[1] share the name infra; a pool's name is its MachineConfigPool's name",
        ),
        (
            _cluster("machineSets", []),
            "machineSets: List should have at least 1 item after validation, not 0; add",
        ),
    ],
)
def test_rejections_carry_the_fix(
    dev_fleet: dict[str, Any], project_dir: Path, mutate: Mutation, expected: str
) -> None:
    mutate(dev_fleet)
    with pytest.raises(ConfigError) as exc:
        load_fleet(dev_fleet, "dev", PROJECT)
    (line,) = str(exc.value).splitlines()
    assert expected in line
    assert "should match pattern" not in line
