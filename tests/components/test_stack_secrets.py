"""The program checks each stack secret where its value resolves, and stops with one RunError naming the
secret and the fix: never a traceback from inside an Output, never the secret's value."""

from __future__ import annotations

import gc
import logging
from typing import Any

import pulumi
import pytest

from mockruntime.run import run_program
from tests.conftest import stack_fleet

CA = "-----BEGIN CERTIFICATE-----\nMIIBszCCAVmgAwIBAgIUQ+ab/c=\n-----END CERTIFICATE-----\n"


def _karpenter(ca: str) -> dict[str, Any]:
    return {"nodefleet:fleet": stack_fleet("karpenter"), "nodefleet:mcsCaBundle": ca}


def test_a_ca_bundle_that_is_not_pem_stops_the_program_with_the_secret_and_the_fix() -> None:
    with pytest.raises(pulumi.RunError) as exc:
        run_program("karpenter", _karpenter("/home/me/secret-path/mcs-ca.pem"))
    assert str(exc.value) == (
        "stacks/Pulumi.karpenter.yaml: nodefleet:mcsCaBundle (MCS CA bundle of cluster edge) is not a PEM CA "
        "bundle (no -----BEGIN CERTIFICATE----- ... -----END CERTIFICATE----- block). Set it with "
        "`pulumi config set --secret nodefleet:mcsCaBundle --stack karpenter < <file>`."
    )


def test_a_private_key_never_reaches_the_s3_object() -> None:
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADAN\n-----END PRIVATE KEY-----\n"
    with pytest.raises(pulumi.RunError, match="holds a private key") as exc:
        run_program("karpenter", _karpenter(key))
    assert "MIIEvQIBADAN" not in str(exc.value)
    registered = getattr(exc.value, "registrations", [])
    assert not [r for r in registered if r.type == "aws:s3/bucketObjectv2:BucketObjectv2"]


def test_a_good_ca_bundle_builds_the_stack() -> None:
    run = run_program("karpenter", _karpenter(CA))
    assert len(run.of_type("aws:s3/bucketObjectv2:BucketObjectv2")) == 2


def test_hosted_secrets_are_checked_in_apply_mode() -> None:
    raw = stack_fleet("hosted")
    raw["output"] = {"mode": "apply"}
    raw["clusters"][0]["hostedKubeconfig"] = "/tmp/hosted.kubeconfig"
    raw["clusters"][0]["pullSecret"]["fromConfig"] = "pullSecret"
    with pytest.raises(
        pulumi.RunError, match=r"nodefleet:pullSecret \(Secret clusters/prod-east-pull-secret of "
    ):
        run_program("hosted", {"nodefleet:fleet": raw, "nodefleet:pullSecret": "not-json"})


def test_a_failed_run_leaves_nothing_to_print_in_the_next_one(caplog: pytest.LogCaptureFixture) -> None:
    """What the failed Output left behind (pending tasks, futures holding the error) is neither reported as
    "Task was destroyed but it is pending!" nor as "Future exception was never retrieved" later on."""
    with caplog.at_level(logging.ERROR, logger="asyncio"):
        for _ in range(2):
            with pytest.raises(pulumi.RunError):
                run_program("karpenter", _karpenter("not pem"))
            gc.collect()
        run_program("karpenter", _karpenter(CA))
        gc.collect()
    assert [r.getMessage() for r in caplog.records] == []
