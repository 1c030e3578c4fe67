"""``__consumer_offsets`` replicated over three brokers: writes are answered once the ISR has them."""

from __future__ import annotations

from reference_impl.core.internal_topics import partition_for
from reference_impl.protocol.errors import ErrorCode

from ..core.cluster_harness import ClusterHarness
from ..core.harness import request

PARTITIONS = 3


def _commit(c: ClusterHarness, node: int, group: str, offset: int) -> ErrorCode:
    r = c.call(
        node,
        request(
            8,
            9,
            group_id=group,
            generation_id_or_member_epoch=-1,
            member_id="",
            topics=[
                {
                    "name": "t",
                    "partitions": [
                        {"partition_index": 0, "committed_offset": offset, "committed_metadata": ""}
                    ],
                }
            ],
        ),
    )
    return ErrorCode(r.topics[0].partitions[0].error_code)


def _fetch(c: ClusterHarness, node: int, group: str) -> int:
    r = c.call(
        node, request(9, 9, groups=[{"group_id": group, "topics": [{"name": "t", "partition_indexes": [0]}]}])
    )
    return int(r.groups[0].topics[0].partitions[0].committed_offset)


def test_commit_waits_for_the_replicas_and_only_the_coordinator_answers() -> None:
    c = ClusterHarness(3, f"offsets.topic.num.partitions={PARTITIONS}", "offsets.topic.replication.factor=3")
    first = c.call(2, request(10, 3, key="g", key_type=0))
    assert first.error_code == ErrorCode.coordinator_not_available  # the topic is being created
    c.sync()
    info = c.brokers[1].image.topics["__consumer_offsets"]
    shard = info.partitions[partition_for("g", PARTITIONS)]
    assert len(shard.replicas) == 3 and info.configs["cleanup.policy"] == "compact"
    answers = [c.call(n, request(10, 3, key="g", key_type=0)) for n in (1, 2, 3)]
    assert {(a.error_code, a.node_id, a.host) for a in answers} == {
        (ErrorCode.none, shard.leader, f"broker-{shard.leader}")
    }
    c.call(
        1,
        request(
            19,
            7,
            topics=[
                {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            timeout=1000,
            validate_only=False,
        ),
    )
    c.sync()
    coordinator = shard.leader
    others = [n for n in (1, 2, 3) if n != coordinator]
    assert _commit(c, others[0], "g", 5) == ErrorCode.not_coordinator
    fetched = c.call(others[1], request(9, 9, groups=[{"group_id": "g", "topics": None}]))
    assert fetched.groups[0].error_code == ErrorCode.not_coordinator
    leader_part = c.brokers[coordinator].partition("__consumer_offsets", partition_for("g", PARTITIONS))
    assert leader_part is not None
    before = leader_part.high_watermark
    assert _commit(c, coordinator, "g", 7) == ErrorCode.none  # answered after the followers fetched it
    assert leader_part.high_watermark > before
    for n in others:
        follower = c.brokers[n].partition("__consumer_offsets", partition_for("g", PARTITIONS))
        assert follower is not None and follower.log.log_end_offset == leader_part.log.log_end_offset
    assert _fetch(c, coordinator, "g") == 7


def test_commit_times_out_as_coordinator_not_available_without_replicas() -> None:
    c = ClusterHarness(
        3,
        f"offsets.topic.num.partitions={PARTITIONS}",
        "offsets.topic.replication.factor=3",
        "offsets.commit.timeout.ms=500",
        "replica.lag.time.max.ms=60000",
    )
    c.call(1, request(10, 3, key="g", key_type=0))
    c.sync()
    c.call(
        1,
        request(
            19,
            7,
            topics=[
                {"name": "t", "num_partitions": 1, "replication_factor": 1, "assignments": [], "configs": []}
            ],
            timeout=1000,
            validate_only=False,
        ),
    )
    c.sync()
    coordinator = (
        c.brokers[1].image.topics["__consumer_offsets"].partitions[partition_for("g", PARTITIONS)].leader
    )
    for n in (1, 2, 3):
        if n != coordinator:
            c.stop(n)  # the followers stop fetching; the ISR keeps them for a minute
    assert _commit(c, coordinator, "g", 3) == ErrorCode.coordinator_not_available
    assert _fetch(c, coordinator, "g") == -1  # never applied: it was not committed
