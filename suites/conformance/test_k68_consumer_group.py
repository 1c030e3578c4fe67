"""Consumer-protocol groups (KIP-848): ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69),
with the group APIs that meet them (OffsetCommit member epochs, ListGroups types, DescribeGroups).

Rules from KIP-848 and Kafka's group coordinator (``GroupMetadataManager.consumerGroupHeartbeat``,
``CurrentAssignmentBuilder``, ``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``):
a member joins with epoch 0 and learns its member epoch; the coordinator reconciles members towards
the target assignment revoke-before-assign (a partition another member still owns is handed out
only after that member's heartbeat shows it gave it up); a wrong epoch is FENCED_MEMBER_EPOCH; a
static member's instance id is held until it leaves with epoch -2, and its next incarnation gets
the same assignment. Targets that do not advertise API 68 skip these tests.

Kafka may resolve a regular expression or compute a target assignment after the heartbeat that
asked for it, so a member waiting for partitions heartbeats again (bounded) as a client does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, describe_absence, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Consumer groups (KIP-848)"
KIP = "KIP-848"
REBALANCE_MS = 30_000
ROUNDS = 60  # heartbeats a member sends at most while waiting for the coordinator
PAUSE_S = 0.1


@dataclass
class CgMember:
    """One consumer-protocol member on a connection to its coordinator."""

    wire: WireClient
    caps: Capabilities
    group: str
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    instance_id: str | None = None
    epoch: int = 0
    owned: set[tuple[Any, int]] = field(default_factory=set)
    last: Any = None

    def send(self, epoch: int | None = None, **fields: Any) -> Any:
        version = self.caps.best("consumer_group_heartbeat")
        body: dict[str, Any] = {
            "group_id": self.group,
            "member_id": self.member_id,
            "member_epoch": self.epoch if epoch is None else epoch,
            "instance_id": self.instance_id,
            "rebalance_timeout": -1,
            "topic_partitions": None,
        }
        body.update(fields)
        self.last = self.wire.request("consumer_group_heartbeat", version, body)
        return self.last

    def join(self, topics: list[str] | None = None, regex: str | None = None, **fields: Any) -> Any:
        answer = self.send(
            0,
            rebalance_timeout=REBALANCE_MS,
            subscribed_topic_names=topics,
            subscribed_topic_regex=regex,
            topic_partitions=[],
            **fields,
        )
        self._learn(answer)
        return answer

    def beat(self) -> Any:
        """A heartbeat that reports what the member owns (as a client does after a change)."""
        answer = self.send(topic_partitions=as_topic_partitions(self.owned))
        self._learn(answer)
        return answer

    def _learn(self, answer: Any) -> None:
        if int(answer.error_code) != 0:
            return
        self.epoch = int(answer.member_epoch)
        if answer.assignment is not None:
            self.owned = {
                (t.topic_id, int(p)) for t in answer.assignment.topic_partitions for p in t.partitions
            }

    def beat_until(self, done: Callable[[CgMember], bool], what: str) -> None:
        for _ in range(ROUNDS):
            answer = self.beat()
            expect_code(answer.error_code, "NONE", rule=KIP, where=f"heartbeat while waiting for {what}")
            if done(self):
                return
            time.sleep(PAUSE_S)
        raise AssertionError(
            f"[{KIP}] {what}: not reached in {ROUNDS} heartbeats (owns {sorted(self.owned)})"
        )

    def leave(self) -> None:
        self.send(-1)


def as_topic_partitions(owned: set[tuple[Any, int]]) -> list[dict[str, Any]]:
    by: dict[Any, list[int]] = {}
    for topic_id, p in owned:
        by.setdefault(topic_id, []).append(p)
    return [{"topic_id": t, "partitions": sorted(ps)} for t, ps in by.items()]


def all_of(router: Router, caps: Capabilities, topic: str, count: int) -> set[tuple[Any, int]]:
    tid = ops.topic_id(router, caps, topic)
    return {(tid, p) for p in range(count)}


def describe(wire: WireClient, caps: Capabilities, group: str) -> Any:
    version = caps.best("consumer_group_describe")
    answer = wire.request(
        "consumer_group_describe", version, group_ids=[group], include_authorized_operations=False
    )
    return answer.groups[0]


def member(router: Router, caps: Capabilities, group: str, **kwargs: Any) -> CgMember:
    return CgMember(router.to_coordinator(group), caps, group, **kwargs)


@pytest.fixture(autouse=True)
def _consumer_protocol(caps: Capabilities) -> None:
    """Every test here needs API 68 (a test's own ``requires`` marker would hide a module-level one)."""
    if not caps.supports("consumer_group_heartbeat"):
        pytest.skip(describe_absence("consumer_group_heartbeat", caps))


def test_first_member_gets_every_partition(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848: a member joins with epoch 0; the answer carries its member epoch (> 0), the
    heartbeat interval and, once assigned, every partition of the topic it alone subscribes to."""
    topic = topic_factory(3)
    m = member(router, caps, unique("cg"))
    answer = m.join([topic])
    expect_code(answer.error_code, "NONE", rule=KIP, where="join")
    expect(int(answer.member_epoch) > 0, KIP, f"member epoch after joining is {answer.member_epoch}")
    expect(answer.heartbeat_interval.total_seconds() > 0, KIP, "a heartbeat interval is given")
    wanted = all_of(router, caps, topic, 3)
    m.beat_until(lambda x: x.owned == wanted, "every partition")
    m.leave()


@pytest.mark.requires("consumer_group_describe")
def test_two_members_reconcile_revoke_before_assign(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848 reconciliation: when a second member joins, the first must revoke part of its
    partitions before the second receives them; no partition is ever held by both, and the group
    ends Stable with the partitions split between them."""
    topic = topic_factory(4)
    group = unique("cg")
    a, b = member(router, caps, group), member(router, caps, group)
    wanted = all_of(router, caps, topic, 4)
    a.join([topic])
    a.beat_until(lambda x: x.owned == wanted, "a owns all")
    b.join([topic])
    expect(not (b.owned & a.owned), KIP, f"b got {sorted(b.owned)} while a still owns them")
    for _ in range(ROUNDS):
        a.beat()  # a reports what it owns; the answer may shrink it (revocation)
        expect_code(a.last.error_code, "NONE", rule=KIP, where="a's heartbeat")
        b.beat()
        expect_code(b.last.error_code, "NONE", rule=KIP, where="b's heartbeat")
        expect(not (b.owned & a.owned), KIP, f"b was given {sorted(b.owned & a.owned)} still owned by a")
        if a.owned and b.owned and a.owned | b.owned == wanted and not (a.owned & b.owned):
            break
        time.sleep(PAUSE_S)
    expect_equal((len(a.owned), len(b.owned)), (2, 2), KIP, "partitions per member")
    expect_equal(a.owned | b.owned, wanted, KIP, "every partition assigned")
    for _ in range(ROUNDS):
        d = describe(a.wire, caps, group)
        if d.group_state == "Stable":
            break
        a.beat()
        b.beat()
    expect_equal(d.group_state, "Stable", KIP, "group state after reconciliation")
    expect_equal(
        {(x.member_id, int(x.member_epoch)) for x in d.members},
        {(a.member_id, a.epoch), (b.member_id, b.epoch)},
        KIP,
        "members and epochs in ConsumerGroupDescribe",
    )
    expect(int(d.assignment_epoch) <= int(d.group_epoch), KIP, "assignment epoch <= group epoch")
    a.leave()
    b.leave()


def test_fencing(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848: an epoch above the member's is FENCED_MEMBER_EPOCH; a member id the group does not
    know is UNKNOWN_MEMBER_ID; leaving with -1 answers epoch -1."""
    topic = topic_factory(1)
    m = member(router, caps, unique("cg"))
    m.join([topic])
    expect_code(m.send(m.epoch + 5).error_code, "FENCED_MEMBER_EPOCH", rule=KIP, where="epoch ahead")
    stranger = CgMember(m.wire, caps, m.group)
    expect_code(stranger.send(1).error_code, "UNKNOWN_MEMBER_ID", rule=KIP, where="unknown member")
    left = m.send(-1)
    expect_code(left.error_code, "NONE", rule=KIP, where="leave")
    expect_equal(int(left.member_epoch), -1, KIP, "epoch in the answer to a leave")


def test_static_member_keeps_its_assignment(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848 static membership: another member with the same instance id is UNRELEASED_INSTANCE_ID
    while the first is in the group; after the first leaves with epoch -2, the next incarnation gets
    its assignment back without a rebalance."""
    topic = topic_factory(2)
    group = unique("cg")
    first = member(router, caps, group, instance_id="static-1")
    first.join([topic])
    wanted = all_of(router, caps, topic, 2)
    first.beat_until(lambda x: x.owned == wanted, "every partition")
    second = member(router, caps, group, instance_id="static-1")
    expect_code(second.join([topic]).error_code, "UNRELEASED_INSTANCE_ID", rule=KIP, where="instance taken")
    gone = first.send(-2)
    expect_code(gone.error_code, "NONE", rule=KIP, where="static leave")
    expect_equal(int(gone.member_epoch), -2, KIP, "epoch in the answer to a static leave")
    back = second.join([topic])
    expect_code(back.error_code, "NONE", rule=KIP, where="static rejoin")
    second.beat_until(lambda x: x.owned == wanted, "the static member's partitions")
    expect_equal(second.epoch, first.epoch, KIP, "member epoch of the static member's new incarnation")
    second.leave()


@pytest.mark.requires("consumer_group_heartbeat", min_version=1)
def test_regex_subscription(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848: ``subscribed_topic_regex`` (RE2/J syntax) subscribes to the topics whose whole name
    matches; a pattern RE2/J refuses (lookbehind) is INVALID_REGULAR_EXPRESSION."""
    topic = topic_factory(2)
    other = topic_factory(1)
    m = member(router, caps, unique("cg"))
    expect_code(
        m.join(regex="(?<=x)y").error_code, "INVALID_REGULAR_EXPRESSION", rule=KIP, where="lookbehind"
    )
    m = member(router, caps, unique("cg"))
    expect_code(m.join(regex=f"{topic}|no-such-topic").error_code, "NONE", rule=KIP, where="regex join")
    wanted = all_of(router, caps, topic, 2)
    m.beat_until(lambda x: x.owned == wanted, "the matching topic's partitions")
    other_id = ops.topic_id(router, caps, other)
    expect(all(t != other_id for t, _ in m.owned), KIP, "a topic the regex does not match is not assigned")
    m.leave()


@pytest.mark.parametrize(
    "fields, why",
    [
        ({"rebalance_timeout": -1}, "no rebalance timeout in the first heartbeat"),
        ({"topic_partitions": None}, "owned partitions null in the first heartbeat"),
        ({"subscribed_topic_names": None}, "neither topic names nor regex in the first heartbeat"),
        ({"instance_id": ""}, "an empty instance id"),
        ({"member_epoch": -3}, "an epoch below -2"),
    ],
)
def test_invalid_first_heartbeat(
    router: Router, caps: Capabilities, unique: Callable[[str], str], fields: dict[str, Any], why: str
) -> None:
    """GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid: INVALID_REQUEST."""
    m = member(router, caps, unique("cg"))
    body: dict[str, Any] = {
        "rebalance_timeout": REBALANCE_MS,
        "subscribed_topic_names": ["t"],
        "topic_partitions": [],
    }
    body.update(fields)
    epoch = body.pop("member_epoch", 0)
    expect_code(m.send(epoch, **body).error_code, "INVALID_REQUEST", rule=KIP, where=why)


def test_unsupported_assignor(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """KIP-848: a ``server_assignor`` the broker does not have is UNSUPPORTED_ASSIGNOR."""
    m = member(router, caps, unique("cg"))
    answer = m.join(["t"], server_assignor="no-such-assignor")
    expect_code(answer.error_code, "UNSUPPORTED_ASSIGNOR", rule=KIP, where="unknown assignor")


@pytest.mark.requires("consumer_group_describe")
def test_describe_unknown_group(router: Router, caps: Capabilities, unique: Callable[[str], str]) -> None:
    """ConsumerGroupDescribe of a group that does not exist: GROUP_ID_NOT_FOUND for that group."""
    group = unique("cg")
    expect_code(
        describe(router.to_coordinator(group), caps, group).error_code, "GROUP_ID_NOT_FOUND", rule=KIP
    )


@pytest.mark.requires("list_groups", min_version=5)
def test_list_and_describe_groups_see_a_consumer_group(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """ListGroups v5 lists a consumer-protocol group with type ``consumer`` (and not under the
    ``classic`` filter); DescribeGroups v6 answers it is not a classic group (GROUP_ID_NOT_FOUND)."""
    topic = topic_factory(1)
    m = member(router, caps, unique("cg"))
    m.join([topic])
    wire = m.wire
    listed = wire.request("list_groups", 5, states_filter=[], types_filter=["consumer"]).groups
    expect_equal(
        [(g.group_type, g.protocol_type) for g in listed if g.group_id == m.group],
        [("consumer", "consumer")],
        KIP,
        "the group in ListGroups filtered by type consumer",
    )
    classic = wire.request("list_groups", 5, states_filter=[], types_filter=["classic"]).groups
    expect(all(g.group_id != m.group for g in classic), KIP, "not listed under type classic")
    if caps.supports("describe_groups", 6):
        d = ops.describe_group(wire, caps, m.group, version=6)
        expect_code(
            d.error_code, "GROUP_ID_NOT_FOUND", rule="KIP-1043", where="DescribeGroups of a consumer group"
        )
    m.leave()


@pytest.mark.requires("offset_commit", min_version=9)
def test_offset_commit_with_member_epoch(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-848: OffsetCommit v9+ of a consumer-protocol member names its member epoch; the current
    one is accepted, another is STALE_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID."""
    topic = topic_factory(1)
    m = member(router, caps, unique("cg"))
    m.join([topic])
    m.beat_until(lambda x: bool(x.owned), "a partition")

    def commit(epoch: int, member_id: str) -> Any:
        return ops.commit_offset(m.wire, caps, m.group, topic, 5, generation=epoch, member_id=member_id)

    expect_code(commit(m.epoch, m.member_id), "NONE", rule=KIP, where="commit at the member epoch")
    expect_code(commit(m.epoch + 1, m.member_id), "STALE_MEMBER_EPOCH", rule=KIP, where="another epoch")
    expect_code(commit(m.epoch, "stranger"), "UNKNOWN_MEMBER_ID", rule=KIP, where="unknown member")
    m.leave()


@pytest.mark.requires("api_versions", min_version=3)
def test_group_version_feature_finalized(wire: WireClient) -> None:
    """KIP-848 with KIP-1022: a broker that serves the consumer protocol finalizes the
    ``group.version`` feature at level 1 or more (ApiVersions v3+ finalized features), as a Kafka 4.x
    cluster does."""
    answer = wire.request("api_versions", 3, client_software_name="kh", client_software_version="1")
    levels = {str(f.name): int(f.max_version_level) for f in answer.finalized_features}
    expect(levels.get("group.version", 0) >= 1, "KIP-1022", f"finalized features {levels}")
