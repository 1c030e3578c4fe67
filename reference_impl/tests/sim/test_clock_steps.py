"""Broker sessions and heartbeats on simulated brokers whose wall clocks are stepped.

Kafka's controller tracks a broker's last contact in ``time.nanoseconds()``
(``metadata/src/main/java/org/apache/kafka/controller/BrokerHeartbeatManager.java``,
``lastContactNs``) and the broker schedules its heartbeats on its event queue in nanoseconds
(``core/src/main/scala/kafka/server/BrokerLifecycleManager.scala``): a step of the wall clock,
either way, fences no broker and stalls no heartbeat. The simulator's virtual time is each node's
monotonic clock; :meth:`BrokerCluster.step_wall_clock` moves the wall clocks alone. Four brokers,
the first three the quorum's voters: broker 4 only observes, so crashing it leaves the quorum whole.
"""

from __future__ import annotations

from reference_impl.sim.broker.invariants import live_brokers
from reference_impl.sim.broker.nodes import EVENT_BUDGET, BrokerCluster, build_broker_simulation

JUMP_MS = 600_000
SESSION_MS = 3_000
"""``broker.session.timeout.ms`` in the simulator (``SIM_BROKER_CONFIGS``)."""
SKEW_MS = 10_000
"""A step past the session timeout and short of the quorum's fetch timeout below: Raft (on wall time,
as Kafka's) keeps its leader, so only the sessions could fence a broker."""
PATIENT_QUORUM = ("controller.quorum.fetch.timeout.ms=20000",)


def _running_cluster(seed: int, configs: tuple[str, ...] = ()) -> BrokerCluster:
    cluster = build_broker_simulation(seed, 4, voters=3, configs=configs, trace=False)
    sim = cluster.sim

    def all_unfenced() -> bool:
        brokers = live_brokers(sim).values()
        return len(brokers) == 4 and all(b.quorum is not None and not b.quorum.fenced for b in brokers)

    assert sim.run_until_true(all_unfenced, 30_000, EVENT_BUDGET), "the cluster never came up"
    sim.run_until(sim.now_ms + 1_000)
    return cluster


def _fenced_in_the_image(cluster: BrokerCluster, node_id: int) -> bool:
    """Whether a running voter's committed image has ``node_id`` fenced."""
    for broker in live_brokers(cluster.sim).values():
        info = broker.image.brokers.get(node_id)
        if broker.node_id != node_id and info is not None:
            return bool(info.fenced)
    return False


def test_a_forward_step_of_the_controllers_wall_clock_fences_no_broker() -> None:
    """Judged in wall time, every other broker's last heartbeat would at once be older than its
    session on the active controller, whose clock alone jumped."""
    cluster = _running_cluster(seed=1, configs=PATIENT_QUORUM)
    sim = cluster.sim
    leader = cluster.sim.node(1).raft.leader_id
    cluster.step_wall_clock(SKEW_MS, nodes=[leader])

    def some_broker_fenced() -> bool:
        return any(_fenced_in_the_image(cluster, n) for n in range(1, 5))

    assert not sim.run_until_true(some_broker_fenced, 3 * SESSION_MS, EVENT_BUDGET), (
        "a broker was fenced: its session was judged in wall time"
    )
    assert cluster.sim.node(1).raft.leader_id == leader, "the quorum kept its leader (the test's premise)"


def test_a_broker_that_dies_after_the_wall_clocks_stepped_back_is_fenced_within_its_session() -> None:
    """After a backward step the brokers keep heartbeating (their next heartbeat is not ten minutes
    away), and the controller still fences the one that stops: its silence is measured on the
    monotonic clock, not from a last contact stamped ten minutes in the future."""
    cluster = _running_cluster(seed=2)
    sim = cluster.sim
    cluster.step_wall_clock(-JUMP_MS)
    sim.run_until(sim.now_ms + 2 * SESSION_MS)
    assert not any(_fenced_in_the_image(cluster, n) for n in range(1, 5)), (
        "a live broker was fenced: its heartbeats stalled after the step"
    )
    sim.crash(4)
    assert sim.run_until_true(lambda: _fenced_in_the_image(cluster, 4), 4 * SESSION_MS, EVENT_BUDGET), (
        "the dead broker was never fenced"
    )


def test_a_jump_forward_and_back_leaves_a_quorum_that_commits() -> None:
    """The chaos ``clock-jump``: every wall clock ten minutes ahead for seven seconds, then back.
    Raft runs on wall time (Kafka's ``KafkaRaftClient``), so the jump may cost the quorum its leader;
    once the clocks are back, the quorum must settle on one leader and commit again: the controller
    fences a broker that died, within a few sessions, and takes it back when it restarts (its
    registration arrives as a request: what the controller writes for it must commit too)."""
    cluster = _running_cluster(seed=3)
    sim = cluster.sim
    cluster.step_wall_clock(JUMP_MS)
    sim.run_until(sim.now_ms + 7_000)
    cluster.step_wall_clock(-JUMP_MS)
    sim.run_until(sim.now_ms + 2 * SESSION_MS)
    sim.crash(4)
    assert sim.run_until_true(lambda: _fenced_in_the_image(cluster, 4), 5 * SESSION_MS, EVENT_BUDGET), (
        "the dead broker was never fenced: the quorum did not commit after the clocks stepped back"
    )
    sim.restart(4)
    assert sim.run_until_true(lambda: not _fenced_in_the_image(cluster, 4), 5 * SESSION_MS, EVENT_BUDGET), (
        "the restarted broker was never unfenced: its registration did not commit"
    )
