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
    """Accumulates received bytes and yields complete frames (without the size prefix).

    Whole frames inside one received chunk are cut straight out of it; a frame
    that spans chunks is kept as the list of its pieces and joined once, when
    its last byte arrives. Appending every chunk to one growing buffer and then
    slicing the frame out copied a large frame (a 30 MB Fetch answer, a
    follower's multi-megabyte fetch) three times or more; this copies it once.
    """

    __slots__ = ("_have", "_max_frame_bytes", "_need", "_parts", "_prefix")

    def __init__(self, max_frame_bytes: int = DEFAULT_MAX_FRAME_BYTES) -> None:
        self._max_frame_bytes = max_frame_bytes
        self._prefix = b""
        """The first bytes of a size prefix that a chunk cut short (fewer than 4)."""
        self._need = -1
        """Size of the frame being assembled; -1 while no frame is under way."""
        self._parts: list[bytes] = []
        """Pieces of the frame being assembled, after its size prefix."""
        self._have = 0
        """Bytes in ``_parts``."""

    @property
    def buffered_bytes(self) -> int:
        """Bytes held that do not yet form a complete frame."""
        return len(self._prefix) + self._have + (4 if self._need >= 0 else 0)

    def feed(self, data: bytes | bytearray | memoryview) -> list[bytes]:
        """Add received bytes; return every frame they complete, in order.

        Raises :class:`FrameSizeError` when a size prefix is out of bounds; the
        decoder is then unusable, as the connection must be closed.
        """
        frames: list[bytes] = []
        view = memoryview(data).cast("B")
        if self._need >= 0:
            taken = self._take_body(data if isinstance(data, bytes) else view, frames)
            if taken < 0:
                return frames
            view = view[taken:]
        elif self._prefix:
            view = memoryview(self._prefix + bytes(view))
            self._prefix = b""
        self._cut_whole_frames(view, frames)
        return frames

    def _take_body(self, data: bytes | memoryview, frames: list[bytes]) -> int:
        """Add to the frame under way; the bytes used when it completes, else -1 (a received
        ``bytes`` chunk is kept as it is, not copied)."""
        wanted = self._need - self._have
        if len(data) < wanted:
            self._parts.append(bytes(data))
            self._have += len(data)
            return -1
        self._parts.append(bytes(data[:wanted]) if len(data) > wanted else bytes(data))
        frames.append(b"".join(self._parts))
        self._parts = []
        self._have = 0
        self._need = -1
        return wanted

    def _cut_whole_frames(self, view: memoryview, frames: list[bytes]) -> None:
        pos = 0
        end = len(view)
        while end - pos >= 4:
            (size,) = _SIZE.unpack_from(view, pos)
            if size < 0 or size > self._max_frame_bytes:
                raise FrameSizeError(size, self._max_frame_bytes)
            pos += 4
            if end - pos < size:
                self._need = size
                self._parts = [bytes(view[pos:])]
                self._have = end - pos
                return
            frames.append(bytes(view[pos : pos + size]))
            pos += size
        if pos < end:
            self._prefix = bytes(view[pos:])


def frame(payload: bytes | bytearray | memoryview) -> bytes:
    """Prefix ``payload`` with its 4-byte size."""
    return _SIZE.pack(len(payload)) + bytes(payload)


def size_prefix(length: int) -> bytes:
    """The 4-byte size prefix alone, for responses assembled from several parts."""
    return _SIZE.pack(length)
