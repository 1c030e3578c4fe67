"""Decompression is bounded and streaming for every codec (issue 17, item 3).

A 4 KiB zstd batch that inflated to 1 GiB took the broker to 2.1 GB RSS. Here bombs of every codec
(256 MiB of zeros in a few KiB to a few MiB) are refused after at most the bound's worth of output,
with the memory Python holds during the refusal measured by ``tracemalloc``. On the produce path a
bomb of zeros is INVALID_RECORD, as Kafka answers it: Kafka's validator reads ``count`` records from
the decompression stream and then one more byte, and refuses the batch with "Incorrect declared
batch size, records still remaining in file" (``clients/src/main/java/org/apache/kafka/common/
record/DefaultRecordBatch.java``, ``RecordIterator.next``). A bomb that is a well-formed record
too large for the topic is MESSAGE_TOO_LARGE, the reference's own bound (Kafka streams it through).
"""

from __future__ import annotations

import functools
import struct
import tracemalloc
from collections.abc import Callable

import cramjam
import pytest

from reference_impl import defects
from reference_impl.core.validation import TopicLimits, validate_produce_records
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.inflate import (
    CHUNK_BYTES,
    InflatedTooLargeError,
    inflate,
    inflate_chunks,
    inflation_bound,
)
from reference_impl.protocol.record_set import (
    GZIP,
    LZ4,
    SNAPPY,
    ZSTD,
    build_batch,
    compress,
    encode_record,
    iter_records,
    seal_batch,
)
from reference_impl.protocol.records import InvalidBatchError, parse_header

BOMB_BYTES = 256 << 20
HELD_BOUND = 8 << 20
"""What validating or reading a bomb may hold in Python objects: a few chunks and one record, never
the inflated payload (the bombs here inflate to 32 times this)."""
CODECS = {"gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}
NOW = 1_700_000_000_000


def _xerial(block: bytes, repeat: int) -> bytes:
    """Xerial snappy framing of ``repeat`` copies of one raw block (snappy's own ratio is ~20:1 at
    best, so a bomb is many small blocks)."""
    framed = struct.pack(">i", len(block)) + block
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + framed * repeat


@functools.cache
def bomb(codec: int) -> bytes:
    """BOMB_BYTES of zeros, compressed (built once per run)."""
    if codec == SNAPPY:
        block = 1 << 16
        return _xerial(bytes(cramjam.snappy.compress_raw(bytes(block))), BOMB_BYTES // block)
    return compress(codec, bytes(BOMB_BYTES))


def _peak_held(action: Callable[[], object]) -> tuple[int, BaseException | None]:
    """Peak bytes of Python allocations while ``action`` runs, and what it raised."""
    tracemalloc.start()
    raised: BaseException | None = None
    try:
        action()
    except (KafkaError, InvalidBatchError) as exc:
        raised = exc
    finally:
        _current, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    return peak, raised


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_inflation_stops_at_the_bound(codec: int) -> None:
    """inflate_chunks hands out at most CHUNK_BYTES at a time and stops just past the bound."""
    limit = 4 << 20
    seen = 0
    with pytest.raises(InflatedTooLargeError):
        for chunk in inflate_chunks(codec, bomb(codec), limit):
            assert len(chunk) <= CHUNK_BYTES
            seen += len(chunk)
    assert limit - CHUNK_BYTES <= seen <= limit


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_a_bomb_of_zeros_is_refused_on_produce_with_memory_bounded(codec: int) -> None:
    """Produce of a 1-record batch whose payload inflates to 256 MiB of zeros: INVALID_RECORD after the
    first chunk (the walk finds the record malformed), holding a few chunks at most."""
    batch = seal_batch(bomb(codec), records_count=1, last_offset_delta=0, attributes=codec,
                       base_timestamp=NOW, max_timestamp=NOW)
    limits = TopicLimits.from_configs({"max.message.bytes": str(len(batch) + 100)})
    peak, raised = _peak_held(lambda: validate_produce_records(batch, limits, NOW))
    assert isinstance(raised, KafkaError) and raised.code == ErrorCode.invalid_record, raised
    assert peak < HELD_BOUND + 2 * len(batch), f"held {peak} bytes"


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_a_well_formed_record_too_large_for_the_topic_is_refused(codec: int) -> None:
    """One valid record whose value inflates to 4 MiB, on a topic whose max.message.bytes is 1 MiB:
    MESSAGE_TOO_LARGE from its length prefix, before its value is inflated."""
    batch = build_batch([(b"k", bytes(4 << 20))], codec=codec, base_timestamp=NOW)
    limits = TopicLimits.from_configs({})
    peak, raised = _peak_held(lambda: validate_produce_records(batch, limits, NOW))
    assert isinstance(raised, KafkaError) and raised.code == ErrorCode.message_too_large, raised
    assert peak < HELD_BOUND, f"held {peak} bytes"


def test_many_records_past_the_batch_bound_are_refused() -> None:
    """Well-formed 1 MiB records, more of them than the bound allows (64 x max.message.bytes): refused
    with MESSAGE_TOO_LARGE once the output passes it, holding about one record."""
    value = bytes((1 << 20) - 64)
    count = 80
    section = b"".join(encode_record(i, 0, b"k", value) for i in range(count))
    batch = seal_batch(compress(ZSTD, section), records_count=count, last_offset_delta=count - 1,
                       attributes=ZSTD, base_timestamp=NOW, max_timestamp=NOW)
    limits = TopicLimits.from_configs({})
    assert len(section) > inflation_bound(count, limits.max_message_bytes)
    peak, raised = _peak_held(lambda: validate_produce_records(batch, limits, NOW))
    assert isinstance(raised, KafkaError) and raised.code == ErrorCode.message_too_large, raised
    assert peak < HELD_BOUND, f"held {peak} bytes"


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_readers_refuse_a_bomb_with_memory_bounded(codec: int) -> None:
    """The fetch-side and log readers (iter_records: compaction, dump-log, the harness's fetch
    readers) read through the same bounded path: a bomb is refused, not held."""
    batch = seal_batch(bomb(codec), records_count=1, last_offset_delta=0, attributes=codec)
    header = parse_header(batch)
    peak, raised = _peak_held(lambda: list(iter_records(batch, header)))
    assert isinstance(raised, InvalidBatchError)
    assert peak < HELD_BOUND + 2 * len(batch), f"held {peak} bytes"


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_seeded_defect_inflates_whole(codec: int) -> None:
    """With defects.UNBOUNDED_DECOMPRESSION the payload is inflated whole, as before the fix: the
    memory bound above is what catches it."""
    batch = seal_batch(bomb(codec), records_count=1, last_offset_delta=0, attributes=codec,
                       base_timestamp=NOW, max_timestamp=NOW)
    limits = TopicLimits.from_configs({"max.message.bytes": str(len(batch) + 100)})
    with defects.seeded(defects.UNBOUNDED_DECOMPRESSION):
        peak, raised = _peak_held(lambda: validate_produce_records(batch, limits, NOW))
    assert isinstance(raised, KafkaError)
    assert peak >= BOMB_BYTES


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_ordinary_batches_round_trip_through_the_chunks(codec: int) -> None:
    """Records spanning chunk edges (values larger than a chunk and tiny ones) read back whole."""
    pairs = [(b"k%d" % i, bytes([i % 251]) * (i * 9973 % (3 * CHUNK_BYTES))) for i in range(40)]
    batch = build_batch(pairs, codec=codec, base_timestamp=NOW)
    assert [(r.key, r.value) for r in iter_records(batch, parse_header(batch))] == pairs
    validate_produce_records(batch, TopicLimits.from_configs({"max.message.bytes": str(8 << 20)}), NOW)


@pytest.mark.parametrize("codec", CODECS.values(), ids=list(CODECS))
def test_corrupt_payloads_are_invalid(codec: int) -> None:
    """Bytes the codec cannot read are an InvalidBatchError (INVALID_RECORD on produce), never another
    exception type; a payload cut short is refused on produce too."""
    with pytest.raises(InvalidBatchError):
        inflate(codec, b"\x00garbage" * 20, 1 << 20)
    batch = build_batch([(b"k", b"record %d " % i * 20) for i in range(50)], codec=codec, base_timestamp=NOW)
    header = parse_header(batch)
    cut = seal_batch(batch[61 : 61 + (header.size - 61) // 2], records_count=50, last_offset_delta=49,
                     attributes=codec, base_timestamp=NOW, max_timestamp=NOW)
    with pytest.raises(KafkaError) as refused:  # zstd's reader ends a cut frame quietly; the walk sees it
        validate_produce_records(cut, TopicLimits.from_configs({}), NOW)
    assert refused.value.code == ErrorCode.invalid_record


def test_a_snappy_block_declaring_more_than_the_bound_is_not_inflated() -> None:
    """Xerial snappy: each block's declared length is checked before the block is inflated."""
    block = bytes(cramjam.snappy.compress_raw(bytes(1 << 20)))
    with pytest.raises(InflatedTooLargeError):
        inflate(SNAPPY, _xerial(block, 1), 1 << 19)
