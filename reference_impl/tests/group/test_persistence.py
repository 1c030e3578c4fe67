"""``__consumer_offsets`` holds Kafka's record layouts; a restarted coordinator rebuilds groups from it."""

from __future__ import annotations

import struct

from reference_impl.core.group.log_format import (
    CommittedOffset,
    GroupKey,
    OffsetKey,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from reference_impl.core.internal_topics import partition_for
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import iter_headers

from ..core.harness import BrokerHarness, request
from .helpers import GROUP_CONFIGS, Client, commit, committed, describe, harness, stabilise, topic

PARTITIONS = 5  # offsets.topic.num.partitions in GROUP_CONFIGS


def _s(value: str | None) -> bytes:
    """A classic (int16-length) string, as Kafka's generated serializers write it."""
    if value is None:
        return struct.pack(">h", -1)
    return struct.pack(">h", len(value.encode())) + value.encode()


def _records(h: BrokerHarness, group: str) -> list[tuple[bytes | None, bytes | None]]:
    part = h.broker.partition("__consumer_offsets", partition_for(group, PARTITIONS))
    assert part is not None
    result = part.log.read(part.log.log_start_offset, 1 << 22)
    data = b"".join(h.store.read_chunk(c) for c in result.chunks)
    return [(r.key, r.value) for header in iter_headers(data) for r in iter_records(data, header)]


def test_offset_commit_record_has_kafkas_key_and_value_layout() -> None:
    h = harness()
    topic(h, "orders", 2)
    commit(h, "billing", {("orders", 1): 42}, metadata="m")
    key, value = _records(h, "billing")[-1]
    assert key == struct.pack(">h", 1) + _s("billing") + _s("orders") + struct.pack(">i", 1)
    assert value is not None
    version, offset, epoch = struct.unpack_from(">hqi", value)
    assert (version, offset, epoch) == (3, 42, 0)
    assert value[14:] == _s("m") + struct.pack(">q", h.now_ms)


def test_group_metadata_record_has_kafkas_layout() -> None:
    h = harness()
    a = Client(h, "g", instance_id="inst-a")
    plan = stabilise(h, a)
    key, value = _records(h, "g")[-1]
    assert key == struct.pack(">h", 2) + _s("g")
    assert value is not None
    expected_head = (
        struct.pack(">h", 3) + _s("consumer") + struct.pack(">i", 1) + _s("range") + _s(a.member_id)
    )
    assert value.startswith(expected_head)
    pos = len(expected_head)
    (state_ts, count) = struct.unpack_from(">qi", value, pos)
    assert count == 1 and state_ts > 0
    member = (
        _s(a.member_id)
        + _s("inst-a")
        + _s("test-client")
        + _s("/127.0.0.1")
        + struct.pack(">ii", 30_000, 10_000)
        + struct.pack(">i", len(a.protocols[0][1]))
        + a.protocols[0][1]
        + struct.pack(">i", len(plan[a.member_id]))
        + plan[a.member_id]
    )
    assert value[pos + 12 :] == member


def test_reads_every_value_version_including_flexible_v4() -> None:
    def uvarint(n: int) -> bytes:
        out = b""
        while True:
            byte, n = n & 0x7F, n >> 7
            out += bytes([byte | (0x80 if n else 0)])
            if not n:
                return out

    def compact(s: str | None) -> bytes:
        return uvarint(0) if s is None else uvarint(len(s.encode()) + 1) + s.encode()

    tagged = uvarint(1) + uvarint(0) + uvarint(3) + b"xyz"  # one unknown tagged field, skipped
    v4 = struct.pack(">hqi", 4, 7, 2) + compact("meta") + struct.pack(">q", 99) + tagged
    assert decode_offset_value(v4) == CommittedOffset(7, 2, "meta", 99, None)
    v1 = struct.pack(">hq", 1, 5) + _s("x") + struct.pack(">qq", 10, 20)
    assert decode_offset_value(v1) == CommittedOffset(5, -1, "x", 10, 20)
    v0 = struct.pack(">hq", 0, 5) + _s("") + struct.pack(">q", 10)
    assert decode_offset_value(v0) == CommittedOffset(5, -1, "", 10, None)
    member4 = (
        compact("m1")
        + compact(None)
        + compact("cid")
        + compact("/h")
        + struct.pack(">ii", 100, 50)
        + uvarint(3)
        + b"su"
        + uvarint(2)
        + b"a"
        + uvarint(0)
    )
    g4 = (
        struct.pack(">h", 4)
        + compact("consumer")
        + struct.pack(">i", 8)
        + compact("range")
        + compact("m1")
        + struct.pack(">q", 1234)
        + uvarint(2)
        + member4
        + uvarint(0)
    )
    group = decode_group_value(g4)
    assert (
        group.protocol_type,
        group.generation,
        group.protocol,
        group.leader,
        group.state_timestamp_ms,
    ) == (
        "consumer",
        8,
        "range",
        "m1",
        1234,
    )
    m = group.members[0]
    assert (
        m.member_id,
        m.group_instance_id,
        m.client_id,
        m.rebalance_timeout_ms,
        m.subscription,
        m.assignment,
    ) == (
        "m1",
        None,
        "cid",
        100,
        b"su",
        b"a",
    )
    v0_group = (
        struct.pack(">h", 0)
        + _s("consumer")
        + struct.pack(">i", 1)
        + _s(None)
        + _s(None)
        + struct.pack(">i", 0)
    )
    assert decode_group_value(v0_group).members == ()
    assert decode_key(struct.pack(">h", 0) + _s("g") + _s("t") + struct.pack(">i", 3)) == OffsetKey(
        "g", "t", 3
    )
    assert decode_key(struct.pack(">h", 2) + _s("g")) == GroupKey("g")


def test_offsets_and_group_state_survive_a_restart() -> None:
    h = harness()
    topic(h, "t", 2)
    a, b = Client(h, "g", session_ms=10_000), Client(h, "g", instance_id="static-b", session_ms=10_000)
    plan = stabilise(h, a, b)
    commit(h, "g", {("t", 0): 11, ("t", 1): 12}, generation=a.generation, member_id=a.member_id)
    commit(h, "simple", {("t", 0): 3})
    before = describe(h, "g")

    restarted = BrokerHarness(*GROUP_CONFIGS, store=h.store, now_ms=h.now_ms + 1000)
    assert committed(restarted, "g", [("t", 0), ("t", 1)]) == {("t", 0): 11, ("t", 1): 12}
    assert committed(restarted, "simple", [("t", 0)]) == {("t", 0): 3}
    after = describe(restarted, "g")
    assert (after.group_state, after.protocol_data) == ("Stable", before.protocol_data)
    assert {(m.member_id, m.group_instance_id, bytes(m.member_assignment)) for m in after.members} == {
        (a.member_id, None, plan[a.member_id]),
        (b.member_id, "static-b", plan[b.member_id]),
    }
    for old in (a, b):
        old.h = restarted
        old.cid = restarted.connect()
    assert a.heartbeat() == ErrorCode.none  # the same generation is still current
    assert b.heartbeat() == ErrorCode.none
    b.send_sync()
    assert bytes(b.read_sync().assignment) == plan[b.member_id]
    restarted.advance(10_001)  # nobody heartbeats any more: the loaded members expire like any other
    gone = describe(restarted, "g")
    assert (gone.group_state, gone.members) == ("Empty", ())


def test_deleted_group_stays_deleted_after_restart() -> None:
    h = harness()
    topic(h, "t", 1)
    commit(h, "gone", {("t", 0): 1})
    assert h.call(request(42, 2, groups_names=["gone"])).results[0].error_code == ErrorCode.none
    key, value = _records(h, "gone")[-1]
    assert (decode_key(key or b""), value) == (GroupKey("gone"), None)
    restarted = BrokerHarness(*GROUP_CONFIGS, store=h.store, now_ms=h.now_ms + 1)
    assert committed(restarted, "gone", [("t", 0)]) == {("t", 0): -1}
    assert "gone" not in restarted.broker.group_coordinator.groups
