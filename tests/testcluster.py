"""A real Kubernetes API server for tests: ``etcd`` and ``kube-apiserver``, no kubelet, no nodes (as
controller-runtime's envtest runs them).

Both are built from the Go module proxy by the wrapper modules in ``tests/testcluster/`` (``kube-apiserver``:
``k8s.io/kubernetes`` v1.36.3 with its staging modules pinned at v0.36.3; ``etcd``: ``go.etcd.io/etcd/server/v3``
v3.6.16), once per machine, into :data:`CACHE` (``~/.cache/nodefleet/testcluster``, or
``$NODEFLEET_CACHE/testcluster``), outside the checkout so that a fresh clone on the same machine reuses them.
The binaries are keyed by the digest of the wrapper modules' files (tests/goref.py), so a changed pin rebuilds.
``kubectl`` (``k8s.io/kubectl`` v0.36.3) is built the same way, on first use (:func:`kubectl`), for the tests that
run the scripts users run.

:class:`TestClusters` starts one etcd on a free loopback port and, on demand, one API server per Karpenter CRD
set (:meth:`TestClusters.cluster`), each with its own etcd prefix: a NodePool CRD exists once per cluster, and
a hosted cluster serves HyperShift's Karpenter set while a standalone one serves upstream's. Every API server
gets nodefleet's shipped CRDs (HyperShift's, the MCO's, the Machine API's, its Karpenter set's) and a generated
admin kubeconfig (a bearer token in the ``system:masters`` group, the server's own self-signed CA). Everything
is stopped and its folder removed at the end, also on a failed or interrupted run; the processes die with the
test process however it ends (``PR_SET_PDEATHSIG``, SIGKILL), and folders a killed run left are removed by the
next start.
"""

from __future__ import annotations

import base64
import contextlib
import copy
import ctypes
import functools
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from nodefleet.apiserver.store import CRD_DIR, ShippedCrd, load_index
from tests import goref

PROJECT = Path(__file__).resolve().parent.parent
MODULES = PROJECT / "tests" / "testcluster"
#: Where the binaries are built, once per machine (``NODEFLEET_CACHE`` moves it).
CACHE = (
    Path(
        os.environ.get("NODEFLEET_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodefleet"
    )
    / "testcluster"
)
#: The folders of running test clusters (each removed at the end of its run).
RUN_PREFIX = "nodefleet-apiserver-"
#: The field manager the tests install CRDs and the cluster's own objects with.
INSTALLER = "nodefleet-testcluster"
#: A bound on a start, not a wait: four workers on two busy cores start API servers at once.
STARTUP_TIMEOUT = 180.0
#: A spare nobody has lent for this long is stopped. An idle server costs about 2 CPU-seconds a minute (its
#: kube-apiserver 1.98 and controller manager 0.09, measured on a machine where a start costs 2.1 to 3.5), so a
#: spare kept longer than a minute costs more than the start it would save; a worker that runs one server's
#: tests after a module of several kept all the others idle for the rest of its stretch of API-server tests.
SPARE_IDLE = 60.0
#: How often the worker's reaper looks for such spares.
REAP_EVERY = 5.0


def missing() -> str | None:
    """Why no test API server can run here, or None when one can."""
    reason = goref.go_missing()
    if reason:
        return reason
    if shutil.which("openssl") is None:
        return "`openssl` is not on PATH (it makes the API server's service-account signing key)"
    return None


def kubectl() -> Path:
    """``kubectl`` (``k8s.io/kubectl`` v0.36.3, the command ``k8s.io/kubernetes`` v1.36.3 builds), built on first
    use on this machine: the GitOps tests run the scripts ``gitops`` writes with it, as users do."""
    return goref.build(MODULES / "kubectl", into=CACHE)


def binaries() -> tuple[Path, Path, Path]:
    """(etcd, kube-apiserver, kube-controller-manager), built on first use on this machine."""
    return (
        goref.build(MODULES / "etcd", into=CACHE),
        goref.build(MODULES / "kube-apiserver", into=CACHE),
        goref.build(MODULES / "kube-controller-manager", into=CACHE),
    )


def free_port() -> int:
    """A loopback port the kernel has just chosen as free. Between this and the server's own bind another
    process (another worker of the suite) may take it: the starts below try again with new ports when the
    server says so (:class:`PortTaken`)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


#: How many times a server is started on new ports when the one chosen was taken meanwhile.
PORT_ATTEMPTS = 3


class PortTaken(RuntimeError):
    """A server could not bind the port :func:`free_port` chose: another process took it meanwhile."""


def port_taken(log: Path) -> bool:
    return "address already in use" in log_tail(log, 200).lower()


def _die_with_parent() -> None:  # pragma: no cover - runs in the child between fork and exec
    """Ask Linux to send the child SIGKILL when the test process dies, however it dies. Not SIGTERM: an API
    server whose test process died with an exception began its graceful termination on SIGTERM and was still
    running, with parent pid 1, hours later (its etcd had stopped first); nothing these processes hold needs
    an orderly exit once their test process is gone, and the next run removes their folders."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    os.setsid()  # a Ctrl-C to pytest's process group reaches pytest, which stops us in order


def start_process(
    argv: list[str], log: Path, env: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.Popen[bytes]:
    """``argv`` in a process of its own that dies with the test process, its output in ``log``."""
    out = log.open("wb")
    try:
        return subprocess.Popen(
            argv,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,
            env=None if env is None else dict(env),
            cwd=cwd,
        )
    finally:
        out.close()


def stop_process(proc: subprocess.Popen[bytes] | None) -> None:
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=15)


def log_tail(log: Path, n: int = 30) -> str:
    try:
        return "\n".join(log.read_text(errors="replace").splitlines()[-n:])
    except OSError:
        return ""


def remove_stale_runs(prefix: str = RUN_PREFIX, where: str | None = None) -> list[Path]:
    """Remove the folders (``$TMPDIR/<prefix>*``, or ``where/<prefix>*``) of runs whose test process is gone (a
    run that was killed)."""
    removed = []
    for folder in Path(where or tempfile.gettempdir()).glob(f"{prefix}*"):
        try:
            owner = int((folder / "owner.pid").read_text())
            os.kill(owner, 0)
            continue  # its run is still going
        except ProcessLookupError:
            pass
        except (OSError, ValueError):
            try:
                if time.time() - folder.stat().st_mtime < 600:
                    continue  # being set up right now
            except FileNotFoundError:
                continue  # its own run removed it meanwhile (another worker's session that just ended)
        shutil.rmtree(folder, ignore_errors=True)
        removed.append(folder)
    return removed


@dataclass
class ApiServer:
    """One running kube-apiserver: a cluster of the tests."""

    name: str
    karpenter_set: str
    folder: Path
    port: int
    token: str
    process: subprocess.Popen[bytes]
    kubeconfig: Path
    #: The garbage collector and namespace controller (kube-controller-manager with only those two).
    controllers: subprocess.Popen[bytes] | None = None
    started_in: float = 0.0
    crds_in: float = 0.0
    crds: list[str] = field(default_factory=list)
    #: Its keys' prefix in the session's etcd.
    etcd_prefix: str = ""
    #: Its keys as they were when it was new (key -> (mod_revision, value)): what :meth:`TestClusters.fresh`
    #: resets it to before handing it to the next test.
    clean: dict[str, tuple[str, str]] = field(default_factory=dict)
    #: When it was last given back and kept as a spare (the monotonic clock).
    spare_since: float = 0.0
    _dynamic: Any = field(default=None, repr=False, compare=False)

    @property
    def url(self) -> str:
        return f"https://127.0.0.1:{self.port}"

    def api_client(self) -> Any:
        """A Kubernetes Python client (``kubernetes.client.ApiClient``) for this cluster's admin kubeconfig."""
        from kubernetes import config

        return config.new_client_from_config(config_file=str(self.kubeconfig))

    def dynamic(self) -> Any:
        """The ``kubernetes.dynamic.DynamicClient`` of this cluster, made on first use and kept for the server's
        life (its users and resets included): a new client for each call read the discovery cache and opened a
        TLS connection again, 12 ms of CPU for one GET against 2 ms on a kept client, and the GitOps tests poll
        several times a second. A kind the client does not know (a CRD created since) makes it read discovery
        again (``LazyDiscoverer``)."""
        if self._dynamic is None:
            from kubernetes.dynamic import DynamicClient

            self._dynamic = DynamicClient(self.api_client())
        return self._dynamic

    def get(self, path: str, timeout: float = 30) -> tuple[int, bytes]:
        """GET ``path`` with the admin token, as (status, body); ``TimeoutError`` when no answer came within
        ``timeout`` seconds."""
        context = ssl.create_default_context(cafile=str(self.folder / "certs" / "apiserver.crt"))
        request = urllib.request.Request(self.url + path, headers={"Authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, context=context, timeout=timeout) as response:
                return int(response.status), bytes(response.read())
        except urllib.error.HTTPError as e:
            return int(e.code), bytes(e.read())


class TestClusters:
    """One etcd and the API servers of a test session; :meth:`close` stops them and removes their folders."""

    __test__ = False  # not a test class, whatever its name says

    def __init__(self) -> None:
        remove_stale_runs()
        self.build_seconds = 0.0
        t0 = time.monotonic()
        self.etcd_binary, self.apiserver_binary, self.controller_manager_binary = binaries()
        self.build_seconds = time.monotonic() - t0
        self.folder = Path(tempfile.mkdtemp(prefix=RUN_PREFIX))
        (self.folder / "owner.pid").write_text(str(os.getpid()))
        self.etcd: subprocess.Popen[bytes] | None = None
        self.clusters: dict[str, ApiServer] = {}
        #: Servers a test of :meth:`fresh` gave back, reset to new: the next :meth:`fresh` of their Karpenter set
        #: takes one instead of starting a server (3.5 CPU-seconds each, about 40 times a run).
        self.spares: list[ApiServer] = []
        #: Set while GitOps controllers run against these servers (tests/gitopsctl.py): a server given back
        #: meanwhile, which a controller may still write to, is held (:attr:`held`) until they stop.
        self.watched = False
        #: Servers given back while GitOps controllers ran: reset and handed on by :meth:`unwatch`, once the
        #: controllers have stopped and nothing writes to them any more.
        self.held: list[ApiServer] = []
        self._started = 0
        #: The first server of each Karpenter set, as it was new: (etcd prefix, its keys, its CRDs' names). A later
        #: server of the set starts on a copy of those keys instead of creating its CRDs through the API.
        self._seeds: dict[str, tuple[str, dict[str, tuple[str, str]], list[str]]] = {}
        #: How many times :meth:`fresh` handed on a spare instead of starting a server.
        self.reused = 0
        #: How many spares were stopped after :data:`SPARE_IDLE` seconds without a lend (:meth:`reap`).
        self.reaped = 0
        self.spare_idle = SPARE_IDLE
        #: Guards :attr:`spares`, which the reaper's thread shortens while the tests' thread lends.
        self._spares_lock = threading.Lock()
        self._closing = threading.Event()
        self._reaper: threading.Thread | None = None
        try:
            self._start_etcd()
        except BaseException:
            self.close()
            raise

    # -- etcd ---------------------------------------------------------------------------------------------
    def _start_etcd(self) -> None:
        for attempt in range(PORT_ATTEMPTS):
            try:
                return self._start_etcd_once()
            except PortTaken:
                stop_process(self.etcd)
                shutil.rmtree(self.folder / "etcd", ignore_errors=True)
                if attempt == PORT_ATTEMPTS - 1:
                    raise

    def _start_etcd_once(self) -> None:
        client, peer = free_port(), free_port()
        self.etcd_url = f"http://127.0.0.1:{client}"
        log = self.folder / "etcd.log"
        self.etcd = start_process(
            [
                str(self.etcd_binary),
                "--name=test",
                f"--data-dir={self.folder / 'etcd'}",
                f"--listen-client-urls={self.etcd_url}",
                f"--advertise-client-urls={self.etcd_url}",
                f"--listen-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-advertise-peer-urls=http://127.0.0.1:{peer}",
                f"--initial-cluster=test=http://127.0.0.1:{peer}",
                "--unsafe-no-fsync=true",  # a test store: nothing must survive a power cut
                "--log-level=warn",
            ],
            log,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while time.monotonic() < deadline:
            if self.etcd.poll() is not None:
                if port_taken(log):
                    raise PortTaken(client)
                raise RuntimeError(f"etcd exited with {self.etcd.returncode}:\n{log_tail(log)}")
            try:
                with urllib.request.urlopen(f"{self.etcd_url}/health", timeout=2) as r:
                    if b'"health":"true"' in r.read():
                        return
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"etcd did not become healthy in {STARTUP_TIMEOUT:.0f}s:\n{log_tail(log)}")

    # -- API servers --------------------------------------------------------------------------------------
    def cluster(self, name: str = "default", karpenter_set: str | None = None) -> ApiServer:
        """The API server called ``name``, serving ``karpenter_set``'s Karpenter CRDs (default: the shipped
        default set), started and given its CRDs on first use. Tests that must not see each other's
        cluster-scoped objects (the MCO's ``MachineConfiguration`` singleton) use clusters of their own."""
        chosen = karpenter_set or load_index().default_karpenter or ""
        if name not in self.clusters:
            for attempt in range(PORT_ATTEMPTS):
                try:
                    self.clusters[name] = self._start_apiserver(name, chosen)
                    break
                except PortTaken:
                    if attempt == PORT_ATTEMPTS - 1:
                        raise
        server = self.clusters[name]
        if server.karpenter_set != chosen:
            raise ValueError(
                f"test cluster {name!r} serves Karpenter set {server.karpenter_set}, not {chosen}"
            )
        return server

    def _start_apiserver(self, name: str, karpenter_set: str) -> ApiServer:
        index = self._started
        self._started += 1
        prefix = f"/cluster-{index}"
        folder = self.folder / f"c{index}"
        (folder / "certs").mkdir(parents=True)
        token = secrets.token_hex(24)
        (folder / "tokens.csv").write_text(f'{token},admin,admin-uid,"system:masters"\n')
        key = folder / "sa.key"
        subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
        port = free_port()
        log = folder / "kube-apiserver.log"
        seed = self._seeds.get(karpenter_set)
        if seed is not None:
            self._copy_keys(seed[0], seed[1], prefix)
        t0 = time.monotonic()
        proc = start_process(
            [
                str(self.apiserver_binary),
                f"--etcd-servers={self.etcd_url}",
                f"--etcd-prefix={prefix}",
                "--bind-address=127.0.0.1",
                "--advertise-address=127.0.0.1",
                f"--secure-port={port}",
                f"--cert-dir={folder / 'certs'}",  # a self-signed serving certificate and its CA, generated
                f"--token-auth-file={folder / 'tokens.csv'}",
                "--authorization-mode=RBAC",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--service-account-issuer=https://127.0.0.1",
                f"--service-account-key-file={key}",
                f"--service-account-signing-key-file={key}",
                "--allow-privileged=true",
                "--enable-priority-and-fairness=false",
                "--v=1",
            ],
            log,
        )
        server = ApiServer(
            name=name,
            karpenter_set=karpenter_set,
            folder=folder,
            port=port,
            token=token,
            process=proc,
            kubeconfig=folder / "kubeconfig",
            etcd_prefix=prefix,
        )
        self.clusters[f"starting-{index}"] = server  # stopped by close() even if the start fails
        try:
            self._wait_ready(server, log)
        except RuntimeError:
            if not port_taken(log):
                del self.clusters[f"starting-{index}"]
                self.clusters[name] = server
                raise
            del self.clusters[f"starting-{index}"]
            stop_process(proc)
            shutil.rmtree(folder, ignore_errors=True)
            raise PortTaken(port) from None
        try:
            server.started_in = time.monotonic() - t0
            server.kubeconfig.write_text(_kubeconfig(server))
            server.controllers = self._start_controllers(server)
            t1 = time.monotonic()
            if seed is None:
                server.crds = install_crds(server, karpenter_set)
            else:
                server.crds = list(seed[2])
                _wait_served(server, [_parsed(path)["spec"] for path in crd_files(karpenter_set)])
            server.crds_in = time.monotonic() - t1
            server.clean = self._keys(server, values=True)
            if seed is None:
                self._seeds[karpenter_set] = (prefix, dict(server.clean), list(server.crds))
        finally:
            del self.clusters[f"starting-{index}"]
            self.clusters[name] = server
        return server

    @contextlib.contextmanager
    def fresh(self, name: str, karpenter_set: str | None = None, new: bool = False) -> Iterator[ApiServer]:
        """A cluster of its own for one test (for tests that change what others read), from :meth:`lend`, given
        back (:meth:`give_back`) after the test."""
        server = self.lend(name, karpenter_set, new)
        try:
            yield server
        finally:
            self.give_back(server)

    def lend(self, name: str, karpenter_set: str | None = None, new: bool = False) -> ApiServer:
        """A server called ``name`` for one user until :meth:`give_back`: one an earlier user gave back (the last
        given back first), reset to the state of a new one (:meth:`reset`), or a new one; ``new``: always a new
        one (tests of the start itself)."""
        if name in self.clusters:
            raise ValueError(f"test cluster {name!r} exists already")
        chosen = karpenter_set or load_index().default_karpenter or ""
        with self._spares_lock:
            spare = (
                None if new else next((s for s in reversed(self.spares) if s.karpenter_set == chosen), None)
            )
            if spare is not None:
                self.spares.remove(spare)
        if spare is None:
            return self.cluster(name, karpenter_set)
        spare.name = name
        self.clusters[name] = spare
        self.reused += 1
        return spare

    def give_back(self, server: ApiServer) -> None:
        """The end of a :meth:`lend`: the server is reset and kept for the next user, held while GitOps
        controllers run (:meth:`unwatch` resets it when they stop), or stopped if it cannot be reset."""
        if self.clusters.get(server.name) is server:
            del self.clusters[server.name]
        if self.watched:
            self.held.append(server)
            return
        try:
            kept = self._reset_or_stop(server)
        except BaseException:  # in no list any more: close() would not stop it
            self._stop(server)
            raise
        if not kept:
            self._stop(server)

    def unwatch(self) -> None:
        """The GitOps controllers have stopped: the servers given back while they ran are reset and handed on."""
        self.watched = False
        held, self.held = self.held, []
        for server in held:
            if not self._reset_or_stop(server):
                self._stop(server)

    def _reset_or_stop(self, server: ApiServer) -> bool:
        """Reset ``server`` and keep it as a spare; False (the caller stops it) if it cannot be."""
        if server.process.poll() is not None or not server.clean:
            return False
        try:
            self.reset(server)
        except (OSError, RuntimeError, ValueError):
            return False
        server.spare_since = time.monotonic()
        with self._spares_lock:
            self.spares.append(server)
        if self._reaper is None:
            self._reaper = threading.Thread(target=self._reap_idle, name="spare-reaper", daemon=True)
            self._reaper.start()
        return True

    def reap(self, now: float | None = None) -> list[ApiServer]:
        """Stop the spares given back more than :attr:`spare_idle` seconds before ``now`` (default: the
        monotonic clock now); the ones stopped. The reaper's thread calls it every :data:`REAP_EVERY` seconds."""
        now = time.monotonic() if now is None else now
        with self._spares_lock:
            idle = [s for s in self.spares if now - s.spare_since > self.spare_idle]
            for server in idle:
                self.spares.remove(server)
        for server in idle:
            self._stop(server)
        self.reaped += len(idle)
        return idle

    def _reap_idle(self) -> None:
        while not self._closing.wait(REAP_EVERY):
            self.reap()

    # -- resetting a server to new ------------------------------------------------------------------------
    #: Keys the API server's own controllers keep writing (its identity lease, the endpoint lease, the
    #: APIServices the CRD registration controller creates and removes with each CRD): left to them.
    _OWN = ("/leases/", "/masterleases/", "/apiregistration.k8s.io/apiservices/")

    def reset(self, server: ApiServer) -> None:
        """Put ``server``'s objects back as they were when it was new, in etcd, under the running API server:
        every key written since is deleted (namespaces, their objects, CRDs a test created, RBAC, events),
        every key changed or deleted since is written back, and the API server's watch caches, CRD handlers
        and admission informers follow from etcd's watch, as they follow any write. A reset that changed a
        CRD waits until the CRD serves again. A CRD the test deleted is first let finish its deletion (the API
        server removes its objects, then the CRD): written back while terminating, it would be deleted after."""
        now = self._settled_keys(server)
        own = tuple(server.etcd_prefix + p for p in self._OWN)
        gone = [k for k in now if k not in server.clean and not _key(k).startswith(own)]
        changed = [
            k
            for k, (revision, _) in server.clean.items()
            if not _key(k).startswith(own) and now.get(k, ("", ""))[0] != revision
        ]
        ops: list[dict[str, Any]] = [{"requestDeleteRange": {"key": k}} for k in gone]
        ops += [{"requestPut": {"key": k, "value": server.clean[k][1]}} for k in changed]
        self._txn(ops)
        refreshed = self._keys(server, values=False)
        lost = [_key(k) for k in changed if k not in refreshed]
        if lost:  # deleted again after it was written back: the server is stopped rather than handed on
            raise RuntimeError(f"keys written back by a reset were deleted again: {', '.join(lost)}")
        for k in changed:  # the new revision of what was written back: the next reset compares with it
            server.clean[k] = (refreshed[k][0], server.clean[k][1])
        restored = [k for k in changed if _key(k).startswith(server.etcd_prefix + _CRDS)]
        if restored:
            _wait_served(server, [json.loads(base64.b64decode(server.clean[k][1]))["spec"] for k in restored])

    def _settled_keys(self, server: ApiServer, timeout: float = 60) -> dict[str, tuple[str, str]]:
        """``server``'s keys (:meth:`_keys`) once no CRD of it is being deleted: a CRD changed since the server was
        new is read, and while one carries a ``deletionTimestamp`` the keys are read again."""
        crds = server.etcd_prefix + _CRDS
        deadline = time.monotonic() + timeout
        while True:
            now = self._keys(server, values=False)
            changed = [
                k
                for k, (revision, _) in now.items()
                if _key(k).startswith(crds) and server.clean.get(k, ("", ""))[0] != revision
            ]
            terminating = [k for k in changed if self._crd_terminating(k)]
            if not terminating:
                return now
            if time.monotonic() > deadline:
                names = ", ".join(_key(k).removeprefix(crds) for k in terminating)
                raise RuntimeError(f"CRDs still being deleted after {timeout:.0f}s: {names}")
            time.sleep(0.1)

    def _crd_terminating(self, key: str) -> bool:
        kvs = self._etcd("/v3/kv/range", {"key": key}).get("kvs") or []
        return bool(kvs) and "deletionTimestamp" in json.loads(base64.b64decode(kvs[0]["value"]))["metadata"]

    def _copy_keys(self, source: str, keys: dict[str, tuple[str, str]], prefix: str) -> None:
        """Write ``keys`` (a new server's, under the etcd prefix ``source``) under ``prefix``, for a server about to
        start there: the objects its bootstrap makes and the CRDs, without the leases and APIServices of the
        server they came from (:attr:`_OWN`)."""
        own = tuple(source + p for p in self._OWN)
        ops: list[dict[str, Any]] = []
        for key, (_, value) in keys.items():
            name = _key(key)
            if not name.startswith(own):
                ops.append(
                    {"requestPut": {"key": _b64((prefix + name[len(source) :]).encode()), "value": value}}
                )
        self._txn(ops)

    def _txn(self, ops: list[dict[str, Any]]) -> None:
        """Run etcd operations, in transactions of at most 100 (etcd's ``--max-txn-ops`` is 128)."""
        for i in range(0, len(ops), 100):
            self._etcd("/v3/kv/txn", {"success": ops[i : i + 100]})

    def _keys(self, server: ApiServer, values: bool) -> dict[str, tuple[str, str]]:
        """``server``'s keys in etcd (base64, as etcd's JSON gateway gives them): (mod_revision, value or "")."""
        start = (server.etcd_prefix + "/").encode()
        end = start[:-1] + bytes([start[-1] + 1])
        answer = self._etcd(
            "/v3/kv/range",
            {"key": _b64(start), "range_end": _b64(end), "keys_only": not values},
        )
        return {kv["key"]: (kv["mod_revision"], kv.get("value", "")) for kv in answer.get("kvs") or []}

    def _etcd(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            self.etcd_url + path, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=30) as response:
            answer: dict[str, Any] = json.loads(response.read())
        return answer

    def stop(self, name: str) -> None:
        self._stop(self.clusters.pop(name))

    def _stop(self, server: ApiServer) -> None:
        stop_process(server.controllers)
        stop_process(server.process)
        shutil.rmtree(server.folder, ignore_errors=True)

    def _start_controllers(self, server: ApiServer) -> subprocess.Popen[bytes]:
        """kube-controller-manager with the garbage collector and the namespace controller: the Kubernetes
        provider deletes in the foreground, which only the garbage collector completes, and a deleted namespace
        is emptied by the namespace controller. With the API server's service-account key it also runs the
        token controller, as every cluster does (it starts whatever ``--controllers`` says): it fills a
        ``kubernetes.io/service-account-token`` Secret, which ``argocd cluster add`` creates and waits for."""
        return start_process(
            [
                str(self.controller_manager_binary),
                f"--kubeconfig={server.kubeconfig}",
                "--controllers=garbage-collector-controller,namespace-controller",
                f"--service-account-private-key-file={server.folder / 'sa.key'}",
                f"--root-ca-file={server.folder / 'certs' / 'apiserver.crt'}",
                "--leader-elect=false",
                "--secure-port=0",
                "--v=1",
            ],
            server.folder / "kube-controller-manager.log",
        )

    def _wait_ready(self, server: ApiServer, log: Path) -> None:
        deadline = time.monotonic() + STARTUP_TIMEOUT
        cafile = server.folder / "certs" / "apiserver.crt"
        while time.monotonic() < deadline:
            if server.process.poll() is not None:
                raise RuntimeError(
                    f"kube-apiserver exited with {server.process.returncode}:\n{log_tail(log)}"
                )
            if cafile.exists():
                with contextlib.suppress(OSError, ssl.SSLError):
                    status, _ = server.get("/readyz", timeout=5)
                    if status == 200:
                        return
            time.sleep(0.1)
        raise RuntimeError(f"kube-apiserver was not ready in {STARTUP_TIMEOUT:.0f}s:\n{log_tail(log)}")

    @property
    def started(self) -> int:
        """How many API servers this session started."""
        return self._started

    def close(self) -> None:
        self._closing.set()
        if self._reaper is not None:
            self._reaper.join()
        for server in [*self.clusters.values(), *self.spares, *self.held]:
            stop_process(server.controllers)
            stop_process(server.process)
        stop_process(self.etcd)
        shutil.rmtree(self.folder, ignore_errors=True)


#: Where a server's CRDs are in etcd, below its prefix.
_CRDS = "/apiextensions.k8s.io/customresourcedefinitions/"


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _key(key: str) -> str:
    return base64.b64decode(key).decode(errors="replace")


def _wait_served(server: ApiServer, specs: list[dict[str, Any]], timeout: float = 120) -> None:
    """Wait until every CRD of ``specs`` lists its objects again (a CRD written back by a reset is served
    after the API server's CRD handler has read it), at most ``timeout`` seconds in all.

    The first list of a CRD builds its handler (its schema's CEL rules compiled), which took over 5 seconds
    in a CI run with a dozen servers busy on two cores: a list that has not answered yet is waited for, up to
    the deadline, like one that answers 404."""
    deadline = time.monotonic() + timeout
    for spec in specs:
        version = next(v["name"] for v in spec["versions"] if v.get("served", True))
        crd = f"{spec['names']['plural']}.{spec['group']}"
        path = f"/apis/{spec['group']}/{version}/{spec['names']['plural']}?limit=1"
        while True:
            try:
                if server.get(path, timeout=max(deadline - time.monotonic(), 1))[0] == 200:
                    break
            except TimeoutError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"{crd} not served {timeout:g}s after a reset or a start")
            time.sleep(0.1)


def _kubeconfig(server: ApiServer) -> str:
    return yaml.safe_dump(
        {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "test",
                    "cluster": {
                        "server": server.url,
                        "certificate-authority": str(server.folder / "certs" / "apiserver.crt"),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": server.token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "admin"}}],
            "current-context": "test",
        }
    )


def crd_files(karpenter_set: str) -> list[Path]:
    """The CRD files a cluster serving ``karpenter_set`` gets: every per-kind CRD nodefleet ships, and the
    set's Karpenter CRDs."""
    index = load_index()
    files = [CRD_DIR / c.file for c in index.crds if not index.is_karpenter_kind(_api_version(c), c.kind)]
    return files + [CRD_DIR / m.file for m in index.karpenter_set(karpenter_set).members]


def _api_version(crd: ShippedCrd) -> str:
    return f"{crd.group}/{crd.versions[0]}"


@functools.cache
def _parsed(path: Path) -> dict[str, Any]:
    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml: 1 s for HostedCluster's CRD, not 8
    return dict(yaml.load(path.read_text(encoding="utf-8"), Loader=loader))


def load_crd(path: Path) -> dict[str, Any]:
    """The CRD in ``path``, parsed once per session (a copy: callers may change it)."""
    return copy.deepcopy(_parsed(Path(path)))


def install_crds(server: ApiServer, karpenter_set: str, timeout: float = 60) -> list[str]:
    """Create ``karpenter_set``'s CRDs and wait until each is Established; their names."""
    return install_crd_documents(server, [load_crd(path) for path in crd_files(karpenter_set)], timeout)


def install_crd_documents(server: ApiServer, crds: list[dict[str, Any]], timeout: float = 60) -> list[str]:
    """Create ``crds`` (CRD documents, e.g. the upstream Argo CD and Flux CRDs of tests/data/gitops-crds) and wait
    until each is Established; their names."""
    from kubernetes import client

    api = client.ApiextensionsV1Api(server.api_client())
    names = []
    for crd in crds:
        # Raw answers: the client's models take seconds to build a 600 KB CRD such as HostedCluster's.
        api.create_custom_resource_definition(crd, field_manager=INSTALLER, _preload_content=False).read()
        names.append(crd["metadata"]["name"])
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            answer = api.read_custom_resource_definition(name, _preload_content=False)
            status = json.loads(answer.data).get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
            if conditions.get("Established") == "True":
                pending.discard(name)
        if pending:
            time.sleep(0.1)
    if pending:
        raise RuntimeError(f"CRDs not Established after {timeout:.0f}s: {sorted(pending)}")
    return names
