"""The CustomResourceDefinitions nodefleet writes objects of, shipped with it, pinned and recorded.

``nodefleet/crds/`` holds unchanged upstream copies of the CRDs of every kind in :mod:`nodefleet.kinds`;
``nodefleet/crds/SOURCES.yaml`` records, per file, the upstream repository, path and commit it came from,
the generator version the file names, and its SHA-256, so a reviewer can tell a refresh from a hand edit.
:func:`refresh` replaces them from a directory of newer upstream files (``python -m nodefleet crds refresh
--from DIR``); the policy pack and the tests read them through :func:`load_index`.
"""

from __future__ import annotations

import hashlib
import re
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import yaml

from nodefleet import kinds as k

__all__ = [
    "CRD_DIR",
    "SOURCES_FILE",
    "WRITTEN_KINDS",
    "CrdError",
    "CrdIndex",
    "CrdVersion",
    "RefreshReport",
    "ShippedCrd",
    "Source",
    "load_index",
    "read_provenance_table",
    "refresh",
]

CRD_DIR = Path(__file__).resolve().parent / "crds"
SOURCES_FILE = "SOURCES.yaml"

#: Every kind nodefleet declares; the shipped CRDs are exactly theirs.
WRITTEN_KINDS: tuple[k.Kind, ...] = (
    k.MACHINE_SET,
    k.MACHINE_CONFIG_POOL,
    k.MACHINE_CONFIGURATION,
    k.HOSTED_CLUSTER,
    k.HYPERSHIFT_NODE_POOL,
    k.OPENSHIFT_EC2_NODE_CLASS,
    k.KARPENTER_NODE_POOL,
    k.EC2_NODE_CLASS,
)

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # the C loader reads the 600 KB CRD in 40 ms


class CrdError(ValueError):
    """A CRD file or directory that cannot be used; the message names the file and the fix."""


@dataclass(frozen=True)
class Source:
    """Where a shipped CRD file comes from upstream."""

    repository: str
    path: str
    commit: str

    def describe(self) -> str:
        return f"{self.repository}@{self.commit[:12]}:{self.path}"


@dataclass(frozen=True)
class ShippedCrd:
    """One shipped CRD file and what it defines."""

    file: str
    name: str
    group: str
    kind: str
    scope: str
    versions: tuple[str, ...]
    source: Source | None
    sha256: str
    generator: str = ""


@dataclass(frozen=True)
class CrdVersion:
    """One served version of a shipped CRD: the schema the API server validates objects of it against."""

    crd: ShippedCrd
    version: str
    schema: Mapping[str, Any] = field(repr=False)
    status_subresource: bool

    @property
    def api_version(self) -> str:
        return f"{self.crd.group}/{self.version}"


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _read_crd(path: Path) -> dict[str, Any]:
    try:
        doc = yaml.load(path.read_text(encoding="utf-8"), Loader=_Loader)
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise CrdError(f"{path}: not a readable YAML file ({e.__class__.__name__})") from None
    spec = doc.get("spec") if isinstance(doc, dict) else None
    if (
        not isinstance(doc, dict)
        or doc.get("kind") != "CustomResourceDefinition"
        or not isinstance(spec, dict)
    ):
        raise CrdError(f"{path}: not a CustomResourceDefinition (kind: CustomResourceDefinition, spec: ...)")
    return doc


def _describe(path: Path, doc: Mapping[str, Any], source: Source | None) -> ShippedCrd:
    spec = doc["spec"]
    annotations = (doc.get("metadata") or {}).get("annotations") or {}
    return ShippedCrd(
        file=path.name,
        name=str((doc.get("metadata") or {}).get("name", "")),
        group=str(spec.get("group", "")),
        kind=str((spec.get("names") or {}).get("kind", "")),
        scope=str(spec.get("scope", "")),
        versions=tuple(str(v.get("name")) for v in spec.get("versions") or [] if v.get("served")),
        source=source,
        sha256=_sha256(path),
        generator=str(annotations.get("controller-gen.kubebuilder.io/version", "")),
    )


def _read_sources(directory: Path) -> dict[str, Source | None]:
    path = directory / SOURCES_FILE
    if not path.exists():
        return {}
    entries = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    out: dict[str, Source | None] = {}
    for entry in entries.get("crds") or []:
        src = entry.get("source") or {}
        out[str(entry["file"])] = (
            Source(str(src["repository"]), str(src["path"]), str(src["commit"])) if src else None
        )
    return out


@dataclass
class CrdIndex:
    """The shipped CRDs by ``(apiVersion, kind)``; schemas are parsed on first use."""

    directory: Path
    crds: list[ShippedCrd]
    _files: dict[tuple[str, str], str] = field(default_factory=dict, repr=False)
    _versions: dict[tuple[str, str], CrdVersion] = field(default_factory=dict, repr=False)

    def for_object(self, api_version: str, kind: str) -> CrdVersion | None:
        """The served CRD version an object of ``apiVersion``/``kind`` is validated against, if shipped."""
        key = (api_version, kind)
        if key in self._versions:
            return self._versions[key]
        file = self._files.get(key)
        if file is None:
            return None
        crd = next(c for c in self.crds if c.file == file)
        doc = _read_crd(self.directory / file)
        for v in doc["spec"].get("versions") or []:
            if not v.get("served"):
                continue
            self._versions[(f"{crd.group}/{v['name']}", crd.kind)] = CrdVersion(
                crd=crd,
                version=str(v["name"]),
                schema=((v.get("schema") or {}).get("openAPIV3Schema") or {}),
                status_subresource="status" in (v.get("subresources") or {}),
            )
        return self._versions.get(key)

    def for_token(self, resource_type: str) -> tuple[CrdVersion, bool] | None:
        """(CRD version, is a server-side-apply patch) for a ``kubernetes:<group>/<v>:<Kind>[Patch]`` token."""
        parts = resource_type.split(":")
        if len(parts) != 3 or parts[0] != "kubernetes":
            return None
        api_version, kind = parts[1], parts[2]
        found = self.for_object(api_version, kind)
        if found is not None:
            return found, False
        if kind.endswith("Patch"):
            patched = self.for_object(api_version, kind.removesuffix("Patch"))
            if patched is not None:
                return patched, True
        return None

    def all_versions(self) -> list[CrdVersion]:
        out = []
        for crd in self.crds:
            for version in crd.versions:
                found = self.for_object(f"{crd.group}/{version}", crd.kind)
                if found is not None:
                    out.append(found)
        return out


def _index(directory: Path) -> CrdIndex:
    if not directory.is_dir():
        raise CrdError(f"{directory}: no such CRD directory")
    sources = _read_sources(directory)
    crds: list[ShippedCrd] = []
    files: dict[tuple[str, str], str] = {}
    for path in sorted(directory.glob("*.yaml")):
        if path.name == SOURCES_FILE:
            continue
        crd = _describe(path, _read_crd(path), sources.get(path.name))
        crds.append(crd)
        for version in crd.versions:
            files[(f"{crd.group}/{version}", crd.kind)] = path.name
    index = CrdIndex(directory, crds)
    index._files = files
    return index


@cache
def load_index(directory: Path = CRD_DIR) -> CrdIndex:
    """The CRDs in ``directory`` (default: the shipped ones), read once per process."""
    return _index(directory.resolve())


# ---------------------------------------------------------------------------------------------------------
# refresh
# ---------------------------------------------------------------------------------------------------------

_TABLE_ROW = re.compile(r"^\|\s*([^|]+?\.ya?ml)\s*\|\s*([^|]+?)\s*\|\s*([^|]+?)\s*\|\s*([0-9a-f]{7,40})\s*\|")


def read_provenance_table(markdown: Path) -> dict[str, Source]:
    """``| file | upstream repository | path | commit |`` rows of a Markdown table (e.g. a SOURCES.md)."""
    out: dict[str, Source] = {}
    for line in markdown.read_text(encoding="utf-8").splitlines():
        m = _TABLE_ROW.match(line.strip())
        if m:
            out[m[1]] = Source(m[2], m[3], m[4])
    return out


@dataclass(frozen=True)
class RefreshReport:
    written: list[ShippedCrd]
    unchanged: list[str]
    ignored: list[str]


def _canonical_name(crd: Mapping[str, Any]) -> str:
    spec = crd["spec"]
    return f"{spec['group']}_{(spec.get('names') or {}).get('plural', '')}.yaml"


def refresh(
    source_dir: Path,
    *,
    dest: Path = CRD_DIR,
    provenance: Mapping[str, Source] | None = None,
    default_source: Source | None = None,
    kinds: Iterable[k.Kind] = WRITTEN_KINDS,
) -> RefreshReport:
    """Copy from ``source_dir`` the CRD of every kind nodefleet writes into ``dest`` and record its source.

    Files are recognised by content (group and kind), not by name, and written under the API server's
    canonical ``<group>_<plural>.yaml``. Provenance comes from ``provenance`` (keyed by source file name),
    else ``default_source``; a file without either is refused, so nothing unrecorded is ever shipped. Every
    wanted kind must be found, so a refresh never silently drops a CRD.
    """
    if not source_dir.is_dir():
        raise CrdError(f"--from {source_dir}: no such directory; point it at a directory of CRD YAML files")
    wanted = {(kind.api_version.split("/")[0], kind.kind): kind for kind in kinds}
    found: dict[tuple[str, str], tuple[Path, dict[str, Any]]] = {}
    ignored: list[str] = []
    for path in sorted(source_dir.glob("*.y*ml")):
        try:
            doc = _read_crd(path)
        except CrdError:
            ignored.append(path.name)
            continue
        key = (str(doc["spec"].get("group")), str((doc["spec"].get("names") or {}).get("kind")))
        if key in wanted:
            found[key] = (path, doc)
        else:
            ignored.append(path.name)
    missing = [f"{kind.kind} ({kind.api_version})" for key, kind in wanted.items() if key not in found]
    if missing:
        raise CrdError(f"--from {source_dir}: no CRD for {', '.join(missing)}; nothing was changed")
    plan: list[tuple[Path, str, dict[str, Any], Source]] = []
    for key, (path, doc) in sorted(found.items()):
        kind = wanted[key]
        served = [v.get("name") for v in doc["spec"].get("versions") or [] if v.get("served")]
        version = kind.api_version.split("/")[1]
        if version not in served:
            raise CrdError(
                f"{path}: {kind.kind} CRD does not serve {version}, which nodefleet writes (it serves "
                f"{', '.join(map(str, served)) or 'nothing'}); nothing was changed"
            )
        source = (provenance or {}).get(path.name) or default_source
        if source is None:
            raise CrdError(
                f"{path}: no upstream source recorded; list it in a SOURCES.md table beside the files or pass "
                "--repository, --path-in-repo and --commit; nothing was changed"
            )
        plan.append((path, _canonical_name(doc), doc, source))
    dest.mkdir(parents=True, exist_ok=True)
    written: list[ShippedCrd] = []
    unchanged: list[str] = []
    keep = {name for _, name, _, _ in plan}
    for path, name, doc, source in plan:
        target = dest / name
        if target.exists() and target.read_bytes() == path.read_bytes():
            unchanged.append(name)
        else:
            shutil.copyfile(path, target)
        written.append(_describe(target, doc, source))
    for stale in dest.glob("*.yaml"):
        if stale.name != SOURCES_FILE and stale.name not in keep:
            stale.unlink()
    _write_sources(dest, written)
    load_index.cache_clear()
    return RefreshReport(written, unchanged, ignored)


def _write_sources(dest: Path, crds: list[ShippedCrd]) -> None:
    entries = [
        {
            "file": c.file,
            "crd": c.name,
            "kind": c.kind,
            "versions": list(c.versions),
            "source": {"repository": c.source.repository, "path": c.source.path, "commit": c.source.commit}
            if c.source
            else None,
            **({"generator": f"controller-gen {c.generator}"} if c.generator else {}),
            "sha256": c.sha256,
        }
        for c in sorted(crds, key=lambda c: c.file)
    ]
    header = (
        "# Written by `python -m nodefleet crds refresh`; do not edit by hand.\n"
        "# Unchanged upstream copies of the CRDs nodefleet writes objects of, with where each came from.\n"
    )
    (dest / SOURCES_FILE).write_text(
        header + yaml.safe_dump({"crds": entries}, sort_keys=False), encoding="utf-8"
    )
