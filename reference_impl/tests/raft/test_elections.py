"""The controller's election rules as pure functions (``core/controller/elections.py``): the
ones the property model of ``reference_impl/acceptance/property`` elects and accepts ISR changes
through, as the quorum controller does."""

from __future__ import annotations

import pytest

from reference_impl.core.controller.elections import (
    UNCLEAN_CONFIG,
    accepted_isr,
    elect_leader,
    unclean_configured,
)
from reference_impl.core.metadata.image import PartitionInfo
from reference_impl.core.mutants import MUTANT_CONFIG, NO_DEDUP, UNCLEAN_ELECTION
from reference_impl.protocol.errors import ErrorCode, KafkaError

INFO = PartitionInfo(0, (1, 2, 3), (1, 2), leader=1, leader_epoch=4, partition_epoch=7)


def test_a_clean_election_takes_the_first_live_isr_member_in_preference_order() -> None:
    assert elect_leader((3, 2, 1), (1, 2), {1, 2, 3}, unclean=False) == (2, (1, 2))
    assert elect_leader((1, 2, 3), (1,), {2, 3}, unclean=False) == (-1, (1,))
    assert elect_leader((1, 2, 3), (1,), {2, 3}, unclean=True) == (2, (2,))


def test_unclean_election_follows_the_topic_then_the_brokers_then_the_default() -> None:
    assert not unclean_configured({}, {}, default=False)
    assert unclean_configured({}, {UNCLEAN_CONFIG: "true"}, default=False)
    assert not unclean_configured({UNCLEAN_CONFIG: "false"}, {UNCLEAN_CONFIG: "true"}, default=True)
    assert not unclean_configured({MUTANT_CONFIG: NO_DEDUP}, {}, default=False)


def test_the_unclean_election_bug_mode_allows_it_whatever_the_configs_say() -> None:
    configs = {MUTANT_CONFIG: UNCLEAN_ELECTION, UNCLEAN_CONFIG: "false"}
    assert unclean_configured(configs, {}, default=False)


def test_an_isr_change_from_the_current_leader_at_the_current_epochs_is_accepted_sorted() -> None:
    assert accepted_isr(INFO, 1, 4, 7, [3, 1, 2]) == (1, 2, 3)


@pytest.mark.parametrize(
    ("leader", "leader_epoch", "partition_epoch", "isr", "code"),
    [
        (2, 4, 7, [1, 2], ErrorCode.fenced_leader_epoch),
        (1, 3, 7, [1, 2], ErrorCode.fenced_leader_epoch),
        (1, 4, 6, [1, 2], ErrorCode.invalid_update_version),
        (1, 4, 7, [2, 3], ErrorCode.invalid_request),
        (1, 4, 7, [1, 4], ErrorCode.invalid_request),
    ],
)
def test_an_isr_change_is_refused_as_kafkas_alter_partition_refuses_it(
    leader: int, leader_epoch: int, partition_epoch: int, isr: list[int], code: ErrorCode
) -> None:
    with pytest.raises(KafkaError) as refused:
        accepted_isr(INFO, leader, leader_epoch, partition_epoch, isr)
    assert refused.value.code == code
