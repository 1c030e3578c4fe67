"""ShareGroupDescribe: v1 (KIP-932). The share groups this broker coordinates, described.

Behaviour: per group its state (Empty, Reconciling, Stable), group epoch, assignment epoch,
assignor (``simple``) and each member's ids, epoch, subscription and assignment
(``ShareGroup.asDescribedGroup``).
Errors per group: GROUP_ID_NOT_FOUND (no such share group), NOT_COORDINATOR,
COORDINATOR_LOAD_IN_PROGRESS, INVALID_GROUP_ID (an empty id), GROUP_AUTHORIZATION_FAILED.
Version notes: v1 only, as kio 0.6.5 carries (Kafka 4.1's schema).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .k69_consumer_group_describe import describe_modern_groups
from .registry import Reply, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(77, 1, 1)
def handle_share_group_describe(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    return describe_modern_groups(broker, ctx, request, 77, broker.group_coordinator.share.describe)
