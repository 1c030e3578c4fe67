"""Record batches (magic v2) at the header level: parse, check CRC32C, rewrite.

The produce hot path never walks individual records. A batch's 61-byte header
says everything the broker needs: where it starts and ends, how many offsets
it spans, its timestamps, producer id/epoch/sequence, and whether it is
compressed, transactional or a control batch. The CRC covers the bytes from
``attributes`` to the end, so the broker can rewrite ``baseOffset`` and
``partitionLeaderEpoch`` (the first 17 bytes but for ``batchLength`` and
``magic``) without recomputing it.

Layout (big-endian), from Kafka's ``DefaultRecordBatch``::

    0  baseOffset            int64
    8  batchLength           int32   bytes after this field
    12 partitionLeaderEpoch  int32
    16 magic                 int8    = 2
    17 crc                   uint32  CRC32C of bytes [21, end)
    21 attributes            int16   bits 0-2 codec, 3 timestamp type, 4 transactional, 5 control
    23 lastOffsetDelta       int32
    27 baseTimestamp         int64
    35 maxTimestamp          int64
    43 producerId            int64
    51 producerEpoch         int16
    53 baseSequence          int32
    57 recordsCount          int32
    61 records...
"""

from __future__ import annotations

import struct
from collections.abc import Iterator
from typing import NamedTuple

from crc32c import crc32c

HEADER_SIZE = 61
LOG_OVERHEAD = 12  # baseOffset + batchLength: the part not counted in batchLength
MAGIC_V2 = 2

_HEADER = struct.Struct(">qiibIhiqqqhii")
_OFFSET_LENGTH_EPOCH_MAGIC = struct.Struct(">qiib")
_BASE_OFFSET = struct.Struct(">q")
_EPOCH = struct.Struct(">i")

COMPRESSION_MASK = 0x07
TIMESTAMP_TYPE_BIT = 0x08
TRANSACTIONAL_BIT = 0x10
CONTROL_BIT = 0x20
DELETE_HORIZON_BIT = 0x40

NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1
NO_PARTITION_LEADER_EPOCH = -1
NO_TIMESTAMP = -1

CODEC_NAMES = {0: "none", 1: "gzip", 2: "snappy", 3: "lz4", 4: "zstd"}


class InvalidBatchError(ValueError):
    """Bytes that are not a well-formed v2 record batch.

    ``corrupt`` distinguishes a CRC mismatch or torn batch (CORRUPT_MESSAGE)
    from a structurally invalid one (INVALID_RECORD).
    """

    def __init__(self, message: str, *, corrupt: bool = False, position: int = 0) -> None:
        super().__init__(message)
        self.corrupt = corrupt
        self.position = position


class BatchHeader(NamedTuple):
    """The fixed header of one record batch, located at ``position`` in a buffer.

    A named tuple rather than a frozen dataclass: every append, read and fetch parses headers, and
    building a tuple costs a fraction of a frozen dataclass's fourteen guarded assignments."""

    position: int
    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    records_count: int

    @property
    def size(self) -> int:
        """Bytes the batch occupies, header included."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        return self.attributes & COMPRESSION_MASK

    @property
    def is_log_append_time(self) -> bool:
        return bool(self.attributes & TIMESTAMP_TYPE_BIT)

    @property
    def is_transactional(self) -> bool:
        return bool(self.attributes & TRANSACTIONAL_BIT)

    @property
    def is_control(self) -> bool:
        return bool(self.attributes & CONTROL_BIT)

    @property
    def has_producer_id(self) -> bool:
        return self.producer_id >= 0

    @property
    def last_sequence(self) -> int:
        if self.base_sequence < 0:
            return NO_SEQUENCE
        return (self.base_sequence + self.last_offset_delta) % 2**31


def parse_header(buf: bytes | bytearray | memoryview, position: int = 0) -> BatchHeader:
    """Read the header at ``position``; checks only that 61 bytes and magic 2 are there."""
    if len(buf) - position < HEADER_SIZE:
        if len(buf) - position >= 17 and buf[position + 16] != MAGIC_V2:
            raise InvalidBatchError(f"unsupported record batch magic {buf[position + 16]}", position=position)
        raise InvalidBatchError(
            f"{len(buf) - position} bytes left, a batch header needs {HEADER_SIZE}",
            corrupt=True,
            position=position,
        )
    fields = _HEADER.unpack_from(buf, position)
    if fields[3] != MAGIC_V2:
        raise InvalidBatchError(f"unsupported record batch magic {fields[3]}", position=position)
    return BatchHeader(position, *fields)


def iter_headers(buf: bytes | bytearray | memoryview, position: int = 0) -> Iterator[BatchHeader]:
    """Every batch header in ``buf`` from ``position``, checking lengths but not CRCs.

    Raises :class:`InvalidBatchError` (``corrupt=True``) at a torn or
    impossible length, with the position of the first bad byte.
    """
    end = len(buf)
    while position < end:
        header = parse_header(buf, position)
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD:
            raise InvalidBatchError(
                f"batch length {header.batch_length} is below the header size",
                corrupt=True,
                position=position,
            )
        if position + header.size > end:
            raise InvalidBatchError(
                f"batch at {position} declares {header.size} bytes, only {end - position} remain",
                corrupt=True,
                position=position,
            )
        yield header
        position += header.size


def compute_crc(buf: bytes | bytearray | memoryview, header: BatchHeader) -> int:
    start = header.position + 21
    return int(crc32c(memoryview(buf)[start : header.position + header.size]))


def crc_is_valid(buf: bytes | bytearray | memoryview, header: BatchHeader) -> bool:
    return compute_crc(buf, header) == header.crc


def set_base_offset(buf: bytearray, header: BatchHeader, base_offset: int) -> None:
    """Rewrite baseOffset in place (outside the CRC)."""
    _BASE_OFFSET.pack_into(buf, header.position, base_offset)


def set_partition_leader_epoch(buf: bytearray, header: BatchHeader, epoch: int) -> None:
    """Rewrite partitionLeaderEpoch in place (outside the CRC)."""
    _EPOCH.pack_into(buf, header.position + 12, epoch)
