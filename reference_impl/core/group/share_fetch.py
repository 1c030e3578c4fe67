"""Share groups (KIP-932) on the partition leader: the state behind ShareFetch and ShareAcknowledge.

Kafka's model: ``core/src/main/java/kafka/server/share/SharePartitionManager.java`` (the share
partitions of one broker, keyed by group and topic-partition, and the share session cache),
``core/src/main/java/kafka/server/share/SharePartition.java`` (acquisition, acknowledgement, lock
timers), ``KafkaApis.handleShareFetchRequest`` / ``handleShareAcknowledgeRequest`` (request checks).

* a share-partition is created on the partition leader at the first ShareFetch naming it, at the
  log end (``share.auto.offset.reset=latest``, Kafka's default);
* the acquisition lock is ``group.share.record.lock.duration.ms`` (default 30000) and a record
  whose delivery count reached ``group.share.delivery.count.limit`` (default 5) is archived instead
  of becoming available again;
* share sessions are :class:`.share_session.ShareSessionCache`'s.

Share-partition state is persisted through the share coordinator (``share_persister.py``,
``share_state.py``). Differences from Kafka, all stated: lock expiry is applied when a request
touches the share-partition (before acquiring or acknowledging), not by a timer thread, which no
client can tell apart except by the describe-offsets admin API (90, not built).
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass, field

from reference_impl.protocol.errors import ErrorCode, KafkaError

from .share_partition import SharePartition, SharePartitionConfig
from .share_session import ShareSessionCache

# Bounds on one request (hostile input): partitions named, acknowledgement batches per partition,
# records acquired per partition per fetch.
MAX_REQUEST_PARTITIONS = 1_000
MAX_ACK_BATCHES = 1_000
MAX_RECORDS_PER_FETCH = 10_000
MAX_SESSION_PARTITIONS = 10_000
# Share-partitions one broker keeps; past it the idle ones (nothing in flight) are dropped first.
MAX_SHARE_PARTITIONS = 100_000
DEFAULT_MAX_RECORDS = 500  # ShareConsumer's max.poll.records default, used when v1 sends 0 or less

SPKey = tuple[str, uuid.UUID, int]


@dataclass
class SharePartitions:
    """Every share-partition this broker leads, and the share session cache."""

    config: SharePartitionConfig = field(default_factory=SharePartitionConfig)
    sessions: ShareSessionCache = field(default_factory=ShareSessionCache)
    partitions: dict[SPKey, SharePartition] = field(default_factory=dict)

    def get_or_create(
        self, key: SPKey, *, log_start: int, log_end: int, config: SharePartitionConfig | None = None
    ) -> SharePartition:
        """The share-partition of ``key``, started (with ``config``, else the broker's) on first use."""
        found = self.partitions.get(key)
        if found is None:
            if len(self.partitions) >= MAX_SHARE_PARTITIONS:
                self._drop_idle()
            if len(self.partitions) >= MAX_SHARE_PARTITIONS:
                raise KafkaError(ErrorCode.unknown_server_error, "too many share-partitions on this broker")
            found = SharePartition(config or self.config, log_start=log_start, log_end=log_end)
            self.partitions[key] = found
        return found

    def _drop_idle(self) -> None:
        """Forget share-partitions with nothing in flight (a memory bound, not Kafka's behaviour: such
        a share-partition restarts at the log end when next fetched)."""
        for key in [k for k, sp in self.partitions.items() if sp.in_flight() == 0]:
            del self.partitions[key]

    def release_member(self, group_id: str, member_id: str) -> None:
        """The member's session closed: what it holds goes back
        (``SharePartition.releaseAcquiredRecords``)."""
        for (group, _, _), sp in self.partitions.items():
            if group == group_id:
                sp.release_member(member_id)
