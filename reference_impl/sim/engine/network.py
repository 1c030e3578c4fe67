"""The simulated network: per-link drop, delay, duplication, partitions and heals, all seeded.

Kafka's raft ``MockNetworkChannel`` promises neither ordering nor delivery,
and neither does this: each message draws its own delay (so two messages on
one link may arrive out of order), may be dropped, and may be delivered
twice. A blocked link (a partition) drops what is sent on it and also what
was already in flight when it arrives. Every draw comes from the
simulation's one ``random.Random``, so a seed fixes every fate.
"""

from __future__ import annotations

import random
from collections.abc import Iterable
from dataclasses import dataclass

Link = tuple[int, int]


@dataclass(frozen=True, slots=True)
class LinkFaults:
    """How one directed link misbehaves."""

    drop_probability: float = 0.0
    duplicate_probability: float = 0.0
    min_delay_ms: int = 1
    max_delay_ms: int = 5

    def __post_init__(self) -> None:
        if not 0 <= self.drop_probability <= 1 or not 0 <= self.duplicate_probability <= 1:
            raise ValueError("probabilities must be within [0, 1]")
        if not 0 <= self.min_delay_ms <= self.max_delay_ms:
            raise ValueError("delays must satisfy 0 <= min <= max")


class Network:
    def __init__(self, rng: random.Random, default: LinkFaults | None = None) -> None:
        self.rng = rng
        self.default = default or LinkFaults()
        self.links: dict[Link, LinkFaults] = {}
        self.blocked: set[Link] = set()
        self.partition_groups: tuple[frozenset[int], ...] = ()

    def set_link(self, source: int, destination: int, faults: LinkFaults) -> None:
        self.links[(source, destination)] = faults

    def faults(self, source: int, destination: int) -> LinkFaults:
        return self.links.get((source, destination), self.default)

    def partition(self, groups: Iterable[Iterable[int]]) -> None:
        """Block every link between different groups (nodes in no group keep their links)."""
        sets = tuple(frozenset(g) for g in groups)
        self.partition_groups = sets
        self.blocked = {
            (a, b) for i, ga in enumerate(sets) for j, gb in enumerate(sets) if i != j for a in ga for b in gb
        }

    def block(self, source: int, destination: int) -> None:
        """Cut one direction of one link (what arrives on it later is lost too)."""
        self.blocked.add((source, destination))

    def heal(self) -> None:
        """Every link open again, directed blocks included."""
        self.blocked = set()
        self.partition_groups = ()

    def is_blocked(self, source: int, destination: int) -> bool:
        return (source, destination) in self.blocked

    def deliveries(self, source: int, destination: int) -> list[int]:
        """The delays (ms) after which copies of one message arrive: none, one or two."""
        if (source, destination) in self.blocked:
            return []
        link = self.faults(source, destination)
        if link.drop_probability and self.rng.random() < link.drop_probability:
            return []
        delays = [self.rng.randint(link.min_delay_ms, link.max_delay_ms)]
        if link.duplicate_probability and self.rng.random() < link.duplicate_probability:
            delays.append(self.rng.randint(link.min_delay_ms, link.max_delay_ms))
        return delays
