"""Share groups (KIP-932) under wall-clock steps: record locks and member sessions run on the
monotonic clock.

Kafka times an acquisition lock as an ``AcquisitionLockTimerTask`` due at ``time.hiResClockMs() +
delayMs`` (``SharePartition.scheduleAcquisitionLockTimeout``, core/src/main/java/kafka/server/share/
SharePartition.java) and a share member's session as a coordinator timer
(``GroupMetadataManager.scheduleShareGroupSessionTimeout``, group-coordinator/.../GroupMetadataManager.java,
on ``CoordinatorRuntime``'s ``SystemTimer``): both on ``System.nanoTime``. The harness steps the
broker's wall clock apart from its monotonic one (``BrokerHarness.tick_at``), as libfaketime with
``DONT_FAKE_MONOTONIC`` or an NTP step does to a broker process.
"""

from __future__ import annotations

import uuid
from typing import Any

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from .harness import BrokerHarness, request
from .test_data_path import create, produce

JUMP_MS = 600_000
"""Ten minutes: the chaos clock-jump's smallest step."""
LOCK_MS = 30_000
"""``group.share.record.lock.duration.ms``'s default."""
SESSION_MS = 45_000
"""``group.share.session.timeout.ms``'s default."""


def _beat(h: BrokerHarness, member: str, epoch: int = 0) -> None:
    body = request(
        76, 1, group_id="g", member_id=member, member_epoch=epoch, rack_id=None, subscribed_topic_names=["t"]
    )
    assert h.call(body).error_code == ErrorCode.none


def _fetch(h: BrokerHarness, topic_id: uuid.UUID, member: str, epoch: int) -> dict[int, int]:
    """One ShareFetch of ``member``; the offsets it acquired and their delivery counts."""
    partition = {"partition_index": 0, "acknowledgement_batches": []}
    answer: Any = h.call(
        request(
            78, 1, group_id="g", member_id=member, share_session_epoch=epoch, max_wait=0, min_bytes=0,
            max_bytes=1 << 20, max_records=500, batch_size=500, forgotten_topics_data=[],
            topics=[{"topic_id": topic_id, "partitions": [partition]}],
        )
    )  # fmt: skip
    assert answer.error_code == ErrorCode.none
    return {
        o: int(a.delivery_count)
        for a in answer.responses[0].partitions[0].acquired_records
        for o in range(int(a.first_offset), int(a.last_offset) + 1)
    }


def _locked_by_m() -> tuple[BrokerHarness, uuid.UUID]:
    """Members m and n of share group g; m holds offsets 0-9 of t-0 under a fresh lock."""
    h = BrokerHarness()
    create(h, "t")
    topic_id = h.broker.image.topics["t"].topic_id
    h.call(request(10, 4, key_type=0, coordinator_keys=["g"]))  # creates __consumer_offsets
    _beat(h, "m")
    _beat(h, "n")
    assert _fetch(h, topic_id, "m", 0) == {}  # the share-partition starts at the log end
    assert produce(h, "t", 0, build_batch([(None, b"v%d" % i) for i in range(10)])).error_code == 0
    assert _fetch(h, topic_id, "m", 1) == {o: 1 for o in range(10)}
    return h, topic_id


def test_a_forward_wall_step_does_not_end_a_record_lock_early() -> None:
    h, topic_id = _locked_by_m()
    wall, mono = h.now_ms, h.now_ms
    h.tick_at(wall + JUMP_MS, mono + 1_000)
    assert _fetch(h, topic_id, "n", 0) == {}, "m's lock is 1 s old, not ten minutes"
    h.tick_at(wall + JUMP_MS, mono + LOCK_MS)
    assert _fetch(h, topic_id, "n", 1) == {o: 2 for o in range(10)}, "the lock ran out after its 30 s"


def test_a_backward_wall_step_does_not_hold_a_record_lock() -> None:
    h, topic_id = _locked_by_m()
    wall, mono = h.now_ms, h.now_ms
    h.tick_at(wall - JUMP_MS, mono + LOCK_MS - 1)
    assert _fetch(h, topic_id, "n", 0) == {}, "m still holds the records"
    h.tick_at(wall - JUMP_MS, mono + LOCK_MS)
    assert _fetch(h, topic_id, "n", 1) == {o: 2 for o in range(10)}, (
        "the lock ran out after its 30 s, not ten minutes and 30 s"
    )


def _members(h: BrokerHarness) -> list[str]:
    described: Any = h.call(request(77, 1, group_ids=["g"], include_authorized_operations=False))
    return sorted(str(m.member_id) for m in described.groups[0].members)


def test_a_forward_wall_step_expires_no_share_member_early() -> None:
    """Member a goes silent, then b (20 s later); the wall clock jumps ten minutes between. When a's
    session runs out b's has 20 s to go: judged in wall time, b's deadline would be long past."""
    h = BrokerHarness()
    create(h, "t")
    h.call(request(10, 4, key_type=0, coordinator_keys=["g"]))
    wall, mono = h.now_ms, h.now_ms
    _beat(h, "a")
    h.tick_at(wall + 20_000, mono + 20_000)
    _beat(h, "b")
    h.tick_at(wall + 20_000 + JUMP_MS, mono + 20_001)
    assert _members(h) == ["a", "b"]
    h.tick_at(wall + 20_000 + JUMP_MS, mono + SESSION_MS)
    assert _members(h) == ["b"], "a was silent for its 45 s session; b for 25 s"
    h.tick_at(wall + 20_000 + JUMP_MS, mono + 20_000 + SESSION_MS)
    assert _members(h) == []


def test_a_share_member_expires_within_its_session_after_a_backward_wall_step() -> None:
    h = BrokerHarness()
    create(h, "t")
    h.call(request(10, 4, key_type=0, coordinator_keys=["g"]))
    wall, mono = h.now_ms, h.now_ms
    _beat(h, "a")
    h.tick_at(wall - JUMP_MS, mono + SESSION_MS - 1)
    assert _members(h) == ["a"]
    h.tick_at(wall - JUMP_MS, mono + SESSION_MS)
    assert _members(h) == [], "silent for its 45 s session since its last heartbeat"
