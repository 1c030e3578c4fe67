"""A cluster broker that has just restarted keeps its logs until its metadata image is complete."""

from __future__ import annotations

import uuid

from reference_impl.core.broker import Broker
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.kraft.quorum import QuorumPorts
from reference_impl.core.ports import MemoryLogStore
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.log.testing import make_batch

from .harness import START_MS


def test_admin_requests_before_the_image_caught_up_delete_no_log() -> None:
    """Found by the broker simulator (seed 17 of its schedules): a restarted broker answered a
    client's CreateTopics, or a Metadata request that may auto-create, before it had replayed the
    metadata log; the handler then synced the partitions to the still empty image and deleted
    every log on disk as a topic "deleted while we were down". The broker was the last ISR
    member of a partition, so its 44 committed records were lost on every replica."""
    store = MemoryLogStore()
    log = store.open_log("t", 0, uuid.UUID(int=9), {}, START_MS)
    log.append_as_leader(make_batch(5), 0, START_MS)
    voters = {1: ("node-1", 9092), 2: ("node-2", 9092), 3: ("node-3", 9092)}
    broker = Broker(
        config=BrokerConfig.parse(3, ["controller.quorum.voters=1@node-1:9092,2@node-2:9092,3@node-3:9092"]),
        store=store,
        advertised_host="node-3",
        advertised_port=9092,
        cluster_id="c",
        now_ms=START_MS,
        quorum=QuorumPorts(voters, MemoryQuorumStateStore(), MemorySnapshotStore()),
    )
    assert broker.quorum is not None and not broker.quorum.ready
    broker.sync_partitions(START_MS)  # what every admin handler does after its change
    assert store.existing_logs() == [("__cluster_metadata", 0), ("t", 0)]
    assert store.logs[("t", 0)].log_end_offset == 5
