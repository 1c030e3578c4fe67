"""Idempotent produce (KIP-98): retries are not appended twice, gaps and stale epochs are refused."""

from __future__ import annotations

import pytest

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from .harness import START_MS, BrokerHarness, request
from .test_data_path import create, fetch, produce, values


def init_pid(h: BrokerHarness) -> tuple[int, int]:
    r = h.call(
        request(22, 4, transactional_id=None, transaction_timeout=60000, producer_id=-1, producer_epoch=-1)
    )
    assert r.error_code == ErrorCode.none
    return int(r.producer_id), int(r.producer_epoch)


def batch(pid: int, epoch: int, seq: int, *vals: bytes) -> bytes:
    return build_batch(
        [(None, v) for v in vals],
        base_timestamp=START_MS,
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def test_producer_ids_are_unique_across_restarts() -> None:
    """Producer ids come in blocks recorded in the metadata log: a restarted broker never reuses one."""
    h = BrokerHarness()
    first = {init_pid(h)[0] for _ in range(3)}
    h.broker.shutdown(h.now_ms)
    again = BrokerHarness(store=h.store, now_ms=h.now_ms + 1)
    assert not first & {init_pid(again)[0] for _ in range(3)}


def test_a_retried_batch_gets_its_original_offset_and_is_not_appended() -> None:
    """The broker keeps the last five batches per producer; a duplicate answers their offsets."""
    h = BrokerHarness()
    create(h, "t")
    pid, epoch = init_pid(h)
    first = produce(h, "t", 0, batch(pid, epoch, 0, b"a", b"b"))
    second = produce(h, "t", 0, batch(pid, epoch, 2, b"c"))
    retry = produce(h, "t", 0, batch(pid, epoch, 0, b"a", b"b"))
    assert (first.base_offset, second.base_offset, retry.base_offset) == (0, 2, 0)
    assert retry.error_code == ErrorCode.none
    assert values(fetch(h, "t", 0, 0).records) == [b"a", b"b", b"c"]


def test_sequence_gaps_and_stale_epochs_are_refused() -> None:
    """OUT_OF_ORDER_SEQUENCE_NUMBER for a gap or a new epoch not starting at 0;
    INVALID_PRODUCER_EPOCH for an older epoch; nothing is appended."""
    h = BrokerHarness()
    create(h, "t")
    pid, _ = init_pid(h)
    assert produce(h, "t", 0, batch(pid, 1, 0, b"a")).error_code == ErrorCode.none
    assert produce(h, "t", 0, batch(pid, 1, 5, b"gap")).error_code == ErrorCode.out_of_order_sequence_number
    assert produce(h, "t", 0, batch(pid, 2, 3, b"new")).error_code == ErrorCode.out_of_order_sequence_number
    assert produce(h, "t", 0, batch(pid, 0, 1, b"old")).error_code == ErrorCode.invalid_producer_epoch
    assert produce(h, "t", 0, batch(pid, 1, 1, b"b")).error_code == ErrorCode.none
    assert values(fetch(h, "t", 0, 0).records) == [b"a", b"b"]


def test_producer_state_is_rebuilt_after_a_restart() -> None:
    """Producer state is derived from the log, so a duplicate is still caught after a restart."""
    h = BrokerHarness()
    create(h, "t")
    pid, epoch = init_pid(h)
    produce(h, "t", 0, batch(pid, epoch, 0, b"a"))
    h.broker.shutdown(h.now_ms)
    again = BrokerHarness(store=h.store, now_ms=h.now_ms + 1)
    retry = produce(again, "t", 0, batch(pid, epoch, 0, b"a"))
    assert (retry.error_code, retry.base_offset) == (ErrorCode.none, 0)
    assert (
        produce(again, "t", 0, batch(pid, epoch, 2, b"x")).error_code
        == ErrorCode.out_of_order_sequence_number
    )
    assert values(fetch(again, "t", 0, 0).records) == [b"a"]


def test_a_coordinator_write_is_checked_for_epoch_not_sequence() -> None:
    """TxnOffsetCommit's offsets are written by the group coordinator under the producer's id and
    epoch without sequence numbers (Kafka's coordinator append origin): a bumped epoch after a
    fenced zombie must be accepted, an older epoch still refused. Found by the exactly-once copy
    test through confluent-kafka, which got OUT_OF_ORDER_SEQUENCE_NUMBER from TxnOffsetCommit."""
    from reference_impl.core.producer_state import ProducerStateManager
    from reference_impl.protocol.errors import KafkaError
    from reference_impl.protocol.records import NO_SEQUENCE, BatchHeader, parse_header

    state = ProducerStateManager()

    def header(epoch: int, seq: int) -> BatchHeader:
        raw = build_batch([(None, b"x")], base_timestamp=START_MS, producer_id=7, producer_epoch=epoch,
                          base_sequence=seq, transactional=True)
        return parse_header(raw)

    state.on_data_batch(header(3, NO_SEQUENCE))
    state.validate(header(4, NO_SEQUENCE), check_sequence=False)
    with pytest.raises(KafkaError) as new_epoch:
        state.validate(header(4, NO_SEQUENCE))
    assert new_epoch.value.code == ErrorCode.out_of_order_sequence_number, "a client's new epoch starts at 0"
    with pytest.raises(KafkaError) as stale:
        state.validate(header(2, NO_SEQUENCE), check_sequence=False)
    assert stale.value.code == ErrorCode.invalid_producer_epoch, "an older epoch is always refused"
