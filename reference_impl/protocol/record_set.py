"""Records inside a v2 batch: compression codecs, varint record layout, batch building.

The hot path stops at batch headers (:mod:`.records`) and walks records without
objects (:mod:`.record_walk`). This module builds a :class:`Record` per record,
for the features that need them: timestamp lookups, compaction, control batches
(transaction markers), ``dump-log``, the harness's raw client reading fetch
answers and building its own batches. Compressed batches are read through the
bounded, streaming inflation of :mod:`.inflate`, a chunk at a time.

Record layout (Kafka's ``DefaultRecord``), after the batch header::

    length          varint   bytes after this field
    attributes      int8     unused, 0
    timestampDelta  varlong  from the batch's baseTimestamp
    offsetDelta     varint   from the batch's baseOffset
    keyLength       varint   -1 for a null key
    key             bytes
    valueLength     varint   -1 for a null value (a tombstone)
    value           bytes
    headersCount    varint
    headers         [keyLength varint, key, valueLength varint, value]

Codecs are Kafka's: gzip; snappy in the xerial framing the Java client writes
(raw snappy blocks are also read, as brokers accept both); LZ4 frame; zstd
frame (:mod:`.inflate` reads them).
"""

from __future__ import annotations

import gzip
import struct
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

import cramjam
from crc32c import crc32c

from .inflate import READ_MAX_MESSAGE_BYTES, inflate, inflate_chunks, inflation_bound
from .records import (
    COMPRESSION_MASK,
    CONTROL_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    MAGIC_V2,
    NO_PARTITION_LEADER_EPOCH,
    NO_PRODUCER_EPOCH,
    NO_PRODUCER_ID,
    NO_SEQUENCE,
    TIMESTAMP_TYPE_BIT,
    TRANSACTIONAL_BIT,
    BatchHeader,
    InvalidBatchError,
    parse_header,
)

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4
CODECS = {"none": NONE, "gzip": GZIP, "snappy": SNAPPY, "lz4": LZ4, "zstd": ZSTD}

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER = struct.Struct(">8sii")
_I32 = struct.Struct(">i")
_HEADER = struct.Struct(">qiibIhiqqqhii")

CONTROL_ABORT = 0
CONTROL_COMMIT = 1


@dataclass(frozen=True, slots=True)
class Record:
    """One record, with its absolute offset and timestamp."""

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes | None], ...] = ()


# -- compression -------------------------------------------------------------------------------


def compress(codec: int, data: bytes) -> bytes:
    if codec == NONE:
        return data
    if codec == GZIP:
        return gzip.compress(data, compresslevel=6)
    if codec == SNAPPY:
        block = bytes(cramjam.snappy.compress_raw(data))
        return _XERIAL_HEADER.pack(_XERIAL_MAGIC, 1, 1) + _I32.pack(len(block)) + block
    if codec == LZ4:
        return bytes(cramjam.lz4.compress(data))
    if codec == ZSTD:
        return bytes(cramjam.zstd.compress(data))
    raise ValueError(f"unknown compression codec {codec}")


# -- varints -----------------------------------------------------------------------------------


def _read_varint(buf: bytes, pos: int) -> tuple[int, int]:
    """A zigzag varint (Kafka's ``ByteUtils.readVarint``/``readVarlong``)."""
    if pos < len(buf):  # most varints in a record are one byte: lengths, small deltas, counts
        b = buf[pos]
        if not b & 0x80:
            return (b >> 1) ^ -(b & 1), pos + 1
    raw = 0
    shift = 0
    while True:
        if pos >= len(buf):
            raise InvalidBatchError("record truncated inside a varint")
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if not b & 0x80:
            break
        shift += 7
        if shift > 63:
            raise InvalidBatchError("varint longer than 10 bytes")
    return (raw >> 1) ^ -(raw & 1), pos


def _write_varint(value: int, out: bytearray) -> None:
    raw = (value << 1) ^ (value >> 63)
    raw &= (1 << 64) - 1
    while raw & ~0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)


def _read_bytes(buf: bytes, pos: int) -> tuple[bytes | None, int]:
    length, pos = _read_varint(buf, pos)
    if length < 0:
        return None, pos
    end = pos + length
    if end > len(buf):
        raise InvalidBatchError("record field runs past the end of the batch")
    return buf[pos:end], end


# -- reading -----------------------------------------------------------------------------------


def _payload(buf: bytes | bytearray | memoryview, header: BatchHeader) -> memoryview:
    return memoryview(buf)[header.position + HEADER_SIZE : header.position + header.size]


def batch_records_bytes(
    buf: bytes | bytearray | memoryview, header: BatchHeader, max_message_bytes: int = READ_MAX_MESSAGE_BYTES
) -> bytes:
    """The decompressed record section of one batch, at most :func:`.inflate.inflation_bound` bytes."""
    bound = inflation_bound(header.records_count, max_message_bytes)
    return inflate(header.compression, _payload(buf, header), bound)


def _record_bodies(
    buf: bytes | bytearray | memoryview, header: BatchHeader, max_message_bytes: int
) -> Iterator[bytes]:
    """Each record's bytes after its length prefix, as the batch's (bounded) inflation produces them.

    Holds one chunk of output and the record being cut from it, never the whole
    inflated batch. Raises :class:`InvalidBatchError` for a record that runs past
    the end, fewer records than the header counts, or bytes after the last one.
    """
    chunks = inflate_chunks(
        header.compression, _payload(buf, header), inflation_bound(header.records_count, max_message_bytes)
    )
    pending = b""
    pos = 0
    exhausted = False

    def fill(need: int) -> bool:
        """Have ``need`` bytes from ``pos`` on, pulling chunks; False when the batch ends first."""
        nonlocal pending, pos, exhausted
        while len(pending) - pos < need and not exhausted:
            chunk = next(chunks, None)
            if chunk is None:
                exhausted = True
            else:
                pending = pending[pos:] + chunk
                pos = 0
        return len(pending) - pos >= need

    for index in range(header.records_count):
        fill(10)
        if pos >= len(pending):
            raise InvalidBatchError(f"the batch ends after {index} of its {header.records_count} records")
        length, after = _read_varint(pending, pos)
        prefix = after - pos
        if length < 0 or not fill(prefix + length):  # fill may move what is pending to offset 0
            raise InvalidBatchError("record length runs past the end of the batch")
        body = pos + prefix
        yield pending[body : body + length]
        pos = body + length
    if fill(1):
        raise InvalidBatchError(f"bytes follow the last of {header.records_count} records")


def iter_records(
    buf: bytes | bytearray | memoryview, header: BatchHeader, max_message_bytes: int = READ_MAX_MESSAGE_BYTES
) -> Iterator[Record]:
    """Every record of the batch at ``header.position`` in ``buf`` (decompressing, bounded, as it goes).

    In a LogAppendTime batch every record's timestamp is the batch's max
    timestamp (the broker's time), as Kafka's ``DefaultRecordBatch`` reads it.

    Checks what Kafka's record readers check: the count matches the header,
    offset deltas increase from 0 within ``lastOffsetDelta``, and each record's
    declared length is what it holds. This builds a :class:`Record` per record,
    for readers off the produce path (fetch answers, compaction, dump-log); the
    produce path walks records without objects (:mod:`.record_walk`).
    """
    previous_delta = -1
    for data in _record_bodies(buf, header, max_message_bytes):
        end = len(data)
        if end < 1:
            raise InvalidBatchError("record without attributes")
        pos = 1  # attributes
        ts_delta, pos = _read_varint(data, pos)
        offset_delta, pos = _read_varint(data, pos)
        if offset_delta <= previous_delta or offset_delta > header.last_offset_delta:
            raise InvalidBatchError(f"record offset delta {offset_delta} out of order or range")
        previous_delta = offset_delta
        key, pos = _read_bytes(data, pos)
        value, pos = _read_bytes(data, pos)
        count, pos = _read_varint(data, pos)
        if count < 0 or count > end - pos:
            raise InvalidBatchError(f"record header count {count} is invalid")
        headers: list[tuple[str, bytes | None]] = []
        for _h in range(count):
            hkey, pos = _read_bytes(data, pos)
            hvalue, pos = _read_bytes(data, pos)
            if hkey is None:
                raise InvalidBatchError("record header with a null key")
            headers.append((hkey.decode(errors="replace"), hvalue))
        if pos != end:
            raise InvalidBatchError(f"record declares {end} bytes but holds {pos}")
        timestamp = header.max_timestamp if header.is_log_append_time else header.base_timestamp + ts_delta
        yield Record(header.base_offset + offset_delta, timestamp, key, value, tuple(headers))


def offsets_and_values(buf: bytes, header: BatchHeader) -> tuple[tuple[int, bytes], ...]:
    """(offset, value, b"" for null) of each record of a batch already validated when it was
    appended: what a reader of its own committed log needs (the metadata publisher), without the
    checks, keys, headers and timestamps :func:`iter_records` decodes. Each record is skipped to its
    declared end; an uncompressed batch is read in place."""
    if header.compression == NONE:
        data, pos = buf, header.position + HEADER_SIZE
    else:
        data, pos = batch_records_bytes(buf, header), 0
    out = []
    for _ in range(header.records_count):
        length, pos = _read_varint(data, pos)
        end = pos + length
        pos += 1  # attributes
        _ts_delta, pos = _read_varint(data, pos)
        offset_delta, pos = _read_varint(data, pos)
        key_length, pos = _read_varint(data, pos)
        pos += max(key_length, 0)
        value_length, pos = _read_varint(data, pos)
        value = data[pos : pos + value_length] if value_length > 0 else b""
        out.append((header.base_offset + offset_delta, bytes(value)))
        pos = end
    return tuple(out)


def control_record_type(record: Record) -> int:
    """COMMIT (1) or ABORT (0) from a control record's key (version int16, type int16)."""
    if record.key is None or len(record.key) < 4:
        raise InvalidBatchError("control record without a 4-byte key")
    return int(struct.unpack_from(">hh", record.key)[1])


# -- building ----------------------------------------------------------------------------------


def encode_record(
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[tuple[str, bytes | None]] = (),
) -> bytes:
    body = bytearray(b"\x00")
    _write_varint(timestamp_delta, body)
    _write_varint(offset_delta, body)
    for field in (key, value):
        if field is None:
            _write_varint(-1, body)
        else:
            _write_varint(len(field), body)
            body += field
    header_list = list(headers)
    _write_varint(len(header_list), body)
    for hkey, hvalue in header_list:
        raw = hkey.encode()
        _write_varint(len(raw), body)
        body += raw
        if hvalue is None:
            _write_varint(-1, body)
        else:
            _write_varint(len(hvalue), body)
            body += hvalue
    out = bytearray()
    _write_varint(len(body), out)
    return bytes(out + body)


def build_batch(
    records: Sequence[tuple[bytes | None, bytes | None] | Record],
    *,
    base_offset: int = 0,
    base_timestamp: int = 0,
    timestamps: Sequence[int] | None = None,
    codec: int = NONE,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
    transactional: bool = False,
    control: bool = False,
    log_append_time: bool = False,
    offset_deltas: Sequence[int] | None = None,
) -> bytes:
    """A whole v2 batch, CRC included: what a producer sends.

    ``records`` are (key, value) pairs or :class:`Record` values (whose
    offsets and timestamps are then taken relative to the batch's base).
    ``offset_deltas`` lets a caller build a batch with gaps, as compaction does.
    """
    items: list[tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes | None], ...]]] = []
    for i, rec in enumerate(records):
        if isinstance(rec, Record):
            items.append((rec.offset - base_offset, rec.timestamp, rec.key, rec.value, rec.headers))
        else:
            key, value = rec
            delta = offset_deltas[i] if offset_deltas is not None else i
            ts = timestamps[i] if timestamps is not None else base_timestamp
            items.append((delta, ts, key, value, ()))
    if not items:
        raise ValueError("a record batch holds at least one record")
    first_ts = min(ts for _d, ts, *_ in items)
    max_ts = max(ts for _d, ts, *_ in items)
    raw = b"".join(encode_record(d, ts - first_ts, k, v, h) for d, ts, k, v, h in items)
    payload = compress(codec, raw)
    attributes = codec & COMPRESSION_MASK
    if log_append_time:
        attributes |= TIMESTAMP_TYPE_BIT
    if transactional:
        attributes |= TRANSACTIONAL_BIT
    if control:
        attributes |= CONTROL_BIT
    return seal_batch(
        payload,
        records_count=len(items),
        last_offset_delta=max(d for d, *_ in items),
        attributes=attributes,
        base_timestamp=first_ts,
        max_timestamp=max_ts,
        base_offset=base_offset,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def seal_batch(
    payload: bytes,
    *,
    records_count: int,
    last_offset_delta: int,
    attributes: int = 0,
    base_timestamp: int = 0,
    max_timestamp: int = 0,
    base_offset: int = 0,
    producer_id: int = NO_PRODUCER_ID,
    producer_epoch: int = NO_PRODUCER_EPOCH,
    base_sequence: int = NO_SEQUENCE,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A v2 batch around ``payload`` (the record section, already compressed as ``attributes``
    says), with a valid CRC whatever its header claims: what a producer sends, and what a test
    sends to see a broker refuse a batch for its records rather than its checksum."""
    batch_length = HEADER_SIZE - LOG_OVERHEAD + len(payload)
    head = bytearray(
        _HEADER.pack(
            base_offset,
            batch_length,
            partition_leader_epoch,
            MAGIC_V2,
            0,
            attributes,
            last_offset_delta,
            base_timestamp,
            max_timestamp,
            producer_id,
            producer_epoch,
            base_sequence,
            records_count,
        )
    )
    body = bytes(head[21:]) + payload
    struct.pack_into(">I", head, 17, crc32c(body))
    return bytes(head[:21]) + body


def build_control_batch(
    *,
    commit: bool,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int,
    timestamp: int,
    base_offset: int = 0,
    partition_leader_epoch: int = NO_PARTITION_LEADER_EPOCH,
) -> bytes:
    """A transaction marker: one control record, key (version 0, type), value (version 0, epoch)."""
    key = struct.pack(">hh", 0, CONTROL_COMMIT if commit else CONTROL_ABORT)
    value = struct.pack(">hi", 0, coordinator_epoch)
    return build_batch(
        [(key, value)],
        base_offset=base_offset,
        base_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        transactional=True,
        control=True,
        partition_leader_epoch=partition_leader_epoch,
    )


def records_of(buf: bytes | bytearray | memoryview) -> Iterator[Record]:
    """Every record of every batch in ``buf`` (a fetch answer, a segment's bytes)."""
    position = 0
    while position < len(buf):
        header = parse_header(buf, position)
        if position + header.size > len(buf):
            return  # a partial batch at the end of a fetch answer is allowed
        yield from iter_records(buf, header)
        position += header.size
