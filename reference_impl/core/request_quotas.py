"""Request-time quotas (KIP-124, ``request_percentage``): the handler time a client's requests take,
held to a percentage of one handler thread, answered with ThrottleTimeMs and the connection muted.

Read from Kafka (not copied):

* ``core/src/main/scala/kafka/server/ClientRequestQuotaManager.scala``: a request's handler-thread
  time (``requestThreadTimeNanos``) is recorded as a percentage of a second
  (``NanosToPercentagePerSecond`` = 100 / 1e9) on the client's sampled rate (the same
  ``quota.window.num`` x ``quota.window.size.seconds`` windows and user / client-id levels as the
  byte rates, ``ClientQuotaManager.scala``); over ``request_percentage`` the throttle time is
  bounded at one window (``maxThrottleTimeMs``, ``QuotaUtils.boundedThrottleTime``); nothing is
  recorded while no entity holds the key (``quotasEnabled``); exempt requests are only counted
  (``maybeRecordExempt``, a metric: nothing here).
* ``core/src/main/scala/kafka/network/RequestChannel.scala``: ``requestThreadTimeNanos`` runs from
  the handler's start to its end (``apiLocalCompleteTimeNanos``), taken when the answer is built if
  the handler has not returned yet; a request answered later (a delayed produce or fetch) is charged
  its handler's time, not its wait.
* ``core/src/main/scala/kafka/server/RequestHandlerHelper.scala``: ``sendResponseMaybeThrottle``
  records, mutes the channel (KIP-219) unless the request was forwarded by another broker, and sets
  ThrottleTimeMs in the answer (``maybeSetThrottleTimeMs``; a version without it is muted all the
  same); ``sendResponseMaybeThrottleWithControllerQuota`` takes the larger of the request and
  controller-mutation throttles; ``sendResponseExemptThrottle``.
* ``KafkaApis.scala`` and ``ControllerApis.scala``, which answer exempt: the cluster actions
  (LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown, WriteTxnMarkers, AlterPartition), a
  follower's Fetch, the Raft requests (Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum,
  FetchSnapshot, and Fetch on the controller listener), and a Produce with acks=0 (it has no answer;
  here a handler answering :class:`~.handlers.registry.NoResponse` is never charged).
  ``handleProduceRequest`` and ``handleFetchRequest`` take the larger of the byte-rate and request
  throttles; a fetch throttled by either is answered empty (``k01_fetch``).

The core is sans-IO and runs one event loop: the handler's time comes from a clock port,
:attr:`RequestQuotas.clock_ns` (nanoseconds, monotonic), which the server shell sets to
``time.perf_counter_ns``; by default no time passes (the simulator's handlers take no virtual time,
the unit tests give a clock of their own). Kafka also charges the network thread's time spent on the
request (``recordNetworkThreadTimeCallback``, after the answer is sent): here that is the shell's
socket work, not measured, so not charged.
"""

from __future__ import annotations

import dataclasses
import datetime
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from kio.static.protocol import ResponsePayload

from reference_impl.protocol.build import millis

from .kraft.quorum import PEER_CLIENT_PREFIX
from .quotas import REQUEST_PERCENTAGE, user_of

if TYPE_CHECKING:
    from .handlers.host import HandlerHost
    from .handlers.registry import Reply
    from .quotas import ClientQuotas
    from .request_context import RequestContext

NANOS_TO_PERCENTAGE_PER_SECOND = 100.0 / 1_000_000_000
"""``ClientRequestQuotaManager.NanosToPercentagePerSecond``."""

FETCH = 1
EXEMPT_APIS = frozenset({4, 5, 6, 7, 27, 52, 53, 54, 55, 56, 59})
"""Answered with ``sendResponseExemptThrottle`` by Kafka: LeaderAndIsr, StopReplica, UpdateMetadata,
ControlledShutdown, WriteTxnMarkers, Vote, BeginQuorumEpoch, EndQuorumEpoch, DescribeQuorum,
AlterPartition, FetchSnapshot (a follower's Fetch and a controller listener's Fetch too: see
:func:`exempt`)."""

Handle = Callable[["HandlerHost", "RequestContext", Any], "Reply"]


def _no_time() -> int:
    return 0


def forwarded(ctx: RequestContext) -> bool:
    """Sent by another broker of the cluster on a client's behalf (forwarding, KIP-590): recorded but
    never muted, as Kafka's ``request.isForwarded``; the forwarding broker relays the throttle time."""
    return ctx.client_id.startswith(PEER_CLIENT_PREFIX)


def exempt(host: HandlerHost, ctx: RequestContext) -> bool:
    """Kafka answers it exempt from the request quota (a follower's Fetch is marked by its handler)."""
    key = ctx.header.api_key
    return key in EXEMPT_APIS or (key == FETCH and host.is_controller_listener(ctx.listener))


def with_throttle(body: ResponsePayload, throttle_ms: int) -> ResponsePayload:
    """``maybeSetThrottleTimeMs``: the answer's ThrottleTimeMs raised to ``throttle_ms`` (a version
    without the field is left as it is)."""
    current = getattr(body, "throttle_time", None)
    if current is None or millis(current) >= throttle_ms:
        return body
    return dataclasses.replace(body, throttle_time=datetime.timedelta(milliseconds=throttle_ms))


class RequestQuotas:
    """``ClientRequestQuotaManager`` over the broker's quota table (:class:`~.quotas.ClientQuotas`)."""

    def __init__(self, quotas: ClientQuotas) -> None:
        self._quotas = quotas
        self.clock_ns: Callable[[], int] = _no_time
        """The port the handler time is read from (the server shell: ``time.perf_counter_ns``)."""

    def run(
        self, fn: Handle, host: HandlerHost, ctx: RequestContext, body: Any, forwarded: Reply | None = None
    ) -> Reply:
        """Call the handler, timing it, and charge the request when it is answered; a request this
        node handed to the controller (``forwarded``, its reply) is charged when the controller's
        answer is relayed (``RequestHandlerHelper.sendForwardedResponse``)."""
        ctx.thread_started_ns = self.clock_ns()
        relayed = forwarded is not None
        ctx.on_answer = lambda c, answer: self.answer(host, c, answer, relayed=relayed)
        try:
            return forwarded if forwarded is not None else fn(host, ctx, body)
        finally:
            if ctx.thread_ns is None:
                ctx.thread_ns = max(0, self.clock_ns() - ctx.thread_started_ns)

    def _thread_ns(self, ctx: RequestContext) -> int:
        if ctx.thread_ns is None:  # answered before its handler returned: its time so far
            return max(0, self.clock_ns() - ctx.thread_started_ns)
        return ctx.thread_ns

    def mark_exempt(self, ctx: RequestContext) -> None:
        """A request Kafka answers exempt that only its handler can tell (a follower's Fetch)."""
        ctx.request_charged = True

    def record(self, host: HandlerHost, ctx: RequestContext) -> int:
        """``maybeRecordAndGetThrottleTimeMs``: charge the request's handler time once; the throttle
        time in ms (0 within the quota, without one, exempt, or already charged)."""
        if ctx.request_charged:
            return 0
        ctx.request_charged = True
        if exempt(host, ctx) or not self._quotas.active(REQUEST_PERCENTAGE):
            return 0
        value = self._thread_ns(ctx) * NANOS_TO_PERCENTAGE_PER_SECOND
        user = user_of(ctx.principal)
        return self._quotas.record(REQUEST_PERCENTAGE, user, ctx.client_id, value, host.now_ms)

    def answer(
        self, host: HandlerHost, ctx: RequestContext, body: ResponsePayload, *, relayed: bool = False
    ) -> ResponsePayload:
        """``sendResponseMaybeThrottle``: record, mute the connection (not a forwarded request's) and
        carry the larger throttle time in the answer. A relayed controller answer mutes the client's
        connection for the larger of its own throttle time (the controller's: a controller mutation
        quota) and this node's (``sendForwardedResponse``)."""
        throttle = self.record(host, ctx)
        if relayed:
            throttle = max(throttle, millis(getattr(body, "throttle_time", None)))
        if throttle <= 0:
            return body
        if not forwarded(ctx):
            host.throttle(ctx.connection_id, throttle)
        return with_throttle(body, throttle)
