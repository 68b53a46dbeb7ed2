"""The CRD corpus (tests/crd_corpus.py) sent to a real kube-apiserver, for its verdicts, field paths and messages.

Creates are ``POST ...?dryRun=All&fieldValidation=Strict`` (Strict: an unknown field is an error, as
crd-schema and the Go reference treat it). An update needs its previous object stored, and the corpus's
ratcheting cases store an object the schema refuses: each CRD is installed with one more served version,
:data:`STORE_VERSION`, whose schema keeps any object (``x-kubernetes-preserve-unknown-fields``, no
subresources), the shipped versions unchanged. With the CRD's conversion ``None`` an object created through
that version is stored as it is; read back through the shipped version it is pruned and defaulted as the API
server does with every stored object, and the update (``PUT ...?dryRun=All&fieldValidation=Strict`` with the
stored ``resourceVersion``) is validated with ratcheting against it. Then the stored object is deleted.

A cluster serves one CRD per name, so the corpus is sent to one test cluster per Karpenter CRD set (each with
the per-kind CRDs, and the default set's with the test CRD of :data:`tests.crd_corpus.EDGES`).
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nodefleet.apiserver.store import CRD_DIR, load_index
from tests.crd_corpus import EDGES, Case, _as_sent
from tests.testcluster import INSTALLER, ApiServer, TestClusters, load_crd

#: The extra served version each CRD gets, through which a previous object is stored unvalidated.
STORE_VERSION = "vnodefleetstore"
#: The namespace of namespaced objects that name none (the Go reference puts them in ``default``).
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True)
class Answer:
    """The API server's answer to one case, in the Go reference's terms."""

    allowed: bool
    status: int
    errors: tuple[dict[str, str], ...]
    #: The request that failed, when it was not the case's own (storing the previous object).
    stage: str = ""


def set_of(case: Case) -> str:
    """The Karpenter set whose cluster serves the case's CRD file."""
    index = load_index()
    file = case.crd.crd.file
    if not file.startswith("karpenter/"):
        return index.default_karpenter or ""
    for name, ks in index.karpenter_sets.items():
        if any(m.file == file for m in ks.members):
            return name
    raise KeyError(file)


def with_store_version(crd: Mapping[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(dict(crd))
    out.pop("status", None)
    out["spec"]["versions"] = [
        *out["spec"]["versions"],
        {
            "name": STORE_VERSION,
            "served": True,
            "storage": False,
            "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}},
        },
    ]
    return out


def _crd_file(case: Case) -> str:
    file = case.crd.crd.file
    return file if file.startswith("/") else str(CRD_DIR / file)


class Sender:
    """Sends cases to one test cluster that serves their CRDs."""

    def __init__(self, server: ApiServer, crd_files: Iterable[str]) -> None:
        from kubernetes import client

        self.server = server
        self.api = server.api_client()
        self.core = client.CoreV1Api(self.api)
        ext = client.ApiextensionsV1Api(self.api)
        self.plural: dict[str, tuple[str, bool]] = {}  # file -> (plural, namespaced)
        self.group: dict[str, str] = {}
        for file in crd_files:
            crd = load_crd(Path(file))
            ext.patch_custom_resource_definition(
                crd["metadata"]["name"],
                with_store_version(crd),
                field_manager=INSTALLER,
                force=True,
                _content_type="application/apply-patch+yaml",
            )
            self.plural[file] = (crd["spec"]["names"]["plural"], crd["spec"]["scope"] == "Namespaced")
            self.group[file] = crd["spec"]["group"]
        for file in self.plural:
            self._wait_served(file, STORE_VERSION)
        self.namespaces: set[str] = set()

    def _path(self, file: str, version: str, namespace: str, name: str = "") -> str:
        plural, namespaced = self.plural[file]
        base = f"/apis/{self.group[file]}/{version}"
        if namespaced:
            base += f"/namespaces/{namespace}"
        return f"{base}/{plural}" + (f"/{name}" if name else "")

    def _wait_served(self, file: str, version: str, timeout: float = 120) -> None:
        """Until the CRD lists its objects: the API server builds its handler (the CEL rules compiled) on the
        first request, which took over 5 s in CI on two busy cores (tests/testcluster.py's wait)."""
        import time

        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status, _ = self._call("GET", self._path(file, version, DEFAULT_NAMESPACE))
            if status == 200:
                return
            time.sleep(0.1)
        raise RuntimeError(f"{file} {version} not served after {timeout:.0f}s")

    def _call(
        self, method: str, path: str, body: Any = None, query: Mapping[str, str] | None = None
    ) -> tuple[int, Any]:
        """(status, decoded JSON body) of one request, whatever the status."""
        request = self.api.param_serialize(
            method,
            path,
            query_params=list((query or {}).items()),
            header_params={"Content-Type": "application/json", "Accept": "application/json"},
            body=body,
            auth_settings=["BearerToken"],
        )
        response = self.api.call_api(*request)
        raw = response.read()
        try:
            return int(response.status), json.loads(raw) if raw else None
        except ValueError:
            return int(response.status), {"message": raw.decode(errors="replace")}

    def _namespace(self, obj: Any, file: str) -> str:
        namespace = DEFAULT_NAMESPACE
        meta = obj.get("metadata") if isinstance(obj, Mapping) else None
        if isinstance(meta, Mapping) and isinstance(meta.get("namespace"), str) and meta["namespace"]:
            namespace = meta["namespace"]
        if self.plural[file][1] and namespace not in self.namespaces:
            self._call(
                "POST",
                "/api/v1/namespaces",
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}},
            )
            self.namespaces.add(namespace)
        return namespace

    def send(self, case: Case, raw: bool = False) -> Answer:
        """The API server's answer to ``case``, its numbers sent as kubectl and the Pulumi provider send them
        (a whole float as an integer), or with ``raw`` as the object holds them (``1.0`` stays ``1.0``)."""
        file = _crd_file(case)
        version = case.crd.version
        obj = copy.deepcopy(case.obj) if raw else _as_sent(case.obj)
        query = {"dryRun": "All", "fieldValidation": "Strict"}
        if case.old is None:
            namespace = self._namespace(obj, file)
            return _answer(*self._call("POST", self._path(file, version, namespace), obj, query))
        old = copy.deepcopy(case.old) if raw else _as_sent(case.old)
        namespace = self._namespace(old, file)
        stored_body = copy.deepcopy(old)
        stored_body["apiVersion"] = f"{self.group[file]}/{STORE_VERSION}"
        status, stored = self._call("POST", self._path(file, STORE_VERSION, namespace), stored_body)
        if status != 201:
            return Answer(False, status, _errors(status, stored), stage="store-old")
        name = stored["metadata"]["name"]
        try:
            if isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
                obj["metadata"]["resourceVersion"] = stored["metadata"]["resourceVersion"]
            return _answer(*self._call("PUT", self._path(file, version, namespace, name), obj, query))
        finally:
            self._call("DELETE", self._path(file, version, namespace, name))


def _errors(status: int, body: Any) -> tuple[dict[str, str], ...]:
    body = body if isinstance(body, Mapping) else {}
    causes = (body.get("details") or {}).get("causes") or []
    if status == 422 and causes:
        return tuple(
            {
                "type": str(c.get("reason", "")),
                "field": str(c.get("field", "")),
                "detail": str(c.get("message", "")),
            }
            for c in causes
        )
    message = str(body.get("message", ""))
    unknown = re.findall(r'unknown field "([^"]*)"', message)
    if unknown:
        return tuple(
            {"type": "FieldValueUnknown", "field": p, "detail": f'unknown field "{p}"'}
            for p in sorted(unknown)
        )
    return ({"type": str(body.get("reason", "")), "field": "", "detail": message},)


def _answer(status: int, body: Any) -> Answer:
    if status in (200, 201):
        return Answer(True, status, ())
    return Answer(False, status, _errors(status, body))


def shipped(cases: Iterable[Case]) -> list[Case]:
    """The cases of the shipped CRDs: the API server refuses the hand-written test CRDs beside :data:`EDGES`
    themselves (their CEL rules' estimated cost exceeds the budget), so their cases are answered by the Go
    reference only."""
    return [c for c in cases if Path(c.crd.crd.file).parent != EDGES.parent]


def install_edges(server: ApiServer) -> tuple[int, Any]:
    """Try to create the test CRD of :data:`EDGES`: (status, the API server's answer)."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    ext = client.ApiextensionsV1Api(server.api_client())
    try:
        answer = ext.create_custom_resource_definition(load_crd(EDGES), _preload_content=False)
        return int(answer.status), json.loads(answer.read())
    except ApiException as e:
        return int(e.status), json.loads(e.body)


def send_corpus(test_clusters: TestClusters, cases: list[Case]) -> dict[str, Answer]:
    """Every case's answer, by id: one fresh test cluster per Karpenter set, stopped after its cases."""
    by_set: dict[str, list[Case]] = {}
    for case in shipped(cases):
        by_set.setdefault(set_of(case), []).append(case)
    answers: dict[str, Answer] = {}
    for name, group in sorted(by_set.items()):
        with test_clusters.fresh(f"corpus-{name}", name) as server:
            files = sorted({_crd_file(c) for c in group})
            sender = Sender(server, files)
            for case in group:
                answers[case.id] = sender.send(case)
    return answers
