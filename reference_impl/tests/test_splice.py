"""Zero-copy Fetch answers: placeholders are replaced wherever the answer put them (issue 17, item 10).

A Fetch request may list a topic more than once when its partitions interleave with another
topic's (librdkafka does, for a consumer of many topics); the answer groups partitions by topic
(FetchResponse.json: ``responses`` is one entry per topic), so the file regions the handler
collected in request order are in another order than their placeholders in the encoded answer.
"""

from __future__ import annotations

from typing import Any

import pytest

from reference_impl import defects
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.codec import decode_response, encode_response_spliced
from reference_impl.protocol.frames import FrameDecoder

MARK = b"\xfe\xedKH"


def _partition(index: int, records: bytes) -> dict[str, Any]:
    return {
        "partition_index": index,
        "error_code": 0,
        "high_watermark": 10,
        "last_stable_offset": 10,
        "log_start_offset": 0,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": records,
    }


Splices = dict[bytes, tuple[tuple[bytes, ...], int]]


def _interleaved_answer(version: int) -> tuple[Any, Splices, dict[tuple[str, int], bytes]]:
    """An answer for (a,0) (b,0) (a,1) (b,1) (c,0): grouped by topic, splices in request order."""
    requested = [("a", 0), ("b", 0), ("a", 1), ("b", 1), ("c", 0)]
    tokens = {key: MARK + bytes([i]) * 12 for i, key in enumerate(requested)}
    regions = {(t, p): (f"{t}{p}-first|".encode(), f"{t}{p}-second".encode()) for t, p in requested}
    splices: Splices = {tokens[key]: (regions[key], sum(map(len, regions[key]))) for key in requested}
    responses = [
        {"topic": topic, "partitions": [_partition(p, tokens[(t, p)]) for t, p in requested if t == topic]}
        for topic in ("a", "b", "c")
    ]
    plain = {"throttle_time": 0, "error_code": 0, "responses": responses}
    body: Any = build(response_class(1, version), plain)
    return body, splices, {key: b"".join(parts) for key, parts in regions.items()}


@pytest.mark.parametrize("version", [4, 11, 12])
def test_placeholders_out_of_request_order_are_all_replaced(version: int) -> None:
    """Legacy (v4, v11: int32 length) and compact (v12: varint length) records fields alike."""
    body, splices, expected = _interleaved_answer(version)
    parts = encode_response_spliced(1, version, 42, body, splices)
    (frame,) = FrameDecoder().feed(b"".join(parts))
    answer: Any = decode_response(1, version, frame)[1]
    got = {(t.topic, p.partition_index): bytes(p.records) for t in answer.responses for p in t.partitions}
    assert got == expected
    assert not any(MARK in bytes(part) for part in parts)


def test_the_regions_are_passed_through_as_they_are() -> None:
    """Zero-copy: the parts given for a placeholder appear in the frame's parts themselves, not copied."""
    body, splices, _expected = _interleaved_answer(12)
    parts = encode_response_spliced(1, 12, 42, body, splices)
    for regions, _length in splices.values():
        for region in regions:
            assert any(part is region for part in parts)


def test_seeded_defect_searches_forward_only_and_fails() -> None:
    body, splices, _expected = _interleaved_answer(12)
    refused = pytest.raises(ValueError, match="placeholder not found")
    with defects.seeded(defects.FETCH_PLACEHOLDER_ORDER), refused:
        encode_response_spliced(1, 12, 42, body, splices)


def test_a_placeholder_missing_from_the_answer_is_an_error() -> None:
    body, splices, _expected = _interleaved_answer(12)
    splices[MARK + b"\x99" * 12] = ((b"x",), 1)
    with pytest.raises(ValueError, match="placeholder not found"):
        encode_response_spliced(1, 12, 42, body, splices)
