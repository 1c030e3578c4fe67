"""KIP-848 regex subscriptions under an authorizer: a regex resolves only to the topics the member's
principal may DESCRIBE (Kafka's ``GroupMetadataManager.refreshRegularExpressions`` filters what a
regex matched with ``filterTopicDescribeAuthorizedTopics``, in the context of the heartbeat that
asked; group-coordinator/src/main/java/org/apache/kafka/coordinator/group/GroupMetadataManager.java)."""

from __future__ import annotations

from typing import Any

from reference_impl.protocol.errors import ErrorCode

from ..core.harness import BrokerHarness, request
from ..core.test_acls import ALICE, _create, _group_world


def _join(harness: BrokerHarness, cid: int, member: str) -> Any:
    body = request(68, 1, group_id="g", member_id=member, member_epoch=0, rebalance_timeout=30_000,
                   topic_partitions=[], subscribed_topic_names=[], subscribed_topic_regex="r.*")  # fmt: skip
    answer = harness.call(body, cid)
    assert answer.error_code == ErrorCode.none, answer
    return answer


def _topics(harness: BrokerHarness, answer: Any) -> set[str]:
    names = {info.topic_id: name for name, info in harness.broker.image.topics.items()}
    return {names[t.topic_id] for t in answer.assignment.topic_partitions if t.partitions}


def test_a_regex_resolves_only_to_topics_its_principal_may_describe() -> None:
    harness, admin, alice = _group_world("ra", "rb")
    # READ on the group, DESCRIBE on ra alone
    assert _create(harness, admin, (3, "g", 3, ALICE, 3, 3), (2, "ra", 3, ALICE, 8, 3)) == [0, 0]
    assert _topics(harness, _join(harness, alice, "m1")) == {"ra"}, "rb is not alice's to see"
    group = harness.broker.group_coordinator.consumer.groups["g"]
    assert sorted(group.subscribed_metadata) == ["ra"]


def test_a_super_users_regex_resolves_to_every_matching_topic() -> None:
    harness, admin, _alice = _group_world("ra", "rb")
    assert _topics(harness, _join(harness, admin, "m1")) == {"ra", "rb"}
