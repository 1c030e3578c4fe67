"""Making Stable groups and driving transactional producers, shared by the group, offset, transaction
and cluster suites. Coordinators are found by the router (``router.to_coordinator(key, key_type)``,
which retries COORDINATOR_NOT_AVAILABLE while the internal topic is being created, as clients do)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from kio.schema.errors import ErrorCode

from fixtures.wire import Capabilities, Router, WireClient, ops
from reference_impl.protocol.record_set import build_batch

from .expect import expect_code

SESSION_MS = 6_000  # group.min.session.timeout.ms, Kafka's default floor
PROTOCOL_GUIDE = "Protocol guide, Group Membership API"
TXN_KEY = 1  # FindCoordinator key_type of a transactional id
MARKERS_WAIT_S = 15.0


def groups_with_one_coordinator(router: Router, unique: Callable[[str], str], count: int) -> list[str]:
    """``count`` new group ids that have the same coordinator (on one broker: any ``count``); at most
    50 candidates are tried after the first."""
    first = unique("g")
    node = router.coordinator_of(first)
    groups = [first]
    for _ in range(50):
        if len(groups) == count:
            return groups
        candidate = unique("g")
        if router.coordinator_of(candidate) == node:
            groups.append(candidate)
    raise AssertionError(
        f"[{PROTOCOL_GUIDE}] among 50 new groups fewer than {count - 1} share {first}'s coordinator"
    )


@dataclass
class Member:
    wire: WireClient
    group: str
    member_id: str
    generation: int


def stable(wire: WireClient, caps: Capabilities, group: str, **kwargs: Any) -> Member:
    kwargs.setdefault("session_timeout_ms", SESSION_MS)
    kwargs.setdefault("rebalance_timeout_ms", SESSION_MS)
    member_id, generation = ops.stable_member(wire, caps, group, **kwargs)
    return Member(wire, group, member_id, generation)


class Txn:
    """One transactional producer speaking to its transaction coordinator and to partition leaders."""

    def __init__(self, router: Router, caps: Capabilities, tid: str) -> None:
        self.caps, self.tid = caps, tid
        self.coord = router.to_coordinator(tid, TXN_KEY)
        self.router = router
        self.sequence: dict[tuple[str, int], int] = {}
        self.pid, self.epoch = self.init()

    def init(self, version: int | None = None) -> tuple[int, int]:
        code, pid, epoch = ops.init_producer_id(self.coord, self.caps, self.tid, version=version)
        expect_code(code, "NONE", rule="KIP-98 InitProducerId")
        return pid, epoch

    def add_partitions(
        self, topic: str, partitions: tuple[int, ...] = (0,), version: int | None = None
    ) -> Any:
        v = self.caps.best("add_partitions_to_txn", hi=3) if version is None else version
        answer = self.coord.request(
            "add_partitions_to_txn",
            v,
            v3_and_below_transactional_id=self.tid,
            v3_and_below_producer_id=self.pid,
            v3_and_below_producer_epoch=self.epoch,
            v3_and_below_topics=[{"name": topic, "partitions": list(partitions)}],
        )
        return {
            int(p.partition_index): p.partition_error_code
            for t in answer.results_by_topic_v3_and_below
            for p in t.results_by_partition
        }

    def produce(
        self,
        topic: str,
        values: list[bytes],
        partition: int = 0,
        *,
        version: int | None = None,
        epoch: int | None = None,
    ) -> Any:
        """A transactional batch at the producer's epoch (or ``epoch``: a zombie's write)."""
        seq = self.sequence.get((topic, partition), 0) if epoch is None else 0
        batch = build_batch(
            [(None, v) for v in values],
            base_timestamp=int(time.time() * 1000),
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            base_sequence=seq,
            transactional=True,
        )
        answer = ops.produce_batch(
            self.router,
            self.caps,
            topic,
            batch,
            partition=partition,
            transactional_id=self.tid,
            version=version,
        )
        if answer.error_code.value == 0 and epoch is None:
            self.sequence[(topic, partition)] = seq + len(values)
        return answer

    def end(self, commit: bool, *, epoch: int | None = None, version: int | None = None) -> Any:
        """EndTxn's error code. From v5 (transaction version 2, KIP-890) a successful end answers the
        producer id and the bumped epoch to use next; the producer takes them (sequences restart)."""
        return self.end_answer(commit, epoch=epoch, version=version).error_code

    def end_answer(self, commit: bool, *, epoch: int | None = None, version: int | None = None) -> Any:
        v = self.caps.best("end_txn") if version is None else version
        answer = self.coord.request(
            "end_txn",
            v,
            transactional_id=self.tid,
            producer_id=self.pid,
            producer_epoch=self.epoch if epoch is None else epoch,
            committed=commit,
        )
        if v >= 5 and answer.error_code.value == 0 and epoch is None and int(answer.producer_id) >= 0:
            self.pid, self.epoch = int(answer.producer_id), int(answer.producer_epoch)
            self.sequence.clear()
        return answer

    def commit_offset(
        self, group_wire: WireClient, group: str, topic: str, offset: int, metadata: str, version: int
    ) -> Any:
        """TxnOffsetCommit of partition 0 of ``topic`` for ``group`` in this transaction (a consumer
        outside any generation: generation -1, no member id); the partition's error code."""
        answer = group_wire.request(
            "txn_offset_commit",
            version,
            transactional_id=self.tid,
            group_id=group,
            producer_id=self.pid,
            producer_epoch=self.epoch,
            generation_id=-1,
            member_id="",
            topics=[
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": 0,
                            "committed_offset": offset,
                            "committed_leader_epoch": -1,
                            "committed_metadata": metadata,
                        }
                    ],
                }
            ],
        )
        return answer.topics[0].partitions[0].error_code

    def write(self, topic: str, values: list[bytes], commit: bool) -> None:
        """A whole transaction over partition 0 of ``topic``. Its first AddPartitionsToTxn is retried
        while the answer is CONCURRENT_TRANSACTIONS, as clients do: the previous transaction's markers
        may still be on their way to leaders on other brokers (at most 15 s)."""
        deadline = time.monotonic() + MARKERS_WAIT_S
        code = self.add_partitions(topic)[0]
        while code == ErrorCode.concurrent_transactions and time.monotonic() < deadline:
            time.sleep(0.05)
            code = self.add_partitions(topic)[0]
        expect_code(code, "NONE", rule="KIP-98 AddPartitionsToTxn")
        expect_code(self.produce(topic, values).error_code, "NONE", rule="KIP-98 transactional Produce")
        expect_code(self.end(commit), "NONE", rule="KIP-98 EndTxn")


def committed_after(
    group_wire: WireClient, caps: Capabilities, group: str, topic: str, wait_s: float
) -> tuple[Any, ...]:
    """The group's committed (offset, metadata) for partition 0 of ``topic``, waited for (bounded by
    ``wait_s``) until a transaction's markers made it visible: -1 while none is."""
    deadline = time.monotonic() + wait_s
    while True:
        _e, after = ops.fetch_offsets(group_wire, caps, {group: [(topic, 0)]})[group]
        if after[(topic, 0)][1] != -1 or time.monotonic() > deadline:
            return tuple(after[(topic, 0)][1:])
        time.sleep(0.1)
