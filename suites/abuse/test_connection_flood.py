"""Thousands of connections opened at once must not exhaust the broker's descriptors or service.

Kafka bounds connections with ``max.connections`` and ``max.connections.per.ip`` (``ConnectionQuotas``
in ``core/src/main/scala/kafka/network/SocketServer.scala``; names and defaults in
``server/src/main/java/org/apache/kafka/network/SocketServerConfigs.java``): past them a new
connection waits or is dropped. Every connection is a descriptor; a broker out of descriptors
cannot open a log segment or accept anyone (issue 17, items 4 and 5).
"""

from __future__ import annotations

import contextlib
import socket
import time

from .conftest import (
    HANG_S,
    REFERENCE_MAX_CONNECTIONS,
    AbusedTarget,
    ResourceWatch,
    answered_within,
    assert_local_bound,
    report,
)

FLOOD_CONNECTIONS = 2_000
FLOOD_BUDGET_S = 20.0
FD_SLACK = 64
"""Descriptors a broker may open besides one per client connection (logs, its own, a few clients)."""
SETTLE_S = 10.0


def test_a_connection_flood_keeps_descriptors_bounded_and_a_client_served(abused: AbusedTarget) -> None:
    """Bound: while 2,000 connections are opened and held (20 s at most), a client connected before
    is answered (within 10 s), and the target holds at most one descriptor per connection it keeps
    plus 64 (the reference, launched with max.connections=400, keeps at most 400); after the flood
    closes, a new client is answered and the descriptors fall back to within 64 of where they were."""
    client = abused.wire(timeout_s=HANG_S)
    client.api_versions()
    host, _, port = abused.address.rpartition(":")
    flood: list[socket.socket] = []
    failures = 0
    started = time.monotonic()
    try:
        with ResourceWatch(abused) as watch:
            while len(flood) < FLOOD_CONNECTIONS and time.monotonic() - started < FLOOD_BUDGET_S:
                try:
                    flood.append(socket.create_connection((host, int(port)), timeout=2.0))
                except OSError:
                    failures += 1
            opened_s = time.monotonic() - started
            time.sleep(1.0)  # the target has seen them all
            client.request("api_versions", 0)  # raises after HANG_S without an answer
            during_flood = watch.fds_peak
        threads_peak = watch.threads_peak
        baseline = watch.fds_baseline
    finally:
        for sock in flood:
            with contextlib.suppress(OSError):
                sock.close()
    after_s = answered_within(abused)
    settled = _settled_fds(abused, baseline)
    kept_bound = (
        FLOOD_CONNECTIONS if abused.configured_ms("max.connections") is None else REFERENCE_MAX_CONNECTIONS
    )
    report(
        "connection-flood",
        target=abused.name,
        opened=len(flood),
        failed_connects=failures,
        open_s=opened_s,
        fds_baseline=baseline,
        fds_peak=during_flood,
        fds_after=settled,
        threads_peak=threads_peak,
        new_client_answered_s=after_s,
    )
    assert after_s is not None, f"a new client was not answered within {HANG_S} s after the flood"
    if baseline is not None:
        assert_local_bound(
            abused, during_flood, baseline + kept_bound + FD_SLACK, "descriptors during the flood"
        )
        assert_local_bound(abused, settled, baseline + FD_SLACK, "descriptors after the flood")


def _settled_fds(abused: AbusedTarget, baseline: int | None) -> int | None:
    """The target's descriptors once they are back within the slack of ``baseline`` (or after
    ``SETTLE_S``): closing thousands of connections takes the target a moment."""
    if baseline is None:
        return None
    deadline = time.monotonic() + SETTLE_S
    while True:
        with ResourceWatch(abused, interval_s=1.0) as watch:
            pass
        now = watch.last.open_fds if watch.last is not None else None
        if now is None or now <= baseline + FD_SLACK or time.monotonic() > deadline:
            return now
        time.sleep(0.2)
