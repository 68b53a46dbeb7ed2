"""A standalone cluster's default OS stream (``osImageStream``, the worker pool's): read from its ``OSImageStream``
singleton, or given by ``--os-image-stream``; from 5.0, where an install runs rhel-10 and an upgraded cluster keeps
rhel-9, never guessed from the release. The cluster is ``stacks/Pulumi.dev.yaml``'s (5.0, upgraded from 4.22, so
rhel-9), as its render and ClusterVersion hold it."""

from __future__ import annotations

import copy
from typing import Any

import pytest
import yaml

from nodefleet.adopt.documents import AdoptError, LiveObject
from nodefleet.render.objects import fleet_plan, load_fleet
from nodefleet.stackfile.model import CONFIG_KEY
from tests.nodefleet.adopt.roundtrip import (
    PROJECT,
    assert_round_trip,
    data_objects,
    hypershift_fixture,
    imported,
    objects,
    os_image_stream,
)

CATALOG = "catalogs/coreos-bootimages-5.0.yaml"
PLACE = f"{CONFIG_KEY}.clusters[0].osImageStream"
ASK = "pass --os-image-stream rhel-9 or rhel-10"


def _dev(release: str = "5.0.0-ec.2") -> list[LiveObject]:
    raw = yaml.safe_load((PROJECT / "stacks" / "Pulumi.dev.yaml").read_text(encoding="utf-8"))["config"][
        CONFIG_KEY
    ]
    manifests = [copy.deepcopy(o.manifest) for o in fleet_plan(load_fleet(raw, "dev", PROJECT)).emitted]
    version = {
        "apiVersion": "config.openshift.io/v1",
        "kind": "ClusterVersion",
        "metadata": {"name": "version"},
        "status": {"desired": {"version": release}},
    }
    return objects([*manifests, version], source="dev")


def _stream(spec: Any) -> list[LiveObject]:
    manifest = os_image_stream("rhel-9")
    manifest["spec"] = spec
    return objects([manifest], source="stream.yaml")


@pytest.mark.parametrize("stream", ["rhel-9", "rhel-10"])
def test_the_stream_is_read_from_the_osimagestream_and_said_where_from(stream: str) -> None:
    adoption = assert_round_trip(
        [*_dev(), *objects([os_image_stream(stream)], source="stream.yaml")], catalog=CATALOG
    )
    (cluster,) = adoption.clusters
    assert cluster["osImageStream"] == stream
    assert [(i.value, i.why) for i in adoption.report.inferred if i.place == PLACE] == [
        (stream, "from OSImageStream cluster (stream.yaml, document 1) spec.defaultStream")
    ]
    assert not any("OSImageStream" in a.obj for a in adoption.report.left_alone)


def test_from_5_0_a_missing_osimagestream_is_asked_for_never_guessed() -> None:
    with pytest.raises(AdoptError) as refused:
        imported(_dev(), catalog=CATALOG)
    message = str(refused.value)
    assert message.startswith("the sources hold no OSImageStream 'cluster', so nothing says which OS stream")
    assert "a cluster upgraded to 5.0 keeps rhel-9" in message
    assert ASK in message
    adoption = imported(_dev(), catalog=CATALOG, os_image_stream="rhel-9")
    assert adoption.clusters[0]["osImageStream"] == "rhel-9"
    assert [(i.value, i.why) for i in adoption.report.inferred if i.place == PLACE] == [
        ("rhel-9", "from --os-image-stream")
    ]


def test_an_osimagestream_without_a_default_is_asked_for_too() -> None:
    with pytest.raises(AdoptError, match=r"OSImageStream cluster \(stream\.yaml, document 1\) holds no "):
        imported([*_dev(), *_stream({})], catalog=CATALOG)
    adoption = imported([*_dev(), *_stream({})], catalog=CATALOG, os_image_stream="rhel-10")
    assert adoption.clusters[0]["osImageStream"] == "rhel-10"


@pytest.mark.parametrize(
    ("spec", "option", "message"),
    [
        (
            {"defaultStream": "rhel-11"},
            None,
            "OSImageStream cluster (stream.yaml, document 1): spec.defaultStream 'rhel-11' is not an OS stream "
            "nodefleet models (rhel-9, rhel-10)",
        ),
        (
            {"defaultStream": ["rhel-9"]},
            None,
            "OSImageStream cluster (stream.yaml, document 1): spec.defaultStream ['rhel-9'] is not an OS stream",
        ),
        (
            {"defaultStream": "rhel-9"},
            "rhel-10",
            "OSImageStream cluster (stream.yaml, document 1): --os-image-stream rhel-10 contradicts "
            "spec.defaultStream rhel-9; leave --os-image-stream out",
        ),
    ],
    ids=["unknown-stream", "not-text", "contradicted"],
)
def test_a_value_the_model_cannot_take_or_a_contradiction_is_refused(
    spec: dict[str, Any], option: str | None, message: str
) -> None:
    with pytest.raises(AdoptError) as refused:
        imported([*_dev(), *_stream(spec)], catalog=CATALOG, os_image_stream=option)
    assert str(refused.value).startswith(message)


def test_before_5_0_the_stream_is_left_to_the_model_unless_a_source_says_it() -> None:
    """4.16: no OSImageStream API; an install of it runs rhel-9, which the model assumes: nothing is written. A
    TechPreview cluster's object (4.21 to 4.23) is read as from 5.0."""
    live = data_objects("standalone-4.16.yaml")
    plain = imported(live, catalog="catalogs/rhcos-4.16.json", adopt_defaults=True)
    assert "osImageStream" not in plain.clusters[0]
    assert not [i for i in plain.report.inferred if i.place == PLACE]
    read = imported(
        [*live, *_stream({"defaultStream": "rhel-9"})],
        catalog="catalogs/rhcos-4.16.json",
        adopt_defaults=True,
    )
    assert read.clusters[0]["osImageStream"] == "rhel-9"


def test_the_option_without_a_standalone_cluster_is_refused() -> None:
    with pytest.raises(
        AdoptError, match=r"^--os-image-stream rhel-9: a standalone cluster's default OS stream"
    ):
        imported(objects(hypershift_fixture("default_creation_flags_for_cesar")), os_image_stream="rhel-9")
