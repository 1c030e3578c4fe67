"""Leader and followers of one partition, wired by hand: HW, ISR, and the KIP-101/279/320 scenarios."""

from __future__ import annotations

import uuid

from reference_impl.core.partition import Noted, Partition
from reference_impl.log.api import Chunk
from reference_impl.log.memory import MemoryLog
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import build_batch, records_of

TOPIC_ID = uuid.UUID(int=7)


def _bytes(chunk: Chunk) -> bytes:
    assert isinstance(chunk, bytes)
    return chunk


def replica(node: int, log: MemoryLog | None = None) -> Partition:
    return Partition("t", 0, TOPIC_ID, log or MemoryLog(), {"min.insync.replicas": "1"}, node, _bytes)


def produce(leader: Partition, *values: bytes, now: int = 0) -> int:
    return leader.append_as_leader(
        build_batch([(None, v) for v in values], base_timestamp=1), 1, now
    ).last_offset


def fetch_round(leader: Partition, follower: Partition, now: int = 0) -> None:
    """One follower fetch: the leader answers from the follower's position, the follower applies it."""
    offset, epoch = follower.follower_fetch_position()
    info = leader.read_for_follower(follower.local_id, offset, epoch, follower.leader_epoch, 1 << 20, now)
    data = b"".join(_bytes(c) for c in info.records.chunks)
    follower.apply_from_leader(data, info.high_watermark, info.log_start_offset, info.diverging_epoch)


def values(p: Partition) -> list[bytes | None]:
    data = b"".join(_bytes(c) for c in p.log.read(p.log.log_start_offset, 1 << 30).chunks)
    return [r.value for r in records_of(data)]


def test_high_watermark_is_the_smallest_isr_leo_and_reaches_followers() -> None:
    """Seed 002: HW = min LEO over the ISR, where a follower's LEO is what its *next* fetch asks
    for; a follower's HW = min(leader HW, its LEO)."""
    a, b, c = replica(1), replica(2), replica(3)
    a.become_leader(0, 0, (1, 2, 3), (1, 2, 3))
    b.become_follower(1, 0, 0, (1, 2, 3), (1, 2, 3))
    c.become_follower(1, 0, 0, (1, 2, 3), (1, 2, 3))
    last = produce(a, b"m0", b"m1")
    assert a.high_watermark == 0 and not a.committed(last)
    fetch_round(a, b)
    fetch_round(a, c)
    assert a.high_watermark == 0  # the leader learns their LEO from their next fetch
    fetch_round(a, b)
    assert a.high_watermark == 0  # c has not fetched again
    fetch_round(a, c)
    assert a.high_watermark == 2 and a.committed(last)
    assert b.high_watermark == 0
    fetch_round(a, b)
    assert b.high_watermark == 2 and b.log.log_end_offset == 2


def test_a_lagging_follower_leaves_and_a_caught_up_one_rejoins() -> None:
    """ISR shrink after replica.lag.time.max.ms; expansion only once the follower reaches the HW and
    the start of the leader's current epoch (KIP-320)."""
    a, b = replica(1), replica(2)
    a.become_leader(0, 0, (1, 2), (1, 2), now_ms=0)
    b.become_follower(1, 0, 0, (1, 2), (1, 2))
    produce(a, b"x")
    assert a.propose_isr_change(now_ms=10_000, max_lag_ms=30_000) is None
    proposal = a.propose_isr_change(now_ms=30_001, max_lag_ms=30_000)
    assert proposal is not None and proposal.new_isr == (1,)
    a.become_leader(0, 1, (1, 2), (1,), now_ms=30_001)  # the controller accepted: partition epoch 1
    assert a.isr == (1,) and a.high_watermark == 1
    produce(a, b"y")
    fetch_round(a, b, now=30_002)
    fetch_round(a, b, now=30_003)
    joining = a.propose_isr_change(now_ms=30_004, max_lag_ms=30_000, fetched_by=2)
    assert joining is not None and joining.new_isr == (1, 2)


def test_a_fenced_follower_is_not_proposed_for_the_isr() -> None:
    """KIP-841: a caught-up follower whose broker the leader's metadata shows fenced (just
    restarted, not yet unfenced) is not proposed for the ISR: the controller would answer
    INELIGIBLE_REPLICA, and the leader would ask again on every fetch. Once it is live it is."""
    a, b = replica(1), replica(2)
    a.become_leader(0, 1, (1, 2), (1,), now_ms=0)
    b.become_follower(1, 0, 1, (1, 2), (1,))
    produce(a, b"x")
    fetch_round(a, b, now=1)
    fetch_round(a, b, now=2)
    live: set[int] = {1}
    assert a.propose_isr_change(now_ms=3, max_lag_ms=30_000, fetched_by=2, may_join=live.__contains__) is None
    live.add(2)
    joining = a.propose_isr_change(now_ms=4, max_lag_ms=30_000, fetched_by=2, may_join=live.__contains__)
    assert joining is not None and joining.new_isr == (1, 2)


def test_a_refused_isr_expansion_lets_the_high_watermark_move_at_once() -> None:
    """While an expansion is pending the high watermark waits for the joiner too (the maximal ISR,
    Kafka's ``Partition.maximalIsr``); once the controller refuses it, the ISR is the committed one
    again and the high watermark is its smallest LEO at once, not at the next fetch or append.
    Found by the broker simulator (seed 1007, ``HwIsMinIsrLeo``) when an AlterPartition answer came
    in another order."""
    a, b = replica(1), replica(2)
    a.become_leader(0, 1, (1, 2), (1,), now_ms=0)
    b.become_follower(1, 0, 1, (1, 2), (1,))
    produce(a, b"x")
    fetch_round(a, b, now=1)
    fetch_round(a, b, now=2)
    joining = a.propose_isr_change(now_ms=3, max_lag_ms=30_000, fetched_by=2)
    assert joining is not None and joining.new_isr == (1, 2)
    produce(a, b"y")
    assert a.high_watermark == 1, "the pending joiner has not fetched y"
    assert a.isr_change_failed(), "the high watermark moved"
    assert a.high_watermark == 2


def test_kip101_follower_does_not_truncate_to_its_hw_after_restart() -> None:
    """KIP-101 scenario 1: a follower that restarts with records beyond its HW keeps them, so an
    immediate election of that follower loses nothing acknowledged."""
    log_b = MemoryLog()
    a, b = replica(1), replica(2, log_b)
    a.become_leader(0, 0, (1, 2), (1, 2))
    b.become_follower(1, 0, 0, (1, 2), (1, 2))
    produce(a, b"m1")
    fetch_round(a, b)
    produce(a, b"m2")
    fetch_round(a, b)  # b has m2, its HW is still 1
    fetch_round(a, b)
    assert a.high_watermark == 2
    log_b.flush()
    log_b.crash()
    restarted = replica(2, log_b)
    restarted.become_leader(1, 1, (1, 2), (2,))  # a is gone: b is elected at once
    assert values(restarted) == [b"m1", b"m2"]


def test_kip101_divergence_after_multiple_hard_failures_is_truncated_by_epoch() -> None:
    """KIP-101 scenario 2: the old leader's unreplicated suffix from epoch 0 is replaced by what the
    new leader wrote in epoch 1; both logs end identical."""
    a, b = replica(1), replica(2)
    a.become_leader(0, 0, (1, 2), (1, 2))
    b.become_follower(1, 0, 0, (1, 2), (1, 2))
    produce(a, b"m1")
    fetch_round(a, b)
    produce(a, b"m2-lost")  # never replicated
    b.become_leader(1, 1, (1, 2), (2,))
    produce(b, b"m3")
    a.become_follower(2, 1, 1, (1, 2), (2,))
    fetch_round(b, a)  # diverging epoch: a truncates to offset 1
    assert values(a) == [b"m1"]
    fetch_round(b, a)
    assert values(a) == values(b) == [b"m1", b"m3"]


def test_kip279_fast_failover_leaders_converge() -> None:
    """KIP-279: after leaders change twice quickly, a follower several epochs behind truncates
    in steps until its log matches the leader below the HW."""
    a, b, c = replica(1), replica(2), replica(3)
    a.become_leader(0, 0, (1, 2, 3), (1, 2, 3))
    for f in (b, c):
        f.become_follower(1, 0, 0, (1, 2, 3), (1, 2, 3))
    produce(a, b"base")
    fetch_round(a, b)
    fetch_round(a, c)
    produce(a, b"a-only")  # epoch 0 suffix on a
    b.become_leader(1, 1, (1, 2, 3), (2, 3))
    produce(b, b"b-only")  # epoch 1 suffix on b
    c.become_leader(2, 2, (1, 2, 3), (3,))
    produce(c, b"c-epoch2")
    for f in (a, b):
        f.become_follower(3, 2, 2, (1, 2, 3), (3,))
    for _ in range(4):
        fetch_round(c, a)
        fetch_round(c, b)
    assert values(a) == values(b) == values(c) == [b"base", b"c-epoch2"]


def test_a_leader_that_wrote_nothing_drops_its_empty_epoch_when_it_follows() -> None:
    """Found by the broker simulator: b led epoch 1 without writing (its cache ends with (1, LEO)),
    then followed a in epoch 2. a answers b's fetch (last epoch 1) with epoch 0 ending at b's LEO:
    nothing to cut, but b must still drop its empty epoch, as Kafka's ``truncateTo`` does; kept,
    every later fetch asked with epoch 1 and got the same answer, for ever, and b never caught up."""
    a, b = replica(1), replica(2)
    a.become_leader(0, 0, (1, 2), (1, 2))
    b.become_follower(1, 0, 0, (1, 2), (1, 2))
    produce(a, b"m0", b"m1")
    fetch_round(a, b)
    b.become_leader(1, 1, (1, 2), (2,))
    assert b.follower_fetch_position() == (2, 1)
    a.become_follower(2, 1, 1, (1, 2), (2,))
    a.become_leader(2, 2, (1, 2), (1,))  # a leads again, b's empty epoch 1 unknown to it
    produce(a, b"m2")
    b.become_follower(1, 2, 2, (1, 2), (1,))
    fetch_round(a, b)  # diverging: epoch 0 ends at 2, where b's log ends
    assert b.follower_fetch_position() == (2, 0)
    fetch_round(a, b)
    assert values(b) == values(a) == [b"m0", b"m1", b"m2"]


def test_stale_fetches_are_fenced() -> None:
    """KIP-320: a fetch carrying an older leader epoch is FENCED_LEADER_EPOCH."""
    a = replica(1)
    a.become_leader(3, 0, (1, 2), (1, 2))
    try:
        a.read_for_follower(2, 0, -1, 2, 1024, 0)
    except KafkaError as exc:
        assert exc.code is ErrorCode.fenced_leader_epoch
    else:
        raise AssertionError("a stale epoch was served")


def test_a_replica_takes_the_role_the_controller_decided_once_per_decision() -> None:
    """``take_role`` is how a broker (its replica manager, from the metadata image) and the property
    model apply the controller's decision: a new epoch changes the role, the same decision again
    changes nothing (a leader keeps its follower tracking)."""
    p = replica(1)
    assert p.take_role(2, 1, 1, (1, 2, 3), (1, 2, 3), 0)
    assert (p.is_leader, p.leader_id, p.leader_epoch) == (False, 2, 1)
    assert not p.take_role(2, 1, 1, (1, 2, 3), (1, 2, 3), 0)
    assert p.take_role(1, 2, 2, (1, 2, 3), (1, 2, 3), 0)
    tracker = p.tracker
    assert p.is_leader and tracker is not None
    assert not p.take_role(1, 2, 2, (1, 2, 3), (1, 2, 3), 5)
    assert p.tracker is tracker
    assert p.take_role(1, 2, 3, (1, 2, 3), (1, 2), 5)  # an ISR change: same epoch, new partition epoch
    assert p.isr == (1, 2) and p.tracker is tracker


def test_a_follower_fetch_says_whether_it_moved_the_high_watermark() -> None:
    """Issue 22: the leader wakes what waits on a partition only when a follower's fetch moved its
    HW, so the fetch must say so, both on arrival (note) and when answered (read)."""
    a, b, c = replica(1), replica(2), replica(3)
    a.become_leader(0, 0, (1, 2, 3), (1, 2, 3))
    b.become_follower(1, 0, 0, (1, 2, 3), (1, 2, 3))
    c.become_follower(1, 0, 0, (1, 2, 3), (1, 2, 3))
    produce(a, b"m0")
    fetch_round(a, b)
    fetch_round(a, c)
    assert a.note_follower_fetch(2, 1, 0, 0, 0) is Noted.RECORDED  # b caught up, c not yet known to be
    assert a.note_follower_fetch(3, 1, 0, 0, 0) is Noted.HW_MOVED  # c's too: the HW moves to 1
    assert a.note_follower_fetch(3, 1, 0, 0, 0) is Noted.IDLE  # again at the same offset: nothing moves
    assert a.note_follower_fetch(3, 5, 0, 0, 0) is None  # past the log end: not recorded at all
    produce(a, b"m1")
    assert not a.read_for_follower(2, 1, 0, 0, 1 << 20, 0).high_watermark_moved
    fetch_round(a, b)
    fetch_round(a, c)
    assert not a.read_for_follower(2, 2, 0, 0, 1 << 20, 0).high_watermark_moved
    assert a.read_for_follower(3, 2, 0, 0, 1 << 20, 0).high_watermark_moved and a.high_watermark == 2


def test_an_idle_repeat_fetch_keeps_an_isr_member_caught_up_and_nobody_else() -> None:
    """Issue 22's fast path for a follower's idle partitions: a repeat of an ISR member's last fetch
    at the unchanged log end is recorded as caught up now (it stays in the ISR), while a replica
    out of the ISR always takes the full path, so it can still be proposed to join."""
    a = replica(1)
    a.become_leader(0, 0, (1, 2, 3), (1, 2))
    produce(a, b"m0")
    assert a.note_follower_fetch(2, 1, -1, 0, 10) is Noted.HW_MOVED
    for now in (20_000, 40_000):  # past replica.lag.time.max.ms since the first fetch
        assert a.note_follower_fetch(2, 1, -1, 0, now) is Noted.IDLE
    assert a.propose_isr_change(now_ms=45_000, max_lag_ms=30_000) is None  # 2 was caught up at 40 s
    assert a.note_follower_fetch(3, 1, -1, 0, 45_000) is Noted.RECORDED
    assert a.note_follower_fetch(3, 1, -1, 0, 45_001) is Noted.RECORDED  # not an ISR member: full path
    proposal = a.propose_isr_change(now_ms=45_001, max_lag_ms=30_000, fetched_by=3)
    assert proposal is not None and proposal.new_isr == (1, 2, 3)
    produce(a, b"m1")
    assert a.note_follower_fetch(2, 1, -1, 0, 45_002) is Noted.RECORDED  # the log end moved: full path
