"""Claims about replicated partitions, checked on whole simulated brokers after every event.

The quorum's claims (:mod:`..raft.invariants`) hold for the brokers' metadata log
as they do for bare voters; these are the partition-replication ones, each
naming its source. They read every live broker's :class:`Partition` objects
and logs: the replica's LEO, HW, leader epoch, epoch cache and ISR, and the
committed metadata image. :func:`check_converged` is the end-of-run verdict,
once faults have stopped and every node is up again: replicas identical,
every acknowledged record present once at the offset it was acknowledged with.
"""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Iterable, Sequence
from typing import Any

from reference_impl.core.broker import Broker
from reference_impl.core.partition import Partition
from reference_impl.log.api import PartitionLog
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import parse_header

from ..engine.simulation import Simulation
from ..raft.invariants import raft_invariants
from .producer import Acked

PartitionKey = tuple[uuid.UUID, int]
BatchId = tuple[int, int, int]
"""A batch as every replica must hold it: (last offset, CRC, partition leader epoch)."""


def live_brokers(sim: Simulation) -> dict[int, Broker]:
    """The running nodes that are brokers (simulated nodes holding a ``broker`` core), by id."""
    out = {}
    for node_id, node in sorted(sim.nodes.items()):
        broker = getattr(node, "broker", None)
        if broker is not None:
            out[node_id] = broker
    return out


def partition_leader(sim: Simulation, topic: str, index: int) -> int | None:
    """The live broker leading ``topic``-``index`` in the newest leader epoch any of them holds."""
    best: tuple[int, int] | None = None
    for node_id, broker in live_brokers(sim).items():
        part = broker.partition(topic, index)
        if part is not None and part.is_leader and (best is None or part.leader_epoch > best[0]):
            best = (part.leader_epoch, node_id)
    return None if best is None else best[1]


def partition_states(sim: Simulation, topic: str, index: int = 0) -> dict[str, Any]:
    """The partition as each live broker holds it: leader, epoch, ISR, LEO, HW (for failures)."""
    out: dict[str, Any] = {}
    for node_id, broker in live_brokers(sim).items():
        part = broker.partition(topic, index)
        if part is not None:
            out[f"node {node_id}"] = {
                "leader": part.leader_id,
                "epoch": part.leader_epoch,
                "isr": part.isr,
                "leo": part.log.log_end_offset,
                "hw": part.high_watermark,
            }
    return out


def _replicas(sim: Simulation) -> Iterable[tuple[int, Partition]]:
    for node_id, broker in live_brokers(sim).items():
        for part in broker.partitions.values():
            yield node_id, part


def batches(log: PartitionLog, start: int, end: int) -> list[tuple[int, BatchId, bytes]]:
    """(base offset, identity, bytes) of every whole batch of ``log`` in [start, end)."""
    if end <= start or start < log.log_start_offset:
        return []
    out = []
    for chunk in log.read(start, 1 << 40, max_offset=end).chunks:
        assert isinstance(chunk, bytes), "simulated logs are in memory"
        header = parse_header(chunk)
        if header.last_offset >= end:
            break
        out.append(
            (header.base_offset, (header.last_offset, header.crc, header.partition_leader_epoch), chunk)
        )
    return out


class ReplicaOffsetsOrdered:
    """On every replica, log start ≤ high watermark ≤ log end offset.

    Source: seed 002 (a follower's HW is min(leader HW, own LEO)); Kafka's ``Partition``.
    """

    name = "ReplicaOffsetsOrdered"

    def check(self, sim: Simulation) -> str | None:
        for node_id, part in _replicas(sim):
            log = part.log
            if not log.log_start_offset <= part.high_watermark <= log.log_end_offset:
                return (
                    f"node {node_id} {part.topic}-{part.index}: start {log.log_start_offset}, "
                    f"HW {part.high_watermark}, LEO {log.log_end_offset}"
                )
        return None


class CommittedBatchesAgree:
    """Every batch below any replica's high watermark is the same batch on every replica, for
    ever: what was committed is never replaced, across leader changes and crashes.

    Source: seed 002 and KIP-101 (committed messages are not lost or changed by truncation);
    Kafka's replication design (the HW marks what every ISR member holds).
    """

    name = "CommittedBatchesAgree"

    def __init__(self) -> None:
        self.committed: dict[PartitionKey, dict[int, BatchId]] = {}
        self.checked: dict[tuple[int, int, PartitionKey], int] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, part in _replicas(sim):
            key = (part.topic_id, part.index)
            seen = (node_id, sim.incarnations[node_id], key)
            start = min(self.checked.get(seen, part.log.log_start_offset), part.log.log_end_offset)
            start = max(start, part.log.log_start_offset)
            hw = part.high_watermark
            if hw <= start:
                self.checked[seen] = start
                continue
            known = self.committed.setdefault(key, {})
            for base, identity, _data in batches(part.log, start, hw):
                first = known.setdefault(base, identity)
                if first != identity:
                    return (
                        f"node {node_id} {part.topic}-{part.index} holds batch {identity} at {base} "
                        f"below its HW {hw}; the committed batch there is {first}"
                    )
                start = identity[0] + 1
            self.checked[seen] = start
        return None


class OnePartitionLeaderPerEpoch:
    """No two replicas lead a partition in the same leader epoch.

    Source: seed 002 (the controller bumps the leader epoch on every leader change); KIP-101.
    """

    name = "OnePartitionLeaderPerEpoch"

    def __init__(self) -> None:
        self.leaders: dict[tuple[uuid.UUID, int, int], int] = {}

    def check(self, sim: Simulation) -> str | None:
        for node_id, part in _replicas(sim):
            if part.is_leader:
                first = self.leaders.setdefault((part.topic_id, part.index, part.leader_epoch), node_id)
                if first != node_id:
                    return f"{part.topic}-{part.index} epoch {part.leader_epoch} led by {first} and {node_id}"
        return None


class EpochCacheOrdered:
    """A replica's leader-epoch cache rises in epoch and never falls in start offset, and no entry
    starts past the log end.

    Source: KIP-101 (``leader-epoch-checkpoint``); Kafka's ``LeaderEpochFileCache``.
    """

    name = "EpochCacheOrdered"

    def check(self, sim: Simulation) -> str | None:
        for node_id, part in _replicas(sim):
            entries = part.log.epoch_entries()
            for before, after in itertools.pairwise(entries):
                if after.epoch <= before.epoch or after.start_offset < before.start_offset:
                    return f"node {node_id} {part.topic}-{part.index} epoch cache {entries}"
            if entries and entries[-1].start_offset > part.log.log_end_offset:
                return f"node {node_id} {part.topic}-{part.index} epoch cache {entries} past LEO"
        return None


class LoneLeaderCommitsItsLog:
    """A leader with no follower to wait for (its maximal ISR is itself, and
    ``min.insync.replicas`` is 1) has its log end as its high watermark, after every event: what
    it acknowledged is readable, restarted or not, with no new write.

    Source: Kafka's ``Partition.makeLeader`` (the checkpointed HW is loaded as the log is created,
    then ``maybeIncrementLeaderHW``) and ``UnifiedLog.maybeIncrementHighWatermark`` (a leader's HW
    never moves back); issue 17 item 9 (a checkpoint restored after the role hid acknowledged
    records until the next write).
    """

    name = "LoneLeaderCommitsItsLog"

    def check(self, sim: Simulation) -> str | None:
        for node_id, part in _replicas(sim):
            if (
                part.is_leader
                and part.effective_isr == (node_id,)
                and part.min_insync_replicas <= 1
                and part.high_watermark != part.log.log_end_offset
            ):
                return (
                    f"node {node_id} leads {part.topic}-{part.index} alone (epoch {part.leader_epoch}) "
                    f"with HW {part.high_watermark} below its LEO {part.log.log_end_offset}"
                )
        return None


class IsrWithinReplicas:
    """In every committed metadata image, the ISR is a non-empty subset of the replicas and the
    leader is an ISR member (or none).

    Source: seed 002 and KIP-841 (the controller's ISR rules); Kafka's ``PartitionRegistration``.
    """

    name = "IsrWithinReplicas"

    def check(self, sim: Simulation) -> str | None:
        for node_id, broker in live_brokers(sim).items():
            for topic in broker.image.topics.values():
                for index, p in topic.partitions.items():
                    isr, replicas = set(p.isr), set(p.replicas)
                    if not isr or not isr <= replicas or (p.leader >= 0 and p.leader not in isr):
                        return (
                            f"node {node_id}'s image: {topic.name}-{index} leader {p.leader}, "
                            f"ISR {p.isr}, replicas {p.replicas}"
                        )
        return None


def broker_invariants() -> list[Any]:
    """The partition claims and the metadata quorum's."""
    return [
        ReplicaOffsetsOrdered(),
        CommittedBatchesAgree(),
        OnePartitionLeaderPerEpoch(),
        EpochCacheOrdered(),
        LoneLeaderCommitsItsLog(),
        IsrWithinReplicas(),
        *raft_invariants(),
    ]


def replicas_agree(sim: Simulation, topic: str, index: int) -> bool:
    """Whether one live broker leads ``topic``-``index`` and every replica it lists is live, holds
    the partition, and has the leader's log end as its log end and high watermark."""
    held = {n: b.partition(topic, index) for n, b in live_brokers(sim).items()}
    leaders = [p for p in held.values() if p is not None and p.is_leader]
    if len(leaders) != 1:
        return False
    end = leaders[0].log.log_end_offset
    for replica in leaders[0].replicas:
        part = held.get(replica)
        if part is None or part.log.log_end_offset != end or part.high_watermark != end:
            return False
    return True


def unreadable_acknowledged(sim: Simulation, topic: str, acked: Sequence[Acked]) -> list[str]:
    """Acknowledged values a consumer cannot read now: no live leader for their partition, or at or
    above its leader's high watermark. Empty once every acknowledged record is committed and served.

    Source: Kafka's ``Partition.makeLeader`` and ``maybeIncrementLeaderHW`` (a leader's HW follows
    its ISR, new write or not); issue 17 item 9 (records hidden after a restart until the next write).
    """
    highest: dict[int, int] = {}
    for ack in acked:
        highest[ack.partition] = max(highest.get(ack.partition, -1), ack.offset)
    problems = []
    for index, offset in sorted(highest.items()):
        leader = partition_leader(sim, topic, index)
        part = live_brokers(sim)[leader].partition(topic, index) if leader is not None else None
        if part is None:
            problems.append(f"{topic}-{index}: no live leader")
        elif part.high_watermark <= offset:
            problems.append(
                f"{topic}-{index}: acknowledged up to {offset}, leader {leader} serves below HW "
                f"{part.high_watermark} (LEO {part.log.log_end_offset})"
            )
    return problems


def check_converged(
    sim: Simulation,
    topic: str,
    partitions: int,
    acked: Sequence[Acked],
    committed: CommittedBatchesAgree | None,
) -> list[str]:
    """The end-of-run verdict for ``topic``; empty when it holds.

    * every replica of each partition holds the same batches as the leader, whose HW is its LEO;
    * every acknowledged value is in the log, at the offset it was acknowledged with;
    * no value is in the log twice (the producer is idempotent);
    * each producer incarnation's values appear in the order it sent them;
    * every batch that was ever committed is still there.
    """
    problems: list[str] = []
    by_offset: dict[tuple[int, int], bytes | None] = {}
    for index in range(partitions):
        holders = [
            (n, b.partition(topic, index)) for n, b in live_brokers(sim).items() if b.partition(topic, index)
        ]
        leaders = [(n, p) for n, p in holders if p is not None and p.is_leader]
        if len(leaders) != 1:
            problems.append(f"{topic}-{index}: leaders {[n for n, _ in leaders]}")
            continue
        leader_id, leader = leaders[0]
        assert leader is not None
        missing = sorted(set(leader.replicas) - {n for n, _ in holders})
        if missing:
            problems.append(f"{topic}-{index}: replicas {missing} of {leader.replicas} hold no copy")
        log = leader.log
        if leader.high_watermark != log.log_end_offset:
            problems.append(
                f"{topic}-{index}: leader {leader_id} HW {leader.high_watermark} < LEO {log.log_end_offset}"
            )
        reference = [(b, i) for b, i, _ in batches(log, log.log_start_offset, log.log_end_offset)]
        for n, part in holders:
            assert part is not None
            mine = [
                (b, i) for b, i, _ in batches(part.log, part.log.log_start_offset, part.log.log_end_offset)
            ]
            if mine != reference:
                problems.append(
                    f"{topic}-{index}: node {n} holds {len(mine)} batches, leader {len(reference)}; "
                    f"first difference: {_first_difference(mine, reference)}"
                )
        for _base, _identity, data in batches(log, log.log_start_offset, log.log_end_offset):
            header = parse_header(data)
            if header.is_control:
                continue
            for record in iter_records(data, header):
                by_offset[(index, record.offset)] = record.value
        if committed is not None:
            present = {b: i for b, i in reference}
            for base, identity in committed.committed.get((leader.topic_id, index), {}).items():
                if present.get(base) != identity:
                    problems.append(f"{topic}-{index}: committed batch {identity} at {base} is gone")
    for ack in acked:
        found = by_offset.get((ack.partition, ack.offset))
        if found != ack.value:
            problems.append(
                f"acknowledged {ack.value!r} at {ack.partition}/{ack.offset}: the log has {found!r}"
            )
    counts: dict[bytes | None, int] = {}
    for value in by_offset.values():
        counts[value] = counts.get(value, 0) + 1
    problems += [f"{v!r} is in the log {c} times" for v, c in counts.items() if c > 1]
    problems += _order_problems(by_offset)
    return problems


def _first_difference(a: list[Any], b: list[Any]) -> Any:
    for x, y in zip(a, b, strict=False):
        if x != y:
            return (x, y)
    return "length"


def _order_problems(by_offset: dict[tuple[int, int], bytes | None]) -> list[str]:
    """Values ``p<node>.<incarnation>-<n>`` of one producer incarnation rise in ``n`` along each partition."""
    last: dict[tuple[int, bytes], int] = {}
    problems = []
    for (partition, offset), value in sorted(by_offset.items()):
        if value is None or b"-" not in value:
            continue
        writer, _, number = value.rpartition(b"-")
        n = int(number)
        previous = last.get((partition, writer), -1)
        if n < previous:
            problems.append(f"partition {partition} offset {offset}: {value!r} after {writer!r}-{previous}")
        last[(partition, writer)] = n
    return problems
