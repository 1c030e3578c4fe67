"""Abuse: decompression bombs of every codec (issue 17, item 3).

A 4 KiB zstd batch that inflated to 1 GiB took the reference broker to 2.1 GB RSS and blocked it for
3.2 s; an 8 GiB one aborted it under a 4 GiB address-space cap. Each case here sends one bomb to the
target and requires an error answer or a closed connection, and a target that still answers
afterwards (a fresh connection, a good batch produced and fetched back). On a target launched here
the broker's resident memory is sampled through the bomb (``fixtures/resources.py``) and printed; the
reference (and a ``bootstrap:`` broker on this machine, such as a reference broker started with a
seeded defect) must stay within :data:`REFERENCE_RSS_GROWTH_MIB` of what it held before, which an
inflate-whole broker (``reference.defects=unbounded-decompression``) exceeds many times over.

What Kafka answers: a batch counting 1 record whose payload is zeros is INVALID_RECORD. Its validator
streams the decompressed records, reads the one record the header counts (a run of zero bytes parses
as one), then reads one byte more and refuses the batch with "Incorrect declared batch size, records
still remaining in file" (``clients/src/main/java/org/apache/kafka/common/record/
DefaultRecordBatch.java``, ``RecordIterator.next``; the validator is ``storage/src/main/java/org/
apache/kafka/storage/internals/log/LogValidator.java``). A bomb that is one well-formed record with
a huge value Kafka streams through and stores; the reference refuses it (MESSAGE_TOO_LARGE, its
bound of ``min(count, 64) x max.message.bytes``), so for that case any answer is allowed and only
liveness and memory are checked.
"""

from __future__ import annotations

import contextlib
import functools
import os
import struct
import threading
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import cramjam
import lz4.frame
import pytest
import zstandard

from fixtures.targets import PeakTracker, Target
from fixtures.wire import Capabilities, Router, WireClient, WireError, ops
from reference_impl.protocol.record_set import GZIP, LZ4, SNAPPY, ZSTD, build_batch, seal_batch

FEATURE = "Abuse: decompression bombs"
MIB = 1 << 20
BOMB_MIB = {GZIP: 512, SNAPPY: 160, LZ4: 1024, ZSTD: 1024}
"""How far each bomb inflates: 1 GiB where the codec packs it small (zstd 32 KiB, lz4 4 MiB), less
for gzip (1 GiB takes 5 s to build) and snappy (at most ~21:1, so 160 MiB is already 8 MiB sent)."""
TOPIC_MAX_MESSAGE_BYTES = 8 * MIB
"""The bombs are up to 8 MiB on the wire; the topic allows that so the broker has to look inside."""
REFERENCE_RSS_GROWTH_MIB = 96
"""The reference's bound: the 8 MiB request held a few times over (frame, decoded request, the batch
to validate) plus the decompression's chunk and window, against 160 MiB to 1 GiB inflated."""
CODECS = pytest.mark.parametrize("codec", list(BOMB_MIB), ids=["gzip", "snappy", "lz4", "zstd"])


def _zeros(total: int) -> Iterator[bytes]:
    chunk = bytes(MIB)
    for _ in range(total // MIB):
        yield chunk


def _compress_stream(codec: int, pieces: Iterator[bytes]) -> bytes:
    """Compress a stream without holding it (the bombs never exist inflated on this side either)."""
    if codec == GZIP:
        gz = zlib.compressobj(9, zlib.DEFLATED, 31)
        return b"".join(gz.compress(p) for p in pieces) + gz.flush()
    if codec == ZSTD:
        zs = zstandard.ZstdCompressor(level=3).compressobj()
        return b"".join(zs.compress(p) for p in pieces) + zs.flush()
    if codec == LZ4:
        lz = lz4.frame.LZ4FrameCompressor()
        return lz.begin() + b"".join(lz.compress(p) for p in pieces) + lz.flush()
    blocks = []  # snappy: the xerial framing the Java client writes, 64 KiB blocks
    for piece in pieces:
        for at in range(0, len(piece), 64 * 1024):
            raw = bytes(cramjam.snappy.compress_raw(piece[at : at + 64 * 1024]))
            blocks.append(struct.pack(">i", len(raw)) + raw)
    return b"\x82SNAPPY\x00" + struct.pack(">ii", 1, 1) + b"".join(blocks)


def _varint(value: int) -> bytes:
    raw = (value << 1) ^ (value >> 63)
    out = bytearray()
    while raw > 0x7F:
        out.append((raw & 0x7F) | 0x80)
        raw >>= 7
    out.append(raw)
    return bytes(out)


@functools.cache
def zero_bomb(codec: int) -> bytes:
    """A batch counting one record whose payload is BOMB_MIB of zeros (built once per run)."""
    payload = _compress_stream(codec, _zeros(BOMB_MIB[codec] * MIB))
    now = int(time.time() * 1000)
    return seal_batch(payload, records_count=1, last_offset_delta=0, attributes=codec,
                      base_timestamp=now, max_timestamp=now)


@functools.cache
def huge_record_bomb(codec: int) -> bytes:
    """A batch of one well-formed record whose value is BOMB_MIB of zeros."""
    size = BOMB_MIB[codec] * MIB
    body_head = b"\x00" + _varint(0) + _varint(0) + _varint(1) + b"k" + _varint(size)
    prefix = _varint(len(body_head) + size + 1) + body_head

    def pieces() -> Iterator[bytes]:
        yield prefix
        yield from _zeros(size)
        yield _varint(0)  # no headers

    now = int(time.time() * 1000)
    return seal_batch(_compress_stream(codec, pieces()), records_count=1, last_offset_delta=0,
                      attributes=codec, base_timestamp=now, max_timestamp=now)


def _listening_pid(port: int) -> int | None:
    """The process on this machine listening on loopback ``port`` (a ``bootstrap:`` target started
    by hand, say with a seeded defect), from /proc; None when there is none or it cannot be seen."""
    sockets = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError), open(table) as rows:
            for row in list(rows)[1:]:
                fields = row.split()
                if fields[3] == "0A" and int(fields[1].rsplit(":", 1)[1], 16) == port:  # LISTEN
                    sockets.add(f"socket:[{fields[9]}]")
    for pid in (p for p in os.listdir("/proc") if p.isdigit()) if sockets else ():
        with contextlib.suppress(OSError):
            if any(os.readlink(f"/proc/{pid}/fd/{fd}") in sockets for fd in os.listdir(f"/proc/{pid}/fd")):
                return int(pid)
    return None


def _broker_pid(target: Target) -> int | None:
    if target.nodes:
        return target.nodes[0].pid
    host, _, port = target.bootstrap_servers.split(",")[0].rpartition(":")
    return _listening_pid(int(port)) if host in ("127.0.0.1", "localhost") else None


class _RssSampler:
    """Samples a local target's broker every 10 ms on a thread while a bomb is in flight."""

    def __init__(self, target: Target) -> None:
        pid = _broker_pid(target)
        self.tracker = PeakTracker(pid) if pid is not None else None
        self.before_mib = 0.0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        assert self.tracker is not None
        while not self._stop.wait(0.01):
            self.tracker.observe()

    @contextlib.contextmanager
    def watching(self) -> Iterator[None]:
        if self.tracker is None:
            yield
            return
        reading = self.tracker.observe()
        self.before_mib = reading.rss_mib if reading else 0.0
        self._thread.start()
        try:
            yield
        finally:
            self._stop.set()
            self._thread.join(5)

    @property
    def growth_mib(self) -> float | None:
        if self.tracker is None or not self.tracker.samples:
            return None
        return self.tracker.rss_peak_mib - self.before_mib


def _send(router: Router, caps: Capabilities, topic: str, batch: bytes) -> tuple[str, Any]:
    """("answered", the partition's answer) or ("closed", why)."""
    try:
        return "answered", ops.produce_batch(router, caps, topic, batch, timeout_ms=30_000)
    except (WireError, OSError) as exc:
        return "closed", exc


def _still_serves(target: Target, caps: Capabilities, wire_factory: Callable[..., WireClient],
                  topic: str) -> None:
    """A fresh connection gets a good batch stored and fetched back."""
    conn = wire_factory(timeout_s=30.0)
    good = ops.produce_batch(conn, caps, topic, build_batch([(b"k", b"after the bomb")],
                                                            base_timestamp=int(time.time() * 1000)))
    assert int(good.error_code) == 0, f"{target.name}: a good batch after the bomb answered {good.error_code}"
    _r, part = ops.fetch(conn, caps, topic, int(good.base_offset))
    values = [r.value for r in ops.data_records(part)]
    assert b"after the bomb" in values, f"{target.name}: the good batch was not read back ({values[:3]})"


def _report(target: Target, kind: str, codec: int, outcome: str, answer: Any, sampler: _RssSampler) -> None:
    growth = sampler.growth_mib
    code = getattr(answer, "error_code", answer)
    rss = "rss n/a"
    if growth is not None:
        rss = f"rss before {sampler.before_mib:.0f} MiB, peak growth {growth:.0f} MiB"
    print(f"[{target.name}] {kind} {BOMB_MIB[codec]} MiB codec {codec}: {outcome} {code!s:.80}; {rss}")
    if target.name in ("reference", "bootstrap") and growth is not None:
        bound = REFERENCE_RSS_GROWTH_MIB
        where = f"{kind} of {BOMB_MIB[codec]} MiB"
        assert growth <= bound, f"the reference grew {growth:.0f} MiB on a {where} (bound {bound} MiB)"


@pytest.fixture
def bomb_round(
    target: Target, router: Router, caps: Capabilities,
    topic_factory: Callable[..., str], wire_factory: Callable[..., WireClient],
) -> Callable[[str, int, bytes], tuple[str, Any]]:
    """``bomb_round(kind, codec, batch)``: send the bomb to a fresh topic with RSS sampled, report and
    bound it, check the target still serves; returns the outcome for the test's own check."""

    def run(kind: str, codec: int, batch: bytes) -> tuple[str, Any]:
        if codec == ZSTD and not caps.supports("produce", 7):
            pytest.skip("zstd needs Produce v7 (KIP-110)")
        topic = topic_factory(configs={"max.message.bytes": str(TOPIC_MAX_MESSAGE_BYTES)})
        sampler = _RssSampler(target)
        with sampler.watching():
            outcome, answer = _send(router, caps, topic, batch)
        _report(target, kind, codec, outcome, answer, sampler)
        _still_serves(target, caps, wire_factory, topic)
        return outcome, answer

    return run


@pytest.mark.slow
@CODECS
def test_zero_bomb_is_refused_and_the_target_lives(
    codec: int, target: Target, bomb_round: Callable[[str, int, bytes], tuple[str, Any]]
) -> None:
    """A 1-record batch of zeros (up to 1 GiB inflated): an error answer (Kafka: INVALID_RECORD) or a
    closed connection, memory bounded on the reference, and the target serves a good batch after."""
    outcome, answer = bomb_round("zero bomb", codec, zero_bomb(codec))
    if outcome == "answered":
        assert int(answer.error_code) != 0, f"{target.name} accepted a {BOMB_MIB[codec]} MiB bomb of zeros"


@pytest.mark.slow
@CODECS
def test_huge_record_bomb_leaves_the_target_alive(
    codec: int, bomb_round: Callable[[str, int, bytes], tuple[str, Any]]
) -> None:
    """One well-formed record whose value inflates to up to 1 GiB: Kafka may store it; whatever the
    answer, memory stays bounded on the reference and the target serves a good batch after."""
    bomb_round("huge-record bomb", codec, huge_record_bomb(codec))
