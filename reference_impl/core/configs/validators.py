"""The small converters and checks config tables share: a synonym's unit conversion and bounds."""

from __future__ import annotations

from collections.abc import Callable


def same(v: str) -> str:
    """A synonym in the topic config's own unit."""
    return v


def times(factor: int) -> Callable[[str], str]:
    """A synonym in a coarser unit (``log.retention.hours`` → ``retention.ms``)."""
    return lambda v: str(int(v) * factor)


def at_least(low: int) -> Callable[[str], bool]:
    """Kafka's ``atLeast`` validator."""
    return lambda v: int(v) >= low


def ratio(v: str) -> bool:
    """A fraction between 0 and 1 (``min.cleanable.dirty.ratio``)."""
    return 0.0 <= float(v) <= 1.0
