"""``__transaction_state`` records in Kafka's formats (TransactionLogKey v0, TransactionLogValue v0).

Key: int16 version 0, then the transactional id as a string. Value: int16
version 0, producer id, epoch, timeout, status, the partitions (topic and
ids), last update and start timestamps. A null value (tombstone) removes a
transactional id that expired.
"""

from __future__ import annotations

import struct

from .state import TxnMetadata, TxnState

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")


class TxnLogFormatError(ValueError):
    """A record in __transaction_state that is not a transaction log record."""


def _string(value: str) -> bytes:
    raw = value.encode()
    return _I16.pack(len(raw)) + raw


def _read_string(data: bytes, pos: int) -> tuple[str, int]:
    (length,) = _I16.unpack_from(data, pos)
    pos += 2
    if length < 0 or pos + length > len(data):
        raise TxnLogFormatError("string runs past the end of the record")
    return data[pos : pos + length].decode(), pos + length


def encode_key(transactional_id: str) -> bytes:
    return _I16.pack(0) + _string(transactional_id)


def decode_key(data: bytes) -> str:
    try:
        (version,) = _I16.unpack_from(data, 0)
        if version != 0:
            raise TxnLogFormatError(f"transaction log key version {version}")
        return _read_string(data, 2)[0]
    except struct.error as exc:
        raise TxnLogFormatError(str(exc)) from None


def encode_value(meta: TxnMetadata) -> bytes:
    by_topic: dict[str, list[int]] = {}
    for topic, partition in sorted(meta.partitions):
        by_topic.setdefault(topic, []).append(partition)
    parts = [
        _VALUE_HEAD.pack(0, meta.producer_id, meta.producer_epoch, meta.timeout_ms, int(meta.state)),
        _I32.pack(len(by_topic)),
    ]
    for topic, ids in by_topic.items():
        parts.append(_string(topic) + _I32.pack(len(ids)) + b"".join(_I32.pack(i) for i in ids))
    parts.append(_TIMES.pack(meta.last_update_ms, meta.start_ms))
    return b"".join(parts)


def decode_value(transactional_id: str, data: bytes) -> TxnMetadata:
    try:
        version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(data, 0)
        if version not in (0, 1):
            raise TxnLogFormatError(f"transaction log value version {version}")
        if version == 1:
            raise TxnLogFormatError("flexible transaction log values (v1) are not written by this broker")
        pos = _VALUE_HEAD.size
        (count,) = _I32.unpack_from(data, pos)
        pos += 4
        partitions: set[tuple[str, int]] = set()
        for _ in range(max(count, 0)):
            topic, pos = _read_string(data, pos)
            (n,) = _I32.unpack_from(data, pos)
            pos += 4
            for _i in range(n):
                partitions.add((topic, _I32.unpack_from(data, pos)[0]))
                pos += 4
        last_update, start = _TIMES.unpack_from(data, pos)
        return TxnMetadata(
            transactional_id, pid, epoch, timeout, TxnState(status), partitions, start, last_update
        )
    except (struct.error, ValueError) as exc:
        raise TxnLogFormatError(f"bad transaction log value: {exc}") from None
