"""A seeded random schedule against controllers and brokers: the controller's fuzz.

Three controllers (the voters) and four broker stubs (observers). Every
``action_interval_ms`` one action is drawn: create a topic, shrink or grow
an ISR through AlterPartition as the partition leader would, crash or
restart a broker or a controller, ask a broker for a controlled shutdown,
partition or heal the network. The Raft invariants and the metadata
invariants of :mod:`.invariants` run after every event; at the
end everything heals and restarts, every broker must be unfenced again,
every partition with a live ISR member must have a leader, and every node
that replayed the same offset must hold the same image.
"""

from __future__ import annotations

import itertools
import random
from typing import Any

from reference_impl.core.controller.messages import AlterPartitionRequest, CreateTopicsRequest
from reference_impl.core.controller.quorum import ControllerConfig
from reference_impl.core.metadata.image import NO_LEADER
from reference_impl.core.raft.messages import Envelope

from ..engine.simulation import Simulation
from .invariants import controller_invariants, images_agree
from .nodes import active_controller, build_controller_simulation

CONTROLLERS = (1, 2, 3)
BROKERS = (101, 102, 103, 104)
CLIENT = 0


def _ask(sim: Simulation, body: Any) -> None:
    """Send a request to the active controller, if any (the answer lands in ``sim.outside``)."""
    active = active_controller(sim)
    if active is not None:
        sim.send(Envelope(source_id=CLIENT, destination_id=active, body=body))


def _alter_isr(sim: Simulation, rng: random.Random, correlation: int) -> None:
    active = active_controller(sim)
    if active is None:
        return
    image = sim.node(active).controller.image
    partitions = [
        (t, p, i) for t in image.topics.values() for p, i in t.partitions.items() if i.leader != NO_LEADER
    ]
    if not partitions:
        return
    topic, p, info = rng.choice(sorted(partitions, key=lambda x: (x[0].name, x[1])))
    if rng.random() < 0.5:
        new_isr = tuple(sorted({info.leader, *rng.sample(info.isr, rng.randint(0, len(info.isr)))}))
    else:
        new_isr = tuple(sorted(info.replicas))
    _ask(
        sim,
        AlterPartitionRequest(
            correlation_id=correlation,
            broker_id=info.leader,
            broker_epoch=image.broker_epochs.get(info.leader, -1),
            topic_id=str(topic.topic_id),
            partition=p,
            leader_epoch=info.leader_epoch,
            partition_epoch=info.partition_epoch,
            new_isr=new_isr,
        ),
    )


def run_controller_schedule(
    seed: int, *, actions: int = 40, action_interval_ms: int = 700, trace: bool = False
) -> Simulation:
    rng = random.Random(f"controller-schedule/{seed}")
    sim, _disks = build_controller_simulation(
        seed,
        len(CONTROLLERS),
        len(BROKERS),
        controller_config=ControllerConfig(session_timeout_ms=3_000, snapshot_every_records=25),
        trace=trace,
    )
    sim.invariants.extend(controller_invariants())
    correlation = itertools.count(1)
    ids = list(CONTROLLERS + BROKERS)
    for _ in range(actions):
        sim.run_until(sim.now_ms + action_interval_ms)
        roll = rng.random()
        controllers_down = [c for c in CONTROLLERS if not sim.is_up(c)]
        brokers_down = [b for b in BROKERS if not sim.is_up(b)]
        if roll < 0.25:
            unclean = {"unclean.leader.election.enable": "true"} if rng.random() < 0.3 else {}
            _ask(
                sim,
                CreateTopicsRequest(
                    correlation_id=next(correlation),
                    name=f"t{next(correlation)}",
                    num_partitions=rng.randint(1, 4),
                    replication_factor=rng.randint(1, 3),
                    configs=tuple(unclean.items()),
                ),
            )
        elif roll < 0.40:
            _alter_isr(sim, rng, next(correlation))
        elif roll < 0.50 and len(brokers_down) < 2:
            sim.crash(rng.choice([b for b in BROKERS if sim.is_up(b)]))
        elif roll < 0.58 and brokers_down:
            sim.restart(rng.choice(brokers_down))
        elif roll < 0.64 and not controllers_down:
            sim.crash(rng.choice(CONTROLLERS))
        elif roll < 0.72 and controllers_down:
            sim.restart(rng.choice(controllers_down))
        elif roll < 0.78:
            up = [b for b in BROKERS if sim.is_up(b)]
            if up:
                sim.node(rng.choice(up)).request_controlled_shutdown()
        elif roll < 0.85:
            shuffled = ids[:]
            rng.shuffle(shuffled)
            cut = rng.randint(1, len(ids) - 1)
            sim.partition(set(shuffled[:cut]), set(shuffled[cut:]))
        else:
            sim.heal()
        for broker in BROKERS:  # a broker told to shut down exits, and comes back later
            if sim.is_up(broker) and sim.node(broker).should_shut_down:
                sim.crash(broker)
    settle_cluster(sim)
    return sim


def settle_cluster(sim: Simulation, timeout_ms: int = 60_000) -> None:
    sim.heal()
    for broker in BROKERS:  # a broker that asked to shut down exits (then restarts below)
        if sim.is_up(broker) and sim.node(broker).want_shut_down:
            sim.crash(broker)
    for node_id in CONTROLLERS + BROKERS:
        if not sim.is_up(node_id):
            sim.restart(node_id)

    def settled() -> bool:
        active = active_controller(sim)
        if active is None or any(sim.node(b).fenced for b in BROKERS):
            return False
        image = sim.node(active).controller.image
        return all(
            info.leader != NO_LEADER
            for topic in image.topics.values()
            for info in topic.partitions.values()
            if any(r in image.live_brokers() for r in info.isr)
        )

    if not sim.run_until_true(settled, timeout_ms):
        raise AssertionError(f"seed {sim.seed}: the cluster did not settle in {timeout_ms} ms")
    sim.run_until(sim.now_ms + 3_000)
    problem = images_agree(sim)
    if problem is not None:
        raise AssertionError(f"seed {sim.seed}: {problem}")
