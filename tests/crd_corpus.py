"""A corpus of creates and updates of custom resources, for comparing ``crd-schema`` with the API server.

Every served version of every CRD file nodefleet ships (the per-kind CRDs and each Karpenter set's files)
gets a valid object nodefleet renders (a NodeClaim is built from a rendered NodePool's template), then
mutations by class, chosen by a seeded random generator so the corpus is the same on every run:

- ``valid``: the rendered object, and with optional fields the schema declares added (sampled values);
- ``null-list-item``, ``null-map-entry``, ``null-property``: a ``null`` inserted in a list, in a map
  (``additionalProperties``), or set on a declared property;
- ``missing-name``: ``metadata.name`` removed (alone, or with a valid or invalid ``generateName`` set);
- blocking errors, each with random changes under CEL rules beside it (``blocking+cel``): ``required``,
  ``enum``, ``too-long``, ``too-many``, ``wrong-type``;
- ``value``: pattern, minimum length, bounds, minimum items and properties, duplicates in set and map lists;
- ``cel``: random changes under a node with ``x-kubernetes-validations`` (fields removed, added, replaced);
- ``length-bytes``: strings of multi-byte characters around ``maxLength`` (characters, not bytes, count);
- ``map-key``: values under maps with keys such as ``Name`` made invalid (how the path names the key);
- updates: ``update-valid``; ``ratchet-kept`` (the stored object is invalid, the update keeps that value
  and changes another field); ``ratchet-changed`` (the invalid value is changed to another invalid one);
  ``update-invalid`` (a valid stored object made invalid, its name removed among others); ``transition``
  (changes under rules reading ``oldSelf``).

A test CRD (:data:`EDGES`) has what the shipped CRDs lack: defaults on list items, nullable items under list
rules, ``messageExpression`` results the API server trims or refuses, ``optionalOldSelf``, transition rules
inside map-list items, maps with property counts. It gets the same random mutations, and hand-written cases
(:func:`edge_cases`), each a place where crd-schema and the API server once disagreed; ``missing-name`` also
covers ``generateName`` and updates without a name there.
"""

from __future__ import annotations

import copy
import random
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path as FilePath
from typing import Any

import yaml

from nodefleet.apiserver.store import CRD_DIR, CrdVersion, ShippedCrd, load_index
from tests import crdobjects

__all__ = [
    "CREATE_CLASSES",
    "EDGES",
    "UPDATE_CLASSES",
    "Case",
    "bases",
    "corpus",
    "edge_cases",
    "gadget_cases",
    "keeper_cases",
    "reference_case",
]

Path = tuple[str | int, ...]


@dataclass(frozen=True)
class Case:
    id: str
    cls: str
    crd: CrdVersion
    obj: dict[str, Any]
    old: dict[str, Any] | None = None


def _as_sent(value: Any) -> Any:
    """``value`` as a Go client sends it: kubectl and the Pulumi provider marshal a whole float64 such as 11.0
    as ``11``, which the API server decodes as an integer."""
    if isinstance(value, float) and value.is_integer() and abs(value) < 2**63:
        return int(value)
    if isinstance(value, dict):
        return {k: _as_sent(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_as_sent(v) for v in value]
    return value


def reference_case(case: Case) -> dict[str, Any]:
    """The case as the Go reference reads it (one JSON line)."""
    out: dict[str, Any] = {
        "id": case.id,
        "crd": str(CRD_DIR / case.crd.crd.file),
        "version": case.crd.version,
        "object": _as_sent(case.obj),
    }
    if case.old is not None:
        out["oldObject"] = _as_sent(case.old)
    return out


# ---------------------------------------------------------------------------------------------------------
# base objects
# ---------------------------------------------------------------------------------------------------------


def _node_claim(node_pool: Mapping[str, Any]) -> dict[str, Any]:
    template = node_pool["spec"]["template"]
    spec = copy.deepcopy(template["spec"])
    for key in ("expireAfter", "terminationGracePeriod"):
        spec.pop(key, None)
    meta = copy.deepcopy(template.get("metadata") or {})
    meta["name"] = "on-demand-x7k2q"
    return {"apiVersion": "karpenter.sh/v1", "kind": "NodeClaim", "metadata": meta, "spec": spec}


#: A CRD with the schema features the shipped CRDs lack (see the file's header); not shipped, not rendered.
EDGES = FilePath(__file__).resolve().parent / "data" / "crd-edges" / "widgets.edges.nodefleet.io.yaml"


@cache
def edges() -> CrdVersion:
    return hand_written_crd(EDGES)


def hand_written_crd(path: FilePath) -> CrdVersion:
    """The first version of a hand-written test CRD (tests/data/crd-edges/), as crd-schema judges it."""
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    version = doc["spec"]["versions"][0]
    subresources = version.get("subresources") or {}
    crd = ShippedCrd(
        file=str(path),  # absolute: the reference reads CRD_DIR / file, which is then this path
        name=doc["metadata"]["name"],
        group=doc["spec"]["group"],
        kind=doc["spec"]["names"]["kind"],
        scope=doc["spec"]["scope"],
        versions=(version["name"],),
        sources=(),
        sha256="",
    )
    return CrdVersion(
        crd=crd,
        version=version["name"],
        schema=version["schema"]["openAPIV3Schema"],
        status_subresource="status" in subresources,
        scale_replicas_path=(subresources.get("scale") or {}).get("specReplicasPath", ""),
    )


def _edge_base() -> dict[str, Any]:
    part = {
        "name": "p1",
        "weight": 5,
        "color": "red",
        "serial": "s1",
        "labels": {"Name": "a"},
        "notes": [{"text": "hi", "ref": 1}],
    }
    return {
        "apiVersion": "edges.nodefleet.io/v1",
        "kind": "Widget",
        "metadata": {"name": "widget-a", "namespace": "default"},
        "spec": {
            "size": 3,
            "mode": "Fast",
            "title": "ab",
            "counter": 1,
            "words": ["alpha"],
            "tags": ["t1"],
            "spares": [{"name": "s1", "count": 1}],
            "parts": [part, {"name": "p2"}],
            "slots": [{"kind": "a"}],
            "names": ["a"],
            "limits": {"cpu": "2"},
            "fallback": {"a": "b"},
            "grid": {"row": [{"cell": "a"}]},
            "port": 80,
            "extra": {"known": "k", "free": [1]},
            "nick": "n",
        },
    }


@cache
def bases() -> tuple[tuple[CrdVersion, dict[str, Any]], ...]:
    """A valid object for every served version of every shipped CRD file, and for the edge CRD."""
    from nodefleet import kinds as k

    by_kind: dict[tuple[str, str], str] = {
        ("hypershift.openshift.io", "HostedCluster"): k.HOSTED_CLUSTER.token,
        ("hypershift.openshift.io", "NodePool"): k.HYPERSHIFT_NODE_POOL.token,
        ("karpenter.hypershift.openshift.io", "OpenshiftEC2NodeClass"): k.OPENSHIFT_EC2_NODE_CLASS.token,
        ("karpenter.sh", "NodePool"): k.KARPENTER_NODE_POOL.token,
        ("machine.openshift.io", "MachineSet"): k.MACHINE_SET.token,
        ("machineconfiguration.openshift.io", "MachineConfigPool"): k.MACHINE_CONFIG_POOL.token,
        ("operator.openshift.io", "MachineConfiguration"): k.MACHINE_CONFIGURATION.patch_token,
    }
    out = []
    for version in load_index().all_versions():
        key = (version.crd.group, version.crd.kind)
        if key == ("karpenter.k8s.aws", "EC2NodeClass"):
            token = k.EC2_NODE_CLASS.token
            if "hypershift" in version.crd.file:
                token = "legacy:" + token
            obj = crdobjects.rendered(token)
        elif key == ("karpenter.sh", "NodeClaim"):
            obj = _node_claim(crdobjects.rendered(k.KARPENTER_NODE_POOL.token))
        else:
            obj = crdobjects.rendered(by_kind[key])
        obj["apiVersion"] = version.api_version
        out.append((version, obj))
    out.append((edges(), _edge_base()))
    return tuple(out)


# ---------------------------------------------------------------------------------------------------------
# walking an object with its schema
# ---------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Site:
    path: Path
    value: Any
    schema: Mapping[str, Any]
    #: How the value sits in its parent: "prop" (declared property), "map" (additionalProperties), "item".
    via: str


def sites(obj: Mapping[str, Any], schema: Mapping[str, Any]) -> list[Site]:
    """Every value of ``obj`` below the root (metadata, apiVersion and kind excluded), with its schema."""
    out: list[Site] = []

    def walk(value: Any, sch: Mapping[str, Any], path: Path) -> None:
        if isinstance(value, dict):
            props = sch.get("properties") or {}
            addl = sch.get("additionalProperties")
            for key, item in value.items():
                if not path and key in ("apiVersion", "kind", "metadata", "status"):
                    continue
                if key in props:
                    out.append(Site((*path, key), item, props[key], "prop"))
                    walk(item, props[key], (*path, key))
                elif isinstance(addl, Mapping):
                    out.append(Site((*path, key), item, addl, "map"))
                    walk(item, addl, (*path, key))
        elif isinstance(value, list):
            items = sch.get("items")
            if isinstance(items, Mapping):
                for i, item in enumerate(value):
                    out.append(Site((*path, i), item, items, "item"))
                    walk(item, items, (*path, i))

    walk(obj, schema, ())
    return out


def _get(obj: Any, path: Path) -> Any:
    for p in path:
        obj = obj[p]
    return obj


def _set(obj: Any, path: Path, value: Any) -> None:
    _get(obj, path[:-1])[path[-1]] = value


def _delete(obj: Any, path: Path) -> None:
    parent = _get(obj, path[:-1])
    del parent[path[-1]]


def _under_rules(schema: Mapping[str, Any]) -> bool:
    """Whether ``schema`` or anything below it carries CEL rules."""
    if schema.get("x-kubernetes-validations"):
        return True
    subs = list((schema.get("properties") or {}).values())
    for key in ("items", "additionalProperties"):
        if isinstance(schema.get(key), Mapping):
            subs.append(schema[key])
    return any(_under_rules(s) for s in subs)


# ---------------------------------------------------------------------------------------------------------
# values from a schema
# ---------------------------------------------------------------------------------------------------------

_WORDS = [
    "a",
    "general",
    "test-1",
    "x",
    "",
    "Name",
    "us-east-1a",
    "10",
    "1.5",
    "ami-0123456789abcdef0",
    "amd64",
]


def sample(schema: Mapping[str, Any], rng: random.Random, depth: int = 0) -> Any:
    """A value of the schema's type, plausible but not necessarily valid beyond its type."""
    if "enum" in schema and schema["enum"] and rng.random() < 0.9:
        return copy.deepcopy(rng.choice(schema["enum"]))
    if "default" in schema and rng.random() < 0.3:
        return copy.deepcopy(schema["default"])
    if schema.get("x-kubernetes-int-or-string"):
        return rng.choice([1, 10, "10%", "1", "a"])
    kind = schema.get("type")
    if kind == "string":
        limit = int(schema.get("maxLength", 20))
        word = rng.choice(_WORDS)
        low = int(schema.get("minLength", 0))
        if len(word) < low:
            word = word + "a" * (low - len(word))
        return word[: max(limit, low)]
    if kind == "integer":
        low = int(schema.get("minimum", 0))
        high = int(schema.get("maximum", low + 100))
        return rng.randint(low, max(low, high))
    if kind == "number":
        return float(rng.randint(int(schema.get("minimum", 0)), int(schema.get("minimum", 0)) + 10))
    if kind == "boolean":
        return rng.random() < 0.5
    if kind == "array":
        items = schema.get("items") or {}
        n = max(int(schema.get("minItems", 0)), 1 if rng.random() < 0.8 else 0)
        n = min(n, int(schema.get("maxItems", n)))
        if depth > 4:
            return []
        out = [sample(items, rng, depth + 1) for _ in range(n)]
        return out
    if kind == "object" or "properties" in schema:
        props: Mapping[str, Any] = schema.get("properties") or {}
        obj: dict[str, Any] = {}
        if depth > 4:
            return obj
        for key in schema.get("required") or ():
            if key in props:
                obj[key] = sample(props[key], rng, depth + 1)
        optional = [p for p in props if p not in obj]
        for key in rng.sample(optional, min(len(optional), rng.choice([0, 1, 1, 2]))):
            obj[key] = sample(props[key], rng, depth + 1)
        addl = schema.get("additionalProperties")
        if isinstance(addl, Mapping) and not props:
            for key in rng.sample(
                ["Name", "team", "kubernetes.io/role"], int(schema.get("minProperties", 1))
            ):
                obj[key] = sample(addl, rng, depth + 1)
        return obj
    return rng.choice(["a", 1, True])


def _wrong_type(schema: Mapping[str, Any], rng: random.Random) -> Any:
    if schema.get("x-kubernetes-int-or-string"):
        return rng.choice([True, {"a": 1}, [1], 1.5])
    kind = schema.get("type")
    choices: dict[str, list[Any]] = {
        "string": [1, True, {"a": "b"}, ["a"]],
        "integer": ["1", True, 1.5, {"a": 1}],
        "number": ["1.5", True, ["a"]],
        "boolean": ["true", 1, {"a": 1}],
        "array": ["a", 1, {"a": 1}],
        "object": ["a", 1, ["a"]],
    }
    return copy.deepcopy(rng.choice(choices.get(str(kind), ["a"])))


# ---------------------------------------------------------------------------------------------------------
# mutations: each takes (object, schema, rng), changes the object in place, and says whether it could
# ---------------------------------------------------------------------------------------------------------

Mutation = Callable[[dict[str, Any], Mapping[str, Any], random.Random], bool]


def _pick(candidates: list[Site], rng: random.Random) -> Site | None:
    return rng.choice(candidates) if candidates else None


def null_list_item(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick([s for s in sites(obj, schema) if isinstance(s.value, list)], rng)
    if site is None:
        return False
    site.value.insert(rng.randint(0, len(site.value)), None)
    return True


def _map_sites(obj: dict[str, Any], schema: Mapping[str, Any]) -> list[Any]:
    """The maps of ``obj`` whose schema gives their values one type (``additionalProperties``)."""
    return [
        s
        for s in sites(obj, schema)
        if isinstance(s.value, dict) and isinstance(s.schema.get("additionalProperties"), Mapping)
    ]


def null_map_entry(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick(_map_sites(obj, schema), rng)
    if site is None:
        return False
    choice = rng.random()
    if site.value and choice < 0.35:
        site.value[rng.choice(sorted(site.value))] = None
    elif site.value and choice < 0.7:
        # Every entry null: once they are removed, the map's own constraints (minProperties) apply.
        for key in site.value:
            site.value[key] = None
    else:
        site.value[rng.choice(["Name", "extra", "team"])] = None
    return True


def null_property(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick([s for s in sites(obj, schema) if s.via == "prop"], rng)
    if site is None:
        return False
    _set(obj, site.path, None)
    return True


def missing_name(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    """``metadata.name`` removed, alone, with a ``generateName`` (valid or not, longer than the 58 characters
    name generation keeps), or emptied beside one."""
    meta = obj.setdefault("metadata", {})
    name = str(meta.pop("name", "x"))
    choice = rng.random()
    if choice < 0.3:
        meta["generateName"] = f"{name}-"
    elif choice < 0.5:
        meta["generateName"] = rng.choice(
            [f"{name.upper()}-", "-", f"{name}.-", f"{name}_", (name * 20)[:250] + "-", "a" * 254]
        )
    elif choice < 0.6:
        meta["name"] = ""
        meta["generateName"] = f"{name}-"
    return True


def required(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    found: list[Path] = []
    for key in schema.get("required") or ():
        if key in obj and key not in ("apiVersion", "kind", "metadata"):
            found.append((key,))
    for s in sites(obj, schema):
        if isinstance(s.value, dict):
            found.extend((*s.path, key) for key in s.schema.get("required") or () if key in s.value)
    if not found:
        return False
    _delete(obj, rng.choice(found))
    return True


def enum(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick([s for s in sites(obj, schema) if s.schema.get("enum")], rng)
    if site is None:
        return False
    current = site.schema["enum"][0]
    bad: Any = "NotAValue" if isinstance(current, str) else 987654
    _set(obj, site.path, bad)
    return True


def too_long(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick(
        [s for s in sites(obj, schema) if "maxLength" in s.schema and s.schema.get("type") == "string"], rng
    )
    if site is None:
        return False
    _set(obj, site.path, "a" * (int(site.schema["maxLength"]) + rng.randint(1, 5)))
    return True


def too_many(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    cands = [
        s
        for s in sites(obj, schema)
        if "maxItems" in s.schema and int(s.schema["maxItems"]) <= 200 and s.schema.get("type") == "array"
    ]
    site = _pick(cands, rng)
    if site is not None:
        value = site.value if isinstance(site.value, list) else []
        items = site.schema.get("items") or {}
        while len(value) <= int(site.schema["maxItems"]):
            value.append(copy.deepcopy(value[-1]) if value and rng.random() < 0.5 else sample(items, rng))
        _set(obj, site.path, value)
        return True
    cands = [s for s in sites(obj, schema) if "maxProperties" in s.schema and isinstance(s.value, dict)]
    site = _pick(cands, rng)
    if site is None:
        return False
    addl = site.schema.get("additionalProperties")
    i = 0
    while len(site.value) <= int(site.schema["maxProperties"]):
        site.value[f"k{i}"] = sample(addl, rng) if isinstance(addl, Mapping) else "v"
        i += 1
    return True


def wrong_type(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick(
        [s for s in sites(obj, schema) if s.schema.get("type") or s.schema.get("x-kubernetes-int-or-string")],
        rng,
    )
    if site is None:
        return False
    _set(obj, site.path, _wrong_type(site.schema, rng))
    return True


def value(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    """A value validation that does not block CEL: pattern, lengths, bounds, counts, duplicates."""
    options: list[tuple[Site, str]] = []
    by_type = {
        "string": ("pattern", "minLength", "format"),
        "integer": ("minimum", "maximum"),
        "number": ("minimum", "maximum"),
        "array": ("minItems",),
        "object": ("minProperties",),
    }
    for s in sites(obj, schema):
        for key in by_type.get(str(s.schema.get("type")), ()):
            if key in s.schema:
                options.append((s, key))
        if s.schema.get("x-kubernetes-list-type") in ("set", "map") and isinstance(s.value, list) and s.value:
            options.append((s, "duplicate"))
    if not options:
        return False
    site, key = rng.choice(options)
    sch = site.schema
    if key == "pattern":
        new: Any = rng.choice(["-bad-", "UPPER", "a b", "!", ""])
    elif key == "format":
        new = rng.choice(["not a date", "::", "1x"])
    elif key == "minLength":
        new = "" if int(sch["minLength"]) > 0 else "a"
    elif key == "minimum":
        new = int(sch["minimum"]) - rng.randint(1, 3)
    elif key == "maximum":
        new = int(sch["maximum"]) + rng.randint(1, 3)
    elif key == "minItems":
        new = []
    elif key == "minProperties":
        new = {}
    else:
        new = [*copy.deepcopy(site.value), copy.deepcopy(rng.choice(site.value))]
    _set(obj, site.path, new)
    return True


def cel(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    """Random changes below a node with CEL rules: a field removed, added, or replaced by a sampled value."""
    changed = False
    for _ in range(rng.randint(1, 3)):
        rule_sites = [s for s in sites(obj, schema) if _under_rules(s.schema)]
        if schema.get("x-kubernetes-validations"):
            rule_sites.append(Site((), obj, schema, "root"))
        if not rule_sites:
            break
        top = rng.choice(rule_sites)
        below = [top]
        if isinstance(top.value, dict | list):
            below += [
                Site((*top.path, *s.path), s.value, s.schema, s.via) for s in sites(top.value, top.schema)
            ]
        site = rng.choice(below)
        target = site.value
        action = rng.random()
        changed = True
        if isinstance(target, dict) and action < 0.45:
            props = site.schema.get("properties") or {}
            absent = [p for p in props if p not in target]
            if absent:
                key = rng.choice(absent)
                target[key] = sample(props[key], rng)
                continue
        if site.path and action < 0.7 and site.via in ("prop", "map"):
            _delete(obj, site.path)
            continue
        if site.path:
            _set(obj, site.path, sample(site.schema, rng))
    return changed


def length_bytes(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick(
        [
            s
            for s in sites(obj, schema)
            if "maxLength" in s.schema and "pattern" not in s.schema and s.schema.get("type") == "string"
        ],
        rng,
    )
    if site is None:
        return False
    limit = int(site.schema["maxLength"])
    n = limit + rng.choice([-1, 0, 0, 1])
    _set(obj, site.path, "é" * max(n, 0))
    return True


def map_key(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    site = _pick(_map_sites(obj, schema), rng)
    if site is None:
        return False
    addl = site.schema["additionalProperties"]
    key = rng.choice(["Name", "kubernetes.io/cluster", "a.b", "team"])
    bad = rng.choice([_wrong_type(addl, rng), "x" * (int(addl.get("maxLength", 300)) + 1)])
    site.value[key] = bad
    return True


def unknown_field(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    objs = [
        s
        for s in sites(obj, schema)
        if isinstance(s.value, dict)
        and s.schema.get("properties")
        and not s.schema.get("x-kubernetes-preserve-unknown-fields")
    ]
    site = _pick(objs, rng)
    if site is None:
        return False
    site.value["notDeclared"] = "x"
    return True


def add_fields(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    """Optional fields the schema declares, added with sampled values (often valid)."""
    objs = [s for s in sites(obj, schema) if isinstance(s.value, dict) and s.schema.get("properties")]
    site = _pick(objs, rng)
    if site is None:
        return False
    props = site.schema["properties"]
    absent = [p for p in props if p not in site.value]
    if not absent:
        return False
    key = rng.choice(absent)
    site.value[key] = sample(props[key], rng)
    return True


def label_change(obj: dict[str, Any], schema: Mapping[str, Any], rng: random.Random) -> bool:
    meta = obj.setdefault("metadata", {})
    meta.setdefault("labels", {})["nodefleet.io/revision"] = str(rng.randint(1, 999))
    return True


BLOCKING: dict[str, Mutation] = {
    "required": required,
    "enum": enum,
    "too-long": too_long,
    "too-many": too_many,
    "wrong-type": wrong_type,
}

CREATE_CLASSES: dict[str, Mutation] = {
    "null-list-item": null_list_item,
    "null-map-entry": null_map_entry,
    "null-property": null_property,
    "missing-name": missing_name,
    **BLOCKING,
    "value": value,
    "cel": cel,
    "length-bytes": length_bytes,
    "map-key": map_key,
    "unknown-field": unknown_field,
    "valid": add_fields,
}
#: Cases per CRD version and create class (blocking classes get as many again with CEL changes beside them).
_PER_CLASS = 8

UPDATE_CLASSES = ("update-valid", "ratchet-kept", "ratchet-changed", "update-invalid", "transition")
_PER_UPDATE_CLASS = 7

#: Invalid values a stored object may hold (under a stricter CRD), for the ratcheting classes.
_STORED_INVALID: dict[str, Mutation] = {
    "enum": enum,
    "too-long": too_long,
    "value": value,
    "cel": cel,
    "required": required,
    "too-many": too_many,
}


def _mutated(
    base: dict[str, Any], schema: Mapping[str, Any], rng: random.Random, *muts: Mutation
) -> dict[str, Any] | None:
    obj = copy.deepcopy(base)
    for mut in muts:
        if not mut(obj, schema, rng):
            return None
    return obj


def _transition_paths(schema: Mapping[str, Any], obj: dict[str, Any]) -> list[Path]:
    out: list[Path] = []
    if any("oldSelf" in str(r.get("rule", "")) for r in schema.get("x-kubernetes-validations") or ()):
        out.append(())
    for s in sites(obj, schema):
        if any("oldSelf" in str(r.get("rule", "")) for r in s.schema.get("x-kubernetes-validations") or ()):
            out.append(s.path)
    return out


def _transition(
    base: dict[str, Any], schema: Mapping[str, Any], rng: random.Random
) -> tuple[dict[str, Any], dict[str, Any]] | None:
    old = copy.deepcopy(base)
    if rng.random() < 0.5:
        add_fields(old, schema, rng)
    paths = _transition_paths(schema, old)
    if not paths:
        return None
    path = rng.choice(paths)
    new = copy.deepcopy(old)
    target = _get(new, path) if path else new
    sub_schema = schema
    for s in sites(new, schema):
        if s.path == path:
            sub_schema = s.schema
    if isinstance(target, dict) and sub_schema.get("properties") and rng.random() < 0.7:
        inner = [s for s in sites(target, sub_schema)]
        props = sub_schema["properties"]
        choice = rng.random()
        if inner and choice < 0.4:
            s = rng.choice(inner)
            _set(target, s.path, sample(s.schema, rng))
        elif choice < 0.7:
            absent = [p for p in props if p not in target]
            if absent:
                key = rng.choice(absent)
                target[key] = sample(props[key], rng)
            elif target:
                del target[rng.choice(sorted(target))]
        elif target:
            del target[rng.choice(sorted(target))]
    elif path:
        _set(new, path, sample(sub_schema, rng))
    else:
        cel(new, schema, rng)
    return old, new


def _updates(version: CrdVersion, base: dict[str, Any], rng: random.Random, tag: str) -> Iterator[Case]:
    schema = version.schema
    n = 0
    for cls in UPDATE_CLASSES:
        made = tries = 0
        while made < _PER_UPDATE_CLASS and tries < 60:
            tries += 1
            old: dict[str, Any] | None
            new: dict[str, Any] | None
            if cls == "update-valid":
                old = copy.deepcopy(base)
                new = _mutated(base, schema, rng, rng.choice([label_change, add_fields]))
            elif cls in ("ratchet-kept", "ratchet-changed"):
                mut = _STORED_INVALID[rng.choice(sorted(_STORED_INVALID))]
                old = _mutated(base, schema, rng, mut)
                if old is None:
                    continue
                if cls == "ratchet-kept":
                    new = _mutated(old, schema, rng, rng.choice([label_change, add_fields]))
                else:
                    new = _mutated(old, schema, rng, mut)
            elif cls == "update-invalid":
                old = copy.deepcopy(base)
                mut = rng.choice(
                    [
                        enum,
                        too_long,
                        value,
                        cel,
                        required,
                        null_list_item,
                        null_map_entry,
                        wrong_type,
                        missing_name,
                    ]
                )
                new = _mutated(base, schema, rng, mut)
            else:
                pair = _transition(base, schema, rng)
                if pair is None:
                    break
                old, new = pair
            if new is None or old is None or new == old:
                continue
            yield Case(f"{tag}/{cls}/{made}", cls, version, new, old)
            made += 1
            n += 1


def corpus(seed: int = 17) -> list[Case]:
    """The whole corpus, the same for the same seed."""
    rng = random.Random(seed)
    out: list[Case] = []
    for version, base in bases():
        tag = f"{version.crd.file}@{version.version}"
        out.append(Case(f"{tag}/rendered", "valid", version, copy.deepcopy(base)))
        for cls, mut in CREATE_CLASSES.items():
            made = tries = 0
            while made < _PER_CLASS and tries < 40:
                tries += 1
                obj = _mutated(base, version.schema, rng, mut)
                if obj is None or obj == base:
                    continue
                out.append(Case(f"{tag}/{cls}/{made}", cls, version, obj))
                made += 1
            if cls in BLOCKING:
                made = tries = 0
                while made < _PER_CLASS and tries < 40:
                    tries += 1
                    obj = _mutated(base, version.schema, rng, cel, mut)
                    if obj is None:
                        continue
                    out.append(Case(f"{tag}/{cls}+cel/{made}", "blocking+cel", version, obj))
                    made += 1
        out.extend(_updates(version, base, rng, tag))
    out.extend(edge_cases())
    out.extend(gadget_cases())
    out.extend(keeper_cases())
    return out


def keeper_cases() -> list[Case]:
    """The third edge CRD's hand-written cases (tests/crd_unreadable.py)."""
    from tests import crd_unreadable

    version = crd_unreadable.keepers()
    return [
        Case(f"{crd_unreadable.KEEPERS.name}@{version.version}/{cls}/{tag}", cls, version, obj, old)
        for cls, tag, obj, old in crd_unreadable.CASES
    ]


def gadget_cases() -> list[Case]:
    """The second edge CRD's hand-written cases (tests/crd_gadgets.py)."""
    from tests import crd_gadgets

    version = crd_gadgets.gadgets()
    return [
        Case(f"{crd_gadgets.GADGETS.name}@{version.version}/{cls}/{tag}", cls, version, obj, old)
        for cls, tag, obj, old in crd_gadgets.CASES
    ]


# ---------------------------------------------------------------------------------------------------------
# the edge CRD's hand-written cases: each one a place where crd-schema and the API server once disagreed
# ---------------------------------------------------------------------------------------------------------

_DROP = object()


def _edge(spec: Mapping[str, Any] | None = None, meta: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The edge CRD's base object with ``spec`` and ``metadata`` fields replaced (``_DROP`` removes one)."""
    obj = _edge_base()
    for part, changes in (("spec", spec), ("metadata", meta)):
        for key, value in (changes or {}).items():
            if value is _DROP:
                obj[part].pop(key, None)
            else:
                obj[part][key] = copy.deepcopy(value)
    return obj


def _part(**fields: Any) -> dict[str, Any]:
    return {"name": "p1", **fields}


_LONG_PREFIX = "a" * 250 + "-"

#: (class, tag, object, previous object or None).
_EDGE_CASES: list[tuple[str, str, dict[str, Any], dict[str, Any] | None]] = [
    # a null list item takes the items' default; a defaulted item can be a duplicate
    ("null-list-item", "defaulted-word", _edge({"words": [None, "alpha"]}), None),
    ("null-list-item", "defaulted-tag-duplicate", _edge({"tags": [None, "none"]}), None),
    ("null-list-item", "defaulted-spare-duplicate", _edge({"spares": [None, {"name": "spare"}]}), None),
    ("null-list-item", "two-defaulted-spares", _edge({"spares": [None, None]}), None),
    # a null item of a map list without a default is a duplicate of a keyless item or another null
    ("null-list-item", "part-null-beside-keyless", _edge({"parts": [None, {"weight": 1}]}), None),
    ("null-list-item", "two-null-parts", _edge({"parts": [None, None]}), None),
    ("null-list-item", "null-note", _edge({"parts": [_part(notes=[{"text": "a"}, None])]}), None),
    ("null-list-item", "null-note-ref", _edge({"parts": [_part(notes=[{"ref": None}])]}), None),
    # nullable items: a list rule reading a field of a null item is a CEL runtime error
    ("null-list-item", "null-slot", _edge({"slots": [{"kind": "a"}, None]}), None),
    ("null-list-item", "null-name", _edge({"names": [None, "a"]}), None),
    ("null-list-item", "null-in-preserved", _edge({"extra": {"known": "k", "free": [None]}}), None),
    # null map entries are removed first; then the map's own counts apply, or the entry's default
    ("null-map-entry", "only-limit-null", _edge({"limits": {"cpu": None}}), None),
    (
        "null-map-entry",
        "three-limits-one-null",
        _edge({"limits": {"cpu": "1", "gpu": "2", "mem": None}}),
        None,
    ),
    ("null-map-entry", "three-limits", _edge({"limits": {"cpu": "1", "gpu": "2", "mem": "3"}}), None),
    ("null-map-entry", "defaulted-fallback", _edge({"fallback": {"a": None, "b": "c"}}), None),
    ("null-map-entry", "part-label-null", _edge({"parts": [_part(labels={"Name": None})]}), None),
    ("null-map-entry", "grid-row-null", _edge({"grid": {"row": None, "col": [{"cell": "x"}]}}), None),
    ("null-property", "nullable-nick", _edge({"nick": None}), None),
    # generateName is validated, and so is the name generated from its first 58 characters
    ("missing-name", "generate-only", _edge(meta={"name": _DROP, "generateName": "widget-"}), None),
    ("missing-name", "generate-upper", _edge(meta={"name": _DROP, "generateName": "Widget-"}), None),
    ("missing-name", "generate-dash", _edge(meta={"name": _DROP, "generateName": "-"}), None),
    ("missing-name", "generate-dot-dash", _edge(meta={"name": _DROP, "generateName": "a.-"}), None),
    ("missing-name", "generate-long", _edge(meta={"name": _DROP, "generateName": _LONG_PREFIX}), None),
    ("missing-name", "generate-too-long", _edge(meta={"name": _DROP, "generateName": "a" * 260}), None),
    (
        "missing-name",
        "generate-cut-at-dot",
        _edge(meta={"name": _DROP, "generateName": "a" * 57 + ".b"}),
        None,
    ),
    ("missing-name", "name-and-bad-generate", _edge(meta={"generateName": "A_"}), None),
    ("missing-name", "empty-name-and-generate", _edge(meta={"name": "", "generateName": "w-"}), None),
    ("missing-name", "no-name-with-cel-error", _edge({"size": 7}, meta={"name": _DROP}), None),
    # on an update a missing name does not keep CEL rules from running; name and namespace are immutable
    ("missing-name", "update-without-name", _edge({"size": 7}, meta={"name": _DROP}), _edge()),
    ("missing-name", "update-generate-only", _edge(meta={"name": _DROP, "generateName": "w-"}), _edge()),
    ("missing-name", "update-without-metadata", {**_edge(), "metadata": {}}, _edge()),
    ("missing-name", "update-renamed", _edge(meta={"name": "widget-b"}), _edge()),
    ("missing-name", "update-other-namespace", _edge(meta={"namespace": "other"}), _edge()),
    # an object without its kind or apiVersion is refused as it is read (a transition case of seed 6 removed it)
    ("type-meta", "no-kind", {k: v for k, v in _edge().items() if k != "kind"}, None),
    ("type-meta", "no-api-version", {k: v for k, v in _edge().items() if k != "apiVersion"}, None),
    ("type-meta", "update-without-kind", {k: v for k, v in _edge().items() if k != "kind"}, _edge()),
    ("type-meta", "other-kind", {**_edge({"size": 7}), "kind": "Gadget"}, None),
    # metadata that cannot be read as ObjectMeta is refused alone; its unknown fields as any unknown field
    ("metadata", "not-an-object", {**_edge(), "metadata": "widget-a"}, None),
    ("metadata", "name-a-number", _edge(meta={"name": 7}), None),
    ("metadata", "label-a-number", _edge(meta={"labels": {"a": 1}}), None),
    ("metadata", "unknown-field", _edge(meta={"owner": "me"}), None),
    ("metadata", "finalizer-invalid", _edge(meta={"finalizers": ["a b"]}), None),
    ("metadata", "null-label", _edge(meta={"labels": {"a": None}}), None),
    # blocking errors keep every CEL rule from running, at any depth
    ("blocking+cel", "enum-deep", _edge({"parts": [_part(color="green", weight=500)]}), None),
    (
        "blocking+cel",
        "too-long-note",
        _edge({"parts": [_part(notes=[{"text": "toolong"}, {"text": "bad"}])]}),
        None,
    ),
    (
        "blocking+cel",
        "too-many-labels",
        _edge({"parts": [_part(labels={"a": "1", "b": "2", "c": "3"})], "size": 7}),
        None,
    ),
    ("blocking+cel", "required-key", _edge({"parts": [{"weight": 500}], "title": "a"}), None),
    ("blocking+cel", "too-long-title", _edge({"title": "abcdefg", "size": 7}), None),
    (
        "blocking+cel",
        "annotations-too-long",
        _edge({"size": 7}, meta={"annotations": {"a": "é" * 140000}}),
        None,
    ),
    ("blocking+cel", "not-blocking-min-properties", _edge({"parts": [_part(labels={})], "size": 7}), None),
    ("blocking+cel", "not-blocking-pattern", _edge({"limits": {"cpu": "x"}, "size": 7}), None),
    ("blocking+cel", "wrong-type-number-bounds", _edge({"size": 11.5}), None),
    # messages: trimmed, evaluated, too long, failing, line breaks
    (
        "cel",
        "message-trimmed",
        _edge({"parts": [_part(), {"name": "a"}, {"name": "b"}, {"name": "c"}, {"name": "d"}]}),
        None,
    ),
    ("cel", "expression-trailing-newline", _edge({"size": 7}), None),
    ("cel", "expression-self", _edge({"title": "a"}), None),
    ("cel", "expression-blank", _edge({"title": "blank"}), None),
    ("cel", "expression-too-long", _edge({"title": "wide"}), None),
    ("cel", "expression-error", _edge({"title": "oops"}), None),
    ("cel", "expression-nested", _edge({"parts": [_part(weight=150), {"name": "p2", "weight": 100}]}), None),
    ("cel", "int-or-string-string", _edge({"port": "80"}), None),
    ("cel", "int-or-string-large", _edge({"port": 70000}), None),
    ("cel", "int-or-string-whole-float", _edge({"port": 80.0}), None),
    # fieldPath as the API server appends it: a map key as [key] (spec.limits.[cpu] when it comes first)
    ("cel", "field-path-map-key", _edge({"limits": {"cpu": "0"}}), None),
    ("cel", "field-path-nested-key", _edge({"parts": [_part(labels={"Name": "x"})]}), None),
    ("length-bytes", "title-two-byte", _edge({"title": "éééééé"}), None),
    ("length-bytes", "title-two-byte-over", _edge({"title": "ééééééé"}), None),
    ("length-bytes", "title-emoji", _edge({"title": "😀😀😀😀😀😀"}), None),
    ("length-bytes", "title-emoji-over", _edge({"title": "😀😀😀😀😀😀😀"}), None),
    ("length-bytes", "nick-cjk", _edge({"nick": "名前名前"}), None),
    (
        "map-key",
        "label-key-dotted",
        _edge({"parts": [_part(labels={"kubernetes.io/role": "toolong"})]}),
        None,
    ),
    # ratcheting: unchanged invalid values by map-list key, set and atomic lists, maps; transition rules
    (
        "ratchet-kept",
        "part-reordered",
        _edge({"parts": [{"name": "p2"}, _part(color="green")]}),
        _edge({"parts": [_part(color="green"), {"name": "p2"}]}),
    ),
    (
        "ratchet-kept",
        "part-sibling-added",
        _edge({"parts": [_part(color="green"), {"name": "p3"}]}),
        _edge({"parts": [_part(color="green")]}),
    ),
    (
        "ratchet-changed",
        "part-sibling-field",
        _edge({"parts": [_part(color="green", weight=6)]}),
        _edge({"parts": [_part(color="green")]}),
    ),
    ("ratchet-kept", "tags-reordered", _edge({"tags": ["t1", "bad"]}), _edge({"tags": ["bad", "t1"]})),
    ("ratchet-changed", "tags-grown", _edge({"tags": ["bad", "t1", "t2"]}), _edge({"tags": ["bad", "t1"]})),
    (
        "ratchet-kept",
        "words-kept",
        _edge({"words": ["muchtoolong"], "size": 4}),
        _edge({"words": ["muchtoolong"]}),
    ),
    (
        "ratchet-changed",
        "words-appended",
        _edge({"words": ["muchtoolong", "b"]}),
        _edge({"words": ["muchtoolong"]}),
    ),
    (
        "ratchet-kept",
        "limits-kept",
        _edge({"limits": {"cpu": "x"}, "size": 4}),
        _edge({"limits": {"cpu": "x"}}),
    ),
    (
        "ratchet-kept",
        "note-kept",
        _edge({"parts": [_part(notes=[{"text": "bad"}]), {"name": "p3"}]}),
        _edge({"parts": [_part(notes=[{"text": "bad"}])]}),
    ),
    (
        "ratchet-changed",
        "note-appended",
        _edge({"parts": [_part(notes=[{"text": "bad"}, {"text": "a"}])]}),
        _edge({"parts": [_part(notes=[{"text": "bad"}])]}),
    ),
    (
        "ratchet-kept",
        "duplicate-tags-kept",
        _edge({"tags": ["a", "a"], "size": 4}),
        _edge({"tags": ["a", "a"]}),
    ),
    # an object holding a field its schema does not describe never equals its previous value
    (
        "ratchet-kept",
        "size-missing-kept",
        _edge({"size": _DROP, "extra": {"known": "k"}}, meta={"labels": {"a": "b"}}),
        _edge({"size": _DROP, "extra": {"known": "k"}}),
    ),
    (
        "ratchet-kept",
        "size-missing-beside-unknown",
        _edge({"size": _DROP}, meta={"labels": {"a": "b"}}),
        _edge({"size": _DROP}),
    ),
    (
        "ratchet-kept",
        "extra-known-kept",
        _edge({"extra": {"known": "long"}, "size": 4}),
        _edge({"extra": {"known": "long"}}),
    ),
    (
        "ratchet-kept",
        "extra-known-beside-unknown",
        _edge({"extra": {"known": "long", "free": [1]}, "size": 4}),
        _edge({"extra": {"known": "long", "free": [1]}}),
    ),
    ("transition", "mode-changed", _edge({"mode": "Slow"}), _edge()),
    ("transition", "mode-invalid-kept", _edge({"mode": "Medium", "size": 4}), _edge({"mode": "Medium"})),
    ("transition", "serial-changed", _edge({"parts": [_part(serial="s2")]}), _edge()),
    ("transition", "serial-of-reordered-part", _edge({"parts": [{"name": "p2"}, _part()]}), _edge()),
    ("transition", "counter-down", _edge({"counter": 0}), _edge()),
    ("transition", "counter-added", _edge({"counter": 0}), _edge({"counter": _DROP})),
    # a messageExpression reads oldSelf as the plain value, also under optionalOldSelf
    ("transition", "counter-down-message", _edge({"counter": 2}), _edge({"counter": 5})),
    ("transition", "counter-created", _edge({"counter": -1}), None),
]


def edge_cases() -> list[Case]:
    """The edge CRD's hand-written cases (the same on every run)."""
    version = edges()
    return [
        Case(f"{EDGES.name}@{version.version}/{cls}/{tag}", cls, version, obj, old)
        for cls, tag, obj, old in _EDGE_CASES
    ]
