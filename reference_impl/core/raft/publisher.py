"""Committed batches handed to the state machine's listeners, in order, once each.

Kafka's ``KafkaRaftClient`` keeps, per listener, the next offset to deliver (``ListenerContext``) and
loads a snapshot into a listener that is behind the log start (``handleLoadSnapshot``) before it
delivers batches up to the high watermark (``handleCommit``): raft/src/main/java/org/apache/kafka/raft/
KafkaRaftClient.java. Here all listeners are registered before the first step, so one offset serves.
"""

from __future__ import annotations

from reference_impl.protocol.record_set import offsets_and_values

from .api import CommittedBatch, RaftListener
from .raft_log import RaftLog, Snapshot
from .voter_set import unwrap_snapshot


class Publisher:
    def __init__(self) -> None:
        self.listeners: list[RaftListener] = []
        self.offset = -1
        """Everything below this offset has been handed to the listeners (-1: nothing yet)."""

    def publish(self, log: RaftLog, high_watermark: int | None) -> None:
        """Hand committed batches (and a snapshot that replaced them) to listeners, in order, once."""
        snapshot = log.latest_snapshot()
        if (
            snapshot is not None
            and self.offset < snapshot.snapshot_id.offset
            and (self.offset < 0 or self.offset < log.start_offset)
        ):
            own = Snapshot(snapshot.snapshot_id, unwrap_snapshot(snapshot.data)[2])  # the state machine's
            for listener in self.listeners:
                listener.handle_load_snapshot(own)
            self.offset = snapshot.snapshot_id.offset
        if self.offset < 0:
            self.offset = log.start_offset
        if high_watermark is None or high_watermark <= self.offset:
            return
        for header, data in log.batches(self.offset, high_watermark):
            if not header.is_control:
                records = offsets_and_values(data, header)
                batch = CommittedBatch(
                    header.base_offset, header.last_offset, header.partition_leader_epoch, records
                )
                for listener in self.listeners:
                    listener.handle_commit(batch)
            self.offset = header.next_offset
