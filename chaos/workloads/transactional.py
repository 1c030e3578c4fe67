"""The transactional workload: consume-transform-produce with read_committed, recorded as ``txn`` ops.

Each processor consumes a batch of the input topic (read_committed, in one consumer group),
writes ``value + ">"`` to the same partition of the output topic inside a transaction, adds the
consumed offsets to the transaction and commits. The op carries what it read (``value.read``)
and what it wrote (``records``, offsets from the delivery reports): ``ok`` committed, ``fail``
aborted (and the consumer rewound to the committed offsets), ``info`` unknown (a commit that
timed out or a producer that turned fatal; it is replaced under a new process id).

Exactly-once then means: every input value transformed once (an output value stored twice is a
``duplicate``), nothing of an aborted transaction visible (``aborted_read``).
"""

from __future__ import annotations

import threading
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer

from chaos.history import Recorder
from fixtures.wire.security import with_run_security

from .queue import QueueOptions, consumer_config

TXN_PROCESS_BASE = 200


class TransactionalWorkload:
    def __init__(
        self,
        recorder: Recorder,
        bootstrap: str,
        input_topic: str,
        output_topic: str,
        processors: int = 2,
        *,
        group: str,
        timeout_s: float = 10.0,
    ) -> None:
        self.recorder = recorder
        self.bootstrap = bootstrap
        self.input_topic = input_topic
        self.output_topic = output_topic
        self.processors = processors
        self.group = group
        self.timeout_s = timeout_s
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.consumed_upto: dict[tuple[str, int], int] = {}
        """(input topic, partition) -> next offset some committed transaction has not consumed."""
        self.outcomes: dict[str, int] = {"ok": 0, "fail": 0, "info": 0}

    def start(self) -> None:
        for i in range(self.processors):
            thread = threading.Thread(
                target=self._run, args=(TXN_PROCESS_BASE + i, i), daemon=True, name=f"txn-{i}"
            )
            thread.start()
            self._threads.append(thread)

    def caught_up(self, highs: dict[tuple[str, int], int]) -> bool:
        return all(
            self.consumed_upto.get(tp, 0) >= high
            for tp, high in highs.items()
            if tp[0] == self.input_topic and high > 0
        )

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(self.timeout_s + 20)

    def _run(self, process: int, slot: int) -> None:
        for incarnation in range(100):
            if self._stop.is_set() or not self._process(process + 1000 * incarnation, slot):
                return

    def _process(self, process: int, slot: int) -> bool:
        """One processor's life; True when its producer turned fatal and it should be replaced."""
        options = QueueOptions(self.input_topic, read_committed=True, consumer_mode="group")
        config = consumer_config(self.bootstrap, self.group, options)
        config["enable.auto.commit"] = False
        consumer = Consumer(config)
        producer = Producer(
            with_run_security({
                "bootstrap.servers": self.bootstrap,
                "transactional.id": f"{self.group}-{slot}",
                "transaction.timeout.ms": int(self.timeout_s * 3000),
                "linger.ms": 5,
                "request.timeout.ms": 5000,
                "reconnect.backoff.max.ms": 1000,
            })
        )
        try:
            producer.init_transactions(self.timeout_s * 3)

            def on_assign(_consumer: Any, partitions: list[Any]) -> None:
                assigned = self.recorder.invoke(
                    process, "assign", value=sorted(p.partition for p in partitions)
                )
                self.recorder.complete(assigned, "ok")

            consumer.subscribe([self.input_topic], on_assign=on_assign, on_revoke=on_assign)
            while not self._stop.is_set():
                messages = [m for m in consumer.consume(200, 0.2) if m.error() is None]
                if messages:
                    self._transaction(process, consumer, producer, messages)
            return False
        except KafkaException as exc:
            return bool(exc.args[0].fatal()) or not self._stop.is_set()
        finally:
            consumer.close()

    def _transaction(self, process: int, consumer: Any, producer: Any, messages: list[Any]) -> None:
        read = [(m.topic(), m.partition(), m.offset(), m.value().decode(errors="replace")) for m in messages]
        written: list[tuple[str, int, int, Any]] = []

        def delivered(err: Any, msg: Any) -> None:
            if err is None:
                written.append((msg.topic(), msg.partition(), msg.offset(), msg.value().decode()))

        invoked = self.recorder.invoke(process, "txn", value={"read": read})
        try:
            producer.begin_transaction()
            for _topic, partition, _offset, value in read:
                producer.produce(
                    self.output_topic, f"{value}>".encode(), partition=partition, on_delivery=delivered
                )
            producer.flush(self.timeout_s)
            positions = consumer.position(consumer.assignment())
            producer.send_offsets_to_transaction(
                positions, consumer.consumer_group_metadata(), self.timeout_s
            )
            producer.commit_transaction(self.timeout_s)
        except KafkaException as exc:
            error = exc.args[0]
            if error.txn_requires_abort():
                try:
                    producer.abort_transaction(self.timeout_s)
                    self._finish(invoked, "fail", read, written, error.name())
                    self._rewind(consumer)
                    return
                except KafkaException:
                    pass
            self._finish(invoked, "info", read, written, error.name())
            raise
        self._finish(invoked, "ok", read, written, None)
        for position in positions:
            key = (position.topic, position.partition)
            self.consumed_upto[key] = max(self.consumed_upto.get(key, 0), position.offset)

    def _finish(
        self, invoked: Any, outcome: str, read: list[Any], written: list[Any], error: str | None
    ) -> None:
        self.outcomes[outcome] += 1
        delivered = {w[3] for w in written}
        unconfirmed = [(self.output_topic, r[1], -1, f"{r[3]}>") for r in read if f"{r[3]}>" not in delivered]
        self.recorder.complete(
            invoked, outcome, value={"read": read}, records=[*written, *unconfirmed], error=error
        )

    def _rewind(self, consumer: Any) -> None:
        """After an abort, start again from the group's committed offsets (the aborted batch is redone)."""
        committed = consumer.committed(consumer.assignment(), timeout=self.timeout_s)
        for tp in committed:
            if tp.offset >= 0:
                consumer.seek(tp)
