"""The round trip every adoption test asserts: import the live objects, write the stack file, read it back as
any stack file is read, render it with nodefleet's renderers, and compare the render with the live objects,
field by field (every difference listed on failure)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import yaml

from nodefleet.adopt.documents import LiveObject, read_documents
from nodefleet.adopt.fidelity import compare
from nodefleet.adopt.importer import Adoption, ImportOptions, adopt, stack_text
from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY

PROJECT = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data"
FIXTURES = PROJECT / "tests" / "fixtures"
#: The HyperShift module versions whose `--render` fixtures are vendored (tests/fixtures/SOURCES.md), oldest
#: first; nodefleet's CLI parity (tests/test_hypershift_cli_parity.py) compares every one.
HYPERSHIFT_VERSIONS = ("v0.1.40", "v0.1.60", "v0.1.70", "v0.1.80", "v0.1.82")
HYPERSHIFT_VERSION = "v0.1.80"
FIXTURE_PREFIX = "zz_fixture_TestCreateCluster_"


def objects(docs: Iterable[Mapping[str, Any]], source: str = "test") -> list[LiveObject]:
    return [LiveObject(dict(d), f"{source}, document {i}") for i, d in enumerate(docs, start=1) if d]


def os_image_stream(default: str) -> dict[str, Any]:
    """The ``OSImageStream`` singleton as `oc get osimagestream cluster -o yaml` shows it on 5.0 and later (its
    shape as openshift/enhancements ``machine-config/os-images-streams.md`` gives it): the cluster's default OS
    stream, which its installer chose, in ``spec.defaultStream``."""
    return {
        "apiVersion": "machineconfiguration.openshift.io/v1",
        "kind": "OSImageStream",
        "metadata": {"name": "cluster"},
        "spec": {"defaultStream": default},
        "status": {"availableStreams": [{"name": "rhel-9"}, {"name": "rhel-10"}]},
    }


def data_objects(name: str) -> list[LiveObject]:
    return read_documents((DATA / name).read_text(encoding="utf-8"), name)


def imported(live: list[LiveObject], **options: Any) -> Adoption:
    return adopt(live, ImportOptions(stack=options.pop("stack", "adopted"), project_dir=PROJECT, **options))


def differences(adoption: Adoption) -> list[str]:
    return [d.describe() for d in adoption.fidelity.differences]


def assert_round_trip(live: list[LiveObject], *, accept: Iterable[str] = (), **options: Any) -> Adoption:
    """Import ``live``; the render of the written stack, read back, equals ``live`` except for the
    differences listed in ``accept`` (each named in full), and every adopted object is rendered."""
    adoption = imported(live, **options)
    assert sorted(differences(adoption)) == sorted(accept), "\n".join(differences(adoption))
    text = stack_text(adoption, ["test"])
    raw = yaml.safe_load(text)["config"][CONFIG_KEY]
    fleet = load_fleet(raw, "adopted", PROJECT, "written stack")
    again = compare([o for o in adoption_objects(adoption, live)], fleet_plan(fleet).emitted)
    assert sorted(d.describe() for d in again.differences) == sorted(accept)
    return adoption


def adoption_objects(adoption: Adoption, live: list[LiveObject]) -> list[LiveObject]:
    adopted = {a.obj for a in adoption.report.adopted}
    return [o for o in live if o.shown() in adopted]


# ---- HyperShift's `hypershift create cluster aws --render` fixtures ------------------------------------------

#: The fixtures' placeholder inputs and values of the right shape (the model checks ids, ARNs and zones).
ACCOUNT = "123456789012"


def hypershift_placeholders(region: str) -> dict[str, str]:
    values = {
        "fakeVPCID": "vpc-0a1b2c3d4e5f60718",
        "fakeSubnetID": "subnet-0f1e2d3c4b5a69788",
        "fakeName": f"{region}a",
        "fakeInfraID": "example-4kq8z",
        "fakeIssuerURL": "https://example-oidc.s3.us-east-1.amazonaws.com/example-4kq8z",
        "fakeBaseDomainPrefix": "apps-prefix",
        "fakeBaseDomain": "example.com",
        "fakePublicZoneID": "Z0PUBLIC0000000000000",
        "fakePrivateZoneID": "Z0PRIVATE000000000000",
        "fakeProxyAddr": "http://proxy.example.com:3128",
        "fakeKMSKeyARN": f"arn:aws:kms:{region}:{ACCOUNT}:key/0a1b2c3d-0000-4000-8000-000000000001",
        "fakeKMSProviderRoleARN": f"arn:aws:iam::{ACCOUNT}:role/example-kms-provider",
        "fakeProfileName": "example-4kq8z-worker",
        "fakeReleaseImage": "quay.io/openshift-release-dev/ocp-release:4.22.3-multi",
    }
    for role in (
        "Ingress",
        "ImageRegistry",
        "Storage",
        "Network",
        "KubeCloudController",
        "NodePoolManagement",
        "ControlPlaneOperator",
    ):
        values[f"fake{role}ARN"] = f"arn:aws:iam::{ACCOUNT}:role/example-{role.lower()}"
    return values


def substitute(value: Any, mapping: Mapping[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: substitute(v, mapping) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, mapping) for v in value]
    if isinstance(value, str):
        for fake in sorted(mapping, key=len, reverse=True):  # fakeBaseDomainPrefix before fakeBaseDomain
            value = value.replace(fake, mapping[fake])
    return value


def hypershift_fixture_dir(version: str = HYPERSHIFT_VERSION) -> Path:
    return FIXTURES / f"hypershift-cli-{version}"


def hypershift_fixture(
    case: str, *, release_image: str | None = None, version: str = HYPERSHIFT_VERSION
) -> list[dict[str, Any]]:
    """A fixture's documents (HyperShift ``version``'s) with its placeholders given values; ``release_image`` for
    the cases that render ``release.image: ""`` (no ``--release-image``: the CLI leaves the choice to the
    operator)."""
    path = hypershift_fixture_dir(version) / f"{FIXTURE_PREFIX}{case}.yaml"
    text = path.read_text(encoding="utf-8")
    docs = [d for d in yaml.safe_load_all(text) if d]
    region = next(d["spec"]["platform"]["aws"]["region"] for d in docs if d["kind"] == "HostedCluster")
    docs = substitute(docs, hypershift_placeholders(region))
    for d in docs:
        if release_image and d["kind"] in ("HostedCluster", "NodePool") and not d["spec"]["release"]["image"]:
            d["spec"]["release"]["image"] = release_image
    return list(docs)


def with_autonode(docs: list[dict[str, Any]], role: str, *, profile: bool = True) -> list[dict[str, Any]]:
    """``docs`` (a HyperShift render) with their HostedCluster made an AutoNode cluster: Karpenter as its
    provisioner with ``role``, and with ``profile`` the default instance profile HyperShift reads."""
    for d in docs:
        if d["kind"] == "HostedCluster":
            d["spec"]["autoNode"] = {
                "provisionerConfig": {
                    "name": "Karpenter",
                    "karpenter": {"platform": "AWS", "aws": {"roleARN": role}},
                }
            }
            if profile:
                d["metadata"]["annotations"][
                    "hypershift.openshift.io/aws-karpenter-default-instance-profile"
                ] = "example-4kq8z-worker"
    return docs


def autonode_cesar() -> list[dict[str, Any]]:
    """HyperShift's fixture for ``cesar`` as an AutoNode cluster: Karpenter as its provisioner, with the role and
    the default instance profile HyperShift reads."""
    return with_autonode(
        hypershift_fixture("default_creation_flags_for_cesar"),
        "arn:aws:iam::123456789012:role/cesar-karpenter",
    )


HYPERSHIFT_CASES = (
    "default_creation_flags_for_cesar",
    "minimal_flags_necessary_to_render",
    "minimal_with_KubeAPIServerDNSName",
    "minimal_with_OVNKubernetesMTU",
)


def _versioned_cases() -> tuple[tuple[str, str], ...]:
    return tuple(
        (version, path.stem.removeprefix(FIXTURE_PREFIX))
        for version in HYPERSHIFT_VERSIONS
        for path in sorted(hypershift_fixture_dir(version).glob(f"{FIXTURE_PREFIX}*.yaml"))
    )


#: Every vendored fixture, as (module version, case); v0.1.82 names its cases by what they assert.
HYPERSHIFT_VERSIONED_CASES = _versioned_cases()
#: Test ids naming the version and the fixture.
HYPERSHIFT_VERSIONED_IDS = [f"{version}-{case}" for version, case in HYPERSHIFT_VERSIONED_CASES]
