"""The Spark checkers (:mod:`chaos.checkers.spark_checks`) find exactly the anomalies the Python
checkers find, one by one, on the same histories written as Parquet: hand-made ones with every
anomaly class injected (the scenarios of ``test_checkers.py``), and a clean one. Spark runs in
``local[2]`` (one session for the run); the standalone cluster is exercised by the load suite."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from chaos.checkers import check, judge
from chaos.checkers.spark_checks import NAMES, anomaly_key, check_parquet
from chaos.history import History, read_history, write_jsonl, write_parquet
from chaos.tests.test_checkers import Builder, T, clean


def everything() -> Builder:
    """One history with every per-record anomaly class: lost, unseen, duplicate, inconsistent,
    poll skip, nonmonotonic poll and send, aborted read (and so validate_delivery)."""
    return (
        Builder()
        .send(0, "a", 0, 0)
        .send(0, "b", 0, 1)
        .send(0, "c", 0, 2)
        .send(0, "lost", 0, 3)
        .send(0, "d", 0, 4)
        .send(0, "tail", 1, 7)  # never read, nothing later: unseen
        .send(2, "late", 2, 5)
        .send(2, "early", 2, 4)  # acknowledged below the previous send: nonmonotonic_send
        .send(0, "failed", 3, None, outcome="fail")
        .send(0, "x1", 4, 0)
        .poll(1, (0, 0, "a"), (0, 2, "c"))  # skips b at 1: poll_skip
        .poll(1, (0, 4, "d"), (0, 1, "b"))  # back to 1: nonmonotonic_poll; lost at 3 never read
        .poll(5, (0, 1, "b"), (0, 2, "c"), (0, 4, "d"), (0, 5, "a"))  # a twice: duplicate
        .poll(6, (2, 4, "early"), (2, 5, "late"), (3, 0, "failed"))  # aborted_read
        .poll(6, (4, 0, "x2"))  # another value at x1's position: inconsistent_offsets
        .assign(1, [0])
        .poll(1, (0, 0, "a"))  # after an assign: no nonmonotonic poll
    )


def final_read() -> Builder:
    """A final reader that read the whole log (meta.final_reader) and missed an acknowledged value
    another consumer saw earlier: lost by the final read, and a write after it (left out)."""
    b = Builder(final_reader=9, final_read_complete=True).send(0, "a", 0, 0).send(0, "b", 0, 1)
    b.poll(1, (0, 0, "a"), (0, 1, "b")).poll(9, (0, 0, "a"))
    return b.send(0, "after", 0, 2)


HISTORIES: dict[str, Callable[[], Builder]] = {"everything": everything, "clean": clean, "final": final_read}


def python_keys(history: History) -> dict[str, set[tuple[Any, ...]]]:
    result = check(history)
    return {name: {anomaly_key(name, a) for a in result.anomalies.get(name, [])} for name in NAMES}


@pytest.mark.parametrize(
    "name",
    # every class injected runs at CI budget; the clean and final-reader histories on demand (load_full)
    [n if n == "everything" else pytest.param(n, marks=pytest.mark.load_full) for n in sorted(HISTORIES)],
)
def test_spark_and_python_checkers_find_the_same_anomalies(
    name: str,
    spark: Any,
    tmp_path: Path,
) -> None:
    history = HISTORIES[name]().history
    path = tmp_path / "history.parquet"
    write_parquet(history, path)
    result = check_parquet(spark, str(path), history.meta, examples=1000)
    expected = python_keys(history)
    got = {n: set(result.examples.get(n, [])) for n in NAMES}
    assert got == expected
    assert result.counts == {n: len(keys) for n, keys in expected.items()}
    python = check(history)
    spark_valid = judge(
        history.meta, result.counts, acked=result.stats["acked"],
        read_any=result.stats["distinct_read"] > 0, wrote_any=result.stats["writes"] > 0,
    )  # fmt: skip
    assert spark_valid == (python.valid, python.bad)
    if name == "everything":
        assert all(result.counts[n] for n in NAMES), "every class is injected in this history"


def test_parquet_and_jsonl_histories_read_as_the_same_ops(tmp_path: Path) -> None:
    history = everything().nemesis("start", fault="kill").history  # a dict value survives too
    write_jsonl(history, tmp_path / "h.jsonl")
    write_parquet(history, tmp_path / "h.parquet")
    from_jsonl, from_parquet = read_history(tmp_path / "h.jsonl"), read_history(tmp_path / "h.parquet")
    assert from_parquet.meta == from_jsonl.meta == history.meta
    assert [op.to_json() for op in from_parquet] == [op.to_json() for op in from_jsonl]
    assert check(from_parquet).counts() == check(history).counts()


def test_check_command_with_spark_on_a_parquet_history_prints_the_python_verdict(tmp_path: Path) -> None:
    from chaos.check_cli import main

    history = everything().history
    write_parquet(history, tmp_path / "h.parquet")
    assert main([str(tmp_path / "h.parquet"), "--spark-master", "local[1]"]) == 1


def test_the_synthetic_history_holds_exactly_the_injected_anomalies(tmp_path: Path) -> None:
    """The generator's expected counts are what the Python checkers (the specification) find."""
    from chaos.history.synthetic import expected_counts, generate

    meta = generate(tmp_path / "h", 3000, partitions=4, inject=3, chunk_records=400)
    history = read_history(tmp_path / "h")
    assert len(list((tmp_path / "h").glob("part-*.parquet"))) > 2, "written in chunks"
    assert len(history) == meta["ops"]
    found = check(history).counts()
    assert {n: found[n] for n in NAMES} == expected_counts(3)


def random_history(seed: int) -> History:
    """A small history with what the hand-made ones lack, drawn from ``seed``: sends in flight
    together (invokes and completions apart), values sent twice (by one producer or two), sends that
    fail, end unknown or never complete, an invoke superseded by another of the same value, reads
    repeated, backwards and skipping, assigns between polls, and sometimes a final reader, a complete
    final read and acks=1. The Python checkers (the specification) are the oracle."""
    import random

    rng = random.Random(seed)
    meta: dict[str, Any] = {"idempotence": rng.random() < 0.7, "final_drain": True}
    if rng.random() < 0.3:
        meta["acks"] = "1"
    final = rng.random() < 0.4
    if final:
        meta.update(final_reader=90, final_read_complete=rng.random() < 0.6)
    b = Builder(**meta)
    log: dict[int, list[str]] = {p: [] for p in range(3)}
    in_flight: list[tuple[int, str, int]] = []
    values, sent = [f"v{i}" for i in range(24)], list[str]()

    def complete(process: int, value: str, partition: int) -> None:
        outcome = rng.choices(["ok", "fail", "info"], [8, 1, 1])[0]
        offset = None
        if outcome == "ok":
            offset = len(log[partition]) if rng.random() < 0.9 else rng.randrange(len(log[partition]) + 1)
        if outcome == "ok" or rng.random() < 0.4:  # a failed or unknown send may be stored all the same
            log[partition].append(value)
        b._op(outcome, process, "send", value=value, topic=T, partition=partition, offset=offset)

    def read(process: int) -> None:
        partition = rng.randrange(3)
        if not log[partition]:
            return
        start = rng.randrange(len(log[partition]))
        offsets = [start + i for i in range(rng.randint(1, 4)) if start + i < len(log[partition])]
        if rng.random() < 0.3:
            offsets = [o + rng.choice([-2, 1, 2]) for o in offsets]
        elif rng.random() < 0.2:
            offsets = [start, start + 2]
        stored = log[partition]
        b.poll(process, *[(partition, o, stored[o] if o < len(stored) else "x") for o in offsets if o >= 0])

    for _ in range(60):
        roll = rng.random()
        if roll < 0.35:
            process, partition = rng.randrange(3), rng.randrange(3)
            again = bool(sent) and (rng.random() < 0.15 or not values)
            value = rng.choice(sent) if again else values.pop()
            sent.append(value)
            b._op("invoke", process, "send", value=value, topic=T, partition=partition)
            in_flight.append((process, value, partition))
        elif roll < 0.6 and in_flight:
            process, value, partition = in_flight.pop(rng.randrange(len(in_flight)))
            if rng.random() < 0.9:
                complete(process, value, partition)
        elif roll < 0.9:
            read(rng.choice([10, 11]))
        else:
            b.assign(rng.choice([10, 11]), [0, 1, 2])
    if final:
        for partition in range(3):
            if log[partition]:
                b.poll(90, *[(partition, o, v) for o, v in enumerate(log[partition]) if rng.random() < 0.9])
        b.send(0, "after", 0, len(log[0]))
    return b.history


@pytest.mark.parametrize(
    # three histories at CI budget (about 7 s each on 2 cores), five more on demand (load_full)
    "seed",
    [s if s < 3 else pytest.param(s, marks=pytest.mark.load_full) for s in range(8)],
)
def test_spark_and_python_checkers_agree_on_random_histories(seed: int, spark: Any, tmp_path: Path) -> None:
    history = random_history(seed)
    write_parquet(history, tmp_path / "history.parquet")
    result = check_parquet(spark, str(tmp_path / "history.parquet"), history.meta, examples=1000)
    python = check(history)
    expected = {name: {anomaly_key(name, a) for a in python.anomalies.get(name, [])} for name in NAMES}
    assert {n: set(result.examples.get(n, [])) for n in NAMES} == expected
    assert result.counts == {n: len(python.anomalies.get(n, [])) for n in NAMES}
    stats = {k: python.stats[k] for k in ("ops", "writes", "acked", "distinct_read")}
    assert {k: result.stats[k] for k in stats} == stats
