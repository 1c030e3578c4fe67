"""Follower fetching (KIP-392): which replica a consumer should read a partition from.

As Kafka decides it (``core/src/main/scala/kafka/server/ReplicaManager.scala``,
``findPreferredReadReplica``; ``clients/src/main/java/org/apache/kafka/common/replica/
RackAwareReplicaSelector.java`` and ``ReplicaView.java``):

* only a leader picks, only for a consumer's fetch (replica id -1) that carries client metadata
  (Fetch v11+), and only when ``replica.selector.class`` names a selector; Kafka's default is
  none, the leader serves every read;
* the candidates are the leader and the followers in the ISR whose log end offset reached the
  fetch offset (Kafka also asks that the follower's log start offset be at or below it; the
  reference does not track followers' log start offsets, so that condition is not checked);
* ``RackAwareReplicaSelector``: a consumer without a rack, or whose rack holds no candidate, or
  whose rack holds the leader, reads from the leader; otherwise the same-rack candidate with the
  highest log end offset, then the least time since it was last caught up, then the highest
  broker id (``ReplicaView.comparator`` taken with ``max``);
* the leader is never named: "no preferred replica" (-1 on the wire) means read from the leader.

Pure decisions: the caller passes the racks, the follower positions and the time.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
"""The one selector the reference implements (Kafka's built-in rack-aware one)."""
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
"""Kafka's other built-in selector: always the leader (the same as none)."""
SELECTORS = (RACK_AWARE_SELECTOR, LEADER_SELECTOR)


@dataclass(frozen=True, slots=True)
class ReplicaView:
    """One candidate replica (Kafka's ``ReplicaView``)."""

    broker_id: int
    rack: str | None
    log_end_offset: int
    since_caught_up_ms: int


def _rank(view: ReplicaView) -> tuple[int, int, int]:
    return (view.log_end_offset, -view.since_caught_up_ms, view.broker_id)


def rack_aware_select(
    client_rack: str | None, leader: ReplicaView, candidates: Sequence[ReplicaView]
) -> ReplicaView:
    """``RackAwareReplicaSelector.select``: the replica a consumer in ``client_rack`` reads from."""
    if not client_rack:
        return leader
    same_rack = [v for v in (leader, *candidates) if v.rack == client_rack]
    if not same_rack or leader in same_rack:
        return leader
    return max(same_rack, key=_rank)


@dataclass(frozen=True, slots=True)
class FollowerPosition:
    """What the leader knows of one follower: its log end offset and when it was last caught up."""

    log_end_offset: int
    last_caught_up_ms: int


def preferred_read_replica(
    selector: str | None,
    client_rack: str | None,
    *,
    leader_id: int,
    leader_log_end_offset: int,
    isr: Sequence[int],
    followers: Mapping[int, FollowerPosition],
    racks: Mapping[int, str | None],
    fetch_offset: int,
    now_ms: int,
) -> int | None:
    """The follower a consumer should fetch from, or None to keep reading from the leader.

    ``selector`` is ``replica.selector.class`` (None or empty: no selector); ``racks`` the
    registered rack of each broker (a broker not registered is no candidate, as Kafka skips a
    replica without an endpoint on the listener).
    """
    if selector != RACK_AWARE_SELECTOR:
        return None
    candidates = [
        ReplicaView(rid, racks.get(rid), pos.log_end_offset, now_ms - pos.last_caught_up_ms)
        for rid, pos in sorted(followers.items())
        if rid in isr and rid != leader_id and rid in racks and pos.log_end_offset >= fetch_offset
    ]
    leader = ReplicaView(leader_id, racks.get(leader_id), leader_log_end_offset, 0)
    chosen = rack_aware_select(client_rack, leader, candidates)
    return None if chosen == leader else chosen.broker_id
