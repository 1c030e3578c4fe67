"""Kafka's small text files around the logs, byte for byte as Kafka writes them.

* Offset checkpoints (``recovery-point-offset-checkpoint``,
  ``replication-offset-checkpoint``, ``log-start-offset-checkpoint`` in a
  data directory): a version line ``0``, a count line, then one
  ``topic partition offset`` line per partition.
* ``leader-epoch-checkpoint`` in a partition directory: version ``0``, count,
  then ``epoch startOffset`` lines, oldest first.
* ``partition.metadata`` in a partition directory: ``version: 0`` and
  ``topic_id: <base64 uuid>``.
* ``meta.properties`` (KRaft, version 1): ``key=value`` lines for
  ``version``, ``cluster.id``, ``node.id`` and ``directory.id``.
* ``.kafka_cleanshutdown``: present only while the broker is stopped
  cleanly; Kafka 3.7+ writes ``{"version":0,"brokerEpoch":N}`` in it (KIP-966).

Every write is atomic (:func:`reference_impl.log.files.atomic_write`). A
malformed file raises :class:`CheckpointError` saying which file and line,
as Kafka's ``CheckpointReadBuffer`` throws; the caller must not carry on
without the state (Kafka takes the log directory offline). The fields are
separated by spaces and lines, with no escaping, so a field that holds
whitespace is refused when written: such a file would not read back.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .files import atomic_write, read_text

CHECKPOINT_VERSION = 0

RECOVERY_POINT_CHECKPOINT = "recovery-point-offset-checkpoint"
REPLICATION_CHECKPOINT = "replication-offset-checkpoint"
LOG_START_CHECKPOINT = "log-start-offset-checkpoint"
LEADER_EPOCH_CHECKPOINT = "leader-epoch-checkpoint"
PARTITION_METADATA = "partition.metadata"
META_PROPERTIES = "meta.properties"
CLEAN_SHUTDOWN = ".kafka_cleanshutdown"

TopicPartition = tuple[str, int]


class CheckpointError(ValueError):
    """A checkpoint or metadata file that is not in Kafka's format."""


# -- generic "version, count, entries" files --------------------------------------------------------


def _format_entries(lines: Iterable[str], count: int) -> str:
    return f"{CHECKPOINT_VERSION}\n{count}\n" + "".join(line + "\n" for line in lines)


def _parse_entries(path: str, text: str, fields: int) -> list[list[str]]:
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    if not lines:
        return []  # Kafka creates checkpoint files empty and reads them as holding nothing
    if len(lines) < 2:
        raise CheckpointError(f"{path}: needs a version line and a count line")
    if lines[0].strip() != str(CHECKPOINT_VERSION):
        raise CheckpointError(f"{path}: unrecognised version {lines[0]!r}")
    try:
        count = int(lines[1].strip())
    except ValueError:
        raise CheckpointError(f"{path}: malformed count line {lines[1]!r}") from None
    entries = [line.split() for line in lines[2:]]
    for number, parts in enumerate(entries, start=3):
        if len(parts) != fields:
            raise CheckpointError(f"{path}: malformed line {number}: {lines[number - 1]!r}")
    if count != len(entries):
        raise CheckpointError(f"{path}: says {count} entries but holds {len(entries)}")
    return entries


def _int(path: str, text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise CheckpointError(f"{path}: {text!r} is not a number") from None


def _check_field(path: str, field: str) -> str:
    """``field`` as written, or :class:`CheckpointError` if it could not be read back as one field."""
    if not field or any(c.isspace() for c in field):
        raise CheckpointError(f"{path}: refusing to write {field!r}, which would corrupt the file "
                              "(a checkpoint field is never empty and holds no whitespace)")
    return field


def format_offsets(offsets: Mapping[TopicPartition, int], path: str = "checkpoint") -> str:
    """The text of an offset checkpoint, partitions in (topic, partition) order."""
    items = sorted(offsets.items())
    for topic, _partition in offsets:
        _check_field(path, topic)
    return _format_entries((f"{topic} {partition} {offset}" for (topic, partition), offset in items),
                           len(items))


def write_offsets(path: str, offsets: Mapping[TopicPartition, int]) -> None:
    """Replace the checkpoint; :class:`CheckpointError`, the old file kept, if a name holds whitespace."""
    atomic_write(path, format_offsets(offsets, path))


def read_offsets(path: str) -> dict[TopicPartition, int]:
    """The checkpoint's offsets; an absent file is an empty checkpoint."""
    text = read_text(path)
    if text is None:
        return {}
    out: dict[TopicPartition, int] = {}
    for topic, partition, offset in _parse_entries(path, text, 3):
        out[(topic, _int(path, partition))] = _int(path, offset)
    return out


def write_epochs(path: str, entries: Iterable[tuple[int, int]]) -> None:
    """``leader-epoch-checkpoint``: (epoch, start offset) pairs, oldest first."""
    items = list(entries)
    atomic_write(path, _format_entries((f"{epoch} {offset}" for epoch, offset in items), len(items)))


def read_epochs(path: str) -> list[tuple[int, int]] | None:
    """The (epoch, start offset) pairs, or None if the file does not exist."""
    text = read_text(path)
    if text is None:
        return None
    return [(_int(path, epoch), _int(path, offset)) for epoch, offset in _parse_entries(path, text, 2)]


# -- uuids as Kafka prints them ---------------------------------------------------------------------


def kafka_uuid_string(value: uuid.UUID) -> str:
    """Kafka's ``Uuid.toString``: URL-safe base64 of the 16 bytes, no padding."""
    return base64.urlsafe_b64encode(value.bytes).decode().rstrip("=")


def parse_kafka_uuid(text: str) -> uuid.UUID:
    raw = text.strip()
    try:
        data = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4))
    except ValueError:
        raise CheckpointError(f"{text!r} is not a Kafka uuid") from None
    if len(data) != 16:
        raise CheckpointError(f"{text!r} is not a Kafka uuid (16 bytes)")
    return uuid.UUID(bytes=data)


def new_kafka_uuid() -> uuid.UUID:
    """A random uuid Kafka would accept (it reserves the all-zero and a few small values)."""
    while True:
        value = uuid.uuid4()
        if value.int >= 100 and not kafka_uuid_string(value).startswith("-"):
            return value


# -- partition.metadata -----------------------------------------------------------------------------


def write_partition_metadata(directory: str, topic_id: uuid.UUID) -> None:
    atomic_write(os.path.join(directory, PARTITION_METADATA),
                 f"version: 0\ntopic_id: {kafka_uuid_string(topic_id)}\n")


def read_partition_metadata(directory: str) -> uuid.UUID | None:
    path = os.path.join(directory, PARTITION_METADATA)
    text = read_text(path)
    if text is None:
        return None
    values = _colon_pairs(path, text)
    if values.get("version") != "0" or "topic_id" not in values:
        raise CheckpointError(f"{path}: expected version 0 and a topic_id")
    return parse_kafka_uuid(values["topic_id"])


def _colon_pairs(path: str, text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise CheckpointError(f"{path}: malformed line {line!r}")
        out[key.strip()] = value.strip()
    return out


# -- meta.properties --------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class MetaProperties:
    """A KRaft data directory's identity (``meta.properties`` version 1)."""

    cluster_id: str
    node_id: int
    directory_id: uuid.UUID | None = None

    def to_text(self) -> str:
        values = {"version": "1", "cluster.id": self.cluster_id, "node.id": str(self.node_id)}
        if self.directory_id is not None:
            values["directory.id"] = kafka_uuid_string(self.directory_id)
        return "".join(f"{key}={value}\n" for key, value in sorted(values.items()))

    @classmethod
    def parse(cls, path: str, text: str) -> MetaProperties:
        values: dict[str, str] = {}
        for line in text.splitlines():
            stripped = line.strip()
            if not stripped or stripped[0] in "#!":
                continue
            key, sep, value = stripped.partition("=")
            if not sep:
                raise CheckpointError(f"{path}: malformed line {line!r}")
            values[key.strip()] = value.strip()
        if values.get("version") != "1":
            raise CheckpointError(f"{path}: version {values.get('version')!r}, "
                                  "a KRaft directory has version 1")
        if "cluster.id" not in values or "node.id" not in values:
            raise CheckpointError(f"{path}: version 1 needs cluster.id and node.id")
        directory = values.get("directory.id")
        return cls(values["cluster.id"], _int(path, values["node.id"]),
                   parse_kafka_uuid(directory) if directory else None)


def write_meta_properties(data_dir: str, meta: MetaProperties) -> None:
    atomic_write(os.path.join(data_dir, META_PROPERTIES), meta.to_text())


def read_meta_properties(data_dir: str) -> MetaProperties | None:
    path = os.path.join(data_dir, META_PROPERTIES)
    text = read_text(path)
    return None if text is None else MetaProperties.parse(path, text)


# -- the clean-shutdown marker ----------------------------------------------------------------------


def write_clean_shutdown(data_dir: str, broker_epoch: int = -1) -> None:
    atomic_write(os.path.join(data_dir, CLEAN_SHUTDOWN),
                 json.dumps({"version": 0, "brokerEpoch": broker_epoch}, separators=(",", ":")))


def had_clean_shutdown(data_dir: str) -> bool:
    return os.path.exists(os.path.join(data_dir, CLEAN_SHUTDOWN))
