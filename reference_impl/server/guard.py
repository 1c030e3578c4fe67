"""Which client connections the broker keeps: connection counts, idle connections, slow requests.

Kafka's network layer bounds connections (``max.connections``,
``max.connections.per.ip``: ``ConnectionQuotas`` in
``core/src/main/scala/kafka/network/SocketServer.scala``; a connection over the
per-IP limit is closed as it is accepted, "New connections from the ip address
are dropped if the limit is reached", ``server/src/main/java/org/apache/kafka/
network/SocketServerConfigs.java``) and closes a connection that has read and
written nothing for ``connections.max.idle.ms`` (the ``IdleExpiryManager`` of
``clients/src/main/java/org/apache/kafka/common/network/Selector.java``, updated
on every socket event). Two deviations, each for a bound Kafka does not give:

* over a configured ``max.connections`` a new connection is closed at once, where Kafka's
  acceptor waits for a free slot (the kernel's backlog then holds the flood); when the descriptor
  budget is what bounds connections (``max.connections`` unset), the listener waits for a slot as
  Kafka does (:class:`~.listener.Listener`);
* ``reference.request.receive.timeout.ms`` closes a connection whose request
  has not arrived whole that long after its first byte: a client trickling a
  frame a byte at a time resets Kafka's idle timer for ever.

:class:`ConnectionGuard` is that policy without I/O: the shell tells it what
happened and when (a monotonic clock in ms), and asks which connections to
close and when to ask next.
"""

from __future__ import annotations

from collections import OrderedDict


class ConnectionGuard:
    """Connection counts (total and per address), idle deadlines and request-arrival deadlines."""

    def __init__(
        self, *, max_connections: int, max_per_ip: int, idle_ms: int, receive_timeout_ms: int
    ) -> None:
        """``idle_ms`` or ``receive_timeout_ms`` ≤ 0: that bound is off."""
        self.max_connections = max_connections
        self.max_per_ip = max_per_ip
        self.idle_ms = idle_ms
        self.receive_timeout_ms = receive_timeout_ms
        self._per_ip: dict[str, int] = {}
        self._ip_of: dict[int, str] = {}
        self._last_active: OrderedDict[int, int] = OrderedDict()
        """Connection → when it last read or wrote, least recently active first."""
        self._receiving_since: OrderedDict[int, int] = OrderedDict()
        """Connection → when the first byte of the request being read arrived, oldest first."""

    @property
    def open_connections(self) -> int:
        return len(self._ip_of)

    def open(self, connection_id: int, ip: str, now_ms: int) -> str | None:
        """Count a new connection; a reason to close it at once when it is over a limit (not counted)."""
        if len(self._ip_of) >= self.max_connections:
            return f"max.connections={self.max_connections} reached"
        from_ip = self._per_ip.get(ip, 0)
        if from_ip >= self.max_per_ip:
            return f"max.connections.per.ip={self.max_per_ip} reached for {ip}"
        self._per_ip[ip] = from_ip + 1
        self._ip_of[connection_id] = ip
        self._last_active[connection_id] = now_ms
        return None

    def close(self, connection_id: int) -> None:
        ip = self._ip_of.pop(connection_id, None)
        if ip is None:
            return
        left = self._per_ip[ip] - 1
        if left:
            self._per_ip[ip] = left
        else:
            del self._per_ip[ip]
        self._last_active.pop(connection_id, None)
        self._receiving_since.pop(connection_id, None)

    def active(self, connection_id: int, now_ms: int) -> None:
        """The connection read or wrote something."""
        if connection_id in self._last_active:
            self._last_active[connection_id] = now_ms
            self._last_active.move_to_end(connection_id)

    def receiving(self, connection_id: int, now_ms: int) -> None:
        """The first byte of a request arrived (or its reading resumed after a wait the broker chose)."""
        if connection_id in self._ip_of and connection_id not in self._receiving_since:
            self._receiving_since[connection_id] = now_ms

    def received(self, connection_id: int) -> None:
        """The request arrived whole, or the broker stopped reading it (its wait is not the client's)."""
        self._receiving_since.pop(connection_id, None)

    def expired(self, now_ms: int) -> list[tuple[int, str]]:
        """Connections to close now, with the reason; they are forgotten here."""
        out: dict[int, str] = {}
        if self.receive_timeout_ms > 0:
            for cid, since in self._receiving_since.items():
                if now_ms - since < self.receive_timeout_ms:
                    break
                out[cid] = f"request not received whole within {self.receive_timeout_ms} ms"
        if self.idle_ms > 0:
            for cid, last in self._last_active.items():
                if now_ms - last < self.idle_ms:
                    break
                out.setdefault(cid, f"idle for {now_ms - last} ms (connections.max.idle.ms={self.idle_ms})")
        for cid in out:
            self.close(cid)
        return list(out.items())

    def next_deadline_ms(self) -> int | None:
        """When :meth:`expired` may next return something (None: nothing to watch)."""
        deadlines = []
        if self.receive_timeout_ms > 0 and self._receiving_since:
            deadlines.append(next(iter(self._receiving_since.values())) + self.receive_timeout_ms)
        if self.idle_ms > 0 and self._last_active:
            deadlines.append(next(iter(self._last_active.values())) + self.idle_ms)
        return min(deadlines) if deadlines else None
