"""Seeded hostile-input defects: bugs the reference broker once had, switched back on at will.

The hardening checks (the fuzzer, the abuse suite, the conformance cases for
batch validation, names, internal topics and request limits, the chaos
durability check) mean something only if they fail on a broker that has
these bugs. Each name below brings one back in a broker process started with
the hidden broker config ``reference.defects=NAME[,NAME...]``;
``kafka-harness defects`` starts one broker per defect and prints which check
caught it. No normal deployment sets the config.

This module is a leaf: every layer of the broker (protocol, log, core,
server) may ask :func:`enabled`, and the harness may read :data:`ALL`. The
switch is process-wide because a defect can live below anything that has a
config object (the request decoder, the frame reader); it is set once, at
start-up, by the broker's command line, and tests that need it use
:func:`seeded` to set and restore it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import contextmanager

DEFECTS_CONFIG = "reference.defects"

UNBOUNDED_DECODE = "unbounded-decode"
"""Array, string and bytes lengths from the wire reach kio's reader unchecked, and a null
non-nullable array reaches the handlers (issue 17, item 1)."""
UNVALIDATED_RECORDS = "unvalidated-records"
"""A CRC-valid batch is stored without walking its records: wrong counts, garbage records, bad
offset deltas and timestamps go to the log (item 2)."""
UNBOUNDED_DECOMPRESSION = "unbounded-decompression"
"""A compressed batch is inflated whole, whatever its size (item 3)."""
UNBOUNDED_BUFFERING = "unbounded-buffering"
"""A connection's pipelined frames are all read into memory; no idle or request-completion
timeouts; connections served in arrival order without fairness (item 4)."""
UNBOUNDED_PARTITIONS = "unbounded-partitions"
"""Any partition count is accepted in one request, and every segment file stays open (item 5)."""
NAME_ANCHOR = "name-anchor"
"""Names are matched with ``$``, which lets a trailing newline through (item 6)."""
INTERNAL_TOPIC_WRITES = "internal-topic-writes"
"""Clients may produce to internal topics; InitProducerId takes an empty transactional id (item 7)."""
QUORUM_ON_CLIENT_LISTENER = "quorum-on-client-listener"
"""The client listener serves and advertises the quorum and registration APIs, and quorum
messages are not validated (item 8)."""
LATE_HIGH_WATERMARK = "late-high-watermark"
"""After a restart the high watermark comes only from the checkpoint and moves on the next
write (item 9)."""
FETCH_PLACEHOLDER_ORDER = "fetch-placeholder-order"
"""A Fetch answer's file regions are looked up in request order, so interleaved topics drop the
connection (item 10)."""
ALLOW_BEATS_DENY = "allow-beats-deny"
"""The authorizer lets a matching ALLOW ACL win over a matching DENY ACL (issue 18)."""

ALL = (
    UNBOUNDED_DECODE,
    UNVALIDATED_RECORDS,
    UNBOUNDED_DECOMPRESSION,
    UNBOUNDED_BUFFERING,
    UNBOUNDED_PARTITIONS,
    NAME_ANCHOR,
    INTERNAL_TOPIC_WRITES,
    QUORUM_ON_CLIENT_LISTENER,
    LATE_HIGH_WATERMARK,
    FETCH_PLACEHOLDER_ORDER,
    ALLOW_BEATS_DENY,
)

_enabled: frozenset[str] = frozenset()


class UnknownDefectError(ValueError):
    """A name that is not in :data:`ALL`."""


def parse(value: str) -> frozenset[str]:
    """The defect names of a ``reference.defects`` value (comma-separated); refuses unknown ones."""
    names = frozenset(item.strip() for item in value.split(",") if item.strip())
    unknown = sorted(names - set(ALL))
    if unknown:
        raise UnknownDefectError(f"unknown defect {', '.join(unknown)}; known: {', '.join(ALL)}")
    return names


def enable(names: Iterable[str]) -> None:
    """Switch these defects on for the rest of the process (the broker's start-up)."""
    global _enabled
    _enabled = parse(",".join(names))


def enabled(name: str) -> bool:
    """Whether the defect ``name`` is switched on in this process."""
    return name in _enabled


def active() -> frozenset[str]:
    return _enabled


@contextmanager
def seeded(*names: str) -> Iterator[None]:
    """Switch ``names`` on for the duration of a ``with`` block (tests of the fixes)."""
    global _enabled
    before = _enabled
    _enabled = before | parse(",".join(names))
    try:
        yield
    finally:
        _enabled = before
