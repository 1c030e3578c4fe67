"""Broker CPU per acks=all round trip and per 1,000 records on a 3-broker RF=3 reference cluster.

A load-independent figure for issue 22: wall-clock rates move with whatever else runs on the
machine, the CPU seconds the three broker processes spend (``utime + stime`` from
``/proc/PID/stat``) per acknowledged round trip much less (``net``: less what they spend idle
over as long, measured first). Two phases on one fresh topic (one partition, three replicas;
``--single``: one broker, acks=1, the yardstick): ``round trips``, one record produced and
flushed at a time (each one acks=all round trip), then ``batch``, records sent as fast as the
producer batches them. The topic's group first joins once, so that ``__consumer_offsets`` is
followed too, as in ``kafka-harness bench``.

``python -m kafka_harness.bench.cpu_cost [--round-trips N] [--records N]``; with
``KH_BROKER_CPROFILE=DIR`` the brokers also write their cProfile stats there when stopped.
"""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

from fixtures.targets.launch import Target, launch

from .measurements import _consumer, _producer, create_topic, delete_topic
from .model import Scenario

MAX_ROUND_TRIPS = 100_000
MAX_RECORDS = 10_000_000
FLUSH_TIMEOUT_S = 30.0
GROUP_JOIN_S = 20.0
IDLE_S = 3.0


def cpu_seconds(pid: int | None) -> float:
    """utime + stime of ``pid`` in seconds (0 when it is gone)."""
    if pid is None:
        return 0.0
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cluster_cpu(target: Target) -> float:
    return sum(cpu_seconds(n.pid) for n in target.nodes)


def with_offsets_topic(bootstrap: str, topic: str) -> None:
    """A group joins, so ``__consumer_offsets`` (50 partitions, replicated) exists as in the bench,
    whose latency runs consume in a group: its partitions are followed too."""
    consumer = _consumer(bootstrap, topic)
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + GROUP_JOIN_S
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.2)
    finally:
        consumer.close()


def measure(
    target: Target, round_trips: int, records: int, value_size: int, *, single: bool = False
) -> dict[str, float]:
    bootstrap = target.bootstrap_servers
    acks, replicas = ("1", 1) if single else ("all", 3)
    scenario = Scenario(
        "cpu", value_size, records, acks, partitions=1, brokers=replicas, replication_factor=replicas
    )
    topic = create_topic(bootstrap, scenario)
    value = b"x" * value_size
    with_offsets_topic(bootstrap, topic)
    producer = _producer(bootstrap, acks)
    try:
        for _ in range(50):  # warm: connections, metadata, the partition's leader
            producer.produce(topic, value)
        producer.flush(FLUSH_TIMEOUT_S)
        idle0, idle_wall0 = cluster_cpu(target), time.monotonic()
        time.sleep(IDLE_S)  # what the brokers spend doing nothing (heartbeats, Raft, waiting fetches)
        idle_rate = (cluster_cpu(target) - idle0) / (time.monotonic() - idle_wall0)
        cpu0, wall0 = cluster_cpu(target), time.monotonic()
        for _ in range(round_trips):
            producer.produce(topic, value)
            if producer.flush(FLUSH_TIMEOUT_S):
                raise RuntimeError("a round trip was not acknowledged in time")
        cpu1, wall1 = cluster_cpu(target), time.monotonic()
        for i in range(records):
            while True:
                try:
                    producer.produce(topic, value)
                    break
                except BufferError:
                    producer.poll(0.01)
            if i % 1000 == 0:
                producer.poll(0)
        if producer.flush(FLUSH_TIMEOUT_S):
            raise RuntimeError("the batch was not acknowledged in time")
        cpu2, wall2 = cluster_cpu(target), time.monotonic()
    finally:
        delete_topic(bootstrap, topic)
    return {
        "idle_cpu_ms_per_s": 1000 * idle_rate,
        "cpu_ms_per_round_trip": 1000 * (cpu1 - cpu0) / max(1, round_trips),
        "net_cpu_ms_per_round_trip": 1000 * (cpu1 - cpu0 - idle_rate * (wall1 - wall0)) / max(1, round_trips),
        "wall_ms_per_round_trip": 1000 * (wall1 - wall0) / max(1, round_trips),
        "cpu_s_per_1000_records": 1000 * (cpu2 - cpu1) / max(1, records),
        "records_per_s": records / max(1e-9, wall2 - wall1),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_harness.bench.cpu_cost", description=__doc__)
    parser.add_argument("--round-trips", type=int, default=300)
    parser.add_argument("--records", type=int, default=20_000)
    parser.add_argument("--value-size", type=int, default=100)
    parser.add_argument("--single", action="store_true", help="one broker, acks=1: the yardstick")
    args = parser.parse_args(argv)
    if not (0 < args.round_trips <= MAX_ROUND_TRIPS and 0 < args.records <= MAX_RECORDS):
        parser.error(f"--round-trips 1..{MAX_ROUND_TRIPS}, --records 1..{MAX_RECORDS}")
    if not 1 <= args.value_size <= 1_000_000:
        parser.error("--value-size 1..1000000")
    target = launch("reference", brokers=1 if args.single else 3)
    try:
        figures = measure(target, args.round_trips, args.records, args.value_size, single=args.single)
    finally:
        target.close()
    for name, value in figures.items():
        print(f"{name}: {value:.3f}")
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
