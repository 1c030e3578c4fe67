"""A failed log directory (JBOD) on one broker of a reference cluster launched here.

``log-dir-fail`` fails a log directory holding partition 0 on its leader (the broker's second one:
partition 0 is moved there first with AlterReplicaLogDirs if it is in the first, which holds the
metadata log, whose failure halts a broker as in Kafka), the way Kafka's
``LogDirFailureTest`` does (``core/src/test/scala/integration/kafka/server/LogDirFailureTest.scala``):
the directory is no longer there and a file stands at its path. Here it is renamed aside (kept, to be
put back) rather than deleted. The broker meets it at its next checkpoint or new file, takes the
directory offline, answers KAFKA_STORAGE_ERROR for its partitions and keeps serving the others; the
controller, told by the broker's heartbeat (KIP-858), moves their leaderships. When the window ends
the broker is stopped, the directory put back and the broker started again (Kafka brings a failed
directory back only with a restart); what was acknowledged must still be readable.

The brokers need several log directories: the campaign gives a reference target
``log.dirs={data_dir},{data_dir}-jbod`` (:data:`LOG_DIRS_CONFIG`) when this fault is asked for.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import dataclass
from pathlib import Path

from fixtures.wire import WireClient

LOG_DIR_FAULTS = ("log-dir-fail",)
EXTRA_DIR_SUFFIX = "-jbod"
LOG_DIRS_CONFIG = "log.dirs={data_dir},{data_dir}" + EXTRA_DIR_SUFFIX
"""Two log directories per reference node: its data directory and a sibling (``{data_dir}``: the
launcher puts each node's own)."""


@dataclass(frozen=True)
class FailedDir:
    path: str
    aside: str


def prepare_dir(address: str, topic: str, partition: int) -> tuple[str, bool]:
    """The broker's extra log directory (``...-jbod``; failing the metadata log's halts the broker, as
    in Kafka), with the partition moved into it first if it is elsewhere (AlterReplicaLogDirs);
    returns (the directory, whether the partition was moved). RuntimeError if there is none."""
    wire = WireClient(address)
    try:
        asked = [{"topic": topic, "partitions": [partition]}]
        answer = wire.request("describe_log_dirs", 1, topics=asked)
        online = [d for d in answer.results if d.error_code.value == 0]
        extra = [str(d.log_dir) for d in online if str(d.log_dir).endswith(EXTRA_DIR_SUFFIX)]
        if not extra:
            raise RuntimeError(f"the broker at {address} has no online {EXTRA_DIR_SUFFIX} log directory")
        held = any(
            t.name == topic and any(int(p.partition_index) == partition for p in t.partitions)
            for d in online
            if str(d.log_dir) == extra[0]
            for t in d.topics
        )
        if held:
            return extra[0], False
        moves = [{"path": extra[0], "topics": [{"name": topic, "partitions": [partition]}]}]
        moved = wire.request("alter_replica_log_dirs", 1, dirs=moves)
        codes = [p.error_code.value for t in moved.results for p in t.partitions]
        if codes != [0]:
            raise RuntimeError(f"AlterReplicaLogDirs of {topic}-{partition} to {extra[0]} answered {codes}")
        return extra[0], True
    finally:
        wire.close()


def fail_dir(path: str, token: str) -> FailedDir:
    """Rename the directory aside and put a file at its path: every new file, checkpoint or listing
    there fails from now on (the broker's open segment descriptors still reach the renamed files)."""
    aside = f"{path}.failed-{token}"
    os.rename(path, aside)
    Path(path).write_text("a log directory failed by the log-dir-fail nemesis\n")
    return FailedDir(path, aside)


def restore_dir(failed: FailedDir) -> None:
    """Put the directory back (the broker is stopped)."""
    with contextlib.suppress(FileNotFoundError, IsADirectoryError):
        os.unlink(failed.path)
    if os.path.isdir(failed.aside) and not os.path.exists(failed.path):
        os.rename(failed.aside, failed.path)
