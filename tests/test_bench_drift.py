"""The drift benchmark's counting, on a short stretch of its month (the full month is `python -m bench.drift`)."""

from __future__ import annotations

from bench.drift import simulate, timeline


def test_month_has_the_expected_events() -> None:
    states = timeline()
    events = [s.event for s in states]
    assert events.count("token-rotation") == 130
    assert events.count("ca-rotation") == 1 and events.count("release") == 2
    assert [s.hosted_release for s in states if s.event == "release"] == ["4.22.4", "4.22.5"]


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
