"""Boot image catalogs loaded from the real coreos-bootimages ConfigMaps and stream JSON."""

from __future__ import annotations

import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from nodefleet.catalog import BootImageCatalog, CatalogError, kube_arch, load_catalog, normalize_arch
from nodefleet.versions import parse_ocp

SHARED = Path(__file__).parents[3] / "shared" / "data" / "bootimages"
SHIPPED = Path(__file__).parents[2] / "catalogs"
CATALOG_DIRS = [pytest.param(SHARED, id="shared-data"), pytest.param(SHIPPED, id="project-catalogs")]

# (file, stream, arch) -> (us-east-1 AMI, RHCOS version)
US_EAST_1 = {
    ("coreos-bootimages-4.10.yaml", "rhel-9", "x86_64"): ("ami-0713d9bcf78401cd1", "410.84.202111111322-0"),
    ("coreos-bootimages-4.10.yaml", "rhel-9", "aarch64"): ("ami-0022ae02b40256546", "410.84.202111111403-0"),
    ("rhcos-4.16.json", "rhel-9", "x86_64"): ("ami-05483066c3caaccf5", "416.94.202405291527-0"),
    ("rhcos-4.16.json", "rhel-9", "aarch64"): ("ami-04859c888566a2c2f", "416.94.202405291527-0"),
    ("coreos-bootimages-5.0.yaml", "rhel-9", "x86_64"): ("ami-06a6b025350ff1e23", "9.8.20260403-0"),
    ("coreos-bootimages-5.0.yaml", "rhel-9", "aarch64"): ("ami-0e73a95fb409d8abd", "9.8.20260403-0"),
    ("coreos-bootimages-5.0.yaml", "rhel-10", "x86_64"): ("ami-04b3d999e39d62c5b", "10.2.20260405-0"),
    ("coreos-bootimages-5.0.yaml", "rhel-10", "aarch64"): ("ami-0d7237e6b04d9a9e1", "10.2.20260405-0"),
}


@pytest.mark.parametrize("directory", CATALOG_DIRS)
@pytest.mark.parametrize(("key", "expected"), list(US_EAST_1.items()), ids=lambda v: "-".join(v))
def test_resolves_us_east_1(directory: Path, key: tuple[str, str, str], expected: tuple[str, str]) -> None:
    file, stream, arch = key
    catalog = load_catalog(directory / file)
    image = catalog.resolve("us-east-1", arch, stream)
    assert (image.ami, image.raw_release) == expected
    assert image.release.raw == expected[1]
    assert (image.region, image.arch, image.stream) == ("us-east-1", arch, stream)


@pytest.mark.parametrize("directory", CATALOG_DIRS)
def test_catalog_metadata(directory: Path) -> None:
    c410 = load_catalog(directory / "coreos-bootimages-4.10.yaml")
    c416 = load_catalog(directory / "rhcos-4.16.json")
    c50 = load_catalog(directory / "coreos-bootimages-5.0.yaml")
    assert c410.streams == ("rhel-9",)
    assert c416.streams == ("rhel-9",)
    assert c50.streams == ("rhel-10", "rhel-9")
    assert c50.release_version == parse_ocp("5.0.0-ec.2")
    assert c410.release_version is None  # the build placeholder 0.0.1-snapshot
    assert c416.release_version is None  # bare stream JSON has none
    assert c416.source == str(directory / "rhcos-4.16.json")
    for catalog in (c410, c416, c50):
        assert catalog.archs() == ("aarch64", "x86_64")
    assert c50.archs("rhel-10") == ("aarch64", "x86_64")
    assert c50.regions("x86_64", "rhel-10") == ("us-east-1", "us-west-2")
    assert len(c416.regions("x86_64")) == 31
    assert "eu-north-1" in c416.regions("amd64")


def test_shipped_catalogs_are_the_shared_ones() -> None:
    for name in ("coreos-bootimages-4.10.yaml", "coreos-bootimages-5.0.yaml", "rhcos-4.16.json"):
        assert (SHIPPED / name).read_bytes() == (SHARED / name).read_bytes()


@pytest.mark.parametrize(("alias", "canonical"), [("amd64", "x86_64"), ("arm64", "aarch64")])
def test_kubernetes_arch_names_resolve_like_coreos_names(alias: str, canonical: str) -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    assert catalog.resolve("us-west-2", alias) == catalog.resolve("us-west-2", canonical)
    assert catalog.resolve("us-west-2", alias).arch == canonical
    assert normalize_arch(alias) == canonical
    assert kube_arch(canonical) == alias


def test_rhel_9_stream_on_a_rhel_8_catalog_is_its_only_stream() -> None:
    # The MCO treats an absent osstream label (or rhel-9) as the default stream: a 4.10 MachineSet boots
    # from data.stream, whose images are RHEL 8. The image says so itself.
    image = load_catalog(SHARED / "coreos-bootimages-4.10.yaml").resolve("us-east-1", "x86_64", "rhel-9")
    assert image.release.rhel == (8, 4)


def test_default_alias_is_the_legacy_stream_key() -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    image = catalog.resolve("us-east-1", "x86_64", "default")
    assert image.ami == "ami-06a6b025350ff1e23"
    assert image.stream == "rhel-9"
    assert "default" not in catalog.streams


def test_find_ami_maps_an_ami_back_to_its_rhcos_version() -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    found = catalog.find_ami("ami-0d7237e6b04d9a9e1")
    assert found is not None
    assert (found.stream, found.arch, found.region, found.raw_release) == (
        "rhel-10",
        "aarch64",
        "us-east-1",
        "10.2.20260405-0",
    )
    assert catalog.find_ami("ami-00000000000000000") is None


def test_images_lists_every_region_of_every_stream() -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    assert len(list(catalog.images())) == 8  # 2 streams x 2 archs x 2 regions
    assert {i.stream for i in catalog.images("rhel-10")} == {"rhel-10"}


# --- lookup errors ---------------------------------------------------------------------------------------


def test_missing_region_names_the_request_and_lists_regions() -> None:
    path = SHARED / "rhcos-4.16.json"
    catalog = load_catalog(path)
    with pytest.raises(CatalogError) as excinfo:
        catalog.resolve("eu-north-9", "x86_64")
    message = str(excinfo.value)
    assert "'eu-north-9'" in message
    assert str(path) in message
    assert "x86_64" in message
    assert "rhel-9" in message
    assert "af-south-1, ap-east-1, ap-northeast-1" in message
    assert "us-west-2" in message


def test_missing_region_lists_only_that_streams_regions() -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    with pytest.raises(CatalogError, match=r"it has: us-east-1, us-west-2\."):
        catalog.resolve("eu-west-1", "arm64", "rhel-10")


def test_unknown_arch_lists_accepted_values() -> None:
    catalog = load_catalog(SHARED / "rhcos-4.16.json")
    with pytest.raises(CatalogError) as excinfo:
        catalog.resolve("us-east-1", "ppc64le")
    assert "'ppc64le'" in str(excinfo.value)
    assert "aarch64, amd64, arm64, x86_64" in str(excinfo.value)


def test_arch_absent_from_catalog_lists_what_it_has() -> None:
    stream = json.loads((SHARED / "rhcos-4.16.json").read_text())
    del stream["architectures"]["aarch64"]
    catalog = BootImageCatalog.from_text(json.dumps(stream), "x86-only.json")
    with pytest.raises(CatalogError) as excinfo:
        catalog.resolve("us-east-1", "arm64")
    message = str(excinfo.value)
    assert "'arm64'" in message
    assert "x86-only.json" in message
    assert "it has: x86_64" in message


def test_missing_stream_lists_streams() -> None:
    catalog = load_catalog(SHARED / "coreos-bootimages-4.10.yaml")
    with pytest.raises(CatalogError) as excinfo:
        catalog.resolve("us-east-1", "x86_64", "rhel-10")
    message = str(excinfo.value)
    assert "'rhel-10'" in message
    assert "coreos-bootimages-4.10.yaml" in message
    assert "it has: rhel-9" in message


# --- formats and malformed files -------------------------------------------------------------------------


def test_format_is_detected_from_content_not_file_name(tmp_path: Path) -> None:
    misnamed = tmp_path / "stream.yaml"
    shutil.copy(SHARED / "rhcos-4.16.json", misnamed)
    assert load_catalog(misnamed).resolve("us-east-1", "x86_64").ami == "ami-05483066c3caaccf5"


def test_configmap_exported_as_json_loads() -> None:
    configmap = yaml.safe_load((SHARED / "coreos-bootimages-5.0.yaml").read_text())
    catalog = BootImageCatalog.from_text(json.dumps(configmap), "cm.json")
    assert catalog.resolve("us-east-1", "x86_64", "rhel-10").ami == "ami-04b3d999e39d62c5b"
    assert catalog.source == "cm.json"


def _configmap(data: Mapping[str, object]) -> str:
    return yaml.safe_dump({"apiVersion": "v1", "kind": "ConfigMap", "data": data})


def _broken(text: str, *fragments: str) -> None:
    with pytest.raises(CatalogError) as excinfo:
        BootImageCatalog.from_text(text, "broken.yaml")
    assert "'broken.yaml'" in str(excinfo.value)
    for fragment in fragments:
        assert fragment in str(excinfo.value)


def test_malformed_files_name_the_file_and_the_problem() -> None:
    good = json.loads((SHARED / "rhcos-4.16.json").read_text())
    _broken("key: [unclosed", "neither valid JSON nor valid YAML")
    _broken("- a list\n", "list")
    _broken(json.dumps({"kind": "Secret"}), "'data'", "'architectures'")
    _broken(_configmap({"releaseVersion": "4.16.0"}), "data.stream", "data.streams")
    _broken(_configmap({"stream": "{not json"}), "data.stream", "not valid JSON")
    _broken(_configmap({"streams": "{}"}), "data.streams")
    _broken(_configmap({"stream": json.dumps({"stream": "x"})}), "architectures")
    _broken(
        _configmap({"stream": json.dumps(good), "releaseVersion": "latest"}), "releaseVersion", "'latest'"
    )

    no_image = json.loads(json.dumps(good))
    del no_image["architectures"]["x86_64"]["images"]["aws"]["regions"]["us-east-1"]["image"]
    _broken(json.dumps(no_image), "architectures.x86_64.images.aws.regions.us-east-1.image", "missing")

    bad_release = json.loads(json.dumps(good))
    bad_release["architectures"]["x86_64"]["images"]["aws"]["regions"]["us-east-1"]["release"] = "4.16"
    _broken(json.dumps(bad_release), "regions.us-east-1.release", "'4.16'")

    bad_streams = {"streams": json.dumps({"rhel-10": {"architectures": "nope"}})}
    _broken(_configmap(bad_streams), "data.streams.rhel-10.architectures")


def test_region_without_release_falls_back_to_the_aws_artifact_release() -> None:
    stream = json.loads((SHARED / "rhcos-4.16.json").read_text())
    del stream["architectures"]["x86_64"]["images"]["aws"]["regions"]["us-east-1"]["release"]
    catalog = BootImageCatalog.from_text(json.dumps(stream), "no-region-release.json")
    assert catalog.resolve("us-east-1", "x86_64").raw_release == "416.94.202405291527-0"


def test_unreadable_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.yaml"
    with pytest.raises(CatalogError, match=r"nope\.yaml"):
        load_catalog(missing)
