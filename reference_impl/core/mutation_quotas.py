"""Controller mutation quotas (KIP-599, ``controller_mutation_rate``): the partitions a client's
CreateTopics, CreatePartitions and DeleteTopics create or delete, held to a rate by a token bucket.

Read from Kafka (not copied):

* ``core/src/main/scala/kafka/server/ControllerMutationQuotaManager.scala``: one token bucket per
  (user, client-id) level, the same levels as the other client quotas
  (``ClientQuotaManager.scala``); a **strict** quota (CreateTopics v6+, CreatePartitions v3+,
  DeleteTopics v5+: ``newQuotaFor(request, strictSinceVersion)``) checks the bucket before
  recording and refuses the mutation with THROTTLING_QUOTA_EXCEEDED once it is below zero, while
  any number of partitions passes while it is not; a **permissive** one (older versions) records,
  accepts and only throttles; the throttle time is ``-tokens / rate * 1000``
  (``ControllerMutationQuotaManager.throttleTimeMs``, ``Math.round``), and is what the answer's
  ThrottleTimeMs carries and how long the connection is muted
  (``RequestHandlerHelper.sendResponseMaybeThrottleWithControllerQuota``: the larger of it and the
  request-time throttle; a forwarded request is not muted). Without any ``controller_mutation_rate``
  entity nothing is counted (``UnboundedControllerMutationQuota``).
* ``clients/src/main/java/org/apache/kafka/common/metrics/stats/TokenBucket.java``: the rate refills
  the bucket continuously, up to a burst of samples x window x rate, where a new bucket starts; a
  recording takes the value off. The samples and window are ``controller.quota.window.num`` and
  ``controller.quota.window.size.seconds`` (``QuotaFactory.scala``; 11 and 1 by default,
  ``server-common/.../server/config/QuotaConfig.java``), fixed at those defaults here as the other
  quotas' windows are.
* ``metadata/src/main/java/org/apache/kafka/controller/ReplicationControlManager.java``: the charge
  is the partitions mutated, applied after a topic's other checks and before its records
  (``applyPartitionChangeQuota``: a new topic's partition count, a deleted topic's, the partitions a
  CreatePartitions adds), per topic, so one request may have some topics refused and others done.
* ``clients/src/main/java/org/apache/kafka/common/protocol/Errors.java``: the error's message.

In a cluster the handler runs on the active controller: a request another broker forwarded carries
that broker's client id (the reference forwards without Kafka's Envelope), so it is charged to the
forwarding broker's identity, not the client's; a client talking to the controller's node directly,
and a single broker, are charged as Kafka charges them.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from reference_impl.protocol.errors import ErrorCode, KafkaError

from .quotas import CONTROLLER_MUTATION_RATE, MAX_METERS, WINDOW_COUNT, WINDOW_MS, java_round, user_of
from .request_quotas import forwarded

if TYPE_CHECKING:
    from .handlers.host import HandlerHost
    from .quotas import ClientQuotas
    from .request_context import RequestContext

THROTTLED_MESSAGE = "The throttling quota has been exceeded."
"""``Errors.THROTTLING_QUOTA_EXCEEDED``'s message."""

STRICT_SINCE = {19: 6, 20: 5, 37: 3}
"""CreateTopics, DeleteTopics, CreatePartitions: the first version whose quota is strict."""


@dataclass
class TokenBucket:
    """Kafka's ``TokenBucket`` stat with the quota's bound as its refill rate per second."""

    tokens: float | None = None
    """None: never used (Kafka's first refill, from time 0, fills it to the burst)."""
    last_ms: int = 0

    def _refill(self, rate: float, now_ms: int) -> None:
        burst = WINDOW_COUNT * (WINDOW_MS / 1000) * rate
        if self.tokens is None:
            self.tokens = burst
        else:
            self.tokens = min(burst, self.tokens + rate * max(0, now_ms - self.last_ms) / 1000)
        self.last_ms = max(self.last_ms, now_ms)

    def measure(self, rate: float, now_ms: int) -> float:
        self._refill(rate, now_ms)
        assert self.tokens is not None
        return self.tokens

    def record(self, rate: float, value: float, now_ms: int) -> None:
        burst = WINDOW_COUNT * (WINDOW_MS / 1000) * rate
        self.tokens = min(burst, self.measure(rate, now_ms) - value)


def throttle_ms(tokens: float, rate: float) -> int:
    """``ControllerMutationQuotaManager.throttleTimeMs``: the time to refill the bucket to zero."""
    return java_round(-tokens / rate * 1000)


class MutationQuota:
    """One request's quota (Kafka's ``Strict``/``Permissive``/``UnboundedControllerMutationQuota``)."""

    def __init__(self, bucket: TokenBucket | None, rate: float, strict: bool) -> None:
        self._bucket, self._rate, self.strict = bucket, rate, strict
        self.throttle_ms = 0
        """``lastThrottleTimeMs``: what the answer carries (the request is answered in the same step,
        so Kafka's deduction of the time since the recording is 0)."""

    @property
    def enabled(self) -> bool:
        """Some ``controller_mutation_rate`` applies (else nothing is counted)."""
        return self._bucket is not None

    def record(self, permits: int, now_ms: int) -> None:
        """Charge ``permits`` partition mutations; a strict quota already exhausted raises
        THROTTLING_QUOTA_EXCEEDED (the topic is not mutated)."""
        bucket, rate = self._bucket, self._rate
        if bucket is None or not math.isfinite(rate) or rate <= 0:
            return
        if self.strict:  # checkQuotas, then record without checking
            tokens = bucket.measure(rate, now_ms)
            if tokens < 0:
                self.throttle_ms = throttle_ms(tokens, rate)
                raise KafkaError(ErrorCode.throttling_quota_exceeded, THROTTLED_MESSAGE)
            bucket.record(rate, permits, now_ms)
        else:  # record, then check: accepted, and throttled once the bucket is below zero
            bucket.record(rate, permits, now_ms)
            tokens = bucket.measure(rate, now_ms)
            if tokens < 0:
                self.throttle_ms = throttle_ms(tokens, rate)


class ControllerMutationQuotas:
    """``ControllerMutationQuotaManager`` over the broker's quota table."""

    def __init__(self, quotas: ClientQuotas) -> None:
        self._quotas = quotas
        self._buckets: OrderedDict[tuple[str, str], TokenBucket] = OrderedDict()

    def quota_for(self, ctx: RequestContext) -> MutationQuota:
        """``newQuotaFor(request, strictSinceVersion)`` for a CreateTopics, DeleteTopics or
        CreatePartitions request."""
        strict = ctx.api_version >= STRICT_SINCE[ctx.header.api_key]
        found = self._quotas.resolve(CONTROLLER_MUTATION_RATE, user_of(ctx.principal), ctx.client_id)
        if found is None:
            return MutationQuota(None, math.inf, strict)
        tags, rate = found
        bucket = self._buckets.get(tags)
        if bucket is None:
            bucket = self._buckets[tags] = TokenBucket()
            while len(self._buckets) > MAX_METERS:
                self._buckets.popitem(last=False)
        else:
            self._buckets.move_to_end(tags)
        return MutationQuota(bucket, rate, strict)


def throttle_answer(host: HandlerHost, ctx: RequestContext, quota: MutationQuota) -> int:
    """The mutation throttle the answer carries; the connection is muted that long (not a forwarded
    request's). The request-time quota raises it further when the answer goes."""
    if quota.throttle_ms > 0 and not forwarded(ctx):
        host.throttle(ctx.connection_id, quota.throttle_ms)
    return quota.throttle_ms
