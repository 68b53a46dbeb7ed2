"""The live objects an import reads, and what it refuses before looking at any of them in detail.

Sources are YAML streams: `oc get -o yaml` dumps (a `List` of `items`), `hypershift create cluster aws --render`
output (several documents), a GitOps repository's manifests. Each object keeps where it came from
(``file.yaml, document 3``), so every message names it. What cannot be adopted is refused here, one message per
problem, before anything is built: a document that is not a Kubernetes object, an object being deleted, an API
version of a group nodefleet models but not at that version, a platform other than AWS, a paused HostedCluster,
one name in two namespaces.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from nodefleet import files
from nodefleet import kinds as k

__all__ = [
    "ADOPTED_KINDS",
    "AdoptError",
    "LiveObject",
    "at",
    "check_objects",
    "read_documents",
]


class AdoptError(ValueError):
    """A source nodefleet cannot adopt: the message names the object (or document), what is wrong, what to do."""


def at(value: Any, *path: str) -> Any:
    """The value at ``path`` inside a live object's mappings, or None where the path ends or a step is not a
    mapping (a live object may hold anything where the model expects a mapping)."""
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value


@dataclass(frozen=True)
class LiveObject:
    """One live object, as the source holds it, and where it came from."""

    manifest: dict[str, Any] = field(compare=False)
    source: str

    @property
    def api_version(self) -> str:
        return str(self.manifest.get("apiVersion", ""))

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]

    @property
    def kind(self) -> str:
        return str(self.manifest.get("kind", ""))

    @property
    def metadata(self) -> Mapping[str, Any]:
        meta = self.manifest.get("metadata")
        return meta if isinstance(meta, Mapping) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def namespace(self) -> str:
        return str(self.metadata.get("namespace") or "")

    @property
    def spec(self) -> Mapping[str, Any]:
        spec = self.manifest.get("spec")
        return spec if isinstance(spec, Mapping) else {}

    @property
    def labels(self) -> Mapping[str, str]:
        labels = self.metadata.get("labels")
        return labels if isinstance(labels, Mapping) else {}

    @property
    def annotations(self) -> Mapping[str, str]:
        notes = self.metadata.get("annotations")
        return notes if isinstance(notes, Mapping) else {}

    def declared_annotations(self, typed: Collection[str]) -> dict[str, str]:
        """The annotations a stack-file entry carries as they are: all but those a typed key of the entry
        declares (``typed``) and nodefleet's own ``nodefleet.io/`` bookkeeping."""
        return {
            str(key): str(value)
            for key, value in self.annotations.items()
            if key not in typed and not str(key).startswith("nodefleet.io/")
        }

    @property
    def identity(self) -> tuple[str, str, str, str]:
        return (self.group, self.kind, self.namespace, self.name)

    def shown(self) -> str:
        """``HostedCluster clusters/prod (f.yaml, document 2)``: what messages call it."""
        where = f"{self.namespace}/{self.name}" if self.namespace else self.name
        group = self.group or "core"
        kind = self.kind if self.kind not in _AMBIGUOUS else f"{self.kind}.{group}"
        return f"{kind} {where} ({self.source})"


#: Kinds whose name two API groups share: messages spell their group.
_AMBIGUOUS = frozenset({"NodePool"})

#: The objects an import turns into stack-file entries, by (group, kind): the one API version nodefleet models.
ADOPTED_KINDS: dict[tuple[str, str], str] = {
    (kind.api_version.rpartition("/")[0], kind.kind): kind.api_version
    for kind in (
        k.HOSTED_CLUSTER,
        k.HYPERSHIFT_NODE_POOL,
        k.OPENSHIFT_EC2_NODE_CLASS,
        k.KARPENTER_NODE_POOL,
        k.EC2_NODE_CLASS,
        k.MACHINE_SET,
        k.MACHINE_CONFIG_POOL,
        k.MACHINE_CONFIGURATION,
    )
} | {
    ("machineconfiguration.openshift.io", "MachineConfig"): "machineconfiguration.openshift.io/v1",
    ("config.openshift.io", "ClusterVersion"): "config.openshift.io/v1",
    ("config.openshift.io", "Infrastructure"): "config.openshift.io/v1",
}


def read_documents(text: str, source: str) -> list[LiveObject]:
    """Every Kubernetes object of a YAML stream, `List` objects unpacked; :class:`AdoptError` for a document
    that is not one (the stream's syntax errors are :class:`nodefleet.files.FileProblem`)."""
    out: list[LiveObject] = []
    for i, doc in enumerate(files.load_yaml_documents(text, source), start=1):
        where = f"{source}, document {i}"
        if isinstance(doc, Mapping) and doc.get("kind") == "List" and isinstance(doc.get("items"), list):
            for j, item in enumerate(doc["items"]):
                out.append(_object(item, f"{where}, items[{j}]"))
        else:
            out.append(_object(doc, where))
    return out


def _object(doc: Any, where: str) -> LiveObject:
    if not isinstance(doc, Mapping):
        raise AdoptError(
            f"{where}: not a Kubernetes object (a YAML {type(doc).__name__}, not a mapping with apiVersion, kind "
            "and metadata.name); give only Kubernetes manifests: `oc get ... -o yaml` output, `hypershift create "
            "cluster aws --render` output, or a GitOps repository's manifests"
        )
    missing = [key for key in ("apiVersion", "kind") if not isinstance(doc.get(key), str) or not doc.get(key)]
    meta = doc.get("metadata")
    if not isinstance(meta, Mapping) or not isinstance(meta.get("name"), str) or not meta.get("name"):
        missing.append("metadata.name")
    if missing:
        raise AdoptError(
            f"{where}: not a Kubernetes object (no {', '.join(missing)}); give only Kubernetes manifests: "
            "`oc get ... -o yaml` output, `hypershift create cluster aws --render` output, or a GitOps "
            "repository's manifests"
        )
    return LiveObject(dict(doc), where)


def check_objects(objects: Sequence[LiveObject]) -> list[LiveObject]:
    """The objects, each identity once, after every refusal that needs no model: :class:`AdoptError` naming
    the first object that cannot be adopted."""
    unique: dict[tuple[str, str, str, str], LiveObject] = {}
    for obj in objects:
        seen = unique.get(obj.identity)
        if seen is not None:
            if _declared(seen.manifest) != _declared(obj.manifest):
                raise AdoptError(
                    f"{obj.shown()}: also in {seen.source}, with different content; give each object once "
                    "(drop the older dump)"
                )
            continue
        unique[obj.identity] = obj
    kept = list(unique.values())
    for obj in kept:
        _refuse(obj)
    _refuse_duplicate_names(kept)
    return kept


def _declared(manifest: Mapping[str, Any]) -> Any:
    meta = manifest.get("metadata") or {}
    return (
        manifest.get("spec"),
        meta.get("labels") if isinstance(meta, Mapping) else None,
        meta.get("annotations") if isinstance(meta, Mapping) else None,
    )


def _refuse(obj: LiveObject) -> None:
    if obj.metadata.get("deletionTimestamp"):
        raise AdoptError(
            f"{obj.shown()}: is being deleted (metadata.deletionTimestamp {obj.metadata['deletionTimestamp']}); "
            "an object on its way out cannot be adopted: wait until it is gone or its deletion is cancelled, "
            "then import again without it"
        )
    key = (obj.group, obj.kind)
    modelled = ADOPTED_KINDS.get(key)
    if modelled is None:
        return  # not a kind nodefleet declares (a NodeClaim, a Machine, a Deployment): reported as left alone
    if obj.api_version != modelled:
        raise _unmodelled(obj, modelled)
    platform = obj.spec.get("platform")
    if key in (
        ("hypershift.openshift.io", "HostedCluster"),
        ("hypershift.openshift.io", "NodePool"),
    ):
        kind = platform.get("type") if isinstance(platform, Mapping) else None
        if kind != "AWS":
            raise AdoptError(
                f"{obj.shown()}: a {obj.kind} of platform {kind or '(none)'}; nodefleet declares AWS hosted "
                f"clusters and their AWS NodePools only (KubeVirt, Agent and other platforms are not modelled): "
                "leave it out of the sources"
            )
    if key == ("hypershift.openshift.io", "HostedCluster") and obj.spec.get("pausedUntil"):
        raise AdoptError(
            f"{obj.shown()}: is paused (spec.pausedUntil: {obj.spec['pausedUntil']}): HyperShift reconciles "
            "nothing of it, so what runs may not be what it declares; unpause it (remove spec.pausedUntil), let it "
            "reconcile, then import it"
        )


def _unmodelled(obj: LiveObject, modelled: str) -> AdoptError:
    plural = {"NodePool": "nodepools", "HostedCluster": "hostedclusters"}.get(
        obj.kind, obj.kind.lower() + "s"
    )
    group = modelled.rpartition("/")[0]
    version = modelled.rpartition("/")[2]
    return AdoptError(
        f"{obj.shown()}: apiVersion {obj.api_version} is not one nodefleet models for {obj.kind} (it models "
        f"{modelled}); export the object at that version (`oc get {plural}.{version}.{group} {obj.name} -o yaml`), "
        "which the API server converts to"
    )


#: Namespaced kinds whose name becomes a name in the stack: a hosted cluster's name is its stack name.
_NAMED_IN_STACK = frozenset({("hypershift.openshift.io", "HostedCluster")})


def _refuse_duplicate_names(objects: Iterable[LiveObject]) -> None:
    first: dict[tuple[str, str, str], LiveObject] = {}
    for obj in objects:
        if (obj.group, obj.kind) not in _NAMED_IN_STACK:
            continue
        seen = first.setdefault((obj.group, obj.kind, obj.name), obj)
        if seen is not obj:
            raise AdoptError(
                f"{obj.shown()}: {seen.shown()} has the same name in namespace {seen.namespace}; a cluster's name "
                "is its name in the stack and in its render folders, so the two cannot be one stack's clusters: "
                "import them into two stacks (each with its own --from-file)"
            )
