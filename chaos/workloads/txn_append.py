"""The transactional list-append over Kafka (``--workload txn-append``), recorded as ``txn`` ops.

Jepsen's Kafka workload (``jepsen.tests.kafka``: keys are partitions, a transaction is a list of
``[:send k v]`` and ``[:poll]`` micro-operations) on confluent-kafka: each processor owns a
transactional producer and a read_committed consumer assigned every partition of the topic from
the beginning (no group: each processor observes every key). A transaction polls, sends one or
two unique values to each of one to three keys (the partitions), sometimes polls again, and
commits. The op records its reads (``value.read``, in the order the polls returned them) and its
sends (``records``, in the order it sent them, each with the offset its delivery report gave, or
-1): ``ok`` committed, ``fail`` aborted (the consumer is then put back where the transaction
began, so its next reads continue its sequence), ``info`` unknown (a commit that timed out, a
producer that turned fatal, a crash); after an ``info`` the processor starts again under a new
process id, with a new consumer and a new transactional id (a fresh producer, not a fenced one).

``crash_clients``: each processor is torn down at seeded times in the middle of a transaction
(after its sends, before its commit): the producer is dropped without aborting and the consumer
closed, the open transaction recorded ``info`` (``error: "crashed"``), and a new incarnation opens
with a fresh ``transactional.id``. The broker aborts the abandoned transaction when its
``transaction.timeout.ms`` runs out (Kafka: ``TransactionCoordinator`` aborts expired
transactions, apache/kafka ``core/src/main/scala/kafka/coordinator/transaction/
TransactionCoordinator.scala``, ``abortTimedOutTransactions``); until then read_committed consumers
of those partitions stop at its first offset (the last stable offset), so the timeout is short.

After ``stop_producers`` the processors only poll (``poll`` ops, same process and consumer) until
stopped, so the campaign can wait for them to reach the high watermarks. The final read of the
whole log is :class:`QueueWorkload`'s, read_committed.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from chaos.history import Op, Recorder

from .queue import QueueOptions, QueueWorkload, consumer_config

TXN_APPEND_BASE = 300
"""Process ids: ``300 + slot + 1000 * incarnation``."""
MAX_INCARNATIONS = 1000


class Crashed(Exception):
    """The processor's seeded crash: tear it down and start a new incarnation."""


class TxnAppendWorkload(QueueWorkload):
    """Transactional processors around one recorder; the same life cycle as :class:`QueueWorkload`."""

    def __init__(
        self,
        recorder: Recorder,
        bootstrap: str,
        topic: str,
        *,
        partitions: int,
        group: str,
        processors: int = 4,
        rate: float = 100.0,
        seed: int = 7,
        crash_clients: bool = False,
        timeout_s: float = 10.0,
    ) -> None:
        options = QueueOptions(topic, partitions=partitions, producers=0, consumers=0, read_committed=True)
        super().__init__(recorder, bootstrap, options, group=group)
        self.processors = processors
        self.rate = rate
        self.seed = seed
        self.crash_clients = crash_clients
        self.timeout_s = timeout_s
        self.outcomes: dict[str, int] = {"ok": 0, "fail": 0, "info": 0, "crashed": 0}
        self._outcome_lock = threading.Lock()
        self._slot_upto: dict[int, dict[tuple[str, int], int]] = {}

    def start(self) -> None:
        self._start_slots(self._run, self.processors, "txn-append")

    def wait_ready(self, timeout_s: float) -> float | None:
        return wait_committed(self.outcomes, timeout_s)

    def stop_producers(self) -> None:
        """Processors stop transacting and only poll from now on (they keep their consumers)."""
        self._stop_producing.set()

    def caught_up(self, highs: dict[tuple[str, int], int]) -> bool:
        views = list(self._slot_upto.values())
        return len(views) == self.processors and all(
            view.get(tp, 0) >= high
            for view in views
            for tp, high in highs.items()
            if tp[0] == self.options.topic
        )

    def _count(self, outcome: str) -> None:
        with self._outcome_lock:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def _run(self, slot: int) -> None:
        rng = random.Random(self.seed * 1000 + slot)
        for incarnation in range(MAX_INCARNATIONS):
            if self._stop_consuming.is_set():
                return
            process = TXN_APPEND_BASE + slot + 1000 * incarnation
            crash_at = time.monotonic() + rng.uniform(3.0, 8.0) if self.crash_clients else None
            try:
                self._incarnation(process, slot, incarnation, rng, crash_at)
                return
            except Crashed:
                self._count("crashed")
            except KafkaException as exc:
                self._count_error(f"restart:{exc.args[0].name()}")
                time.sleep(0.5)
            except Exception as exc:  # a client that cannot be built (target down): retry, bounded
                self._count_error(f"restart:{type(exc).__name__}")
                time.sleep(0.5)

    def _incarnation(
        self, process: int, slot: int, incarnation: int, rng: random.Random, crash_at: float | None
    ) -> None:
        """One processor's life: returns when told to stop; raises to be replaced."""
        options = self.options
        config = consumer_config(self.bootstrap, f"{self.group}-{process}", options)
        consumer = Consumer(config)
        producer: Producer | None = None
        upto: dict[tuple[str, int], int] = {}
        self._slot_upto[slot] = upto
        try:
            partitions = [
                TopicPartition(options.topic, p, OFFSET_BEGINNING) for p in range(options.partitions)
            ]
            consumer.assign(partitions)
            assigned = self.recorder.invoke(process, "assign", value=list(range(options.partitions)))
            self.recorder.complete(assigned, "ok")
            interval = self.processors / max(self.rate, 0.001)
            next_at = time.monotonic()
            n = 0
            while not self._stop_consuming.is_set():
                if self._stop_producing.is_set():
                    self._poll(consumer, process, upto, 500)  # also moves upto past markers
                    continue
                if producer is None:
                    producer = Producer(
                        {
                            "bootstrap.servers": self.bootstrap,
                            "transactional.id": f"{self.group}-{slot}-{incarnation}",
                            "transaction.timeout.ms": 6000
                            if self.crash_clients
                            else int(self.timeout_s * 1000),
                            "linger.ms": 2,
                            "request.timeout.ms": 5000,
                            "reconnect.backoff.max.ms": 1000,
                            "topic.metadata.refresh.interval.ms": 2000,
                        }
                    )
                    producer.init_transactions(self.timeout_s * 2)
                crash = crash_at is not None and time.monotonic() >= crash_at
                n = self._transaction(process, consumer, producer, upto, rng, n, crash)
                next_at += interval
                pause = next_at - time.monotonic()
                if pause > 0:
                    time.sleep(min(pause, 0.5))
                elif pause < -1.0:
                    next_at = time.monotonic()
        finally:
            with contextlib.suppress(Exception):
                consumer.close()
            del producer  # dropped, never aborted: a crash leaves its transaction to the coordinator

    def _transaction(
        self,
        process: int,
        consumer: Any,
        producer: Any,
        upto: dict[tuple[str, int], int],
        rng: random.Random,
        n: int,
        crash: bool,
    ) -> int:
        """One transaction. ``upto`` holds, per partition, the offset after the last record this
        incarnation's committed transactions read: an aborted one rewinds the consumer there."""
        topic = self.options.topic
        reads: list[tuple[str, int, int, Any]] = []
        sends: list[list[Any]] = []  # [topic, partition, offset, value], offset filled by the report
        invoked = self.recorder.invoke(process, "txn")
        try:
            producer.begin_transaction()
            self._poll_into(consumer, reads)
            for key in rng.sample(
                range(self.options.partitions), rng.randint(1, min(3, self.options.partitions))
            ):
                for _ in range(rng.choice((1, 1, 2))):
                    value = f"{process}-{n}"
                    n += 1
                    record = [topic, key, -1, value]
                    sends.append(record)
                    producer.produce(topic, value.encode(), partition=key, on_delivery=_delivered(record))
                    self.sent += 1
            if rng.random() < 0.5:
                self._poll_into(consumer, reads)
            producer.flush(self.timeout_s)
            if crash:
                self._finish(invoked, "info", reads, sends, "crashed")
                raise Crashed
            producer.commit_transaction(self.timeout_s)
        except KafkaException as exc:
            error = exc.args[0]
            self._count_error(error.name())
            if error.txn_requires_abort() and not error.fatal():
                try:
                    producer.abort_transaction(self.timeout_s)
                except KafkaException:
                    self._finish(invoked, "info", reads, sends, error.name())
                    raise
                self._finish(invoked, "fail", reads, sends, error.name())
                # its reads are read again: back to what committed transactions read. Rewinding to
                # consumer.position() taken at the start instead left a skip after two aborts in a
                # row (reference broker, kill, seed 15: read @172, then @193): the position need
                # not reflect the first abort's seek yet
                for p in range(self.options.partitions):
                    consumer.seek(TopicPartition(topic, p, upto.get((topic, p), OFFSET_BEGINNING)))
                return n
            self._finish(invoked, "info", reads, sends, error.name())
            raise
        self._finish(invoked, "ok", reads, sends, None)
        for t, p, o, _v in reads:
            upto[(t, p)] = max(upto.get((t, p), 0), o + 1)
        return n

    def _poll_into(self, consumer: Any, reads: list[tuple[str, int, int, Any]]) -> None:
        for msg in consumer.consume(50, 0.05):
            if msg.error() is not None:
                self._count_error(msg.error().name())
                continue
            raw = msg.value()
            reads.append(
                (msg.topic(), msg.partition(), msg.offset(), raw.decode(errors="replace") if raw else None)
            )

    def _finish(
        self, invoked: Op, outcome: str, reads: list[Any], sends: list[list[Any]], error: str | None
    ) -> None:
        self._count(outcome)
        self.recorder.complete(
            invoked,
            outcome,
            value={"read": [list(r) for r in reads]},
            records=[(t, p, o, v) for t, p, o, v in sends],
            error=error,
        )


def wait_committed(outcomes: dict[str, int], timeout_s: float) -> float | None:
    """Seconds until some transaction committed (``outcomes["ok"]``; the coordinator's first
    transactions can take seconds: its internal topic is created on first use), or None if none did
    within the bound."""
    started = time.monotonic()
    while time.monotonic() - started < timeout_s:
        if outcomes["ok"]:
            return time.monotonic() - started
        time.sleep(0.1)
    return None


def _delivered(record: list[Any]) -> Any:
    def on_delivery(err: Any, msg: Any) -> None:
        offset = msg.offset() if err is None else None
        if offset is not None and offset >= 0:  # confluent-kafka gives None for OFFSET_INVALID
            record[2] = offset

    return on_delivery
