"""The correct reference broker keeps every replication invariant under random faults (issue 6).

The budget is the loaded hypothesis profile (``ci`` unless ``--hypothesis-profile deep``).
"""

from __future__ import annotations

from .machine import ReplicationMachine
from .replication import ReplicationModel

TestReplication = ReplicationMachine.TestCase


def test_a_replica_that_lost_data_does_not_rejoin_the_isr_on_remembered_state() -> None:
    """Regression for a failure the deep profile found: after a follower lost unflushed records to a
    power loss and restarted, the leader's ISR timer re-added it from the LEO it remembered, and
    StrongIsr failed. A follower joins only on its own fetch, judged by that fetch's offset (as
    Kafka's Partition.maybeExpandIsr; KIP-903 guards the same hole with broker epochs)."""
    model = ReplicationModel()
    model.produce(3, -1)
    for _ in range(3):
        for node in (2, 3):
            model.fetch(node, False)
    model.flush(3)
    model.crash(2, -1, power_loss=True)
    model.restart(2)
    model.tick(100)
    assert 2 not in model.controller.isr
    model.check()
    for _ in range(3):
        model.fetch(2, False)
    assert 2 in model.controller.isr
    model.check()
