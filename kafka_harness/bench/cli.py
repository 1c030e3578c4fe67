"""``kafka-harness bench``: produce and fetch throughput, reference broker against Tansu, same run.

Every figure comes from a real client (confluent-kafka, librdkafka) against
a real broker process on loopback. Targets are started once; repetitions are
interleaved (reference, tansu, reference, tansu, ...) so drift on a noisy
machine hits both alike; the table shows medians and the reference/Tansu
ratio. This is a benchmark, not a test: it prints figures and asserts
nothing. JSON goes to ``reports/bench/`` for the report.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
import uuid
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path

from fixtures.targets import Target, TargetUnavailableError, launch

DEFAULT_OUT = Path("reports/bench")


@dataclass(frozen=True)
class Scenario:
    name: str
    value_size: int
    records: int
    acks: str = "1"
    partitions: int = 3


@dataclass
class Figures:
    """One measurement: records per second and MB per second for produce and for fetch."""

    produce_rps: float
    produce_mbps: float
    fetch_rps: float
    fetch_mbps: float
    produce_s: float
    fetch_s: float


@dataclass
class Result:
    scenario: Scenario
    target: str
    runs: list[Figures] = field(default_factory=list)

    def median(self, name: str) -> float:
        return statistics.median(getattr(r, name) for r in self.runs)


def _create_topic(bootstrap: str, topic: str, partitions: int) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    for future in admin.create_topics([NewTopic(topic, partitions, 1)], request_timeout=30).values():
        future.result(timeout=30)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5).topics.get(topic)
        if (
            md is not None
            and md.error is None
            and len(md.partitions) == partitions
            and all(p.leader >= 0 for p in md.partitions.values())
        ):
            return
        time.sleep(0.05)
    raise TargetUnavailableError(f"topic {topic} has no leaders after 30 s")


def measure(bootstrap: str, scenario: Scenario, progress: Callable[[str], None]) -> Figures:
    """Produce ``scenario.records`` records, then fetch them all back; time each phase."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = f"bench-{uuid.uuid4().hex[:10]}"
    _create_topic(bootstrap, topic, scenario.partitions)
    producer = Producer(
        {
            "bootstrap.servers": bootstrap,
            "linger.ms": 5,
            "batch.size": 65536,
            "acks": scenario.acks,
            "queue.buffering.max.messages": 2_000_000,
            "queue.buffering.max.kbytes": 1_048_576,
        }
    )
    value = b"x" * scenario.value_size
    failures: list[object] = []

    def on_delivery(err: object, _msg: object) -> None:
        if err is not None:
            failures.append(err)

    start = time.perf_counter()
    for i in range(scenario.records):
        while True:
            try:
                producer.produce(topic, value, partition=i % scenario.partitions, on_delivery=on_delivery)
                break
            except BufferError:
                producer.poll(0.005)
        if i % 20_000 == 0:
            producer.poll(0)
    remaining = producer.flush(120)
    produce_s = time.perf_counter() - start
    if remaining or failures:
        raise RuntimeError(
            f"{remaining} records undelivered, {len(failures)} failed (first: "
            f"{failures[:1]}) producing to {bootstrap}"
        )
    consumer = Consumer(
        {
            "bootstrap.servers": bootstrap,
            "group.id": f"bench-{topic}",
            "enable.auto.commit": False,
            "fetch.max.bytes": 52_428_800,
            "max.partition.fetch.bytes": 10_485_760,
        }
    )
    consumer.assign([TopicPartition(topic, p, 0) for p in range(scenario.partitions)])
    got = 0
    start = time.perf_counter()
    deadline = time.monotonic() + 120
    while got < scenario.records and time.monotonic() < deadline:
        for message in consumer.consume(10_000, 1.0):
            if message.error() is None:
                got += 1
    fetch_s = time.perf_counter() - start
    consumer.close()
    if got < scenario.records:
        raise RuntimeError(f"fetched {got} of {scenario.records} records from {bootstrap} in 120 s")
    mb = scenario.records * scenario.value_size / 1e6
    figures = Figures(
        scenario.records / produce_s, mb / produce_s, got / fetch_s, mb / fetch_s, produce_s, fetch_s
    )
    progress(f"  produce {figures.produce_rps:>12,.0f} rec/s  fetch {figures.fetch_rps:>12,.0f} rec/s")
    return figures


def format_table(results: list[Result], targets: list[str]) -> str:
    head = f"{'scenario':<34}{'metric':<16}" + "".join(f"{t:>14}" for t in targets)
    if len(targets) == 2:
        head += f"{targets[0] + '/' + targets[1]:>18}"
    lines = [head, "-" * len(head)]
    scenarios = list(dict.fromkeys(r.scenario for r in results))
    for sc in scenarios:
        label = f"{sc.name} ({sc.value_size} B, acks={sc.acks})"
        by_target = {r.target: r for r in results if r.scenario == sc}
        for metric, name in (
            ("produce rec/s", "produce_rps"),
            ("fetch rec/s", "fetch_rps"),
            ("produce MB/s", "produce_mbps"),
            ("fetch MB/s", "fetch_mbps"),
        ):
            values = [
                by_target[t].median(name) if t in by_target and by_target[t].runs else float("nan")
                for t in targets
            ]
            row = f"{label:<34}{metric:<16}" + "".join(
                f"{v:>14,.1f}" if "MB" in metric else f"{v:>14,.0f}" for v in values
            )
            if len(values) == 2 and values[1]:
                row += f"{values[0] / values[1]:>17.2f}x"
            lines.append(row)
            label = ""
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness bench", description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", default="reference,tansu", help="comma-separated target specs")
    parser.add_argument("--records", type=int, default=300_000, help="records per measurement")
    parser.add_argument("--value-size", type=int, action="append", help="record value size (repeatable; 100)")
    parser.add_argument("--repeat", type=int, default=3, help="interleaved repetitions per target")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="directory for bench.json")
    args = parser.parse_args(argv)
    if args.records <= 0 or args.repeat <= 0:
        parser.error("--records and --repeat must be positive")
    sizes = args.value_size or [100]
    scenarios = [Scenario("single node", size, args.records) for size in sizes]
    specs = [t.strip() for t in args.targets.split(",") if t.strip()]
    running: dict[str, Target] = {}
    try:
        for spec in specs:
            print(f"starting {spec} ...", flush=True)
            try:
                running[spec] = launch(spec)
            except (TargetUnavailableError, ValueError) as exc:
                print(f"kafka-harness bench: cannot start {spec}: {exc}", file=sys.stderr)
                return 2
        results = {(sc, spec): Result(sc, spec) for sc in scenarios for spec in specs}
        for rep in range(args.repeat):
            for sc in scenarios:
                for spec in specs:
                    print(
                        f"[{rep + 1}/{args.repeat}] {spec}: {sc.name}, {sc.records:,} x {sc.value_size} B",
                        flush=True,
                    )
                    results[(sc, spec)].runs.append(
                        measure(running[spec].bootstrap_servers, sc, lambda line: print(line, flush=True))
                    )
    finally:
        for target in running.values():
            target.close()
    ordered = list(results.values())
    table = format_table(ordered, specs)
    print()
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "table": table,
        "results": [
            {"scenario": asdict(r.scenario), "target": r.target, "runs": [asdict(f) for f in r.runs]}
            for r in ordered
        ],
    }
    (args.out / "bench.json").write_text(json.dumps(payload, indent=2))
    print(f"\nwritten to {args.out / 'bench.json'}")
    return 0
