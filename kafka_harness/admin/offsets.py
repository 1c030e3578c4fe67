"""``kafka-harness offsets``: earliest, latest or by-time offsets of a topic's partitions.

kafka-harness offsets -b HOST:PORT TOPIC [--time earliest|latest|max-timestamp|EPOCH_MS]
"""

from __future__ import annotations

import argparse
from typing import Any

from .common import AdminError, add_connection_args, admin_client, emit, run, timeout_s, wait

SPECS = {"earliest": "earliest", "latest": "latest", "max-timestamp": "max_timestamp"}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness offsets", description=__doc__.split("\n\n")[0])
    add_connection_args(parser)
    parser.add_argument("topic")
    parser.add_argument("--time", default="latest", help="earliest, latest, max-timestamp or a time in ms")
    args = parser.parse_args(argv)
    if args.time not in SPECS and not args.time.lstrip("-").isdigit():
        parser.error(
            f"--time {args.time!r}: use earliest, latest, max-timestamp or milliseconds since the epoch"
        )
    admin = admin_client(args, parser, "kafka-harness offsets")

    def act() -> int:
        from confluent_kafka import TopicPartition
        from confluent_kafka.admin import OffsetSpec

        topic = admin.list_topics(args.topic, timeout=timeout_s()).topics.get(args.topic)
        if topic is None or topic.error is not None:
            raise AdminError(f"{args.topic}: {topic.error.name() if topic else 'UNKNOWN_TOPIC_OR_PARTITION'}")
        spec: Any = (
            getattr(OffsetSpec, SPECS[args.time])()
            if args.time in SPECS
            else OffsetSpec.for_timestamp(int(args.time))
        )
        request = {TopicPartition(args.topic, p): spec for p in sorted(topic.partitions)}
        rows = []
        for tp, future in admin.list_offsets(request).items():
            info = wait(future)
            rows.append(
                {
                    "topic": tp.topic,
                    "partition": tp.partition,
                    "offset": info.offset,
                    "timestamp": info.timestamp,
                    "leader_epoch": info.leader_epoch,
                }
            )
        emit(
            args,
            sorted(rows, key=lambda r: r["partition"]),
            ["topic", "partition", "offset", "timestamp", "leader_epoch"],
        )
        return 0

    return run(act, "kafka-harness offsets")
