"""The fleet's registry of management clusters: ``nodefleet-fleet.yaml`` beside the stack files.

A HyperShift fleet has a few management clusters and many hosted clusters on them. Each hosted cluster names
its management cluster (``managementCluster: mgmt-use1-a``); everything about how the fleet reaches that
management cluster is declared once, here: its region, the kubeconfig apply mode uses, the Argo CD cluster
and Flux kubeconfig Secret render mode's wiring sends its folders to, the releases its HyperShift operator
runs, the Kubernetes version of its API server. So a misspelt name is an error with a did-you-mean instead of
a new management cluster, and two stacks can never reach one management cluster in two ways: the stack file
has nowhere to say how.

Without the file a fleet has exactly one management cluster, ``management``, reached through each stack's
``output.kubeconfig`` in apply mode and through the Argo CD cluster ``management`` and the Flux Secret
``management-kubeconfig`` in render mode (the defaults below); naming any other is refused with the fix.

What is judged here, each refusal one line naming the file, the field and the fix:

- the file itself (:func:`load_registry`): its shape, unique names, one Argo CD cluster and one Flux Secret
  per management cluster, a kubeconfig that is a path (never the content: it would be printed and stored),
  a repository URL without credentials;
- a stack against it (:func:`stack_problems`): every ``managementCluster`` is declared, each hosted cluster
  is in its management cluster's region, an apply-mode stack has a kubeconfig for each management cluster;
- a stack against it (continued): an apply-mode ``output.kubeconfig`` the registry would silently overrule; a
  standalone or hosted cluster's render folder sent to a management cluster's Argo CD cluster or Flux Secret;
- the fleet as a whole (:func:`fleet_problems`): no object declared differently by two stacks on one
  management cluster (whatever render tree each uses), no ``infraId`` twice across stacks, and without a
  registry every apply-mode stack reaches the one management cluster through one kubeconfig.

A release the management cluster's HyperShift operator does not run (:func:`unsupported_release`) is judged
where every release is judged, by the policy pack (``hypershift-supported-versions``), so ``check`` and
``preview --policy-pack`` refuse it alike; the program hands each hosted cluster's component its management
cluster and that cluster's ``hypershift.supportedVersions``.
"""

from __future__ import annotations

import difflib
import functools
import os
import urllib.parse
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import Field, ValidationError, model_validator

from nodefleet.files import looks_like_file_content
from nodefleet.render.objects import load_fleet, management_problems
from nodefleet.render.wiring import folders
from nodefleet.stackfile.hosted import (
    DEFAULT_MANAGEMENT_CLUSTER,
    MAX_MANAGEMENT_CLUSTER_NAME,
    REGISTRY_FILE,
    HostedCluster,
)
from nodefleet.stackfile.model import CONFIG_KEY, ConfigError, Fleet, describe_errors, stack_file
from nodefleet.stackfile.modelbase import DNS_LABEL, DNS_SUBDOMAIN, REGION, ConfigModel, OCPRelease
from nodefleet.stackfile.yamlfile import YAMLFileError, load_yaml, read_text

__all__ = [
    "DEFAULT_MANAGEMENT_CLUSTER",
    "REGISTRY_FILE",
    "STACKS_DIR_ENV",
    "FluxKubeConfig",
    "GitOpsSettings",
    "HyperShiftSettings",
    "ManagementClusterEntry",
    "Registry",
    "RegistryError",
    "RegistryFile",
    "argocd_name_problem",
    "check_stack",
    "fleet_problems",
    "kubeconfig_server",
    "load_fleet_in",
    "load_registry",
    "redact_url",
    "registry_changes",
    "registry_path",
    "server_alias_problems",
    "stack_problems",
    "unsupported_release",
    "url_credentials_problem",
]

#: The Kubernetes minor of a management cluster's API server when the registry does not say: OpenShift 4.22's,
#: the version nodefleet's CRD validation follows (k8s.io/apiextensions-apiserver 1.35).
#: Set by whoever runs the program on a stack file outside ``stacks/`` (``preview --config-file``): the folder of that
#: file, absolute, where the program finds the registry (the stack file's own name may be relative to another
#: directory than the one the engine runs the program in).
STACKS_DIR_ENV = "NODEFLEET_STACKS_DIR"
#: The key of a Flux kubeconfig Secret when the registry does not say: what Flux reads when ``key`` is unset.
DEFAULT_FLUX_KEY = "value"

#: A Secret's data key (``validation.IsConfigMapKey``): letters, digits, '-', '_' and '.'.
_SECRET_KEY = r"^[-._a-zA-Z0-9]+$"
_MINOR = r"^[0-9]+\.[0-9]+$"
#: A kubeconfig path is a path: longer is a paste of something else.
_MAX_PATH = 1024
#: An Argo CD cluster name is free-form (`argocd cluster add --name`, the cluster Secret's data.name); longer than
#: this is a paste of something else.
_MAX_ARGOCD_NAME = 1024


class RegistryError(ValueError):
    """The registry cannot be read, or a name is not in it; the message names the file, the field and the fix."""


def _path_problem(value: str) -> str | None:
    """Why ``value`` is not a kubeconfig path (without ever quoting it: it may be a kubeconfig's content)."""
    if not value.strip():
        return "is empty; give the path of the kubeconfig file"
    if "\n" in value or "\r" in value or any(ord(c) < 32 for c in value):
        return (
            "has a line break or control character: it looks like the content of a kubeconfig, not the path of "
            "one (the value is not printed here, it may hold a token); save it to a file and give the file's path"
        )
    if value.lstrip().startswith(("{", "apiVersion", "clusters:", "kind:")) or looks_like_file_content(value):
        return (
            "looks like the content of a kubeconfig, not the path of one (the value is not printed here, it may "
            "hold a token); save it to a file and give the file's path"
        )
    if len(value) > _MAX_PATH:
        return (
            f"is {len(value)} characters long, more than any path ({_MAX_PATH}); give the kubeconfig's path"
        )
    if value.startswith("$"):
        return (
            f"'{value}' starts with an environment variable, which nodefleet, the engine and the set-up scripts do "
            "not expand alike; write it from ~/ or absolute"
        )
    if not (value.startswith("~/") or os.path.isabs(value)):
        return (
            f"'{value}' is a relative path, which would mean another file in every folder nodefleet, the engine "
            "and Argo CD's or Flux's set-up scripts run from; give it absolute or from ~/ (a kubeconfig holds "
            "credentials: keep it outside the repository)"
        )
    return None


def argocd_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be the Argo CD cluster a folder's Application is sent to, or None.

    Argo CD takes any cluster name (``argocd cluster add --name``, the default being the kubeconfig context's,
    such as ``default/api-mgmt-use2-a-example-com:6443/kube:admin``), and matches an Application's
    ``destination.name`` against it exactly. Refused is only what breaks the wiring."""
    if not name.strip():
        return "is empty; give the name Argo CD knows the management cluster under (`argocd cluster list`)"
    if name != name.strip():
        return (
            f"'{name}' begins or ends with a space: Argo CD matches destination.name exactly, and a name with an "
            "invisible space matches no cluster it lists; remove the space"
        )
    if any(ord(c) < 32 or ord(c) == 127 for c in name):
        return (
            "has a line break or control character, which no cluster name Argo CD lists has and which the "
            "wiring's files and secrets.sh would carry into every log; give the name `argocd cluster list` shows"
        )
    return None


def url_credentials_problem(url: str) -> str | None:
    """Why ``url`` must not be written into the wiring: a user name or token in an ``http(s)`` URL, which Argo
    CD and Flux objects would carry into Git and every log. None when it has none. Never quotes the URL."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "is not a URL; give the repository's https:// or ssh:// URL"
    if parts.scheme in ("http", "https") and (parts.username or parts.password or "@" in parts.netloc):
        return (
            "carries credentials (user:token@ in the URL): the wiring would put them in Git and in every log "
            "of Argo CD and Flux (the URL is not printed here). Give the URL without them and give the "
            "controllers the credentials in a repository Secret: for Argo CD a Secret labelled "
            "argocd.argoproj.io/secret-type: repository, for Flux the GitRepository's spec.secretRef "
            "(docs/gitops.md, 'Credentials the wiring needs')"
        )
    return None


def redact_url(url: str) -> str:
    """``url`` with any user information replaced by ``***`` (for messages)."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return "<not a URL>"
    if "@" not in parts.netloc:
        return url
    host = parts.netloc.rsplit("@", 1)[1]
    return urllib.parse.urlunsplit(parts._replace(netloc=f"***@{host}"))


class FluxKubeConfig(ConfigModel):
    """The Secret (in the Flux Kustomizations' namespace) a Kustomization applies a management-side folder
    through: ``spec.kubeConfig.secretRef``."""

    secret_name: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] | None = Field(
        None, description="The Secret's name (default <management cluster>-kubeconfig)."
    )
    key: Annotated[str, Field(pattern=_SECRET_KEY, max_length=253)] = Field(
        DEFAULT_FLUX_KEY, description="The key holding the kubeconfig (default value, what Flux reads unset)."
    )


class HyperShiftSettings(ConfigModel):
    """What the management cluster's HyperShift operator runs."""

    supported_versions: list[Annotated[str, Field(pattern=_MINOR)]] = Field(
        [],
        description="OpenShift minors (x.y) its HyperShift operator supports, as its supported-versions "
        "ConfigMap (namespace hypershift) lists them; render mode reads them here, apply mode from the cluster.",
    )

    @model_validator(mode="after")
    def _unique(self) -> HyperShiftSettings:
        seen = [v for i, v in enumerate(self.supported_versions) if v in self.supported_versions[:i]]
        if seen:
            raise ValueError(f"supportedVersions: '{seen[0]}' is listed twice; list each minor once")
        return self


class ManagementClusterEntry(ConfigModel):
    """One management cluster of the fleet, declared once."""

    name: Annotated[str, Field(pattern=DNS_LABEL, max_length=MAX_MANAGEMENT_CLUSTER_NAME)] = Field(
        description="What stacks write as managementCluster: <name> (a DNS label)."
    )
    region: Annotated[str, Field(pattern=REGION)] = Field(
        description="The AWS region it runs in: every hosted cluster on it is in this region."
    )
    kubeconfig: str | None = Field(
        None,
        description="Apply mode (the program, fleet upgrade's gates): the path of its kubeconfig file, never "
        "the content.",
    )
    argocd_cluster_name: Annotated[str, Field(max_length=_MAX_ARGOCD_NAME)] | None = Field(
        None,
        alias="argocdCluster",
        description="Render mode: the Argo CD cluster its folders go to, by the name Argo CD knows it under "
        "(`argocd cluster add --name`, free-form; default: name).",
    )
    flux_kube_config: FluxKubeConfig = Field(
        FluxKubeConfig(), description="Render mode: the Secret Flux reaches it through."
    )
    hypershift: HyperShiftSettings = HyperShiftSettings()
    release: OCPRelease | None = Field(
        None,
        description="The OpenShift release the management cluster itself runs (x.y.z): its API server's "
        "Kubernetes version is the one crd-schema judges its HostedClusters and NodePools by (default 1.35).",
    )
    shard_name: Annotated[str, Field(pattern=DNS_LABEL, max_length=40)] | None = Field(
        None,
        alias="shard",
        description="Render mode: the group its folders are wired in (default: name): one Argo CD ApplicationSet "
        "per group when the wiring is sharded, and one Flux or Argo CD controller shard.",
    )

    @model_validator(mode="after")
    def _a_path(self) -> ManagementClusterEntry:
        problem = _path_problem(self.kubeconfig) if self.kubeconfig is not None else None
        if problem:
            raise ValueError(f"kubeconfig: {problem}")
        problem = (
            argocd_name_problem(self.argocd_cluster_name) if self.argocd_cluster_name is not None else None
        )
        if problem:
            raise ValueError(f"argocdCluster: {problem}")
        return self

    @property
    def argocd_cluster(self) -> str:
        """The Argo CD cluster Secret's name the management-side folders on it go to."""
        return self.argocd_cluster_name or self.name

    @property
    def flux_secret_name(self) -> str:
        """The Secret, in the Flux namespace, with its kubeconfig."""
        return self.flux_kube_config.secret_name or f"{self.name}-kubeconfig"

    @property
    def flux_secret_key(self) -> str:
        return self.flux_kube_config.key

    @property
    def shard(self) -> str:
        """The group its folders are wired in: the registry's ``shard``, else its name."""
        return self.shard_name or self.name

    @property
    def supported_versions(self) -> tuple[str, ...]:
        """The minors its HyperShift operator runs, as declared; empty when the registry does not say."""
        return tuple(self.hypershift.supported_versions)

    @classmethod
    def implicit(cls) -> ManagementClusterEntry:
        """The one management cluster of a fleet without a registry: every default, no region declared."""
        return cls.model_construct(
            name=DEFAULT_MANAGEMENT_CLUSTER,
            region="",
            kubeconfig=None,
            argocd_cluster_name=None,
            flux_kube_config=FluxKubeConfig(),
            hypershift=HyperShiftSettings(),
            release=None,
            shard_name=None,
        )


class GitOpsSettings(ConfigModel):
    """How the GitOps side is reached: what ``gitops`` writes into the wiring by default, and where
    ``fleet upgrade --push`` pushes and reads the tools' status."""

    repo_url: str | None = Field(
        None,
        alias="repoURL",
        description="The Git repository Argo CD and Flux read (never with credentials).",
    )
    branch: Annotated[str, Field(min_length=1, max_length=255)] = Field(
        "nodefleet-rendered", description="The branch holding the rendered tree."
    )
    tool: Literal["flux", "argocd", "both"] = "both"
    kubeconfig: str | None = Field(
        None,
        description="Where the Argo CD / Flux controllers run (a path; fleet upgrade --push reads status).",
    )
    argocd_namespace: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)] = "argocd"
    argocd_project: Annotated[str, Field(pattern=DNS_SUBDOMAIN, max_length=253)] = "default"
    flux_namespace: Annotated[str, Field(pattern=DNS_LABEL, max_length=63)] = "flux-system"

    @model_validator(mode="after")
    def _safe(self) -> GitOpsSettings:
        problem = _path_problem(self.kubeconfig) if self.kubeconfig is not None else None
        if problem:
            raise ValueError(f"kubeconfig: {problem}")
        problem = url_credentials_problem(self.repo_url) if self.repo_url else None
        if problem:
            raise ValueError(f"repoURL: {problem}")
        if self.branch.startswith("-") or any(c.isspace() or ord(c) < 32 for c in self.branch):
            raise ValueError("branch: is not a branch name (no spaces, control characters or leading '-')")
        return self


class RegistryFile(ConfigModel):
    """The whole of ``nodefleet-fleet.yaml``."""

    management_clusters: list[ManagementClusterEntry] = Field(min_length=1)
    gitops: GitOpsSettings | None = None

    @model_validator(mode="after")
    def _one_of_each(self) -> RegistryFile:
        for what in ("name", "argocdCluster", "fluxKubeConfig.secretName", "kubeconfig"):
            seen: dict[str, int] = {}
            for i, entry in enumerate(self.management_clusters):
                v = _identity(entry, what)
                if v is None:
                    continue
                if v in seen:
                    j = seen[v]
                    shown = "the same kubeconfig path" if what == "kubeconfig" else f"'{v}'"
                    raise ValueError(
                        f"managementClusters[{i}].{what}: {shown} is also managementClusters[{j}]'s "
                        f"('{self.management_clusters[j].name}'); one management cluster is declared once, with "
                        "its own name, Argo CD cluster, Flux Secret and kubeconfig: merge the two entries or "
                        "correct one"
                    )
                seen[v] = i
        return self


def _identity(entry: ManagementClusterEntry, what: str) -> str | None:
    """What names ``entry`` one way (its name, Argo CD cluster, Flux Secret, kubeconfig path)."""
    if what == "kubeconfig":
        # The file it names: ~/ expanded and links followed, so ~/.kube/a and /home/me/.kube/a are one file.
        return os.path.realpath(os.path.expanduser(entry.kubeconfig)) if entry.kubeconfig else None
    return {"name": entry.name, "argocdCluster": entry.argocd_cluster}.get(what, entry.flux_secret_name)


def unsupported_release(
    what: str, release: str, management_cluster: str, supported: Sequence[str], source: str
) -> str | None:
    """Why ``what`` (an object releasing ``release``, ``x.y.z``) cannot run on ``management_cluster``, whose
    HyperShift operator runs the release lines ``supported`` (``hypershift.supportedVersions`` of ``source``);
    None when it runs that line, or when the lines are not declared (nothing to judge against).

    The operator refuses a HostedCluster or NodePool whose release line it does not list (its
    ``supported-versions`` ConfigMap; openshift/hypershift ``support/supportedversion``): the object is
    accepted by the API server and then never reconciled."""
    if not supported:
        return None
    parts = release.split(".")
    line = ".".join(parts[:2])
    if len(parts) < 2 or line in supported:
        return None
    return (
        f"{what} releases {release}, but the HyperShift operator of management cluster '{management_cluster}' "
        f"runs {', '.join(supported)} (hypershift.supportedVersions in {source}): it would accept the object "
        f"and never reconcile it. Choose a release of {' or '.join(supported)}, put the cluster on a management "
        f"cluster that runs {line}, or upgrade that operator first and add {line} to its supportedVersions"
    )


def kubeconfig_server(document: Any) -> str | None:
    """The API server a kubeconfig's current context reaches (``server`` of its cluster), normalised so that two
    spellings of one server compare equal (scheme and host lowercased, the default port and a trailing slash
    dropped); None when the document does not say (the client's own error names that later)."""
    if not isinstance(document, Mapping):
        return None
    current = document.get("current-context")

    def named(section: str, name: Any) -> Mapping[str, Any]:
        items = document.get(section)
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping) and item.get("name") == name:
                inner = item.get(section[:-1])
                return inner if isinstance(inner, Mapping) else {}
        return {}

    server = named("clusters", named("contexts", current).get("cluster")).get("server")
    if not isinstance(server, str) or not server.strip():
        return None
    try:
        parts = urllib.parse.urlsplit(server.strip())
        port = parts.port
    except ValueError:
        return server.strip()
    scheme = parts.scheme.lower()
    default = {"https": 443, "http": 80}.get(scheme)
    host = (parts.hostname or "").rstrip(".")
    netloc = host if port in (None, default) else f"{host}:{port}"
    return urllib.parse.urlunsplit((scheme, netloc, parts.path.rstrip("/"), "", ""))


def server_alias_problems(registry: Registry, servers: Mapping[str, str | None]) -> list[str]:
    """Registry entries whose kubeconfigs reach one API server (``servers``: management cluster -> the server
    its kubeconfig reaches, :func:`kubeconfig_server`): two names for one management cluster, whose stacks'
    objects would meet there unjudged. One line per server, naming every entry."""
    index = {e.name: i for i, e in enumerate(registry.entries)}
    by_server: dict[str, list[str]] = {}
    for name, server in servers.items():
        if server is not None and name in index:
            by_server.setdefault(server, []).append(name)
    problems = []
    for server, names in by_server.items():
        if len(names) < 2:
            continue
        names.sort(key=index.__getitem__)
        listed = " and ".join(f"managementClusters[{index[n]}] ('{n}')" for n in names)
        problems.append(
            f"{registry.source}: {listed}: their kubeconfigs reach one API server, {server}; one management "
            "cluster is declared once (the objects of stacks naming either would meet there unjudged). Merge the "
            "entries, or correct the kubeconfig of the one that is another cluster"
        )
    return problems


def registry_changes(before: Registry, after: Registry) -> dict[str, str]:
    """Management cluster -> what a change of the registry changes about it, for a review: where its folders
    go (Argo CD cluster, Flux Secret), how apply mode reaches it (kubeconfig), the releases its HyperShift
    operator runs, its region; or that it was added or removed. Only the clusters it changes; each stack on
    one of them is touched by the change (:func:`nodefleet.stackfile.waves.touched_stacks`)."""
    old = {e.name: e for e in before.entries}
    new = {e.name: e for e in after.entries}
    out: dict[str, str] = {}
    for name in sorted(set(old) | set(new)):
        a, b = old.get(name), new.get(name)
        if a is None:
            out[name] = "added"
            continue
        if b is None:
            out[name] = "removed"
            continue
        what = []
        for label, x, y in (
            ("argocdCluster", a.argocd_cluster, b.argocd_cluster),
            ("fluxKubeConfig.secretName", a.flux_secret_name, b.flux_secret_name),
            ("fluxKubeConfig.key", a.flux_secret_key, b.flux_secret_key),
            ("region", a.region, b.region),
            (
                "hypershift.supportedVersions",
                ", ".join(a.supported_versions),
                ", ".join(b.supported_versions),
            ),
        ):
            if x != y:
                what.append(f"{label} {x or '(none)'} → {y or '(none)'}")
        if (a.kubeconfig or "") != (b.kubeconfig or ""):
            what.append("kubeconfig (the credentials apply mode reaches it with)")
        if what:
            out[name] = "; ".join(what)
    return out


def registry_path(stacks_dir: Path) -> Path:
    """Where a fleet's registry is: ``<stacks dir>/nodefleet-fleet.yaml``."""
    return stacks_dir / REGISTRY_FILE


@dataclass(frozen=True)
class Registry:
    """The fleet's management clusters, from its registry file, or the one implicit management cluster."""

    #: The file as messages name it.
    source: str
    #: Whether the file exists (else the fleet has exactly the implicit ``management``).
    exists: bool
    entries: tuple[ManagementClusterEntry, ...] = field(
        default_factory=lambda: (ManagementClusterEntry.implicit(),)
    )
    gitops: GitOpsSettings | None = None

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(e.name for e in self.entries)

    @functools.cached_property
    def _by_name(self) -> dict[str, ManagementClusterEntry]:
        """Each management cluster by name (the first of a name): every stack of a fleet of thousands looks its
        management clusters up, in a registry of hundreds."""
        out: dict[str, ManagementClusterEntry] = {}
        for entry in self.entries:
            out.setdefault(entry.name, entry)
        return out

    @functools.cached_property
    def by_destination(self) -> tuple[dict[str, ManagementClusterEntry], dict[str, ManagementClusterEntry]]:
        """The management clusters by Argo CD cluster, and by Flux kubeconfig Secret (the last of each name)."""
        return (
            {e.argocd_cluster: e for e in self.entries},
            {e.flux_secret_name: e for e in self.entries},
        )

    def get(self, name: str, region: str | None = None) -> ManagementClusterEntry:
        """The management cluster ``name``; :class:`RegistryError` with a did-you-mean when there is none (among
        the management clusters of ``region``, the hosted cluster's, when given)."""
        entry = self._by_name.get(name)
        if entry is not None:
            return entry
        raise RegistryError(self.unknown(name, region))

    def unknown(self, name: str, region: str | None = None) -> str:
        """Why ``name`` is not a management cluster of this fleet, and the fix (no file or field prefix). A
        did-you-mean suggests only a management cluster of ``region`` (a hosted cluster's): one in another region
        would be refused next, and a name one letter off is more often another region's (mgmt-use1-a,
        mgmt-use2-a)."""
        if not self.exists:
            return (
                f"'{name}' is not a management cluster: without {self.source} the fleet has one, "
                f"'{DEFAULT_MANAGEMENT_CLUSTER}'; declare '{name}' in {self.source} (managementClusters: name, "
                "region, kubeconfig or argocdCluster; docs/configuration.md, 'Management clusters'), or remove "
                "managementCluster"
            )
        near = [e.name for e in self.entries if not region or not e.region or e.region == region]
        hint = difflib.get_close_matches(name, near, n=1, cutoff=0.6)
        mean = f"did you mean '{hint[0]}'? " if hint else ""
        if region and not near:
            mean = f"none of them is in {region}, the cluster's region; "
        return (
            f"'{name}' is not a management cluster of {self.source}; {mean}its management clusters are "
            f"{', '.join(self.names)} (add '{name}' there if it is a new one)"
        )

    def kubeconfig(self, name: str, output_kubeconfig: str | None) -> str | None:
        """The kubeconfig apply mode reaches management cluster ``name`` through: the registry's, or without a
        registry the stack's ``output.kubeconfig`` (None: the ambient $KUBECONFIG)."""
        return self.get(name).kubeconfig if self.exists else output_kubeconfig


def load_registry(stacks_dir: Path, source: str | None = None) -> Registry:
    """The registry beside the stack files of ``stacks_dir``; ``source`` names it in messages (default its path).

    A missing file is a fleet without a registry; anything else that cannot be read, parsed or validated raises
    :class:`RegistryError`, one problem a line."""
    path = registry_path(stacks_dir)
    shown = source or str(path)
    if not os.path.lexists(path):
        return Registry(shown, exists=False)
    try:
        document = load_yaml(read_text(path, shown, what="fleet registry"), shown)
    except YAMLFileError as e:
        raise RegistryError(str(e)) from None
    if not isinstance(document, dict):
        raise RegistryError(
            f"{shown}: the top level is {'empty' if document is None else 'a ' + type(document).__name__}; the "
            "registry is a mapping with managementClusters (a list of name, region, ...) and optionally gitops "
            "(docs/configuration.md, 'Management clusters')"
        )
    try:
        parsed = RegistryFile.model_validate(document)
    except ValidationError as e:
        raise RegistryError(describe_errors(shown, e.errors(), root="", model=RegistryFile)) from None
    return Registry(shown, exists=True, entries=tuple(parsed.management_clusters), gitops=parsed.gitops)


def _hosted(fleet: Fleet) -> Iterable[tuple[int, HostedCluster]]:
    for i, cluster in enumerate(fleet.config.clusters):
        if isinstance(cluster, HostedCluster):
            yield i, cluster


def stack_problems(registry: Registry, fleet: Fleet, source: str) -> list[str]:
    """What ``fleet`` (read from ``source``) says about management clusters that the registry contradicts."""
    problems = []
    apply = fleet.config.output.mode == "apply"
    for i, hc in _hosted(fleet):
        base = f"{source}: {CONFIG_KEY}.clusters[{i}]"
        try:
            entry = registry.get(hc.management_cluster, hc.region)
        except RegistryError as e:
            problems.append(f"{base}.managementCluster: {e}")
            continue
        if entry.region and entry.region != hc.region:
            problems.append(
                f"{base}.region: '{hc.region}', but its management cluster '{entry.name}' is in {entry.region} "
                f"({registry.source}): HyperShift's private endpoints (PrivateLink) stay in one region, and "
                "every node would reach its control plane across regions. Put the cluster on a management "
                f"cluster of {hc.region}, or correct the region"
            )
        if apply and registry.exists and not entry.kubeconfig:
            problems.append(
                f"{base}.managementCluster: '{entry.name}' has no kubeconfig in {registry.source}, and "
                "output.mode is apply: the program reaches a management cluster through the kubeconfig the "
                f"registry gives it. Add kubeconfig (a path) to '{entry.name}' there"
            )
    if problems:
        return problems
    problems += _unused_output_kubeconfig(registry, fleet, source)
    if fleet.config.output.mode == "render":
        problems += _destination_problems(registry, fleet, source)
    return problems


def _same_file(a: str, b: str) -> bool:
    return os.path.realpath(os.path.expanduser(a)) == os.path.realpath(os.path.expanduser(b))


def _unused_output_kubeconfig(registry: Registry, fleet: Fleet, source: str) -> list[str]:
    """An apply-mode stack's ``output.kubeconfig`` that the registry overrules: with a registry, hosted clusters
    reach their management clusters through its kubeconfigs, so on a stack without a standalone cluster (the
    only other thing it reaches) a different one would be silently ignored."""
    output = fleet.config.output
    if output.mode != "apply" or not registry.exists or not output.kubeconfig:
        return []
    if any(not isinstance(c, HostedCluster) for c in fleet.config.clusters):
        return []  # it reaches the standalone cluster
    names = sorted({hc.management_cluster for _, hc in _hosted(fleet)})
    others = [n for n in names if not _same_file(output.kubeconfig, registry.get(n).kubeconfig or "")]
    if not others:
        return []
    return [
        f"{source}: {CONFIG_KEY}.output.kubeconfig: is not the kubeconfig {registry.source} gives management "
        f"cluster{'s' if len(others) != 1 else ''} {', '.join(others)}, and nothing in this stack is reached "
        "through it (no standalone cluster): the registry's is used and this one ignored. Remove "
        "output.kubeconfig, or correct the registry's kubeconfig if this one is right"
    ]


def _destination_problems(registry: Registry, fleet: Fleet, source: str) -> list[str]:
    """A standalone or hosted cluster's render folder whose Argo CD cluster or Flux Secret is a management
    cluster's in the registry: the wiring would send both folders to one cluster (each Application or
    Kustomization applying to whichever cluster that name reaches)."""
    index = {c.name: i for i, c in enumerate(fleet.config.clusters)}
    by_argocd, by_flux = registry.by_destination
    problems = []
    for f in folders(fleet, registry):
        if f.side == "management":
            continue
        what = "its own API server" if f.side == "hosted" else "the standalone cluster"
        base = f"{source}: {CONFIG_KEY}.clusters[{index[f.cluster]}] (cluster '{f.cluster}')"
        for field_name, name, entry in (
            ("argocdCluster", f.argocd_cluster, by_argocd.get(f.argocd_cluster)),
            ("fluxKubeConfig.secretName", f.flux_secret, by_flux.get(f.flux_secret)),
        ):
            if entry is None:
                continue
            kind = "Argo CD cluster" if field_name == "argocdCluster" else "Flux kubeconfig Secret"
            problems.append(
                f"{base}: its render folder {f.target} goes to {what} through the {kind} '{name}', which "
                f"{registry.source} gives management cluster '{entry.name}' too ({field_name}): both folders "
                f"would be applied to one cluster. Give '{entry.name}' another {field_name} there, or rename "
                "the cluster"
            )
    return problems


def check_stack(registry: Registry, fleet: Fleet, source: str) -> Fleet:
    """``fleet`` when the registry agrees with it; :class:`ConfigError` naming every problem otherwise."""
    problems = stack_problems(registry, fleet, source)
    if problems:
        raise ConfigError("\n".join(problems))
    return fleet


def load_fleet_in(
    registry: Registry,
    raw: object,
    stack: str,
    project_dir: Path,
    source: str | None = None,
    *,
    environ: Mapping[str, str] | None = None,
) -> Fleet:
    """A stack of the fleet: validated and planned (:func:`nodefleet.render.objects.load_fleet`), then judged
    against the registry (:func:`stack_problems`). Raises ``ConfigError``, one problem a line."""
    fleet = load_fleet(raw, stack, project_dir, source, environ=environ)
    return check_stack(registry, fleet, source or stack_file(stack))


def fleet_problems(registry: Registry, fleets: Sequence[tuple[Fleet, str]]) -> list[str]:
    """What only the fleet as a whole shows: two stacks declaring one object on a management cluster differently
    (judged per management cluster, whatever render tree or mode each stack has:
    :func:`nodefleet.render.objects.management_problems`), one ``infraId`` in two stacks, and, without a
    registry, apply-mode stacks reaching the one management cluster through different kubeconfigs."""
    problems = management_problems(fleets)
    infra: dict[str, tuple[str, str, int]] = {}
    for fleet, source in fleets:
        for i, cluster in enumerate(fleet.config.clusters):
            first = infra.setdefault(cluster.infra_id, (fleet.stack, source, i))
            if first[0] == fleet.stack:
                continue
            _, other, j = first
            problems.append(
                f"{source}: {CONFIG_KEY}.clusters[{i}].infraId: '{cluster.infra_id}' is also the infraId of "
                f"{other} {CONFIG_KEY}.clusters[{j}]; every cluster of the fleet has its own infrastructure ID "
                "(its AWS resources are tagged and found by it), so correct one of them"
            )
    if not registry.exists:
        reach: dict[str | None, str] = {}
        for fleet, source in fleets:
            if fleet.config.output.mode != "apply" or not any(True for _ in _hosted(fleet)):
                continue
            reach.setdefault(fleet.config.output.kubeconfig, source)
        if len(reach) > 1:
            sources = sorted(reach.values())
            problems.append(
                f"{sources[1]}: {CONFIG_KEY}.output.kubeconfig: its hosted clusters are on management cluster "
                f"'{DEFAULT_MANAGEMENT_CLUSTER}', which {sources[0]} reaches through another kubeconfig; one name "
                f"is one management cluster. Declare the fleet's management clusters in {registry.source} (each "
                "with its kubeconfig) and name them in managementCluster"
            )
    return problems
