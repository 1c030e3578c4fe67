"""The sans-IO quota meter (reference_impl/core/quotas.py)."""

from reference_impl.core.quotas import QuotaMeter, SampledRate


def test_within_quota_is_not_throttled() -> None:
    meter = QuotaMeter(bound=1000.0)
    assert meter.record(500, now_ms=0) == 0


def test_over_quota_throttle_is_proportional_to_the_excess() -> None:
    meter = QuotaMeter(bound=100.0)
    # 10 windows of 1 s at minimum: 1500 bytes -> 150 B/s, half over the bound: 5 s.
    assert meter.record(1500, now_ms=0) == 5000


def test_byte_rate_throttle_is_unbounded_and_a_request_quota_bounds_it() -> None:
    """ClientQuotaManager uses QuotaUtils.throttleTime as it is; ClientRequestQuotaManager bounds it
    (boundedThrottleTime) at the whole window."""
    assert QuotaMeter(bound=100.0).record(1_000_000, now_ms=0) == 9_990_000
    assert QuotaMeter(bound=100.0, max_throttle_ms=11_000).record(1_000_000, now_ms=0) == 11_000


def test_old_samples_are_purged() -> None:
    rate = SampledRate()
    rate.record(11000, now_ms=0)
    assert rate.rate(now_ms=0) == 1100.0
    assert rate.rate(now_ms=10_999) > 0.0
    assert rate.rate(now_ms=11_000) == 0.0


def test_window_size_adds_the_missing_full_windows() -> None:
    rate = SampledRate()
    rate.record(1, now_ms=0)
    assert rate.window_size_ms(now_ms=500) == 10_500
    assert rate.window_size_ms(now_ms=10_500) == 10_500
