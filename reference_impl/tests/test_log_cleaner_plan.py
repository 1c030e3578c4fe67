"""Which segments the cleaner may rewrite and when (sans-IO planning), and the produce-side rule for keys."""

from __future__ import annotations

import pytest

from reference_impl.core.validation import TopicLimits, validate_produce_records
from reference_impl.log.cleaning.plan import CleanPlan, SegmentView, plan_cleaning
from reference_impl.log.config import LogConfig
from reference_impl.protocol.errors import KafkaError
from reference_impl.protocol.record_set import build_batch

NOW = 1_000_000
COMPACT = LogConfig(cleanup_policy=("compact",))


def _segments(*sizes_and_times: tuple[int, int]) -> list[SegmentView]:
    """Segments of 10 offsets each; the last one is the active segment."""
    return [SegmentView(10 * i, 10 * i + 10, size, ts, ts) for i, (size, ts) in enumerate(sizes_and_times)]


def _plan(segments: list[SegmentView], config: LogConfig = COMPACT, checkpoint: int | None = None,
          stable: int | None = None, horizon: int | None = None) -> CleanPlan:
    plan = plan_cleaning(segments, log_start_offset=0, checkpoint=checkpoint,
                         stable_offset=segments[-1].next_offset if stable is None else stable,
                         config=config, now_ms=NOW, earliest_horizon_ms=horizon)
    assert plan is not None
    return plan


def test_only_compacted_logs_are_planned() -> None:
    segments = _segments((100, 1), (100, 2))
    assert plan_cleaning(segments, log_start_offset=0, checkpoint=None, stable_offset=20, config=LogConfig(),
                         now_ms=NOW) is None
    both = _plan(_segments((100, 1), (100, 2)), LogConfig(cleanup_policy=("compact", "delete")))
    assert both is not None and both.cleanable


def test_the_active_segment_is_never_cleanable() -> None:
    plan = _plan(_segments((100, 1), (100, 2), (5000, 3)))
    assert plan is not None and plan.end_offset == 20 and plan.dirty_bytes == 200
    alone = _plan(_segments((5000, 3)))
    assert alone is not None and alone.end_offset == 0 and not alone.cleanable


def test_nothing_at_or_above_the_stable_offset_is_cleaned() -> None:
    """The last stable offset (at most the high watermark) bounds the clean, in whole segments."""
    plan = _plan(_segments((100, 1), (100, 2), (100, 3), (1, 4)), stable=25)
    assert plan is not None and plan.end_offset == 20


def test_dirty_ratio_against_min_cleanable_dirty_ratio() -> None:
    """Dirty bytes over clean plus dirty bytes must be above the ratio (strictly, as Kafka)."""
    segments = _segments((300, 1), (100, 2), (1, 3))
    half = _plan(segments, checkpoint=10)
    assert half is not None and half.ratio == 0.25 and not half.cleanable
    eager = LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.2)
    low = _plan(segments, eager, checkpoint=10)
    assert low is not None and low.cleanable and (low.first_dirty, low.clean_bytes) == (10, 300)
    stale = _plan(segments, checkpoint=999)  # a checkpoint beyond the log end (truncation): start over
    assert stale is not None and stale.first_dirty == 0 and stale.cleanable


def test_min_compaction_lag_keeps_young_segments_out() -> None:
    config = LogConfig(cleanup_policy=("compact",), min_compaction_lag_ms=1000)
    plan = _plan(_segments((100, NOW - 5000), (100, NOW - 500), (100, NOW - 6000), (1, NOW)), config)
    assert plan is not None and plan.end_offset == 10


def test_max_compaction_lag_forces_a_clean_below_the_ratio() -> None:
    lazy = LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.99)
    segments = _segments((1000, NOW - 100_000), (10, NOW - 50_000), (1, NOW))
    plan = _plan(segments, lazy, checkpoint=10)
    assert plan is not None and not plan.cleanable
    forced = LogConfig(cleanup_policy=("compact",), min_cleanable_dirty_ratio=0.99,
                       max_compaction_lag_ms=10_000)
    plan = _plan(segments, forced, checkpoint=10)
    assert plan is not None and plan.must_clean and plan.cleanable


def test_a_due_delete_horizon_makes_a_clean_log_cleanable() -> None:
    segments = _segments((100, 1), (1, 2))
    assert not _plan(segments, checkpoint=10, horizon=NOW + 1).cleanable
    assert _plan(segments, checkpoint=10, horizon=NOW).cleanable


def test_max_compaction_lag_rolls_a_compacted_topic_sooner() -> None:
    """KIP-354: the active segment rolls by min(segment.ms, max.compaction.lag.ms) when compacting."""
    assert LogConfig(segment_ms=100_000, max_compaction_lag_ms=5_000).max_segment_ms == 100_000
    assert LogConfig(segment_ms=100_000, max_compaction_lag_ms=5_000,
                     cleanup_policy=("compact",)).max_segment_ms == 5_000


@pytest.mark.parametrize("policy", ["compact", "compact,delete"])
def test_a_keyless_record_cannot_be_produced_to_a_compacted_topic(policy: str) -> None:
    limits = TopicLimits.from_configs({"cleanup.policy": policy})
    with pytest.raises(KafkaError) as refused:
        validate_produce_records(build_batch([(b"k", b"v"), (None, b"v")], base_timestamp=NOW), limits, NOW)
    assert refused.value.code.name == "invalid_record"
    validate_produce_records(build_batch([(b"k", b"v")], base_timestamp=NOW), limits, NOW)
