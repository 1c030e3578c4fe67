"""Transactional probe workloads (issue 21): ``early-read``, ``producer-fence``, ``abort-rewind``.

Each is a :class:`QueueWorkload` whose two read_committed observers (assign mode, every partition
from the beginning) record ``poll`` ops, plus its own transactional clients; the checkers are in
:mod:`chaos.checkers.probes`.

* ``early-read``: transactional producers send one to three records, hold the transaction open for
  a seeded 50-500 ms, then commit (three in four) or abort. ``txn`` ops record
  ``value.commit_requested`` (monotonic seconds, just before ``commit_transaction``; None when
  aborted): an observer's poll that returned a record before then read an open transaction
  (``early_read``); a poll of an aborted one is ``aborted_read``.
* ``producer-fence``: rounds of two producers sharing a fresh ``transactional.id``. The first
  (``init`` op) begins a transaction and sends; the second's ``init_transactions`` (``init`` op)
  takes the id over, which aborts what the first had open; the first then sends once more and asks
  to commit, which must fail (``ProducerFenced``, Kafka's ``TransactionCoordinator`` bumps the
  epoch in ``handleInitProducerId``), then the second commits a transaction of its own. The
  first's transaction is recorded ``info`` with the client's error (``ok`` if the commit returned,
  which the checker counts as ``fenced_write``), and its records must never be read.
* ``abort-rewind``: transactional processors with a read_committed consumer of every partition
  poll, send one record, and commit, or (one in three) abort on purpose; after an abort the
  consumer is put back where the reads of its last committed transaction ended (``assign`` op with
  ``value.seek``), and its next reads must start there (``rewind_skip``/``rewind_behind``); its
  polls, including those of aborted transactions, are recorded as ``poll`` ops. Records of the
  aborted transactions sit in the log, so a read_committed reader that returns them reads aborted
  data (``aborted_read``).
"""

from __future__ import annotations

import contextlib
import random
import threading
import time
from typing import Any

from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaException, Producer, TopicPartition

from chaos.history import Op, Recorder
from fixtures.wire.security import with_run_security

from .queue import QueueOptions, QueueWorkload, consumer_config
from .txn_append import _delivered, wait_committed

PROBES = ("early-read", "producer-fence", "abort-rewind")
BASE = {"early-read": 400, "producer-fence": 5000, "abort-rewind": 600}
"""Process ids: ``BASE + slot + 10 * incarnation`` (slots < 5; fence rounds: ``BASE + 2 * round`` and
``+ 1``)."""
MAX_ROUNDS = 10_000
TIMEOUT_S = 10.0


class ProbeWorkload(QueueWorkload):
    def __init__(
        self, recorder: Recorder, bootstrap: str, topic: str, *, kind: str, partitions: int, group: str,
        rate: float = 20.0, seed: int = 7, slots: int = 2,
    ) -> None:  # fmt: skip
        if kind not in PROBES:
            raise ValueError(f"unknown probe workload {kind!r} (known: {', '.join(PROBES)})")
        options = QueueOptions(topic, partitions=partitions, producers=0, consumers=2, read_committed=True)
        super().__init__(recorder, bootstrap, options, group=group)
        self.kind = kind
        self.rate = rate
        self.seed = seed
        self.slots = slots
        self.outcomes: dict[str, int] = {"ok": 0, "fail": 0, "info": 0}
        self._lock = threading.Lock()

    def start(self) -> None:
        super().start()  # the observers
        target = {"early-read": self._early_read, "producer-fence": self._fence,
                  "abort-rewind": self._abort_rewind}[self.kind]  # fmt: skip
        self._start_slots(target, self.slots, "probe")

    def wait_ready(self, timeout_s: float) -> float | None:
        return wait_committed(self.outcomes, timeout_s)

    def stop_producers(self) -> None:
        self._stop_producing.set()
        for thread in self._threads:
            if thread.name.startswith("probe-"):
                thread.join(TIMEOUT_S * 4)

    # --- helpers -------------------------------------------------------------------------------

    def _count(self, outcome: str) -> None:
        with self._lock:
            self.outcomes[outcome] = self.outcomes.get(outcome, 0) + 1

    def _producer(self, tid: str, process: int) -> Producer:
        producer = Producer(with_run_security({
            "bootstrap.servers": self.bootstrap, "transactional.id": tid,
            "transaction.timeout.ms": int(TIMEOUT_S * 1000), "linger.ms": 2, "request.timeout.ms": 5000,
            "reconnect.backoff.max.ms": 1000, "topic.metadata.refresh.interval.ms": 2000,
        }))  # fmt: skip
        invoked = self.recorder.invoke(process, "init", value={"transactional_id": tid})
        try:
            producer.init_transactions(TIMEOUT_S * 2)
        except KafkaException as exc:
            self.recorder.complete(invoked, "info", error=exc.args[0].name())
            raise
        self.recorder.complete(invoked, "ok")
        return producer

    def _send(self, producer: Producer, records: list[list[Any]], process: int, n: int, rng: random.Random,
              count: int) -> int:  # fmt: skip
        for _ in range(count):
            value = f"{process}-{n}"
            n += 1
            partition = rng.randrange(self.options.partitions)
            record = [self.options.topic, partition, -1, value]
            records.append(record)
            producer.produce(self.options.topic, value.encode(), partition=partition,
                             on_delivery=_delivered(record))  # fmt: skip
            self.sent += 1
        return n

    def _finish(self, invoked: Op, outcome: str, tid: str, records: list[list[Any]],
                requested: float | None, error: str | None) -> None:  # fmt: skip
        self._count(outcome)
        self.recorder.complete(
            invoked, outcome, error=error, records=[(t, p, o, v) for t, p, o, v in records],
            value={"read": [], "commit_requested": requested, "transactional_id": tid},
        )  # fmt: skip

    def _pace(self, next_at: float) -> float:
        next_at += self.slots / max(self.rate, 0.001)
        pause = next_at - time.monotonic()
        if pause > 0:
            self._stop_producing.wait(min(pause, 0.5))
        elif pause < -1.0:
            next_at = time.monotonic()
        return next_at

    # --- early-read ----------------------------------------------------------------------------

    def _early_read(self, slot: int) -> None:
        rng = random.Random(self.seed * 1000 + slot)
        for incarnation in range(MAX_ROUNDS):
            if self._stop_producing.is_set():
                return
            process = BASE["early-read"] + slot + 10 * incarnation
            tid = f"{self.group}-early-{slot}-{incarnation}"
            try:
                producer = self._producer(tid, process)
                n, next_at = 0, time.monotonic()
                while not self._stop_producing.is_set():
                    n = self._early_txn(producer, process, tid, n, rng)
                    next_at = self._pace(next_at)
            except Exception as exc:  # a fatal producer error, or the target down: a new incarnation
                self._count_error(f"restart:{_name(exc)}")
                time.sleep(0.5)

    def _early_txn(self, producer: Producer, process: int, tid: str, n: int, rng: random.Random) -> int:
        records: list[list[Any]] = []
        invoked = self.recorder.invoke(process, "txn")
        requested = None
        try:
            producer.begin_transaction()
            n = self._send(producer, records, process, n, rng, rng.randint(1, 3))
            producer.flush(TIMEOUT_S)
            time.sleep(rng.uniform(0.05, 0.5))  # held open: read_committed readers must not see it
            if rng.random() < 0.25:
                producer.abort_transaction(TIMEOUT_S)
                self._finish(invoked, "fail", tid, records, None, "aborted on purpose")
                return n
            requested = self.recorder.now()
            producer.commit_transaction(TIMEOUT_S)
        except KafkaException as exc:
            error = exc.args[0]
            if requested is None and error.txn_requires_abort() and not error.fatal():
                with contextlib.suppress(KafkaException):
                    producer.abort_transaction(TIMEOUT_S)
                    self._finish(invoked, "fail", tid, records, None, error.name())
                    return n
            self._finish(invoked, "info", tid, records, requested, error.name())
            raise
        self._finish(invoked, "ok", tid, records, requested, None)
        return n

    # --- producer-fence ------------------------------------------------------------------------

    def _fence(self, slot: int) -> None:
        rng = random.Random(self.seed * 1000 + 500 + slot)
        next_at = time.monotonic()
        for round_ in range(slot, MAX_ROUNDS, self.slots):
            if self._stop_producing.is_set():
                return
            try:
                self._fence_round(round_, rng)
            except Exception as exc:  # the target down: the next round uses fresh ids
                self._count_error(f"round:{_name(exc)}")
                time.sleep(0.5)
            next_at = self._pace(next_at)

    def _fence_round(self, round_: int, rng: random.Random) -> None:
        first, second = BASE["producer-fence"] + 2 * round_, BASE["producer-fence"] + 2 * round_ + 1
        tid = f"{self.group}-fence-{round_}"
        old = self._producer(tid, first)
        records: list[list[Any]] = []
        invoked = self.recorder.invoke(first, "txn")
        requested = None
        try:
            old.begin_transaction()
            self._send(old, records, first, 0, rng, rng.randint(1, 2))
            old.flush(TIMEOUT_S)
            new = self._producer(tid, second)  # takes the id over: the open transaction is aborted
            self._send(old, records, first, 10, rng, 1)
            old.flush(2.0)
            requested = self.recorder.now()
            old.commit_transaction(TIMEOUT_S)
        except KafkaException as exc:
            self._finish(invoked, "info", tid, records, requested, exc.args[0].name())
        except Exception as exc:
            self._finish(invoked, "info", tid, records, requested, _name(exc))
            raise
        else:
            self._finish(invoked, "ok", tid, records, requested, None)  # a fenced_write if it came after
        del old
        own: list[list[Any]] = []
        invoked = self.recorder.invoke(second, "txn")
        requested = None
        try:
            new.begin_transaction()
            self._send(new, own, second, 0, rng, rng.randint(1, 2))
            requested = self.recorder.now()
            new.commit_transaction(TIMEOUT_S)
        except KafkaException as exc:
            self._finish(invoked, "info", tid, own, requested, exc.args[0].name())
            return
        self._finish(invoked, "ok", tid, own, requested, None)

    # --- abort-rewind --------------------------------------------------------------------------

    def _abort_rewind(self, slot: int) -> None:
        rng = random.Random(self.seed * 1000 + 600 + slot)
        for incarnation in range(MAX_ROUNDS):
            if self._stop_producing.is_set():
                return
            process = BASE["abort-rewind"] + slot + 10 * incarnation
            try:
                self._processor(process, f"{self.group}-rewind-{slot}-{incarnation}", rng)
            except Exception as exc:
                self._count_error(f"restart:{_name(exc)}")
                time.sleep(0.5)

    def _processor(self, process: int, tid: str, rng: random.Random) -> None:
        topic, partitions = self.options.topic, self.options.partitions
        consumer = Consumer(consumer_config(self.bootstrap, f"{self.group}-{process}", self.options))
        try:
            consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
            assigned = self.recorder.invoke(process, "assign", value=list(range(partitions)))
            self.recorder.complete(assigned, "ok")
            writer = process + 5  # its producer's ops: a process has one op open at a time
            producer = self._producer(tid, writer)
            committed: dict[int, int] = {}  # partition -> offset after the last committed transaction's reads
            n, next_at = 0, time.monotonic()
            while not self._stop_producing.is_set():
                records: list[list[Any]] = []
                reads: dict[int, int] = {}
                invoked = self.recorder.invoke(writer, "txn")
                try:
                    producer.begin_transaction()
                    self._rewind_poll(consumer, process, reads)
                    n = self._send(producer, records, writer, n, rng, 1)
                    producer.flush(TIMEOUT_S)
                    if rng.random() < 1 / 3:
                        producer.abort_transaction(TIMEOUT_S)
                        self._finish(invoked, "fail", tid, records, None, "aborted on purpose")
                        self._rewind(consumer, process, committed)
                        next_at = self._pace(next_at)
                        continue
                    requested = self.recorder.now()
                    producer.commit_transaction(TIMEOUT_S)
                except KafkaException as exc:
                    self._finish(invoked, "info", tid, records, None, exc.args[0].name())
                    raise
                self._finish(invoked, "ok", tid, records, requested, None)
                for p, after in reads.items():
                    committed[p] = max(committed.get(p, 0), after)
                next_at = self._pace(next_at)
        finally:
            with contextlib.suppress(Exception):
                consumer.close()

    def _rewind_poll(self, consumer: Any, process: int, reads: dict[int, int]) -> None:
        got = []
        for msg in consumer.consume(50, 0.1):
            if msg.error() is not None:
                self._count_error(msg.error().name())
                continue
            raw = msg.value()
            value = raw.decode(errors="replace") if raw else None
            got.append((msg.topic(), msg.partition(), msg.offset(), value))
            reads[msg.partition()] = max(reads.get(msg.partition(), 0), msg.offset() + 1)
        if got:
            self.recorder.complete(self.recorder.invoke(process, "poll"), "ok", records=got)

    def _rewind(self, consumer: Any, process: int, committed: dict[int, int]) -> None:
        """Back to where the last committed transaction's reads ended (the start where none read):
        an explicit assignment with offsets, which drops whatever the client had fetched ahead."""
        positions = {p: committed.get(p, 0) for p in range(self.options.partitions)}
        consumer.assign([TopicPartition(self.options.topic, p, o) for p, o in positions.items()])
        invoked = self.recorder.invoke(process, "assign", value={"seek": positions})
        self.recorder.complete(invoked, "ok")


def _name(exc: Exception) -> str:
    if isinstance(exc, KafkaException):
        return str(exc.args[0].name())
    return type(exc).__name__
