"""Reading one offset-range split of one partition by assign, with a real client.

Runs inside a Spark executor, imports no Spark. A split is [start, end) of one
partition; the last split of each partition is open-ended (``to_eof``) and
reads until the client reports the end of the partition, because a broker's
``ListOffsets(latest)`` answer is itself something under test (Tansu's lags
behind its log end) and must not decide what the verifier sees. Every split
reports how far it got, so an incomplete read is stated, never mistaken for
loss silently.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from fixtures.wire.security import with_run_security, with_run_security_kafka_python

from .config import LoadConfig

READ_COLUMNS = ("partition", "offset", "key", "value", "timestamp_ms", "split")
CHUNK_ROWS = 10_000


@dataclass(frozen=True, slots=True)
class Split:
    split_id: int
    partition: int
    start: int
    end: int
    """Exclusive end; ignored when ``to_eof``."""
    to_eof: bool = False


@dataclass(frozen=True, slots=True)
class SplitStatus:
    split_id: int
    partition: int
    start: int
    end: int
    reached: int
    """The next offset this split would have read (its read position at the stop)."""
    records: int
    complete: bool
    note: str


def plan_splits(ranges: dict[int, tuple[int, int]], split_records: int) -> list[Split]:
    """Cut each partition's [start, end) into splits of at most ``split_records`` offsets.

    Every partition gets at least one split and its last split is open-ended,
    so records beyond the listed end are read too.
    """
    if split_records < 1:
        raise ValueError("split_records must be >= 1")
    splits: list[Split] = []
    for partition in sorted(ranges):
        start, end = ranges[partition]
        cursor = start
        while end - cursor > split_records:
            splits.append(Split(len(splits), partition, cursor, cursor + split_records))
            cursor += split_records
        splits.append(Split(len(splits), partition, cursor, max(end, cursor), to_eof=True))
    return splits


class SplitReader:
    """Iterate ``chunks()`` (column dicts of at most CHUNK_ROWS rows); then ``status`` says how it ended."""

    def __init__(self, config: LoadConfig, split: Split) -> None:
        self.config = config
        self.split = split
        self.status: SplitStatus | None = None
        self._rows: dict[str, list[Any]] = {name: [] for name in READ_COLUMNS}
        self._count = 0

    def _add(self, offset: int, key: bytes | None, value: bytes | None, timestamp_ms: int) -> None:
        columns = self._rows
        columns["partition"].append(self.split.partition)
        columns["offset"].append(offset)
        columns["key"].append(key)
        columns["value"].append(value)
        columns["timestamp_ms"].append(timestamp_ms)
        columns["split"].append(self.split.split_id)
        self._count += 1

    def _take(self) -> dict[str, list[Any]]:
        taken, self._rows = self._rows, {name: [] for name in READ_COLUMNS}
        return taken

    def _finish(self, reached: int, note: str) -> None:
        split = self.split
        # The end of the partition completes any split: nothing more is there to read.
        complete = note == "end of partition" or (not split.to_eof and reached >= split.end)
        self.status = SplitStatus(
            split.split_id, split.partition, split.start, split.end, reached, self._count, complete, note
        )

    def chunks(self) -> Iterator[dict[str, list[Any]]]:
        if self.config.reader.client == "confluent-kafka":
            yield from self._chunks_confluent()
        else:
            yield from self._chunks_kafka_python()

    def _chunks_confluent(self) -> Iterator[dict[str, list[Any]]]:
        from confluent_kafka import Consumer, KafkaError, TopicPartition

        split, spec = self.split, self.config.reader
        consumer = Consumer(
            with_run_security({
                "bootstrap.servers": self.config.bootstrap_servers,
                "group.id": f"kh-load-reader-{self.config.topic}",  # required by the client; never joined
                "enable.auto.commit": False,
                "enable.partition.eof": True,
                "auto.offset.reset": "earliest",
                "isolation.level": spec.isolation_level,
                # The last fetch of a split waits this long for data that will not come: keep it short.
                "fetch.wait.max.ms": 100,
            })
        )
        reached, note = split.start, "time bound"
        try:
            consumer.assign([TopicPartition(self.config.topic, split.partition, split.start)])
            started = last_progress = time.monotonic()
            while time.monotonic() - started < spec.time_bound_s:
                if time.monotonic() - last_progress > spec.idle_timeout_s:
                    note = f"nothing received for {spec.idle_timeout_s:g}s"
                    break
                # consume() waits its whole timeout unless the batch fills:
                # keep it short so the end of the partition is seen at once.
                messages = consumer.consume(num_messages=1000, timeout=0.05)
                done = False
                for msg in messages:
                    err = msg.error()
                    if err is not None:
                        if err.code() == KafkaError._PARTITION_EOF:
                            reached, note, done = max(reached, msg.offset() or 0), "end of partition", True
                            break
                        if not err.retriable():
                            note, done = f"client error: {err.str()}", True
                            break
                        continue
                    offset = msg.offset()
                    if offset is None or offset < split.start:
                        continue  # the client reset to the log start: not this split's records
                    if not split.to_eof and offset >= split.end:
                        reached, note, done = max(reached, offset), "reached split end", True
                        break
                    self._add(offset, msg.key(), msg.value(), msg.timestamp()[1])
                    reached = offset + 1
                    last_progress = time.monotonic()
                if len(self._rows["offset"]) >= CHUNK_ROWS:
                    yield self._take()
                if done or (not split.to_eof and reached >= split.end):
                    if note == "time bound":
                        note = "reached split end"
                    break
        finally:
            consumer.close()
        self._finish(reached, note)
        yield self._take()

    def _chunks_kafka_python(self) -> Iterator[dict[str, list[Any]]]:
        from kafka import KafkaConsumer, TopicPartition

        split, spec = self.split, self.config.reader
        consumer = KafkaConsumer(
            **with_run_security_kafka_python(
                {
                    "bootstrap_servers": self.config.bootstrap_servers.split(","),
                    "enable_auto_commit": False,
                    "group_id": None,
                    "auto_offset_reset": "earliest",
                    "isolation_level": spec.isolation_level,
                    "fetch_max_wait_ms": 100,
                }
            )
        )
        tp = TopicPartition(self.config.topic, split.partition)
        reached, note = split.start, "time bound"
        try:
            consumer.assign([tp])
            consumer.seek(tp, split.start)
            started = last_progress = time.monotonic()
            while time.monotonic() - started < spec.time_bound_s:
                if time.monotonic() - last_progress > spec.idle_timeout_s:
                    note = f"nothing received for {spec.idle_timeout_s:g}s"
                    break
                batches = consumer.poll(timeout_ms=500, max_records=1000)
                done = False
                for record in batches.get(tp, []):
                    if record.offset < split.start:
                        continue  # the client reset to the log start: not this split's records
                    if not split.to_eof and record.offset >= split.end:
                        reached, note, done = max(reached, record.offset), "reached split end", True
                        break
                    self._add(record.offset, record.key, record.value, record.timestamp)
                    reached = record.offset + 1
                    last_progress = time.monotonic()
                if len(self._rows["offset"]) >= CHUNK_ROWS:
                    yield self._take()
                if done or (not split.to_eof and reached >= split.end):
                    note = "reached split end"
                    break
                if not batches:
                    position, highwater = consumer.position(tp), consumer.highwater(tp)
                    if highwater is not None and position is not None and position >= highwater:
                        reached, note = max(reached, position), "end of partition"
                        break
        finally:
            consumer.close()
        self._finish(reached, note)
        yield self._take()
