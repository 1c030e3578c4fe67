"""One pass over the records of a v2 batch: framing, counts, offsets, keys, timestamps; no objects.

Kafka's ``LogValidator`` reads every record of every batch a client produces
(``storage/.../log/LogValidator.java``, through ``DefaultRecordBatch``'s record
iterators and ``DefaultRecord.readFrom``/``readPartiallyFrom``). The broker's
produce path must do the same, on the hot path, so this walk builds nothing per
record: it reads each record's varints in place, skips keys, values and headers
by their lengths, and notes only the records that break a per-record rule.

Two implementations agree byte for byte: :func:`walk_records_python` here, the
readable reference, and the C function in ``_record_walk.c`` (the same walk,
about 50 times faster; built by ``pip install -e .``). :func:`walk_records` is
whichever is selected: the C one when it was built, unless the environment sets
``KH_RECORD_WALKER=python`` or a caller uses :func:`select_walker`. A hypothesis
test (``reference_impl/tests/test_record_walk.py``) runs both on valid and
mutated batches of every codec and shape and requires the same answer.

The walk resumes across chunk boundaries, so a compressed batch is validated as
its bounded decompression produces output (:mod:`.inflate`): a call walks every
record that lies whole in ``buf[pos:end]`` and returns the position of the first
that does not; the caller keeps those bytes, appends the next chunk and calls
again with the returned state. A record whose length prefix already exceeds
``record_max`` stops the walk at once (``TOO_LARGE``), so what the caller keeps
is bounded by ``record_max``.

What is checked, each rule as Kafka's record readers check it (``DefaultRecord.java``,
``DefaultRecordBatch.java``):

* varints are Kafka's: at most 5 bytes for an int32 (lengths, offset delta,
  counts), 10 for the int64 timestamp delta, wider values truncated as Java's
  shifts truncate them;
* a record's length prefix is not negative, the record lies inside the batch,
  and its fields take exactly that many bytes;
* the key and value lengths fit inside the record (negative means null);
* the header count is not negative nor larger than the bytes left in the
  record, and no header key is null;
* exactly ``records_count`` records, and no byte after the last one;
* record ``i`` has offset delta ``i`` (the batch-level check has already made
  ``lastOffsetDelta == records_count - 1``, so this is "offset deltas strictly
  increasing within ``lastOffsetDelta``"; Kafka itself accepts other deltas in
  an uncompressed batch and rewrites them in a compressed one, the reference
  refuses them rather than store records at offsets their batch does not
  cover).

A structural failure ends the walk (``INVALID``): Kafka throws
``InvalidRecordException`` from its iterator, the whole batch fails with
INVALID_RECORD and no per-record errors. The per-record rules (a null key on a
compacted topic, a timestamp outside the topic's window, a LogAppendTime
timestamp type from a producer) do not end it: like Kafka's ``validateRecord``
the walk notes every such record in ``bad`` as ``(index, kind, timestamp)`` and
goes on, so the answer names exactly the records that failed (KIP-467).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any, NamedTuple

OK = 0
"""No failure: every whole record in the buffer was walked (maybe not all of the batch's)."""
INVALID = 1
"""A record breaks the framing rules: the batch is INVALID_RECORD."""
TOO_LARGE = 2
"""A record's length prefix exceeds ``record_max``: the batch inflates past its bound."""

NO_KEY = 1
"""A record without a key on a compacted topic (``bad`` kind)."""
TIMESTAMP_OUT_OF_RANGE = 2
"""A CreateTime record outside [now - before.max.ms, now + after.max.ms] (``bad`` kind)."""
LOG_APPEND_TIME_FROM_PRODUCER = 3
"""A producer set the LogAppendTime type (or sent no timestamp in such a batch) (``bad`` kind)."""

TIMESTAMPS_UNCHECKED = 0
"""The topic stamps LogAppendTime and the producer's batch is CreateTime: nothing to check."""
TIMESTAMPS_IN_RANGE = 1
"""CreateTime topic: each record's timestamp must lie in [ts_low, ts_high] (-1 means none)."""
TIMESTAMPS_ALL_BAD = 2
"""LogAppendTime topic and a LogAppendTime batch: Kafka refuses every record of it."""

NO_TIMESTAMP = -1
_I64_MIN = -(1 << 63)
_I64_MAX = (1 << 63) - 1


class WalkSpec(NamedTuple):
    """What the walk checks against: the batch header's fields and the topic's rules.

    ``timestamp_override`` is used instead of ``base_timestamp + delta`` when
    ``use_override`` (a LogAppendTime batch: every record's timestamp is the
    batch's max timestamp, as ``DefaultRecordBatch`` reads it). ``errors_max``
    caps the ``bad`` entries kept (the count still covers all): a response must
    not grow with a hostile record count.
    """

    records_count: int
    base_timestamp: int
    use_override: bool
    timestamp_override: int
    timestamp_mode: int
    ts_low: int
    ts_high: int
    compacted: bool
    record_max: int
    errors_max: int


class WalkResult(NamedTuple):
    """Where the walk stopped and what it found; ``position`` and ``next_record`` (the index of the
    record at ``position``) resume the next call."""

    position: int
    next_record: int
    bad_total: int
    failure: int
    message: str


Walker = Callable[[bytes | bytearray | memoryview, int, int, bool, int, int, list[tuple[int, int, int]],
                   WalkSpec], WalkResult]


class _Incomplete(Exception):
    """The buffer ends inside a varint: more bytes are needed (or, at the end, the record is cut)."""


def _zigzag(buf: bytes | bytearray | memoryview, pos: int, end: int, width: int) -> tuple[int, int]:
    """Kafka's ``ByteUtils.readVarint`` (``width`` 32: at most 5 bytes) and ``readVarlong`` (64: at
    most 10 bytes): zigzag-decoded, bits past ``width`` dropped as Java's shifts drop them."""
    raw = 0
    for shift in range(0, 7 * ((width + 6) // 7), 7):
        if pos >= end:
            raise _Incomplete
        b = buf[pos]
        pos += 1
        raw |= (b & 0x7F) << shift
        if b < 0x80:
            raw &= (1 << width) - 1
            return (raw >> 1) ^ -(raw & 1), pos
    raise ValueError(f"varint longer than {(width + 6) // 7} bytes")


def _varint32(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    return _zigzag(buf, pos, end, 32)


def _varint64(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    return _zigzag(buf, pos, end, 64)


def _skip_field(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """A length-prefixed field (key, value, header key or value): its length (negative for null)
    and the position after it, which must not pass ``end``."""
    length, pos = _varint32(buf, pos, end)
    if length > 0:
        pos += length
        if pos > end:
            raise _Incomplete
    return length, pos


def wrap64(value: int) -> int:
    """Java ``long`` arithmetic: ``value`` wrapped into 64 bits."""
    if _I64_MIN <= value <= _I64_MAX:
        return value
    return ((value - _I64_MIN) & 0xFFFFFFFFFFFFFFFF) + _I64_MIN


def _invalid(position: int, index: int, bad_total: int, message: str) -> WalkResult:
    return WalkResult(position, index, bad_total, INVALID, message)


def walk_records_python(
    buf: bytes | bytearray | memoryview,
    pos: int,
    end: int,
    final: bool,
    index: int,
    bad_total: int,
    bad: list[tuple[int, int, int]],
    spec: WalkSpec,
) -> WalkResult:
    """Walk the records in ``buf[pos:end]``, starting with the batch's record ``index``.

    ``final``: no byte of the batch follows ``end`` (an uncompressed batch, or the
    last chunk of a compressed one); otherwise a record cut at ``end`` is left for
    the next call. Appends to ``bad`` (up to ``spec.errors_max`` entries) and
    returns the state to resume with; the failure, if any, with its message.
    """
    count = spec.records_count
    while index < count:
        start = pos
        try:
            length, pos = _varint32(buf, pos, end)
        except _Incomplete:
            if not final:
                return WalkResult(start, index, bad_total, OK, "")
            if start == end:
                message = f"the batch ends after {index} of its {count} records"
                return _invalid(start, index, bad_total, message)
            message = f"record {index} of {count}: the batch ends inside its length"
            return _invalid(start, index, bad_total, message)
        except ValueError:
            return _invalid(start, index, bad_total, f"record {index}: its length varint is too long")
        if length < 0:
            return _invalid(start, index, bad_total, f"record {index}: negative length {length}")
        if length > spec.record_max:
            message = f"record {index} declares {length} bytes, more than the {spec.record_max} allowed"
            return WalkResult(start, index, bad_total, TOO_LARGE, message)
        body_end = pos + length
        if body_end > end:
            if final:
                message = f"record {index} declares {length} bytes, only {end - pos} remain in the batch"
                return _invalid(start, index, bad_total, message)
            return WalkResult(start, index, bad_total, OK, "")
        try:
            if pos >= body_end:
                raise _Incomplete
            pos += 1  # attributes: unused in v2
            ts_delta, pos = _varint64(buf, pos, body_end)
            offset_delta, pos = _varint32(buf, pos, body_end)
            if offset_delta != index:
                message = f"record {index} has offset delta {offset_delta}, expected {index}"
                return _invalid(start, index, bad_total, message)
            key_length, pos = _skip_field(buf, pos, body_end)
            _value_length, pos = _skip_field(buf, pos, body_end)
            headers, pos = _varint32(buf, pos, body_end)
            if headers < 0 or headers > body_end - pos:
                return _invalid(start, index, bad_total, f"record {index}: invalid header count {headers}")
            for _ in range(headers):
                header_key_length, pos = _skip_field(buf, pos, body_end)
                if header_key_length < 0:
                    return _invalid(start, index, bad_total, f"record {index}: a header key is null")
                _header_value_length, pos = _skip_field(buf, pos, body_end)
        except _Incomplete:
            message = f"record {index}: its fields run past its length {length}"
            return _invalid(start, index, bad_total, message)
        except ValueError:
            return _invalid(start, index, bad_total, f"record {index}: a varint is too long")
        if pos != body_end:
            message = f"record {index} declares {length} bytes but its fields take {pos - body_end + length}"
            return _invalid(start, index, bad_total, message)
        kind = 0
        timestamp = spec.timestamp_override if spec.use_override else wrap64(spec.base_timestamp + ts_delta)
        if spec.compacted and key_length < 0:
            kind = NO_KEY
        elif spec.timestamp_mode == TIMESTAMPS_IN_RANGE:
            if timestamp == NO_TIMESTAMP:
                if spec.use_override:
                    kind = LOG_APPEND_TIME_FROM_PRODUCER
            elif timestamp < spec.ts_low or timestamp > spec.ts_high:
                kind = TIMESTAMP_OUT_OF_RANGE
        elif spec.timestamp_mode == TIMESTAMPS_ALL_BAD:
            kind = LOG_APPEND_TIME_FROM_PRODUCER
        if kind:
            if bad_total < spec.errors_max:
                bad.append((index, kind, timestamp))
            bad_total += 1
        index += 1
    if pos < end:
        message = f"{end - pos} bytes follow the last of the batch's {count} records"
        return _invalid(pos, index, bad_total, message)
    return WalkResult(pos, index, bad_total, OK, "")


def _native() -> Walker | None:
    try:
        from reference_impl.protocol import _record_walk  # type: ignore[attr-defined, unused-ignore]
    except ImportError:
        return None
    native: Callable[..., tuple[int, int, int, int, str]] = _record_walk.walk

    def walk_records_native(*args: Any) -> WalkResult:
        return WalkResult(*native(*args))

    walk_records_native.__doc__ = walk_records_python.__doc__
    return walk_records_native


NATIVE: Walker | None = _native()
"""The C walker, or None when the extension was not built here."""

walk_records: Walker = walk_records_python


def select_walker(name: str) -> str:
    """Use ``"python"`` or ``"native"`` (``"auto"``: native when built) from now on; returns the one chosen.

    ``KH_RECORD_WALKER`` in the environment chooses at import, so a broker
    process can be run on the reference walker."""
    global walk_records
    if name == "python" or (name == "auto" and NATIVE is None):
        walk_records = walk_records_python
        return "python"
    if NATIVE is None:
        raise RuntimeError("the native record walker (_record_walk) was not built: pip install -e .")
    if name not in ("native", "auto"):
        raise ValueError(f"unknown record walker {name!r}: python, native or auto")
    walk_records = NATIVE
    return "native"


def active_walker() -> str:
    return "python" if walk_records is walk_records_python else "native"


select_walker(os.environ.get("KH_RECORD_WALKER", "auto"))
