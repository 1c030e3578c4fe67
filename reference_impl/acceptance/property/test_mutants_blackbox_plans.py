"""Every seeded mode of the reference broker has black-box campaigns (``kafka-harness mutants
--black-box``), and the harness names the mode's broker config as the core does."""

from kafka_harness.mutants_blackbox import MUTANT_CONFIG as HARNESS_CONFIG
from kafka_harness.mutants_blackbox import PLANS
from reference_impl.core.mutants import ALL, MUTANT_CONFIG


def test_every_mode_has_campaigns() -> None:
    assert set(PLANS) == set(ALL)
    assert all(PLANS[m] for m in ALL)
    assert HARNESS_CONFIG == MUTANT_CONFIG
