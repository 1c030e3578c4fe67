"""The controller on the quorum, in the simulator: brokers (metadata-log observers) register,
heartbeat, get fenced and unfenced; topics, elections, AlterPartition, controlled shutdown,
controller failover and snapshots. Every Raft invariant runs after every event."""

from __future__ import annotations

import itertools
import uuid
from typing import Any

import pytest
from kio.schema.errors import ErrorCode

from reference_impl.core.controller.elections import elect_leader
from reference_impl.core.controller.messages import (
    AlterPartitionRequest,
    AlterPartitionResponse,
    CreateTopicsRequest,
    CreateTopicsResponse,
)
from reference_impl.core.controller.quorum import ControllerConfig
from reference_impl.core.controller.records import (
    BrokerRegistrationChangeRecord,
    ControllerImage,
    decode_record,
    decode_snapshot,
    encode_record,
    encode_snapshot,
)
from reference_impl.core.metadata.image import NO_LEADER, PartitionInfo
from reference_impl.core.raft.messages import Envelope
from reference_impl.sim.controller.nodes import active_controller, build_controller_simulation
from reference_impl.sim.engine.simulation import Simulation
from reference_impl.sim.raft.nodes import RaftDisk

BROKERS = (101, 102, 103)
SESSION_MS = ControllerConfig().session_timeout_ms
CLIENT = 0
_correlation = itertools.count(1000)


def cluster(seed: int = 1, **controller: Any) -> tuple[Simulation, dict[int, RaftDisk]]:
    sim, disks = build_controller_simulation(seed, 3, 3, controller_config=ControllerConfig(**controller))
    assert sim.run_until_true(lambda: all(not sim.node(b).fenced for b in BROKERS), 20_000)
    return sim, disks


def active(sim: Simulation) -> Any:
    assert sim.run_until_true(lambda: active_controller(sim) is not None, 20_000)
    return sim.node(active_controller(sim)).controller  # type: ignore[arg-type]


def ask(sim: Simulation, body: Any, to: int | None = None) -> Any:
    """Send a request as an outside client and wait for its answer."""
    destination = to if to is not None else active_controller(sim)
    assert destination is not None
    sim.send(Envelope(source_id=CLIENT, destination_id=destination, body=body))

    def answered() -> bool:
        return any(e.body.correlation_id == body.correlation_id for e in sim.outside.get(CLIENT, []))

    assert sim.run_until_true(answered, 5_000), f"no answer to {body}"
    return next(e.body for e in sim.outside[CLIENT] if e.body.correlation_id == body.correlation_id)


def create(
    sim: Simulation, name: str, partitions: int = 3, rf: int = 3, **configs: str
) -> CreateTopicsResponse:
    body = CreateTopicsRequest(
        correlation_id=next(_correlation),
        name=name,
        num_partitions=partitions,
        replication_factor=rf,
        configs=tuple(configs.items()),
    )
    answer: CreateTopicsResponse = ask(sim, body)
    return answer


def partition(sim: Simulation, topic: str, p: int = 0) -> PartitionInfo:
    return active(sim).active.image.topics[topic].partitions[p]  # type: ignore[no-any-return]


def settle(sim: Simulation, ms: int = 1_000) -> None:
    sim.run_until(sim.now_ms + ms)


def test_brokers_register_with_epochs_and_are_unfenced_once_caught_up() -> None:
    sim, _ = cluster()
    image = active(sim).image
    for broker in BROKERS:
        node = sim.node(broker)
        assert node.broker_epoch == image.broker_epochs[broker]
        assert not image.brokers[broker].fenced
        assert node.raft.published_offset > node.broker_epoch  # it had replayed its own registration
    assert len(set(image.broker_epochs.values())) == 3


def test_topic_creation_commits_before_answering_and_reaches_every_broker() -> None:
    sim, _ = cluster()
    answer = create(sim, "orders")
    assert answer.error_code == ErrorCode.none and answer.topic_id is not None
    controller = active(sim)
    assert controller.image.topics["orders"].topic_id == uuid.UUID(answer.topic_id)  # committed image
    settle(sim)
    expected = controller.image.summary()
    for node_id in (1, 2, 3, *BROKERS):
        image = sim.node(node_id).controller.image if node_id < 100 else sim.node(node_id).image
        assert image.summary() == expected
    assert create(sim, "orders").error_code == ErrorCode.topic_already_exists
    assert create(sim, "too-wide", rf=4).error_code == ErrorCode.invalid_replication_factor
    assert create(sim, "bad name!").error_code == ErrorCode.invalid_topic_exception


def test_a_standby_controller_answers_not_controller() -> None:
    sim, _ = cluster()
    standby = next(n for n in (1, 2, 3) if n != active_controller(sim))
    body = CreateTopicsRequest(
        correlation_id=next(_correlation), name="x", num_partitions=1, replication_factor=1
    )
    assert ask(sim, body, to=standby).error_code == ErrorCode.not_controller


def test_a_silent_broker_is_fenced_after_the_session_timeout_and_loses_its_leaderships() -> None:
    sim, _ = cluster()
    create(sim, "t", partitions=3, rf=3)
    led = [p for p in range(3) if partition(sim, "t", p).leader == 102]
    assert led
    before = {p: partition(sim, "t", p) for p in range(3)}
    old_broker_epoch = sim.node(102).broker_epoch
    sim.crash(102)
    sim.run_until(sim.now_ms + SESSION_MS - 2_100)  # its last heartbeat was at most 2 s ago
    assert not active(sim).active.image.brokers[102].fenced
    sim.run_until(sim.now_ms + 2_200)
    assert active(sim).active.image.brokers[102].fenced
    for p, old in before.items():
        new = partition(sim, "t", p)
        assert 102 not in new.isr
        live_in_order = [r for r in old.replicas if r != 102 and r in old.isr]
        assert new.leader == (live_in_order[0] if old.leader == 102 else old.leader)
        assert new.leader_epoch == old.leader_epoch + (1 if old.leader == 102 else 0)
        assert new.partition_epoch == old.partition_epoch + 1
    sim.restart(102)
    assert sim.run_until_true(lambda: not sim.node(102).fenced, 10_000)
    assert sim.node(102).broker_epoch > old_broker_epoch  # a new registration, a new epoch


def alter_isr(sim: Simulation, topic: str, isr: tuple[int, ...] | None = None) -> ErrorCode:
    """The partition leader's AlterPartition for ``isr`` (default: itself alone)."""
    info = partition(sim, topic)
    image = active(sim).active.image
    body = AlterPartitionRequest(
        correlation_id=next(_correlation),
        broker_id=info.leader,
        broker_epoch=image.broker_epochs[info.leader],
        topic_id=str(image.topics[topic].topic_id),
        partition=0,
        leader_epoch=info.leader_epoch,
        partition_epoch=info.partition_epoch,
        new_isr=(info.leader,) if isr is None else isr,
    )
    code: ErrorCode = ask(sim, body).error_code
    return code


def shrink_isr_to_leader(sim: Simulation, topic: str) -> int:
    """The partition leader asks for an ISR of itself alone; returns the leader."""
    leader = partition(sim, topic).leader
    assert alter_isr(sim, topic) == ErrorCode.none
    return leader


def test_without_unclean_election_a_partition_waits_for_its_last_isr_member() -> None:
    sim, _ = cluster()
    create(sim, "clean", partitions=1, rf=2)
    leader = shrink_isr_to_leader(sim, "clean")
    sim.crash(leader)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    info = partition(sim, "clean")
    assert info.leader == NO_LEADER and info.isr == (leader,)  # the ISR keeps its last member
    sim.restart(leader)
    assert sim.run_until_true(lambda: partition(sim, "clean").leader == leader, 15_000)


def test_unclean_election_lets_an_out_of_sync_replica_lead() -> None:
    sim, _ = cluster()
    create(sim, "unclean", partitions=1, rf=2, **{"unclean.leader.election.enable": "true"})
    leader = shrink_isr_to_leader(sim, "unclean")
    survivor = next(r for r in partition(sim, "unclean").replicas if r != leader)
    sim.crash(leader)
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    info = partition(sim, "unclean")
    assert (info.leader, info.isr) == (survivor, (survivor,))


def test_alter_partition_is_fenced_by_leader_epoch_partition_epoch_and_eligibility() -> None:
    sim, _ = cluster()
    create(sim, "t", partitions=1, rf=3)
    image = active(sim).active.image
    info = partition(sim, "t")
    topic_id = str(image.topics["t"].topic_id)
    epoch = image.broker_epochs[info.leader]
    others = [r for r in info.replicas if r != info.leader]

    def request(**changes: Any) -> AlterPartitionRequest:
        fields: dict[str, Any] = dict(
            correlation_id=next(_correlation),
            broker_id=info.leader,
            broker_epoch=epoch,
            topic_id=topic_id,
            partition=0,
            leader_epoch=info.leader_epoch,
            partition_epoch=info.partition_epoch,
            new_isr=(info.leader, others[0]),
        )
        fields.update(changes)
        return AlterPartitionRequest(**fields)

    assert (
        ask(sim, request(partition_epoch=info.partition_epoch + 5)).error_code
        == ErrorCode.invalid_update_version
    )
    assert ask(sim, request(leader_epoch=info.leader_epoch - 1)).error_code == ErrorCode.fenced_leader_epoch
    assert ask(sim, request(broker_epoch=epoch - 1)).error_code == ErrorCode.stale_broker_epoch
    assert ask(sim, request(topic_id="not-a-uuid")).error_code == ErrorCode.unknown_topic_id
    assert ask(sim, request(topic_id=str(uuid.UUID(int=7)))).error_code == ErrorCode.unknown_topic_id
    ok: AlterPartitionResponse = ask(sim, request())
    assert ok.error_code == ErrorCode.none
    assert (
        ok.isr == tuple(sorted((info.leader, others[0]))) and ok.partition_epoch == info.partition_epoch + 1
    )
    assert ask(sim, request()).error_code == ErrorCode.invalid_update_version  # the old epoch is spent
    sim.crash(others[1])
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    current = partition(sim, "t")
    grow = request(partition_epoch=current.partition_epoch, new_isr=(info.leader, *others))
    assert ask(sim, grow).error_code == ErrorCode.ineligible_replica


def test_controlled_shutdown_moves_leaderships_before_letting_the_broker_go() -> None:
    sim, _ = cluster()
    create(sim, "t", partitions=6, rf=3)
    leaving = 101
    assert any(partition(sim, "t", p).leader == leaving for p in range(6))
    sim.node(leaving).request_controlled_shutdown()
    assert sim.run_until_true(lambda: sim.node(leaving).should_shut_down, 10_000)
    image = active(sim).active.image
    for p in range(6):
        info = partition(sim, "t", p)
        assert info.leader not in (leaving, NO_LEADER) and leaving not in info.isr
    assert image.brokers[leaving].fenced and leaving in image.shutting_down
    sim.crash(leaving)
    sim.restart(leaving)
    assert sim.run_until_true(lambda: not sim.node(leaving).fenced, 10_000)
    assert leaving not in active(sim).active.image.shutting_down


def test_killing_the_active_controller_keeps_every_committed_record_and_every_broker() -> None:
    sim, _ = cluster()
    create(sim, "before")
    old = active_controller(sim)
    assert old is not None
    committed = active(sim).image.summary()
    killed_at = sim.now_ms
    sim.crash(old)
    assert sim.run_until_true(lambda: active_controller(sim) not in (None, old), 10_000)
    assert sim.now_ms - killed_at <= 2 * 1_000 + 200  # two election timeouts, plus catching up
    assert active(sim).image.summary()["topics"] == committed["topics"]
    assert create(sim, "after").error_code == ErrorCode.none
    sim.run_until(sim.now_ms + SESSION_MS + 1_000)
    assert not any(info.fenced for info in active(sim).image.brokers.values())  # heartbeats found the new one
    sim.restart(old)
    settle(sim, 2_000)
    assert sim.node(old).controller.image.summary() == active(sim).image.summary()


def test_a_controller_shutting_down_hands_over_without_waiting_for_a_timeout() -> None:
    sim, _ = cluster()
    create(sim, "before")
    old = active_controller(sim)
    assert old is not None
    sim.at(sim.now_ms, "SIGTERM", lambda: sim.node(old).begin_shutdown(sim.now_ms))
    stopped_at = sim.now_ms
    assert sim.run_until_true(lambda: active_controller(sim) not in (None, old), 5_000)
    assert sim.now_ms - stopped_at < 1_000 // 2  # well inside one election timeout
    sim.crash(old)
    assert create(sim, "after").error_code == ErrorCode.none


def test_controllers_snapshot_their_image_and_a_wiped_broker_catches_up_from_it() -> None:
    sim, disks = cluster(snapshot_every_records=8)
    for i in range(6):
        create(sim, f"t{i}", partitions=2, rf=2)
    settle(sim, 2_000)
    leader_id = active_controller(sim)
    assert leader_id is not None and disks[leader_id].snapshots.latest() is not None
    assert disks[leader_id].log.log_start_offset > 0
    sim.crash(103)
    disks[103].log.truncate_fully_and_start_at(0)  # a broker whose disk was replaced
    disks[103].snapshots.snapshots.clear()
    sim.restart(103)
    assert sim.run_until_true(lambda: not sim.node(103).fenced, 15_000)
    assert disks[103].snapshots.latest() is not None  # it fetched one: the log no longer starts at 0
    settle(sim, 2_000)
    assert sim.node(103).image.summary() == active(sim).image.summary()
    for controller in (1, 2, 3):
        sim.crash(controller)
        sim.restart(controller)
        settle(sim, 3_000)
    assert sim.node(103).image.summary() == active(sim).image.summary()


def test_a_snapshot_replays_into_the_same_image() -> None:
    sim, _ = cluster()
    create(sim, "a", partitions=2, rf=3, **{"retention.ms": "1000"})
    sim.node(101).request_controlled_shutdown()
    sim.run_until_true(lambda: sim.node(101).should_shut_down, 10_000)
    image: ControllerImage = active(sim).image
    again = decode_snapshot(encode_snapshot(image), image.cluster_id, image.offset + 1)
    assert again.summary() == image.summary()
    assert again.topics["a"].configs == image.topics["a"].configs


@pytest.mark.parametrize(
    ("replicas", "isr", "live", "unclean", "expected"),
    [
        ((1, 2, 3), (1, 2, 3), {2, 3}, False, (2, (1, 2, 3))),  # first live ISR member in replica order
        ((3, 1, 2), (1, 2), {1, 2, 3}, False, (1, (1, 2))),  # 3 is live but not in the ISR
        ((1, 2, 3), (1,), {2, 3}, False, (NO_LEADER, (1,))),
        ((1, 2, 3), (1,), {3, 2}, True, (2, (2,))),  # unclean: first live replica, alone in the ISR
        ((1, 2, 3), (1,), set(), True, (NO_LEADER, (1,))),
    ],
)
def test_elect_leader(
    replicas: tuple[int, ...],
    isr: tuple[int, ...],
    live: set[int],
    unclean: bool,
    expected: tuple[int, tuple[int, ...]],
) -> None:
    assert elect_leader(replicas, isr, live, unclean) == expected


def test_broker_registration_change_round_trips() -> None:
    record = BrokerRegistrationChangeRecord(broker_id=4, broker_epoch=17, fenced=True)
    assert decode_record(encode_record(record)) == record


def test_bootstrap_scram_records_are_written_once_and_replicated() -> None:
    """``--add-scram``'s records (kafka-storage format's bootstrap metadata): the first active
    controller of the empty log writes them, every broker replays them, a new leader does not write
    them again; AlterUserScramCredentials through the active controller's writer replicates too."""
    from reference_impl.core.controller import scram
    from reference_impl.core.controller.scram import bootstrap_records
    from reference_impl.core.security.mechanisms import make_credential, salted_password

    boot = tuple(bootstrap_records([("SCRAM-SHA-256", "admin", make_credential("SCRAM-SHA-256", "pw"))]))
    sim, _ = cluster(bootstrap_records=boot)
    controller = active(sim)
    settle(sim)
    for node_id in BROKERS:
        assert set(sim.node(node_id).image.scram) == {(1, "admin")}
    salted = salted_password("SCRAM-SHA-512", "b", b"salt", 4096)
    results = controller.active.writer.alter_scram(
        [scram.Deletion("admin", 1)], [scram.Upsertion("bob", 2, 4096, b"salt", salted)], sim.now_ms
    )
    assert [code for _u, code, _m in results] == [ErrorCode.none, ErrorCode.none]
    settle(sim)
    old = active_controller(sim)
    assert old is not None
    sim.crash(old)
    assert sim.run_until_true(lambda: active_controller(sim) not in (None, old), 20_000)
    sim.restart(old)
    settle(sim, 3_000)
    for node_id in BROKERS:
        assert set(sim.node(node_id).image.scram) == {(2, "bob")}  # the bootstrap user not written again
