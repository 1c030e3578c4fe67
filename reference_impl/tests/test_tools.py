"""dump-log and find-record on segments the file log wrote: they agree with the log, and name damage."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from reference_impl.log.config import LogConfig
from reference_impl.log.partition_log import FileLog
from reference_impl.protocol.record_set import GZIP, build_batch
from reference_impl.tools import dump_log, find_record


@pytest.fixture()
def segment_dir(tmp_path: Path) -> Path:
    directory = tmp_path / "data" / "t-0"
    log = FileLog.open(str(directory), LogConfig().with_changes({"index.interval.bytes": "1"}), 0)
    for i in range(20):
        batch = bytearray(
            build_batch(
                [(b"k%d" % i, b"v%d-%d" % (i, j)) for j in range(3)],
                base_timestamp=1000 + i,
                codec=GZIP if i % 2 else 0,
            )
        )
        log.append_as_leader(batch, 0, 1000 + i)
    log.close()
    return directory


def _entries(
    path: Path, *flags: str, capsys: pytest.CaptureFixture[str]
) -> tuple[int, list[dict[str, Any]]]:
    status = dump_log.main([str(path), "--json", *flags])
    return status, [json.loads(line) for line in capsys.readouterr().out.splitlines()]


def test_dump_log_lists_every_batch_and_verifies_the_indexes(
    segment_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Kafka's DumpLogSegments: batches with offsets and positions; index entries point at batches."""
    segment = next(segment_dir.glob("*.log"))
    status, entries = _entries(segment, "--print-data", capsys=capsys)
    batches = [e for e in entries if e["type"] == "batch"]
    assert status == 0 and entries[-1]["ok"] is True
    assert [b["baseOffset"] for b in batches] == list(range(0, 60, 3))
    assert [r["value"] for r in batches[4]["records"]] == ["v4-0", "v4-1", "v4-2"]
    assert [b["codec"] for b in batches[:2]] == ["none", "gzip"]
    assert not [e for e in entries if e["type"] == "index-problem"]


def test_dump_log_names_the_offset_and_byte_of_damage(
    segment_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    copy = tmp_path / "copy"
    shutil.copytree(segment_dir, copy)
    segment = next(copy.glob("*.log"))
    data = bytearray(segment.read_bytes())
    _, entries = _entries(segment, capsys=capsys)
    tenth = [e for e in entries if e["type"] == "batch"][10]
    data[int(tenth["position"]) + 70] ^= 0xFF
    segment.write_bytes(bytes(data))
    status, entries = _entries(segment, capsys=capsys)
    damage = [e for e in entries if e["type"] == "damage"]
    assert status == 1
    assert damage == [
        {
            "type": "damage",
            "file": str(segment),
            "position": tenth["position"],
            "offsetAfterLastGoodBatch": 30,
            "reason": "CRC32C mismatch",
            "baseOffset": 30,
            "lastOffset": 32,
        }
    ]


def test_find_record_locates_a_value_or_says_it_is_absent(
    segment_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The checkers' question: on which replicas' files is a value, and from which is it gone?"""
    data_dir = str(segment_dir.parent)
    other = tmp_path / "replica-2"
    shutil.copytree(segment_dir, other / "t-0")
    log = FileLog.open(str(other / "t-0"), LogConfig(), 0)
    log.truncate_to(21)  # this replica lost offsets 21 and up
    log.close()
    assert find_record.main(["--data-dir", data_dir, "--data-dir", str(other), "--topic", "t",
                             "--value", "v7-2", "--json"]) == 0
    *hits, summary = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(h["data_dir"], h["partition"], h["offset"]) for h in hits] == [(data_dir, 0, 23)]
    assert summary["found_in"] == [data_dir] and summary["absent_from"] == [str(other)]
    assert find_record.main(["--data-dir", data_dir, "--topic", "t", "--value", "missing"]) == 1
    assert find_record.main(["--data-dir", str(tmp_path), "--topic", "t", "--value", "v1-1", "--json"]) == 1
    out = capsys.readouterr().out.splitlines()
    assert json.loads(out[-1])["no_partitions_in"] == [str(tmp_path)]


def test_dump_log_names_a_bad_index_entry_by_its_byte(
    segment_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An offset-index entry pointing into the middle of a batch: the entry, its byte and offset are named."""
    copy = tmp_path / "copy"
    shutil.copytree(segment_dir, copy)
    index = next(copy.glob("*.index"))
    data = bytearray(index.read_bytes())
    assert len(data) >= 24
    data[16 + 7] ^= 0x01  # third entry: its position moves off a batch start
    index.write_bytes(bytes(data))
    status, entries = _entries(next(copy.glob("*.log")), capsys=capsys)
    (problem,) = [e for e in entries if e["type"] == "index-problem"]
    assert status == 1 and problem["file"] == str(index)
    assert (problem["entry"], problem["position"]) == (2, 16) and problem["offset"] >= 0


def test_dump_log_checks_a_cleaned_segment(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What the cleaner writes dumps clean: indexes agree, tombstone batches show their delete horizon."""
    from reference_impl.log.cleaning.cleaner import LogCleaner

    config = LogConfig(segment_bytes=700, index_interval_bytes=50, cleanup_policy=("compact",),
                       min_cleanable_dirty_ratio=0.0)
    log = FileLog.open(str(tmp_path / "t-0"), config, 0)
    for i in range(60):
        value = None if i % 7 == 0 else b"v%d" % i
        log.append_as_leader(bytearray(build_batch([(b"k%d" % (i % 5), value)], base_timestamp=i)), 0, i)
    log.roll(100)
    cleaner = LogCleaner(str(tmp_path))
    cleaner.clean({("t", 0): log}, {("t", 0): log.log_end_offset}, 1_000)
    assert cleaner.last_result[("t", 0)].records_removed > 0
    log.close()
    for segment in sorted((tmp_path / "t-0").glob("*.log")):
        status, entries = _entries(segment, "--print-data", capsys=capsys)
        assert status == 0 and not [e for e in entries if e["type"] != "batch" and e["type"] != "summary"]
        for batch in (e for e in entries if e["type"] == "batch"):
            tombstones = [r for r in batch.get("records", []) if r["value"] is None]
            assert bool(tombstones) == ("deleteHorizonMs" in batch)
