"""ShareAcknowledge: v1-v2 (KIP-932). A share-group member acknowledges records it holds.

Behaviour (Kafka's ``KafkaApis.handleShareAcknowledgeRequest``, ``SharePartitionManager.acknowledge``,
``SharePartition.acknowledge`` in core/src/main/java/kafka/server/share/SharePartition.java): the
request uses the member's share session (epoch 0 cannot open one: INVALID_SHARE_SESSION_EPOCH;
-1 closes it after the acknowledgements, releasing what the member still holds); each
AcknowledgementBatch gives one type for its range or one per offset: 0 GAP and 3 REJECT archive,
1 ACCEPT acknowledges, 2 RELEASE makes the record available again (archived once its delivery
count reached ``group.share.delivery.count.limit``). A partition's batches apply all or none.
Errors, top-level: INVALID_REQUEST (empty ids, too many partitions or batches, renew
acknowledgements), GROUP_AUTHORIZATION_FAILED, SHARE_SESSION_NOT_FOUND,
INVALID_SHARE_SESSION_EPOCH. Per partition: INVALID_RECORD_STATE (a record the member does not
hold), INVALID_REQUEST (a malformed batch), UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION,
NOT_LEADER_OR_FOLLOWER (with the current leader), TOPIC_AUTHORIZATION_FAILED.
Version notes: v1-v2, as Kafka's newest ShareAcknowledgeRequest.json and kio 0.6.5 define them
(v0 was 4.0's early access); v2's IsRenewAck (KIP-1222 renew, type 4) is refused (INVALID_REQUEST).
The answer goes out once the changed state's write through the share coordinator is decided
(``group/share_persister.py``): a partition whose write failed answers the write's error as
``SharePartition.fetchPersisterError`` maps it (COORDINATOR_NOT_AVAILABLE, NOT_LEADER_OR_FOLLOWER,
FENCED_STATE_EPOCH, ...) and its records are back with the member (Kafka's rollback); one still
undecided at the deadline answers REQUEST_TIMED_OUT.
Not implemented: NodeEndpoints (empty).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import KafkaError

from .registry import Reply, Respond, handles
from .share_common import (
    TP,
    Acked,
    acknowledge_all,
    after_written,
    open_session,
    partition_answer,
    partitions_of,
    render_with,
)

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(79, 1, 2)
def handle_share_acknowledge(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    cls = response_class(79, ctx.api_version)
    body: dict[str, Any] = {
        "throttle_time": 0,
        "acquisition_lock_timeout": broker.config.get_int("group.share.record.lock.duration.ms"),
        "responses": [],
        "node_endpoints": [],
    }
    acked = Acked()
    try:
        entries = _serve(broker, ctx, request, acked)
    except KafkaError as exc:
        return Respond(build(cls, {**body, "error_code": exc.code, "error_message": exc.message}))
    return after_written(broker, ctx, render_with(cls, body, entries, "error_code"), acked)


def _serve(
    broker: HandlerHost, ctx: RequestContext, request: Any, acked: Acked
) -> list[tuple[TP, dict[str, Any]]]:
    """Acknowledge; the partitions' entries (their acknowledgements' writes are started)."""
    named = partitions_of(request)
    leader, session = open_session(broker, ctx, request, added=(), can_open=False)
    entries: list[tuple[TP, dict[str, Any]]] = []
    for tp, loc, code in acknowledge_all(broker, ctx, leader, request, named, acked, without_batches=True):
        entry = partition_answer(tp, loc)
        if code is not None:
            entry["error_code"] = code
        entries.append((tp, entry))
    if session is None:  # epoch -1 closed the session
        leader.release_member(request.group_id or "", request.member_id or "")
    broker.group_coordinator.share.sync.flush()  # the acknowledgements, persisted
    return entries
