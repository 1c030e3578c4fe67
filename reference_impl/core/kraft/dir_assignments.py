"""Telling the controller which log directory holds each replica (KIP-858), as a state machine.

Kafka's broker queues an assignment whenever it places or moves a replica and sends them in
AssignReplicasToDirs (``server/src/main/java/org/apache/kafka/server/AssignmentsManager.java``);
the controller records them in the partitions' ``directories`` and, when a heartbeat reports a
directory offline, moves the leaderships of the replicas in it. Here the wanted state is compared
with the image instead of queued: every replica whose directory (from the store) differs from
the one the image records is sent again, at most :data:`MAX_PER_REQUEST` per request, one request
in flight, a scan at most every :data:`SCAN_INTERVAL_MS`. A broker with one log directory sends
nothing (Kafka's controller assigns its only directory when it creates the partition).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from ..controller import messages as cm

if TYPE_CHECKING:
    from ..metadata.image import MetadataImage
    from ..ports import LogStore

MAX_PER_REQUEST = 1_000
SCAN_INTERVAL_MS = 200


def wanted_assignments(
    image: MetadataImage, store: LogStore, node_id: int, limit: int = MAX_PER_REQUEST
) -> list[cm.DirectoryAssignment]:
    """The replicas of ``node_id`` in an online directory whose recorded directory differs."""
    dirs = store.log_dirs()
    if len(dirs) < 2:
        return []
    ids = {d.path: str(d.directory_id) for d in dirs if d.online and d.directory_id is not None}
    out: list[cm.DirectoryAssignment] = []
    for topic in image.topics.values():
        for info in topic.partitions.values():
            if node_id not in info.replicas:
                continue
            directory = ids.get(store.dir_of(topic.name, info.partition) or "")
            if directory is None or info.directory_of(node_id) == directory:
                continue
            out.append(
                cm.DirectoryAssignment(
                    topic_id=str(topic.topic_id), partition=info.partition, directory_id=directory
                )
            )
            if len(out) >= limit:
                return out
    return out


def online_dir_ids(store: LogStore) -> tuple[str, ...]:
    """The ids of the working log directories (BrokerRegistration v2+'s ``log_dirs``, KIP-858)."""
    return tuple(str(d.directory_id) for d in store.log_dirs() if d.online and d.directory_id is not None)


def offline_dir_ids(store: LogStore) -> tuple[str, ...]:
    """The ids of the failed log directories (BrokerHeartbeat v1's ``offline_log_dirs``)."""
    return tuple(str(d.directory_id) for d in store.log_dirs() if not d.online and d.directory_id is not None)


class DirectoryAssigner:
    """Sends AssignReplicasToDirs until the image records where every replica of this broker is."""

    def __init__(self, request_timeout_ms: int) -> None:
        self._timeout_ms = request_timeout_ms
        self._inflight_since: int | None = None
        self._next_scan_ms = 0

    def maybe_send(
        self,
        now_ms: int,
        image: MetadataImage,
        store: LogStore,
        node_id: int,
        broker_epoch: int,
        correlation_id: Callable[[], int],
        send: Callable[[Any, Callable[[Any], None]], None],
    ) -> None:
        if broker_epoch < 0 or now_ms < self._next_scan_ms:
            return
        if self._inflight_since is not None and now_ms - self._inflight_since < self._timeout_ms:
            return
        self._next_scan_ms = now_ms + SCAN_INTERVAL_MS
        wanted = wanted_assignments(image, store, node_id)
        if not wanted:
            return
        self._inflight_since = now_ms
        body = cm.AssignReplicasToDirsRequest(
            correlation_id=correlation_id(),
            broker_id=node_id,
            broker_epoch=broker_epoch,
            assignments=tuple(wanted),
        )

        def answered(answer: Any) -> None:
            self._inflight_since = None
            if answer is None or answer.error_code != ErrorCode.none:
                self._next_scan_ms = now_ms + 10 * SCAN_INTERVAL_MS  # retried later, from the image

        send(body, answered)
