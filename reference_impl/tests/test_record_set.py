"""Record-level codec: every codec round-trips, and damage is an error, not a crash."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.protocol.record_set import (
    CODECS,
    CONTROL_COMMIT,
    build_batch,
    build_control_batch,
    control_record_type,
    iter_records,
    offsets_and_values,
    records_of,
)
from reference_impl.protocol.records import InvalidBatchError, crc_is_valid, parse_header

_pairs = st.lists(
    st.tuples(st.none() | st.binary(max_size=40), st.none() | st.binary(max_size=200)),
    min_size=1, max_size=30,
)


@pytest.mark.parametrize("codec", sorted(CODECS.values()))
@given(pairs=_pairs, base=st.integers(0, 2**40), ts=st.integers(0, 2**41))
def test_every_codec_round_trips(codec: int, pairs: list[tuple[bytes | None, bytes | None]],
                                 base: int, ts: int) -> None:
    batch = build_batch(pairs, base_offset=base, base_timestamp=ts, codec=codec)
    header = parse_header(batch)
    assert crc_is_valid(batch, header)
    assert header.compression == codec
    assert header.records_count == len(pairs)
    assert header.last_offset == base + len(pairs) - 1
    got = list(iter_records(batch, header))
    assert [(r.key, r.value) for r in got] == pairs
    assert [r.offset for r in got] == list(range(base, base + len(pairs)))
    assert {r.timestamp for r in got} == {ts}


@pytest.mark.parametrize("codec", sorted(CODECS.values()))
@given(pairs=_pairs, base=st.integers(0, 2**40), prefix=st.binary(max_size=70))
def test_offsets_and_values_read_what_iter_records_reads(
    codec: int, pairs: list[tuple[bytes | None, bytes | None]], base: int, prefix: bytes
) -> None:
    """The publisher's light reader agrees with the full decoder (a null value reads as b""), for a
    batch anywhere in a buffer."""
    batch = build_batch(pairs, base_offset=base, codec=codec)
    buf = prefix + bytes(batch)
    header = parse_header(buf, len(prefix))
    full = [(r.offset, r.value or b"") for r in iter_records(buf, header)]
    assert list(offsets_and_values(buf, header)) == full


def test_timestamps_and_gaps_survive() -> None:
    batch = build_batch([(b"k", b"a"), (b"k", b"b")], base_offset=10, timestamps=[500, 400],
                        offset_deltas=[0, 5])
    header = parse_header(batch)
    assert header.last_offset == 15
    assert header.base_timestamp == 400 and header.max_timestamp == 500
    assert [(r.offset, r.timestamp) for r in records_of(batch)] == [(10, 500), (15, 400)]


def test_control_batch_is_a_commit_marker() -> None:
    batch = build_control_batch(commit=True, producer_id=7, producer_epoch=2,
                                coordinator_epoch=3, timestamp=1)
    header = parse_header(batch)
    assert header.is_control and header.is_transactional
    assert header.producer_id == 7 and header.producer_epoch == 2
    (record,) = iter_records(batch, header)
    assert control_record_type(record) == CONTROL_COMMIT


@pytest.mark.parametrize("codec", [1, 2, 3, 4])
def test_corrupt_compressed_payload_is_invalid(codec: int) -> None:
    batch = bytearray(build_batch([(b"k", b"v" * 100)] * 5, codec=codec))
    for i in range(70, len(batch)):
        batch[i] ^= 0x5A
    header = parse_header(batch)
    with pytest.raises(InvalidBatchError):
        list(iter_records(batch, header))


def test_record_count_mismatch_is_invalid() -> None:
    batch = bytearray(build_batch([(b"k", b"v")] * 3))
    batch[57:61] = (4).to_bytes(4, "big")  # recordsCount says 4, three are there
    with pytest.raises(InvalidBatchError):
        list(iter_records(batch, parse_header(batch)))
