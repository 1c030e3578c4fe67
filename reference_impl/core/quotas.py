"""A sans-IO client quota meter: Kafka's sampled rate and KIP-219 throttle time, time as input.

Read from Kafka (not copied): clients/src/main/java/org/apache/kafka/common/metrics/stats/
SampledStat.java and Rate.java (a rate over ``quota.window.num`` = 11 samples of
``quota.window.size.seconds`` = 1 s each; a sample ``samples`` windows old is purged; the
rate divides by the time since the oldest sample plus the full windows missing to
``samples - 1``), server-common's server/quota/QuotaUtils.java (throttle time =
(rate - bound) / bound * the rate's window size, rounded; bounded by ClientQuotaManager's
maxThrottleTimeMs = samples * window) and ClientQuotaManager.java
(``recordAndGetThrottleTimeMs``: record first, then the throttle if the bound is passed).
KIP-219: the broker answers at once with ``throttle_time_ms`` and then mutes the connection for
that long; the caller does the muting, this module only counts.

Not done yet (issue 20 remainder): wiring into Produce/Fetch/request-percentage paths,
ClientQuotaRecord (type 14) and DescribeClientQuotas/AlterClientQuotas (48/49).
"""

from __future__ import annotations

from dataclasses import dataclass, field

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


@dataclass
class QuotaMeter:
    """One quota (bytes/s or request-percentage) for one client entity."""

    bound: float
    rate: SampledRate = field(default_factory=SampledRate)

    def record(self, value: float, now_ms: int) -> int:
        """Record ``value`` at ``now_ms``; the throttle time in ms (0 within the quota)."""
        self.rate.record(value, now_ms)
        observed = self.rate.rate(now_ms)
        if self.bound <= 0 or observed <= self.bound:
            return 0
        over = (observed - self.bound) / self.bound
        throttle = round(over * self.rate.window_size_ms(now_ms))
        return min(throttle, self.rate.windows * self.rate.window_ms)
