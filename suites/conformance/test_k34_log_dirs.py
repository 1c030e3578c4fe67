"""Log directories (JBOD): DescribeLogDirs (35) and AlterReplicaLogDirs (34).

Rules from KIP-113 (a broker's log directories, the replicas each holds, moving a replica between
them) and Kafka's ``ReplicaManager.describeLogDirs`` / ``alterReplicaLogDirs``
(``core/src/main/scala/kafka/server/ReplicaManager.scala``): every configured directory is
described once, by its absolute path; a partition is in exactly one online directory; a path that
is not a configured directory is LOG_DIR_NOT_FOUND; a replica the broker does not hold is
REPLICA_NOT_AVAILABLE; a moved replica ends up in the directory asked for with every record it
held. A broker with a single log directory cannot move anything: those cases skip, naming why (the
reference broker gets several with ``--broker-config 'log.dirs={data_dir},{data_dir}-b'``).
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from fixtures.wire import Capabilities, Router, WireClient, ops

from .expect import expect, expect_code, expect_equal

FEATURE = "Log directories"
MOVE_WAIT_S = 30.0
"""How long a move may take: Kafka copies in the background (ReplicaAlterLogDirsThread)."""


def _describe(wire: WireClient, version: int, topics: Any = None) -> Any:
    answer = wire.request("describe_log_dirs", version, topics=topics)
    if version >= 3:
        expect_code(answer.error_code, "NONE", rule="KIP-113")
    return answer


def _holders(answer: Any, topic: str, partition: int) -> list[tuple[str, bool]]:
    """(log dir, is future) of every entry naming the partition."""
    return [
        (str(d.log_dir), bool(p.is_future_key))
        for d in answer.results
        for t in d.topics
        if t.name == topic
        for p in t.partitions
        if int(p.partition_index) == partition
    ]


def _alter(wire: WireClient, version: int, path: str, topic: str, partition: int) -> Any:
    answer = wire.request(
        "alter_replica_log_dirs",
        version,
        dirs=[{"path": path, "topics": [{"name": topic, "partitions": [partition]}]}],
    )
    codes = [p.error_code for t in answer.results for p in t.partitions]
    expect_equal(len(codes), 1, "KIP-113", "partition results for one partition asked")
    return codes[0]


def _online_dirs(wire: WireClient, version: int) -> list[str]:
    return [str(d.log_dir) for d in _describe(wire, version, topics=[]).results if d.error_code.value == 0]


@pytest.mark.versions("describe_log_dirs")
def test_describe_log_dirs_describes_each_directory_once(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-113: every log directory once, by an absolute path; the partition in exactly one online
    directory, not as a future replica once settled; v4+ total bytes at least the usable bytes;
    an empty topic list describes the directories without partitions."""
    ops.produce_values(router, caps, topic, [b"v" * 100])
    leader = router.to_leader(topic)
    answer = _describe(leader, version)
    paths = [str(d.log_dir) for d in answer.results]
    expect(len(paths) >= 1 and len(set(paths)) == len(paths), "KIP-113", f"directories {paths}")
    expect(all(p.startswith("/") or p[1:3] == ":\\" for p in paths), "KIP-113", f"absolute paths: {paths}")
    online = [d for d in answer.results if d.error_code.value == 0]
    expect_equal(
        len([h for h in _holders(answer, topic, 0) if not h[1]]), 1, "KIP-113", "directories holding it"
    )
    if version >= 4:
        for d in online:
            expect(
                int(d.total_bytes) >= int(d.usable_bytes) >= 0, "KIP-827", f"{d.log_dir}: total/usable bytes"
            )
    for d in online:
        for t in d.topics:
            for p in t.partitions:
                expect(int(p.partition_size) >= 0 and int(p.offset_lag) >= 0, "KIP-113", f"{t.name}-{p}")
    none = _describe(leader, version, topics=[])
    expect(all(not d.topics for d in none.results), "KIP-113", "an empty topic list describes no partition")


@pytest.mark.versions("alter_replica_log_dirs")
def test_alter_replica_log_dirs_refuses_a_path_that_is_not_a_log_dir(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-113: a destination that is not one of the broker's log directories is LOG_DIR_NOT_FOUND
    (nothing is created there)."""
    ops.produce_values(router, caps, topic, [b"v"])
    leader = router.to_leader(topic)
    code = _alter(leader, version, f"/nonexistent-kh-{time.time_ns()}", topic, 0)
    expect_code(code, "LOG_DIR_NOT_FOUND", rule="KIP-113")


@pytest.mark.versions("alter_replica_log_dirs")
def test_alter_replica_log_dirs_for_a_replica_not_held(
    version: int, router: Router, caps: Capabilities
) -> None:
    """Kafka's alterReplicaLogDirs: a replica the broker does not hold is REPLICA_NOT_AVAILABLE."""
    wire = router.any()
    dirs = _online_dirs(wire, caps.best("describe_log_dirs"))
    if not dirs:
        pytest.skip("the broker describes no online log directory")
    code = _alter(wire, version, dirs[0], f"kh-never-created-{time.time_ns()}", 0)
    expect_code(code, "REPLICA_NOT_AVAILABLE", rule="KIP-113")


@pytest.mark.versions("alter_replica_log_dirs")
def test_alter_replica_log_dirs_moves_a_replica_with_its_records(
    version: int, router: Router, caps: Capabilities, topic: str
) -> None:
    """KIP-113: a replica moved to another log directory of its broker is found there (not as a
    future replica) once the move completes, with every record it held; it keeps taking writes."""
    values = [b"record-%d" % i for i in range(20)]
    ops.produce_values(router, caps, topic, values)
    leader = router.to_leader(topic)
    describe = caps.best("describe_log_dirs")
    online = _online_dirs(leader, describe)
    if len(online) < 2:
        pytest.skip(
            f"the partition's broker has {len(online)} online log directory: nowhere to move a replica"
        )
    asked = [{"topic": topic, "partitions": [0]}]
    (source,) = {d for d, future in _holders(_describe(leader, describe, asked), topic, 0) if not future}
    dest = next(d for d in online if d != source)
    expect_code(_alter(leader, version, dest, topic, 0), "NONE", rule="KIP-113")
    deadline = time.monotonic() + MOVE_WAIT_S
    holders = _holders(_describe(leader, describe, asked), topic, 0)
    while holders != [(dest, False)] and time.monotonic() < deadline:
        time.sleep(0.2)
        holders = _holders(_describe(leader, describe, asked), topic, 0)
    expect_equal(holders, [(dest, False)], "KIP-113", f"where the replica is within {MOVE_WAIT_S:.0f} s")
    _, entry = ops.fetch(router, caps, topic, 0)
    expect_equal([r.value for r in ops.data_records(entry)], values, "KIP-113", "records after the move")
    written = ops.produce_values(router, caps, topic, [b"after"])
    expect_code(written.error_code, "NONE", rule="KIP-113")
    expect_equal(int(written.base_offset), len(values), "KIP-113", "the next offset after the move")
