"""Clients inside the simulation: they speak the Kafka protocol to the simulated brokers.

A :class:`ClientNode` is a node with only the dialing half of a network
endpoint: it sends real request frames and reads real answers, so whatever it
sees, a Kafka client would see. :class:`IdempotentProducer` is the workload
the scenarios and the fuzzer drive: it creates its topic, asks for a producer
id, and writes numbered values with acks=all, one batch in flight per
partition (so its order is the log's order), retrying a batch with the same
sequence until it is answered, as librdkafka's idempotent producer does. What
it records (:class:`Acked`) is what the checkers hold the cluster to: every
acknowledged value must be read back, once, at the offset it was given.
"""

from __future__ import annotations

import random
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from kio.static.protocol import RequestPayload, ResponsePayload

from reference_impl.core.boundary import RequestFailed, ResponseReceived, SendRequest
from reference_impl.core.raft.api import RaftStep
from reference_impl.core.raft.messages import Envelope
from reference_impl.protocol.apis import request_class
from reference_impl.protocol.build import build
from reference_impl.protocol.errors import ErrorCode
from reference_impl.protocol.record_set import build_batch

from ..engine.transport import DEFAULT_REQUEST_TIMEOUT_MS, Dialer, Reset, Segment

RETRY_BACKOFF_MS = 100
"""Kafka's ``retry.backoff.ms``."""

RETRIABLE = frozenset(
    {
        ErrorCode.not_leader_or_follower,
        ErrorCode.leader_not_available,
        ErrorCode.unknown_topic_or_partition,
        ErrorCode.not_enough_replicas,
        ErrorCode.not_enough_replicas_after_append,
        ErrorCode.request_timed_out,
        ErrorCode.kafka_storage_error,
        ErrorCode.coordinator_not_available,
        ErrorCode.not_coordinator,
        ErrorCode.coordinator_load_in_progress,
        ErrorCode.not_controller,
        ErrorCode.concurrent_transactions,
        ErrorCode.fenced_leader_epoch,
        ErrorCode.unknown_leader_epoch,
    }
)
"""Errors a Kafka client retries after a backoff (and a metadata refresh where routing is stale)."""


class ClientDisk:
    """A client keeps nothing across a crash."""

    def crash(self) -> None:
        return None


ResponseHandler = Callable[[ResponsePayload | None, str | None, int], None]


class ClientNode:
    """A node that only sends requests: ``request`` now, the handler runs when the answer arrives."""

    def __init__(
        self, node_id: int, incarnation: int, request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS
    ) -> None:
        self.node_id = node_id
        self.dialer = Dialer(node_id, incarnation, request_timeout_ms)
        self._handlers: dict[int, ResponseHandler] = {}
        self._next_request_id = 1
        self._outbox: list[Envelope] = []
        self._now_ms = 0

    def request(self, node_id: int, body: RequestPayload, handler: ResponseHandler) -> None:
        request_id = self._next_request_id
        self._next_request_id += 1
        self._handlers[request_id] = handler
        effect = SendRequest(request_id=request_id, node_id=node_id, host="", port=0, body=body)
        self._outbox += self.dialer.send(effect, self._now_ms)

    def step(self, message: Envelope | None, now_ms: int) -> RaftStep:
        self._now_ms = now_ms
        events: list[Any] = []
        if message is not None:
            body = message.body
            if not isinstance(body, Segment | Reset) or body.to_server:
                raise TypeError(f"client {self.node_id} got {type(body).__name__}")
            events, replies = self.dialer.receive(message.source_id, body)
            self._outbox += replies
        expired, resets = self.dialer.expire(now_ms)
        self._outbox += resets
        for event in [*events, *expired]:
            handler = self._handlers.pop(event.request_id, None)
            if handler is None:
                continue
            if isinstance(event, ResponseReceived):
                handler(event.body, None, now_ms)
            elif isinstance(event, RequestFailed):
                handler(None, event.reason, now_ms)
        wakeup = self.poll(now_ms)
        out = tuple(self._outbox)
        self._outbox.clear()
        deadlines = [d for d in (wakeup, self.dialer.next_deadline_ms()) if d is not None]
        return RaftStep(out, min(deadlines) if deadlines else None)

    def exit_messages(self) -> list[Envelope]:
        return self.dialer.close_all()

    def is_open(self, segment: Segment) -> bool:
        return segment.to_server and self.dialer.is_open(segment.connection)

    def poll(self, now_ms: int) -> int | None:
        """The workload's turn: send what is due; return when to be woken next."""
        return None


@dataclass(frozen=True, slots=True)
class Acked:
    partition: int
    offset: int
    value: bytes
    acked_ms: int


@dataclass
class _Batch:
    values: tuple[bytes, ...]
    base_sequence: int
    attempts: int = 0


@dataclass
class _PartitionState:
    next_sequence: int = 0
    batch: _Batch | None = None
    in_flight: bool = False
    retry_at_ms: int = 0


@dataclass
class ProducerReport:
    acked: list[Acked] = field(default_factory=list)
    sent: int = 0
    """Values handed to a batch (acknowledged or not)."""
    retries: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    """Every error answer or failed request, by name, retriable ones included."""
    fatal: list[str] = field(default_factory=list)
    """Answers a correct broker never gives this producer (it stops on the first)."""


class IdempotentProducer(ClientNode):
    """Creates ``topic``, then writes values ``p<node>.<incarnation>-<n>`` with acks=all until ``limit`` are
    acknowledged or :meth:`stop` is called; ``batch_records`` values per batch."""

    def __init__(
        self,
        node_id: int,
        incarnation: int,
        brokers: Sequence[int],
        rng: random.Random,
        *,
        topic: str = "sim",
        partitions: int = 1,
        replication_factor: int = 3,
        topic_configs: dict[str, str] | None = None,
        assignments: dict[int, list[int]] | None = None,
        limit: int = 1_000,
        batch_records: int = 1,
        interval_ms: int = 5,
        request_timeout_ms: int = DEFAULT_REQUEST_TIMEOUT_MS,
        report: ProducerReport | None = None,
    ) -> None:
        super().__init__(node_id, incarnation, request_timeout_ms)
        self.brokers = tuple(brokers)
        self.rng = rng
        self.topic = topic
        self.partitions = partitions
        self.replication_factor = replication_factor
        self.topic_configs = dict(topic_configs or {"min.insync.replicas": "2"})
        self.assignments = dict(assignments or {})
        """Replicas by partition, as CreateTopics takes them (none: the controller places them)."""
        self.limit = limit
        self.batch_records = batch_records
        self.interval_ms = interval_ms
        self.report = report if report is not None else ProducerReport()
        self.stopped = False
        self._phase = "create"
        self._busy = False  # a create, metadata or init request is out
        self._wait_until_ms = 0
        self._leaders: dict[int, int] = {}
        self._leader_epochs: dict[int, int] = {}
        """The newest leader epoch seen per partition: older metadata is ignored (KIP-320)."""
        self._producer: tuple[int, int] | None = None
        self._parts = {p: _PartitionState() for p in range(partitions)}
        self._next_value = 0
        self._next_batch_ms = 0
        self._bootstrap_turn = rng.randrange(len(self.brokers))

    # -- what the checkers read ------------------------------------------------------------------

    @property
    def done(self) -> bool:
        return self.stopped or len(self.report.acked) >= self.limit

    @property
    def idle(self) -> bool:
        """Nothing sent and unanswered, nothing waiting to be retried."""
        return all(p.batch is None for p in self._parts.values())

    def stop(self) -> None:
        """Stop taking new values; batches already made are still retried until answered."""
        self.stopped = True

    # -- the workload ------------------------------------------------------------------------------

    def poll(self, now_ms: int) -> int | None:
        if self.report.fatal:
            return None
        if self._busy or now_ms < self._wait_until_ms:
            return None if self._busy else self._wait_until_ms
        if self._phase == "create":
            self._create(now_ms)
            return None
        if self._phase == "metadata":
            self._metadata(now_ms)
            return None
        if self._producer is None:
            self._init_producer_id(now_ms)
            return None
        wakeups = []
        for index, part in self._parts.items():
            if part.in_flight:
                continue
            if (
                part.batch is None
                and not self.done
                and len(self.report.acked) + self._unanswered() < self.limit
            ):
                if now_ms < self._next_batch_ms:
                    wakeups.append(self._next_batch_ms)
                    continue
                part.batch = self._new_batch(part)
                self._next_batch_ms = now_ms + self.interval_ms
            if part.batch is None:
                continue
            if now_ms < part.retry_at_ms:
                wakeups.append(part.retry_at_ms)
                continue
            leader = self._leaders.get(index, -1)
            if leader < 0:
                self._phase = "metadata"
                return now_ms
            self._send_batch(index, part, leader)
        return min(wakeups) if wakeups else None

    def _unanswered(self) -> int:
        return sum(len(p.batch.values) for p in self._parts.values() if p.batch is not None)

    def _new_batch(self, part: _PartitionState) -> _Batch:
        values = []
        for _ in range(self.batch_records):
            values.append(b"p%d.%d-%d" % (self.node_id, self.dialer.incarnation, self._next_value))
            self._next_value += 1
        batch = _Batch(tuple(values), part.next_sequence)
        part.next_sequence += len(values)
        self.report.sent += len(values)
        return batch

    def _any_broker(self) -> int:
        """The next bootstrap broker in turn: a failed request moves the client on to another."""
        self._bootstrap_turn += 1
        return self.brokers[self._bootstrap_turn % len(self.brokers)]

    def _backoff(self, now_ms: int) -> None:
        self._wait_until_ms = now_ms + RETRY_BACKOFF_MS

    def _error(self, name: str) -> None:
        self.report.errors[name] = self.report.errors.get(name, 0) + 1

    def _create(self, now_ms: int) -> None:
        body = build(
            request_class(19, 7),
            {
                "topics": [
                    {
                        "name": self.topic,
                        "num_partitions": -1 if self.assignments else self.partitions,
                        "replication_factor": -1 if self.assignments else self.replication_factor,
                        "assignments": [
                            {"partition_index": p, "broker_ids": replicas}
                            for p, replicas in sorted(self.assignments.items())
                        ],
                        "configs": [{"name": k, "value": v} for k, v in sorted(self.topic_configs.items())],
                    }
                ],
                "timeout": 10_000,
                "validate_only": False,
            },
        )
        self._busy = True
        self.request(self._any_broker(), body, self._created)

    def _created(self, response: Any, failure: str | None, now_ms: int) -> None:
        self._busy = False
        if response is None:
            self._error("create: " + (failure or "failed"))
            self._backoff(now_ms)
            return
        code = ErrorCode(response.topics[0].error_code)
        if code in (ErrorCode.none, ErrorCode.topic_already_exists):
            self._phase = "metadata"
        else:
            self._error(f"create: {code.name}")
            self._backoff(now_ms)

    def _metadata(self, now_ms: int) -> None:
        body = build(
            request_class(3, 12),
            {
                "topics": [{"name": self.topic, "topic_id": uuid.UUID(int=0)}],
                "allow_auto_topic_creation": False,
                "include_topic_authorized_operations": False,
            },
        )
        self._busy = True
        self.request(self._any_broker(), body, self._metadata_answer)

    def _metadata_answer(self, response: Any, failure: str | None, now_ms: int) -> None:
        self._busy = False
        if response is None:
            self._error("metadata: " + (failure or "failed"))
            self._backoff(now_ms)
            return
        topic = next((t for t in response.topics if t.name == self.topic), None)
        if topic is not None and topic.error_code == ErrorCode.none:
            for p in topic.partitions:
                index, epoch = int(p.partition_index), int(p.leader_epoch)
                # KIP-320: an answer from a broker whose metadata is older than what this
                # client has already seen must not send it back to a deposed leader.
                if p.leader_id >= 0 and epoch >= self._leader_epochs.get(index, -1):
                    self._leaders[index] = int(p.leader_id)
                    self._leader_epochs[index] = epoch
        if all(self._leaders.get(i, -1) >= 0 for i in range(self.partitions)):
            self._phase = "produce"
        else:
            self._backoff(now_ms)

    def _init_producer_id(self, now_ms: int) -> None:
        body = build(
            request_class(22, 4),
            {
                "transactional_id": None,
                "transaction_timeout": 60_000,
                "producer_id": -1,
                "producer_epoch": -1,
            },
        )
        self._busy = True
        self.request(self._any_broker(), body, self._producer_id)

    def _producer_id(self, response: Any, failure: str | None, now_ms: int) -> None:
        self._busy = False
        if response is None or response.error_code != ErrorCode.none:
            self._error("init_producer_id: " + (failure or ErrorCode(response.error_code).name))
            self._backoff(now_ms)
            return
        self._producer = (int(response.producer_id), int(response.producer_epoch))

    def _send_batch(self, index: int, part: _PartitionState, leader: int) -> None:
        batch = part.batch
        assert batch is not None and self._producer is not None
        producer_id, epoch = self._producer
        records = build_batch(
            [(None, v) for v in batch.values],
            base_timestamp=self._now_ms,
            producer_id=producer_id,
            producer_epoch=epoch,
            base_sequence=batch.base_sequence,
        )
        body = build(
            request_class(0, 9),
            {
                "transactional_id": None,
                "acks": -1,
                "timeout": 10_000,
                "topic_data": [
                    {"name": self.topic, "partition_data": [{"index": index, "records": records}]}
                ],
            },
        )
        batch.attempts += 1
        if batch.attempts > 1:
            self.report.retries += 1
        part.in_flight = True
        self.request(leader, body, lambda r, f, now: self._produced(index, r, f, now))

    def _produced(self, index: int, response: Any, failure: str | None, now_ms: int) -> None:
        part = self._parts[index]
        part.in_flight = False
        batch = part.batch
        assert batch is not None
        if response is None:
            self._error("produce: " + (failure or "failed"))
            self._retry(index, part, now_ms, refresh=True)
            return
        answer = response.responses[0].partition_responses[0]
        code = ErrorCode(answer.error_code)
        if code == ErrorCode.none:
            base = int(answer.base_offset)
            for i, value in enumerate(batch.values):
                self.report.acked.append(Acked(index, base + i, value, now_ms))
            part.batch = None
            return
        self._error(f"produce: {code.name}")
        if code in RETRIABLE:
            self._retry(index, part, now_ms, refresh=code != ErrorCode.not_enough_replicas)
            return
        self.report.fatal.append(
            f"partition {index}: {code.name} for sequence {batch.base_sequence} "
            f"(attempt {batch.attempts}) at {now_ms} ms"
        )

    def _retry(self, index: int, part: _PartitionState, now_ms: int, *, refresh: bool) -> None:
        part.retry_at_ms = now_ms + RETRY_BACKOFF_MS
        if refresh:
            self._leaders.pop(index, None)
