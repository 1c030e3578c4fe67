"""Clients that never read their answers, and clients that say nothing at all.

A client that does not read makes the broker's answers pile up: Kafka keeps such a connection
muted until its response has been sent (``ChannelMuteEvent.RESPONSE_SENT`` in
``core/src/main/scala/kafka/network/SocketServer.scala``), so it holds at most one answer for it.
A client that stays silent is closed after ``connections.max.idle.ms`` (10 minutes by default,
``server/src/main/java/org/apache/kafka/network/SocketServerConfigs.java``; the
``IdleExpiryManager`` of ``clients/src/main/java/org/apache/kafka/common/network/Selector.java``).
"""

from __future__ import annotations

import socket
import time
import uuid

import pytest

from .conftest import (
    HANG_S,
    AbusedTarget,
    answered_within,
    assert_local_bound,
    flooding,
    frame_of,
    report,
)

SLOW_READERS = 20
RSS_GROWTH_BOUND_MIB = 64
PIPELINE_BUDGET_S = 8.0
TOPICS, PARTITIONS = 20, 20
"""Enough partitions that each Metadata answer is some 20 KiB: what a non-reader makes pile up."""
IDLE_CLIENTS = 10
IDLE_WAIT_UNKNOWN_S = 12.0
"""How long to watch a target whose idle timeout the harness did not set (Kafka's is 10 minutes)."""
IDLE_SLACK_S = 5.0


def all_topics_metadata(abused: AbusedTarget) -> bytes:
    return frame_of("metadata", abused.caps.best("metadata", lo=1, hi=12), topics=None)


def test_clients_that_never_read_do_not_make_the_target_buffer_answers(abused: AbusedTarget) -> None:
    """Bound: 20 connections that pipeline Metadata requests (each answer ~20 KiB) for 8 s and never
    read make the target's RSS grow by at most 64 MiB; a fresh client is answered meanwhile."""
    prefix = f"kh-abuse-wide-{uuid.uuid4().hex[:6]}"
    for i in range(TOPICS):
        abused.topic(f"{prefix}-{i:02d}-{'x' * 40}", PARTITIONS)
    request = all_topics_metadata(abused)
    with flooding(abused, request, count=SLOW_READERS, budget_s=PIPELINE_BUDGET_S) as (watch, flood):
        flood.start()
        answered_s = answered_within(abused)
        flood.wait()
    report(
        "slow-readers",
        target=abused.name,
        connections=SLOW_READERS,
        requests_sent=flood.sent // len(request),
        rss_growth_mib=watch.rss_growth_mib,
        fds_peak=watch.fds_peak,
        fresh_client_answered_s=answered_s,
    )
    assert answered_s is not None, f"a fresh client was not answered within {HANG_S} s"
    assert_local_bound(abused, watch.rss_growth_mib, RSS_GROWTH_BOUND_MIB, "RSS growth (MiB)")


def _closed(sock: socket.socket) -> bool:
    """Whether the target closed this (non-blocking) socket: EOF or a reset."""
    try:
        return sock.recv(1) == b""
    except BlockingIOError:
        return False
    except OSError:
        return True


def test_idle_connections_are_closed(abused: AbusedTarget) -> None:
    """Bound: connections that sent one request and then nothing are closed within the idle timeout
    plus 5 s (the reference is launched with connections.max.idle.ms=3000). A target whose timeout
    the harness did not set is watched for 12 s: what it did is reported, and the test skips if
    nothing was closed (its timeout is unknown and longer than that; Kafka's is 10 minutes)."""
    idle_ms = abused.configured_ms("connections.max.idle.ms")
    wait_s = idle_ms / 1000 + IDLE_SLACK_S if idle_ms is not None else IDLE_WAIT_UNKNOWN_S
    host, _, port = abused.address.rpartition(":")
    hello = frame_of("api_versions", 0)
    sockets = []
    for _ in range(IDLE_CLIENTS):
        sock = socket.create_connection((host, int(port)), timeout=HANG_S)
        sock.sendall(hello)
        sock.recv(1 << 16)  # the answer: the connection is in use, then idle
        sock.setblocking(False)
        sockets.append(sock)
    started = time.monotonic()
    closed_after: dict[int, float] = {}
    try:
        while len(closed_after) < len(sockets) and time.monotonic() - started < wait_s:
            for index, sock in enumerate(sockets):
                if index not in closed_after and _closed(sock):
                    closed_after[index] = time.monotonic() - started
            time.sleep(0.1)
    finally:
        for sock in sockets:
            sock.close()
    latest = max(closed_after.values()) if closed_after else None
    report(
        "idle-clients",
        target=abused.name,
        configured_idle_ms=idle_ms,
        closed=f"{len(closed_after)}/{len(sockets)}",
        closed_after_s=latest,
        watched_s=wait_s,
    )
    if idle_ms is None and not closed_after:
        pytest.skip(
            f"{abused.name} closed none of {len(sockets)} idle connections within {wait_s:.0f} s: its idle "
            "timeout is unknown here and longer than the wait (Kafka's default is 10 minutes)"
        )
    assert len(closed_after) == len(sockets), (
        f"{len(sockets) - len(closed_after)} idle connections still open after {wait_s:.0f} s"
    )
