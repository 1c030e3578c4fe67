"""Driver-side admin for a load run: create the topic, ask where each partition's log starts and ends.

Plain confluent-kafka admin and consumer calls; failures become
:class:`LoadRunError` with the broker's error named, so the CLI can say what
went wrong without a traceback.
"""

from __future__ import annotations

import time
from typing import Any

from fixtures.wire.security import with_run_security


class LoadRunError(RuntimeError):
    """The run cannot go on (topic creation failed, the target does not answer, ...)."""


def create_topic(
    bootstrap_servers: str, topic: str, partitions: int, replication_factor: int, timeout_s: float = 30.0
) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient(with_run_security({"bootstrap.servers": bootstrap_servers}))
    future = admin.create_topics(
        [NewTopic(topic, num_partitions=partitions, replication_factor=replication_factor)],
        request_timeout=timeout_s,
    )[topic]
    try:
        future.result(timeout=timeout_s)
    except KafkaException as exc:
        error = exc.args[0] if exc.args else exc
        name = error.name() if hasattr(error, "name") else type(error).__name__
        text = error.str() if hasattr(error, "str") else str(error)
        raise LoadRunError(f"CreateTopics {topic!r} failed: {name}: {text}") from None
    except Exception as exc:
        detail = str(exc) or type(exc).__name__
        raise LoadRunError(
            f"CreateTopics {topic!r}: no answer from {bootstrap_servers} within {timeout_s:.0f}s ({detail})"
        ) from None
    _wait_for_partitions(admin, topic, partitions, timeout_s)


def _wait_for_partitions(admin: Any, topic: str, partitions: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        metadata = admin.list_topics(topic=topic, timeout=5)
        found = metadata.topics.get(topic)
        ready = found is not None and found.error is None and len(found.partitions) >= partitions
        if ready and all(p.leader >= 0 for p in found.partitions.values()):
            return
        time.sleep(0.2)
    raise LoadRunError(
        f"topic {topic!r} has no leaders for its {partitions} partitions after {timeout_s:.0f}s"
    )


def partition_count(bootstrap_servers: str, topic: str, timeout_s: float = 10.0) -> int:
    from confluent_kafka.admin import AdminClient

    metadata = AdminClient(with_run_security({"bootstrap.servers": bootstrap_servers})).list_topics(
        topic=topic, timeout=timeout_s
    )
    found = metadata.topics.get(topic)
    if found is None or found.error is not None or not found.partitions:
        raise LoadRunError(f"topic {topic!r} is not known to {bootstrap_servers}")
    return len(found.partitions)


def partition_ranges(
    bootstrap_servers: str, topic: str, partitions: int, timeout_s: float = 10.0
) -> dict[int, tuple[int, int]]:
    """Per partition, (log start offset, high watermark) as ListOffsets reports them."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    consumer = Consumer(
        with_run_security(
            {
                "bootstrap.servers": bootstrap_servers,
                "group.id": f"kh-load-ranges-{topic}",
                "enable.auto.commit": False,
            }
        )
    )
    try:
        ranges: dict[int, tuple[int, int]] = {}
        for partition in range(partitions):
            try:
                low, high = consumer.get_watermark_offsets(
                    TopicPartition(topic, partition), timeout=timeout_s
                )
            except KafkaException as exc:
                raise LoadRunError(f"ListOffsets for {topic}-{partition} failed: {exc}") from None
            ranges[partition] = (int(low), int(high))
        return ranges
    finally:
        consumer.close()
