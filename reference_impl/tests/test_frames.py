"""Framing: any split of a byte stream yields the same frames; bad sizes are refused early."""

from __future__ import annotations

import itertools
import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.protocol.frames import FrameDecoder, FrameSizeError, frame


@given(
    payloads=st.lists(st.binary(max_size=300), max_size=20),
    cuts=st.lists(st.integers(min_value=0, max_value=8000), max_size=30),
)
def test_frames_survive_any_split(payloads: list[bytes], cuts: list[int]) -> None:
    stream = b"".join(frame(p) for p in payloads)
    points = sorted({c % (len(stream) + 1) for c in cuts} | {0, len(stream)})
    decoder = FrameDecoder()
    out: list[bytes] = []
    for a, b in itertools.pairwise(points):
        out.extend(decoder.feed(stream[a:b]))
    assert out == payloads
    assert decoder.buffered_bytes == 0


def test_oversized_frame_rejected_from_its_prefix_alone() -> None:
    decoder = FrameDecoder(max_frame_bytes=1000)
    with pytest.raises(FrameSizeError) as info:
        decoder.feed(struct.pack(">i", 2**31 - 1))
    assert info.value.size == 2**31 - 1


def test_negative_frame_size_rejected() -> None:
    with pytest.raises(FrameSizeError):
        FrameDecoder().feed(struct.pack(">i", -5) + b"xx")


def test_frame_at_the_limit_is_accepted() -> None:
    decoder = FrameDecoder(max_frame_bytes=10)
    assert decoder.feed(frame(b"0123456789")) == [b"0123456789"]
