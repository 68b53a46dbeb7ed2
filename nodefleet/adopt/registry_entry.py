"""The registry entry ``import`` writes for a management cluster the fleet's registry lacks.

Adopted hosted clusters name their management cluster (``--management-cluster``); a name the registry
(``nodefleet-fleet.yaml`` beside the stack files) does not declare would make every later ``check`` refuse
the stack. So the import declares it, from what the sources hold and the user gave: the name, the region its
hosted clusters run in (every hosted cluster of a management cluster is in its region), the kubeconfig
*path* the user read it through (never its content, never a Secret) and, read live, the release lines its
HyperShift operator runs. Everything else (an Argo CD cluster name, a Flux Secret) keeps the registry's
defaults and is the user's to add.

The file is edited as text through a round-trip YAML library (ruamel.yaml): the other entries, their order,
comments and layout are kept; only the new entry is appended (or, when the user forces it, the keys import
knows are updated in the entry of that name, and what the user added there, an Argo CD cluster or a Flux
Secret, stays). Whether the result breaks the registry's rules is judged by the caller, with the registry's
own model, before anything is written.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from nodefleet.adopt.documents import AdoptError

__all__ = ["REGISTRY_HEADER", "management_entry", "registry_text"]

#: The first lines of a registry ``import`` creates.
REGISTRY_HEADER = (
    "# The fleet's management clusters (docs/configuration.md, 'Management clusters'), declared once: stacks name\n"
    "# them (managementCluster: <name>). Written by `nodefleet import`; add argocdCluster, fluxKubeConfig and\n"
    "# hypershift.supportedVersions as your fleet reaches them.\n"
)


def management_entry(
    name: str,
    clusters: Iterable[Mapping[str, Any]],
    kubeconfig: str | None,
    supported_versions: Sequence[str] = (),
) -> dict[str, Any]:
    """The entry of management cluster ``name`` for the adopted hosted ``clusters`` (stack-file entries), reached
    through ``kubeconfig`` (a path as the user gave it, or None when the objects came from files), whose
    HyperShift operator runs the release lines ``supported_versions`` (its ``supported-versions`` ConfigMap, when
    the import read it).

    Refused (:class:`AdoptError`) when the hosted clusters run in more than one region: a management cluster has
    one, and the registry refuses a hosted cluster outside it."""
    regions: dict[str, list[str]] = {}
    for cluster in clusters:
        if cluster.get("kind") == "hosted" and cluster.get("region"):
            regions.setdefault(str(cluster["region"]), []).append(str(cluster.get("name")))
    if not regions:
        raise AdoptError(
            f"--management-cluster {name}: no adopted hosted cluster says which region it runs in; the registry "
            "entry needs one: declare it in nodefleet-fleet.yaml (name, region) and import again"
        )
    if len(regions) > 1:
        shown = "; ".join(f"{r}: {', '.join(sorted(n))}" for r, n in sorted(regions.items()))
        raise AdoptError(
            f"--management-cluster {name}: the hosted clusters run in {len(regions)} regions ({shown}), and a "
            "management cluster has one; import each region's clusters with the management cluster they live on"
        )
    entry: dict[str, Any] = {"name": name, "region": next(iter(regions))}
    if kubeconfig is not None:
        entry["kubeconfig"] = kubeconfig
    lines = [v for v in supported_versions if re.fullmatch(r"[0-9]+\.[0-9]+", v)]
    if lines:
        entry["hypershift"] = {"supportedVersions": list(dict.fromkeys(lines))}
    return entry


def _yaml() -> Any:
    from ruamel.yaml import YAML

    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a line the user wrote
    y.indent(mapping=2, sequence=4, offset=2)
    return y


def registry_text(existing: str | None, entry: Mapping[str, Any], *, replace: bool = False) -> str:
    """The registry's text with ``entry`` in it: a new file (``existing`` None) holding only it, or ``existing``
    with it appended to ``managementClusters`` (its comments, order and layout kept). An entry of the same name
    takes ``entry``'s keys when ``replace`` (``hypershift`` key by key; its other keys stay), else
    :class:`AdoptError`. ``existing`` is assumed readable YAML (the caller has
    loaded the registry); a top level without ``managementClusters`` gets it."""
    y = _yaml()
    if existing is None or not existing.strip():
        document: Any = {"managementClusters": [dict(entry)]}
        out = io.StringIO()
        y.dump(document, out)
        return REGISTRY_HEADER + out.getvalue()
    indent = re.search(r"^( +)-", existing, re.M)
    if indent is not None:  # keep the file's own list layout (`- name` at column 0 or indented)
        offset = len(indent.group(1))
        y.indent(mapping=2, sequence=offset + 2, offset=offset)
    elif re.search(r"^-", existing, re.M):
        y.indent(mapping=2, sequence=2, offset=0)
    document = y.load(existing)
    if not isinstance(document, dict):
        raise AdoptError("the registry's top level is not a mapping; fix nodefleet-fleet.yaml first")
    clusters = document.get("managementClusters")
    if clusters is None:
        document["managementClusters"] = clusters = []
    if not isinstance(clusters, list):
        raise AdoptError("managementClusters in nodefleet-fleet.yaml is not a list; fix it first")
    names = [c.get("name") if isinstance(c, Mapping) else None for c in clusters]
    if entry["name"] in names:
        if not replace:
            raise AdoptError(
                f"managementClusters: '{entry['name']}' is declared already; import leaves it as it is (pass "
                "--force to replace it)"
            )
        current = clusters[names.index(entry["name"])]
        for key, value in entry.items():
            kept = current.get(key)
            if isinstance(kept, dict) and isinstance(value, Mapping):
                kept.update(value)
            else:
                current[key] = value
    else:
        clusters.append(dict(entry))
    out = io.StringIO()
    y.dump(document, out)
    return out.getvalue()
