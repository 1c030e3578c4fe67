"""The connection guard, on a virtual clock: counts, idle connections, requests that never arrive.

Kafka's names and defaults: ``server/src/main/java/org/apache/kafka/network/SocketServerConfigs.java``
(``max.connections``, ``max.connections.per.ip``, ``connections.max.idle.ms`` = 10 min); the idle
expiry of ``clients/src/main/java/org/apache/kafka/common/network/Selector.java``.
"""

from __future__ import annotations

from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.server.guard import ConnectionGuard


def guard(**overrides: int) -> ConnectionGuard:
    settings = {"max_connections": 10, "max_per_ip": 10, "idle_ms": 1_000, "receive_timeout_ms": 300}
    settings.update(overrides)
    return ConnectionGuard(**settings)


def test_connections_over_the_total_or_per_address_bound_are_refused_and_not_counted() -> None:
    g = guard(max_connections=3, max_per_ip=2)
    assert g.open(1, "10.0.0.1", 0) is None
    assert g.open(2, "10.0.0.1", 0) is None
    assert "max.connections.per.ip=2" in (g.open(3, "10.0.0.1", 0) or "")
    assert g.open(4, "10.0.0.2", 0) is None
    assert "max.connections=3" in (g.open(5, "10.0.0.3", 0) or "")
    assert g.open_connections == 3
    g.close(1)
    assert g.open(6, "10.0.0.1", 0) is None, "a closed connection frees its slot"


def test_an_idle_connection_is_closed_after_the_idle_bound_and_activity_postpones_it() -> None:
    g = guard()
    g.open(1, "h", 0)
    g.open(2, "h", 0)
    g.active(2, 600)
    assert g.next_deadline_ms() == 1_000
    assert g.expired(999) == []
    assert [cid for cid, _ in g.expired(1_000)] == [1]
    assert g.next_deadline_ms() == 1_600
    assert [cid for cid, _ in g.expired(1_600)] == [2]
    assert g.next_deadline_ms() is None


def test_a_request_that_does_not_arrive_whole_in_time_closes_its_connection() -> None:
    """A slowloris keeps its connection active (every byte counts as activity) but its request never
    completes: the receive bound closes it; a request that completes in time clears its deadline."""
    g = guard()
    g.open(1, "h", 0)
    g.open(2, "h", 0)
    g.receiving(1, 100)
    g.receiving(2, 100)
    g.received(2)
    for now in range(100, 400, 50):
        g.active(1, now)
        g.active(2, now)
    assert g.expired(399) == []
    expired = g.expired(400)
    assert [cid for cid, _ in expired] == [1]
    assert "not received whole within 300 ms" in expired[0][1]


def test_a_wait_the_broker_chose_does_not_count_against_the_request() -> None:
    g = guard()
    g.open(1, "h", 0)
    g.receiving(1, 0)
    g.received(1)  # the broker stopped reading it (no memory): not the client's time
    g.active(1, 900)
    g.receiving(1, 900)
    assert g.expired(1_100) == []
    assert g.next_deadline_ms() == 1_200


def test_zero_bounds_switch_the_timeouts_off() -> None:
    g = guard(idle_ms=0, receive_timeout_ms=0)
    g.open(1, "h", 0)
    g.receiving(1, 0)
    assert g.expired(10**9) == []
    assert g.next_deadline_ms() is None


def test_max_connections_has_no_fixed_default() -> None:
    """Unset, max.connections is the listener's slot count (the descriptor limit less the log files'
    pool and a reserve: test_listener.py), so it has no default of its own."""
    config = BrokerConfig.parse(1, [])
    assert config.get("max.connections") is None  # derived by the process, not a fixed number
    assert config.get_int("connections.max.idle.ms") == 600_000  # Kafka's 10 minutes
