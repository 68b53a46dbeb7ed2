"""How the CEL implementations on PyPI do on the shipped CRDs' rules: the measurement that chose the engine.

For each engine importable in this interpreter: how many of the shipped CRDs' rules it compiles, how many
labelled cases (a real CRD rule, a ``self``/``oldSelf``, the verdict the API server gives) it gets right,
and how fast it evaluates the 20 rules of the Karpenter NodePool CRD on a NodePool. Each engine gets the
same Python implementations of the Kubernetes library functions (``nodefleet.apiserver.formats``) through its own
custom-function API. Only ``cel-expr-python`` is a project dependency; to compare, install the others
elsewhere and put them on ``PYTHONPATH``:

    pip install --target /tmp/cel-engines cel-python==0.5.0 common-expression-language==0.10.0
    PYTHONPATH=/tmp/cel-engines venv/bin/python -m bench.cel_engines
"""

from __future__ import annotations

import abc
import argparse
import contextlib
import json
import time
from collections.abc import Callable
from typing import Any

from nodefleet.apiserver import formats as f
from nodefleet.apiserver.coverage import rule_sites
from nodefleet.apiserver.store import load_index

Case = tuple[str, Any, Any, bool]
_NO_OLD = object()

#: (rule from a shipped CRD, self, oldSelf or _NO_OLD, what the API server decides: True = accepted)
CASES: list[Case] = [
    ("self.max >= self.min", {"min": 1, "max": 5}, _NO_OLD, True),
    ("self.max >= self.min", {"min": 5, "max": 1}, _NO_OLD, False),
    ("!has(self.replicas) || !has(self.autoScaling)", {"replicas": 2}, _NO_OLD, True),
    ("!has(self.replicas) || !has(self.autoScaling)", {"replicas": 2, "autoScaling": {}}, _NO_OLD, False),
    ("self == oldSelf", "HighlyAvailable", "HighlyAvailable", True),
    ("self == oldSelf", "SingleReplica", "HighlyAvailable", False),
    ("self.all(x, has(x.schedule) == has(x.duration))", [{"nodes": "1"}], _NO_OLD, True),
    (
        "self.all(x, has(x.schedule) == has(x.duration))",
        [{"nodes": "0", "schedule": "@daily"}],
        _NO_OLD,
        False,
    ),
    (
        'self.all(x, x in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !x.find("^([^/]+)").endsWith("karpenter.sh"))',
        {"team": "a"},
        _NO_OLD,
        True,
    ),
    (
        'self.all(x, x in ["karpenter.sh/capacity-type", "karpenter.sh/nodepool"] || !x.find("^([^/]+)").endsWith("karpenter.sh"))',
        {"karpenter.sh/x": "a"},
        _NO_OLD,
        False,
    ),
    (
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        [{"operator": "Gt", "values": ["4"]}],
        _NO_OLD,
        True,
    ),
    (
        "self.all(x, (x.operator == 'Gt' || x.operator == 'Lt') ? (x.values.size() == 1 && int(x.values[0]) >= 0) : true)",
        [{"operator": "Gt", "values": ["four"]}],
        _NO_OLD,
        False,
    ),
    ("has(self.replicas) == has(oldSelf.replicas)", {"replicas": 3}, {}, False),
    (
        "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
        [{"rootVolume": True}, {"rootVolume": False}],
        _NO_OLD,
        True,
    ),
    (
        "self.filter(x, has(x.rootVolume)?x.rootVolume==true:false).size() <= 1",
        [{"rootVolume": True}, {"rootVolume": True}],
        _NO_OLD,
        False,
    ),
    ("isURL(self)", "https://oidc.example.com/x", _NO_OLD, True),
    ("isURL(self)", "https://a:b:c/", _NO_OLD, False),
    ("isURL(self) && url(self).getScheme() == 'https'", "http://oidc.example.com/x", _NO_OLD, False),
    ("isCIDR(self) && cidr(self).prefixLength() <= 30", "100.64.0.0/16", _NO_OLD, True),
    ("isCIDR(self) && cidr(self).ip().family() == 6", "100.64.0.0/16", _NO_OLD, False),
    (
        "self.split('/')[2].matches('^[{]?[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}[}]?$')",
        "/subscriptions/12345678-1234-1234-1234-123456789012/x",
        _NO_OLD,
        True,
    ),
    (
        'self.?discoveryURL.orValue("").size() > 0 ? self.issuerURL.size() > 0 : true',
        {"issuerURL": "https://x"},
        _NO_OLD,
        True,
    ),
    (
        "self.?status.bootImageSkewEnforcementStatus.mode.orValue(\"\") == 'Automatic' ? false : true",
        {"spec": {}},
        _NO_OLD,
        True,
    ),
    ("!format.dns1123Subdomain().validate(self).hasValue()", "rhel-10", _NO_OLD, True),
    ("!format.dns1123Subdomain().validate(self).hasValue()", "RHEL_10", _NO_OLD, False),
    ("quantity(self.a).compareTo(quantity(self.b)) >= 0", {"a": "1Gi", "b": "1000Mi"}, _NO_OLD, True),
]


def _k8s_functions() -> dict[str, Callable[..., Any]]:
    """The Kubernetes library as plain Python callables (opaque values as tagged dicts)."""

    def safe(parse: Callable[[str], Any]) -> Callable[[str], bool]:
        def check(s: str) -> bool:
            try:
                parse(str(s))
            except f.FormatError:
                return False
            return True

        return check

    def find(s: str, pattern: str) -> str:
        m = f.re2_compile(str(pattern)).search(str(s))
        return str(m.group(0)) if m else ""

    return {
        "isURL": safe(f.parse_request_uri),
        "url": lambda s: {"#url": str(s)},
        "getScheme": lambda u: f.parse_url(u["#url"]).scheme,
        "getQuery": lambda u: f.parse_url(u["#url"]).query(),
        "isIP": safe(f.parse_ip),
        "isCIDR": safe(f.parse_cidr),
        "cidr": lambda s: {"#cidr": str(s)},
        "ip": lambda c: {"#ip": str(f.parse_cidr(c["#cidr"])[0])},
        "family": lambda i: f.parse_ip(i["#ip"]).version,
        "prefixLength": lambda c: f.parse_cidr(c["#cidr"])[1],
        "isQuantity": safe(f.parse_quantity),
        "quantity": lambda s: {"#q": str(s)},
        "compareTo": lambda a, b: (
            (f.parse_quantity(a["#q"]) > f.parse_quantity(b["#q"]))
            - (f.parse_quantity(a["#q"]) < f.parse_quantity(b["#q"]))
        ),
        "find": find,
    }


class Engine(abc.ABC):
    """One CEL implementation under comparison: compile a rule once, run it on self (and oldSelf)."""

    name = ""
    version = ""

    @abc.abstractmethod
    def compile(self, rule: str) -> Any: ...

    @abc.abstractmethod
    def run(self, program: Any, self_value: Any, old: Any) -> Any: ...


class CelExprPython(Engine):
    """Google's C++ CEL implementation (cel-expr-python), with nodefleet's environment."""

    name = "cel-expr-python"

    def __init__(self) -> None:
        from importlib.metadata import version

        from nodefleet.apiserver import cel as crd_cel

        self.version = version("cel-expr-python")
        self._cel = crd_cel

    def compile(self, rule: str) -> Any:
        compiled = self._cel.compile_rule({"rule": rule})
        if compiled.error:
            raise ValueError(compiled.error)
        return compiled

    def run(self, program: Any, self_value: Any, old: Any) -> Any:
        outcome = self._cel.evaluate(program, self_value, *(() if old is _NO_OLD else (old,)))
        if outcome.passed is None:
            raise ValueError(outcome.detail)
        return outcome.passed


class CelPython(Engine):
    """cel-python (celpy), pure Python."""

    name = "cel-python"

    def __init__(self) -> None:
        from importlib.metadata import version

        import celpy

        self.version = version("cel-python")
        self._celpy = celpy
        self._env = celpy.Environment()
        self._functions = {name: self._wrap(fn) for name, fn in _k8s_functions().items()}

    def _wrap(self, fn: Callable[..., Any]) -> Callable[..., Any]:
        from celpy import json_to_cel

        def call(*args: Any) -> Any:
            return json_to_cel(fn(*[_plain(a) for a in args]))

        return call

    def compile(self, rule: str) -> Any:
        return self._env.program(self._env.compile(rule), functions=self._functions)

    def run(self, program: Any, self_value: Any, old: Any) -> Any:
        from celpy import json_to_cel

        activation = {"self": json_to_cel(self_value)}
        if old is not _NO_OLD:
            activation["oldSelf"] = json_to_cel(old)
        result = program.evaluate(activation)
        if isinstance(result, Exception):
            return False  # an evaluation error rejects the object, as in the API server
        return bool(result)


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, str):
        return str(value)
    return value


class CommonExpressionLanguage(Engine):
    """common-expression-language: Python bindings of the Rust ``cel`` crate."""

    name = "common-expression-language"

    def __init__(self) -> None:
        from importlib.metadata import version

        import cel

        self.version = version("common-expression-language")
        self._cel = cel

    def compile(self, rule: str) -> Any:
        return self._cel.compile(rule)

    def run(self, program: Any, self_value: Any, old: Any) -> Any:
        context = self._cel.Context()
        for name, fn in _k8s_functions().items():
            context.add_function(name, fn)
        context.add_variable("self", self_value)
        if old is not _NO_OLD:
            context.add_variable("oldSelf", old)
        try:
            return bool(program.execute(context))
        except (RuntimeError, ValueError, TypeError, KeyError) as e:
            if "Undeclared" in str(e) or ("not found" in str(e).lower() and "function" in str(e).lower()):
                raise
            return False


def _engines() -> list[Engine]:
    found: list[Engine] = []
    for cls in (CelExprPython, CelPython, CommonExpressionLanguage):
        try:
            found.append(cls())
        except ImportError:
            continue
    return found


def _nodepool_object() -> dict[str, Any]:
    return {
        "template": {
            "metadata": {"labels": {"team": "batch"}},
            "spec": {
                "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": "EC2NodeClass", "name": "general"},
                "requirements": [
                    {"key": "kubernetes.io/arch", "operator": "In", "values": ["amd64"]},
                    {"key": "karpenter.sh/capacity-type", "operator": "In", "values": ["spot"]},
                    {
                        "key": "karpenter.k8s.aws/instance-category",
                        "operator": "In",
                        "values": ["c", "m", "r"],
                    },
                ],
            },
        },
        "disruption": {"budgets": [{"nodes": "10%", "reasons": ["Drifted"]}]},
    }


def measure(engine: Engine, repeat: int) -> dict[str, Any]:
    rules = [spec["rule"] for v in load_index().all_versions() for _, spec in rule_sites(v.schema)]
    compiled = 0
    started = time.perf_counter()
    for rule in rules:
        try:
            engine.compile(rule)
            compiled += 1
        except Exception:
            continue
    compile_s = time.perf_counter() - started
    right = wrong = cannot = 0
    for rule, self_value, old, expected in CASES:
        try:
            verdict = engine.run(engine.compile(rule), self_value, old)
        except Exception:
            cannot += 1
            continue
        if verdict == expected:
            right += 1
        else:
            wrong += 1
    # Speed: every rule of the karpenter.sh NodePool CRD, each at its own node of one NodePool.
    nodepool = load_index().for_object("karpenter.sh/v1", "NodePool")
    assert nodepool is not None
    spec = _nodepool_object()
    sites = []
    for path, rule in rule_sites(nodepool.schema):
        node: Any = {"spec": spec}
        for part in [p for p in path.replace("[]", "").split(".") if p]:
            node = node.get(part) if isinstance(node, dict) else None
        if node is None or "oldSelf" in rule["rule"]:
            continue
        try:
            sites.append((engine.compile(rule["rule"]), node[0] if path.endswith("[]") and node else node))
        except Exception:
            continue
    started = time.perf_counter()
    for _ in range(repeat):
        for program, node in sites:
            with contextlib.suppress(Exception):
                engine.run(program, node, _NO_OLD)
    per_eval_us = 1e6 * (time.perf_counter() - started) / max(1, repeat * len(sites))
    return {
        "engine": engine.name,
        "version": engine.version,
        "rules_compiled": f"{compiled}/{len(rules)}",
        "compile_all_s": round(compile_s, 3),
        "cases_right": f"{right}/{len(CASES)}",
        "cases_wrong": wrong,
        "cases_cannot": cannot,
        "us_per_rule_eval": round(per_eval_us, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = [measure(e, args.repeat) for e in _engines()]
    if args.json:
        print(json.dumps(rows, indent=2))
        return
    for r in rows:
        print(
            f"{r['engine']:28} {r['version']:8} compiled {r['rules_compiled']:8} in {r['compile_all_s']:>6}s  "
            f"cases right {r['cases_right']:6} wrong {r['cases_wrong']:>2} cannot {r['cases_cannot']:>2}  "
            f"{r['us_per_rule_eval']:>8} µs/rule"
        )


if __name__ == "__main__":
    main()
