"""Share sessions (KIP-932): epochs, limits, added and forgotten partitions."""

from __future__ import annotations

import uuid

import pytest

from reference_impl.core.group.share_session import MAX_EPOCH, ShareSessionCache, next_epoch
from reference_impl.protocol.errors import ErrorCode, KafkaError

T = uuid.UUID(int=1)


def test_epochs_advance_and_wrong_epoch_is_refused() -> None:
    c = ShareSessionCache()
    s = c.request("g", "a", 0, added=[(T, 0), (T, 1)])
    assert s is not None and s.epoch == 1
    s = c.request("g", "a", 1, forgotten=[(T, 1)])
    assert s is not None and s.epoch == 2 and s.partitions == {(T, 0)}
    with pytest.raises(KafkaError) as e:
        c.request("g", "a", 1)
    assert e.value.code == ErrorCode.invalid_share_session_epoch
    assert c.request("g", "a", -1) is None and len(c) == 0


def test_unknown_session_and_limit() -> None:
    c = ShareSessionCache(max_sessions=1)
    with pytest.raises(KafkaError) as e:
        c.request("g", "a", 3)
    assert e.value.code == ErrorCode.share_session_not_found
    c.request("g", "a", 0)
    with pytest.raises(KafkaError) as e:
        c.request("g", "b", 0)
    assert e.value.code == ErrorCode.share_session_limit_reached
    s = c.request("g", "a", 0)  # reopening replaces, within the limit
    assert s is not None and s.epoch == 1 and len(c) == 1


def test_epoch_wraps_to_one() -> None:
    assert next_epoch(MAX_EPOCH) == 1 and next_epoch(0) == 1 and next_epoch(-1) == -1
