"""Whole brokers in the simulator: nodes, a producing client, partition invariants, scenarios, the fuzz."""
