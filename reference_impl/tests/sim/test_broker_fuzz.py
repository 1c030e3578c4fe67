"""Random fault schedules against whole simulated brokers and a producing client.

Each schedule (:func:`run_broker_schedule`) runs four brokers, an idempotent
acks=all producer and a dozen seeded faults (crashes, power losses, partitions,
one-way cuts, lossy links, producer restarts), checks every broker and quorum
invariant after every event, then heals, demands new acknowledgements, and
holds the converged replicas to what the producer was told.

The pinned seeds are schedules that catch the broker bugs this simulator found,
each fixed with a unit test of its own (with the fix undone, the seed fails):

* 1: a replica that led an epoch without writing kept that epoch in its cache
  when it followed again, and fetched the same diverging answer for ever
  (``test_a_leader_that_wrote_nothing_drops_its_empty_epoch_when_it_follows``;
  21 of seeds 1-120 catch it);
* 2: a follower that backed off from a dead leader, then stopped following it,
  woke itself at once for ever (``test_fetcher_backoff``; nearly every seed);
* 61: a restarted broker asked to create a topic before its metadata image
  caught up deleted every log on its disk as a topic deleted while it was
  down, losing committed records (``test_restart_before_metadata``; seeds 61,
  67, 88, 110 of 1-120).

CI runs the pinned seeds and ``KH_SIM_BROKER_SCHEDULES`` (default 12) more;
``KH_SIM_BROKER_SCHEDULES=500`` is a deep search (about 10 minutes here).
"""

from __future__ import annotations

import os

import pytest

from reference_impl.sim.broker.fuzz import run_broker_schedule

PINNED = [1, 2, 61]
RANDOM = int(os.environ.get("KH_SIM_BROKER_SCHEDULES", "12"))


@pytest.mark.parametrize("seed", PINNED + [1_000 + i for i in range(RANDOM)])
def test_a_random_schedule_loses_nothing_acknowledged(seed: int) -> None:
    _cluster, result = run_broker_schedule(seed)
    assert result.acked >= 30  # 10 before the faults, 20 after the heal: the run did write
    assert len(result.actions) == 12


def test_a_schedule_replays_to_the_identical_trace() -> None:
    first, _ = run_broker_schedule(61, trace=True)
    second, _ = run_broker_schedule(61, trace=True)
    assert first.sim.trace == second.sim.trace
    assert any("schedule: power loss" in line for line in first.sim.trace)
