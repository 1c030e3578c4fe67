"""Metadata snapshots on a three-broker reference cluster (real processes).

With ``metadata.log.max.record.bytes.between.snapshots`` small, every node writes snapshots of its
metadata image as topics are created, and the metadata log starts at the latest one. A broker
SIGKILLed while more topics are created comes back behind the leader's log start: it must catch
up through FetchSnapshot, and ends with the same topics as the others.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic  # type: ignore[attr-defined]

from fixtures.targets import Node, Target, launch
from fixtures.wire import WireClient

from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow, pytest.mark.clients]

SNAPSHOT_BYTES = 2048
METADATA_DIR = "__cluster_metadata-0"


def _snapshots(workdir: Path, node_id: int) -> list[int]:
    """End offsets of the snapshot files in a node's metadata log directory."""
    directory = workdir / f"node-{node_id}" / METADATA_DIR
    return sorted(int(p.name.split("-")[0]) for p in directory.glob("*.checkpoint"))


def _topics_on(node: Node) -> set[str]:
    with WireClient(f"{node.host}:{node.advertised_port}", timeout_s=10) as client:
        answer = client.request(3, 12, topics=None, allow_auto_topic_creation=False)
        return {t.name for t in answer.topics}


def _controller_named_by(node: Node) -> int:
    with WireClient(f"{node.host}:{node.advertised_port}", timeout_s=10) as client:
        return int(client.request(3, 12, topics=[], allow_auto_topic_creation=False).controller_id)


def _create(target: Target, names: list[str]) -> None:
    admin = AdminClient({"bootstrap.servers": target.bootstrap_servers})
    for future in admin.create_topics([NewTopic(n, 1, 3) for n in names]).values():
        future.result(30)


def test_snapshots_are_taken_and_a_lagging_broker_catches_up_from_one(tmp_path: Path) -> None:
    configs = (*CLUSTER_CONFIGS, f"metadata.log.max.record.bytes.between.snapshots={SNAPSHOT_BYTES}")
    with launch("reference", workdir=tmp_path, brokers=3, broker_configs=configs) as target:
        first = [f"snap-a-{i}" for i in range(30)]
        _create(target, first)
        wait_for(lambda: all(_snapshots(tmp_path, n) for n in (1, 2, 3)), 30, "every node wrote a snapshot")
        victim = 3
        before = _snapshots(tmp_path, victim)[-1]
        target.node(victim).kill()
        live = [n for n in target.nodes if n.node_id != victim]
        # When the victim was the active controller, Metadata names it until the quorum elects
        # another, and librdkafka's admin client then waits on the dead node instead of asking
        # again (Kafka names a random live broker, which can be the dead one too): create once
        # the live nodes name a controller that is up, since this test is about snapshots.
        wait_for(
            lambda: all(_controller_named_by(n) != victim for n in live),
            30,
            f"the live nodes name a controller other than broker {victim}",
        )
        second = [f"snap-b-{i}" for i in range(40)]
        _create(target, second)
        wait_for(
            lambda: max(_snapshots(tmp_path, n.node_id)[-1] for n in live) > before,
            30,
            "the live nodes snapshot past the victim's last snapshot",
        )
        started = time.monotonic()
        target.node(victim).start()
        everything = set(first) | set(second)
        wait_for(
            lambda: everything <= _topics_on(target.node(victim)),
            60,
            f"broker {victim} lists all {len(everything)} topics",
        )
        caught_up = time.monotonic() - started
        after = _snapshots(tmp_path, victim)[-1]
        print(
            f"snapshots per node {[len(_snapshots(tmp_path, n)) for n in (1, 2, 3)]} (older ones pruned); "
            f"broker {victim}: last snapshot {before} before the kill, {after} after; "
            f"all {len(everything)} topics listed {caught_up:.2f} s after its restart"
        )
        assert after > before, f"broker {victim} has no newer snapshot than {before} after catching up"
        loaded = [
            int(line.rsplit(" ", 1)[1])
            for line in (tmp_path / f"node-{victim}.log").read_text().splitlines()
            if "metadata image loaded from the snapshot ending at offset" in line
        ]
        assert any(offset > before for offset in loaded), (
            f"broker {victim} loaded snapshots at {loaded}: none newer than its own {before}, so it did not "
            "catch up through FetchSnapshot"
        )
        for node in live:
            assert everything <= _topics_on(node), f"broker {node.node_id} lacks topics"
