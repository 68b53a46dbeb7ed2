"""Boot image catalogs: which RHCOS AMI a new machine starts from, per region, architecture and OS stream.

Why this module exists: a MachineSet's AMI must come from the release's own CoreOS stream metadata, the
same data the MCO boot image controller reads, or the controller fights nodefleet over the field
(DESIGN.md sections 1.1 and 1.2). The catalog is loaded from one of two real shapes:

* the ``openshift-machine-config-operator/coreos-bootimages`` ConfigMap (YAML or JSON export): ``data.stream``
  is one stream-metadata JSON document, ``data.streams`` (from 5.0) a JSON object keyed by OS stream name
  (``rhel-9``, ``rhel-10``) whose values are stream-metadata documents, ``data.releaseVersion`` the payload;
* a bare stream-metadata JSON (``openshift-install coreos print-stream-json``, installer ``rhcos.json``).

The AMI is ``architectures.<arch>.images.aws.regions.<region>.image`` and its RHCOS version ``.release``.

Stream naming. Catalog streams are named as the MCO and MachineConfigPools name OS streams:

* ``data.streams`` entries keep their names (``rhel-9``, ``rhel-10``);
* the single legacy ``data.stream`` document, and a bare stream JSON, are the stream the MCO boot image
  controller reads for MachineSets whose ``machineconfiguration.openshift.io/osstream`` label is absent or
  ``rhel-9``. They are exposed as ``rhel-9`` (unless ``data.streams`` already has a ``rhel-9`` entry,
  which then wins) even when their images are RHEL 8, as in a 4.10 catalog: that is the stream a MachineSet
  without an osstream label boots from. :attr:`BootImage.release` always tells the real RHEL version, and
  the skew rules judge it.
* ``default`` is accepted by :meth:`BootImageCatalog.resolve` as an alias for the legacy ``data.stream``
  document (the stream the MCO's boot image controller uses), or ``rhel-9`` when there is none. It is not
  listed in :attr:`BootImageCatalog.streams`, and resolved images carry the real stream name.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

from .versions import OCPVersion, RHCOSVersion, VersionError, parse_ocp, parse_rhcos

__all__ = [
    "ARCH_ALIASES",
    "DEFAULT_STREAM_ALIAS",
    "BootImage",
    "BootImageCatalog",
    "CatalogError",
    "kube_arch",
    "load_catalog",
    "normalize_arch",
]

#: Accepted architecture spellings -> the stream-metadata (RHCOS) name. AWS has only these two.
ARCH_ALIASES: Mapping[str, str] = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}
_KUBE_ARCH: Mapping[str, str] = {"x86_64": "amd64", "aarch64": "arm64"}

#: Stream name :meth:`BootImageCatalog.resolve` accepts for the legacy ``data.stream`` document.
DEFAULT_STREAM_ALIAS = "default"
_LEGACY_STREAM = "rhel-9"


class CatalogError(ValueError):
    """A boot image catalog that cannot be read, or a lookup the catalog cannot answer."""


def normalize_arch(arch: str) -> str:
    """Return the stream-metadata architecture name (``x86_64``/``aarch64``) for ``amd64``/``arm64`` too.

    Kubernetes (``kubernetes.io/arch``) says amd64/arm64, CoreOS stream metadata says x86_64/aarch64;
    config may use either.
    """
    canonical = ARCH_ALIASES.get(arch.strip().lower()) if isinstance(arch, str) else None
    if canonical is None:
        raise CatalogError(
            f"Architecture '{arch}' has no AWS boot images; use one of: {', '.join(sorted(ARCH_ALIASES))}."
        )
    return canonical


def kube_arch(arch: str) -> str:
    """The ``kubernetes.io/arch`` value (amd64/arm64) for any accepted architecture spelling."""
    return _KUBE_ARCH[normalize_arch(arch)]


@dataclass(frozen=True)
class BootImage:
    """One RHCOS AMI: what a new machine in ``region`` with ``arch`` on OS ``stream`` boots from."""

    ami: str
    release: RHCOSVersion
    raw_release: str
    region: str
    arch: str
    stream: str


# stream name -> arch -> region -> image
_Images = Mapping[str, Mapping[str, Mapping[str, BootImage]]]


def _listing(names: Iterable[str]) -> str:
    items = sorted(names)
    return ", ".join(items) if items else "(none)"


class BootImageCatalog:
    """The AWS boot images of one release's CoreOS stream metadata, by stream, architecture and region.

    Build it with :func:`load_catalog` or :meth:`from_text`. Every region entry is parsed when the catalog
    is loaded, so a malformed file fails at load time, not at the first lookup.
    """

    def __init__(self, source: str, images: _Images, release_version: OCPVersion | None = None) -> None:
        """Low-level constructor: ``images`` maps stream -> arch -> region -> :class:`BootImage`.

        A ``default`` key holds the legacy ``data.stream`` document; see the module docstring.
        """
        self.source = source
        #: The payload version from ``data.releaseVersion``; ``None`` for bare stream JSON or a placeholder.
        self.release_version = release_version
        self._images = images
        #: OS stream names this catalog has, sorted (``default`` is an alias, not listed).
        self.streams: tuple[str, ...] = tuple(sorted(n for n in images if n != DEFAULT_STREAM_ALIAS))

    def __repr__(self) -> str:
        return (
            f"BootImageCatalog(source={self.source!r}, release_version={self.release_version!s}, "
            f"streams={self.streams!r})"
        )

    @classmethod
    def from_text(cls, text: str, source_name: str) -> BootImageCatalog:
        """Parse a ConfigMap export (YAML/JSON) or a bare stream JSON; ``source_name`` is used in messages."""
        try:
            document = json.loads(text)
        except ValueError:
            try:
                document = yaml.safe_load(text)
            except yaml.YAMLError as exc:
                raise CatalogError(
                    f"Boot image catalog '{source_name}' is neither valid JSON nor valid YAML ({exc}); "
                    "export it with `oc get configmap coreos-bootimages -n openshift-machine-config-operator "
                    "-o yaml` or `openshift-install coreos print-stream-json`."
                ) from None
        if not isinstance(document, dict):
            raise CatalogError(
                f"Boot image catalog '{source_name}' must be a ConfigMap or a CoreOS stream JSON object, "
                f"but its top level is {type(document).__name__}."
            )
        if "architectures" in document:
            images = {_LEGACY_STREAM: _parse_stream(document, source_name, _LEGACY_STREAM)}
            return cls(source_name, images)
        if document.get("kind") == "ConfigMap" or "data" in document:
            return _from_configmap(document, source_name, cls)
        raise CatalogError(
            f"Boot image catalog '{source_name}' is neither a coreos-bootimages ConfigMap (no 'data' key) "
            "nor a CoreOS stream JSON (no 'architectures' key); check that the right file was given."
        )

    def _stream(self, stream: str) -> tuple[str, Mapping[str, Mapping[str, BootImage]]]:
        """(real stream name, images by arch) for a stream name or the ``default`` alias."""
        if stream == DEFAULT_STREAM_ALIAS:
            name = _LEGACY_STREAM
            key = DEFAULT_STREAM_ALIAS if DEFAULT_STREAM_ALIAS in self._images else _LEGACY_STREAM
        else:
            name = key = stream
        if key not in self._images:
            raise CatalogError(
                f"OS stream '{stream}' is not in boot image catalog '{self.source}'; it has: "
                f"{_listing(self.streams)}. Use one of those streams, or a catalog of a release that ships "
                f"'{stream}' (rhel-10 boot images ship from OCP 4.22 in the ConfigMap's data.streams)."
            )
        return name, self._images[key]

    def archs(self, stream: str = _LEGACY_STREAM) -> tuple[str, ...]:
        """Architectures with AWS boot images in ``stream``, sorted."""
        _, by_arch = self._stream(stream)
        return tuple(sorted(a for a, regions in by_arch.items() if regions))

    def regions(self, arch: str, stream: str = _LEGACY_STREAM) -> tuple[str, ...]:
        """AWS regions with a boot image for ``arch`` in ``stream``, sorted."""
        _, by_arch = self._stream(stream)
        return tuple(sorted(by_arch.get(normalize_arch(arch), {})))

    def resolve(self, region: str, arch: str, stream: str = _LEGACY_STREAM) -> BootImage:
        """The boot image for ``region``/``arch``/``stream``; a :class:`CatalogError` lists what exists."""
        canonical = normalize_arch(arch)
        name, by_arch = self._stream(stream)
        by_region = by_arch.get(canonical)
        if not by_region:
            raise CatalogError(
                f"Architecture '{arch}' has no AWS boot images in boot image catalog '{self.source}' "
                f"(stream {name}); it has: {_listing(self.archs(stream))}. Use one of those architectures."
            )
        image = by_region.get(region)
        if image is None:
            raise CatalogError(
                f"Region '{region}' is not in boot image catalog '{self.source}' ({canonical}, stream "
                f"{name}); it has: {_listing(list(by_region))}. Use one of those regions, or a catalog "
                "of a release that publishes AMIs there."
            )
        return image

    def images(self, stream: str | None = None) -> Iterator[BootImage]:
        """Every boot image of ``stream`` (all named streams when ``None``), in a stable order."""
        for name in self.streams if stream is None else (stream,):
            _, by_arch = self._stream(name)
            for arch in sorted(by_arch):
                for region in sorted(by_arch[arch]):
                    yield by_arch[arch][region]

    def find_ami(self, ami: str) -> BootImage | None:
        """The boot image whose AMI id is ``ami``, or ``None``: maps a declared AMI back to its RHCOS version.

        Named streams are searched first (sorted), then the legacy ``data.stream`` document.
        """
        for image in self.images():
            if image.ami == ami:
                return image
        if DEFAULT_STREAM_ALIAS in self._images:
            for image in self.images(DEFAULT_STREAM_ALIAS):
                if image.ami == ami:
                    return image
        return None


def load_catalog(path: str | os.PathLike[str]) -> BootImageCatalog:
    """Load a boot image catalog file; the format is detected from the content, not the file name."""
    source = os.fspath(path)
    try:
        text = Path(source).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CatalogError(
            f"Cannot read boot image catalog '{source}' ({exc}); check the path in the stack config."
        ) from None
    return BootImageCatalog.from_text(text, source)


# ---------------------------------------------------------------------------------------------------------
# Parsing
# ---------------------------------------------------------------------------------------------------------


def _from_configmap(
    document: Mapping[str, Any], source: str, cls: type[BootImageCatalog]
) -> BootImageCatalog:
    data = document.get("data")
    if not isinstance(data, dict):
        raise CatalogError(
            f"Boot image catalog '{source}' is a ConfigMap without a 'data' mapping; export the "
            "coreos-bootimages ConfigMap from openshift-machine-config-operator."
        )
    if "stream" not in data and "streams" not in data:
        raise CatalogError(
            f"Boot image catalog '{source}' is a ConfigMap with neither 'data.stream' nor 'data.streams'; "
            "is it the coreos-bootimages ConfigMap?"
        )
    images: dict[str, Mapping[str, Mapping[str, BootImage]]] = {}
    if "streams" in data:
        streams = _json_value(data["streams"], source, "data.streams")
        if not isinstance(streams, dict) or not streams:
            raise CatalogError(
                f"Boot image catalog '{source}': 'data.streams' must be a JSON object keyed by OS stream "
                "name (rhel-9, rhel-10), but it is not (or it is empty)."
            )
        for name, value in streams.items():
            stream_doc = _json_value(value, source, f"data.streams.{name}")
            images[str(name)] = _parse_stream(stream_doc, source, str(name), f"data.streams.{name}.")
    if "stream" in data:
        legacy_doc = _json_value(data["stream"], source, "data.stream")
        legacy = _parse_stream(legacy_doc, source, _LEGACY_STREAM, "data.stream: ")
        images.setdefault(_LEGACY_STREAM, legacy)
        images[DEFAULT_STREAM_ALIAS] = legacy
    return cls(source, images, _release_version(data.get("releaseVersion"), source))


def _json_value(value: Any, source: str, key: str) -> Any:
    if not isinstance(value, str):
        return value  # already structured (e.g. a hand-written YAML mapping)
    try:
        return json.loads(value)
    except ValueError as exc:
        raise CatalogError(f"Boot image catalog '{source}': '{key}' is not valid JSON ({exc}).") from None


def _release_version(value: Any, source: str) -> OCPVersion | None:
    """``data.releaseVersion``; ``None`` when absent or the build placeholder ``0.0.1-snapshot`` (major 0)."""
    if value is None:
        return None
    try:
        version = parse_ocp(str(value))
    except VersionError as exc:
        raise CatalogError(f"Boot image catalog '{source}': data.releaseVersion is invalid: {exc}") from None
    return version if version.major > 0 else None


def _get(value: Any, key: str) -> Any:
    """``value[key]`` when ``value`` is a mapping that has it, else ``None``."""
    return value.get(key) if isinstance(value, dict) else None


def _parse_stream(
    document: Any, source: str, stream: str, prefix: str = ""
) -> Mapping[str, Mapping[str, BootImage]]:
    def fail(path: str, problem: str) -> CatalogError:
        return CatalogError(
            f"Boot image catalog '{source}' (stream {stream}): {prefix}{path} {problem}; the file is not "
            "valid CoreOS stream metadata. Re-export it rather than editing it by hand."
        )

    if not isinstance(document, dict):
        raise fail("(the stream document)", "is not a JSON object")
    archs = document.get("architectures")
    if not isinstance(archs, dict):
        raise fail("architectures", "is missing or not an object")
    result: dict[str, dict[str, BootImage]] = {}
    for arch, arch_doc in archs.items():
        canonical = ARCH_ALIASES.get(str(arch))
        if canonical is None:
            continue  # ppc64le, s390x: no AWS images
        if not isinstance(arch_doc, dict):
            raise fail(f"architectures.{arch}", "is not an object")
        aws = _get(arch_doc.get("images"), "aws")
        if aws is None:
            continue
        base = f"architectures.{arch}.images.aws"
        regions = aws.get("regions") if isinstance(aws, dict) else None
        if not isinstance(regions, dict):
            raise fail(f"{base}.regions", "is missing or not an object")
        artifact_release = _get(_get(arch_doc.get("artifacts"), "aws"), "release")
        by_region: dict[str, BootImage] = {}
        for region, entry in regions.items():
            where = f"{base}.regions.{region}"
            if not isinstance(entry, dict):
                raise fail(where, "is not an object")
            ami = entry.get("image")
            if not isinstance(ami, str) or not ami:
                raise fail(f"{where}.image", "is missing")
            raw = entry.get("release", artifact_release)
            if not isinstance(raw, str):
                raise fail(f"{where}.release", "is missing (and so is the aws artifact release)")
            try:
                release = parse_rhcos(raw)
            except VersionError as exc:
                raise fail(f"{where}.release", f"is not an RHCOS version ({exc})") from None
            by_region[str(region)] = BootImage(
                ami=ami, release=release, raw_release=raw, region=str(region), arch=canonical, stream=stream
            )
        result[canonical] = by_region
    return result
