"""Cluster and describe APIs: DescribeCluster (60), DescribeLogDirs (35), DescribeProducers (61),
DescribeTransactions (65), ListTransactions (66), OffsetForLeaderEpoch (23), DescribeQuorum (55).

Rules from KIP-700 (DescribeCluster: the same brokers and cluster id as Metadata), KIP-113
(DescribeLogDirs: the partitions each log directory holds and their sizes), KIP-664
(DescribeProducers, DescribeTransactions, ListTransactions: the producer and transaction state
brokers keep), KIP-101 / KIP-320 (OffsetForLeaderEpoch: the end offset of the latest epoch is the
log end offset; a current_leader_epoch newer than the leader's is UNKNOWN_LEADER_EPOCH), KIP-595 /
KIP-853 (DescribeQuorum: the metadata quorum as its leader sees it, the same from every broker).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, build_request, ops
from reference_impl.protocol.record_set import build_batch

from .coordinators import MARKERS_WAIT_S, TXN_KEY, Txn
from .expect import expect, expect_code, expect_equal

FEATURE = "Cluster and describe APIs"


@pytest.mark.versions("describe_cluster")
def test_describe_cluster_matches_metadata(version: int, wire: WireClient, caps: Capabilities) -> None:
    """KIP-700: DescribeCluster lists the same brokers (id, host, port) and cluster id as Metadata,
    and a controller that is one of them (or -1)."""
    answer = wire.request("describe_cluster", version, include_cluster_authorized_operations=False)
    expect_code(answer.error_code, "NONE", rule="KIP-700")
    meta = ops.metadata(wire, caps, [])
    expect_equal(answer.cluster_id, meta.cluster_id, "KIP-700", "cluster id (Metadata's)")
    described = sorted((int(b.broker_id), b.host, int(b.port)) for b in answer.brokers)
    listed = sorted((int(b.node_id), b.host, int(b.port)) for b in meta.brokers)
    expect_equal(described, listed, "KIP-700", "brokers (Metadata's)")
    expect(
        int(answer.controller_id) in {b[0] for b in described} | {-1},
        "KIP-700",
        f"controller {answer.controller_id} is not a broker",
    )


@pytest.mark.versions("describe_log_dirs")
def test_describe_log_dirs_shows_the_partition(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-113: DescribeLogDirs names the log directory holding each partition asked for, with a size
    that grows when records are appended (asked of the partition's leader, a broker that holds it)."""
    ops.produce_values(router, caps, topic, [b"x" * 500])
    asked = [{"topic": topic, "partitions": [0]}]
    answer = router.to_leader(topic).request("describe_log_dirs", version, topics=asked)
    sizes = [
        int(p.partition_size)
        for d in answer.results
        if d.error_code.value == 0
        for t in d.topics
        if t.name == topic
        for p in t.partitions
        if int(p.partition_index) == 0
    ]
    expect_equal(len(sizes), 1, "KIP-113", "log directories holding the partition")
    expect(sizes[0] >= 500, "KIP-113", f"partition size {sizes[0]} after a 500-byte record")


@pytest.mark.requires("describe_producers")
def test_describe_producers_lists_an_idempotent_producer(
    router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-664 DescribeProducers: after an idempotent producer wrote sequences 0..2 to a partition, the
    partition's active producers (asked of its leader) include it with its epoch and last sequence 2."""
    code, pid, epoch = ops.init_producer_id(router, caps)
    expect_code(code, "NONE", rule="setup: InitProducerId")
    batch = build_batch(
        [(None, b"a"), (None, b"b"), (None, b"c")],
        base_timestamp=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=0,
    )
    expect_code(ops.produce_batch(router, caps, topic, batch).error_code, "NONE", rule="setup: Produce")
    answer = router.to_leader(topic).request(
        "describe_producers",
        caps.best("describe_producers"),
        topics=[{"name": topic, "partition_indexes": [0]}],
    )
    part = answer.topics[0].partitions[0]
    expect_code(part.error_code, "NONE", rule="KIP-664")
    states = {
        int(p.producer_id): (int(p.producer_epoch), int(p.last_sequence)) for p in part.active_producers
    }
    expect_equal(states.get(pid), (epoch, 2), "KIP-664", "(epoch, last sequence) of the producer")


def _describe_txn(wire: WireClient, caps: Capabilities, tid: str) -> Any:
    answer = wire.request(
        "describe_transactions", caps.best("describe_transactions"), transactional_ids=[tid]
    )
    return answer.transaction_states[0]


def _unknown_txn_error(wire: WireClient, caps: Capabilities, tid: str) -> int:
    """The error code for one unknown transactional id, read from the raw answer: Kafka reports its
    transaction_start_time as -1, which kio's timestamp type refuses to decode."""
    from reference_impl.protocol.codec import encode_request

    version = caps.best("describe_transactions")
    entity = ops.wire_build("describe_transactions", version, {"transactional_ids": [tid]})
    answer = wire.send_raw(encode_request(entity, wire.next_correlation_id(), wire.client_id))
    expect(answer is not None, "KIP-664", "the broker closed the connection")
    assert answer is not None
    # correlation id (4), header tags (1), throttle_time_ms (4), states array length (1), then error_code
    expect_equal(answer[9], 2, "KIP-664", "compact length of the transaction_states array (one entry)")
    return int.from_bytes(answer[10:12], "big", signed=True)


@pytest.mark.requires("describe_transactions")
def test_describe_transactions_shows_an_open_transaction(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic: str
) -> None:
    """KIP-664 DescribeTransactions: an open transaction is Ongoing with its producer id, epoch and
    partitions; after the abort it is CompleteAbort; an unknown id is TRANSACTIONAL_ID_NOT_FOUND."""
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule="setup: AddPartitionsToTxn")
    state = _describe_txn(txn.coord, caps, txn.tid)
    expect_code(state.error_code, "NONE", rule="KIP-664")
    expect_equal(
        (state.transaction_state, int(state.producer_id), int(state.producer_epoch)),
        ("Ongoing", txn.pid, txn.epoch),
        "KIP-664",
        "(state, producer id, epoch)",
    )
    expect_equal(
        [(t.topic, sorted(int(p) for p in t.partitions)) for t in state.topics],
        [(topic, [0])],
        "KIP-664",
        "topics",
    )
    expect_code(txn.end(False), "NONE", rule="setup: EndTxn")
    # EndTxn is answered once PrepareAbort is written; CompleteAbort follows the markers, which on a
    # cluster go to leaders on other brokers first.
    deadline = time.monotonic() + MARKERS_WAIT_S
    ended = _describe_txn(txn.coord, caps, txn.tid).transaction_state
    while ended == "PrepareAbort" and time.monotonic() < deadline:
        time.sleep(0.05)
        ended = _describe_txn(txn.coord, caps, txn.tid).transaction_state
    expect_equal(ended, "CompleteAbort", "KIP-664", "state after the markers")
    absent = unique("absent")  # asked of its own coordinator (others answer NOT_COORDINATOR)
    expect_code(
        _unknown_txn_error(router.to_coordinator(absent, TXN_KEY), caps, absent),
        "TRANSACTIONAL_ID_NOT_FOUND",
        rule="KIP-664",
    )


@pytest.mark.versions("list_transactions")
def test_list_transactions_with_state_filter(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-664 ListTransactions: the coordinator lists its transactional ids with producer id and
    state; a state filter keeps only those in the named states."""
    txn = Txn(router, caps, unique("tx"))
    expect_code(txn.add_partitions(topic)[0], "NONE", rule="setup: AddPartitionsToTxn")

    def listed(states: list[str]) -> dict[str, tuple[int, str]]:
        answer = txn.coord.request(
            "list_transactions", version, state_filters=states, producer_id_filters=[], duration_filter=-1
        )
        expect_code(answer.error_code, "NONE", rule="KIP-664")
        return {
            t.transactional_id: (int(t.producer_id), t.transaction_state) for t in answer.transaction_states
        }

    expect_equal(listed([]).get(txn.tid), (txn.pid, "Ongoing"), "KIP-664", "listed (producer id, state)")
    expect(txn.tid not in listed(["CompleteCommit"]), "KIP-664", "an Ongoing transaction passed the filter")
    expect(txn.tid in listed(["Ongoing"]), "KIP-664", "the Ongoing filter left the transaction out")
    txn.end(False)


@pytest.mark.versions("list_transactions", lo=2)
def test_list_transactions_pattern_is_re2(
    version: int,
    router: Router,
    caps: Capabilities,
    unique: Callable[[str], str],
    topic: str,
) -> None:
    """KIP-1152 ListTransactions v2: ``transactional_id_pattern`` keeps the ids it matches whole.
    Kafka compiles it with RE2/J, so lookbehind is INVALID_REGULAR_EXPRESSION, and a pattern that
    backtracks exponentially in a backtracking engine (``(a+)+$`` over a long id of a's ending in
    another character) is answered at once instead of pinning the coordinator."""
    long_tid = "a" * 4000 + "-" + unique("tx")
    txn = Txn(router, caps, long_tid)
    expect_code(txn.add_partitions(topic)[0], "NONE", rule="setup: AddPartitionsToTxn")

    def ask(pattern: str) -> Any:
        return txn.coord.send(
            build_request(
                "list_transactions",
                version,
                {
                    "state_filters": [],
                    "producer_id_filters": [],
                    "duration_filter": -1,
                    "transactional_id_pattern": pattern,
                },
            ),
            timeout_s=20.0,
        )

    whole = ask("a+-.*")
    expect_code(whole.error_code, "NONE", rule="KIP-1152")
    expect(
        long_tid in {t.transactional_id for t in whole.transaction_states},
        "KIP-1152",
        "a+-.* left the transaction out",
    )
    prefix_only = ask("a+")
    expect(
        long_tid not in {t.transactional_id for t in prefix_only.transaction_states},
        "KIP-1152",
        "the pattern must match the whole id, not a prefix",
    )
    expect_code(ask("(?<=x)y").error_code, "INVALID_REGULAR_EXPRESSION", rule="KIP-1152 (RE2/J syntax)")
    hostile = ask("(a+)+$")
    expect_code(hostile.error_code, "NONE", rule="KIP-1152")
    expect(
        long_tid not in {t.transactional_id for t in hostile.transaction_states},
        "KIP-1152",
        "(a+)+$ matched an id with a '-' in it",
    )
    txn.end(False)


@pytest.mark.versions("offset_for_leader_epoch")
def test_offset_for_leader_epoch(version: int, router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-101 / KIP-320: for the partition's current leader epoch the end offset is the log end
    offset; a current_leader_epoch newer than the leader's is UNKNOWN_LEADER_EPOCH (asked of the
    leader, as a follower or consumer does)."""
    ops.produce_values(router, caps, topic, [b"a", b"b", b"c"])
    wire = router.to_leader(topic)
    meta = ops.metadata(wire, caps, [topic], version=caps.best("metadata", lo=7))
    epoch = int(meta.topics[0].partitions[0].leader_epoch)

    def ask(current: int) -> Any:
        answer = wire.request(
            "offset_for_leader_epoch",
            version,
            replica_id=-1,
            topics=[
                {
                    "topic": topic,
                    "partitions": [{"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}],
                }
            ],
        )
        return answer.topics[0].partitions[0]

    got = ask(epoch)
    expect_code(got.error_code, "NONE", rule="KIP-101")
    expect_equal((int(got.leader_epoch), int(got.end_offset)), (epoch, 3), "KIP-101", "(epoch, end offset)")
    expect_code(ask(epoch + 5).error_code, "UNKNOWN_LEADER_EPOCH", rule="KIP-320")


@pytest.mark.versions("describe_quorum")
def test_describe_quorum_from_every_broker(version: int, router: Router) -> None:
    """KIP-595: DescribeQuorum names the metadata quorum's leader among its voters, with a high
    watermark no voter's log end is behind when it is the leader's own; every broker gives the same
    leader and epoch (Kafka's brokers forward the request to the active controller). KIP-853 (v2):
    ``nodes`` gives an endpoint for every voter."""
    metadata_partition = {"topic_name": "__cluster_metadata", "partitions": [{"partition_index": 0}]}
    seen = set()
    for wire in router.connections():
        answer = wire.request("describe_quorum", version, topics=[metadata_partition])
        expect_code(answer.error_code, "NONE", rule="KIP-595")
        [topic] = answer.topics
        [partition] = topic.partitions
        where = f"the quorum as {wire.label} describes it"
        expect_code(partition.error_code, "NONE", rule="KIP-595", where=where)
        voters = {int(v.replica_id): int(v.log_end_offset) for v in partition.current_voters}
        leader = int(partition.leader_id)
        expect(leader in voters, "KIP-595", f"the leader {leader} is not among the voters {sorted(voters)}")
        expect(
            0 <= int(partition.high_watermark) <= voters[leader],
            "KIP-595",
            f"high watermark {partition.high_watermark} past the leader's log end {voters[leader]}",
        )
        seen.add((leader, int(partition.leader_epoch)))
        print(f"v{version} {wire.label}: leader {leader}, HW {partition.high_watermark}, log ends {voters}")
        if version >= 2:
            endpoints = {int(n.node_id): [(e.host, int(e.port)) for e in n.listeners] for n in answer.nodes}
            expect(
                set(voters) <= set(endpoints) and all(endpoints[v] for v in voters),
                "KIP-853",
                f"nodes {endpoints} do not give every voter {sorted(voters)} an endpoint",
            )
    expect(len(seen) == 1, "KIP-595", f"brokers disagree on the quorum's (leader, epoch): {sorted(seen)}")
