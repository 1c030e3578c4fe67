"""AddRaftVoter (key 80) and RemoveRaftVoter (key 81): the metadata quorum's voters changed over the
protocol (KIP-853), sent to a broker, which forwards them to the active controller.

Kafka's rules: ``raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java``
``handleAddVoterRequest`` / ``handleRemoveVoterRequest`` (a cluster id other than the quorum's is
INCONSISTENT_CLUSTER_ID; a voter without a directory id is INVALID_REQUEST), ``internals/
AddVoterHandler.java`` and ``RemoveVoterHandler.java`` (with kraft.version 0, a static quorum,
UNSUPPORTED_VERSION; with kraft.version 1 a replica that never fetched cannot be added,
REQUEST_TIMED_OUT, and a key that is no voter cannot be removed, VOTER_NOT_FOUND), and
``core/src/main/scala/kafka/server/KafkaApis.scala`` (a broker forwards both to the controller).
UpdateRaftVoter (82) is a controller-listener API: ``test_controller_listener.py`` checks a client
listener refuses it.

Target-agnostic: the target's kraft.version is read from its ApiVersions (not finalized: 0). No case
changes the quorum: the voters named are ids no replica has.
"""

from __future__ import annotations

import uuid

import pytest

from fixtures.wire import Capabilities, WireClient
from fixtures.wire.voters import add_raft_voter, remove_raft_voter

from .expect import expect_code

FEATURE = "Raft voters"
ADD = "AddVoterHandler.java"
REMOVE = "RemoveVoterHandler.java"
CLIENT = "KafkaRaftClient.java handle*VoterRequest"
STRANGER = 987_654
"""A replica id no node of the target has."""
LISTENERS = {"CONTROLLER": ("127.0.0.1", 1)}
"""The new voter's endpoint on the controller listener (named as Kafka's quickstart and the
reference name it)."""


def _kraft_version(wire: WireClient, caps: Capabilities) -> int:
    versions = caps.versions("api_versions", 3)
    if not versions:
        pytest.skip("the target does not advertise ApiVersions v3+ (no finalized features)")
    answer = wire.request(
        "api_versions", versions[-1], client_software_name="kh", client_software_version="1"
    )
    finalized = {str(f.name): int(f.max_version_level) for f in answer.finalized_features or []}
    return finalized.get("kraft.version", 0)


def _versions(caps: Capabilities, api: str) -> list[int]:
    versions = caps.versions(api)
    if not versions:
        pytest.skip(f"the target does not advertise {api} on its client listener")
    return versions


def test_add_raft_voter_per_version(wire: WireClient, caps: Capabilities) -> None:
    """Each advertised version: the request checks, then the handler's answer for a replica that
    never fetched (UNSUPPORTED_VERSION on a static quorum, REQUEST_TIMED_OUT on a dynamic one)."""
    kraft = _kraft_version(wire, caps)
    for v in _versions(caps, "add_raft_voter"):
        where = f"v{v}"
        wrong = add_raft_voter(wire, v, STRANGER, uuid.uuid4(), LISTENERS, cluster_id="not-this-cluster")
        expect_code(wrong.error, "INCONSISTENT_CLUSTER_ID", rule=CLIENT, where=where)
        nodir = add_raft_voter(wire, v, STRANGER, None, LISTENERS, timeout_ms=5_000)
        expect_code(nodir.error, "INVALID_REQUEST", rule=CLIENT, where=f"{where} without a directory id")
        stranger = add_raft_voter(wire, v, STRANGER, uuid.uuid4(), LISTENERS, timeout_ms=5_000)
        wanted = "UNSUPPORTED_VERSION" if kraft == 0 else "REQUEST_TIMED_OUT"
        expect_code(stranger.error, wanted, rule=ADD, where=f"{where}, kraft.version {kraft}")


def test_remove_raft_voter_per_version(wire: WireClient, caps: Capabilities) -> None:
    """Each advertised version: the request checks, then UNSUPPORTED_VERSION (static quorum) or
    VOTER_NOT_FOUND (dynamic) for a key that is no voter."""
    kraft = _kraft_version(wire, caps)
    for v in _versions(caps, "remove_raft_voter"):
        where = f"v{v}"
        wrong = remove_raft_voter(wire, v, STRANGER, uuid.uuid4(), cluster_id="not-this-cluster")
        expect_code(wrong.error, "INCONSISTENT_CLUSTER_ID", rule=CLIENT, where=where)
        nodir = remove_raft_voter(wire, v, STRANGER, None)
        expect_code(nodir.error, "INVALID_REQUEST", rule=CLIENT, where=f"{where} without a directory id")
        stranger = remove_raft_voter(wire, v, STRANGER, uuid.uuid4())
        wanted = "UNSUPPORTED_VERSION" if kraft == 0 else "VOTER_NOT_FOUND"
        expect_code(stranger.error, wanted, rule=REMOVE, where=f"{where}, kraft.version {kraft}")
