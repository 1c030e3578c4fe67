"""Share groups (KIP-932): ShareGroupHeartbeat (76) and ShareGroupDescribe (77).

Rules from KIP-932 and Kafka's group coordinator (``GroupMetadataManager.shareGroupHeartbeat``,
``modern/share/ShareGroup.java``, ``assignor/SimpleAssignor.java``): a member joins with epoch 0
and the member id it generated, and learns its member epoch; share groups have no revocation
phase, several members may be given one partition (records are locked one by one by ShareFetch),
and every partition of the subscribed topics goes to some member; a wrong epoch is
FENCED_MEMBER_EPOCH, an unknown member UNKNOWN_MEMBER_ID; an id held by a consumer-protocol group
is not a share group (GROUP_ID_NOT_FOUND). Targets that do not advertise API 76 skip these tests.

Kafka may compute a target assignment after the heartbeat that asked for it, so a member waiting
for partitions heartbeats again (bounded) as a client does.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, describe_absence

from .expect import expect, expect_code, expect_equal
from .test_k68_consumer_group import CgMember, all_of

KIP = "KIP-932"
ROUNDS = 60
PAUSE_S = 0.1


@dataclass
class ShareMember:
    """One share-group member on a connection to its coordinator."""

    wire: WireClient
    caps: Capabilities
    group: str
    member_id: str = field(default_factory=lambda: str(uuid.uuid4()))
    epoch: int = 0
    owned: set[tuple[Any, int]] = field(default_factory=set)

    def send(self, epoch: int | None = None, topics: list[str] | None = None) -> Any:
        version = self.caps.best("share_group_heartbeat")
        answer = self.wire.request(
            "share_group_heartbeat",
            version,
            {
                "group_id": self.group,
                "member_id": self.member_id,
                "member_epoch": self.epoch if epoch is None else epoch,
                "rack_id": None,
                "subscribed_topic_names": topics,
            },
        )
        if int(answer.error_code) == 0 and int(answer.member_epoch) >= 0:
            self.epoch = int(answer.member_epoch)
            if answer.assignment is not None:
                self.owned = {
                    (t.topic_id, int(p)) for t in answer.assignment.topic_partitions for p in t.partitions
                }
        return answer

    def beat_until(self, done: Callable[[ShareMember], bool], what: str) -> None:
        for _ in range(ROUNDS):
            expect_code(self.send().error_code, "NONE", rule=KIP, where=f"heartbeat while waiting for {what}")
            if done(self):
                return
            time.sleep(PAUSE_S)
        raise AssertionError(
            f"[{KIP}] {what}: not reached in {ROUNDS} heartbeats (owns {sorted(self.owned)})"
        )


def share_member(router: Router, caps: Capabilities, group: str) -> ShareMember:
    return ShareMember(router.to_coordinator(group), caps, group)


def describe(wire: WireClient, caps: Capabilities, group: str) -> Any:
    version = caps.best("share_group_describe")
    answer = wire.request(
        "share_group_describe", version, group_ids=[group], include_authorized_operations=False
    )
    return answer.groups[0]


@pytest.fixture(autouse=True)
def _share_protocol(caps: Capabilities) -> None:
    """Every test here needs API 76 (a test's own ``requires`` marker would hide a module-level one)."""
    if not caps.supports("share_group_heartbeat"):
        pytest.skip(describe_absence("share_group_heartbeat", caps))


def test_first_member_gets_every_partition(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-932: a member joining with epoch 0 gets a member epoch > 0, a heartbeat interval and,
    once assigned, every partition of the topic it alone subscribes to."""
    topic = topic_factory(3)
    m = share_member(router, caps, unique("sg"))
    answer = m.send(0, [topic])
    expect_code(answer.error_code, "NONE", rule=KIP, where="join")
    expect(int(answer.member_epoch) > 0, KIP, f"member epoch after joining is {answer.member_epoch}")
    expect(answer.heartbeat_interval.total_seconds() > 0, KIP, "a heartbeat interval is given")
    wanted = all_of(router, caps, topic, 3)
    m.beat_until(lambda x: x.owned == wanted, "every partition")
    left = m.send(-1)
    expect_code(left.error_code, "NONE", rule=KIP, where="leave")
    expect_equal(int(left.member_epoch), -1, KIP, "epoch in the answer to a leave")


@pytest.mark.requires("share_group_describe")
def test_members_share_one_partition(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-932's simple assignor: with more members than partitions every member is given work, so
    two members both hold the one partition (no revocation phase); ShareGroupDescribe lists both,
    Stable, with the assignor's name."""
    topic = topic_factory(1)
    group = unique("sg")
    a, b = share_member(router, caps, group), share_member(router, caps, group)
    wanted = all_of(router, caps, topic, 1)
    expect_code(a.send(0, [topic]).error_code, "NONE", rule=KIP, where="a joins")
    expect_code(b.send(0, [topic]).error_code, "NONE", rule=KIP, where="b joins")
    a.beat_until(lambda x: x.owned == wanted, "a holds the partition")
    b.beat_until(lambda x: x.owned == wanted, "b holds the partition")
    d = describe(a.wire, caps, group)
    for _ in range(ROUNDS):
        if d.group_state == "Stable":
            break
        a.send()
        b.send()
        d = describe(a.wire, caps, group)
    expect_code(d.error_code, "NONE", rule=KIP, where="describe")
    expect_equal(d.group_state, "Stable", KIP, "group state")
    expect_equal(
        {(x.member_id, int(x.member_epoch)) for x in d.members},
        {(a.member_id, a.epoch), (b.member_id, b.epoch)},
        KIP,
        "members and epochs in ShareGroupDescribe",
    )
    expect(bool(d.assignor_name), KIP, "an assignor name is given")
    a.send(-1)
    b.send(-1)


def test_fencing_and_unknown_member(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """KIP-932: an epoch above the member's is FENCED_MEMBER_EPOCH; a member id the group does not
    know is UNKNOWN_MEMBER_ID; an empty member id is INVALID_REQUEST."""
    topic = topic_factory(1)
    m = share_member(router, caps, unique("sg"))
    m.send(0, [topic])
    expect_code(m.send(m.epoch + 5).error_code, "FENCED_MEMBER_EPOCH", rule=KIP, where="epoch ahead")
    stranger = ShareMember(m.wire, caps, m.group)
    expect_code(stranger.send(1).error_code, "UNKNOWN_MEMBER_ID", rule=KIP, where="unknown member")
    empty = ShareMember(m.wire, caps, m.group, member_id="")
    expect_code(empty.send(0, [topic]).error_code, "INVALID_REQUEST", rule=KIP, where="empty member id")
    m.send(-1)


@pytest.mark.requires("share_group_describe")
def test_describe_unknown_and_other_type(
    router: Router, caps: Capabilities, unique: Callable[[str], str], topic_factory: Callable[..., str]
) -> None:
    """ShareGroupDescribe: an unknown id is GROUP_ID_NOT_FOUND; a consumer-protocol group's id is
    not a share group, for describe and heartbeat alike."""
    unknown = unique("sg-missing")
    missing = describe(router.to_coordinator(unknown), caps, unknown)  # its own coordinator on a cluster
    expect_code(missing.error_code, "GROUP_ID_NOT_FOUND", rule=KIP, where="describe an unknown group")
    if not caps.supports("consumer_group_heartbeat"):
        return
    topic = topic_factory(1)
    group = unique("cg")
    cg = CgMember(router.to_coordinator(group), caps, group)
    expect_code(cg.join([topic]).error_code, "NONE", rule=KIP, where="consumer group join")
    sm = share_member(router, caps, group)
    expect_code(
        sm.send(0, [topic]).error_code, "GROUP_ID_NOT_FOUND", rule=KIP, where="share join on a consumer group"
    )
    expect_code(describe(sm.wire, caps, group).error_code, "GROUP_ID_NOT_FOUND", rule=KIP, where="describe")
    cg.leave()
