"""The queue workload: producers send unique values, consumers read them back; everything recorded.

Producers (confluent-kafka) pick each record's partition themselves so the invoke already names
it, and send ``"<process>-<n>"`` values at a shared rate. A delivery report is ``ok`` with the
offset; an error the broker certainly refused before writing is ``fail``; any other error
(timeouts, lost connections, ``NOT_ENOUGH_REPLICAS_AFTER_APPEND``...) is ``info``: it may be stored.

Consumers either ``assign`` every partition from the beginning (independent observers: each reads
everything, so one consumer's skip is visible against another's reads), or join one ``group``
(``subscribe``; each rebalance is an ``assign`` op). Clients record and never judge.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, KafkaException, Producer, TopicPartition

from chaos.history import Op, Recorder
from fixtures.wire.security import with_run_security

FINAL = 999
"""Process id of the final reader (``final_read``)."""

# Errors that mean the record was certainly not written (the broker refused it, or it was never sent).
DEFINITE_FAILURES = {
    KafkaError.NOT_ENOUGH_REPLICAS,
    KafkaError.MSG_SIZE_TOO_LARGE,
    KafkaError.UNKNOWN_TOPIC_OR_PART,
    KafkaError.INVALID_REQUIRED_ACKS,
    KafkaError.TOPIC_AUTHORIZATION_FAILED,
    KafkaError.INVALID_RECORD,
    KafkaError._QUEUE_FULL,
    KafkaError._PURGE_QUEUE,
    KafkaError._UNKNOWN_PARTITION,
}


@dataclass
class QueueOptions:
    topic: str
    partitions: int = 3
    producers: int = 2
    consumers: int = 2
    rate: float = 1000.0
    """Sends per second, all producers together."""
    acks: str = "all"
    retries: int | None = None
    idempotence: bool = True
    consumer_mode: str = "assign"  # assign | group
    group_protocol: str = "classic"
    """classic or consumer (KIP-848): how the group consumers of ``consumer_mode == "group"`` rebalance."""
    message_timeout_ms: int = 60_000
    """Longer than any fault plus recovery. When messages time out, librdkafka's idempotent producer
    bumps its epoch and re-sends what was in flight from sequence 0 of the new epoch (its documented
    message-timeout behaviour; the Java client's is KAFKA-14034): a record the broker had already
    stored is then stored again, and no broker can tell, Kafka included. With 10 s a 7.8 s isolation
    produced hundreds of such cross-epoch duplicates on the reference cluster; with 60 s, none."""
    read_committed: bool = False
    extra_producer: dict[str, Any] = field(default_factory=dict)


def delivery_callback(recorder: Recorder, invoked: Op, count_error: Callable[[str], None]) -> Any:
    """A confluent-kafka ``on_delivery`` that completes ``invoked``: ``ok`` with the offset, ``fail``
    for an error that certainly means not written, ``info`` for any other."""

    def on_delivery(err: KafkaError | None, msg: Any) -> None:
        if err is None:
            recorder.complete(invoked, "ok", partition=msg.partition(), offset=msg.offset())
            return
        count_error(err.name())
        kind = "fail" if err.code() in DEFINITE_FAILURES else "info"
        recorder.complete(invoked, kind, error=err.name())

    return on_delivery


def producer_config(bootstrap: str, options: QueueOptions) -> dict[str, Any]:
    config: dict[str, Any] = with_run_security({
        "bootstrap.servers": bootstrap,
        "acks": options.acks,
        "enable.idempotence": options.idempotence,
        "linger.ms": 5,
        "message.timeout.ms": options.message_timeout_ms,
        "request.timeout.ms": 5000,
        "reconnect.backoff.max.ms": 1000,
        "topic.metadata.refresh.interval.ms": 2000,
        "queue.buffering.max.messages": 100_000,
    })
    if options.retries is not None:
        config["retries"] = options.retries
    config.update(options.extra_producer)
    return config


def consumer_config(bootstrap: str, group: str, options: QueueOptions) -> dict[str, Any]:
    """librdkafka settings of one consumer. With the consumer protocol (KIP-848) the broker owns the
    session and heartbeat timing (``group.consumer.*``), and librdkafka refuses the classic knobs."""
    config: dict[str, Any] = {
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "enable.auto.commit": options.consumer_mode == "group",
        "auto.offset.reset": "earliest",
        "isolation.level": "read_committed" if options.read_committed else "read_uncommitted",
        "reconnect.backoff.max.ms": 1000,
        "topic.metadata.refresh.interval.ms": 2000,
        "enable.partition.eof": False,
    }
    if options.consumer_mode == "group" and options.group_protocol == "consumer":
        config["group.protocol"] = "consumer"
    else:
        config.update({"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
    return with_run_security(config)


class QueueWorkload:
    """Producer and consumer threads around one recorder; ``stop_producers`` then ``drain`` then ``stop``."""

    def __init__(self, recorder: Recorder, bootstrap: str, options: QueueOptions, *, group: str) -> None:
        self.recorder = recorder
        self.bootstrap = bootstrap
        self.options = options
        self.group = group
        self._stop_producing = threading.Event()
        self._stop_consuming = threading.Event()
        self._threads: list[threading.Thread] = []
        self.read_upto: dict[int, dict[tuple[str, int], int]] = {}
        """Consumer process -> (topic, partition) -> next offset it has not read yet."""
        self.errors: dict[str, int] = {}
        self._errors_lock = threading.Lock()
        self.sent = 0

    def _count_error(self, name: str) -> None:
        with self._errors_lock:
            self.errors[name] = self.errors.get(name, 0) + 1

    def start(self) -> None:
        for i in range(self.options.consumers):
            self._spawn(self._consume, 100 + i)
        for i in range(self.options.producers):
            self._spawn(self._produce, i)

    def _start_slots(self, target: Callable[[int], None], count: int, prefix: str) -> None:
        """``count`` daemon threads running ``target(slot)``, named ``prefix-slot``."""
        for slot in range(count):
            thread = threading.Thread(target=target, args=(slot,), name=f"{prefix}-{slot}", daemon=True)
            thread.start()
            self._threads.append(thread)

    def _spawn(self, target: Any, process: int) -> None:
        thread = threading.Thread(target=target, args=(process,), name=f"queue-{process}", daemon=True)
        thread.start()
        self._threads.append(thread)

    # --- producers ---------------------------------------------------------------------------

    def _produce(self, process: int) -> None:
        """Send until told to stop; a producer that turns fatal is replaced under a new process id."""
        for incarnation in range(100):
            if self._stop_producing.is_set() or not self._produce_with(process + 1000 * incarnation):
                return

    def _produce_with(self, process: int) -> bool:
        """One producer's life; returns True when it died of a fatal error (and should be replaced)."""
        options = self.options
        producer = Producer(producer_config(self.bootstrap, options))
        interval = options.producers / max(options.rate, 0.001)
        next_at = time.monotonic()
        n = 0
        try:
            while not self._stop_producing.is_set():
                value = f"{process}-{n}"
                partition = n % options.partitions
                n += 1
                invoked = self.recorder.invoke(
                    process, "send", value=value, topic=options.topic, partition=partition
                )
                try:
                    producer.produce(
                        options.topic,
                        value.encode(),
                        partition=partition,
                        on_delivery=self._delivery_callback(invoked),
                    )
                    self.sent += 1
                except BufferError:
                    self.recorder.complete(invoked, "fail", error="_QUEUE_FULL")
                except KafkaException as exc:
                    self.recorder.complete(invoked, "fail", error=exc.args[0].name())
                    raise
                producer.poll(0)
                next_at += interval
                pause = next_at - time.monotonic()
                if pause > 0:
                    producer.poll(min(pause, 0.5))
                elif pause < -1.0:
                    next_at = time.monotonic()  # far behind (a fault held us): do not burst to catch up
            producer.flush(options.message_timeout_ms / 1000 + 5)
            return False
        except KafkaException as exc:
            self._count_error(f"fatal:{exc.args[0].name()}")
            with contextlib.suppress(KafkaException):
                producer.flush(1)  # in-flight records get their (info) delivery reports
            return True

    def _delivery_callback(self, invoked: Op) -> Any:
        return delivery_callback(self.recorder, invoked, self._count_error)

    # --- consumers ---------------------------------------------------------------------------

    def _consume(self, process: int) -> None:
        options = self.options
        group = self.group if options.consumer_mode == "group" else f"{self.group}-observer-{process}"
        consumer = Consumer(consumer_config(self.bootstrap, group, options))
        upto: dict[tuple[str, int], int] = {}
        self.read_upto[process] = upto

        def on_assign(c: Any, partitions: list[Any]) -> None:
            invoked = self.recorder.invoke(process, "assign", value=sorted(p.partition for p in partitions))
            self.recorder.complete(invoked, "ok")

        if options.consumer_mode == "group":
            consumer.subscribe([options.topic], on_assign=on_assign, on_revoke=on_assign)
        else:
            partitions = [
                TopicPartition(options.topic, p, OFFSET_BEGINNING) for p in range(options.partitions)
            ]
            consumer.assign(partitions)
            on_assign(consumer, partitions)
        try:
            while not self._stop_consuming.is_set():
                self._poll(consumer, process, upto, 500)
        finally:
            consumer.close()

    def _poll(self, consumer: Any, process: int, upto: dict[tuple[str, int], int], batch: int) -> None:
        """One consume call, recorded as a poll op when it returned records (errors are only counted)."""
        records = []
        for msg in consumer.consume(batch, 0.2):
            if msg.error() is not None:
                self._count_error(msg.error().name())
                continue
            raw = msg.value()
            value = raw.decode(errors="replace") if raw is not None else None
            records.append((msg.topic(), msg.partition(), msg.offset(), value))
            tp = (msg.topic(), msg.partition())
            upto[tp] = max(upto.get(tp, 0), msg.offset() + 1)
        if records:
            self.recorder.complete(self.recorder.invoke(process, "poll"), "ok", records=records)
        # the position passes transaction markers too, which the high watermark counts
        with contextlib.suppress(KafkaException):
            for position in consumer.position(consumer.assignment()):
                if position.offset >= 0:
                    tp = (position.topic, position.partition)
                    upto[tp] = max(upto.get(tp, 0), position.offset)

    # --- the end -----------------------------------------------------------------------------

    def stop_producers(self) -> None:
        self._stop_producing.set()
        for thread in self._threads:
            if thread.name.startswith("queue-") and int(thread.name.split("-")[1]) < 100:
                thread.join(self.options.message_timeout_ms / 1000 + 15)

    def caught_up(self, highs: dict[tuple[str, int], int]) -> bool:
        """Every consumer (assign mode) or the group together has read its topic up to the high watermarks."""
        if not self.options.consumers:
            return True
        high_watermarks = {tp: h for tp, h in highs.items() if tp[0] == self.options.topic}
        views = list(self.read_upto.values())
        if self.options.consumer_mode == "group":
            merged: dict[tuple[str, int], int] = {}
            for view in views:
                for p, o in view.items():
                    merged[p] = max(merged.get(p, 0), o)
            views = [merged]
        return bool(views) and all(
            view.get(p, 0) >= high for view in views for p, high in high_watermarks.items() if high > 0
        )

    def final_read(
        self,
        highs: dict[tuple[str, int], int],
        timeout_s: float,
        *,
        process: int = FINAL,
        read_committed: bool | None = None,
    ) -> bool:
        """A fresh consumer reads the given partitions from the start to the given offsets (their
        high watermarks).

        Recorded as process ``FINAL``, it shows what the log holds once the faults are over: an
        acknowledged record absent from it was lost even if someone read it earlier. Returns
        whether it reached every offset within ``timeout_s``. The restart phase
        (:mod:`chaos.workloads.restart`) reads the same way under its own ``process``.
        """
        config = consumer_config(self.bootstrap, f"{self.group}-read-{process}", self.options)
        if read_committed is not None:
            config["isolation.level"] = "read_committed" if read_committed else "read_uncommitted"
        consumer = Consumer(config)
        consumer.assign([TopicPartition(t, p, OFFSET_BEGINNING) for t, p in sorted(highs)])
        self.recorder.complete(self.recorder.invoke(process, "assign", value=sorted(highs)), "ok")
        upto: dict[tuple[str, int], int] = {}
        deadline = time.monotonic() + timeout_s
        try:
            while time.monotonic() < deadline:
                if all(upto.get(tp, 0) >= high for tp, high in highs.items()):
                    return True
                self._poll(consumer, process, upto, 1000)
            return False
        finally:
            consumer.close()

    def stop(self) -> None:
        self._stop_producing.set()
        self._stop_consuming.set()
        for thread in self._threads:
            thread.join(30)


def high_watermarks(
    bootstrap: str, topics: list[str], partitions: int, timeout_s: float = 5.0, *, committed: bool = True
) -> dict[tuple[str, int], int] | None:
    """The end of each (topic, partition), or None when the target does not answer.

    ``committed`` (librdkafka's default isolation, read_committed): the last stable offset, where
    read_committed consumers stop; it stays below the high watermark while a transaction that
    wrote there is open. ``committed=False``: the high watermark itself (ListOffsets with
    isolation level 0; Kafka: apache/kafka ``clients/src/main/java/org/apache/kafka/common/
    requests/ListOffsetsRequest.java``, READ_UNCOMMITTED / READ_COMMITTED)."""
    consumer = Consumer(
        with_run_security(
            {
                "bootstrap.servers": bootstrap,
                "group.id": "chaos-watermarks",
                "enable.auto.commit": False,
                "isolation.level": "read_committed" if committed else "read_uncommitted",
            }
        )
    )
    try:
        out = {}
        for topic in topics:
            for p in range(partitions):
                _low, high = consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=timeout_s)
                out[(topic, p)] = high
        return out
    except Exception:
        return None
    finally:
        consumer.close()
