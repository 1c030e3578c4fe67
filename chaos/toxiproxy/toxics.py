"""Toxic definitions: the types Toxiproxy's README documents, their attributes, and validation.

A toxic is data here; what it does to bytes lives in :mod:`chaos.toxiproxy.link`. Attribute
names, units and defaults follow the README of Shopify/toxiproxy:

* ``latency``: ``latency`` ms plus or minus ``jitter`` ms on every chunk.
* ``bandwidth``: ``rate`` KB/s (1 KB = 1000 bytes, as Toxiproxy counts).
* ``slow_close``: ``delay`` ms between the source closing and the proxy closing the destination.
* ``timeout``: no data passes; the connection closes after ``timeout`` ms (0: never, until removed;
  here a connection whose data was swallowed is closed when the toxic goes: its stream has a hole).
* ``reset_peer``: connection reset (RST) immediately or after ``timeout`` ms.
* ``slicer``: chunks cut into ``average_size`` +/- ``size_variation`` bytes, ``delay`` µs apart.
* ``limit_data``: the connection closes once ``bytes`` bytes have passed.

``stream`` is ``upstream`` (client to server) or ``downstream`` (server to client, the default);
``toxicity`` is the probability that the toxic applies to a given connection.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

STREAMS = ("upstream", "downstream")

# type -> {attribute: default}; every attribute is a non-negative integer.
TOXIC_ATTRIBUTES: dict[str, dict[str, int]] = {
    "latency": {"latency": 0, "jitter": 0},
    "bandwidth": {"rate": 0},
    "slow_close": {"delay": 0},
    "timeout": {"timeout": 0},
    "reset_peer": {"timeout": 0},
    "slicer": {"average_size": 0, "size_variation": 0, "delay": 0},
    "limit_data": {"bytes": 0},
}


class ToxicError(ValueError):
    """A toxic that cannot be created as asked (answered with HTTP 400)."""


@dataclass(slots=True)
class Toxic:
    """One active toxic on a proxy."""

    name: str
    type: str
    stream: str = "downstream"
    toxicity: float = 1.0
    attributes: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "type": self.type,
            "stream": self.stream,
            "toxicity": self.toxicity,
            "attributes": dict(self.attributes),
        }

    def attr(self, key: str) -> int:
        return self.attributes.get(key, TOXIC_ATTRIBUTES[self.type][key])


def _attributes(kind: str, raw: object, base: dict[str, int] | None = None) -> dict[str, int]:
    if raw is None:
        raw = {}
    if not isinstance(raw, dict):
        raise ToxicError("attributes must be a JSON object")
    known = TOXIC_ATTRIBUTES[kind]
    values = dict(base) if base is not None else dict(known)
    for key, value in raw.items():
        if key not in known:
            raise ToxicError(f"unknown attribute {key!r} for toxic type {kind!r} (known: {sorted(known)})")
        if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
            raise ToxicError(f"attribute {key!r} must be a non-negative number, got {value!r}")
        values[key] = int(value)
    return values


def _toxicity(raw: object) -> float:
    if isinstance(raw, bool) or not isinstance(raw, int | float) or not 0.0 <= float(raw) <= 1.0:
        raise ToxicError(f"toxicity must be a number between 0 and 1, got {raw!r}")
    return float(raw)


def toxic_from_json(body: object) -> Toxic:
    """Build a toxic from a create request, applying the README's defaults."""
    if not isinstance(body, dict):
        raise ToxicError("a toxic is a JSON object")
    kind = body.get("type")
    if kind not in TOXIC_ATTRIBUTES:
        raise ToxicError(f"invalid toxic type {kind!r} (known: {sorted(TOXIC_ATTRIBUTES)})")
    stream = body.get("stream") or "downstream"
    if stream not in STREAMS:
        raise ToxicError(f"stream must be upstream or downstream, got {stream!r}")
    name = body.get("name") or f"{kind}_{stream}"
    if not isinstance(name, str):
        raise ToxicError("toxic name must be a string")
    toxicity = _toxicity(body.get("toxicity", 1.0))
    return Toxic(name, kind, stream, toxicity, _attributes(kind, body.get("attributes")))


def update_toxic(toxic: Toxic, body: object) -> None:
    """Apply an update request: attributes and toxicity change, name/type/stream do not."""
    if not isinstance(body, dict):
        raise ToxicError("a toxic update is a JSON object")
    if "type" in body and body["type"] != toxic.type:
        raise ToxicError("a toxic's type cannot change; delete and recreate it")
    if "stream" in body and body["stream"] not in (toxic.stream, None, ""):
        raise ToxicError("a toxic's stream cannot change; delete and recreate it")
    if "toxicity" in body:
        toxic.toxicity = _toxicity(body["toxicity"])
    if "attributes" in body:
        toxic.attributes = _attributes(toxic.type, body["attributes"], toxic.attributes)
