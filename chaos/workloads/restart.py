"""The durability-after-restart phase: kill every broker while writing, restart them, read with no new write.

The client and generator of the phase, in Jepsen's structure: it records and never judges
(:mod:`chaos.checkers.restart` does). It runs after the campaign's faults, its final read and any
load alongside, so nothing else writes:

1. a fresh idempotent acks=all producer (process :data:`WRITER`) sends unique values to every
   partition at a steady rate for :data:`WRITE_S` seconds from its first acknowledgement, longer
   than Kafka's high-watermark checkpoint interval (``replica.high.watermark.checkpoint.interval.ms``,
   5 s), and then every broker is killed (SIGKILL) while it is still sending: whatever a broker
   checkpoints periodically, it last did so during the writes, and the last acknowledgements
   came after it, moments before the crash;
2. the writer purges what it still holds (nothing it held is retried into the restarted
   brokers) and every broker is started again; the kill and the restart are one nemesis fault,
   :data:`RESTART_FAULT` (start = killed, stop = every process listening again);
3. nothing writes: a fresh consumer (process :data:`READER`) reads every partition from the
   start until it has passed the highest acknowledged offset of each, or ``bound_s`` is over.

An acknowledged record the reader did not get is ``unreadable_after_restart``: the broker lost
it, or holds it but will not serve it without a new write (a high watermark restored from an
old checkpoint, issue 17 item 9).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from confluent_kafka import KafkaError, KafkaException, Producer

from chaos.history import RESTART_FAULT, History, Recorder
from chaos.nemesis.restart_probe import RestartProbe
from fixtures.targets import Target

from .queue import QueueOptions, QueueWorkload, delivery_callback, producer_config

WRITER = 997
"""Process id of the phase's producer (the queue producers are 0, 1, 1000, 1001, ...)."""
READER = 998
"""Process id of the phase's reader (the final reader is 999)."""
WRITE_S = 6.0
"""Seconds of acknowledged writes before the kill: more than one 5 s checkpoint interval."""
MIN_ACKED = 200
"""Acknowledged writes the kill waits for at least (the issue's run had 200)."""
WRITE_RATE = 500.0
"""Sends per second: one every 2 ms, so some are always acknowledged after the last checkpoint."""
MAX_SENDS = 20_000
PURGED = (KafkaError._PURGE_QUEUE, KafkaError._PURGE_INFLIGHT)
"""What :meth:`_Writer.stop` purges gets these; an idempotent producer puts a record it had sent
back in its queue when the connection dies, so even ``_PURGE_QUEUE`` may have been stored: ``info``."""


@dataclass
class RestartOutcome:
    """What the phase did, for the progress lines (the verdict comes from the history)."""

    acked_before_kill: int
    down_s: float
    read_complete: bool
    problem: str | None = None
    """Why the writes before the kill fell short, if they did."""


class _Writer:
    """A producer thread sending ``WRITER-n`` values round robin over the partitions."""

    def __init__(self, recorder: Recorder, bootstrap: str, topic: str, partitions: int) -> None:
        self.recorder = recorder
        self.topic = topic
        self.partitions = partitions
        options = QueueOptions(topic, partitions=partitions, message_timeout_ms=30_000)
        self.producer = Producer(producer_config(bootstrap, options))
        self.acked = 0
        self.errors: dict[str, int] = {}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="restart-writer", daemon=True)

    def _count_error(self, name: str) -> None:
        self.errors[name] = self.errors.get(name, 0) + 1

    def start(self) -> None:
        self._thread.start()

    def _run(self) -> None:
        interval = 1 / WRITE_RATE
        next_at = time.monotonic()
        for n in range(MAX_SENDS):
            if self._stop.is_set():
                break
            partition = n % self.partitions
            value = f"{WRITER}-{n}"
            invoked = self.recorder.invoke(WRITER, "send", value=value, topic=self.topic, partition=partition)
            report = delivery_callback(self.recorder, invoked, self._count_error)

            def on_delivery(err: Any, msg: Any, report: Any = report, invoked: Any = invoked) -> None:
                if err is not None and err.code() in PURGED:  # it may have been sent before the kill
                    self.recorder.complete(invoked, "info", error=err.name())
                    return
                report(err, msg)
                if err is None:
                    self.acked += 1

            try:
                self.producer.produce(
                    self.topic, value.encode(), partition=partition, on_delivery=on_delivery
                )
            except (BufferError, KafkaException) as exc:
                self.recorder.complete(invoked, "fail", error=type(exc).__name__)
            self.producer.poll(0)
            next_at += interval
            pause = next_at - time.monotonic()
            if pause > 0:
                self.producer.poll(pause)

    def wait_acked(self, count: int, timeout_s: float) -> bool:
        deadline = time.monotonic() + timeout_s
        while self.acked < count and time.monotonic() < deadline and self._thread.is_alive():
            time.sleep(0.005)
        return self.acked >= count

    def write_for(self, seconds: float, timeout_s: float) -> str | None:
        """Wait for the first acknowledgement, then ``seconds`` more and MIN_ACKED in all; why
        not, if that did not happen within ``timeout_s``."""
        deadline = time.monotonic() + timeout_s
        if not self.wait_acked(1, timeout_s):
            return "no write was acknowledged before the kill"
        until = min(time.monotonic() + seconds, deadline)
        while time.monotonic() < until and self._thread.is_alive():
            time.sleep(0.01)
        if not self.wait_acked(MIN_ACKED, max(0.0, deadline - time.monotonic())):
            return f"only {self.acked} writes acknowledged before the kill"
        return None

    def stop(self) -> None:
        """Stop sending, and drop (purge) what is queued or in flight: the brokers are down, and
        a retry reaching them after the restart would be a new write."""
        self._stop.set()
        self._thread.join(10)
        self.producer.purge(in_queue=True, in_flight=True, blocking=False)
        self.producer.flush(2)  # the purged records' delivery reports (fail or info)


def acknowledged_ends(history: History) -> dict[tuple[str, int], int]:
    """(topic, partition) -> 1 + the highest offset any acknowledged write got there: how far the
    reader must read to see everything acknowledged."""
    ends: dict[tuple[str, int], int] = {}

    def note(topic: str | None, partition: int | None, offset: int | None) -> None:
        if topic is not None and partition is not None and offset is not None and offset >= 0:
            ends[(topic, partition)] = max(ends.get((topic, partition), 0), offset + 1)

    for op in history.ops:
        if op.type != "ok":
            continue
        if op.f == "send":
            note(op.topic, op.partition, op.offset)
        elif op.f == "txn":
            for topic, partition, offset, _value in op.records or []:
                note(topic, partition, offset)
    return ends


def kill_and_restart(
    recorder: Recorder,
    target: Target,
    fault_id: int,
    before_start: Callable[[], None],
    probe: RestartProbe | None = None,
) -> float:
    """SIGKILL every node, run ``before_start`` while they are all down, start them all again;
    recorded as one :data:`RESTART_FAULT` fault. Returns how long the brokers were down. ``probe``:
    each node started again is probed as the nemesis's are (:mod:`chaos.nemesis.restart_probe`)."""
    nodes = [n.node_id for n in target.nodes]
    value: dict[str, Any] = {"fault": RESTART_FAULT, "id": fault_id, "nodes": nodes}
    recorder.nemesis("start", value)
    began = time.monotonic()
    for node in target.nodes:
        node.kill()
    before_start()
    outcome: dict[str, Any] = {"fault": RESTART_FAULT, "id": fault_id}
    try:
        for node in target.nodes:
            node.start()
            if probe is not None:
                probe.restarted(node.node_id, node.host, node.port, {"fault": RESTART_FAULT, "id": fault_id})
    except Exception as exc:  # recorded: the reader then finds out what is readable
        outcome["error"] = f"{type(exc).__name__}: {exc}"
    recorder.nemesis("stop", outcome)
    return time.monotonic() - began


def run_restart_phase(
    recorder: Recorder,
    target: Target,
    workload: QueueWorkload,
    bootstrap: str,
    topic: str,
    partitions: int,
    *,
    bound_s: float,
    fault_id: int,
    read_committed: bool,
    progress: Callable[[str], None],
    probe: RestartProbe | None = None,
) -> RestartOutcome:
    """Write, kill every broker, restart them, read with no new write (the module's steps 1-3)."""
    recorder.history.meta["restart_check"] = {
        "writer": WRITER,
        "reader": READER,
        "bound_s": bound_s,
        "fault_id": fault_id,
    }
    writer = _Writer(recorder, bootstrap, topic, partitions)
    writer.start()
    problem = writer.write_for(WRITE_S, 60)
    if problem:
        recorder.history.meta["restart_check"]["problem"] = problem
        progress(f"restart check: {problem}")
    down_s = kill_and_restart(recorder, target, fault_id, writer.stop, probe)
    acked = writer.acked
    progress(f"restart check: {acked} writes acknowledged; every broker killed, restarted in {down_s:.1f} s")
    ends = acknowledged_ends(recorder.history)
    complete = workload.final_read(ends, bound_s, process=READER, read_committed=read_committed)
    recorder.history.meta["restart_check"]["read_complete"] = complete
    if probe is not None:
        probe.finish()
    progress(
        f"restart check: read with no new write {'reached' if complete else 'DID NOT reach'} "
        f"every acknowledged offset within {bound_s:.0f} s"
    )
    return RestartOutcome(acked, down_s, complete, problem)
