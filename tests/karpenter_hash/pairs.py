"""Generated (before, after) pairs of EC2NodeClasses and NodePools for the differential drift test.

Fields come from the Go types each Karpenter minor hashes (``nodefleet/hashtypes``), so every spec field
of that minor is changed alone, hashed or ``hash:"ignore"``, including the fields outside a NodePool's
template. Values come from the Go kind and the CRD (enums), chosen to hit what hashstructure treats
specially: absent vs zero vs empty, pointers to zero values, lists in another order or with an item twice,
map entries with empty values, durations and quantities spelt two ways. Scenario pairs add what a fleet
does to userData (Ignition token rotations, ``TargetConfigVersionHash`` moves on a release bump, single-byte
edits), cluster CA bundle rotations, AMI family by alias, and NodeClaims stamped by another Karpenter minor.
"""

from __future__ import annotations

import copy
import itertools
import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from nodefleet.drift.karpenter_hash import HashTypes, _spec_schema, hash_types
from nodefleet.render.ignition import hypershift_stub, pointer_key, s3_pointer, user_data

MISSING: Any = object()

NODE_CLASS = {
    "apiVersion": "karpenter.k8s.aws/v1",
    "kind": "EC2NodeClass",
    "metadata": {"name": "general"},
    "spec": {
        "amiFamily": "Custom",
        "amiSelectorTerms": [{"id": "ami-06a6b025350ff1e23"}],
        "role": "KarpenterNodeRole-prod",
        "subnetSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "securityGroupSelectorTerms": [{"tags": {"karpenter.sh/discovery": "prod"}}],
        "tags": {"team": "infra"},
        "blockDeviceMappings": [
            {
                "deviceName": "/dev/xvda",
                "ebs": {"volumeSize": "120Gi", "volumeType": "gp3", "encrypted": True},
            }
        ],
    },
}
NODE_POOL = {
    "apiVersion": "karpenter.sh/v1",
    "kind": "NodePool",
    "metadata": {"name": "general"},
    "spec": {
        "template": {
            "metadata": {"labels": {"node-role.kubernetes.io/worker": ""}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "general"},
                "requirements": [{"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]}],
                "expireAfter": "720h",
            },
        },
        "disruption": {"consolidationPolicy": "WhenEmptyOrUnderutilized", "consolidateAfter": "30s"},
        "limits": {"cpu": "1000"},
    },
}


@dataclass(frozen=True)
class Pair:
    """One change: ``old`` launched the nodes, ``new`` is applied."""

    id: str
    category: str
    old: Mapping[str, Any]
    new: Mapping[str, Any]
    ca_old: str | None = None
    ca_new: str | None = None
    #: The Karpenter minor that stamped the NodeClaims (None: the one judging the pair).
    old_minor: str | None = None

    def request(self) -> dict[str, Any]:
        return {
            "op": "drift",
            "old": self.old,
            "new": self.new,
            "caBundleOld": self.ca_old,
            "caBundleNew": self.ca_new,
        }


def _stub(token: str = "7d4a1c", config_hash: str = "a1b2c3d4", ca: str = "ca-0") -> str:
    return user_data(
        hypershift_stub(
            "ignition-server-clusters-prod.apps.example.com",
            token=token,
            ca_pem=f"-----BEGIN CERTIFICATE-----\n{ca}\n-----END CERTIFICATE-----\n",
            node_pool="clusters-prod/general",
            config_hash=config_hash,
        )
    )


# --- values per Go type ---------------------------------------------------------------------------------

_SPECIAL_STRINGS: dict[str, list[Any]] = {
    "userData": [_stub(), _stub(token="9f0e2b"), "#!/bin/bash\necho hi\n", "#!/bin/bash\necho hi\n\n", ""],
    "alias": ["al2023@latest", "al2023@v20240807", "bottlerocket@latest"],
    "deviceName": ["/dev/xvda", "/dev/xvdb", ""],
    "kmsKeyID": ["arn:aws:kms:us-east-1:123456789012:key/a", "arn:aws:kms:us-east-1:123456789012:key/b", ""],
}
_BY_TYPE: dict[str, list[Any]] = {
    "k8s.io/apimachinery/pkg/api/resource.Quantity": ["120Gi", "122880Mi", "128849018880", "1Ti", "1024Gi"],
    "k8s.io/apimachinery/pkg/apis/meta/v1.Duration": ["1h", "60m", "3600s", "0s", "90m"],
    "sigs.k8s.io/karpenter/pkg/apis/v1.NillableDuration": ["720h", "43200m", "Never", "1h", "60m"],
    # A taint's timeAdded: one instant in two zones, a fraction of a second, the next second.
    "k8s.io/apimachinery/pkg/apis/meta/v1.Time": [
        "2024-01-01T00:00:00Z",
        "2024-01-01T01:00:00+01:00",
        "2024-01-01T00:00:00.5Z",
        "2024-01-01T00:00:01Z",
    ],
}
_KUBELET_MAP = [
    {"maxPods": 110},
    {"maxPods": 110, "podsPerCore": 2},
    {"maxPods": 250},
    {},
    # 1.15 hashes the map's JSON text as the API server stores it: 110.0 is stored as 110, an integer past
    # int64 as a float (10**21 as 1e+21), a null entry is dropped, a nested map's keys are sorted.
    {"maxPods": 110.0},
    {"maxPods": 110, "registryPullQPS": 10**21},
    {"maxPods": 110, "registryPullQPS": 1e21},
    {"maxPods": 110, "registryPullQPS": 0.5},
    {"maxPods": 110, "podsPerCore": None},
    {"maxPods": 110, "evictionHard": {"nodefs.available": "10%", "memory.available": "100Mi"}},
]


def _schema_at(schema: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    if schema.get("type") == "array":
        schema = schema.get("items") or {}
    props = schema.get("properties") or {}
    if key in props:
        return dict(props[key])
    addl = schema.get("additionalProperties")
    return dict(addl) if isinstance(addl, Mapping) else {}


class _Values:
    def __init__(self, types: HashTypes) -> None:
        self.types = types.types

    def of(self, tid: str, schema: Mapping[str, Any], name: str, depth: int = 0) -> list[Any]:
        """Candidate JSON values for a field of Go type ``tid`` (CRD ``schema``), most telling first."""
        d = self.types[tid]
        if tid in _BY_TYPE:
            return list(_BY_TYPE[tid])
        kind = d["kind"]
        if kind == "ptr":
            inner = self.of(d["elem"], schema, name, depth)
            if self.types[d["elem"]]["kind"] == "struct" and d["elem"] not in _BY_TYPE:
                inner.append({})
            return inner
        if kind == "struct":
            base = self.struct_base(tid, schema, depth)
            return [base] if base else [{}]
        if kind == "slice":
            items = self.of(d["elem"], schema.get("items") or {}, name, depth + 1)
            items = [i for i in items if i not in ("", {}, None)] or items
            if not items:
                return []
            a = items[0]
            b = items[1] if len(items) > 1 else None
            out: list[Any] = [[a], [a, a], []]
            if b is not None:
                out += [[a, b], [b, a], [b], [a, a, b]]
            return out
        if kind == "map":
            elem = self.types[d["elem"]]
            if d["elem"].endswith("apiextensions/v1.JSON"):
                return copy.deepcopy(_KUBELET_MAP)
            vals = self.of(d["elem"], schema.get("additionalProperties") or {}, name, depth + 1)
            if not vals:
                return []
            v0 = vals[0]
            v1 = vals[1] if len(vals) > 1 else v0
            zero = "" if elem["kind"] == "string" else v1
            return [{"k1": v0}, {"k1": zero}, {"k1": v0, "k2": v1}, {"k2": v1, "k1": v0}, {}]
        if name in _SPECIAL_STRINGS and kind == "string":
            return list(_SPECIAL_STRINGS[name])
        enum = schema.get("enum")
        if kind == "string":
            return [*(enum[:3] if enum else [f"{name}-a", f"{name}-b"]), ""]
        if kind == "bool":
            return [True, False]
        if kind in ("int", "uint"):
            return [1, 2, 0]
        if kind == "float":
            return [0.5, 1.5, 0.0]
        return []

    def struct_base(self, tid: str, schema: Mapping[str, Any], depth: int) -> dict[str, Any]:
        """A small value of a struct: its first two fields with a value each (for list items)."""
        out: dict[str, Any] = {}
        for f in self.types[tid].get("fields") or []:
            if not f["exported"] or not f["json"] or f["json"] == "-" or depth > 2:
                continue
            vals = self.of(f["type"], _schema_at(schema, f["json"]), f["json"], depth + 1)
            vals = [v for v in vals if v not in ("", {}, [], None, 0, False)]
            if vals:
                out[f["json"]] = vals[0]
            if len(out) == 2:
                break
        return out


# --- pairs ----------------------------------------------------------------------------------------------


def _leaves(
    types: HashTypes, tid: str, schema: Mapping[str, Any], path: tuple[Any, ...], depth: int = 0
) -> Iterator[tuple[tuple[Any, ...], str, Mapping[str, Any], str]]:
    """(JSON path, Go type, CRD schema, field name) of every field under struct ``tid``."""
    for f in types.types[tid].get("fields") or []:
        if not f["exported"] or not f["json"] or f["json"] == "-":
            continue
        sub = _schema_at(schema, f["json"])
        here = (*path, f["json"])
        yield here, f["type"], sub, f["json"]
        inner = f["type"]
        while types.types[inner]["kind"] == "ptr":
            inner = types.types[inner]["elem"]
        d = types.types[inner]
        if d["kind"] == "slice" and types.types[d["elem"]]["kind"] in ("struct", "ptr") and depth < 3:
            elem = d["elem"]
            while types.types[elem]["kind"] == "ptr":
                elem = types.types[elem]["elem"]
            if types.types[elem]["kind"] == "struct" and elem not in _BY_TYPE:
                yield from _leaves(types, elem, sub.get("items") or {}, (*here, 0), depth + 1)
        elif d["kind"] == "struct" and inner not in _BY_TYPE and depth < 4:
            yield from _leaves(types, inner, sub, here, depth + 1)


def _get(obj: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        if isinstance(key, int):
            if not isinstance(obj, list) or len(obj) <= key:
                return MISSING
            obj = obj[key]
        else:
            if not isinstance(obj, Mapping) or key not in obj:
                return MISSING
            obj = obj[key]
    return obj


def _set(obj: dict[str, Any], path: tuple[Any, ...], value: Any) -> dict[str, Any]:
    out = copy.deepcopy(obj)
    node: Any = out
    for i, key in enumerate(path[:-1]):
        nxt = path[i + 1]
        if isinstance(key, int):
            while len(node) <= key:
                node.append({})
            node = node[key]
        else:
            if not isinstance(node.get(key), list | dict):
                node[key] = [] if isinstance(nxt, int) else {}
            node = node[key]
    last = path[-1]
    if value is MISSING:
        if isinstance(node, dict):
            node.pop(last, None)
    else:
        node[last] = copy.deepcopy(value)
    return out


def _text(obj: Any) -> str:
    return json.dumps(obj)


def _candidates(
    kind: str, base: dict[str, Any], types: HashTypes, minor: str
) -> Iterator[tuple[tuple[Any, ...], list[Any]]]:
    """Every field under the spec with the values it is given (absent first)."""
    root = types.roots["EC2NodeClass" if kind == "EC2NodeClass" else "NodePoolSpec"]
    schema = _spec_schema(base["apiVersion"], base["kind"], minor)
    values = _Values(types)
    for path, tid, sub, name in _leaves(types, root, schema, ("spec",)):
        candidates = [MISSING, *values.of(tid, sub, name)]
        current = _get(base, path)
        if current is not MISSING and current not in candidates:
            candidates.insert(1, current)
        yield path, candidates


def _field_pairs(kind: str, base: dict[str, Any], types: HashTypes, minor: str) -> Iterator[Pair]:
    for path, candidates in _candidates(kind, base, types, minor):
        dotted = ".".join(str(p) for p in path)
        for i, (a, b) in enumerate(itertools.permutations(candidates, 2)):
            if a is b:
                continue
            old, new = _set(base, path, a), _set(base, path, b)
            if _text(old) == _text(new):  # not ==: 110 == 110.0 and key order count in what is sent
                continue
            yield Pair(f"{kind}:{dotted}#{i}", "field", old, new)


#: Seeds of the pairs that change several fields at once, and pairs per seed and kind.
MULTI_FIELD_SEEDS = (18, 1, 2)
MULTI_FIELD_COUNT = 40


def _multi_field_pairs(kind: str, base: dict[str, Any], types: HashTypes, minor: str) -> Iterator[Pair]:
    """Two to five fields changed together (a third of them to the same value on both sides), nested
    fields included: what one field changed alone cannot show (an item twice in one list and a field
    respelt in another, defaults spelt out beside a real change)."""
    import random

    fields = list(_candidates(kind, base, types, minor))
    for seed in MULTI_FIELD_SEEDS:
        rng = random.Random(f"{seed}/{kind}/{minor}")
        for i in range(MULTI_FIELD_COUNT):
            old, new = base, base
            for path, candidates in rng.sample(fields, rng.randint(2, 5)):
                a = rng.choice(candidates)
                b = a if rng.random() < 0.3 else rng.choice(candidates)
                old, new = _set(old, path, a), _set(new, path, b)
            yield Pair(f"{kind}:fields#{seed}.{i}", "fields", old, new)


def _scenario_pairs(minor: str) -> Iterator[Pair]:
    nc = copy.deepcopy(NODE_CLASS)
    stub = _set(nc, ("spec", "userData"), _stub())
    for i, token in enumerate(("9f0e2b", "000000", "7d4a1c7d4a1c")):
        yield Pair(
            f"token-rotation#{i}", "token-rotation", stub, _set(nc, ("spec", "userData"), _stub(token=token))
        )
    for i, config_hash in enumerate(("b2c3d4e5", "A1B2C3D4")):
        yield Pair(
            f"release-bump#{i}",
            "release-bump",
            stub,
            _set(nc, ("spec", "userData"), _stub(token="9f0e2b", config_hash=config_hash)),
        )
    yield Pair("ignition-ca#0", "ignition-ca", stub, _set(nc, ("spec", "userData"), _stub(ca="ca-1")))
    text = _stub()
    for i, edited in enumerate((text + "\n", text.replace(",", ", ", 1), " " + text, text[:-1] + " }")):
        yield Pair(f"userdata-bytes#{i}", "userdata-bytes", stub, _set(nc, ("spec", "userData"), edited))
    for i, (ca_old, ca_new) in enumerate(
        (("ca-0", "ca-1"), ("ca-0", "ca-0"), (None, ""), (None, "ca-0"), ("ca-0", "ca-0\n"))
    ):
        yield Pair(f"ca-bundle#{i}", "ca-bundle", nc, nc, ca_old, ca_new)
    # The hash takes the resolved AMI family: an alias's family equals the same amiFamily spelt out.
    alias = _set(
        _set(nc, ("spec", "amiSelectorTerms"), [{"alias": "al2023@latest"}]), ("spec", "amiFamily"), MISSING
    )
    yield Pair("ami-family#0", "ami-family", alias, _set(alias, ("spec", "amiFamily"), "AL2023"))
    yield Pair("ami-family#1", "ami-family", alias, _set(alias, ("spec", "amiFamily"), "Custom"))
    yield Pair(
        "ami-family#2",
        "ami-family",
        alias,
        _set(alias, ("spec", "amiSelectorTerms"), [{"alias": "bottlerocket@latest"}]),
    )

    # nodefleet's stable indirection: userData points at an S3 object keyed by release and rendered config;
    # a token or CA rotation rewrites the object, not the pointer; a release bump moves the key.
    def pointer(release: str) -> dict[str, Any]:
        key = pointer_key("nodefleet", "prod", "general", release=release, config_version="rendered-worker-1")
        return _set(nc, ("spec", "userData"), user_data(s3_pointer("fleet-ignition", key)))

    yield Pair("s3-pointer#0", "token-rotation", pointer("4.22.3"), pointer("4.22.3"))
    yield Pair("s3-pointer#1", "release-bump", pointer("4.22.3"), pointer("4.22.4"))
    yield Pair("unchanged#0", "unchanged", nc, copy.deepcopy(nc))
    yield Pair("unchanged#1", "unchanged", copy.deepcopy(NODE_POOL), copy.deepcopy(NODE_POOL))
    # Metadata and status are not hashed.
    yield Pair("metadata#0", "metadata", nc, _set(nc, ("metadata", "labels"), {"a": "b"}))
    np = copy.deepcopy(NODE_POOL)
    yield Pair("metadata#1", "metadata", np, _set(np, ("metadata", "annotations"), {"a": "b"}))


def pairs(minor: str) -> list[Pair]:
    """Every generated pair for Karpenter ``minor``."""
    types = hash_types(minor)
    out = list(_field_pairs("EC2NodeClass", copy.deepcopy(NODE_CLASS), types, minor))
    out += _field_pairs("NodePool", copy.deepcopy(NODE_POOL), types, minor)
    out += _multi_field_pairs("EC2NodeClass", copy.deepcopy(NODE_CLASS), types, minor)
    out += _multi_field_pairs("NodePool", copy.deepcopy(NODE_POOL), types, minor)
    out += _scenario_pairs(minor)
    return out


# --- requirements: per-node drift -----------------------------------------------------------------------

#: Keys and two values each. ``beta.kubernetes.io/arch`` is the deprecated spelling Karpenter normalises to
#: ``kubernetes.io/arch`` on pools and nodes alike, so requirements and labels on both keys meet.
_REQ_KEYS = {
    "kubernetes.io/arch": ["amd64", "arm64"],
    "beta.kubernetes.io/arch": ["arm64", "amd64"],
    "karpenter.k8s.aws/instance-cpu": ["4", "8"],
    "team": ["a", "b"],
}
_NUMERIC_KEY = "karpenter.k8s.aws/instance-cpu"
#: Label values of the numeric key that Go's ``strconv.Atoi`` reads otherwise than Python's ``int``: a
#: leading zero (4), a digit separator (not a number), past int64 (not a number), the largest int64.
_ODD_NUMBERS = ("04", "1_0", "99999999999999999999", "9223372036854775807")
_INT64_MAX = 2**63 - 1


def _requirement_choices() -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for key, (v1, v2) in _REQ_KEYS.items():
        out += [
            {"key": key, "operator": "In", "values": [v1]},
            {"key": key, "operator": "In", "values": [v1, v2]},
            {"key": key, "operator": "NotIn", "values": [v1]},
            {"key": key, "operator": "Exists"},
            {"key": key, "operator": "DoesNotExist"},
            {"key": key, "operator": "In", "values": [v2, v1, v1], "minValues": 2},
        ]
        if key == _NUMERIC_KEY:
            # Bounds the CRD admits (one non-negative integer): also 0 and the largest int64 (Gt of it
            # is DoesNotExist); In on spellings Atoi reads otherwise.
            out += [
                {"key": key, "operator": op, "values": [v]}
                for op in ("Gt", "Lt", "Gte", "Lte")
                for v in (v1, v2, "0", str(_INT64_MAX))
            ]
            out += [{"key": key, "operator": "In", "values": ["04", "1_0"]}]
    return out


def _pool_with(requirements: list[dict[str, Any]]) -> dict[str, Any]:
    return _set(copy.deepcopy(NODE_POOL), ("spec", "template", "spec", "requirements"), requirements)


@dataclass(frozen=True)
class RequirementCase:
    """Requirements changed alone, and nodes (label sets) to judge under both."""

    id: str
    old: Mapping[str, Any]
    new: Mapping[str, Any]
    claims: tuple[Mapping[str, str], ...]


def _claims(requirements: list[dict[str, Any]]) -> tuple[dict[str, str], ...]:
    """Every combination of, per key: no label, a value nothing mentions, each value mentioned and, for a
    number, the integers either side of the bounds it makes (Gt n starts at n+1, Lt n ends at n-1)."""
    keys = sorted({r["key"] for r in requirements})
    options: list[list[str | None]] = []
    for key in keys:
        mentioned = {str(v) for r in requirements if r["key"] == key for v in r.get("values") or []}
        numbers = {
            str(int(v) + d)
            for v in mentioned
            if v.isascii() and v.isdigit() and int(v) <= _INT64_MAX
            for d in (-2, -1, 0, 1, 2)
        }
        odd = set(_ODD_NUMBERS) if key == _NUMERIC_KEY else set()
        options.append([None, "zz-other", *sorted(mentioned | numbers | odd)])
    return tuple(
        {k: v for k, v in zip(keys, combo, strict=True) if v is not None}
        for combo in itertools.product(*options)
    )


def requirement_cases(count: int = 160, seed: int = 18) -> list[RequirementCase]:
    """Deterministic requirement changes: one added, removed, replaced, or a second one on a key."""
    import random

    rng = random.Random(seed)
    choices = _requirement_choices()
    out: list[RequirementCase] = []
    for i in range(count):
        old = [copy.deepcopy(rng.choice(choices)) for _ in range(rng.randint(0, 2))]
        new = copy.deepcopy(old)
        move = i % 4
        if move == 0 or not new:
            new.append(copy.deepcopy(rng.choice(choices)))
        elif move == 1:
            new.pop(rng.randrange(len(new)))
        elif move == 2:
            j = rng.randrange(len(new))
            same_key = [c for c in choices if c["key"] == new[j]["key"]]
            new[j] = copy.deepcopy(rng.choice(same_key))
        else:
            j = rng.randrange(len(new))
            same_key = [c for c in choices if c["key"] == new[j]["key"]]
            new.append(copy.deepcopy(rng.choice(same_key)))
        out.append(
            RequirementCase(f"requirements#{seed}.{i}", _pool_with(old), _pool_with(new), _claims(old + new))
        )
    return out
