"""Apply mode on a test API server through the Kubernetes Python client, doing what the Kubernetes provider
(pulumi-kubernetes 4.x, server-side apply on, its default) does with each object the program declares.

The objects are the program's own registrations under the mock runtime (:func:`mockruntime.run.run_program`)
with the stack switched to apply mode: exactly what ``pulumi up`` hands the provider, resource type, inputs,
``ignore_changes`` and provider (its ``kubeconfig``) included. :class:`Stack` keeps, like Pulumi's state, each
resource's last inputs, live object and field manager, and runs ``up`` and ``destroy`` as the provider does
(provider/pkg/await/await.go and provider/pkg/ssa of pulumi/pulumi-kubernetes):

- a new ordinary resource (``CustomResource``, ``Namespace``, ``Secret``) is *created* (POST, field manager
  ``pulumi-kubernetes``, an ``Update`` entry in managedFields); the provider upserts only with
  ``upsertExistingObjects``, which nodefleet does not set, so an existing object is an error;
- a ``...Patch`` resource is a server-side apply with a field manager of its own (``pulumi-kubernetes-<random>``),
  never forced; deleting it relinquishes its fields (an apply of the bare identity), the object stays;
- an update first moves the fields of the create's ``pulumi-kubernetes`` entry to the resource's
  server-side-apply manager (``fixCSAFieldManagers``), then drops each ``ignore_changes`` path another manager
  owns and this one does not, or puts the live value there (``handleSSAIgnoreFields``), then applies, not
  forced;
- a resource whose inputs are unchanged and whose dry-run apply changes nothing is left alone (no request);
- a deletion is a foreground delete, waited for until the object is gone.
"""

from __future__ import annotations

import copy
import json
import secrets
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mockruntime.rendering import kubernetes_objects
from mockruntime.run import MockRun
from tests.crd_corpus import _as_sent

#: The field manager of the provider's creates (client-side, before the first server-side update).
CREATE_MANAGER = "pulumi-kubernetes"
#: What a live object carries that the provider does not compare: identity and bookkeeping.
BOOKKEEPING = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp")


@dataclass(frozen=True)
class Declared:
    """One Kubernetes resource the program registers."""

    urn: str
    type: str
    manifest: dict[str, Any]
    kubeconfig: str
    ignore_changes: tuple[str, ...] = ()

    @property
    def patch(self) -> bool:
        return self.type.endswith("Patch")

    @property
    def key(self) -> tuple[str, str, str, str]:
        meta = self.manifest["metadata"]
        return (self.manifest["apiVersion"], self.manifest["kind"], meta.get("namespace", ""), meta["name"])


def declared(run: MockRun) -> list[Declared]:
    """The Kubernetes resources of ``run`` in registration order (the order Pulumi creates them in, each
    after what it depends on), as the provider receives them (:func:`mockruntime.rendering.kubernetes_objects`),
    with the kubeconfig of their provider."""
    out = []
    for _, _, manifest, reg in kubernetes_objects(run, ""):
        provider = run.provider_of(reg)
        kubeconfig = str(provider.inputs.get("kubeconfig", "")) if provider else ""
        # Pulumi hands numbers over as float64; the provider (Go) writes a whole one as an integer.
        out.append(Declared(reg.urn, reg.type, _as_sent(manifest), kubeconfig, tuple(reg.ignore_changes)))
    return out


@dataclass
class Resource:
    """Pulumi's state of one resource."""

    declared: Declared
    live: dict[str, Any]
    #: The server-side-apply field manager (``pulumi-kubernetes-<random>``), fixed at the resource's creation.
    manager: str


@dataclass
class Step:
    op: str  # create, update, same, delete
    urn: str
    resource_version: str = ""


def _random_manager() -> str:
    return f"pulumi-kubernetes-{secrets.token_hex(4)}"


def _fields_union(a: Mapping[str, Any], b: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(a))
    for key, value in b.items():
        out[key] = _fields_union(out.get(key) or {}, value) if isinstance(value, Mapping) else value
    return out


def _has_field(fields: Mapping[str, Any], path: list[str]) -> bool:
    node: Any = fields
    for part in path:
        if not isinstance(node, Mapping) or f"f:{part}" not in node:
            return False
        node = node[f"f:{part}"]
    return True


def _get(obj: Any, path: list[str]) -> tuple[bool, Any]:
    for part in path:
        if not isinstance(obj, Mapping) or part not in obj:
            return False, None
        obj = obj[part]
    return True, obj


def _set(obj: dict[str, Any], path: list[str], value: Any) -> None:
    for part in path[:-1]:
        obj = obj.setdefault(part, {})
    obj[path[-1]] = copy.deepcopy(value)


def _remove(obj: dict[str, Any], path: list[str]) -> None:
    for part in path[:-1]:
        if not isinstance(obj.get(part), dict):
            return
        obj = obj[part]
    obj.pop(path[-1], None)


def comparable(obj: Mapping[str, Any]) -> dict[str, Any]:
    """``obj`` without what the API server keeps for itself (managedFields, versions, uid, timestamps)."""
    out = copy.deepcopy(dict(obj))
    meta = out.get("metadata") or {}
    for key in BOOKKEEPING:
        meta.pop(key, None)
    return out


class Stack:
    """One stack's Pulumi state and its ``up``/``destroy`` against test clusters, by kubeconfig path."""

    def __init__(self, name: str, clients: Mapping[str, Any]) -> None:
        self.name = name
        #: kubeconfig path -> kubernetes.dynamic.DynamicClient
        self.clients = clients
        self.state: dict[str, Resource] = {}

    def _api(self, d: Declared) -> Any:
        client = self.clients[d.kubeconfig]
        return client, client.resources.get(api_version=d.manifest["apiVersion"], kind=d.manifest["kind"])

    def _read(self, d: Declared) -> dict[str, Any]:
        _, api = self._api(d)
        meta = d.manifest["metadata"]
        return dict(api.get(name=meta["name"], namespace=meta.get("namespace")).to_dict())

    def _apply(
        self, d: Declared, body: Mapping[str, Any], manager: str, dry_run: bool = False
    ) -> dict[str, Any]:
        client, api = self._api(d)
        kwargs: dict[str, Any] = {"field_manager": manager, "force_conflicts": False}
        if dry_run:
            kwargs["dry_run"] = "All"
        meta = body["metadata"]
        return dict(
            client.server_side_apply(
                api, body=dict(body), name=meta["name"], namespace=meta.get("namespace"), **kwargs
            ).to_dict()
        )

    def up(self, objects: Iterable[Declared]) -> list[Step]:
        """``pulumi up`` with ``objects`` declared: creates, updates, unchanged resources, then deletions."""
        steps: list[Step] = []
        wanted = list(objects)
        for d in wanted:
            if d.urn not in self.state:
                steps.append(self._create(d))
            else:
                steps.append(self._update(d))
        gone = [urn for urn in self.state if urn not in {d.urn for d in wanted}]
        for urn in reversed(gone):
            steps.append(self._delete(urn))
        return steps

    def destroy(self) -> list[Step]:
        return [self._delete(urn) for urn in reversed(list(self.state))]

    def _create(self, d: Declared) -> Step:
        manager = _random_manager()
        if d.patch:
            live = self._apply(d, d.manifest, manager)
        else:
            client, api = self._api(d)
            meta = d.manifest["metadata"]
            live = dict(
                client.create(
                    api, body=d.manifest, namespace=meta.get("namespace"), field_manager=CREATE_MANAGER
                ).to_dict()
            )
        self.state[d.urn] = Resource(d, live, manager)
        return Step("create", d.urn, live["metadata"]["resourceVersion"])

    def _update(self, d: Declared) -> Step:
        res = self.state[d.urn]
        live = self._read(d)
        if d.manifest == res.declared.manifest:
            preview = self._apply(d, self._inputs(d, res, live), res.manager, dry_run=True)
            if comparable(preview) == comparable(live):
                res.live = live
                return Step("same", d.urn, live["metadata"]["resourceVersion"])
        if not d.patch:
            live = self._take_over_create_fields(d, res, live)
        res.live = self._apply(d, self._inputs(d, res, live), res.manager)
        res.declared = d
        return Step("update", d.urn, res.live["metadata"]["resourceVersion"])

    def _inputs(self, d: Declared, res: Resource, live: Mapping[str, Any]) -> dict[str, Any]:
        """The body the provider applies: ``ignore_changes`` paths dropped where another manager owns them
        and this one does not, else given their live value."""
        body = copy.deepcopy(d.manifest)
        ours: dict[str, Any] = {}
        theirs: dict[str, Any] = {}
        for entry in live["metadata"].get("managedFields") or []:
            fields = entry.get("fieldsV1") or {}
            if entry["manager"] == res.manager:
                ours = _fields_union(ours, fields)
            else:
                theirs = _fields_union(theirs, fields)
        for ignored in d.ignore_changes:
            path = ignored.split(".")
            if _has_field(theirs, path) and not _has_field(ours, path):
                _remove(body, path)
                continue
            found, value = _get(live, path)
            if found:
                _set(body, path, value)
        return body

    def _take_over_create_fields(self, d: Declared, res: Resource, live: dict[str, Any]) -> dict[str, Any]:
        """fixCSAFieldManagers: the fields of the create's ``pulumi-kubernetes`` Update entry become the
        resource's server-side-apply manager's (an Apply entry), by a JSON patch of managedFields."""
        entries = live["metadata"].get("managedFields") or []
        taken = [e for e in entries if e["manager"] == CREATE_MANAGER and e["operation"] == "Update"]
        if not taken:
            return live
        kept = [e for e in entries if e not in taken and e["manager"] != res.manager]
        merged: dict[str, Any] = {}
        for e in taken + [e for e in entries if e["manager"] == res.manager]:
            merged = _fields_union(merged, e.get("fieldsV1") or {})
        mine = {
            "manager": res.manager,
            "operation": "Apply",
            "apiVersion": d.manifest["apiVersion"],
            "fieldsType": "FieldsV1",
            "fieldsV1": merged,
        }
        client, api = self._api(d)
        meta = d.manifest["metadata"]
        patch = [{"op": "replace", "path": "/metadata/managedFields", "value": [*kept, mine]}]
        return dict(
            client.patch(
                api,
                body=patch,
                name=meta["name"],
                namespace=meta.get("namespace"),
                content_type="application/json-patch+json",
            ).to_dict()
        )

    def _delete(self, urn: str, timeout: float = 60) -> Step:
        res = self.state.pop(urn)
        d = res.declared
        client, api = self._api(d)
        meta = d.manifest["metadata"]
        if d.patch:  # ssa.Relinquish: the object stays, this manager's fields go
            identity = {
                "apiVersion": d.manifest["apiVersion"],
                "kind": d.manifest["kind"],
                "metadata": {"name": meta["name"]},
            }
            if meta.get("namespace"):
                identity["metadata"]["namespace"] = meta["namespace"]
            live = self._apply(d, identity, res.manager)
            return Step("delete", urn, live["metadata"]["resourceVersion"])
        from kubernetes.dynamic.exceptions import NotFoundError

        try:
            client.delete(
                api,
                name=meta["name"],
                namespace=meta.get("namespace"),
                body={"propagationPolicy": "Foreground"},
            )
        except NotFoundError:
            return Step("delete", urn)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                api.get(name=meta["name"], namespace=meta.get("namespace"))
            except NotFoundError:
                return Step("delete", urn)
            time.sleep(0.1)
        raise TimeoutError(f"{urn} still exists {timeout:.0f}s after its deletion")


def describe(obj: Mapping[str, Any]) -> str:
    return json.dumps(comparable(obj), sort_keys=True)[:400]
