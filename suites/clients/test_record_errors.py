"""Per-record produce errors through real clients (KIP-467): keyless records sent to a compacted topic.

Kafka refuses a batch holding records without a key on a compacted topic and names each of them in the
Produce answer's ``record_errors`` (``storage/src/main/java/org/apache/kafka/storage/internals/log/
LogValidator.java``, ``validateKey`` and ``processRecordErrors``; Produce v8+). The clients that read
``record_errors`` fail exactly the named records with the broker's error and the others of the batch
with their own "part of a batch which had invalid records" error, so the application knows which
records to send again: librdkafka (``rd_kafka_msgbatch_handle_Produce_result_record_errors``:
INVALID_RECORD for the named, ``_INVALID_DIFFERENT_RECORD`` for the rest) and kafka-python
(``Sender._record_exceptions_fn``: the partition's error class for the named, ``KafkaError`` for the
rest). A broker that fails the whole batch without naming records makes every record look bad.

The scenario: six records in one batch to partition 0 of a compacted topic, two without a key. The
keyless two must fail with the broker's error; the four keyed ones with the client's "other record"
error; nothing is stored; the four sent again are stored, once each, in order. The log is read back
with the raw protocol client. Clients that do not expose per-record errors skip with that reason.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import pytest

from fixtures.clients import OP_TIMEOUT_S, Client
from fixtures.wire import Capabilities, Router, ops

FEATURE = "Produce: per-record errors"
KEYS: list[bytes | None] = [b"k0", None, b"k2", None, b"k4", b"k5"]
KEYLESS = {i for i, k in enumerate(KEYS) if k is None}
BROKER, OTHER = "broker's error", "other record of the batch"


def _confluent(client: Client, topic: str, indexes: list[int]) -> dict[int, str | None]:
    """index → None (delivered), BROKER or OTHER, from librdkafka's delivery reports."""
    from confluent_kafka import KafkaError, Producer

    outcome: dict[int, str | None] = {}

    def report(i: int) -> Callable[[Any, Any], None]:
        def on_delivery(err: Any, _msg: Any) -> None:
            if err is None:
                outcome[i] = None
            elif err.code() == KafkaError.INVALID_RECORD:
                outcome[i] = BROKER
            elif err.code() == KafkaError._INVALID_DIFFERENT_RECORD:
                outcome[i] = OTHER
            else:
                outcome[i] = f"unexpected {err.name()}: {err.str()}"

        return on_delivery

    producer = Producer({"bootstrap.servers": client.bootstrap, "linger.ms": 500, "acks": "all",
                         "enable.idempotence": False, "retries": 0, **client.security.confluent()})
    for i in indexes:
        producer.produce(topic, value=b"v%d" % i, key=KEYS[i], partition=0, on_delivery=report(i))
    left = producer.flush(OP_TIMEOUT_S)
    assert left == 0, f"{left} records still unsent after {OP_TIMEOUT_S} s"
    return outcome


def _kafka_python(client: Client, topic: str, indexes: list[int]) -> dict[int, str | None]:
    """index → None (delivered), BROKER or OTHER, from kafka-python's send futures."""
    from kafka import KafkaProducer
    from kafka import errors as kafka_errors

    producer = KafkaProducer(bootstrap_servers=client.bootstrap, linger_ms=500, acks="all", retries=0,
                             request_timeout_ms=30_000, **client.security.kafka_python())
    try:
        futures = {i: producer.send(topic, value=b"v%d" % i, key=KEYS[i], partition=0) for i in indexes}
        producer.flush(OP_TIMEOUT_S)
        outcome: dict[int, str | None] = {}
        for i, future in futures.items():
            try:
                future.get(timeout=OP_TIMEOUT_S)
                outcome[i] = None
            except kafka_errors.InvalidRecordError:
                outcome[i] = BROKER
            except kafka_errors.KafkaError as exc:
                other = type(exc) is kafka_errors.KafkaError and "part of a batch" in str(exc)
                outcome[i] = OTHER if other else f"unexpected {type(exc).__name__}: {exc}"
        return outcome
    finally:
        producer.close(timeout=10)


PRODUCERS: dict[str, Callable[[Client, str, list[int]], dict[int, str | None]]] = {
    "confluent-kafka": _confluent,
    "kafka-python": _kafka_python,
}


def _stored(router: Router, caps: Capabilities, topic: str) -> list[tuple[int, bytes | None, bytes | None]]:
    _r, part = ops.fetch(router, caps, topic, 0, max_wait_ms=100)
    return [(r.offset, r.key, r.value) for r in ops.data_records(part)]


def test_only_the_keyless_records_fail(
    kafka_client: Client, topic_factory: Callable[..., str], router: Router, caps: Capabilities
) -> None:
    """KIP-467 through a client: the keyless records fail with the broker's error, the keyed ones of the
    same batch with the client's own error, nothing is stored; sent again, the keyed ones are stored."""
    produce = PRODUCERS.get(kafka_client.name)
    if produce is None:
        pytest.skip(f"{kafka_client.name} does not report per-record produce errors (KIP-467)")
    topic = topic_factory(configs={"cleanup.policy": "compact"})
    outcome = produce(kafka_client, topic, list(range(len(KEYS))))
    expected = {i: BROKER if i in KEYLESS else OTHER for i in range(len(KEYS))}
    assert outcome == expected, f"per-record outcome {outcome}, expected {expected}"
    assert _stored(router, caps, topic) == [], "records of the refused batch were stored"
    keyed = [i for i in range(len(KEYS)) if i not in KEYLESS]
    again = produce(kafka_client, topic, keyed)
    assert again == dict.fromkeys(keyed), f"the keyed records sent again: {again}"
    deadline = time.monotonic() + 10
    while (stored := _stored(router, caps, topic)) == [] and time.monotonic() < deadline:
        time.sleep(0.1)
    assert stored == [(n, KEYS[i], b"v%d" % i) for n, i in enumerate(keyed)], f"stored {stored}"
