"""How fast the simulator runs: ``python -m reference_impl.sim.bench``.

Prints simulated node steps per wall-clock second (a step is one call of a
node's ``step``: one message handled or one timer fired) for:

* ``replication``: a healthy 3-voter quorum, a client appending one record
  every virtual millisecond, followers long-polling the leader; also printed
  as produce+replicate steps per second, the client's appends on the leader
  counted with the node steps (an append is not a node step here: the client
  calls the leader's ``append`` directly);
* ``replication+invariants``: the same with every invariant checked after every event;
* ``faults``: the seeded random schedule of crashes, partitions and lossy links;
* ``brokers``: three whole brokers (KRaft quorum, controller, replica fetchers, real Kafka
  frames over the simulated TCP) and an idempotent acks=all producer on a topic with
  replication factor 3; also printed as records acknowledged per second, and with every broker
  and quorum invariant checked after every event (``brokers+invariants``).

Figures are from one run on whatever machine runs it; the wall clock is read
here only, never in the cores or the simulator.
"""

from __future__ import annotations

import argparse
import random
import time
from collections.abc import Callable

from reference_impl.core.raft.api import NotLeaderError, RaftConfig

from .broker.nodes import build_broker_simulation
from .broker.producer import ClientDisk, IdempotentProducer, ProducerReport
from .engine.network import LinkFaults
from .engine.simulation import Simulation
from .raft.fuzz import run_schedule
from .raft.nodes import build_raft_simulation, current_leader


def _replication(seed: int, virtual_ms: int, invariants: bool) -> tuple[Simulation, int, int]:
    """The run, the records committed, and the client's appends accepted by a leader."""
    sim, _disks = build_raft_simulation(
        seed,
        3,
        config=RaftConfig(),
        faults=LinkFaults(min_delay_ms=1, max_delay_ms=2),
        trace=False,
        check_invariants=invariants,
    )
    sim.run_until_true(lambda: current_leader(sim) is not None, 10_000)
    start_ms = sim.now_ms
    appended = [0]

    def write() -> None:
        leader = current_leader(sim)
        if leader is not None:
            try:
                sim.node(leader).raft.append([b"x" * 100], sim.now_ms)
                appended[0] += 1
            except NotLeaderError:
                pass
        if sim.now_ms < start_ms + virtual_ms:
            sim.at(sim.now_ms + 1, "append", write)

    sim.at(start_ms, "append", write)
    sim.run_until(start_ms + virtual_ms)
    leader = current_leader(sim)
    committed = 0 if leader is None else len(sim.node(leader).committed)
    return sim, committed, appended[0]


def _brokers(seed: int, virtual_ms: int, invariants: bool) -> tuple[Simulation, int]:
    """Three brokers and a producer writing 3 partitions as fast as acks=all lets it; the run
    and the records acknowledged in ``virtual_ms`` once the topic exists."""
    cluster = build_broker_simulation(seed, 3, trace=False, check_invariants=invariants)
    sim = cluster.sim
    report = ProducerReport()

    def producer(node_id: int, rng: random.Random, now_ms: int) -> IdempotentProducer:
        return IdempotentProducer(
            node_id,
            sim.incarnations[node_id],
            (1, 2, 3),
            rng,
            partitions=3,
            limit=1 << 30,
            interval_ms=0,
            batch_records=10,
            report=report,
        )

    sim.add_node(100, producer, ClientDisk())
    sim.run_until_true(lambda: len(report.acked) > 0, 30_000)
    sim.run_until(sim.now_ms + virtual_ms)
    return sim, len(report.acked)


def _timed(run: Callable[[], tuple[int, int, str]]) -> tuple[float, int, int, str]:
    started = time.perf_counter()
    steps, events, extra = run()
    return time.perf_counter() - started, steps, events, extra


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--virtual-ms", type=int, default=20_000, help="virtual time of the replication runs")
    parser.add_argument("--schedules", type=int, default=20, help="random fault schedules to run")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)

    appends: dict[str, int] = {}

    def replication(invariants: bool, name: str) -> Callable[[], tuple[int, int, str]]:
        def run() -> tuple[int, int, str]:
            sim, committed, appended = _replication(args.seed, args.virtual_ms, invariants)
            appends[name] = appended
            return sim.steps, sim.events, f"{committed} records committed in {args.virtual_ms} virtual ms"

        return run

    acked: dict[str, int] = {}

    def brokers(invariants: bool, name: str) -> Callable[[], tuple[int, int, str]]:
        def run() -> tuple[int, int, str]:
            sim, records = _brokers(args.seed, args.virtual_ms // 4, invariants)
            acked[name] = records
            return (
                sim.steps,
                sim.events,
                f"{records:,} records acknowledged in {args.virtual_ms // 4} virtual ms",
            )

        return run

    def faults() -> tuple[int, int, str]:
        steps = events = 0
        for seed in range(args.seed, args.seed + args.schedules):
            sim, _result = run_schedule(seed, voters=3, actions=60, action_interval_ms=250)
            steps += sim.steps
            events += sim.events
        return steps, events, f"{args.schedules} schedules, invariants on"

    for name, run in (
        ("replication", replication(False, "replication")),
        ("replication+invariants", replication(True, "replication+invariants")),
        ("faults", faults),
        ("brokers", brokers(False, "brokers")),
        ("brokers+invariants", brokers(True, "brokers+invariants")),
    ):
        seconds, steps, events, extra = _timed(run)
        print(
            f"{name:<24} {steps / seconds:>10,.0f} steps/s  {events / seconds:>10,.0f} events/s  "
            f"({steps:,} steps in {seconds:.2f} s; {extra})"
        )
        if name in acked:
            print(f"{'':<24} {acked[name] / seconds:>10,.0f} records acknowledged/s (acks=all, RF=3)")
        if name in appends:
            both = steps + appends[name]
            print(
                f"{'':<24} {both / seconds:>10,.0f} produce+replicate steps/s "
                f"({appends[name]:,} client appends + {steps:,} node steps)"
            )


if __name__ == "__main__":
    main()
