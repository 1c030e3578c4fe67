"""Checkpoint and metadata files: byte-exact Kafka text formats, round trips, atomic replacement."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import pytest

from reference_impl.log.checkpoints import (
    CheckpointError,
    MetaProperties,
    kafka_uuid_string,
    parse_kafka_uuid,
    read_epochs,
    read_meta_properties,
    read_offsets,
    read_partition_metadata,
    write_clean_shutdown,
    write_epochs,
    write_meta_properties,
    write_offsets,
    write_partition_metadata,
)


def test_offset_checkpoint_is_byte_exact(tmp_path: Path) -> None:
    """Kafka's OffsetCheckpointFile: version 0, count, then `topic partition offset` lines, newline-ended."""
    path = tmp_path / "recovery-point-offset-checkpoint"
    write_offsets(str(path), {("orders", 1): 42, ("my.topic_x-y", 0): 7})
    assert path.read_bytes() == b"0\n2\nmy.topic_x-y 0 7\norders 1 42\n"
    assert read_offsets(str(path)) == {("orders", 1): 42, ("my.topic_x-y", 0): 7}
    assert not (tmp_path / "recovery-point-offset-checkpoint.tmp").exists()


def test_empty_and_absent_checkpoints_hold_nothing(tmp_path: Path) -> None:
    """Kafka creates checkpoint files empty and reads an empty or absent file as no entries."""
    (tmp_path / "empty").write_bytes(b"")
    assert read_offsets(str(tmp_path / "empty")) == {}
    assert read_offsets(str(tmp_path / "absent")) == {}
    write_offsets(str(tmp_path / "none"), {})
    assert (tmp_path / "none").read_bytes() == b"0\n0\n"


def test_leader_epoch_checkpoint_is_byte_exact(tmp_path: Path) -> None:
    """Kafka's leader-epoch-checkpoint: version 0, count, `epoch startOffset` lines oldest first."""
    path = tmp_path / "leader-epoch-checkpoint"
    write_epochs(str(path), [(0, 0), (3, 150), (4, 900)])
    assert path.read_bytes() == b"0\n3\n0 0\n3 150\n4 900\n"
    assert read_epochs(str(path)) == [(0, 0), (3, 150), (4, 900)]
    assert read_epochs(str(tmp_path / "absent")) is None


@pytest.mark.parametrize("text", [
    "1\n0\n",  # unknown version
    "0\n2\nt 0 1\n",  # count disagrees with the lines
    "0\n1\nt 0\n",  # a line short of a field
    "0\nx\n",  # count not a number
    "0\n1\nt zero 1\n",  # partition not a number
])
def test_malformed_offset_checkpoint_is_rejected(tmp_path: Path, text: str) -> None:
    """Kafka refuses a malformed checkpoint (IOException: malformed line) rather than guessing."""
    path = tmp_path / "replication-offset-checkpoint"
    path.write_text(text)
    with pytest.raises(CheckpointError, match="replication-offset-checkpoint"):
        read_offsets(str(path))


def test_kafka_uuid_strings_round_trip() -> None:
    """Kafka's Uuid.toString is URL-safe base64 without padding (22 characters)."""
    value = uuid.UUID("a1b2c3d4-e5f6-4789-8abc-def012345678")
    text = kafka_uuid_string(value)
    assert len(text) == 22 and "=" not in text
    assert parse_kafka_uuid(text) == value
    with pytest.raises(CheckpointError):
        parse_kafka_uuid("short")


def test_partition_metadata_format(tmp_path: Path) -> None:
    """Kafka's PartitionMetadataFile: `version: 0` and `topic_id: <uuid>` lines."""
    topic_id = uuid.uuid4()
    write_partition_metadata(str(tmp_path), topic_id)
    text = (tmp_path / "partition.metadata").read_text()
    assert text == f"version: 0\ntopic_id: {kafka_uuid_string(topic_id)}\n"
    assert read_partition_metadata(str(tmp_path)) == topic_id


def test_meta_properties_v1_round_trip(tmp_path: Path) -> None:
    """KRaft meta.properties version 1 carries cluster.id, node.id and directory.id."""
    directory_id = uuid.uuid4()
    write_meta_properties(str(tmp_path), MetaProperties("Zm9vYmFyYmF6cXV4cXV1eA", 3, directory_id))
    lines = (tmp_path / "meta.properties").read_text().splitlines()
    assert sorted(lines) == sorted([
        "cluster.id=Zm9vYmFyYmF6cXV4cXV1eA", f"directory.id={kafka_uuid_string(directory_id)}",
        "node.id=3", "version=1"])
    assert read_meta_properties(str(tmp_path)) == MetaProperties("Zm9vYmFyYmF6cXV4cXV1eA", 3, directory_id)


def test_meta_properties_as_kafka_writes_it_with_comments(tmp_path: Path) -> None:
    """Java Properties files start with `#` comment lines (Kafka writes a date); they are skipped."""
    (tmp_path / "meta.properties").write_text(
        "#\n#Sun Nov 22 18:00:00 UTC 2026\nnode.id=1\nversion=1\ncluster.id=abc\n")
    assert read_meta_properties(str(tmp_path)) == MetaProperties("abc", 1, None)


def test_meta_properties_version_0_is_not_kraft(tmp_path: Path) -> None:
    """A version 0 (ZooKeeper-era) meta.properties is not a KRaft directory."""
    (tmp_path / "meta.properties").write_text("version=0\nbroker.id=1\ncluster.id=abc\n")
    with pytest.raises(CheckpointError, match="version"):
        read_meta_properties(str(tmp_path))


def test_clean_shutdown_file_content(tmp_path: Path) -> None:
    """Kafka 3.7+ writes the broker epoch in .kafka_cleanshutdown as JSON (KIP-966)."""
    write_clean_shutdown(str(tmp_path), 17)
    assert json.loads((tmp_path / ".kafka_cleanshutdown").read_text()) == {"version": 0, "brokerEpoch": 17}
