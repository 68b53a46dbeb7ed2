"""Policy pack config is validated against each policy's schema before anything is judged (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from cli.main import main
from mockruntime.evaluate import policy_config_errors
from policies.pack import POLICIES


@pytest.mark.parametrize(
    ("config", "expected"),
    [
        (
            {"version-skew": {"maxMinorsBehind": "three"}},
            "'version-skew'.maxMinorsBehind: 'three' is not of type",
        ),
        (
            {"boot-image-skew": {"catalogs": "x.yaml"}},
            "'boot-image-skew'.catalogs: 'x.yaml' is not of type 'array'",
        ),
        (
            {"boot-image-skew": {"strickt": True}},
            "'boot-image-skew'.strickt: the policy has no such setting; did you mean 'strict'?",
        ),
        (
            {"drift-budgett": "advisory"},
            "'drift-budgett': the pack has no such policy; did you mean 'drift-budget'?",
        ),
        ({"karpenter-userdata": "off"}, "'karpenter-userdata': enforcement level must be one of"),
        ({"all": "warn"}, "'all': must be one of"),
        ({"boot-image-skew": ["strict"]}, "'boot-image-skew': must be an enforcement level or an object"),
        (
            {"boot-image-skew": {"enforcementLevel": "loud"}},
            "'boot-image-skew'.enforcementLevel: 'loud' is not one of",
        ),
    ],
)
def test_invalid_policy_config_is_named(config: dict[str, object], expected: str) -> None:
    (error,) = policy_config_errors(POLICIES, config)
    assert error.startswith(expected)


def test_valid_policy_config_passes() -> None:
    assert (
        policy_config_errors(
            POLICIES,
            {
                "all": "advisory",
                "boot-image-skew": {"strict": True, "enforcementLevel": "mandatory"},
                "drift-budget": "disabled",
            },
        )
        == []
    )


def test_check_refuses_invalid_policy_config_with_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cfg = tmp_path / "policy.json"
    cfg.write_text(
        json.dumps({"version-skew": {"maxMinorsBehind": "three"}, "boot-image-skew": {"catalogs": "x"}})
    )
    assert main(["check", "--stack", "dev", "--policy-config", str(cfg)]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert [line.split(": ", 2)[2].split(":")[0] for line in err.splitlines()] == [
        "'version-skew'.maxMinorsBehind",
        "'boot-image-skew'.catalogs",
    ]
    cfg.write_text("{not json")
    assert main(["check", "--stack", "dev", "--policy-config", str(cfg)]) == 2
    assert "is not valid JSON (Expecting property name enclosed in double quotes: line 1, column 2)" in (
        capsys.readouterr().err
    )
