"""``kafka-harness dump-log PATH ...``: print and verify a segment's batches (Kafka's DumpLogSegments).

For a ``.log`` file: every batch with its offsets, file position, size,
leader epoch, CRC check, producer id/epoch/sequence, timestamps (and the
cleaner's delete horizon), codec and flags, and (``--print-data``) its
records; reading stops at the first byte that is not a whole, CRC-valid
batch and names it: its byte position and the offsets the damaged batch
claims. For the segment's ``.index`` and ``.timeindex`` (given, or found
beside the ``.log``) every entry is checked against the log, and a bad one
is named by its byte position in the index file and its offset: an offset
entry must point at a batch start with no earlier batch reaching its offset
(so a lookup scanning forward from it finds the offset), a time entry at a
batch whose records reach that timestamp. ``--json`` prints one JSON object
per line.

It reads the files as bytes, without the broker's log classes, so it can
describe a directory the broker itself refuses to open. Exit status: 0 when
everything checks out, 1 when damage was found, 2 when a file cannot be read.
"""

from __future__ import annotations

import argparse
import json
import os
import struct
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from reference_impl.protocol.record_set import CODECS, control_record_type, iter_records
from reference_impl.protocol.records import (
    DELETE_HORIZON_BIT,
    HEADER_SIZE,
    LOG_OVERHEAD,
    BatchHeader,
    InvalidBatchError,
    crc_is_valid,
    parse_header,
)

_CODEC_NAMES = {v: k for k, v in CODECS.items()}
_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


@dataclass
class SegmentReport:
    path: str
    base_offset: int
    batches: list[BatchHeader] = field(default_factory=list)
    damage: str | None = None
    damage_position: int = -1
    damage_offsets: tuple[int, int] | None = None
    """(base, last) offset the damaged batch's header claims, when its first 61 bytes parse."""
    index_problems: list[dict[str, Any]] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.damage is None and not self.index_problems


def _base_offset(path: str) -> int:
    stem = os.path.basename(path).split(".")[0]
    return int(stem) if stem.isdigit() else 0


def scan_log(data: bytes, path: str) -> SegmentReport:
    """Every whole, CRC-valid batch from position 0, and the first damage if any."""
    report = SegmentReport(path, _base_offset(path))
    position = 0
    while position < len(data):
        if len(data) - position < LOG_OVERHEAD:
            report.damage, report.damage_position = f"{len(data) - position} trailing bytes", position
            break
        try:
            header = parse_header(data, position)
        except InvalidBatchError as exc:
            report.damage, report.damage_position = str(exc), position
            break
        if header.batch_length < HEADER_SIZE - LOG_OVERHEAD or position + header.size > len(data):
            report.damage = f"batch declares {header.size} bytes, {len(data) - position} remain"
            report.damage_position = position
            break
        if not crc_is_valid(data, header):
            report.damage, report.damage_position = "CRC32C mismatch", position
            report.damage_offsets = (header.base_offset, header.last_offset)
            break
        report.batches.append(header)
        position += header.size
    return report


def _problem(report: SegmentReport, suffix: str, entry: int, size: int, offset: int, text: str) -> None:
    report.index_problems.append({
        "file": report.path[: -len(".log")] + suffix if report.path.endswith(".log") else report.path,
        "entry": entry, "position": entry * size, "offset": offset,
        "problem": f"{suffix} entry {entry}: {text}",
    })


def check_offset_index(report: SegmentReport, data: bytes) -> None:
    """Each entry (offset, position): a batch starts at ``position``, none before it reaches ``offset``.

    The broker indexes an append (possibly several batches) by its last
    offset and first byte; a lookup takes the floor entry and scans forward,
    so that is what makes an entry right.
    """
    batches = report.batches
    starts = {h.position: i for i, h in enumerate(batches)}
    last = batches[-1].last_offset if batches else report.base_offset - 1
    size = _OFFSET_ENTRY.size
    if len(data) % size:
        _problem(report, ".index", len(data) // size, size, -1,
                 f"{len(data)} bytes is not a whole number of {size}-byte entries")
    previous = (-1, -1)
    for i in range(len(data) // size):
        relative, position = _OFFSET_ENTRY.unpack_from(data, i * size)
        offset = report.base_offset + relative
        index = starts.get(position)
        if i and (relative <= previous[0] or position <= previous[1]):
            _problem(report, ".index", i, size, offset,
                     f"offset {offset} at byte {position} does not increase")
        elif index is None:
            _problem(report, ".index", i, size, offset, f"position {position} is not a batch start")
        elif index and batches[index - 1].last_offset >= offset:
            _problem(report, ".index", i, size, offset,
                     f"offset {offset} is in the batch before byte {position}: a lookup would miss it")
        elif offset > last:
            _problem(report, ".index", i, size, offset, f"offset {offset} is past the last batch ({last})")
        previous = (relative, position)


def check_time_index(report: SegmentReport, data: bytes) -> None:
    """Each entry (timestamp, offset): timestamps increase, and some record up to the offset reaches it."""
    size = _TIME_ENTRY.size
    if len(data) % size:
        _problem(report, ".timeindex", len(data) // size, size, -1,
                 f"{len(data)} bytes is not a whole number of {size}-byte entries")
    previous_ts = -(2**63)
    for i in range(len(data) // size):
        timestamp, relative = _TIME_ENTRY.unpack_from(data, i * size)
        offset = report.base_offset + relative
        holders = [h for h in report.batches if h.base_offset <= offset <= h.last_offset]
        if timestamp < previous_ts:
            _problem(report, ".timeindex", i, size, offset, f"timestamp {timestamp} goes back")
        elif not holders:
            _problem(report, ".timeindex", i, size, offset, f"offset {offset} is in no batch")
        elif max(h.max_timestamp for h in report.batches if h.base_offset <= offset) < timestamp:
            _problem(report, ".timeindex", i, size, offset,
                     f"no record up to offset {offset} reaches timestamp {timestamp}")
        previous_ts = max(previous_ts, timestamp)


def batch_json(header: BatchHeader, data: bytes, with_records: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "baseOffset": header.base_offset,
        "lastOffset": header.last_offset,
        "count": header.records_count,
        "position": header.position,
        "size": header.size,
        "partitionLeaderEpoch": header.partition_leader_epoch,
        "crc": header.crc,
        "producerId": header.producer_id,
        "producerEpoch": header.producer_epoch,
        "baseSequence": header.base_sequence,
        "baseTimestamp": header.base_timestamp,
        "maxTimestamp": header.max_timestamp,
        "timestampType": "LogAppendTime" if header.is_log_append_time else "CreateTime",
        "codec": _CODEC_NAMES.get(header.compression, str(header.compression)),
        "isTransactional": header.is_transactional,
        "isControl": header.is_control,
    }
    if header.attributes & DELETE_HORIZON_BIT:
        out["deleteHorizonMs"] = header.base_timestamp
    if with_records or header.is_control:
        try:
            records = list(iter_records(data, header))
        except InvalidBatchError as exc:
            out["recordError"] = str(exc)
            return out
        if header.is_control and records:
            out["control"] = "COMMIT" if control_record_type(records[0]) == 1 else "ABORT"
        if with_records:
            out["records"] = [
                {
                    "offset": r.offset,
                    "timestamp": r.timestamp,
                    "key": _text(r.key),
                    "value": _text(r.value),
                    "headers": {k: _text(v) for k, v in r.headers},
                }
                for r in records
            ]
    return out


def _text(value: bytes | None) -> str | None:
    if value is None:
        return None
    try:
        return value.decode()
    except UnicodeDecodeError:
        return "0x" + value.hex()


def _segment_paths(path: str) -> tuple[str, str, str]:
    stem = path.rsplit(".", 1)[0] if path.endswith((".log", ".index", ".timeindex")) else path
    return stem + ".log", stem + ".index", stem + ".timeindex"


def dump(path: str, with_records: bool) -> Iterator[dict[str, Any]]:
    log_path, index_path, time_path = _segment_paths(path)
    with open(log_path, "rb") as f:
        data = f.read()
    report = scan_log(data, log_path)
    for header in report.batches:
        yield {"type": "batch", "file": log_path, **batch_json(header, data, with_records)}
    if report.damage is not None:
        after = report.batches[-1].next_offset if report.batches else report.base_offset
        damage: dict[str, Any] = {
            "type": "damage",
            "file": log_path,
            "position": report.damage_position,
            "offsetAfterLastGoodBatch": after,
            "reason": report.damage,
        }
        if report.damage_offsets is not None:
            damage["baseOffset"], damage["lastOffset"] = report.damage_offsets
        yield damage
    for extra_path, check in ((index_path, check_offset_index), (time_path, check_time_index)):
        if os.path.exists(extra_path):
            with open(extra_path, "rb") as f:
                check(report, f.read())
    for problem in report.index_problems:
        yield {"type": "index-problem", **problem}
    yield {
        "type": "summary",
        "file": log_path,
        "batches": len(report.batches),
        "records": sum(h.records_count for h in report.batches),
        "ok": report.ok,
    }


def _human(entry: dict[str, Any]) -> str:
    kind = entry["type"]
    if kind == "batch":
        flags = ",".join(
            f
            for f, on in (
                ("transactional", entry["isTransactional"]),
                ("control " + entry.get("control", ""), entry["isControl"]),
            )
            if on
        )
        line = (
            f"baseOffset {entry['baseOffset']} lastOffset {entry['lastOffset']} count {entry['count']} "
            f"position {entry['position']} size {entry['size']} epoch {entry['partitionLeaderEpoch']} "
            f"crc ok producer {entry['producerId']}/{entry['producerEpoch']}/{entry['baseSequence']} "
            f"maxTimestamp {entry['maxTimestamp']} {entry['timestampType']} codec {entry['codec']}"
            + (f" [{flags}]" if flags else "")
        )
        for r in entry.get("records", []):
            line += f"\n  | offset {r['offset']} timestamp {r['timestamp']} key {r['key']} value {r['value']}"
        return line
    if kind == "damage":
        claims = ""
        if "baseOffset" in entry:
            claims = f", in a batch claiming offsets {entry['baseOffset']}-{entry['lastOffset']}"
        after = entry["offsetAfterLastGoodBatch"] - 1
        return f"DAMAGE at byte {entry['position']} (after offset {after}{claims}): {entry['reason']}"
    if kind == "index-problem":
        return f"INDEX: {entry['file']} byte {entry['position']}: {entry['problem']}"
    return (
        f"{entry['file']}: {entry['batches']} batches, {entry['records']} records, "
        f"{'OK' if entry['ok'] else 'PROBLEMS FOUND'}"
    )


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="kafka-harness dump-log", description=__doc__.split("\n\n")[0])
    parser.add_argument("paths", nargs="+", metavar="PATH", help=".log, .index or .timeindex files")
    parser.add_argument("--print-data", action="store_true", help="print every record's key and value")
    parser.add_argument("--json", action="store_true", help="one JSON object per line")
    args = parser.parse_args(argv)
    status = 0
    for path in args.paths:
        try:
            for entry in dump(path, args.print_data):
                print(json.dumps(entry) if args.json else _human(entry))
                if entry["type"] == "summary" and not entry["ok"]:
                    status = 1
        except BrokenPipeError:
            return status  # the reader (head, less) went away: nothing more to say
        except OSError as exc:
            print(f"kafka-harness dump-log: cannot read {path}: {exc.strerror or exc}", file=sys.stderr)
            return 2
    return status
