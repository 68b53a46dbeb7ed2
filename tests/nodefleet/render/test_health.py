"""What healthy means per kind (nodefleet/render/health.py), as each tool is given it: Flux's healthCheckExprs
evaluated with a real CEL implementation (Google's, cel-expr-python) in the order kustomize-controller v1.9.6 uses
(``fluxcd/pkg/runtime/cel`` StatusEvaluator: observedGeneration, inProgress, failed, current, else in progress),
and Argo CD's Lua run by a real Lua interpreter (lupa) with the object as Argo CD passes it (``obj``). Both must
agree with the table the docs print, on objects as HyperShift, Karpenter and the Machine API write them."""

from __future__ import annotations

from typing import Any

import pytest
from cel_expr_python import cel
from cel_expr_python.ext import ext_optional, ext_strings
from lupa import LuaRuntime

from nodefleet.render.health import (
    HEALTH_RULES,
    HealthRule,
    argocd_health_customizations,
    argocd_health_key,
    flux_health_check_exprs,
    health,
)

FIELDS = ("apiVersion", "kind", "metadata", "spec", "status")


def _rule(kind: str, group: str) -> HealthRule:
    (rule,) = [r for r in HEALTH_RULES if r.kind == kind and r.group == group]
    return rule


def _obj(rule: HealthRule, conditions: dict[str, str] | None = None, **status: Any) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "apiVersion": rule.api_version,
        "kind": rule.kind,
        "metadata": {"name": "x", "generation": 2},
    }
    obj["spec"] = {"replicas": 2} if rule.replicas else {}
    if conditions is not None or status:
        obj["status"] = dict(status)
        if conditions is not None:
            obj["status"]["conditions"] = [
                {"type": t, "status": s, "reason": "AsExpected", "message": f"{t} is {s}"}
                for t, s in conditions.items()
            ]
    return obj


def _stamped(rule: HealthRule, conditions: dict[str, str], observed: int) -> dict[str, Any]:
    """An object of generation 2 whose conditions were judged for generation ``observed``."""
    obj = _obj(rule, conditions)
    for c in obj["status"]["conditions"]:
        c["observedGeneration"] = observed
    return obj


HC = _rule("HostedCluster", "hypershift.openshift.io")
NP = _rule("NodePool", "hypershift.openshift.io")
KNP = _rule("NodePool", "karpenter.sh")
OCNC = _rule("OpenshiftEC2NodeClass", "karpenter.hypershift.openshift.io")
MS = _rule("MachineSet", "machine.openshift.io")

CASES = [
    (HC, _obj(HC), "Progressing"),
    (HC, _obj(HC, {"Available": "False", "Progressing": "True"}), "Progressing"),
    (HC, _obj(HC, {"Available": "True", "Progressing": "False", "Degraded": "False"}), "Healthy"),
    (HC, _obj(HC, {"Available": "True", "Progressing": "True"}), "Progressing"),  # an upgrade rolling out
    (HC, _obj(HC, {"Available": "True", "Progressing": "False", "Degraded": "True"}), "Degraded"),
    (HC, _obj(HC, {"Available": "False", "ValidReleaseImage": "False"}), "Degraded"),
    (HC, _obj(HC, {"Available": "True"}, observedGeneration=1), "Progressing"),  # spec not observed yet
    # HyperShift stamps each condition with the generation it judged: the Available of the release before a
    # bump is not the health of the bumped spec; the current generation's is.
    (HC, _stamped(HC, {"Available": "True", "Progressing": "False"}, 1), "Progressing"),
    (HC, _stamped(HC, {"Available": "True", "Progressing": "False"}, 2), "Healthy"),
    (HC, _stamped(HC, {"Available": "True", "Degraded": "True"}, 1), "Progressing"),
    (NP, _stamped(NP, {"Ready": "True", "UpdatingVersion": "False"}, 1), "Progressing"),
    (NP, _stamped(NP, {"Ready": "True", "UpdatingVersion": "False"}, 2), "Healthy"),
    (OCNC, _stamped(OCNC, {"Ready": "True"}, 1), "Progressing"),
    (NP, _obj(NP, {"Ready": "True", "UpdatingVersion": "False"}), "Healthy"),
    (NP, _obj(NP, {"Ready": "True", "UpdatingVersion": "True"}), "Progressing"),
    (NP, _obj(NP, {"Ready": "True", "UpdatingConfig": "True"}), "Progressing"),
    (NP, _obj(NP, {"Ready": "False", "ValidPlatformImage": "False"}), "Degraded"),
    (NP, _obj(NP, {"Ready": "False"}), "Progressing"),
    (KNP, _obj(KNP, {"Ready": "True"}), "Healthy"),
    (KNP, _obj(KNP, {"Ready": "False"}), "Progressing"),
    (KNP, _obj(KNP), "Progressing"),
    (OCNC, _obj(OCNC, {"Ready": "True"}), "Healthy"),
    (OCNC, _obj(OCNC, {}), "Progressing"),
    (MS, _obj(MS, availableReplicas=2, readyReplicas=2, observedGeneration=2), "Healthy"),
    (MS, _obj(MS, availableReplicas=1, observedGeneration=2), "Progressing"),
    (MS, _obj(MS, availableReplicas=2, observedGeneration=1), "Progressing"),
    (MS, _obj(MS, availableReplicas=0, errorReason="InvalidConfiguration", observedGeneration=2), "Degraded"),
    (MS, _obj(MS), "Progressing"),
]


@pytest.mark.parametrize(("rule", "obj", "want"), CASES)
def test_the_table(rule: HealthRule, obj: dict[str, Any], want: str) -> None:
    assert health(rule, obj) == want


def _cel_env() -> Any:
    return cel.NewEnv(
        variables=dict.fromkeys(FIELDS, cel.Type.DYN),
        extensions=[ext_optional.ExtOptional(), ext_strings.ExtStrings()],
    )


def _flux(rule: HealthRule, obj: dict[str, Any]) -> str:
    """kustomize-controller's verdict: Current, Failed, InProgress, or Unknown (an expression that cannot be
    evaluated, e.g. on an object without status: the health check keeps waiting)."""
    (exprs,) = [
        e for e in flux_health_check_exprs() if (e["apiVersion"], e["kind"]) == (rule.api_version, rule.kind)
    ]
    status = obj.get("status") or {}
    if (
        isinstance(status.get("observedGeneration"), int)
        and status["observedGeneration"] != obj["metadata"]["generation"]
    ):
        return "InProgress"
    env = _cel_env()
    for key, verdict in (("inProgress", "InProgress"), ("failed", "Failed"), ("current", "Current")):
        if key not in exprs:
            continue
        if "status" not in obj:
            return "Unknown"  # cel-go: "no such attribute(s): status..."
        result = env.compile(exprs[key]).eval(data={k: obj[k] for k in FIELDS if k in obj})
        if result.type().name() == "ERROR":
            return "Unknown"
        if result.value() is True:
            return verdict
    return "InProgress"


FLUX = {"Healthy": {"Current"}, "Degraded": {"Failed"}, "Progressing": {"InProgress", "Unknown"}}


@pytest.mark.parametrize(("rule", "obj", "want"), CASES)
def test_flux_judges_as_the_table_says(rule: HealthRule, obj: dict[str, Any], want: str) -> None:
    assert _flux(rule, obj) in FLUX[want]


def _lua(script: str, obj: dict[str, Any]) -> dict[str, Any]:
    lua = LuaRuntime(unpack_returned_tuples=True)

    def table(value: Any) -> Any:
        if isinstance(value, dict):
            return lua.table_from({k: table(v) for k, v in value.items()})
        if isinstance(value, list):
            return lua.table_from([table(v) for v in value])
        return value

    return dict(lua.execute(f"return function(obj)\n{script}\nend")(table(obj)))


@pytest.mark.parametrize(("rule", "obj", "want"), CASES)
def test_argo_cd_judges_as_the_table_says(rule: HealthRule, obj: dict[str, Any], want: str) -> None:
    scripts = argocd_health_customizations()
    if rule.argocd_builtin:
        assert argocd_health_key(rule) not in scripts  # Argo CD's own check (Ready) stays in place
        return
    result = _lua(scripts[argocd_health_key(rule)], obj)
    assert result["status"] == want, result
    assert isinstance(result["message"], str) and result["message"]


def test_every_kind_whose_deletion_is_guarded_has_its_health_spelt_out() -> None:
    from nodefleet.render.gitops import DELETION_PROTECTED_KINDS

    assert {(r.group, r.kind) for r in HEALTH_RULES} == set(DELETION_PROTECTED_KINDS)
    assert [e["kind"] for e in flux_health_check_exprs()] == [r.kind for r in HEALTH_RULES]
    assert set(argocd_health_customizations()) == {
        "resource.customizations.health.hypershift.openshift.io_HostedCluster",
        "resource.customizations.health.hypershift.openshift.io_NodePool",
        "resource.customizations.health.karpenter.hypershift.openshift.io_OpenshiftEC2NodeClass",
        "resource.customizations.health.machine.openshift.io_MachineSet",
    }
