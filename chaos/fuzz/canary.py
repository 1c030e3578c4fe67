"""The durability canary: acknowledged records that must survive the whole run, byte for byte.

A fuzzer that only watches for crashes misses the worst outcome of hostile input: a target that
stays up but has lost or altered what it acknowledged (issue 17, items 2, 5, 6 and 9 all ended
there). Before the first fuzz request, :meth:`Canary.write` produces ``count`` records with
``acks=-1`` (all in-sync replicas, Kafka's strongest promise) to a topic of its own whose name
the generator never uses; :meth:`Canary.check` reads them back at the end and after every
restart of a crashed target. ``lost`` is the number of acknowledged records missing or changed.

The records are read back by topic name (Fetch v12 or below when the target advertises one):
the canary judges what is stored, and a Fetch by topic id (v13+) adds a lookup some targets get
wrong on its own (noida-db answers a v13 Fetch without records, a deviation its expectations
already list), which would count every record as lost.
"""

from __future__ import annotations

import hashlib
import time

from kio.schema.errors import ErrorCode

from fixtures.wire import Capabilities, WireClient, WireError, ops
from fixtures.wire.security import ClientSecurity

BATCH = 50
SETTLED = 5
"""Answers in a row, without error, whose high watermark says the rest is not there: then the
check stops waiting for the rest (a restarted target that lost the records would otherwise
hold every check to its timeout)."""
GONE = (ErrorCode.unknown_topic_or_partition, ErrorCode.unknown_topic_id)


class CanaryError(RuntimeError):
    """The canary could not be written (then nothing about durability can be said)."""


class Canary:
    def __init__(
        self, address: str, seed: int, count: int = 200, security: ClientSecurity | None = None
    ) -> None:
        self.address = address
        self.security = security
        self.count = count
        self.topic = f"kh-canary-{seed}-{hashlib.sha256(str(time.time_ns()).encode()).hexdigest()[:8]}"
        self.last_answer = ""
        """What the last fetch of a check that found nothing answered (for the report)."""
        self.acked: dict[int, tuple[bytes, bytes]] = {}
        """offset → (key, value) of every acknowledged record."""

    def _value(self, i: int) -> tuple[bytes, bytes]:
        digest = hashlib.sha256(f"{self.topic}:{i}".encode()).digest()
        return f"k{i}".encode(), digest * (1 + i % 4)

    def write(self) -> None:
        """Create the topic and produce the records (acks=-1) in batches; remember the offsets."""
        try:
            client = WireClient(self.address, client_id="kh-fuzz-canary", timeout_s=15,
                                security=self.security)
        except OSError as exc:
            raise CanaryError(f"cannot connect to {self.address}: {exc}") from exc
        try:
            caps = Capabilities(client.api_versions())
            result = ops.create_topic(client, caps, self.topic, 1)
            if result.error_code not in (ErrorCode.none, ErrorCode.topic_already_exists):
                raise CanaryError(f"CreateTopics {self.topic} answered {result.error_code.name}")
            self._wait_for_leader(client, caps)
            for start in range(0, self.count, BATCH):
                pairs = [self._value(i) for i in range(start, min(start + BATCH, self.count))]
                entry = ops.produce_values(client, caps, self.topic, [v for _, v in pairs],
                                           keys=[k for k, _ in pairs], acks=-1)
                if entry.error_code != ErrorCode.none:
                    raise CanaryError(f"Produce to {self.topic} answered {entry.error_code.name}")
                for n, pair in enumerate(pairs):
                    self.acked[int(entry.base_offset) + n] = pair
        except (WireError, OSError) as exc:
            raise CanaryError(f"writing the canary: {exc}") from exc
        finally:
            client.close()

    def _wait_for_leader(self, client: WireClient, caps: Capabilities) -> None:
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            answer = ops.metadata(client, caps, [self.topic])
            parts = [p for t in answer.topics for p in t.partitions]
            if parts and parts[0].error_code == ErrorCode.none and int(parts[0].leader_id) >= 0:
                return
            time.sleep(0.1)
        raise CanaryError(f"{self.topic} has no leader after 15 s")

    def check(self, timeout_s: float = 30.0) -> int:
        """Read the partition from its first acknowledged offset; the count missing or changed.

        Bounded by ``timeout_s``: a target that does not answer counts every record as lost."""
        if not self.acked:
            return 0
        seen: dict[int, tuple[bytes | None, bytes | None]] = {}
        deadline = time.monotonic() + timeout_s
        offset, last = min(self.acked), max(self.acked)
        settled = 0
        while offset <= last and time.monotonic() < deadline and settled < SETTLED:
            try:
                client = WireClient(self.address, client_id="kh-fuzz-canary", timeout_s=10,
                                    security=self.security)
            except OSError:
                time.sleep(0.5)
                continue
            try:
                caps = Capabilities(client.api_versions())
                by_name = caps.versions("fetch", hi=12)
                version = by_name[-1] if by_name else None
                while offset <= last and time.monotonic() < deadline and settled < SETTLED:
                    _response, entry = ops.fetch(client, caps, self.topic, offset, max_wait_ms=100,
                                                 version=version)
                    records = ops.data_records(entry) if entry is not None else []
                    if not records:
                        # nothing more will come once the partition answers without error and its
                        # high watermark is at or below the offset asked, or the topic is unknown,
                        # several times running
                        self.last_answer = "no partition" if entry is None else entry.error_code.name
                        ended = entry is not None and (entry.error_code in GONE or (
                            entry.error_code == ErrorCode.none and int(entry.high_watermark) <= offset))
                        settled = settled + 1 if ended else 0
                        time.sleep(0.1)
                        continue
                    settled = 0
                    for record in records:
                        seen[record.offset] = (record.key, record.value)
                    offset = max(r.offset for r in records) + 1
            except (WireError, OSError):
                time.sleep(0.5)
            finally:
                client.close()
        return sum(1 for off, pair in self.acked.items() if seen.get(off) != pair)
