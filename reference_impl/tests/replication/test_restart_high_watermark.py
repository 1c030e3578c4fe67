"""After a crash, acknowledged records are readable again without waiting for a new write (issue 17, item 9).

The replication-offset checkpoint is written every few seconds, so after a
SIGKILL it holds a high watermark older than the log. Kafka loads it when the
partition's log is created (``Partition.createLog`` hands it to
``UnifiedLog.updateHighWatermark``, clamped to [log start, LEO]) and only
then applies the role: ``Partition.makeLeader`` ends with
``maybeIncrementLeaderHW``, so a leader whose ISR is itself makes its log end
the HW at once, and a replicated leader's HW moves as soon as its followers'
fetches confirm (``updateFollowerFetchState``), new write or not. A leader's HW
never moves back (``UnifiedLog.maybeIncrementHighWatermark``). Followers take
the HW from every fetch answer, data or none (``ReplicaFetcherThread``:
``log.maybeUpdateHighWatermark(partitionData.highWatermark)``). An idempotent
retry of a batch already stored is answered with the batch's first offsets
(``UnifiedLog.analyzeAndValidateProducerState``) once the HW covers it
(``DelayedProduce``: ``checkEnoughReplicasReachOffset``).

The reference broker restored the checkpoint *after* the partitions took
their roles, overwriting the HW a single-replica leader had just set: records
above the checkpoint stayed unreadable until the next produce, and retried
idempotent batches timed out waiting for it. ``defects.LATE_HIGH_WATERMARK``
brings that back; the tests marked below fail with it.

Sources (apache/kafka): ``core/src/main/scala/kafka/cluster/Partition.scala``,
``core/src/main/scala/kafka/log/UnifiedLog.scala`` (moved to
``storage/src/main/java/org/apache/kafka/storage/internals/log/UnifiedLog.java`` in later versions),
``core/src/main/scala/kafka/server/ReplicaFetcherThread.scala``,
``core/src/main/scala/kafka/server/DelayedProduce.scala``.
"""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl import defects
from reference_impl.core.partition import Partition
from reference_impl.log.memory import MemoryLog
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from ..core.harness import BrokerHarness, request
from ..core.test_data_path import create, fetch, produce, values
from ..core.test_idempotence import batch, init_pid
from .test_partition_replication import _bytes, fetch_round, replica

RECORDS = 50
CHECKPOINTED = 20
"""What the last checkpoint before the crash said: below the log end, as after any SIGKILL."""


def _restarted(node: int, isr: tuple[int, ...], replicas: tuple[int, ...] = (1, 2, 3)) -> Partition:
    """Replica ``node`` reopened after a crash: RECORDS records in its log, the checkpoint's HW
    given as the log opens (the broker's order), then leader of epoch 1 with ``isr``."""
    log = MemoryLog()
    old = replica(node, log)
    old.become_leader(0, 0, (node,), (node,))
    for n in range(RECORDS):
        old.append_as_leader(_single(n), 1, 0)
    restarted = replica(node, log)
    restarted.restore_high_watermark(CHECKPOINTED)
    assert restarted.high_watermark == CHECKPOINTED
    restarted.become_leader(1, 1, replicas, isr)
    return restarted


def _single(n: int) -> bytes:
    return build_batch([(None, b"m%d" % n)], base_timestamp=1)


def test_a_leader_alone_in_its_isr_makes_its_log_end_the_high_watermark_on_restart() -> None:
    """Single replica: right after becoming leader the HW is the LEO, not the checkpoint's; a
    checkpoint handed over late (the old order) does not take it back. Fails with the defect."""
    leader = _restarted(1, isr=(1,), replicas=(1,))
    assert leader.high_watermark == RECORDS
    leader.restore_high_watermark(CHECKPOINTED)
    assert leader.high_watermark == RECORDS
    read = leader.read(0, 1 << 20, committed_only=True)
    assert len(values(b"".join(_bytes(c) for c in read.records.chunks))) == RECORDS


def test_a_replicated_leader_alone_in_its_isr_commits_at_once_too() -> None:
    """Three replicas, the ISR shrunk to the leader: nobody to wait for, so the HW is the LEO at
    once, and a late checkpoint does not lower it. Fails with the defect."""
    leader = _restarted(1, isr=(1,))
    assert leader.high_watermark == RECORDS
    leader.restore_high_watermark(CHECKPOINTED)
    assert leader.high_watermark == RECORDS


def test_a_replicated_leader_moves_its_high_watermark_when_followers_confirm_without_a_produce() -> None:
    """RF=3 after a restart: the HW stays at the checkpoint while the followers' positions are
    unknown (Kafka resets them in makeLeader), moves when the last ISR member's fetch confirms the
    log end, with no produce; each follower learns it from a fetch answer that carries no data."""
    leader = _restarted(1, isr=(1, 2, 3))
    followers = [replica(2), replica(3)]
    for follower in followers:
        for n in range(RECORDS):  # they hold what was acknowledged: acks=all waited for them
            follower.log.append_as_follower(_copy(n))
        follower.restore_high_watermark(CHECKPOINTED)
        follower.become_follower(1, 1, 1, (1, 2, 3), (1, 2, 3))
    assert leader.high_watermark == CHECKPOINTED
    fetch_round(leader, followers[0])
    assert leader.high_watermark == CHECKPOINTED  # 3 has not confirmed yet
    fetch_round(leader, followers[1])
    assert leader.high_watermark == RECORDS
    for follower in followers:
        offset, epoch = follower.follower_fetch_position()
        info = leader.read_for_follower(follower.local_id, offset, epoch, 1, 1 << 20, 1)
        assert info.records.size == 0 and info.high_watermark == RECORDS
        follower.apply_from_leader(b"", info.high_watermark, info.log_start_offset, info.diverging_epoch)
        assert follower.high_watermark == RECORDS


def _copy(n: int) -> bytes:
    """Record ``n`` as the leader stamped it (offset n, epoch 0), for a follower's log."""
    return build_batch([(None, b"m%d" % n)], base_offset=n, base_timestamp=1, partition_leader_epoch=0)


# -- the whole broker core: a crash after the last checkpoint, then no new write ------------------


def _crashed_after_acks() -> tuple[BrokerHarness, tuple[int, int], int]:
    """A broker that acknowledged RECORDS idempotent records with acks=all, checkpointed its HW
    at CHECKPOINTED of them, and crashed (no clean shutdown, no later checkpoint).
    Returns the broker restarted on the same store, the producer id and epoch, and its last sequence."""
    h = BrokerHarness()
    create(h, "t")
    pid, epoch = init_pid(h)
    for seq in range(CHECKPOINTED):
        assert produce(h, "t", 0, batch(pid, epoch, seq, b"v%d" % seq)).error_code == ErrorCode.none
    h.advance(5_001)  # the periodic checkpoint
    assert h.store.high_watermarks()[("t", 0)] == CHECKPOINTED
    for seq in range(CHECKPOINTED, RECORDS):
        assert produce(h, "t", 0, batch(pid, epoch, seq, b"v%d" % seq)).error_code == ErrorCode.none
    h.store.logs[("t", 0)].restart()  # the process is gone; the page cache kept every byte
    restarted = BrokerHarness(store=h.store, now_ms=h.now_ms + 100)
    return restarted, (pid, epoch), RECORDS - 1


def test_every_acknowledged_record_is_readable_after_a_crash_without_a_new_write() -> None:
    """Single broker: a consumer's fetch right after the restart, with nothing produced since,
    returns all RECORDS records. Fails with the defect (it returned CHECKPOINTED)."""
    h, _producer, _last = _crashed_after_acks()
    part = h.broker.partition("t", 0)
    assert part is not None and part.high_watermark == part.log.log_end_offset == RECORDS
    answer = fetch(h, "t", 0, 0)
    assert answer.high_watermark == RECORDS
    assert values(answer.records) == [b"v%d" % n for n in range(RECORDS)]


def test_an_idempotent_retry_of_a_stored_batch_is_answered_at_once_after_a_restart() -> None:
    """The producer never got the answer for its last batch and retries it (same id, epoch and
    sequence) with acks=all after the restart: the broker answers at once with the batch's
    original offset. Fails with the defect (it waited for a HW that never came, then timed out)."""
    h, (pid, epoch), last = _crashed_after_acks()
    cid = h.connect()
    h.send(cid, _produce_request(batch(pid, epoch, last, b"v%d" % last)))
    assert h.responses.get(cid), "the retry was not answered without a further write or a timeout"
    answer = h.take(cid, _produce_request(b"")).responses[0].partition_responses[0]
    assert (answer.error_code, answer.base_offset) == (ErrorCode.none, last)
    assert values(fetch(h, "t", 0, 0).records)[-1] == b"v%d" % last  # stored once, not again


def _produce_request(records: bytes) -> Any:
    return request(
        0,
        9,
        acks=-1,
        timeout=1000,
        transactional_id=None,
        topic_data=[{"name": "t", "partition_data": [{"index": 0, "records": records}]}],
    )


@pytest.mark.parametrize(
    "check",
    [
        test_a_leader_alone_in_its_isr_makes_its_log_end_the_high_watermark_on_restart,
        test_a_replicated_leader_alone_in_its_isr_commits_at_once_too,
        test_every_acknowledged_record_is_readable_after_a_crash_without_a_new_write,
        test_an_idempotent_retry_of_a_stored_batch_is_answered_at_once_after_a_restart,
    ],
)
def test_the_seeded_defect_brings_the_late_high_watermark_back(check: object) -> None:
    """``reference.defects=late-high-watermark`` restores the old order, and each check above
    notices: the switch really brings the bug back, and the checks really catch it."""
    assert callable(check)
    with defects.seeded(defects.LATE_HIGH_WATERMARK), pytest.raises(AssertionError):
        check()
