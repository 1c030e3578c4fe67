"""AddRaftVoter (80), RemoveRaftVoter (81) and UpdateRaftVoter (82) as a KRaft node serves them.

Kafka's sources (read, not copied): raft/src/main/java/org/apache/kafka/raft/KafkaRaftClient.java
``handleAddVoterRequest`` / ``handleRemoveVoterRequest`` / ``handleUpdateVoterRequest`` (in this
order: a cluster id other than the quorum's, INCONSISTENT_CLUSTER_ID; not the leader of the epoch,
``validateLeaderOnlyRequest``: NOT_LEADER_OR_FOLLOWER, and for UpdateRaftVoter, whose request names
an epoch, FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH; a voter without a directory id, or without an
endpoint on the controller listener, or (update) a bad kraft.version range, INVALID_REQUEST; then the
leader's checks of :mod:`reference_impl.core.raft.voter_changes`), core/src/main/scala/kafka/server/
ControllerApis.scala (ALTER on the cluster for add and remove, CLUSTER_ACTION for update; the
request's error response otherwise) and KafkaApis.scala (a broker forwards add and remove to the
controller, ``forwardToControllerOrFail``). Message definitions:
clients/src/main/resources/common/message/AddRaftVoterRequest.json (v1: ``AckWhenCommitted``,
KIP-1186: false answers once the record is written), RemoveRaftVoterRequest.json,
UpdateRaftVoterRequest.json (the response's tagged ``CurrentLeader``).

The answer of a change that must commit waits in the purgatory (:class:`_ChangeAnswer`) until the
Raft replica answers it. Hostile input: at most :data:`MAX_ENDPOINTS` listeners per request (more is
INVALID_REQUEST), and the timeout is clamped to :data:`MAX_TIMEOUT_MS`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any

from kio.schema.errors import ErrorCode

from reference_impl.core.raft.client import RaftClient
from reference_impl.core.raft.membership import format_log
from reference_impl.core.raft.voter_changes import ADD, REMOVE, UPDATE, VoterChange
from reference_impl.core.raft.voter_set import MAX_ENDPOINTS, NO_DIRECTORY, Endpoint, Voter, VoterSet
from reference_impl.log.api import PartitionLog
from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from ..purgatory import DelayedOperation

if TYPE_CHECKING:
    from ..configs.resolution import BrokerConfig
    from ..handlers.registry import Reply, Respond
    from ..request_context import RequestContext

KINDS = {80: ADD, 81: REMOVE, 82: UPDATE}
DEFAULT_TIMEOUT_MS = 30_000
MAX_TIMEOUT_MS = 300_000
"""A voter change waits at most this long for its commit, whatever the request asks."""


class _ChangeAnswer(DelayedOperation):
    """An add or remove held until the Raft replica answers it (its commit, or an error)."""

    def __init__(self, deadline_ms: int, ctx: RequestContext, api_key: int, change: VoterChange) -> None:
        super().__init__(deadline_ms)
        self.ctx = ctx
        self.api_key = api_key
        self.change = change

    def try_complete(self, now_ms: int) -> bool:
        return self.change.done and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        error = self.change.error if self.change.error is not None else ErrorCode.request_timed_out
        self.ctx.respond(answer(self.ctx, self.api_key, error, self.change.message).body)


def answer(
    ctx: RequestContext,
    api_key: int,
    error: ErrorCode,
    message: str | None = None,
    leader: tuple[int, int, str, int] | None = None,
) -> Respond:
    """The response of ``api_key`` in the request's version (``leader``: UpdateRaftVoter's
    CurrentLeader, id, epoch, host, port)."""
    from ..handlers.registry import Respond  # the handlers package imports this module

    body: dict[str, Any] = {"throttle_time": 0, "error_code": error}
    if api_key == 82:
        lid, epoch, host, port = leader or (-1, -1, "", -1)
        body["current_leader"] = {"leader_id": lid, "leader_epoch": epoch, "host": host, "port": port}
    else:
        body["error_message"] = message
    return Respond(build(response_class(api_key, ctx.api_version), body))


def directory_id(cluster_id: str, node_id: int) -> uuid.UUID:
    """A node's log directory id (Kafka's meta.properties ``directory.id``): derived from the
    cluster and node ids, so every initial controller formats the same voter set without asking
    the others (Kafka's ``--initial-controllers`` names them: ``id@host:port:directory-id``)."""
    return uuid.uuid5(uuid.NAMESPACE_URL, f"kafka-harness:{cluster_id}:{node_id}")


def format_initial(
    metadata_log: PartitionLog,
    voters: Mapping[int, tuple[str, int]],
    cluster_id: str,
    config: BrokerConfig,
    now_ms: int,
) -> bool:
    """``kafka-storage format --initial-controllers`` at a node's first start (an empty log): the
    kraft.version 1 bootstrap batch naming every voter of controller.quorum.voters with its
    controller endpoint; True if written."""
    names = config.get("controller.listener.names") or ""
    listener = names.split(",")[0].strip()
    initial = VoterSet(
        tuple(
            Voter(v, directory_id(cluster_id, v), (Endpoint(listener, host, port),) if listener else ())
            for v, (host, port) in sorted(voters.items())
        )
    )
    return format_log(metadata_log, initial, now_ms)


def _directory(request: Any) -> uuid.UUID | None:
    value = getattr(request, "voter_directory_id", None)
    return None if value is None or value == NO_DIRECTORY else value


def _endpoints(request: Any) -> tuple[Endpoint, ...] | None:
    """The request's listeners, or None when there are more than a voter may carry."""
    listeners = getattr(request, "listeners", ()) or ()
    if len(listeners) > MAX_ENDPOINTS:
        return None
    return tuple(Endpoint(str(x.name), str(x.host), int(x.port)) for x in listeners)


def _timeout_ms(request: Any) -> int:
    value = getattr(request, "timeout", None)
    ms = int(value.total_seconds() * 1000) if isinstance(value, timedelta) else DEFAULT_TIMEOUT_MS
    return max(0, min(ms, MAX_TIMEOUT_MS))


def _request_error(
    api_key: int, request: Any, listener_name: str | None
) -> tuple[ErrorCode, str | None] | None:
    """The request's own INVALID_REQUEST checks (no directory id; no endpoint on the default
    controller listener, when there is one; a bad kraft.version range)."""
    kind = KINDS[api_key]
    if _directory(request) is None:
        verb = {ADD: "Add", REMOVE: "Remove", UPDATE: "Update"}[kind]
        return ErrorCode.invalid_request, f"{verb} voter request didn't include a valid voter"
    if kind == REMOVE:
        return None
    endpoints = _endpoints(request)
    if endpoints is None or (
        listener_name is not None and not any(e.name == listener_name for e in endpoints)
    ):
        return (
            ErrorCode.invalid_request,
            f"the request didn't include the endpoint for the default listener {listener_name}",
        )
    if kind == UPDATE:
        feature = request.k_raft_version_feature
        low, high = int(feature.min_supported_version), int(feature.max_supported_version)
        if low < 0 or high < 0 or high < low:
            return ErrorCode.invalid_request, None
    return None


def _cluster_error(cluster_id: str, request: Any) -> tuple[ErrorCode, str | None] | None:
    given = getattr(request, "cluster_id", None)
    if given is not None and given != cluster_id:
        return (
            ErrorCode.inconsistent_cluster_id,
            f'The given id "{given}" doesn\'t match the cluster id "{cluster_id}"',
        )
    return None


def serve(
    raft: RaftClient,
    cluster_id: str,
    listener_name: str | None,
    ctx: RequestContext,
    api_key: int,
    request: Any,
    keys: tuple[object, ...],
    leader: tuple[int, int, str, int] | None = None,
) -> Reply:
    """Answer a voter change request at this node's Raft replica (``listener_name``: the default
    controller listener, whose endpoint a new or updated voter must name; None on a lone voter
    without one, as a single broker is: no endpoint is asked for; ``keys``: the purgatory
    keys checked as the replica moves)."""
    from ..handlers.registry import Deferred

    kind = KINDS[api_key]
    refused = _cluster_error(cluster_id, request)
    if refused is not None:
        return answer(ctx, api_key, *refused, leader)
    epoch = int(request.current_leader_epoch) if api_key == 82 else raft.epoch
    if epoch < raft.epoch:
        return answer(ctx, api_key, ErrorCode.fenced_leader_epoch, None, leader)
    if epoch > raft.epoch:
        return answer(ctx, api_key, ErrorCode.unknown_leader_epoch, None, leader)
    if not raft.is_leader:
        return answer(ctx, api_key, ErrorCode.not_leader_or_follower, None, leader)
    refused = _request_error(api_key, request, listener_name)
    if refused is not None:
        return answer(ctx, api_key, *refused, leader)
    feature = getattr(request, "k_raft_version_feature", None)
    low, high = (
        (0, 1)
        if feature is None
        else (int(feature.min_supported_version), int(feature.max_supported_version))
    )
    endpoints = _endpoints(request) or ()
    voter = Voter(int(request.voter_id), _directory(request) or NO_DIRECTORY, endpoints, low, high)
    timeout_ms = _timeout_ms(request)
    change = raft.change_voters(kind, voter, ctx.received_ms, timeout_ms)
    written = change.last_offset is not None
    if change.done or (kind == ADD and written and not getattr(request, "ack_when_committed", True)):
        return answer(ctx, api_key, change.error or ErrorCode.none, change.message, leader)
    return Deferred(_ChangeAnswer(ctx.received_ms + timeout_ms + 1, ctx, api_key, change), keys)
