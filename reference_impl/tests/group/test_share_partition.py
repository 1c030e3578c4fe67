"""The share-partition state machine (KIP-932): locks, acknowledgements, delivery limit."""

from __future__ import annotations

import pytest

from reference_impl.core.group.share_partition import (
    AckBatch,
    AcknowledgeType,
    AcquiredRange,
    AutoOffsetReset,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from reference_impl.protocol.errors import ErrorCode, KafkaError

ACCEPT, RELEASE, REJECT = AcknowledgeType.ACCEPT, AcknowledgeType.RELEASE, AcknowledgeType.REJECT


def _sp(**kw: object) -> SharePartition:
    cfg = SharePartitionConfig(auto_offset_reset=AutoOffsetReset.EARLIEST, lock_duration_ms=1000, **kw)  # type: ignore[arg-type]
    return SharePartition(cfg, log_start=0, log_end=0)


def _acked(sp: SharePartition, member_id: str, batches: list[AckBatch]) -> None:
    """Acknowledge, and commit the transition as its state write's success does (share_persister.py)."""
    sp.complete_transitions(sp.acknowledge(member_id, batches), commit=True)


def test_latest_is_default_and_starts_at_log_end() -> None:
    sp = SharePartition(SharePartitionConfig(), log_start=3, log_end=10)
    assert sp.start_offset == 10
    assert sp.acquire("a", mono_ms=0, log_end=12, max_records=100) == [AcquiredRange(10, 11, 1)]


def test_earliest_starts_at_log_start() -> None:
    sp = SharePartition(
        SharePartitionConfig(auto_offset_reset=AutoOffsetReset.EARLIEST), log_start=3, log_end=10
    )
    assert sp.acquire("a", mono_ms=0, log_end=10, max_records=100) == [AcquiredRange(3, 9, 1)]


def test_two_members_split_and_never_share_a_record() -> None:
    sp = _sp()
    a = sp.acquire("a", mono_ms=0, log_end=10, max_records=4)
    b = sp.acquire("b", mono_ms=0, log_end=10, max_records=100)
    assert a == [AcquiredRange(0, 3, 1)] and b == [AcquiredRange(4, 9, 1)]
    with pytest.raises(KafkaError) as e:
        sp.acknowledge("b", [AckBatch(0, 0, (ACCEPT,))])
    assert e.value.code == ErrorCode.invalid_record_state
    _acked(sp, "a", [AckBatch(0, 3, (ACCEPT,))])
    _acked(sp, "b", [AckBatch(4, 9, (ACCEPT,))])
    assert sp.start_offset == 10 and sp.in_flight() == 0


def test_lock_expiry_redelivers_with_higher_delivery_count() -> None:
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=3, max_records=10)
    assert sp.next_lock_deadline() == 1000
    assert sp.expire_locks(999) == []
    assert sp.expire_locks(1000) == [0, 1, 2]
    assert sp.acquire("b", mono_ms=1000, log_end=3, max_records=10) == [AcquiredRange(0, 2, 2)]
    with pytest.raises(KafkaError):
        sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,))])


def test_reject_archives_and_release_redelivers() -> None:
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=3, max_records=10)
    _acked(sp, "a", [AckBatch(0, 2, (REJECT, RELEASE, ACCEPT))])
    assert sp.state_of(1) is not None and sp.state_of(1).state is RecordState.AVAILABLE  # type: ignore[union-attr]
    assert sp.start_offset == 1
    sp.acquire("a", mono_ms=0, log_end=3, max_records=10)
    _acked(sp, "a", [AckBatch(1, 1, (ACCEPT,))])
    assert sp.start_offset == 3


def test_delivery_attempt_limit_archives() -> None:
    sp = _sp(delivery_attempt_limit=2)
    sp.acquire("a", mono_ms=0, log_end=1, max_records=1)
    _acked(sp, "a", [AckBatch(0, 0, (RELEASE,))])
    assert sp.acquire("a", mono_ms=0, log_end=1, max_records=1) == [AcquiredRange(0, 0, 2)]
    sp.expire_locks(10_000)
    assert sp.start_offset == 1 and sp.acquire("a", mono_ms=0, log_end=1, max_records=1) == []


def test_in_flight_bounded_by_max_record_locks() -> None:
    sp = _sp(max_record_locks=5)
    assert sp.acquire("a", mono_ms=0, log_end=100, max_records=100) == [AcquiredRange(0, 4, 1)]
    assert sp.acquire("b", mono_ms=0, log_end=100, max_records=100) == []
    _acked(sp, "a", [AckBatch(0, 1, (ACCEPT,))])
    assert sp.acquire("b", mono_ms=0, log_end=100, max_records=100) == [AcquiredRange(5, 6, 1)]


def test_acknowledgement_is_all_or_nothing_and_checked() -> None:
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=3, max_records=10)
    with pytest.raises(KafkaError) as e:
        sp.acknowledge("a", [AckBatch(0, 0, (ACCEPT,)), AckBatch(5, 5, (ACCEPT,))])
    assert e.value.code == ErrorCode.invalid_record_state
    assert sp.state_of(0).state is RecordState.ACQUIRED  # type: ignore[union-attr]
    for bad in (
        AckBatch(2, 1, (ACCEPT,)),
        AckBatch(0, 2, (ACCEPT, ACCEPT)),
        AckBatch(0, 0, (9,)),
        AckBatch(0, 2**62, (ACCEPT,)),
    ):
        with pytest.raises(KafkaError) as e:
            sp.acknowledge("a", [bad])
        assert e.value.code == ErrorCode.invalid_request


def test_member_leaving_releases_its_records() -> None:
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=2, max_records=10)
    assert sp.release_member("a") == [0, 1]
    assert sp.acquire("b", mono_ms=0, log_end=2, max_records=10) == [AcquiredRange(0, 1, 2)]


def test_log_start_moving_past_in_flight_records() -> None:
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=5, max_records=10)
    sp.log_start_moved(3)
    assert sp.start_offset == 3 and sp.in_flight() == 2


def test_next_candidate_and_log_end_bound_redeliveries() -> None:
    """ShareFetch reads the log from :meth:`SharePartition.next_candidate` and acquires only below the
    end of the batches it read, redeliveries included."""
    sp = _sp()
    assert sp.next_candidate() == 0
    assert sp.acquire("a", mono_ms=0, log_end=4, max_records=100) == [AcquiredRange(0, 3, 1)]
    assert sp.next_candidate() == 4
    _acked(sp, "a", [AckBatch(1, 1, (RELEASE,)), AckBatch(3, 3, (RELEASE,))])
    assert sp.next_candidate() == 1
    assert sp.acquire("b", mono_ms=0, log_end=2, max_records=100) == [AcquiredRange(1, 1, 2)]
    assert sp.state_of(3) is not None and sp.state_of(3).state is RecordState.AVAILABLE  # type: ignore[union-attr]
    assert sp.next_candidate() == 3


def test_share_partitions_bound_drops_idle_ones_first(monkeypatch: pytest.MonkeyPatch) -> None:
    """A broker keeps at most MAX_SHARE_PARTITIONS share-partitions: idle ones go first, and when every
    one holds records in flight a new one is refused."""
    import uuid

    from reference_impl.core.group import share_fetch

    monkeypatch.setattr(share_fetch, "MAX_SHARE_PARTITIONS", 2)
    leader = share_fetch.SharePartitions()
    topic = uuid.uuid4()
    busy = leader.get_or_create(("g", topic, 0), log_start=0, log_end=0)
    busy.acquire("m", mono_ms=0, log_end=1, max_records=1)
    leader.get_or_create(("g", topic, 1), log_start=0, log_end=0)  # idle
    leader.get_or_create(("g", topic, 2), log_start=0, log_end=0)  # drops the idle one
    assert set(leader.partitions) == {("g", topic, 0), ("g", topic, 2)}
    leader.partitions[("g", topic, 2)].acquire("m", mono_ms=0, log_end=1, max_records=1)
    with pytest.raises(KafkaError):
        leader.get_or_create(("g", topic, 3), log_start=0, log_end=0)


def test_an_acknowledgement_is_a_transition_its_write_commits_or_rolls_back() -> None:
    """``SharePartition.rollbackOrProcessStateUpdates``: the new states show at once, but the SPSO
    waits for the write, and a failed write gives the records back to the member under its lock
    (``InFlightState.completeStateTransition(false)``)."""
    sp = _sp()
    sp.acquire("a", mono_ms=0, log_end=4, max_records=10)
    first = sp.acknowledge("a", [AckBatch(0, 1, (ACCEPT,))])
    second = sp.acknowledge("a", [AckBatch(2, 3, (RELEASE,))])
    assert second > first > 0
    assert sp.state_of(0).state is RecordState.ACKNOWLEDGED  # type: ignore[union-attr]
    assert sp.start_offset == 0, "not written yet: the SPSO does not pass it"
    assert sp.acquire("b", mono_ms=0, log_end=3, max_records=10) == [AcquiredRange(2, 2, 2)], (
        "a RELEASE being written may be acquired: its new holder ends its transition"
    )
    with pytest.raises(KafkaError):
        sp.acknowledge("a", [AckBatch(0, 0, (RELEASE,))])  # no longer ACQUIRED
    sp.complete_transitions(first, commit=False)
    assert [(sp.state_of(o).state, sp.state_of(o).member_id) for o in range(2)] == [  # type: ignore[union-attr]
        (RecordState.ACQUIRED, "a"),
        (RecordState.ACQUIRED, "a"),
    ]
    assert sp.next_lock_deadline() == 1000, "under the lock it had"
    assert sp.state_of(3).state is RecordState.AVAILABLE, "a later write decides the second ack"  # type: ignore[union-attr]
    sp.complete_transitions(second, commit=False)
    assert [(sp.state_of(o).state, sp.state_of(o).member_id) for o in (2, 3)] == [  # type: ignore[union-attr]
        (RecordState.ACQUIRED, "b"),
        (RecordState.ACQUIRED, "a"),
    ], "b's acquisition stands; 3 is a's again"
    assert sp.expire_locks(1000) == [0, 1, 2, 3]
    assert sp.acquire("c", mono_ms=1000, log_end=4, max_records=10) == [
        AcquiredRange(0, 1, 2),
        AcquiredRange(2, 2, 3),
        AcquiredRange(3, 3, 2),
    ]
