"""Waves: what a stack's `wave` may say, which stacks a change touches, and the matrix a workflow reads."""

from __future__ import annotations

import pytest

from nodefleet.stackfile.waves import (
    DEFAULT_WAVE,
    WAVES,
    StackWave,
    WaveError,
    label_value,
    matrix,
    normalize_wave,
    plan_waves,
    touched_stacks,
)


def test_a_wave_is_a_name_or_its_index_and_the_label_reads_back() -> None:
    assert WAVES == ("canary", "early", "main", "last") and DEFAULT_WAVE == "main"
    for i, name in enumerate(WAVES):
        assert normalize_wave(name) == normalize_wave(i) == normalize_wave(str(i)) == name
        assert normalize_wave(label_value(name)) == name
    assert normalize_wave(" Canary ") == "canary"
    assert [label_value(w) for w in WAVES] == sorted(label_value(w) for w in WAVES)


@pytest.mark.parametrize("bad", [4, -1, True, 1.5, None, "beta", "4", "0-main", ""])
def test_anything_else_is_refused_with_the_choices(bad: object) -> None:
    with pytest.raises(WaveError, match=r"not a wave; .*canary \(0\), early \(1\), main \(2\), last \(3\)"):
        normalize_wave(bad)


def test_a_misspelt_wave_gets_a_did_you_mean() -> None:
    with pytest.raises(WaveError, match="did you mean 'canary'"):
        normalize_wave("canery")


STACKS = [
    StackWave("web", "main", "stacks/Pulumi.web.yaml"),
    StackWave("dev", "canary", "stacks/Pulumi.dev.yaml"),
    StackWave("edge", "early", "stacks/Pulumi.edge.yaml", "apply"),
    StackWave("db", "main", "stacks/Pulumi.db.yaml"),
]


def test_waves_are_planned_in_order_and_every_wave_is_listed() -> None:
    plan = plan_waves(STACKS)
    assert [(w, [s.stack for s in members]) for w, members in plan] == [
        ("canary", ["dev"]),
        ("early", ["edge"]),
        ("main", ["db", "web"]),
        ("last", []),
    ]


def test_a_stack_file_touches_its_stack_and_shared_code_touches_every_stack() -> None:
    assert touched_stacks(["stacks/Pulumi.dev.yaml", "README.md", "docs/x.md", "tests/t.py"], STACKS) == {
        "dev": "stacks/Pulumi.dev.yaml"
    }
    every = touched_stacks(["components/machinesets.py"], STACKS)
    assert set(every) == {s.stack for s in STACKS} and set(every.values()) == {"components/machinesets.py"}
    for shared in (
        "__main__.py",
        "nodefleet/stackfile/waves.py",
        "policies/pack.py",
        "requirements.txt",
        "Pulumi.yaml",
    ):
        assert len(touched_stacks([shared], STACKS)) == 4, shared
    # A path that only starts like a shared one, and a deleted stack's file, touch nothing.
    assert touched_stacks(["nodefleetish/x.py", "stacks/Pulumi.gone.yaml", "", "./cli/main.py"], STACKS) == {}
    assert touched_stacks(["./stacks/Pulumi.web.yaml\n"], STACKS) == {"web": "stacks/Pulumi.web.yaml"}


def test_a_catalog_touches_the_stacks_whose_clusters_name_it() -> None:
    stacks = [
        StackWave("a", "main", "stacks/Pulumi.a.yaml", catalogs=("catalogs/coreos-bootimages-5.0.yaml",)),
        StackWave("b", "main", "stacks/Pulumi.b.yaml", catalogs=("catalogs/coreos-bootimages-4.22.yaml",)),
    ]
    assert touched_stacks(["catalogs/coreos-bootimages-5.0.yaml"], stacks) == {
        "a": "catalogs/coreos-bootimages-5.0.yaml"
    }
    assert touched_stacks(["catalogs/other.yaml"], stacks) == {}


def test_the_matrix_lists_every_wave_in_order_with_github_matrices() -> None:
    out = matrix(STACKS)
    assert out["order"] == list(WAVES) and list(out["waves"]) == list(WAVES)
    assert [s["stack"] for s in out["stacks"]] == ["dev", "edge", "db", "web"]
    main = out["waves"]["main"]
    assert main["size"] == 2 and main["label"] == "2-main"
    assert main["matrix"] == {
        "include": [
            {"wave": "main", "job": "2-main-001", "stacks": "db", "count": 1},
            {"wave": "main", "job": "2-main-002", "stacks": "web", "count": 1},
        ]
    }
    assert out["waves"]["last"] == {
        "index": 3, "label": "3-last", "size": 0, "jobs": 0, "stacks": [], "matrix": {"include": []}
    }  # fmt: skip
    touched = matrix(STACKS, touched={"web": "nodefleet/x.py"})
    assert touched["total"] == 1 and touched["stacks"][0]["reason"] == "nodefleet/x.py"
    assert [w["size"] for w in touched["waves"].values()] == [0, 0, 1, 0]


def test_a_wave_larger_than_a_github_matrix_is_batched() -> None:
    many = [StackWave(f"s{i:03d}", "main", f"stacks/Pulumi.s{i:03d}.yaml") for i in range(500)]
    main = matrix(many)["waves"]["main"]
    assert main["size"] == 500 and main["jobs"] == 250  # 2 stacks a job keeps it within 256 jobs
    include = main["matrix"]["include"]
    assert all(job["count"] == 2 for job in include)
    assert [s for job in include for s in job["stacks"].split(",")] == [s.stack for s in many]
    assert matrix(many, stacks_per_job=10)["waves"]["main"]["jobs"] == 50
    assert matrix(many, max_jobs_per_wave=100)["waves"]["main"]["jobs"] == 100
    with pytest.raises(ValueError, match="at least 1"):
        matrix(many, stacks_per_job=0)
