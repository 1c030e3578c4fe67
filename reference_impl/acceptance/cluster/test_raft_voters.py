"""AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter (82) on the controller listeners of a
3-node combined reference cluster, each version: the quorum leader answers Kafka's request checks,
then UNSUPPORTED_VERSION (a process cluster is formatted at kraft.version 0, static voters); another
voter answers NOT_LEADER_OR_FOLLOWER.

Kafka's rules: ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``
``handleAddVoterRequest`` / ``handleRemoveVoterRequest`` / ``handleUpdateVoterRequest`` (cluster
id, ``validateLeaderOnlyRequest`` with UpdateRaftVoter's epoch, the voter's directory id, its
endpoint on the default controller listener, the kraft.version range) and ``internals/
AddVoterHandler.java`` (UNSUPPORTED_VERSION at kraft.version 0). The voters' own replies are what
``core/kraft/voter_admin.py`` serves; the simulator covers kraft.version 1 (``sim/raft/voter_fuzz.py``).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator

import pytest

from fixtures.targets import Target, launch
from fixtures.wire.voters import add_raft_voter, remove_raft_voter, update_raft_voter

from .test_controller_listener import NODES, _controller, _quorum
from .workload import CLUSTER_CONFIGS, wait_for

pytestmark = [pytest.mark.slow]

LISTENERS = {"CONTROLLER": ("127.0.0.1", 1)}
STRANGER = 99


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Target]:
    workdir = tmp_path_factory.mktemp("raft-voters")
    with launch("reference", workdir=workdir, brokers=len(NODES), broker_configs=CLUSTER_CONFIGS) as target:
        yield target


def test_voter_apis_on_the_controller_listener(cluster: Target) -> None:
    wait_for(lambda: _quorum(cluster)[0] in NODES, 30.0, "a quorum leader")
    leader, epoch = _quorum(cluster)
    follower = next(n for n in NODES if n != leader)
    started = time.monotonic()
    with _controller(cluster, leader) as on_leader, _controller(cluster, follower) as on_follower:
        for v in (0, 1):
            stranger = add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), LISTENERS, timeout_ms=5_000)
            assert stranger.error == "UNSUPPORTED_VERSION", (v, stranger)
            wrong = add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), LISTENERS, cluster_id="another")
            assert wrong.error == "INCONSISTENT_CLUSTER_ID", (v, wrong)
            assert add_raft_voter(on_leader, v, STRANGER, None, LISTENERS).error == "INVALID_REQUEST"
            other = {"EXTERNAL": ("127.0.0.1", 1)}
            assert add_raft_voter(on_leader, v, STRANGER, uuid.uuid4(), other).error == "INVALID_REQUEST"
            refused = add_raft_voter(on_follower, v, STRANGER, uuid.uuid4(), LISTENERS)
            assert refused.error == "NOT_LEADER_OR_FOLLOWER", (v, refused)
        assert remove_raft_voter(on_leader, 0, follower, uuid.uuid4()).error == "UNSUPPORTED_VERSION"
        assert remove_raft_voter(on_leader, 0, follower, None).error == "INVALID_REQUEST"
        assert remove_raft_voter(on_follower, 0, follower, uuid.uuid4()).error == "NOT_LEADER_OR_FOLLOWER"
        key = (follower, uuid.uuid4())
        stale = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch - 1)
        assert stale.error == "FENCED_LEADER_EPOCH" and stale.leader == (leader, epoch), stale
        ahead = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch + 1)
        assert ahead.error == "UNKNOWN_LEADER_EPOCH", ahead
        upside_down = update_raft_voter(
            on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch, kraft_versions=(1, 0)
        )
        assert upside_down.error == "INVALID_REQUEST", upside_down
        static = update_raft_voter(on_leader, 0, *key, LISTENERS, current_leader_epoch=epoch)
        assert static.error == "UNSUPPORTED_VERSION", static
    print(f"leader {leader} epoch {epoch}: 17 voter requests answered in {time.monotonic() - started:.2f} s")
