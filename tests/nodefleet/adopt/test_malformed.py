"""Objects whose fields have shapes their kind does not allow (a hand-edited dump, a template not filled in):
every one is refused with a message naming the object, never an internal error. Each field of a hosted cluster's
and a standalone cluster's objects in turn holds a string, a number and a list where its value was."""

from __future__ import annotations

import copy
from collections.abc import Iterator
from typing import Any

import pytest

from nodefleet.adopt.documents import AdoptError
from tests.nodefleet.adopt.roundtrip import data_objects, hypershift_fixture, imported, objects


def _paths(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key)
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield (*path, i)
            yield from _paths(item, (*path, i))


SOURCES = {
    "hosted": (lambda: hypershift_fixture("default_creation_flags_for_cesar"), {}),
    "hosted-v0.1.40": (
        lambda: hypershift_fixture("default_creation_flags_for_cesar", version="v0.1.40"),
        {},
    ),
    "standalone": (
        lambda: [o.manifest for o in data_objects("standalone-4.16.yaml")],
        {"catalog": "catalogs/rhcos-4.16.json"},
    ),
}


@pytest.mark.parametrize("source", sorted(SOURCES))
def test_every_field_of_the_wrong_shape_is_refused_or_adopted_never_a_crash(source: str) -> None:
    make, options = SOURCES[source]
    docs = make()
    crashes = []
    tried = 0
    for d, doc in enumerate(docs):
        for path in list(_paths(doc)):
            for bad in ("x", 7, ["x"]):
                changed = copy.deepcopy(docs)
                node = changed[d]
                for key in path[:-1]:
                    node = node[key]
                node[path[-1]] = bad
                tried += 1
                try:
                    imported(objects(changed), **options)
                except AdoptError:
                    pass
                except Exception as e:  # the test lists every crash
                    crashes.append(f"{path} = {bad!r}: {type(e).__name__}: {e}")
    assert tried > 300
    assert crashes == []


def test_a_wrong_type_is_named_as_the_api_server_names_it() -> None:
    docs = hypershift_fixture("default_creation_flags_for_cesar")
    next(d for d in docs if d["kind"] == "HostedCluster")["spec"]["dns"] = "example.com"
    with pytest.raises(AdoptError) as e:
        imported(objects(docs))
    assert str(e.value).startswith(
        "HostedCluster clusters/cesar (test, document 3): the API server would refuse it"
    )
    assert "spec.dns in body must be of type object" in str(e.value)
