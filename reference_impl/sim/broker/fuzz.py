"""A seeded random schedule of faults against whole simulated brokers and a producing client.

Brokers 1..N (the first three also the controller quorum) hold a topic with
replication factor 3 and ``min.insync.replicas=2``, written with
``flush.messages=1`` so that a machine losing power keeps what it
acknowledged (Kafka's default leaves durability to replication, and several
replicas losing power at once may then lose acknowledged data: that is
Kafka's contract, not a bug, so power loss is only drawn with flushing on).
An idempotent acks=all producer writes throughout. Every
``action_interval_ms`` the schedule draws one fault: a process crash, a power
loss, a restart, a network partition, a one-way link cut, lossy or slow links,
a heal, or a producer crash. Every broker invariant
(:func:`broker_invariants`) is checked after every event.

At the end the network heals and every node restarts; the producer must get
new writes acknowledged (the cluster recovered), then stops; the replicas must
converge. Then every broker crashes and restarts, and with nothing written
since every acknowledged record must become readable again (issue 17 item 9)
and the replicas converge again; :func:`check_converged` holds the cluster to
what the producer was told. A failure names its seed; ``run_broker_schedule(seed, trace=True)``
replays it with a readable trace.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from ..engine.network import LinkFaults
from ..engine.simulation import Simulation
from .invariants import (
    ReplicaClaims,
    check_converged,
    committed_batches,
    live_brokers,
    partition_leader,
    replicas_agree,
    unreadable_acknowledged,
)
from .nodes import EVENT_BUDGET, BrokerCluster, build_broker_simulation
from .producer import ClientDisk, IdempotentProducer, ProducerReport

TOPIC = "fuzz"
CLIENT = 100
REQUEST_TIMEOUT_MS = 10_000
"""The brokers' request timeout: shorter than Kafka's 30 s so that a stalled connection costs
less virtual time."""
CLIENT_REQUEST_TIMEOUT_MS = 3_000
"""The producer's (``request.timeout.ms``): a client cut off from a broker moves on sooner."""


class ScheduleFailure(AssertionError):
    """The run ended without the verdict holding: names the seed and every problem."""


@dataclass(frozen=True, slots=True)
class BrokerScheduleResult:
    seed: int
    actions: list[str]
    acked: int
    sent: int
    retries: int
    events: int
    steps: int
    virtual_ms: int
    leader_epochs: int
    """The highest leader epoch any replica of the topic reached (leadership changes)."""


def _producer(sim: Simulation, brokers: tuple[int, ...], partitions: int, report: ProducerReport) -> None:
    def build(node_id: int, rng: random.Random, now_ms: int) -> IdempotentProducer:
        return IdempotentProducer(
            node_id,
            sim.incarnations[node_id],
            brokers,
            rng,
            topic=TOPIC,
            partitions=partitions,
            topic_configs={"min.insync.replicas": "2", "flush.messages": "1"},
            limit=1 << 30,
            interval_ms=20,
            request_timeout_ms=CLIENT_REQUEST_TIMEOUT_MS,
            report=report,
        )

    sim.add_node(CLIENT, build, ClientDisk())


def _leader(cluster: BrokerCluster, rng: random.Random, partitions: int) -> int | None:
    """The live broker leading a random partition of the topic, if any."""
    return partition_leader(cluster.sim, TOPIC, rng.randrange(partitions))


def _draw(rng: random.Random, cluster: BrokerCluster, partitions: int) -> str:
    """Apply one random fault; return what it was, for the result and the trace."""
    sim = cluster.sim
    ids = sorted(cluster.disks)
    up = [n for n in ids if sim.is_up(n)]
    down = [n for n in ids if not sim.is_up(n)]
    roll = rng.random()
    if roll < 0.26 and len(down) < 2:
        victim = _leader(cluster, rng, partitions) if roll < 0.12 else rng.choice(up)
        node = victim if victim is not None else rng.choice(up)
        power = rng.random() < 0.4
        cluster.disks[node].power_loss = power
        sim.crash(node)
        what = "power loss" if power else "crash"
        return f"{what} {node}{' (a leader)' if victim == node and roll < 0.12 else ''}"
    if roll < 0.40 and down:
        node = rng.choice(down)
        sim.restart(node)
        return f"restart {node}"
    if roll < 0.58:
        leader = _leader(cluster, rng, partitions) if roll < 0.48 else None
        if leader is not None:
            side, other = {leader}, {n for n in ids if n != leader}
        else:
            shuffled = ids[:]
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(ids) - 1)
            side, other = set(shuffled[:cut]), set(shuffled[cut:])
        (side if rng.random() < 0.5 else other).add(CLIENT)
        sim.partition(side, other)
        return f"partition {sorted(side)} | {sorted(other)}"
    if roll < 0.66:
        source, destination = rng.sample(ids, 2)
        sim.block(source, destination)
        return f"block {source}->{destination}"
    if roll < 0.80:
        sim.heal()
        return "heal"
    if roll < 0.90:
        faults = LinkFaults(
            drop_probability=rng.choice([0.0, 0.01, 0.05]),
            duplicate_probability=rng.choice([0.0, 0.02, 0.1]),
            min_delay_ms=1,
            max_delay_ms=rng.choice([5, 20, 80]),
        )
        sim.network.default = faults
        return (
            f"links drop={faults.drop_probability} dup={faults.duplicate_probability} "
            f"delay<={faults.max_delay_ms}"
        )
    if roll < 0.95 and sim.is_up(CLIENT):
        sim.crash(CLIENT)
        sim.restart(CLIENT)
        return "producer restart"
    return "quiet"


def run_broker_schedule(
    seed: int,
    *,
    brokers: int = 4,
    partitions: int = 2,
    actions: int = 12,
    action_interval_ms: int = 1_500,
    trace: bool = False,
    scanning: bool = False,
) -> tuple[BrokerCluster, BrokerScheduleResult]:
    """Run one random schedule and judge it; raises :class:`ScheduleFailure` or an
    :class:`~..engine.simulation.InvariantViolation`, each naming the seed. With ``scanning``,
    every partition claim the property model checks runs after every event too, the producer's
    acknowledgements judged as they come (slower: they rescan whole logs)."""
    rng = random.Random(f"broker-schedule/{seed}")
    cluster = build_broker_simulation(
        seed,
        brokers,
        faults=LinkFaults(min_delay_ms=1, max_delay_ms=5),
        request_timeout_ms=REQUEST_TIMEOUT_MS,
        trace=trace,
        scanning_claims=scanning,
    )
    sim = cluster.sim
    report = ProducerReport()
    for invariant in sim.invariants:
        if isinstance(invariant, ReplicaClaims):
            invariant.watch(TOPIC, report.acked)
    _producer(sim, tuple(sorted(cluster.disks)), partitions, report)
    if not sim.run_until_true(lambda: len(report.acked) >= 10, 30_000, EVENT_BUDGET):
        raise ScheduleFailure(
            f"seed {seed}: the healthy cluster acknowledged {len(report.acked)} writes in 30 s"
        )
    done: list[str] = []
    for _ in range(actions):
        sim.run_until(sim.now_ms + action_interval_ms, EVENT_BUDGET)
        done.append(_draw(rng, cluster, partitions))
        sim.log(f"schedule: {done[-1]}")
    _settle(cluster, report, partitions)
    epochs = [
        p.leader_epoch
        for b in live_brokers(sim).values()
        for key, p in b.partitions.items()
        if key[0] == TOPIC
    ]
    result = BrokerScheduleResult(
        seed,
        done,
        len(report.acked),
        report.sent,
        report.retries,
        sim.events,
        sim.steps,
        sim.now_ms - sim.start_ms,
        max(epochs, default=0),
    )
    return cluster, result


def _settle(
    cluster: BrokerCluster, report: ProducerReport, partitions: int, timeout_ms: int = 120_000
) -> None:
    """Heal, restart everything, demand new acknowledgements, stop writing, demand convergence."""
    sim = cluster.sim
    seed = sim.seed
    sim.heal()
    sim.network.default = LinkFaults(min_delay_ms=1, max_delay_ms=5)
    for node_id in sorted(cluster.disks):
        cluster.disks[node_id].power_loss = False
        if not sim.is_up(node_id):
            sim.restart(node_id)
    if not sim.is_up(CLIENT):
        sim.restart(CLIENT)
    before = len(report.acked)
    if not sim.run_until_true(
        lambda: len(report.acked) >= before + 20 or bool(report.fatal), timeout_ms, EVENT_BUDGET
    ):
        raise ScheduleFailure(
            f"seed {seed}: after the heal, {len(report.acked) - before} new writes acknowledged in "
            f"{timeout_ms} ms; producer errors {report.errors}"
        )
    producer = sim.node(CLIENT)
    assert isinstance(producer, IdempotentProducer)
    producer.stop()
    if not sim.run_until_true(lambda: producer.idle or bool(report.fatal), timeout_ms, EVENT_BUDGET):
        raise ScheduleFailure(f"seed {seed}: the producer's last batches were never answered")
    if report.fatal:
        raise ScheduleFailure(f"seed {seed}: the producer was told {report.fatal}")

    def converged() -> bool:
        return all(replicas_agree(sim, TOPIC, index) for index in range(partitions))

    if not sim.run_until_true(converged, timeout_ms, EVENT_BUDGET):
        raise ScheduleFailure(f"seed {seed}: the replicas did not converge in {timeout_ms} ms")
    for node_id in sorted(cluster.disks):  # every broker crashes and restarts; nothing writes since
        sim.crash(node_id)
        sim.restart(node_id)
    def readable() -> bool:
        return not unreadable_acknowledged(sim, TOPIC, report.acked)

    if not sim.run_until_true(readable, timeout_ms, EVENT_BUDGET):
        hidden = unreadable_acknowledged(sim, TOPIC, report.acked)
        raise ScheduleFailure(f"seed {seed}: after every broker restarted, with no write: {hidden[:5]}")
    if not sim.run_until_true(converged, timeout_ms, EVENT_BUDGET):
        raise ScheduleFailure(f"seed {seed}: the replicas did not converge again after the restart")
    committed = committed_batches(sim)
    problems = check_converged(sim, TOPIC, partitions, report.acked, committed)
    if problems:
        raise ScheduleFailure(f"seed {seed}: " + "; ".join(problems[:20]))
