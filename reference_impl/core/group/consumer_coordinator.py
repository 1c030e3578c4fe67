"""The consumer-protocol half of the group coordinator: ConsumerGroupHeartbeat, its timers and records.

Kafka's ``GroupMetadataManager.java`` (consumerGroupHeartbeat, consumerGroupLeave, the session and
rebalance timeouts) over the state machine of :mod:`.consumer`. One heartbeat is one operation of
the coordinator: validate, change the group in memory, write the records the change calls for to
the group's ``__consumer_offsets`` partition (acks=all, :mod:`.consumer_records`), and answer once
they are committed. A replayed log (:meth:`ConsumerGroups.replay`) rebuilds the same groups, so a
restart or a coordinator move keeps epochs and assignments.

Timers, by the coordinator's heap (``schedule``): a member's session (``group.consumer.session.timeout.ms``,
reset by every heartbeat) and, while it must revoke partitions, its rebalance timeout; either
expiring fences the member (removed, group epoch bumped).
"""

from __future__ import annotations

import functools
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.acl_codes import Operation, ResourceType
from reference_impl.protocol.errors import ErrorCode, KafkaError

from .consumer import (
    EMPTY,
    JOIN_EPOCH,
    LEAVE_EPOCH,
    LEAVE_STATIC_EPOCH,
    TP,
    Assignment,
    ConsumerGroup,
    Describable,
    GroupState,
    Member,
    MemberState,
    TopicMeta,
    assignor_names,
    compute_target,
    group_metadata,
    is_subset,
    reconcile,
    validate_regex,
)
from .consumer_records import (
    CURRENT_ASSIGNMENT,
    GROUP_METADATA,
    MEMBER_METADATA,
    PARTITION_METADATA,
    TARGET_MEMBER,
    TARGET_METADATA,
    ConsumerKey,
    CurrentAssignment,
    MemberMetadata,
    TopicMetadata,
    decode_current_assignment,
    decode_group_metadata,
    decode_member_metadata,
    decode_partition_metadata,
    decode_target_member,
    decode_target_metadata,
    encode_current_assignment,
    encode_group_metadata,
    encode_key,
    encode_member_metadata,
    encode_partition_metadata,
    encode_target_member,
    encode_target_metadata,
)
from .log_format import encode_group_key
from .state import GroupState as ClassicState

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

log = logging.getLogger("reference_impl.group")
RecordKV = tuple[bytes, bytes | None]
CONSUMER_GENERATED_MEMBER_ID_VERSION = 1


@dataclass(frozen=True, slots=True)
class HeartbeatRequest:
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_names: tuple[str, ...] | None
    subscribed_regex: str | None
    server_assignor: str | None
    owned: Assignment | None
    api_version: int
    client_id: str = ""
    client_host: str = ""
    principal: str = "User:ANONYMOUS"


@dataclass(frozen=True, slots=True)
class HeartbeatAnswer:
    error: ErrorCode
    message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Assignment | None = None


def _snapshot(group: ConsumerGroup) -> dict[str, Any]:
    return {
        "epoch": group.group_epoch,
        "assignment_epoch": group.assignment_epoch,
        "metadata": dict(group.subscribed_metadata),
        "members": {m.member_id: (m.metadata_key(), m.assignment_key()) for m in group.members.values()},
        "target": dict(group.target),
    }


class ConsumerGroups:
    """The consumer-protocol groups of one coordinator (Kafka's ``ConsumerGroup`` instances)."""

    def __init__(self, coordinator: GroupCoordinator) -> None:
        self.coordinator = coordinator
        self.groups: dict[str, ConsumerGroup] = {}

    # -- configuration ---------------------------------------------------------------------------

    def _config(self, name: str) -> int:
        return self.coordinator.broker.config.get_int(name)

    def _group_config(self, group_id: str, name: str) -> int:
        """``group.consumer.<name>``, or the group's own ``consumer.<name>`` (resource type 32; Kafka's
        ``GroupMetadataManager.consumerGroupSessionTimeoutMs``/``...HeartbeatIntervalMs``)."""
        own = self.coordinator.broker.image.group_configs.get(group_id, {}).get(f"consumer.{name}")
        return int(own) if own is not None else self._config(f"group.consumer.{name}")

    def assignors(self) -> list[str]:
        return assignor_names(self.coordinator.broker.config.get("group.consumer.assignors") or "")

    def topics(self) -> dict[str, TopicMeta]:
        return {
            name: TopicMeta(name, info.topic_id, len(info.partitions))
            for name, info in self.coordinator.broker.image.topics.items()
        }

    # -- the heartbeat -----------------------------------------------------------------------------

    def validate(self, req: HeartbeatRequest) -> None:
        """``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        bad = ErrorCode.invalid_request
        member_id_required = (
            req.api_version >= CONSUMER_GENERATED_MEMBER_ID_VERSION
            or req.member_epoch > 0
            or req.member_epoch == LEAVE_EPOCH
        )
        if member_id_required and req.member_id == "":
            raise KafkaError(bad, "MemberId can't be empty.")
        if req.group_id == "":
            raise KafkaError(bad, "GroupId can't be empty.")
        if req.instance_id == "":
            raise KafkaError(bad, "InstanceId can't be empty.")
        if req.rack_id == "":
            raise KafkaError(bad, "RackId can't be empty.")
        if req.member_epoch == JOIN_EPOCH:
            if req.rebalance_timeout_ms == -1:
                raise KafkaError(bad, "RebalanceTimeoutMs must be provided in first request.")
            if req.owned is None or req.owned:
                raise KafkaError(bad, "TopicPartitions must be empty when (re-)joining.")
            if req.subscribed_names is None and req.subscribed_regex is None:
                raise KafkaError(
                    bad,
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining.",
                )
        elif req.member_epoch == LEAVE_STATIC_EPOCH:
            if req.instance_id is None:
                raise KafkaError(bad, "InstanceId can't be null.")
        elif req.member_epoch < LEAVE_STATIC_EPOCH:
            raise KafkaError(bad, "MemberEpoch is invalid.")
        if req.server_assignor is not None and req.server_assignor not in self.assignors():
            raise KafkaError(
                ErrorCode.unsupported_assignor,
                f"ServerAssignor {req.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self.assignors())}.",
            )

    def heartbeat(self, req: HeartbeatRequest, done: Callable[[HeartbeatAnswer], None]) -> None:
        """One ConsumerGroupHeartbeat; ``done`` gets the answer once its records are committed."""
        try:
            self.validate(req)
            self.coordinator.check_coordinator(req.group_id)
            if req.member_epoch in (LEAVE_EPOCH, LEAVE_STATIC_EPOCH):
                answer, records = self._leave(req)
            else:
                answer, records = self._heartbeat(req)
        except KafkaError as exc:
            done(HeartbeatAnswer(exc.code, exc.message))
            return
        if not records:
            done(answer)
            return

        def written(code: ErrorCode) -> None:
            done(answer if code is ErrorCode.none else HeartbeatAnswer(code))

        self.coordinator.append(req.group_id, records, written)

    def _describable(self) -> Describable | None:
        """With an authorizer, whether a principal (on a host) may DESCRIBE a topic, by the image's ACLs."""
        broker = self.coordinator.broker
        authorizer = broker.authorizer
        if authorizer is None:
            return None

        def describable(context: tuple[str, str], topic: str) -> bool:
            principal, host = context
            return authorizer.authorize(
                broker.image.acls, principal, host, Operation.DESCRIBE, ResourceType.TOPIC, topic
            )

        return describable

    def _group_for(self, group_id: str, create: bool) -> tuple[ConsumerGroup, list[RecordKV]]:
        """``getOrMaybeCreateConsumerGroup``: an empty classic group is replaced, another is not ours."""
        group = self.groups.get(group_id)
        if group is not None:
            return group, []
        classic = self.coordinator.groups.get(group_id)
        records: list[RecordKV] = []
        if classic is not None:
            if not create or not classic.is_in(ClassicState.EMPTY):
                raise KafkaError(ErrorCode.group_id_not_found, f"Group {group_id} is not a consumer group.")
            self.coordinator.groups.pop(group_id)
            records.append((encode_group_key(group_id), None))
        elif not create:
            raise KafkaError(ErrorCode.group_id_not_found, f"Consumer group {group_id} not found.")
        group = self.groups[group_id] = ConsumerGroup(group_id)
        return group, records

    def _heartbeat(self, req: HeartbeatRequest) -> tuple[HeartbeatAnswer, list[RecordKV]]:
        joining = req.member_epoch == JOIN_EPOCH
        if req.subscribed_regex:  # before anything changes: an error leaves no group behind
            validate_regex(req.subscribed_regex)
        group, records = self._group_for(req.group_id, joining)
        before = _snapshot(group)
        member_id = req.member_id or (self.coordinator.new_member_id("") if joining else "")
        if member_id.startswith("-"):
            member_id = member_id[1:]
        existing = group.members.get(member_id)
        max_size = self._config("group.consumer.max.size")
        if len(group.members) >= max_size and existing is None:
            raise KafkaError(
                ErrorCode.group_max_size_reached,
                f"The consumer group has reached its maximum capacity of {max_size} members.",
            )
        removed: list[str] = []
        new_member = False
        if req.instance_id is not None:
            static = group.static_member(req.instance_id)
            if joining:
                if static is not None and static.member_id != member_id:
                    if static.member_epoch != LEAVE_STATIC_EPOCH:
                        raise KafkaError(
                            ErrorCode.unreleased_instance_id,
                            f"Static member {member_id} with instance id {req.instance_id} cannot join the "
                            f"group because the instance id is owned by {static.member_id} member.",
                        )
                    # The new incarnation takes the old one's epoch and assignment (no rebalance).
                    del group.members[static.member_id]
                    removed.append(static.member_id)
                    member = replace(static, member_id=member_id)
                    if static.member_id in group.target:
                        group.target[member_id] = group.target.pop(static.member_id)
                    member.member_epoch = max(static.previous_epoch, 0)
                elif static is not None:
                    member = static
                else:
                    member, new_member = Member(member_id), True
            else:
                if static is None:
                    raise KafkaError(
                        ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown."
                    )
                if static.member_id != member_id:
                    raise KafkaError(
                        ErrorCode.fenced_instance_id,
                        f"Static member {member_id} with instance id {req.instance_id} was fenced by member "
                        f"{static.member_id}.",
                    )
                member = static
        elif existing is None:
            if not joining:
                raise KafkaError(
                    ErrorCode.unknown_member_id,
                    f"Member {member_id} is not a member of group {req.group_id}.",
                )
            member, new_member = Member(member_id), True
        else:
            member = existing
        if not joining and not new_member:
            self._check_epoch(member, req.member_epoch, req.owned)
        if joining and existing is not None and req.instance_id is None:
            # A known member rejoining with epoch 0 has lost its partitions: start it over.
            member = replace(
                member, member_epoch=0, state=MemberState.STABLE, assigned=EMPTY, pending_revocation=EMPTY
            )
        updated = replace(
            member,
            instance_id=req.instance_id if req.instance_id is not None else member.instance_id,
            rack_id=req.rack_id if req.rack_id is not None else member.rack_id,
            client_id=req.client_id,
            client_host=req.client_host,
            subscribed_names=(
                tuple(sorted(set(req.subscribed_names)))
                if req.subscribed_names is not None
                else member.subscribed_names
            ),
            subscribed_regex=(
                (req.subscribed_regex or None)
                if req.subscribed_regex is not None
                else member.subscribed_regex
            ),
            rebalance_timeout_ms=(
                req.rebalance_timeout_ms if req.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor=req.server_assignor
            if req.server_assignor is not None
            else member.server_assignor,
            regex_context=(req.principal, req.client_host) if req.subscribed_regex else member.regex_context,
        )
        group.describable = self._describable()
        subscription_changed = new_member or (
            (updated.subscribed_names, updated.subscribed_regex, updated.server_assignor)
            != (member.subscribed_names, member.subscribed_regex, member.server_assignor)
        )
        group.members[member_id] = updated
        topics = self.topics()
        metadata = group_metadata(group, topics)
        if subscription_changed or metadata != group.subscribed_metadata:
            group.group_epoch += 1
            group.subscribed_metadata = metadata
        if group.group_epoch > group.assignment_epoch:
            compute_target(group, topics, group.preferred_assignor(self.assignors()[0]))
        previous_assigned = updated.assigned
        reconciled = reconcile(group, updated, req.owned if not joining else EMPTY)
        group.members[member_id] = reconciled
        self._after_change(group, reconciled)
        records += self._records(group, before, removed)
        interval = self._group_config(group.group_id, "heartbeat.interval.ms")
        full = (
            req.rebalance_timeout_ms != -1
            and req.owned is not None
            and (req.subscribed_names is not None or req.subscribed_regex is not None)
        )
        send_assignment = (
            joining
            or full
            or reconciled.assigned != previous_assigned
            or (req.owned is not None and set(req.owned) != set(reconciled.assigned))
        )
        answer = HeartbeatAnswer(
            ErrorCode.none,
            None,
            member_id,
            reconciled.member_epoch,
            interval,
            reconciled.assigned if send_assignment else None,
        )
        return answer, records

    def _check_epoch(self, member: Member, received: int, owned: Assignment | None) -> None:
        """``throwIfConsumerGroupMemberEpochIsInvalid``."""
        if received > member.member_epoch:
            raise KafkaError(
                ErrorCode.fenced_member_epoch,
                f"The consumer group member has a greater member epoch ({received}) than the one known by "
                f"the group coordinator ({member.member_epoch}).",
            )
        if received < member.member_epoch and (
            received != member.previous_epoch or not is_subset(owned, member.assigned)
        ):
            raise KafkaError(
                ErrorCode.fenced_member_epoch,
                f"The consumer group member has a smaller member epoch ({received}) than the one known by "
                f"the group coordinator ({member.member_epoch}).",
            )

    def _leave(self, req: HeartbeatRequest) -> tuple[HeartbeatAnswer, list[RecordKV]]:
        """``consumerGroupLeave``: -1 removes the member; -2 keeps a static member's place and partitions."""
        group, _ = self._group_for(req.group_id, False)
        before = _snapshot(group)
        if req.instance_id is not None:
            member = group.static_member(req.instance_id)
            if member is None:
                raise KafkaError(ErrorCode.unknown_member_id, f"Instance id {req.instance_id} is unknown.")
            if member.member_id != req.member_id:
                raise KafkaError(
                    ErrorCode.fenced_instance_id,
                    f"Static member {req.member_id} with instance id {req.instance_id} was fenced by member "
                    f"{member.member_id}.",
                )
        else:
            found = group.members.get(req.member_id)
            if found is None:
                raise KafkaError(
                    ErrorCode.unknown_member_id,
                    f"Member {req.member_id} is not a member of group {req.group_id}.",
                )
            member = found
        if req.member_epoch == LEAVE_STATIC_EPOCH:
            left = replace(
                member,
                previous_epoch=member.member_epoch if member.member_epoch >= 0 else member.previous_epoch,
                member_epoch=LEAVE_STATIC_EPOCH,
            )
            group.members[member.member_id] = left
            self.coordinator.cancel(("cg-rebalance", group.group_id, member.member_id))
            records = self._records(group, before, [])
            return HeartbeatAnswer(ErrorCode.none, None, member.member_id, LEAVE_STATIC_EPOCH), records
        records = self._remove(group, member.member_id, before)
        return HeartbeatAnswer(ErrorCode.none, None, member.member_id, LEAVE_EPOCH), records

    def _remove(self, group: ConsumerGroup, member_id: str, before: dict[str, Any]) -> list[RecordKV]:
        group.members.pop(member_id, None)
        group.target.pop(member_id, None)
        group.group_epoch += 1
        group.subscribed_metadata = group_metadata(group, self.topics())
        self.coordinator.cancel(("cg-session", group.group_id, member_id))
        self.coordinator.cancel(("cg-rebalance", group.group_id, member_id))
        return self._records(group, before, [member_id])

    def _after_change(self, group: ConsumerGroup, member: Member) -> None:
        """Reset the member's session; a member that must revoke has its rebalance timeout to do it."""
        gid, mid = group.group_id, member.member_id
        self.coordinator.schedule(
            ("cg-session", gid, mid),
            self._group_config(gid, "session.timeout.ms"),
            functools.partial(self._on_session_timeout, gid, mid),
        )
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            if not self.coordinator.scheduled(("cg-rebalance", gid, mid)):
                epoch = member.member_epoch
                self.coordinator.schedule(
                    ("cg-rebalance", gid, mid),
                    max(member.rebalance_timeout_ms, 0),
                    functools.partial(self._revocation_timeout, gid, mid, epoch),
                )
        else:
            self.coordinator.cancel(("cg-rebalance", gid, mid))

    def _on_session_timeout(self, group_id: str, member_id: str, _now_ms: int) -> None:
        self._expire(group_id, member_id, "session timeout")

    def _revocation_timeout(self, group_id: str, member_id: str, epoch: int, _now_ms: int) -> None:
        group = self.groups.get(group_id)
        member = group.members.get(member_id) if group is not None else None
        if (
            member is not None
            and member.state is MemberState.UNREVOKED_PARTITIONS
            and member.member_epoch == epoch
        ):
            self._expire(group_id, member_id, "rebalance timeout")

    def _expire(self, group_id: str, member_id: str, why: str) -> None:
        group = self.groups.get(group_id)
        if group is None or member_id not in group.members:
            return
        log.info("group %s: member %s fenced (%s)", group_id, member_id, why)
        before = _snapshot(group)
        records = self._remove(group, member_id, before)
        if records:
            self.coordinator.append(group_id, records, lambda _code: None)

    # -- records -----------------------------------------------------------------------------------

    def _records(self, group: ConsumerGroup, before: dict[str, Any], removed: list[str]) -> list[RecordKV]:
        """The records that take a replay from ``before`` to the group as it is now (Kafka's order:
        member metadata, group epoch and partition metadata, target, current assignments)."""
        gid = group.group_id
        out: list[RecordKV] = []
        for mid in removed:
            if mid in before["members"] and mid not in group.members:
                for record_type in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA):
                    out.append((encode_key(ConsumerKey(record_type, gid, mid)), None))
        for mid in sorted(set(before["members"]) - set(group.members) - set(removed)):
            for record_type in (CURRENT_ASSIGNMENT, TARGET_MEMBER, MEMBER_METADATA):
                out.append((encode_key(ConsumerKey(record_type, gid, mid)), None))
        for m in group.members.values():
            old = before["members"].get(m.member_id)
            if old is None or old[0] != m.metadata_key():
                meta = MemberMetadata(
                    m.instance_id,
                    m.rack_id,
                    m.client_id,
                    m.client_host,
                    m.subscribed_names,
                    m.subscribed_regex,
                    m.rebalance_timeout_ms,
                    m.server_assignor,
                )
                out.append(
                    (encode_key(ConsumerKey(MEMBER_METADATA, gid, m.member_id)), encode_member_metadata(meta))
                )
        if group.subscribed_metadata != before["metadata"]:
            topics = [
                TopicMetadata(t.topic_id, t.name, t.partitions) for t in group.subscribed_metadata.values()
            ]
            out.append(
                (
                    encode_key(ConsumerKey(PARTITION_METADATA, gid)),
                    encode_partition_metadata(group.group_epoch, topics),
                )
            )
        if group.group_epoch != before["epoch"]:
            out.append(
                (encode_key(ConsumerKey(GROUP_METADATA, gid)), encode_group_metadata(group.group_epoch))
            )
        for mid, assignment in sorted(group.target.items()):
            if before["target"].get(mid) != assignment:
                out.append(
                    (encode_key(ConsumerKey(TARGET_MEMBER, gid, mid)), encode_target_member(assignment))
                )
        if group.assignment_epoch != before["assignment_epoch"]:
            out.append(
                (
                    encode_key(ConsumerKey(TARGET_METADATA, gid)),
                    encode_target_metadata(group.assignment_epoch),
                )
            )
        for m in group.members.values():
            old = before["members"].get(m.member_id)
            if old is None or old[1] != m.assignment_key():
                current = CurrentAssignment(
                    m.member_epoch, m.previous_epoch, m.state, m.assigned, m.pending_revocation
                )
                out.append(
                    (
                        encode_key(ConsumerKey(CURRENT_ASSIGNMENT, gid, m.member_id)),
                        encode_current_assignment(current),
                    )
                )
        return out

    def tombstones(self, group: ConsumerGroup) -> list[RecordKV]:
        """Every record of an empty group, deleted (DeleteGroups)."""
        gid = group.group_id
        return [
            (encode_key(ConsumerKey(record_type, gid)), None)
            for record_type in (TARGET_METADATA, PARTITION_METADATA, GROUP_METADATA)
        ]

    def replay(self, key: ConsumerKey, value: bytes | None) -> None:
        """Apply one record of a loading shard (``GroupMetadataManager.replay`` for these types)."""
        gid = key.group_id
        group = self.groups.get(gid)
        if value is None:
            if key.record_type == GROUP_METADATA:
                self.groups.pop(gid, None)
            elif group is not None and key.member_id is not None:
                if key.record_type == MEMBER_METADATA:
                    group.members.pop(key.member_id, None)
                elif key.record_type == TARGET_MEMBER:
                    group.target.pop(key.member_id, None)
            return
        if group is None:
            group = self.groups[gid] = ConsumerGroup(gid)
            self.coordinator.groups.pop(gid, None)
        mid = key.member_id or ""
        if key.record_type == GROUP_METADATA:
            group.group_epoch = decode_group_metadata(value)
        elif key.record_type == PARTITION_METADATA:
            group.subscribed_metadata = {
                t.name: TopicMeta(t.name, t.topic_id, t.partitions) for t in decode_partition_metadata(value)
            }
        elif key.record_type == MEMBER_METADATA:
            meta = decode_member_metadata(value)
            member = group.members.get(mid) or Member(mid)
            group.members[mid] = replace(member, **_fields_of(meta))
        elif key.record_type == TARGET_METADATA:
            group.assignment_epoch = decode_target_metadata(value)
        elif key.record_type == TARGET_MEMBER:
            group.target[mid] = decode_target_member(value)
        elif key.record_type == CURRENT_ASSIGNMENT:
            current = decode_current_assignment(value)
            member = group.members.get(mid) or Member(mid)
            group.members[mid] = replace(member, **_fields_of(current))

    def loaded(self, index: int) -> None:
        """After a shard's replay: every member's session starts now (as Kafka does on load)."""
        for group in self.groups.values():
            if self.coordinator.shard_of(group.group_id) != index:
                continue
            for member in group.members.values():
                self._after_change(group, member)

    def unload(self, index: int) -> None:
        for gid in [g for g in self.groups if self.coordinator.shard_of(g) == index]:
            group = self.groups.pop(gid)
            for mid in group.members:
                self.coordinator.cancel(("cg-session", gid, mid))
                self.coordinator.cancel(("cg-rebalance", gid, mid))

    # -- offsets -----------------------------------------------------------------------------------

    def validate_offset_commit(
        self, group: ConsumerGroup, member_id: str, epoch: int, api_version: int | None
    ) -> ErrorCode | None:
        """``ConsumerGroup.validateOffsetCommit``: admin commits while empty; members at their epoch.
        ``api_version`` None: a transactional commit (TxnOffsetCommit), which any version may send."""
        if epoch < 0 and not group.members:
            return None
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if api_version is not None and api_version < 9:
            return ErrorCode.unsupported_version
        if epoch != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    def validate_offset_fetch(
        self, group: ConsumerGroup, member_id: str | None, epoch: int
    ) -> ErrorCode | None:
        """``ConsumerGroup.validateOffsetFetch``."""
        if member_id is None and epoch < 0:
            return None
        member = group.members.get(member_id or "")
        if member is None:
            return ErrorCode.unknown_member_id
        if epoch != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    # -- describe ----------------------------------------------------------------------------------

    def describe(self, group_id: str) -> dict[str, Any]:
        """One ConsumerGroupDescribe entry (``ConsumerGroup.asDescribedGroup``)."""
        refused = undescribable(self.coordinator, group_id, group_id in self.groups)
        if refused is not None:
            return refused
        group = self.groups[group_id]
        names = {meta.topic_id: name for name, meta in self.topics().items()}
        members = []
        for m in sorted(group.members.values(), key=lambda x: x.member_id):
            members.append(
                {
                    "member_id": m.member_id,
                    "instance_id": m.instance_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": m.client_id,
                    "client_host": m.client_host,
                    "subscribed_topic_names": list(m.subscribed_names),
                    "subscribed_topic_regex": m.subscribed_regex,
                    "assignment": {"topic_partitions": topic_partitions(m.assigned, names)},
                    "target_assignment": {
                        "topic_partitions": topic_partitions(group.target.get(m.member_id, EMPTY), names)
                    },
                    "member_type": 1,
                }
            )
        return {
            "error_code": ErrorCode.none,
            "group_id": group_id,
            "group_state": group.state().value,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": group.preferred_assignor(self.assignors()[0]),
            "members": members,
        }

    def state_of(self, group: ConsumerGroup) -> GroupState:
        return group.state()


def undescribable(coordinator: GroupCoordinator, group_id: str, known: bool) -> dict[str, Any] | None:
    """The describe entry of a group this broker cannot describe (not its coordinator, loading, or
    no such group of the asked type), else None (``GroupCoordinatorService`` describe paths)."""
    try:
        coordinator.check_coordinator(group_id)
    except KafkaError as exc:
        return {"error_code": exc.code, "error_message": exc.message, "group_id": group_id}
    if not known:
        return {
            "error_code": ErrorCode.group_id_not_found,
            "group_id": group_id,
            "error_message": f"Group {group_id} not found.",
        }
    return None


def _fields_of(record: MemberMetadata | CurrentAssignment) -> dict[str, Any]:
    """A record's fields, which carry the names of the :class:`.consumer.Member` fields they restore."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def topic_partitions(
    assignment: Assignment, names: Mapping[uuid.UUID, str] | None = None
) -> list[dict[str, Any]]:
    by_topic: dict[uuid.UUID, list[int]] = {}
    for topic_id, p in assignment:
        by_topic.setdefault(topic_id, []).append(p)
    out = []
    for topic_id, parts in sorted(by_topic.items(), key=lambda kv: str(kv[0])):
        entry: dict[str, Any] = {"topic_id": topic_id, "partitions": sorted(parts)}
        if names is not None:
            entry["topic_name"] = names.get(topic_id, "")
        out.append(entry)
    return out


def owned_from_request(topics: Any) -> Assignment | None:
    if topics is None:
        return None
    out: set[TP] = set()
    for t in topics:
        for p in t.partitions:
            out.add((t.topic_id, int(p)))
    return frozenset(out)
