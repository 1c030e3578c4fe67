"""Produce: v3-13. Append one record batch per partition, assign offsets, acknowledge.

Behaviour: acks 0 (no response), 1 (after the leader's append), -1 (after
the ISR has it; with one replica, at once). Batch-level validation
(:mod:`..validation`): CORRUPT_MESSAGE, INVALID_RECORD, MESSAGE_TOO_LARGE,
RECORD_LIST_TOO_LARGE, INVALID_TIMESTAMP; UNKNOWN_TOPIC_OR_PARTITION for a
missing topic (v13: UNKNOWN_TOPIC_ID for a missing topic id);
NOT_LEADER_OR_FOLLOWER; NOT_ENOUGH_REPLICAS when acks=-1 and the ISR is
smaller than ``min.insync.replicas``; INVALID_REQUIRED_ACKS for other acks.
``log_append_time`` is the broker's time for LogAppendTime topics, else -1.
Version notes: v5+ log_start_offset; v8+ record_errors and error_message;
v10+ current_leader on NOT_LEADER_OR_FOLLOWER; v13 topics by id.
Idempotent batches are deduplicated and sequence-checked per producer; a transactional
batch must come from a producer whose open transaction added the partition.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build, get
from reference_impl.protocol.errors import ErrorCode, KafkaError
from reference_impl.protocol.records import BatchHeader

from .registry import NoResponse, Reply, Respond, handles

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


def _transaction_check(broker: Broker, request: Any, key: tuple[str, int]) -> Callable[[BatchHeader], None]:
    """KIP-890 part 1: a transactional batch must belong to a partition its transaction added."""
    transactional_id = get(request, "transactional_id")

    def check(header: BatchHeader) -> None:
        if not header.is_transactional:
            return
        if transactional_id is None:
            raise KafkaError(ErrorCode.invalid_request, "transactional batch without a transactional id")
        broker.txn_coordinator.verify_partition(
            transactional_id, header.producer_id, header.producer_epoch, key
        )

    return check


@handles(0, 3, 13)
def handle_produce(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    acks = int(request.acks)
    now = ctx.received_ms
    topics = []
    for topic_data in request.topic_data:
        name = get(topic_data, "name")
        topic_id = get(topic_data, "topic_id")
        missing = ErrorCode.unknown_topic_or_partition
        if name is None and topic_id is not None:
            found = broker.image.topic_by_id(topic_id)
            name = found.name if found else None
            missing = ErrorCode.unknown_topic_id
        partitions = []
        for pdata in topic_data.partition_data:
            entry: dict[str, Any] = {
                "index": pdata.index,
                "base_offset": -1,
                "log_start_offset": -1,
                "log_append_time": None,
                "record_errors": [],
                "error_message": None,
            }
            part = broker.partition(name, pdata.index) if name is not None else None
            if acks not in (0, 1, -1):
                entry["error_code"] = ErrorCode.invalid_required_acks
            elif part is None:
                entry["error_code"] = missing
            else:
                try:
                    info = part.append_as_leader(
                        pdata.records, acks, now, verify=_transaction_check(broker, request, part.key)
                    )
                except KafkaError as exc:
                    entry["error_code"] = exc.code
                    entry["error_message"] = exc.message
                    if exc.code is ErrorCode.not_leader_or_follower:
                        entry["current_leader"] = {
                            "leader_id": part.leader_id,
                            "leader_epoch": part.leader_epoch,
                        }
                else:
                    entry.update(
                        error_code=ErrorCode.none,
                        base_offset=info.first_offset,
                        log_start_offset=part.log.log_start_offset,
                    )
                    if part.limits.log_append_time:
                        entry["log_append_time"] = now
                    broker.notify_partition_changed(part.key, now)
            partitions.append(entry)
        topics.append(
            {"name": get(topic_data, "name"), "topic_id": topic_id, "partition_responses": partitions}
        )
    if acks == 0:
        return NoResponse()
    return Respond(build(response_class(0, ctx.api_version), {"responses": topics, "throttle_time": 0}))
