"""Boot image catalogs: which RHCOS AMI a new machine starts from, per region, architecture and OS stream.

Why this module exists: a MachineSet's AMI must come from the release's own CoreOS stream metadata, the
same data the MCO boot image controller reads, or the controller fights nodefleet over the field
(DESIGN.md sections 1.1 and 1.2). The catalog is loaded from one of two real shapes:

* the ``openshift-machine-config-operator/coreos-bootimages`` ConfigMap (YAML or JSON export): ``data.stream``
  is one stream-metadata JSON document, ``data.streams`` (from 5.0) a JSON object keyed by OS stream name
  (``rhel-9``, ``rhel-10``) whose values are stream-metadata documents, ``data.releaseVersion`` the payload;
* a bare stream-metadata JSON (``openshift-install coreos print-stream-json``, the installer's
  ``coreos-rhel-9.json`` / ``coreos-rhel-10.json``, or one ``data.streams`` entry saved on its own).

The AMI is ``architectures.<arch>.images.aws.regions.<region>.image`` and its RHCOS version ``.release``.

Stream naming: a stream's OS comes from its own content.

* A stream-metadata document's top-level ``"stream"`` field is a build label (``rhcos-4.21`` for the 9.8
  images, ``rhcos-4.22`` for the 10.2 ones), not an OS, so the OS of every stream is read from its images'
  RHCOS versions: RHEL 9 images make stream ``rhel-9``, RHEL 10 images ``rhel-10``. A bare rhel-10 stream
  JSON is therefore stream ``rhel-10``, never the default ``rhel-9``.
* Where the file states a stream -- a ``data.streams`` key, or a ``"stream"`` field that names one
  (``rhel-10``, ``rhel-coreos-10``) -- the statement must agree with the images, and one stream holds one
  RHEL major. A file that contradicts itself is refused with :class:`CatalogError`: resolving from it
  would hand a MachineSet an OS its pool does not run.
* RHEL 8 images (releases before 4.13, e.g. a 4.10 ConfigMap) predate OS streams: the release has exactly
  one stream, which the MCO addresses as its default -- an absent or ``rhel-9``
  ``machineconfiguration.openshift.io/osstream`` label. nodefleet therefore names that stream ``rhel-9``
  too; :attr:`CatalogStream.rhel_major` (8) and :attr:`BootImage.release` keep the real OS visible, and
  the skew rules judge it.
* ``default`` is accepted by :meth:`BootImageCatalog.resolve` as an alias for the stream the MCO boot
  image controller reads for MachineSets without an osstream label: the ConfigMap's legacy ``data.stream``
  document, else the catalog's ``rhel-9`` stream. It is not listed in :attr:`BootImageCatalog.streams`,
  and resolved images carry the real stream name.

Reading a file (:func:`load_catalog`) refuses, each with one line naming the file and the fix: a missing
path, a directory, compressed or binary content, an empty file, and text that is neither JSON nor YAML.
Parser errors are reported by position only: PyYAML's own messages quote the offending line, and a file
given as a catalog by mistake may hold secrets.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from nodefleet import files
from nodefleet.files import FileKindError, FileTooLargeError

from .versions import OCPVersion, RHCOSVersion, VersionError, parse_ocp, parse_rhcos

__all__ = [
    "ARCH_ALIASES",
    "DEFAULT_STREAM_ALIAS",
    "BootImage",
    "BootImageCatalog",
    "CatalogError",
    "CatalogStream",
    "catalog_reference",
    "kube_arch",
    "load_catalog",
    "normalize_arch",
    "resolve_catalog_reference",
]

#: Accepted architecture spellings -> the stream-metadata (RHCOS) name. AWS has only these two.
ARCH_ALIASES: Mapping[str, str] = {
    "x86_64": "x86_64",
    "amd64": "x86_64",
    "aarch64": "aarch64",
    "arm64": "aarch64",
}
_KUBE_ARCH: Mapping[str, str] = {"x86_64": "amd64", "aarch64": "arm64"}

#: Stream name :meth:`BootImageCatalog.resolve` accepts for the stream the MCO boot image controller reads.
DEFAULT_STREAM_ALIAS = "default"
#: The name the MCO gives its default stream (an absent osstream label means the same).
_DEFAULT_STREAM = "rhel-9"
#: A stated stream name that names an OS: ``rhel-10``, ``rhel-10.2``, ``rhel-coreos-10`` (the OS image label).
_OS_STREAM_NAME = re.compile(r"^rhel-(?:coreos-)?(?P<major>[0-9]+)(?:\.[0-9]+)?$")

_EXPORT_HINT = (
    "export it with `oc -n openshift-machine-config-operator get configmap coreos-bootimages -o yaml` or "
    "`openshift-install coreos print-stream-json`"
)


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


@dataclass(frozen=True)
class CatalogStream:
    """One OS stream of a catalog, named from its own content (see the module docstring).

    ``name`` is how MachineSets, pools and the osstream label address it (``rhel-9``, ``rhel-10``);
    ``rhel_major`` the RHEL major of its images (8 for a release that predates OS streams; ``None`` when it
    has no AWS images); ``origin`` where it is in the file (``data.streams.rhel-10``, ``data.stream``,
    ``the stream JSON``); ``default`` whether it is what the ``default`` alias resolves to.
    """

    name: str
    rhel_major: int | None
    origin: str
    default: bool = False

    def describe(self) -> str:
        """``rhel-9 (RHEL 8 images, the default stream of a release before OS streams)``, for messages."""
        if self.rhel_major is None:
            return f"{self.name} (no AWS images)"
        if self.rhel_major < 9:
            return (
                f"{self.name} (RHEL {self.rhel_major} images, the default stream of a release before OS "
                "streams)"
            )
        return f"{self.name} (RHEL {self.rhel_major})"


# stream name -> arch -> region -> image
_Images = Mapping[str, Mapping[str, Mapping[str, BootImage]]]
_ByArch = dict[str, dict[str, BootImage]]


def _listing(names: Iterable[str]) -> str:
    items = sorted(names)
    return ", ".join(items) if items else "(none)"


class BootImageCatalog:
    """The AWS boot images of one release's CoreOS stream metadata, by stream, architecture and region.

    Build it with :func:`load_catalog` or :meth:`from_text`. Every region entry is parsed and every stream
    named from its images when the catalog is loaded, so a malformed or self-contradicting file fails at
    load time, not at the first lookup.
    """

    def __init__(
        self,
        source: str,
        images: _Images,
        release_version: OCPVersion | None = None,
        info: Mapping[str, CatalogStream] | None = None,
    ) -> None:
        """Low-level constructor: ``images`` maps stream -> arch -> region -> :class:`BootImage`.

        A ``default`` key holds the legacy ``data.stream`` document; ``info`` describes each key.
        """
        self.source = source
        #: The payload version from ``data.releaseVersion``; ``None`` for bare stream JSON or a placeholder.
        self.release_version = release_version
        self._images = images
        self._info: Mapping[str, CatalogStream] = info or {
            name: CatalogStream(name, None, name) for name in images
        }
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
        document = _parse_document(text, source_name)
        if not isinstance(document, dict):
            raise CatalogError(
                f"Boot image catalog '{source_name}' must be a ConfigMap or a CoreOS stream JSON object, "
                f"but its top level is {type(document).__name__}; check that the right file was given, or "
                f"{_EXPORT_HINT}."
            )
        if "architectures" in document:
            by_arch = _parse_stream(document, source_name, "the stream JSON")
            stream = _name_stream(by_arch, document, source_name, "the stream JSON", stated=None)
            stream = replace(stream, default=stream.name == _DEFAULT_STREAM)
            return cls(source_name, {stream.name: _renamed(by_arch, stream.name)}, info={stream.name: stream})
        if document.get("kind") == "ConfigMap" or "data" in document:
            return _from_configmap(document, source_name, cls)
        raise CatalogError(
            f"Boot image catalog '{source_name}' is neither a coreos-bootimages ConfigMap (no 'data' key) "
            "nor a CoreOS stream JSON (no 'architectures' key); check that the right file was given."
        )

    def stream(self, stream: str = _DEFAULT_STREAM) -> CatalogStream:
        """What the catalog knows about ``stream`` (or the ``default`` alias): its OS and where it is."""
        key = self._key(stream)
        return self._info[key]

    def describe_streams(self) -> str:
        """``rhel-10 (RHEL 10), rhel-9 (RHEL 9)``: every stream with its OS, for messages."""
        return _listing(self._info[name].describe() for name in self.streams)

    def _key(self, stream: str) -> str:
        if stream == DEFAULT_STREAM_ALIAS:
            key = DEFAULT_STREAM_ALIAS if DEFAULT_STREAM_ALIAS in self._images else _DEFAULT_STREAM
        else:
            key = stream
        if key not in self._images:
            shown = (
                "the default (rhel-9) stream" if stream == DEFAULT_STREAM_ALIAS else f"OS stream '{stream}'"
            )
            if key == "rhel-10":
                fix = (
                    "a catalog of a release that ships it (rhel-10 boot images ship from OCP 4.22, in the "
                    "ConfigMap's data.streams)"
                )
            else:
                fix = (
                    "the cluster's coreos-bootimages ConfigMap, which carries every stream the release ships "
                    "(a single-stream file serves only its own stream)"
                )
            raise CatalogError(
                f"{shown[0].upper()}{shown[1:]} is not in boot image catalog '{self.source}'; it has: "
                f"{self.describe_streams()}. Use one of those streams, or {fix}."
            )
        return key

    def _stream(self, stream: str) -> tuple[str, Mapping[str, Mapping[str, BootImage]]]:
        """(real stream name, images by arch) for a stream name or the ``default`` alias."""
        key = self._key(stream)
        return self._info[key].name, self._images[key]

    def archs(self, stream: str = _DEFAULT_STREAM) -> tuple[str, ...]:
        """Architectures with AWS boot images in ``stream``, sorted."""
        _, by_arch = self._stream(stream)
        return tuple(sorted(a for a, regions in by_arch.items() if regions))

    def regions(self, arch: str, stream: str = _DEFAULT_STREAM) -> tuple[str, ...]:
        """AWS regions with a boot image for ``arch`` in ``stream``, sorted."""
        _, by_arch = self._stream(stream)
        return tuple(sorted(by_arch.get(normalize_arch(arch), {})))

    def resolve(self, region: str, arch: str, stream: str = _DEFAULT_STREAM) -> BootImage:
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


# ---------------------------------------------------------------------------------------------------------
# Files and references
# ---------------------------------------------------------------------------------------------------------


def load_catalog(path: str | os.PathLike[str], shown: str | None = None) -> BootImageCatalog:
    """Load a boot image catalog file; the format is detected from the content, not the file name.

    ``shown`` is how messages name the file (default: ``path`` as given). Everything that can go wrong
    with the file raises :class:`CatalogError` with one line naming the file and the fix.
    """
    name = shown if shown is not None else os.fspath(path)
    file = Path(path)
    try:
        data = files.read_regular_file(file)
    except FileKindError as exc:
        raise CatalogError(
            f"Boot image catalog '{name}' {exc}: nodefleet reads a catalog only from a regular file (a pipe or "
            f"device could block every command forever); save the catalog to a file ({_EXPORT_HINT}) and point "
            "catalog at it."
        ) from None
    except FileTooLargeError as exc:
        raise CatalogError(
            f"Boot image catalog '{name}' {exc}, far larger than a coreos-bootimages ConfigMap or stream JSON "
            f"(under 1 MiB); point catalog at the exported file ({_EXPORT_HINT})."
        ) from None
    except FileNotFoundError:
        raise CatalogError(
            f"Boot image catalog '{name}' does not exist (looked for {os.path.abspath(file)}); fix the path, "
            f"or {_EXPORT_HINT} and point catalog at the file."
        ) from None
    except IsADirectoryError:
        raise CatalogError(
            f"Boot image catalog '{name}' is a directory, not a file; point catalog at one exported "
            f"ConfigMap or stream JSON{_directory_listing(file)}."
        ) from None
    except OSError as exc:
        raise CatalogError(
            f"Boot image catalog '{name}' cannot be read ({exc.strerror or type(exc).__name__}); check the "
            "path and its permissions."
        ) from None
    except ValueError:  # the OS refuses a path with a NUL character before any file is looked at
        raise CatalogError(
            f"Boot image catalog {name!r} is not a usable path (it contains a NUL character); point catalog "
            "at an exported ConfigMap or stream JSON."
        ) from None
    return BootImageCatalog.from_text(_decode(data, name), name)


def _directory_listing(directory: Path) -> str:
    try:
        names = sorted(p.name for p in directory.iterdir() if p.is_file())
    except OSError:
        return ""
    if not names:
        return " (it holds no files)"
    more = f", … ({len(names)} files)" if len(names) > 5 else ""
    return f" (it holds: {', '.join(names[:5])}{more})"


def _decode(data: bytes, name: str) -> str:
    try:
        text = files.decode_text(data, name, what="catalog")
    except files.FileProblem as exc:
        raise CatalogError(
            f"Boot image catalog '{name}' {_is(exc.problem)}; {exc.fix}; a catalog is the coreos-bootimages "
            f"ConfigMap (YAML or JSON) or a stream JSON: {_EXPORT_HINT}."
        ) from None
    if not text.strip():
        raise CatalogError(
            f"Boot image catalog '{name}' is empty; {_EXPORT_HINT} again (an interrupted export leaves an "
            "empty file)."
        )
    return text


def _is(problem: str) -> str:
    """A reader's problem after the catalog's name: ``is gzip-compressed…``, ``is not text (line 3…)``."""
    return problem if problem.startswith("is ") else f"is not text nodefleet reads ({problem})"


def _beyond_bounds(name: str, exc: files.FileProblem) -> CatalogError:
    return CatalogError(f"Boot image catalog '{name}' {_is(exc.problem)}; {exc.fix}, or {_EXPORT_HINT}.")


def _parse_document(text: str, name: str) -> Any:
    """JSON or YAML, read by :mod:`nodefleet.files` (bounded depth and aliases); errors say where, never what
    the offending line holds.

    A file that starts like JSON is judged as JSON, so a truncated stream JSON gets the JSON parser's
    error, not YAML's; hand-written flow-style YAML that is not JSON is still accepted.
    """
    if text.lstrip().startswith(("{", "[")):
        try:
            return files.load_json(text, name)
        except files.FileProblem as exc:
            if not exc.syntax:
                raise _beyond_bounds(name, exc) from None
            json_error = exc
        try:
            return files.load_yaml(text, name)
        except files.FileProblem:
            truncated = (
                "; it ends inside an object or string, so it looks truncated" if _unclosed(text) else ""
            )
            raise CatalogError(
                f"Boot image catalog '{name}' {json_error.problem.removesuffix(')')}{truncated}); "
                f"{_EXPORT_HINT} again rather than editing it."
            ) from None
    try:
        return files.load_yaml(text, name)
    except files.FileProblem as exc:
        if not exc.syntax:
            raise _beyond_bounds(name, exc) from None
        raise CatalogError(
            f"Boot image catalog '{name}' is neither valid JSON nor valid YAML ({exc.problem}); "
            f"check that the right file was given, or {_EXPORT_HINT}."
        ) from None


def _unclosed(text: str) -> bool:
    """Whether JSON text ends inside a string or with an object or array still open (a cut-off file)."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "{[":
            depth += 1
        elif char in "}]":
            depth -= 1
    return in_string or depth > 0


def catalog_reference(path: str | os.PathLike[str], project_dir: str | os.PathLike[str]) -> str:
    """How nodefleet's objects name the catalog they were built from: a path relative to the project.

    The MachineSet annotation ``nodefleet.io/boot-image-catalog`` carries it, so the policy pack -- a separate
    process at ``pulumi preview`` -- judges the MachineSet by that same file (:func:`resolve_catalog_reference`).
    It is never absolute: rendered manifests go to Git, and a machine-specific path there would mean nothing
    on the next machine. A catalog outside the project is named with ``..`` segments; one on another drive
    (Windows) by its file name only, which the policy cannot open, so it falls back to its configured
    catalogs.
    """
    base = os.path.abspath(project_dir)
    target = os.path.abspath(path)
    try:
        relative = os.path.relpath(target, base)
    except ValueError:
        return Path(target).name
    return Path(relative).as_posix()


def resolve_catalog_reference(reference: str, project_dir: str | os.PathLike[str]) -> Path:
    """The file a :func:`catalog_reference` names, for a process whose project directory is ``project_dir``."""
    return Path(os.path.normpath(Path(project_dir) / reference))


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
    info: dict[str, CatalogStream] = {}
    if "streams" in data:
        streams = _json_value(data["streams"], source, "data.streams")
        if not isinstance(streams, dict) or not streams:
            raise CatalogError(
                f"Boot image catalog '{source}': 'data.streams' must be a JSON object keyed by OS stream "
                "name (rhel-9, rhel-10), but it is not (or it is empty)."
            )
        for key, value in streams.items():
            origin = f"data.streams.{key}"
            stream_doc = _json_value(value, source, origin)
            by_arch = _parse_stream(stream_doc, source, origin, f"{origin}.")
            stream = _name_stream(by_arch, stream_doc, source, origin, stated=str(key))
            if stream.name in images:
                raise CatalogError(
                    f"Boot image catalog '{source}': {origin} and {info[stream.name].origin} both hold "
                    f"{stream.name} boot images; one stream per OS. Re-export the file rather than editing it."
                )
            images[stream.name] = _renamed(by_arch, stream.name)
            info[stream.name] = stream
    if "stream" in data:
        legacy_doc = _json_value(data["stream"], source, "data.stream")
        by_arch = _parse_stream(legacy_doc, source, "data.stream", "data.stream: ")
        legacy = _name_stream(by_arch, legacy_doc, source, "data.stream", stated=None)
        legacy = replace(legacy, default=True)
        renamed = _renamed(by_arch, legacy.name)
        if legacy.name not in images:
            images[legacy.name] = renamed
            info[legacy.name] = legacy
        images[DEFAULT_STREAM_ALIAS] = renamed
        info[DEFAULT_STREAM_ALIAS] = legacy
    elif _DEFAULT_STREAM in info:
        info[_DEFAULT_STREAM] = replace(info[_DEFAULT_STREAM], default=True)
    return cls(source, images, _release_version(data.get("releaseVersion"), source), info)


def _json_value(value: Any, source: str, key: str) -> Any:
    if not isinstance(value, str):
        return value  # already structured (e.g. a hand-written YAML mapping)
    try:
        return files.load_json(value, source)
    except files.FileProblem as exc:
        if not exc.syntax:
            raise CatalogError(
                f"Boot image catalog '{source}': '{key}' {_is(exc.problem)}; re-export the ConfigMap."
            ) from None
        raise CatalogError(
            f"Boot image catalog '{source}': '{key}' {exc.problem.removesuffix(')')} of the value); re-export "
            "the ConfigMap rather than editing it."
        ) from None


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


def _renamed(by_arch: _ByArch, name: str) -> _ByArch:
    """The same images, carrying the stream name they were resolved under."""
    return {
        arch: {
            region: BootImage(i.ami, i.release, i.raw_release, i.region, i.arch, name)
            for region, i in regions.items()
        }
        for arch, regions in by_arch.items()
    }


def _artifact_majors(document: Mapping[str, Any]) -> dict[int, str]:
    """RHEL majors of a stream's artifact releases (``architectures.*.artifacts.*.release``), with an example."""
    found: dict[int, str] = {}
    for arch_doc in (document.get("architectures") or {}).values():
        for platform, artifact in (_get(arch_doc, "artifacts") or {}).items():
            raw = _get(artifact, "release")
            try:
                version = parse_rhcos(str(raw))
            except VersionError:
                continue
            found.setdefault(version.rhel[0], f"{raw} (artifacts.{platform})")
    return found


def _name_stream(
    by_arch: _ByArch, document: Mapping[str, Any], source: str, origin: str, stated: str | None
) -> CatalogStream:
    """Name a stream from its images' RHEL major; refuse a file whose stated stream contradicts them.

    ``stated`` is the ``data.streams`` key; for a legacy or bare document, a top-level ``"stream"`` field
    that names an OS (``rhel-10``) is a statement too, while a build label (``rhcos-4.22``) is not.
    """
    majors: dict[int, str] = {}
    for arch in sorted(by_arch):
        for region in sorted(by_arch[arch]):
            image = by_arch[arch][region]
            where = f"architectures.{arch}.images.aws.regions.{region}"
            majors.setdefault(image.release.rhel[0], f"{image.raw_release} at {where}")
    if not majors:
        majors = _artifact_majors(document)
    if len(majors) > 1:
        shown = " and ".join(f"RHEL {m} ({majors[m]})" for m in sorted(majors))
        raise CatalogError(
            f"Boot image catalog '{source}': {origin} mixes {shown}; one stream holds one RHEL major. "
            "Re-export the file rather than merging streams by hand."
        )
    major = next(iter(majors)) if majors else None
    label = document.get("stream") if stated is None else stated
    if stated is None and not (isinstance(label, str) and _OS_STREAM_NAME.match(label)):
        label = None  # a build label such as rhcos-4.22, not an OS
    if label is not None:
        match = _OS_STREAM_NAME.match(str(label))
        if match is None:
            raise CatalogError(
                f"Boot image catalog '{source}': {origin} is not an OS stream name (rhel-<major>, e.g. rhel-9, "
                "rhel-10); re-export the ConfigMap rather than renaming its streams."
            )
        said = int(match.group("major"))
        if major is not None and said != major:
            field = origin if stated is not None else f'{origin} (its "stream": "{label}")'
            raise CatalogError(
                f"Boot image catalog '{source}': {field} says RHEL {said}, but its boot images are RHEL "
                f"{major} ({majors[major]}); the file contradicts itself. Re-export it rather than editing "
                "or renaming its streams."
            )
        major = said if major is None else major
    if major is None:
        return CatalogStream(_DEFAULT_STREAM if stated is None else str(stated), None, origin)
    # Releases before OS streams (RHEL 8) have one stream, which the MCO addresses as its default, rhel-9.
    name = f"rhel-{major}" if major >= 9 else _DEFAULT_STREAM
    return CatalogStream(name, major, origin)


def _parse_stream(document: Any, source: str, stream: str, prefix: str = "") -> _ByArch:
    def fail(path: str, problem: str) -> CatalogError:
        return CatalogError(
            f"Boot image catalog '{source}' ({stream}): {prefix}{path} {problem}; the file is not "
            "valid CoreOS stream metadata. Re-export it rather than editing it by hand."
        )

    if not isinstance(document, dict):
        raise fail("(the stream document)", "is not a JSON object")
    archs = document.get("architectures")
    if not isinstance(archs, dict):
        raise fail("architectures", "is missing or not an object")
    result: _ByArch = {}
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
