"""``kafka-harness find-record``: search a reference broker's data files for a record by value (or key).

A chaos checker that finds an acknowledged record missing from what
consumers read wants to know whether the record is gone from every replica
(lost) or still on disk but skipped (a read bug). This scans every segment of
the topic's partitions under one or more data directories, whole batches
only, and prints where the value is (data directory, partition, offset,
segment, byte position). The last line sums up per data directory where the
record is and where it is not, which data directories hold no partition of
the topic, which segments are damaged past some byte (absence there proves
nothing), and which partitions the log cleaner has compacted (an older value
of a key may be gone from those by design). Exit status 0 when found, 1 when
not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field

from reference_impl.log.checkpoints import CheckpointError, read_offsets
from reference_impl.log.cleaning.cleaner import CLEANER_CHECKPOINT
from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import InvalidBatchError

from .dump_log import scan_log


@dataclass
class Summary:
    """Per data directory: hits, partitions searched, damage, compaction."""

    found_in: list[str] = field(default_factory=list)
    absent_from: list[str] = field(default_factory=list)
    no_partitions_in: list[str] = field(default_factory=list)
    damaged_segments: list[str] = field(default_factory=list)
    compacted_partitions: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Found:
    data_dir: str
    partition: int
    offset: int
    segment: str
    position: int


def _partitions(data_dir: str, topic: str) -> Iterator[tuple[int, str]]:
    prefix = topic + "-"
    for name in sorted(os.listdir(data_dir)):
        suffix = name[len(prefix) :]
        if name.startswith(prefix) and suffix.isdigit():
            yield int(suffix), os.path.join(data_dir, name)


def _compacted(data_dir: str, topic: str) -> list[int]:
    """Partitions of ``topic`` the cleaner has compacted (its ``cleaner-offset-checkpoint``)."""
    try:
        cleaned = read_offsets(os.path.join(data_dir, CLEANER_CHECKPOINT))
    except (CheckpointError, OSError):
        return []
    return sorted(p for t, p in cleaned if t == topic)


def find(data_dirs: list[str], topic: str, value: bytes | None, key: bytes | None,
         summary: Summary | None = None) -> Iterator[Found]:
    summary = summary if summary is not None else Summary()
    for data_dir in data_dirs:
        partitions = list(_partitions(data_dir, topic))
        if not partitions:
            summary.no_partitions_in.append(data_dir)
        summary.compacted_partitions += [f"{data_dir}: {topic}-{p}" for p in _compacted(data_dir, topic)]
        hits = 0
        for partition, directory in partitions:
            for name in sorted(os.listdir(directory)):
                if not name.endswith(".log"):
                    continue
                path = os.path.join(directory, name)
                with open(path, "rb") as f:
                    data = f.read()
                report = scan_log(data, path)
                if report.damage is not None:
                    summary.damaged_segments.append(f"{path} from byte {report.damage_position}")
                for header in report.batches:
                    if header.is_control:
                        continue
                    try:
                        records = list(iter_records(data, header))
                    except InvalidBatchError:
                        continue
                    for record in records:
                        if (value is None or record.value == value) and (key is None or record.key == key):
                            hits += 1
                            yield Found(data_dir, partition, record.offset, path, header.position)
        if partitions:
            (summary.found_in if hits else summary.absent_from).append(data_dir)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness find-record", description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--data-dir", action="append", required=True, help="a broker's data directory (repeatable)"
    )
    parser.add_argument("--topic", required=True)
    parser.add_argument("--value", help="the record value to find (UTF-8)")
    parser.add_argument("--key", help="the record key to find (UTF-8)")
    parser.add_argument("--json", action="store_true", help="one JSON object per match")
    args = parser.parse_args(argv)
    if args.value is None and args.key is None:
        parser.error("give --value, --key or both")
    for data_dir in args.data_dir:
        if not os.path.isdir(data_dir):
            print(f"kafka-harness find-record: {data_dir} is not a directory", file=sys.stderr)
            return 2
    found = 0
    summary = Summary()
    for hit in find(
        args.data_dir,
        args.topic,
        None if args.value is None else args.value.encode(),
        None if args.key is None else args.key.encode(),
        summary,
    ):
        found += 1
        print(
            json.dumps({"type": "hit", **asdict(hit)})
            if args.json
            else f"{hit.data_dir}: {args.topic}-{hit.partition} offset {hit.offset} "
            f"({hit.segment} at byte {hit.position})"
        )
    if args.json:
        print(json.dumps({"type": "summary", **asdict(summary)}))
    else:
        if not found:
            print(f"not found in {', '.join(args.data_dir)}")
        for label, items in (("absent from", summary.absent_from),
                             ("no partition of the topic in", summary.no_partitions_in),
                             ("damaged (not searched past the damage)", summary.damaged_segments),
                             ("compacted by the log cleaner", summary.compacted_partitions)):
            if items and (found or label != "absent from"):
                print(f"{label}: {', '.join(items)}")
    return 0 if found else 1
