"""Committed offsets per group, pending transactional offsets per producer, and when an offset expires.

An offset committed inside a transaction (TxnOffsetCommit) is held apart,
under its producer id, until the transaction's marker reaches the group's
partition of ``__consumer_offsets``: a COMMIT moves it into the committed
offsets, an ABORT drops it. OffsetFetch with ``require_stable`` answers
UNSTABLE_OFFSET_COMMIT for a partition with such a pending offset.

Expiry follows Kafka's ``offsetExpirationCondition``: the offsets of an
Empty group expire ``offsets.retention.minutes`` after the group became
empty; those of a group without a protocol (a "simple" group that only
commits) after their commit; a Stable consumer group's offsets of topics it
no longer subscribes to after their commit; an offset with an explicit
expire timestamp (OffsetCommit v2-v4 retention time) at that timestamp.
"""

from __future__ import annotations

from collections.abc import Callable

from .log_format import CommittedOffset
from .state import ClassicGroup, GroupState

TopicPartition = tuple[str, int]


class OffsetStore:
    def __init__(self) -> None:
        self.committed: dict[str, dict[TopicPartition, CommittedOffset]] = {}
        self.pending: dict[int, dict[str, dict[TopicPartition, CommittedOffset | None]]] = {}
        """Producer id → group → partition → offset (None: a tombstone written inside the transaction)."""

    # -- committed ------------------------------------------------------------------------------

    def get(self, group_id: str, tp: TopicPartition) -> CommittedOffset | None:
        return self.committed.get(group_id, {}).get(tp)

    def put(self, group_id: str, tp: TopicPartition, value: CommittedOffset | None) -> None:
        if value is None:
            offsets = self.committed.get(group_id)
            if offsets is not None:
                offsets.pop(tp, None)
                if not offsets:
                    del self.committed[group_id]
        else:
            self.committed.setdefault(group_id, {})[tp] = value

    def of_group(self, group_id: str) -> dict[TopicPartition, CommittedOffset]:
        return self.committed.get(group_id, {})

    def drop_group(self, group_id: str) -> None:
        self.committed.pop(group_id, None)
        for by_group in self.pending.values():
            by_group.pop(group_id, None)

    # -- transactional --------------------------------------------------------------------------

    def put_pending(
        self, producer_id: int, group_id: str, tp: TopicPartition, value: CommittedOffset | None
    ) -> None:
        self.pending.setdefault(producer_id, {}).setdefault(group_id, {})[tp] = value

    def has_pending(self, group_id: str, tp: TopicPartition) -> bool:
        return any(tp in by_group.get(group_id, {}) for by_group in self.pending.values())

    def has_open_transactions(self, group_id: str) -> bool:
        return any(group_id in by_group for by_group in self.pending.values())

    def complete_transaction(
        self, producer_id: int, commit: bool, in_shard: Callable[[str], bool] = lambda _g: True
    ) -> list[str]:
        """A marker for ``producer_id`` in one shard: apply (commit) or drop (abort) its groups' offsets.

        A transaction may span several groups' shards, each with its own
        marker: only the groups ``in_shard`` selects are completed here.
        """
        by_group = self.pending.get(producer_id, {})
        done = sorted(g for g in by_group if in_shard(g))
        for group_id in done:
            offsets = by_group.pop(group_id)
            if commit:
                for tp, value in offsets.items():
                    self.put(group_id, tp, value)
        if not by_group:
            self.pending.pop(producer_id, None)
        return done

    # -- expiry ---------------------------------------------------------------------------------

    def expired(self, group: ClassicGroup, now_ms: int, retention_ms: int) -> list[TopicPartition]:
        """The group's offsets past their retention, Kafka's way (see the module doc)."""
        base_of_group: int | None
        if group.protocol_type is None:
            base_of_group = None  # by commit timestamp
        elif group.is_in(GroupState.EMPTY):
            base_of_group = group.state_timestamp_ms if group.state_timestamp_ms >= 0 else None
        elif (
            group.protocol_type == "consumer"
            and group.subscribed_topics is not None
            and group.is_in(GroupState.STABLE)
        ):
            base_of_group = None
        else:
            return []
        return self.expired_of(group.group_id, group.is_subscribed_to, base_of_group, now_ms, retention_ms)

    def expired_of(
        self,
        group_id: str,
        subscribed: Callable[[str], bool],
        base_of_group: int | None,
        now_ms: int,
        retention_ms: int,
    ) -> list[TopicPartition]:
        """Offsets of topics not ``subscribed`` past their retention from ``base_of_group`` (None:
        from each commit's timestamp, a consumer-protocol group's way:
        ``ConsumerGroup.offsetExpirationCondition``)."""
        out = []
        for tp, value in self.of_group(group_id).items():
            if subscribed(tp[0]) or self.has_pending(group_id, tp):
                continue
            if value.expire_timestamp_ms is not None:
                if now_ms >= value.expire_timestamp_ms:
                    out.append(tp)
                continue
            base = base_of_group if base_of_group is not None else value.commit_timestamp_ms
            if now_ms - base >= retention_ms:
                out.append(tp)
        return sorted(out)
