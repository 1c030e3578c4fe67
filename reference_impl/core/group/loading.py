"""Loading a shard: replay one partition of ``__consumer_offsets`` into groups and offsets.

A coordinator that becomes leader of a partition reads its log from the
start: offset commits (committed ones straight into the store, transactional
ones held under their producer until that producer's COMMIT or ABORT marker
in the same log), group metadata (the last record of a group wins; a
tombstone removes it), consumer-protocol group records (KIP-848, replayed in
order by :meth:`.consumer_coordinator.ConsumerGroups.replay`) and, for
offsets without group metadata, "simple" groups. A group replayed with
members is Stable in its stored generation; its members must heartbeat
within their session timeouts, as after any rebalance.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import control_record_type, iter_records
from reference_impl.protocol.records import iter_headers

from ..internal_topics import CONSUMER_OFFSETS
from .consumer_records import decode_consumer_key
from .log_format import (
    GroupKey,
    GroupLogFormatError,
    OffsetKey,
    StoredGroup,
    decode_group_value,
    decode_key,
    decode_offset_value,
)
from .state import ClassicGroup, GroupState, Member, Protocol

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger("reference_impl.group")
READ_BYTES = 1 << 20


def load_shard(coordinator: GroupCoordinator, index: int) -> None:
    """Replay ``__consumer_offsets-<index>`` into the coordinator's groups and offsets."""
    broker = coordinator.broker
    part = broker.partitions[(CONSUMER_OFFSETS.name, index)]
    stored: dict[str, StoredGroup | None] = {}

    def in_shard(group_id: str) -> bool:
        return coordinator.shard_of(group_id) == index

    offset = part.log.log_start_offset
    while offset < part.log.log_end_offset:
        result = part.log.read(offset, READ_BYTES)
        data = b"".join(broker.store.read_chunk(c) for c in result.chunks)
        if not data:
            break
        for header in iter_headers(data):
            offset = header.next_offset
            producer_id = header.producer_id if header.is_transactional else -1
            for record in iter_records(data, header):
                if header.is_control:
                    committed = control_record_type(record) == 1
                    coordinator.offsets.complete_transaction(header.producer_id, committed, in_shard)
                else:
                    _replay(coordinator, record.key, record.value, producer_id, stored)
    for group_id, value in stored.items():
        if value is None:
            coordinator.groups.pop(group_id, None)
        elif group_id not in coordinator.consumer.groups:
            _restore_group(coordinator, group_id, value)
    for group_id in list(coordinator.offsets.committed):
        if in_shard(group_id):
            coordinator.simple_group(group_id)
    coordinator.consumer.loaded(index)
    consumer_groups = sum(1 for g in coordinator.consumer.groups if in_shard(g))
    log.info(
        "loaded __consumer_offsets-%d: %d classic and %d consumer groups", index, len(stored), consumer_groups
    )


def _replay(
    coordinator: GroupCoordinator,
    key: bytes | None,
    value: bytes | None,
    producer_id: int,
    stored: dict[str, StoredGroup | None],
) -> None:
    if key is None:
        return
    try:
        decoded = decode_key(key)
        if isinstance(decoded, OffsetKey):
            tp = (decoded.topic, decoded.partition)
            committed = decode_offset_value(value) if value is not None else None
            if producer_id >= 0:
                coordinator.offsets.put_pending(producer_id, decoded.group_id, tp, committed)
            else:
                coordinator.offsets.put(decoded.group_id, tp, committed)
        elif isinstance(decoded, GroupKey):
            stored[decoded.group_id] = decode_group_value(value) if value is not None else None
        else:
            consumer_key = decode_consumer_key(key)
            if consumer_key is not None:
                stored.pop(consumer_key.group_id, None)
                coordinator.consumer.replay(consumer_key, value)
    except GroupLogFormatError as exc:
        log.warning("skipping an unreadable __consumer_offsets record: %s", exc)


def _restore_group(coordinator: GroupCoordinator, group_id: str, value: StoredGroup) -> None:
    old = coordinator.groups.pop(group_id, None)
    if old is not None:
        coordinator.membership.kill(old, ErrorCode.not_coordinator)
    group = ClassicGroup(
        group_id,
        state=GroupState.STABLE if value.members else GroupState.EMPTY,
        state_timestamp_ms=value.state_timestamp_ms,
        generation=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        leader_id=value.leader,
    )
    for m in value.members:
        group.members[m.member_id] = Member(
            m.member_id,
            m.group_instance_id,
            m.client_id,
            m.client_host,
            m.rebalance_timeout_ms,
            m.session_timeout_ms,
            value.protocol_type,
            (Protocol(value.protocol or "", m.subscription),),
            assignment=m.assignment,
        )
        if m.group_instance_id is not None:
            group.static_members[m.group_instance_id] = m.member_id
    group.subscribed_topics = group.compute_subscribed_topics()
    coordinator.groups[group_id] = group
    coordinator.membership.loaded(group)
