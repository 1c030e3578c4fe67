"""Bounded, streaming decompression of a record batch's payload, for every codec Kafka uses.

A 4 KiB zstd batch can inflate to gigabytes. Nothing here inflates a payload
whole: :func:`inflate_chunks` yields the output in chunks of at most
``chunk_bytes``, and raises :class:`InflatedTooLargeError` as soon as the output
passes ``limit``, so a caller that consumes each chunk before asking for the next
(the record walk of the produce path, :func:`.record_set.iter_records`) holds one
chunk at a time and stops a bomb after ``limit`` bytes of work, whatever the
batch claims.

Per codec (Kafka's ``Compression`` classes and their streams):

* gzip: ``zlib.decompressobj`` with ``max_length``; concatenated members are
  read in turn as ``GZIPInputStream`` reads them, and what follows the last
  member is ignored as Java ignores it.
* snappy: the xerial framing the Java client writes (magic, version, then
  blocks of int32 length + raw snappy), or a single raw snappy block (what
  librdkafka sends). A raw block declares its inflated length in a varint
  before its data; that length is checked against what is left of ``limit``
  *before* the block is inflated, so a block is inflated only when it fits,
  and the output is then handed on in ``chunk_bytes`` slices.
* lz4: the ``lz4`` package's frame decompressor with ``max_length``; its
  buffers are bounded by the frame's block size (4 MiB at most).
* zstd: the ``zstandard`` package's stream reader, ``read(chunk_bytes)`` at a
  time, with the decoder's window capped at :data:`ZSTD_MAX_WINDOW` so a frame
  cannot make the decoder allocate more than that. The reader ends quietly on
  a truncated frame; the record walk then finds the records missing.

Corrupt input raises :class:`.records.InvalidBatchError`; the produce path
answers it INVALID_RECORD.
"""

from __future__ import annotations

import zlib
from collections.abc import Iterator

import cramjam
import lz4.frame
import zstandard

from reference_impl import defects

from .records import InvalidBatchError

NONE, GZIP, SNAPPY, LZ4, ZSTD = 0, 1, 2, 3, 4

CHUNK_BYTES = 64 * 1024
"""Output handed on at a time: large enough that the per-chunk overhead vanishes, small enough to hold."""

ZSTD_MAX_WINDOW = 1 << 23
"""8 MiB: the window of zstd levels up to 19 (what producers use; level 3 is the default of the
Java client and librdkafka and needs 2 MiB at most); only the ``--ultra`` levels 20-22 need more."""

_XERIAL_MAGIC = b"\x82SNAPPY\x00"
_XERIAL_HEADER_BYTES = 16  # magic, int32 version, int32 compatible version
_GZIP_MAGIC = b"\x1f\x8b"


DEFAULT_MAX_MESSAGE_BYTES = 1024 * 1024 + 12
"""Kafka's default ``message.max.bytes`` (and a topic's ``max.message.bytes``)."""

INFLATION_RATIO_MAX = 64
"""A compressed batch may inflate to at most this many records of ``max.message.bytes``
(64 MiB at the default); see :func:`inflation_bound`."""

READ_MAX_MESSAGE_BYTES = 16 * 1024 * 1024
"""The ``max.message.bytes`` readers of stored or fetched batches assume when they do not know the
topic's: 16 times Kafka's default, so data a broker accepted under a raised limit still reads back,
while a bomb in a fetch answer or a damaged segment costs a reader at most 1 GiB of inflation, a
chunk at a time."""


def inflation_bound(records_count: int, max_message_bytes: int = READ_MAX_MESSAGE_BYTES) -> int:
    """The most a compressed batch of ``records_count`` records may inflate to.

    Each record may be as large as ``max.message.bytes``: a larger record could
    not be produced uncompressed, and Kafka's clients refuse to send one (the
    Java producer checks a record's uncompressed size against
    ``max.request.size``). The whole batch may inflate to at most
    :data:`INFLATION_RATIO_MAX` such records: text and JSON compress 3 to 10
    times, repetitive logs 20 to 30 times, and at the default limit this lets a
    1 MiB batch hold 64 MiB, about 0.1 s of zstd or lz4 and 0.3 s of gzip. On
    the produce path a batch past it is refused with MESSAGE_TOO_LARGE, which
    the Java producer answers by splitting the batch and sending the halves: a
    legitimate batch gets through, a bomb costs the broker at most this many
    bytes of work. Kafka has no such bound (it streams any size through its
    validator).
    """
    return max(1, min(records_count, INFLATION_RATIO_MAX)) * max_message_bytes


class InflatedTooLargeError(InvalidBatchError):
    """The payload inflates past the caller's bound; decompression stopped there."""


def _too_large(codec: int, limit: int) -> InflatedTooLargeError:
    return InflatedTooLargeError(f"{_name(codec)} payload inflates past {limit} bytes")


def _name(codec: int) -> str:
    return {GZIP: "gzip", SNAPPY: "snappy", LZ4: "lz4", ZSTD: "zstd"}.get(codec, str(codec))


def inflate_chunks(
    codec: int, data: bytes | bytearray | memoryview, limit: int, chunk_bytes: int = CHUNK_BYTES
) -> Iterator[bytes]:
    """The decompressed payload, in chunks of at most ``chunk_bytes``; never more than ``limit`` bytes.

    Raises :class:`InflatedTooLargeError` once the output would pass ``limit`` (after handing on
    the bytes up to it, so that a caller finding an invalid record there can stop first),
    :class:`InvalidBatchError` for a payload the codec cannot read (truncated,
    corrupt, an unknown codec).
    """
    if defects.enabled(defects.UNBOUNDED_DECOMPRESSION) and codec != NONE:
        yield _old_inflate_whole(codec, data)
        return
    if codec == NONE:  # already held whole by the caller: chunked only so that readers see one shape
        for start in range(0, len(data), chunk_bytes):
            yield bytes(data[start : start + chunk_bytes])
        return
    readers = {GZIP: _gzip, SNAPPY: _snappy, LZ4: _lz4, ZSTD: _zstd}
    reader = readers.get(codec)
    if reader is None:
        raise InvalidBatchError(f"unknown compression codec {codec}")
    produced = 0
    try:
        for chunk in reader(bytes(data), limit, chunk_bytes):
            produced += len(chunk)
            if produced > limit:  # hand on what fits first: the record walk may find it invalid there
                yield chunk[: len(chunk) - (produced - limit)]
                raise _too_large(codec, limit)
            if chunk:
                yield chunk
    except InvalidBatchError:
        raise
    except Exception as exc:  # each codec library raises its own error types
        raise InvalidBatchError(f"cannot decompress ({_name(codec)}): {exc}") from None


def inflate(codec: int, data: bytes | bytearray | memoryview, limit: int) -> bytes:
    """The whole decompressed payload, at most ``limit`` bytes (for callers that need it at once)."""
    return b"".join(inflate_chunks(codec, data, limit))


def _gzip(data: bytes, limit: int, chunk_bytes: int) -> Iterator[bytes]:
    pending = data
    while True:
        decoder = zlib.decompressobj(wbits=47)  # a gzip (or zlib) header
        while not decoder.eof:
            before = len(pending)
            out = decoder.decompress(pending, chunk_bytes)
            pending = decoder.unconsumed_tail
            if out:
                yield out
            elif len(pending) == before and not decoder.eof:
                raise InvalidBatchError("truncated gzip payload")
        pending = decoder.unused_data
        if not pending.startswith(_GZIP_MAGIC):
            return  # GZIPInputStream ignores what follows the last member


def _snappy(data: bytes, limit: int, chunk_bytes: int) -> Iterator[bytes]:
    if not data.startswith(_XERIAL_MAGIC):
        yield from _raw_snappy_block(memoryview(data), limit, limit, chunk_bytes)
        return
    view = memoryview(data)
    pos = _XERIAL_HEADER_BYTES
    left = limit
    if len(data) < pos:
        raise InvalidBatchError("truncated xerial snappy header")
    while pos < len(data):
        if pos + 4 > len(data):
            raise InvalidBatchError("truncated xerial snappy block length")
        size = int.from_bytes(view[pos : pos + 4], "big", signed=True)
        pos += 4
        if size < 0 or size > len(data) - pos:
            raise InvalidBatchError("xerial snappy block runs past the end of the batch")
        for out in _raw_snappy_block(view[pos : pos + size], left, limit, chunk_bytes):
            left -= len(out)
            yield out
        pos += size


def _raw_snappy_block(block: memoryview, left: int, limit: int, chunk_bytes: int) -> Iterator[bytes]:
    """One raw snappy block, inflated only after its declared length is found within the ``left``
    bytes that ``limit`` still allows."""
    declared, shift, pos = 0, 0, 0
    while True:
        if pos >= len(block) or pos >= 5:
            raise InvalidBatchError("snappy block without a valid length preamble")
        b = block[pos]
        pos += 1
        declared |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            break
    if declared > left:
        raise _too_large(SNAPPY, limit)
    out = bytes(cramjam.snappy.decompress_raw(block))
    if len(out) != declared:
        raise InvalidBatchError(f"snappy block declared {declared} bytes and inflated to {len(out)}")
    for start in range(0, len(out), chunk_bytes):
        yield out[start : start + chunk_bytes]


def _lz4(data: bytes, limit: int, chunk_bytes: int) -> Iterator[bytes]:
    decoder = lz4.frame.LZ4FrameDecompressor()
    out = decoder.decompress(data, max_length=chunk_bytes)
    while True:
        if out:
            yield out
        if decoder.eof:
            return  # KafkaLZ4BlockInputStream reads one frame; what follows is not read
        if decoder.needs_input or not out:
            raise InvalidBatchError("truncated lz4 frame")
        out = decoder.decompress(b"", max_length=chunk_bytes)


def _zstd(data: bytes, limit: int, chunk_bytes: int) -> Iterator[bytes]:
    decoder = zstandard.ZstdDecompressor(max_window_size=ZSTD_MAX_WINDOW)
    reader = decoder.stream_reader(data, read_size=chunk_bytes, read_across_frames=True)
    while True:
        out = reader.read(chunk_bytes)
        if not out:
            return
        yield out


def _old_inflate_whole(codec: int, data: bytes | bytearray | memoryview) -> bytes:
    """The seeded defect UNBOUNDED_DECOMPRESSION: the payload inflated whole, whatever its size, as
    the broker did before the bound (cramjam for lz4 and zstd, one zlib call for gzip)."""
    try:
        if codec == GZIP:
            return zlib.decompress(bytes(data), wbits=47)
        if codec == SNAPPY:
            return b"".join(_snappy(bytes(data), 1 << 62, 1 << 62))
        if codec == LZ4:
            return bytes(cramjam.lz4.decompress(bytes(data)))
        if codec == ZSTD:
            return bytes(cramjam.zstd.decompress(bytes(data)))
    except Exception as exc:  # each codec library raises its own error types
        raise InvalidBatchError(f"cannot decompress ({_name(codec)}): {exc}") from None
    raise InvalidBatchError(f"unknown compression codec {codec}")
