"""``output.adopt``: the live objects an apply-mode ``pulumi up`` takes over instead of creating.

A stack written by ``nodefleet import`` declares objects that already run. Without this list the first apply-mode
``up`` would create each one (the Kubernetes provider's server-side apply over the live object: the engine
counts a create, and the state records an object it "made"); with it, the program gives each listed object
Pulumi's ``import`` resource option, so the engine reads the live object into its state (an ``import`` step) and
compares it with what the stack declares before anything is written.

The list is keyed by render target, the provider an object goes through (a cluster's name, and for a hosted
cluster also ``<name>-hosted`` for the objects inside it), because two hosted clusters each have their own
Karpenter ``NodePool`` of one name. An entry is ``Kind.group namespace/name`` (``Kind name`` for the core group,
no namespace for a cluster-scoped kind), as ``kubectl get`` spells a kind across groups.

Everything here is pure: the program (:mod:`components.fleet`) and ``import`` (:mod:`nodefleet.adopt.importer`)
hand it the objects the stack declares as plain tuples.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence

from nodefleet import kinds as k

__all__ = [
    "PATCHED",
    "AdoptError",
    "ObjectId",
    "adopt_list",
    "entry_problem",
    "entry_text",
    "import_ids",
    "parse_entry",
]

#: One object the stack declares: (render target, API group, kind, namespace, name); group and namespace empty
#: for the core group and cluster-scoped kinds.
ObjectId = tuple[str, str, str, str, str]

#: (group, kind) of the objects nodefleet declares in apply mode as server-side-apply patches of an object that
#: exists already: the Namespace hosted clusters share, the ``MachineConfiguration`` singleton. A stack never
#: creates or deletes them, so there is nothing to adopt: their first ``up`` patches the live object (the engine
#: counts a ``create`` of the patch resource; the object keeps its uid). Nor could the engine import them: the
#: Kubernetes provider reads a patch resource's kind (``NamespacePatch``), which no API server serves, and the
#: engine stops with "resource 'clusters' does not exist" (measured, docs/operations.md).
PATCHED = frozenset(
    {
        ("", "Namespace"),
        (k.MACHINE_CONFIGURATION.api_version.rpartition("/")[0], k.MACHINE_CONFIGURATION.kind),
    }
)

_ENTRY = re.compile(
    r"^(?P<kind>[A-Z][A-Za-z0-9]*)(?:\.(?P<group>[a-z0-9]([a-z0-9.-]*[a-z0-9])?))? "
    r"(?:(?P<namespace>[a-z0-9]([a-z0-9-]*[a-z0-9])?)/)?(?P<name>[a-z0-9]([a-z0-9.-]*[a-z0-9])?)$"
)

_FORM = (
    "write it as 'Kind.group namespace/name' (e.g. 'NodePool.hypershift.openshift.io clusters/prod-workers'), "
    "'Kind.group name' for a cluster-scoped kind, 'Kind name' for the core group (e.g. 'Namespace clusters')"
)


class AdoptError(ValueError):
    """An ``output.adopt`` entry names no object the stack declares."""


def parse_entry(text: str) -> tuple[str, str, str, str]:
    """(group, kind, namespace, name) of an entry; ValueError with the form to use."""
    match = _ENTRY.match(text)
    if not match:
        raise ValueError(f"'{text}' is not an object reference; {_FORM}")
    return (match["group"] or "", match["kind"], match["namespace"] or "", match["name"])


def entry_problem(text: str) -> str | None:
    try:
        parse_entry(text)
    except ValueError as e:
        return str(e)
    return None


def entry_text(group: str, kind: str, namespace: str, name: str) -> str:
    where = f"{namespace}/{name}" if namespace else name
    return f"{kind}.{group} {where}" if group else f"{kind} {where}"


def import_ids(
    adopt: Mapping[str, Sequence[str]], declared: Iterable[ObjectId], where: str
) -> dict[ObjectId, str]:
    """The Kubernetes provider's import ID (``namespace/name``, or ``name``) of every object ``adopt`` lists, by
    the object. An entry that names no object the stack declares through that target is an :class:`AdoptError`:
    an import of an object the program never registers would silently do nothing, and one the stack no longer
    declares is a stale list. ``where`` is the path to ``output.adopt`` in messages."""
    objects = set(declared)
    ids: dict[ObjectId, str] = {}
    for target, entries in adopt.items():
        here = sorted(o for o in objects if o[0] == target and (o[1], o[2]) not in PATCHED)
        for i, text in enumerate(entries):
            group, kind, namespace, name = parse_entry(text)
            key = (target, group, kind, namespace, name)
            if (group, kind) in PATCHED:
                raise AdoptError(
                    f"{where}.{target}[{i}]: '{text}': in apply mode nodefleet patches the existing {kind} and never "
                    "creates or deletes it, so there is nothing to adopt (the Kubernetes provider cannot import a "
                    "patch); remove the entry"
                )
            if key not in objects:
                names = ", ".join(f"'{entry_text(*o[1:])}'" for o in here) or "none"
                raise AdoptError(
                    f"{where}.{target}[{i}]: '{text}' is no object this stack declares through {target} "
                    f"(it declares: {names}); correct the entry, or remove it"
                )
            ids[key] = f"{namespace}/{name}" if namespace else name
    return ids


def adopt_list(
    declared: Iterable[ObjectId], live: Iterable[tuple[str, str, str, str]]
) -> dict[str, list[str]]:
    """What ``import`` writes into ``output.adopt``: every declared object that is live, by target, in the order
    the stack declares them, except the :data:`PATCHED` ones. ``live``: (group, kind, namespace, name) of the
    objects read."""
    running = set(live)
    out: dict[str, list[str]] = {}
    for target, group, kind, namespace, name in declared:
        if (group, kind, namespace, name) in running and (group, kind) not in PATCHED:
            text = entry_text(group, kind, namespace, name)
            if text not in out.setdefault(target, []):
                out[target].append(text)
    return {target: entries for target, entries in out.items() if entries}
