"""Seeded bug modes: known replication bugs the reference broker can be told to re-enable.

A passing property suite means something only if it fails on a broken
broker, so each mode below brings back one bug that Kafka fixed (or would
be one), and ``kafka-harness mutants`` checks that the property suite catches
every one. A mode is switched on per topic with the hidden config
``reference.mutant`` (the simulator and property tests set it directly); no
normal deployment sets it.
"""

from __future__ import annotations

MUTANT_CONFIG = "reference.mutant"

TRUNCATE_TO_HW = "truncate-to-hw"
"""Pre-KIP-101: a replica becoming follower truncates its log to its own high watermark."""
KIP279_HOLE = "kip279-hole"
"""Pre-KIP-279: a follower truncates once to the leader's end offset of an epoch, then fetches unchecked."""
HW_OVER_ALL_REPLICAS = "hw-over-all-replicas"
"""The high watermark waits for every assigned replica, not just the ISR (acks=all stalls)."""
HW_WITHOUT_FOLLOWERS = "hw-without-followers"
"""The high watermark is the leader's log end: followers are not waited for."""
ACKS_ALL_EARLY = "acks-all-early"
"""acks=all is acknowledged as soon as the leader has written the batch."""
ISR_EXPAND_EARLY = "isr-expand-early"
"""A follower rejoins the ISR before reaching the start of the leader's current epoch (KIP-320)."""
LSO_ABOVE_HW = "lso-above-hw"
"""The last stable offset is the log end, above the high watermark."""
NO_DEDUP = "no-dedup"
"""Idempotent retries are appended again (no duplicate or sequence checks)."""
STALE_EPOCH_ACCEPTED = "stale-epoch-accepted"
"""A fetch carrying an older leader epoch is served instead of FENCED_LEADER_EPOCH (KIP-320)."""
UNCLEAN_ELECTION = "unclean-election"
"""The controller elects a replica outside the ISR when no ISR member is live, although unclean election
is off (the controller's own rule, :func:`.controller.elections.unclean_configured`)."""
LATE_MARKER_APPLIES = "late-marker-applies"
"""A transaction version 2 marker is checked as a version 0 one (its epoch may equal the producer's data
epoch), so a late marker of an ended transaction ends the next one (KIP-890's fencing undone). Caught
by the transactions property check (``acceptance/property/txn_v2.py``, also run by
``kafka-harness mutants``), not the replication machine: it is in :data:`TXN_MODES`, not :data:`ALL`."""
ANSWER_BEFORE_CAUGHT_UP = "answer-before-caught-up"
"""A (re)started cluster broker handles client requests as soon as its listener opens, from a metadata
image that has not caught up with the metadata log (the gate of ``Broker._maybe_open_to_clients``
undone): it answers Metadata with UNKNOWN_TOPIC_OR_PARTITION for topics that exist. A broker-level
mode (set as a broker config), in :data:`STARTUP_MODES`; caught from outside by the chaos restart
probe (``chaos/nemesis/restart_probe.py``), not by the replication machine."""
VOTERS_OLD_MAJORITY = "voters-old-majority"
"""KIP-853 undone: while a VotersRecord is uncommitted the quorum leader counts the old voter set's
majority for its high watermark, so the change (and what follows it) commits without the new set's
majority. A Raft mode (``RaftConfig.mutant``), in :data:`RAFT_MODES`; caught by the simulator's voter
change property (``reference_impl/sim/raft/voter_fuzz.py``), not the replication machine."""
ALL = (
    TRUNCATE_TO_HW,
    KIP279_HOLE,
    HW_OVER_ALL_REPLICAS,
    HW_WITHOUT_FOLLOWERS,
    ACKS_ALL_EARLY,
    ISR_EXPAND_EARLY,
    LSO_ABOVE_HW,
    NO_DEDUP,
    STALE_EPOCH_ACCEPTED,
    UNCLEAN_ELECTION,
)

TXN_MODES = (LATE_MARKER_APPLIES,)
"""Seeded bug modes of the transaction path, checked by the transactions property test."""

RAFT_MODES = (VOTERS_OLD_MAJORITY,)
"""Seeded bug modes of the quorum's Raft replica, checked by the voter change property."""

STARTUP_MODES = (ANSWER_BEFORE_CAUGHT_UP,)
"""Seeded bug modes of a broker's start, read from the broker's own config (not a topic's); checked
in broker processes (``reference_impl/tests/integration/test_restart_probe_mutant.py``)."""
