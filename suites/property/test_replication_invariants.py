"""The correct reference broker keeps every replication invariant under random faults (issue 6)."""

from __future__ import annotations

from hypothesis import HealthCheck, settings

from .machine import ReplicationMachine

TestReplication = ReplicationMachine.TestCase
TestReplication.settings = settings(
    max_examples=150, stateful_step_count=40, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
