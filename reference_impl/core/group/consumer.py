"""Consumer-protocol groups (KIP-848): the sans-IO state machine of one group, its assignors.

Kafka's model (group-coordinator module, ``GroupMetadataManager.java`` consumerGroupHeartbeat,
``modern/consumer/ConsumerGroup.java``, ``modern/consumer/CurrentAssignmentBuilder.java``,
``modern/TargetAssignmentBuilder.java``, ``assignor/UniformAssignor.java``, ``assignor/RangeAssignor.java``):

* the **group epoch** goes up whenever what the assignment depends on changes: a member joins or
  leaves, a subscription or the chosen assignor changes, a subscribed topic gains partitions or
  appears;
* the **target assignment** is computed by the server-side assignor for one group epoch, which
  becomes the **assignment epoch**;
* each member has a **member epoch** and is reconciled towards the target one heartbeat at a time,
  revoke before assign: a member first gives up what the target no longer gives it (it stays in
  UNREVOKED_PARTITIONS at its old epoch until a heartbeat shows it no longer owns them), then moves
  to the assignment epoch and gets the partitions of its target that no other member still holds
  (UNRELEASED_PARTITIONS until those are released; STABLE when it has all of them).

Nothing here reads a clock or writes a log: the coordinator (:mod:`.consumer_coordinator`) feeds
heartbeats in with the topics of the metadata image and writes the records the change calls for.
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..client_patterns import InvalidPattern, compile_client_pattern

TP = tuple[uuid.UUID, int]
Assignment = frozenset[TP]
EMPTY: Assignment = frozenset()

JOIN_EPOCH = 0
LEAVE_EPOCH = -1
LEAVE_STATIC_EPOCH = -2
INTERNAL_TOPICS = frozenset({"__consumer_offsets", "__transaction_state", "__share_group_state"})


class MemberState(enum.IntEnum):
    """``modern/MemberState.java``: the int8 written in ConsumerGroupCurrentMemberAssignmentValue."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


class GroupState(enum.Enum):
    """``ConsumerGroup.ConsumerGroupState``, as ListGroups and ConsumerGroupDescribe spell them."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"


Describable = Callable[[tuple[str, str], str], bool]
"""May the (principal, host) DESCRIBE the topic?"""


@dataclass(frozen=True, slots=True)
class TopicMeta:
    name: str
    topic_id: uuid.UUID
    partitions: int


@dataclass(slots=True)
class Member:
    member_id: str
    instance_id: str | None = None
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_names: tuple[str, ...] = ()
    subscribed_regex: str | None = None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    member_epoch: int = 0
    previous_epoch: int = -1
    state: MemberState = MemberState.STABLE
    assigned: Assignment = EMPTY
    pending_revocation: Assignment = EMPTY
    regex_context: tuple[str, str] | None = None
    """The principal and host of the heartbeat that last sent the member's regex: its topics are
    those they may DESCRIBE (not in the records: after a reload, unfiltered until the next one)."""

    def metadata_key(self) -> tuple[object, ...]:
        """What ConsumerGroupMemberMetadataValue holds (a change is a new record)."""
        return (
            self.instance_id,
            self.rack_id,
            self.client_id,
            self.client_host,
            self.subscribed_names,
            self.subscribed_regex,
            self.rebalance_timeout_ms,
            self.server_assignor,
        )

    def assignment_key(self) -> tuple[object, ...]:
        """What ConsumerGroupCurrentMemberAssignmentValue holds."""
        return (self.member_epoch, self.previous_epoch, self.state, self.assigned, self.pending_revocation)


@dataclass(slots=True)
class ConsumerGroup:
    group_id: str
    group_epoch: int = 0
    assignment_epoch: int = 0
    members: dict[str, Member] = field(default_factory=dict)
    target: dict[str, Assignment] = field(default_factory=dict)
    subscribed_metadata: dict[str, TopicMeta] = field(default_factory=dict)
    """The subscribed topics as of the last group epoch (ConsumerGroupPartitionMetadataValue)."""
    describable: Describable | None = field(default=None, compare=False, repr=False)
    """With an authorizer: may (principal, host) DESCRIBE a topic? Filters regex subscriptions."""

    def static_member(self, instance_id: str) -> Member | None:
        for m in self.members.values():
            if m.instance_id == instance_id:
                return m
        return None

    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for m in self.members.values():
            if m.member_epoch != self.assignment_epoch or m.state is not MemberState.STABLE:
                return GroupState.RECONCILING
        return GroupState.STABLE

    def owner_epochs(self) -> dict[TP, str]:
        """Which member holds each partition now (assigned, or still to be revoked)."""
        out: dict[TP, str] = {}
        for m in self.members.values():
            for tp in m.assigned | m.pending_revocation:
                out[tp] = m.member_id
        return out

    def preferred_assignor(self, default: str) -> str:
        """The server assignor most members asked for, else ``default``
        (``ConsumerGroup.computePreferredServerAssignor``)."""
        counts: dict[str, int] = {}
        for m in self.members.values():
            if m.server_assignor:
                counts[m.server_assignor] = counts.get(m.server_assignor, 0) + 1
        if not counts:
            return default
        return max(sorted(counts), key=lambda name: counts[name])


# -- subscriptions --------------------------------------------------------------------------------


def validate_regex(text: str) -> None:
    """INVALID_REGULAR_EXPRESSION for a pattern RE2 refuses (``throwIfRegularExpressionIsInvalid``)."""
    try:
        compile_client_pattern(text)
    except InvalidPattern as exc:
        raise KafkaError(ErrorCode.invalid_regular_expression, f"invalid regex {text!r}: {exc}") from None


def subscribed_topics(
    member: Member, topics: Mapping[str, TopicMeta], describable: Describable | None = None
) -> set[str]:
    """The existing topics ``member`` subscribes to: by name, or by a regex matching whole names
    (RE2, as Kafka's ``TopicRegexResolver``; internal topics are never matched). With
    ``describable`` a regex resolves only to the topics the heartbeat that sent it may DESCRIBE
    (``GroupMetadataManager.refreshRegularExpressions`` → ``filterTopicDescribeAuthorizedTopics``,
    group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java)."""
    out = {t for t in member.subscribed_names if t in topics}
    if member.subscribed_regex:
        try:
            pattern = compile_client_pattern(member.subscribed_regex)
        except InvalidPattern:
            return out
        matched = {t for t in topics if t not in INTERNAL_TOPICS and pattern.fullmatch(t) is not None}
        context = member.regex_context
        if describable is not None and context is not None:
            matched = {t for t in matched if describable(context, t)}
        out |= matched
    return out


def group_metadata(group: ConsumerGroup, topics: Mapping[str, TopicMeta]) -> dict[str, TopicMeta]:
    wanted: set[str] = set()
    for m in group.members.values():
        wanted |= subscribed_topics(m, topics, group.describable)
    return {t: topics[t] for t in sorted(wanted)}


# -- assignors --------------------------------------------------------------------------------------


def _eligible(
    group: ConsumerGroup, topics: Mapping[str, TopicMeta]
) -> tuple[list[str], dict[str, set[str]], list[tuple[str, TP]]]:
    members = sorted(group.members)
    subs = {m: subscribed_topics(group.members[m], topics, group.describable) for m in members}
    partitions = [
        (name, (meta.topic_id, p))
        for name, meta in sorted(group_metadata(group, topics).items())
        for p in range(meta.partitions)
    ]
    return members, subs, partitions


def range_assign(group: ConsumerGroup, topics: Mapping[str, TopicMeta]) -> dict[str, Assignment]:
    """Kafka's server-side ``RangeAssignor``: per topic, the subscribed members in member-id order get
    consecutive ranges; the first ``partitions % members`` get one more."""
    members, subs, _ = _eligible(group, topics)
    out: dict[str, set[TP]] = {m: set() for m in members}
    for name, meta in sorted(group_metadata(group, topics).items()):
        takers = [m for m in members if name in subs[m]]
        if not takers:
            continue
        share, extra = divmod(meta.partitions, len(takers))
        start = 0
        for i, m in enumerate(takers):
            count = share + (1 if i < extra else 0)
            out[m].update((meta.topic_id, p) for p in range(start, start + count))
            start += count
    return {m: frozenset(a) for m, a in out.items()}


def uniform_assign(group: ConsumerGroup, topics: Mapping[str, TopicMeta]) -> dict[str, Assignment]:
    """Kafka's ``UniformAssignor`` in spirit: balanced (counts differ by at most one among members that
    could take a partition) and sticky (a partition stays with its current target owner when that
    keeps the balance). Kafka's optimized/general builders choose differently in details; the
    properties checked here are balance, stickiness and exclusivity."""
    members, subs, partitions = _eligible(group, topics)
    if not members:
        return {}
    counts = {m: 0 for m in members}
    owner: dict[TP, str] = {}
    quota = -(-len(partitions) // len(members)) if partitions else 0
    previous = {tp: m for m, a in group.target.items() for tp in a if m in group.members}
    for name, tp in partitions:
        m = previous.get(tp)
        if m is not None and name in subs[m] and counts[m] < quota:
            owner[tp] = m
            counts[m] += 1
    for name, tp in partitions:
        if tp in owner:
            continue
        takers = [m for m in members if name in subs[m]]
        if takers:
            m = min(takers, key=lambda x: (counts[x], x))
            owner[tp] = m
            counts[m] += 1
    # Balance: move a partition from a member with two more than an eligible taker (bounded passes).
    topic_of = dict((tp, name) for name, tp in partitions)
    for _ in range(len(partitions) + 1):
        moved = False
        for tp in sorted(owner, key=lambda t: (str(t[0]), t[1])):
            giver = owner[tp]
            takers = [m for m in members if topic_of[tp] in subs[m] and counts[m] < counts[giver] - 1]
            if takers:
                taker = min(takers, key=lambda x: (counts[x], x))
                owner[tp] = taker
                counts[giver] -= 1
                counts[taker] += 1
                moved = True
        if not moved:
            break
    out: dict[str, set[TP]] = {m: set() for m in members}
    for tp, m in owner.items():
        out[m].add(tp)
    return {m: frozenset(a) for m, a in out.items()}


ASSIGNORS = {"uniform": uniform_assign, "range": range_assign}
CLASS_NAMES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def assignor_names(config_value: str) -> list[str]:
    """``group.consumer.assignors``: short names or Kafka's class names, in preference order."""
    out = []
    for raw in config_value.split(","):
        name = CLASS_NAMES.get(raw.strip(), raw.strip())
        if name in ASSIGNORS and name not in out:
            out.append(name)
    return out or ["uniform"]


# -- reconciliation (CurrentAssignmentBuilder) -----------------------------------------------------


def reconcile(group: ConsumerGroup, member: Member, owned: Assignment | None) -> Member:
    """The member's next current assignment towards its target (``CurrentAssignmentBuilder.build``).

    ``owned`` is what the member's heartbeat says it owns (None when the heartbeat did not say).
    """
    target = group.target.get(member.member_id, EMPTY)
    if member.state is MemberState.UNREVOKED_PARTITIONS:
        # The member must first show it gave up what it is revoking.
        if owned is None or owned & member.pending_revocation:
            return member
        return _next_assignment(group, member, target, group.assignment_epoch)
    if member.state is MemberState.UNRELEASED_PARTITIONS or member.member_epoch != group.assignment_epoch:
        return _next_assignment(group, member, target, group.assignment_epoch)
    return member


def _next_assignment(group: ConsumerGroup, member: Member, target: Assignment, epoch: int) -> Member:
    keep = member.assigned & target
    revoke = member.assigned - target
    if revoke:
        return replace(
            member, state=MemberState.UNREVOKED_PARTITIONS, assigned=keep, pending_revocation=revoke
        )
    held = group.owner_epochs()
    free = {tp for tp in target - keep if held.get(tp, member.member_id) == member.member_id}
    assigned = frozenset(keep | free)
    state = MemberState.STABLE if assigned == target else MemberState.UNRELEASED_PARTITIONS
    previous = member.member_epoch if epoch != member.member_epoch else member.previous_epoch
    return replace(
        member,
        member_epoch=epoch,
        previous_epoch=previous,
        state=state,
        assigned=assigned,
        pending_revocation=EMPTY,
    )


def compute_target(group: ConsumerGroup, topics: Mapping[str, TopicMeta], assignor: str) -> None:
    """A new target assignment for the group epoch (``TargetAssignmentBuilder``)."""
    group.target = ASSIGNORS[assignor](group, topics)
    group.assignment_epoch = group.group_epoch


def is_subset(owned: Iterable[TP] | None, assigned: Assignment) -> bool:
    return owned is not None and set(owned) <= assigned
