"""The partition leader's half of KIP-890 verification when the transaction's coordinator is another
broker: one AddPartitionsToTxn v4 (``verify_only`` below Produce v12, an add from v12) to the
coordinator, and the produce appended once it answers (Kafka's ``AddPartitionsToTxnManager``,
core/src/main/scala/kafka/server/AddPartitionsToTxnManager.scala, and
``ReplicaManager.maybeStartTransactionVerificationForPartitions``). Where this broker coordinates
the transaction the check is in-process (``TransactionCoordinator.verify_partition``)."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build, get, millis
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.records import parse_header

from ..boundary import TXN_VERIFICATION_CHANNEL
from ..internal_topics import TRANSACTION_STATE, partition_for
from ..purgatory import DelayedOperation
from .registry import Deferred, Reply, Respond
from .txn_common import FIRST_ADD_PARTITION_PRODUCE

if TYPE_CHECKING:
    from ..request_context import RequestContext
    from .host import HandlerHost

VERIFY_VERSION = 4
Codes = dict[tuple[str, int], ErrorCode]
_ids = itertools.count(1)


def remote_coordinator(broker: HandlerHost, transactional_id: str) -> int | None:
    """The broker leading the transactional id's ``__transaction_state`` partition, when not this one."""
    topic = broker.image.topics.get(TRANSACTION_STATE.name)
    if topic is None or not topic.partitions:
        return None
    info = topic.partitions.get(partition_for(transactional_id, len(topic.partitions)))
    if info is None or info.leader < 0 or info.leader == broker.node_id:
        return None
    return int(info.leader)


def transactional_partitions(broker: HandlerHost, request: Any) -> dict[tuple[str, int], tuple[int, int]]:
    """Each partition of the request whose first batch is transactional: (producer id, epoch)."""
    found: dict[tuple[str, int], tuple[int, int]] = {}
    for topic_data in request.topic_data:
        name = get(topic_data, "name")
        if name is None and get(topic_data, "topic_id") is not None:
            known = broker.image.topic_by_id(topic_data.topic_id)
            name = known.name if known else None
        for pdata in topic_data.partition_data:
            records = pdata.records
            if name is None or not records:
                continue
            try:
                header = parse_header(records, 0)
            except Exception:
                continue
            if header.is_transactional:
                found[(str(name), int(pdata.index))] = (header.producer_id, header.producer_epoch)
    return found


def verify_remotely(
    broker: HandlerHost, ctx: RequestContext, request: Any, then: Callable[[Codes], Reply]
) -> Reply | None:
    """Ask the remote coordinator about the request's transactional partitions; ``then(codes)`` builds
    the reply once it answers. None when there is nothing to ask remotely."""
    transactional_id = get(request, "transactional_id")
    if transactional_id is None or int(request.acks) == 0:
        return None
    node = remote_coordinator(broker, transactional_id)
    wanted = transactional_partitions(broker, request) if node is not None else {}
    if node is None or not wanted:
        return None
    pid, epoch = next(iter(wanted.values()))
    topics: dict[str, list[int]] = {}
    for name, index in sorted(wanted):
        topics.setdefault(name, []).append(index)
    body = build(
        request_class(24, VERIFY_VERSION),
        {
            "transactions": [
                {
                    "transactional_id": transactional_id,
                    "producer_id": pid,
                    "producer_epoch": epoch,
                    "verify_only": ctx.api_version < FIRST_ADD_PARTITION_PRODUCE,
                    "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
                }
            ]
        },
    )
    op = RemoteVerification(broker, ctx, list(wanted), then, ctx.received_ms + millis(request.timeout))

    def answered(response: ResponsePayload | None, error: str | None) -> None:
        op.answered(_codes(response, list(wanted)))

    if not broker.send_request(node, body, answered, channel=TXN_VERIFICATION_CHANNEL):
        return None  # no link to the coordinator: appended unverified, as before KIP-890
    return Deferred(op, (op.key,))


def _codes(response: Any, keys: list[tuple[str, int]]) -> Codes:
    codes: Codes = dict.fromkeys(keys, ErrorCode.coordinator_not_available)
    if response is None:
        return codes
    if int(response.error_code) != 0:
        return dict.fromkeys(keys, ErrorCode(int(response.error_code)))
    for result in response.results_by_transaction:
        for topic in result.topic_results:
            for p in topic.results_by_partition:
                key = (str(topic.name), int(p.partition_index))
                if key in codes:
                    codes[key] = ErrorCode(int(p.partition_error_code))
    return codes


class RemoteVerification(DelayedOperation):
    """A produce waiting for its coordinator's verification; at the deadline the partitions answer
    as if the coordinator were unavailable (retriable for the producer)."""

    def __init__(
        self,
        broker: HandlerHost,
        ctx: RequestContext,
        keys: list[tuple[str, int]],
        then: Callable[[Codes], Reply],
        deadline_ms: int,
    ) -> None:
        super().__init__(deadline_ms)
        self.broker, self.ctx, self.keys, self.then = broker, ctx, keys, then
        self.key = ("txn-verify", next(_ids))
        self.codes: Codes | None = None

    def answered(self, codes: Codes) -> None:
        self.codes = codes
        self.broker.purgatory.check_and_complete(self.key, self.broker.now_ms)

    def try_complete(self, now_ms: int) -> bool:
        return self.codes is not None and self.force_complete(now_ms)

    def on_complete(self, now_ms: int) -> None:
        codes = self.codes or dict.fromkeys(self.keys, ErrorCode.coordinator_not_available)
        reply = self.then(codes)
        if isinstance(reply, Respond):
            self.ctx.respond(reply.body, reply.splices)
        elif isinstance(reply, Deferred):
            self.ctx.delayed = reply.op
            self.broker.purgatory.try_complete_else_watch(reply.op, reply.keys, now_ms)
