"""Share groups (KIP-932): the sans-IO membership state machine behind ShareGroupHeartbeat.

Kafka's model (group-coordinator module, ``GroupMetadataManager.java`` shareGroupHeartbeat,
``modern/share/ShareGroup.java``, ``assignor/SimpleAssignor.java``; configs in
``server/src/main/java/org/apache/kafka/server/config/ShareGroupConfigs.java``):

* a member joins with epoch 0 and the member id it generated (ShareGroupHeartbeat v1, the only
  version kio 0.6.5 carries, as Kafka 4.1), leaves with epoch -1;
* the **group epoch** goes up when a member joins or leaves or a subscription changes; the
  server-side assignor computes the target for that epoch;
* unlike consumer groups there is no revocation phase: several members may fetch from one
  partition at once (records are locked one by one, :mod:`.share_partition`), so a member moves
  to the group epoch and its target on its next heartbeat;
* errors: an epoch other than the member's is FENCED_MEMBER_EPOCH, a non-zero epoch for an unknown
  member is UNKNOWN_MEMBER_ID, a join past ``group.share.max.size`` is GROUP_MAX_SIZE_REACHED, an
  empty member id is INVALID_REQUEST;
* a member silent for ``group.share.session.timeout.ms`` is removed. Time is an input, on the
  broker's monotonic clock: Kafka's session timers are ``TimerTask``s of the coordinator runtime's
  ``SystemTimer`` (``coordinator-common/.../runtime/CoordinatorRuntime.java``,
  ``EventBasedCoordinatorTimer``; ``GroupMetadataManager.scheduleShareGroupSessionTimeout``), which
  runs on ``System.nanoTime``, so a step of the wall clock expires no member early or late.

The assignor is shaped after Kafka's simple assignor: with no more members than partitions each
partition goes to one member, round robin over sorted ids; with more members than partitions each
member gets one partition round robin, so every member gets work and partitions are shared.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from reference_impl.protocol.errors import ErrorCode, KafkaError

TP = tuple[uuid.UUID, int]
JOIN_EPOCH = 0
LEAVE_EPOCH = -1
DEFAULT_SESSION_TIMEOUT_MS = 45_000
DEFAULT_HEARTBEAT_INTERVAL_MS = 5_000
DEFAULT_MAX_SIZE = 200
MAX_MEMBER_ID_LEN = 64


@dataclass(frozen=True, slots=True)
class ShareGroupConfig:
    session_timeout_ms: int = DEFAULT_SESSION_TIMEOUT_MS
    heartbeat_interval_ms: int = DEFAULT_HEARTBEAT_INTERVAL_MS
    max_size: int = DEFAULT_MAX_SIZE


@dataclass(slots=True)
class ShareMember:
    member_id: str
    member_epoch: int
    subscribed: frozenset[str]
    rack_id: str | None
    deadline_ms: int
    """When the member's session runs out, on the monotonic clock."""
    assignment: frozenset[TP] = frozenset()


@dataclass(frozen=True, slots=True)
class HeartbeatReply:
    member_id: str
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: frozenset[TP] | None


def simple_assign(members: Iterable[str], partitions: Iterable[TP]) -> dict[str, frozenset[TP]]:
    ids = sorted(members)
    parts = sorted(partitions)
    out: dict[str, set[TP]] = {m: set() for m in ids}
    if not ids or not parts:
        return {m: frozenset() for m in ids}
    if len(ids) <= len(parts):
        for i, tp in enumerate(parts):
            out[ids[i % len(ids)]].add(tp)
    else:
        for i, m in enumerate(ids):
            out[m].add(parts[i % len(parts)])
    return {m: frozenset(s) for m, s in out.items()}


@dataclass
class ShareGroup:
    group_id: str
    config: ShareGroupConfig = field(default_factory=ShareGroupConfig)
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, ShareMember] = field(default_factory=dict)
    _target: dict[str, frozenset[TP]] = field(default_factory=dict)

    @property
    def state(self) -> str:
        """As ShareGroupDescribe and ListGroups spell it (``ShareGroup.ShareGroupState``)."""
        if not self.members:
            return "Empty"
        if any(m.member_epoch != self.group_epoch for m in self.members.values()):
            return "Reconciling"
        return "Stable"

    def heartbeat(
        self,
        *,
        member_id: str,
        member_epoch: int,
        rack_id: str | None,
        subscribed_topic_names: Iterable[str] | None,
        topics: Mapping[str, tuple[uuid.UUID, int]],
        mono_ms: int,
    ) -> HeartbeatReply:
        """One ShareGroupHeartbeat at ``mono_ms`` (the monotonic clock); ``topics`` maps a topic name
        to (id, partition count)."""
        if not member_id or len(member_id) > MAX_MEMBER_ID_LEN:
            raise KafkaError(ErrorCode.invalid_request, "MemberId must be a non-empty id")
        member = self.members.get(member_id)
        if member_epoch == LEAVE_EPOCH:
            if member is None:
                raise KafkaError(ErrorCode.unknown_member_id)
            del self.members[member_id]
            self._bump(topics)
            return HeartbeatReply(member_id, LEAVE_EPOCH, self.config.heartbeat_interval_ms, None)
        if member is None:
            if member_epoch != JOIN_EPOCH:
                raise KafkaError(ErrorCode.unknown_member_id)
            if subscribed_topic_names is None:
                raise KafkaError(ErrorCode.invalid_request, "SubscribedTopicNames must be set when joining")
            if len(self.members) >= self.config.max_size:
                raise KafkaError(ErrorCode.group_max_size_reached)
            member = ShareMember(member_id, 0, frozenset(subscribed_topic_names), rack_id, 0)
            self.members[member_id] = member
            self._bump(topics)
        elif member_epoch not in (member.member_epoch, JOIN_EPOCH):
            raise KafkaError(ErrorCode.fenced_member_epoch)
        elif subscribed_topic_names is not None and frozenset(subscribed_topic_names) != member.subscribed:
            member.subscribed = frozenset(subscribed_topic_names)
            self._bump(topics)
        member.deadline_ms = mono_ms + self.config.session_timeout_ms
        member.rack_id = rack_id if rack_id is not None else member.rack_id
        changed = member.member_epoch != self.assignment_epoch
        member.member_epoch = self.assignment_epoch
        target = self._target.get(member_id, frozenset())
        changed = changed or target != member.assignment
        member.assignment = target
        return HeartbeatReply(
            member_id, member.member_epoch, self.config.heartbeat_interval_ms, target if changed else None
        )

    def _bump(self, topics: Mapping[str, tuple[uuid.UUID, int]]) -> None:
        self.group_epoch += 1
        subscribed = {t for m in self.members.values() for t in m.subscribed}
        parts = [(topics[t][0], p) for t in sorted(subscribed) if t in topics for p in range(topics[t][1])]
        # Every member subscribes to the same set in the homogeneous case; a member only keeps
        # partitions of topics it subscribed to.
        raw = simple_assign(self.members, parts)
        names = {tid: name for name, (tid, _) in topics.items()}
        self._target = {
            m: frozenset(tp for tp in raw[m] if names.get(tp[0]) in self.members[m].subscribed)
            for m in self.members
        }
        self.assignment_epoch = self.group_epoch

    def expire(self, mono_ms: int, topics: Mapping[str, tuple[uuid.UUID, int]]) -> list[str]:
        """Remove members whose session ran out by ``mono_ms`` (the monotonic clock); their ids."""
        gone = sorted(m for m, s in self.members.items() if s.deadline_ms <= mono_ms)
        for m in gone:
            del self.members[m]
        if gone:
            self._bump(topics)
        return gone
