"""The previous version of an object, for CRD transition rules (``oldSelf``): where nodefleet can know it.

Two sources, both read-only:

- **render mode**: the manifest the last render wrote for the same object, at
  ``<renderYamlToDirectory>/<render_layout.manifest_path(object)>``. That file is what Argo CD or Flux
  applied, so it is the object the next apply updates.
- **a stack checkpoint**: the JSON ``pulumi stack export --file <path>`` writes. Its resources carry the
  engine's last known ``outputs`` (for a Kubernetes object, the live object as last read), matched by URN.
  A policy pack gets no previous state from the engine during ``pulumi preview``, so the checkpoint is
  handed to it by path in the policy pack config.

Secret values in a checkpoint stay encrypted unless exported with ``--show-secrets``; an encrypted value is
returned as ``crd_schema.UNKNOWN`` (a rule reading it is reported as "cannot evaluate").
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

from nodefleet import files
from nodefleet.apiserver.schema import UNKNOWN
from nodefleet.render_layout import manifest_path

__all__ = ["Checkpoint", "PreviousStateError", "load_checkpoint", "rendered_previous"]

#: Pulumi's marker for a secret value in state (``resource.SecretSig``).
_SECRET_SIG = "4dabf18193072939515e22adb298388d"


class PreviousStateError(ValueError):
    """A previous-state source that was asked for and cannot be used; the message says how to fix it."""


def _project_relative(directory: str, root: Path) -> Path:
    path = Path(directory).expanduser()
    return path if path.is_absolute() else root / path


def rendered_previous(
    render_directory: str, manifest: Mapping[str, Any], root: Path
) -> tuple[dict[str, Any], str] | None:
    """(previous manifest, its path) from the last render into ``render_directory``; None if never rendered.

    ``render_directory`` is the provider's ``renderYamlToDirectory``; a relative one is relative to the
    project ``root``, as the program runs there.
    """
    file = _project_relative(render_directory, root) / manifest_path(manifest)
    if not file.is_file():
        return None
    try:
        doc = files.load_yaml(files.read_text(file, what="rendered manifest"), str(file))
    except files.FileProblem as e:
        raise PreviousStateError(
            f"{file}: the previously rendered manifest cannot be read ({e.problem}); re-render or remove it"
        ) from None
    if not isinstance(doc, dict):
        raise PreviousStateError(
            f"{file}: the previously rendered manifest is not an object; re-render or remove it"
        )
    return doc, str(file)


def _decode(value: Any) -> Any:
    if isinstance(value, dict):
        if value.get(_SECRET_SIG) == "1b47061264138c4ac30d75fd1eb44270":
            if "plaintext" in value:
                try:
                    return _decode(files.load_json(value["plaintext"], "plaintext"))
                except (TypeError, ValueError):
                    return UNKNOWN
            return UNKNOWN
        return {k: _decode(v) for k, v in value.items() if not str(k).startswith("__")}
    if isinstance(value, list):
        return [_decode(v) for v in value]
    return value


@dataclass(frozen=True)
class Checkpoint:
    """The resources of a ``pulumi stack export``, by URN."""

    path: str
    objects: Mapping[str, Mapping[str, Any]]

    def previous(self, urn: str) -> dict[str, Any] | None:
        """The last known object for ``urn`` (outputs, else inputs), or None if the stack has no such resource.

        URNs match on their type path and name (``urn:pulumi:<stack>::<project>::<this part>``): a checkpoint
        holds one stack of one project, and the credential-free check runs under other names.
        """
        found = self.objects.get(_urn_key(urn))
        return dict(found) if found is not None else None


def _urn_key(urn: str) -> str:
    parts = urn.split("::", 2)
    return parts[2] if len(parts) == 3 else urn


@lru_cache(maxsize=4)
def _load(path: str, mtime_ns: int) -> Checkpoint:
    try:
        doc = files.load_json(files.read_text(path, what="stack export", limit=files.EXPORT_BYTES), path)
    except files.FileProblem as e:
        raise PreviousStateError(
            f"previousState {path}: {e.problem}; write it with `pulumi stack export --file {path}`"
        ) from None
    deployment = doc.get("deployment") if isinstance(doc, dict) else None
    resources = deployment.get("resources") if isinstance(deployment, dict) else None
    if not isinstance(resources, list):
        raise PreviousStateError(
            f"previousState {path}: not a stack export (no deployment.resources); write it with "
            f"`pulumi stack export --file {path}`"
        )
    objects: dict[str, Mapping[str, Any]] = {}
    for res in resources:
        if not isinstance(res, dict) or not isinstance(res.get("urn"), str) or res.get("delete"):
            continue
        state = res.get("outputs") or res.get("inputs")
        if isinstance(state, dict):
            objects[_urn_key(res["urn"])] = _decode(state)
    return Checkpoint(path, objects)


def load_checkpoint(path: str | Path, root: Path) -> Checkpoint:
    """Read (once per file version) a ``pulumi stack export`` file; a relative path is relative to ``root``."""
    file = _project_relative(str(path), root)
    try:
        mtime = file.stat().st_mtime_ns
    except OSError:
        raise PreviousStateError(
            f"previousState {file}: no such file; write it with `pulumi stack export --file {file}` before "
            "the preview"
        ) from None
    return _load(str(file), mtime)
