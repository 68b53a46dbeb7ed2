"""Fields a controller owns, carried into the GitOps tree so Argo CD and Flux leave them alone too.

Where nodefleet leaves a field to a controller it tells Pulumi with ``ignore_changes`` (DESIGN.md 1.1): an
MCO-managed MachineSet's AMI (the boot image controller patches it back, and after 3 identical patches sets
``BootImageUpdateDegraded=True``, which blocks minor upgrades), a legacy HyperShift EC2NodeClass's
``userData`` and ``amiSelectorTerms`` (HyperShift rewrites them with the rotating token). A rendered
manifest still carries nodefleet's initial value, and a GitOps tool would apply it on every sync. So every
such object is rendered with :data:`ANNOTATION_CONTROLLER_OWNED`, the RFC 6901 JSON pointers of its
``ignore_changes`` paths, and every render folder gets :data:`ARGOCD_IGNORE_DIFFERENCES_FILE`, Argo CD's
``ignoreDifferences`` for the objects in it (docs/gitops.md, "Fields controllers own"), and the folder's rollout
wave as the label :data:`nodefleet.stackfile.waves.WAVE_LABEL` (docs/fleet-waves.md).

The pointers are derived from the paths Pulumi is given, with Pulumi's own property-path grammar
(pulumi/pulumi ``sdk/go/common/resource/properties_path.go``, ``ParsePropertyPath``): one declaration, read
by Pulumi, Argo CD and Flux alike.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import yaml

from nodefleet.stackfile.waves import DEFAULT_WAVE, WAVE_LABEL, label_value

__all__ = [
    "ANNOTATION_ARGOCD_SYNC_OPTIONS",
    "ANNOTATION_CONTROLLER_OWNED",
    "ANNOTATION_FLUX_PRUNE",
    "ARGOCD_IGNORE_DIFFERENCES_FILE",
    "ARGOCD_NO_DELETION",
    "DELETION_PROTECTED_KINDS",
    "FLUX_PRUNE_DISABLED",
    "ControllerOwnedError",
    "argocd_ignore_difference",
    "argocd_ignore_differences_file",
    "controller_owned",
    "deletion_protected",
    "json_pointer",
    "parse_property_path",
    "with_controller_owned",
    "with_deletion_protection",
]

#: On every rendered object with fields a controller owns: their JSON pointers, comma-separated, in the order
#: the program declares them. Flux's ``spec.ignore`` rules select objects by it; readers of the tree see it.
ANNOTATION_CONTROLLER_OWNED = "nodefleet.io/controller-owned"

#: In every render folder, beside ``0-crd/`` and ``1-manifest/``: Argo CD's ``ignoreDifferences`` for the
#: folder's objects, read by the ApplicationSet's git files generator (examples/argocd). No ``.yaml``,
#: ``.yml``, ``.json`` or ``.jsonnet`` extension, so neither Argo CD's directory source (argo-cd
#: ``reposerver/repository/repository.go``, ``manifestFile``) nor Flux's generated kustomization applies it.
ARGOCD_IGNORE_DIFFERENCES_FILE = "argocd-ignore-differences"

_FILE_HEADER = (
    "# Fields of the objects in this folder that a controller owns: nodefleet's Pulumi program leaves them\n"
    "# alone after creation (ignore_changes), and Argo CD must too (ignoreDifferences with the sync option\n"
    "# RespectIgnoreDifferences=true). labels: the folder's rollout wave (the stack's `wave`), stack and side,\n"
    "# put on its Application for progressive syncs; application and destination: its Application's name,\n"
    "# the Argo CD cluster the folder is applied to and the Namespace the Application creates (Argo CD applies\n"
    "# no Namespace file). Written by `nodefleet render`; read by the ApplicationSet in examples/argocd and the\n"
    "# one `nodefleet gitops` writes. Not a manifest.\n"
)


#: On an object nodefleet renders: Argo CD never deletes it, neither when the Application that synced it is
#: deleted ("Delete=false") nor when it leaves the tree ("Prune=false"), Argo CD's "Sync Options" read from this
#: annotation on the object (argo-cd v3.6 docs/user-guide/sync-options.md, "No Resource Deletion", "No Prune
#: Resources"; an annotation on the object overrides the Application's own options).
ANNOTATION_ARGOCD_SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
ARGOCD_NO_DELETION = "Delete=false,Prune=false"
#: The same for Flux: kustomize-controller's garbage collection (pruning, and a Kustomization deleted with
#: ``prune: true`` or ``deletionPolicy: Delete``) skips an object annotated ``kustomize.toolkit.fluxcd.io/prune:
#: disabled``.
ANNOTATION_FLUX_PRUNE = "kustomize.toolkit.fluxcd.io/prune"
FLUX_PRUNE_DISABLED = "disabled"

#: (API group, kind) of the objects whose deletion destroys a cluster or its capacity: a HostedCluster (its
#: control plane, and with ``cleanup-cloud-resources`` its AWS resources), a HyperShift NodePool, a MachineSet,
#: a Karpenter NodePool (each drains and terminates its nodes), a node class (its nodes lose their class).
#: In render mode each carries both annotations above, so that no wiring change, renamed or removed stack
#: deletes one; deleting a cluster is an explicit step (docs/gitops.md, "Deleting a cluster").
DELETION_PROTECTED_KINDS = frozenset(
    {
        ("hypershift.openshift.io", "HostedCluster"),
        ("hypershift.openshift.io", "NodePool"),
        ("machine.openshift.io", "MachineSet"),
        ("karpenter.sh", "NodePool"),
        ("karpenter.hypershift.openshift.io", "OpenshiftEC2NodeClass"),
        ("karpenter.k8s.aws", "EC2NodeClass"),
    }
)


def deletion_protected(manifest: Mapping[str, Any]) -> bool:
    """Whether ``manifest`` is of a kind :data:`DELETION_PROTECTED_KINDS` lists."""
    group = str(manifest.get("apiVersion", "")).rpartition("/")[0]
    return (group, str(manifest.get("kind", ""))) in DELETION_PROTECTED_KINDS


def _copied(value: Any) -> Any:
    """A deep copy of a manifest's JSON values (mappings, lists, scalars): ``copy.deepcopy`` without its memo,
    several times faster on the thousands of manifests of a fleet."""
    if isinstance(value, Mapping):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_copied(v) for v in value] if isinstance(value, list) else tuple(_copied(v) for v in value)
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return copy.deepcopy(value)


def with_deletion_protection(manifest: Mapping[str, Any], *, copy_values: bool = True) -> dict[str, Any]:
    """``manifest`` with the annotations that keep Argo CD and Flux from deleting or pruning it, when it is of a
    kind whose deletion destroys capacity (:data:`DELETION_PROTECTED_KINDS`); other manifests unchanged.

    ``copy_values=False``: only the top level, ``metadata`` and its annotations are new, every other value is
    ``manifest``'s own, for a caller that has just rendered ``manifest`` and changes none of its values (a
    fleet's object plan: 10,000 stacks' manifests, where the deep copy took a tenth of the time)."""
    out: dict[str, Any] = _copied(manifest) if copy_values else dict(manifest)
    if not deletion_protected(out):
        return out
    meta = out["metadata"] = dict(out.get("metadata") or {})
    meta["annotations"] = {
        **dict(meta.get("annotations") or {}),
        ANNOTATION_ARGOCD_SYNC_OPTIONS: ARGOCD_NO_DELETION,
        ANNOTATION_FLUX_PRUNE: FLUX_PRUNE_DISABLED,
    }
    return out


class ControllerOwnedError(ValueError):
    """A controller-owned path no GitOps tool can express (the message says why)."""


def parse_property_path(path: str) -> list[str | int]:
    """A Pulumi property path as its keys (str) and array indices (int); ``"*"`` is a wildcard.

    Follows ``ParsePropertyPath`` exactly: ``a.b``, ``a["b.c"]`` (``\\"`` escapes a quote), ``a[0]``,
    ``a[*]``; any run of characters up to the next ``.`` or ``[`` is a bare name.
    """
    elements: list[str | int] = []
    if path.startswith("."):
        raise ControllerOwnedError(f"property path {path!r}: expected a name or index first")
    rest = path
    while rest:
        if rest[0] == ".":
            rest = rest[1:]
            if not rest:
                raise ControllerOwnedError(f"property path {path!r}: expected a name or index at the end")
        elif rest[0] == "[":
            if len(rest) > 1 and rest[1] == '"':
                key: list[str] = []
                i = 2
                while True:
                    if i >= len(rest):
                        raise ControllerOwnedError(f"property path {path!r}: missing closing quote")
                    if rest[i] == '"':
                        i += 1
                        break
                    if rest[i] == "\\" and i + 1 < len(rest) and rest[i + 1] == '"':
                        key.append('"')
                        i += 2
                    else:
                        key.append(rest[i])
                        i += 1
                if i >= len(rest) or rest[i] != "]":
                    raise ControllerOwnedError(f"property path {path!r}: missing closing bracket")
                elements.append("".join(key))
                rest = rest[i + 1 :]
            else:
                close = rest.find("]")
                if close == -1:
                    raise ControllerOwnedError(f"property path {path!r}: missing closing bracket")
                segment = rest[1:close]
                if segment == "*":
                    elements.append("*")
                else:
                    try:
                        elements.append(int(segment, 10))
                    except ValueError:
                        raise ControllerOwnedError(
                            f"property path {path!r}: invalid array index {segment!r}"
                        ) from None
                rest = rest[close + 1 :]
        else:
            end = min((i for i in (rest.find("."), rest.find("[")) if i != -1), default=len(rest))
            elements.append(rest[:end])
            rest = rest[end:]
    return elements


def json_pointer(path: str) -> str:
    """The RFC 6901 pointer of a Pulumi property path: ``spec.template.spec`` -> ``/spec/template/spec``.

    Refused: wildcards (Flux's ``spec.ignore`` takes JSON pointers only, and one declaration must reach both
    tools) and commas (the annotation's separator).
    """
    parts = parse_property_path(path)
    if not parts:
        raise ControllerOwnedError("an empty property path names no field")
    if "*" in parts:
        raise ControllerOwnedError(
            f"ignore_changes path {path!r} has a wildcard; a JSON pointer (all Flux's ignore rules accept) "
            "names one field: list each field instead"
        )
    pointer = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    if "," in pointer:
        raise ControllerOwnedError(
            f"ignore_changes path {path!r}: a comma cannot be carried in {ANNOTATION_CONTROLLER_OWNED}"
        )
    return pointer


def with_controller_owned(manifest: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """``manifest`` with :data:`ANNOTATION_CONTROLLER_OWNED` listing ``paths`` (Pulumi property paths)."""
    out = copy.deepcopy(dict(manifest))
    if not paths:
        return out
    meta = out.setdefault("metadata", {})
    annotations = dict(meta.get("annotations") or {})
    annotations[ANNOTATION_CONTROLLER_OWNED] = ",".join(json_pointer(p) for p in paths)
    meta["annotations"] = annotations
    return out


def controller_owned(manifest: Mapping[str, Any]) -> tuple[str, ...]:
    """The JSON pointers a rendered object lists as controller-owned (empty when none)."""
    annotations = (manifest.get("metadata") or {}).get("annotations") or {}
    value = annotations.get(ANNOTATION_CONTROLLER_OWNED) or ""
    return tuple(p for p in str(value).split(",") if p)


def argocd_ignore_difference(manifest: Mapping[str, Any], paths: Sequence[str]) -> dict[str, Any]:
    """One Argo CD ``ResourceIgnoreDifferences`` entry: this object, these fields.

    Scoped to the one object (group, kind, name, namespace) so a field is ignored exactly where the program
    ignores it, never on another object of the kind that nodefleet owns in full.
    """
    api_version = str(manifest.get("apiVersion", ""))
    group = api_version.rsplit("/", 1)[0] if "/" in api_version else ""
    meta = manifest.get("metadata") or {}
    entry: dict[str, Any] = {"kind": manifest.get("kind"), "name": meta.get("name")}
    if group:
        entry["group"] = group
    if meta.get("namespace"):
        entry["namespace"] = meta["namespace"]
    entry["jsonPointers"] = [json_pointer(p) for p in paths]
    return entry


def argocd_ignore_differences_file(
    entries: Iterable[Mapping[str, Any]], wave: str = DEFAULT_WAVE, fields: Mapping[str, Any] | None = None
) -> bytes:
    """The folder's :data:`ARGOCD_IGNORE_DIFFERENCES_FILE`: always an ``ignoreDifferences`` list, possibly
    empty, so every folder yields one Argo CD Application, and the folder's ``labels``: the stack's
    :data:`nodefleet.stackfile.waves.WAVE_LABEL`, which the Application carries and progressive syncs select on.

    ``fields`` (:func:`nodefleet.render.wiring.folder_fields`): where the folder goes, its ``application`` name,
    ``destination`` and further ``labels``, for the Application a generator makes of the file."""
    ordered = sorted(
        (dict(e) for e in entries),
        key=lambda e: (e.get("group", ""), e["kind"], e.get("namespace", ""), e["name"]),
    )
    extra = dict(fields or {})
    labels = {**dict(extra.pop("labels", {})), WAVE_LABEL: label_value(wave)}
    body = yaml.safe_dump(
        {**extra, "ignoreDifferences": ordered, "labels": labels},
        sort_keys=True,
        default_flow_style=False,
    )
    return (_FILE_HEADER + body).encode("utf-8")
