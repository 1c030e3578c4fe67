"""The membership nemesis' plan and steps, and the decommission plan (pure; the commands and one
real cluster run are in kafka_harness/tests/test_cluster_membership.py)."""

from __future__ import annotations

import pytest

from chaos.nemesis.membership import INTERNAL_MOVED, MAX_MOVED, plan_window
from chaos.nemesis.schedule import parse_faults
from fixtures.wire.membership import MembershipError, Placement, moves_away


def _placements(topic: str, count: int, brokers: int = 3) -> list[Placement]:
    out = []
    for p in range(count):
        replicas = tuple((p + i) % brokers + 1 for i in range(3))
        out.append(Placement(topic, p, replicas[0], replicas, replicas))
    return out


def test_a_window_moves_a_seeded_half_onto_the_new_broker() -> None:
    placements = [*_placements("t", 6), *_placements("other", 4)]
    plan = plan_window(7, placements, ["t"], 4)
    assert plan == plan_window(7, placements, ["t"], 4)  # the same seed, the same plan
    assert len(plan.onto) == 3 and all(topic == "t" for topic, _p in plan.onto)
    for (_topic, p), target in plan.onto.items():
        old = placements[p].replicas
        assert len(target) == len(old) and target.count(4) == 1
        assert [r for r in target if r != 4] == [r for r in old if r in target]  # one replica replaced
    seeds = {tuple(sorted(plan_window(s, placements, ["t"], 4).onto)) for s in range(20)}
    assert len(seeds) > 1  # the seed chooses
    steps = plan.steps()
    assert steps[0] == "add broker 4" and steps[2].startswith("decommission 4")


def test_a_window_is_bounded_and_skips_partitions_already_on_the_broker() -> None:
    many = _placements("t", 1_000)
    assert len(plan_window(1, many, ["t"], 9).onto) == MAX_MOVED
    held = [Placement("t", 0, 4, (4, 1, 2), (4, 1, 2)), Placement("t", 1, 1, (1, 2, 3), (1, 2, 3))]
    assert list(plan_window(1, held, ["t"], 4).onto) == [("t", 1)]
    assert plan_window(1, [], ["t"], 4).onto == {}


def test_a_window_moves_at_most_two_internal_partitions() -> None:
    placements = [*_placements("t", 2), *_placements("__consumer_offsets", 50)]
    onto = plan_window(3, placements, ["t"], 4, ["__consumer_offsets", "__transaction_state"]).onto
    assert sum(1 for topic, _p in onto if topic == "__consumer_offsets") == INTERNAL_MOVED
    assert sum(1 for topic, _p in onto if topic == "t") == 1
    assert set(plan_window(3, placements, ["t"], 4).onto) == {k for k in onto if k[0] == "t"}


def test_decommission_moves_each_replica_to_the_least_loaded_other_broker() -> None:
    placements = [
        Placement("t", 0, 4, (4, 1, 2), (4, 1, 2)),
        Placement("t", 1, 1, (1, 4, 3), (1, 4, 3)),
        Placement("t", 2, 1, (1, 2, 3), (1, 2, 3)),
    ]
    moves = moves_away(placements, 4, [1, 2, 3, 4])
    assert moves == {("t", 0): (3, 1, 2), ("t", 1): (1, 2, 3)}
    with pytest.raises(MembershipError, match="no other broker"):
        moves_away(placements, 4, [1, 2, 4])  # t-0 holds 1 and 2 already


def test_membership_is_a_nemesis_name() -> None:
    assert parse_faults("membership,kill") == ["membership", "kill"]


def test_decommission_waits_until_a_broker_that_was_down_can_take_the_replicas(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Metadata lists no broker that is down: with broker 3 killed, partition [1, 4, 2] has nowhere
    to go; the decommission waits until 3 is listed again, then moves, stops and unregisters."""
    from kio.schema.errors import ErrorCode

    from fixtures.wire import membership

    placements = (Placement("__consumer_offsets", 30, 1, (1, 4, 2), (1, 4, 2)),)
    views = iter([(1, 2, 4), (1, 2, 4), (1, 2, 3, 4)])
    calls: list[str] = []
    monkeypatch.setattr(membership, "POLL_S", 0.0)
    monkeypatch.setattr(membership, "reassigning", lambda addresses: set())

    def view(addresses: object) -> membership.ClusterView:
        brokers = next(views, (1, 2, 3))  # after the unregister: 4 is gone
        return membership.ClusterView(brokers, 1, placements)

    monkeypatch.setattr(membership, "view", view)

    def reassign(addresses: object, moves: object) -> dict[tuple[str, int], ErrorCode]:
        calls.append(f"reassign {moves}")
        return {}

    monkeypatch.setattr(membership, "reassign", reassign)
    monkeypatch.setattr(membership, "wait_moved", lambda a, moves, t: 0.5)
    monkeypatch.setattr(membership, "unregister", lambda a, b: [ErrorCode.none])
    done = membership.decommission(["a:1"], 4, lambda: calls.append("stop"), 5.0)
    assert done.moves == {("__consumer_offsets", 30): (1, 3, 2)}
    assert calls == ["reassign {('__consumer_offsets', 30): (1, 3, 2)}", "stop"]
    assert done.unregister == "none" and done.figures()["placed_s"] >= 0.0
    with pytest.raises(MembershipError, match="no other broker"):  # never listed: the reason is kept
        monkeypatch.setattr(membership, "view", lambda a: membership.ClusterView((1, 2, 4), 1, placements))
        membership.decommission(["a:1"], 4, lambda: calls.append("stop again"), 0.05)
    assert "stop again" not in calls


def test_listing_reassignments_retries_not_controller(monkeypatch: pytest.MonkeyPatch) -> None:
    """A controller moving (a kill) answers NOT_CONTROLLER: asked again, bounded; another error is
    raised at once (seed 8 of the issue-20 command lost a window's moves to one NOT_CONTROLLER)."""
    from types import SimpleNamespace

    from kio.schema.errors import ErrorCode

    from fixtures.wire import membership

    moving = SimpleNamespace(name="t", partitions=[SimpleNamespace(partition_index=2)])
    answers = iter(
        [
            SimpleNamespace(error_code=ErrorCode.not_controller, topics=[]),
            SimpleNamespace(error_code=ErrorCode.none, topics=[moving]),
        ]
    )
    monkeypatch.setattr(membership, "POLL_S", 0.0)
    monkeypatch.setattr(membership, "_each", lambda addresses, ask, timeout_s: next(answers))
    assert membership.reassigning(["a:1"]) == {("t", 2)}
    refused = SimpleNamespace(error_code=ErrorCode.cluster_authorization_failed, topics=[])
    monkeypatch.setattr(membership, "_each", lambda addresses, ask, timeout_s: refused)
    with pytest.raises(MembershipError, match="cluster_authorization_failed"):
        membership.reassigning(["a:1"])
    stuck = SimpleNamespace(error_code=ErrorCode.not_controller, topics=[])
    monkeypatch.setattr(membership, "_each", lambda addresses, ask, timeout_s: stuck)
    with pytest.raises(MembershipError, match="not_controller"):
        membership.reassigning(["a:1"], attempts=3)
