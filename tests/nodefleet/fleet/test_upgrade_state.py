"""The state of a fleet upgrade: validated whole, bound to its plan and run, refused when edited by hand
(nodefleet/fleet/upgrade_state.py)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from nodefleet.fleet import upgrade_state as us
from nodefleet.fleet.upgrade_plan import ClusterMove, FileStep, Plan, Step, WavePlan

RESTART = (
    "run the same command with --restart to plan afresh from the stack files as they are, or remove s.json"
)
SHA = {name: ch * 64 for name, ch in (("a", "a"), ("b", "b"), ("c", "c"), ("d", "d"), ("e", "e"))}


def _plan() -> Plan:
    waves = []
    for wave, stack, (one, two, three) in (("canary", "canary-east", "abc"), ("main", "east-a", "cde")):
        move = ClusterMove(stack, "edge", "hosted", "4.22.3", "4.22.4", "mgmt-use2-a", "clusters")
        steps = (
            Step(
                wave, "control-plane", {stack: FileStep(SHA[one], SHA[two], ("edge: HostedCluster edge: …",))}
            ),
            Step(wave, "nodes", {stack: FileStep(SHA[two], SHA[three], ("edge: NodePool infra: …",))}),
        )
        waves.append(WavePlan(wave, {stack: ("render", ("edge",))}, steps, (move,)))
    return Plan("4.22.4", tuple(waves))


def _state(**kw: Any) -> us.State:
    options: dict[str, Any] = {"stacks_dir": "/fleet/stacks", "selection": ["canary-east", "east-a"], "commit": False,
                               "push": False, "git": None} | kw  # fmt: skip
    return us.new_state(_plan(), **options)


def _advance(state: us.State, n: int) -> us.State:
    plan = state.the_plan()
    for _ in range(n):
        action = us.next_action(state, plan)
        assert action.step is not None
        event = {"stage": "staged", "push": "pushed", "wait": "applied", "gate": "gate"}[action.kind]
        state = us.record(state, action.step, event)
    return state


def test_a_state_round_trips_and_says_what_comes_next() -> None:
    state = _advance(_state(), 3)
    again = us.load(us.dump(state).encode(), "s.json")
    assert again.progress == state.progress and again.plan_digest == _plan().digest()
    action = us.next_action(again, again.the_plan())
    assert (action.kind, action.step.key if action.step else None) == ("gate", "canary/nodes")
    assert us.done_steps(again) == {"canary/control-plane": "gate", "canary/nodes": "staged"}


def test_the_events_of_a_pushed_step() -> None:
    state = _state(commit=True, push=True)
    kinds = []
    plan = state.the_plan()
    while (action := us.next_action(state, plan)).kind != "done":
        assert action.step is not None
        kinds.append(f"{action.kind} {action.step.key}")
        fields = {"commit": "1" * 40} if action.kind == "stage" else {}
        state = us.record(
            state,
            action.step,
            {"stage": "staged", "push": "pushed", "wait": "applied", "gate": "gate"}[action.kind],
            **fields,
        )
    assert kinds[:4] == [
        "stage canary/control-plane",
        "push canary/control-plane",
        "wait canary/control-plane",
        "gate canary/control-plane",
    ]
    assert len(kinds) == 16


def test_which_text_each_stack_file_may_have() -> None:
    state = _state()
    plan = state.the_plan()
    # Only the step staged next may have been edited by a run killed before recording it.
    assert us.expected_files(state, plan) == {"canary-east": (SHA["a"], SHA["b"]), "east-a": (SHA["c"], None)}
    staged = _advance(state, 1)  # canary/control-plane staged, its gate next
    assert us.expected_files(staged, plan)["canary-east"] == (SHA["b"], None)
    assert us.expected_files(_advance(state, 2), plan)["canary-east"] == (SHA["b"], SHA["c"])
    assert us.expected_files(_advance(state, 3), plan)["canary-east"] == (SHA["c"], None)


def _tampered(mutate: Any, reseal: bool) -> bytes:
    data = json.loads(us.dump(_advance(_state(), 1)))
    mutate(data)
    if reseal:
        data.pop("digest")
        data = json.loads(us.dump(us.State.model_validate(data)))
    return json.dumps(data).encode()


def test_a_state_edited_by_hand_to_skip_the_canary_is_refused() -> None:
    def mark_done(data: dict[str, Any]) -> None:
        data["progress"] += [{"step": "canary/control-plane", "event": "gate", "detail": ""},
                             {"step": "canary/nodes", "event": "staged"}, {"step": "canary/nodes", "event": "gate"}]  # fmt: skip

    with pytest.raises(us.StateError) as caught:
        us.load(_tampered(mark_done, reseal=False), "s.json")
    assert str(caught.value) == (
        "s.json: was changed since nodefleet wrote it (its digest does not match its content); nodefleet does not "
        f"follow a state file edited by hand: {RESTART}"
    )


def test_a_state_resealed_with_its_events_out_of_order_is_refused() -> None:
    def skip(data: dict[str, Any]) -> None:
        data["progress"] = [{"step": "main/control-plane", "event": "staged"}]

    with pytest.raises(us.StateError, match=r"its progress is out of order at entry 1 \(staged of main/control-plane, "
                       r"where the plan has staged of canary/control-plane next\)"):  # fmt: skip
        us.load(_tampered(skip, reseal=True), "s.json")


def test_a_state_whose_plan_was_changed_and_resealed_is_refused() -> None:
    def other_stack(data: dict[str, Any]) -> None:
        data["plan"]["waves"][0]["steps"][0]["files"]["canary-east"]["after"] = SHA["e"]

    with pytest.raises(us.StateError, match="its plan does not match the plan digest it names"):
        us.load(_tampered(other_stack, reseal=True), "s.json")


#: The end of the message for a file nodefleet did not write: another path, never --restart, which would write the
#: state over the file.
FOREIGN = "give --state a file of its own (for example --state ../upgrade-state.json), or move s.json out of the way"


@pytest.mark.parametrize(
    ("data", "says", "fix"),
    [
        (b"\xff\xfe{}", "not a fleet upgrade state file (not UTF-8 text: byte 0)", FOREIGN),
        ('{"schema": "caf\xe9"}'.encode("latin-1"), "not UTF-8 text", FOREIGN),
        (b"{", "not a fleet upgrade state file (not JSON at line 1)", FOREIGN),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply", FOREIGN),
        (b"[]", "not a fleet upgrade state file (JSON, but a list, not an object)", FOREIGN),
        (json.dumps({"schema": "other/v9"}).encode(), "its schema is 'other/v9'", FOREIGN),
        # What an earlier nodefleet wrote, or its own state broken: planned afresh over it.
        (
            json.dumps({"release": "4.22.4", "waves": [], "stopped": None}).encode(),
            "it names no schema",
            RESTART,
        ),
        (
            json.dumps({"schema": us.SCHEMA, "release": 4}).encode(),
            "not a valid fleet upgrade state file (release:",
            RESTART,
        ),
    ],
)
def test_a_file_that_is_not_a_state_is_refused_with_what_to_do(data: bytes, says: str, fix: str) -> None:
    with pytest.raises(us.StateError) as caught:
        us.load(data, "s.json")
    assert says in str(caught.value) and str(caught.value).endswith(fix)
    assert (fix == RESTART) == ("--restart" in str(caught.value))


def test_a_state_belongs_to_one_release_fleet_and_way_of_running() -> None:
    state = _state()
    bound = {"release": "4.22.4", "stacks_dir": "/fleet/stacks", "selection": ["canary-east", "east-a"],
             "commit": False, "push": False}  # fmt: skip
    us.check_bound(state, "s.json", **bound)
    with pytest.raises(
        us.StateError, match=r"an upgrade to 4\.22\.4 is not finished; finish it with --release 4\.22\.4"
    ):
        us.check_bound(state, "s.json", **(bound | {"release": "4.22.5"}))
    with pytest.raises(
        us.StateError, match=r"belongs to an upgrade of other stacks \(/fleet/stacks: canary-east, east-a\)"
    ):
        us.check_bound(state, "s.json", **(bound | {"selection": ["east-a"]}))
    with pytest.raises(
        us.StateError, match="this upgrade was started without --commit; continue it without --commit"
    ):
        us.check_bound(state, "s.json", **(bound | {"commit": True}))
