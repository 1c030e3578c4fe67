"""The record walk: the C walker agrees with the Python reference on every input, and the walk
gives the same verdict however its input is cut into chunks.

The produce path validates every record of every batch with the C walker (``_record_walk.c``);
``record_walk.walk_records_python`` is the readable reference for it. These properties run both on
valid batches of every shape (null and empty keys and values, headers, timestamps either side of
the window, any record count) and on mutated ones (bytes flipped, inserted, deleted, the batch cut
short), with the topic rules varied too, and require the same answer: position, record index,
failure code and message, and the records named.
"""

from __future__ import annotations

import itertools

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from reference_impl.protocol import record_walk
from reference_impl.protocol.record_set import encode_record
from reference_impl.protocol.record_walk import WalkResult, WalkSpec, walk_records_python

pytestmark = pytest.mark.skipif(record_walk.NATIVE is None, reason="the C walker is not built here")

_bytes = st.one_of(st.none(), st.binary(max_size=40))
_header = st.tuples(st.text(max_size=8), _bytes)
_record = st.tuples(st.integers(-(2**40), 2**40), _bytes, _bytes, st.lists(_header, max_size=3))


@st.composite
def record_sections(draw: st.DrawFn) -> tuple[bytes, int]:
    """The record section of a batch (what follows the header, uncompressed) and its record count."""
    records = draw(st.lists(_record, min_size=1, max_size=12))
    section = b"".join(
        encode_record(i, ts, key, value, headers) for i, (ts, key, value, headers) in enumerate(records)
    )
    return section, len(records)


_ODD_VARINTS = [b"\xff\xff\xff\xff\x7f", b"\x80" * 6, b"\x01", b"\xff\xff\xff\xff\x0f"]
"""Truncating, too long, negative (-1) and 2^31-wide varints."""


@st.composite
def mutated(draw: st.DrawFn, section: bytes) -> bytes:
    out = bytearray(section)
    for _ in range(draw(st.integers(0, 4))):
        kind = draw(st.sampled_from(["flip", "insert", "delete", "cut", "varint"]))
        at = draw(st.integers(0, max(0, len(out) - 1)))
        if kind == "flip" and out:
            out[at] ^= draw(st.integers(1, 255))
        elif kind == "insert":
            out[at:at] = draw(st.binary(min_size=1, max_size=4))
        elif kind == "delete" and out:
            del out[at : at + draw(st.integers(1, 4))]
        elif kind == "cut":
            del out[at:]
        else:  # a long or negative varint where a length was
            out[at:at] = draw(st.sampled_from(_ODD_VARINTS))
    return bytes(out)


@st.composite
def specs(draw: st.DrawFn, count: int) -> WalkSpec:
    low = draw(st.integers(-(2**40), 2**40))
    return WalkSpec(
        records_count=draw(st.sampled_from([count, count, count - 1, count + 1, 0])),
        base_timestamp=draw(st.sampled_from([0, -1, 2**62, -(2**63)])),
        use_override=draw(st.booleans()),
        timestamp_override=draw(st.sampled_from([-1, 0, 2**41])),
        timestamp_mode=draw(st.sampled_from([0, 1, 2])),
        ts_low=low,
        ts_high=low + draw(st.integers(0, 2**41)),
        compacted=draw(st.booleans()),
        record_max=draw(st.sampled_from([1 << 31, 16, 60])),
        errors_max=draw(st.sampled_from([1000, 2])),
    )


def _walk_in_chunks(
    walker: record_walk.Walker, section: bytes, cuts: list[int], spec: WalkSpec
) -> tuple[list[WalkResult], list[tuple[int, int, int]]]:
    """Feed ``section`` to ``walker`` cut at ``cuts``, as the produce path feeds inflated chunks."""
    bad: list[tuple[int, int, int]] = []
    steps: list[WalkResult] = []
    pending = bytearray()
    index = bad_total = 0
    edges = [0, *sorted(c % (len(section) + 1) for c in cuts), len(section)]
    for lo, hi in itertools.pairwise(edges):
        pending += section[lo:hi]
        result = walker(pending, 0, len(pending), False, index, bad_total, bad, spec)
        steps.append(result)
        if result.failure:
            return steps, bad
        index, bad_total = result.next_record, result.bad_total
        del pending[: result.position]
    steps.append(walker(pending, 0, len(pending), True, index, bad_total, bad, spec))
    return steps, bad


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_native_and_python_walkers_agree(data: st.DataObject) -> None:
    """Every call of the C walker returns what the Python reference returns, on valid and mutated
    sections, whole and in chunks."""
    section, count = data.draw(record_sections())
    if data.draw(st.booleans()):
        section = data.draw(mutated(section))
    spec = data.draw(specs(count))
    cuts = data.draw(st.lists(st.integers(0, 10_000), max_size=4))
    assert record_walk.NATIVE is not None
    expected = _walk_in_chunks(walk_records_python, section, cuts, spec)
    assert _walk_in_chunks(record_walk.NATIVE, section, cuts, spec) == expected


@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_the_verdict_does_not_depend_on_the_chunking(data: st.DataObject) -> None:
    """A record cut at a chunk edge is resumed, not refused: the failure code, the records walked and
    the records named are those of the whole section walked at once."""
    section, count = data.draw(record_sections())
    if data.draw(st.booleans()):
        section = data.draw(mutated(section))
    spec = data.draw(specs(count))._replace(record_max=1 << 31)
    cuts = data.draw(st.lists(st.integers(0, 10_000), min_size=1, max_size=6))
    whole_bad: list[tuple[int, int, int]] = []
    whole = walk_records_python(section, 0, len(section), True, 0, 0, whole_bad, spec)
    steps, bad = _walk_in_chunks(walk_records_python, section, cuts, spec)
    last = steps[-1]
    assert (last.failure, last.next_record, last.bad_total, bad) == (
        whole.failure,
        whole.next_record,
        whole.bad_total,
        whole_bad,
    )


def test_walker_selection() -> None:
    """``KH_RECORD_WALKER``/``select_walker`` choose the implementation; the Python one is always there."""
    before = record_walk.active_walker()
    try:
        assert record_walk.select_walker("python") == "python"
        assert record_walk.walk_records is walk_records_python
        assert record_walk.select_walker("native") == "native"
        assert record_walk.walk_records is record_walk.NATIVE
        with pytest.raises(ValueError):
            record_walk.select_walker("fast")
    finally:
        record_walk.select_walker(before)


def test_native_walker_refuses_a_range_outside_its_buffer() -> None:
    """The C walker checks the range it is given before it reads a byte."""
    assert record_walk.NATIVE is not None
    spec = WalkSpec(1, 0, False, 0, 0, 0, 0, False, 1 << 31, 10)
    with pytest.raises(ValueError):
        record_walk.NATIVE(b"abc", 0, 10, True, 0, 0, [], spec)
    with pytest.raises(ValueError):
        record_walk.NATIVE(b"abc", 2, 1, True, 0, 0, [], spec)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data(), codec=st.sampled_from([0, 1, 2, 3, 4]))
def test_walkers_agree_on_compressed_batches(data: st.DataObject, codec: int) -> None:
    """Through the produce path's inflation (every codec), with the payload mutated before or after
    compression, both walkers give the same verdict."""
    from reference_impl.core.validation import _walk_inflated
    from reference_impl.protocol.inflate import inflation_bound
    from reference_impl.protocol.record_set import compress

    section, count = data.draw(record_sections())
    if data.draw(st.booleans()):
        section = data.draw(mutated(section))
    payload = compress(codec, section)
    if data.draw(st.booleans()):
        payload = data.draw(mutated(payload))
    spec = data.draw(specs(count))
    answers = []
    before = record_walk.active_walker()
    try:
        for walker in ("python", "native"):
            record_walk.select_walker(walker)
            bad: list[tuple[int, int, int]] = []
            try:
                bound = inflation_bound(count, 1 << 20)
                result: object = _walk_inflated(memoryview(payload), codec, bound, bad, spec)
            except Exception as exc:  # the codec refusing the payload: both must see the same
                result = repr(exc)
            answers.append((result, bad))
    finally:
        record_walk.select_walker(before)
    assert answers[0] == answers[1]
