"""The partition replicas a broker holds: Kafka's ``ReplicaManager``, as a sans-IO part of the broker.

It makes the open partitions match the metadata image (opening, leading, following and dropping
them, with their checkpointed high watermarks restored before they take a role, as Kafka's
``Partition.createLog`` does), proposes ISR changes (AlterPartition: decided by the broker's own
controller on a single broker, sent to the active controller in a cluster), and wakes what waits on
a partition. Kafka's ``core/src/main/scala/kafka/server/ReplicaManager.scala`` and
``cluster/Partition.scala``. The broker's request pipeline (:mod:`.broker`) owns it and sees the
replicas through it; it sees the broker through :class:`ReplicaManagerHost`.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Protocol

from kio.schema.errors import ErrorCode

from reference_impl.log.api import PartitionLog
from reference_impl.log.dir_set import FUTURE_DIR_SUFFIX
from reference_impl.log.guarded import FailedLog, LogDirOfflineError
from reference_impl.protocol.errors import KafkaError

from .configs.resolution import BrokerConfig, effective_topic_configs
from .controller import messages as cm
from .metadata.records import METADATA_TOPIC
from .partition import Partition
from .ports import LogStore, TopicPartition
from .purgatory import Purgatory
from .replication.isr import IsrProposal

if TYPE_CHECKING:
    from .kraft.quorum import ClusterQuorum
    from .metadata.image import MetadataImage

log = logging.getLogger("reference_impl.broker")


class ReplicaManagerHost(Protocol):
    """What the replica manager needs of the broker: the metadata image (replaced as it is replayed),
    the controller ISR changes go to, and the coordinators to tell when partitions move."""

    @property
    def image(self) -> MetadataImage: ...

    @property
    def quorum(self) -> ClusterQuorum: ...

    @property
    def now_ms(self) -> int:
        """The broker's wall time (what a delayed produce completed by an answer is stamped with)."""
        ...

    def on_partitions_changed(self, now_ms: int) -> None:
        """Partitions opened, moved or dropped: the coordinators load or unload their shards."""


class ReplicaManager:
    def __init__(
        self,
        host: ReplicaManagerHost,
        node_id: int,
        config: BrokerConfig,
        store: LogStore,
        purgatory: Purgatory,
    ) -> None:
        self.host = host
        self.node_id = node_id
        self.config = config
        self.store = store
        self.purgatory = purgatory
        self.partitions: dict[TopicPartition, Partition] = {}
        self._followed: dict[int, list[Partition]] | None = None
        """:meth:`followed_by_leader`, kept until a role changes (only :meth:`sync` and
        :meth:`check_log_dirs` change roles, or the partitions held)."""
        self._dir_failures = store.failure_count
        """The store's failure count last seen (:meth:`check_log_dirs`)."""

    def high_watermarks(self) -> dict[TopicPartition, int]:
        return {key: p.high_watermark for key, p in self.partitions.items()}

    def partition(self, topic: str, index: int) -> Partition | None:
        return self.partitions.get((topic, index))

    def followed_by_leader(self) -> dict[int, list[Partition]]:
        """The partitions this broker follows, by leader (the replica fetcher's work). Every step
        of the broker asks (its tick runs the fetcher); walking every partition held each time
        cost ~4 us per step with the 50 partitions of __consumer_offsets (issue 22)."""
        if self._followed is None:
            by_leader: dict[int, list[Partition]] = {}
            for part in self.partitions.values():
                leader = part.leader_id
                if leader >= 0 and leader != self.node_id:
                    by_leader.setdefault(leader, []).append(part)
            self._followed = by_leader
        return self._followed

    def sync(self, now_ms: int) -> None:
        """Make the open partitions match the image (:meth:`_sync`); what is followed is asked anew."""
        try:
            self._sync(now_ms)
        finally:
            self._followed = None

    def _sync(self, now_ms: int) -> None:
        """Make the open partitions match the image: open new ones, drop deleted ones, apply configs.

        A cluster broker whose image has not yet caught up with the metadata log (it has just
        started) leaves its partitions and logs alone: judged by a partial image, every log on
        disk would look like a topic deleted while it was down, and be deleted."""
        if not self.host.quorum.ready:
            return
        self.config.dynamic_default = dict(self.host.image.broker_configs)
        self.config.dynamic = dict(self.host.image.node_configs.get(str(self.node_id), {}))
        wanted: set[TopicPartition] = set()
        moved: list[TopicPartition] = []
        checkpointed: dict[TopicPartition, int] | None = None  # read once, when a partition opens
        online_dirs: set[str] | None = None  # likewise: the ids of the online log directories
        for topic in self.host.image.topics.values():
            configs = effective_topic_configs(topic.configs, self.config)
            for info in topic.partitions.values():
                if self.node_id not in info.replicas:
                    continue
                key = (topic.name, info.partition)
                wanted.add(key)
                part = self.partitions.get(key)
                if part is None or part.topic_id != topic.topic_id:
                    if part is not None:
                        self.store.delete_log(*key)
                    if online_dirs is None:
                        online_dirs = self._online_dir_ids()
                    assigned = info.directory_of(self.node_id)
                    log_: PartitionLog
                    lost = bool(online_dirs) and bool(assigned) and assigned not in online_dirs
                    if lost and self.store.dir_of(*key) is None:
                        # recorded in a directory this broker does not have online (it failed before
                        # this start): offline, not created afresh elsewhere (as Kafka's broker)
                        log_ = FailedLog(f"directory {assigned}")
                    else:
                        log_ = self.store.open_log(
                            topic.name, info.partition, topic.topic_id, configs, now_ms
                        )
                    part = self.partitions[key] = Partition(
                        topic.name,
                        info.partition,
                        topic.topic_id,
                        log_,
                        configs,
                        self.node_id,
                        self.store.read_chunk,
                    )
                    if isinstance(log_, FailedLog):  # placed in a directory that is offline
                        part.go_offline(log_, f"log directory {log_.path} is offline")
                        continue
                    if checkpointed is None:
                        checkpointed = self.store.high_watermarks()
                    if key in checkpointed:  # Kafka's Partition.createLog: the HW first, then the role
                        part.restore_high_watermark(checkpointed[key])
                elif part.configs != configs:
                    part.update_configs(configs)
                    self.store.update_configs(topic.name, info.partition, configs)
                try:
                    took = part.take_role(
                        info.leader, info.leader_epoch, info.partition_epoch, info.replicas, info.isr, now_ms
                    )
                except LogDirOfflineError as exc:  # its directory failed before check_log_dirs looked
                    part.go_offline(part.log, str(exc))
                    continue
                if took:
                    moved.append(key)
        for key in [k for k in self.partitions if k not in wanted]:
            del self.partitions[key]
            self.store.delete_log(*key)
            self.purgatory.check_and_complete(key, now_ms)
        for key in self.store.existing_logs():
            if key not in wanted and key[0] != METADATA_TOPIC:
                self.store.delete_log(*key)  # a stray log of a topic deleted while we were down
        self.host.on_partitions_changed(now_ms)  # the coordinators load or unload their shards
        for key in moved:  # a new ISR may move the HW; a lost leadership fails what waits on it
            self.purgatory.check_and_complete(key, now_ms)

    # -- log directories (JBOD) ------------------------------------------------------------------

    def check_log_dirs(self, now_ms: int) -> bool:
        """A log directory went offline since the last look: mark its partitions offline (Kafka's
        ``ReplicaManager.handleLogDirFailure``: no fetcher, no role, KAFKA_STORAGE_ERROR to clients).
        The controller learns of the directory from the next heartbeat (KIP-858) and moves the
        leaderships. True if anything changed."""
        count = self.store.failure_count
        if count == self._dir_failures:
            return False
        self._dir_failures = count
        offline = {d.path for d in self.store.log_dirs() if not d.online}
        changed = []
        for key, part in self.partitions.items():
            where = self.store.dir_of(*key)
            if part.offline is None and where in offline:
                log.warning("%s-%d is offline: its log directory %s failed", key[0], key[1], where)
                part.go_offline(FailedLog(where), f"log directory {where} failed")
                changed.append(key)
        if changed:
            self._followed = None
            self.host.on_partitions_changed(now_ms)
            for key in changed:
                self.purgatory.check_and_complete(key, now_ms)
        return True

    def fatal_log_dir_failure(self) -> str | None:
        """Why the broker must halt, if it must: every log directory failed (Kafka's
        ``ReplicaManager.handleLogDirFailure``: "all log dirs ... have failed"), or the one holding the
        metadata log did (``BrokerServer``: the metadata log directory failed)."""
        dirs = self.store.log_dirs()
        if not any(d.online for d in dirs):
            return "every log directory failed"
        metadata = next((d for d in dirs if d.path == self.store.log_dir), None)
        if metadata is not None and not metadata.online:
            return f"the metadata log directory {metadata.path} failed"
        return None

    def alter_replica_log_dirs(
        self, partition_dirs: dict[TopicPartition, str], now_ms: int
    ) -> dict[TopicPartition, ErrorCode]:
        """AlterReplicaLogDirs: move each replica to the named directory of this broker (Kafka's
        ``ReplicaManager.alterReplicaLogDirs``, ``core/src/main/scala/kafka/server/ReplicaManager.scala``).

        A path that is not one of ``log.dirs`` is LOG_DIR_NOT_FOUND, an offline one (or an offline
        replica) KAFKA_STORAGE_ERROR, a topic name too long for the future directory's name
        INVALID_TOPIC_EXCEPTION; a replica this broker does not hold is REPLICA_NOT_AVAILABLE and the
        directory is remembered for when it comes. The copy completes within the call (see
        ``reference_impl/log/dir_set.py``): the partition is consistent throughout and answers from
        the new directory afterwards."""
        dirs = {d.path: d for d in self.store.log_dirs()}
        out: dict[TopicPartition, ErrorCode] = {}
        for key, dest in partition_dirs.items():
            topic, index = key
            if len(f"{topic}-{index}.{'0' * 32}{FUTURE_DIR_SUFFIX}") > 255:
                out[key] = ErrorCode.invalid_topic_exception
                continue
            target = dirs.get(dest)
            if target is None:
                out[key] = ErrorCode.log_dir_not_found
                continue
            if not target.online:
                out[key] = ErrorCode.kafka_storage_error
                continue
            part = self.partitions.get(key)
            if part is None:
                if self._placed_here(topic, index):  # bounded: only replicas the image gives this broker
                    self.store.set_preferred_dir(topic, index, dest)
                out[key] = ErrorCode.replica_not_available
                continue
            if part.offline is not None:
                out[key] = ErrorCode.kafka_storage_error
                continue
            if self.store.dir_of(topic, index) == dest:
                out[key] = ErrorCode.none
                continue
            try:
                moved = self.store.move_log(topic, index, dest, part.topic_id, part.configs, now_ms)
            except KafkaError as exc:
                out[key] = exc.code
                self.check_log_dirs(now_ms)
                continue
            part.replace_log(moved)
            out[key] = ErrorCode.none
        return out

    def _online_dir_ids(self) -> set[str]:
        """The ids of the online log directories, when there are several (empty: one directory)."""
        dirs = self.store.log_dirs()
        if len(dirs) < 2:
            return set()
        return {str(d.directory_id) for d in dirs if d.online and d.directory_id is not None}

    def _placed_here(self, topic: str, index: int) -> bool:
        info = self.host.image.topics.get(topic)
        part = None if info is None else info.partitions.get(index)
        return part is not None and self.node_id in part.replicas

    def after_follower_fetch(
        self, part: Partition, now_ms: int, fetched_by: int, high_watermark_moved: bool = True
    ) -> None:
        """A follower fetched: if the HW moved, wake what waits on it (acks=all produces, consumers'
        fetches); the ISR may grow.

        Only a moved HW can complete anything watching the partition: a follower's fetch changes no
        log end, and what waits on it waits for the HW (or the ISR, which changes through the
        controller). Kafka's ``Partition.updateFollowerFetchState`` likewise calls
        ``tryCompleteDelayedRequests`` only when the leader's HW or low watermark was incremented.
        Waking every watcher on every follower fetch made each fetch re-read every partition of every
        other waiting fetch (a follower's covers all it follows: __consumer_offsets' 50 partitions
        on a 3-node cluster), and that dominated the acks=all round trip (issue 22)."""
        if high_watermark_moved:
            self.notify_changed(part.key, now_ms)
        if fetched_by in part.effective_isr:
            # Kafka's Partition.maybeExpandIsr considers only a follower outside the ISR; a lagging
            # member leaves on the timer (check_isr), not on another member's fetch. Judging the ISR
            # on every member's fetch cost ~20 us of each acks=all round trip's two fetches (issue 22).
            return
        proposal = part.propose_isr_change(
            now_ms,
            self.config.get_int("replica.lag.time.max.ms"),
            fetched_by,
            lambda replica: replica in self.host.image.live_brokers(),
        )
        if proposal is not None:
            self.propose_isr(part, proposal, now_ms)

    def propose_isr(self, part: Partition, proposal: IsrProposal, now_ms: int) -> None:
        """AlterPartition: decided by the active controller (this node's own, on a single broker).
        One line per proposal, as Kafka logs each ISR change: they are rare, and a replica leaving
        or joining is what a failed run's logs are read for."""
        log.info(
            "%s-%d: asking for ISR %s (now %s)",
            part.topic,
            part.index,
            list(proposal.new_isr),
            list(part.isr),
        )
        self._alter_partition(self.host.quorum, part, proposal)

    def _alter_partition(self, quorum: ClusterQuorum, part: Partition, proposal: IsrProposal) -> None:
        """Send AlterPartition; the change takes effect when its record reaches this broker's image."""
        if quorum.broker_epoch < 0:
            if part.isr_change_failed():
                self.notify_changed(part.key, self.host.now_ms)
            return
        body = cm.AlterPartitionRequest(
            correlation_id=quorum.next_correlation_id(),
            broker_id=self.node_id,
            broker_epoch=quorum.broker_epoch,
            topic_id=str(part.topic_id),
            partition=part.index,
            leader_epoch=proposal.leader_epoch,
            partition_epoch=proposal.partition_epoch,
            new_isr=proposal.new_isr,
        )

        def answered(answer: cm.AlterPartitionResponse | None) -> None:
            if answer is None or answer.error_code != ErrorCode.none:
                log.info(
                    "ISR change of %s-%d to %s refused: %s",
                    part.topic,
                    part.index,
                    list(proposal.new_isr),
                    "no answer" if answer is None else answer.error_code.name,
                )
                if part.isr_change_failed():
                    self.notify_changed(part.key, self.host.now_ms)

        quorum.to_controller(body, answered)

    def check_isr(self, now_ms: int) -> None:
        """Shrink the ISR of every led partition whose followers lag (every lag/2, as Kafka does)."""
        lag = self.config.get_int("replica.lag.time.max.ms")
        for part in list(self.partitions.values()):
            if part.is_leader and len(part.replicas) > 1:
                proposal = part.propose_isr_change(now_ms, lag)
                if proposal is not None:
                    self.propose_isr(part, proposal, now_ms)

    def notify_changed(self, key: TopicPartition, now_ms: int) -> None:
        """New data or a new high watermark: wake delayed operations watching the partition."""
        self.purgatory.check_and_complete(key, now_ms)
