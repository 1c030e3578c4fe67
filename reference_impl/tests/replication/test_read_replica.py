"""KIP-392's replica choice (``RackAwareReplicaSelector`` as ``ReplicaManager.findPreferredReadReplica``
feeds it): which follower, if any, a consumer is sent to."""

from collections.abc import Mapping

from reference_impl.core.replication.read_replica import (
    LEADER_SELECTOR,
    RACK_AWARE_SELECTOR,
    FollowerPosition,
    preferred_read_replica,
)

RACKS = {1: "a", 2: "b", 3: "c"}


def _pick(
    selector: str | None,
    rack: str | None,
    *,
    isr: tuple[int, ...] = (1, 2, 3),
    leos: tuple[int, int] = (10, 10),
    fetch_offset: int = 5,
    racks: Mapping[int, str | None] | None = None,
) -> int | None:
    return preferred_read_replica(
        selector,
        rack,
        leader_id=1,
        leader_log_end_offset=10,
        isr=isr,
        followers={2: FollowerPosition(leos[0], 90), 3: FollowerPosition(leos[1], 90)},
        racks=RACKS if racks is None else racks,
        fetch_offset=fetch_offset,
        now_ms=100,
    )


def test_a_consumer_in_a_followers_rack_is_sent_to_that_follower() -> None:
    assert _pick(RACK_AWARE_SELECTOR, "b") == 2
    assert _pick(RACK_AWARE_SELECTOR, "c") == 3


def test_the_leader_serves_without_a_selector_or_a_rack_or_a_match() -> None:
    assert _pick(None, "b") is None
    assert _pick(LEADER_SELECTOR, "b") is None
    assert _pick(RACK_AWARE_SELECTOR, "") is None
    assert _pick(RACK_AWARE_SELECTOR, "z") is None
    assert _pick(RACK_AWARE_SELECTOR, "a") is None  # the leader's own rack


def test_a_follower_out_of_the_isr_or_behind_the_fetch_offset_is_no_candidate() -> None:
    assert _pick(RACK_AWARE_SELECTOR, "b", isr=(1, 3)) is None
    assert _pick(RACK_AWARE_SELECTOR, "b", leos=(4, 10)) is None
    assert _pick(RACK_AWARE_SELECTOR, "b", racks={1: "a", 3: "c"}) is None  # not registered (or fenced)


def test_among_same_rack_followers_the_most_caught_up_wins_then_the_highest_id() -> None:
    same = {1: "a", 2: "b", 3: "b"}
    assert _pick(RACK_AWARE_SELECTOR, "b", leos=(10, 8), racks=same) == 2
    assert _pick(RACK_AWARE_SELECTOR, "b", leos=(10, 10), racks=same) == 3
