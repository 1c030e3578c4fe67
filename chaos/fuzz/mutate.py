"""Mutations of an encoded request: at the sites of its fields, in its header, and byte by byte.

Field-level mutations change one value the encoder recorded (:class:`~chaos.fuzz.encode.Site`)
to something a careless reader trusts: a length or count past the frame (Kafka's generated
readers refuse "a collection of size N, but there are only M bytes remaining",
``generator/src/main/java/org/apache/kafka/message/MessageDataGenerator.java``), a null where the
schema allows none, an extreme integer, an over-long varint, a truncated body, a dropped or
doubled field, an unknown tagged field (KIP-482: a reader skips it), a header whose version or
API key names another schema than the body's. Byte-level mutations (flips, interesting bytes,
insertions, deletions, a splice with another request) find what the structure does not suggest.

Every mutator is a pure function of its input and a seeded :class:`random.Random`. The frame's
size prefix is recomputed after the payload changes, so a mutated request is still one whole
frame; only :func:`size_prefix` lies about it, on purpose.
"""

from __future__ import annotations

import random
import struct
from collections.abc import Callable

from .encode import Encoded, Site, uvarint

_I32 = struct.Struct(">i")
MAX_FRAME = 1 << 20
"""No mutation makes a frame longer than this (the fuzzer's own allocations stay bounded)."""


def frame_of(payload: bytes | bytearray) -> bytes:
    """``payload`` with its size prefix."""
    return _I32.pack(len(payload)) + bytes(payload)


def _int_bytes(value: int, width: int, signed: bool) -> bytes:
    bits = width * 8
    value &= (1 << bits) - 1
    if signed and value >= 1 << (bits - 1):
        value -= 1 << bits
    return value.to_bytes(width, "big", signed=signed)


def _boundaries(width: int, signed: bool) -> tuple[int, ...]:
    bits = width * 8
    if signed:
        top = (1 << (bits - 1)) - 1
        return (-(top + 1), -(top + 1) + 1, -2, -1, 0, 1, top - 1, top)
    top = (1 << bits) - 1
    return (0, 1, top - 1, top, top >> 1, (top >> 1) + 1)


def _length_values(site: Site, payload: bytes) -> tuple[int, ...]:
    """New lengths for a length or count site (-1 is a null; legacy lengths may go below)."""
    left = len(payload) - site.end
    base = (-1, 0, 1, left, left + 1, 0x7FFF, 0x8000, 0x7FFFFFFF, 0xFFFFFFFE, 0xFFFFFFFF, 1 << 30)
    return base if site.width == 0 else (*base, -2, -0x8000, -0x80000000)


def _encode_length(site: Site, value: int) -> bytes:
    if site.width == 0:
        return uvarint(value + 1)
    return _int_bytes(value, site.width, True)


def _replace(payload: bytes, site: Site, new: bytes) -> bytes:
    return payload[: site.start] + new + payload[site.end :]


def _pick(rng: random.Random, sites: tuple[Site, ...], *kinds: str, after: int = 0) -> Site | None:
    chosen = [s for s in sites if s.kind in kinds and s.start >= after]
    return rng.choice(chosen) if chosen else None


# -- field level -------------------------------------------------------------------------------------


def length(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    site = _pick(rng, enc.sites, "length", "count")
    if site is None:
        return None
    value = rng.choice(_length_values(site, payload))
    return _replace(payload, site, _encode_length(site, value)), f"{site.kind}={value} at {site.path}"


def overlong_varint(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    """A compact length written in more than 5 bytes, or with a continuation bit and no end."""
    site = _pick(rng, enc.sites, "length", "count", "tags")
    if site is None or site.width != 0:
        return None
    new = rng.choice((b"\xff\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x00", b"\xff\xff\xff\xff\x0f"))
    return _replace(payload, site, new), f"varint {new.hex()} at {site.path}"


def null(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    site = _pick(rng, enc.sites, "length", "count", "marker")
    if site is None:
        return None
    new = b"\xff" if site.kind == "marker" else _encode_length(site, -1)
    return _replace(payload, site, new), f"null at {site.path}"


def integer(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    site = _pick(rng, enc.sites, "int", "marker", after=enc.body_start)
    if site is None:
        return None
    width = site.end - site.start
    value = rng.choice(_boundaries(width, site.signed)) if rng.random() < 0.85 else rng.getrandbits(width * 8)
    return _replace(payload, site, _int_bytes(value, width, site.signed)), f"int={value} at {site.path}"


def truncate(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    if len(payload) <= 8:
        return None
    cuts = [s.start for s in enc.sites if s.start > 8]
    cuts += [s.end for s in enc.sites if 8 < s.end < len(payload)]
    at = rng.choice(cuts) if cuts and rng.random() < 0.7 else rng.randrange(8, len(payload))
    return payload[:at], f"truncate at {at}/{len(payload)}"


def drop_field(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    site = _pick(rng, enc.sites, "field", after=enc.body_start)
    if site is None:
        return None
    return payload[: site.start] + payload[site.end :], f"drop {site.path}"


def double_field(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    site = _pick(rng, enc.sites, "field", after=enc.body_start)
    if site is None or len(payload) + site.end - site.start > MAX_FRAME:
        return None
    return payload[: site.end] + payload[site.start :], f"double {site.path}"


def unknown_tag(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    """An unknown tagged field in an empty section, or a section count no bytes can hold."""
    site = _pick(rng, enc.sites, "tags")
    if site is None:
        return None
    if payload[site.start : site.end] == b"\x00" and rng.random() < 0.7:
        size = rng.choice((0, 1, 3, 200))
        tag = rng.choice((7, 99, 1000, 0x7FFFFFFF))
        declared = size if rng.random() < 0.7 else rng.choice((size + 1, 0x7FFFFFF0, 0xFFFFFFFF))
        new = uvarint(1) + uvarint(tag) + uvarint(declared) + rng.randbytes(size)
        return _replace(payload, site, new), f"unknown tag {tag} size {declared}/{size} at {site.path}"
    count = rng.choice((2, 0x7FFFFFFF, 0xFFFFFFFF))
    return _replace(payload, site, uvarint(count)), f"tag count {count} at {site.path}"


def header(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
    """The header's correlation id, client id length or tagged fields."""
    choice = rng.randrange(3)
    if choice == 0:
        value = rng.choice((-1, 0, 0x7FFFFFFF, -0x80000000))
        return payload[:4] + _I32.pack(value) + payload[8:], f"correlation id {value}"
    if choice == 1:
        value = rng.choice((-2, -0x8000, 0x7FFF, 1000, 0))
        return payload[:8] + _int_bytes(value, 2, True) + payload[10:], f"client id length {value}"
    at = enc.body_start - 1
    if payload[at : at + 1] != b"\x00":  # header v1: no tagged fields section
        return None
    new = rng.choice((uvarint(0xFFFFFFFF), uvarint(1) + uvarint(0) + uvarint(100), uvarint(1) + b"\x05\x01x"))
    return payload[:at] + new + payload[at + 1 :], f"header tags {new.hex()}"


def relabel(payload: bytes, api_key: int | None, version: int | None) -> bytes:
    """The same body under another API key and/or version in the header (a version swap)."""
    key = int.from_bytes(payload[0:2], "big", signed=True) if api_key is None else api_key
    ver = int.from_bytes(payload[2:4], "big", signed=True) if version is None else version
    return _int_bytes(key, 2, True) + _int_bytes(ver, 2, True) + payload[4:]


FieldMutator = Callable[[Encoded, bytes, random.Random], tuple[bytes, str] | None]


def _must_change(mutator: FieldMutator) -> FieldMutator:
    """A mutator that reports nothing done (None) rather than bytes equal to its input (an
    extreme integer the field already held, a null where there was one)."""

    def changed(enc: Encoded, payload: bytes, rng: random.Random) -> tuple[bytes, str] | None:
        result = mutator(enc, payload, rng)
        return None if result is None or result[0] == payload else result

    changed.__doc__ = mutator.__doc__
    return changed


FIELD_MUTATORS: dict[str, FieldMutator] = {
    name: _must_change(mutator)
    for name, mutator in {
        "length": length,
        "null": null,
        "integer": integer,
        "truncate": truncate,
        "overlong-varint": overlong_varint,
        "drop-field": drop_field,
        "double-field": double_field,
        "unknown-tag": unknown_tag,
        "header": header,
    }.items()
}
FIELD_WEIGHTS = {"length": 6, "null": 3, "integer": 5, "truncate": 3, "overlong-varint": 1, "drop-field": 2,
                 "double-field": 1, "unknown-tag": 2, "header": 1}


def mutate_fields(enc: Encoded, rng: random.Random, rounds: int = 1) -> tuple[bytes, list[str]]:
    """``enc``'s payload with ``rounds`` field-level mutations; the names of what was done.

    Sites are positions in the original payload, so only the first mutation is exact; a second
    one lands at the same offsets in shifted bytes, which is a byte-level mutation of its own.
    """
    payload = enc.frame[4:]
    done: list[str] = []
    names = list(FIELD_WEIGHTS)
    weights = list(FIELD_WEIGHTS.values())
    for _ in range(rounds):
        for _attempt in range(4):
            name = rng.choices(names, weights)[0]
            result = FIELD_MUTATORS[name](enc, payload, rng)
            if result is not None:
                payload, what = result
                done.append(f"{name}: {what}")
                break
    return payload, done


# -- byte level --------------------------------------------------------------------------------------

_INTERESTING = (b"\x00", b"\xff", b"\x7f", b"\x80", b"\xff\xff\xff\xff", b"\x7f\xff\xff\xff", b"\x80\x00")


def mutate_bytes(payload: bytes, rng: random.Random, other: bytes | None = None,
                 protect: int = 4) -> tuple[bytes, list[str]]:
    """One to three byte-level edits past the first ``protect`` bytes (the API key and version)."""
    data = bytearray(payload)
    done: list[str] = []
    for _ in range(rng.choice((1, 1, 2, 3))):
        op = rng.choice(("flip", "set", "insert", "delete", "splice", "repeat"))
        lo = min(protect, len(data))
        at = rng.randrange(lo, len(data)) if len(data) > lo else lo
        if op == "flip" and at < len(data):
            data[at] ^= 1 << rng.randrange(8)
        elif op == "set" and at < len(data):
            chunk = rng.choice(_INTERESTING)
            data[at : at + len(chunk)] = chunk
        elif op == "insert" and len(data) < MAX_FRAME:
            data[at:at] = rng.randbytes(rng.randrange(1, 17))
        elif op == "delete":
            del data[at : at + rng.randrange(1, 17)]
        elif op == "splice" and other is not None and len(other) > protect:
            cut = rng.randrange(protect, len(other))
            data[at:] = other[cut:]
        elif op == "repeat" and at < len(data) and len(data) < MAX_FRAME:
            piece = data[at : at + rng.randrange(1, 33)]
            data[at:at] = piece * rng.randrange(1, 4)
        else:
            continue
        done.append(f"{op}@{at}")
    return bytes(data[:MAX_FRAME]), done


def size_prefix(payload: bytes, rng: random.Random) -> tuple[bytes, str]:
    """A frame whose size prefix lies: negative, past any broker's limit, or short of the payload.

    Kafka refuses a negative size or one over ``socket.request.max.bytes`` and closes the
    connection (``clients/src/main/java/org/apache/kafka/common/network/NetworkReceive.java``).
    A short one makes the rest of the payload the start of a next frame.
    """
    value = rng.choice((-1, -0x80000000, 0x7FFFFFFF, 0x6400001, max(0, len(payload) - rng.randrange(1, 9))))
    return _I32.pack(value) + payload, f"size prefix {value} for {len(payload)} bytes"
