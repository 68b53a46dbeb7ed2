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
- a change of a ``replace_on_changes`` path replaces the resource: the old object is deleted first, then the new
  one created (the provider asks for delete-before-replace whenever the object keeps its name, as nodefleet's
  objects always do; its Diff, provider/pkg/provider/provider.go);
- a deletion is a foreground delete, waited for until the object is gone.

It also holds what the apply-mode tests share, on the Python client and on the real engine
(tests/engine/test_apply_engine.py): the stack config switched to apply mode, a test cluster prepared as
OpenShift prepares it, a controller's write, and what the API server is predicted to store.
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
from mockruntime.run import MockRun, run_program, stack_fleet
from nodefleet import kinds as k
from nodefleet.apiserver.schema import _default
from nodefleet.apiserver.store import load_index
from nodefleet.render.objects import load_fleet
from tests.crd_corpus import _as_sent
from tests.testcluster import INSTALLER, PROJECT, ApiServer

#: The field manager of the provider's creates (client-side, before the first server-side update).
CREATE_MANAGER = "pulumi-kubernetes"
#: What a live object carries that the provider does not compare: identity and bookkeeping.
BOOKKEEPING = ("managedFields", "resourceVersion", "generation", "uid", "creationTimestamp")
#: The hosted clusters' Karpenter (what the HyperShift operator installs into AutoNode clusters).
HOSTED_KARPENTER = "hypershift/1.13"
CA_BUNDLE = "-----BEGIN CERTIFICATE-----\nMIIBtest\n-----END CERTIFICATE-----\n"
#: The managers the tests write with when they play a controller.
MCO = "machine-config-operator"
MCO_CONTROLLER = "machine-config-controller"
KARPENTER = "karpenter"
HYPERSHIFT = "hypershift-operator"


@dataclass(frozen=True)
class Declared:
    """One Kubernetes resource the program registers."""

    urn: str
    type: str
    manifest: dict[str, Any]
    kubeconfig: str
    ignore_changes: tuple[str, ...] = ()
    #: Property paths (``metadata.annotations["a/b"]``) whose change replaces the resource.
    replace_on_changes: tuple[str, ...] = ()

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
        out.append(
            Declared(
                reg.urn,
                reg.type,
                _as_sent(manifest),
                kubeconfig,
                tuple(reg.ignore_changes),
                tuple(reg.replace_on_changes),
            )
        )
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
    op: str  # create, update, replace, same, delete
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
        return api_for(self.clients, d)

    def _read(self, d: Declared) -> dict[str, Any]:
        return read_live(self.clients, d)

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
            elif self._replaces(d):
                self._delete(d.urn)
                steps.append(Step("replace", d.urn, self._create(d).resource_version))
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

    def _replaces(self, d: Declared) -> bool:
        old = self.state[d.urn].declared.manifest
        return any(
            _get(old, property_path(path)) != _get(d.manifest, property_path(path))
            for path in d.replace_on_changes
        )

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


def property_path(path: str) -> list[str]:
    """A Pulumi property path (``metadata.annotations["nodefleet.io/provisioning"]``) as its keys."""
    keys: list[str] = []
    rest = path
    while rest:
        if rest.startswith('["'):
            end = rest.index('"]')
            keys.append(rest[2:end])
            rest = rest[end + 2 :].removeprefix(".")
            continue
        head, dot, tail = rest.partition(".")
        bracket = head.find("[")
        if bracket > 0:
            keys.append(head[:bracket])
            rest = rest[bracket:]
            continue
        keys.append(head)
        rest = tail if dot else ""
    return keys


def api_for(clients: Mapping[str, Any], d: Declared) -> tuple[Any, Any]:
    """(the dynamic client of ``d``'s cluster, the API resource of its kind)."""
    client = clients[d.kubeconfig]
    return client, client.resources.get(api_version=d.manifest["apiVersion"], kind=d.manifest["kind"])


def read_live(clients: Mapping[str, Any], d: Declared) -> dict[str, Any]:
    """The object ``d`` names as the API server holds it now."""
    _, api = api_for(clients, d)
    meta = d.manifest["metadata"]
    return dict(api.get(name=meta["name"], namespace=meta.get("namespace")).to_dict())


def clients(*servers: ApiServer | None) -> dict[str, Any]:
    """A dynamic client per test cluster, by kubeconfig path (how a Declared names its cluster)."""
    return {str(s.kubeconfig): s.dynamic() for s in servers if s is not None}


def controller_patch(
    clients: Mapping[str, Any],
    d: Declared,
    patch: dict[str, Any],
    manager: str,
    subresource: str = "",
) -> dict[str, Any]:
    """Write ``patch`` (a JSON merge patch) the way a controller does: an Update by its own field manager."""
    client, api = api_for(clients, d)
    meta = d.manifest["metadata"]
    return dict(
        client.patch(
            api.subresources[subresource] if subresource else api,
            body=patch,
            name=meta["name"],
            namespace=meta.get("namespace"),
            content_type="application/merge-patch+json",
            field_manager=manager,
        ).to_dict()
    )


# --- the stack in apply mode, the clusters it goes to ---------------------------------------------------


def apply_config(
    stack: str, management: ApiServer, hosted: ApiServer | None, raw: dict[str, Any] | None = None
) -> dict[str, Any]:
    """The stack's config switched to apply mode against the test clusters."""
    fleet = copy.deepcopy(raw) if raw is not None else stack_fleet(stack)
    fleet["output"] = {"mode": "apply", "kubeconfig": str(management.kubeconfig)}
    for cluster in fleet["clusters"]:
        if cluster.get("kind") == "hosted" and cluster.get("autoNode"):
            assert hosted is not None
            cluster["hostedKubeconfig"] = str(hosted.kubeconfig)
    return {"nodefleet:fleet": fleet, "nodefleet:mcsCaBundle": CA_BUNDLE}


def has_hosted(stack: str, raw: dict[str, Any] | None = None) -> bool:
    fleet = raw if raw is not None else stack_fleet(stack)
    return any(c.get("kind") == "hosted" and c.get("autoNode") for c in fleet["clusters"])


def prepare(server: ApiServer) -> None:
    """What an OpenShift cluster has before nodefleet runs: the Machine API's namespace, and the MCO's
    MachineConfiguration singleton with the fields the MCO writes."""
    client = server.dynamic()
    namespaces = client.resources.get(api_version="v1", kind="Namespace")
    client.server_side_apply(
        namespaces,
        body={"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": k.MACHINE_API_NAMESPACE}},
        field_manager=INSTALLER,
    )
    mc = client.resources.get(
        api_version=k.MACHINE_CONFIGURATION.api_version, kind=k.MACHINE_CONFIGURATION.kind
    )
    client.server_side_apply(
        mc,
        body={
            "apiVersion": k.MACHINE_CONFIGURATION.api_version,
            "kind": k.MACHINE_CONFIGURATION.kind,
            "metadata": {"name": "cluster"},
            "spec": {"managementState": "Managed", "logLevel": "Normal", "operatorLogLevel": "Normal"},
        },
        field_manager=MCO,
    )


def second_hosted_stack(raw: dict[str, Any]) -> dict[str, Any]:
    """Another stack's hosted cluster in the same namespace as ``raw``'s: another name, infraId and NodePool,
    no AutoNode."""
    raw = copy.deepcopy(raw)
    cluster = raw["clusters"][0]
    cluster["name"], cluster["infraId"] = "prod-west", "prod-west-9zz1a"
    cluster["pullSecret"]["name"], cluster["sshKey"]["name"] = "prod-west-pull-secret", "prod-west-ssh-key"
    cluster.pop("autoNode", None)
    cluster["nodePools"][0]["name"] = "infra-west"
    return raw


def static_spot_pool(raw: dict[str, Any], replicas: int = 2) -> dict[str, Any]:
    """The hosted stack's spot pool made static: what a static pool may keep of it, its Karpenter with the
    StaticCapacity gate. The NodePool API refuses the switch in place, so the program replaces the pool."""
    raw = copy.deepcopy(raw)
    auto = raw["clusters"][0]["autoNode"]
    auto["karpenter"]["featureGates"] = ["StaticCapacity"]
    spot = next(pool for pool in auto["nodePools"] if pool["name"] == "spot")
    spot.pop("weight", None)
    spot["limits"] = {}
    spot["disruption"] = {"driftBudget": spot["disruption"]["driftBudget"]}
    spot["replicas"] = replicas
    return raw


# --- what the API server stores --------------------------------------------------------------------------


def rendered_keys(stack: str) -> set[tuple[str, str, str, str]]:
    """(apiVersion, kind, namespace, name) of every object ``nodefleet render`` writes for the shipped stack."""
    raw = stack_fleet(stack)
    run = run_program(stack, {"nodefleet:fleet": raw, "nodefleet:mcsCaBundle": CA_BUNDLE})
    render_dir = load_fleet(raw, stack, PROJECT).render_directory
    return {
        (m["apiVersion"], m["kind"], m["metadata"].get("namespace", ""), m["metadata"]["name"])
        for _, _, m, _ in kubernetes_objects(run, render_dir)
    }


def predicted(d: Declared) -> dict[str, Any]:
    """What nodefleet's model says the API server stores for ``d``: the manifest with the CRD's defaults
    (crd-schema's defaulting), or the manifest itself for built-in kinds."""
    manifest = copy.deepcopy(d.manifest)
    selection = load_index().for_manifest(d.type, manifest)
    if selection is not None and not selection.patch:
        _default(manifest, selection.crd.schema)
    return manifest


def missing_from(small: Any, big: Any, path: str = "") -> list[str]:
    """Paths where ``small`` is not contained in ``big``."""
    if isinstance(small, dict) and isinstance(big, dict):
        out = []
        for key, value in small.items():
            if key not in big:
                out.append(f"{path}.{key}: missing")
            else:
                out += missing_from(value, big[key], f"{path}.{key}")
        return out
    return [] if small == big else [f"{path}: {small!r} != {big!r}"]


def differences_from_rendered(d: Declared, live: Mapping[str, Any]) -> list[str]:
    """Where the live object is not the rendered one plus the CRD's defaults (crd-schema's prediction): the
    metadata nodefleet declares must be in it, the rest must be equal (status aside); a patch's fields must all
    be in the live object. Empty when the object is as predicted."""
    body = comparable(live)
    if d.patch:
        return missing_from(d.manifest, body)
    if not d.manifest["metadata"].get("namespace"):
        body["metadata"].pop("namespace", None)
    want = predicted(d)
    out = missing_from(want["metadata"], body["metadata"], ".metadata")
    got = {key: value for key, value in body.items() if key not in ("metadata", "status")}
    expected = {key: value for key, value in want.items() if key != "metadata"}
    if got != expected:
        out.append(
            f"body: {json.dumps(got, sort_keys=True)[:300]} != {json.dumps(expected, sort_keys=True)[:300]}"
        )
    return out


def describe(obj: Mapping[str, Any]) -> str:
    return json.dumps(comparable(obj), sort_keys=True)[:400]
