"""The simulated network and scheduler: every fault is seeded, in-flight messages respect partitions."""

from __future__ import annotations

import itertools
import random

import pytest

from reference_impl.core.raft.messages import Envelope
from reference_impl.sim.engine.network import LinkFaults, Network
from reference_impl.sim.engine.scheduler import Action, Scheduler
from reference_impl.sim.engine.simulation import Simulation


def test_faults_are_drawn_from_the_seed() -> None:
    faults = LinkFaults(drop_probability=0.3, duplicate_probability=0.3, min_delay_ms=1, max_delay_ms=50)
    first = Network(random.Random(7), faults)
    second = Network(random.Random(7), faults)
    a = [first.deliveries(1, 2) for _ in range(200)]
    b = [second.deliveries(1, 2) for _ in range(200)]
    assert a == b
    assert any(not d for d in a) and any(len(d) == 2 for d in a)  # some dropped, some duplicated
    delays = [d[0] for d in a if d]
    assert any(x > y for x, y in itertools.pairwise(delays))  # later sends may arrive first


def test_links_can_differ_and_partitions_block_both_ways() -> None:
    network = Network(random.Random(1))
    network.set_link(1, 2, LinkFaults(drop_probability=1.0))
    assert network.deliveries(1, 2) == []
    assert len(network.deliveries(2, 1)) == 1
    network.partition([{1}, {2, 3}])
    assert network.is_blocked(3, 1) and network.is_blocked(1, 3) and not network.is_blocked(2, 3)
    network.heal()
    assert not network.is_blocked(3, 1)


def test_bad_faults_are_refused() -> None:
    with pytest.raises(ValueError):
        LinkFaults(drop_probability=1.5)
    with pytest.raises(ValueError):
        LinkFaults(min_delay_ms=5, max_delay_ms=1)


def test_events_at_the_same_time_run_in_scheduling_order() -> None:
    scheduler = Scheduler()
    ran: list[str] = []
    for name in ("a", "b", "c"):
        scheduler.schedule(10, Action(name, lambda name=name: ran.append(name)))  # type: ignore[misc]
    scheduler.schedule(5, Action("first", lambda: ran.append("first")))
    while (event := scheduler.pop()) is not None:
        assert isinstance(event, Action)
        event.run()
    assert ran == ["first", "a", "b", "c"] and scheduler.now_ms == 10


def test_a_message_in_flight_when_a_partition_starts_is_lost() -> None:
    sim = Simulation(3, faults=LinkFaults(min_delay_ms=10, max_delay_ms=10))
    sim.send(Envelope(source_id=1, destination_id=9, body="hello"))
    sim.send(Envelope(source_id=2, destination_id=9, body="world"))
    sim.at(5, "cut", lambda: sim.partition({1}, {9}))
    sim.run_until(100)
    assert [e.body for e in sim.outside[9]] == ["world"]
    assert any("lost 1->9 (partitioned)" in line for line in sim.trace)
