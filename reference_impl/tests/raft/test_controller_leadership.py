"""ElectLeaders, automatic leader rebalancing and partition reassignment (KIP-455) on the quorum
controller, in the simulator: per-partition errors as Kafka's, answers only once committed, the
add-then-remove steps recorded in the partition, and every replica of the quorum agreeing."""

from __future__ import annotations

import itertools
from typing import Any

from kio.schema.errors import ErrorCode

from reference_impl.core.controller.leadership import PREFERRED, UNCLEAN
from reference_impl.core.controller.messages import (
    AlterPartitionReassignmentsRequest,
    ElectLeadersRequest,
    ListPartitionReassignmentsRequest,
)
from reference_impl.core.controller.quorum import ControllerConfig
from reference_impl.sim.engine.simulation import Simulation

from .test_controller import BROKERS, SESSION_MS, active, alter_isr, ask, cluster, create, partition, settle

_ids = itertools.count(50_000)


def elect(sim: Simulation, election_type: int, *partitions: tuple[str, int]) -> dict[Any, ErrorCode]:
    body = ElectLeadersRequest(
        correlation_id=next(_ids), election_type=election_type, partitions=partitions or None
    )
    answer = ask(sim, body)
    assert answer.error_code == ErrorCode.none
    return {(t, p): code for t, p, code, _message in answer.results}


def reassign(sim: Simulation, *moves: tuple[str, int, tuple[int, ...] | None]) -> dict[Any, ErrorCode]:
    body = AlterPartitionReassignmentsRequest(correlation_id=next(_ids), reassignments=moves)
    answer = ask(sim, body)
    return {(t, p): code for t, p, code, _message in answer.results}


def ongoing(sim: Simulation) -> list[Any]:
    answer = ask(sim, ListPartitionReassignmentsRequest(correlation_id=next(_ids), partitions=None))
    return list(answer.ongoing)


def move_leadership_off_preferred(sim: Simulation, topic: str) -> int:
    """Crash the preferred leader until another replica leads, restart it, wait until it is back in
    the ISR (the leader's AlterPartition); returns the preferred replica."""
    info = partition(sim, topic)
    preferred = info.replicas[0]
    assert info.leader == preferred
    sim.crash(preferred)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    assert partition(sim, topic).leader not in (preferred, -1)
    sim.restart(preferred)
    assert sim.run_until_true(lambda: not active(sim).active.image.brokers[preferred].fenced, 15_000)
    assert alter_isr(sim, topic, tuple(sorted(info.replicas))) == ErrorCode.none
    return preferred


def test_preferred_election_moves_leadership_back_with_kafkas_errors() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "p", partitions=1, rf=3)
    create(sim, "q", partitions=1, rf=3)
    preferred = move_leadership_off_preferred(sim, "p")
    before = partition(sim, "p")
    results = elect(sim, PREFERRED, ("p", 0), ("q", 0), ("missing", 0))
    assert results == {
        ("p", 0): ErrorCode.none,
        ("q", 0): ErrorCode.election_not_needed,
        ("missing", 0): ErrorCode.unknown_topic_or_partition,
    }
    after = active(sim).image.topics["p"].partitions[0]  # the committed image: answered after commit
    assert after.leader == preferred and after.leader_epoch == before.leader_epoch + 1
    assert elect(sim, PREFERRED) == {}  # every partition: nothing needed, nothing listed
    settle(sim)
    summaries = {n: sim.node(n).image.summary()["topics"] for n in BROKERS}
    assert all(s == summaries[BROKERS[0]] for s in summaries.values())


def test_preferred_leader_not_available_when_out_of_the_isr_or_fenced() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "p", partitions=1, rf=3)
    preferred = move_leadership_off_preferred(sim, "p")
    leader = partition(sim, "p").leader
    assert alter_isr(sim, "p", (leader,)) == ErrorCode.none
    assert elect(sim, PREFERRED, ("p", 0)) == {("p", 0): ErrorCode.preferred_leader_not_available}
    assert alter_isr(sim, "p", tuple(sorted(partition(sim, "p").replicas))) == ErrorCode.none
    sim.crash(preferred)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    assert elect(sim, PREFERRED, ("p", 0)) == {("p", 0): ErrorCode.preferred_leader_not_available}


def test_unclean_election_on_request() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "u", partitions=1, rf=2)
    info = partition(sim, "u")
    assert elect(sim, UNCLEAN, ("u", 0)) == {("u", 0): ErrorCode.election_not_needed}
    assert alter_isr(sim, "u", (info.leader,)) == ErrorCode.none
    survivor = next(r for r in info.replicas if r != info.leader)
    sim.crash(info.leader)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    assert partition(sim, "u").leader == -1  # clean elections only: it waits for its ISR
    assert elect(sim, UNCLEAN, ("u", 0)) == {("u", 0): ErrorCode.none}
    assert (partition(sim, "u").leader, partition(sim, "u").isr) == (survivor, (survivor,))
    sim.crash(survivor)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    assert elect(sim, UNCLEAN, ("u", 0)) == {("u", 0): ErrorCode.eligible_leaders_not_available}


def test_auto_rebalance_gives_leaderships_back_on_the_check_interval() -> None:
    sim, _ = cluster(leader_imbalance_check_interval_ms=5_000)
    create(sim, "r", partitions=1, rf=3)
    preferred = move_leadership_off_preferred(sim, "r")
    assert sim.run_until_true(lambda: partition(sim, "r").leader == preferred, 6_000)


def test_no_auto_rebalance_when_disabled() -> None:
    sim, _ = cluster(auto_leader_rebalance=False, leader_imbalance_check_interval_ms=1_000)
    create(sim, "r", partitions=1, rf=3)
    preferred = move_leadership_off_preferred(sim, "r")
    settle(sim, 5_000)
    assert partition(sim, "r").leader != preferred


def test_reassignment_adds_then_removes_and_moves_the_leader_off_a_leaving_replica() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "m", partitions=1, rf=2)
    info = partition(sim, "m")
    (outsider,) = set(BROKERS) - set(info.replicas)
    keep = next(r for r in info.replicas if r != info.leader)
    target = (outsider, keep)
    assert reassign(sim, ("m", 0, target)) == {("m", 0): ErrorCode.none}
    moving = active(sim).image.topics["m"].partitions[0]  # committed before the answer
    assert moving.replicas == (outsider, keep, info.leader)
    assert (moving.adding_replicas, moving.removing_replicas) == ((outsider,), (info.leader,))
    assert moving.leader == info.leader and moving.isr == info.isr
    [listed] = ongoing(sim)
    assert (listed.topic, listed.replicas, listed.adding_replicas) == ("m", moving.replicas, (outsider,))
    # the added replica catches up: the leader adds it to the ISR, which completes the move
    assert alter_isr(sim, "m", tuple(sorted((info.leader, keep, outsider)))) == ErrorCode.none
    done = partition(sim, "m")
    assert done.replicas == target and done.adding_replicas == () and done.removing_replicas == ()
    assert done.isr == tuple(r for r in sorted((info.leader, keep, outsider)) if r in target)
    assert done.leader == outsider and done.leader_epoch == info.leader_epoch + 1
    assert ongoing(sim) == []
    settle(sim)
    assert all(
        sim.node(n).image.summary()["topics"] == active(sim).image.summary()["topics"] for n in BROKERS
    )


def test_reassignment_errors_and_cancel() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "m", partitions=1, rf=2)
    info = partition(sim, "m")
    (outsider,) = set(BROKERS) - set(info.replicas)
    assert reassign(sim, ("m", 0, ())) == {("m", 0): ErrorCode.invalid_replica_assignment}
    assert reassign(sim, ("m", 0, (outsider, outsider))) == {("m", 0): ErrorCode.invalid_replica_assignment}
    assert reassign(sim, ("m", 0, (outsider, 999))) == {("m", 0): ErrorCode.invalid_replica_assignment}
    assert reassign(sim, ("m", 0, None)) == {("m", 0): ErrorCode.no_reassignment_in_progress}
    assert reassign(sim, ("nope", 0, (outsider,))) == {("nope", 0): ErrorCode.unknown_topic_or_partition}
    assert reassign(sim, ("m", 0, info.replicas)) == {("m", 0): ErrorCode.none}
    assert partition(sim, "m") == info  # already there: nothing written
    assert reassign(sim, ("m", 0, (*info.replicas, outsider))) == {("m", 0): ErrorCode.none}
    assert partition(sim, "m").adding_replicas == (outsider,)
    assert reassign(sim, ("m", 0, None)) == {("m", 0): ErrorCode.none}
    reverted = partition(sim, "m")
    assert (reverted.replicas, reverted.adding_replicas, reverted.leader) == (info.replicas, (), info.leader)
    # removing a replica only completes at once (nothing to wait for)
    assert reassign(sim, ("m", 0, (info.leader,))) == {("m", 0): ErrorCode.none}
    shrunk = partition(sim, "m")
    assert (shrunk.replicas, shrunk.isr, shrunk.removing_replicas) == ((info.leader,), (info.leader,), ())


def test_reassignment_survives_controller_failover() -> None:
    sim, _ = cluster(auto_leader_rebalance=False)
    create(sim, "f", partitions=1, rf=2)
    info = partition(sim, "f")
    (outsider,) = set(BROKERS) - set(info.replicas)
    assert reassign(sim, ("f", 0, (outsider, info.leader))) == {("f", 0): ErrorCode.none}
    old = next(n for n in (1, 2, 3) if sim.node(n).controller.is_active)
    sim.crash(old)
    assert sim.run_until_true(
        lambda: any(sim.node(n).controller.is_active for n in (1, 2, 3) if n != old), 10_000
    )
    [listed] = ongoing(sim)
    assert listed.adding_replicas == (outsider,)
    assert alter_isr(sim, "f", tuple(sorted((*info.isr, outsider)))) == ErrorCode.none
    assert partition(sim, "f").replicas == (outsider, info.leader) and ongoing(sim) == []


def test_controller_config_defaults_are_kafkas() -> None:
    config = ControllerConfig()
    assert config.auto_leader_rebalance is True
    assert config.leader_imbalance_check_interval_ms == 300_000
