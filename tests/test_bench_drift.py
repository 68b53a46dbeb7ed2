"""The drift benchmark's counting, on a short stretch of its month (the full month is `python -m bench.drift`)."""

from __future__ import annotations

import itertools

from bench.drift import HOURS, ROTATION_EVERY_H, simulate, timeline


def test_every_event_changes_exactly_what_it_names() -> None:
    """The month's counts are only meaningful if a rotation changes the token and nothing else, and so on."""
    states = timeline()
    changes = {
        "token-rotation": {"token"},
        "ca-rotation": {"ca"},
        "release": {"hosted_release", "standalone_release"},
    }
    fields = ("token", "ca", "hosted_release", "standalone_release")
    for prev, state in itertools.pairwise(states):
        changed = {f for f in fields if getattr(prev, f) != getattr(state, f)}
        assert changed == changes[state.event], (state.hour, state.event, changed)
        assert 0 <= state.hour - prev.hour <= ROTATION_EVERY_H
    rotations = [s.hour for s in states if s.event == "token-rotation"]
    assert all(b - a == ROTATION_EVERY_H for a, b in itertools.pairwise(rotations))
    assert rotations[0] == ROTATION_EVERY_H and HOURS - ROTATION_EVERY_H <= rotations[-1] < HOURS


def test_only_real_changes_drift_nodefleet_modes_on_openshift_karpenter() -> None:
    states = timeline()
    rotations = [s for s in states if s.event == "token-rotation"]
    ca = next(s for s in states if s.event == "ca-rotation")
    first_release = next(s for s in states if s.event == "release")
    # start, two rotations, the release bump (after which rotations carry the new release), the CA rotation
    sample = [states[0], rotations[0], rotations[1], first_release, ca]
    counts, meta = simulate(sample)
    by = {(c.mode, c.karpenter): max(c.node_class_drift.values(), default=0) for c in counts}
    assert by[("naive", "upstream")] == 4  # every event drifts
    assert by[("s3-pointer", "upstream")] == by[("s3-pointer", "openshift-carry")] == 1  # the release only
    for mode in ("legacy", "autonode"):
        assert by[(mode, "upstream")] == 4, mode  # HyperShift's rotating stub, hashed whole
        assert by[(mode, "openshift-carry")] == 1, mode  # only TargetConfigVersionHash counts
    assert all(not c.node_pool_drift for c in counts)
    assert meta["program_runs"] == 3 * len(sample)
    # Karpenter 1.12+ hashes the cluster CA bundle: its rotation drifts every class, whatever nodefleet does.
    assert all(c.cluster_ca_rotation >= 1 for c in counts)
