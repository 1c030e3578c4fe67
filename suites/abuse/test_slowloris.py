"""Requests trickled a byte at a time must neither hold the broker's memory nor stop its service.

A slowloris sends a frame's size and then one byte now and then: every byte resets Kafka's idle
timer (``IdleExpiryManager`` in ``clients/src/main/java/org/apache/kafka/common/network/
Selector.java``), and a broker that reserves the declared size up front (Kafka's memory pool,
``clients/src/main/java/org/apache/kafka/common/memory/SimpleMemoryPool.java``) can be made to
hold it. The reference closes a connection whose request has not arrived whole within
``reference.request.receive.timeout.ms`` (not a Kafka config); any target must keep serving a
well-behaved client and keep its memory while the trickle goes on.
"""

from __future__ import annotations

import socket
import struct
import time

from .conftest import HANG_S, AbusedTarget, ResourceWatch, answered_within, assert_local_bound, report

LARGE_TRICKLERS = 20
DECLARED_LARGE = 50 << 20
"""Each large trickler declares a 50 MiB frame (under Kafka's socket.request.max.bytes)."""
SMALL_TRICKLERS = 5
DECLARED_SMALL = 200
TRICKLE_INTERVAL_S = 0.25
WATCH_UNKNOWN_S = 12.0
"""How long to trickle at a target whose receive bound the harness did not set."""
CLOSE_SLACK_S = 5.0
RECEIVE_ROUNDS = 2
"""A large trickler waits unread while the request pool is spent (the idle timeout closes it), but
one granted the pool as an earlier trickler is closed gets a receive timeout of its own: two rounds."""
RSS_GROWTH_BOUND_MIB = 64


def _open_trickler(host: str, port: int, declared: int) -> socket.socket:
    sock = socket.create_connection((host, port), timeout=HANG_S)
    sock.sendall(struct.pack(">i", declared) + b"\x00")  # the size, then the first byte of the body
    sock.setblocking(False)
    return sock


def _trickle(sock: socket.socket) -> bool:
    """One more byte; False once the target has closed the connection."""
    try:
        if sock.recv(1) == b"":
            return False
    except BlockingIOError:
        pass
    except OSError:
        return False
    try:
        sock.send(b"\x00")
    except BlockingIOError:
        pass
    except OSError:
        return False
    return True


def test_trickled_requests_neither_hold_memory_nor_stop_service(abused: AbusedTarget) -> None:
    """Bound: while 20 connections trickle 50 MiB frames and 5 trickle 200-byte frames, a byte every
    250 ms, a fresh client is answered every second (within 10 s) and the target's RSS grows by at
    most 64 MiB. The reference (launched with reference.request.receive.timeout.ms=3000) closes
    every trickler within 2 × 3 + 5 s; another target's closes are reported."""
    timeout_ms = abused.configured_ms("reference.request.receive.timeout.ms")
    watch_s = (
        RECEIVE_ROUNDS * timeout_ms / 1000 + CLOSE_SLACK_S if timeout_ms is not None else WATCH_UNKNOWN_S
    )
    host, _, port = abused.address.rpartition(":")
    declared = [DECLARED_LARGE] * LARGE_TRICKLERS + [DECLARED_SMALL] * SMALL_TRICKLERS
    tricklers = [_open_trickler(host, int(port), size) for size in declared]
    started = time.monotonic()
    closed_after: dict[int, float] = {}
    probes: list[float | None] = []
    next_probe = started
    try:
        with ResourceWatch(abused) as watch:
            while len(closed_after) < len(tricklers) and time.monotonic() - started < watch_s:
                for index, sock in enumerate(tricklers):
                    if index not in closed_after and not _trickle(sock):
                        closed_after[index] = time.monotonic() - started
                if time.monotonic() >= next_probe:
                    probes.append(answered_within(abused))
                    next_probe = time.monotonic() + 1.0
                time.sleep(TRICKLE_INTERVAL_S)
    finally:
        for sock in tricklers:
            sock.close()
    answered = [p for p in probes if p is not None]
    report(
        "slowloris",
        target=abused.name,
        tricklers=len(tricklers),
        configured_receive_timeout_ms=timeout_ms,
        closed=f"{len(closed_after)}/{len(tricklers)}",
        closed_after_max_s=max(closed_after.values()) if closed_after else None,
        probes_answered=f"{len(answered)}/{len(probes)}",
        probe_max_s=max(answered) if answered else None,
        rss_growth_mib=watch.rss_growth_mib,
        fds_peak=watch.fds_peak,
    )
    assert len(answered) == len(probes), f"{len(probes) - len(answered)} probes unanswered within {HANG_S} s"
    assert_local_bound(abused, watch.rss_growth_mib, RSS_GROWTH_BOUND_MIB, "RSS growth (MiB)")
    if timeout_ms is not None:
        assert len(closed_after) == len(tricklers), (
            f"{len(tricklers) - len(closed_after)} tricklers still connected after {watch_s:.0f} s"
        )
