"""The go-template actions nodefleet's ApplicationSets use (the one ``gitops`` writes and examples/argocd),
evaluated as Argo CD's ApplicationSet controller does with ``goTemplate: true`` and ``missingkey=error``: a key
a folder's file lacks fails, ``toJson`` is Go's ``encoding/json`` (compact, keys sorted), sprig's ``dig`` gives
the default for a missing key. Any other action fails the test that renders it, so a template change is seen.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_ACTION = re.compile(r"\{\{(.*?)\}\}")


def render_template(text: str, params: Mapping[str, Any]) -> str:
    def action(m: re.Match[str]) -> str:
        expr = m[1].strip()
        if expr == "toJson .ignoreDifferences":
            return json.dumps(params["ignoreDifferences"], sort_keys=True, separators=(",", ":"))
        if expr == "index .path.segments 1":
            return str(params["path"]["segments"][1])
        if expr in (".path.path", ".path.basename", ".application", ".destination.name"):
            value: Any = params
            for key in expr[1:].split("."):
                value = value[key]  # missingkey=error
            return str(value)
        if (label := re.fullmatch(r'index \.labels "([^"]+)"', expr)) is not None:
            return str(params["labels"][label[1]])  # missingkey=error: a folder without it fails
        if expr == 'dig "namespace" "" .destination':  # sprig's dig: the key's value, or the default
            return str(params["destination"].get("namespace", ""))
        raise AssertionError(f"a template action this test does not evaluate: {expr}")

    return _ACTION.sub(action, text)
