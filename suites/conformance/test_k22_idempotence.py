"""Idempotent produce: InitProducerId (22) and Produce with producer ids and sequences.

Rules from KIP-98 (idempotent producer: the broker keeps the last sequences of each producer per
partition, a retried batch is acknowledged with the offset it got the first time and not
appended again, and a batch whose first sequence is not the next expected one is
OUT_OF_ORDER_SEQUENCE_NUMBER), KIP-360 (a partition that has no state for a producer accepts
its first batch at any sequence) and seed D0-M32 (a retry after a network error must not
duplicate a committed message).
"""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from fixtures.wire import Capabilities, Router, ops
from reference_impl.protocol.record_set import build_batch

from .expect import expect, expect_code, expect_equal

FEATURE = "Idempotent produce"


def idempotent_batch(pid: int, epoch: int, sequence: int, values: list[bytes]) -> bytes:
    return build_batch(
        [(None, v) for v in values],
        base_timestamp=int(time.time() * 1000),
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=sequence,
    )


def new_producer(router: Router, caps: Capabilities) -> tuple[int, int]:
    code, pid, epoch = ops.init_producer_id(router, caps)
    expect_code(code, "NONE", rule="KIP-98 InitProducerId")
    return pid, epoch


def log_values(router: Router, caps: Capabilities, topic: str) -> list[bytes | None]:
    _r, part = ops.fetch(router, caps, topic, 0, max_wait_ms=100)
    return [r.value for r in ops.data_records(part)] if part is not None else []


@pytest.mark.versions("init_producer_id")
def test_init_producer_id_gives_fresh_ids(version: int, router: Router, caps: Capabilities) -> None:
    """KIP-98: InitProducerId without a transactional id returns a new non-negative producer id and
    epoch each time it is asked."""
    answers = [ops.init_producer_id(router, caps, version=version) for _ in range(2)]
    for code, pid, epoch in answers:
        expect_code(code, "NONE", rule="KIP-98 InitProducerId")
        expect(pid >= 0 and epoch >= 0, "KIP-98 InitProducerId", f"producer id {pid}, epoch {epoch}")
    expect(answers[0][1] != answers[1][1], "KIP-98 InitProducerId", "two producers were given the same id")


@pytest.mark.versions("produce", lo=3)
def test_duplicate_batch_returns_the_original_offset(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-98 and seed D0-M32: a batch sent again with the same producer id, epoch and sequence (a
    retry) is acknowledged with no error and the base offset it was first given, and is not
    appended a second time."""
    pid, epoch = new_producer(router, caps)
    first = ops.produce_batch(
        router, caps, topic, idempotent_batch(pid, epoch, 0, [b"a", b"b"]), version=version
    )
    second = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 2, [b"c"]), version=version)
    expect_code(first.error_code, "NONE", rule="KIP-98")
    expect_code(second.error_code, "NONE", rule="KIP-98")
    for sequence, values, original in ((0, [b"a", b"b"], first), (2, [b"c"], second)):
        retry = ops.produce_batch(
            router, caps, topic, idempotent_batch(pid, epoch, sequence, values), version=version
        )
        expect_code(retry.error_code, "NONE", rule="KIP-98", where=f"retry of sequence {sequence}")
        expect_equal(
            int(retry.base_offset),
            int(original.base_offset),
            "KIP-98",
            f"base offset of the retried sequence {sequence}",
        )
    expect_equal(log_values(router, caps, topic), [b"a", b"b", b"c"], "KIP-98", "records in the log")


def test_sequence_gap_is_out_of_order(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-98: a batch whose first sequence skips ahead of the next expected one is refused with
    OUT_OF_ORDER_SEQUENCE_NUMBER and nothing of it is appended."""
    pid, epoch = new_producer(router, caps)
    ok = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 0, [b"one"]))
    expect_code(ok.error_code, "NONE", rule="KIP-98")
    gap = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 5, [b"gap"]))
    expect_code(gap.error_code, "OUT_OF_ORDER_SEQUENCE_NUMBER", rule="KIP-98")
    expect_equal(log_values(router, caps, topic), [b"one"], "KIP-98", "records in the log")


def test_unknown_producer_may_start_at_any_sequence(router: Router, caps: Capabilities, topic: str) -> None:
    """KIP-360 (ProducerStateManager.checkSequence): a partition with no state for a producer (its
    records may have gone with retention) accepts the first batch at any sequence, and from then on
    expects the sequence after it: the next in order is accepted, a gap is
    OUT_OF_ORDER_SEQUENCE_NUMBER."""
    pid, epoch = new_producer(router, caps)
    first = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 3, [b"three"]))
    expect_code(first.error_code, "NONE", rule="KIP-360", where="first batch at sequence 3")
    following = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 4, [b"four"]))
    expect_code(following.error_code, "NONE", rule="KIP-360", where="sequence 4 after 3")
    gap = ops.produce_batch(router, caps, topic, idempotent_batch(pid, epoch, 6, [b"six"]))
    expect_code(gap.error_code, "OUT_OF_ORDER_SEQUENCE_NUMBER", rule="KIP-98", where="sequence 6 after 4")
    expect_equal(log_values(router, caps, topic), [b"three", b"four"], "KIP-360", "records in the log")


def test_sequences_are_per_partition(
    router: Router, caps: Capabilities, topic_factory: Callable[..., str]
) -> None:
    """KIP-98: sequence numbers are tracked per producer and partition; each partition starts at 0."""
    topic = topic_factory(partitions=2)
    pid, epoch = new_producer(router, caps)
    for partition in (0, 1):
        for sequence in (0, 1):
            answer = ops.produce_batch(
                router,
                caps,
                topic,
                idempotent_batch(pid, epoch, sequence, [b"%d" % sequence]),
                partition=partition,
            )
            expect_code(
                answer.error_code, "NONE", rule="KIP-98", where=f"partition {partition}, sequence {sequence}"
            )
            expect_equal(int(answer.base_offset), sequence, "KIP-98", f"offset on partition {partition}")
