"""The verifier on minimal hand-made histories: each anomaly present alone, and a clean history.

Values are built with :mod:`spark_load.payloads` (Python's CRC-32) and judged
by Spark's ``crc32``, so every case also checks that the two agree.
"""

from __future__ import annotations

from typing import Any

import pytest

from spark_load.jobs.generate import ACK_SCHEMA_DDL
from spark_load.jobs.read import READ_SCHEMA_DDL
from spark_load.jobs.synthetic import synthetic_history
from spark_load.jobs.verify import verify
from spark_load.payloads import encode_value
from spark_load.verdict import ANOMALIES, Verdict

GEN = "g1"


def key_of(seq: int) -> bytes:
    return b"k%d" % (seq % 2)


def ack(
    seq: int, offset: int | None, *, partition: int = 0, error: str | None = None, producer: int = 0
) -> tuple[Any, ...]:
    return (GEN, seq, producer, key_of(seq), partition, offset, error, 1000 * seq, 1000 * seq + 500, 40)


def read(
    seq: int, offset: int, *, partition: int = 0, gen: str = GEN, value: bytes | None = None
) -> tuple[Any, ...]:
    payload = encode_value(gen, seq, key_of(seq), b"filler%d" % seq) if value is None else value
    return (partition, offset, key_of(seq), payload, 0, 0)


def clean() -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
    """Six records, one producer, two keys, partition 0, offsets 0..5: all acknowledged and read."""
    return [ack(seq, seq) for seq in range(6)], [read(seq, seq) for seq in range(6)]


def judge(spark: Any, acks: list[tuple[Any, ...]], reads: list[tuple[Any, ...]], **options: Any) -> Verdict:
    return verify(
        spark.createDataFrame(acks, ACK_SCHEMA_DDL), spark.createDataFrame(reads, READ_SCHEMA_DDL), **options
    )


def nonzero(verdict: Verdict) -> dict[str, int]:
    return {name: count for name, count in verdict.counts.items() if count}


def test_a_clean_history_is_valid(spark: Any) -> None:
    verdict = judge(spark, *clean())
    assert verdict.valid, verdict.to_json()
    assert (verdict.acked, verdict.read, nonzero(verdict)) == (6, 6, {})
    assert verdict.line() == (
        "VERDICT: valid acked=6 read=6 lost=0 duplicate=0 corrupt=0 reordered=0 "
        "inconsistent_offset=0 unexpected=0 unacked_read=0"
    )


def test_an_acknowledged_record_never_read_is_lost(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, [*acks, ack(6, 6)], reads)
    assert nonzero(verdict) == {"lost": 1}
    assert not verdict.valid
    assert verdict.samples["lost"] == [{"gen": GEN, "seq": 6}]


def test_a_record_read_at_two_offsets_is_a_duplicate_and_not_also_a_reorder(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, acks, [*reads, read(2, 6)])
    assert nonzero(verdict) == {"duplicate": 1}
    assert verdict.read == 7


def test_a_value_that_fails_its_checksum_is_corrupt_and_its_record_lost(spark: Any) -> None:
    acks, reads = clean()
    damaged = bytearray(reads[3][3])
    damaged[-1] ^= 0x20
    reads[3] = read(3, 3, value=bytes(damaged))
    verdict = judge(spark, acks, reads)
    assert nonzero(verdict) == {"corrupt": 1, "lost": 1}


def test_values_that_are_not_load_records_at_all_are_corrupt(spark: Any) -> None:
    acks, reads = clean()
    reads += [
        read(90, 6, value=b"\xff\xfe not utf-8 \x00"),
        read(91, 7, value=b"KH1|g1|12|zz|x"),
        (0, 8, None, None, 0, 0),
    ]
    verdict = judge(spark, acks, reads)
    assert nonzero(verdict) == {"corrupt": 3}


def test_a_later_sequence_number_before_an_earlier_one_for_one_key_is_a_reorder(spark: Any) -> None:
    acks, reads = clean()
    # seq 2 and seq 4 share key k0; the log holds 4 before 2.
    acks[2], acks[4] = ack(2, 4), ack(4, 2)
    reads[2], reads[4] = read(4, 2), read(2, 4)
    verdict = judge(spark, acks, reads)
    assert nonzero(verdict) == {"reordered": 1}
    assert verdict.samples["reordered"][0]["seq"] == 2


def test_order_is_judged_per_producer(spark: Any) -> None:
    acks, reads = clean()
    # The same swap, but seq 4 came from another producer: no order between them is promised.
    acks[2], acks[4] = ack(2, 4), ack(4, 2, producer=1)
    reads[2], reads[4] = read(4, 2), read(2, 4)
    assert judge(spark, acks, reads).valid


def test_an_offset_acknowledged_for_two_records_is_inconsistent(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, [*acks, ack(6, 5)], reads)
    assert nonzero(verdict) == {"inconsistent_offset": 1, "lost": 1}
    assert verdict.samples["inconsistent_offset"][0]["offset"] == 5


def test_a_record_of_this_run_never_sent_is_unexpected(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, acks, [*reads, read(42, 6)])
    assert nonzero(verdict) == {"unexpected": 1}
    assert not verdict.valid


def test_reading_a_send_reported_as_failed_is_allowed_and_counted(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, [*acks, ack(6, None, error="timed out")], [*reads, read(6, 6)])
    assert nonzero(verdict) == {"unacked_read": 1, "unacked": 1}
    assert verdict.valid


def test_intact_records_of_another_generator_are_foreign_and_ignored(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, acks, [*reads, read(3, 6, gen="someone-else")], generator_ids=[GEN])
    assert nonzero(verdict) == {"foreign": 1}
    assert verdict.valid


def test_allowed_anomalies_are_counted_but_do_not_invalidate(spark: Any) -> None:
    acks, reads = clean()
    verdict = judge(spark, acks, [*reads, read(2, 6)], allowed={"duplicate"})
    assert verdict.counts["duplicate"] == 1
    assert verdict.valid
    assert verdict.line().startswith("VERDICT: valid ")


def test_an_incomplete_read_is_never_valid(spark: Any) -> None:
    verdict = judge(spark, *clean(), incomplete_read=True)
    assert not verdict.valid and verdict.failing == []


@pytest.mark.parametrize(("lost", "duplicated", "corrupted"), [(0, 0, 0), (7, 5, 3)])
def test_synthetic_histories_report_exactly_the_injected_anomalies(
    spark: Any, lost: int, duplicated: int, corrupted: int
) -> None:
    acks, reads = synthetic_history(
        spark, 5000, partitions=5, lost=lost, duplicated=duplicated, corrupted=corrupted
    )
    verdict = verify(acks, reads)
    expected = {"lost": lost + corrupted, "duplicate": duplicated, "corrupt": corrupted}
    assert {name: verdict.counts[name] for name in ANOMALIES} == {
        name: expected.get(name, 0) for name in ANOMALIES
    }
    assert verdict.acked == 5000
    assert verdict.read == 5000 - lost + duplicated
