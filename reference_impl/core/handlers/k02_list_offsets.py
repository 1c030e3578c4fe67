"""ListOffsets: v1-11. An offset per partition by timestamp or by a special value.

Behaviour: -1 LATEST is the high watermark (read_uncommitted) or the last
stable offset (read_committed, v2+); -2 EARLIEST is the log start offset;
-3 MAX_TIMESTAMP (v7+) the record with the largest timestamp; -4
EARLIEST_LOCAL (v8+) the log start offset (no tiered storage); -5
LATEST_TIERED (v9+) -1 (nothing is tiered). A timestamp finds the first
record at or after it through the time index; nothing found, or found at or
above the readable bound, answers offset -1 and timestamp -1.
``replica_id`` -2 (debug) and followers (≥ 0) read up to the log end.
Errors: UNKNOWN_TOPIC_OR_PARTITION, NOT_LEADER_OR_FOLLOWER,
FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH (v4+), INVALID_REQUEST for a
partition listed twice. Version notes: v4+ leader_epoch of the answer.
"""

from __future__ import annotations

from collections import Counter
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..partition import Partition
from .access import TOPIC, Op, allowed
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
DEBUG_REPLICA = -2


@handles(2, 1, 11)
def handle_list_offsets(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    committed = int(get(request, "isolation_level", 0)) == 1
    debug = int(request.replica_id) == DEBUG_REPLICA or int(request.replica_id) >= 0  # followers: LEO
    seen = Counter((t.name, p.partition_index) for t in request.topics for p in t.partitions)
    topics = []
    for t in request.topics:
        described = allowed(broker, ctx, Op.DESCRIBE, TOPIC, t.name)
        partitions = []
        for p in t.partitions:
            entry: dict[str, Any] = {
                "partition_index": p.partition_index,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            part = broker.partition(t.name, p.partition_index)
            try:
                if not described:  # Kafka: DESCRIBE on the topic (TOPIC_AUTHORIZATION_FAILED)
                    raise KafkaError(ErrorCode.topic_authorization_failed)
                if seen[(t.name, p.partition_index)] > 1:
                    raise KafkaError(ErrorCode.invalid_request, "partition listed twice")
                if part is None:
                    raise KafkaError(ErrorCode.unknown_topic_or_partition)
                part.check_online()
                if not part.is_leader:
                    raise KafkaError(ErrorCode.not_leader_or_follower)
                part.check_leader_epoch(get(p, "current_leader_epoch", -1))
                offset, timestamp = _lookup(part, int(p.timestamp), committed, debug)
                entry.update(
                    offset=offset,
                    timestamp=timestamp,
                    leader_epoch=part.epoch_for_offset(offset) if offset >= 0 else -1,
                )
                if int(p.timestamp) == LATEST and offset >= 0:
                    entry["leader_epoch"] = part.epoch_for_offset(max(offset - 1, 0))
                entry["error_code"] = ErrorCode.none
            except KafkaError as exc:
                entry["error_code"] = exc.code
            partitions.append(entry)
        topics.append({"name": t.name, "partitions": partitions})
    return Respond(build(response_class(2, ctx.api_version), {"throttle_time": 0, "topics": topics}))


def _lookup(part: Partition, timestamp: int, committed: bool, debug: bool) -> tuple[int, int]:
    bound = (
        part.log.log_end_offset if debug else (part.last_stable_offset if committed else part.high_watermark)
    )
    if timestamp == LATEST:
        return bound, -1
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return part.log.log_start_offset, -1
    if timestamp == LATEST_TIERED:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        found = part.log.max_timestamp()
    else:
        found = part.log.offset_for_timestamp(timestamp)
    if found is None or found[0] >= bound:
        return -1, -1
    return found
