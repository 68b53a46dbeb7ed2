"""Forecast accuracy against the drift benchmark, on a stretch of its month (the full month: `python -m bench.forecast`)."""

from __future__ import annotations

from bench.drift import timeline
from bench.forecast import compare


def test_forecast_rollouts_equal_measured_drift_events() -> None:
    states = timeline()
    rotations = [s for s in states if s.event == "token-rotation"]
    ca = next(s for s in states if s.event == "ca-rotation")
    first_release = next(s for s in states if s.event == "release")
    sample = [states[0], rotations[0], rotations[1], first_release, ca]
    rows, meta = compare(sample)
    assert meta["forecasts"] == 3 * 2 * (len(sample) - 1)
    assert all(r["agree"] for r in rows), rows
    by = {(r["mode"], r["karpenter"]): r for r in rows}
    # Under OpenShift's Karpenter only the release bump replaces nodes, once per node class.
    assert by[("autonode", "openshift-carry")]["forecast_node_class"] == {"general": 1, "batch": 1}
    assert by[("autonode", "openshift-carry")]["forecast_by_event"] == {"release": 2}
    # Upstream Karpenter hashes HyperShift's whole stub: every event rolls, and the forecast says so too.
    assert by[("legacy", "upstream")]["forecast_node_class"] == {"general": 4, "batch": 4}
    assert by[("s3-pointer", "upstream")]["forecast_node_class"] == {"general": 1, "arm": 1}
    # The classic HyperShift NodePool follows the control plane's release: one rollout, outside Karpenter.
    assert by[("autonode", "openshift-carry")]["other_rollouts"] == {
        "NodePool (HyperShift) prod-east-infra": 1
    }
