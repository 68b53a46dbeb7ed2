"""The CustomResourceDefinitions nodefleet validates objects against, shipped with it, pinned and recorded.

Two kinds of shipped CRD:

- **one per kind** for the APIs every cluster of a kind serves the same way (HostedCluster, HyperShift
  NodePool, OpenshiftEC2NodeClass, MachineSet, MachineConfigPool, MachineConfiguration);
- **Karpenter CRD sets** (NodePool, NodeClaim, EC2NodeClass), one per Karpenter a cluster can run, because
  one CRD is not right for every cluster: upstream ``karpenter.sh`` NodePool 1.15 accepts the ``Unhealthy``
  budget reason that 1.14 rejects, and the copy HyperShift installs into AutoNode clusters has static pools
  but not ``Balanced``. A set is named ``<flavour>/<minor>`` (:data:`FLAVOURS`), e.g. ``aws/1.15``; an
  object says which set its cluster serves with the annotation :data:`ANNOTATION_KARPENTER`, which
  nodefleet's components stamp on every Karpenter object, and objects without it (written by hand) are
  judged by the set named ``default`` in ``SOURCES.yaml``.

``nodefleet/crds/SOURCES.yaml`` records every shipped file with its SHA-256 and every upstream copy with
exactly those bytes: a Git repository, path and commit, or a Go module, version, path and the module's
``go.sum`` hash (``h1:``), so a reviewer can tell a refresh from a hand edit. A file two sets share (HyperShift
v0.1.82 installs byte for byte the NodePool CRD of aws/karpenter-provider-aws v1.13.1) is shipped once.
:func:`refresh` replaces the per-kind CRDs from a directory of upstream files; :func:`refresh_karpenter`
adds or replaces a Karpenter set from a Go module, fetched and verified by the ``go`` command
(``python -m nodefleet crds refresh``). The policy pack, the config model and the tests read them through
:func:`load_index`.
"""

from __future__ import annotations

import base64
import fnmatch
import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import yaml

from nodefleet import files
from nodefleet import kinds as k

__all__ = [
    "ANNOTATION_KARPENTER",
    "BASE_KINDS",
    "CRD_DIR",
    "FLAVOURS",
    "FLAVOUR_MODULES",
    "KARPENTER_DIR",
    "KARPENTER_KINDS",
    "MODULE_CRD_PATHS",
    "SOURCES_FILE",
    "CrdError",
    "CrdIndex",
    "CrdVersion",
    "KarpenterSet",
    "KarpenterSetError",
    "RefreshReport",
    "Selection",
    "SetMember",
    "ShippedCrd",
    "Source",
    "karpenter_set_name",
    "load_index",
    "module_zip_hash",
    "read_provenance_table",
    "refresh",
    "refresh_karpenter",
    "remove_karpenter",
    "unshipped_karpenter",
]

CRD_DIR = Path(__file__).resolve().parent.parent / "crds"
SOURCES_FILE = "SOURCES.yaml"
#: Subdirectory of the CRD directory holding the files of the Karpenter sets.
KARPENTER_DIR = "karpenter"

#: On Karpenter objects (NodePool, EC2NodeClass): the Karpenter CRD set their cluster serves, ``<flavour>/<minor>``.
ANNOTATION_KARPENTER = k.ANNOTATION_KARPENTER

#: Where a cluster's Karpenter CRDs come from, by flavour: a user's install of the upstream AWS provider (its
#: CRD chart), the HyperShift operator (which installs them into AutoNode hosted clusters), or Red Hat's
#: karpenter-operator on a standalone cluster (provisional).
FLAVOURS: dict[str, str] = {
    "aws": "a self-managed install of aws/karpenter-provider-aws",
    "hypershift": "HyperShift AutoNode",
    "openshift": "Red Hat's karpenter-operator",
}

#: The module a flavour's sets come from, for the refresh a missing version needs.
FLAVOUR_MODULES: dict[str, str] = {
    "aws": "github.com/aws/karpenter-provider-aws",
    "hypershift": "github.com/openshift/hypershift",
    "openshift": "github.com/openshift/hypershift",
}

#: Kinds with one shipped CRD, the same on every cluster that serves them.
BASE_KINDS: tuple[k.Kind, ...] = (
    k.MACHINE_SET,
    k.MACHINE_CONFIG_POOL,
    k.MACHINE_CONFIGURATION,
    k.HOSTED_CLUSTER,
    k.HYPERSHIFT_NODE_POOL,
    k.OPENSHIFT_EC2_NODE_CLASS,
)
#: NodeClaims are Karpenter's; nodefleet never writes one, but a stack may (a hand-made node), so the sets carry it.
KARPENTER_NODE_CLAIM = k.Kind("karpenter.sh/v1", "NodeClaim", namespaced=False)
#: Kinds whose CRD depends on the cluster's Karpenter: every set has one of each.
KARPENTER_KINDS: tuple[k.Kind, ...] = (k.KARPENTER_NODE_POOL, KARPENTER_NODE_CLAIM, k.EC2_NODE_CLASS)

#: Where Go modules keep the Karpenter CRDs their Karpenter serves.
MODULE_CRD_PATHS: dict[str, str] = {
    "github.com/aws/karpenter-provider-aws": "pkg/apis/crds",
    "github.com/openshift/hypershift": "karpenter-operator/controllers/karpenter/assets",
}

_SET_NAME = re.compile(r"^(?P<flavour>[a-z]+)/(?P<minor>[0-9]+\.[0-9]+)$")


class CrdError(ValueError):
    """A CRD file or directory that cannot be used; the message names the file and the fix."""


class KarpenterSetError(CrdError):
    """An object names a Karpenter CRD set that is not shipped."""


def karpenter_set_name(flavour: str, minor: str) -> str:
    """The set a cluster of ``flavour`` running Karpenter ``minor`` (``x.y``) serves, e.g. ``aws/1.15``."""
    return f"{flavour}/{minor}"


@dataclass(frozen=True)
class Source:
    """An upstream copy of a shipped file: a Git repository at a commit, or a Go module at a version."""

    path: str
    repository: str = ""
    commit: str = ""
    module: str = ""
    version: str = ""
    #: The module zip's ``go.sum`` hash (``h1:``), which the ``go`` command verified against the checksum database.
    sum: str = ""

    def describe(self) -> str:
        if self.module:
            return f"{self.module}@{self.version}:{self.path}"
        return f"{self.repository}@{self.commit[:12]}:{self.path}"

    def as_yaml(self) -> dict[str, str]:
        if self.module:
            out = {"module": self.module, "version": self.version, "path": self.path}
            return {**out, "sum": self.sum} if self.sum else out
        return {"repository": self.repository, "path": self.path, "commit": self.commit}

    @classmethod
    def from_yaml(cls, entry: Mapping[str, Any]) -> Source:
        return cls(**{key: str(entry[key]) for key in _SOURCE_KEYS if entry.get(key)})


_SOURCE_KEYS = ("path", "repository", "commit", "module", "version", "sum")


@dataclass(frozen=True)
class ShippedCrd:
    """One shipped CRD file and what it defines."""

    #: Path relative to the CRD directory, ``/``-separated.
    file: str
    name: str
    group: str
    kind: str
    scope: str
    versions: tuple[str, ...]
    sources: tuple[Source, ...]
    sha256: str
    generator: str = ""


@dataclass(frozen=True)
class SetMember:
    """A CRD of a Karpenter set: the shipped file and where it sits in the set's module."""

    kind: str
    file: str
    path: str


@dataclass(frozen=True)
class KarpenterSet:
    """The Karpenter CRDs one kind of cluster serves, from one module version."""

    name: str
    module: str
    version: str
    members: tuple[SetMember, ...]
    sum: str = ""
    note: str = ""
    #: False when the checksum database was not consulted (``--no-checksum-db``): ``sum`` is then only what
    #: the zip hashed to here, for a reviewer to compare with sum.golang.org.
    verified: bool = True

    @property
    def flavour(self) -> str:
        return self.name.split("/", 1)[0]

    @property
    def minor(self) -> str:
        return self.name.split("/", 1)[-1]

    def describe(self) -> str:
        """E.g. ``aws/1.15 (github.com/aws/karpenter-provider-aws v1.15.1)``: what a message names."""
        return f"{self.name} ({self.module} {self.version})"


@dataclass(frozen=True)
class CrdVersion:
    """One served version of a shipped CRD: the schema the API server validates objects of it against."""

    crd: ShippedCrd
    version: str
    schema: Mapping[str, Any] = field(repr=False)
    status_subresource: bool
    #: The scale subresource's ``specReplicasPath`` (``.spec.replicas``), or "" without one.
    scale_replicas_path: str = ""

    @property
    def api_version(self) -> str:
        return f"{self.crd.group}/{self.version}"


@dataclass(frozen=True)
class Selection:
    """The CRD an object is judged by, and the Karpenter set it came from (None for a per-kind CRD)."""

    crd: CrdVersion
    patch: bool
    karpenter: KarpenterSet | None

    def describe(self) -> str:
        """How messages name the CRD: ``karpenter.sh/v1, CRD of aws/1.15 (module version)`` or the apiVersion."""
        if self.karpenter is None:
            return self.crd.api_version
        return f"{self.crd.api_version}, CRD of {self.karpenter.describe()}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _parse_crd(text: str, where: str) -> dict[str, Any]:
    try:
        doc = files.load_yaml(text, where, loader=files.FastBoundedLoader)
    except files.FileProblem as e:
        raise CrdError(f"{where}: not a readable YAML file ({e.problem}); {e.fix}") from None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "CustomResourceDefinition"
        or not isinstance(spec, dict)
    ):
        raise CrdError(f"{where}: not a CustomResourceDefinition (kind: CustomResourceDefinition, spec: ...)")
    return doc


#: Where parsed CRD files are kept as JSON, by the SHA-256 of their bytes: parsing the YAML is most of what
#: judging a handful of objects costs, and JSON reads about twenty times faster. ``NODEFLEET_CACHE_DIR``
#: overrides the place (empty: no cache); the default is ``$XDG_CACHE_HOME/nodefleet`` (``~/.cache``).
CACHE_ENV = "NODEFLEET_CACHE_DIR"


def _cache_dir() -> Path | None:
    configured = os.environ.get(CACHE_ENV)
    if configured is not None:
        return Path(configured) / "crds" if configured else None
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "nodefleet" / "crds"


def _cached(digest: str) -> dict[str, Any] | None:
    folder = _cache_dir()
    if folder is None:
        return None
    try:
        doc = json.loads((folder / f"{digest}.json").read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _keep(digest: str, doc: dict[str, Any]) -> None:
    """Keep ``doc`` in the cache if JSON holds it exactly (a YAML date or a non-string key would not be)."""
    folder = _cache_dir()
    if folder is None:
        return
    try:
        text = json.dumps(doc, separators=(",", ":"))
        if json.loads(text) != doc:
            return
        folder.mkdir(parents=True, exist_ok=True)
        staging = folder / f"{digest}.{os.getpid()}.tmp"
        staging.write_text(text, encoding="utf-8")
        staging.replace(folder / f"{digest}.json")
    except (OSError, TypeError, ValueError):
        return  # a read-only or full disk only costs the next run the YAML parse


def remembered(key: str, compute: Callable[[], list[str]]) -> list[str]:
    """``compute()``, kept in the cache under ``key`` (which must name everything the answer depends on: a CRD
    schema's digest, the analysing code's): what nodefleet concluded about a CRD, e.g. that the API server
    accepts it, is computed once, not in every process that judges objects by it."""
    folder = _cache_dir()
    entry = folder / "analysis" / f"{key}.json" if folder is not None else None
    if entry is not None:
        try:
            found = json.loads(entry.read_text(encoding="utf-8"))
            if isinstance(found, list) and all(isinstance(x, str) for x in found):
                return found
        except (OSError, ValueError):
            pass
    answer = compute()
    if entry is not None:
        try:
            entry.parent.mkdir(parents=True, exist_ok=True)
            staging = entry.with_name(f"{entry.stem}.{os.getpid()}.tmp")
            staging.write_text(json.dumps(answer), encoding="utf-8")
            staging.replace(entry)
        except OSError:
            pass  # a read-only or full disk only costs the next run the analysis
    return answer


def _read_crd(path: Path) -> dict[str, Any]:
    try:
        data = files.read_bytes(path, what="CRD")
        digest = hashlib.sha256(data).hexdigest()
        cached = _cached(digest)
        if cached is not None:
            return cached
        text = files.decode_text(data, str(path), what="CRD")
    except files.FileProblem as e:
        raise CrdError(f"{path}: not a readable YAML file ({e.problem}); {e.fix}") from None
    doc = _parse_crd(text, str(path))
    _keep(digest, doc)
    return doc


def _group_kind(doc: Mapping[str, Any]) -> tuple[str, str]:
    spec = doc["spec"]
    return str(spec.get("group", "")), str((spec.get("names") or {}).get("kind", ""))


def _describe(file: str, sha256: str, doc: Mapping[str, Any], sources: Iterable[Source]) -> ShippedCrd:
    spec = doc["spec"]
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    group, kind = _group_kind(doc)
    return ShippedCrd(
        file=file,
        name=str((doc.get("metadata") or {}).get("name", "")),
        group=group,
        kind=kind,
        scope=str(spec.get("scope", "")),
        versions=tuple(str(v.get("name")) for v in spec.get("versions") or [] if v.get("served")),
        sources=tuple(dict.fromkeys(sources)),
        sha256=sha256,
        generator=str(annotations.get("controller-gen.kubebuilder.io/version", "")),
    )


# ---------------------------------------------------------------------------------------------------------
# SOURCES.yaml
# ---------------------------------------------------------------------------------------------------------


@dataclass
class _Manifest:
    """What SOURCES.yaml says: the per-kind files with their sources, the Karpenter sets, the default set."""

    base: dict[str, tuple[Source, ...]] = field(default_factory=dict)
    sets: dict[str, KarpenterSet] = field(default_factory=dict)
    default: str | None = None


def _read_manifest(directory: Path) -> _Manifest | None:
    path = directory / SOURCES_FILE
    if not path.exists():
        return None
    try:
        doc = files.load_yaml(files.read_text(path, what="CRD provenance file"), str(path)) or {}
        out = _Manifest()
        karpenter = doc.get("karpenter") or {}
        set_files: set[str] = set()
        for entry in karpenter.get("sets") or []:
            members = tuple(
                SetMember(str(m["kind"]), str(m["file"]), str(m["path"])) for m in entry.get("crds") or []
            )
            ks = KarpenterSet(
                name=str(entry["name"]),
                module=str(entry["module"]),
                version=str(entry["version"]),
                members=members,
                sum=str(entry.get("sum") or ""),
                note=str(entry.get("note") or ""),
                verified=entry.get("verified", True) is not False,
            )
            out.sets[ks.name] = ks
            set_files |= {m.file for m in members}
        out.default = str(karpenter["default"]) if karpenter.get("default") else None
        for entry in doc.get("crds") or []:
            file = str(entry["file"])
            if file in set_files:
                continue  # a set's file: its sources are the sets' modules
            listed = entry.get("sources") or ([entry["source"]] if entry.get("source") else [])
            out.base[file] = tuple(Source.from_yaml(s) for s in listed)
    except (files.FileProblem, KeyError, TypeError, AttributeError) as e:
        raise CrdError(
            f"{path}: not a CRD provenance file nodefleet wrote ({e.__class__.__name__}: {e}); restore it from "
            "version control or rerun `python -m nodefleet crds refresh`"
        ) from None
    return out


def _set_sources(sets: Iterable[KarpenterSet]) -> dict[str, list[Source]]:
    """Per shipped file, the module copies the sets name for it."""
    out: dict[str, list[Source]] = {}
    for ks in sets:
        for m in ks.members:
            out.setdefault(m.file, []).append(
                Source(path=m.path, module=ks.module, version=ks.version, sum=ks.sum)
            )
    return out


def _write_manifest(dest: Path, manifest: _Manifest) -> list[ShippedCrd]:
    """Write SOURCES.yaml for ``manifest``; every file is described from its bytes on disk."""
    set_sources = _set_sources(manifest.sets.values())
    files = sorted({*manifest.base, *set_sources})
    described = []
    for file in files:
        path = dest / file
        sources = [*manifest.base.get(file, ()), *set_sources.get(file, ())]
        described.append(_describe(file, _sha256(path), _read_crd(path), sources))
    entries = [
        {
            "file": c.file,
            "crd": c.name,
            "kind": c.kind,
            "versions": list(c.versions),
            "sources": [s.as_yaml() for s in c.sources],
            **({"generator": f"controller-gen {c.generator}"} if c.generator else {}),
            "sha256": c.sha256,
        }
        for c in described
    ]
    doc: dict[str, Any] = {"crds": entries}
    if manifest.sets:
        doc["karpenter"] = {
            "default": manifest.default,
            "sets": [
                {
                    "name": ks.name,
                    "module": ks.module,
                    "version": ks.version,
                    **({"sum": ks.sum} if ks.sum else {}),
                    **({} if ks.verified else {"verified": False}),
                    **({"note": ks.note} if ks.note else {}),
                    "crds": [{"kind": m.kind, "file": m.file, "path": m.path} for m in ks.members],
                }
                for ks in sorted(manifest.sets.values(), key=_set_order)
            ],
        }
    header = (
        "# Written by `python -m nodefleet crds refresh`; do not edit by hand.\n"
        "# Unchanged upstream copies of the CRDs nodefleet validates objects against: every file with its SHA-256\n"
        "# and every upstream copy with exactly those bytes (a Git commit, or a Go module version and its go.sum\n"
        "# hash). `karpenter.sets`: the Karpenter CRDs each kind of cluster serves, by `<flavour>/<minor>`, the\n"
        "# value of the nodefleet.io/karpenter annotation; `karpenter.default` judges objects without it.\n"
    )
    (dest / SOURCES_FILE).write_text(header + yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return described


def _set_order(ks: KarpenterSet) -> tuple[str, int]:
    return ks.flavour, int(ks.minor.split(".")[1]) if "." in ks.minor else 0


# ---------------------------------------------------------------------------------------------------------
# the index
# ---------------------------------------------------------------------------------------------------------


@dataclass
class CrdIndex:
    """The shipped CRDs: per-kind ones by ``(apiVersion, kind)``, the Karpenter ones per set; schemas are
    parsed on first use, once per file however many sets share it."""

    directory: Path
    crds: list[ShippedCrd]
    karpenter_sets: dict[str, KarpenterSet] = field(default_factory=dict)
    default_karpenter: str | None = None
    _base: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    _in_sets: dict[str, dict[tuple[str, str], str]] = field(default_factory=dict, repr=False)
    _versions: dict[tuple[str, str], CrdVersion] = field(default_factory=dict, repr=False)
    #: Each file as read to index it, kept until its versions are built (YAML is most of start-up).
    _docs: dict[str, dict[str, Any]] = field(default_factory=dict, repr=False)

    def _version(self, file: str, api_version: str) -> CrdVersion | None:
        key = (file, api_version)
        if key not in self._versions:
            crd = next(c for c in self.crds if c.file == file)
            doc = self._docs.pop(file, None) or _read_crd(self.directory / file)
            for v in doc["spec"].get("versions") or []:
                if not v.get("served"):
                    continue
                self._versions[(file, f"{crd.group}/{v['name']}")] = CrdVersion(
                    crd=crd,
                    version=str(v["name"]),
                    schema=((v.get("schema") or {}).get("openAPIV3Schema") or {}),
                    status_subresource="status" in (v.get("subresources") or {}),
                    scale_replicas_path=str(
                        ((v.get("subresources") or {}).get("scale") or {}).get("specReplicasPath") or ""
                    ),
                )
            self._versions.setdefault(key, _NOT_SERVED)
        found = self._versions[key]
        return None if found is _NOT_SERVED else found

    def is_karpenter_kind(self, api_version: str, kind: str) -> bool:
        """Whether the CRD of this kind depends on the cluster's Karpenter (it is in the sets)."""
        return any((api_version, kind) in files for files in self._in_sets.values())

    def karpenter_set(self, name: str | None) -> KarpenterSet:
        """The set called ``name`` (None: the default); :class:`KarpenterSetError` names the shipped ones."""
        chosen = name or self.default_karpenter
        if chosen in self.karpenter_sets:
            return self.karpenter_sets[chosen]
        shipped = ", ".join(self.karpenter_sets) or "none"
        raise KarpenterSetError(
            f"no Karpenter CRD set '{chosen}' is shipped (shipped: {shipped}); name one of those as "
            f"<flavour>/<minor>, or add it with `python -m nodefleet crds refresh --karpenter {chosen} "
            "--module <module>@<version>`"
        )

    def karpenter_minors(self, flavour: str) -> list[str]:
        """The Karpenter minors shipped for ``flavour``, oldest first."""
        return [s.minor for s in sorted(self.karpenter_sets.values(), key=_set_order) if s.flavour == flavour]

    def select(self, api_version: str, kind: str, karpenter: str | None = None) -> Selection | None:
        """The CRD an object of ``apiVersion``/``kind`` is judged by; None if nodefleet ships none.

        For a Karpenter kind, ``karpenter`` names the set (None: the default); an unknown name raises
        :class:`KarpenterSetError`.
        """
        key = (api_version, kind)
        if self.is_karpenter_kind(api_version, kind):
            ks = self.karpenter_set(karpenter)
            file = self._in_sets[ks.name].get(key)
            found = self._version(file, api_version) if file else None
            return Selection(found, False, ks) if found else None
        file = self._base.get(key)
        found = self._version(file, api_version) if file else None
        return Selection(found, False, None) if found else None

    def for_object(self, api_version: str, kind: str, karpenter: str | None = None) -> CrdVersion | None:
        """The served CRD version an object of ``apiVersion``/``kind`` is validated against, if shipped."""
        found = self.select(api_version, kind, karpenter)
        return found.crd if found else None

    def for_manifest(
        self, resource_type: str, obj: Mapping[str, Any], default_karpenter: str | None = None
    ) -> Selection | None:
        """The CRD for a resource of a ``kubernetes:<group>/<v>:<Kind>[Patch]`` token with these props.

        A Karpenter object is judged by the set its :data:`ANNOTATION_KARPENTER` names, else by
        ``default_karpenter``, else by the shipped default.
        """
        parts = resource_type.split(":")
        if len(parts) != 3 or parts[0] != "kubernetes":
            return None
        api_version, kind = parts[1], parts[2]
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        annotations = meta.get("annotations") if isinstance(meta, Mapping) else None
        named = annotations.get(ANNOTATION_KARPENTER) if isinstance(annotations, Mapping) else None
        karpenter = named if isinstance(named, str) and named else default_karpenter
        found = self.select(api_version, kind, karpenter)
        if found is not None:
            return found
        if kind.endswith("Patch"):
            patched = self.select(api_version, kind.removesuffix("Patch"), karpenter)
            if patched is not None:
                return replace(patched, patch=True)
        return None

    def for_token(self, resource_type: str, karpenter: str | None = None) -> tuple[CrdVersion, bool] | None:
        """(CRD version, is a server-side-apply patch) for a token, Karpenter kinds from set ``karpenter``."""
        found = self.for_manifest(resource_type, {}, karpenter)
        return (found.crd, found.patch) if found else None

    def all_versions(self) -> list[CrdVersion]:
        """Every served version of every shipped file, once."""
        out = []
        for crd in self.crds:
            for version in crd.versions:
                found = self._version(crd.file, f"{crd.group}/{version}")
                if found is not None:
                    out.append(found)
        return out

    def sets_of(self, file: str) -> list[str]:
        """The names of the Karpenter sets that use a shipped file."""
        return [name for name, files in self._in_sets.items() if file in files.values()]


_NOT_SERVED: Any = object()


def _index(directory: Path) -> CrdIndex:
    if not directory.is_dir():
        raise CrdError(f"{directory}: no such CRD directory")
    manifest = _read_manifest(directory)
    crds: list[ShippedCrd] = []
    base: dict[tuple[str, str], str] = {}
    if manifest is None:
        # A bare directory of CRD files (e.g. `crds coverage --dir`): every file is a per-kind CRD.
        files = {p.name: () for p in sorted(directory.glob("*.yaml"))}
        sets: dict[str, KarpenterSet] = {}
    else:
        set_sources = _set_sources(manifest.sets.values())
        files = {
            f: (*manifest.base.get(f, ()), *set_sources.get(f, ())) for f in {*manifest.base, *set_sources}
        }
        sets = manifest.sets
    by_file: dict[str, ShippedCrd] = {}
    docs: dict[str, dict[str, Any]] = {}
    for file, sources in sorted(files.items()):
        path = directory / file
        if not path.is_file():
            raise CrdError(f"{path}: listed in {SOURCES_FILE} but missing; restore it or rerun the refresh")
        doc = docs[file] = _read_crd(path)
        crd = _describe(file, _sha256(path), doc, sources)
        crds.append(crd)
        by_file[file] = crd
    in_sets: dict[str, dict[tuple[str, str], str]] = {}
    for ks in sets.values():
        members = in_sets.setdefault(ks.name, {})
        for m in ks.members:
            crd = by_file[m.file]
            for version in crd.versions:
                members[(f"{crd.group}/{version}", crd.kind)] = m.file
    set_files = {m.file for ks in sets.values() for m in ks.members}
    for crd in crds:
        if crd.file in set_files:
            continue
        for version in crd.versions:
            base[(f"{crd.group}/{version}", crd.kind)] = crd.file
    default = manifest.default if manifest else None
    if default is not None and default not in sets:
        raise CrdError(f"{directory / SOURCES_FILE}: karpenter.default '{default}' is not one of its sets")
    return CrdIndex(directory, crds, dict(sets), default, base, in_sets, _docs=docs)


@cache
def load_index(directory: Path = CRD_DIR) -> CrdIndex:
    """The CRDs in ``directory`` (default: the shipped ones), read once per process."""
    return _index(directory.resolve())


def unshipped_karpenter(flavour: str, minor: str, field: str) -> str | None:
    """Why a cluster declaring Karpenter ``minor`` of ``flavour`` cannot be checked, or None when it can.

    The config model refuses such a cluster: nodefleet would otherwise judge its objects by another
    Karpenter's CRDs and miss what its API server rejects. ``field`` names the config key in the message.
    """
    index = load_index()
    name = karpenter_set_name(flavour, minor)
    if name in index.karpenter_sets:
        return None
    shipped = index.karpenter_minors(flavour)
    module = FLAVOUR_MODULES.get(flavour, "<module>")
    return (
        f"{field}: nodefleet ships no CRDs of Karpenter {minor} on {FLAVOURS.get(flavour, flavour)} (it ships "
        f"{', '.join(shipped) or 'none'}), so it could not check this cluster's Karpenter objects against what "
        "its API server accepts; declare the version the cluster runs if it is one of those, or add its CRDs "
        f"with `python -m nodefleet crds refresh --karpenter {name} --module {module}@<version>`"
    )


# ---------------------------------------------------------------------------------------------------------
# refresh: the per-kind CRDs from a directory of upstream files
# ---------------------------------------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\|\s*([^|]+?\.ya?ml)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([0-9a-f]{7,40})\s*\|")


def read_provenance_table(markdown: Path) -> dict[str, Source]:
    """``| file | upstream repository | path | commit |`` rows of a Markdown table (e.g. a SOURCES.md)."""
    out: dict[str, Source] = {}
    for line in markdown.read_text(encoding="utf-8").splitlines():
        m = _TABLE_ROW.match(line.strip())
        if m:
            out[m[1]] = Source(path=m[3], repository=m[2], commit=m[4])
    return out


@dataclass(frozen=True)
class RefreshReport:
    written: list[ShippedCrd]
    unchanged: list[str]
    ignored: list[str]


def _canonical_name(crd: Mapping[str, Any]) -> str:
    spec = crd["spec"]
    return f"{spec['group']}_{(spec.get('names') or {}).get('plural', '')}.yaml"


def _kind_key(kind: k.Kind) -> tuple[str, str]:
    return kind.api_version.split("/")[0], kind.kind


#: Why the API server refuses a CRD version's schema (``nodefleet.apiserver.schema.crd_refusals``, which sits
#: above this module: the caller passes it).
Refusals = Callable[[Mapping[str, Any], str], Sequence[object]]


def _refuse_refused(doc: Mapping[str, Any], where: str, refusals: Refusals) -> None:
    """A CRD the API server refuses (a rule that does not compile, an invalid fieldPath, a default its schema
    refuses, ...) is not shipped: no cluster could serve it."""
    versions = [v or {} for v in doc["spec"].get("versions") or []]
    # The API server validates one schema, named spec.validation, when every version has the same one.
    shared = all(v.get("schema") == versions[0].get("schema") for v in versions)
    for i, version in enumerate(versions[:1] if shared else versions):
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        where_in = "spec.validation" if shared else f"spec.versions[{i}].schema"
        if isinstance(schema, Mapping):
            found = refusals(schema, f"{where_in}.openAPIV3Schema")
            if found:
                # One line: the refusal's first (a compile error goes on with the rule's line and a caret).
                first = str(found[0]).splitlines()[0]
                raise CrdError(f"{where}: the API server refuses this CRD: {first}; nothing was changed")


def refresh(
    source_dir: Path,
    *,
    dest: Path = CRD_DIR,
    provenance: Mapping[str, Source] | None = None,
    default_source: Source | None = None,
    kinds: Iterable[k.Kind] = BASE_KINDS,
    refusals: Refusals,
) -> RefreshReport:
    """Copy from ``source_dir`` the CRD of every per-kind kind into ``dest`` and record its source.

    Files are recognised by content (group and kind), not by name, and written under the API server's
    canonical ``<group>_<plural>.yaml``. Provenance comes from ``provenance`` (keyed by source file name),
    else ``default_source``; a file without either is refused, so nothing unrecorded is ever shipped. Every
    wanted kind must be found, so a refresh never silently drops a CRD. Karpenter CRDs in ``source_dir`` are
    ignored (their sets come from modules, :func:`refresh_karpenter`); the sets in ``dest`` are kept.
    """
    if not source_dir.is_dir():
        raise CrdError(f"--from {source_dir}: no such directory; point it at a directory of CRD YAML files")
    wanted = {_kind_key(kind): kind for kind in kinds}
    found: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    ignored: list[str] = []
    for path in sorted(source_dir.glob("*.y*ml")):
        try:
            doc = _read_crd(path)
        except CrdError:
            ignored.append(path.name)
            continue
        key = _group_kind(doc)
        if key in wanted:
            found[key] = (path, doc)
        else:
            ignored.append(path.name)
    missing = [f"{kind.kind} ({kind.api_version})" for key, kind in wanted.items() if key not in found]
    if missing:
        raise CrdError(f"--from {source_dir}: no CRD for {', '.join(missing)}; nothing was changed")
    plan: list[tuple[Path, str, Source]] = []
    for key, (path, doc) in sorted(found.items()):
        kind = wanted[key]
        served = [v.get("name") for v in doc["spec"].get("versions") or [] if v.get("served")]
        version = kind.api_version.split("/")[1]
        if version not in served:
            raise CrdError(
                f"{path}: {kind.kind} CRD does not serve {version}, which nodefleet writes (it serves "
                f"{', '.join(map(str, served)) or 'nothing'}); nothing was changed"
            )
        _refuse_refused(doc, str(path), refusals)
        source = (provenance or {}).get(path.name) or default_source
        if source is None:
            raise CrdError(
                f"{path}: no upstream source recorded; list it in a SOURCES.md table beside the files or pass "
                "--repository, --path-in-repo and --commit; nothing was changed"
            )
        plan.append((path, _canonical_name(doc), source))
    existing = _read_manifest(dest) if dest.is_dir() else None
    manifest = existing or _Manifest()
    dest.mkdir(parents=True, exist_ok=True)
    unchanged: list[str] = []
    keep = {name for _, name, _ in plan}
    for path, name, _ in plan:
        target = dest / name
        if target.exists() and target.read_bytes() == path.read_bytes():
            unchanged.append(name)
        else:
            shutil.copyfile(path, target)
    for stale in dest.glob("*.yaml"):
        if stale.name != SOURCES_FILE and stale.name not in keep:
            stale.unlink()
    # Modules recorded for an unchanged file still hold its bytes; a changed file keeps only the new source.
    manifest.base = {
        name: (
            source,
            *(s for s in manifest.base.get(name, ()) if s.module and name in unchanged),
        )
        for _, name, source in plan
    }
    described = _write_manifest(dest, manifest)
    load_index.cache_clear()
    return RefreshReport([c for c in described if c.file in keep], unchanged, ignored)


# ---------------------------------------------------------------------------------------------------------
# refresh_karpenter: one Karpenter set from a Go module
# ---------------------------------------------------------------------------------------------------------


def module_zip_hash(zip_path: Path) -> str:
    """The ``go.sum`` hash (``h1:``) of a module zip: golang.org/x/mod/sumdb/dirhash ``Hash1`` over its files."""
    with zipfile.ZipFile(zip_path) as z:
        lines = []
        for name in sorted(z.namelist()):
            if "\n" in name:
                raise CrdError(f"{zip_path}: file name with a newline in the module zip")
            lines.append(f"{hashlib.sha256(z.read(name)).hexdigest()}  {name}\n")
    return "h1:" + base64.b64encode(hashlib.sha256("".join(lines).encode()).digest()).decode()


def _sumdb_skips(module: str, env: Mapping[str, str]) -> bool:
    """Whether the go command will not consult a checksum database for ``module`` in ``env``.

    ``GOSUMDB=off``, or ``GONOSUMDB``/``GOPRIVATE`` matching it as the go command matches them
    (``module.MatchPrefixPatterns``: comma-separated globs, each matching a leading run of path elements).
    """
    if env.get("GOSUMDB", "").strip() == "off":
        return True
    parts = module.split("/")
    for pattern in ",".join(filter(None, (env.get("GONOSUMDB", ""), env.get("GOPRIVATE", "")))).split(","):
        pattern = pattern.strip()
        if not pattern:
            continue
        elements = pattern.split("/")
        if len(elements) <= len(parts) and all(
            fnmatch.fnmatchcase(part, glob) for part, glob in zip(parts, elements, strict=False)
        ):
            return True
    return False


def _download(module: str, version: str, go: str, checksum_db: bool) -> tuple[Path, str, bool]:
    """(module zip, its h1, whether a checksum database vouched for it), through the ``go`` command's checks.

    With ``checksum_db`` False the checksum database is not consulted for this module (``GONOSUMDB``), for
    versions the database the machine reaches does not hold; the h1 is then only recomputed from the zip.
    """
    env = {**os.environ, "GOTOOLCHAIN": "local"}
    if not checksum_db:
        env["GONOSUMDB"] = ",".join(filter(None, [env.get("GONOSUMDB", ""), module]))
    verified = not _sumdb_skips(module, env)
    try:
        result = subprocess.run(
            [go, "mod", "download", "-json", f"{module}@{version}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=600,
            check=False,
        )
    except FileNotFoundError:
        raise CrdError(
            f"--module needs the `{go}` command, which downloads modules from the Go module proxy and verifies "
            "them against the checksum database; install Go or put it on PATH"
        ) from None
    except subprocess.TimeoutExpired:
        raise CrdError(f"go mod download {module}@{version}: no answer within 10 minutes") from None
    try:
        info = json.loads(result.stdout)
    except json.JSONDecodeError:
        detail = result.stderr.strip().splitlines()[-1:] or ["no output"]
        raise CrdError(f"go mod download {module}@{version} failed: {detail[0]}") from None
    zip_file, digest, error = info.get("Zip"), info.get("Sum"), str(info.get("Error") or "")
    # The go command checks a module's `go` line only after it has fetched and verified the zip: a module
    # needing a newer toolchain is still a verified download, and only its files are read here.
    fetched = bool(zip_file and digest and Path(zip_file).is_file())
    if not fetched or (error and "requires go" not in error):
        hint = ""
        if "sumdb" in error or "verifying" in error:
            hint = (
                "; if the checksum database you reach lacks this version, --no-checksum-db skips it and records "
                "the set as unverified"
            )
        raise CrdError(f"go mod download {module}@{version} failed: {error or 'no module zip'}{hint}")
    if module_zip_hash(Path(zip_file)) != digest:
        raise CrdError(f"{zip_file}: does not match its go.sum hash {digest}; run `go clean -modcache`")
    return Path(zip_file), str(digest), verified


def _set_file_name(doc: Mapping[str, Any], flavour: str, version: str) -> str:
    return f"{KARPENTER_DIR}/{_canonical_name(doc).removesuffix('.yaml')}.{flavour}-{version}.yaml"


def refresh_karpenter(
    name: str,
    module_version: str,
    *,
    dest: Path = CRD_DIR,
    path_in_module: str | None = None,
    make_default: bool = False,
    note: str = "",
    go: str = "go",
    checksum_db: bool = True,
    refusals: Refusals,
) -> tuple[KarpenterSet, list[str]]:
    """Add or replace the Karpenter set ``name`` (``<flavour>/<minor>``) with the CRDs of a Go module version.

    The module is fetched and verified by ``go mod download`` (the Go module proxy and checksum database the
    user's Go is configured for); the CRDs of :data:`KARPENTER_KINDS` are recognised by content under the
    module's CRD directory (:data:`MODULE_CRD_PATHS`, or ``path_in_module``). A file whose bytes are already
    shipped is not copied again. Returns the set and the files written.
    """
    m = _SET_NAME.match(name)
    if m is None or m["flavour"] not in FLAVOURS:
        raise CrdError(
            f"--karpenter {name}: name the set <flavour>/<minor>, flavour one of {', '.join(FLAVOURS)}, "
            "e.g. aws/1.15"
        )
    module, _, version = module_version.partition("@")
    if not module or not version:
        raise CrdError(
            f"--module {module_version}: give module@version, e.g. github.com/aws/karpenter-provider-aws@v1.15.1"
        )
    prefix = path_in_module if path_in_module is not None else MODULE_CRD_PATHS.get(module)
    if prefix is None:
        raise CrdError(
            f"--module {module}: nodefleet does not know where it keeps its Karpenter CRDs; pass --path-in-module"
        )
    zip_path, digest, verified = _download(module, version, go, checksum_db)
    root = f"{module}@{version}/"
    directory = PurePosixPath(prefix.strip("/"))
    wanted = {_kind_key(kind): kind for kind in KARPENTER_KINDS}
    found: dict[tuple[str, str], tuple[str, bytes, dict[str, Any]]] = {}
    with zipfile.ZipFile(zip_path) as z:
        for entry in sorted(z.namelist()):
            inner = PurePosixPath(entry.removeprefix(root))
            if inner.parent != directory or inner.suffix not in (".yaml", ".yml"):
                continue
            data = z.read(entry)
            try:
                doc = _parse_crd(data.decode("utf-8"), f"{module}@{version}:{inner}")
            except (CrdError, UnicodeDecodeError):
                continue
            if _group_kind(doc) in wanted:
                _refuse_refused(doc, f"{module}@{version}:{inner}", refusals)
                found[_group_kind(doc)] = (str(inner), data, doc)
    missing = [kind.kind for key, kind in wanted.items() if key not in found]
    if missing:
        raise CrdError(
            f"{module}@{version}: no {', '.join(missing)} CRD in {directory}/; nothing was changed "
            "(--path-in-module names the directory holding them)"
        )
    manifest = (_read_manifest(dest) if dest.is_dir() else None) or _Manifest()
    index_by_sha: dict[str, str] = {}
    for ks in manifest.sets.values():
        for member in ks.members:
            if (dest / member.file).is_file():
                index_by_sha.setdefault(_sha256(dest / member.file), member.file)
    (dest / KARPENTER_DIR).mkdir(parents=True, exist_ok=True)
    members: list[SetMember] = []
    written: list[str] = []
    for key in (_kind_key(kind) for kind in KARPENTER_KINDS):
        module_path, data, doc = found[key]
        file = index_by_sha.get(hashlib.sha256(data).hexdigest())
        if file is None:
            file = _set_file_name(doc, m["flavour"], version)
            (dest / file).write_bytes(data)
            index_by_sha[hashlib.sha256(data).hexdigest()] = file
            written.append(file)
        members.append(SetMember(key[1], file, module_path))
    ks = KarpenterSet(
        name, module, version, tuple(members), digest, note or _kept_note(manifest, name), verified
    )
    manifest.sets[name] = ks
    if make_default or manifest.default is None:
        manifest.default = name
    _prune(dest, manifest)
    _write_manifest(dest, manifest)
    load_index.cache_clear()
    return ks, written


def _kept_note(manifest: _Manifest, name: str) -> str:
    old = manifest.sets.get(name)
    return old.note if old else ""


def _prune(dest: Path, manifest: _Manifest) -> None:
    used = {m.file for ks in manifest.sets.values() for m in ks.members}
    for path in (dest / KARPENTER_DIR).glob("*.yaml"):
        if f"{KARPENTER_DIR}/{path.name}" not in used:
            path.unlink()


def remove_karpenter(name: str, *, dest: Path = CRD_DIR) -> None:
    """Stop shipping the Karpenter set ``name`` (its files go unless another set uses them)."""
    manifest = _read_manifest(dest) if dest.is_dir() else None
    if manifest is None or name not in manifest.sets:
        shipped = ", ".join(manifest.sets) if manifest else "none"
        raise CrdError(f"--remove {name}: no such Karpenter set (shipped: {shipped})")
    if manifest.default == name:
        raise CrdError(
            f"--remove {name}: it is the default set; make another one the default first (--default)"
        )
    del manifest.sets[name]
    _prune(dest, manifest)
    _write_manifest(dest, manifest)
    load_index.cache_clear()
