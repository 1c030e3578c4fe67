"""The smoke stage: a produce/consume round trip through two real clients and every codec.

confluent-kafka (librdkafka) produces keyed records per compression codec,
idempotent with acks=all; kafka-python (an independent implementation) reads
them back; every partition must return exactly what was acknowledged, in order.
It is the first stage of the main job because it is the cheapest evidence that
the target speaks Kafka at all, and it prints what happened in plain words.

``python -m kafka_harness.run.smoke --target T [--records N] [--alluredir D]``
"""

from __future__ import annotations

import argparse
import sys
import time
import uuid
from collections import defaultdict
from pathlib import Path

from fixtures.targets import (
    TargetUnavailableError,
    add_security_options,
    launch_with_security,
    security_from_args,
)
from fixtures.wire.security import with_run_security, with_run_security_kafka_python

CODECS = ("none", "gzip", "snappy", "lz4", "zstd")


def _say(line: str) -> None:
    print(line, flush=True)


def round_trip(bootstrap: str, records_per_codec: int) -> list[str]:
    """Produce keyed records per codec with confluent-kafka, read them back with kafka-python.

    Returns the problems found (empty when everything came back).
    """
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic
    from kafka import KafkaConsumer, TopicPartition

    problems: list[str] = []
    topic = f"main-job-{uuid.uuid4().hex[:8]}"
    admin = AdminClient(with_run_security({"bootstrap.servers": bootstrap}))
    for future in admin.create_topics([NewTopic(topic, 3, 1)], request_timeout=30).values():
        future.result(timeout=30)
    _say(f"created topic {topic} with 3 partitions")
    sent: dict[int, list[bytes]] = defaultdict(list)
    for codec in CODECS:
        producer = Producer(
            with_run_security(
                {
                    "bootstrap.servers": bootstrap,
                    "compression.type": codec,
                    "linger.ms": 5,
                    "acks": "all",
                    "enable.idempotence": True,
                }
            )
        )
        acked = 0
        failures: list[str] = []

        def on_delivery(err: object, msg: object, failures: list[str] = failures) -> None:
            nonlocal acked
            if err is not None:
                failures.append(str(err))
            else:
                acked += 1
                sent[msg.partition()].append(msg.value())  # type: ignore[attr-defined]

        start = time.perf_counter()
        for i in range(records_per_codec):
            producer.produce(
                topic, key=f"key-{i % 100}".encode(), value=f"{codec}:{i}".encode(), on_delivery=on_delivery
            )
            if i % 5000 == 0:
                producer.poll(0)
        producer.flush(60)
        took = time.perf_counter() - start
        _say(f"  confluent-kafka produced {acked:,} {codec} records (acks=all, idempotent) in {took:.2f} s")
        if failures:
            problems.append(f"{len(failures)} {codec} deliveries failed, first: {failures[0]}")
    consumer = KafkaConsumer(
        **with_run_security_kafka_python(
            {
                "bootstrap_servers": bootstrap,
                "enable_auto_commit": False,
                "consumer_timeout_ms": 5000,
                "auto_offset_reset": "earliest",
            }
        )
    )
    consumer.assign([TopicPartition(topic, p) for p in range(3)])
    received: dict[int, list[bytes]] = defaultdict(list)
    for message in consumer:
        received[message.partition].append(message.value)
    consumer.close()
    total = sum(len(v) for v in received.values())
    _say(f"  kafka-python read {total:,} records back")
    for partition in range(3):
        if received[partition] != sent[partition]:
            problems.append(
                f"partition {partition}: sent {len(sent[partition])} records, read "
                f"{len(received[partition])}, equal in order: no"
            )
    return problems


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness run (smoke)", description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="reference", help="reference | tansu | bootstrap:HOST:PORT[,...]")
    parser.add_argument("--records", type=int, default=10_000, help="records per compression codec")
    parser.add_argument("--alluredir", type=Path, default=None, help="write the round trip to Allure")
    add_security_options(parser, launches=True)
    args = parser.parse_args(argv)
    if args.records <= 0:
        parser.error("--records must be positive")
    _say(f"starting target {args.target} ...")
    started_ms = int(time.time() * 1000)
    try:
        security_from_args(args, as_default=True)
        target = launch_with_security(args.target, args.security)
    except (TargetUnavailableError, ValueError) as exc:
        print(f"kafka-harness run: cannot start {args.target}: {exc}", file=sys.stderr)
        _say("VERDICT: could not run")
        return 2
    with target:
        _say(f"target {args.target} is up at {target.bootstrap_servers}")
        problems = round_trip(target.bootstrap_servers, args.records)
    for problem in problems:
        _say(f"PROBLEM: {problem}")
    if args.alluredir is not None:
        from reports.allure import write_result

        write_result(
            args.alluredir, name="produce and read back every codec", full_name="main-job.smoke.round-trip",
            epic="Clients", feature="Round trip", story="what was acknowledged is read back, in order",
            passed=not problems, message="\n".join(problems),
            parameters={"target": args.target, "records per codec": args.records},
            start_ms=started_ms, steps=[(p, False) for p in problems],
        )
    _say("VERDICT: valid" if not problems else f"VERDICT: invalid problems={len(problems)}")
    return 0 if not problems else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
