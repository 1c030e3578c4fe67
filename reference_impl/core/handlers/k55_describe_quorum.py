"""DescribeQuorum: v0-2. The metadata quorum's leader, epoch, high watermark, voters and observers.

DESCRIBE on the cluster is required (Kafka's ControllerApis.handleDescribeQuorum; the top-level
CLUSTER_AUTHORIZATION_FAILED of DescribeQuorumRequest.getErrorResponse otherwise), checked where
the request arrives, which sees the same ACLs as the leader. Described by the quorum leader. Any
other broker forwards the request to the leader and relays its answer, as Kafka's brokers forward
DescribeQuorum to the active controller (KIP-595's tool talks to any broker); a request that was
itself forwarded, or that finds no leader to forward to, is answered NOT_LEADER_OR_FOLLOWER on the
partition, as Kafka's raft replicas answer it, and the client retries. A single broker is the only
voter of its own quorum and describes it from its Raft state, as any leader.

Version notes: v1 adds each replica's last fetch and caught-up times; v2 (KIP-853) adds a
top-level and a partition error message, each replica's directory id (a voter's from a kraft.version
1 quorum's voter set; otherwise the null/zero id, as Kafka reports replicas without one) and ``nodes``, the
voters' endpoints. A node here has one listener for clients and peers alike; it is named
PLAINTEXT, the name Kafka gives an unnamed plaintext listener.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode

from ..metadata.records import METADATA_TOPIC
from .access import Op, cluster_allowed
from .forwarding import forward
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

LISTENER_NAME = "PLAINTEXT"
NOT_LEADER_MESSAGE = "this node is not the metadata quorum's leader"


@handles(55, 0, 2)
def handle_describe_quorum(broker: HandlerHost, ctx: RequestContext, request: Any) -> Reply:
    if not cluster_allowed(broker, ctx, Op.DESCRIBE):  # ControllerApis.handleDescribeQuorum
        refused = {
            "error_code": ErrorCode.cluster_authorization_failed,
            "error_message": "Cluster authorization failed.",
            "topics": [],
            "nodes": [],
        }
        return Respond(build(response_class(55, ctx.api_version), refused))
    quorum = broker.quorum
    target = None if quorum.raft.is_leader else quorum.forward_target(ctx)
    if target is not None:
        refused = _described(broker)  # NOT_LEADER_OR_FOLLOWER, should the leader not answer
        forwarded = forward(
            broker, ctx, request, target, quorum.voters[target], lambda: _render(ctx, refused), 0
        )
        if forwarded is not None:
            return forwarded
    return _respond(ctx, _described(broker))


def _respond(ctx: RequestContext, described: dict[str, Any]) -> Reply:
    return Respond(_render(ctx, described))


def _render(ctx: RequestContext, described: dict[str, Any]) -> Any:
    """The response in the client's version, from the leader's (or this node's refusal) plain data."""
    partition = {k: v for k, v in described.items() if k != "nodes"}
    body = {
        "error_code": 0,
        "error_message": None,
        "topics": [{"topic_name": METADATA_TOPIC, "partitions": [partition]}],
        "nodes": described["nodes"],
    }
    return build(response_class(55, ctx.api_version), body)


def _described(broker: HandlerHost) -> dict[str, Any]:
    """This node's quorum description: the leader's view, or NOT_LEADER_OR_FOLLOWER elsewhere."""
    quorum = broker.quorum
    described = quorum.raft.describe_quorum()
    error = ErrorCode(described.error_code)
    return {
        "partition_index": 0,
        "error_code": int(error),
        "error_message": None if error is ErrorCode.none else NOT_LEADER_MESSAGE,
        "leader_id": described.leader_id,
        "leader_epoch": described.leader_epoch,
        "high_watermark": described.high_watermark,
        "current_voters": [_replica(r, _directory(quorum, r.replica_id)) for r in described.current_voters],
        "observers": [_replica(r) for r in described.observers],
        "nodes": [_node(node_id, host, port) for node_id, (host, port) in sorted(quorum.voters.items())],
    }


def _directory(quorum: Any, voter_id: int) -> uuid.UUID | None:
    """A voter's directory id as the quorum's voter set has it (kraft.version 1; else none)."""
    voter = quorum.raft.membership.voters.get(voter_id)
    return None if voter is None or voter.directory_id.int == 0 else voter.directory_id


def _replica(replica: Any, directory: uuid.UUID | None = None) -> dict[str, Any]:
    return {
        "replica_id": replica.replica_id,
        "replica_directory_id": directory,
        "log_end_offset": replica.log_end_offset,
        "last_fetch_timestamp": replica.last_fetch_timestamp,
        "last_caught_up_timestamp": replica.last_caught_up_timestamp,
    }


def _node(node_id: int, host: str, port: int) -> dict[str, Any]:
    return {"node_id": node_id, "listeners": [{"name": LISTENER_NAME, "host": host, "port": port}]}
