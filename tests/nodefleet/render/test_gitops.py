"""Controller-owned fields as the GitOps tools take them: Pulumi property paths to RFC 6901 pointers."""

from __future__ import annotations

import pytest
import yaml

from nodefleet.render.gitops import (
    ANNOTATION_CONTROLLER_OWNED,
    ControllerOwnedError,
    argocd_ignore_difference,
    argocd_ignore_differences_file,
    controller_owned,
    json_pointer,
    parse_property_path,
    with_controller_owned,
)


@pytest.mark.parametrize(
    ("path", "parts"),
    [  # the examples of pulumi/pulumi sdk/go/common/resource/properties_path.go
        ("root", ["root"]),
        ("root.nested", ["root", "nested"]),
        ('root["nested"]', ["root", "nested"]),
        ('root["double"]["nest"]', ["root", "double", "nest"]),
        ("root.array[0][1].nested", ["root", "array", 0, 1, "nested"]),
        ('root["key with \\"escaped\\" quotes"]', ["root", 'key with "escaped" quotes']),
        ('root["key with a ."]', ["root", "key with a ."]),
        ('["root key with a ."][100]', ["root key with a .", 100]),
        ("root.array[*].field", ["root", "array", "*", "field"]),
        ("foo-bar.baz", ["foo-bar", "baz"]),
    ],
)
def test_pulumi_property_paths_parse_as_the_engine_parses_them(path: str, parts: list[str | int]) -> None:
    assert parse_property_path(path) == parts


@pytest.mark.parametrize("path", [".root", "root.", 'root["open', 'root["k"x', "root[1", "root[x]"])
def test_malformed_paths_are_refused(path: str) -> None:
    with pytest.raises(ControllerOwnedError):
        parse_property_path(path)


def test_pointers_escape_as_rfc_6901_says() -> None:
    assert (
        json_pointer("spec.template.spec.providerSpec.value.ami")
        == "/spec/template/spec/providerSpec/value/ami"
    )
    assert (
        json_pointer('metadata.annotations["example.com/a~b"]') == "/metadata/annotations/example.com~1a~0b"
    )
    assert json_pointer("spec.items[2].name") == "/spec/items/2/name"


@pytest.mark.parametrize(("path", "why"), [("spec.items[*].name", "wildcard"), ('spec["a,b"]', "comma")])
def test_what_a_json_pointer_or_the_annotation_cannot_carry_is_refused(path: str, why: str) -> None:
    with pytest.raises(ControllerOwnedError, match=why):
        json_pointer(path)


def test_the_annotation_round_trips_and_leaves_the_input_alone() -> None:
    manifest = {"apiVersion": "karpenter.k8s.aws/v1", "kind": "EC2NodeClass", "metadata": {"name": "general"}}
    owned = with_controller_owned(manifest, ["spec.userData", "spec.amiSelectorTerms"])
    assert owned["metadata"]["annotations"] == {
        ANNOTATION_CONTROLLER_OWNED: "/spec/userData,/spec/amiSelectorTerms"
    }
    assert "annotations" not in manifest["metadata"]
    assert controller_owned(owned) == ("/spec/userData", "/spec/amiSelectorTerms")
    assert controller_owned(manifest) == () and with_controller_owned(manifest, []) == manifest


def test_argo_cd_entries_name_one_object_and_the_file_always_has_a_list() -> None:
    ms = {
        "apiVersion": "machine.openshift.io/v1beta1",
        "kind": "MachineSet",
        "metadata": {"name": "w", "namespace": "openshift-machine-api"},
    }
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "clusters"}}
    assert argocd_ignore_difference(ns, ["metadata.labels"]) == {
        "kind": "Namespace",
        "name": "clusters",
        "jsonPointers": ["/metadata/labels"],
    }, "the core group is left out, as Argo CD spells it"
    entry = argocd_ignore_difference(ms, ["spec.template.spec.providerSpec.value.ami"])
    assert entry["group"] == "machine.openshift.io" and entry["namespace"] == "openshift-machine-api"
    assert yaml.safe_load(argocd_ignore_differences_file([])) == {
        "ignoreDifferences": [],
        "labels": {"nodefleet.io/wave": "2-main"},
    }, "a stack without `wave` is in the main wave"
    assert yaml.safe_load(argocd_ignore_differences_file([entry]))["ignoreDifferences"] == [entry]


def test_the_folder_file_carries_the_stacks_wave_as_a_label() -> None:
    for wave, label in (("canary", "0-canary"), ("early", "1-early"), ("last", "3-last")):
        assert yaml.safe_load(argocd_ignore_differences_file([], wave))["labels"] == {
            "nodefleet.io/wave": label
        }
