"""What the verifier found, as counts with examples, a verdict line and JSON.

Anomalies (each a count of records, or of offsets for ``inconsistent_offset``):

* ``lost``: acknowledged, never read.
* ``duplicate``: read at more than one offset.
* ``corrupt``: read, but the value does not parse or its checksum does not match its fields and key.
* ``reordered``: within one partition, for one producer and one key, a record read at a later
  offset than a record with a higher sequence number (each record's earliest copy only, so a
  duplicate is counted as a duplicate and not again as a reorder).
* ``inconsistent_offset``: one offset holding two different records (two acknowledgements for one
  offset, or a read that disagrees with what was acknowledged there).
* ``unexpected``: a record of this run read, though no send of it was ever reported.

Counted, never invalid on their own: ``unacked_read`` (sent, the delivery report said it failed
or it was still in flight, yet it is in the log: allowed, the producer could not know),
``unacked`` (sent without a successful acknowledgement), ``foreign`` (intact records of another
generator in the topic).

Which anomalies make a run invalid is an explicit option (``allowed``), decided by the caller,
not by the detectors: a producer without idempotence may legitimately duplicate and reorder.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ANOMALIES = ("lost", "duplicate", "corrupt", "reordered", "inconsistent_offset", "unexpected")
INFORMATIONAL = ("unacked_read", "unacked", "foreign")
VERDICT_ORDER = (
    "lost",
    "duplicate",
    "corrupt",
    "reordered",
    "inconsistent_offset",
    "unexpected",
    "unacked_read",
)


@dataclass(frozen=True, slots=True)
class Verdict:
    acked: int
    """Distinct records with a successful delivery report."""
    read: int
    """Records read (every copy, intact or not)."""
    counts: dict[str, int]
    allowed: frozenset[str] = frozenset()
    samples: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    """Things a reader of the verdict must know (an incomplete read, a lagging ListOffsets)."""
    incomplete_read: bool = False

    @property
    def failing(self) -> list[str]:
        return [name for name in ANOMALIES if self.counts.get(name, 0) and name not in self.allowed]

    @property
    def valid(self) -> bool:
        return not self.failing and not self.incomplete_read

    def line(self) -> str:
        """The last line of a command that judges (see docs/ARCHITECTURE.md, "Verdict lines")."""
        word = "valid" if self.valid else "invalid"
        pairs = " ".join(f"{name}={self.counts.get(name, 0)}" for name in VERDICT_ORDER)
        return f"VERDICT: {word} acked={self.acked} read={self.read} {pairs}"

    def to_json(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "acked": self.acked,
            "read": self.read,
            "counts": {name: self.counts.get(name, 0) for name in (*ANOMALIES, *INFORMATIONAL)},
            "allowed": sorted(self.allowed),
            "failing": self.failing,
            "incomplete_read": self.incomplete_read,
            "notes": list(self.notes),
            "samples": self.samples,
        }

    def write_json(self, path: str | Path) -> None:
        Path(path).write_text(json.dumps(self.to_json(), indent=2, sort_keys=True, default=str) + "\n")
