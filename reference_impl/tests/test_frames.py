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


@pytest.mark.parametrize("kind", [bytes, bytearray, memoryview])
def test_a_frame_spanning_many_chunks_of_any_buffer_type_comes_out_whole(kind: type) -> None:
    """A large answer arrives in many receive chunks (bytes from a socket, a memoryview of a
    reused buffer): the pieces are kept until the last one and the frame is exactly the payload."""
    payload = bytes(range(256)) * 400
    stream = frame(payload) + frame(b"next") + struct.pack(">i", 3)[:2]
    decoder = FrameDecoder()
    out: list[bytes] = []
    for start in range(0, len(stream), 997):
        reused = bytearray(stream[start : start + 997])
        out.extend(decoder.feed(kind(reused)))
        reused[:] = b"\0" * len(reused)  # the caller reuses its buffer: nothing may point into it
    assert out == [payload, b"next"]
    assert decoder.buffered_bytes == 2
