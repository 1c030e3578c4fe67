"""How long the checkers take on a 60 s history: ``python -m chaos.checkers.bench [--workload txn-append]``.

The history is synthetic but shaped like a campaign's. ``queue``: 2,000 sends/s from 8 producers
over 6 partitions, consumers polling batches of 100, a fault every 10 s. ``txn-append``: 4
processors committing transactions that each read what is new on two keys and send to two keys
(the dependency graph of :mod:`chaos.checkers.graph` then has one vertex per transaction), at
``--rate`` transactions per second, far above what the real workload reaches (about 60/s on the
reference broker). A measurement (target ≤ 10 s), not a test.
"""

from __future__ import annotations

import argparse
import random
import time

from chaos.checkers import check
from chaos.history import History, Op


def synthetic(seconds: int, rate: int, partitions: int = 6, producers: int = 8) -> History:
    ops: list[Op] = []
    offsets = [0] * partitions
    stored: list[list[tuple[str, int, int, str]]] = [[] for _ in range(partitions)]

    def add(type_: str, process: int | str, f: str, mono: float, **fields: object) -> None:
        ops.append(Op(len(ops), type_, process, f, 1.7e9 + mono, mono, **fields))  # type: ignore[arg-type]

    for n in range(seconds * rate):
        mono = n / rate
        process, partition = n % producers, n % partitions
        value = f"{process}-{n}"
        add("invoke", process, "send", mono, value=value, topic="q", partition=partition)
        add(
            "ok",
            process,
            "send",
            mono + 0.002,
            value=value,
            topic="q",
            partition=partition,
            offset=offsets[partition],
        )
        stored[partition].append(("q", partition, offsets[partition], value))
        offsets[partition] += 1
        if n % (rate * 10) == 0:
            add(
                "info",
                "nemesis",
                "start" if (n // (rate * 10)) % 2 == 0 else "stop",
                mono,
                value={"fault": "kill", "id": n // (rate * 20)},
            )
    mono = float(seconds)
    for partition, records in enumerate(stored):
        for start in range(0, len(records), 100):
            add("invoke", 100 + partition, "poll", mono)
            add("ok", 100 + partition, "poll", mono, records=records[start : start + 100])
    return History(ops, {"idempotence": True, "final_drain": True})


def synthetic_txn_append(
    seconds: int, rate: int, keys: int = 6, processors: int = 4, seed: int = 1
) -> History:
    """Transactions in a log that is consistent: every one commits, each processor reads its keys in order."""
    rng = random.Random(seed)
    ops: list[Op] = []
    logs: list[list[str]] = [[] for _ in range(keys)]
    positions = [[0] * keys for _ in range(processors)]

    def add(type_: str, process: int, mono: float, **fields: object) -> None:
        ops.append(Op(len(ops), type_, process, "txn", 1.7e9 + mono, mono, **fields))  # type: ignore[arg-type]

    for n in range(seconds * rate):
        mono = n / rate
        process = n % processors
        read: list[list[object]] = []
        for key in rng.sample(range(keys), 2):
            start = positions[process][key]
            end = min(len(logs[key]), start + 10)
            read += [["t", key, o, logs[key][o]] for o in range(start, end)]
            positions[process][key] = end
        written = []
        for i, key in enumerate(rng.sample(range(keys), 2)):
            value = f"{process}-{n}-{i}"
            written.append(("t", key, len(logs[key]), value))
            logs[key].append(value)
        add("invoke", process, mono)
        add("ok", process, mono + 0.002, value={"read": read}, records=written)
    return History(ops, {"workload": "txn-append", "idempotence": True, "final_drain": False})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--rate", type=int, default=None, help="default: 2000 sends/s, 500 txns/s")
    parser.add_argument("--workload", choices=["queue", "txn-append"], default="queue")
    args = parser.parse_args(argv)
    if args.workload == "txn-append":
        args.rate = args.rate or 500
        history = synthetic_txn_append(args.seconds, args.rate)
    else:
        args.rate = args.rate or 2000
        history = synthetic(args.seconds, args.rate)
    start = time.perf_counter()
    result = check(history)
    elapsed = time.perf_counter() - start
    print(
        f"{args.workload}: {len(history):,} ops ({args.seconds} s at {args.rate}/s): "
        f"checked in {elapsed:.2f} s "
        f"(target <= 10 s); {result.verdict_line()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
