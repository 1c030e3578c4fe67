"""Client quotas: Kafka's sampled rate and KIP-219 throttle time (sans-IO, time as input), and the
quota a request is held to, resolved from the image's ClientQuotaRecords.

Read from Kafka (not copied): clients/src/main/java/org/apache/kafka/common/metrics/stats/
SampledStat.java and Rate.java (a rate over ``quota.window.num`` = 11 samples of
``quota.window.size.seconds`` = 1 s each; a sample ``samples`` windows old is purged; the
rate divides by the time since the oldest sample plus the full windows missing to
``samples - 1``), Sensor.java (record first, then compare the rate with the bound: over it is a
violation), server-common's server/quota/QuotaUtils.java (throttle time =
(rate - bound) / bound * the rate's window size, ``Math.round``; ``boundedThrottleTime`` caps it,
which ClientRequestQuotaManager uses and the byte-rate ClientQuotaManager does not) and
core/src/main/scala/kafka/server/ClientQuotaManager.scala (``DefaultQuotaCallback``: which of the
eight user / client-id levels holds the quota, and so which clients share one rate;
``unrecordQuotaSensor`` for a throttled fetch; ``getMaxValueInQuotaWindow``). KIP-219: the broker
answers at once with ``throttle_time_ms`` and then mutes the connection for that long; the broker
does the muting, this module only counts.
"""

from __future__ import annotations

import math
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

WINDOW_COUNT = 11
"""Kafka's ``quota.window.num`` default (QuotaConfig.java)."""
WINDOW_MS = 1000
"""Kafka's ``quota.window.size.seconds`` default, in ms."""


@dataclass
class _Sample:
    start_ms: int
    value: float


@dataclass
class SampledRate:
    """A rate per second over at most ``windows`` samples of ``window_ms`` each."""

    windows: int = WINDOW_COUNT
    window_ms: int = WINDOW_MS
    _samples: list[_Sample] = field(default_factory=list)

    def record(self, value: float, now_ms: int) -> None:
        self._purge(now_ms)
        if not self._samples or now_ms >= self._samples[-1].start_ms + self.window_ms:
            self._samples.append(_Sample(now_ms, 0.0))
            del self._samples[: max(0, len(self._samples) - self.windows)]
        self._samples[-1].value += value

    def _purge(self, now_ms: int) -> None:
        # SampledStat.purgeObsoleteSamples: a sample started samples * window ago or more is gone.
        expire = self.windows * self.window_ms
        self._samples = [s for s in self._samples if now_ms - s.start_ms < expire]

    def window_size_ms(self, now_ms: int) -> int:
        """Elapsed time the rate divides by: from the oldest sample, plus the windows missing to
        samples-1 full windows (Rate.windowSize: absent windows count as windows with nothing)."""
        self._purge(now_ms)
        elapsed = now_ms - self._samples[0].start_ms if self._samples else 0
        missing = (self.windows - 1) - elapsed // self.window_ms
        return elapsed + max(0, missing) * self.window_ms

    def rate(self, now_ms: int) -> float:
        """Per second."""
        self._purge(now_ms)
        total = sum(s.value for s in self._samples)
        return total * 1000.0 / self.window_size_ms(now_ms)


def java_round(value: float) -> int:
    """``Math.round``: half up (Python's ``round`` goes half to even)."""
    return math.floor(value + 0.5)


@dataclass
class QuotaMeter:
    """One quota (bytes/s or request-percentage) for one client entity. ``max_throttle_ms`` None:
    unbounded, as ClientQuotaManager's byte rates; ClientRequestQuotaManager bounds its throttle at
    the whole window (``boundedThrottleTime``)."""

    bound: float
    rate: SampledRate = field(default_factory=SampledRate)
    max_throttle_ms: int | None = None

    def record(self, value: float, now_ms: int) -> int:
        """Record ``value`` at ``now_ms``; the throttle time in ms (0 within the quota). A NaN bound
        throttles nothing (Java's ``(long) NaN`` is 0)."""
        self.rate.record(value, now_ms)
        observed = self.rate.rate(now_ms)
        if observed <= self.bound or math.isnan(self.bound) or self.bound <= 0:
            return 0
        over = (observed - self.bound) / self.bound
        throttle = java_round(over * self.rate.window_size_ms(now_ms))
        return throttle if self.max_throttle_ms is None else min(throttle, self.max_throttle_ms)

    def unrecord(self, value: float, now_ms: int) -> None:
        """``unrecordQuotaSensor``: take ``value`` back (a throttled fetch sends nothing)."""
        self.rate.record(-value, now_ms)


PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
CONTROLLER_MUTATION_RATE = "controller_mutation_rate"
USER, CLIENT_ID = "user", "client-id"
MAX_METERS = 10_000
"""Meters kept at once; the least recently used goes first (Kafka expires a client's sensors after
an hour without traffic, ``InactiveSensorExpirationTimeSeconds``)."""

QuotaTable = Mapping[frozenset[tuple[str, "str | None"]], Mapping[str, float]]
"""The image's ``client_quotas``: entity → key → value."""


Pair = tuple[str, "str | None"]


def _user(name: str | None) -> Pair:
    return (USER, name)


def _client(name: str | None) -> Pair:
    return (CLIENT_ID, name)


def _holds(quotas: QuotaTable, key: str, *pairs: Pair) -> bool:
    return key in quotas.get(frozenset(pairs), {})


def quota_tags(quotas: QuotaTable, key: str, user: str, client_id: str) -> tuple[str, str]:
    """``DefaultQuotaCallback.quotaMetricTags``: the (user, client-id) tags of the rate this client's
    traffic counts towards, from the most specific level holding ``key`` (an empty tag: shared by
    every value of it). ``None`` in an entity is that type's default entity."""
    u, c = _user(user), _client(client_id)
    if _holds(quotas, key, u, c) or _holds(quotas, key, u, _client(None)):  # 1) and 2)
        return user, client_id
    if _holds(quotas, key, u):  # 3) <user>
        return user, ""
    if _holds(quotas, key, _user(None), c) or _holds(quotas, key, _user(None), _client(None)):  # 4), 5)
        return user, client_id
    if _holds(quotas, key, _user(None)):  # 6) <default user>
        return user, ""
    return "", client_id  # 7) <client-id>, 8) <default client-id>


def quota_limit(quotas: QuotaTable, key: str, tags: tuple[str, str]) -> float | None:
    """``DefaultQuotaCallback.quotaLimit``: the bound for a rate's tags; None: no quota."""
    user, client_id = tags
    order: list[tuple[Pair, ...]]
    if user and client_id:
        u, c = _user(user), _client(client_id)
        order = [(u, c), (u, _client(None)), (_user(None), c), (_user(None), _client(None))]
    elif user:
        order = [(_user(user),), (_user(None),)]
    elif client_id:
        order = [(_client(client_id),), (_client(None),)]
    else:
        return None
    for pairs in order:
        value = quotas.get(frozenset(pairs), {}).get(key)
        if value is not None:
            return value
    return None


def user_of(principal: str) -> str:
    """The user a quota is looked up for: the principal's name (``User:alice`` → ``alice``;
    ANONYMOUS without authentication), as Kafka's ``session.sanitizedUser``."""
    return principal.split(":", 1)[1] if ":" in principal else principal


class QuotaSource(Protocol):
    """The metadata image, as far as quotas go."""

    offset: int
    client_quotas: dict[frozenset[tuple[str, str | None]], dict[str, float]]


class ClientQuotas:
    """Sampled-rate quotas of a broker's clients (ClientQuotaManager, one per quota key: the byte
    rates, and request_percentage for :mod:`.request_quotas`): the rate each (user, client-id) level
    counts towards, held to the bound the image gives it now (a change to the quotas applies to the
    next request). :class:`~.quota_managers.QuotaManagers` adds the request-time and controller
    mutation managers."""

    def __init__(self, source: Callable[[], QuotaSource]) -> None:
        self._source = source
        self._meters: OrderedDict[tuple[str, str, str], QuotaMeter] = OrderedDict()
        self._keys_at: tuple[int, frozenset[str]] = (-2, frozenset())

    def _quotas(self, key: str) -> QuotaTable | None:
        """The quota table, or None when no entity holds ``key`` (Kafka's ``quotasEnabled``: nothing
        is recorded then). The keys in use are found again only when the image moved."""
        image = self._source()
        if self._keys_at[0] != image.offset:
            keys = frozenset(k for values in image.client_quotas.values() for k in values)
            self._keys_at = (image.offset, keys)
        return image.client_quotas if key in self._keys_at[1] else None

    def _meter(self, key: str, user: str, client_id: str) -> QuotaMeter | None:
        quotas = self._quotas(key)
        if quotas is None:
            return None
        tags = quota_tags(quotas, key, user, client_id)
        limit = quota_limit(quotas, key, tags)
        name = (key, *tags)
        meter = self._meters.get(name)
        if meter is None:
            # ClientRequestQuotaManager bounds its throttle at one window (``maxThrottleTimeMs``)
            bounded = WINDOW_MS if key == REQUEST_PERCENTAGE else None
            meter = self._meters[name] = QuotaMeter(bound=math.inf, max_throttle_ms=bounded)
            while len(self._meters) > MAX_METERS:
                self._meters.popitem(last=False)
        else:
            self._meters.move_to_end(name)
        meter.bound = math.inf if limit is None else limit  # Kafka: Long.MaxValue when none applies
        return meter

    def resolve(self, key: str, user: str, client_id: str) -> tuple[tuple[str, str], float] | None:
        """The tags of the rate this client counts towards and its bound; None when no entity holds
        ``key`` (the quota is off) or none applies to this client (Kafka: unbounded)."""
        quotas = self._quotas(key)
        if quotas is None:
            return None
        tags = quota_tags(quotas, key, user, client_id)
        limit = quota_limit(quotas, key, tags)
        return None if limit is None else (tags, limit)

    def active(self, key: str) -> bool:
        """``quotasEnabled``: some entity holds ``key``."""
        return self._quotas(key) is not None

    def record(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> int:
        """``maybeRecordAndGetThrottleTimeMs``: the throttle time in ms, 0 within the quota."""
        meter = self._meter(key, user, client_id)
        return 0 if meter is None else meter.record(value, now_ms)

    def unrecord(self, key: str, user: str, client_id: str, value: float, now_ms: int) -> None:
        meter = self._meter(key, user, client_id)
        if meter is not None:
            meter.unrecord(value, now_ms)

    def max_in_window(self, key: str, user: str, client_id: str) -> float:
        """``getMaxValueInQuotaWindow``: the most one request may take without being throttled
        whatever came before (the bound over ``samples - 1`` windows); infinite without a quota."""
        quotas = self._quotas(key)
        if quotas is None:
            return math.inf
        limit = quota_limit(quotas, key, quota_tags(quotas, key, user, client_id))
        if limit is None:
            return math.inf
        return limit * (WINDOW_COUNT - 1) * WINDOW_MS / 1000
