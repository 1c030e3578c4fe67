"""Claims about replicated partitions, checked after every event of a run that holds replicas.

Written once, for two kinds of run: whole simulated brokers (checked after every simulated
event, through :class:`.replicas.SimReplicas`) and the property model of
``reference_impl/acceptance/property`` (three bare replicas of one partition driven one fetch
round trip at a time, checked after every rule). Each claim is a class with a ``name``,
``check_view(view)`` over a :class:`.replicas.ReplicaView`, and ``check(sim)`` for the
simulator's loop; each names its source. They read the replicas' :class:`Partition` objects and
logs (LEO, HW, LSO, leader epoch, epoch cache, ISR and the leader's follower tracking), the
controller's decisions, and what clients were told or read.

The quorum's claims (:mod:`..raft.invariants`) hold for the brokers' metadata log as they do for
bare voters. :func:`check_converged` is the end-of-run verdict, once faults have stopped and every
node is up again: replicas identical, every acknowledged record present once at the offset it
was acknowledged with. :func:`isr_join_problem` and :func:`stale_epoch_problem` are claims about
a moment rather than a state (an ISR change as the controller accepts it; a fetch from an older
epoch), for a run that drives those moments itself.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from reference_impl.core.partition import Partition
from reference_impl.log.api import PartitionLog
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import iter_headers, parse_header

from ..engine.simulation import Simulation
from ..raft.invariants import raft_invariants
from .producer import Acked
from .replicas import PartitionKey, Replica, ReplicaView, SimReplicas, Values, live_brokers

__all__ = ["PartitionKey", "live_brokers"]

BatchId = tuple[int, int, int]
"""A batch as every replica must hold it: (last offset, CRC, partition leader epoch)."""


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


def _identities(part: Partition, start: int, end: int) -> list[tuple[int, BatchId]]:
    return [(base, identity) for base, identity, _data in batches(part.log, start, end)]


def record_values(log: PartitionLog) -> dict[int, bytes | None]:
    """offset -> value of every data record in ``log`` (control records left out)."""
    out: dict[int, bytes | None] = {}
    if log.log_end_offset <= log.log_start_offset:
        return out
    for _base, _identity, data in batches(log, log.log_start_offset, log.log_end_offset):
        for header in iter_headers(data):
            if not header.is_control:
                for record in iter_records(data, header):
                    out[record.offset] = record.value
    return out


def _name(part: Partition) -> str:
    return f"{part.topic}-{part.index}"


class ReplicaClaim:
    """A claim over a :class:`ReplicaView`; as a simulator invariant it reads the live brokers."""

    name = ""

    def check(self, sim: Simulation) -> str | None:
        return self.check_view(SimReplicas(sim))

    def check_view(self, view: ReplicaView) -> str | None:
        raise NotImplementedError


class ReplicaOffsetsOrdered(ReplicaClaim):
    """On every replica, log start ≤ high watermark ≤ log end offset.

    Source: seed 002 (a follower's HW is min(leader HW, own LEO)); Kafka's ``Partition``.
    """

    name = "ReplicaOffsetsOrdered"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part, log = r.partition, r.partition.log
            if not log.log_start_offset <= part.high_watermark <= log.log_end_offset:
                return (
                    f"node {r.node_id} {_name(part)}: start {log.log_start_offset}, "
                    f"HW {part.high_watermark}, LEO {log.log_end_offset}"
                )
        return None


class CommittedBatchesAgree(ReplicaClaim):
    """Every batch below any replica's high watermark is the same batch on every replica, for
    ever: what was committed is never replaced, across leader changes and crashes.

    Source: seed 002 and KIP-101 (committed messages are not lost or changed by truncation);
    Kafka's replication design (the HW marks what every ISR member holds). Void once a power loss
    took unflushed records.
    """

    name = "CommittedBatchesAgree"

    def __init__(self) -> None:
        self.committed: dict[PartitionKey, dict[int, BatchId]] = {}
        self.checked: dict[tuple[int, int, PartitionKey], int] = {}

    def check_view(self, view: ReplicaView) -> str | None:
        if view.durability_lost:
            return None
        for r in view.replicas():
            part = r.partition
            key = (part.topic_id, part.index)
            seen = (r.node_id, r.incarnation, key)
            start = min(self.checked.get(seen, part.log.log_start_offset), part.log.log_end_offset)
            start = max(start, part.log.log_start_offset)
            hw = part.high_watermark
            if hw <= start:
                self.checked[seen] = start
                continue
            known = self.committed.setdefault(key, {})
            for base, identity in _identities(part, start, hw):
                first = known.setdefault(base, identity)
                if first != identity:
                    return (
                        f"node {r.node_id} {_name(part)} holds batch {identity} at {base} "
                        f"below its HW {hw}; the committed batch there is {first}"
                    )
                start = identity[0] + 1
            self.checked[seen] = start
        return None


class OnePartitionLeaderPerEpoch(ReplicaClaim):
    """No two replicas lead a partition in the same leader epoch.

    Source: seed 002 (the controller bumps the leader epoch on every leader change); KIP-101.
    """

    name = "OnePartitionLeaderPerEpoch"

    def __init__(self) -> None:
        self.leaders: dict[tuple[PartitionKey, int], int] = {}

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if part.is_leader:
                first = self.leaders.setdefault(((part.topic_id, part.index), part.leader_epoch), r.node_id)
                if first != r.node_id:
                    return f"{_name(part)} epoch {part.leader_epoch} led by {first} and {r.node_id}"
        return None


class EpochCacheOrdered(ReplicaClaim):
    """A replica's leader-epoch cache rises in epoch and never falls in start offset, and no entry
    starts past the log end.

    Source: KIP-101 (``leader-epoch-checkpoint``); Kafka's ``LeaderEpochFileCache``.
    """

    name = "EpochCacheOrdered"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            entries = part.log.epoch_entries()
            for before, after in itertools.pairwise(entries):
                if after.epoch <= before.epoch or after.start_offset < before.start_offset:
                    return f"node {r.node_id} {_name(part)} epoch cache {entries}"
            if entries and entries[-1].start_offset > part.log.log_end_offset:
                return f"node {r.node_id} {_name(part)} epoch cache {entries} past LEO"
        return None


class LoneLeaderCommitsItsLog(ReplicaClaim):
    """A leader with no follower to wait for (its maximal ISR is itself, and
    ``min.insync.replicas`` is 1) has its log end as its high watermark, after every event: what
    it acknowledged is readable, restarted or not, with no new write.

    Source: Kafka's ``Partition.makeLeader`` (the checkpointed HW is loaded as the log is created,
    then ``maybeIncrementLeaderHW``) and ``UnifiedLog.maybeIncrementHighWatermark`` (a leader's HW
    never moves back); issue 17 item 9 (a checkpoint restored after the role hid acknowledged
    records until the next write).
    """

    name = "LoneLeaderCommitsItsLog"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if (
                part.is_leader
                and part.effective_isr == (r.node_id,)
                and part.min_insync_replicas <= 1
                and part.high_watermark != part.log.log_end_offset
            ):
                return (
                    f"node {r.node_id} leads {_name(part)} alone (epoch {part.leader_epoch}) "
                    f"with HW {part.high_watermark} below its LEO {part.log.log_end_offset}"
                )
        return None


class IsrWithinReplicas(ReplicaClaim):
    """In every controller decision, the ISR is a non-empty subset of the replicas and the
    leader is an ISR member (or none).

    Source: seed 002 and KIP-841 (the controller's ISR rules); Kafka's ``PartitionRegistration``;
    hachikuji's kafka-specification ``LeaderInIsr``.
    """

    name = "IsrWithinReplicas"

    def check_view(self, view: ReplicaView) -> str | None:
        for p in view.registrations():
            isr, replicas = set(p.isr), set(p.replicas)
            if not isr or not isr <= replicas or (p.leader >= 0 and p.leader not in isr):
                return (
                    f"{p.where}: {p.topic}-{p.index} leader {p.leader}, ISR {list(p.isr)}, "
                    f"replicas {list(p.replicas)}"
                )
        return None


class LeaderHwMonotonic(ReplicaClaim):
    """A leader's high watermark never decreases within its leader epoch.

    Source: seed 002; Vanlightly's kafka-tlaplus; Kafka's ``UnifiedLog.maybeIncrementHighWatermark``.
    """

    name = "LeaderHwMonotonic"

    def __init__(self) -> None:
        self.highest: dict[tuple[int, int, PartitionKey, int], int] = {}

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if not part.is_leader:
                continue
            key = (r.node_id, r.incarnation, (part.topic_id, part.index), part.leader_epoch)
            previous = self.highest.get(key, -1)
            if part.high_watermark < previous:
                return (
                    f"node {r.node_id} {_name(part)} epoch {part.leader_epoch}: HW went from "
                    f"{previous} to {part.high_watermark}"
                )
            self.highest[key] = part.high_watermark
        return None


class HwIsMinIsrLeo(ReplicaClaim):
    """A leader's high watermark is never behind what every member of its (maximal) ISR has
    fetched: HW = min LEO over the ISR.

    Source: seed 002; Kafka's ``Partition.maybeIncrementLeaderHW``.
    """

    name = "HwIsMinIsrLeo"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if not part.is_leader or part.tracker is None:
                continue
            lowest = part.log.log_end_offset
            for member in part.effective_isr:
                if member != part.local_id:
                    state = part.tracker.followers.get(member)
                    lowest = min(lowest, state.log_end_offset if state else -1)
            if part.high_watermark < lowest:
                return (
                    f"node {r.node_id} {_name(part)}: HW {part.high_watermark} is behind the ISR's "
                    f"minimum LEO {lowest}"
                )
        return None


class LsoNotAboveHw(ReplicaClaim):
    """On every replica the last stable offset never exceeds the high watermark.

    Source: KIP-98 (the LSO is the HW or the first offset of the oldest open transaction).
    """

    name = "LsoNotAboveHw"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if part.last_stable_offset > part.high_watermark:
                return (
                    f"node {r.node_id} {_name(part)}: LSO {part.last_stable_offset} > "
                    f"HW {part.high_watermark}"
                )
        return None


class IdempotentNoDuplicates(ReplicaClaim):
    """No batch of an idempotent producer (producer id, epoch, base sequence) is in a log twice.

    Source: KIP-98 (idempotence: a retried batch is acknowledged, not appended again).
    """

    name = "IdempotentNoDuplicates"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            log = r.partition.log
            if log.log_end_offset <= log.log_start_offset:
                continue
            seen: set[tuple[int, int, int]] = set()
            for header in log.batch_headers(log.log_start_offset):
                if header.producer_id >= 0 and header.base_sequence >= 0:
                    key = (header.producer_id, header.producer_epoch, header.base_sequence)
                    if key in seen:
                        return (
                            f"node {r.node_id} {_name(r.partition)} holds producer {key[0]} "
                            f"epoch {key[1]} sequence {key[2]} twice"
                        )
                    seen.add(key)
        return None


def isr_join_problem(leader: Partition, joining: Iterable[int]) -> str | None:
    """A follower may join the ISR only once its log reaches the start of the leader's current
    epoch: the leader's tracked LEO for each of ``joining``, judged as the change is proposed or
    accepted. Else a replica that has not seen this epoch could be elected with a stale log.

    Source: KIP-320; Kafka's ``Partition.isFollowerInSync`` (``leaderEpochStartOffsetOpt``)."""
    for node in sorted(joining):
        state = leader.tracker.followers.get(node) if leader.tracker else None
        tracked = state.log_end_offset if state else -1
        if tracked < leader.epoch_start_offset:
            return (
                f"{node} joins the ISR of {_name(leader)} at LEO {tracked}, before the epoch's start "
                f"{leader.epoch_start_offset} (KIP-320)"
            )
    return None


class IsrJoinAfterEpochStart(ReplicaClaim):
    """:func:`isr_join_problem` for every ISR change a leader has proposed and not yet heard back on."""

    name = "IsrJoinAfterEpochStart"

    def check_view(self, view: ReplicaView) -> str | None:
        for r in view.replicas():
            part = r.partition
            if part.is_leader and part.tracker is not None and part.tracker.pending is not None:
                problem = isr_join_problem(part, set(part.tracker.pending.new_isr) - set(part.isr))
                if problem is not None:
                    return f"node {r.node_id}: {problem}"
        return None


def stale_epoch_problem(leader: Partition, replica_id: int, now_ms: int) -> str | None:
    """Send ``leader`` a follower fetch carrying the leader epoch before its own: it must be
    fenced (FENCED_LEADER_EPOCH, or NOT_LEADER_OR_FOLLOWER), never served. The probe is a real
    fetch: a leader that serves it records the follower's position as it would any fetch.

    Source: KIP-320 (fetches carry the current leader epoch; a stale one is fenced)."""
    if not leader.is_leader or leader.leader_epoch <= 0:
        return None
    try:
        leader.read_for_follower(replica_id, 0, -1, leader.leader_epoch - 1, 1024, now_ms)
    except KafkaError as exc:
        if exc.code in (ErrorCode.fenced_leader_epoch, ErrorCode.not_leader_or_follower):
            return None
        raise
    return (
        f"leader {leader.local_id} served a fetch with epoch {leader.leader_epoch - 1} "
        f"in epoch {leader.leader_epoch} (KIP-320)"
    )


def _by_partition(replicas: Sequence[Replica]) -> dict[PartitionKey, list[Replica]]:
    out: dict[PartitionKey, list[Replica]] = defaultdict(list)
    for r in replicas:
        out[(r.partition.topic_id, r.partition.index)].append(r)
    return out


class StrongIsr(ReplicaClaim):
    """Every batch below the leader's high watermark is on every live member of its ISR, the same
    batch.

    Source: hachikuji's kafka-specification ``StrongIsr``; seed 002 (the HW is what every ISR
    member holds).
    """

    name = "StrongIsr"

    def check_view(self, view: ReplicaView) -> str | None:
        held = _by_partition(view.replicas())
        for leader in view.leaders():
            part = leader.partition
            for r in held[(part.topic_id, part.index)]:
                if r.node_id == leader.node_id or r.node_id not in part.isr:
                    continue
                start = max(part.log.log_start_offset, r.partition.log.log_start_offset)
                mine = _identities(part, start, part.high_watermark)
                theirs = _identities(r.partition, start, part.high_watermark)
                if theirs != mine:
                    return (
                        f"ISR member {r.node_id} of {_name(part)} lacks or differs from what leader "
                        f"{leader.node_id} holds below its HW {part.high_watermark}: "
                        f"{_first_difference(theirs, mine)}"
                    )
        return None


class LogMatching(ReplicaClaim):
    """Any two replicas of a partition hold the same batches below the lower of their high
    watermarks. Void once a power loss took unflushed records.

    Source: Raft's Log Matching, for Kafka (Vanlightly's kafka-tlaplus).
    """

    name = "LogMatching"

    def check_view(self, view: ReplicaView) -> str | None:
        if view.durability_lost:
            return None
        for group in _by_partition(view.replicas()).values():
            for a, b in itertools.combinations(sorted(group, key=lambda r: r.node_id), 2):
                pa, pb = a.partition, b.partition
                bound = min(pa.high_watermark, pb.high_watermark)
                start = max(pa.log.log_start_offset, pb.log.log_start_offset)
                if bound <= start:
                    continue
                mine, theirs = _identities(pa, start, bound), _identities(pb, start, bound)
                if mine != theirs:
                    return (
                        f"{a.node_id} and {b.node_id} differ below HW {bound} of {_name(pa)}: "
                        f"{_first_difference(mine, theirs)}"
                    )
        return None


class LeaderCompleteness(ReplicaClaim):
    """The leader holds every record acknowledged with acks=all, at the offset it was acknowledged
    with. Void after an unclean election, or once a power loss took unflushed records.

    Source: hachikuji's kafka-specification ``LeaderCompleteness``; seed 002 (acks=all and the ISR
    mean no acknowledged loss).
    """

    name = "LeaderCompleteness"

    def check_view(self, view: ReplicaView) -> str | None:
        if view.unclean_elections or view.durability_lost:
            return None
        return _values_kept(view.leaders(), view.acknowledged(), "lost acknowledged")


class ConsistentRead(ReplicaClaim):
    """An offset a consumer read never changes value on the leader. Void after an unclean
    election, or once a power loss took unflushed records.

    Source: Vanlightly's kafka-tlaplus (consumers never see a committed record change).
    """

    name = "ConsistentRead"

    def check_view(self, view: ReplicaView) -> str | None:
        if view.unclean_elections or view.durability_lost:
            return None
        return _values_kept(view.leaders(), view.consumed(), "changed the value read at", missing_ok=True)


def _values_kept(
    leaders: Sequence[Replica], expected: Mapping[PartitionKey, Values], what: str, missing_ok: bool = False
) -> str | None:
    for leader in leaders:
        part = leader.partition
        wanted = expected.get((part.topic_id, part.index))
        if not wanted:
            continue
        held = record_values(part.log)
        for offset, value in sorted(wanted.items()):
            if offset < part.log.log_start_offset or (missing_ok and offset not in held):
                continue
            if held.get(offset) != value:
                return (
                    f"leader {leader.node_id} {what} offset {offset} of {_name(part)} "
                    f"({value!r}, has {held.get(offset)!r})"
                )
    return None


def replica_claims(*, scanning: bool = True) -> list[ReplicaClaim]:
    """Every partition-replication claim, fresh (some remember what they have seen).

    Without ``scanning``, only the claims whose cost does not grow with the logs: the ones that
    read whole logs after every event (:class:`StrongIsr`, :class:`LogMatching`,
    :class:`IdempotentNoDuplicates`, :class:`LeaderCompleteness`, :class:`ConsistentRead`)
    are left out. The property model's logs hold tens of batches and it checks all of them; a
    whole-broker run's hold thousands, checked after every one of its events, and its end-of-run
    verdict (:func:`check_converged`) judges agreement, duplicates and acknowledged records there.
    """
    claims: list[ReplicaClaim] = [
        ReplicaOffsetsOrdered(),
        CommittedBatchesAgree(),
        OnePartitionLeaderPerEpoch(),
        EpochCacheOrdered(),
        LoneLeaderCommitsItsLog(),
        IsrWithinReplicas(),
        LeaderHwMonotonic(),
        HwIsMinIsrLeo(),
        LsoNotAboveHw(),
        IsrJoinAfterEpochStart(),
    ]
    if scanning:
        claims += [StrongIsr(), LogMatching(), IdempotentNoDuplicates()]
        claims += [LeaderCompleteness(), ConsistentRead()]
    return claims


class ReplicaClaims:
    """The partition claims as one simulator invariant: one :class:`SimReplicas` view per check,
    read by every claim in turn; a violation carries the failing claim's name. :meth:`watch`
    hands it a producer's acknowledgements, for the claims about acknowledged records."""

    def __init__(self, claims: Sequence[ReplicaClaim]) -> None:
        self.claims = list(claims)
        self.name = "ReplicaClaims"
        self._watched: list[tuple[str, Sequence[Acked]]] = []

    def watch(self, topic: str, acked: Sequence[Acked]) -> None:
        """Judge ``acked`` (a producer's list, growing as it is acknowledged) after every event."""
        self._watched.append((topic, acked))

    def check(self, sim: Simulation) -> str | None:
        view = SimReplicas(sim, lambda: self.acknowledged(sim))
        for claim in self.claims:
            problem = claim.check_view(view)
            if problem is not None:
                self.name = claim.name
                return problem
        return None

    def acknowledged(self, sim: Simulation) -> dict[PartitionKey, dict[int, bytes | None]]:
        """offset -> value of every watched acknowledgement, by partition (topic ids from the images)."""
        out: dict[PartitionKey, dict[int, bytes | None]] = {}
        for topic, acked in self._watched:
            info = next(
                (b.image.topics[topic] for b in live_brokers(sim).values() if topic in b.image.topics), None
            )
            if info is not None:
                for ack in acked:
                    out.setdefault((info.topic_id, ack.partition), {})[ack.offset] = ack.value
        return out


def committed_batches(sim: Simulation) -> CommittedBatchesAgree | None:
    """The run's :class:`CommittedBatchesAgree` (every batch it has seen committed), if it checks one."""
    for invariant in sim.invariants:
        claims = invariant.claims if isinstance(invariant, ReplicaClaims) else [invariant]
        for claim in claims:
            if isinstance(claim, CommittedBatchesAgree):
                return claim
    return None


def broker_invariants(*, scanning: bool = False) -> list[Any]:
    """The partition claims (those that rescan whole logs only with ``scanning``) and the
    metadata quorum's."""
    return [ReplicaClaims(replica_claims(scanning=scanning)), *raft_invariants()]


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
