"""Boot image catalogs loaded from the real coreos-bootimages ConfigMaps and stream JSON."""

from __future__ import annotations

import gzip
import json
import shutil
from collections.abc import Mapping
from pathlib import Path

import pytest
import yaml

from nodefleet.bootimages.catalog import (
    BootImageCatalog,
    CatalogError,
    CatalogStream,
    kube_arch,
    load_catalog,
    normalize_arch,
)
from nodefleet.bootimages.versions import parse_ocp
from tests.conftest import SHARED_DATA

SHARED = SHARED_DATA / "bootimages"
SHIPPED = Path(__file__).parents[3] / "catalogs"
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


# --- streams known from their own content ------------------------------------------------------------------

RHEL10_FIXTURE = SHIPPED / "coreos-rhel-10-5.0.0-ec.2.json"


def _streams_of(file: str) -> dict[str, object]:
    """``data.streams`` of a real ConfigMap, parsed."""
    configmap = yaml.safe_load((SHARED / file).read_text())
    streams: dict[str, object] = json.loads(configmap["data"]["streams"])
    return streams


def test_rhel10_fixture_is_the_5_0_configmaps_rhel_10_entry() -> None:
    """catalogs/coreos-rhel-10-5.0.0-ec.2.json is data.streams["rhel-10"] of the real 5.0 ConfigMap."""
    assert json.loads(RHEL10_FIXTURE.read_text()) == _streams_of("coreos-bootimages-5.0.yaml")["rhel-10"]


@pytest.mark.parametrize("form", ["committed fixture", "extracted here"])
def test_bare_rhel_10_stream_json_is_stream_rhel_10(form: str, tmp_path: Path) -> None:
    if form == "committed fixture":
        path = RHEL10_FIXTURE
    else:
        path = tmp_path / "rhel-10.json"
        path.write_text(json.dumps(_streams_of("coreos-bootimages-5.0.yaml")["rhel-10"]))
    catalog = load_catalog(path)
    assert catalog.streams == ("rhel-10",)
    assert catalog.stream("rhel-10").rhel_major == 10
    image = catalog.resolve("us-east-1", "x86_64", "rhel-10")
    assert (image.ami, image.raw_release, image.stream) == (
        "ami-04b3d999e39d62c5b",
        "10.2.20260405-0",
        "rhel-10",
    )
    # A MachineSet that takes the default (rhel-9) stream must not silently get a RHEL 10 AMI.
    for stream in ("rhel-9", "default"):
        with pytest.raises(CatalogError) as excinfo:
            catalog.resolve("us-east-1", "x86_64", stream)
        assert "it has: rhel-10 (RHEL 10)" in str(excinfo.value)
        assert "coreos-bootimages ConfigMap, which carries every stream" in str(excinfo.value)


def test_each_data_streams_entry_on_its_own_keeps_its_stream(tmp_path: Path) -> None:
    for name, document in _streams_of("coreos-bootimages-5.0.yaml").items():
        path = tmp_path / f"{name}.json"
        path.write_text(json.dumps(document))
        assert load_catalog(path).streams == (name,)


def test_every_stream_knows_its_os_and_origin() -> None:
    c410 = load_catalog(SHARED / "coreos-bootimages-4.10.yaml")
    c416 = load_catalog(SHARED / "rhcos-4.16.json")
    c50 = load_catalog(SHARED / "coreos-bootimages-5.0.yaml")
    # 4.10 predates OS streams: its only stream is RHEL 8, addressed as the MCO's default, rhel-9.
    assert c410.stream("rhel-9") == CatalogStream("rhel-9", 8, "data.stream", default=True)
    assert c410.stream("default") == c410.stream("rhel-9")
    assert "RHEL 8 images, the default stream of a release before OS streams" in c410.describe_streams()
    assert c416.stream("rhel-9") == CatalogStream("rhel-9", 9, "the stream JSON", default=True)
    assert c50.stream("rhel-9") == CatalogStream("rhel-9", 9, "data.streams.rhel-9")
    assert c50.stream("rhel-10") == CatalogStream("rhel-10", 10, "data.streams.rhel-10")
    # The MCO's boot image controller reads the legacy data.stream document: that is what "default" means.
    assert c50.stream("default") == CatalogStream("rhel-9", 9, "data.stream", default=True)


def _configmap_with(streams: Mapping[str, object], stream: object | None = None) -> str:
    data: dict[str, object] = {"releaseVersion": "5.0.0-ec.2", "streams": json.dumps(streams)}
    if stream is not None:
        data["stream"] = json.dumps(stream)
    return _configmap(data)


def test_a_stated_stream_that_contradicts_its_images_is_refused() -> None:
    real = _streams_of("coreos-bootimages-5.0.yaml")
    # The streams swapped: each key names the other OS.
    swapped = {"rhel-9": real["rhel-10"], "rhel-10": real["rhel-9"]}
    with pytest.raises(CatalogError) as excinfo:
        BootImageCatalog.from_text(_configmap_with(swapped), "swapped.yaml")
    message = str(excinfo.value)
    assert message.startswith(
        "Boot image catalog 'swapped.yaml': data.streams.rhel-9 says RHEL 9, but its boot"
    )
    assert (
        "images are RHEL 10 (10.2.20260405-0 at architectures.aarch64.images.aws.regions.us-east-1)"
        in message
    )
    assert "the file contradicts itself" in message and "\n" not in message
    # A bare stream JSON whose "stream" field names an OS must agree with its images too.
    labelled = dict(real["rhel-10"])  # type: ignore[call-overload]
    labelled["stream"] = "rhel-9"
    with pytest.raises(
        CatalogError, match=r'\(its "stream": "rhel-9"\) says RHEL 9, but its boot images are RHEL 10'
    ):
        BootImageCatalog.from_text(json.dumps(labelled), "labelled.json")
    # ... while a build label such as rhcos-4.22 is not a statement about the OS.
    assert BootImageCatalog.from_text(json.dumps(real["rhel-10"]), "ok.json").streams == ("rhel-10",)


def test_a_stream_mixing_rhel_majors_is_refused() -> None:
    real = _streams_of("coreos-bootimages-5.0.yaml")
    mixed = json.loads(json.dumps(real["rhel-9"]))
    mixed["architectures"]["aarch64"] = real["rhel-10"]["architectures"]["aarch64"]  # type: ignore[index]
    with pytest.raises(CatalogError) as excinfo:
        BootImageCatalog.from_text(json.dumps(mixed), "mixed.json")
    assert "the stream JSON mixes RHEL 9 (9.8.20260403-0" in str(excinfo.value)
    assert "and RHEL 10 (10.2.20260405-0" in str(excinfo.value)


def test_a_data_streams_key_that_names_no_os_is_refused() -> None:
    real = _streams_of("coreos-bootimages-5.0.yaml")
    with pytest.raises(CatalogError, match=r"data.streams.fcos is not an OS stream name"):
        BootImageCatalog.from_text(_configmap_with({"fcos": real["rhel-9"]}), "fcos.yaml")


# --- files that are not catalogs: one line naming the file and the fix, never the file's content --------------

SECRET = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"


def _refused(path: Path) -> str:
    with pytest.raises(CatalogError) as excinfo:
        load_catalog(path, "catalogs/prod.yaml")
    message = str(excinfo.value)
    assert message.startswith("Boot image catalog 'catalogs/prod.yaml' ")
    assert "\n" not in message
    return message


def test_a_directory_is_refused_and_its_files_listed(tmp_path: Path) -> None:
    shutil.copy(SHARED / "rhcos-4.16.json", tmp_path / "rhcos-4.16.json")
    message = _refused(tmp_path)
    assert "is a directory, not a file" in message and "(it holds: rhcos-4.16.json)" in message


def test_compressed_and_binary_files_are_refused(tmp_path: Path) -> None:
    gz = tmp_path / "rhcos-4.16.json.gz"
    gz.write_bytes(gzip.compress((SHARED / "rhcos-4.16.json").read_bytes()))
    message = _refused(gz)
    assert "is gzip-compressed" in message and "`gunzip -k catalogs/prod.yaml`" in message
    binary = tmp_path / "ami.img"
    binary.write_bytes(bytes(range(256)) * 4)
    assert "is not text nodefleet reads (line 1, column 1: a NUL byte, which text never holds" in _refused(
        binary
    )
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("stream: caf\xe9\n".encode("latin-1"))
    assert "(line 1, column 12: byte 0xe9 is not UTF-8" in _refused(latin1)
    utf16 = tmp_path / "utf16.json"
    utf16.write_bytes((SHARED / "rhcos-4.16.json").read_text().encode("utf-16"))
    assert "is UTF-16 (little-endian) text; nodefleet reads UTF-8; save it as UTF-8" in _refused(utf16)


def test_an_empty_file_is_refused(tmp_path: Path) -> None:
    for content in ("", "\n  \n"):
        empty = tmp_path / "empty.yaml"
        empty.write_text(content)
        assert "is empty" in _refused(empty)


def test_a_truncated_stream_json_gets_the_json_error_not_yamls(tmp_path: Path) -> None:
    text = (SHARED / "rhcos-4.16.json").read_text()
    truncated = tmp_path / "rhcos-4.16.json"
    truncated.write_text(text[: len(text) // 2])
    message = _refused(truncated)
    assert (
        "is not valid JSON (" in message
        and "it ends inside an object or string, so it looks truncated" in message
    )
    assert "YAML" not in message
    # Valid flow-style YAML that is not JSON still loads.
    flow = tmp_path / "flow.yaml"
    flow.write_text(yaml.safe_dump(json.loads(text), default_flow_style=True).replace('"', ""))
    assert load_catalog(flow).streams == ("rhel-9",)


def test_parser_errors_never_echo_the_file(tmp_path: Path) -> None:
    """PyYAML quotes the offending line; a secrets file given as a catalog must not be printed."""
    cases = {
        "credentials.yaml": f'aws_access_key_id: AKIAIOSFODNN7EXAMPLE\naws_secret_access_key: "{SECRET}\n',
        "credentials": f"[default]\naws_secret_access_key = {SECRET}\n",
        "secret.json": f'{{"password": "{SECRET}", ',
        "key.pem": f"-----BEGIN PRIVATE KEY-----\n{SECRET}\n-----END PRIVATE KEY-----\n",
        "env": f"PASSWORD={SECRET}\n",
        "tabs.yaml": f"data:\n\tstream: {SECRET}\n",
    }
    for name, content in cases.items():
        path = tmp_path / name
        path.write_text(content)
        message = _refused(path)
        assert SECRET not in message and "AKIA" not in message, name
