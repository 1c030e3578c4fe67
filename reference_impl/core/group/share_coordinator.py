"""Share groups on the group coordinator: ShareGroupHeartbeat and ShareGroupDescribe.

Kafka's ``GroupCoordinatorService.shareGroupHeartbeat``/``shareGroupDescribe`` and
``GroupMetadataManager.shareGroupHeartbeat`` (group-coordinator module). The group lives on the
coordinator of its ``__consumer_offsets`` partition, like every group; one id names one group of
one type, so a heartbeat for an id held by a classic or consumer group is GROUP_ID_NOT_FOUND.

Session timeout and heartbeat interval: the group's own configs (resource type 32), else the broker's
``group.share.session.timeout.ms``/``group.share.heartbeat.interval.ms``. A member's session runs on
the monotonic clock, as its timer (the coordinator's timers, :mod:`.timers`; Kafka's
``GroupMetadataManager.scheduleShareGroupSessionTimeout`` on the runtime's timer).

Not yet here: the ShareGroupMetadata/ShareGroupMemberMetadata/... records Kafka writes to
``__consumer_offsets`` (a coordinator restart or move forgets share groups).
"""

from __future__ import annotations

import contextlib
import uuid
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.errors import ErrorCode, KafkaError

from ..internal_topics import SHARE_GROUP_STATE
from .consumer_coordinator import topic_partitions, undescribable
from .share_fetch import SharePartitions
from .share_group import HeartbeatReply, ShareGroup, ShareGroupConfig
from .share_partition import SharePartitionConfig
from .share_persister import Persister, ShareStateSync
from .share_state import ShareStateCoordinator

if TYPE_CHECKING:
    from .coordinator import GroupCoordinator

TP = tuple[uuid.UUID, int]


@dataclass(frozen=True, slots=True)
class ShareHeartbeat:
    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None
    subscribed_topic_names: tuple[str, ...] | None
    client_id: str
    client_host: str


class ShareGroups:
    def __init__(self, coordinator: GroupCoordinator, config: ShareGroupConfig | None = None) -> None:
        self.coordinator = coordinator
        self.config = config or ShareGroupConfig()
        self.groups: dict[str, ShareGroup] = {}
        self._clients: dict[tuple[str, str], tuple[str, str]] = {}
        self._leader: SharePartitions | None = None
        self.state = ShareStateCoordinator(coordinator.broker)
        """The share coordinator: share-partition state on ``__share_group_state`` (APIs 83-87)."""
        self._sync: ShareStateSync | None = None

    @property
    def leader(self) -> SharePartitions:
        """The share-partitions this broker leads and its share sessions (ShareFetch/ShareAcknowledge),
        configured from ``group.share.record.lock.duration.ms`` and ``group.share.delivery.count.limit``."""
        if self._leader is None:
            cfg = self.coordinator.broker.config
            self._leader = SharePartitions(
                SharePartitionConfig(
                    lock_duration_ms=cfg.get_int("group.share.record.lock.duration.ms"),
                    delivery_attempt_limit=cfg.get_int("group.share.delivery.count.limit"),
                )
            )
        return self._leader

    @property
    def sync(self) -> ShareStateSync:
        """The leader's share-partitions' persisted state: loaded on first use, written on change."""
        if self._sync is None:
            self._sync = ShareStateSync(Persister(self.coordinator.broker, self.state), self.leader)
        return self._sync

    def group_config(self, group_id: str) -> ShareGroupConfig:
        """The session timeout and heartbeat interval of a share group: its own
        ``share.session.timeout.ms``/``share.heartbeat.interval.ms`` (resource type 32, Kafka's
        ``GroupConfig``), else the broker's ``group.share.*`` ones."""
        broker = self.coordinator.broker
        own = broker.image.group_configs.get(group_id, {})

        def pick(name: str) -> int:
            value = own.get(f"share.{name}")
            return int(value) if value is not None else broker.config.get_int(f"group.share.{name}")

        return replace(
            self.config,
            session_timeout_ms=pick("session.timeout.ms"),
            heartbeat_interval_ms=pick("heartbeat.interval.ms"),
        )

    def _gone(self, group_id: str, member_id: str) -> None:
        """A member left or timed out: its share session goes and what it holds on the partitions this
        broker leads is released (``ShareSessionCache.remove`` on the group's member listener). Only
        this broker's share-partitions: another leader's locks run out on their own."""
        if self._leader is not None:
            self._leader.release_member(group_id, member_id)
            self._leader.sessions.remove_member(group_id, member_id)
            self.sync.flush()

    def member_known(self, group_id: str, member_id: str) -> bool | None:
        """Is ``member_id`` a member of share group ``group_id``? None when another broker coordinates
        the group (this broker cannot tell; Kafka's leader does not ask the coordinator either)."""
        group = self.groups.get(group_id)
        if group is not None:
            return member_id in group.members
        try:
            self.coordinator.check_coordinator(group_id)
        except KafkaError:
            return None
        return False

    def topics(self) -> dict[str, tuple[uuid.UUID, int]]:
        return {
            name: (info.topic_id, len(info.partitions))
            for name, info in self.coordinator.broker.image.topics.items()
        }

    def heartbeat(self, req: ShareHeartbeat) -> HeartbeatReply:
        """One heartbeat; raises KafkaError with the code Kafka answers."""
        if not req.group_id:
            raise KafkaError(ErrorCode.invalid_request, "GroupId can't be empty.")
        self.coordinator.check_coordinator(req.group_id)
        if req.group_id in self.coordinator.groups or req.group_id in self.coordinator.consumer.groups:
            raise KafkaError(ErrorCode.group_id_not_found, f"Group {req.group_id} is not a share group.")
        group = self.groups.get(req.group_id)
        if group is None:
            if req.member_epoch != 0:
                raise KafkaError(ErrorCode.unknown_member_id)
            group = ShareGroup(req.group_id, self.config)
        group.config = self.group_config(req.group_id)
        now = self.coordinator.now_ms
        reply = group.heartbeat(
            member_id=req.member_id,
            member_epoch=req.member_epoch,
            rack_id=req.rack_id,
            subscribed_topic_names=req.subscribed_topic_names,
            topics=self.topics(),
            mono_ms=self.coordinator.timers.mono_ms,
        )
        self.groups[req.group_id] = group
        if reply.member_epoch >= 0:
            # Kafka's coordinator initializes the assigned share-partitions' state through the
            # persister, whose FindCoordinator creates __share_group_state: the topic exists before
            # the members' first ShareFetch needs it (here the leaders read and initialize it).
            with contextlib.suppress(KafkaError):
                SHARE_GROUP_STATE.ensure(self.coordinator.broker, now)
        key = ("share", req.group_id, req.member_id)
        if reply.member_epoch < 0:
            self.coordinator.cancel(key)
            self._clients.pop((req.group_id, req.member_id), None)
            self._gone(req.group_id, req.member_id)
        else:
            self._clients[(req.group_id, req.member_id)] = (req.client_id, req.client_host)
            self.coordinator.schedule(key, group.config.session_timeout_ms, self._expire_fn(req.group_id))
        return reply

    def _expire_fn(self, group_id: str) -> Any:
        def expire(_wall_ms: int) -> None:  # the deadlines are monotonic: the timer's own clock
            group = self.groups.get(group_id)
            if group is not None:
                for member_id in group.expire(self.coordinator.timers.mono_ms, self.topics()):
                    self._clients.pop((group_id, member_id), None)
                    self._gone(group_id, member_id)

        return expire

    def describe(self, group_id: str) -> dict[str, Any]:
        """One ShareGroupDescribe entry (``ShareGroup.asDescribedGroup``)."""
        refused = undescribable(self.coordinator, group_id, group_id in self.groups)
        if refused is not None:
            return refused
        group = self.groups[group_id]
        names = {tid: name for name, (tid, _) in self.topics().items()}
        members = []
        for m in sorted(group.members.values(), key=lambda x: x.member_id):
            client_id, client_host = self._clients.get((group_id, m.member_id), ("", ""))
            members.append(
                {
                    "member_id": m.member_id,
                    "rack_id": m.rack_id,
                    "member_epoch": m.member_epoch,
                    "client_id": client_id,
                    "client_host": client_host,
                    "subscribed_topic_names": sorted(m.subscribed),
                    "assignment": {"topic_partitions": topic_partitions(m.assignment, names)},
                }
            )
        return {
            "error_code": ErrorCode.none,
            "group_id": group_id,
            "group_state": group.state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "assignor_name": "simple",
            "members": members,
        }
