"""The Argo CD and Flux examples: valid against the upstream CRDs, pointing at folders the render creates, and
leaving every field the program leaves to a controller (``ignore_changes``) to that controller.

The GitOps tools cannot run here. Their selection rules are applied as their sources define them: Argo CD's
git files generator (a git pathspec glob, where ``*`` also matches ``/``; parameters from the file's YAML),
its go-template ``templatePatch`` (one ``toJson`` action, Go's ``encoding/json``: compact, keys sorted) merged
into the template, and Flux's ignore-rule targets (``fluxcd/pkg/ssa/jsondiff`` ``SelectorRegex``: anchored
regular expressions, Kubernetes label-selector syntax for ``annotationSelector``).
"""

from __future__ import annotations

import copy
import fnmatch
import gzip
import re
from collections.abc import Callable, Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from mockruntime.render_tree import write_tree
from mockruntime.rendering import RenderPlanError, plan_render
from mockruntime.run import MockRun, run_program
from mockruntime.snapshots import default_target, plan_of
from nodefleet import kinds as k
from nodefleet.apiserver.schema import validate_object
from nodefleet.apiserver.store import CrdVersion, ShippedCrd
from nodefleet.render.gitops import ANNOTATION_CONTROLLER_OWNED, ARGOCD_IGNORE_DIFFERENCES_FILE, json_pointer
from nodefleet.render.health import flux_health_check_exprs
from nodefleet.render.hosted import LEGACY_CONTROLLER_OWNED
from nodefleet.render.objects import load_fleet
from nodefleet.render.wiring import folder_fields
from nodefleet.stackfile.waves import DEFAULT_WAVE, WAVE_LABEL, WAVES, label_value, normalize_wave
from tests.argocd_template import render_template
from tests.conftest import PROJECT, stack_fleet
from tests.crdschema import _strip
from tests.shipped import SHIPPED_STACKS
from tests.variants import hosted_legacy_fleet, karpenter_operator_fleet

CRDS = PROJECT / "tests" / "data" / "gitops-crds"
EXAMPLES = PROJECT / "examples"
#: The GitOps examples: every YAML file under examples/ except examples/import/, which holds what `oc get -o
#: yaml` prints of running clusters (a List, status and server fields included), the input of `import`, whose
#: own tests and the README's walkthrough read it.
GITOPS_EXAMPLES = sorted(p for p in EXAMPLES.rglob("*.yaml") if p.relative_to(EXAMPLES).parts[0] != "import")
#: The example stacks the Argo CD and Flux examples are written for (users' own stacks in stacks/ are not).
STACKS = sorted(SHIPPED_STACKS)


@cache
def _crd_versions() -> dict[tuple[str, str], CrdVersion]:
    """The upstream CRDs as nodefleet's own validator (nodefleet.apiserver.schema) reads them."""
    found = {}
    for path in sorted(CRDS.glob("*.yaml.gz")):
        crd = yaml.safe_load(gzip.decompress(path.read_bytes()))
        spec = crd["spec"]
        shipped = ShippedCrd(
            file=path.name,
            name=crd["metadata"]["name"],
            group=spec["group"],
            kind=spec["names"]["kind"],
            scope=spec["scope"],
            versions=tuple(v["name"] for v in spec["versions"]),
            sources=(),
            sha256="",
        )
        for version in spec["versions"]:
            found[(f"{spec['group']}/{version['name']}", spec["names"]["kind"])] = CrdVersion(
                crd=shipped,
                version=version["name"],
                schema=version["schema"]["openAPIV3Schema"],
                status_subresource="status" in (version.get("subresources") or {}),
            )
    return found


@cache
def _schemas() -> dict[tuple[str, str], dict[str, Any]]:
    found = {}
    for path in sorted(CRDS.glob("*.yaml.gz")):
        crd = yaml.safe_load(gzip.decompress(path.read_bytes()))
        for version in crd["spec"]["versions"]:
            key = (f"{crd['spec']['group']}/{version['name']}", crd["spec"]["names"]["kind"])
            found[key] = _strip(version["schema"]["openAPIV3Schema"])
    return found


def _documents(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def _appset() -> dict[str, Any]:
    (appset,) = _documents(EXAMPLES / "argocd" / "applicationset.yaml")
    return appset


def _kustomizations() -> list[dict[str, Any]]:
    return [d for d in _documents(EXAMPLES / "flux" / "kustomizations.yaml") if d["kind"] == "Kustomization"]


# --- variations of the example stacks that exercise every controller-owned field the program declares -----


def _hosted_legacy() -> MockRun:
    return run_program("hosted", {"nodefleet:fleet": hosted_legacy_fleet()})


def _karpenter_operator() -> MockRun:
    return run_program("karpenter", {"nodefleet:fleet": karpenter_operator_fleet()})


RUNS: dict[str, Callable[[], MockRun]] = {
    **{stack: (lambda stack=stack: run_program(stack)) for stack in STACKS},  # type: ignore[misc]
    "hosted (legacy HyperShift)": _hosted_legacy,
    "karpenter (karpenter-operator)": _karpenter_operator,
}


def _fleet_of(name: str) -> dict[str, Any]:
    """The stack configuration of one of RUNS."""
    if name == "hosted (legacy HyperShift)":
        return hosted_legacy_fleet()
    if name == "karpenter (karpenter-operator)":
        return karpenter_operator_fleet()
    return stack_fleet(name)


def _stack_wave(stack: str) -> str:
    return normalize_wave(stack_fleet(stack).get("wave", DEFAULT_WAVE))


@cache
def _published(name: str, root: Path) -> Path:
    """The tree `scripts/pipeline publish` commits for one run: rendered/<stack>/<cluster>/…, each folder
    labelled with the stack's wave as `nodefleet render` labels it."""
    run = RUNS[name]()
    tree = root / "rendered" / run.stack
    fleet = load_fleet(_fleet_of(name), run.stack, PROJECT)
    write_tree(
        tree, run.stack, plan_render(run, default_target(run.stack), fleet.config.wave, folder_fields(fleet))
    )
    return tree


@pytest.fixture(scope="module")
def published_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("gitops")
    for stack in STACKS:
        _published(stack, root)
    return root


def _render_folders(root: Path) -> set[str]:
    return {
        p.parent.parent.relative_to(root).as_posix()
        for p in (root / "rendered").glob("*/*/1-manifest/*.yaml")
        if p.is_file()
    }


# --- the examples against the upstream schemas --------------------------------------------------------------


@pytest.mark.parametrize("path", GITOPS_EXAMPLES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_examples_are_valid_against_the_upstream_crds(path: Path) -> None:
    for doc in _documents(path):
        schema = _schemas()[(doc["apiVersion"], doc["kind"])]
        jsonschema.Draft202012Validator(schema).validate(doc)


@pytest.mark.parametrize("path", GITOPS_EXAMPLES, ids=lambda p: p.relative_to(EXAMPLES).as_posix())
def test_examples_pass_nodefleet_crd_validator(path: Path) -> None:
    """The same documents through nodefleet.apiserver.schema, which also reports fields the API server would prune
    (a misspelt `rollingSync` or `dependsOn` would be dropped silently, and the waves with it)."""
    for doc in _documents(path):
        findings = validate_object(doc, _crd_versions()[(doc["apiVersion"], doc["kind"])])
        assert [str(f) for f in findings] == []


def test_nodefleet_crd_validator_catches_a_pruned_strategy_field() -> None:
    appset = _appset()
    appset["spec"]["strategy"]["rollingSteps"] = appset["spec"]["strategy"].pop("rollingSync")
    findings = validate_object(appset, _crd_versions()[("argoproj.io/v1alpha1", "ApplicationSet")])
    assert any("rollingSteps" in str(f) for f in findings), findings


def test_a_schema_violation_is_caught() -> None:
    appset = _appset()
    appset["spec"]["generators"][0]["git"]["files"] = "rendered/*/*"  # a string, not a list
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(_schemas()[("argoproj.io/v1alpha1", "ApplicationSet")]).validate(
            appset
        )
    (kustomization, *_) = _kustomizations()
    kustomization["spec"]["ignore"][0]["paths"] = "/spec"  # a string, not a list of pointers
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.Draft202012Validator(
            _schemas()[("kustomize.toolkit.fluxcd.io/v1", "Kustomization")]
        ).validate(kustomization)


# --- Argo CD: one Application per folder, with the folder's ignoreDifferences --------------------------------


def _generated_params(root: Path) -> list[dict[str, Any]]:
    """The git files generator's parameter sets over the published tree (argo-cd applicationset/generators
    git.go: files matched by `git ls-files -- <pattern>`, each parsed as YAML, plus the `path` parameters)."""
    patterns = [f["path"] for g in _appset()["spec"]["generators"] for f in g["git"]["files"]]
    files = sorted(p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file())
    out = []
    for rel in files:
        if not any(fnmatch.fnmatchcase(rel, pattern) for pattern in patterns):
            continue
        params = yaml.safe_load((root / rel).read_text()) or {}
        folder = rel.rsplit("/", 1)[0]
        params["path"] = {
            "path": folder,
            "basename": folder.rsplit("/", 1)[-1],
            "filename": rel.rsplit("/", 1)[-1],
            "segments": folder.split("/"),
        }
        out.append(params)
    return out


def _applications(root: Path) -> dict[str, dict[str, Any]]:
    """The Applications the ApplicationSet generates, by folder: template, then templatePatch merged in."""
    appset = _appset()
    out = {}
    for params in _generated_params(root):
        template = yaml.safe_load(render_template(yaml.safe_dump(appset["spec"]["template"]), params))
        patch = yaml.safe_load(render_template(appset["spec"]["templatePatch"], params))
        app = {"apiVersion": "argoproj.io/v1alpha1", "kind": "Application", **template}
        # A strategic merge patch of maps; ignoreDifferences is a list the template does not have.
        app["spec"] = {**app["spec"], **patch["spec"]}
        out[params["path"]["path"]] = app
    return out


def test_the_applicationset_makes_one_application_per_render_folder(published_root: Path) -> None:
    apps = _applications(published_root)
    assert set(apps) == _render_folders(published_root)
    for folder, app in apps.items():
        jsonschema.Draft202012Validator(_schemas()[("argoproj.io/v1alpha1", "Application")]).validate(app)
        assert app["spec"]["source"]["path"] == folder
        # Each folder to its API server: the standalone cluster, the management cluster (the example stacks name
        # none: the default one), or the hosted cluster itself.
        basename = folder.rsplit("/", 1)[-1]
        management = any(p.name.startswith("hypershift.openshift.io_v1beta1-hostedcluster-")
                         for p in (published_root / folder / "1-manifest").iterdir())  # fmt: skip
        assert app["spec"]["destination"]["name"] == ("management" if management else basename)
        assert app["metadata"]["name"] == f"nodefleet-{folder.split('/')[1]}-{basename}"
        assert app["spec"]["source"]["directory"]["recurse"] is True
        assert "RespectIgnoreDifferences=true" in app["spec"]["syncPolicy"]["syncOptions"]


def test_no_application_applies_a_namespace_it_creates_the_one_its_folder_renders(
    published_root: Path,
) -> None:
    """Argo CD tracks an object for one Application: a Namespace several stacks' folders carry is applied by
    none (``directory.exclude``, argo-cd ``util/glob``: ``*`` also matches ``/``) and created by each folder's
    Application that renders it (destination namespace, ``CreateNamespace=true``), untracked."""
    apps = _applications(published_root)
    rendered_namespaces = 0
    for folder, app in apps.items():
        exclude = app["spec"]["source"]["directory"]["exclude"]
        files = sorted(p.relative_to(published_root / folder).as_posix()
                       for p in (published_root / folder).rglob("*.yaml"))  # fmt: skip
        kinds = {f: yaml.safe_load((published_root / folder / f).read_text())["kind"] for f in files}
        excluded = {f for f in files if fnmatch.fnmatchcase(f, exclude)}
        assert excluded == {f for f, kind in kinds.items() if kind == "Namespace"}, folder
        names = [
            yaml.safe_load((published_root / folder / f).read_text())["metadata"]["name"] for f in excluded
        ]
        rendered_namespaces += len(names)
        assert app["spec"]["destination"].get("namespace", "") == (names[0] if names else ""), folder
        assert "CreateNamespace=true" in app["spec"]["syncPolicy"]["syncOptions"]
    assert rendered_namespaces, "no example folder renders a Namespace: the test proves nothing"


def test_argo_cd_never_reads_the_file_as_a_manifest(published_root: Path) -> None:
    """argo-cd reposerver/repository/repository.go: a directory source loads ^.*\\.(yaml|yml|json|jsonnet)$."""
    manifest_file = re.compile(r"^.*\.(yaml|yml|json|jsonnet)$")
    assert not manifest_file.match(ARGOCD_IGNORE_DIFFERENCES_FILE)
    assert all(
        (published_root / f / ARGOCD_IGNORE_DIFFERENCES_FILE).is_file()
        for f in _render_folders(published_root)
    )


# --- every controller-owned field reaches both tools ---------------------------------------------------------


_REQUIREMENT = re.compile(
    r"^\s*(?P<neg>!)?(?P<key>[\w./-]+)\s*(?:(?P<op>==|=|!=)\s*(?P<value>[\w.-]*)|\s+(?P<set>in|notin)\s*"
    r"\((?P<values>[^)]*)\))?\s*$"
)


def _selector_matches(selector: str, values: Mapping[str, str]) -> bool:
    """A Kubernetes label selector (k8s.io/apimachinery labels.Parse) on labels or annotations."""
    for requirement in re.split(r",(?![^()]*\))", selector):
        m = _REQUIREMENT.match(requirement)
        assert m, f"selector syntax this test does not evaluate: {requirement!r}"
        key = m["key"]
        if m["neg"]:
            ok = key not in values
        elif m["op"] in ("=", "=="):
            ok = values.get(key) == m["value"]
        elif m["op"] == "!=":
            ok = values.get(key) != m["value"]
        elif m["set"]:
            options = {v.strip() for v in m["values"].split(",")}
            ok = (values.get(key) in options) if m["set"] == "in" else (values.get(key) not in options)
        else:
            ok = key in values
        if not ok:
            return False
    return True


def _flux_selects(target: Mapping[str, str] | None, obj: Mapping[str, Any]) -> bool:
    """fluxcd/pkg/ssa jsondiff.SelectorRegex.MatchUnstructured; an absent target selects every object."""
    if not target:
        return True
    api_version = str(obj["apiVersion"])
    group, _, version = api_version.rpartition("/")
    meta = obj.get("metadata") or {}
    fields = {
        "group": group,
        "version": version,
        "kind": obj["kind"],
        "name": meta.get("name", ""),
        "namespace": meta.get("namespace", ""),
    }
    for field, value in fields.items():
        if target.get(field) and not re.fullmatch(target[field], str(value)):
            return False
    if target.get("labelSelector") and not _selector_matches(
        target["labelSelector"], meta.get("labels") or {}
    ):
        return False
    annotations = meta.get("annotations") or {}
    return not (
        target.get("annotationSelector") and not _selector_matches(target["annotationSelector"], annotations)
    )


def _resolves(obj: Any, pointer: str) -> bool:
    for part in pointer.split("/")[1:]:
        part = part.replace("~1", "/").replace("~0", "~")
        if isinstance(obj, dict) and part in obj:
            obj = obj[part]
        elif isinstance(obj, list) and part.isdigit() and int(part) < len(obj):
            obj = obj[int(part)]
        else:
            return False
    return True


def _gitops_gaps(run: MockRun, tree: Path, kustomizations: list[dict[str, Any]]) -> Iterator[str]:
    """Where a field the program leaves to a controller would still be applied by Argo CD or Flux, or where
    Flux would leave alone a field nodefleet owns."""
    plan = plan_of(run)
    by_name = {(f.kind, f.name): f for f in plan.files}
    declared: dict[str, list[str]] = {}
    for reg in run.registrations:
        if not (reg.custom and reg.type.startswith("kubernetes:")) or reg.type.startswith("pulumi:providers"):
            continue
        manifest = reg.inputs
        if manifest.get("kind") == "Secret":
            continue
        f = by_name[(manifest["kind"], manifest["metadata"]["name"])]
        declared[f.relpath] = [json_pointer(p) for p in reg.ignore_changes]
    for relpath, pointers in sorted(declared.items()):
        obj = yaml.safe_load((tree / relpath).read_text())
        what = f"{obj['kind']} {obj['metadata']['name']}"
        rendered = (obj["metadata"].get("annotations") or {}).get(ANNOTATION_CONTROLLER_OWNED, "")
        if rendered != ",".join(pointers):
            yield f"{what}: rendered {ANNOTATION_CONTROLLER_OWNED} {rendered!r}, program declares {pointers}"
        folder = relpath.split("/")[0]
        argo = yaml.safe_load((tree / folder / ARGOCD_IGNORE_DIFFERENCES_FILE).read_text())[
            "ignoreDifferences"
        ]
        entries = [
            e
            for e in argo
            if (e["kind"], e["name"], e.get("namespace", ""))
            == (obj["kind"], obj["metadata"]["name"], obj["metadata"].get("namespace", ""))
        ]
        got = [p for e in entries for p in e["jsonPointers"]]
        if got != pointers:
            yield f"{what}: Argo CD ignores {got}, the program leaves {pointers} to a controller"
        for kustomization in kustomizations:
            ignored = [
                p
                for rule in kustomization["spec"].get("ignore", [])
                if _flux_selects(rule.get("target"), obj)
                for p in rule["paths"]
            ]
            if missing := [p for p in pointers if p not in ignored]:
                yield f"{what}: Flux Kustomization {kustomization['metadata']['name']} applies {missing}"
            if extra := [p for p in ignored if p not in pointers and _resolves(obj, p)]:
                yield f"{what}: Flux Kustomization {kustomization['metadata']['name']} leaves {extra} alone"


@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_controller_owned_field_reaches_argo_cd_and_flux(name: str, tmp_path: Path) -> None:
    run = RUNS[name]()
    tree = tmp_path / "rendered" / run.stack
    write_tree(tree, run.stack, plan_of(run))
    assert list(_gitops_gaps(run, tree, _kustomizations())) == []


def test_the_variations_cover_every_kind_of_controller_owned_field() -> None:
    """The runs above declare each ownership of DESIGN.md 1.1 the program leaves to a controller."""
    owned = {
        (r.type, tuple(r.ignore_changes))
        for name in RUNS
        for r in RUNS[name]().registrations
        if r.ignore_changes
    }
    assert owned == {
        (k.MACHINE_SET.token, (k.AMI_PATH,)),
        (k.EC2_NODE_CLASS.token, tuple(LEGACY_CONTROLLER_OWNED)),
    }


def test_a_new_controller_owned_field_fails_until_flux_is_told(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Add an ignore_changes path in the program: the render and Argo CD follow by themselves, the Flux rules
    (static paths) do not, and the check above says exactly what Flux would still apply."""
    import components.hosted

    monkeypatch.setattr(components.hosted, "LEGACY_CONTROLLER_OWNED", (*LEGACY_CONTROLLER_OWNED, "spec.tags"))
    run = _hosted_legacy()
    tree = tmp_path / "rendered" / run.stack
    write_tree(tree, run.stack, plan_of(run))
    gaps = list(_gitops_gaps(run, tree, _kustomizations()))
    assert gaps and all("applies ['/spec/tags']" in g for g in gaps), gaps
    assert not [g for g in gaps if "Argo CD" in g or "rendered" in g]


def test_an_object_registered_without_the_annotation_is_refused_at_render(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A component that set ignore_changes but bypassed components.kubernetes.custom_resource would put a
    manifest in the tree that the GitOps tools re-apply: the render refuses it."""
    import components.kubernetes

    monkeypatch.setattr(
        components.kubernetes, "with_controller_owned", lambda manifest, paths: dict(manifest)
    )
    with pytest.raises(
        RenderPlanError, match=r"ignore_changes.*nodefleet\.io/controller-owned annotation lists nothing"
    ):
        plan_of(run_program("dev"))


def test_a_managed_machine_set_and_a_legacy_node_class_reach_both_tools(tmp_path: Path) -> None:
    dev = tmp_path / "rendered" / "dev"
    write_tree(dev, "dev", plan_of(run_program("dev")))
    machine_set = yaml.safe_load(
        (
            dev
            / "dev/1-manifest/machine.openshift.io_v1beta1-machineset-openshift-machine-api-dev-7xk2p-worker-us-east-1a.yaml"
        ).read_text()
    )
    assert machine_set["metadata"]["annotations"][ANNOTATION_CONTROLLER_OWNED] == (
        "/spec/template/spec/providerSpec/value/ami"
    )
    argo = yaml.safe_load((dev / "dev" / ARGOCD_IGNORE_DIFFERENCES_FILE).read_text())["ignoreDifferences"]
    assert {
        "group": "machine.openshift.io",
        "kind": "MachineSet",
        "name": "dev-7xk2p-worker-us-east-1a",
        "namespace": "openshift-machine-api",
        "jsonPointers": ["/spec/template/spec/providerSpec/value/ami"],
    } in argo
    pinned = [e for e in argo if e["name"].endswith("us-east-1b")]
    assert pinned == [], "a MachineSet nodefleet pins keeps its AMI under Argo CD's control"

    run = _hosted_legacy()
    hosted = tmp_path / "rendered" / "hosted"
    write_tree(hosted, "hosted", plan_of(run))
    node_class = yaml.safe_load(
        (
            hosted / "prod-east-hosted/1-manifest/karpenter.k8s.aws_v1-ec2nodeclass-default-general.yaml"
        ).read_text()
    )
    assert (
        node_class["metadata"]["annotations"][ANNOTATION_CONTROLLER_OWNED]
        == "/spec/userData,/spec/amiSelectorTerms"
    )
    argo = yaml.safe_load((hosted / "prod-east-hosted" / ARGOCD_IGNORE_DIFFERENCES_FILE).read_text())
    assert {
        "group": "karpenter.k8s.aws",
        "kind": "EC2NodeClass",
        "name": "general",
        "jsonPointers": ["/spec/userData", "/spec/amiSelectorTerms"],
    } in argo["ignoreDifferences"]
    for kustomization in _kustomizations():
        rules = [r for r in kustomization["spec"]["ignore"] if _flux_selects(r["target"], node_class)]
        assert [p for r in rules for p in r["paths"]] == ["/spec/userData", "/spec/amiSelectorTerms"]
        nodefleet_owned = copy.deepcopy(node_class)
        del nodefleet_owned["metadata"]["annotations"][ANNOTATION_CONTROLLER_OWNED]  # an S3-pointer class
        assert not [r for r in kustomization["spec"]["ignore"] if _flux_selects(r["target"], nodefleet_owned)]


def test_flux_kustomizations_point_at_render_folders(published_root: Path) -> None:
    docs = _documents(EXAMPLES / "flux" / "kustomizations.yaml")
    sources = {d["metadata"]["name"] for d in docs if d["kind"] == "GitRepository"}
    kustomizations = _kustomizations()
    assert kustomizations
    folders = _render_folders(published_root)
    for kz in kustomizations:
        assert kz["spec"]["sourceRef"]["name"] in sources
        assert kz["spec"]["path"].removeprefix("./") in folders, kz["spec"]["path"]
        # Every Kustomization carries the same rules, so the one a user copies for a folder of their own has them.
        assert kz["spec"]["ignore"] == kustomizations[0]["spec"]["ignore"]
        # ... and what `gitops` writes: nothing deleted with it, health per kind, a failed apply retried soon.
        assert (kz["spec"]["prune"], kz["spec"]["deletionPolicy"], kz["spec"]["retryInterval"]) == (
            False,
            "Orphan",
            "1m",
        )
        assert kz["spec"]["healthCheckExprs"] == flux_health_check_exprs()
        secret = kz["spec"]["kubeConfig"]["secretRef"]
        assert secret["key"] == ("kubeconfig" if secret["name"].endswith("-admin-kubeconfig") else "value")
    names = {kz["metadata"]["name"] for kz in kustomizations}
    assert all(dep["name"] in names for kz in kustomizations for dep in kz["spec"].get("dependsOn", []))


def test_both_examples_follow_the_branch_the_pipeline_publishes() -> None:
    workflow = yaml.safe_load((PROJECT / ".github" / "workflows" / "nodefleet.yaml").read_text())
    branch = workflow["env"]["GITOPS_BRANCH"]
    appset = _appset()
    assert appset["spec"]["template"]["spec"]["source"]["targetRevision"] == branch
    assert appset["spec"]["generators"][0]["git"]["revision"] == branch
    repo = next(
        d for d in _documents(EXAMPLES / "flux" / "kustomizations.yaml") if d["kind"] == "GitRepository"
    )
    assert repo["spec"]["ref"]["branch"] == branch


# --- waves: Argo CD progressive syncs and Flux dependsOn roll the stacks out in the order of their waves ------


def _rolling_sync_gaps(appset: Mapping[str, Any], present: set[tuple[str, str]]) -> list[str]:
    """Where the ApplicationSet's RollingSync would not sync the (wave, side)s ``present`` one after the other.

    argo-cd v3.6 applicationset/progressivesync: an Application is in the first step whose every matchExpression
    selects its labels (In / NotIn; a missing label fails In); an Application no step selects is never synced by
    the rollout; a step that selects no Application is reported as InvalidRolloutConfig.
    """
    strategy = appset["spec"].get("strategy") or {}
    if strategy.get("type") != "RollingSync":
        return [f"strategy.type is {strategy.get('type')!r}, not RollingSync"]
    steps = strategy["rollingSync"]["steps"]

    def step_of(labels: Mapping[str, str]) -> int | None:
        for i, step in enumerate(steps):
            ok = True
            for e in step["matchExpressions"]:
                assert e["operator"] in ("In", "NotIn"), e
                value = labels.get(e["key"])
                if value is None:
                    ok = ok and e["operator"] == "NotIn"
                elif (value in e["values"]) != (e["operator"] == "In"):
                    ok = False
            if ok:
                return i
        return None

    gaps = []
    order = sorted(present, key=lambda ws: (WAVES.index(ws[0]), ws[1] == "hosted"))
    placed = []
    for wave, side in order:
        step = step_of({WAVE_LABEL: label_value(wave), "nodefleet.io/side": side})
        if step is None:
            gaps.append(
                f"no step selects wave {label_value(wave)} side {side}: its Applications would never sync"
            )
        else:
            placed.append(step)
    if placed != sorted(placed):
        gaps.append(f"{order} fall in steps {placed}: not in wave order, hosted sides after the others")
    if unused := sorted(set(range(len(steps))) - set(placed)):
        gaps.append(f"steps {[i + 1 for i in unused]} select no Application (InvalidRolloutConfig)")
    return gaps


def _present(root: Path) -> set[tuple[str, str]]:
    """(wave, side) of every folder the example stacks render."""
    out = set()
    for folder in _render_folders(root):
        labels = yaml.safe_load((root / folder / ARGOCD_IGNORE_DIFFERENCES_FILE).read_text())["labels"]
        out.add((labels[WAVE_LABEL].split("-", 1)[1], labels["nodefleet.io/side"]))
    return out


def test_argo_cd_rolls_the_waves_out_in_order_hosted_sides_last(published_root: Path) -> None:
    present = _present(published_root)
    assert ("main", "hosted") in present and ("canary", "standalone") in present
    assert _rolling_sync_gaps(_appset(), present) == []
    assert _appset()["spec"]["syncPolicy"] == {"preserveResourcesOnDeletion": True}


def test_a_missing_wave_step_is_caught(published_root: Path) -> None:
    present = _present(published_root)
    appset = _appset()
    del appset["spec"]["strategy"]["rollingSync"]["steps"][1]
    assert _rolling_sync_gaps(appset, present) == [
        "no step selects wave 1-early side standalone: its Applications would never sync"
    ]
    appset = _appset()
    steps = appset["spec"]["strategy"]["rollingSync"]["steps"]
    steps[2], steps[3] = steps[3], steps[2]
    assert any("hosted sides after the others" in g for g in _rolling_sync_gaps(appset, present))
    assert _rolling_sync_gaps(
        _appset(), present | {("last", "standalone")}
    )  # a stack in `last` needs its step
    assert _rolling_sync_gaps(_appset(), present - {("main", "hosted")}) == [
        "steps [4] select no Application (InvalidRolloutConfig)"
    ]


def test_every_application_carries_its_stacks_wave(published_root: Path) -> None:
    apps = _applications(published_root)
    for folder, app in apps.items():
        stack = folder.split("/")[1]
        assert app["metadata"]["labels"][WAVE_LABEL] == label_value(_stack_wave(stack)), folder
    # The example stacks span more than one wave, so the rollout order is exercised.
    assert len({app["metadata"]["labels"][WAVE_LABEL] for app in apps.values()}) >= 3


def _folder_wave(root: Path, folder: str) -> str:
    labels = yaml.safe_load((root / folder / ARGOCD_IGNORE_DIFFERENCES_FILE).read_text())["labels"]
    return str(labels[WAVE_LABEL])


def _flux_wave_gaps(root: Path, kustomizations: list[dict[str, Any]]) -> list[str]:
    """Where Flux would not apply the waves in order: a Kustomization whose label is not its folder's wave,
    that is not health-gated (wait), or that may start before every Kustomization of an earlier wave is Ready
    (Flux reconciles a Kustomization only once all of its dependsOn are Ready)."""
    gaps = []
    wave = {}
    for kz in kustomizations:
        name = kz["metadata"]["name"]
        folder = kz["spec"]["path"].removeprefix("./")
        wave[name] = (kz["metadata"].get("labels") or {}).get(WAVE_LABEL)
        if wave[name] != _folder_wave(root, folder):
            gaps.append(f"{name}: label {wave[name]!r}, its folder's wave is {_folder_wave(root, folder)!r}")
        if kz["spec"].get("wait") is not True:
            gaps.append(f"{name}: no `wait: true`, so it is Ready before what it applied is healthy")
    deps = {
        kz["metadata"]["name"]: [d["name"] for d in kz["spec"].get("dependsOn", [])] for kz in kustomizations
    }

    def after(name: str, seen: frozenset[str] = frozenset()) -> set[str]:
        out: set[str] = set()
        for d in deps[name]:
            if d not in seen:
                out |= {d} | after(d, seen | {name})
        return out

    for name in deps:
        earlier = {other for other in deps if str(wave[other]) < str(wave[name])}
        if missing := sorted(earlier - after(name)):
            gaps.append(f"{name} ({wave[name]}) may start before {missing} are Ready")
        if later := sorted(d for d in after(name) if str(wave[d]) > str(wave[name])):
            gaps.append(f"{name} ({wave[name]}) waits for a later wave: {later}")
    return gaps


def test_flux_applies_the_waves_in_order_behind_health(published_root: Path) -> None:
    assert _flux_wave_gaps(published_root, _kustomizations()) == []


def test_a_missing_flux_wave_dependency_is_caught(published_root: Path) -> None:
    kustomizations = _kustomizations()
    edge = next(kz for kz in kustomizations if kz["metadata"]["name"] == "nodefleet-karpenter-edge")
    del edge["spec"]["dependsOn"]
    gaps = _flux_wave_gaps(published_root, kustomizations)
    # The early wave, and through it every main one, no longer waits for the canary.
    assert "nodefleet-karpenter-edge (1-early) may start before ['nodefleet-dev-dev'] are Ready" in gaps
    assert len(gaps) == 4 and all("['nodefleet-dev-dev'] are Ready" in g for g in gaps)
    edge["spec"]["dependsOn"] = [{"name": "nodefleet-dev-dev"}]
    edge["metadata"]["labels"][WAVE_LABEL] = "0-canary"
    assert any("its folder's wave is '1-early'" in g for g in _flux_wave_gaps(published_root, kustomizations))


def test_the_flux_url_form_is_the_upstream_crds() -> None:
    """``gitops`` refuses a repository URL by the pattern of source-controller's own GitRepository CRD."""
    from nodefleet.render.wiring import FLUX_URL

    for path in sorted(CRDS.glob("*.yaml.gz")):
        crd = yaml.safe_load(gzip.decompress(path.read_bytes()))
        if crd["spec"]["names"]["kind"] == "GitRepository":
            for version in crd["spec"]["versions"]:
                url = version["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["url"]
                assert url["pattern"] == FLUX_URL.pattern, version["name"]
            return
    raise AssertionError("no GitRepository CRD among the upstream CRDs")
