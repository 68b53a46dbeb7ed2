"""What "healthy" means for each kind whose health decides a wave, written where Argo CD and Flux read it.

A wave of the GitOps wiring starts when the wave before it is applied *and healthy*: Argo CD's RollingSync
starts a step when every Application of the step before is Healthy, Flux reconciles a Kustomization when every
``dependsOn`` is Ready, and with ``wait: true`` Ready means that what it applied is healthy. Neither tool knows
HyperShift's or the Machine API's kinds: Flux's kstatus calls an object without status conditions Current (a
HostedCluster with no status at all "passed" in 22 ms), Argo CD leaves a kind it has no health check for out of
the Application's health. So each kind here says, once, what its controller reports when it is healthy, still
rolling out, or failed, and :func:`flux_health_check_exprs` (a Kustomization's ``spec.healthCheckExprs``, CEL)
and :func:`argocd_health_customizations` (Lua in ``argocd-cm``, ``resource.customizations.health.<group>_<kind>``)
write it for each tool:

=====================================  =============================================  ==========================  ============================
kind                                   healthy                                        still rolling out           failed
=====================================  =============================================  ==========================  ============================
HostedCluster (HyperShift)             ``Available`` True, ``Progressing`` not True   otherwise                   ``Degraded`` True, ``ValidReleaseImage`` False
NodePool (HyperShift, classic)         ``Ready`` True, ``UpdatingVersion`` and        otherwise                   ``ValidReleaseImage``, ``ValidPlatformImage``,
                                       ``UpdatingConfig`` not True                                                ``ValidMachineConfig`` False
NodePool (Karpenter), EC2NodeClass,    ``Ready`` True                                 otherwise                   never (a class or pool not Ready yet is waited for)
OpenshiftEC2NodeClass
MachineSet (Machine API)               ``status.availableReplicas`` = ``spec.replicas``  otherwise                ``status.errorReason`` set
                                       and ``status.observedGeneration`` current
=====================================  =============================================  ==========================  ============================

An object whose controller has written no status yet is still rolling out, never healthy. Flux also holds an
object whose ``status.observedGeneration`` is behind ``metadata.generation`` (kustomize-controller's own rule,
``fluxcd/pkg/runtime/cel`` ``StatusEvaluator``); the Lua does the same. HyperShift's HostedCluster and NodePool
have no ``status.observedGeneration``: their controller stamps each condition with the generation it judged
(``conditions[].observedGeneration``). A condition stamped with an older generation than the object's says
nothing about the spec as it is now (a HostedCluster whose release was just bumped still reads the
``Available=True`` of the release before), so it is not read: the object is still rolling out until its
controller has judged the current spec. Argo CD has health checks of its own for
Karpenter's ``NodePool`` and ``EC2NodeClass`` (``resource_customizations/karpenter.sh``, ``karpenter.k8s.aws``:
Ready True healthy, Ready False degraded, else progressing); nodefleet leaves those in place and writes Lua only
for the kinds Argo CD has none for.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

__all__ = [
    "HEALTH_RULES",
    "HealthRule",
    "argocd_health_customizations",
    "argocd_health_key",
    "flux_health_check_exprs",
    "health",
]


@dataclass(frozen=True)
class HealthRule:
    """What one kind's controller reports: conditions (type, status) that mean healthy, rolling, failed."""

    api_version: str
    kind: str
    #: Every one must hold for the object to be healthy.
    healthy: tuple[tuple[str, str], ...] = ()
    #: Any one of them means still rolling out (checked before healthy).
    rolling: tuple[tuple[str, str], ...] = ()
    #: Any one of them means failed.
    failed: tuple[tuple[str, str], ...] = ()
    #: Healthy is the Machine API's replica count instead of conditions (a MachineSet).
    replicas: bool = False
    #: Argo CD has a health check of its own for the kind: no Lua is written for it.
    argocd_builtin: bool = False

    @property
    def group(self) -> str:
        return self.api_version.rpartition("/")[0]


HEALTH_RULES: tuple[HealthRule, ...] = (
    HealthRule(
        "hypershift.openshift.io/v1beta1",
        "HostedCluster",
        healthy=(("Available", "True"),),
        rolling=(("Progressing", "True"),),
        failed=(("Degraded", "True"), ("ValidReleaseImage", "False")),
    ),
    HealthRule(
        "hypershift.openshift.io/v1beta1",
        "NodePool",
        healthy=(("Ready", "True"),),
        rolling=(("UpdatingVersion", "True"), ("UpdatingConfig", "True")),
        failed=(
            ("ValidReleaseImage", "False"),
            ("ValidPlatformImage", "False"),
            ("ValidMachineConfig", "False"),
        ),
    ),
    HealthRule("karpenter.sh/v1", "NodePool", healthy=(("Ready", "True"),), argocd_builtin=True),
    HealthRule("karpenter.k8s.aws/v1", "EC2NodeClass", healthy=(("Ready", "True"),), argocd_builtin=True),
    HealthRule("karpenter.hypershift.openshift.io/v1", "OpenshiftEC2NodeClass", healthy=(("Ready", "True"),)),
    HealthRule("machine.openshift.io/v1beta1", "MachineSet", replicas=True),
)


def _conditions(obj: dict[str, Any]) -> dict[str, str]:
    """The object's conditions judged for its current generation (a condition without ``observedGeneration``
    counts; one stamped with another generation does not)."""
    found = ((obj.get("status") or {}).get("conditions")) or []
    generation = (obj.get("metadata") or {}).get("generation")
    return {
        str(c.get("type")): str(c.get("status"))
        for c in found
        if isinstance(c, dict) and (c.get("observedGeneration") in (None, generation) or generation is None)
    }


def health(rule: HealthRule, obj: dict[str, Any]) -> str:
    """``Healthy``, ``Progressing`` or ``Degraded``: the judgment both tools are given, for tests and readers."""
    status = obj.get("status")
    if not isinstance(status, dict) or not status:
        return "Progressing"
    generation = (obj.get("metadata") or {}).get("generation")
    observed = status.get("observedGeneration")
    if isinstance(generation, int) and isinstance(observed, int) and observed != generation:
        return "Progressing"
    if rule.replicas:
        if status.get("errorReason"):
            return "Degraded"
        wanted = (obj.get("spec") or {}).get("replicas", 1)
        return "Healthy" if int(status.get("availableReplicas") or 0) == wanted else "Progressing"
    conditions = _conditions(obj)
    if any(conditions.get(t) == s for t, s in rule.rolling):
        return "Progressing"
    if any(conditions.get(t) == s for t, s in rule.failed):
        return "Degraded"
    if all(conditions.get(t) == s for t, s in rule.healthy):
        return "Healthy"
    return "Progressing"


#: A condition judged for the object's current generation (CEL): unstamped, or stamped with it.
_CEL_CURRENT = (
    "(!has(c.observedGeneration) || !has(metadata.generation) || c.observedGeneration == metadata.generation)"
)


def _cel_any(pairs: tuple[tuple[str, str], ...]) -> str:
    return " || ".join(
        f"status.conditions.exists(c, c.type == '{t}' && c.status == '{s}' && {_CEL_CURRENT})"
        for t, s in pairs
    )


def flux_health_check_exprs() -> list[dict[str, str]]:
    """kustomize-controller's ``spec.healthCheckExprs`` (v1.5+, ``kustomize.CustomHealthCheck``): per kind, CEL
    over the object's top-level fields. Flux evaluates ``inProgress``, then ``failed``, then ``current``; none
    true is in progress. An object without ``status`` makes the expressions fail to evaluate, which Flux
    reports as status Unknown and keeps waiting for, as for an object still rolling out."""
    out = []
    for rule in HEALTH_RULES:
        entry = {"apiVersion": rule.api_version, "kind": rule.kind}
        if rule.replicas:
            entry["failed"] = "has(status.errorReason) && status.errorReason != ''"
            entry["current"] = (
                "(has(status.availableReplicas) ? status.availableReplicas : 0) == "
                "(has(spec.replicas) ? spec.replicas : 1)"
            )
        else:
            guard = "has(status.conditions) && "
            if rule.rolling:
                entry["inProgress"] = f"{guard}({_cel_any(rule.rolling)})"
            if rule.failed:
                entry["failed"] = f"{guard}({_cel_any(rule.failed)})"
            healthy = " && ".join(_cel_any(((t, s),)) for t, s in rule.healthy)
            entry["current"] = f"{guard}{healthy}"
        out.append(entry)
    return out


#: How every health check starts: an object without status, or whose controller has not observed its latest
#: generation, is still Progressing (kustomize-controller's rule too).
_LUA_PRELUDE = """\
-- Written by `nodefleet gitops` (nodefleet/render/health.py): a {kind} is Healthy when its controller says so.
local hs = {{status = "Progressing", message = "Waiting for {kind} status"}}
if obj.status == nil or next(obj.status) == nil then
  return hs
end
if obj.metadata.generation ~= nil and obj.status.observedGeneration ~= nil
    and obj.status.observedGeneration ~= obj.metadata.generation then
  hs.message = "Waiting for the controller to observe generation " .. obj.metadata.generation
  return hs
end
"""


def _lua_table(pairs: tuple[tuple[str, str], ...]) -> str:
    return "{" + ", ".join(f"{{{json.dumps(t)}, {json.dumps(s)}}}" for t, s in pairs) + "}"


_LUA_CONDITIONS = """\
local conditions = {{}}
if obj.status.conditions ~= nil then
  for _, c in ipairs(obj.status.conditions) do
    -- judged for an older generation: says nothing about the spec as it is now
    if c.observedGeneration == nil or obj.metadata.generation == nil
        or c.observedGeneration == obj.metadata.generation then
      conditions[c.type] = c
    end
  end
end
local function holds(list)
  for _, want in ipairs(list) do
    local c = conditions[want[1]]
    if c ~= nil and c.status == want[2] then
      return c
    end
  end
  return nil
end
local c = holds({rolling})
if c ~= nil then
  hs.message = c.type .. "=" .. c.status .. ": " .. (c.message or "")
  return hs
end
c = holds({failed})
if c ~= nil then
  hs.status = "Degraded"
  hs.message = c.type .. "=" .. c.status .. ": " .. (c.message or "")
  return hs
end
for _, want in ipairs({healthy}) do
  local h = conditions[want[1]]
  if h == nil or h.status ~= want[2] then
    hs.message = "Waiting for " .. want[1] .. "=" .. want[2]
    return hs
  end
end
hs.status = "Healthy"
hs.message = "{kind} is healthy"
return hs
"""

_LUA_REPLICAS = """\
if obj.status.errorReason ~= nil and obj.status.errorReason ~= "" then
  hs.status = "Degraded"
  hs.message = obj.status.errorReason .. ": " .. (obj.status.errorMessage or "")
  return hs
end
local wanted = 1
if obj.spec ~= nil and obj.spec.replicas ~= nil then
  wanted = obj.spec.replicas
end
local available = obj.status.availableReplicas or 0
if available == wanted then
  hs.status = "Healthy"
  hs.message = available .. " of " .. wanted .. " machines available"
  return hs
end
hs.message = available .. " of " .. wanted .. " machines available"
return hs
"""


def argocd_health_key(rule: HealthRule) -> str:
    """The ``argocd-cm`` key of a kind's health check: ``resource.customizations.health.<group>_<kind>``."""
    return f"resource.customizations.health.{rule.group}_{rule.kind}"


def argocd_health_customizations() -> dict[str, str]:
    """Lua health checks for ``argocd-cm``, for the kinds Argo CD has none for (Karpenter's have their own)."""
    out = {}
    for rule in HEALTH_RULES:
        if rule.argocd_builtin:
            continue
        prelude = _LUA_PRELUDE.format(kind=rule.kind)
        if rule.replicas:
            out[argocd_health_key(rule)] = prelude + _LUA_REPLICAS
            continue
        out[argocd_health_key(rule)] = prelude + _LUA_CONDITIONS.format(
            kind=rule.kind,
            rolling=_lua_table(rule.rolling),
            failed=_lua_table(rule.failed),
            healthy=_lua_table(rule.healthy),
        )
    return out
