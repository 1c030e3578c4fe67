"""Pre-vote (KIP-996) between processes: a controller cut off from the quorum and back does not
unseat the active controller or move the quorum's epoch.

Three reference brokers, each a voter, a Toxiproxy proxy on every link (the fixture of
``test_controller_partition.py``). The chaos campaigns' ``partition-node`` fault black-holes every
link of one voter that is not the quorum's leader for five election timeouts and more, then heals.
While cut off it asks PreVotes (Vote v2) that nobody answers and keeps its epoch; once healed it
follows the same leader in the same epoch. Without pre-vote (Kafka 3.x) it would have stood in
epoch after epoch and the leader would have adopted its higher epoch from its first Vote
(``reference_impl/tests/sim/test_raft_prevote.py`` shows both in the simulator). Figures printed:
the cut-off voter's epoch while cut off, the time it took to follow again.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from chaos.history import Recorder
from chaos.nemesis.faults import Nemesis
from chaos.nemesis.schedule import Planned
from chaos.nemesis.topology import Topology
from fixtures.targets import Target

from .test_controller_partition import NODES, _direct, _log_end, _quorum, proxied  # noqa: F401 (a fixture)
from .workload import wait_for

pytestmark = [pytest.mark.slow]
CUT_S = 7.0
"""Longer than five election timeouts (1 s each by default) plus their jitter."""


def _leader_and_epoch(topology: Topology, node: int) -> tuple[int, int]:
    """The quorum's leader and epoch as DescribeQuorum at ``node`` gives them."""
    with _direct(topology, node) as client:
        quorum = _quorum(client)
    return int(quorum.leader_id), int(quorum.leader_epoch)


def _stored(workdir: Path, node: int) -> tuple[int, int]:
    """(leader, epoch) in the node's own quorum-state file (its view, even while it is cut off)."""
    state = json.loads((workdir / f"node-{node}" / "quorum-state").read_text())
    return int(state["leaderId"]), int(state["leaderEpoch"])


def test_a_voter_cut_off_and_back_does_not_move_the_epoch(
    proxied: tuple[Target, Topology],  # noqa: F811
    tmp_path: Path,
) -> None:
    target, topology = proxied
    wait_for(lambda: _leader_and_epoch(topology, NODES[0])[0] in NODES, 30, "a quorum leader")
    leader, epoch = _leader_and_epoch(topology, NODES[0])
    cut = next(n for n in NODES if n != leader)
    nemesis = Nemesis(Recorder({"test": "pre-vote"}), topology, target, topic="prevote-probe")
    plan = Planned(id=1, fault="partition-node", start_s=0.0, duration_s=0.0, pick=NODES.index(cut))
    nemesis.start(plan)
    seen: set[int] = set()
    try:
        state = nemesis.active[plan.id]
        assert state.get("nodes") == [cut], state
        deadline = time.monotonic() + CUT_S
        while time.monotonic() < deadline:
            seen.add(_stored(tmp_path, cut)[1])
            time.sleep(0.5)
    finally:
        nemesis.heal()
    healed_at = time.monotonic()

    def caught_up() -> bool:
        with _direct(topology, leader) as client:
            quorum = _quorum(client)
        return _log_end(quorum, cut) == _log_end(quorum, leader) and _stored(tmp_path, cut) == (leader, epoch)

    wait_for(caught_up, 30, f"{cut} fetches from {leader} again, caught up")
    took = time.monotonic() - healed_at
    after = {n: _stored(tmp_path, n) for n in NODES if n != leader}
    after[leader] = _leader_and_epoch(topology, leader)
    print(
        f"voter {cut} cut off {CUT_S:.0f} s from leader {leader} (epoch {epoch}): epochs it held "
        f"{sorted(seen)}; {took:.2f} s after the heal every node says {after}"
    )
    assert seen == {epoch}, f"the cut-off voter bumped its epoch: {sorted(seen)}"
    assert all(view == (leader, epoch) for view in after.values()), after
