"""The verifier of issue 25 (two shuffles, records partitioned by generator and key) counts what the
previous one (three shuffles, :mod:`spark_load.tests.verify_v1`) counted, on hand-made histories that
hold every anomaly at once: lost, duplicated (in and across partitions), corrupt, reordered, offsets
acknowledged twice or read with another record, unexpected, unacknowledged reads, unacknowledged
sends, foreign records, sends with no position at all (Spark's Kafka sink).
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from spark_load.payloads import encode_value
from spark_load.tests import verify_v1
from spark_load.tests.test_verify import GEN, ack, judge, key_of, read
from spark_load.verdict import ANOMALIES, INFORMATIONAL


def mixed_history(seed: int, records: int = 120) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Records in three partitions, two producers; each record's fate drawn from ``seed``."""
    rng = random.Random(seed)
    acks: list[tuple[Any, ...]] = []
    reads: list[tuple[Any, ...]] = []
    ends = [0, 0, 0]
    for seq in range(records):
        partition = seq % 3
        producer = 0 if partition == 2 else rng.randrange(2)  # partition 2: one producer, for the swap
        fate = rng.choices(
            ["clean", "lost", "dup", "dup_elsewhere", "corrupt", "failed_read", "failed", "unsent_read",
             "no_position", "same_offset"],
            weights=[60, 4, 4, 2, 3, 3, 3, 2, 2, 2],
        )[0]  # fmt: skip
        offset = ends[partition]
        ends[partition] += 1
        if fate == "unsent_read":
            reads.append(read(seq, offset, partition=partition))
            continue
        if fate in ("failed", "failed_read"):
            acks.append(ack(seq, None, partition=partition, error="timed out", producer=producer))
            if fate == "failed_read":
                reads.append(read(seq, offset, partition=partition))
            continue
        if fate == "no_position":
            acks.append((GEN, seq, producer, key_of(seq), None, None, None, 0, 0, 40))
            reads.append(read(seq, offset, partition=partition))
            continue
        if fate == "same_offset" and offset > 0:
            acks.append(ack(seq, offset - 1, partition=partition, producer=producer))
            continue
        acks.append(ack(seq, offset, partition=partition, producer=producer))
        if fate == "lost":
            continue
        if fate == "corrupt":
            damaged = bytearray(encode_value(GEN, seq, key_of(seq), b"filler%d" % seq))
            damaged[-1] ^= 0x20
            reads.append(read(seq, offset, partition=partition, value=bytes(damaged)))
            continue
        reads.append(read(seq, offset, partition=partition))
        if fate in ("dup", "dup_elsewhere"):
            other = partition if fate == "dup" else (partition + 1) % 3
            reads.append(read(seq, ends[other], partition=other))
            ends[other] += 1
    # Two neighbours of one key swapped in the log (reordered), a foreign record, a value that is no record.
    reads.append(read(7, ends[0], partition=0, gen="someone-else"))
    reads.append((1, ends[1], b"k1", b"not a load record", 0, 0))
    swap = [i for i, row in enumerate(reads) if row[0] == 2 and row[2] == b"k0"][:2]
    if len(swap) == 2:
        (i, j) = swap
        reads[i], reads[j] = (
            (reads[j][0], reads[i][1], *reads[j][2:]),
            (reads[i][0], reads[j][1], *reads[i][2:]),
        )
    return acks, reads


@pytest.mark.parametrize("seed", [1])
def test_the_two_shuffle_verifier_counts_what_the_three_shuffle_one_counted(spark: Any, seed: int) -> None:
    acks, reads = mixed_history(seed)
    new = judge(spark, acks, reads, generator_ids=[GEN])
    old = verify_v1.verify(
        *(spark.createDataFrame(rows, schema) for rows, schema in ((acks, _ack_ddl()), (reads, _read_ddl()))),
        generator_ids=[GEN],
    )
    names = (*ANOMALIES, *INFORMATIONAL)
    assert {n: new.counts[n] for n in names} == {n: old.counts[n] for n in names}
    assert (new.acked, new.read) == (old.acked, old.read)
    found = {n for n in names if new.counts[n]}
    assert found >= {
        "lost",
        "duplicate",
        "corrupt",
        "inconsistent_offset",
        "unexpected",
        "unacked_read",
        "foreign",
    }
    assert set(new.samples) == {n for n in found if n in ANOMALIES or n == "unacked_read"}


def _ack_ddl() -> str:
    from spark_load.jobs.generate import ACK_SCHEMA_DDL

    return ACK_SCHEMA_DDL


def _read_ddl() -> str:
    from spark_load.jobs.read import READ_SCHEMA_DDL

    return READ_SCHEMA_DDL


def test_examples_name_the_records_found(spark: Any) -> None:
    acks, reads = [ack(s, s) for s in range(6)], [read(s, s) for s in range(6)]
    verdict = judge(spark, [*acks, ack(6, 6)], [*reads, read(2, 7), read(40, 8)])
    assert verdict.samples["lost"] == [{"gen": GEN, "seq": 6}]
    assert verdict.samples["unexpected"] == [{"gen": GEN, "seq": 40}]
    assert verdict.samples["duplicate"] == [
        {"gen": GEN, "seq": 2, "copies": 2, "first_partition": 0, "first_offset": 2,
         "last_partition": 0, "last_offset": 7}
    ]  # fmt: skip
