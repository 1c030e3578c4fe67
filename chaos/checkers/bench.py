"""How long the checkers take on a 60 s history at 2,000 sends/s: ``python -m chaos.checkers.bench``.

The history is synthetic but shaped like a campaign's: 8 producers over 6 partitions, consumers
polling batches of 100, a fault every 10 s. A measurement (target ≤ 10 s), not a test.
"""

from __future__ import annotations

import argparse
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=int, default=60)
    parser.add_argument("--rate", type=int, default=2000)
    args = parser.parse_args(argv)
    history = synthetic(args.seconds, args.rate)
    start = time.perf_counter()
    result = check(history)
    elapsed = time.perf_counter() - start
    print(
        f"{len(history):,} ops ({args.seconds} s at {args.rate}/s): checked in {elapsed:.2f} s "
        f"(target <= 10 s); {result.verdict_line()}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
