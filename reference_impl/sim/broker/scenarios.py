"""The KIP-101 and KIP-279 failure stories, replayed on whole simulated brokers.

Each scenario is a script over a :func:`build_broker_simulation` cluster: a
client producing with acks=all and idempotence, the real controller electing
leaders, one-way link cuts and crashes placed at the moment the story needs
them (the script waits for a condition, then acts). Every broker invariant
is checked after every event; at the end every node is up, the network is
whole, and :func:`check_converged` gives the verdict. A scenario returns what
it observed so a test can assert on the moments that make the story (a
follower that kept records past its HW, a log that diverged, then truncated).

Replicas are placed off the quorum voters (voters 1-3, replicas on 4 and up)
so crashing replicas never costs the controller its majority, as in the KIPs,
where the controller is a separate process.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..engine.simulation import Simulation
from .invariants import (
    check_converged,
    committed_batches,
    live_brokers,
    partition_leader,
    partition_states,
    replicas_agree,
    unreadable_acknowledged,
)
from .nodes import EVENT_BUDGET, BrokerCluster, build_broker_simulation
from .producer import ClientDisk, IdempotentProducer, ProducerReport

TOPIC = "story"
CLIENT = 100
VOTERS = 3


class ScenarioError(AssertionError):
    """The story did not unfold as scripted (a wait ran out): names the step and the state."""


@dataclass
class ScenarioResult:
    cluster: BrokerCluster
    report: ProducerReport
    problems: list[str]
    observed: dict[str, Any] = field(default_factory=dict)

    @property
    def sim(self) -> Simulation:
        return self.cluster.sim


def _cluster(seed: int, brokers: int, trace: bool) -> BrokerCluster:
    return build_broker_simulation(seed, brokers, voters=VOTERS, trace=trace)


def _producer(
    cluster: BrokerCluster,
    report: ProducerReport,
    replicas: list[int],
    min_isr: int,
    limit: int,
    configs: dict[str, str] | None = None,
) -> IdempotentProducer:
    sim = cluster.sim
    brokers = tuple(sorted(cluster.disks))

    def build(node_id: int, rng: object, now_ms: int) -> IdempotentProducer:
        assert hasattr(rng, "random")
        return IdempotentProducer(
            node_id,
            sim.incarnations[node_id],
            brokers,
            rng,  # type: ignore[arg-type]
            topic=TOPIC,
            assignments={0: replicas},
            topic_configs={"min.insync.replicas": str(min_isr), **(configs or {})},
            limit=limit,
            report=report,
        )

    sim.add_node(CLIENT, build, ClientDisk())
    node = sim.node(CLIENT)
    assert isinstance(node, IdempotentProducer)
    return node


def _allow(sim: Simulation, producer: IdempotentProducer, limit: int) -> None:
    """Let the producer go on to ``limit`` acknowledged values, from now."""
    producer.limit = limit
    sim.wake(CLIENT)


def _wait(sim: Simulation, what: str, condition: Callable[[], bool], timeout_ms: int = 30_000) -> None:
    if not sim.run_until_true(condition, timeout_ms, EVENT_BUDGET):
        raise ScenarioError(
            f"waited {timeout_ms} virtual ms for {what}; partition: {partition_states(sim, TOPIC)}"
        )


def leader_of(sim: Simulation) -> int | None:
    """The live replica that leads the story's partition in the newest epoch."""
    return partition_leader(sim, TOPIC, 0)


def _registered(sim: Simulation, node_id: int) -> bool:
    quorum = live_brokers(sim)[node_id].quorum
    return quorum is not None and quorum.broker_epoch >= 0


def log_end(sim: Simulation, node_id: int) -> int:
    part = live_brokers(sim)[node_id].partition(TOPIC, 0)
    return -1 if part is None else part.log.log_end_offset


def high_watermark(sim: Simulation, node_id: int) -> int:
    part = live_brokers(sim)[node_id].partition(TOPIC, 0)
    return -1 if part is None else part.high_watermark


def _finish(
    cluster: BrokerCluster, producer_id: int, report: ProducerReport, observed: dict[str, Any]
) -> ScenarioResult:
    """Heal, start every node, let the producer finish, wait for the replicas to agree, judge."""
    sim = cluster.sim
    sim.heal()
    for node_id in cluster.disks:
        if not sim.is_up(node_id):
            sim.restart(node_id)
    producer = sim.node(producer_id)
    _wait(sim, "the producer's last batch", lambda: producer.idle and producer.done, 60_000)
    _wait(sim, "every replica to agree", lambda: replicas_agree(sim, TOPIC, 0), 60_000)
    committed = committed_batches(sim)
    problems = check_converged(sim, TOPIC, 1, report.acked, committed)
    if report.fatal:
        problems += [f"producer: {f}" for f in report.fatal]
    return ScenarioResult(cluster, report, problems, observed)


def _follower_past_its_hw(seed: int, trace: bool) -> tuple[BrokerCluster, ProducerReport, IdempotentProducer]:
    """Replicas [4, 5], min.insync.replicas=2, leader 4: m0 and m1 acknowledged, 5 holds both but
    its HW says 1, since the answer that would tell it HW=2 is lost (link 4->5 cut)."""
    cluster = _cluster(seed, 5, trace)
    sim = cluster.sim
    report = ProducerReport()
    producer = _producer(cluster, report, [4, 5], min_isr=2, limit=1)
    _wait(sim, "4 to lead", lambda: leader_of(sim) == 4)
    _wait(sim, "m0 acknowledged and on 5", lambda: len(report.acked) >= 1 and high_watermark(sim, 5) >= 1)
    _allow(sim, producer, 2)
    _wait(sim, "5 to append m1", lambda: log_end(sim, 5) >= 2)
    sim.block(4, 5)  # 5's next fetch tells 4 it has m1; the answer carrying HW=2 is lost
    _wait(sim, "m1 acknowledged", lambda: len(report.acked) >= 2)
    return cluster, report, producer


def _image_partition(sim: Simulation) -> tuple[int, tuple[int, ...]] | None:
    """(leader, ISR) of the story's partition in the metadata image of a live voter."""
    for node_id in range(1, VOTERS + 1):
        if sim.is_up(node_id):
            topic = live_brokers(sim)[node_id].image.topics.get(TOPIC)
            if topic is not None and 0 in topic.partitions:
                p = topic.partitions[0]
                return p.leader, tuple(p.isr)
    return None


def kip101_hw_truncation_then_election(seed: int = 1, trace: bool = True) -> ScenarioResult:
    """KIP-101 scenario 1: a follower holding a record past its high watermark is elected at once
    when the leader dies. Before KIP-101 it truncated to its HW first and lost that
    acknowledged record; a leader must keep everything it holds.

    From :func:`_follower_past_its_hw`, leader 4 crashes: the controller elects 5, which must
    still hold m1 and go on taking writes after it.
    """
    cluster, report, producer = _follower_past_its_hw(seed, trace)
    sim = cluster.sim
    observed: dict[str, Any] = {"follower (LEO, HW)": (log_end(sim, 5), high_watermark(sim, 5))}
    sim.crash(4)
    _wait(sim, "5 to lead", lambda: leader_of(sim) == 5)
    observed["new leader (LEO, HW)"] = (log_end(sim, 5), high_watermark(sim, 5))
    _allow(sim, producer, 4)  # the client goes on writing to the new leader
    return _finish(cluster, CLIENT, report, observed)


def kip101_restart_then_leader_crash(seed: int = 1, trace: bool = True) -> ScenarioResult:
    """KIP-101 scenario 1 as it first happened: the follower restarts (it must not truncate to its
    checkpointed HW), then the leader dies. In KRaft the controller takes a re-registering
    broker out of every ISR, as it may have lost data, so the partition waits, leaderless, for
    the old leader rather than electing the restarted follower; nothing acknowledged is lost
    either way. The restarted process registers once its predecessor's session has lapsed (until
    then the controller answers DUPLICATE_BROKER_REGISTRATION, as Kafka's does), so the leader
    dies after that.
    """
    cluster, report, producer = _follower_past_its_hw(seed, trace)
    sim = cluster.sim
    observed: dict[str, Any] = {"follower (LEO, HW)": (log_end(sim, 5), high_watermark(sim, 5))}
    sim.crash(5)
    sim.restart(5)
    _wait(sim, "5 to reopen the partition", lambda: log_end(sim, 5) >= 0)
    observed["after restart (LEO, HW)"] = (log_end(sim, 5), high_watermark(sim, 5))
    _wait(sim, "5 to register again", lambda: _registered(sim, 5))
    sim.crash(4)
    _wait(sim, "the controller to see 4 gone", lambda: (_image_partition(sim) or (0, ()))[0] == -1)
    observed["while 4 is down (leader, ISR)"] = _image_partition(sim)
    _allow(sim, producer, 4)
    return _finish(cluster, CLIENT, report, observed)


def kip101_divergence_after_hard_failures(seed: int = 1, trace: bool = True) -> ScenarioResult:
    """KIP-101 scenario 2: after power failures, an old leader comes back holding a batch at an
    offset where the current leader holds a different batch, written in a later epoch. It
    must truncate by epoch (to where its last epoch ends on the leader), not keep its copy:
    keeping it would leave the replicas different below the HW for ever.

    Replicas [4, 5], min.insync.replicas=1, ``flush.messages=1`` (so a power loss keeps every
    record, and the divergent one survives). 4 appends m1 that 5 never fetches (link 4->5 cut)
    and loses power; 5 leads in epoch 1 and takes the producer's retry of m1 at the same
    offset, then loses power too. 4 restarts first (out of the ISR, it cannot lead), 5 restarts
    and leads again, 4 follows it.
    """
    cluster = _cluster(seed, 5, trace)
    sim = cluster.sim
    for node_id in (4, 5):
        cluster.disks[node_id].power_loss = True
    report = ProducerReport()
    producer = _producer(cluster, report, [4, 5], min_isr=1, limit=1, configs={"flush.messages": "1"})
    _wait(sim, "4 to lead", lambda: leader_of(sim) == 4)
    _wait(sim, "m0 acknowledged and on 5", lambda: len(report.acked) >= 1 and high_watermark(sim, 5) >= 1)
    sim.block(4, 5)
    _allow(sim, producer, 2)
    _wait(sim, "m1 appended on 4 only", lambda: log_end(sim, 4) >= 2)
    sim.crash(4)
    sim.heal()
    _wait(sim, "5 to lead", lambda: leader_of(sim) == 5)
    # 4 lost power: no reset reached the producer, whose request to 4 times out first (30 s).
    _wait(sim, "m1 acknowledged by 5", lambda: len(report.acked) >= 2, 60_000)
    sim.crash(5)
    sim.restart(4)
    _wait(sim, "4 to reopen the partition", lambda: log_end(sim, 4) >= 0)
    observed: dict[str, Any] = {
        "old leader after power loss (LEO, epochs)": (log_end(sim, 4), _epochs(cluster, 4)),
        "new leader's epochs": _epochs(cluster, 5),
    }
    sim.restart(5)
    _wait(sim, "5 to lead again", lambda: leader_of(sim) == 5)
    _allow(sim, producer, 4)
    result = _finish(cluster, CLIENT, report, observed)
    result.observed["final epochs"] = {n: _epochs(cluster, n) for n in (4, 5)}
    return result


def _epochs(cluster: BrokerCluster, node_id: int) -> list[tuple[int, int]]:
    """(epoch, start offset) of the story partition's epoch cache on ``node_id``'s disk."""
    log = cluster.disks[node_id].store.logs.get((TOPIC, 0))
    return [] if log is None else [(e.epoch, e.start_offset) for e in log.epoch_entries()]


def kip279_fast_failover(seed: int = 1, trace: bool = True) -> ScenarioResult:
    """KIP-279: leadership moves twice before the old leaders fetch again, each leaving a suffix
    of its own epoch; the followers several epochs behind truncate in steps until their logs
    match the last leader's.

    Replicas [4, 5, 6], min.insync.replicas=1. 4 appends m1 that nobody fetches (links 4->5,
    4->6 cut) and crashes; 5 leads, takes the retry of m1 in its epoch, nobody fetches it (5->6
    cut), crashes; 6 leads and takes it again, acknowledged.
    """
    cluster = _cluster(seed, 6, trace)
    sim = cluster.sim
    report = ProducerReport()
    producer = _producer(cluster, report, [4, 5, 6], min_isr=1, limit=1)
    _wait(sim, "4 to lead", lambda: leader_of(sim) == 4)
    _wait(
        sim,
        "m0 on every replica",
        lambda: len(report.acked) >= 1 and high_watermark(sim, 5) >= 1 and high_watermark(sim, 6) >= 1,
    )
    sim.block(4, 5, 6)
    _allow(sim, producer, 3)
    _wait(sim, "m1 appended on 4 only", lambda: log_end(sim, 4) >= 2)
    sim.crash(4)
    _wait(sim, "5 to lead", lambda: leader_of(sim) == 5)
    sim.block(5, 6)
    _wait(sim, "m1 appended on 5 only", lambda: log_end(sim, 5) >= 2)
    sim.crash(5)
    _wait(sim, "6 to lead", lambda: leader_of(sim) == 6)
    _wait(sim, "m1 acknowledged by 6", lambda: len(report.acked) >= 2)
    observed: dict[str, Any] = {"epochs when 6 took m1": {n: _epochs(cluster, n) for n in (4, 5, 6)}}
    result = _finish(cluster, CLIENT, report, observed)
    result.observed["final epochs"] = {n: _epochs(cluster, n) for n in (4, 5, 6)}
    return result


READABLE_BOUND_MS = 10_000
"""How long after a restart every acknowledged record may take to be readable again."""


def restart_then_read_without_writing(
    seed: int = 1, replicas: tuple[int, ...] = (4,), trace: bool = True
) -> ScenarioResult:
    """Issue 17 item 9: records acknowledged after the leader's last high-watermark checkpoint,
    the producer stopped, the leader crashes (a process crash: the page cache keeps every byte)
    and restarts at once. With nothing written since, every acknowledged record must be readable
    again (below the serving leader's HW) within :data:`READABLE_BOUND_MS`; a HW that moves only
    on the next write would leave them hidden for ever.

    Kafka: the checkpointed HW is loaded as the log is created, then ``makeLeader`` runs
    ``maybeIncrementLeaderHW`` (a lone leader's log end at once; a replicated one's as its
    followers' fetches confirm). In KRaft the restarted broker's new registration also fences it
    and its partitions get a new leader epoch, whose ``makeLeader`` recomputes the HW again.
    """
    cluster = _cluster(seed, max(VOTERS, *replicas), trace)
    sim = cluster.sim
    report = ProducerReport()
    producer = _producer(cluster, report, list(replicas), min_isr=1, limit=20)
    _wait(sim, f"{replicas[0]} to lead", lambda: leader_of(sim) == replicas[0])
    _wait(sim, "20 acknowledged", lambda: len(report.acked) >= 20)
    sim.run_until(sim.now_ms + 6_000, EVENT_BUDGET)  # a HW checkpoint (every 5 s) holds those 20
    _allow(sim, producer, 60)
    _wait(sim, "40 more acknowledged", lambda: len(report.acked) >= 60)
    producer.stop()
    _wait(sim, "the producer's last answer", lambda: producer.idle)
    leader = leader_of(sim)
    assert leader is not None
    before = (log_end(sim, leader), high_watermark(sim, leader))
    observed: dict[str, Any] = {"leader (LEO, HW) before the crash": before}
    sim.crash(leader)
    sim.restart(leader)
    restarted_ms = sim.now_ms
    readable = sim.run_until_true(
        lambda: not unreadable_acknowledged(sim, TOPIC, report.acked), READABLE_BOUND_MS, EVENT_BUDGET
    )
    hidden = unreadable_acknowledged(sim, TOPIC, report.acked)
    observed["readable after (virtual ms)"] = sim.now_ms - restarted_ms if readable else None
    result = _finish(cluster, CLIENT, report, observed)
    result.problems[:0] = [f"{READABLE_BOUND_MS} ms after the restart, with no write: {p}" for p in hidden]
    return result
