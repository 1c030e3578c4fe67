"""DescribeQuorum: v0-1. The metadata quorum's leader, epoch, high watermark, voters and observers.

Answered by the quorum leader (NOT_LEADER_OR_FOLLOWER elsewhere, as Kafka's
replicas do); a one-node broker is its own one-voter quorum and describes
itself. Version notes: v1 adds each replica's last fetch and caught-up
times; v2 (KIP-853 directory ids, nodes) is not implemented.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from reference_impl.protocol.apis import response_class
from reference_impl.protocol.build import build

from ..cluster.wire import METADATA_TOPIC
from ..metadata.local_controller import LocalController
from .registry import Reply, Respond, handles

if TYPE_CHECKING:
    from ..broker import Broker, RequestContext


@handles(55, 0, 1)
def handle_describe_quorum(broker: Broker, ctx: RequestContext, request: Any) -> Reply:
    if broker.quorum is not None:
        described = broker.quorum.raft.describe_quorum()
        error, leader, epoch, hw = (
            int(described.error_code),
            described.leader_id,
            described.leader_epoch,
            described.high_watermark,
        )
        voters = [vars_of(r) for r in described.current_voters]
        observers = [vars_of(r) for r in described.observers]
    else:
        end = broker.controller.log.log_end_offset if isinstance(broker.controller, LocalController) else 0
        error, leader, epoch, hw = 0, broker.node_id, 1, end
        voters = [
            {
                "replica_id": broker.node_id,
                "log_end_offset": end,
                "last_fetch_timestamp": ctx.received_ms,
                "last_caught_up_timestamp": ctx.received_ms,
            }
        ]
        observers = []
    partition = {
        "partition_index": 0,
        "error_code": error,
        "leader_id": leader,
        "leader_epoch": epoch,
        "high_watermark": hw,
        "current_voters": voters,
        "observers": observers,
    }
    topics = [{"topic_name": METADATA_TOPIC, "partitions": [partition]}]
    return Respond(build(response_class(55, ctx.api_version), {"error_code": 0, "topics": topics}))


def vars_of(replica: Any) -> dict[str, int]:
    return {
        "replica_id": replica.replica_id,
        "log_end_offset": replica.log_end_offset,
        "last_fetch_timestamp": replica.last_fetch_timestamp,
        "last_caught_up_timestamp": replica.last_caught_up_timestamp,
    }
