"""Consumer-group members on real clients (kafka-python, confluent-kafka, aiokafka), each on its own thread.

Every member consumes, "processes" (records the value in a shared ledger) and
then commits what it processed (commit-after-process). The ledger also keeps,
per member and partition, the next offset processed and the next offset
committed: when a partition is revoked or lost, or the member leaves, the
difference is the member's uncommitted in-flight records, the most another
member can see again. Clients record; the tests judge.
"""

from __future__ import annotations

import asyncio
import struct
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

POLL_S = 0.2
HEARTBEAT_MS = 300
SESSION_MS = 6000


@dataclass
class Ledger:
    """What every member of one run processed and owned; shared by the member threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    values: Counter[int] = field(default_factory=Counter)
    in_flight_lost: int = 0
    """Records processed but not committed when their partition left a member (the duplicate bound)."""
    assignments: list[tuple[float, str, str, frozenset[int]]] = field(default_factory=list)
    """(time, member, "assign" | "revoke", partitions) as the clients' callbacks reported them."""
    commit_failures: int = 0

    def processed(self) -> int:
        with self.lock:
            return sum(self.values.values())

    def distinct(self) -> int:
        with self.lock:
            return len(self.values)


class Member:
    """The client-independent bookkeeping; subclasses drive one library."""

    def __init__(
        self, name: str, ledger: Ledger, bootstrap: str, group: str, topic: str, **options: Any
    ) -> None:
        self.name = name
        self.ledger = ledger
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.options = options
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.processed_next: dict[int, int] = {}
        self.committed_next: dict[int, int] = {}
        self.owned: set[int] = set()
        self.first_assignment_s: float | None = None
        self.error: BaseException | None = None
        self.started_s = 0.0

    def start(self) -> None:
        self.started_s = time.monotonic()
        self.thread.start()

    def close(self, timeout_s: float = 30) -> None:
        """Stop and leave (idempotent; a member never started has nothing to close)."""
        self.stop.set()
        if self.thread.is_alive():
            self.thread.join(timeout_s)

    def _run(self) -> None:
        try:
            self.run()
        except BaseException as exc:  # reported by the test, never swallowed
            self.error = exc

    def run(self) -> None:
        raise NotImplementedError

    # -- callbacks the subclasses call -------------------------------------------------------

    def on_assigned(self, partitions: set[int]) -> None:
        with self.ledger.lock:
            if self.first_assignment_s is None and partitions:
                self.first_assignment_s = time.monotonic()
            self.ledger.assignments.append((time.monotonic(), self.name, "assign", frozenset(partitions)))
        for p in partitions:
            self.owned.add(p)
            self.processed_next.pop(p, None)
            self.committed_next.pop(p, None)

    def on_revoked(self, partitions: set[int]) -> None:
        with self.ledger.lock:
            self.ledger.assignments.append((time.monotonic(), self.name, "revoke", frozenset(partitions)))
            for p in partitions & self.owned:  # a close may report a partition already counted
                done, safe = self.processed_next.get(p), self.committed_next.get(p)
                if done is not None and safe is not None:
                    self.ledger.in_flight_lost += done - safe
        self.owned -= partitions

    def on_record(self, partition: int, offset: int, value: bytes) -> None:
        self.committed_next.setdefault(partition, offset)  # where this owner started: committed before it
        self.processed_next[partition] = offset + 1
        with self.ledger.lock:
            self.ledger.values[int(value)] += 1

    def process(self, polled: dict[Any, list[Any]]) -> dict[int, int]:
        """Process what a kafka-python or aiokafka poll returned; the offsets to commit, by partition."""
        batch: dict[int, int] = {}
        for tp, records in polled.items():
            for r in records:
                self.on_record(tp.partition, r.offset, r.value)
                batch[tp.partition] = r.offset + 1
        return batch

    def on_committed(self, offsets: dict[int, int]) -> None:
        self.committed_next.update(offsets)

    def on_commit_failed(self) -> None:
        with self.ledger.lock:
            self.ledger.commit_failures += 1

    def leave(self) -> None:
        """The member goes: whatever it processed but did not commit may be seen again."""
        self.on_revoked(set(self.owned))


class ConfluentMember(Member):
    def run(self) -> None:
        from confluent_kafka import Consumer, KafkaException, TopicPartition

        config = {
            "bootstrap.servers": self.bootstrap,
            "group.id": self.group,
            "client.id": self.name,
            "enable.auto.commit": False,
            "auto.offset.reset": "earliest",
            "session.timeout.ms": SESSION_MS,
            "heartbeat.interval.ms": HEARTBEAT_MS,
            "partition.assignment.strategy": self.options.get("strategy", "range"),
        }
        if self.options.get("instance_id"):
            config["group.instance.id"] = self.options["instance_id"]
        consumer = Consumer(config)
        consumer.subscribe(
            [self.topic],
            on_assign=lambda _c, ps: self.on_assigned({p.partition for p in ps}),
            on_revoke=lambda _c, ps: self.on_revoked({p.partition for p in ps}),
            on_lost=lambda _c, ps: self.on_revoked({p.partition for p in ps}),
        )
        try:
            while not self.stop.is_set():
                batch: dict[int, int] = {}
                for m in consumer.consume(500, POLL_S):
                    partition, offset, value = m.partition(), m.offset(), m.value()
                    if (
                        m.error() is None
                        and partition is not None
                        and offset is not None
                        and value is not None
                    ):
                        self.on_record(partition, offset, value)
                        batch[partition] = offset + 1
                if batch:
                    try:
                        consumer.commit(
                            offsets=[TopicPartition(self.topic, p, o) for p, o in batch.items()],
                            asynchronous=False,
                        )
                        self.on_committed(batch)
                    except KafkaException:
                        self.on_commit_failed()
        finally:
            self.leave()
            consumer.close()


class KafkaPythonMember(Member):
    def run(self) -> None:
        from kafka import ConsumerRebalanceListener, KafkaConsumer, TopicPartition
        from kafka.errors import KafkaError
        from kafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            def on_partitions_revoked(self, revoked: Any) -> None:
                member.on_revoked({tp.partition for tp in revoked})

            def on_partitions_assigned(self, assigned: Any) -> None:
                member.on_assigned({tp.partition for tp in assigned})

        consumer = KafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_records=500,
            partition_assignment_strategy=self.options["assignors"],
        )
        consumer.subscribe([self.topic], listener=Listener())
        try:
            while not self.stop.is_set():
                batch = self.process(consumer.poll(timeout_ms=int(POLL_S * 1000)))
                if batch:
                    try:
                        consumer.commit(
                            {
                                TopicPartition(self.topic, p): OffsetAndMetadata(o, "", -1)
                                for p, o in batch.items()
                            }
                        )
                        self.on_committed(batch)
                    except KafkaError:
                        self.on_commit_failed()
        finally:
            self.leave()
            consumer.close(autocommit=False)


class AiokafkaMember(Member):
    def run(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        from aiokafka import AIOKafkaConsumer, ConsumerRebalanceListener, TopicPartition
        from aiokafka.errors import KafkaError
        from aiokafka.structs import OffsetAndMetadata

        member = self

        class Listener(ConsumerRebalanceListener):  # type: ignore[misc]
            async def on_partitions_revoked(self, revoked: Any) -> None:
                member.on_revoked({tp.partition for tp in revoked})

            async def on_partitions_assigned(self, assigned: Any) -> None:
                member.on_assigned({tp.partition for tp in assigned})

        consumer = AIOKafkaConsumer(
            bootstrap_servers=self.bootstrap,
            group_id=self.group,
            client_id=self.name,
            enable_auto_commit=False,
            auto_offset_reset="earliest",
            session_timeout_ms=SESSION_MS,
            heartbeat_interval_ms=HEARTBEAT_MS,
            max_poll_records=500,
            partition_assignment_strategy=self.options["assignors"],
        )
        consumer.subscribe([self.topic], listener=Listener())
        await consumer.start()
        try:
            while not self.stop.is_set():
                batch = self.process(await consumer.getmany(timeout_ms=int(POLL_S * 1000)))
                if batch:
                    try:
                        await consumer.commit(
                            {
                                TopicPartition(self.topic, p): OffsetAndMetadata(o, "")
                                for p, o in batch.items()
                            }
                        )
                        self.on_committed(batch)
                    except KafkaError:
                        self.on_commit_failed()
        finally:
            self.leave()
            await consumer.stop()


def parse_assignment(data: bytes) -> dict[str, set[int]]:
    """A ConsumerProtocolAssignment (the prefix every version shares): topic → partitions."""
    if len(data) < 6:
        return {}
    pos = 2
    (topics,) = struct.unpack_from(">i", data, pos)
    pos += 4
    out: dict[str, set[int]] = {}
    for _ in range(topics):
        (length,) = struct.unpack_from(">h", data, pos)
        name = data[pos + 2 : pos + 2 + length].decode()
        pos += 2 + length
        (count,) = struct.unpack_from(">i", data, pos)
        pos += 4
        out[name] = set(struct.unpack_from(f">{count}i", data, pos))
        pos += 4 * count
    return out


def generations(bootstrap: str, group: str, partitions: int) -> list[tuple[int, dict[str, set[int]]]]:
    """Every generation's assignment as the coordinator stored it: (generation, member → partitions).

    Read back from ``__consumer_offsets`` with a real client and decoded with
    Kafka's GroupMetadataValue layout: the broker's own record of who owned what.
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    from reference_impl.core.group.log_format import GroupKey, decode_group_value, decode_key
    from reference_impl.core.internal_topics import partition_for

    index = partition_for(group, partitions)
    reader = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": f"{group}-reader", "enable.auto.commit": False}
    )
    _low, high = reader.get_watermark_offsets(TopicPartition("__consumer_offsets", index), timeout=30)
    reader.assign([TopicPartition("__consumer_offsets", index, OFFSET_BEGINNING)])
    out: list[tuple[int, dict[str, set[int]]]] = []
    deadline = time.monotonic() + 30
    position = 0
    while position < high and time.monotonic() < deadline:
        for m in reader.consume(1000, 0.5):
            offset = m.offset()
            if m.error() is not None or offset is None:
                continue
            position = offset + 1
            key, value = m.key(), m.value()
            if key is None or value is None or decode_key(key) != GroupKey(group):
                continue
            stored = decode_group_value(value)
            if stored.members:
                owners = {
                    mem.member_id: set().union(*parse_assignment(mem.assignment).values()) or set()
                    for mem in stored.members
                }
                out.append((stored.generation, owners))
    reader.close()
    return out
