"""The bytes and requests a broker holds before handling them, and who may read the next frame.

Kafka reads a request only into memory it has first taken from a pool of
``queued.max.request.bytes`` (SocketServer builds a ``SimpleMemoryPool`` of
that size; ``clients/src/main/java/org/apache/kafka/common/memory/SimpleMemoryPool.java``),
and a channel whose allocation is refused stays muted until memory comes
back (``clients/src/main/java/org/apache/kafka/common/network/Selector.java``,
``outOfMemory``). The pool is not strict: an allocation succeeds while *any*
memory is left, so the largest request (``socket.request.max.bytes``) can
always be read and the pool never holds more than its size plus one request.
``queued.max.requests`` bounds the requests read but not yet handled
(``RequestChannel``'s queue).

:class:`ReadGate` is that accounting, sans-IO. A shell calls
:meth:`ReadGate.reserve` with a frame's declared size before reading its
body; a refused connection waits in a FIFO queue and is granted, oldest
first, as bytes come back, so no connection is passed over while memory is
short (Kafka shuffles its keys under memory pressure for the same reason).
The broker turns each grant into a ``ResumeReading`` effect.

One deviation: a frame of at most :data:`UNPOOLED_FRAME_BYTES` is read even
while the pool is spent. The pool counts a frame's declared size from its
size prefix on, so a few clients that declare large frames and trickle them
(the reference closes them after ``reference.request.receive.timeout.ms``)
would otherwise stop every client's reads until then, heartbeats and
metadata requests included. What small frames hold stays bounded by
``max.connections`` × this size, and only in bytes actually received.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from reference_impl import defects

UNPOOLED_FRAME_BYTES = 64 << 10
"""Frames this small are read whatever the pool holds (still counted, and bounded by requests)."""


@dataclass(slots=True)
class _Held:
    bytes: int = 0
    """Reserved for the frame being read plus the frames read and not yet handled."""
    reserved: int = 0
    """The reservation of the frame being read (0 when no frame is being read)."""
    requests: int = 0
    """Frames read and not yet handled."""


class ReadGate:
    """``queued.max.request.bytes`` and ``queued.max.requests`` across every client connection."""

    def __init__(self, max_bytes: int, max_requests: int) -> None:
        """``max_bytes`` ≤ 0 means no byte bound (Kafka's -1)."""
        self.max_bytes = max_bytes
        self.max_requests = max_requests
        self.queued_bytes = 0
        self.queued_requests = 0
        self._held: dict[int, _Held] = {}
        self._waiting: OrderedDict[int, int] = OrderedDict()
        """Connections refused a reservation, oldest first, with the size they asked for."""

    def _room(self) -> bool:
        if self.queued_requests >= self.max_requests:
            return False
        return self.max_bytes <= 0 or self.queued_bytes < self.max_bytes

    def reserve(self, connection_id: int, size: int) -> bool:
        """Take ``size`` bytes for the frame ``connection_id`` is about to read; False (the connection
        is queued for a later grant) when the pool is spent or a connection refused earlier is still
        waiting (first come, first served)."""
        if defects.enabled(defects.UNBOUNDED_BUFFERING):
            return True  # the old reader: every byte that arrives is read
        if connection_id in self._waiting:
            return False
        if size <= UNPOOLED_FRAME_BYTES and self.queued_requests < self.max_requests:
            self._take(connection_id, size)
            return True
        if self._waiting or not self._room():
            self._waiting[connection_id] = size
            return False
        self._take(connection_id, size)
        return True

    def _take(self, connection_id: int, size: int) -> None:
        held = self._held.setdefault(connection_id, _Held())
        held.bytes += size
        held.reserved = size
        self.queued_bytes += size

    def arrived(self, connection_id: int, size: int) -> None:
        """A whole frame of ``size`` bytes was read: its reservation (or, from a shell that does not
        reserve, its bytes now) stays held until :meth:`handled`."""
        held = self._held.setdefault(connection_id, _Held())
        if held.reserved != size:  # not reserved through this gate: count it as it lands
            held.bytes += size
            self.queued_bytes += size
        held.reserved = 0
        held.requests += 1
        self.queued_requests += 1

    def handled(self, connection_id: int, size: int) -> None:
        """A frame was taken off the queue and handled: its bytes go back to the pool."""
        held = self._held.get(connection_id)
        if held is None:
            return
        held.bytes -= size
        held.requests -= 1
        self.queued_bytes -= size
        self.queued_requests -= 1

    def forget(self, connection_id: int) -> None:
        """The connection closed: everything it held goes back, and it waits for nothing."""
        self._waiting.pop(connection_id, None)
        held = self._held.pop(connection_id, None)
        if held is not None:
            self.queued_bytes -= held.bytes
            self.queued_requests -= held.requests

    def grant_waiting(self) -> list[int]:
        """Reserve for the connections refused earlier, oldest first, while there is room; returns
        the connections granted (each may read its frame now)."""
        granted: list[int] = []
        while self._waiting and self._room():
            connection_id, size = self._waiting.popitem(last=False)
            self._take(connection_id, size)
            granted.append(connection_id)
        return granted

    def is_waiting(self, connection_id: int) -> bool:
        return connection_id in self._waiting
