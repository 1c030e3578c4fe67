"""ConsumerGroupDescribe: v0-1 (KIP-848). The consumer-protocol groups this broker coordinates, described.

Behaviour: per group its state (Empty, Assigning, Reconciling, Stable), group epoch, assignment
epoch, assignor, and each member's ids, epoch, subscription (names and regex), current and target
assignment (``ConsumerGroup.asDescribedGroup``).
Errors per group: GROUP_ID_NOT_FOUND (no such group, or not a consumer-protocol group),
NOT_COORDINATOR, COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID (an empty id); with an authorizer
GROUP_AUTHORIZATION_FAILED without DESCRIBE on the group, and TOPIC_AUTHORIZATION_FAILED, the
description withheld, when a member's subscription or assignment names a topic the principal may
not DESCRIBE (``KafkaApis.handleConsumerGroupDescribe`` since KAFKA-18813, Kafka 4.0; the same for
ShareGroupDescribe, KAFKA-18817).
Version notes: v1 each member's type (1: a consumer-protocol member).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode

from .access import GROUP, TOPIC, Op, all_allowed, allowed, bitfield
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

_BLANK = {"group_state": "", "group_epoch": 0, "assignment_epoch": 0, "assignor_name": "", "members": []}


@handles(69, 0, 1)
def handle_consumer_group_describe(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return describe_modern_groups(broker, ctx, request, 69, broker.group_coordinator.consumer.describe)


def describe_modern_groups(
    broker: HandlerHost,
    ctx: RequestContext,
    request: Any,
    api_key: int,
    describe: Callable[[str], dict[str, Any]],
) -> Reply:
    """ConsumerGroupDescribe and ShareGroupDescribe: one entry per asked id, ACL-checked."""
    coordinator = broker.group_coordinator
    groups = []
    with coordinator.operation(ctx.received_ms):
        for group_id in request.group_ids:
            asked = get(request, "include_authorized_operations", False)
            operations = bitfield(broker, ctx, asked, GROUP, group_id)
            if not group_id:
                entry: dict[str, Any] = {"error_code": ErrorCode.invalid_group_id, "group_id": group_id}
            elif not allowed(broker, ctx, Op.DESCRIBE, GROUP, group_id):  # Kafka: DESCRIBE on the group
                entry = {"error_code": ErrorCode.group_authorization_failed, "group_id": group_id}
                operations = bitfield(broker, ctx, False, GROUP, group_id)
            else:
                entry = describe(group_id)
                if not all_allowed(broker, ctx, Op.DESCRIBE, TOPIC, _topics_of(entry)):
                    entry = {"error_code": ErrorCode.topic_authorization_failed, "group_id": group_id}
            groups.append({**_BLANK, "error_message": None, "authorized_operations": operations, **entry})
    cls = response_class(api_key, ctx.api_version)
    return Respond(build(cls, {"throttle_time": 0, "groups": groups}))


def _topics_of(described: dict[str, Any]) -> set[str]:
    """Every topic a described group names: its members' subscriptions and current and target
    assignments (KAFKA-18813 / KAFKA-18817: a group naming one the principal may not DESCRIBE is
    answered TOPIC_AUTHORIZATION_FAILED, its description withheld)."""
    names: set[str] = set()
    for member in described.get("members") or ():
        names.update(member.get("subscribed_topic_names") or ())
        for assignment in ("assignment", "target_assignment"):
            for tp in (member.get(assignment) or {}).get("topic_partitions", ()):
                if tp.get("topic_name"):  # "": a topic deleted since, no name left to check
                    names.add(str(tp["topic_name"]))
    return names
