"""A failed log directory (JBOD) on one broker of a reference cluster launched here.

``log-dir-fail`` fails the log directory that holds partition 0 on its leader, the way Kafka's
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
LOG_DIRS_CONFIG = "log.dirs={data_dir},{data_dir}-jbod"
"""Two log directories per reference node: its data directory and a sibling (``{data_dir}``: the
launcher puts each node's own)."""


@dataclass(frozen=True)
class FailedDir:
    path: str
    aside: str


def holding_dir(address: str, topic: str, partition: int) -> tuple[str | None, int]:
    """(the online log directory of the broker at ``address`` holding the partition, how many online
    log directories it has), from DescribeLogDirs."""
    wire = WireClient(address)
    try:
        answer = wire.request("describe_log_dirs", 1, topics=[{"topic": topic, "partitions": [partition]}])
    finally:
        wire.close()
    online = [d for d in answer.results if d.error_code.value == 0]
    holders = [
        str(d.log_dir)
        for d in online
        for t in d.topics
        if t.name == topic
        and any(int(p.partition_index) == partition and not p.is_future_key for p in t.partitions)
    ]
    return (holders[0] if holders else None), len(online)


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
