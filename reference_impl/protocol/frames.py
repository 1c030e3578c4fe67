"""Size-prefixed framing: bytes in, whole frames out.

Every Kafka request and response travels as a 4-byte big-endian signed size
followed by that many bytes. This module only cuts a byte stream into frames;
it knows nothing of headers or APIs, so the broker shell, the raw test client
and the Toxiproxy-aware tools can all share it.

Kafka's broker rejects a frame whose declared size is negative or above
``socket.request.max.bytes`` (default 104857600) *before* allocating it, and
closes the connection. :class:`FrameDecoder` does the same by raising
:class:`FrameSizeError` as soon as the 4 size bytes are in, so a peer that
claims a 2 GiB frame never makes us buffer anything.
"""

from __future__ import annotations

import struct

DEFAULT_MAX_FRAME_BYTES = 104_857_600
"""Kafka's ``socket.request.max.bytes`` default."""

_SIZE = struct.Struct(">i")


class FrameSizeError(ValueError):
    """A frame header declared a size that is negative or over the limit."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame declares {size} bytes, outside 0..{limit} (socket.request.max.bytes)")
        self.size = size
        self.limit = limit


class FrameDecoder:
    """Accumulates received bytes and yields complete frames (without the size prefix)."""

    __slots__ = ("_buffer", "_max_frame_bytes", "_need")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._buffer = bytearray()
        self._max_frame_bytes = max_frame_bytes
        self._need = -1  # size of the frame being assembled, -1 while reading the prefix

    @property
    def buffered_bytes(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._buffer)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return every frame they complete, in order.

        Raises :class:`FrameSizeError` when a size prefix is out of bounds; the
        decoder is then unusable, as the connection must be closed.
        """
        buf = self._buffer
        buf += data
        frames: list[bytes] = []
        pos = 0
        end = len(buf)
        while True:
            if self._need < 0:
                if end - pos < 4:
                    break
                (size,) = _SIZE.unpack_from(buf, pos)
                if size < 0 or size > self._max_frame_bytes:
                    raise FrameSizeError(size, self._max_frame_bytes)
                self._need = size
                pos += 4
            if end - pos < self._need:
                break
            frames.append(bytes(buf[pos : pos + self._need]))
            pos += self._need
            self._need = -1
        if pos:
            del buf[:pos]
        return frames


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its 4-byte size."""
    return _SIZE.pack(len(payload)) + bytes(payload)


def size_prefix(length: int) -> bytes:
    """The 4-byte size prefix alone, for responses assembled from several parts."""
    return _SIZE.pack(length)
