"""The file log against the memory log, step by step, through rolls, retention, truncation and crashes.

Both logs receive the same operations; after every step they must hold the
same batches, offsets and epochs and answer reads the same way. A crash cuts,
zero-fills or garbles the segment files anywhere past the recovery point;
the file log must then come back holding everything below the recovery
point and a prefix of the rest, and the model is cut to the same length.
"""

from __future__ import annotations

import os
import random
import shutil
import tempfile
import uuid

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from reference_impl.log.manager import LogManager
from reference_impl.log.memory import MemoryLog
from reference_impl.log.partition_log import FileLog
from reference_impl.log.testing import durable_position, read_bytes, tear
from reference_impl.protocol.record_set import GZIP, NONE, ZSTD, build_batch

TOPIC_ID = uuid.UUID("11111111-2222-4333-8444-555555555555")
_SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
"""Memory-backed when available: the test checks the log's logic, and fsync on a shared disk only
adds waiting (the crash itself is simulated by cutting files, not by the kernel)."""
TP = ("model", 0)


class FileLogMachine(RuleBasedStateMachine):
    """Kafka's log contract, checked against the in-memory model: appends assign consecutive offsets,
    reads return whole batches, truncation and DeleteRecords move the ends, retention deletes whole
    segments from the start, and recovery keeps everything flushed plus a prefix of the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.directory = tempfile.mkdtemp(prefix="kh-log-model-", dir=_SCRATCH)
        self.model = MemoryLog()
        self.now = 1_000_000
        self.epoch = 0
        self.manager: LogManager | None = None
        self.log: FileLog | None = None
        self.crashes: list[str] = []
        self.largest_append = 0
        self.seen: dict[str, tuple[object, int, tuple[object, ...]]] = {}
        """By log: the object, its version and its offsets and epochs at the last step."""

    # -- setup and teardown ------------------------------------------------------------------

    @initialize(
        segment_bytes=st.integers(250, 1_500),
        interval=st.sampled_from([0, 100, 400, 4096]),
        index_bytes=st.sampled_from([24, 64, 10_485_760]),
        flush_ms=st.sampled_from([50, 2**63 - 1]),
        retention=st.sampled_from([(1_000, -1), (-1, 1_200), (500, 3_000)]),
    )
    def open_log(
        self, segment_bytes: int, interval: int, index_bytes: int, flush_ms: int, retention: tuple[int, int]
    ) -> None:
        self.configs = {
            "segment.bytes": "1048576",
            "internal.segment.bytes": str(segment_bytes),
            "index.interval.bytes": str(interval),
            "segment.index.bytes": str(index_bytes),
            "flush.ms": str(flush_ms),
            "retention.ms": str(retention[0]),
            "retention.bytes": str(retention[1]),
        }
        self._start()

    def _start(self) -> None:
        self.manager = LogManager(self.directory, node_id=1, cluster_id="model")
        self.log = self.manager.open_log(*TP, TOPIC_ID, self.configs, self.now)

    def teardown(self) -> None:
        if self.manager is not None:
            self.manager.abandon()
        shutil.rmtree(self.directory, ignore_errors=True)

    @property
    def file(self) -> FileLog:
        assert self.log is not None
        return self.log

    # -- appends -----------------------------------------------------------------------------

    @rule(
        sizes=st.lists(st.integers(0, 120), min_size=1, max_size=5),
        skews=st.lists(st.integers(-2_000, 2_000), min_size=5, max_size=5),
        codec=st.sampled_from([NONE, NONE, GZIP, ZSTD]),
        new_epoch=st.booleans(),
    )
    def append_as_leader(self, sizes: list[int], skews: list[int], codec: int, new_epoch: bool) -> None:
        if new_epoch:
            self.epoch += 1
        stamps = [self.now + skews[i % len(skews)] for i in range(len(sizes))]
        batch = build_batch(
            [(b"k%d" % i, b"v" * size) for i, size in enumerate(sizes)], timestamps=stamps, codec=codec
        )
        self.largest_append = max(self.largest_append, len(batch))
        got = self.file.append_as_leader(bytearray(batch), self.epoch, self.now)
        want = self.model.append_as_leader(bytearray(batch), self.epoch, self.now)
        assert got == want

    @rule(
        gaps=st.lists(st.integers(0, 3), min_size=1, max_size=3),
        counts=st.lists(st.integers(1, 4), min_size=3, max_size=3),
        epoch_step=st.integers(0, 1),
    )
    def append_as_follower(self, gaps: list[int], counts: list[int], epoch_step: int) -> None:
        self.epoch += epoch_step
        offset = self.model.log_end_offset
        data = b""
        for gap, count in zip(gaps, counts, strict=False):
            offset += gap
            data += build_batch(
                [(b"f", b"x" * 30)] * count,
                base_offset=offset,
                base_timestamp=self.now,
                partition_leader_epoch=self.epoch,
            )
            offset += count
        self.largest_append = max(self.largest_append, len(data))
        assert self.file.append_as_follower(data) == self.model.append_as_follower(data)

    # -- reads -------------------------------------------------------------------------------

    @rule(data=st.data(), max_bytes=st.integers(0, 3_000), limit=st.integers(-1, 6), min_one=st.booleans())
    def read(self, data: st.DataObject, max_bytes: int, limit: int, min_one: bool) -> None:
        offset = data.draw(st.integers(self.model.log_start_offset, self.model.log_end_offset))
        max_offset = None if limit < 0 else offset + limit
        got = self.file.read(offset, max_bytes, max_offset, min_one)
        want = self.model.read(offset, max_bytes, max_offset, min_one)
        assert read_bytes(got) == read_bytes(want)
        assert (got.size, got.first_batch_offset) == (want.size, want.first_batch_offset)

    @rule(skew=st.integers(-3_000, 3_000))
    def offset_for_timestamp(self, skew: int) -> None:
        target = self.now + skew
        assert self.file.offset_for_timestamp(target) == self.model.offset_for_timestamp(target)

    @rule()
    def max_timestamp(self) -> None:
        assert self.file.max_timestamp() == self.model.max_timestamp()

    # -- moving the ends ---------------------------------------------------------------------

    @rule(data=st.data())
    def truncate(self, data: st.DataObject) -> None:
        """Follower truncation lands where a batch ends (an epoch's end offset, a fetched LEO)."""
        start = self.model.log_start_offset
        ends = [h.next_offset for h in self.model.batch_headers(start) if h.next_offset >= start]
        target = data.draw(st.sampled_from([*ends, self.model.log_end_offset]))
        self.file.truncate_to(target)
        self.model.truncate_to(target)

    @rule(data=st.data())
    def delete_records(self, data: st.DataObject) -> None:
        target = data.draw(st.integers(self.model.log_start_offset, self.model.log_end_offset))
        self.file.advance_log_start_offset(target)
        self.model.advance_log_start_offset(target)

    @rule(step=st.integers(0, 4_000), data=st.data())
    def retention(self, step: int, data: st.DataObject) -> None:
        self.now += step
        high_watermark = data.draw(st.integers(self.model.log_start_offset, self.model.log_end_offset))
        before = self.file.log_start_offset
        self.file.apply_retention(self.now, high_watermark)
        start = self.file.log_start_offset
        assert before <= start <= high_watermark
        self.model.advance_log_start_offset(start)

    @rule()
    def flush(self) -> None:
        self.file.flush()
        self.model.flush()
        assert self.file.recovery_point == self.file.log_end_offset

    @rule(step=st.integers(0, 100))
    def tick(self, step: int) -> None:
        self.now += step
        if self.file.maybe_flush(self.now):
            assert self.file.recovery_point == self.file.log_end_offset

    # -- stopping ----------------------------------------------------------------------------

    @rule(seed=st.integers(0, 2**32 - 1))
    def crash(self, seed: int) -> None:
        durable = durable_position(self.file)
        recovery_point = self.file.recovery_point
        assert self.manager is not None
        self.manager.abandon()
        self.crashes.append(tear(self.file.directory, durable, random.Random(seed)))
        self._start()
        end = self.file.log_end_offset
        assert recovery_point <= end <= self.model.log_end_offset, self.crashes[-1]
        straddling = [h for h in self.model.batch_headers(0) if h.base_offset < end < h.next_offset]
        assert not straddling, self.crashes[-1]  # whole batches survive, or none of them
        self.model.truncate_to(end)
        self.model.restart()

    @rule()
    def clean_restart(self) -> None:
        assert self.manager is not None
        self.manager.close()
        self._start()
        self.model.restart()
        assert self.file.load_report.recovered_segments == []

    # -- invariants --------------------------------------------------------------------------

    @invariant()
    def same_offsets_and_epochs(self) -> None:
        if self.log is None:
            return
        assert self.file.log_start_offset == self.model.log_start_offset
        assert self.file.log_end_offset == self.model.log_end_offset
        assert self.file.epoch_entries() == self.model.epoch_entries()
        assert self.file.recovery_point <= self.file.log_end_offset

    @invariant()
    def version_moves_with_every_change(self) -> None:
        """Callers take an unchanged version for unchanged offsets and epochs (a follower's idle
        partitions, issue 22): no step may change them and leave the version where it was."""
        if self.log is None:
            return
        for name, log in (("file", self.log), ("model", self.model)):
            state = (log.log_start_offset, log.log_end_offset, tuple(log.epoch_entries()))
            before = self.seen.get(name)
            if before is not None and before[0] is log and before[1] == log.version:
                assert before[2] == state, f"{name}: {before[2]} became {state} at version {log.version}"
            self.seen[name] = (log, log.version, state)

    @invariant()
    def same_bytes(self) -> None:
        if self.log is None:
            return
        start = self.model.log_start_offset
        assert read_bytes(self.file.read(start, 1 << 30)) == read_bytes(self.model.read(start, 1 << 30))

    @invariant()
    def segments_respect_their_size(self) -> None:
        """A segment outgrows segment.bytes only with an append bigger than that, alone in it."""
        if self.log is None:
            return
        limit = max(self.file.config.segment_bytes, self.largest_append)
        assert all(segment.size <= limit for segment in self.file.segments)


TestFileLogAgainstModel = FileLogMachine.TestCase
TestFileLogAgainstModel.settings = settings(
    max_examples=100, stateful_step_count=50, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
