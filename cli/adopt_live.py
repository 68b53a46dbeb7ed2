"""``import --kubeconfig/--context``: the live objects of an API server, read with the Kubernetes Python client and
handed to :mod:`nodefleet.adopt` as the dicts the API server returns (the domain never talks to a cluster).

What it lists, and only that (no Secret but the one below: import references Secrets by name): on a management cluster the
HostedClusters (one namespace with ``--namespace``, one cluster with ``--cluster``), their NodePools and
Namespaces; on a standalone cluster the MachineSets of ``openshift-machine-api``, the custom
MachineConfigPools and their MachineConfigs, the ``MachineConfiguration``, ``ClusterVersion`` and
``Infrastructure`` singletons, and Karpenter's NodePools and EC2NodeClasses where it runs Karpenter (self-managed or
Red Hat's karpenter-operator); inside a hosted cluster (``--hosted-kubeconfig``) the AutoNode classes and
Karpenter NodePools. A kind the API server does not serve (404) is simply not there; a refusal (401, 403) or
an unreachable server stops the import with one message naming the verb, the resource and the fix.

One Secret is read, and only without ``--hosted-kubeconfig``: HyperShift's admin kubeconfig of an AutoNode
hosted cluster (``<name>-admin-kubeconfig``, the HostedCluster's ``status.kubeconfig``, in its namespace), to
reach the Karpenter objects inside it (:func:`read_inside`). Its content stays in memory: the client is built
from it directly, and the certificates and keys the client library writes to files go to a private temporary
folder removed as soon as the objects are read. It is never printed, and never written anywhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cli.exits import InputError

__all__ = ["LiveSource", "read_inside", "read_live"]

#: (group, version, plural, kind, namespaced) of what a management or standalone cluster is read for.
_MANAGEMENT = (("hypershift.openshift.io", "v1beta1", "hostedclusters", "HostedCluster"),)
_POOLS = ("hypershift.openshift.io", "v1beta1", "nodepools", "NodePool")
_STANDALONE = (
    ("machine.openshift.io", "v1beta1", "machinesets", "MachineSet", "openshift-machine-api"),
    ("machineconfiguration.openshift.io", "v1", "machineconfigpools", "MachineConfigPool", None),
    ("operator.openshift.io", "v1", "machineconfigurations", "MachineConfiguration", None),
    ("config.openshift.io", "v1", "clusterversions", "ClusterVersion", None),
    ("config.openshift.io", "v1", "infrastructures", "Infrastructure", None),
)
#: Karpenter on a standalone cluster: upstream's kinds, which the karpenter-operator serves too.
_STANDALONE_KARPENTER = (
    ("karpenter.sh", "v1", "nodepools", "NodePool", None),
    ("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass", None),
)
_INSIDE = (
    ("karpenter.hypershift.openshift.io", "v1", "openshiftec2nodeclasses", "OpenshiftEC2NodeClass"),
    ("karpenter.sh", "v1", "nodepools", "NodePool"),
    ("karpenter.k8s.aws", "v1", "ec2nodeclasses", "EC2NodeClass"),
)
_BUILT_IN_POOLS = ("master", "worker", "arbiter")


class LiveSource:
    """One API server, and how messages name it."""

    def __init__(self, client: Any, shown: str) -> None:
        from kubernetes import client as k8s

        self.api = k8s.CustomObjectsApi(client)
        self.core = k8s.CoreV1Api(client)
        self.shown = shown

    def _call(self, verb: str, resource: str, where: str, fn: Callable[[], Any]) -> Any:
        from kubernetes.client.exceptions import ApiException
        from urllib3.exceptions import HTTPError

        try:
            return fn()
        except ApiException as e:
            if e.status == 404:
                return None
            if e.status in (401, 403):
                what = "not authenticated" if e.status == 401 else "forbidden"
                raise InputError(
                    f"{self.shown}: {what} to {verb} {resource}{where} (HTTP {e.status}); import needs `{verb}` on "
                    f"`{resource}`: grant it (e.g. a ClusterRole with that verb) or use a kubeconfig that has it"
                ) from None
            raise InputError(
                f"{self.shown}: {verb} {resource}{where} failed (HTTP {e.status} {e.reason}); check the API server"
            ) from None
        except (HTTPError, OSError) as e:
            raise InputError(
                f"{self.shown}: unreachable ({type(e).__name__}); check the kubeconfig's server and the network, "
                "then import again"
            ) from None

    def list(
        self,
        group: str,
        version: str,
        plural: str,
        kind: str,
        namespace: str | None = None,
        label_selector: str = "",
    ) -> list[dict[str, Any]]:
        resource = f"{plural}.{group}"
        where = f" in namespace {namespace}" if namespace else ""

        def call() -> Any:
            if namespace:
                return self.api.list_namespaced_custom_object(
                    group, version, namespace, plural, label_selector=label_selector
                )
            return self.api.list_cluster_custom_object(group, version, plural, label_selector=label_selector)

        found = self._call("list", resource, where, call)
        items = list((found or {}).get("items") or [])
        for item in items:  # a list's items may leave out what the list says once
            item.setdefault("apiVersion", f"{group}/{version}")
            item.setdefault("kind", kind)
        return items

    def namespace(self, name: str) -> dict[str, Any] | None:
        found = self._call(
            "get", "namespaces", f" ({name})", lambda: self.core.read_namespace(name, _preload_content=False)
        )
        if found is None:
            return None
        import json

        document: dict[str, Any] = json.loads(found.data)
        document.setdefault("apiVersion", "v1")
        document.setdefault("kind", "Namespace")
        return document

    def secret_value(self, namespace: str, name: str, key: str) -> bytes | None:
        """The decoded value of ``key`` in Secret ``namespace/name``; None when there is no such Secret or key."""
        import base64
        import json

        found = self._call(
            "get",
            "secrets",
            f" ({namespace}/{name})",
            lambda: self.core.read_namespaced_secret(name, namespace, _preload_content=False),
        )
        if found is None:
            return None
        data = (json.loads(found.data).get("data") or {}).get(key)
        return base64.b64decode(data) if isinstance(data, str) else None

    def supported_versions(self) -> tuple[tuple[str, ...] | None, str | None]:
        """The release lines the HyperShift operator runs, from its ``hypershift/supported-versions`` ConfigMap
        (key ``supported-versions``: ``{"versions": ["4.22", ...]}``), and why they are not there when they
        are not (not served, not readable, not in that form). A refusal is not an error here: the registry entry
        is written without them, and the user adds them."""
        import json

        try:
            found = self._call(
                "get",
                "configmaps",
                " (hypershift/supported-versions)",
                lambda: self.core.read_namespaced_config_map(
                    "supported-versions", "hypershift", _preload_content=False
                ),
            )
        except InputError as e:
            return None, str(e).partition(": ")[2].partition(";")[0]
        if found is None:
            return None, "no ConfigMap hypershift/supported-versions on the management cluster"
        try:
            versions = json.loads((json.loads(found.data).get("data") or {}).get("supported-versions") or "")
            lines = tuple(str(v) for v in versions["versions"])
        except (ValueError, KeyError, TypeError):
            return (
                None,
                'ConfigMap hypershift/supported-versions holds no {"versions": [...]} under supported-versions',
            )
        return lines, None


#: The key HyperShift writes the admin kubeconfig under (its ``<name>-admin-kubeconfig`` Secret).
ADMIN_KUBECONFIG_KEY = "kubeconfig"


def read_inside(source: LiveSource, hosted_clusters: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The Karpenter objects inside each AutoNode hosted cluster of ``hosted_clusters`` (HostedClusters as
    ``source`` returned them), reached through HyperShift's admin kubeconfig Secret; each object marked with its
    hosted cluster (``nodefleet.io/hosted-cluster``, nodefleet's own annotation, which an import never adopts).
    A hosted cluster without AutoNode has none, and its Secret is not read."""
    import tempfile

    from kubernetes import config
    from kubernetes.config.config_exception import ConfigException

    from nodefleet import kinds as k
    from nodefleet.files import FileProblem, load_yaml

    objects: list[dict[str, Any]] = []
    for hc in hosted_clusters:
        meta, spec = hc.get("metadata") or {}, hc.get("spec") or {}
        if not spec.get("autoNode"):
            continue
        namespace, cluster = str(meta.get("namespace")), str(meta.get("name"))
        secret = str(
            ((hc.get("status") or {}).get("kubeconfig") or {}).get("name") or f"{cluster}-admin-kubeconfig"
        )
        shown = f"hosted cluster {namespace}/{cluster} (admin kubeconfig Secret {namespace}/{secret})"
        data = source.secret_value(namespace, secret, ADMIN_KUBECONFIG_KEY)
        if data is None:
            raise InputError(
                f"{source.shown}: HostedCluster {namespace}/{cluster} has AutoNode, and its admin kubeconfig Secret "
                f"{namespace}/{secret} (key {ADMIN_KUBECONFIG_KEY}) is not there: the hosted cluster's API server is "
                "not up yet, or HyperShift names it otherwise; pass --hosted-kubeconfig with its kubeconfig"
            )
        try:
            document = load_yaml(data.decode("utf-8"), shown)
        except (FileProblem, UnicodeDecodeError):
            document = None
        if not isinstance(document, dict):
            raise InputError(f"{shown}: is not a kubeconfig; pass --hosted-kubeconfig with its kubeconfig")
        with tempfile.TemporaryDirectory(prefix="nodefleet-import-") as folder:
            try:
                client = config.new_client_from_config_dict(
                    document, persist_config=False, temp_file_path=folder
                )  # type: ignore[no-untyped-call]
            except (ConfigException, OSError, ValueError, TypeError, AttributeError, KeyError) as exc:
                raise InputError(
                    f"{shown}: not a usable kubeconfig ({type(exc).__name__}); pass --hosted-kubeconfig with its "
                    "kubeconfig"
                ) from None
            try:
                inside = LiveSource(client, shown)
                for group, version, plural, kind in _INSIDE:
                    for item in inside.list(group, version, plural, kind):
                        notes = item.setdefault("metadata", {}).setdefault("annotations", {})
                        notes.setdefault(k.ANNOTATION_HOSTED_CLUSTER, f"{namespace}/{cluster}")
                        objects.append(item)
            finally:
                client.close()
                _forget_files(folder)
    return objects


def _forget_files(folder: str) -> None:
    """The client library remembers the files it wrote certificates to, by content, to reuse them: forget those
    in ``folder`` (removed with it), so that no later client is handed a file that is gone."""
    from kubernetes.config import kube_config

    remembered = getattr(kube_config, "_temp_files", {})
    for key in [key for key, path in remembered.items() if str(path).startswith(folder)]:
        del remembered[key]


def read_live(
    source: LiveSource,
    *,
    namespace: str | None,
    cluster: str | None,
    hosted: LiveSource | None = None,
) -> list[dict[str, Any]]:
    """The objects of ``source`` an import adopts (see the module's docstring), and those of ``hosted``."""
    objects: list[dict[str, Any]] = []
    for group, version, plural, kind in _MANAGEMENT:
        clusters = source.list(group, version, plural, kind, namespace)
        if cluster is not None:
            clusters = [c for c in clusters if (c.get("metadata") or {}).get("name") == cluster]
            if not clusters:
                where = f" in namespace {namespace}" if namespace else ""
                raise InputError(
                    f"{source.shown}: no HostedCluster '{cluster}'{where}; list them with `oc get hostedclusters -A`"
                )
        objects += clusters
        wanted = {
            ((c.get("metadata") or {}).get("namespace"), (c.get("metadata") or {}).get("name"))
            for c in clusters
        }
        for ns in sorted({n for n, _ in wanted if n}):
            node_pools = source.list(*_POOLS, namespace=ns)
            objects += [
                p
                for p in node_pools
                if ((p.get("metadata") or {}).get("namespace"), (p.get("spec") or {}).get("clusterName"))
                in wanted
            ]
            found = source.namespace(ns)
            if found is not None:
                objects.append(found)
    if not objects and cluster is None and namespace is None:
        for group, version, plural, kind, ns in (*_STANDALONE, *_STANDALONE_KARPENTER):
            objects += source.list(group, version, plural, kind, ns)
        custom: list[str] = [
            str(p["metadata"]["name"])
            for p in objects
            if p.get("kind") == "MachineConfigPool" and p["metadata"]["name"] not in _BUILT_IN_POOLS
        ]
        if custom:
            selector = f"machineconfiguration.openshift.io/role in ({','.join(sorted(custom))})"
            objects += source.list(
                "machineconfiguration.openshift.io", "v1", "machineconfigs", "MachineConfig", None, selector
            )
    if hosted is not None:
        for group, version, plural, kind in _INSIDE:
            objects += hosted.list(group, version, plural, kind)
    return objects
