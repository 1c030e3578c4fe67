"""Plausible request values from the schema, driven by one seeded :class:`random.Random`.

Why not hypothesis strategies: ``strategy.example()`` is not reproducible, and a run must be
replayable from its seed alone. A walk over :func:`~chaos.fuzz.schema.layout` with a seeded
``Random`` is deterministic and fast enough to generate thousands of requests a second.

Why plausible: a request made of random values is refused at its first field and never reaches
the code behind it. Values come from what the target holds (the fuzz topics and their ids, a few
group and transactional ids, the broker's node id) and from each field's name (partitions are
small, offsets near zero, record sets real batches). Every wait a request can declare (Fetch
``max_wait``, Produce ``timeout``, join and session timeouts: any duration, or a field named
for a timeout, wait, delay or interval) is clamped to :attr:`Context.wait_cap_ms`, so a
valid request is answered at once and a silent target stands out; Produce never asks
``acks=0``, which Kafka does not answer (``clients/src/main/java/org/apache/kafka/common/
requests/ProduceRequest.java``).
"""

from __future__ import annotations

import random
import uuid
from dataclasses import dataclass, field
from typing import Any

from kio.static.protocol import Entity

from reference_impl.protocol.record_set import build_batch

from .schema import FieldSpec, layout

_ALNUM = "abcdefghijklmnopqrstuvwxyz0123456789-._"
_WAIT_WORDS = ("timeout", "wait", "delay", "interval", "backoff", "lifetime", "expiry")


@dataclass
class Context:
    """What the target holds that plausible values should name."""

    topics: list[str] = field(default_factory=lambda: ["kh-fuzz-0", "kh-fuzz-1", "kh-fuzz-2"])
    spare_topics: list[str] = field(default_factory=lambda: ["kh-fuzz-3", "kh-fuzz-4"])
    """Names a request may create or delete (bounded, so a run never makes unbounded topics)."""
    topic_ids: dict[str, uuid.UUID] = field(default_factory=dict)
    groups: list[str] = field(default_factory=lambda: ["kh-fuzz-g0", "kh-fuzz-g1", "kh-fuzz-g2"])
    transactional_ids: list[str] = field(default_factory=lambda: ["kh-fuzz-tx0", "kh-fuzz-tx1"])
    node_ids: list[int] = field(default_factory=lambda: [0, 1])
    partitions: int = 3
    wait_cap_ms: int = 50
    timestamp_ms: int = 1_700_000_000_000
    """Record timestamps (fixed, so a seed gives the same bytes on every run)."""


class Generator:
    """Values for kio request classes; the same seed and context give the same values."""

    def __init__(self, rng: random.Random, ctx: Context) -> None:
        self.rng = rng
        self.ctx = ctx

    def value(self, cls: type[Entity], depth: int = 0, owner: str = "") -> dict[str, Any]:
        """A value tree for entity ``cls`` (tagged fields mostly left at their defaults)."""
        plain, tagged = layout(cls)
        out: dict[str, Any] = {}
        context = f"{owner}.{cls.__name__}".lower()
        for spec in plain:
            out[spec.name] = self.field(spec, depth, context)
        for spec in tagged:
            if self.rng.random() < 0.2:
                out[spec.name] = self.field(spec, depth, context, tagged=True)
        return out

    def field(self, spec: FieldSpec, depth: int, context: str, *, tagged: bool = False) -> Any:
        rng = self.rng
        if spec.nullable and spec.kafka_type != "records" and rng.random() < 0.08:
            return spec.default if tagged and spec.default is not None else None
        if spec.is_array:
            most = 3 if depth < 2 else 1
            count = rng.choice((0, 1, 1, 1, 2, most))
            return [self.one(spec, depth + 1, context) for _ in range(count)]
        return self.one(spec, depth, context)

    def one(self, spec: FieldSpec, depth: int, context: str) -> Any:
        kind = spec.kafka_type
        name = spec.name.lower()
        if kind == "struct":
            assert spec.entity is not None
            return self.value(spec.entity, depth + 1, context)
        if kind == "string":
            return self.string(name, context)
        if kind == "records":
            return self.records()
        if kind == "bytes":
            return self.rng.randbytes(self.rng.choice((0, 1, 4, 16)))
        if kind == "uuid":
            return self.uuid(name, context)
        if kind == "bool":
            return self.rng.random() < 0.5
        if kind == "float64":
            return self.rng.choice((0.0, 0.5, 1.0))
        return self.integer(kind, name, context)

    def string(self, name: str, context: str) -> str:
        rng, ctx = self.rng, self.ctx
        if (name in ("topic", "topic_name", "name") and "topic" in context) or name == "topic":
            if rng.random() < 0.1:
                return rng.choice(ctx.spare_topics)
            return rng.choice(ctx.topics)
        if "group" in name or (name in ("key", "group_id") and "coordinator" in context):
            return rng.choice(ctx.groups)
        if "transactional_id" in name:
            return rng.choice(ctx.transactional_ids)
        if name in ("member_id", "rack_id", "rack") or "instance_id" in name:
            return "" if rng.random() < 0.8 else self.word()
        if name == "protocol_type":
            return "consumer"
        if "software" in name:
            return "kh-fuzz" if "name" in name else "0.1.0"
        if name == "mechanism":
            return rng.choice(("PLAIN", "SCRAM-SHA-256"))
        if name in ("resource_name", "principal", "host", "principal_filter", "host_filter"):
            return rng.choice(("*", "User:kh", "kh-fuzz-0"))
        return self.word()

    def word(self) -> str:
        return "".join(self.rng.choice(_ALNUM) for _ in range(self.rng.randrange(0, 12)))

    def records(self) -> bytes | None:
        rng = self.rng
        if rng.random() < 0.05:
            return None
        count = rng.randrange(1, 4)
        pairs = [(None if rng.random() < 0.5 else self.word().encode(), rng.randbytes(rng.randrange(0, 32)))
                 for _ in range(count)]
        return build_batch(pairs, base_timestamp=self.ctx.timestamp_ms)

    def uuid(self, name: str, context: str) -> uuid.UUID:
        rng = self.rng
        if "topic" in name or "topic" in context:
            ids = [self.ctx.topic_ids[t] for t in self.ctx.topics if t in self.ctx.topic_ids]
            if ids and rng.random() < 0.85:
                return rng.choice(ids)
        if rng.random() < 0.5:
            return uuid.UUID(int=0)
        return uuid.UUID(int=rng.getrandbits(128))

    def integer(self, kind: str, name: str, context: str) -> int:
        rng, ctx = self.rng, self.ctx
        if kind.startswith("timedelta") or any(word in name for word in _WAIT_WORDS):
            return rng.randrange(0, ctx.wait_cap_ms + 1)
        if kind == "error_code":
            return 0
        if name == "acks":
            return rng.choice((-1, 1))
        if name in ("index", "partition") or ("partition" in name and not ("count" in name or "max" in name)):
            return -1 if rng.random() < 0.05 else rng.randrange(ctx.partitions)
        if name in ("replica_id", "broker_id", "leader_id", "node_id", "broker", "coordinator_key_type"):
            return rng.choice((-1, *ctx.node_ids))
        if "producer_id" in name or "epoch" in name:
            return rng.choice((-1, -1, 0))
        if "offset" in name or "timestamp" in name or name == "time":
            return rng.choice((-2, -1, 0, 0, 1, 5))
        if "max_bytes" in name or "size" in name:
            return rng.choice((1, 1024, 65536))
        if name in ("num_partitions", "count", "replication_factor", "total_count"):
            return rng.choice((-1, 1, 2, 3, 4))
        if name == "min_bytes":
            return rng.choice((0, 1))
        if kind.startswith("uint"):
            return rng.randrange(0, 4)
        return rng.choice((0, 0, 1, 2, 3, -1))
