"""The forecast on renders edited outside nodefleet, and on changes only AWS or the nodes can settle.

A render in Git is edited by hand (or exported from the cluster) and then compared with what the program
declares: empty maps and lists nodefleet never writes, a ``status`` Karpenter wrote, selector terms by id or
by tags. The verdict must be the drift model's (Karpenter's ``Hash()``, checked against each supported
Karpenter's own in the goref test below), and name the field even where no value changed as a reader sees it.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from functools import cache
from typing import Any

import pytest

from mockruntime.run import run_program
from mockruntime.snapshots import plan_of, snapshot_from_plan
from nodefleet import kinds as k
from nodefleet.drift.forecast import MAY_REPLACE, NO_ROLLOUT, REPLACES, Item, Obj, Snapshot, forecast
from nodefleet.drift.karpenter_hash import SUPPORTED_KARPENTER
from nodefleet.drift.rules import drift_reasons
from tests.conftest import stack_fleet

CA = "-----BEGIN CERTIFICATE-----\nmcs-ca-a\n-----END CERTIFICATE-----\n"


def _fleet(minor: str | None) -> dict[str, Any]:
    """The karpenter example stack, its clusters on Karpenter ``minor`` (None: as shipped), with what that
    minor's NodePool CRD lacks replaced by what it has (Balanced consolidation came with 1.14)."""
    fleet = stack_fleet("karpenter")
    if minor is None:
        return fleet
    for cluster in fleet["clusters"]:
        karpenter = cluster.get("karpenter")
        if not karpenter:
            continue
        karpenter["version"] = minor
        for pool in karpenter.get("nodePools") or ():
            disruption = pool.get("disruption") or {}
            if disruption.get("consolidationPolicy") == "Balanced" and minor < "1.14":
                disruption["consolidationPolicy"] = "WhenEmptyOrUnderutilized"
    return fleet


@cache
def _program(minor: str | None = None) -> Snapshot:
    config = {"nodefleet:fleet": _fleet(minor), "nodefleet:mcsCaBundle": CA}
    return snapshot_from_plan(plan_of(run_program("karpenter", config)), "the program")


def _edited(
    kind: str, name: str, edit: Callable[[dict[str, Any]], None], minor: str | None = None
) -> Snapshot:
    """The program's objects with one of them edited by hand: the render a user changed in Git."""
    snap = _program(minor)
    objects = []
    for obj in snap.objects:
        if obj.manifest.get("kind") == kind and obj.meta.get("name") == name:
            manifest = copy.deepcopy(dict(obj.manifest))
            edit(manifest)
            obj = Obj(obj.target, manifest, obj.ignore_changes)
        objects.append(obj)
    return Snapshot("a hand-edited render", tuple(objects))


def _item(result: Any, kind: str, name: str) -> Item:
    return next(i for i in result.items if i.kind.startswith(kind) and i.name == name)


def _put(path: tuple[str, ...], value: Any) -> Callable[[dict[str, Any]], None]:
    def edit(manifest: dict[str, Any]) -> None:
        target = manifest
        for part in path[:-1]:
            target = target.setdefault(part, {})
        target[path[-1]] = copy.deepcopy(value)

    return edit


#: Empty maps and lists (and zero values) written into the old object, which the program does not declare.
#: Each: (kind, object, path, value, whether Karpenter's hash differs).
HAND_EDITS = [
    ("EC2NodeClass", "general", ("spec", "associatePublicIPAddress"), False, True),
    ("EC2NodeClass", "arm", ("spec", "detailedMonitoring"), False, True),
    ("EC2NodeClass", "general", ("spec", "instanceStorePolicy"), "", True),
    ("EC2NodeClass", "arm", ("spec", "capacityReservationSelectorTerms"), [], False),
    ("EC2NodeClass", "general", ("spec", "kubelet"), {}, False),
    ("EC2NodeClass", "general", ("spec", "kubelet", "evictionHard"), {}, True),
    ("EC2NodeClass", "arm", ("spec", "kubelet", "systemReserved"), {}, True),
    ("EC2NodeClass", "general", ("spec", "kubelet", "evictionSoft"), {}, True),
    ("EC2NodeClass", "arm", ("spec", "kubelet", "clusterDNS"), [], True),
    ("EC2NodeClass", "general", ("spec", "metadataOptions"), {}, False),
    ("NodePool", "general", ("spec", "template", "metadata", "annotations"), {}, True),
    ("NodePool", "arm", ("spec", "template", "metadata", "labels"), {}, True),
    ("NodePool", "general", ("spec", "template", "spec", "startupTaints"), [], True),
    ("NodePool", "general", ("spec", "template", "metadata"), {}, False),
    ("NodePool", "arm", ("spec", "disruption", "budgets"), [], False),
]


def _pairs(minor: str | None = None) -> list[tuple[str, str, str, Snapshot]]:
    return [
        (kind, name, ".".join(path[1:]), _edited(kind, name, _put(path, value), minor))
        for kind, name, path, value, _ in HAND_EDITS
    ]


@pytest.mark.parametrize(
    ("kind", "name", "path", "value", "drifts"), HAND_EDITS, ids=[".".join(e[2][1:]) for e in HAND_EDITS]
)
def test_an_empty_value_in_a_hand_edited_render_is_judged_by_the_hash(
    kind: str, name: str, path: tuple[str, ...], value: Any, drifts: bool
) -> None:
    before = _edited(kind, name, _put(path, value))
    item = _item(forecast(before, _program()), kind, name)
    old = next(o for o in before.objects if o.manifest["kind"] == kind and o.meta["name"] == name)
    new = next(o for o in _program().objects if o.manifest["kind"] == kind and o.meta["name"] == name)
    assert bool(drift_reasons(old.manifest, new.manifest)) == drifts
    if drifts:
        assert item.verdict == REPLACES, item
        # The field is named although no value changed as a reader sees it.
        assert any(path[-1] in reason for reason in item.reasons), item
        if value == {}:
            assert any(f"{path[-1]}: {value} → absent" in r for r in item.reasons), item
    else:
        assert item.verdict == NO_ROLLOUT, item
        assert item.reasons != ("unchanged",), item


def test_a_removed_empty_map_is_not_called_unchanged_on_any_kind() -> None:
    """A MachineSet too: an empty map removed is named as a change, never "unchanged"."""
    edit = _put(("spec", "template", "spec", "metadata", "annotations"), {})
    snap = _program()
    machine_set = next(o for o in snap.objects if o.manifest["kind"] == "MachineSet")
    before = _edited("MachineSet", str(machine_set.meta["name"]), edit)
    item = _item(forecast(before, snap), "MachineSet", str(machine_set.meta["name"]))
    assert "annotations" in " ".join(item.reasons), item


# --- requirements on custom labels -----------------------------------------------------------------------


def _requirement(requirement: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def edit(manifest: dict[str, Any]) -> None:
        manifest["spec"]["template"]["spec"]["requirements"].append(copy.deepcopy(requirement))

    return edit


@pytest.mark.parametrize(
    ("requirement", "verdict"),
    [
        ({"key": "example.com/dedicated", "operator": "DoesNotExist"}, NO_ROLLOUT),
        ({"key": "workload-tier", "operator": "NotIn", "values": ["batch"]}, NO_ROLLOUT),
        ({"key": "workload-tier", "operator": "In", "values": ["web"]}, REPLACES),
        ({"key": "example.com/dedicated", "operator": "Exists"}, REPLACES),
        # An instance label: some instance types carry it, so a node may have it.
        ({"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "DoesNotExist"}, REPLACES),
    ],
    ids=["doesnotexist-custom", "notin-custom", "in-custom", "exists-custom", "doesnotexist-instance-label"],
)
def test_a_requirement_on_a_label_no_node_carries(requirement: dict[str, Any], verdict: str) -> None:
    """The NodePool declared now has one more requirement than the render: nodes launched from the render
    carry no custom label the pool never set, so only a requirement that needs the label drifts them."""
    before = _program()
    after = _edited("NodePool", "general", _requirement(requirement))
    item = _item(forecast(before, after), "NodePool", "general")
    assert item.verdict == verdict, item
    if verdict == NO_ROLLOUT:
        assert any("none drifts" in r for r in item.reasons), item


def test_a_custom_label_the_old_pool_set_drifts_when_excluded() -> None:
    """The old pool put ``workload-tier: web`` on its nodes: excluding it now drifts them."""
    before = _edited(
        "NodePool", "general", _put(("spec", "template", "metadata", "labels"), {"workload-tier": "web"})
    )
    after = _edited(
        "NodePool",
        "general",
        lambda m: (
            _put(("spec", "template", "metadata", "labels"), {"workload-tier": "web"})(m),
            _requirement({"key": "workload-tier", "operator": "DoesNotExist"})(m),
        ),
    )
    assert _item(forecast(before, after), "NodePool", "general").verdict == REPLACES


# --- selectors: resolved by AWS, not hashed --------------------------------------------------------------


def _terms(field: str, terms: list[dict[str, Any]]) -> Callable[[dict[str, Any]], None]:
    return _put(("spec", field), terms)


def test_changed_selector_terms_by_tags_may_replace_nodes() -> None:
    before = _program()
    after = _edited(
        "EC2NodeClass", "arm", _terms("subnetSelectorTerms", [{"tags": {"Name": "edge-private-*"}}])
    )
    item = _item(forecast(before, after), "EC2NodeClass", "arm")
    assert item.verdict == MAY_REPLACE and item.rolls, item
    assert "SubnetDrift" in item.reasons[0] and "only AWS can tell" in item.reasons[0], item
    after = _edited("EC2NodeClass", "arm", _terms("securityGroupSelectorTerms", [{"name": "edge-nodes"}]))
    item = _item(forecast(before, after), "EC2NodeClass", "arm")
    assert item.verdict == MAY_REPLACE and "SecurityGroupDrift" in item.reasons[0], item


def test_selector_terms_by_id_say_which_nodes() -> None:
    by_id = [{"id": "subnet-0aa"}, {"id": "subnet-0bb"}]
    before = _edited("EC2NodeClass", "general", _terms("subnetSelectorTerms", by_id))
    # A subnet added: no node is in a subnet the terms dropped.
    wider = _edited("EC2NodeClass", "general", _terms("subnetSelectorTerms", [*by_id, {"id": "subnet-0cc"}]))
    assert _item(forecast(before, wider), "EC2NodeClass", "general").verdict == NO_ROLLOUT
    narrower = _edited("EC2NodeClass", "general", _terms("subnetSelectorTerms", by_id[1:]))
    item = _item(forecast(before, narrower), "EC2NodeClass", "general")
    assert (
        item.verdict == REPLACES and "subnet-0aa" in item.reasons[0] and "subnet-0bb stay" in item.reasons[0]
    )
    # Security groups: any other set replaces every node, a superset too.
    groups = [{"id": "sg-0aa"}]
    before = _edited("EC2NodeClass", "general", _terms("securityGroupSelectorTerms", groups))
    more = _edited(
        "EC2NodeClass", "general", _terms("securityGroupSelectorTerms", [*groups, {"id": "sg-0bb"}])
    )
    item = _item(forecast(before, more), "EC2NodeClass", "general")
    assert item.verdict == REPLACES and "every node" in item.reasons[0], item


def test_a_render_with_status_says_which_subnets() -> None:
    """A render exported from the cluster carries ``status.subnets``: what the old tag terms resolved to."""

    def exported(manifest: dict[str, Any]) -> None:
        manifest["status"] = {
            "subnets": [
                {"id": "subnet-0aa", "zone": "us-east-1a"},
                {"id": "subnet-0bb", "zone": "us-east-1b"},
            ],
            "securityGroups": [{"id": "sg-0aa", "name": "edge-node"}],
        }

    before = _edited("EC2NodeClass", "general", exported)
    after = _edited("EC2NodeClass", "general", _terms("subnetSelectorTerms", [{"id": "subnet-0bb"}]))
    item = _item(forecast(before, after), "EC2NodeClass", "general")
    assert item.verdict == REPLACES and "subnet-0aa" in item.reasons[0], item
    same = _edited("EC2NodeClass", "general", _terms("securityGroupSelectorTerms", [{"id": "sg-0aa"}]))
    assert _item(forecast(before, same), "EC2NodeClass", "general").verdict == NO_ROLLOUT


# --- the differential: Karpenter's own Hash() on the same hand-edited pairs ------------------------------


@pytest.mark.goref
@pytest.mark.parametrize("minor", SUPPORTED_KARPENTER)
def test_hand_edited_pairs_equal_karpenters_hash(minor: str) -> None:
    """Every hand-edited pair, the old object from outside nodefleet, on a cluster of each supported Karpenter:
    the forecast replaces nodes exactly when that Karpenter's real ``Hash()`` (and its requirements check)
    drifts them."""
    from tests.karpenter_hash.reference import Reference

    new = _program(minor)
    pairs = _pairs(minor)
    assert {
        o.annotations.get(k.ANNOTATION_KARPENTER) for o in new.objects if o.manifest["kind"] == "NodePool"
    } == {f"aws/{minor}"}
    requests = []
    for kind, name, _, before in pairs:
        old = next(o for o in before.objects if o.manifest["kind"] == kind and o.meta["name"] == name)
        now = next(o for o in new.objects if o.manifest["kind"] == kind and o.meta["name"] == name)
        requests.append({"op": "drift", "old": old.manifest, "new": now.manifest})
    answers = Reference(minor).ask_many(requests)
    wrong = []
    for (kind, name, path, before), answer in zip(pairs, answers, strict=True):
        assert not answer.get("error"), answer
        item = _item(forecast(before, new), kind, name)
        if (item.verdict == REPLACES) != bool(answer["reason"]):
            wrong.append(
                f"{kind} {name} {path}: Karpenter {answer['reason'] or 'no drift'}, forecast {item.verdict}"
            )
    assert not wrong, "\n".join(wrong)
    assert any(a["reason"] for a in answers) and not all(a["reason"] for a in answers)
