"""Share groups (KIP-932): an acknowledgement is answered by the outcome of its state write.

Kafka's ``SharePartition.acknowledge`` (core/src/main/java/kafka/server/share/SharePartition.java,
apache/kafka e3e579e7) changes the records' states as an in-flight transition, writes them through the
persister and, in ``rollbackOrProcessStateUpdates``, commits the transition once the write succeeded
or rolls it back (``InFlightState.completeStateTransition(false)``: the records are ACQUIRED by the
member again, under its lock) and fails the acknowledgement with the write's error, as
``fetchPersisterError`` maps it (NOT_COORDINATOR, COORDINATOR_NOT_AVAILABLE and
COORDINATOR_LOAD_IN_PROGRESS: COORDINATOR_NOT_AVAILABLE; FENCED_LEADER_EPOCH: NOT_LEADER_OR_FOLLOWER;
FENCED_STATE_EPOCH, GROUP_ID_NOT_FOUND and UNKNOWN_TOPIC_OR_PARTITION as they are; anything else:
UNKNOWN_SERVER_ERROR). Answering an unwritten ACCEPT as accepted lets a failover deliver the
record again (the chaos share checker's ``redelivered_accepted``); keeping it applied while
answering an error loses the record (``share_lost``).

The seam: the leader's :class:`ShareStateSync` takes its persister as a field; :class:`_Gate`
wraps the real one and fails or holds its writes.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import pytest

from reference_impl.core.group.share_partition import RecordState, SharePartition
from reference_impl.core.group.share_persister import Persister, persister_error
from reference_impl.core.group.share_state import WRITE_TIMEOUT_MS
from reference_impl.core.group.share_state_records import StateWrite
from reference_impl.protocol.errors import ErrorCode

from .harness import BrokerHarness, request
from .test_share_clock_steps import LOCK_MS, _fetch, _locked_by_m

ACCEPT, RELEASE = 1, 2


class _Gate(Persister):
    """The real persister, its writes failed with ``fail`` or held (``hold``) until the test
    releases them."""

    def __init__(self, real: Persister) -> None:
        super().__init__(real.broker, real.coordinator)
        self.fail: ErrorCode | None = None
        self.hold = False
        self.held: list[tuple[StateWrite, Callable[[ErrorCode], None]]] = []
        self.writes = 0

    def write(self, w: StateWrite, done: Callable[[ErrorCode], None]) -> None:
        self.writes += 1
        if self.fail is not None:
            done(self.fail)
        elif self.hold:
            self.held.append((w, done))
        else:
            super().write(w, done)

    def release(self, code: ErrorCode = ErrorCode.none) -> None:
        """Complete the held writes: written for real (NONE), else failed with ``code``."""
        held, self.held = self.held, []
        for w, done in held:
            if code is ErrorCode.none:
                super().write(w, done)
            else:
                done(code)


def _gate(h: BrokerHarness) -> _Gate:
    sync = h.broker.group_coordinator.share.sync
    gate = _Gate(sync.persister)
    sync.persister = gate
    return gate


def _sp(h: BrokerHarness, topic_id: uuid.UUID) -> SharePartition:
    return h.broker.group_coordinator.share.leader.partitions[("g", topic_id, 0)]


def _partition(batch: dict[str, Any]) -> dict[str, Any]:
    return {"partition_index": 0, "acknowledgement_batches": [batch]}


def _ack_body(topic_id: uuid.UUID, member: str, epoch: int, first: int, last: int, kind: int = ACCEPT) -> Any:
    batch = {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}
    return request(
        79, 1, group_id="g", member_id=member, share_session_epoch=epoch,
        topics=[{"topic_id": topic_id, "partitions": [_partition(batch)]}],
    )  # fmt: skip


def _ack(h: BrokerHarness, topic_id: uuid.UUID, member: str, epoch: int, first: int, last: int) -> ErrorCode:
    """One ShareAcknowledge (ACCEPT ``first``-``last``); its partition's error code."""
    answer: Any = h.call(_ack_body(topic_id, member, epoch, first, last))
    assert answer.error_code == ErrorCode.none
    return ErrorCode(answer.responses[0].partitions[0].error_code)


def _held_by(sp: SharePartition, offsets: range) -> dict[int, tuple[RecordState, str | None]]:
    out: dict[int, tuple[RecordState, str | None]] = {}
    for o in offsets:
        record = sp.state_of(o)
        assert record is not None, f"offset {o} is no longer in flight"
        out[o] = (record.state, record.member_id)
    return out


def _after_lock(h: BrokerHarness) -> None:
    """Past m's lock (the members' 45 s sessions still run)."""
    h.tick_at(h.now_ms + LOCK_MS, (h.mono_ms if h.mono_ms is not None else h.now_ms) + LOCK_MS)


def test_a_failed_write_fails_the_ack_and_rolls_it_back() -> None:
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.fail = ErrorCode.not_coordinator
    assert _ack(h, topic_id, "m", 2, 0, 4) == ErrorCode.coordinator_not_available, (
        "the ACCEPT was never written: Kafka answers the write's error (fetchPersisterError)"
    )
    assert _held_by(_sp(h, topic_id), range(10)) == {o: (RecordState.ACQUIRED, "m") for o in range(10)}, (
        "the transition is rolled back: the records are m's again, under its lock"
    )
    gate.fail = None
    assert _ack(h, topic_id, "m", 3, 0, 4) == ErrorCode.none, "m still holds them and may ACCEPT again"
    assert _sp(h, topic_id).start_offset == 5
    _after_lock(h)
    assert _fetch(h, topic_id, "n", 0) == {o: 2 for o in range(5, 10)}, (
        "the offsets never accepted come back with their next delivery count once m's lock ran out"
    )


def test_a_rolled_back_ack_is_redelivered_after_the_lock() -> None:
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.fail = ErrorCode.coordinator_load_in_progress
    assert _ack(h, topic_id, "m", 2, 0, 9) == ErrorCode.coordinator_not_available
    gate.fail = None
    _after_lock(h)
    assert _fetch(h, topic_id, "n", 0) == {o: 2 for o in range(10)}, "nothing was accepted"


@pytest.mark.parametrize(
    ("written", "answered"),
    [
        (ErrorCode.fenced_state_epoch, ErrorCode.fenced_state_epoch),
        (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower),
    ],
)
def test_a_fenced_write_fails_the_ack_and_the_state_reloads(written: ErrorCode, answered: ErrorCode) -> None:
    """A fenced write forgets the share-partition (a newer leader or state owns it): the ack is not
    written, and the reloaded state has the records never delivered (the acquired state is not
    persisted: KIP-932 "Managing durable share-partition state")."""
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.fail = written
    assert _ack(h, topic_id, "m", 2, 0, 4) == answered
    gate.fail = None
    assert _fetch(h, topic_id, "n", 0) == {o: 1 for o in range(10)}, "the ACCEPT of 0-4 was not kept"


def _ack_held(wait_ms: int) -> tuple[BrokerHarness, uuid.UUID, _Gate, int, Any]:
    """m ACCEPTs 0-4 of the 10 records it holds, its write held; ``wait_ms`` later."""
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.hold = True
    cid = h.connect()
    body = _ack_body(topic_id, "m", 2, 0, 4)
    h.send(cid, body)
    h.advance(wait_ms)
    return h, topic_id, gate, cid, body


def test_an_ack_is_answered_only_after_its_write() -> None:
    h, topic_id, gate, cid, body = _ack_held(10)
    assert not h.responses.get(cid), "the write is not done"
    gate.hold = False
    gate.release()
    answer: Any = h.take(cid, body)
    assert answer.responses[0].partitions[0].error_code == ErrorCode.none
    assert _sp(h, topic_id).start_offset == 5


def test_acks_batched_in_one_failed_write_both_fail_and_roll_back() -> None:
    """Two acknowledgements made while an earlier write is in flight go out in one write; it fails,
    so both fail and both are rolled back."""
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.hold = True
    first, second, third = h.connect(), h.connect(), h.connect()
    bodies = {
        first: _ack_body(topic_id, "m", 2, 0, 1),
        second: _ack_body(topic_id, "m", 3, 2, 3),
        third: _ack_body(topic_id, "m", 4, 4, 5, RELEASE),
    }
    for cid, body in bodies.items():
        h.send(cid, body)
    h.advance(10)
    assert len(gate.held) == 1, "one write per share-partition at a time"
    gate.release()  # the first ack's write: done; the two others now go out in one write
    h.advance(10)
    assert h.take(first, bodies[first]).responses[0].partitions[0].error_code == ErrorCode.none
    assert len(gate.held) == 1
    gate.hold = False
    gate.release(ErrorCode.coordinator_not_available)
    for cid in (second, third):
        answer: Any = h.take(cid, bodies[cid])
        assert answer.responses[0].partitions[0].error_code == ErrorCode.coordinator_not_available
    sp = _sp(h, topic_id)
    assert sp.start_offset == 2
    assert _held_by(sp, range(2, 10)) == {o: (RecordState.ACQUIRED, "m") for o in range(2, 10)}
    _after_lock(h)
    assert _fetch(h, topic_id, "n", 0) == {o: 2 for o in range(2, 10)}


def _fetch_acking(topic_id: uuid.UUID, max_wait: int) -> Any:
    """m's ShareFetch (epoch 2) ACCEPTing 0-9, waiting up to ``max_wait`` for records."""
    batch = {"first_offset": 0, "last_offset": 9, "acknowledge_types": [ACCEPT]}
    return request(
        78, 1, group_id="g", member_id="m", share_session_epoch=2, max_wait=max_wait,
        min_bytes=1 if max_wait else 0, max_bytes=1 << 20, max_records=500, batch_size=500,
        forgotten_topics_data=[], topics=[{"topic_id": topic_id, "partitions": [_partition(batch)]}],
    )  # fmt: skip


def test_a_share_fetch_carries_the_write_error_of_its_acks() -> None:
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.fail = ErrorCode.unknown_topic_or_partition
    answer: Any = h.call(_fetch_acking(topic_id, 0))
    assert answer.error_code == ErrorCode.none
    entry = answer.responses[0].partitions[0]
    assert entry.acknowledge_error_code == ErrorCode.unknown_topic_or_partition
    assert _held_by(_sp(h, topic_id), range(10)) == {o: (RecordState.ACQUIRED, "m") for o in range(10)}


def test_an_undecided_write_times_the_ack_out_and_its_outcome_decides_later() -> None:
    """At the answer's deadline the write is still in flight: its outcome is unknown, so the answer
    says REQUEST_TIMED_OUT and the transition waits for the write (here it fails: rolled back)."""
    h, topic_id, gate, cid, body = _ack_held(WRITE_TIMEOUT_MS)
    answer: Any = h.take(cid, body)
    assert answer.responses[0].partitions[0].error_code == ErrorCode.request_timed_out
    assert _held_by(_sp(h, topic_id), range(5)) == {o: (RecordState.ACKNOWLEDGED, None) for o in range(5)}
    gate.hold = False
    gate.release(ErrorCode.request_timed_out)
    assert _held_by(_sp(h, topic_id), range(5)) == {o: (RecordState.ACQUIRED, "m") for o in range(5)}


@pytest.mark.parametrize(
    ("written", "answered"),
    [
        (ErrorCode.not_coordinator, ErrorCode.coordinator_not_available),
        (ErrorCode.coordinator_not_available, ErrorCode.coordinator_not_available),
        (ErrorCode.coordinator_load_in_progress, ErrorCode.coordinator_not_available),
        (ErrorCode.fenced_state_epoch, ErrorCode.fenced_state_epoch),
        (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower),
        (ErrorCode.group_id_not_found, ErrorCode.group_id_not_found),
        (ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_or_partition),
        (ErrorCode.request_timed_out, ErrorCode.unknown_server_error),
        (ErrorCode.invalid_request, ErrorCode.unknown_server_error),
    ],
)
def test_persister_errors_map_as_kafka_maps_them(written: ErrorCode, answered: ErrorCode) -> None:
    assert persister_error(written) is answered


@pytest.mark.parametrize("outcome", [ErrorCode.none, ErrorCode.coordinator_load_in_progress])
def test_a_share_fetch_that_waited_answers_once_its_acks_write_is_decided(outcome: ErrorCode) -> None:
    """Nothing to acquire: the fetch waits its MaxWaitMs; its acknowledgements' write is still held
    then, so the answer waits for it too (Kafka combines the fetch and acknowledge futures,
    ``KafkaApis.handleShareFetchRequest``)."""
    h, topic_id = _locked_by_m()
    gate = _gate(h)
    gate.hold = True
    cid = h.connect()
    body = _fetch_acking(topic_id, 500)
    h.send(cid, body)
    h.advance(1_000)
    assert not h.responses.get(cid), "MaxWaitMs is over, the write is not"
    gate.hold = False
    gate.release(outcome)
    answer: Any = h.take(cid, body)
    assert answer.error_code == ErrorCode.none
    assert answer.responses[0].partitions[0].acknowledge_error_code == persister_error(outcome)
    assert _sp(h, topic_id).start_offset == (10 if outcome is ErrorCode.none else 0)
