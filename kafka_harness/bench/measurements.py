"""The measurements, each through confluent-kafka (librdkafka) against a broker on loopback.

Throughput: produce ``records`` as fast as the client will take them, flush,
then fetch them all back; each phase timed. Then the same records are read again
by the raw fetch reader (:mod:`.raw_fetch`: the project's wire client, batch
headers only), the broker's fetch figure with no client library in the way, and a
fresh topic is written by the raw produce writer (:mod:`.raw_produce`: prebuilt
batches), its produce figure likewise. Latency: a producer sends at a
fixed rate with its send time (``perf_counter_ns``) in the first bytes of each
record, and a consumer thread in the same process computes receive time minus
send time. Every wait here has a deadline.
"""

from __future__ import annotations

import contextlib
import math
import struct
import threading
import time
import uuid
from collections.abc import Callable
from typing import Any

from fixtures.wire.security import with_run_security

from .model import Figures, Latency, RawRun, Scenario, percentile
from .raw_fetch import MIN_SECONDS as RAW_FETCH_MIN_SECONDS
from .raw_fetch import read_topic
from .raw_produce import write_topic

STAMP = struct.Struct(">qB")
"""Send time in nanoseconds, then a kind byte: warm-up or measured."""
WARM, MEASURED = 0, 1
MIN_VALUE_SIZE = STAMP.size
TOPIC_TIMEOUT_S = 30.0
PHASE_TIMEOUT_S = 120.0
CREATE_ATTEMPTS = 5
CREATE_BACKOFF_S = 0.5
NOT_CONTROLLER = 41
ACKS = {"0": 0, "1": 1, "all": -1, "-1": -1}
"""A creation refused with a retriable error (NOT_CONTROLLER while the quorum elects) is sent again."""
BACKLOG_S = 5.0
"""A latency run stops when this many seconds' worth of records are sent and not yet received."""
DRAIN_S = 2 * BACKLOG_S
"""After the last send: how long the acknowledgements, then the records, may take to come."""


class TopicError(RuntimeError):
    """The bench's topic could not be created with the partitions and replicas asked for."""


def create_topic(bootstrap: str, scenario: Scenario) -> str:
    """A fresh topic whose every partition has a leader and all its replicas (raises TopicError)."""
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"bench-{uuid.uuid4().hex[:10]}"
    admin = AdminClient(with_run_security({"bootstrap.servers": bootstrap}))
    wanted = NewTopic(topic, scenario.partitions, scenario.replication_factor)
    for attempt in range(CREATE_ATTEMPTS):
        try:
            for future in admin.create_topics([wanted], request_timeout=TOPIC_TIMEOUT_S).values():
                future.result(timeout=TOPIC_TIMEOUT_S)
            break
        except Exception as exc:  # KafkaException carries the broker's error name
            error = exc.args[0] if exc.args else None
            retriable = getattr(error, "retriable", lambda: False)() or (
                getattr(error, "code", lambda: None)() == NOT_CONTROLLER
            )  # the admin client marks a CreateTopics answer's error code as not retriable
            if attempt + 1 < CREATE_ATTEMPTS and retriable:
                time.sleep(CREATE_BACKOFF_S)  # NOT_CONTROLLER: the controller moved (a loaded machine)
                continue
            raise TopicError(
                f"cannot create a topic with {scenario.partitions} partitions and replication factor "
                f"{scenario.replication_factor}: {type(exc).__name__}: {exc}"
            ) from exc
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == scenario.partitions
            and all(
                p.leader >= 0 and len(p.replicas) == scenario.replication_factor
                and len(p.isrs) == scenario.replication_factor
                for p in md.partitions.values()
            )
        ):
            return topic
        time.sleep(0.05)
    raise TopicError(
        f"topic {topic} has no leader or fewer than {scenario.replication_factor} in-sync replicas "
        f"after {TOPIC_TIMEOUT_S:.0f} s"
    )


def delete_topic(bootstrap: str, topic: str) -> None:
    """Best effort, so a memory-backed broker does not carry every run's records to the next."""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient(with_run_security({"bootstrap.servers": bootstrap}))
    with contextlib.suppress(Exception):
        for future in admin.delete_topics([topic], request_timeout=10).values():
            future.result(timeout=10)


def _producer(bootstrap: str, acks: str, **extra: Any) -> Any:
    from confluent_kafka import Producer

    return Producer(with_run_security({"bootstrap.servers": bootstrap, "acks": acks, **extra}))


def _consumer(bootstrap: str, topic: str, **extra: Any) -> Any:
    from confluent_kafka import Consumer

    return Consumer(
        with_run_security(
            {"bootstrap.servers": bootstrap, "group.id": f"bench-{topic}", "enable.auto.commit": False}
            | extra
        )
    )


def measure_throughput(bootstrap: str, scenario: Scenario, progress: Callable[[str], None]) -> Figures:
    """Produce ``scenario.records`` records, then fetch them all back; time each phase."""
    from confluent_kafka import TopicPartition

    topic = create_topic(bootstrap, scenario)
    try:
        producer = _producer(
            bootstrap, scenario.acks, **{
                "linger.ms": 5,
                "batch.size": 65536,
                "queue.buffering.max.messages": 2_000_000,
                "queue.buffering.max.kbytes": 1_048_576,
            }
        )
        value = b"x" * scenario.value_size
        failures: list[object] = []

        def on_delivery(err: object, _msg: object) -> None:
            if err is not None:
                failures.append(err)

        # One acknowledged record per partition before the clock starts, as the latency run warms
        # up: a new topic's first acks=all write waits for each follower's next fetch to name the
        # partition (its fetch in flight is held up to replica.fetch.wait.max.ms, as in Kafka), a
        # start-up cost that was most of the cluster's 30,000-record run (29,502 rec/s measured
        # with it, 182,261 over 200,000 records).
        for partition in range(scenario.partitions):
            producer.produce(topic, value, partition=partition, on_delivery=on_delivery)
        if producer.flush(TOPIC_TIMEOUT_S) or failures:
            raise RuntimeError(f"the warm-up records were not acknowledged by {bootstrap}: {failures[:1]}")
        warm = scenario.partitions
        start = time.perf_counter()
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        for i in range(scenario.records):
            while True:
                try:
                    producer.produce(topic, value, partition=i % scenario.partitions, on_delivery=on_delivery)
                    break
                except BufferError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"send queue still full after {PHASE_TIMEOUT_S:.0f} s") from None
                    producer.poll(0.005)
            if i % 20_000 == 0:
                producer.poll(0)
        remaining = producer.flush(max(1.0, deadline - time.monotonic()))
        produce_s = time.perf_counter() - start
        if remaining or failures:
            raise RuntimeError(
                f"{remaining} records undelivered, {len(failures)} failed (first: {failures[:1]}) "
                f"producing to {bootstrap}"
            )
        consumer = _consumer(
            bootstrap, topic, **{"fetch.max.bytes": 52_428_800, "max.partition.fetch.bytes": 10_485_760}
        )
        consumer.assign([TopicPartition(topic, p, 0) for p in range(scenario.partitions)])
        got = 0
        start = time.perf_counter()
        deadline = time.monotonic() + PHASE_TIMEOUT_S
        total = scenario.records + warm
        while got < total and time.monotonic() < deadline:
            # ask for no more than is missing: a batch consume waits for its count or the timeout
            for message in consumer.consume(min(10_000, total - got), 1.0):
                if message.error() is None:
                    got += 1
        fetch_s = time.perf_counter() - start
        consumer.close()
        if got < total:
            raise RuntimeError(
                f"fetched {got} of {total} records from {bootstrap} in {PHASE_TIMEOUT_S:.0f} s"
            )
        raw = read_topic(bootstrap, topic, RAW_FETCH_MIN_SECONDS)
    finally:
        delete_topic(bootstrap, topic)
    written = measure_raw_produce(bootstrap, scenario)
    mb = scenario.records * scenario.value_size / 1e6
    figures = Figures(
        scenario.records / produce_s, mb / produce_s, got / fetch_s, mb / fetch_s, produce_s, fetch_s,
        raw_fetch_rps=raw.rps, raw_fetch_mbps=raw.mbps,
        raw_produce_rps=written.rps, raw_produce_mbps=written.mbps,
    )
    progress(f"  produce {figures.produce_rps:>12,.0f} rec/s  fetch {figures.fetch_rps:>12,.0f} rec/s"
             f"  raw fetch {raw.rps:>12,.0f} rec/s {raw.mbps:,.1f} MB/s ({raw.records:,} records)"
             f"  raw produce {written.rps:>12,.0f} rec/s {written.mbps:,.1f} MB/s")
    return figures


def measure_raw_produce(bootstrap: str, scenario: Scenario) -> RawRun:
    """The raw writer's figure (:mod:`.raw_produce`) on a fresh topic of the scenario's shape."""
    topic = create_topic(bootstrap, scenario)
    try:
        return write_topic(bootstrap, topic, scenario.value_size, scenario.records, ACKS[scenario.acks])
    finally:
        delete_topic(bootstrap, topic)


def measure_latency(
    bootstrap: str, scenario: Scenario, rate: float, seconds: float, progress: Callable[[str], None]
) -> Latency:
    """Send ``rate * seconds`` records at ``rate`` per second; percentiles of receive − send.

    Before measuring, warm-up records go to every partition until the consumer
    has received one from each, so connection set-up is not counted. When more
    than ``BACKLOG_S`` seconds' worth of records are sent but not yet received,
    the target is not keeping up with the rate: the run stops and reports itself
    saturated, without percentiles (they would measure the queue, not the broker).
    """
    from confluent_kafka import TopicPartition

    count = max(1, round(rate * seconds))
    backlog_limit = max(1, round(rate * BACKLOG_S))
    topic = create_topic(bootstrap, scenario)
    consumer = _consumer(bootstrap, topic, **{"fetch.wait.max.ms": 100})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(scenario.partitions)])
    samples: list[int] = []
    warmed: set[int] = set()
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            message = consumer.poll(0.05)  # returns at the first record (a batch consume waits to fill)
            received = time.perf_counter_ns()
            if message is None or message.error() is not None:
                continue
            sent, kind = STAMP.unpack_from(message.value())
            if kind == MEASURED:
                samples.append(received - sent)
            else:
                warmed.add(message.partition())

    reader = threading.Thread(target=consume, name="bench-latency-consumer", daemon=True)
    reader.start()
    producer = _producer(bootstrap, scenario.acks, **{"linger.ms": 1})
    padding = b"x" * (scenario.value_size - STAMP.size)
    failures: list[object] = []
    saturated = ""

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    try:
        _warm_up(producer, topic, scenario.partitions, padding, warmed)
        start = time.perf_counter()
        sent = 0
        for i in range(count):
            if i - len(samples) > backlog_limit:
                saturated = (
                    f"not sustained: {i - len(samples):,} of {i:,} records sent in "
                    f"{time.perf_counter() - start:.1f} s not yet received"
                )
                break
            delay = start + i / rate - time.perf_counter()
            if delay > 0:
                time.sleep(delay)
            value = STAMP.pack(time.perf_counter_ns(), MEASURED) + padding
            for _attempt in range(1000):
                try:
                    producer.produce(topic, value, partition=i % scenario.partitions, on_delivery=on_delivery)
                    break
                except BufferError:
                    producer.poll(0.001)
            else:
                saturated = f"not sustained: the client's send queue stayed full after {i:,} records"
                break
            sent += 1
            producer.poll(0)
        send_s = time.perf_counter() - start
        if saturated:
            producer.purge()
            producer.flush(5)
        else:
            remaining = producer.flush(DRAIN_S)
            if remaining:
                saturated = (
                    f"not sustained: {remaining:,} of {sent:,} records unacknowledged "
                    f"{DRAIN_S:.0f} s after the last send"
                )
            elif failures:
                raise RuntimeError(
                    f"{len(failures)} records failed (first: {failures[0]}) "
                    f"in the latency run against {bootstrap}"
                )
            drain_until = time.monotonic() + DRAIN_S
            while not saturated and len(samples) < sent and time.monotonic() < drain_until:
                time.sleep(0.02)
            if not saturated and len(samples) < sent:
                saturated = (
                    f"not sustained: {sent - len(samples):,} of {sent:,} acknowledged records "
                    f"not received {DRAIN_S:.0f} s after the last send"
                )
    finally:
        stop.set()
        reader.join(10)
        consumer.close()
        delete_topic(bootstrap, topic)
    achieved = sent / send_s if send_s > 0 else float(sent)
    if saturated:
        progress(f"  latency at {rate:,.0f} rec/s: {saturated}")
        nan = math.nan
        return Latency(nan, nan, nan, nan, sent, rate, achieved, saturated)
    ordered = sorted(ns / 1e6 for ns in samples[:sent])
    latency = Latency(
        p50_ms=percentile(ordered, 0.50),
        p99_ms=percentile(ordered, 0.99),
        p999_ms=percentile(ordered, 0.999),
        max_ms=ordered[-1],
        records=sent,
        rate=rate,
        achieved_rate=achieved,
    )
    progress(
        f"  latency at {rate:,.0f} rec/s (sent at {achieved:,.0f}): p50 {latency.p50_ms:.2f} ms"
        f"  p99 {latency.p99_ms:.2f} ms  p999 {latency.p999_ms:.2f} ms"
    )
    return latency


def _warm_up(producer: Any, topic: str, partitions: int, padding: bytes, warmed: set[int]) -> None:
    """One warm-up record at a time, round the partitions, until the consumer has seen each partition."""
    deadline = time.monotonic() + TOPIC_TIMEOUT_S
    sent = 0
    while len(warmed) < partitions:
        if time.monotonic() > deadline:
            raise RuntimeError(
                f"the consumer received warm-up records from {len(warmed)} of {partitions} partitions "
                f"in {TOPIC_TIMEOUT_S:.0f} s"
            )
        value = STAMP.pack(time.perf_counter_ns(), WARM) + padding
        producer.produce(topic, value, partition=sent % partitions)
        sent += 1
        producer.poll(0.05)
    producer.flush(TOPIC_TIMEOUT_S)
