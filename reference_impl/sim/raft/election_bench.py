"""Time to a new leader after the leader dies, with and without pre-vote (KIP-996), in the simulator.

``python -m reference_impl.sim.raft.election_bench [KILLS]``: for each of KILLS seeds, a 3-voter
quorum elects, runs 300 ms, loses its leader; the virtual time until another voter leads is
measured (20 s at most). Printed: median, 99th percentile, maximum, and how many took more than two
election timeouts (a split vote: two voters standing in the same epoch). Virtual time, so the figures
depend only on the seeds and the code.
"""

from __future__ import annotations

import statistics
import sys

from reference_impl.core.raft.api import RaftConfig

from .nodes import build_raft_simulation, current_leader


def one_kill(seed: int, pre_vote: bool) -> int:
    """Virtual ms from the leader's death to a new leader, for one seed."""
    sim, _disks = build_raft_simulation(seed, 3, config=RaftConfig(pre_vote=pre_vote))
    if not sim.run_until_true(lambda: current_leader(sim) is not None, 10_000):
        raise RuntimeError(f"seed {seed}: no first leader")
    sim.run_until(sim.now_ms + 300)
    old = current_leader(sim)
    assert old is not None
    killed_at = sim.now_ms
    sim.crash(old)
    if not sim.run_until_true(lambda: current_leader(sim) not in (None, old), 20_000):
        raise RuntimeError(f"seed {seed}: no new leader within 20 s")
    return sim.now_ms - killed_at


def kill_times(pre_vote: bool, kills: int) -> list[int]:
    """:func:`one_kill` for seeds 0..kills-1, sorted."""
    return sorted(one_kill(seed, pre_vote) for seed in range(kills))


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    kills = max(1, min(int(args[0]) if args else 150, 10_000))
    bound = 2 * RaftConfig().election_timeout_ms
    for pre_vote in (True, False):
        took = kill_times(pre_vote, kills)
        p99 = took[max(0, -(-len(took) * 99 // 100) - 1)]
        over = sum(t > bound for t in took)
        print(
            f"pre_vote={pre_vote}: {kills} leader kills, 3 voters: median {statistics.median(took):.0f} ms, "
            f"p99 {p99} ms, max {took[-1]} ms, over {bound} ms: {over} ({100 * over / kills:.1f} %)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
