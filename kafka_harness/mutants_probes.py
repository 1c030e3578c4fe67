"""Cluster probes for ``kafka-harness mutants --black-box``: checks a user of any Kafka-compatible
cluster wants, which the chaos campaigns' histories cannot show (issue 21).

``stale-epoch``: after a leader change, requests naming the partition's *previous* leader epoch as
``current_leader_epoch`` (Fetch v9+, ListOffsets v4+, OffsetForLeaderEpoch v2+; KIP-320) must be
answered FENCED_LEADER_EPOCH, as Kafka's ``Partition.checkCurrentLeaderEpoch``
(core/src/main/scala/kafka/cluster/Partition.scala) answers an epoch below the leader's. A stale
reader served anyway reads a log it did not ask about, and nothing in a history shows it.

``acks-all-availability``: replication factor 3, ``min.insync.replicas=2``, one follower paused
(SIGSTOP): an acks=all write must still be acknowledged once the ISR has shrunk to the live replicas
(Kafka's high watermark is the minimum log end over the ISR, ``Partition.maybeIncrementLeaderHW``;
the paused follower leaves the ISR after ``replica.lag.time.max.ms``). The verdict is whether the
write is acknowledged within :data:`WRITE_BOUND_S` (many times the lag bound); the time it took is a
printed figure, not judged.

``unclean-election``: replication factor 2, ``min.insync.replicas=1``, unclean leader election off;
the follower paused until it left the ISR, records acknowledged by the leader alone, then the leader
killed and the follower resumed before it could fetch them. Kafka's controller elects only an ISR
member unless unclean election is enabled (``PartitionChangeBuilder.electLeader``,
metadata/src/main/java/org/apache/kafka/controller/PartitionChangeBuilder.java): the partition stays
leaderless until the old leader returns, and nothing acknowledged is lost. (The chaos campaign that
aimed at this, a stranded leader killed, needs a follower out of the ISR at the moment of the kill,
which its random timing rarely gives, and overran its budget under load.)

``isr-expand-early`` and ``kip279-divergence`` need a window that process signals alone do not
open: the brokers reach each other through loopback relays (:mod:`kafka_harness.probe_links`) that
can cut a link or drop the Fetch answers carrying records, their links to the controller quorum
untouched. ``isr-expand-early``: a follower that received nothing since a preferred election, when
the new leader's high watermark still lagged the start of its epoch, must not be shown in the ISR
(``Partition.isFollowerInSync``, KAFKA-7128). ``kip279-divergence``: after two quick leader changes
a returning replica holds an epoch its leader never had; it must truncate to the end of the epoch
they share and then serve what the leader serves (KIP-279). See each function.

Run as ``python -m kafka_harness.mutants_probes PROBE [--broker-config k=v]... [--topic-config k=v]...``;
each launches its own three reference brokers and ends them (also on SIGTERM). Prints one
``VERDICT: valid|invalid name=count ...`` line; exit 0 valid, 1 invalid, 2 could not judge.
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import FrameType
from typing import Any

from kio.schema.errors import ErrorCode

from fixtures.targets import Target, free_port, launch
from fixtures.wire import Capabilities, Router, WireClient, WireError, ops
from kafka_harness.probe_links import Relay

TOPIC = "probe"
WAIT_S = 45.0
"""Bound on each wait (topic ready, a new leader after the kill)."""
WRITE_BOUND_S = 20.0
"""acks=all with one follower paused: 10 times the 2 s lag bound the probe configures."""
FAST = ("broker.session.timeout.ms=3000", "replica.lag.time.max.ms=2000")


class ProbeError(RuntimeError):
    """The probe could not set up what it judges (no verdict)."""


def _address(target: Target, node_id: int) -> str:
    node = target.node(node_id)
    return f"{node.host}:{node.advertised_port}"


def _partition_view(
    target: Target, caps: Capabilities, alive: list[int]
) -> tuple[int, int, list[int], list[int]]:
    """(leader id, leader epoch, ISR, replicas) of the probe partition as a live broker's Metadata
    shows it."""
    last: Exception | None = None
    for node_id in alive:
        try:
            with WireClient(_address(target, node_id), timeout_s=5.0) as wire:
                meta = ops.metadata(wire, caps, [TOPIC], version=caps.best("metadata", lo=7))
            p = meta.topics[0].partitions[0]
            return (int(p.leader_id), int(p.leader_epoch), [int(i) for i in p.isr_nodes],
                    [int(i) for i in p.replica_nodes])  # fmt: skip
        except (OSError, WireError, IndexError) as exc:
            last = exc
    raise ProbeError(f"no live broker answered Metadata: {last}")


def _partition_state(target: Target, caps: Capabilities, alive: list[int]) -> tuple[int, int, list[int]]:
    """(leader id, leader epoch, ISR) of the probe partition as a live broker's Metadata shows it."""
    return _partition_view(target, caps, alive)[:3]


def _wait(what: str, ready: Callable[[], bool]) -> None:
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        if ready():
            return
        time.sleep(0.25)
    raise ProbeError(f"{what} within {WAIT_S:.0f} s")


Links = dict[tuple[int, int], Relay]
"""The relay through which broker ``a`` reaches broker ``b`` (empty for a probe without them)."""


def _setup(
    brokers: list[str], topic_configs: dict[str, str], replication_factor: int = 3, links: bool = False
) -> tuple[Target, Capabilities, Router, Links]:
    """Three reference brokers and the probe topic (one partition, ``replication_factor`` replicas, every
    one in the ISR, three records written); with ``links``, the brokers reach each other through
    relays (:mod:`kafka_harness.probe_links`), their links to the controller quorum untouched."""
    ports = [free_port() for _ in range(3)]
    relays: Links = {}
    if links:
        relays = {(a, b): Relay(free_port(), ports[b - 1]) for a in (1, 2, 3) for b in (1, 2, 3) if a != b}
        for relay in relays.values():
            relay.start()
    try:
        target = launch("reference", brokers=3, listen_ports=ports, broker_configs=[*FAST, *brokers],
                        peer_ports={link: r.listen_port for link, r in relays.items()} or None)  # fmt: skip
    except BaseException:
        for relay in relays.values():
            relay.close()
        raise
    target.cleanups += [r.close for r in relays.values()]
    try:
        first = WireClient(_address(target, 1))
        caps = Capabilities(first.api_versions())
        router = Router(
            first, WireClient, {n.node_id: _address(target, n.node_id) for n in target.nodes}, caps
        )
        configs = {"min.insync.replicas": "2", **topic_configs}
        created = ops.create_topic(router, caps, TOPIC, 1, configs, replication_factor=replication_factor)
        ops.check(created.error_code, "CreateTopics")
        router.wait_for_topic(TOPIC, 1)
        everyone = [n.node_id for n in target.nodes]
        _wait("every replica in the ISR",
              lambda: len(_partition_state(target, caps, everyone)[2]) == replication_factor)  # fmt: skip
        ops.check(ops.produce_values(router, caps, TOPIC, [b"a", b"b", b"c"]).error_code, "Produce")
    except BaseException:
        target.close()
        raise
    return target, caps, router, relays


def stale_epoch(target: Target, caps: Capabilities, router: Router, _links: Links) -> dict[str, int]:
    """Kill the leader; ask the new one with the old epoch. Counts: answers other than
    FENCED_LEADER_EPOCH (``stale_epoch_served``), and whether the current epoch is served (``control``
    must be 0: the probe is only meaningful when the new leader serves its own epoch)."""
    everyone = [n.node_id for n in target.nodes]
    old_leader, old_epoch, _ = _partition_state(target, caps, everyone)
    target.node(old_leader).kill()
    alive = [n for n in everyone if n != old_leader]

    def moved() -> bool:
        leader, epoch, _ = _partition_state(target, caps, alive)
        return leader in alive and epoch > old_epoch

    _wait("a new leader", moved)
    leader, epoch, _ = _partition_state(target, caps, alive)
    print(f"leader {old_leader} epoch {old_epoch} killed; new leader {leader} epoch {epoch}", flush=True)
    served: dict[str, int] = {"stale_epoch_served": 0, "control": 0}
    with WireClient(_address(target, leader)) as wire:
        for asked in (epoch, old_epoch):
            answers = _ask_all(wire, caps, asked, epoch)
            for api, code in answers.items():
                print(f"  current_leader_epoch {asked}: {api} -> {code.name}", flush=True)
                if asked == epoch and code != ErrorCode.none:
                    served["control"] += 1
                elif asked < epoch and code != ErrorCode.fenced_leader_epoch:
                    served["stale_epoch_served"] += 1
    return served


def _ask_all(wire: WireClient, caps: Capabilities, current: int, epoch: int) -> dict[str, Any]:
    """The error each KIP-320 request answers for ``current_leader_epoch=current``."""
    answers: dict[str, Any] = {}
    if caps.supports("fetch", 9):
        _, entry = ops.fetch(wire, caps, TOPIC, 0, current_leader_epoch=current, max_wait_ms=0)
        answers["Fetch"] = entry.error_code
    if caps.supports("list_offsets", 4):
        answers["ListOffsets"] = ops.list_offset(
            wire, caps, TOPIC, ops.LATEST_TIMESTAMP, current_leader_epoch=current
        ).error_code
    if caps.supports("offset_for_leader_epoch", 2):
        answer = wire.request(
            "offset_for_leader_epoch", caps.best("offset_for_leader_epoch"), replica_id=-1,
            topics=[{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": current, "leader_epoch": epoch}]}],
        )  # fmt: skip
        answers["OffsetForLeaderEpoch"] = answer.topics[0].partitions[0].error_code
    if not answers:
        raise ProbeError("the target advertises none of Fetch v9+, ListOffsets v4+, OffsetForLeaderEpoch v2+")
    return answers


def acks_all_availability(
    target: Target, caps: Capabilities, router: Router, _links: Links
) -> dict[str, int]:
    """Pause one follower; an acks=all write (retried on retriable errors, as a producer does) must be
    acknowledged within :data:`WRITE_BOUND_S`. Count ``acks_all_unavailable`` 1 if it was not."""
    everyone = [n.node_id for n in target.nodes]
    leader, _, _ = _partition_state(target, caps, everyone)
    follower = next(n for n in everyone if n != leader)
    target.node(follower).pause()
    started = time.monotonic()
    codes: list[str] = []
    acknowledged = False
    try:
        with WireClient(_address(target, leader), timeout_s=WRITE_BOUND_S + 5) as wire:
            while not acknowledged and time.monotonic() - started < WRITE_BOUND_S:
                left_ms = max(1000, int((WRITE_BOUND_S - (time.monotonic() - started)) * 1000))
                try:
                    got = ops.produce_values(wire, caps, TOPIC, [b"d"], timeout_ms=left_ms)
                except OSError as exc:  # the answer did not come within the socket's bound
                    codes.append(type(exc).__name__)
                    break
                codes.append(got.error_code.name)
                acknowledged = got.error_code == ErrorCode.none
                if not acknowledged:
                    time.sleep(0.2)
    finally:
        target.node(follower).resume()
    took = time.monotonic() - started
    state = "acknowledged" if acknowledged else "NOT acknowledged"
    print(f"follower {follower} paused; acks=all write to leader {leader} {state} after {took:.1f} s "
          f"(answers {', '.join(codes) or 'none'}; bound {WRITE_BOUND_S:.0f} s)", flush=True)  # fmt: skip
    return {"acks_all_unavailable": 0 if acknowledged else 1}


UNCLEAN_WINDOW_S = 20.0
"""How long the probe watches for a leader after the only in-sync replica died: several session timeouts
(the dead leader is fenced after one; the returning follower is unfenced at its first heartbeat)."""
ACKED = [b"acked-%d" % i for i in range(10)]


def unclean_election(target: Target, caps: Capabilities, router: Router, _links: Links) -> dict[str, int]:
    """Replication factor 2, ``min.insync.replicas=1``, ``unclean.leader.election.enable=false``.
    The follower is paused until it has left the ISR; acks=all writes go to the leader alone (an ISR
    of one meets min.insync 1); the leader is killed and the follower resumed at once, so it never
    fetches what was acknowledged. Kafka must not elect the follower (KRaft's
    ``PartitionChangeBuilder.electLeader``: a replica outside the ISR only when unclean election is
    enabled): the partition stays leaderless until the old leader returns, then everything
    acknowledged is readable. Counts: a leader elected outside the last ISR during the window
    (``leader_outside_isr``) and acknowledged records not readable once the old leader is back
    (``acked_lost``)."""
    everyone = [n.node_id for n in target.nodes]
    leader, epoch, _, replicas = _partition_view(target, caps, everyone)
    follower = next(r for r in replicas if r != leader)
    target.node(follower).pause()
    try:
        _wait(
            f"follower {follower} out of the ISR",
            lambda: _partition_state(target, caps, [leader])[2] == [leader],
        )
        with WireClient(_address(target, leader)) as wire:
            for value in ACKED:
                ops.check(ops.produce_values(wire, caps, TOPIC, [value]).error_code, "acks=all Produce")
        target.node(leader).kill()
    finally:
        target.node(follower).resume()
    alive = [n for n in everyone if n != leader]
    print(
        f"replicas {replicas}: follower {follower} paused out of the ISR, {len(ACKED)} records acknowledged "
        f"by leader {leader} (ISR [{leader}]) at epoch {epoch}; leader killed, follower resumed",
        flush=True,
    )
    elected = -1
    deadline = time.monotonic() + UNCLEAN_WINDOW_S
    while time.monotonic() < deadline and elected < 0:
        try:
            now_leader, now_epoch, isr = _partition_state(target, caps, alive)
        except ProbeError:
            now_leader = -1
        if now_leader in alive:
            elected = now_leader
            print(
                f"  leader {now_leader} elected at epoch {now_epoch} (ISR {isr}) while {leader} is down",
                flush=True,
            )
        time.sleep(0.25)
    if elected < 0:
        print(
            f"  no leader within {UNCLEAN_WINDOW_S:.0f} s while the only in-sync replica is down", flush=True
        )
    target.node(leader).start()
    _wait(
        "a leader after the old leader's restart",
        lambda: _partition_state(target, caps, everyone)[0] in everyone,
    )
    found = _read_all(target, caps, everyone)
    lost = [v for v in ACKED if v not in found]
    print(
        f"  after {leader}'s restart: {len(found)} records readable, {len(lost)} acknowledged lost",
        flush=True,
    )
    return {"leader_outside_isr": int(elected >= 0), "acked_lost": len(lost)}


def _read_all(target: Target, caps: Capabilities, everyone: list[int]) -> set[bytes]:
    """Every value below the high watermark, read from the partition's leader (bounded: a retry on
    a leader change, at most 1,000 fetches)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        leader = _partition_state(target, caps, everyone)[0]
        try:
            values: set[bytes] = set()
            offset = 0
            with WireClient(_address(target, leader)) as wire:
                for _ in range(1000):
                    _, entry = ops.fetch(wire, caps, TOPIC, offset, max_wait_ms=0)
                    ops.check(entry.error_code, "Fetch")
                    got = ops.data_records(entry)
                    values.update(r.value for r in got if r.value is not None)
                    if not got or offset >= entry.high_watermark:
                        return values
                    offset = got[-1].offset + 1
                    if offset >= entry.high_watermark:
                        return values
            raise ProbeError("the partition did not end within 1,000 fetches")
        except (OSError, WireError, ops.UnexpectedErrorCode) as exc:
            if time.monotonic() > deadline:
                raise ProbeError(f"reading the partition from leader {leader}: {exc}") from exc
            time.sleep(0.5)


ISR_WINDOW_S = 15.0
"""How long the probe watches the new leader's ISR (the follower's fetch comes within a second or two)."""
ISR_PROBE_CONFIGS = ("replica.lag.time.max.ms=8000", "replica.fetch.wait.max.ms=2000")
"""A follower's fetch at the log end waits up to 2 s for data, so the follower learns a moved high
watermark only with the next data or 2 s later; 8 s of lag leaves time for the preferred election, and
the leader's lag check every 4 s leaves a follower admitted behind in the ISR for long enough to be
seen (it is dropped at the next check: it never caught up)."""


def _elect_preferred(target: Target, caps: Capabilities, alive: list[int]) -> None:
    """ElectLeaders(PREFERRED) for the probe partition, through a live broker (it forwards)."""
    with WireClient(_address(target, alive[0]), timeout_s=20.0) as wire:
        answer = wire.request(
            "elect_leaders", caps.best("elect_leaders"), election_type=0, timeout=15_000,
            topic_partitions=[{"topic": TOPIC, "partitions": [0]}],
        )  # fmt: skip
    code = answer.replica_election_results[0].partition_result[0].error_code
    ops.check(code, "ElectLeaders(PREFERRED)")


def isr_expand_early(target: Target, caps: Capabilities, router: Router, links: Links) -> dict[str, int]:
    """A follower may rejoin the ISR only once it has reached the high watermark *and* the first
    offset of the leader's current epoch (Kafka's ``Partition.isFollowerInSync``, the fix of
    KAFKA-7128, core/src/main/scala/kafka/cluster/Partition.scala): a new leader's high watermark can
    lag its log end, and a replica admitted on that stale mark is a leader candidate without records
    already acknowledged.

    The scenario: leader Q, the preferred replica P and a third replica R, all in sync. R is cut from
    Q and leaves the ISR (it keeps its links to the controllers); its requests to P pass, P's answers
    to its Fetch requests are dropped. A batch is acknowledged (acks=all) by Q and P; P learns the
    new high watermark only from its next fetch answer, so Q and P are cut apart at once, and a
    preferred election makes P the leader: its high watermark is still where R's log ends, below the
    start of its epoch. R's next fetch reaches P; R received nothing since, so it cannot hold the
    batch. Count: R shown in the ISR while nothing reached it (``isr_joined_behind``): every ISR
    member is a leader candidate and must hold everything acknowledged. (Killing P then would not
    show the loss: the controller takes the first live ISR member in replica order, and Q, elected
    as the first live replica after P, comes before R and is still in the ISR while R is.)"""
    everyone = [n.node_id for n in target.nodes]
    preferred = _partition_view(target, caps, everyone)[3][0]
    others = [n for n in everyone if n != preferred]
    target.node(preferred).pause()
    try:
        _wait("a leader other than the paused preferred replica",
              lambda: _partition_state(target, caps, others)[0] in others)  # fmt: skip
    finally:
        target.node(preferred).resume()
    # asked of the other two: the resumed replica's own metadata may still show it leading
    _wait(
        "the preferred replica back in the ISR", lambda: len(_partition_state(target, caps, others)[2]) == 3
    )
    leader, epoch, _ = _partition_state(target, caps, others)
    if leader not in others:
        raise ProbeError(f"leader {leader} after the preferred replica {preferred} was paused")
    behind = next(n for n in everyone if n not in (preferred, leader))
    links[(behind, leader)].cut()
    links[(behind, preferred)].drop_fetch_answers()
    passed_before = links[(behind, preferred)].fetch_answers_passed
    in_sync = sorted([preferred, leader])
    _wait(
        f"replica {behind} out of the ISR",
        lambda: sorted(_partition_state(target, caps, [leader])[2]) == in_sync,
    )
    with WireClient(_address(target, leader)) as wire:
        ops.check(ops.produce_values(wire, caps, TOPIC, ACKED).error_code, "acks=all Produce")
    links[(preferred, leader)].cut()
    links[(leader, preferred)].cut()
    print(
        f"leader {leader} (epoch {epoch}), ISR {in_sync}: {len(ACKED)} records acknowledged; "
        f"replica {behind} "
        f"out of the ISR, its fetch answers from {preferred} dropped; {preferred} cut from {leader}",
        flush=True,
    )
    _elect_preferred(target, caps, everyone)
    _wait(f"{preferred} leading", lambda: _partition_state(target, caps, everyone)[0] == preferred)
    joined = False
    deadline = time.monotonic() + ISR_WINDOW_S
    isr: list[int] = []
    new_epoch = epoch
    version = caps.best("metadata", lo=7)
    high_watermark = -1
    with WireClient(_address(target, preferred), timeout_s=5.0) as wire:  # R's stay in the ISR may be short
        with contextlib.suppress(OSError, WireError, ops.UnexpectedErrorCode):
            high_watermark = ops.list_offset(wire, caps, TOPIC, ops.LATEST_TIMESTAMP).offset
        while time.monotonic() < deadline and not joined:
            try:
                p = ops.metadata(wire, caps, [TOPIC], version=version).topics[0].partitions[0]
            except (OSError, WireError, IndexError):
                time.sleep(0.2)
                continue
            new_epoch, isr = int(p.leader_epoch), [int(i) for i in p.isr_nodes]
            joined = behind in isr and links[(behind, preferred)].fetch_answers_passed == passed_before
            time.sleep(0.02)
    link = links[(behind, preferred)]
    print(
        f"  {preferred}'s high watermark when it took over: {high_watermark} (records up to "
        f"{len(ACKED) + 3} acknowledged); fetch answers from {preferred} to {behind}: "
        f"{link.fetch_answers_dropped} dropped, {link.fetch_answers_passed - passed_before} passed",
        flush=True,
    )
    for relay in links.values():
        relay.release()
    state = "JOINED the ISR" if joined else f"stayed out of the ISR for {ISR_WINDOW_S:.0f} s"
    print(f"  {preferred} leads epoch {new_epoch}; ISR {isr}: replica {behind} {state} with nothing received",
          flush=True)  # fmt: skip
    # the scenario reached its window only if the new leader's high watermark was stale (-1: not read)
    stale = high_watermark < len(ACKED) + 3
    return {"isr_joined_behind": int(joined), "control": 0 if joined or stale else 1}


REJOIN_BOUND_S = 60.0
"""A restarted replica with its links up is back in the ISR well within this (clean: about 5-10 s)."""
KIP279_CONFIGS = ("replica.lag.time.max.ms=15000",)
"""Replicas cut from a leader stay in its ISR for 15 s: the two leader changes happen within that."""


def _values_by_offset(target: Target, caps: Capabilities, node_id: int, end: int) -> dict[int, bytes | None]:
    """Records below ``end`` as ``node_id`` serves them to a consumer (from a follower too: Fetch v11+
    with client metadata, KIP-392), retried until it serves them all (bounded by :data:`WAIT_S`)."""
    deadline = time.monotonic() + WAIT_S
    got: dict[int, bytes | None] = {}
    while time.monotonic() < deadline:
        got = {}
        try:
            with WireClient(_address(target, node_id), timeout_s=5.0) as wire:
                for _ in range(100):
                    offset = max(got, default=-1) + 1
                    if offset >= end:
                        return got
                    _, entry = ops.fetch(wire, caps, TOPIC, offset, max_wait_ms=0, rack_id="",
                                         version=caps.best("fetch", lo=11))  # fmt: skip
                    records = ops.data_records(entry) if entry.error_code == ErrorCode.none else []
                    if not records:
                        break
                    got.update((r.offset, r.value) for r in records)
        except (OSError, WireError):
            pass
        time.sleep(0.5)
    raise ProbeError(f"broker {node_id} did not serve offsets below {end} (it served {sorted(got)})")


def kip279_divergence(target: Target, caps: Capabilities, router: Router, links: Links) -> dict[str, int]:
    """Two quick leader changes leave a replica whose last epoch the new leader never had (KIP-279):
    it must truncate to where its log and the leader's agree, i.e. to the end of the last epoch they
    share *as the replica's own log has it* (Kafka's follower truncation, ``AbstractFetcherThread``
    with the leader's diverging epoch, KIP-320/KIP-279), then fetch again; after that every replica
    serves the same record at every committed offset.

    Replicas in order [A, C, B], A leading epoch E1, everything in sync. C's fetch answers are
    dropped while A takes three records (acks=1, offsets 3-5): A and B hold them, C does not. A is
    killed with B cut from C, so C (in the ISR, before B in replica order) leads E2 with a log ending
    at 3 and takes two records of its own (acks=1, offsets 3-4). A returns, cut from C; C is killed
    and B (still in the ISR) leads E3 with E1's records to 6. Every link restored, C returns: the
    leader answers its fetch with the diverging epoch (E1 ends at 6 there, at 3 in C's log); C must
    truncate to 3. A record is written acks=all once all three are in sync, then each replica serves
    offsets 0-6 to a consumer. Counts: replicas not back in the ISR :data:`REJOIN_BOUND_S` after
    every link was restored (``replica_stuck``: a replica that kept records the leader does not
    have below the offset it then fetches from cannot append the leader's batch there), else offsets
    where a replica serves another record than the leader (``replicas_diverge``)."""
    everyone = [n.node_id for n in target.nodes]
    leader, _, _, replicas = _partition_view(target, caps, everyone)
    first, second, third = replicas
    if leader != first:
        raise ProbeError(f"the first replica {first} does not lead (leader {leader})")
    links[(second, first)].drop_fetch_answers()
    before = links[(third, first)].fetch_answers_passed
    with WireClient(_address(target, first)) as wire:
        batch = [b"e1-%d" % i for i in range(3, 6)]
        ops.check(ops.produce_values(wire, caps, TOPIC, batch, acks=1).error_code, "Produce")
    _wait(f"the batch to reach {third}", lambda: links[(third, first)].fetch_answers_passed > before)
    links[(third, second)].cut()
    target.node(first).kill()
    alive = [second, third]
    _wait(f"{second} leading", lambda: _partition_state(target, caps, alive)[0] == second)
    with WireClient(_address(target, second)) as wire:
        batch = [b"e2-%d" % i for i in range(3, 5)]
        ops.check(ops.produce_values(wire, caps, TOPIC, batch, acks=1).error_code, "Produce")
    links[(first, second)].cut()
    target.node(first).start()
    target.node(second).kill()
    alive = [first, third]
    _wait(f"{third} leading", lambda: _partition_state(target, caps, alive)[0] == third)
    for relay in links.values():
        relay.release()
    target.node(second).start()
    print(f"replicas {replicas}: {first} led with 3-5 written (acks=1) while {second} lagged; {second} led "
          f"with 3-4 of its own; {third} leads now and {second} is back", flush=True)  # fmt: skip
    deadline = time.monotonic() + REJOIN_BOUND_S
    isr: list[int] = []
    while time.monotonic() < deadline and len(isr) < 3:
        time.sleep(0.5)
        with contextlib.suppress(ProbeError):
            isr = _partition_state(target, caps, everyone)[2]
    if len(isr) < 3:
        print(f"  ISR {isr} {REJOIN_BOUND_S:.0f} s after every link was restored: a live replica did not "
              "catch up", flush=True)  # fmt: skip
        return {"replicas_diverge": 0, "replica_stuck": 3 - len(isr)}
    with WireClient(_address(target, third)) as wire:
        ops.check(ops.produce_values(wire, caps, TOPIC, [b"e3-6"]).error_code, "acks=all Produce")
    truth = _values_by_offset(target, caps, third, 7)
    diverge = 0
    for node in (first, second):
        served = _values_by_offset(target, caps, node, 7)
        differ = sorted(o for o in truth if served.get(o) != truth[o])
        print(f"  {node} serves offsets 0-6; differing from the leader at {differ or 'none'}", flush=True)
        diverge += len(differ)
    return {"replicas_diverge": diverge, "replica_stuck": 0}


@dataclass(frozen=True)
class Probe:
    run: Callable[[Target, Capabilities, Router, Links], dict[str, int]]
    replication_factor: int = 3
    topic_configs: tuple[tuple[str, str], ...] = ()
    """The probe's own topic configs (the command line's ``--topic-config`` come after)."""
    broker_configs: tuple[str, ...] = ()
    """The probe's own broker configs (after :data:`FAST`, before the command line's)."""
    links: bool = False
    """Relays on the links between brokers (:mod:`kafka_harness.probe_links`)."""


PROBES: dict[str, Probe] = {
    "stale-epoch": Probe(stale_epoch),
    "acks-all-availability": Probe(acks_all_availability),
    "isr-expand-early": Probe(
        isr_expand_early, 3, (("min.insync.replicas", "1"),), ISR_PROBE_CONFIGS, links=True
    ),
    "kip279-divergence": Probe(
        kip279_divergence, 3, (("min.insync.replicas", "1"),), KIP279_CONFIGS, links=True
    ),
    "unclean-election": Probe(
        unclean_election, 2, (("min.insync.replicas", "1"), ("unclean.leader.election.enable", "false"))
    ),
}


def _terminate(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)  # unwinds through the ``finally`` that ends the brokers


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m kafka_harness.mutants_probes", description=__doc__)
    parser.add_argument("probe", choices=sorted(PROBES))
    parser.add_argument("--broker-config", action="append", default=[], metavar="K=V")
    parser.add_argument("--topic-config", action="append", default=[], metavar="K=V")
    args = parser.parse_args(argv)
    signal.signal(signal.SIGTERM, _terminate)
    probe = PROBES[args.probe]
    topic_configs = {**dict(probe.topic_configs), **dict(kv.partition("=")[::2] for kv in args.topic_config)}
    try:
        target, caps, router, links = _setup([*probe.broker_configs, *args.broker_config], topic_configs,
                                             probe.replication_factor, probe.links)  # fmt: skip
    except (ProbeError, OSError, WireError, ops.UnexpectedErrorCode) as exc:
        print(f"probe {args.probe}: setup failed: {exc}\nVERDICT: could not run")
        return 2
    try:
        counts = probe.run(target, caps, router, links)
    except (ProbeError, OSError, WireError, ops.UnexpectedErrorCode) as exc:
        print(f"probe {args.probe}: {exc}\nVERDICT: could not run")
        return 2
    finally:
        for wire in router.connections():
            wire.close()
        target.close()
    bad = {k: v for k, v in counts.items() if v}
    if "control" in bad:
        print(f"VERDICT: could not run control={bad['control']} (the probe's precondition did not hold)")
        return 2
    word = "invalid" if bad else "valid"
    print(f"VERDICT: {word} " + " ".join(f"{k}={v}" for k, v in counts.items() if k != "control"))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
