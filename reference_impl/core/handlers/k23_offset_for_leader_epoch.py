"""OffsetForLeaderEpoch: v2-4. Where a leader epoch ended (KIP-101 truncation, KIP-320 validation).

Behaviour: the answer is the largest epoch ≤ the requested one in the
leader's epoch cache and its end offset (the next epoch's start offset, or
the log end offset for the latest epoch); (-1, -1) when the cache has no
such epoch. ``current_leader_epoch`` fences as in Fetch (FENCED_LEADER_EPOCH,
UNKNOWN_LEADER_EPOCH). Consumers (replica_id -1) and followers alike are
answered by the leader: NOT_LEADER_OR_FOLLOWER elsewhere.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .access import TOPIC, Op, allowed, cluster_allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost


@handles(23, 2, 4)
def handle_offset_for_leader_epoch(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    topics = []
    replica = int(get(request, "replica_id", -1)) >= 0
    cluster_ok = not replica or cluster_allowed(broker, ctx, Op.CLUSTER_ACTION)
    for t in request.topics:
        described = replica or allowed(broker, ctx, Op.DESCRIBE, TOPIC, t.topic)
        partitions = []
        for p in t.partitions:
            entry: dict[str, Any] = {"partition": p.partition, "leader_epoch": -1, "end_offset": -1}
            part = broker.partition(t.topic, p.partition)
            try:  # Kafka: a follower needs CLUSTER_ACTION, a client DESCRIBE on the topic
                if not cluster_ok:
                    raise KafkaError(ErrorCode.cluster_authorization_failed)
                if not described:
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                if part is None:
                    raise KafkaError(ErrorCode.unknown_topic_or_partition)
                part.check_online()
                if not part.is_leader:
                    raise KafkaError(ErrorCode.not_leader_or_follower)
                part.check_leader_epoch(int(p.current_leader_epoch))
                epoch, end = part.log.end_offset_for_epoch(int(p.leader_epoch))
                entry.update(leader_epoch=epoch, end_offset=end, error_code=ErrorCode.none)
            except KafkaError as exc:
                entry["error_code"] = exc.code
            partitions.append(entry)
        topics.append({"topic": t.topic, "partitions": partitions})
    return Respond(build(response_class(23, ctx.api_version), {"throttle_time": 0, "topics": topics}))
