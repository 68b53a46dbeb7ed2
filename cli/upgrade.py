"""``upgrade``: a hosted cluster's release bump in two steps, control plane first, nodes after it completes.

HyperShift lets a NodePool run ahead of a control plane that is still upgrading (it compares with the last
*completed* version and only reports ``SupportedVersionSkew=False``), and a stack that moves both in one
change does exactly that. So the bump is staged in the stack file itself, where a reviewer sees it:

1. ``upgrade --release R``: the HostedCluster's ``release`` becomes R. Every classic NodePool and AutoNode
   class that follows the control plane (no ``release`` / ``version`` of its own) is held at the current
   release by an explicit pin, marked with a comment. Nodes pinned by the user stay as they are.
2. ``upgrade --release R`` again, once the control plane reports R as completed: in apply mode read from
   ``HostedCluster.status.version.history`` through the management cluster's kubeconfig; in render mode
   (GitOps, no cluster access here) confirmed by the user with ``--control-plane-confirmed``. The marked
   pins are removed, and the nodes follow the control plane.

The stack file is edited with a round-trip YAML library (ruamel.yaml), so its comments, order and layout
survive; each step prints the drift forecast of the change it made.
"""

from __future__ import annotations

import argparse
import copy
import io
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from cli.exits import EXIT_OK, EXIT_VIOLATIONS, InputError
from cli.stacks import load, run_loaded, stack_file_shown

HOLD_MARK = "nodefleet upgrade: held"


def completed_version(hosted_cluster: Mapping[str, Any]) -> tuple[str | None, str]:
    """The control plane's last completed release, and a one-line account of its version status.

    The same reading as HyperShift's own skew check: ``status.version.history`` is newest first; the first
    entry whose ``state`` is ``Completed`` is the version the control plane runs (an install in progress
    has no history and no completed version).
    """
    version = (hosted_cluster.get("status") or {}).get("version") or {}
    history = version.get("history") or []
    desired = (version.get("desired") or {}).get("version")
    shown = ", ".join(f"{h.get('version')} {h.get('state')}" for h in history[:3]) or "no history yet"
    account = f"desired {desired}; history: {shown}" if desired or history else "no version reported yet"
    for entry in history:
        if entry.get("state") == "Completed":
            return str(entry.get("version")), account
    return None, account


#: HostedCluster conditions, and the status that means the operator reports a failure.
HOSTED_CLUSTER_FAILURES = {
    "Degraded": "True",
    "ClusterVersionFailing": "True",
    "ClusterVersionSucceeding": "False",
    "ClusterVersionReleaseAccepted": "False",
    "ValidReleaseImage": "False",
}
#: NodePool conditions, and the status that means the operator reports a failure.
NODE_POOL_FAILURES = {
    "ValidReleaseImage": "False",
    "ValidPlatformImage": "False",
    "SupportedVersionSkew": "False",
    "ValidMachineConfig": "False",
    "ValidGeneratedPayload": "False",
}


def conditions_of(obj: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    found = (obj.get("status") or {}).get("conditions") or []
    return {str(c.get("type")): c for c in found if isinstance(c, Mapping)}


def operator_failures(obj: Mapping[str, Any], failing: Mapping[str, str]) -> list[str]:
    """The conditions of ``obj`` that the HyperShift operator sets when something failed, with its words."""
    out = []
    for kind, bad in failing.items():
        c = conditions_of(obj).get(kind)
        if c is not None and c.get("status") == bad:
            why = ": ".join(str(p) for p in (c.get("reason"), c.get("message")) if p)
            out.append(f"{kind}={bad}" + (f" ({why})" if why else ""))
    return out


def read_hosted_cluster(kubeconfig: str | None, namespace: str, name: str) -> dict[str, Any]:
    """The HostedCluster object from the management cluster (``kubeconfig`` None: $KUBECONFIG or ~/.kube/config)."""
    return read_hypershift_object(kubeconfig, "HostedCluster", namespace, name)


def read_hypershift_object(kubeconfig: str | None, kind: str, namespace: str, name: str) -> dict[str, Any]:
    """A HyperShift object (``HostedCluster`` or ``NodePool``) from the management cluster; every failure is an
    :class:`InputError` naming the object and what the cluster answered (never the kubeconfig's content)."""
    from cli.kube import api_client

    api = api_client(kubeconfig, f"{kind} {namespace}/{name}")
    return read_custom_object(
        api, "hypershift.openshift.io", "v1beta1", f"{kind.lower()}s", namespace, name, kind
    )


def read_cluster_version(kubeconfig: str | None, cluster: str) -> dict[str, Any]:
    """A standalone cluster's ``ClusterVersion`` ``version`` (``config.openshift.io/v1``, cluster-scoped), what
    its cluster version operator reports; every failure is an :class:`InputError` naming the object and what
    the cluster answered."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from cli.kube import api_client
    from nodefleet.files import redact

    what = f"ClusterVersion version of standalone cluster {cluster}"
    api = api_client(kubeconfig, what)
    try:
        found: Any = client.CustomObjectsApi(api).get_cluster_custom_object(
            "config.openshift.io", "v1", "clusterversions", "version"
        )
    except ApiException as exc:
        raise InputError(f"{what}: the cluster answered {exc.status} {exc.reason}") from None
    except Exception as exc:  # urllib3 connection errors have no common base worth naming here
        raise InputError(f"{what}: cannot reach the cluster ({redact(str(exc))[:300]})") from None
    finally:
        api.close()
    if not isinstance(found, dict):
        raise InputError(f"{what}: the cluster answered with a non-object")
    return found


def read_custom_object(
    api: Any,
    group: str,
    version: str,
    plural: str,
    namespace: str,
    name: str,
    kind: str,
    server: str = "the management cluster",
) -> dict[str, Any]:
    """One namespaced object through ``api`` (closed after); :class:`InputError` saying what the server answered."""
    from kubernetes import client
    from kubernetes.client.exceptions import ApiException

    from nodefleet.files import redact

    try:
        found: Any = client.CustomObjectsApi(api).get_namespaced_custom_object(
            group, version, namespace, plural, name
        )
    except ApiException as exc:
        raise InputError(f"{kind} {namespace}/{name}: {server} answered {exc.status} {exc.reason}") from None
    except Exception as exc:  # urllib3 connection errors have no common base worth naming here
        raise InputError(
            f"{kind} {namespace}/{name}: cannot reach {server} ({redact(str(exc))[:300]})"
        ) from None
    finally:
        api.close()
    if not isinstance(found, dict):
        raise InputError(f"{kind} {namespace}/{name}: {server} answered with a non-object")
    return found


def _yaml(text: str) -> Any:
    """A round-trip loader/dumper that writes with the indentation ``text`` already uses."""
    from ruamel.yaml import YAML

    # ruamel guesses the sequence layout (dash offset, item indent); the mapping indent is the first
    # nested key's, as in `config:` / `  nodefleet:fleet:`.
    # Its guess is read from the lines; the document it would also load is not needed (`yaml=` takes the place of
    # that load, which doubled the cost of every edit: a `fleet upgrade` of 10,000 stack files makes 20,000).
    mapping, sequence, offset = indents_of(text)
    y = YAML(typ="rt")
    y.preserve_quotes = True
    y.width = 4096  # never re-wrap a long line the user wrote
    y.indent(mapping=mapping, sequence=sequence, offset=offset)
    return y


def indents_of(text: str) -> tuple[int, int, int]:
    """The mapping indent, sequence indent and dash offset the round trip writes ``text`` back with."""
    from ruamel.yaml.util import load_yaml_guess_indent

    _, sequence, offset = load_yaml_guess_indent(text, yaml=_NotLoaded)
    nested = re.search(r"^( +)[^\s#-][^:\n]*:", text, re.M)
    return len(nested.group(1)) if nested else 2, sequence or 2, offset or 0


class _NotLoaded:
    """What :func:`_yaml` hands ruamel's indentation guess instead of a loader: nothing is loaded."""

    @staticmethod
    def load(text: str) -> None:
        return None


def _held(mapping: Any, key: str) -> bool:
    comment = getattr(mapping, "ca", None)
    token = comment.items.get(key) if comment is not None else None
    return any(t is not None and HOLD_MARK in str(getattr(t, "value", "")) for t in (token or [])[2:3])


def _pin(mapping: Any, key: str, value: str, target: str) -> None:
    position = list(mapping).index("name") + 1 if "name" in mapping else len(mapping)
    mapping.insert(
        position, key, value, comment=f"{HOLD_MARK} at {value} until the control plane completes {target}"
    )


def _unpin(mapping: Any, key: str) -> None:
    comment = getattr(mapping, "ca", None)
    if comment is not None:
        comment.items.pop(key, None)
    del mapping[key]


def _hosted(doc: Any, where: str, cluster: str | None) -> Any:
    fleet = ((doc or {}).get("config") or {}).get("nodefleet:fleet")
    if not isinstance(fleet, Mapping):
        raise InputError(f"{where}: no 'nodefleet:fleet' value under config")
    hosted = [c for c in fleet.get("clusters") or [] if isinstance(c, Mapping) and c.get("kind") == "hosted"]
    if cluster:
        chosen = [c for c in hosted if c.get("name") == cluster]
        if not chosen:
            names = ", ".join(str(c.get("name")) for c in hosted) or "none"
            raise InputError(
                f"{where}: --cluster {cluster}: no hosted cluster of that name (hosted clusters: {names})"
            )
        return chosen[0]
    if not hosted:
        raise InputError(
            f"{where}: nodefleet:fleet.clusters: no hosted cluster (kind: hosted) to upgrade; upgrade stages a "
            "HyperShift hosted cluster's release, control plane first. A standalone cluster's release is the "
            "release it runs: upgrade the cluster (oc adm upgrade), then set its release in the stack file"
        )
    if len(hosted) != 1:
        names = ", ".join(str(c.get("name")) for c in hosted)
        raise InputError(f"{where}: name the hosted cluster with --cluster (hosted clusters: {names})")
    return hosted[0]


def _followers(cluster: Any) -> list[tuple[Any, str, str]]:
    """(mapping, key, label) of every node source that could follow the control plane."""
    found = [(np, "release", f"NodePool {np.get('name')}") for np in cluster.get("nodePools") or []]
    auto = cluster.get("autoNode") or {}
    found += [(nc, "version", f"node class {nc.get('name')}") for nc in auto.get("nodeClasses") or []]
    return found


def _step_one(cluster: Any, target: str, where: str, pinned: dict[int, str] | None = None) -> list[str]:
    """Step 1 on one HostedCluster mapping: its release bumped, the nodes that follow it held by a marked pin.

    ``pinned`` (id of a node source's mapping → the release pinned on it in this edit) lets the clusters of one
    stack file share node sources through a YAML anchor and alias: the shared mapping is pinned once, and a
    second cluster that would need another release pinned on it is refused.
    """
    from nodefleet.bootimages.versions import parse_ocp

    pinned = {} if pinned is None else pinned
    current = str(cluster.get("release"))
    if parse_ocp(target) < parse_ocp(current):
        raise InputError(
            f"{where}: --release {target} is older than the cluster's {current}; downgrades are not staged: leave "
            f"this cluster at {current} (or choose --release {current} or newer)"
        )
    image = cluster.get("releaseImage")
    changes = [f"HostedCluster {cluster.get('name')}: release {current} → {target}"]
    if image:
        if current not in str(image):
            raise InputError(
                f"{where}: releaseImage '{image}' does not name {current}; set releaseImage to the {target} image "
                "yourself, or remove it to use the default"
            )
        cluster["releaseImage"] = str(image).replace(current, target)
        changes.append(f"releaseImage → {cluster['releaseImage']}")
    cluster["release"] = target
    for mapping, key, label in _followers(cluster):
        shared = pinned.get(id(mapping))
        if shared is not None:
            if shared != current:
                raise InputError(
                    f"{where}: {label} of HostedCluster {cluster.get('name')} is shared through a YAML anchor and alias "
                    f"with a cluster at {shared}, and {cluster.get('name')} runs {current}: one held pin cannot hold "
                    "both. Give each cluster its own copy of it, then run the upgrade again"
                )
            changes.append(
                f"{label}: held at {current} ({key}), shared with another cluster of this stack file"
            )
            continue
        if mapping.get(key):
            changes.append(f"{label}: pinned at {mapping.get(key)} by you: left alone")
            continue
        _pin(mapping, key, current, target)
        pinned[id(mapping)] = current
        changes.append(f"{label}: held at {current} ({key}) until the control plane completes {target}")
    return changes


def _step_two(cluster: Any) -> list[str]:
    changes = []
    for mapping, key, label in _followers(cluster):
        if key in mapping and _held(mapping, key):
            changes.append(
                f"{label}: {key} {mapping[key]} removed: follows the control plane at {cluster.get('release')}"
            )
            _unpin(mapping, key)
    return changes


def hold_marks(doc: Any) -> frozenset[tuple[str, str]]:
    """(hosted cluster, node source) of every node source of a stack file that carries the hold mark."""
    fleet = ((doc or {}).get("config") or {}).get("nodefleet:fleet") or {}
    out = set()
    for cluster in (fleet.get("clusters") or []) if isinstance(fleet, Mapping) else []:
        if isinstance(cluster, Mapping) and cluster.get("kind") == "hosted":
            for mapping, key, label in _followers(cluster):
                if key in mapping and _held(mapping, key):
                    out.add((str(cluster.get("name")), label))
    return frozenset(out)


def _cluster(doc: Any, where: str, kind: str, name: str) -> Any:
    fleet = ((doc or {}).get("config") or {}).get("nodefleet:fleet") or {}
    for cluster in fleet.get("clusters") or []:
        if (
            isinstance(cluster, Mapping)
            and cluster.get("name") == name
            and cluster.get("kind", "standalone") == kind
        ):
            return cluster
    raise InputError(f"{where}: no {kind} cluster named {name} any more; run the upgrade with --restart")


KEEP_STREAM_MARK = "nodefleet upgrade: the OS stream the cluster runs"


def stage_moves(doc: Any, where: str, moves: Sequence[Any], phase: str) -> list[str]:
    """One step of a fleet upgrade on one stack file's round-trip document, edited in place; what changed, one
    line each, prefixed with the cluster. ``moves`` are the stack's
    :class:`nodefleet.fleet.upgrade_plan.ClusterMove`; ``phase`` ``control-plane`` or ``nodes``."""
    changes: list[str] = []
    pinned: dict[int, str] = {}
    for move in moves:
        cluster = _cluster(doc, where, move.kind, move.cluster)
        if move.kind == "hosted":
            if phase == "control-plane" and not move.nodes_only:
                lines = _step_one(cluster, move.target, where, pinned)
            elif phase == "nodes":
                lines = _step_two(cluster)
            else:
                lines = []
        elif phase == "nodes":
            lines = [
                f"release {cluster.get('release')} → {move.target} (its cluster version operator completed it)"
            ]
            cluster["release"] = move.target
            if move.keep_stream:
                position = list(cluster).index("release") + 1
                cluster.insert(position, "osImageStream", move.keep_stream, comment=KEEP_STREAM_MARK)
                lines.append(f"osImageStream: {move.keep_stream} written: the OS stream the cluster keeps")
        else:
            lines = []
        changes += [f"{move.cluster}: {line}" for line in lines]
    return changes


def edit_step(text: str, where: str, moves: Sequence[Any], phase: str) -> tuple[str, list[str]]:
    """:func:`stage_moves` on a stack file's text: (the text after the step, what changed). Made on the text
    (:mod:`cli.upgrade_text`) where that gives the round trip's bytes, through the round trip elsewhere."""
    from cli import upgrade_text

    fast = upgrade_text.stage_moves(
        text, indents_of(text), moves, phase, hold_mark=HOLD_MARK, keep_stream_mark=KEEP_STREAM_MARK
    )
    if fast is not None:
        return fast
    y, doc = load_round_trip(text)
    changes = stage_moves(doc, where, moves, phase)
    return dump_round_trip(y, doc), changes


class StackEdit:
    """One stack file through the steps of a plan: its text, and where the text edit takes it, its document, kept
    from one step to the next (each step's text is read once, not once a step)."""

    def __init__(self, text: str, where: str) -> None:
        self.text, self.where = text, where
        self._doc: Any = None
        self._pending: tuple[str, Any] | None = None
        #: Whether the last :meth:`step` was made on the text (not read back: see :mod:`cli.upgrade_text`).
        self.on_text = False

    def _document(self) -> Any:
        from cli import upgrade_text

        if self._doc is None:
            self._doc = upgrade_text.parse(self.text, indents_of(self.text), HOLD_MARK) or False
        elif self._doc and self._doc.operations:
            self._doc.commit()  # the last step's edit, made the document's now that it is read again
        return self._doc

    def hold_marks(self) -> frozenset[tuple[str, str]]:
        from cli import upgrade_text

        if HOLD_MARK not in self.text:
            return frozenset()
        doc = self._document()
        found = upgrade_text.held(doc, HOLD_MARK) if doc else None
        return found if found is not None else hold_marks(load_round_trip(self.text)[1])

    def step(self, moves: Sequence[Any], phase: str) -> tuple[str, list[str]]:
        """The step's (text after it, what changed); :meth:`accept` makes that text the stack file's."""
        from cli import upgrade_text

        doc, self._doc = self._document(), None
        if doc:
            fast = upgrade_text.stage(
                doc, moves, phase, hold_mark=HOLD_MARK, keep_stream_mark=KEEP_STREAM_MARK
            )
            if fast is not None:
                self._pending, self.on_text = (fast[0], doc), True
                return fast
        self.on_text = False
        y, loaded = load_round_trip(self.text)
        changes = stage_moves(loaded, self.where, moves, phase)
        after = dump_round_trip(y, loaded)
        self._pending = (after, None)
        return after, changes

    def accept(self) -> None:
        assert self._pending is not None
        self.text, doc = self._pending
        self._pending = None
        # A document carried over is the text's only where the round trip would read the text with the same
        # indentation (it is guessed from the text).
        if doc is not None and indents_of(self.text) == doc.indent_settings:
            self._doc = doc


def hold_marks_of(text: str) -> frozenset[tuple[str, str]]:
    """:func:`hold_marks` of a stack file's text (none where the hold mark's words are not in it)."""
    from cli import upgrade_text

    if HOLD_MARK not in text:
        return frozenset()
    fast = upgrade_text.hold_marks(text, indents_of(text), HOLD_MARK)
    return fast if fast is not None else hold_marks(load_round_trip(text)[1])


def load_round_trip(text: str) -> tuple[Any, Any]:
    """(the round-trip YAML of ``text``, its document)."""
    y = _yaml(text)
    return y, y.load(text)


def dump_round_trip(y: Any, doc: Any) -> str:
    out = io.StringIO()
    y.dump(doc, out)
    return out.getvalue()


def _forecast_text(stack: str, before_doc: Any, after_doc: Any, source: str | None = None) -> str:
    import pulumi

    from cli.forecast import text
    from mockruntime.run import SECRET_PLACEHOLDER, run_program
    from mockruntime.snapshots import deployer_of, plan_of, snapshot_from_plan
    from nodefleet.drift.forecast import forecast

    deployers: list[str] = []

    def snap(doc: Any) -> Any:
        config = {
            key: SECRET_PLACEHOLDER if isinstance(v, Mapping) and set(v) == {"secure"} else _plain(v)
            for key, v in ((doc or {}).get("config") or {}).items()
        }
        run = run_program(stack, config, source=source)
        deployers.append(deployer_of(run))
        return snapshot_from_plan(plan_of(run), "")

    try:
        before, after = snap(before_doc), snap(after_doc)
    except pulumi.RunError as exc:
        raise InputError(str(exc)) from None
    result = forecast(
        type(before)("the stack file before this step", before.objects),
        type(after)("after it", after.objects),
        deployer=deployers[-1],
    )
    return text(stack, result)


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def run(args: argparse.Namespace) -> int:
    from mockruntime.run import stack_path
    from nodefleet.fleet.upgrade_plan import PlanError, parse_release

    try:
        target = str(parse_release(args.release))
    except PlanError as exc:
        raise InputError(str(exc)) from None
    # The stack as it is must be valid (configuration and stack secrets, as the program reads them) before a
    # step is staged in it: an invalid file is reported as every command reports it (file, field, fix).
    stack, config, source = load(args)
    run_loaded(stack, config, source)
    path = stack_path(stack) if args.stack else args.config_file
    original = path.read_text(encoding="utf-8")
    y = _yaml(original)
    doc = y.load(original)
    before_doc = copy.deepcopy(doc)
    shown = stack_file_shown(args)
    cluster = _hosted(doc, shown, args.cluster)
    name = str(cluster.get("name"))
    held = [label for m, key, label in _followers(cluster) if key in m and _held(m, key)]
    if str(cluster.get("release")) != target:
        if held:
            raise InputError(
                f"{shown}: {', '.join(held)} are still held from an earlier upgrade of {name}; finish it (run upgrade "
                f"with --release {cluster.get('release')}) before starting another"
            )
        step, changes = 1, _step_one(cluster, target, shown)
    elif held:
        namespace = str(cluster.get("namespace") or "clusters")
        output = ((doc.get("config") or {}).get("nodefleet:fleet") or {}).get("output") or {}
        if output.get("mode") == "apply":
            from cli.stacks import registry_of, stacks_dir_of
            from nodefleet.stackfile.hosted import DEFAULT_MANAGEMENT_CLUSTER

            # The management cluster as the fleet's registry reaches it (without one: output.kubeconfig).
            management = str(cluster.get("managementCluster") or DEFAULT_MANAGEMENT_CLUSTER)
            kubeconfig = args.kubeconfig or registry_of(stacks_dir_of(args)).kubeconfig(
                management, output.get("kubeconfig")
            )
            hosted_cluster = read_hosted_cluster(kubeconfig, namespace, name)
            completed, status = completed_version(hosted_cluster)
            failures = operator_failures(hosted_cluster, HOSTED_CLUSTER_FAILURES)
            if failures:
                print(
                    f"nodefleet upgrade: HostedCluster {namespace}/{name}: the operator reports "
                    f"{'; '.join(failures)} ({status}); its nodes stay held. Fix the control plane, then run the "
                    "same command again.",
                    file=sys.stderr,
                )
                return EXIT_VIOLATIONS
            if completed != target:
                print(
                    f"nodefleet upgrade: HostedCluster {namespace}/{name} has not completed {target} yet ({status}); "
                    f"its nodes stay held. Run the same command again once it has.",
                    file=sys.stderr,
                )
                return EXIT_VIOLATIONS
            print(
                f"nodefleet upgrade: HostedCluster {namespace}/{name} reports {target} Completed ({status})"
            )
        elif not args.control_plane_confirmed:
            print(
                f"nodefleet upgrade: render mode: nodefleet cannot see the control plane. Once the GitOps sync of step 1 "
                f"has landed and `oc get hostedcluster -n {namespace} {name} "
                "-o jsonpath='{.status.version.history[0].version} {.status.version.history[0].state}'` prints "
                f"'{target} Completed', run this command again with --control-plane-confirmed.",
                file=sys.stderr,
            )
            return EXIT_VIOLATIONS
        step, changes = 2, _step_two(cluster)
    else:
        print(f"nodefleet upgrade: {name} is at {target} and no node is held: nothing to do")
        return EXIT_OK
    out = io.StringIO()
    y.dump(doc, out)
    forecast = _forecast_text(stack, before_doc, y.load(out.getvalue()), source)
    if not args.dry_run:
        path.write_text(out.getvalue(), encoding="utf-8")
    verb = "would change" if args.dry_run else "changed"
    print(f"nodefleet upgrade: step {step} of 2 for {name} → {target}: {verb} {shown}")
    for line in changes:
        print(f"  {line}")
    print(forecast)
    if step == 1:
        print(
            f"Next: apply or merge this change; once the control plane reports {target} Completed, run "
            f"`python -m nodefleet upgrade {'--stack ' + stack if args.stack else '--config-file ' + str(path)} "
            f"--cluster {name} --release {target}` again to release the nodes."
        )
    return EXIT_OK
