"""Producing one task's share of the dataset with a real client, recording every delivery report.

This runs inside a Spark executor (one :class:`TaskProducer` per task, so one
producer, one connection set and one ordered stream per task) but imports no
Spark: it is plain client code, testable on its own. The acknowledged set is
what the broker confirmed, record by record, so the producer records and never
judges: a delivery error is a row with ``error`` set, and a record still in
flight when the time bound ends is a row with error ``undelivered``
(indeterminate: it may or may not be in the log).
"""

from __future__ import annotations

import functools
import time
from collections import deque
from collections.abc import Iterable
from typing import Any

from fixtures.wire.security import with_run_security, with_run_security_kafka_python

from .config import LoadConfig
from .payloads import RecordGenerator

REPORT_COLUMNS = (
    "generator_id",
    "seq",
    "producer",
    "key",
    "partition",
    "offset",
    "error",
    "send_us",
    "ack_us",
    "value_bytes",
)
UNDELIVERED = "undelivered: still in flight when the producer stopped"
_MAX_QUEUE_WAIT_S = 60.0


def _now_us() -> int:
    return time.time_ns() // 1000


class ReportBuffer:
    """Delivery reports, appended from any thread (a deque is safe for that), taken as columns."""

    def __init__(self) -> None:
        self._rows: deque[tuple[Any, ...]] = deque()

    def add(self, row: tuple[Any, ...]) -> None:
        self._rows.append(row)

    def __len__(self) -> int:
        return len(self._rows)

    def take(self) -> dict[str, list[Any]]:
        """The reports so far as columns (``REPORT_COLUMNS``), removed from the buffer."""
        rows = [self._rows.popleft() for _ in range(len(self._rows))]
        if not rows:
            return {name: [] for name in REPORT_COLUMNS}
        return {
            name: list(column) for name, column in zip(REPORT_COLUMNS, zip(*rows, strict=True), strict=True)
        }


def confluent_settings(config: LoadConfig) -> dict[str, Any]:
    spec = config.producer
    settings: dict[str, Any] = {
        "bootstrap.servers": config.bootstrap_servers,
        "acks": spec.acks,
        "enable.idempotence": spec.idempotence,
        "compression.type": spec.compression,
        "batch.size": spec.batch_size,
        "linger.ms": spec.linger_ms,
        "delivery.timeout.ms": spec.delivery_timeout_ms,
        # Java's default partitioner, so a key lands where a Java client would put it.
        "partitioner": "murmur2_random",
        # A short local queue: an open-loop task otherwise queues its whole share at once and the
        # "delivery latency" measured is mostly time spent waiting in the client (p50 ~850 ms vs ~6 ms
        # at the same throughput against Tansu). Override with --producer-config.
        "queue.buffering.max.messages": 20_000,
    }
    settings.update(dict(spec.extra))
    return with_run_security(settings)


def _typed(value: str) -> Any:
    for convert in (int, float):
        try:
            return convert(value)
        except ValueError:
            pass
    return {"true": True, "false": False}.get(value.lower(), value)


def kafka_python_settings(config: LoadConfig) -> dict[str, Any]:
    spec = config.producer
    settings: dict[str, Any] = {
        "bootstrap_servers": config.bootstrap_servers.split(","),
        "acks": "all" if spec.acks in ("all", "-1") else int(spec.acks),
        "enable_idempotence": spec.idempotence,
        "compression_type": None if spec.compression == "none" else spec.compression,
        "batch_size": spec.batch_size,
        "linger_ms": spec.linger_ms,
        "delivery_timeout_ms": spec.delivery_timeout_ms,
    }
    settings.update({k: _typed(v) for k, v in spec.extra})
    return with_run_security_kafka_python(settings)


class TaskProducer:
    """One task's producer: send a range of sequence numbers, collect the delivery reports.

    ``send`` returns as soon as its records are queued (the client batches
    them); ``drain`` hands over the reports that arrived so far, and ``finish``
    flushes, turning whatever is still in flight at the deadline into
    ``undelivered`` rows. The rate limit and the time bound count from the
    first ``send``.
    """

    def __init__(self, config: LoadConfig, task_index: int) -> None:
        self.config = config
        self.task_index = task_index
        self.generator = RecordGenerator(config.dataset)
        self.reports = ReportBuffer()
        self.sent = 0
        self.unsent = 0
        self.stopped_by_time_bound = False
        self.stop_reason: str | None = None
        """Why sending stopped before the end of its range (time bound, a broker not taking records)."""
        # seq -> (key, value bytes, send time). kafka-python reports from its own thread; a single
        # dict insert or pop is atomic under the GIL, and each seq is touched by one thread at a time.
        self._in_flight: dict[int, tuple[bytes, int, int]] = {}
        self._started_s: float | None = None
        self._client = config.producer.client
        self._producer: Any
        if self._client == "confluent-kafka":
            from confluent_kafka import Producer

            self._producer = Producer(confluent_settings(config))
        else:
            from kafka import KafkaProducer

            self._producer = KafkaProducer(**kafka_python_settings(config))
        self._warm_up()

    def _warm_up(self) -> None:
        """Fetch the topic's metadata before the first send, so no record's latency includes it."""
        try:
            if self._client == "confluent-kafka":
                self._producer.list_topics(self.config.topic, timeout=10)
            else:
                self._producer.partitions_for(self.config.topic)
        except Exception:  # not fatal: the first sends then wait for the metadata themselves
            pass

    # --- delivery reports -------------------------------------------------------------

    def _record_report(self, seq: int, partition: int | None, offset: int | None, error: str | None) -> None:
        key, size, send_us = self._in_flight.pop(seq)
        gen = self.config.dataset.generator_id
        self.reports.add((gen, seq, self.task_index, key, partition, offset, error, send_us, _now_us(), size))

    def _on_confluent_delivery(self, seq: int, err: Any, msg: Any) -> None:
        if err is None:
            self._record_report(seq, msg.partition(), msg.offset(), None)
        else:
            self._record_report(seq, None, None, str(err.str() if hasattr(err, "str") else err))

    def _on_kafka_python_ok(self, seq: int, metadata: Any) -> None:
        self._record_report(seq, metadata.partition, metadata.offset, None)

    def _on_kafka_python_error(self, seq: int, exc: BaseException) -> None:
        self._record_report(seq, None, None, f"{type(exc).__name__}: {exc}")

    # --- sending ------------------------------------------------------------------------

    def _pace(self, now: float) -> bool:
        """Wait for the rate limit; False when the time bound has passed (stop sending)."""
        assert self._started_s is not None
        spec = self.config.producer
        if spec.time_bound_s is not None and now - self._started_s >= spec.time_bound_s:
            self.stopped_by_time_bound = True
            self.stop_reason = f"time bound of {spec.time_bound_s:g}s reached"
            return False
        if spec.rate_per_task is not None:
            due = self._started_s + self.sent / spec.rate_per_task
            if due > now:
                self._poll(min(due - now, 0.1))
        return True

    def _poll(self, timeout_s: float) -> None:
        if self._client == "confluent-kafka":
            self._producer.poll(timeout_s)
        elif timeout_s > 0:
            time.sleep(timeout_s)

    def send(self, seqs: Iterable[int]) -> None:
        if self._started_s is None:
            self._started_s = time.monotonic()
        topic = self.config.topic
        for seq in seqs:
            if self.stop_reason is not None or not self._pace(time.monotonic()):
                self.unsent += 1
                continue
            key, value = self.generator.record(seq)
            self._in_flight[seq] = (key, len(value), _now_us())
            if self._client == "confluent-kafka":
                queued = self._send_confluent(topic, seq, key, value)
            else:
                queued = self._send_kafka_python(topic, seq, key, value)
            if queued:
                self.sent += 1
            else:
                self._in_flight.pop(seq, None)
                self.unsent += 1

    def _send_kafka_python(self, topic: str, seq: int, key: bytes, value: bytes) -> bool:
        try:
            future = self._producer.send(topic, key=key, value=value)
        except Exception as exc:  # the client refused the record (buffer full past max_block_ms, ...)
            self.stop_reason = f"the client refused a record: {type(exc).__name__}: {exc}"
            return False
        future.add_callback(functools.partial(self._on_kafka_python_ok, seq))
        future.add_errback(functools.partial(self._on_kafka_python_error, seq))
        return True

    def _send_confluent(self, topic: str, seq: int, key: bytes, value: bytes) -> bool:
        callback = functools.partial(self._on_confluent_delivery, seq)
        deadline = time.monotonic() + _MAX_QUEUE_WAIT_S
        while True:
            try:
                self._producer.produce(topic, key=key, value=value, on_delivery=callback)
                break
            except BufferError:
                # The local queue is full: serve delivery reports until there is room.
                if time.monotonic() > deadline:
                    self.stop_reason = f"the producer queue stayed full for {_MAX_QUEUE_WAIT_S:.0f}s"
                    return False
                self._producer.poll(0.05)
        if seq % 64 == 0:  # serve delivery reports often enough, without a call per record
            self._producer.poll(0)
        return True

    def drain(self) -> dict[str, list[Any]]:
        self._poll(0)
        return self.reports.take()

    def finish(self) -> dict[str, list[Any]]:
        """Flush within the delivery timeout; anything still in flight becomes ``undelivered``."""
        timeout_s = self.config.producer.delivery_timeout_ms / 1000 + 5
        if self._client == "confluent-kafka":
            self._producer.flush(timeout_s)
        else:
            self._producer.flush(timeout=timeout_s)
            self._producer.close(timeout=5)
        stuck = list(self._in_flight)
        for seq in stuck:
            self._record_report(seq, None, None, UNDELIVERED)
        return self.reports.take()

    def close(self) -> None:
        if self._client == "kafka-python":
            self._producer.close(timeout=0)
