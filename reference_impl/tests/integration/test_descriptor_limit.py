"""A broker process under a low ``ulimit -n`` with thousands of partitions (issue 17, item 5).

Before the fix a CreatePartitions to 100,000 ran the broker out of file
descriptors at 6,662 partitions (three files each, all kept open); every
later accept failed with a traceback (12,298 a minute) and the broker could
not start again on that data directory. Here the child's ``RLIMIT_NOFILE`` is
256 (set with ``preexec_fn``): 2,000 partitions are created, written, served
across a crash and a clean restart, with the broker's descriptors sampled
from /proc (fixtures/resources.py) and always under the limit. Then clients
hold more connections than the broker has descriptors for: it stops accepting,
says so once, without a traceback, keeps serving its logs, and accepts again
when they go.
"""

from __future__ import annotations

import resource
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from fixtures.targets import PeakTracker, free_port, wait_for_port
from fixtures.wire import WireClient
from fixtures.wire.ops import records
from reference_impl.log.checkpoints import REPLICATION_CHECKPOINT, read_offsets
from reference_impl.protocol.record_set import build_batch

pytestmark = pytest.mark.slow

NOFILE = 256
PARTITIONS = 2_000
TOPIC = "wide"


class LimitedBroker:
    """One reference broker process whose descriptor limit is :data:`NOFILE`."""

    def __init__(self, data_dir: Path, *configs: str) -> None:
        self.data_dir = data_dir
        self.port = free_port()
        self.log_path = data_dir.parent / "broker.log"
        self.command = [
            sys.executable, "-m", "kafka_harness", "broker", "--node-id", "1",
            "--listen", f"127.0.0.1:{self.port}", "--data-dir", str(data_dir),
        ]
        for config in configs:
            self.command += ["--config", config]
        self.process: subprocess.Popen[bytes] | None = None
        self.peak: PeakTracker | None = None

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self.command, stdout=log, stderr=subprocess.STDOUT, preexec_fn=_limit_descriptors
            )
        wait_for_port("127.0.0.1", self.port, 120, self.process)
        previous = self.peak.fds_peak if self.peak is not None else 0
        self.peak = PeakTracker(self.process.pid)
        self.peak.fds_peak = previous

    def sample(self) -> int:
        assert self.peak is not None
        reading = self.peak.observe()
        assert reading is not None, "the broker died"
        return reading.open_fds

    def stop(self, kill: bool = False) -> None:
        assert self.process is not None
        if kill:
            self.process.kill()
        else:
            self.process.terminate()
        assert self.process.wait(120) in (0, -9)

    def client(self, timeout_s: float = 120) -> WireClient:
        return WireClient(f"127.0.0.1:{self.port}", timeout_s=timeout_s)

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")


def _limit_descriptors() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (NOFILE, NOFILE))


@pytest.fixture()
def broker(tmp_path: Path) -> Iterator[LimitedBroker]:
    node = LimitedBroker(tmp_path / "limits-data", "log.retention.check.interval.ms=500")
    node.start()
    yield node
    if node.process is not None and node.process.poll() is None:
        node.process.kill()
        node.process.wait(30)


def _produce_everywhere(wire: WireClient, partitions: int = PARTITIONS) -> None:
    batches = [
        {"index": p, "records": build_batch([(None, b"p%d" % p)], base_timestamp=int(time.time() * 1000))}
        for p in range(partitions)
    ]
    answer = wire.request(
        "produce", 8, acks=1, timeout=60_000, transactional_id=None,
        topic_data=[{"name": TOPIC, "partition_data": batches}],
    )
    codes = {int(p.error_code) for t in answer.responses for p in t.partition_responses}
    assert codes == {0}, f"produce answered {codes}"


def _read_everywhere(wire: WireClient, partitions: int = PARTITIONS) -> dict[int, list[bytes]]:
    """Every partition's records, fetched in slices of 500 partitions."""
    found: dict[int, list[bytes]] = {}
    for start in range(0, partitions, 500):
        answer = wire.request(
            "fetch", 11, replica_id=-1, max_wait=0, min_bytes=0, max_bytes=64 << 20, isolation_level=0,
            session_id=0, session_epoch=-1, forgotten_topics_data=[], rack_id="",
            topics=[{"topic": TOPIC, "partitions": [
                {"partition": p, "fetch_offset": 0, "partition_max_bytes": 1 << 20, "log_start_offset": -1,
                 "current_leader_epoch": -1}
                for p in range(start, min(start + 500, partitions))
            ]}],
        )
        for topic in answer.responses:
            for entry in topic.partitions:
                assert int(entry.error_code) == 0, f"partition {entry.partition_index}: {entry.error_code}"
                found[int(entry.partition_index)] = [r.value for r in records(entry) if r.value is not None]
    return found


def _check_every_partition(broker: LimitedBroker, when: str) -> None:
    with broker.client() as wire:
        found = _read_everywhere(wire)
    wrong = [p for p in range(PARTITIONS) if found.get(p) != [b"p%d" % p]]
    assert not wrong, f"{when}: {len(wrong)} partitions lost their record, e.g. {wrong[:5]}"
    assert broker.sample() < NOFILE


def _wait_for_high_watermark_checkpoint(broker: LimitedBroker) -> None:
    """Until every partition's high watermark is in the checkpoint: what a restart after SIGKILL makes
    readable at once is issue 17 item 9's business, not this test's."""
    path = broker.data_dir / REPLICATION_CHECKPOINT
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if path.exists() and sum(1 for (topic, _p), hw in read_offsets(str(path)).items()
                                 if topic == TOPIC and hw == 1) == PARTITIONS:
            return
        time.sleep(0.2)
    raise AssertionError("the high watermarks were not checkpointed within 60 s")


def _create(wire: WireClient, partitions: int = PARTITIONS) -> Any:
    created = wire.request(
        "create_topics", 5, timeout=60_000, validate_only=False,
        topics=[{"name": TOPIC, "num_partitions": 1, "replication_factor": 1, "assignments": [],
                 "configs": []}],
    )
    assert int(created.topics[0].error_code) == 0
    grown = wire.request(
        "create_partitions", 1, timeout=600_000, validate_only=False,
        topics=[{"name": TOPIC, "count": partitions, "assignments": None}],
    )
    return grown.results[0]


def test_thousands_of_partitions_under_a_low_descriptor_limit(broker: LimitedBroker) -> None:
    """2,000 partitions (6,000 segment and index files) under ``ulimit -n`` 256: created, written,
    recovered after SIGKILL, reopened after a clean stop, every partition's record read back, and the
    broker's descriptors under the limit at every sample (the figures are printed)."""
    began = time.monotonic()
    with broker.client() as wire:
        grown = _create(wire)
        assert int(grown.error_code) == 0, grown.error_message
        assert broker.sample() < NOFILE
        _produce_everywhere(wire)
    assert broker.sample() < NOFILE
    _check_every_partition(broker, "after producing")
    _wait_for_high_watermark_checkpoint(broker)
    broker.stop(kill=True)
    broker.start()
    _check_every_partition(broker, "after SIGKILL and recovery")
    broker.stop()
    broker.start()
    _check_every_partition(broker, "after a clean restart")
    assert broker.peak is not None
    print(f"\n{PARTITIONS} partitions under RLIMIT_NOFILE={NOFILE}: peak {broker.peak.fds_peak} descriptors, "
          f"{time.monotonic() - began:.1f} s in all")
    assert "Too many open files" not in broker.log_text()


def test_a_connection_flood_leaves_the_logs_their_descriptors(broker: LimitedBroker) -> None:
    """More connections than the broker has descriptors for: it stops accepting at its connection slots
    (one log line, no traceback), a client connected before the flood still writes and reads every
    partition, the descriptors stay under the limit, and once the flood goes new clients are served."""
    with broker.client() as wire:
        grown = _create(wire, 500)
        assert int(grown.error_code) == 0, grown.error_message
        held: list[socket.socket] = []
        try:
            for _ in range(NOFILE + 50):
                held.append(socket.create_connection(("127.0.0.1", broker.port), timeout=10))
            deadline = time.monotonic() + 30
            while "accepting no more" not in broker.log_text() and time.monotonic() < deadline:
                time.sleep(0.2)
            _produce_everywhere(wire, 500)
            found = _read_everywhere(wire, 500)
            assert all(found[p] == [b"p%d" % p] for p in range(500))
            assert broker.sample() < NOFILE
        finally:
            for sock in held:
                sock.close()
    with broker.client(timeout_s=30) as late:
        assert late.request("metadata", 9, topics=None, allow_auto_topic_creation=False).brokers
    text = broker.log_text()
    assert broker.peak is not None
    print(f"\nwith {len(held)} connections held: peak {broker.peak.fds_peak} descriptors, "
          f"{text.count('accepting no more')} log line(s) about the full listener, "
          f"{text.count('Traceback')} traceback(s)")
    assert text.count("accepting no more") == 1
    assert "Traceback" not in text and "Too many open files" not in text
    assert "accepting connections again" in text
