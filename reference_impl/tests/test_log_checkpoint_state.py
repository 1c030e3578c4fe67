"""A checkpoint that cannot be read never drops state silently (issue 17, item 6).

The topic ``nl\\n`` was accepted; its line broke all three offset checkpoints and the broker logged
"malformed ... ignoring it" at the next start: every log start offset went back to its first segment,
and records DeleteRecords had removed came back (log start offset 5 → 0). Kafka's ``CheckpointFile``
read throws on a malformed line
(server-common/src/main/java/org/apache/kafka/server/common/CheckpointFile.java,
``CheckpointReadBuffer``: "Malformed line in checkpoint file"), and ``CheckpointFileWithFailureHandler``
takes the log directory offline; the reference refuses the data directory (``LogDirError``, exit 2).
A field that would not read back (a name holding a separator) is refused when written, so the file is
never corrupted in the first place.
"""

from __future__ import annotations

import uuid
from pathlib import Path

import pytest

from reference_impl.log.checkpoints import (
    LEADER_EPOCH_CHECKPOINT,
    LOG_START_CHECKPOINT,
    PARTITION_METADATA,
    RECOVERY_POINT_CHECKPOINT,
    REPLICATION_CHECKPOINT,
    CheckpointError,
    read_offsets,
    write_offsets,
)
from reference_impl.log.cleaning.cleaner import CLEANER_CHECKPOINT
from reference_impl.log.manager import LogDirError, LogManager
from reference_impl.log.testing import make_batch

TOPIC_ID = uuid.UUID("0f1e2d3c-4b5a-4968-8776-a5b4c3d2e1f0")
MALFORMED_LINE = "nl\n 0 5\n"
"""What the broker wrote for the topic ``nl\\n``: a line with one field, then one with two."""


def _manager(path: Path) -> LogManager:
    return LogManager(str(path), node_id=1, cluster_id="test-cluster")


def _records_deleted_below_5(path: Path) -> None:
    """Ten records in ``t-0``, DeleteRecords to offset 5, checkpoints written, a clean stop."""
    manager = _manager(path)
    log = manager.open_log("t", 0, TOPIC_ID, {}, 1_000)
    for _ in range(5):
        log.append_as_leader(make_batch(2), 0, 1_000)
    log.advance_log_start_offset(5)
    manager.checkpoint({("t", 0): 10})
    manager.close()


def _corrupt(path: Path, name: str) -> None:
    """Append the line the old broker wrote for ``nl\\n`` and fix the count, as it did."""
    text = path.joinpath(name).read_text()
    version, count, *entries = text.splitlines()
    lines = [version, str(int(count) + 1), *entries]
    path.joinpath(name).write_text("\n".join(lines) + "\n" + MALFORMED_LINE)


def test_a_clean_restart_keeps_the_log_start_offset(tmp_path: Path) -> None:
    """The baseline: DeleteRecords to 5, clean restart, the log still starts at 5."""
    _records_deleted_below_5(tmp_path)
    manager = _manager(tmp_path)
    assert manager.open_log("t", 0, TOPIC_ID, {}, 2_000).log_start_offset == 5
    manager.close()


def test_a_malformed_log_start_checkpoint_does_not_reset_the_log_start(tmp_path: Path) -> None:
    """The bug: after a clean restart with the broken log-start-offset-checkpoint the log started at 0
    and the deleted records were readable again. Now the directory is refused, naming the file."""
    _records_deleted_below_5(tmp_path)
    _corrupt(tmp_path, LOG_START_CHECKPOINT)
    with pytest.raises(LogDirError, match=LOG_START_CHECKPOINT):
        manager = _manager(tmp_path)
        start = manager.open_log("t", 0, TOPIC_ID, {}, 2_000).log_start_offset
        manager.close()
        pytest.fail(f"the malformed checkpoint was ignored: the log starts at {start}, not 5")
    _manager_is_released(tmp_path)


@pytest.mark.parametrize("name", [RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT, CLEANER_CHECKPOINT])
def test_every_malformed_offset_checkpoint_refuses_the_directory(tmp_path: Path, name: str) -> None:
    """Recovery points, high watermarks, cleaner offsets: none is dropped for an unreadable file."""
    _records_deleted_below_5(tmp_path)
    if not tmp_path.joinpath(name).exists():
        write_offsets(str(tmp_path / name), {("t", 0): 4})
    _corrupt(tmp_path, name)
    with pytest.raises(LogDirError, match=name):
        _manager(tmp_path)
    _manager_is_released(tmp_path)


@pytest.mark.parametrize("name", [LEADER_EPOCH_CHECKPOINT, PARTITION_METADATA])
def test_a_malformed_partition_file_refuses_the_log(tmp_path: Path, name: str) -> None:
    """A partition's leader-epoch cache is not rebuilt from the batches (an epoch whose leader wrote
    nothing is in no batch) and its topic id is not rewritten (it tells a recreated topic's old data
    apart): Kafka takes the directory offline for either."""
    _records_deleted_below_5(tmp_path)
    tmp_path.joinpath("t-0", name).write_text("garbage\n")
    manager = _manager(tmp_path)
    with pytest.raises(LogDirError, match=name):
        manager.open_log("t", 0, TOPIC_ID, {}, 2_000)
    manager.abandon()


def test_a_name_holding_a_separator_never_reaches_the_file(tmp_path: Path) -> None:
    """Writing ``nl\\n`` (or any field with whitespace) is refused and the file keeps its last good
    contents, which still read back."""
    path = str(tmp_path / REPLICATION_CHECKPOINT)
    write_offsets(path, {("t", 0): 5})
    for bad in ("nl\n", "sp ace", "tab\t", ""):
        with pytest.raises(CheckpointError, match="refusing to write"):
            write_offsets(path, {("t", 0): 7, (bad, 0): 5})
    assert read_offsets(path) == {("t", 0): 5}


def _manager_is_released(path: Path) -> None:
    """A refused directory is not left locked: once repaired, a broker can use it."""
    for name in (LOG_START_CHECKPOINT, RECOVERY_POINT_CHECKPOINT, REPLICATION_CHECKPOINT, CLEANER_CHECKPOINT):
        path.joinpath(name).unlink(missing_ok=True)
    _manager(path).close()
