"""A step of the wall clock, either way, neither fires nor holds what waits on the monotonic clock.

Kafka runs its delayed operations on ``SystemTimer`` (``Time.SYSTEM.hiResClockMs()``, i.e.
``System.nanoTime``: ``server-common/src/main/java/org/apache/kafka/server/util/timer/SystemTimer.java``)
and its quota throttles on ``time.nanoseconds()``
(``server/src/main/java/org/apache/kafka/server/quota/ThrottledChannel.java``). The broker core is
given both clocks (``Broker.step``/``tick``: wall ``now_ms``, monotonic ``mono_ms``); the harness
steps them apart here, as libfaketime with ``DONT_FAKE_MONOTONIC`` (the chaos clock faults) or
an NTP step does to a broker process.
"""

from __future__ import annotations

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.sasl_client import plain_token

from ..group.helpers import Client, describe, harness, stabilise
from .harness import START_MS, BrokerHarness
from .test_backpressure import long_poll
from .test_data_path import create
from .test_sasl_reauth_oauth import CONFIGS as SASL_CONFIGS
from .test_sasl_reauth_oauth import LIST_GROUPS, _login

JUMP_MS = 600_000
"""Ten minutes: the chaos clock-jump's smallest step."""


def _waiting_fetch() -> tuple[BrokerHarness, int]:
    h = BrokerHarness()
    create(h, "t")
    cid = h.connect()
    h.send(cid, long_poll("t", max_wait_ms=500))
    assert not h.responses.get(cid), "nothing to read yet: the fetch waits"
    return h, cid


def test_a_forward_wall_step_does_not_expire_a_waiting_fetch() -> None:
    h, cid = _waiting_fetch()
    h.tick_at(START_MS + JUMP_MS, START_MS + 499)
    assert not h.responses.get(cid), "the long poll was given 500 ms of waiting, not 500 ms of wall time"
    assert h.next_wakeup_ms == START_MS + 500, "the wake-up is asked for on the monotonic clock"
    h.tick_at(START_MS + JUMP_MS + 1, START_MS + 500)
    assert len(h.responses[cid]) == 1


def test_a_backward_wall_step_does_not_hold_a_waiting_fetch() -> None:
    h, cid = _waiting_fetch()
    h.tick_at(START_MS - JUMP_MS, START_MS + 500)
    assert len(h.responses[cid]) == 1, "answered after its 500 ms, not 10 minutes and 500 ms later"


def test_a_quota_throttle_ends_on_the_monotonic_clock() -> None:
    """A throttled connection is muted for the throttle's length, whatever the wall clock does."""
    h = BrokerHarness()
    cid = h.connect()
    h.broker.throttle(cid, 1_000)
    assert not h.broker._readable(h.broker._connections[cid])
    h.tick_at(START_MS - JUMP_MS, START_MS + 1_000)
    assert h.broker._readable(h.broker._connections[cid]), "the throttle ended after its 1000 ms"


def test_a_group_members_session_runs_on_the_monotonic_clock() -> None:
    """Kafka's coordinator timers are ``TimerTask``s on ``SystemTimer`` (``CoordinatorRuntime``'s
    ``EventBasedCoordinatorTimer``): a forward step expires no session, and a silent member still
    expires one session after its last heartbeat when the wall clock went back meanwhile."""
    h = harness()
    a = Client(h, "g", session_ms=5_000)
    stabilise(h, a)
    wall, mono = h.now_ms, h.now_ms
    h.tick_at(wall + JUMP_MS, mono + 1_000)
    assert a.heartbeat() == ErrorCode.none, "ten minutes of wall time are not a missed session"
    h.tick_at(wall - JUMP_MS, mono + 5_999)
    assert [m.member_id for m in describe(h, "g").members] == [a.member_id]
    h.tick_at(wall - JUMP_MS, mono + 6_000)
    assert not describe(h, "g").members, "silent for its 5 s session since its last heartbeat"


def test_a_sasl_session_expires_on_the_monotonic_clock() -> None:
    """KIP-368: Kafka stamps a session's expiry in ``time.nanoseconds()`` (``SaslServerAuthenticator``'s
    ``sessionExpirationTimeNanos``): ten minutes of wall time do not end a 5 s session, 5 s do."""
    h = BrokerHarness(*SASL_CONFIGS, "connections.max.reauth.ms=5000")
    cid, _done = _login(h, "PLAIN", plain_token("alice", "alice-secret"))
    wall, mono = h.now_ms, h.now_ms
    h.tick_at(wall + JUMP_MS, mono + 4_000)
    assert h.call(LIST_GROUPS, cid).error_code == ErrorCode.none, "the session is 4 s old"
    h.tick_at(wall - JUMP_MS, mono + 5_000)
    h.send(cid, LIST_GROUPS)
    assert "expired" in h.closed[cid] and not h.responses.get(cid)
