"""Issue 17, item 8: listeners as Kafka names them, and the controller listener that alone serves
the quorum and registration APIs.

Config rules from ``core/src/main/scala/kafka/server/KafkaConfig.scala`` (``validateValues``,
``effectiveListenerSecurityProtocolMap``) and ``core/src/main/scala/kafka/utils/CoreUtils.scala``
(``listenerListToEndPoints``); which listener serves which API from the ``"listeners"`` field of
``clients/src/main/resources/common/message/*Request.json``, enforced as Kafka's
``core/src/main/scala/kafka/network/SocketServer.scala`` does (``parseRequestHeader`` throws for
an API the listener does not enable, ``ApiVersionManager.isApiEnabled``; the connection closes).
"""

from __future__ import annotations

import json
import struct
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import pytest

from reference_impl import defects
from reference_impl.core.broker import Broker
from reference_impl.core.configs.model import ConfigError
from reference_impl.core.configs.resolution import BrokerConfig
from reference_impl.core.handlers import HANDLERS
from reference_impl.core.kraft.quorum import QuorumPorts
from reference_impl.core.kraft.roles import CONTROLLER_LISTENER_APIS, CONTROLLER_ONLY_APIS
from reference_impl.core.listeners import Endpoint, listener_setup
from reference_impl.core.ports import MemoryLogStore
from reference_impl.core.raft.quorum_state import MemoryQuorumStateStore, encode_quorum_state
from reference_impl.core.raft.raft_log import MemorySnapshotStore
from reference_impl.core.raft.states import ElectionState
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.frames import size_prefix

from .harness import BrokerHarness, request


def test_a_combined_node_binds_both_and_advertises_the_broker_listener() -> None:
    setup = listener_setup(
        "PLAINTEXT://127.0.0.1:9092,CONTROLLER://127.0.0.1:9093",
        "PLAINTEXT://proxy:7092",
        controller_names="controller",
        is_controller=True,
        kraft=True,
    )
    assert setup.listeners == (
        Endpoint("PLAINTEXT", "127.0.0.1", 9092, "PLAINTEXT"),
        Endpoint("CONTROLLER", "127.0.0.1", 9093, "PLAINTEXT"),  # KRaft's implicit PLAINTEXT mapping
    )
    assert setup.advertised == (Endpoint("PLAINTEXT", "proxy", 7092, "PLAINTEXT"),)
    assert setup.inter_broker == Endpoint("PLAINTEXT", "proxy", 7092, "PLAINTEXT")
    assert setup.is_controller("CONTROLLER") and not setup.is_controller("PLAINTEXT")


@pytest.mark.parametrize(
    ("listeners", "kwargs", "says"),
    [
        ("PLAINTEXT://h:1", {"kraft": True, "is_controller": True}, "must contain at least one value"),
        (
            "PLAINTEXT://h:1",
            {"kraft": True, "is_controller": True, "controller_names": "CONTROLLER"},
            "must only contain values appearing in the 'listeners'",
        ),
        (
            "PLAINTEXT://h:1,CONTROLLER://h:2",
            {"kraft": True, "controller_names": "CONTROLLER"},
            "must not contain a value appearing in the 'listeners' configuration when running KRaft with "
            "just the broker role",
        ),
        (
            "PLAINTEXT://h:1,CONTROLLER://h:2",
            {"kraft": True, "controller_names": "CONTROLLER", "is_controller": True, "is_broker": False},
            "must only contain KRaft controller listeners",
        ),
        ("PLAINTEXT://h:1,PLAINTEXT://h:2", {}, "Each listener must have a different name"),
        (
            "PLAINTEXT://h:1,INTERNAL://h:1",
            {"explicit_protocol_map": "PLAINTEXT:PLAINTEXT,INTERNAL:PLAINTEXT"},
            "different port",
        ),
        ("INTERNAL://h:1", {}, "no security protocol defined for listener INTERNAL"),
        ("PLAINTEXT://h:1", {"explicit_protocol_map": "PLAINTEXT:TLS"}, "Invalid security protocol `TLS`"),
        ("PLAINTEXT:/h:1", {}, "is not NAME://HOST:PORT"),
        ("PLAINTEXT://0.0.0.0:1", {}, "cannot use the nonroutable meta-address 0.0.0.0"),
        ("", {}, "no listener"),
    ],
)
def test_setups_kafka_refuses_are_refused_with_its_words(
    listeners: str, kwargs: dict[str, object], says: str
) -> None:
    with pytest.raises(ConfigError) as refused:
        listener_setup(listeners, None, **kwargs)  # type: ignore[arg-type]
    assert says in str(refused.value)


def test_a_lone_voter_needs_no_controller_listener_but_a_voter_among_others_does() -> None:
    """A single broker is the only voter of its quorum (issue 24): its client listener is enough."""
    alone = listener_setup("PLAINTEXT://h:1", None, kraft=True, is_controller=True, lone_voter=True)
    assert [e.name for e in alone.listeners] == ["PLAINTEXT"] and alone.controller_names == ()
    with pytest.raises(ConfigError, match="must contain at least one value"):
        listener_setup("PLAINTEXT://h:1", None, kraft=True, is_controller=True)
    with pytest.raises(ConfigError, match="must only contain values appearing"):  # one it names is checked
        listener_setup(
            "PLAINTEXT://h:1", None, kraft=True, is_controller=True, lone_voter=True, controller_names="C"
        )


def test_a_cluster_node_may_link_over_secured_listeners() -> None:
    """Inter-broker and controller listeners on SSL / SASL_SSL (the shell's links speak them)."""
    setup = listener_setup(
        "SASL_SSL://h:1,CONTROLLER://h:2",
        None,
        inter_broker_name="SASL_SSL",
        kraft=True,
        controller_names="CONTROLLER",
        is_controller=True,
        explicit_protocol_map="SASL_SSL:SASL_SSL,CONTROLLER:SSL",
    )
    assert setup.inter_broker is not None and setup.inter_broker.protocol == "SASL_SSL"
    assert [e.protocol for e in setup.listeners if setup.is_controller(e.name)] == ["SSL"]


def _cluster_node(harness: BrokerHarness) -> Broker:
    """Node 1, the one voter of its quorum, with a controller listener; ticked until it leads."""
    broker = Broker(
        config=BrokerConfig.parse(
            1, ["controller.quorum.voters=1@127.0.0.1:9093", "controller.listener.names=CONTROLLER"]
        ),
        store=MemoryLogStore(),
        advertised_host="127.0.0.1",
        advertised_port=9092,
        cluster_id="test-cluster",
        now_ms=harness.now_ms,
        quorum=QuorumPorts({1: ("127.0.0.1", 9093)}, MemoryQuorumStateStore(), MemorySnapshotStore()),
    )
    harness.broker = broker
    for _ in range(40):
        harness.advance(100)
    assert broker.quorum is not None and broker.quorum.raft.is_leader and broker.quorum.ready
    return broker


def _advertised(harness: BrokerHarness, listener: str) -> set[int]:
    cid = harness.connect(listener)
    answer = harness.call(request(18, 3, client_software_name="t", client_software_version="1"), cid)
    return {int(k.api_key) for k in answer.api_keys}


def _header_only(api_key: int) -> bytes:
    """A request frame of ``api_key`` at its lowest version: the listener check comes before the body."""
    header = struct.pack(">hhih", api_key, HANDLERS[api_key].min_version, 1, 2) + b"kh"
    return size_prefix(len(header)) + header


def test_the_client_listener_neither_advertises_nor_serves_the_controllers_apis() -> None:
    harness = BrokerHarness()
    _cluster_node(harness)
    client = _advertised(harness, "PLAINTEXT")
    assert not client & CONTROLLER_ONLY_APIS and {0, 1, 3, 18, 55} <= client
    assert _advertised(harness, "CONTROLLER") == set(HANDLERS) & CONTROLLER_LISTENER_APIS
    for api_key in sorted(CONTROLLER_ONLY_APIS):
        cid = harness.connect("PLAINTEXT")
        harness.send_frame(cid, _header_only(api_key))
        assert "is not enabled on listener PLAINTEXT" in harness.closed.get(cid, ""), api_key
        assert not harness.responses.get(cid)
    cid = harness.connect("CONTROLLER")
    harness.send_frame(cid, _header_only(3))  # Metadata: a broker API
    assert "metadata v" in harness.closed[cid] and "listener CONTROLLER" in harness.closed[cid]


def _fetch(topic_id: uuid.UUID, replica_id: int = -1, epoch: int = -1) -> Any:
    partition = {
        "partition": 0,
        "current_leader_epoch": epoch,
        "fetch_offset": 0,
        "last_fetched_epoch": 0,
        "log_start_offset": -1,
        "partition_max_bytes": 1 << 20,
    }
    fields: dict[str, Any] = {"max_wait": 0, "min_bytes": 0, "max_bytes": 1 << 20, "isolation_level": 0}
    fields |= {"session_id": 0, "session_epoch": -1, "forgotten_topics_data": [], "rack_id": ""}
    fields["replica_id"] = replica_id
    return request(1, 13, topics=[{"topic_id": topic_id, "partitions": [partition]}], **fields)


def test_the_metadata_log_is_fetched_on_the_controller_listener_only() -> None:
    """A client's Fetch of ``__cluster_metadata`` on the client listener is a fetch of a topic no
    broker hosts (UNKNOWN_TOPIC_ID, KIP-516); on the controller listener a replica's fetch is served
    and a fetch of any other partition is INVALID_REQUEST (``KafkaRaftClient.handleFetchRequest``)."""
    harness = BrokerHarness()
    node = _cluster_node(harness)
    assert node.quorum is not None
    body = _fetch(uuid.UUID(int=1), replica_id=1, epoch=node.quorum.raft.epoch)
    on_client = harness.call(body, harness.connect("PLAINTEXT"))
    [partition] = on_client.responses[0].partitions
    assert partition.error_code == ErrorCode.unknown_topic_id and not partition.records
    served = harness.call(body, harness.connect("CONTROLLER"))
    assert served.responses[0].partitions[0].error_code == ErrorCode.none
    other = _fetch(uuid.UUID(int=9))
    assert harness.call(other, harness.connect("CONTROLLER")).error_code == ErrorCode.invalid_request


def test_the_seeded_defect_serves_the_quorum_on_the_client_listener() -> None:
    with defects.seeded(defects.QUORUM_ON_CLIENT_LISTENER):
        harness = BrokerHarness()
        _cluster_node(harness)
        assert _advertised(harness, "PLAINTEXT") >= CONTROLLER_ONLY_APIS


def _broker_command(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "kafka_harness",
            "broker",
            "--node-id",
            "1",
            "--data-dir",
            str(tmp_path / "d"),
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (
            ["--listen", "127.0.0.1:0", "--controller-quorum-voters", "1@127.0.0.1:1,2@127.0.0.1:2"],
            "controller.listener.names must contain at least one value",  # a voter among others
        ),
        (
            [
                *("--listen", "127.0.0.1:0", "--controller-quorum-voters", "2@127.0.0.1:1"),
                *("--config", "listeners=CONTROLLER://127.0.0.1:0"),
                *("--config", "controller.listener.names=CONTROLLER"),
            ],
            "must not contain a value appearing in the 'listeners' configuration",
        ),
        ([], "no listener: give --listen HOST:PORT"),
    ],
)
def test_the_broker_command_refuses_a_listener_setup_kafka_refuses(
    tmp_path: Path, args: list[str], says: str
) -> None:
    done = _broker_command(tmp_path, *args)
    assert done.returncode == 2 and says in done.stderr, done.stderr


def test_a_node_whose_quorum_state_is_out_of_range_refuses_to_start(tmp_path: Path) -> None:
    """Never a silent reset: the file is named and the node stops (Kafka's
    ``raft/src/main/java/org/apache/kafka/raft/FileQuorumStateStore.java`` throws on a file it cannot
    read). The issue's nodes wrote epoch 2^31 and every later start failed obscurely."""
    data = tmp_path / "d"
    data.mkdir()
    poisoned = json.loads(encode_quorum_state(ElectionState(3, None, None, (1,)), "qc"))
    (data / "quorum-state").write_text(json.dumps({**poisoned, "leaderEpoch": 2**31}))
    done = _broker_command(
        tmp_path,
        "--listen", "127.0.0.1:0", "--cluster-id", "qc", "--controller-quorum-voters", "1@127.0.0.1:1",
        "--config", "listeners=CONTROLLER://127.0.0.1:0", "--config", "controller.listener.names=CONTROLLER",
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        "quorum-state" in done.stderr
        and "epoch 2147483648" in done.stderr
        and "refusing to start" in done.stderr
    )
    assert json.loads((data / "quorum-state").read_text())["leaderEpoch"] == 2**31, "the file was rewritten"
