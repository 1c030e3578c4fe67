"""The topic configs a partition log acts on, parsed from Kafka's names with Kafka 4's defaults.

The broker core owns the full topic-config table (every name DescribeConfigs
reports, synonyms, sources). This module keeps only what changes how the log
stores data: when it rolls segments, how sparse its indexes are, what
retention deletes, when it fsyncs, and what the cleaner compacts
(``delete.retention.ms``, ``min.compaction.lag.ms``, ``max.compaction.lag.ms``,
``min.cleanable.dirty.ratio``). ``max.message.bytes``,
``message.timestamp.type``, ``cleanup.policy`` and ``min.insync.replicas``
are carried as data for the layers above (validation, replication) and for
``cleanup.policy`` also decide whether size and time retention apply.

A :class:`LogConfig` is immutable; AlterConfigs makes a new one with
:meth:`LogConfig.with_changes` and hands it to the open log.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, fields, replace

LONG_MAX = 2**63 - 1
INT_MAX = 2**31 - 1
_INT_MIN = -(2**31)
_LONG_MIN = -(2**63)

CREATE_TIME = "CreateTime"
LOG_APPEND_TIME = "LogAppendTime"

KAFKA_4_MIN_SEGMENT_BYTES = 1024 * 1024
"""KIP-1030 (Kafka 4.0) raised the floor of ``segment.bytes`` from 14 bytes to 1 MiB."""

INTERNAL_SEGMENT_BYTES = "internal.segment.bytes"
"""Kafka 4's test-only override of ``segment.bytes`` (no lower bound), which small-segment tests need."""


class LogConfigError(ValueError):
    """A topic config value the log cannot accept; ``key`` names it (the broker answers INVALID_CONFIG)."""

    def __init__(self, key: str, value: object, reason: str) -> None:
        super().__init__(f"Invalid value {value} for configuration {key}: {reason}")
        self.key = key
        self.value = value


@dataclass(frozen=True, slots=True)
class _Key:
    """One Kafka topic config: its name, the field holding it, and how to parse and check a value."""

    name: str
    attr: str
    parse: Callable[[str, str], object]
    check: Callable[[object], str | None]


def _integer(low: int, high: int) -> Callable[[str, str], object]:
    def parse(key: str, text: str) -> object:
        try:
            number = int(text.strip())
        except ValueError:
            raise LogConfigError(key, text, "not a number") from None
        if not low <= number <= high:
            raise LogConfigError(key, text, f"out of range [{low}, {high}]")
        return number

    return parse


def _choice(*allowed: str) -> Callable[[str, str], object]:
    def parse(key: str, text: str) -> object:
        value = text.strip()
        if value not in allowed:
            raise LogConfigError(key, text, f"String must be one of: {', '.join(allowed)}")
        return value

    return parse


def _policy_list(key: str, text: str) -> object:
    items = tuple(item.strip().lower() for item in text.split(",") if item.strip())
    for item in items:
        if item not in ("compact", "delete"):
            raise LogConfigError(key, text, "String must be one of: compact, delete")
    return items


def _fraction(key: str, text: str) -> object:
    try:
        number = float(text.strip())
    except ValueError:
        raise LogConfigError(key, text, "not a number") from None
    if not 0.0 <= number <= 1.0:
        raise LogConfigError(key, text, "out of range [0.0, 1.0]")
    return number


def _ratio(value: object) -> str | None:
    return None if isinstance(value, float | int) and 0.0 <= value <= 1.0 else "Value must be in [0.0, 1.0]"


def _at_least(low: int) -> Callable[[object], str | None]:
    def check(value: object) -> str | None:
        return None if isinstance(value, int) and value >= low else f"Value must be at least {low}"

    return check


def _anything(value: object) -> str | None:
    return None


_INT = _integer(_INT_MIN, INT_MAX)
_LONG = _integer(_LONG_MIN, LONG_MAX)

_KEYS: tuple[_Key, ...] = (
    _Key("segment.bytes", "segment_bytes", _INT, _at_least(1)),
    _Key("segment.ms", "segment_ms", _LONG, _at_least(1)),
    _Key("segment.index.bytes", "segment_index_bytes", _INT, _at_least(4)),
    _Key("index.interval.bytes", "index_interval_bytes", _INT, _at_least(0)),
    _Key("retention.ms", "retention_ms", _LONG, _at_least(-1)),
    _Key("retention.bytes", "retention_bytes", _LONG, _anything),
    _Key("flush.messages", "flush_messages", _LONG, _at_least(1)),
    _Key("flush.ms", "flush_ms", _LONG, _at_least(0)),
    _Key("message.timestamp.type", "message_timestamp_type", _choice(CREATE_TIME, LOG_APPEND_TIME),
         _anything),
    _Key("max.message.bytes", "max_message_bytes", _INT, _at_least(0)),
    _Key("cleanup.policy", "cleanup_policy", _policy_list, _anything),
    _Key("min.insync.replicas", "min_insync_replicas", _INT, _at_least(1)),
    _Key("delete.retention.ms", "delete_retention_ms", _LONG, _at_least(0)),
    _Key("min.compaction.lag.ms", "min_compaction_lag_ms", _LONG, _at_least(0)),
    _Key("max.compaction.lag.ms", "max_compaction_lag_ms", _LONG, _at_least(1)),
    _Key("min.cleanable.dirty.ratio", "min_cleanable_dirty_ratio", _fraction, _ratio),
)
_BY_NAME = {key.name: key for key in _KEYS}


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Kafka's topic configs as the log uses them; defaults are Kafka 4's.

    Constructing one directly (tests, the simulator) checks only that each
    value is usable; :meth:`from_kafka` also applies Kafka's documented
    bounds to values arriving under Kafka's names (the broker's path).
    """

    segment_bytes: int = 1024 * 1024 * 1024
    segment_ms: int = 7 * 24 * 3600 * 1000
    segment_index_bytes: int = 10 * 1024 * 1024
    index_interval_bytes: int = 4096
    retention_ms: int = 7 * 24 * 3600 * 1000
    retention_bytes: int = -1
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    message_timestamp_type: str = CREATE_TIME
    max_message_bytes: int = 1024 * 1024 + 12
    cleanup_policy: tuple[str, ...] = ("delete",)
    min_insync_replicas: int = 1
    delete_retention_ms: int = 24 * 3600 * 1000
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    min_cleanable_dirty_ratio: float = 0.5

    def __post_init__(self) -> None:
        for key in _KEYS:
            value = getattr(self, key.attr)
            problem = key.check(value)
            if problem is not None:
                raise LogConfigError(key.name, value, problem)
        _policy_list("cleanup.policy", ",".join(self.cleanup_policy))
        _choice(CREATE_TIME, LOG_APPEND_TIME)("message.timestamp.type", self.message_timestamp_type)

    # -- Kafka names ---------------------------------------------------------------------------

    @classmethod
    def from_kafka(cls, configs: Mapping[str, str | None]) -> LogConfig:
        """A config from Kafka topic-config names and string values, defaults for the rest.

        Keys this log does not act on (``compression.type``, ...) are ignored:
        the broker validates names against its full table. Raises
        :class:`LogConfigError` naming the first bad key.
        """
        return cls().with_changes(configs)

    def with_changes(self, configs: Mapping[str, str | None]) -> LogConfig:
        """This config with some keys set (a value of None restores Kafka's default), as AlterConfigs does."""
        changes: dict[str, object] = {}
        defaults = LogConfig()
        for name, text in configs.items():
            key = _BY_NAME.get(name)
            if key is None:
                continue
            if text is None:
                changes[key.attr] = getattr(defaults, key.attr)
                continue
            value = key.parse(name, text)
            problem = key.check(value)
            if problem is not None:
                raise LogConfigError(name, text, problem)
            changes[key.attr] = value
        internal = configs.get(INTERNAL_SEGMENT_BYTES)
        if "segment.bytes" in configs and configs["segment.bytes"] is not None:
            size = changes["segment_bytes"]
            assert isinstance(size, int)
            if size < KAFKA_4_MIN_SEGMENT_BYTES and internal is None:
                raise LogConfigError("segment.bytes", configs["segment.bytes"],
                                     f"Value must be at least {KAFKA_4_MIN_SEGMENT_BYTES}")
        if internal is not None:
            changes["segment_bytes"] = _integer(1, INT_MAX)(INTERNAL_SEGMENT_BYTES, internal)
        return replace(self, **changes)  # type: ignore[arg-type]

    def to_kafka(self) -> dict[str, str]:
        """Every key as Kafka writes it (DescribeConfigs values, round trips)."""
        out: dict[str, str] = {}
        for key in _KEYS:
            value = getattr(self, key.attr)
            out[key.name] = ",".join(value) if isinstance(value, tuple) else str(value)
        return out

    # -- what the values mean --------------------------------------------------------------------

    @property
    def delete_enabled(self) -> bool:
        """Size and time retention apply only with ``cleanup.policy`` containing ``delete``."""
        return "delete" in self.cleanup_policy

    @property
    def compact_enabled(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def max_segment_ms(self) -> int:
        """How long a segment may stay active: ``segment.ms``, or less on a compacted topic (KIP-354).

        The cleaner never touches the active segment, so a quiet compacted
        topic rolls by ``max.compaction.lag.ms`` to let its records be compacted in time.
        """
        if self.compact_enabled:
            return min(self.segment_ms, self.max_compaction_lag_ms)
        return self.segment_ms

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == LOG_APPEND_TIME

    @property
    def max_offset_index_entries(self) -> int:
        """Entries the offset index may hold (8 bytes each) before the segment rolls."""
        return self.segment_index_bytes // 8

    @property
    def max_time_index_entries(self) -> int:
        """Entries the time index may hold (12 bytes each) before the segment rolls."""
        return self.segment_index_bytes // 12


KAFKA_NAMES: tuple[str, ...] = tuple(key.name for key in _KEYS)
"""The topic config names this module reads."""

assert {f.name for f in fields(LogConfig)} == {key.attr for key in _KEYS}
