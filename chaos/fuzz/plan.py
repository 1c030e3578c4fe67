"""The request stream of a run: case ``i`` of seed ``s`` is the same bytes on every run.

Each case draws from its own :class:`random.Random` seeded by ``(seed, i)``, so a case can be
rebuilt alone (a diff sends case ``i`` to two targets; a report names the case), and the stream
does not depend on which connection sent what first. It depends on the target only through what
it advertises (ApiVersions) and the ids of the fuzz topics, both read once at the start.

Which requests: every API key and version the target advertises and kio has a schema for, plus
some it does not advertise (the version after its highest; API keys no one defines), each sent
valid, mutated at the field level, or mutated at the byte level, in the given ratio.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from reference_impl.protocol.apis import (
    API_NAMES,
    UnknownApiError,
    request_class,
    response_class,
    schema_versions,
)

from . import mutate
from .encode import Encoded, encode_request
from .generate import Context, Generator

UNKNOWN_KEYS = (-1, 93, 94, 100, 127, 1000, 0x7FFF)


@dataclass(frozen=True, slots=True)
class Case:
    """One request to send: its frame (size prefix included) and how it was made."""

    index: int
    api_key: int
    version: int
    """What the header says (after a version swap, not the body's schema)."""
    frame: bytes
    kind: str
    """``valid``, ``field``, ``byte``, ``size``, ``unknown-key``, ``version+1``, ``version-swap``."""
    detail: str = ""

    @property
    def api(self) -> str:
        return api_label(self.api_key)


def api_label(api_key: int) -> str:
    return API_NAMES.get(api_key, f"key{api_key}")


@dataclass(frozen=True, slots=True)
class Ratios:
    valid: float = 0.3
    field: float = 0.45
    """The rest is byte-level."""
    unadvertised: float = 0.05
    """Unknown keys and versions past the advertised maximum."""
    size: float = 0.01


def usable_versions(advertised: Mapping[int, tuple[int, int]], apis: Iterable[int] | None = None
                    ) -> dict[int, list[int]]:
    """Per advertised API key, the versions both the target advertises and kio knows."""
    wanted = set(apis) if apis is not None else None
    out: dict[int, list[int]] = {}
    for key, (lo, hi) in sorted(advertised.items()):
        if key not in API_NAMES or (wanted is not None and key not in wanted):
            continue
        known = schema_versions(key)
        versions = [v for v in range(max(lo, known.start), min(hi, known.stop - 1) + 1)]
        if versions:
            out[key] = versions
    return out


class CasePlan:
    """Builds case ``i`` of a seeded run for one target's advertised versions."""

    def __init__(self, seed: int, advertised: Mapping[int, tuple[int, int]], ctx: Context,
                 apis: Iterable[int] | None = None, ratios: Ratios | None = None) -> None:
        self.seed = seed
        self.advertised = dict(advertised)
        self.ctx = ctx
        self.versions = usable_versions(advertised, apis)
        if not self.versions:
            raise ValueError("the target advertises none of the requested APIs that kio knows")
        self.keys = sorted(self.versions)
        self.ratios = ratios or Ratios()

    def preload(self) -> None:
        """Import every request and response class the run can name (kio loads them lazily, at
        seconds in all; a run should not pay that while it measures its rate)."""
        for key, versions in self.versions.items():
            for version in (*versions, versions[-1] + 1, versions[-1] + 2):
                for load in (request_class, response_class):
                    with contextlib.suppress(UnknownApiError):
                        load(key, version)

    def rng(self, index: int) -> random.Random:
        return random.Random(f"kh-fuzz:{self.seed}:{index}")

    def case(self, index: int) -> Case:
        rng = self.rng(index)
        correlation_id = index & 0x7FFFFFFF
        r = rng.random()
        gen = Generator(rng, self.ctx)
        if r < self.ratios.unadvertised / 2:
            return self._unknown_key(index, rng, gen, correlation_id)
        key = rng.choice(self.keys)
        if r < self.ratios.unadvertised:
            return self._next_version(index, key, rng, gen, correlation_id)
        version = rng.choice(self.versions[key])
        enc = encode_request(request_class(key, version), key, version,
                             gen.value(request_class(key, version)), correlation_id)
        mode = rng.random()
        if mode < self.ratios.valid:
            return Case(index, key, version, enc.frame, "valid")
        if mode < self.ratios.valid + self.ratios.size:
            frame, what = mutate.size_prefix(enc.frame[4:], rng)
            return Case(index, key, version, frame, "size", what)
        if mode < self.ratios.valid + self.ratios.field:
            return self._field(index, key, version, enc, rng)
        other = self._other_payload(rng, gen)
        payload, done = mutate.mutate_bytes(enc.frame[4:], rng, other)
        return Case(index, key, version, mutate.frame_of(payload), "byte", ", ".join(done))

    def _field(self, index: int, key: int, version: int, enc: Encoded, rng: random.Random) -> Case:
        if rng.random() < 0.08:  # a version swap: this body under another version of the same API
            known = schema_versions(key)
            other = rng.choice([v for v in range(known.start, known.stop + 1) if v != version] or [version])
            payload = mutate.relabel(enc.frame[4:], None, other)
            swap = f"v{version} body as v{other}"
            return Case(index, key, other, mutate.frame_of(payload), "version-swap", swap)
        payload, done = mutate.mutate_fields(enc, rng, rounds=1 if rng.random() < 0.8 else 2)
        return Case(index, key, version, mutate.frame_of(payload), "field", "; ".join(done))

    def _other_payload(self, rng: random.Random, gen: Generator) -> bytes | None:
        if rng.random() < 0.7:
            return None
        key = rng.choice(self.keys)
        version = rng.choice(self.versions[key])
        cls = request_class(key, version)
        return encode_request(cls, key, version, gen.value(cls), 0).frame[4:]

    def _unknown_key(self, index: int, rng: random.Random, gen: Generator, correlation_id: int) -> Case:
        key = rng.choice(UNKNOWN_KEYS)
        version = rng.choice((0, 1, 3))
        body = rng.randbytes(rng.randrange(0, 24))
        head = b"\x00\x00\x00\x00" + correlation_id.to_bytes(4, "big") + b"\x00\x07kh-fuzz"
        payload = mutate.relabel(head + body, key, version)
        return Case(index, key, version, mutate.frame_of(payload), "unknown-key")

    def _next_version(
        self, index: int, key: int, rng: random.Random, gen: Generator, correlation_id: int
    ) -> Case:
        """The version after the advertised maximum: its own schema if kio has one, else the max's body."""
        top = self.advertised[key][1]
        version = top + rng.choice((1, 1, 2))
        try:
            cls = request_class(key, version)
        except UnknownApiError:
            cls = request_class(key, self.versions[key][-1])
        enc = encode_request(cls, key, version, gen.value(cls), correlation_id)
        return Case(index, key, version, enc.frame, "version+1")
