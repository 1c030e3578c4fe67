"""The share coordinator's pieces without a broker: the ``__share_group_state`` record formats
(Kafka's ShareSnapshotKey/Value and ShareUpdateKey/Value, share-coordinator/src/main/resources/common/
message/), the batch combiner (``PersisterStateBatchCombiner``) and a share-partition's state round
trip (what the leader writes is what a new leader restores)."""

from __future__ import annotations

import struct
import uuid
from typing import Any

import pytest

from reference_impl.core.group.log_format import GroupLogFormatError
from reference_impl.core.group.share_partition import (
    AckBatch,
    AcknowledgeType,
    RecordState,
    SharePartition,
    SharePartitionConfig,
)
from reference_impl.core.group.share_state import combine, complete_count
from reference_impl.core.group.share_state_records import (
    SNAPSHOT,
    UPDATE,
    ShareState,
    StateBatch,
    StateKey,
    decode_key,
    decode_snapshot,
    decode_update,
    encode_key,
    encode_snapshot,
    encode_update,
)
from reference_impl.core.internal_topics import partition_for, stored_records
from reference_impl.protocol.error_response import error_response
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from ..core.harness import BrokerHarness, request
from ..core.test_acls import ACL_CONFIGS, _login, _topic
from ..core.test_data_path import create, produce

TOPIC = uuid.UUID(int=1)
B = StateBatch


def test_key_layout_is_kafkas() -> None:
    """int16 record type, int16-length group id, 16-byte uuid, int32 partition (non-flexible)."""
    key = StateKey("g", TOPIC, 3)
    raw = encode_key(UPDATE, key)
    assert raw == struct.pack(">hh", 1, 1) + b"g" + TOPIC.bytes + struct.pack(">i", 3)
    assert decode_key(raw) == (UPDATE, key)
    assert decode_key(struct.pack(">h", 3) + b"x") is None  # another coordinator's record type


def test_coordinator_key_is_kafkas_string_and_partition() -> None:
    """``SharePartitionKey.toString``: the topic id in Kafka's Uuid text (URL-safe base64)."""
    key = StateKey("grp", TOPIC, 0)
    assert key.coordinator_key() == "grp:AAAAAAAAAAAAAAAAAAAAAQ:0"
    assert 0 <= partition_for(key.coordinator_key(), 50) < 50


def test_values_round_trip_with_the_tagged_count() -> None:
    state = ShareState(2, 1, 7, 10, (B(10, 12, 0, 1), B(13, 13, 2, 1)), 1, 100, 200)
    raw = encode_snapshot(state)
    assert raw[:2] == b"\x00\x00"  # value version 0
    assert decode_snapshot(raw) == state
    update = ShareState(2, -1, 7, -1, (B(11, 11, 4, 3),), -1)
    assert decode_update(encode_update(update)) == update


def test_a_hostile_batch_count_is_refused_before_allocation() -> None:
    raw = struct.pack(">hiiq", 0, 0, 0, 0) + b"\xff\xff\xff\x0f"  # a huge compact array length
    with pytest.raises(GroupLogFormatError):
        decode_update(raw)


def test_combiner_lays_new_batches_over_old_and_trims_to_the_start() -> None:
    old = (B(0, 9, 0, 1),)
    got = combine(old, (B(3, 4, 2, 1), B(4, 6, 4, 1)), 0)
    assert got == (B(0, 2, 0, 1), B(3, 3, 2, 1), B(4, 6, 4, 1), B(7, 9, 0, 1))
    assert combine((B(0, 9, 0, 1), B(10, 20, 2, 1)), (B(5, 12, 0, 2),), 7) == (
        B(7, 12, 0, 2),
        B(13, 20, 2, 1),
    )
    assert combine((), (B(5, 1, 0, 1),), 0) == ()  # last before first: dropped
    huge = combine((B(0, 1 << 62, 0, 1),), (B(5, 5, 2, 1),), 0)  # no loop per offset
    assert huge == (B(0, 4, 0, 1), B(5, 5, 2, 1), B(6, 1 << 62, 0, 1))
    assert complete_count(0, huge) == 1


def test_a_share_partition_state_round_trips_to_a_new_leader() -> None:
    """Acknowledged records stay done, released ones come back with their count, acquired ones
    come back available with theirs, offsets no batch names are new."""
    config = SharePartitionConfig()
    old = SharePartition(config, log_start=0, log_end=0)
    old.acquire("m", mono_ms=0, log_end=10, max_records=10)
    written = old.acknowledge(
        "m",
        [
            AckBatch(0, 1, (int(AcknowledgeType.ACCEPT),)),
            AckBatch(3, 4, (int(AcknowledgeType.RELEASE),)),
            AckBatch(5, 5, (int(AcknowledgeType.REJECT),)),
        ],
    )
    assert old.start_offset == 0 and old.changes == 1  # until the write's success commits it
    new = SharePartition(config, log_start=0, log_end=10)
    new.restore(old.start_offset, old.state_batches())
    assert new.start_offset == 2, "the state written with the acknowledgement"
    old.complete_transitions(written, commit=True)
    assert old.start_offset == 2
    new = SharePartition(config, log_start=0, log_end=10)
    new.restore(old.start_offset, old.state_batches())
    assert new.start_offset == 2
    assert new.state_of(5) is not None and new.state_of(5).state is RecordState.ARCHIVED  # type: ignore[union-attr]
    got = {r.first_offset: r.delivery_count for r in new.acquire("n", mono_ms=0, log_end=12, max_records=20)}
    assert got == {2: 2, 6: 2, 10: 1}  # 2 (held), 3-4 (released), 6-9 (held): count 2; 10-11 new


def test_restore_is_bounded_by_the_record_locks() -> None:
    config = SharePartitionConfig(max_record_locks=100)
    sp = SharePartition(config, log_start=0, log_end=0)
    sp.restore(0, [(0, 1 << 40, 0, 1)])
    assert sp.in_flight() == 100 and sp.end_offset == 99


def test_the_state_apis_need_cluster_action() -> None:
    """``KafkaApis.handle*ShareGroupState*Request``: CLUSTER_ACTION on the cluster, else every
    partition CLUSTER_AUTHORIZATION_FAILED; FindCoordinator's share keys need it too."""
    harness = BrokerHarness(*ACL_CONFIGS)
    admin = _login(harness, "admin", "admin-secret")
    alice = _login(harness, "alice", "alice-secret")
    assert _topic(harness, admin, "t") == ErrorCode.none
    topic_id = harness.broker.image.topics["t"].topic_id
    part = {"partition": 0, "state_epoch": 0, "start_offset": 0}
    bodies = {
        83: (0, part),
        84: (0, {"partition": 0, "leader_epoch": 0}),
        85: (1, {**part, "leader_epoch": 0, "state_batches": []}),
        86: (0, {"partition": 0}),
        87: (1, {"partition": 0, "leader_epoch": 0}),
    }
    key = StateKey("g", topic_id, 0).coordinator_key()
    found = harness.call(request(10, 6, key_type=2, coordinator_keys=[key]), alice).coordinators[0]
    assert found.error_code == ErrorCode.cluster_authorization_failed
    harness.call(request(10, 6, key_type=2, coordinator_keys=[key]), admin)  # creates __share_group_state
    for api, (version, partition) in bodies.items():
        body = request(api, version, group_id="g", topics=[{"topic_id": topic_id, "partitions": [partition]}])
        refused = harness.call(body, alice).results[0].partitions[0]
        assert refused.error_code == ErrorCode.cluster_authorization_failed, api
        assert harness.call(body, admin).results[0].partitions[0].error_code == ErrorCode.none, api


def _share_round(h: BrokerHarness, topic_id: uuid.UUID, epoch: int, acks: list[tuple[int, int, int]]) -> Any:
    """One ShareFetch of member ``m`` of group ``g`` at session ``epoch`` (with piggybacked acks)."""
    batches = [{"first_offset": f, "last_offset": la, "acknowledge_types": [t]} for f, la, t in acks]
    partition = {"partition_index": 0, "acknowledgement_batches": batches}
    return h.call(
        request(
            78, 1, group_id="g", member_id="m", share_session_epoch=epoch, max_wait=0, min_bytes=0,
            max_bytes=1 << 20, max_records=500, batch_size=500, forgotten_topics_data=[],
            topics=[{"topic_id": topic_id, "partitions": [partition]}],
        )
    )  # fmt: skip


def _join(h: BrokerHarness) -> None:
    h.call(request(10, 4, key_type=0, coordinator_keys=["g"]))  # creates __consumer_offsets
    beat = request(
        76, 1, group_id="g", member_id="m", member_epoch=0, rack_id=None, subscribed_topic_names=["t"]
    )
    assert h.call(beat).error_code == ErrorCode.none


def _acquired(answer: Any) -> dict[int, int]:
    return {
        o: int(a.delivery_count)
        for a in answer.responses[0].partitions[0].acquired_records
        for o in range(int(a.first_offset), int(a.last_offset) + 1)
    }


def test_a_new_broker_over_the_same_logs_resumes_the_share_partition() -> None:
    """In process (a broker restarted over its store): ACCEPTed records are not delivered again,
    RELEASEd ones come back with delivery count 2, a ShareSnapshot then ShareUpdates are on
    ``__share_group_state``. Without the persister the new broker starts at the log end."""
    h = BrokerHarness()
    create(h, "t")
    topic_id = h.broker.image.topics["t"].topic_id
    _join(h)
    assert _acquired(_share_round(h, topic_id, 0, [])) == {}  # the share-partition starts at the end
    assert produce(h, "t", 0, build_batch([(None, b"v%d" % i) for i in range(10)])).error_code == 0
    assert _acquired(_share_round(h, topic_id, 1, [])) == {o: 1 for o in range(10)}
    acked = h.call(
        request(79, 1, group_id="g", member_id="m", share_session_epoch=2, topics=[{"topic_id": topic_id,
                "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                    {"first_offset": 0, "last_offset": 4, "acknowledge_types": [1]},
                    {"first_offset": 5, "last_offset": 6, "acknowledge_types": [2]}]}]}])
    )  # fmt: skip
    assert acked.responses[0].partitions[0].error_code == ErrorCode.none
    state_logs = [p for (name, _), p in h.broker.partitions.items() if name == "__share_group_state"]
    types = [decode_key(r.key)[0] for p in state_logs for r in stored_records(h.store, p) if r.key]  # type: ignore[index]
    assert types[0] == SNAPSHOT and types.count(UPDATE) >= 1
    again = BrokerHarness(store=h.store, now_ms=h.now_ms + 1000)
    _join(again)
    assert _acquired(_share_round(again, topic_id, 0, [])) == {5: 2, 6: 2, 7: 2, 8: 2, 9: 2}


def test_an_error_response_names_every_partition() -> None:
    """``WriteShareGroupStateRequest.getErrorResponse`` (and 83, 84, 86, 87's): one result per topic,
    every partition with the error and its message (what a request out of turn during SASL gets)."""
    body = request(
        85, 1, group_id="g", topics=[{"topic_id": TOPIC, "partitions": [
            {"partition": 2, "state_epoch": 0, "leader_epoch": 0, "start_offset": 0, "state_batches": []}]}]
    )  # fmt: skip
    answer: Any = error_response(85, 1, body, ErrorCode.illegal_sasl_state, "out of turn")
    assert answer is not None
    (result,) = answer.results
    assert result.topic_id == TOPIC
    assert [(int(p.partition), p.error_code, p.error_message) for p in result.partitions] == [
        (2, ErrorCode.illegal_sasl_state, "out of turn")
    ]
