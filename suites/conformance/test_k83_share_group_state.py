"""The share coordinator's state APIs (KIP-932): InitializeShareGroupState (83), ReadShareGroupState
(84), WriteShareGroupState (85), DeleteShareGroupState (86), ReadShareGroupStateSummary (87).

Rules from Kafka's share coordinator (share-coordinator/src/main/java/org/apache/kafka/coordinator/
share/ShareCoordinatorShard.java, ``ShareCoordinatorService.java``, ``PersisterStateBatchCombiner.java``)
and ``KafkaApis.handle*ShareGroupState*Request``: requests go to the coordinator of the key
``groupId:topicId:partition`` (FindCoordinator v6, key type 2); a write's state batches are laid over
the recorded ones and nothing below the start offset is kept; a leader epoch below the recorded one
is FENCED_LEADER_EPOCH, a state epoch below it FENCED_STATE_EPOCH; a topic the metadata does not have
is UNKNOWN_TOPIC_OR_PARTITION; an empty group id is answered with no results; a deleted state is gone.

These are broker-to-broker APIs; the run's principal is a super user on secured targets. Targets
that do not advertise them (or FindCoordinator v6) skip these tests.
"""

from __future__ import annotations

import base64
import uuid
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, describe_absence, ops
from fixtures.wire.share import ACCEPT, RELEASE, ShareConsumer, acquired_offsets

from .expect import expect, expect_code, expect_equal

KIP = "KIP-932"
AVAILABLE, ACKNOWLEDGED, ARCHIVED = 0, 2, 4
FETCH_ROUNDS = 20
APIS = (
    "initialize_share_group_state",
    "read_share_group_state",
    "write_share_group_state",
    "delete_share_group_state",
    "read_share_group_state_summary",
)


@pytest.fixture(autouse=True)
def _state_apis(caps: Capabilities) -> None:
    for api in APIS:
        if not caps.supports(api):
            pytest.skip(describe_absence(api, caps))
    if not caps.supports("find_coordinator") or caps.best("find_coordinator") < 6:
        pytest.skip("share coordinator keys need FindCoordinator v6")


def kafka_uuid(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


class Key:
    """One share-partition key and the connection to its share coordinator."""

    def __init__(self, router: Router, caps: Capabilities, group: str, topic_id: uuid.UUID) -> None:
        self.caps, self.group, self.topic_id, self.partition = caps, group, topic_id, 0
        self.wire: WireClient = router.to_coordinator(f"{group}:{kafka_uuid(topic_id)}:0", 2)

    def send(self, api: str, version: int | None = None, group: str | None = None, **partition: Any) -> Any:
        """One request for this key; its single partition result."""
        v = self.caps.best(api) if version is None else version
        answer = self.wire.request(
            api,
            v,
            group_id=self.group if group is None else group,
            topics=[{"topic_id": self.topic_id, "partitions": [{"partition": self.partition, **partition}]}],
        )
        return answer

    def one(self, api: str, version: int | None = None, **partition: Any) -> Any:
        answer = self.send(api, version, **partition)
        expect_equal(len(answer.results), 1, KIP, f"{api} results")
        expect_equal(answer.results[0].topic_id, self.topic_id, KIP, f"{api} topic id")
        parts = answer.results[0].partitions
        expect_equal([int(p.partition) for p in parts], [0], KIP, f"{api} partitions")
        return parts[0]

    def write(
        self,
        batches: list[tuple[int, int, int, int]],
        *,
        start: int = 0,
        leader_epoch: int = 0,
        state_epoch: int = 0,
        version: int | None = None,
    ) -> Any:
        return self.one(
            "write_share_group_state",
            version,
            state_epoch=state_epoch,
            leader_epoch=leader_epoch,
            start_offset=start,
            state_batches=[
                {"first_offset": f, "last_offset": la, "delivery_state": s, "delivery_count": c}
                for f, la, s, c in batches
            ],
        )

    def read(self, leader_epoch: int = 0) -> Any:
        return self.one("read_share_group_state", leader_epoch=leader_epoch)


def batches_of(result: Any) -> list[tuple[int, int, int, int]]:
    return [
        (int(b.first_offset), int(b.last_offset), int(b.delivery_state), int(b.delivery_count))
        for b in result.state_batches
    ]


def expanded(batches: list[tuple[int, int, int, int]]) -> dict[int, tuple[int, int]]:
    """Offset -> (state, count): the comparison does not depend on how a target splits batches."""
    return {o: (s, c) for f, la, s, c in batches for o in range(f, la + 1)}


@pytest.fixture
def key(router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str) -> Key:
    k = Key(router, caps, unique("sg"), ops.topic_id(router, caps, topic))
    init = k.one("initialize_share_group_state", state_epoch=0, start_offset=0)
    expect_code(init.error_code, "NONE", rule=KIP, where="InitializeShareGroupState")
    return k


@pytest.mark.versions("write_share_group_state")
def test_written_state_is_read_back_merged(key: Key, version: int) -> None:
    """``PersisterStateBatchCombiner``: a later write's batches replace what they cover; the rest of
    the earlier batches stays; ReadShareGroupState answers the start offset and the merged batches."""
    expect_code(
        key.write([(0, 9, AVAILABLE, 1)], version=version).error_code, "NONE", rule=KIP, where="write 1"
    )
    expect_code(
        key.write([(3, 4, ACKNOWLEDGED, 1), (6, 6, ARCHIVED, 2)], version=version).error_code,
        "NONE",
        rule=KIP,
        where="write 2",
    )
    got = key.read()
    expect_code(got.error_code, "NONE", rule=KIP, where="ReadShareGroupState")
    expect_equal(int(got.start_offset), 0, KIP, "start offset")
    want = {o: (AVAILABLE, 1) for o in range(10)} | {
        3: (ACKNOWLEDGED, 1),
        4: (ACKNOWLEDGED, 1),
        6: (ARCHIVED, 2),
    }
    expect_equal(expanded(batches_of(got)), want, KIP, "offset → (state, delivery count)")


def test_batches_below_the_start_offset_are_dropped(key: Key) -> None:
    """A write that moves the start offset: the recorded batches below it are gone."""
    key.write([(0, 9, AVAILABLE, 1)])
    expect_code(key.write([(5, 5, ACKNOWLEDGED, 1)], start=4).error_code, "NONE", rule=KIP, where="write")
    got = key.read()
    expect_equal(int(got.start_offset), 4, KIP, "start offset after the write")
    states = expanded(batches_of(got))
    expect(min(states) >= 4, KIP, f"batches below the start offset 4 were kept: {batches_of(got)}")
    expect_equal(states.get(5), (ACKNOWLEDGED, 1), KIP, "offset 5")


@pytest.mark.versions("read_share_group_state_summary")
def test_summary_gives_the_start_offset_and_epochs(key: Key, version: int) -> None:
    """ReadShareGroupStateSummary: state epoch, leader epoch and start offset as last written; v1's
    DeliveryCompleteCount counts the acknowledged and archived offsets at or past the start."""
    key.write([(2, 5, AVAILABLE, 1), (6, 7, ACKNOWLEDGED, 1), (8, 8, ARCHIVED, 3)], start=2, leader_epoch=3)
    got = key.one("read_share_group_state_summary", version, leader_epoch=-1)
    expect_code(got.error_code, "NONE", rule=KIP, where="ReadShareGroupStateSummary")
    expect_equal(int(got.start_offset), 2, KIP, "start offset")
    expect_equal(int(got.leader_epoch), 3, KIP, "leader epoch")
    expect_equal(int(got.state_epoch), 0, KIP, "state epoch")
    if version >= 1 and int(got.delivery_complete_count) != -1:
        expect_equal(int(got.delivery_complete_count), 3, "KIP-1226", "delivery complete count")


def test_an_older_leader_epoch_is_fenced(key: Key) -> None:
    """A write or read with a leader epoch below the recorded one: FENCED_LEADER_EPOCH, nothing
    changed."""
    expect_code(
        key.write([(0, 0, ACKNOWLEDGED, 1)], leader_epoch=5).error_code, "NONE", rule=KIP, where="write"
    )
    stale = key.write([(0, 0, AVAILABLE, 2)], leader_epoch=4)
    expect_code(stale.error_code, "FENCED_LEADER_EPOCH", rule=KIP, where="write with leader epoch 4 < 5")
    expect_code(key.read(leader_epoch=2).error_code, "FENCED_LEADER_EPOCH", rule=KIP, where="read, epoch 2")
    got = key.read(leader_epoch=5)
    expect_equal(expanded(batches_of(got)).get(0), (ACKNOWLEDGED, 1), KIP, "state after the fenced write")


def test_an_older_state_epoch_is_fenced(key: Key) -> None:
    """InitializeShareGroupState with a state epoch below the recorded one: FENCED_STATE_EPOCH; a
    higher one starts the state afresh (no batches, the new start offset)."""
    key.write([(0, 3, ACKNOWLEDGED, 1)])
    again = key.one("initialize_share_group_state", state_epoch=2, start_offset=7)
    expect_code(again.error_code, "NONE", rule=KIP, where="initialize, state epoch 2")
    got = key.read()
    expect_equal((int(got.state_epoch), int(got.start_offset)), (2, 7), KIP, "state epoch, start offset")
    stale = key.one("initialize_share_group_state", state_epoch=1, start_offset=0)
    expect_code(stale.error_code, "FENCED_STATE_EPOCH", rule=KIP, where="initialize, state epoch 1 < 2")


def test_deleted_state_is_gone(key: Key) -> None:
    """DeleteShareGroupState: the state written before is no longer read back."""
    key.write([(0, 4, ACKNOWLEDGED, 1)], start=0)
    deleted = key.one("delete_share_group_state")
    expect_code(deleted.error_code, "NONE", rule=KIP, where="DeleteShareGroupState")
    got = key.read()
    expect(
        int(got.error_code) != 0 or (int(got.start_offset) == -1 and not got.state_batches),
        KIP,
        f"state read back after its deletion: start {got.start_offset}, batches {batches_of(got)}",
    )


def test_unknown_topic_is_unknown_topic_or_partition(
    router: Router, caps: Capabilities, unique: Callable[[str], str]
) -> None:
    """A key whose topic id the metadata does not have: UNKNOWN_TOPIC_OR_PARTITION (the shard's
    metadata check)."""
    k = Key(router, caps, unique("sg"), uuid.uuid4())
    got = k.write([(0, 0, AVAILABLE, 1)])
    expect_code(got.error_code, "UNKNOWN_TOPIC_OR_PARTITION", rule=KIP, where="write for an unknown topic id")


@pytest.mark.versions("read_share_group_state")
def test_empty_group_id_has_no_results(key: Key, version: int) -> None:
    """``ShareCoordinatorService``: an empty group id is answered with no results."""
    answer = key.send("read_share_group_state", version, group="", leader_epoch=0)
    expect_equal(list(answer.results), [], KIP, "results for an empty group id")


def test_acknowledgements_reach_the_share_coordinator(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """``SharePartition.acknowledge`` completes after the persister's write: once ShareAcknowledge
    is answered, the share coordinator's summary has the share-partition's new start offset (the
    acknowledged records' end) and the state batches mark the released record AVAILABLE with the
    delivery count it had."""
    for api in ("share_group_heartbeat", "share_fetch", "share_acknowledge"):
        if not caps.supports(api):
            pytest.skip(describe_absence(api, caps))
    group = unique("sg")
    tp = (ops.topic_id(router, caps, topic), 0)
    m = ShareConsumer(router.to_coordinator(group), router.to_leader(topic, 0), caps, group)
    expect(m.join([topic], {tp}), KIP, f"member {m.member_id} was never assigned {tp}")
    expect_code(m.fetch([tp]).error_code, "NONE", rule=KIP, where="ShareFetch opening the session")
    expect_code(ops.produce_values(router, caps, topic, [b"a", b"b", b"c"]).error_code, "NONE", rule="setup")
    got: dict[int, int] = {}
    for _ in range(FETCH_ROUNDS):  # a target may still be reading the share-partition's state
        got.update(acquired_offsets(m.fetch([tp], max_wait_ms=500), tp))
        if len(got) == 3:
            break
    expect_equal(got, {0: 1, 1: 1, 2: 1}, KIP, "acquired offsets → delivery count")
    acked = m.acknowledge({tp: [(0, 1, ACCEPT), (2, 2, RELEASE)]})
    expect_code(acked.error_code, "NONE", rule=KIP, where="ShareAcknowledge")
    key = Key(router, caps, group, tp[0])
    summary = key.one("read_share_group_state_summary", leader_epoch=-1)
    expect_code(summary.error_code, "NONE", rule=KIP, where="ReadShareGroupStateSummary")
    expect_equal(int(summary.start_offset), 2, KIP, "start offset after ACCEPT of 0-1")
    state = key.read(leader_epoch=-1)
    expect_equal(expanded(batches_of(state)).get(2), (AVAILABLE, 1), KIP, "the released offset 2")
