"""Every topic config Kafka defines: name, type, default, validator.

Rows as in :mod:`.kafka_broker_catalogue` (generated; do not edit)."""

# ruff: noqa: E501
from __future__ import annotations

from typing import Any

KAFKA_TOPIC_CONFIGS: tuple[tuple[str, str, str | None, tuple[Any, ...] | None, str, str, bool], ...] = (
    ('cleanup.policy', 'LIST', 'delete', ('list_in', ('compact', 'delete')), 'topic', 'LogConfig', False),
    ('compression.gzip.level', 'INT', '-1', ('gzip_level',), 'topic', 'LogConfig', False),
    ('compression.lz4.level', 'INT', '9', ('between', 1, 17), 'topic', 'LogConfig', False),
    ('compression.type', 'STRING', 'producer', ('in', ('uncompressed', 'zstd', 'lz4', 'snappy', 'gzip', 'producer')), 'topic', 'LogConfig', False),
    ('compression.zstd.level', 'INT', '3', ('between', -131072, 22), 'topic', 'LogConfig', False),
    ('delete.retention.ms', 'LONG', '86400000', ('at_least', 0), 'topic', 'LogConfig', False),
    ('file.delete.delay.ms', 'LONG', '60000', ('at_least', 0), 'topic', 'LogConfig', False),
    ('flush.messages', 'LONG', '9223372036854775807', ('at_least', 1), 'topic', 'LogConfig', False),
    ('flush.ms', 'LONG', '9223372036854775807', ('at_least', 0), 'topic', 'LogConfig', False),
    ('follower.replication.throttled.replicas', 'LIST', '', ('custom', 'ThrottledReplicaListValidator'), 'topic', 'LogConfig', False),
    ('index.interval.bytes', 'INT', '4096', ('at_least', 0), 'topic', 'LogConfig', False),
    ('leader.replication.throttled.replicas', 'LIST', '', ('custom', 'ThrottledReplicaListValidator'), 'topic', 'LogConfig', False),
    ('local.retention.bytes', 'LONG', '-2', ('at_least', -2), 'topic', 'LogConfig', False),
    ('local.retention.ms', 'LONG', '-2', ('at_least', -2), 'topic', 'LogConfig', False),
    ('max.compaction.lag.ms', 'LONG', '9223372036854775807', ('at_least', 1), 'topic', 'LogConfig', False),
    ('max.message.bytes', 'INT', '1048588', ('at_least', 0), 'topic', 'LogConfig', False),
    ('message.downconversion.enable', 'BOOLEAN', 'true', None, 'topic', 'LogConfig', False),
    ('message.format.version', 'STRING', '3.0-IV1', ('custom', 'MetadataVersionValidator'), 'topic', 'LogConfig', False),
    ('message.timestamp.after.max.ms', 'LONG', '9223372036854775807', ('at_least', 0), 'topic', 'LogConfig', False),
    ('message.timestamp.before.max.ms', 'LONG', '9223372036854775807', ('at_least', 0), 'topic', 'LogConfig', False),
    ('message.timestamp.difference.max.ms', 'LONG', '9223372036854775807', ('at_least', 0), 'topic', 'LogConfig', False),
    ('message.timestamp.type', 'STRING', 'CreateTime', ('in', ('CreateTime', 'LogAppendTime')), 'topic', 'LogConfig', False),
    ('min.cleanable.dirty.ratio', 'DOUBLE', '0.5', ('between', 0, 1), 'topic', 'LogConfig', False),
    ('min.compaction.lag.ms', 'LONG', '0', ('at_least', 0), 'topic', 'LogConfig', False),
    ('min.insync.replicas', 'INT', '1', ('at_least', 1), 'topic', 'LogConfig', False),
    ('preallocate', 'BOOLEAN', 'false', None, 'topic', 'LogConfig', False),
    ('remote.log.copy.disable', 'BOOLEAN', 'false', None, 'topic', 'LogConfig', False),
    ('remote.log.delete.on.disable', 'BOOLEAN', 'false', None, 'topic', 'LogConfig', False),
    ('remote.storage.enable', 'BOOLEAN', 'false', None, 'topic', 'LogConfig', False),
    ('retention.bytes', 'LONG', '-1', None, 'topic', 'LogConfig', False),
    ('retention.ms', 'LONG', '604800000', ('at_least', -1), 'topic', 'LogConfig', False),
    ('segment.bytes', 'INT', '1073741824', ('at_least', 14), 'topic', 'LogConfig', False),
    ('segment.index.bytes', 'INT', '10485760', ('at_least', 4), 'topic', 'LogConfig', False),
    ('segment.jitter.ms', 'LONG', '0', ('at_least', 0), 'topic', 'LogConfig', False),
    ('segment.ms', 'LONG', '604800000', ('at_least', 1), 'topic', 'LogConfig', False),
    ('unclean.leader.election.enable', 'BOOLEAN', 'false', None, 'topic', 'LogConfig', False),
)

KAFKA_TOPIC_SYNONYMS: dict[str, str] = {
    # ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS: a topic config -> the broker config
    # that sets its default (the first of its synonyms)
    'cleanup.policy': 'log.cleanup.policy',
    'compression.gzip.level': 'compression.gzip.level',
    'compression.lz4.level': 'compression.lz4.level',
    'compression.type': 'compression.type',
    'compression.zstd.level': 'compression.zstd.level',
    'delete.retention.ms': 'log.cleaner.delete.retention.ms',
    'file.delete.delay.ms': 'log.segment.delete.delay.ms',
    'flush.messages': 'log.flush.interval.messages',
    'flush.ms': 'log.flush.interval.ms',
    'index.interval.bytes': 'log.index.interval.bytes',
    'local.retention.bytes': 'log.local.retention.bytes',
    'local.retention.ms': 'log.local.retention.ms',
    'max.compaction.lag.ms': 'log.cleaner.max.compaction.lag.ms',
    'max.message.bytes': 'message.max.bytes',
    'message.downconversion.enable': 'log.message.downconversion.enable',
    'message.format.version': 'log.message.format.version',
    'message.timestamp.after.max.ms': 'log.message.timestamp.after.max.ms',
    'message.timestamp.before.max.ms': 'log.message.timestamp.before.max.ms',
    'message.timestamp.difference.max.ms': 'log.message.timestamp.difference.max.ms',
    'message.timestamp.type': 'log.message.timestamp.type',
    'min.cleanable.dirty.ratio': 'log.cleaner.min.cleanable.ratio',
    'min.compaction.lag.ms': 'log.cleaner.min.compaction.lag.ms',
    'min.insync.replicas': 'min.insync.replicas',
    'preallocate': 'log.preallocate',
    'retention.bytes': 'log.retention.bytes',
    'retention.ms': 'log.retention.ms',
    'segment.bytes': 'log.segment.bytes',
    'segment.index.bytes': 'log.index.size.max.bytes',
    'segment.jitter.ms': 'log.roll.jitter.ms',
    'segment.ms': 'log.roll.ms',
    'unclean.leader.election.enable': 'unclean.leader.election.enable',
}
