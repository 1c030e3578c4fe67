"""Racing elections: the seeded schedules of :mod:`.fuzz` with timeouts shorter than the links' delays.

Commit 5d84d9f fixed two leaders of one epoch that CI found and the simulator never did: a pre-vote
answered after its round ended (its replica had stood meanwhile) was counted as a vote, and the
answer carries the new epoch when the voter answers from it, having voted for a rival candidate
(or being that rival: a candidate grants a pre-vote too). That needs two voters standing within a
round trip of each other and a pre-vote that reaches its voter after the voter moved on. At the
default timeouts (a 1 s election timer with 1 s of jitter, links of 1-60 ms) the schedules almost
never race so: with the fix reverted, none of 1,000 schedules of :func:`.fuzz.run_schedule` (3 voters)
broke SingleLeaderPerEpoch. Delaying a random tenth of the messages by 50-1,500 ms found it once in
300: late answers are easy, racing candidates are what is rare.

:func:`racing` shortens the election and fetch timeouts to ``timeout_ms`` (50 by default), below
the schedules' slowest links (up to 60 ms a hop): pre-vote and vote answers routinely come after the
round that asked them, and since a leader holds an idle follower's fetch up to
``fetch_max_wait_ms`` (200 ms), longer than the fetch timeout, followers stand again and again, so
the schedules are one election race after another. Elections must stay safe whatever the timeouts;
only their liveness depends on them, and :func:`.fuzz.settle_and_validate` still demands a leader
and a final commit at the end.

Measured with 5d84d9f's change to voting.py and client.py reverted (seeds 0-199): 43 of 200
schedules with 3 voters and 66 of 200 with 5 broke SingleLeaderPerEpoch; with the fix, none of
1,000 (3 voters) and 300 (5 voters) broke any claim. Keeping the fetch wait below the fetch timeout
(``fetch_max_wait_ms=20``, fewer elections) found 15 of 200. Those figures predate 3ffc7bb, where a
PreVote still named the next epoch; naming the prospective's own epoch (Kafka 4) leaves a late grant
an older epoch or a fence: with the vote check 5d84d9f added to voting.py removed, 40 five-voter
schedules held and so did every test of ``tests/sim/test_raft_late_answers.py``.

``python -m reference_impl.sim.raft.election_race [SEEDS] [VOTERS] [TIMEOUT_MS]`` runs seeds
0..SEEDS-1 (at most 120 s of wall time; it prints how many ran) and prints, per broken claim, how
many seeds broke it and the first message; ``TIMEOUT_MS`` 1000 is the default configuration.
"""

from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field

from reference_impl.core.raft.api import RaftConfig

from ..engine.simulation import InvariantViolation
from .fuzz import run_schedule


def racing(timeout_ms: int = 50) -> RaftConfig:
    """The default configuration with election and fetch timeouts of ``timeout_ms``."""
    return RaftConfig(election_timeout_ms=timeout_ms, fetch_timeout_ms=timeout_ms)


@dataclass
class Sweep:
    """What a run of seeds found: how many ran, and per broken claim the seeds that broke it."""

    voters: int
    ran: int = 0
    broken: dict[str, list[int]] = field(default_factory=dict)
    first: dict[str, str] = field(default_factory=dict)


def sweep(seeds: range, voters: int, config: RaftConfig | None = None, budget_s: float = 120.0) -> Sweep:
    """:func:`.fuzz.run_schedule` for each seed under ``config`` (:func:`racing` by default), until
    ``budget_s`` of wall time is spent (a bound for the command line, not part of any result: every
    seed that ran replays exactly)."""
    config = config or racing()
    out = Sweep(voters)
    stop = time.monotonic() + budget_s
    for seed in seeds:
        if time.monotonic() > stop:
            break
        out.ran += 1
        try:
            run_schedule(seed, voters=voters, config=config)
        except (AssertionError, RuntimeError) as exc:  # InvariantViolation is an AssertionError
            line = str(exc).splitlines()[0]
            claim = line.split()[0] if isinstance(exc, InvariantViolation) else type(exc).__name__
            out.broken.setdefault(claim, []).append(seed)
            out.first.setdefault(claim, line[:200])
    return out


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    seeds = max(1, min(int(args[0]) if args else 200, 100_000))
    voters = max(1, min(int(args[1]) if len(args) > 1 else 3, 9))
    timeout_ms = max(1, int(args[2]) if len(args) > 2 else 50)
    found = sweep(range(seeds), voters, racing(timeout_ms))
    counts = {claim: len(broken) for claim, broken in found.broken.items()}
    print(f"{found.ran} of {seeds} seeds ran, {voters} voters, timeouts {timeout_ms} ms: broken {counts}")
    for claim, line in found.first.items():
        print(f"  {claim}: seeds {found.broken[claim][:20]}; first: {line}")
    return 1 if found.broken else 0


if __name__ == "__main__":
    raise SystemExit(main())
