"""Deterministic records: record ``seq`` of a dataset is a pure function of (seed, seq).

Why deterministic: any task on any executor can build its share of the data
without a shuffle, a rerun with the same seed sends the same bytes, and the
verifier can judge a value on its own, without a copy of what was sent.

Value layout (ASCII, ``|``-separated, the filler never contains ``|``)::

    KH1|<generator id>|<seq>|<crc32 as 8 hex digits>|<filler>

The checksum is CRC-32 (zlib's, the same function as Spark SQL's ``crc32``)
over ``<generator id>|<seq>|<key>|<filler>``. Covering the key means a value
that turns up under another key is caught as corrupt, and using Spark's own
function lets the verifier check it as plain DataFrame work.

Keys are ``k<index>``, the index drawn from a bounded Zipf law (exponent
``key_skew``, 0 = uniform) over ``key_space`` keys. Randomness comes from
splitmix64 of (seed, seq), so no per-record random generator is built.
"""

from __future__ import annotations

import bisect
import math
import random
import string
import zlib
from dataclasses import dataclass
from functools import lru_cache

from .config import DatasetSpec

MAGIC = "KH1"
SEPARATOR = "|"
FILLER_ALPHABET = string.ascii_letters + string.digits
_FILLER_WINDOW = 65_536
_MASK64 = (1 << 64) - 1


def splitmix64(x: int) -> int:
    """One step of splitmix64: a cheap, well-mixed 64-bit hash (Vigna)."""
    x = (x + 0x9E3779B97F4A7C15) & _MASK64
    x = ((x ^ (x >> 30)) * 0xBF58476D1CE4E5B9) & _MASK64
    x = ((x ^ (x >> 27)) * 0x94D049BB133111EB) & _MASK64
    return x ^ (x >> 31)


def checksum(generator_id: str, seq: int, key: bytes, filler: bytes) -> int:
    """CRC-32 over the fields a value must keep intact (see module docstring)."""
    return zlib.crc32(f"{generator_id}|{seq}|".encode() + key + b"|" + filler)


def encode_value(generator_id: str, seq: int, key: bytes, filler: bytes) -> bytes:
    crc = checksum(generator_id, seq, key, filler)
    return f"{MAGIC}|{generator_id}|{seq}|{crc:08x}|".encode() + filler


@dataclass(frozen=True, slots=True)
class ParsedValue:
    generator_id: str
    seq: int
    stored_checksum: int
    filler: bytes


def parse_value(value: bytes | None) -> ParsedValue | None:
    """The fields of a value in this module's layout, or None when it is not one."""
    if value is None:
        return None
    parts = value.split(b"|", 4)
    if len(parts) != 5 or parts[0] != MAGIC.encode():
        return None
    try:
        return ParsedValue(parts[1].decode(), int(parts[2]), int(parts[3], 16), parts[4])
    except (UnicodeDecodeError, ValueError):
        return None


def is_intact(key: bytes | None, value: bytes | None) -> bool:
    """True when the value parses and its checksum matches its fields and the key."""
    parsed = parse_value(value)
    if parsed is None or key is None:
        return False
    return checksum(parsed.generator_id, parsed.seq, key, parsed.filler) == parsed.stored_checksum


@lru_cache(maxsize=8)
def _zipf_cdf(key_space: int, skew: float) -> tuple[float, ...]:
    if skew == 0.0:
        return ()
    weights = [1.0 / (rank + 1) ** skew for rank in range(key_space)]
    total = math.fsum(weights)
    cumulative: list[float] = []
    running = 0.0
    for weight in weights:
        running += weight
        cumulative.append(running / total)
    return tuple(cumulative)


@lru_cache(maxsize=8)
def _filler_block(seed: int, length: int) -> bytes:
    rng = random.Random(seed)
    return "".join(rng.choices(FILLER_ALPHABET, k=length)).encode()


def _unit(h: int) -> float:
    """A 64-bit hash as a float in [0, 1)."""
    return (h >> 11) / float(1 << 53)


class RecordGenerator:
    """Builds record ``seq`` of one dataset; cheap to construct once per task."""

    def __init__(self, spec: DatasetSpec) -> None:
        self.spec = spec
        self._seed_mix = splitmix64(spec.seed & _MASK64)
        self._cdf = _zipf_cdf(spec.key_space, spec.key_skew)
        self._max_filler = spec.value_size * (10 if spec.value_size_distribution == "exponential" else 2)
        self._block = _filler_block(spec.seed, _FILLER_WINDOW + self._max_filler)
        self._prefix = f"{MAGIC}|{spec.generator_id}|"

    def key_index(self, seq: int) -> int:
        h = splitmix64(self._seed_mix ^ seq)
        if not self._cdf:
            return h % self.spec.key_space
        return min(bisect.bisect_right(self._cdf, _unit(h)), self.spec.key_space - 1)

    def value_size(self, seq: int) -> int:
        spec = self.spec
        if spec.value_size_distribution == "fixed":
            return spec.value_size
        h = splitmix64(self._seed_mix ^ seq ^ 0x5A5A5A5A5A5A5A5A)
        if spec.value_size_distribution == "uniform":
            return spec.value_size // 2 + h % (spec.value_size + 1)
        size = -spec.value_size * math.log1p(-_unit(h))
        return max(1, min(int(size), 10 * spec.value_size))

    def record(self, seq: int) -> tuple[bytes, bytes]:
        """(key, value) of record ``seq``; the value is ``value_size(seq)`` bytes or its header."""
        key = b"k%d" % self.key_index(seq)
        gen = self.spec.generator_id
        head_len = len(self._prefix) + len(str(seq)) + 10  # seq, "|", 8 hex digits, "|"
        filler_len = max(0, min(self.value_size(seq) - head_len, self._max_filler))
        start = splitmix64(self._seed_mix + seq) % _FILLER_WINDOW
        filler = self._block[start : start + filler_len]
        crc = zlib.crc32(f"{gen}|{seq}|".encode() + key + b"|" + filler)
        return key, f"{self._prefix}{seq}|{crc:08x}|".encode() + filler
