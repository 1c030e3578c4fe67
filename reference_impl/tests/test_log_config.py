"""LogConfig: Kafka's topic config names, Kafka 4's defaults, errors that name the bad key."""

from __future__ import annotations

import pytest

from reference_impl.log.config import LONG_MAX, LogConfig, LogConfigError


def test_defaults_are_kafka_4s() -> None:
    """Kafka 4 topic defaults: 1 GiB segments, 7-day roll and retention, 10 MiB index, 4 KiB interval."""
    assert LogConfig.from_kafka({}).to_kafka() == {
        "segment.bytes": "1073741824", "segment.ms": "604800000", "segment.index.bytes": "10485760",
        "index.interval.bytes": "4096", "retention.ms": "604800000", "retention.bytes": "-1",
        "flush.messages": str(LONG_MAX), "flush.ms": str(LONG_MAX),
        "message.timestamp.type": "CreateTime", "max.message.bytes": "1048588",
        "cleanup.policy": "delete", "min.insync.replicas": "1",
        "delete.retention.ms": "86400000", "min.compaction.lag.ms": "0",
        "max.compaction.lag.ms": str(LONG_MAX), "min.cleanable.dirty.ratio": "0.5",
    }


def test_kafka_names_parse_into_fields() -> None:
    """Each Kafka topic config name sets the matching field; names the log does not use are ignored."""
    config = LogConfig.from_kafka({
        "segment.bytes": "2097152", "retention.ms": "-1", "retention.bytes": "5000",
        "cleanup.policy": "compact,delete", "message.timestamp.type": "LogAppendTime",
        "compression.type": "zstd"})
    assert config.segment_bytes == 2097152 and config.retention_ms == -1 and config.retention_bytes == 5000
    assert config.compact_enabled and config.delete_enabled and config.log_append_time


@pytest.mark.parametrize("key, value", [
    ("segment.bytes", "1000"),  # KIP-1030: at least 1 MiB in Kafka 4
    ("segment.ms", "0"),
    ("segment.index.bytes", "3"),
    ("index.interval.bytes", "-1"),
    ("retention.ms", "-2"),
    ("flush.messages", "0"),
    ("flush.ms", "-1"),
    ("message.timestamp.type", "WallClock"),
    ("max.message.bytes", "-5"),
    ("cleanup.policy", "delete,shred"),
    ("min.insync.replicas", "0"),
    ("segment.bytes", "lots"),
    ("segment.bytes", str(2**31)),  # an INT config
])
def test_bad_values_name_their_key(key: str, value: str) -> None:
    """Kafka's ConfigDef validators reject out-of-range values with INVALID_CONFIG naming the key."""
    with pytest.raises(LogConfigError) as caught:
        LogConfig.from_kafka({key: value})
    assert caught.value.key == key
    assert key in str(caught.value)


def test_internal_segment_bytes_allows_small_segments() -> None:
    """Kafka 4's internal.segment.bytes overrides segment.bytes without its 1 MiB floor (for tests)."""
    config = LogConfig.from_kafka({"segment.bytes": "1000", "internal.segment.bytes": "1000"})
    assert config.segment_bytes == 1000


def test_alter_configs_changes_and_resets_keys() -> None:
    """AlterConfigs sets some keys and (with no value) restores others to their defaults."""
    config = LogConfig.from_kafka({"retention.ms": "1000", "flush.messages": "5"})
    changed = config.with_changes({"retention.ms": None, "segment.ms": "60000"})
    assert changed.retention_ms == LogConfig().retention_ms
    assert changed.segment_ms == 60000 and changed.flush_messages == 5
    assert config.retention_ms == 1000  # the old config is untouched


def test_direct_construction_checks_usability() -> None:
    """A config built in code must still be usable: a zero segment size names segment.bytes."""
    with pytest.raises(LogConfigError, match=r"segment\.bytes"):
        LogConfig(segment_bytes=0)
    assert LogConfig(segment_bytes=500).segment_bytes == 500
