"""The correct reference broker keeps every replication invariant under random faults (issue 6).

The budget is the loaded hypothesis profile (``ci`` unless ``--hypothesis-profile deep``).
"""

from __future__ import annotations

from .machine import ReplicationMachine

TestReplication = ReplicationMachine.TestCase
