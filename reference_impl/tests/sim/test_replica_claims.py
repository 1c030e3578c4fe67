"""The partition claims are written once and hold on whole brokers as on the property model.

``reference_impl/sim/broker/invariants.py`` holds every replication claim, over a
``ReplicaView``; the property model (``reference_impl/acceptance/property``) checks all of them
after every rule, and its mutation check shows each seeded bug caught. These tests show the
same claims, the log-scanning ones included, hold after every event of a random fault schedule
on whole brokers, and that the per-event claim about acknowledged records reads what the
producer was told (a claim that cannot see the acknowledgements could never fail).
"""

from __future__ import annotations

from collections.abc import Sequence

from reference_impl.sim.broker.fuzz import TOPIC, run_broker_schedule
from reference_impl.sim.broker.invariants import (
    LeaderCompleteness,
    ReplicaClaims,
    StrongIsr,
    broker_invariants,
    replica_claims,
)
from reference_impl.sim.broker.producer import Acked
from reference_impl.sim.broker.replicas import SimReplicas


def _claims(invariants: Sequence[object]) -> ReplicaClaims:
    found = [i for i in invariants if isinstance(i, ReplicaClaims)]
    assert len(found) == 1
    return found[0]


def test_the_simulator_checks_the_log_scanning_claims_only_when_asked() -> None:
    names = {c.name for c in replica_claims()}
    cheap = {c.name for c in _claims(broker_invariants()).claims}
    assert {"StrongIsr", "LogMatching", "IdempotentNoDuplicates", "LeaderCompleteness"} <= names - cheap
    assert {c.name for c in _claims(broker_invariants(scanning=True)).claims} == names


def test_every_partition_claim_holds_after_every_event_of_a_random_schedule() -> None:
    cluster, result = run_broker_schedule(1004, scanning=True)
    claims = _claims(cluster.sim.invariants)
    assert any(isinstance(c, StrongIsr) for c in claims.claims)
    print(f"seed 1004 with every claim: {result.events} events, {result.acked} acknowledged, "
          f"leader epochs up to {result.leader_epochs}")
    view = SimReplicas(cluster.sim, lambda: claims.acknowledged(cluster.sim))
    acknowledged = view.acknowledged()
    assert sum(len(v) for v in acknowledged.values()) == result.acked
    assert LeaderCompleteness().check_view(view) is None


def test_leader_completeness_fails_on_an_acknowledgement_the_leader_does_not_hold() -> None:
    cluster, _result = run_broker_schedule(1004)
    claims = ReplicaClaims([LeaderCompleteness()])
    claims.watch(TOPIC, [Acked(partition=0, offset=0, value=b"never written", acked_ms=0)])
    problem = claims.check(cluster.sim)
    assert problem is not None and "lost acknowledged offset 0" in problem, problem
    assert claims.name == "LeaderCompleteness"
