"""``kafka-harness find-record``: search a reference broker's data files for a record by value (or key).

A chaos checker that finds an acknowledged record missing from what
consumers read wants to know whether the record is gone from every replica
(lost) or still on disk but skipped (a read bug). This scans every segment of
the topic's partitions under one or more data directories, whole batches
only, and prints where the value is (data directory, partition, offset,
segment, byte position). Exit status 0 when found, 1 when not, 2 on bad input.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Iterator
from dataclasses import asdict, dataclass

from reference_impl.protocol.record_set import iter_records
from reference_impl.protocol.records import InvalidBatchError

from .dump_log import scan_log


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


def find(data_dirs: list[str], topic: str, value: bytes | None, key: bytes | None) -> Iterator[Found]:
    for data_dir in data_dirs:
        for partition, directory in _partitions(data_dir, topic):
            for name in sorted(os.listdir(directory)):
                if not name.endswith(".log"):
                    continue
                path = os.path.join(directory, name)
                with open(path, "rb") as f:
                    data = f.read()
                for header in scan_log(data, path).batches:
                    if header.is_control:
                        continue
                    try:
                        records = list(iter_records(data, header))
                    except InvalidBatchError:
                        continue
                    for record in records:
                        if (value is None or record.value == value) and (key is None or record.key == key):
                            yield Found(data_dir, partition, record.offset, path, header.position)


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
    for hit in find(
        args.data_dir,
        args.topic,
        None if args.value is None else args.value.encode(),
        None if args.key is None else args.key.encode(),
    ):
        found += 1
        print(
            json.dumps(asdict(hit))
            if args.json
            else f"{hit.data_dir}: {args.topic}-{hit.partition} offset {hit.offset} "
            f"({hit.segment} at byte {hit.position})"
        )
    if not found and not args.json:
        print(f"not found in {', '.join(args.data_dir)}")
    return 0 if found else 1
